"""bkcodec.pulsar on data written by an encoder independent of the decoder
(`bkcodec.sample_data.pulsar`: protobuf by hand, pyarrow's codecs, bkcodec's file
writers; its codecs and checksum are checked here against the codecs' own wheels)."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

import bkcodec
import bkcodec.pulsar as pulsar
import bkcodec.sample_data.pulsar as pc
from bkcodec.sample_data.pulsar import Message

CODECS = ["none", "lz4", "zlib", "zlib-complete", "zstd", "snappy"]


@pytest.mark.parametrize("data", [b"", b"x", b"pulsar " * 500, bytes(range(256)) * 40])
def test_the_sample_encoder_writes_what_the_codecs_own_wheels_write(data):
    """The sample's Pulsar data is the test data: its codecs (pyarrow's) and its
    CRC-32C (bkcodec's) must give the bytes the codecs' reference wheels give, so the
    decoder is tested against data it did not make."""
    import cramjam
    import crc32c
    import lz4.block
    import zstandard

    assert pc.compress("lz4", data) == lz4.block.compress(data, store_size=False)
    assert pc.compress("snappy", data) == bytes(cramjam.snappy.compress_raw(data))
    assert zstandard.ZstdDecompressor().decompress(pc.compress("zstd", data), max_output_size=len(data) + 1) == data
    framed = pc.frame(b"meta", data)
    assert struct.unpack(">HI", framed[:6]) == (0x0E01, crc32c.crc32c(framed[6:]))


def rows(batch, *columns):
    return [tuple(r[c] for c in columns) for r in batch.to_pylist()]


def errors(batch):
    return batch.column("error").to_pylist()


# ---------------------------------------------------------------- entries


def test_the_spec_vector_is_what_the_encoder_writes_and_decodes():
    # docs/pulsar.md#test-vectors: checksum, 12-byte metadata {producer "p", sequence 0, publish 1700000000000}, "hello".
    spec = bytes.fromhex("0e01cf85822f0000000c0a017010001880d095ffbc3168656c6c6f")
    assert pc.frame(pc.message_metadata("p", 0, 1_700_000_000_000), b"hello") == spec
    bem = bytes.fromhex("0e020000000908fbd095ffbc311000")
    assert pc.frame(pc.message_metadata("p", 0, 1_700_000_000_000), b"hello", broker=pc.broker_entry_metadata(1_700_000_000_123, 0)) == bem + spec
    b = pulsar.decode_messages([spec, bem + spec])
    assert rows(b, "producer_name", "sequence_id", "payload", "checksum_ok", "message_index", "error") == [
        ("p", 0, b"hello", True, None, None),
        ("p", 0, b"hello", True, 0, None),
    ]
    assert b.column("publish_time").type == pa.timestamp("ms", tz="UTC")
    assert b.column("broker_timestamp")[1].value == 1_700_000_000_123


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("n", [1, 2, 10, 100, 1000])
def test_batches_in_every_codec(codec, n):
    msgs = [Message(f"message {i} ".encode() * (i % 7), sequence_id=500 + i) for i in range(n)]
    with_bem = n % 2 == 0
    broker = pc.broker_entry_metadata(1_700_000_000_999, 10_000 + n - 1) if with_bem else None
    e = pc.entry(msgs, codec=codec, sequence_id=500, broker=broker, checksum=n != 10)
    b = pulsar.decode_messages([e])
    assert b.num_rows == n
    assert errors(b) == [None] * n
    assert b.column("payload").to_pylist() == [m.payload for m in msgs]
    assert b.column("batch_index").to_pylist() == list(range(n))
    assert b.column("batch_size").to_pylist() == [n] * n
    assert b.column("sequence_id").to_pylist() == [500 + i for i in range(n)]
    assert set(b.column("compression").to_pylist()) == {"zlib" if codec == "zlib-complete" else codec}
    assert set(b.column("checksum_ok").to_pylist()) == {None if n == 10 else True}
    expected_index = [10_000 + i for i in range(n)] if with_bem else [None] * n
    assert b.column("message_index").to_pylist() == expected_index


@pytest.mark.parametrize("codec", CODECS)
def test_single_messages_in_every_codec(codec):
    payload = b"a single message, compressed " * 20
    e = pc.entry([Message(payload)], codec=codec, batched=False)
    b = pulsar.decode_messages([e])
    assert rows(b, "batch_index", "batch_size", "payload", "kind", "error") == [(None, None, payload, "message", None)]


def test_java_zlib_of_an_empty_payload_is_no_bytes():
    e = pc.entry([Message(b"")], codec="zlib", batched=False)
    assert pulsar.decode_messages([e]).column("payload").to_pylist() == [b""]


def test_message_and_batch_metadata_reach_their_columns():
    md = pc.message_metadata(
        "prod",
        77,
        1_700_000_000_000,
        properties=[("a", "1"), ("b", "ü")],
        partition_key="key",
        event_time=1_600_000_000_000,
        schema_version=struct.pack(">q", 3),
        replicated_from="east",
        ordering_key=b"\x00ord",
        deliver_at_time=1_700_000_060_000,
        txnid_most_bits=5,
        txnid_least_bits=9,
        null_value=True,
    )
    b = pulsar.decode_messages([pc.frame(md, b"")])
    r = b.to_pylist()[0]
    assert r["properties"] == [("a", "1"), ("b", "ü")]
    assert (r["partition_key"], r["partition_key_b64_encoded"], r["ordering_key"]) == ("key", False, b"\x00ord")
    assert r["event_time"].timestamp() == 1_600_000_000
    assert r["deliver_at_time"].timestamp() == 1_700_000_060
    assert (r["schema_version"], r["replicated_from"]) == (struct.pack(">q", 3), "east")
    assert (r["txnid_most_bits"], r["txnid_least_bits"], r["null_value"], r["encrypted"]) == (5, 9, True, False)
    # Batched messages: their own metadata, the batch's only where Pulsar's consumer takes it.
    msgs = [
        Message(b"1", properties=[("p", "q")], key="k1", event_time=5, sequence_id=40),
        Message(b"2", compacted_out=True, null_value=True, ordering_key=b"o"),
    ]
    b = pulsar.decode_messages([pc.entry(msgs, sequence_id=39, partition_key="batch-key", event_time=9)])
    assert rows(b, "properties", "partition_key", "event_time", "sequence_id", "compacted_out", "null_value", "ordering_key") == [
        ([("p", "q")], "k1", pa.scalar(5, pa.timestamp("ms", tz="UTC")).as_py(), 40, False, False, None),
        ([], None, pa.scalar(9, pa.timestamp("ms", tz="UTC")).as_py(), 39, True, True, b"o"),
    ]


def test_compacted_batches_list_the_messages_they_kept():
    raw = pc.batch([Message(b"k0"), Message(b"k2")])
    md = pc.message_metadata(num_messages=4, compacted_batch_indexes=[0, 2])
    b = pulsar.decode_messages([pc.frame(md, raw)])
    assert rows(b, "batch_index", "batch_size", "payload") == [(0, 4, b"k0"), (2, 4, b"k2")]


def test_encrypted_marker_and_kafka_entries_are_rows_that_say_what_they_are():
    cipher = bytes(range(64))
    enc = pc.frame(
        pc.message_metadata(
            compression=1, uncompressed_size=999, num_messages=3, encryption_keys=[("rsa-key", b"\x01\x02")],
            encryption_algo="AES-GCM", encryption_param=b"\x00" * 12,
        ),
        cipher,
    )
    marker = pc.frame(pc.message_metadata("broker", marker_type=21), pc.f_int(1, 7))
    kafka = pc.frame(pc.message_metadata("", properties=[("entry.format", "kafka")], num_messages=12), b"kafka batch")
    b = pulsar.decode_messages([enc, marker, kafka])
    assert errors(b) == [None] * 3
    assert rows(b, "kind", "encrypted", "batch_size", "payload") == [
        ("message", True, 3, cipher),
        ("marker", False, None, pc.f_int(1, 7)),
        ("kafka", False, 12, b"kafka batch"),
    ]
    r = b.to_pylist()[0]
    assert (r["encryption_algo"], r["encryption_param"], r["encryption_keys"]) == ("AES-GCM", b"\x00" * 12, [("rsa-key", b"\x01\x02")])
    assert pulsar.MARKER_TYPES[b.column("marker_type")[1].as_py()] == "TXN_COMMIT"


def test_chunked_messages_span_entries_and_ledgers():
    big = bytes(range(256)) * 100
    chunks = pc.chunked(big, chunk_size=7000, codec="none")
    assert len(chunks) == 4
    # Chunks in two ledgers (the producer's ledger rolled over), one out of order,
    # with another message in between.
    table = pa.table(
        {
            "ledger_id": [1, 1, 1, 2, 2],
            "entry_id": [7, 8, 9, 0, 1],
            "payload": [chunks[0], chunks[2], pc.entry([Message(b"other")]), chunks[1], chunks[3]],
        }
    )
    b = pulsar.decode_messages(table)
    assert errors(b) == [None, None]
    assert rows(b, "ledger_id", "entry_id", "payload") == [(1, 9, b"other"), (2, 1, big)]
    r = b.to_pylist()[1]
    assert (r["chunk_uuid"], r["num_chunks"], r["chunk_id"], r["total_chunk_size"]) == ("big-7", 4, None, len(big))
    assert (r["first_chunk_ledger_id"], r["first_chunk_entry_id"]) == (1, 7)
    # Compressed before splitting.
    zchunks = pc.chunked(big, chunk_size=100, codec="zlib")
    assert len(zchunks) > 2
    b = pulsar.decode_messages(zchunks)
    assert rows(b, "payload", "compression", "error") == [(big, "zlib", None)]


def test_incomplete_chunks_are_flagged_rows_with_the_chunks_they_have():
    chunks = pc.chunked(b"x" * 10_000, chunk_size=3000)
    b = pulsar.decode_messages([chunks[0], chunks[2]])
    assert rows(b, "kind", "chunk_id", "payload") == [("chunk", 0, b"x" * 3000), ("chunk", 2, b"x" * 3000)]
    assert all(e.startswith("truncated: incomplete chunked message big-7: chunks 0,2 of 4 found") for e in errors(b))
    with pytest.raises(bkcodec.TruncatedError, match="incomplete chunked message"):
        pulsar.decode_messages([chunks[0]], on_error="raise")
    b = pulsar.decode_messages(chunks, reassemble_chunks=False)
    assert rows(b, "kind", "chunk_id", "error") == [("chunk", i, None) for i in range(4)]


def test_a_decoder_keeps_chunks_between_calls():
    chunks = pc.chunked(b"y" * 5000, chunk_size=2000)
    d = pulsar.MessageDecoder()
    assert [b.num_rows for b in d.decode(chunks[:2])] == []
    out = d.decode(chunks[2:]) + d.finish()
    assert sum(b.num_rows for b in out) == 1
    assert out[0].column("payload").to_pylist() == [b"y" * 5000]
    assert d.counts["entries"] == 3
    assert d.schema == out[0].schema


# ---------------------------------------------------------------- damage


def test_a_bad_checksum_is_flagged_or_raised():
    e = bytearray(pc.entry([Message(b"payload")]))
    e[-1] ^= 0x01
    b = pulsar.decode_messages([bytes(e)])
    assert b.column("checksum_ok").to_pylist() == [False]
    assert errors(b)[0].startswith("digest mismatch: Pulsar checksum mismatch")
    assert b.column("payload").to_pylist() == [b"payloae"]
    with pytest.raises(bkcodec.DigestMismatchError) as err:
        pulsar.decode_messages([bytes(e)], on_error="raise")
    assert err.value.offset == 2
    assert "entry 0" in str(err.value)


def test_truncated_metadata_keeps_the_entry_bytes_and_names_the_offset():
    e = pc.entry([Message(b"payload")])
    cut = e[:14]
    b = pulsar.decode_messages([cut, e])
    assert b.num_rows == 2
    assert errors(b)[0].startswith("truncated: MessageMetadata size") and errors(b)[0].endswith("at byte 6 of the entry")
    assert b.column("payload")[0].as_py() == cut
    assert errors(b)[1] is None
    with pytest.raises(bkcodec.TruncatedError) as err:
        pulsar.decode_messages([e, cut], on_error="raise")
    assert err.value.offset == 6 and "entry 1" in str(err.value)


def test_wrong_and_impossible_uncompressed_sizes_are_flagged():
    raw = pc.batch([Message(b"m" * 50)])
    stored = pc.compress("lz4", raw)
    wrong = pc.frame(pc.message_metadata(compression=1, uncompressed_size=len(raw) + 3, num_messages=1), stored)
    # A 4 GB size claimed by a tiny entry: a flagged row, no allocation.
    huge = [pc.frame(pc.message_metadata(compression=c, uncompressed_size=2**32 - 1), b"\x00" * 80) for c in (1, 2, 3, 4)]
    b = pulsar.decode_messages([wrong] + huge)
    assert b.num_rows == 5
    assert errors(b)[0].startswith("corrupt: lz4: ")
    assert b.column("payload")[0].as_py() == stored
    for e in errors(b)[1:]:
        assert "uncompressed_size 4294967295 is more than 80 compressed bytes can hold" in e


def test_damage_inside_a_batch_keeps_the_messages_before_it():
    raw = bytearray(pc.batch([Message(b"one"), Message(b"two"), Message(b"three")]))
    third = len(raw) - (4 + 2 + 5)
    raw[third : third + 4] = b"\x7f\xff\xff\xff"
    b = pulsar.decode_messages([pc.frame(pc.message_metadata(num_messages=3), bytes(raw))])
    assert b.column("payload").to_pylist()[:2] == [b"one", b"two"]
    assert errors(b)[:2] == [None, None]
    assert "message 2 of a batch of 3" in errors(b)[2]


def test_metadata_without_required_fields_and_garbage():
    no_publish_time = pc.frame(pc.message_metadata(omit=[3]), b"x")
    b = pulsar.decode_messages([no_publish_time, b"\x00", b"garbage that is not pulsar"])
    assert b.num_rows == 3
    assert "publish_time" in errors(b)[0]
    assert all(e is not None for e in errors(b))


def test_the_ledger_owner_decides_what_an_entry_is():
    msg = pc.entry([Message(b"m")])
    cursor_entry = pc.f_int(1, 3) + pc.f_int(2, 9)
    table = pa.table({"ledger_id": [1, 2], "entry_id": [0, 0], "payload": [cursor_entry, msg]})
    owners = {1: ("cursor", "persistent://t/n/x"), 2: ("messages", "persistent://t/n/x")}
    b = pulsar.decode_messages(table, ledger_owners=owners)
    assert rows(b, "kind", "topic") == [("cursor", "persistent://t/n/x"), ("message", "persistent://t/n/x")]
    assert "not a topic message: the entry is in a cursor ledger of persistent://t/n/x" in errors(b)[0]
    with pytest.raises(ValueError, match="not a topic message"):
        pulsar.decode_messages(table, ledger_owners=owners, on_error="raise")


# ---------------------------------------------------------------- inputs


def test_every_input_form_gives_the_same_rows():
    entries = [pc.entry([Message(f"m{i}".encode())], sequence_id=i) for i in range(5)]
    want = [f"m{i}".encode() for i in range(5)]
    for form in (
        entries,
        pa.array(entries, pa.binary()),
        pa.array(entries, pa.large_binary()),
        pa.array(entries, pa.binary_view()),
        pa.chunked_array([entries[:2], entries[2:]], pa.binary()),
        pa.record_batch({"ledger_id": [1] * 5, "entry_id": list(range(5)), "payload": entries}),
        pa.table({"ledger_id": [1] * 5, "entry_id": list(range(5)), "payload": entries}),
    ):
        assert pulsar.decode_messages(form).column("payload").to_pylist() == want, type(form)
    with pytest.raises(TypeError, match="binary column of payloads, not Int64"):
        pulsar.decode_messages(pa.array([1, 2]))
    with pytest.raises(TypeError, match="not one payload"):
        pulsar.decode_messages(entries[0])
    with pytest.raises(TypeError, match="sequence of bytes-like payloads$"):
        pulsar.decode_messages(5)
    # Entry rows are messages' input, not decode_entries' (which takes entry bytes).
    rows = pa.record_batch({"ledger_id": [1] * 5, "entry_id": list(range(5)), "payload": entries})
    with pytest.raises(TypeError, match="binary_view column, not Struct"):
        bkcodec.decode_entries(rows)
    with pytest.raises(ValueError, match="payload column"):
        pulsar.decode_messages(pa.table({"ledger_id": [1]}))
    with pytest.raises(ValueError):
        pulsar.decode_messages(entries, on_error="ignore")


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_binary_view_payloads_equal_binary_ones(codec):
    entries = [pc.entry([Message(bytes([i]) * (5 + 20 * j)) for j in range(4)], codec=codec) for i in range(30)]
    entries.append(pc.entry([Message(b"single " * 9)], batched=False))
    table = pa.table({"ledger_id": [1] * 31, "entry_id": list(range(31)), "payload": entries})
    binary = pulsar.decode_messages(table)
    view = pulsar.decode_messages(table, payload="binary_view")
    assert view.schema.field("payload").type == pa.binary_view()
    assert view.column("payload").to_pylist() == binary.column("payload").to_pylist()
    assert view.drop_columns(["payload"]).equals(binary.drop_columns(["payload"]))


def test_payload_none_leaves_the_column_out():
    b = pulsar.decode_messages([pc.entry([Message(b"x")])], payload="none")
    assert "payload" not in b.schema.names and b.num_rows == 1


# ---------------------------------------------------------------- topic metadata


@pytest.mark.parametrize("encoding", ["binary", "text", "lz4", "zlib", "zstd", "snappy"])
def test_managed_ledger_info_in_every_encoding(encoding):
    ledgers = [pc.LedgerInfo(3, 10, 1234, 1_600_000_000_000), pc.LedgerInfo(7, 0, 0, 0, offloaded=True)]
    binary = pc.managed_ledger_info(ledgers, terminated=(7, -1))
    data = {"binary": binary, "text": pc.managed_ledger_info_text(ledgers, terminated=(7, -1))}.get(encoding)
    if data is None:
        data = pc.compressed_info(encoding, binary)
    info = pulsar.decode_managed_ledger_info(data)
    assert info["encoding"] == encoding
    assert [(l["ledger_id"], l["entries"], l["size"], l["timestamp"], l["offloaded"]) for l in info["ledgers"]] == [
        (3, 10, 1234, 1_600_000_000_000, False),
        (7, 0, 0, 0, True),
    ]
    assert info["terminated_position"] == (7, -1)
    cursor = {"binary": pc.managed_cursor_info(12, (3, 9)), "text": pc.managed_cursor_info_text(12, (3, 9))}.get(encoding)
    if cursor is None:
        cursor = pc.compressed_info(encoding, pc.managed_cursor_info(12, (3, 9)))
    c = pulsar.decode_managed_cursor_info(cursor)
    assert (c["cursors_ledger_id"], c["mark_delete_position"], c["encoding"]) == (12, (3, 9), encoding)


def test_bad_managed_ledger_info_raises_with_the_offset():
    with pytest.raises(bkcodec.CorruptDataError) as err:
        pulsar.decode_managed_ledger_info(b"ledgerInfo {\n  ledgerID: 3\n}\n")
    assert err.value.offset == 15
    with pytest.raises(bkcodec.BookKeeperFormatError):
        pulsar.decode_managed_ledger_info(pc.compressed_info("lz4", pc.managed_ledger_info([pc.LedgerInfo(1)]))[:-2])
    with pytest.raises(bkcodec.CorruptDataError, match="cursorsLedgerId"):
        pulsar.decode_managed_cursor_info(b"markDeleteLedgerId: 3")


def test_topic_ledgers_of_znodes_in_every_encoding():
    info = [pc.LedgerInfo(5, 3, 300, 1_600_000_000_000)]
    pairs = [
        ("/managed-ledgers/a/b/persistent/binary", pc.managed_ledger_info(info)),
        ("/managed-ledgers/a/b/persistent/text", pc.managed_ledger_info_text([pc.LedgerInfo(6, 3, 300, 1_600_000_000_000)])),
        ("/managed-ledgers/a/b/persistent/zstd", pc.compressed_info("zstd", pc.managed_ledger_info([pc.LedgerInfo(7)]))),
        ("/managed-ledgers/a/b/persistent/text/sub", pc.compressed_info("lz4", pc.managed_cursor_info(8, (6, 1)))),
    ]
    t = pulsar.topic_ledgers(pairs)
    assert rows(t, "topic", "ledger_id", "kind", "cursor", "entries", "error") == [
        ("persistent://a/b/binary", 5, "messages", None, 3, None),
        ("persistent://a/b/text", 6, "messages", None, 3, None),
        ("persistent://a/b/zstd", 7, "messages", None, 0, None),
        ("persistent://a/b/text", 8, "cursor", "sub", None, None),
    ]


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return pc.make_pulsar_bookie(tmp_path_factory.mktemp("pulsar") / "bookie")


def test_topic_ledgers_of_a_dump(bookie):
    t = pulsar.topic_ledgers(bookie.dump)
    got = {r["ledger_id"]: r for r in t.to_pylist()}
    assert set(got) == {10, 11, 20, 30, 40}
    assert (got[10]["topic"], got[10]["kind"], got[10]["entries"], got[10]["size"]) == ("persistent://public/default/orders", "messages", 6, 4000)
    assert (got[20]["topic"], got[20]["managed_ledger"]) == ("persistent://t1/ns/events-partition-0", "t1/ns/persistent/events-partition-0")
    assert (got[30]["kind"], got[30]["cursor"]) == ("cursor", "sub")
    # Ledger 40: no topic lists it, its own metadata says whose it was.
    assert (got[40]["topic"], got[40]["in_topic_metadata"], got[40]["in_ledger_metadata"]) == ("persistent://public/default/gone", False, True)
    assert all(r["error"] is None for r in t.to_pylist())
    assert pulsar.ledgers_of_topic(t, "orders") == {10, 11}
    assert pulsar.ledgers_of_topic(t, "persistent://t1/ns/events") == {20}
    assert pulsar.ledgers_of_topic(t, "t1/ns/events-partition-0") == {20}


def test_topic_ledgers_from_ledger_metadata_alone(bookie):
    md = bkcodec.load_ledger_metadata_dir(bookie.dump / "ledgers")
    t = pulsar.topic_ledgers(ledger_metadata=md)
    got = {r["ledger_id"]: (r["topic"], r["kind"], r["cursor"], r["state"]) for r in t.to_pylist()}
    assert got == {
        10: ("persistent://public/default/orders", "messages", None, "CLOSED"),
        11: ("persistent://public/default/orders", "messages", None, "OPEN"),
        20: ("persistent://t1/ns/events-partition-0", "messages", None, "CLOSED"),
        30: ("persistent://public/default/orders", "cursor", "sub", "OPEN"),
        40: ("persistent://public/default/gone", "messages", None, "OPEN"),
    }
    # The same from znode (path, bytes) pairs.
    pairs = [("/managed-ledgers/t1/ns/persistent/events-partition-0", (bookie.dump / "managed-ledgers/t1/ns/persistent/events-partition-0").read_bytes())]
    assert pulsar.topic_ledgers(pairs).column("ledger_id").to_pylist() == [20]


def expected(bookie, topic):
    return bookie.messages[topic]


def got_rows(table):
    return list(zip(*(table.column(c).to_pylist() for c in ["ledger_id", "entry_id", "batch_index", "payload"])))


def test_read_messages_of_a_bookie_directory(bookie):
    t = pulsar.read_messages(bookie.root, metadata=bookie.dump).read_all()
    assert t.column("error").null_count == t.num_rows
    for topic in bookie.messages:
        part = t.filter(pa.compute.equal(t.column("topic"), topic))
        assert got_rows(part) == expected(bookie, topic), topic
    # The cursor ledger's entry is not a message and is left out.
    assert 30 not in set(t.column("ledger_id").to_pylist())
    # The journal's copy of ledger 20's entry 0 gave its messages once.
    assert t.filter(pa.compute.equal(t.column("ledger_id"), 20)).num_rows == 20


def test_read_messages_of_one_topic_and_of_ledgers(bookie):
    t = pulsar.read_messages(bookie.root, metadata=bookie.dump, topic="orders").read_all()
    assert got_rows(t) == expected(bookie, "persistent://public/default/orders")
    t = pulsar.read_messages(bookie.root, ledgers=[20]).read_all()
    assert got_rows(t) == expected(bookie, "persistent://t1/ns/events-partition-0")
    assert set(t.column("topic").to_pylist()) == {None}
    with pytest.raises(ValueError, match="needs metadata"):
        pulsar.read_messages(bookie.root, topic="orders")


def test_read_messages_without_metadata_flags_what_is_not_a_message(bookie):
    t = pulsar.read_messages(bookie.root).read_all()
    bad = t.filter(pa.compute.is_valid(t.column("error")))
    assert bad.column("ledger_id").to_pylist() == [30]
    assert t.num_rows == 1 + sum(len(v) for v in bookie.messages.values())


def test_a_db_ledger_storage_bookie_reads_the_same(bookie, tmp_path):
    pytest.importorskip("rocksdict", reason="DbLedgerStorage indexes need bkcodec[rocksdb]")
    import shutil

    root = tmp_path / "bookie"
    shutil.copytree(bookie.root, root)
    current = root / "ledgers" / "current"
    for idx in current.rglob("*.idx"):
        idx.unlink()
    logs = pa.concat_tables(bkcodec.read_entry_log(log).read_all() for log in sorted(current.glob("*.log")))
    # Left in its write-ahead log, as a bookie stopped before a flush leaves it: a
    # RocksDB `*.log` file beside the entry logs' names, which is not an entry log.
    bkcodec.write_location_index(current / "locations", logs.select(["ledger_id", "entry_id", "location"]), flush=False)
    assert list((current / "locations").glob("*.log"))
    names = lambda files: [(p.relative_to(p.parents[2]), kind) for p, kind in files]  # noqa: E731
    assert names(pulsar.bookie_files(root)) == names(pulsar.bookie_files(bookie.root))
    assert pulsar.read_messages(root, metadata=bookie.dump).read_all().equals(
        pulsar.read_messages(bookie.root, metadata=bookie.dump).read_all()
    )
    assert set(pulsar.bookie_ledgers(root)) == set(pulsar.bookie_ledgers(bookie.root))


def test_read_messages_of_files_and_reader_streams(bookie):
    log0 = bookie.root / "ledgers" / "current" / "0.log"
    a = pulsar.read_messages(log0).read_all()
    b = pulsar.read_messages(bkcodec.read_entry_log(log0)).read_all()
    assert a.equals(b)
    assert got_rows(a.filter(pa.compute.equal(a.column("ledger_id"), 10))) == [
        m for m in expected(bookie, "persistent://public/default/orders") if m[0] == 10
    ]
    j = pulsar.read_messages(bookie.root / "journal" / "current" / "1.txn").read_all()
    # The journal alone holds chunks 1.. of the chunked message (chunk 0 is in 2.log).
    flagged = [e for e in j.column("error").to_pylist() if e]
    assert flagged and all("incomplete chunked message big-7: chunks 1,2,3 of 4 found" in e for e in flagged)
    assert j.num_rows == len(flagged) + 5
    with pytest.raises(FileNotFoundError):
        pulsar.read_messages(bookie.root / "missing")
    r = pulsar.read_messages(bookie.root)
    assert isinstance(r, bkcodec.RecordBatchReader) and "Pulsar messages" in repr(r)
