"""A bookie holding Apache Pulsar topics, and a dump of its metadata store.

`make_pulsar_bookie("pulsar/bookie")` writes a bookie directory whose entries are
what Pulsar's brokers store (message metadata and payloads, batches in every codec,
broker entry metadata, a chunked message straddling an entry log and the journal, a
cursor ledger, a ledger whose topic is gone) and, beside it, `pulsar/zk-dump`: the
znodes a Pulsar cluster keeps in its metadata store, one file per znode
(docs/pulsar.md). The `bkcodec.pulsar` examples in the documentation read this pair.

Protobuf is encoded by hand here (varints and length-delimited fields, proto2 field
numbers from PulsarApi.proto and MLDataFormats.proto, docs/pulsar.md), independently
of bkcodec's decoder; the codecs are pyarrow's (LZ4 raw blocks, ZSTD, Snappy) and
Python's `zlib` (`Z_SYNC_FLUSH` and no final block, as Java's `Deflater` writes
Pulsar's ZLIB payloads). Bookie directories are written with bkcodec's file writers.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import pyarrow as pa

from .. import (
    EntryLogWriter,
    JournalWriter,
    LedgerMetadata,
    crc32c,
    encode_entry,
    encode_ledger_metadata,
    index_path,
    ledger_znode_path,
    master_key,
    write_index_file,
)

__all__ = ["Message", "PulsarBookie", "make_pulsar_bookie", "DUMP_NAME"]

#: Where `make_pulsar_bookie` puts the metadata dump by default: beside the bookie.
DUMP_NAME = "zk-dump"

# ---------------------------------------------------------------- protobuf by hand


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int32/int64 values are 10-byte two's complement
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def f_int(number: int, value: int | bool | None) -> bytes:
    if value is None:
        return b""
    return varint(number << 3) + varint(int(value))


def f_bytes(number: int, value: bytes | str | None) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def key_value(key: str, value: str) -> bytes:
    return f_bytes(1, key) + f_bytes(2, value)


def message_metadata(
    producer: str = "producer-1",
    sequence_id: int = 0,
    publish_time: int = 1_700_000_000_000,
    *,
    properties: Sequence[tuple[str, str]] = (),
    replicated_from: str | None = None,
    partition_key: str | None = None,
    compression: int | None = None,
    uncompressed_size: int | None = None,
    num_messages: int | None = None,
    event_time: int | None = None,
    encryption_keys: Sequence[tuple[str, bytes]] = (),
    encryption_algo: str | None = None,
    encryption_param: bytes | None = None,
    schema_version: bytes | None = None,
    ordering_key: bytes | None = None,
    deliver_at_time: int | None = None,
    marker_type: int | None = None,
    txnid_least_bits: int | None = None,
    txnid_most_bits: int | None = None,
    highest_sequence_id: int | None = None,
    null_value: bool | None = None,
    uuid: str | None = None,
    num_chunks: int | None = None,
    total_chunk_size: int | None = None,
    chunk_id: int | None = None,
    compacted_batch_indexes: Sequence[int] = (),
    omit: Sequence[int] = (),
) -> bytes:
    """`MessageMetadata` in field-number order (as LightProto writes it). `omit`
    leaves out fields by number (to break the required ones)."""
    parts = [
        (1, f_bytes(1, producer)),
        (2, f_int(2, sequence_id)),
        (3, f_int(3, publish_time)),
        (4, b"".join(f_bytes(4, key_value(k, v)) for k, v in properties)),
        (5, f_bytes(5, replicated_from)),
        (6, f_bytes(6, partition_key)),
        (8, f_int(8, compression)),
        (9, f_int(9, uncompressed_size)),
        (11, f_int(11, num_messages)),
        (12, f_int(12, event_time)),
        (13, b"".join(f_bytes(13, f_bytes(1, k) + f_bytes(2, v)) for k, v in encryption_keys)),
        (14, f_bytes(14, encryption_algo)),
        (15, f_bytes(15, encryption_param)),
        (16, f_bytes(16, schema_version)),
        (18, f_bytes(18, ordering_key)),
        (19, f_int(19, deliver_at_time)),
        (20, f_int(20, marker_type)),
        (22, f_int(22, txnid_least_bits)),
        (23, f_int(23, txnid_most_bits)),
        (24, f_int(24, highest_sequence_id)),
        (25, f_int(25, null_value)),
        (26, f_bytes(26, uuid)),
        (27, f_int(27, num_chunks)),
        (28, f_int(28, total_chunk_size)),
        (29, f_int(29, chunk_id)),
        (31, b"".join(f_int(31, i) for i in compacted_batch_indexes)),
    ]
    return b"".join(p for n, p in parts if n not in omit)


def single_message_metadata(
    payload_size: int,
    *,
    properties: Sequence[tuple[str, str]] = (),
    partition_key: str | None = None,
    compacted_out: bool | None = None,
    event_time: int | None = None,
    ordering_key: bytes | None = None,
    sequence_id: int | None = None,
    null_value: bool | None = None,
) -> bytes:
    return b"".join(
        [
            b"".join(f_bytes(1, key_value(k, v)) for k, v in properties),
            f_bytes(2, partition_key),
            f_int(3, payload_size),
            f_int(4, compacted_out),
            f_int(5, event_time),
            f_bytes(7, ordering_key),
            f_int(8, sequence_id),
            f_int(9, null_value),
        ]
    )


def broker_entry_metadata(broker_timestamp: int | None = None, index: int | None = None) -> bytes:
    return f_int(1, broker_timestamp) + f_int(2, index)


# ---------------------------------------------------------------- framing


def frame(metadata: bytes, payload: bytes, *, checksum: bool = True, broker: bytes | None = None) -> bytes:
    """What Pulsar stores as an entry's payload (`Commands.serializeMetadataAndPayload`,
    then the broker's `addBrokerEntryMetadata`)."""
    body = struct.pack(">I", len(metadata)) + metadata + payload
    out = b""
    if broker is not None:
        out += struct.pack(">HI", 0x0E02, len(broker)) + broker
    if checksum:
        out += struct.pack(">HI", 0x0E01, crc32c(body))
    return out + body


@dataclass
class Message:
    payload: bytes
    properties: Sequence[tuple[str, str]] = ()
    key: str | None = None
    event_time: int | None = None
    sequence_id: int | None = None
    compacted_out: bool | None = None
    null_value: bool | None = None
    ordering_key: bytes | None = None


def batch(messages: Sequence[Message]) -> bytes:
    """A batch payload: `[u32 size][SingleMessageMetadata][payload]` per message."""
    out = bytearray()
    for m in messages:
        smm = single_message_metadata(
            len(m.payload),
            properties=m.properties,
            partition_key=m.key,
            compacted_out=m.compacted_out,
            event_time=m.event_time,
            ordering_key=m.ordering_key,
            sequence_id=m.sequence_id,
            null_value=m.null_value,
        )
        out += struct.pack(">I", len(smm)) + smm + m.payload
    return bytes(out)


CODECS = {"none": 0, "lz4": 1, "zlib": 2, "zstd": 3, "snappy": 4}


def java_zlib(data: bytes) -> bytes:
    """Java's `Deflater` as Pulsar's `CompressionCodecZLib` drives it: zlib header,
    `SYNC_FLUSH`, `finish()` never called (no final block, no Adler-32). An empty
    input gives no bytes at all (its loop runs only while input is pending)."""
    if not data:
        return b""
    c = zlib.compressobj(6, zlib.DEFLATED, 15)
    return c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)


def _pyarrow_compress(codec: str, data: bytes) -> bytes:
    return bytes(pa.compress(data, codec=codec, asbytes=True))


def compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "lz4":
        return _pyarrow_compress("lz4_raw", data)
    if codec == "zlib":
        return java_zlib(data)
    if codec == "zlib-complete":  # what C++ and Go producers write
        return zlib.compress(data)
    if codec == "zstd":
        return _pyarrow_compress("zstd", data)
    if codec == "snappy":
        return _pyarrow_compress("snappy", data)
    raise ValueError(codec)


def entry(
    messages: Sequence[Message] | bytes,
    *,
    producer: str = "producer-1",
    sequence_id: int = 0,
    publish_time: int = 1_700_000_000_000,
    codec: str = "none",
    batched: bool = True,
    checksum: bool = True,
    broker: bytes | None = None,
    **metadata: object,
) -> bytes:
    """One stored entry: a batch of `messages` (or, with `batched=False` or raw
    bytes, one non-batched message), compressed with `codec`."""
    if isinstance(messages, bytes):
        raw, n = messages, None
    elif batched:
        raw, n = batch(messages), len(messages)
    else:
        assert len(messages) == 1
        raw, n = messages[0].payload, None
    stored = compress(codec, raw)
    code = CODECS["zlib" if codec == "zlib-complete" else codec]
    md = message_metadata(
        producer,
        sequence_id,
        publish_time,
        compression=code if code else None,
        uncompressed_size=len(raw) if code else None,
        num_messages=n,
        **metadata,  # type: ignore[arg-type]
    )
    return frame(md, stored, checksum=checksum, broker=broker)


def chunked(
    message: bytes, *, chunk_size: int, producer: str = "big", sequence_id: int = 7, codec: str = "none"
) -> list[bytes]:
    """A chunked message (PIP-37): compressed whole, split, one entry per chunk."""
    stored = compress(codec, message)
    parts = [stored[i : i + chunk_size] for i in range(0, len(stored), chunk_size)] or [b""]
    code = CODECS[codec]
    out = []
    for i, part in enumerate(parts):
        md = message_metadata(
            producer,
            sequence_id,
            compression=code or None,
            uncompressed_size=len(message) if code else None,
            uuid=f"{producer}-{sequence_id}",
            num_chunks=len(parts),
            total_chunk_size=len(stored),
            chunk_id=i,
        )
        out.append(frame(md, part))
    return out


# ---------------------------------------------------------------- MLDataFormats


@dataclass
class LedgerInfo:
    ledger_id: int
    entries: int = 0
    size: int = 0
    timestamp: int = 0
    offloaded: bool | None = None


def managed_ledger_info(ledgers: Iterable[LedgerInfo], terminated: tuple[int, int] | None = None) -> bytes:
    out = b""
    for l in ledgers:
        body = f_int(1, l.ledger_id) + f_int(2, l.entries) + f_int(3, l.size) + f_int(4, l.timestamp)
        if l.offloaded is not None:
            body += f_bytes(5, f_int(3, l.offloaded))
        out += f_bytes(1, body)
    if terminated is not None:
        out += f_bytes(2, f_int(1, terminated[0]) + f_int(2, terminated[1]))
    return out


def managed_ledger_info_text(ledgers: Iterable[LedgerInfo], terminated: tuple[int, int] | None = None) -> bytes:
    """As protobuf-java's `toString()` prints it (old `MetaStoreImplZookeeper`, Text mode)."""
    lines = []
    for l in ledgers:
        lines += ["ledgerInfo {", f"  ledgerId: {l.ledger_id}", f"  entries: {l.entries}", f"  size: {l.size}", f"  timestamp: {l.timestamp}"]
        if l.offloaded is not None:
            lines += ["  offloadContext {", f"    complete: {str(l.offloaded).lower()}", "  }"]
        lines.append("}")
    if terminated is not None:
        lines += ["terminatedPosition {", f"  ledgerId: {terminated[0]}", f"  entryId: {terminated[1]}", "}"]
    return ("\n".join(lines) + "\n").encode()


def managed_cursor_info(cursors_ledger_id: int, mark_delete: tuple[int, int] | None = None) -> bytes:
    out = f_int(1, cursors_ledger_id)
    if mark_delete is not None:
        out += f_int(2, mark_delete[0]) + f_int(3, mark_delete[1])
    return out


def managed_cursor_info_text(cursors_ledger_id: int, mark_delete: tuple[int, int] | None = None) -> bytes:
    lines = [f"cursorsLedgerId: {cursors_ledger_id}"]
    if mark_delete is not None:
        lines += [f"markDeleteLedgerId: {mark_delete[0]}", f"markDeleteEntryId: {mark_delete[1]}"]
    return ("\n".join(lines) + "\n").encode()


def compressed_info(codec: str, message: bytes) -> bytes:
    """The 0x4778 envelope of `MetaStoreImpl.compressManagedInfo`."""
    header = f_int(1, CODECS[codec]) + f_int(2, len(message))
    return struct.pack(">HI", 0x4778, len(header)) + header + compress(codec, message)


# ---------------------------------------------------------------- a Pulsar bookie


def pulsar_custom_metadata(managed_ledger: str, cursor: str | None = None) -> dict[str, bytes]:
    md = {"application": b"pulsar", "component": b"managed-ledger", "pulsar/managed-ledger": managed_ledger.encode()}
    if cursor is not None:
        md["pulsar/cursor"] = cursor.encode()
    return md


@dataclass
class PulsarBookie:
    root: Path
    dump: Path
    #: topic -> the messages written to it, in order: (ledger, entry, batch index, payload)
    messages: dict[str, list[tuple[int, int, int | None, bytes]]] = field(default_factory=dict)
    #: topic -> its ledgers
    ledgers: dict[str, list[int]] = field(default_factory=dict)
    cursor_ledger: int = 0
    orphan_ledger: int = 0


def bk_entry(ledger_id: int, entry_id: int, payload: bytes) -> bytes:
    # Pulsar's ledgers: CRC32C digests, empty password.
    return encode_entry(ledger_id, entry_id, entry_id - 1, 0, payload, digest_type="crc32c")


def _write_znode(dump: Path, znode: str, data: bytes, *, has_children: bool = False) -> None:
    path = dump / znode.lstrip("/")
    if has_children:
        path.mkdir(parents=True, exist_ok=True)
        (path / "_data").write_bytes(data)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def make_pulsar_bookie(root: str | os.PathLike[str], dump: str | os.PathLike[str] | None = None) -> PulsarBookie:
    """Writes a bookie holding Pulsar topics into `root` (created; must be empty or
    absent) and a dump of its metadata store into `dump` (default: `zk-dump` beside
    the bookie, so `make_pulsar_bookie("pulsar/bookie")` writes `pulsar/zk-dump`).

    The bookie has two topics, a cursor ledger and an orphan ledger:

    - `persistent://public/default/orders`: ledgers 10 and 11. Ledger 10 (entry log
      0.log, index file) holds batches in every codec, with broker entry metadata;
      ledger 11 (entry log 1.log and, for its last entries, only the journal) holds
      non-batched messages and a chunked message whose chunks straddle the two files.
    - `persistent://t1/ns/events-partition-0`: ledger 20, in 1.log (LZ4 batches).
    - ledger 30: the cursor ledger of subscription `sub` on orders (not messages).
    - ledger 40: a ledger of topic `persistent://public/default/gone`, which only its
      own ledger metadata still names (its topic's znode is gone).

    The dump holds orders' info in binary, events' in text, and the cursor in the
    compressed envelope; ledger metadata for every ledger, with Pulsar's custom
    metadata. Returns what was written: each topic's messages and ledgers.
    """
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    root.mkdir(parents=True, exist_ok=True)
    current = root / "ledgers" / "current"
    current.mkdir(parents=True, exist_ok=True)
    (root / "journal" / "current").mkdir(parents=True, exist_ok=True)
    dump = Path(dump) if dump is not None else root.parent / DUMP_NAME
    b = PulsarBookie(root=root, dump=dump)
    orders = "persistent://public/default/orders"
    events = "persistent://t1/ns/events-partition-0"
    gone = "persistent://public/default/gone"
    b.messages = {orders: [], events: [], gone: []}
    b.ledgers = {orders: [10, 11], events: [20], gone: [40]}
    b.cursor_ledger, b.orphan_ledger = 30, 40
    index_base = 1_000

    def batch_of(topic: str, ledger: int, entry_id: int, n: int, tag: str) -> list[Message]:
        msgs = [Message(f"{tag}-{entry_id}-{i}".encode() * (1 + i % 3), sequence_id=entry_id * 100 + i) for i in range(n)]
        b.messages[topic] += [(ledger, entry_id, i, m.payload) for i, m in enumerate(msgs)]
        return msgs

    log0 = current / "0.log"
    locations: dict[int, int] = {}
    with EntryLogWriter(log0) as w:
        index = index_base
        for entry_id, codec in enumerate(["none", "lz4", "zlib", "zstd", "snappy", "lz4"]):
            n = 1 + entry_id * 3
            msgs = batch_of(orders, 10, entry_id, n, codec)
            index += n
            broker = broker_entry_metadata(1_700_000_100_000 + entry_id, index - 1)
            payload = entry(msgs, codec=codec, sequence_id=entry_id * 100, broker=broker)
            locations[entry_id] = w.add_entry(bk_entry(10, entry_id, payload))
        # The cursor ledger: PositionInfo protobufs, not messages.
        w.add_entry(bk_entry(30, 0, f_int(1, 10) + f_int(2, 3)))
    idx = current / index_path(10)
    idx.parent.mkdir(parents=True, exist_ok=True)
    write_index_file(idx, locations, master_key=master_key(b""))

    # Incompressible, so that it takes several chunks.
    big = b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(320))
    chunks = chunked(big, chunk_size=3000, codec="zstd")
    log1 = current / "1.log"
    with EntryLogWriter(log1, layout="direct") as w:
        for entry_id in range(3):
            m = Message(f"single-{entry_id}".encode(), properties=[("k", str(entry_id))], key=f"key-{entry_id}")
            b.messages[orders].append((11, entry_id, None, m.payload))
            payload = entry([m], batched=False, sequence_id=entry_id, partition_key=m.key, properties=m.properties)
            w.add_entry(bk_entry(11, entry_id, payload))
        for entry_id in range(4):
            msgs = batch_of(events, 20, entry_id, 5, "ev")
            w.add_entry(bk_entry(20, entry_id, entry(msgs, codec="lz4", producer="p-ev", sequence_id=entry_id * 5)))
        w.add_entry(bk_entry(40, 0, entry([Message(b"last words")], producer="gone")))
        b.messages[gone].append((40, 0, 0, b"last words"))
    # Ledger 11's chunked message: chunk 0 in the entry log, the rest only in the journal.
    entry_ids = list(range(3, 3 + len(chunks)))
    b.messages[orders].append((11, entry_ids[-1], None, big))
    journal = root / "journal" / "current" / "1.txn"
    with JournalWriter(journal, version=6) as j:
        j.add_ledger_key(11, master_key(b""))
        for eid, c in zip(entry_ids[1:], chunks[1:]):
            j.add_entry(bk_entry(11, eid, c))
        # Entries also in the entry log (as before a flush): read once.
        j.add_entry(bk_entry(20, 0, entry(batch_of_copy(b, events, 20, 0), codec="lz4", producer="p-ev", sequence_id=0)))
        j.flush()
    with EntryLogWriter(current / "2.log") as w:
        w.add_entry(bk_entry(11, entry_ids[0], chunks[0]))

    # The metadata-store dump.
    _write_znode(dump, "/managed-ledgers/public/default/persistent/orders", managed_ledger_info(
        [LedgerInfo(10, 6, 4000, 1_700_000_000_000), LedgerInfo(11, 0, 0, 0)]), has_children=True)
    cursor = compressed_info("zstd", managed_cursor_info(30, (10, 2)))
    _write_znode(dump, "/managed-ledgers/public/default/persistent/orders/sub", cursor)
    _write_znode(dump, "/managed-ledgers/t1/ns/persistent/events-partition-0", managed_ledger_info_text(
        [LedgerInfo(20, 4, 900, 1_700_000_000_500)]))
    for ledger, md in [
        (10, pulsar_custom_metadata("public/default/persistent/orders")),
        (11, pulsar_custom_metadata("public/default/persistent/orders")),
        (20, pulsar_custom_metadata("t1/ns/persistent/events-partition-0")),
        (30, pulsar_custom_metadata("public/default/persistent/orders", cursor="sub")),
        (40, pulsar_custom_metadata("public/default/persistent/gone")),
    ]:
        closed = ledger in (10, 20)
        meta = LedgerMetadata(
            [(0, ["bookie-1:3181"])],
            state="CLOSED" if closed else "OPEN",
            last_entry_id=5 if ledger == 10 else (3 if ledger == 20 else -1),
            length=4000 if closed else 0,
            digest_type="crc32c",
            password=b"",
            ctime=1_699_000_000_000 + ledger,
            custom_metadata=md,
        )
        _write_znode(dump, ledger_znode_path(ledger), encode_ledger_metadata(meta))
    return b


def batch_of_copy(b: PulsarBookie, topic: str, ledger: int, entry_id: int) -> list[Message]:
    """The messages of an entry already written (for its copy in the journal)."""
    rows = [r for r in b.messages[topic] if r[0] == ledger and r[1] == entry_id]
    return [Message(r[3], sequence_id=entry_id * 100 + r[2]) for r in rows if r[2] is not None]
