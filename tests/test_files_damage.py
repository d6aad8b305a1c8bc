"""Damaged bookie files: torn, bytes flipped, garbage size fields, zeroed spans,
garbage inserted. Every entry the damage did not touch comes back intact at its
offset; the damage becomes rows whose `error` says what is wrong and whose `offset`
says where (or, with on_error="raise", the typed error at that offset). Files that
are not what the reader expects raise typed errors naming the path."""

from __future__ import annotations

import random
import struct
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bkcodec

PASSWORD = b"secret"
KINDS = [("crc32c", b""), ("crc32", b""), ("hmac", PASSWORD)]
SETTINGS = {100 + i: kind for i, kind in enumerate(KINDS)}


def clean_log(seed, count):
    """Entries of three ledgers and digest types; returns (bytes, records), records
    being (size-field offset, record length incl. size field, ledger, entry id)."""
    rng = random.Random(seed)
    next_id = [0, 0, 0]
    entries = []
    for _ in range(count):
        i = rng.randrange(3)
        dt, pw = KINDS[i]
        size = rng.choice([0, 5, 40, 300, 1500])
        payload = rng.randbytes(size)
        eid = next_id[i]
        next_id[i] += 1
        entries.append((100 + i, eid, bkcodec.encode_entry(100 + i, eid, eid - 1, size, payload, digest_type=dt, password=pw)))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "5.log"
        records = []
        with bkcodec.EntryLogWriter(path) as w:
            for lid, eid, e in entries:
                loc = w.add_entry(e)
                offset = bkcodec.split_location(loc)[1] - 4
                records.append((offset, 4 + len(e), lid, eid))
        return path.read_bytes(), records


def read(data, tmp, **kw):
    path = tmp / "5.log"
    path.write_bytes(data)
    return bkcodec.read_entry_log(path, password=PASSWORD, batch_size=17, **kw).read_all()


def check(table, records, touched, size):
    """Untouched records are good rows at their offsets; damage is flagged inside the
    touched span. `touched` is [start, end) of the damaged bytes; `size` is the
    file's length."""
    a, b = touched
    rows = table.to_pylist()
    good = {(r["offset"], r["ledger_id"], r["entry_id"]) for r in rows if r["error"] is None}
    hit = [r for r in records if r[0] < b and r[0] + r[1] > a]
    # Damage is a flagged row; an entry whose damage left its type unknowable (a
    # flipped ledger id makes it a ledger of its own) is unchecked, its digest
    # neither verified nor called damaged: never verified either way.
    # So is an HMAC entry when no entry of its ledger here verifies with the password
    # given: the password may not be its ledger's.
    verified = {r["ledger_id"] for r in rows if r["digest_ok"]}
    bad = [
        r for r in rows
        if r["error"] is not None
        or (r["format_version"] is not None and r["digest_type"] is None)
        or (r["digest_type"] == "hmac" and r["digest_ok"] is None and r["ledger_id"] not in verified)
    ]
    # Entry rows count the size field apart; damage rows span record_size bytes.
    spans = [(r["offset"], r["offset"] + r["record_size"] + (4 if r["format_version"] is not None else 0)) for r in bad]
    # The one way to lose an untouched entry: a damaged size field at a record's
    # offset that frames exactly onto a later record boundary (or the end of the
    # file), which framing cannot tell from a real size. That row is an entry whose
    # digest fails, and it covers what it swallowed.
    boundaries = {o for o, *_ in records} | {o + n for o, n, *_ in records} | {size}
    forged = [
        (s, e) for r, (s, e) in zip(bad, spans)
        if r["format_version"] is not None and r["digest_ok"] is False
        and any(o == s for o, *_ in hit) and s < b and a < s + 4 and e in boundaries
    ]
    for off, length, lid, eid in records:
        if (off, length, lid, eid) not in hit and (off, lid, eid) not in good:
            assert any(s < off and off + length <= e for s, e in forged), f"lost the entry at {off}"
    if hit:
        assert bad, "the damage must be flagged"
        lo = min(r[0] for r in hit)
        hi = max(b, max(r[0] + r[1] for r in hit))
        # The first flagged row is where the damage is; resynchronising after it may
        # flag more bytes (never before it).
        assert lo <= bad[0]["offset"] < hi, (bad[0]["offset"], bad[0]["error"], (lo, hi))
        for r in bad:
            assert r["offset"] >= lo and r["record_size"] > 0 and r["log_id"] == 5
    return bad


@pytest.fixture
def tmp():
    with tempfile.TemporaryDirectory(prefix="bkcodec-damage-") as d:
        yield Path(d)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_torn_anywhere(seed, data):
    log, records = clean_log(seed, 30)
    map_offset = struct.unpack(">q", log[8:16])[0]
    cut = data.draw(st.integers(1024, len(log)))
    with tempfile.TemporaryDirectory() as d:
        table = read(log[:cut], Path(d))
    kept = [r for r in records if r[0] + r[1] <= cut]
    good = table.filter(pc.is_null(table["error"]))
    assert good["offset"].to_pylist() == [r[0] for r in kept]
    bad = table.filter(pc.is_valid(table["error"])).to_pylist()
    torn = [r for r in records if r[0] < cut < r[0] + r[1]]
    if torn:
        # Any part of a record, one byte of its size field included, is a torn record.
        assert bad[0]["offset"] == torn[0][0]
        assert bad[0]["offset"] + bad[0]["record_size"] == cut
        assert bad[0]["error"].startswith(("torn_record", "bad_size"))
        if cut - torn[0][0] >= 4 + 32:
            assert (bad[0]["ledger_id"], bad[0]["entry_id"]) == torn[0][2:], "a torn entry keeps its ids"
        bad = bad[1:]
    if cut < map_offset:
        # The log was rolled: its header places the ledgers map past the cut.
        assert [(r["offset"], r["error_kind"]) for r in bad] == [(cut, "truncated")]
        assert f"places the ledgers map at byte {map_offset}, the file ends at byte {cut}" in bad[0]["error"]
    else:
        # Cut inside the ledgers map: nothing is lost.
        assert all(r["offset"] >= map_offset for r in bad)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_flipped_payload_byte_is_a_digest_mismatch_row(seed, data):
    log, records = clean_log(seed, 20)
    candidates = [r for r in records if r[1] > 4 + 32 + 20]
    if not candidates:
        return
    off, length, lid, eid = data.draw(st.sampled_from(candidates))
    at = data.draw(st.integers(off + 4 + 32 + 20, off + length - 1)) if length > 4 + 32 + 20 else off + length - 1
    damaged = bytearray(log)
    damaged[at] ^= 1 << data.draw(st.integers(0, 7))
    with tempfile.TemporaryDirectory() as d:
        table = read(bytes(damaged), Path(d))
    bad = check(table, records, (at, at + 1), len(damaged))
    assert len(bad) == 1
    assert (bad[0]["offset"], bad[0]["ledger_id"], bad[0]["entry_id"]) == (off, lid, eid)
    if KINDS[lid - 100][0] == "hmac" and [r[2] for r in records].count(lid) == 1:
        # The ledger's one entry: nothing says the password is its ledger's.
        assert bad[0]["digest_ok"] is None and bad[0]["error"] is None and bad[0]["digest_type"] == "hmac"
        return
    assert bad[0]["digest_ok"] is False and bad[0]["error"].startswith("digest mismatch")
    # Inference knows the entry's type from its ledger's other entries or, for the
    # first, from its length field: the payload is located.
    assert bad[0]["digest_type"] == KINDS[lid - 100][0] and bad[0]["payload"] is not None
    # Told the types, the entry is framed and keeps its payload.
    with tempfile.TemporaryDirectory() as d:
        told = read(bytes(damaged), Path(d), digest_type=SETTINGS)
    bad = check(told, records, (at, at + 1), len(damaged))
    assert [(r["offset"], r["digest_ok"], r["digest_type"]) for r in bad] == [(off, False, KINDS[lid - 100][0])]
    assert bad[0]["payload"] is not None and bad[0]["error"].startswith("digest mismatch")
    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(bkcodec.DigestMismatchError) as e:
            read(bytes(damaged), Path(d), on_error="raise")
    assert off + 4 <= e.value.offset < off + length


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_garbage_size_field(seed, data):
    log, records = clean_log(seed, 25)
    off, length, lid, eid = data.draw(st.sampled_from(records))
    value = data.draw(st.one_of(
        st.integers(-(2**31), 2**31 - 1),
        st.integers(0, 40),
        st.sampled_from([length - 4 + 1, length - 4 - 1, length - 4 + 100, 2**31 - 1, -1, -256, 0])))
    damaged = bytearray(log)
    struct.pack_into(">i", damaged, off, value)
    with tempfile.TemporaryDirectory() as d:
        table = read(bytes(damaged), Path(d))
    if value == length - 4:
        assert table["error"].null_count == table.num_rows
        return
    rows = table.to_pylist()
    # Either the entry was recovered (its digest verifies) and its row says the size
    # field was wrong, or a damage row starts at the size field.
    at_off = [r for r in rows if r["offset"] == off]
    assert at_off and at_off[0]["error"] is not None
    if at_off[0]["digest_ok"]:
        assert at_off[0]["error"].startswith("bad_size") and at_off[0]["payload"] is not None
        assert (at_off[0]["ledger_id"], at_off[0]["entry_id"]) == (lid, eid)
    check(table, records, (off, off + 4), len(damaged))


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.data(), st.sampled_from(["zeros", "garbage", "insert"]))
def test_damaged_spans(seed, data, kind):
    log, records = clean_log(seed, 25)
    a = data.draw(st.integers(1024, len(log) - 1))
    n = data.draw(st.integers(1, 3000))
    b = min(a + n, len(log))
    rng = random.Random(seed)
    if kind == "insert":
        # Garbage between two records: every record is kept, shifted after the insertion.
        boundary = data.draw(st.sampled_from([r[0] for r in records] or [1024]))
        junk = rng.randbytes(n)
        damaged = log[:boundary] + junk + log[boundary:]
        shifted = [(o + (n if o >= boundary else 0), l, lid, eid) for o, l, lid, eid in records]
        with tempfile.TemporaryDirectory() as d:
            table = read(damaged, Path(d))
        check(table, shifted, (boundary, boundary + n), len(damaged))
        good = {(r["offset"], r["ledger_id"], r["entry_id"]) for r in table.to_pylist() if r["error"] is None}
        # The insertion itself can only lose the record it lands in front of.
        lost = [r for r in shifted if (r[0], r[2], r[3]) not in good]
        assert all(r[0] == boundary + n for r in lost)
        return
    damaged = bytearray(log)
    damaged[a:b] = bytes(b - a) if kind == "zeros" else rng.randbytes(b - a)
    changed = [i for i in range(a, b) if damaged[i] != log[i]]
    with tempfile.TemporaryDirectory() as d:
        table = read(bytes(damaged), Path(d))
    if not changed:
        assert table["error"].null_count == table.num_rows
        return
    check(table, records, (changed[0], changed[-1] + 1), len(damaged))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("value", [0, 1, 3])
def test_small_size_on_the_last_entry(tmp, seed, value):
    """A size field zeroed (or too small) on the entry in front of the ledgers map:
    one damage row there, up to the map, which is still read as the map."""
    log, records = clean_log(seed, 10)
    off, length, lid, eid = records[-1]
    damaged = bytearray(log)
    struct.pack_into(">i", damaged, off, value)
    path = tmp / "5.log"
    path.write_bytes(bytes(damaged))
    good = [(r[0], r[2], r[3]) for r in records[:-1]]
    # Without digests to reframe it, the record is one bad_size row.
    rows = bkcodec.read_entry_log(path, digest_type="dummy", verify=False).read_all().to_pylist()
    assert [(r["offset"], r["ledger_id"], r["entry_id"]) for r in rows if r["error"] is None] == good
    bad = [(r["offset"], r["record_size"], r["error"].split(":")[0]) for r in rows if r["error"] is not None]
    assert bad == [(off, length, "bad_size")]
    # With them, the entry is recovered and its row says the size field was wrong.
    rows = bkcodec.read_entry_log(path, password=PASSWORD).read_all().to_pylist()
    assert [(r["offset"], r["ledger_id"], r["entry_id"]) for r in rows if r["error"] is None] == good
    bad = [(r["offset"], r["ledger_id"], r["entry_id"], r["digest_ok"], r["error"].split(":")[0]) for r in rows if r["error"]]
    assert bad == [(off, lid, eid, True, "bad_size")]
    assert bkcodec.ledgers_map(path).source == "map"


def test_journal_damage(tmp):
    path = tmp / "a.txn"
    offsets = []
    with bkcodec.JournalWriter(path, version=6) as w:
        for i in range(40):
            e = bkcodec.encode_entry(3, i, i - 1, 50 * i, bytes([i]) * 50 * (i % 5), digest_type="crc32c")
            offsets.append(w.add_entry(e))
            if i % 3 == 0:
                w.flush()
    data = path.read_bytes()
    # A flipped payload byte: the record is flagged, the others are intact.
    victim = offsets[21]
    damaged = bytearray(data)
    damaged[victim + 4 + 40] ^= 0x80
    path.write_bytes(bytes(damaged))
    rows = bkcodec.read_journal(path).read_all().to_pylist()
    assert [r["offset"] for r in rows] == offsets
    # Damage is a flagged row; an entry whose damage left its type unknowable (a
    # flipped ledger id makes it a ledger of its own) is unchecked, its digest
    # neither verified nor called damaged: never verified either way.
    bad = [r for r in rows if r["error"] is not None or (r["format_version"] is not None and r["digest_type"] is None)]
    assert [(r["offset"], r["digest_ok"], r["record_type"]) for r in bad] == [(victim, False, "entry")]
    # Torn mid-record: a damage row, every earlier record kept.
    path.write_bytes(data[: offsets[30] + 20])
    rows = bkcodec.read_journal(path).read_all().to_pylist()
    assert [r["offset"] for r in rows if r["error"] is None] == offsets[:30]
    assert [(r["record_type"], r["offset"]) for r in rows if r["error"]] == [("damage", offsets[30])]
    assert rows[-1]["error"].startswith("torn_record") and rows[-1]["ledger_id"] is None
    with pytest.raises(bkcodec.TruncatedError) as e:
        bkcodec.read_journal(path, on_error="raise").read_all()
    assert e.value.offset == offsets[30] and e.value.path == str(path)
    # A zeroed span in the middle: later records are found again.
    damaged = bytearray(data)
    damaged[offsets[10] : offsets[13]] = bytes(offsets[13] - offsets[10])
    path.write_bytes(bytes(damaged))
    rows = bkcodec.read_journal(path).read_all().to_pylist()
    good = [r["offset"] for r in rows if r["error"] is None]
    assert good == offsets[:10] + offsets[13:]
    assert [r["offset"] for r in rows if r["error"]] == [offsets[10]]
    assert rows[10]["error"].startswith("zeros") and rows[10]["record_size"] == offsets[13] - offsets[10]


def test_files_that_are_not_what_the_reader_expects(tmp):
    with pytest.raises(FileNotFoundError) as e:
        bkcodec.read_entry_log(tmp / "missing.log")
    assert e.value.filename == str(tmp / "missing.log")
    for fn in (bkcodec.read_journal, bkcodec.read_index, bkcodec.entry_log_header, bkcodec.ledgers_map,
               bkcodec.journal_header, bkcodec.index_header, bkcodec.read_last_mark, bkcodec.read_last_id):
        with pytest.raises(FileNotFoundError):
            fn(tmp / "missing")
    with pytest.raises(IsADirectoryError):
        bkcodec.read_entry_log(tmp)

    log = tmp / "0.log"
    with bkcodec.EntryLogWriter(log) as w:
        w.add_entry(bkcodec.encode_entry(1, 0, -1, 0, b""))
    good = log.read_bytes()
    # A damaged header is the first row, and the log is read on; raising, it is the error.
    log.write_bytes(b"BKLG" + good[4:])
    rows = bkcodec.read_entry_log(log).read_all().to_pylist()
    assert [(r["offset"], r["error_kind"], r["entry_id"]) for r in rows] == [(0, "bad_header", None), (1024, None, 0)]
    assert 'magic is 42 4b 4c 47 "BKLG" (expected "BKLO", 42 4b 4c 4f)' in rows[0]["error"]
    with pytest.raises(bkcodec.CorruptDataError) as e:
        bkcodec.read_entry_log(log, on_error="raise").read_all()
    assert (e.value.offset, e.value.path) == (0, str(log)) and "not an entry log" in str(e.value)
    # Bytes that print as nothing are shown in hex.
    log.write_bytes(b"\x00\x01\xfeA" + good[4:])
    with pytest.raises(bkcodec.CorruptDataError) as e:
        bkcodec.entry_log_header(log)
    assert 'entry log magic is 00 01 fe 41 (expected "BKLO", 42 4b 4c 4f)' in str(e.value)
    index = tmp / "1.idx"
    index.write_bytes(bytes(1024))
    with pytest.raises(bkcodec.CorruptDataError) as e:
        bkcodec.index_header(index)
    assert 'index signature is 00 00 00 00 (expected "BKLE", 42 4b 4c 45)' in str(e.value)
    # The ledgers map of a log whose header is damaged comes from a scan, which says why.
    lmap = bkcodec.ledgers_map(log)
    assert lmap.source == "scan" and "magic" in lmap.fallback_reason and lmap.ledgers == {1: len(good) - 1024 - 24 - 16}
    log.write_bytes(good[:4] + struct.pack(">i", 7) + good[8:])
    with pytest.raises(bkcodec.UnsupportedVersionError) as e:
        bkcodec.entry_log_header(log)
    assert e.value.offset == 4
    log.write_bytes(good[:10])
    with pytest.raises(bkcodec.TruncatedError):
        bkcodec.read_entry_log(log, on_error="raise").read_all()
    # A log shorter than its header (magic intact) is a torn header.
    log.write_bytes(good[:600])
    rows = bkcodec.read_entry_log(log).read_all().to_pylist()
    assert [(r["offset"], r["record_size"], r["error"].split(":")[0]) for r in rows] == [(0, 600, "torn_header")]
    # So is an empty file, as `entry_log_header` says too.
    log.write_bytes(b"")
    rows = bkcodec.read_entry_log(log).read_all().to_pylist()
    assert [(r["offset"], r["record_size"], r["error_kind"]) for r in rows] == [(0, 0, "torn_header")]
    assert "empty file" in rows[0]["error"]
    with pytest.raises(bkcodec.TruncatedError):
        bkcodec.entry_log_header(log)
    assert bkcodec.ledgers_map(log).ledgers == {}

    # An entry log read as a journal: its magic is a bit away from a journal's.
    journal = tmp / "1.txn"
    journal.write_bytes(good)
    with pytest.raises(bkcodec.CorruptDataError, match="journal magic"):
        bkcodec.journal_header(journal)
    rows = bkcodec.read_journal(journal).read_all().to_pylist()
    # Its header is damage; its records (size-prefixed entries, as a journal's are) read on.
    assert rows[0]["error_kind"] == "bad_header" and any(r["record_type"] == "entry" for r in rows)
    # A version no writer uses: the header is one flagged row, the records are read on.
    journal.write_bytes(b"BKLG" + struct.pack(">i", 9) + bytes(600))
    with pytest.raises(bkcodec.UnsupportedVersionError) as e:
        bkcodec.journal_header(journal)
    assert e.value.path == str(journal)
    rows = bkcodec.read_journal(journal).read_all().to_pylist()
    assert [(r["offset"], r["error_kind"]) for r in rows] == [(0, "bad_header")]
    assert "journal version 9" in rows[0]["error"]
    # No magic: a version 1 journal, as BookKeeper reads it.
    journal.write_bytes(bytes(100))
    assert bkcodec.journal_header(journal).version == 1
    assert bkcodec.read_journal(journal).read_all().num_rows == 0


def test_zeroed_size_field_before_entries_a_shifted_view_covers():
    # Found by test_garbage_size_field: with the size field of a CRC32 entry zeroed,
    # a view 7 bytes before the next entry (its size field in the entry's digest)
    # frames a phantom record of an unknown ledger ending exactly where the two
    # entries after it end. Both of those verify, so they win over the view.
    log, records = clean_log(8905, 25)
    off, length, lid, eid = records[12]
    assert (off, length) == (5550, 44)
    damaged = bytearray(log)
    struct.pack_into(">i", damaged, off, 0)
    with tempfile.TemporaryDirectory() as d:
        table = read(bytes(damaged), Path(d))
    check(table, records, (off, off + 4), len(damaged))
