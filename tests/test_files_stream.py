"""The RecordBatchReader the file readers return: Arrow C stream export (pyarrow,
and through the same capsule polars and duckdb), iteration, schema and column order,
payload modes, batch sizes, consumption rules."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import bkcodec

ENTRY_COLUMNS = ["format_version", "scope_id", "ledger_id", "entry_id", "last_add_confirmed", "length",
                 "digest_type", "digest_ok", "digest_unchecked_reason"]


@pytest.fixture(scope="module")
def sample():
    """An entry log of 500 entries (two ledgers), and the entries themselves."""
    with tempfile.TemporaryDirectory(prefix="bkcodec-stream-") as d:
        path = Path(d) / "c.log"
        entries = []
        with bkcodec.EntryLogWriter(path) as w:
            for i in range(500):
                lid = i % 2
                payload = bytes([i % 251]) * (i % 40)
                e = bkcodec.encode_entry(lid, i // 2, i // 2 - 1, 0, payload, digest_type="crc32" if lid else "crc32c")
                entries.append(e)
                w.add_entry(e)
        yield path, entries


def test_pyarrow_takes_the_stream(sample):
    path, entries = sample
    reader = bkcodec.read_entry_log(path, batch_size=128)
    schema = reader.schema
    pa_reader = pa.RecordBatchReader.from_stream(reader)
    assert pa_reader.schema == schema
    batches = list(pa_reader)
    assert [b.num_rows for b in batches] == [128, 128, 128, 116]
    assert reader.closed
    with pytest.raises(ValueError, match="consumed"):
        pa.table(reader)
    table = pa.table(bkcodec.read_entry_log(path))
    assert table.num_rows == 500 and table.schema == schema
    assert table.column("payload").to_pylist() == [bytes([i % 251]) * (i % 40) for i in range(500)]


def test_iteration_and_reading(sample):
    path, _ = sample
    reader = bkcodec.read_entry_log(path, batch_size=200)
    first = reader.read_next_batch()
    assert isinstance(first, pa.RecordBatch) and first.num_rows == 200
    second = next(iter(reader))
    assert second.num_rows == 200 and second.column("offset")[0].as_py() > first.column("offset")[-1].as_py()
    rest = reader.read_all()
    assert isinstance(rest, pa.Table) and rest.num_rows == 100
    # A consumed reader: iterating ends at once; reading it all again is an error.
    with pytest.raises(ValueError, match="consumed"):
        reader.read_all()
    with pytest.raises(StopIteration):
        reader.read_next_batch()
    assert list(reader) == []
    reader = bkcodec.read_entry_log(path, batch_size=1000)
    assert [b.num_rows for b in reader] == [500]
    assert reader.closed
    with pytest.raises(StopIteration):
        reader.read_next_batch()
    with bkcodec.read_entry_log(path) as r:
        assert not r.closed
    assert r.closed and r.schema.names[0] == "log_id", "the schema outlives the stream"


def test_column_order_and_types(sample):
    path, entries = sample
    flag = bkcodec.read_entry_log(path).schema
    position = ["log_id", "offset", "location", "record_size", "record_type"]
    assert flag.names == [*position, *ENTRY_COLUMNS, "payload", "error", "error_kind"]
    raise_ = bkcodec.read_entry_log(path, on_error="raise", payload="none").schema
    assert raise_.names == [*position, *ENTRY_COLUMNS]
    # The entry columns are decode_entries' columns: same names, types and order.
    decoded = bkcodec.decode_entries(entries[:3], on_error="flag").schema
    assert [(f.name, f.type) for f in decoded] == [(f.name, f.type) for f in flag][5:]
    assert [flag.field(n).type for n in position[:4]] == [pa.int64()] * 4
    assert flag.field("record_type").type == pa.string() and not flag.field("record_type").nullable
    assert not flag.field("offset").nullable and flag.field("location").nullable
    journal = Path(path).with_name("1.txn")
    with bkcodec.JournalWriter(journal, overwrite=True) as w:
        w.add_fence(1)
    js = bkcodec.read_journal(journal).schema
    assert js.names == ["journal_id", "offset", "record_size", "record_type", *ENTRY_COLUMNS, "payload",
                        "master_key", "explicit_lac", "explicit_lac_blob", "error", "error_kind"]
    assert [(f.name, f.type) for f in decoded] == [(f.name, f.type) for f in js if f.name in decoded.names]
    assert js.field("master_key").type == pa.binary() and js.field("explicit_lac").type == pa.int64()


def test_payload_modes(sample):
    path, _ = sample
    binary = bkcodec.read_entry_log(path).read_all()
    view = bkcodec.read_entry_log(path, payload="binary_view").read_all()
    assert view.schema.field("payload").type == pa.binary_view()
    assert view.column("payload").to_pylist() == binary.column("payload").to_pylist()
    # Long payloads are views into one data buffer: the bytes the reader read, from
    # the first record (after the 1024-byte header) to the end; a batch that holds
    # a small part of the reader's window gets them copied, not the whole window.
    chunk = view.column("payload").chunk(0)
    sizes = [b.size for b in chunk.buffers()[2:] if b is not None]
    assert sizes == [Path(path).stat().st_size - 1024]
    none = bkcodec.read_entry_log(path, payload="none").read_all()
    assert "payload" not in none.column_names
    assert none.drop_columns([]).select(["offset"]) == binary.select(["offset"])


def test_batches_respect_the_size(sample):
    path, _ = sample
    for size in (1, 7, 499, 500, 501):
        sizes = [b.num_rows for b in bkcodec.read_entry_log(path, batch_size=size)]
        assert sum(sizes) == 500 and max(sizes) <= size and all(s > 0 for s in sizes)


def test_verify_false_skips_digests_but_still_frames(sample):
    path, _ = sample
    damaged = Path(path).with_name("d.log")
    data = bytearray(Path(path).read_bytes())
    t = bkcodec.read_entry_log(path).read_all()
    # Flip the last payload byte of a later entry with a payload.
    row = next(r for r in t.to_pylist()[10:] if r["payload"])
    data[row["offset"] + 4 + row["record_size"] - 1] ^= 1
    damaged.write_bytes(bytes(data))
    checked = bkcodec.read_entry_log(damaged).read_all()
    assert checked.column("error").null_count == 499
    unchecked = bkcodec.read_entry_log(damaged, verify=False).read_all()
    assert unchecked.column("error").null_count == 500
    # Digests still confirm the framing (and infer each ledger's type), but no row
    # says what they found.
    assert unchecked.column("digest_ok").null_count == 500
    assert unchecked.column("digest_type").to_pylist() == checked.column("digest_type").to_pylist()
    assert unchecked.column("offset").to_pylist() == checked.column("offset").to_pylist()


def test_reprs(sample):
    path, _ = sample
    r = bkcodec.read_entry_log(path)
    text = repr(r)
    assert text.startswith("<bkcodec.RecordBatchReader of entry log") and str(path) in text
    assert "log id 12" in text and "17 columns (log_id, offset" in text and "closed" not in text
    r.close()
    assert repr(r).endswith(", closed>")
    assert "index file" in repr(bkcodec.read_index(_index(path)))


def _index(path):
    idx = Path(path).with_name("5.idx")
    if not idx.exists():
        bkcodec.write_index_file(idx, {0: 1 << 32 | 1028})
    return idx


def test_errors_through_the_stream(sample):
    path, _ = sample
    torn = Path(path).with_name("torn.log")
    # Cut 10 bytes into the last entry (the ledgers map follows the entries).
    cut = bkcodec.entry_log_header(path).ledgers_map_offset - 10
    torn.write_bytes(Path(path).read_bytes()[:cut])
    reader = bkcodec.read_entry_log(torn, on_error="raise", batch_size=100)
    got = 0
    with pytest.raises(bkcodec.TruncatedError) as e:
        for b in reader:
            got += b.num_rows
    assert got == 499, "the rows before the damage arrive first"
    assert e.value.path == str(torn) and reader.closed
    # Through the C stream, pyarrow raises its own error with the same message.
    with pytest.raises(pa.ArrowInvalid, match=f"truncated: .* at byte {e.value.offset} of"):
        pa.table(bkcodec.read_entry_log(torn, on_error="raise"))


def test_readers_in_threads(sample):
    """Batches are scanned with the GIL released; readers in threads agree."""
    path, _ = sample
    expected = bkcodec.read_entry_log(path).read_all()
    results = [None] * 4

    def work(i):
        results[i] = pa.table(bkcodec.read_entry_log(path, batch_size=50 + i))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.combine_chunks() == expected.combine_chunks() for r in results)
    shared = bkcodec.read_entry_log(path, batch_size=10)
    counts = []

    def drain():
        n = 0
        for b in shared:
            n += b.num_rows
        counts.append(n)

    threads = [threading.Thread(target=drain) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == 500, "a reader shared between threads yields each batch once"


def test_reader_schema_is_what_the_readers_give(sample, tmp_path):
    path, _ = sample
    journal = tmp_path / "1.txn"
    with bkcodec.JournalWriter(journal) as w:
        w.add_entry(bkcodec.encode_entry(1, 0, -1, 3, b"abc", digest_type="crc32c"))
    index = tmp_path / "1.idx"
    bkcodec.write_index_file(index, {0: bkcodec.make_location(0, 1024)})
    for payload in ("binary", "binary_view", "none"):
        for on_error in ("flag", "raise"):
            opts = dict(payload=payload, on_error=on_error)
            assert bkcodec.reader_schema("entry_log", **opts) == bkcodec.read_entry_log(path, **opts).schema
            assert bkcodec.reader_schema("journal", **opts) == bkcodec.read_journal(journal, **opts).schema
    assert bkcodec.reader_schema("index") == bkcodec.read_index(index).schema
    with pytest.raises(ValueError, match="unknown reader kind"):
        bkcodec.reader_schema("wal")
    with pytest.raises(ValueError):
        bkcodec.reader_schema("journal", payload="view")


def test_error_kinds_and_digest_types():
    kinds = bkcodec.error_kinds()
    assert len(kinds) == len(set(kinds))
    assert {"torn_record", "bad_size", "zeros", "bad_header", "truncated", "file_shrank", "digest_mismatch"} <= set(kinds)
    assert sorted(bkcodec.digest_types()) == ["crc32", "crc32c", "dummy", "hmac"]


def test_entry_log_rows_say_their_record_type(sample, tmp_path):
    path, _ = sample
    clean = bkcodec.read_entry_log(path).read_all()
    assert set(clean.column("record_type").to_pylist()) == {"entry"}
    cut = tmp_path / "0.log"
    data = Path(path).read_bytes()
    cut.write_bytes(data[: len(data) - 7])
    rows = bkcodec.read_entry_log(cut).read_all().select(["record_type", "error_kind"]).to_pylist()
    assert rows[-1]["record_type"] == "damage" and rows[-1]["error_kind"] is not None


def test_unchecked_entries_say_why(tmp_path):
    path = tmp_path / "0.log"
    with bkcodec.EntryLogWriter(path) as w:
        # Lengths that chain, so the HMAC ledger frames without its password.
        w.add_entry(bkcodec.encode_entry(1, 0, -1, 1, b"x", digest_type="hmac", password=b"secret"))
        w.add_entry(bkcodec.encode_entry(1, 1, 0, 2, b"y", digest_type="hmac", password=b"secret"))
        w.add_entry(bkcodec.encode_entry(2, 0, -1, 1, b"z", digest_type="crc32c"))
    def reasons(**options):
        t = bkcodec.read_entry_log(path, **options).read_all()
        return dict(zip(t.column("ledger_id").to_pylist(), t.column("digest_unchecked_reason").to_pylist()))

    assert reasons() == {1: "no_password", 2: None}
    assert reasons(password=b"secret") == {1: None, 2: None}
    assert reasons(verify=False) == {1: None, 2: None}
    assert set(bkcodec.digest_unchecked_reasons()) == {"no_password", "unknown_type"}
