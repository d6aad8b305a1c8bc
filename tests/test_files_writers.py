"""Writers (entry logs, journals, index files, lastMark, lastId) read back through the
readers: every entry and record round-trips, with its location, offset and digest
verdict; per-ledger digest settings verify ledgers that inference cannot."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bkcodec

DIGESTS = ["crc32", "crc32c", "hmac", "dummy"]


def fresh_dir():
    return tempfile.TemporaryDirectory(prefix="bkcodec-files-")


@st.composite
def ledgers(draw):
    """Ledger id -> (digest type, password, scope id): V1 ledgers, and V2 ones (scope != 0)."""
    n = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n, unique=True))
    out = {}
    for lid in ids:
        dt = draw(st.sampled_from(DIGESTS))
        pw = draw(st.sampled_from([b"", b"pw", b"other"])) if dt == "hmac" else b""
        scope = draw(st.sampled_from([0, 0, 7, -3]))
        out[lid] = (dt, pw, scope)
    return out


@st.composite
def entry_streams(draw):
    ls = draw(ledgers())
    order = draw(st.lists(st.sampled_from(sorted(ls)), min_size=0, max_size=40))
    sizes = draw(st.lists(st.sampled_from([0, 1, 13, 100, 700, 3000]), min_size=len(order), max_size=len(order)))
    return ls, list(zip(order, sizes))


def build_entries(ls, stream, seed=0):
    """Packaged entries, as clients would send them, in stream order."""
    next_id = {lid: 0 for lid in ls}
    length = {lid: 0 for lid in ls}
    out = []
    for i, (lid, size) in enumerate(stream):
        dt, pw, scope = ls[lid]
        payload = bytes((i * 31 + k + seed) % 256 for k in range(size))
        eid = next_id[lid]
        length[lid] += size
        out.append(
            dict(
                ledger_id=lid, entry_id=eid, lac=eid - 1, length=length[lid], payload=payload, digest_type=dt,
                scope=scope,
                bytes=bkcodec.encode_entry(lid, eid, eid - 1, length[lid], payload, digest_type=dt, password=pw, scope_id=scope),
            )
        )
        next_id[lid] += 1
    return out


def settings_of(ls):
    return {lid: (dt, pw) for lid, (dt, pw, _) in ls.items()}


@settings(max_examples=60, deadline=None)
@given(entry_streams(), st.sampled_from(["legacy", "direct"]), st.booleans(), st.integers(1, 50))
def test_entry_log_round_trip(stream, layout, roll, batch_size):
    ls, order = stream
    entries = build_entries(ls, order)
    with fresh_dir() as d:
        path = Path(d) / "1f.log"
        with bkcodec.EntryLogWriter(path, layout=layout, buffer_size=8192) as w:
            assert w.log_id == 0x1F
            locations = [w.add_entry(e["bytes"]) for e in entries]
            assert w.entry_count == len(entries)
            if not roll:
                w.close(roll=False)
        header = bkcodec.entry_log_header(path)
        assert header.layout == layout
        assert header.has_ledgers_map == roll, "a rolled log points at its map, even an empty one"
        table = bkcodec.read_entry_log(path, digest_type=settings_of(ls), batch_size=batch_size).read_all()
        assert table.num_rows == len(entries)
        assert table["error"].null_count == len(entries)
        for row, e, loc in zip(table.to_pylist(), entries, locations):
            assert row["log_id"] == 0x1F and row["location"] == loc
            assert bkcodec.split_location(loc) == (0x1F, row["offset"] + 4)
            assert row["record_size"] == len(e["bytes"])
            assert row["format_version"] == (2 if e["scope"] else 1) and row["scope_id"] == e["scope"]
            assert (row["ledger_id"], row["entry_id"], row["last_add_confirmed"], row["length"]) == (
                e["ledger_id"], e["entry_id"], e["lac"], e["length"])
            assert row["payload"] == e["payload"]
            assert (row["digest_type"], row["digest_ok"]) == (e["digest_type"], True)
        sizes = {}
        for e in entries:
            sizes[e["ledger_id"]] = sizes.get(e["ledger_id"], 0) + len(e["bytes"]) + 4
        lm = bkcodec.ledgers_map(path)
        assert lm.ledgers == sizes
        assert lm.source == ("map" if roll and entries else "scan")


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([4, 5, 6]),
    st.sampled_from([512, 1024, 4096]),
    st.lists(
        st.one_of(
            st.tuples(st.just("entry"), st.integers(0, 5), st.sampled_from([0, 5, 300, 2000])),
            st.tuples(st.just("ledger_key"), st.integers(0, 5), st.integers(0, 40)),
            st.tuples(st.just("fence"), st.integers(0, 5), st.just(0)),
            st.tuples(st.just("explicit_lac"), st.integers(0, 5), st.integers(-1, 100)),
            st.tuples(st.just("flush"), st.just(0), st.just(0)),
        ),
        max_size=30,
    ),
    st.booleans(),
)
def test_journal_round_trip(version, alignment, ops, include_padding):
    next_id = {}
    expected = []
    with fresh_dir() as d:
        path = Path(d) / f"{0x18bcfe56800:x}.txn"
        with bkcodec.JournalWriter(path, version=version, alignment=alignment, prealloc_size=64 * 1024) as w:
            for i, (kind, lid, n) in enumerate(ops):
                if kind == "entry":
                    eid = next_id.get(lid, 0)
                    next_id[lid] = eid + 1
                    payload = bytes([i % 256]) * n
                    data = bkcodec.encode_entry(lid, eid, eid - 1, n, payload, digest_type="crc32c")
                    expected.append(("entry", w.add_entry(data), lid, eid, dict(payload=payload)))
                elif kind == "ledger_key":
                    key = bytes((n + k) % 256 for k in range(20))
                    expected.append(("ledger_key", w.add_ledger_key(lid, key), lid, -4096, dict(master_key=key)))
                elif kind == "fence":
                    expected.append(("fence", w.add_fence(lid), lid, -8192, {}))
                elif kind == "explicit_lac":
                    blob = bkcodec.encode_lac(lid, n, digest_type="crc32")
                    offset = w.add_explicit_lac(lid, blob)
                    if version < 6:
                        assert offset is None
                    else:
                        expected.append(("explicit_lac", offset, lid, -32768, dict(explicit_lac=n, explicit_lac_blob=blob)))
                else:
                    w.flush()
        h = bkcodec.journal_header(path)
        assert (h.version, h.has_magic, h.has_padding) == (version, True, version >= 5)
        table = bkcodec.read_journal(path, include_padding=include_padding, batch_size=7).read_all()
        assert table["error"].null_count == table.num_rows
        rows = table.to_pylist()
        if include_padding:
            paddings = [r for r in rows if r["record_type"] == "padding"]
            assert not paddings or version >= 5
            for p in paddings:
                # A padding record ends on the alignment.
                assert (p["offset"] + 4 + p["record_size"]) % alignment == 0
            rows = [r for r in rows if r["record_type"] != "padding"]
        assert len(rows) == len(expected)
        for row, (kind, offset, lid, eid, extra) in zip(rows, expected):
            assert (row["record_type"], row["offset"], row["ledger_id"], row["entry_id"]) == (kind, offset, lid, eid)
            assert row["journal_id"] == 0x18BCFE56800
            for k, v in extra.items():
                assert row[k] == v
            if kind == "entry":
                assert row["digest_ok"] is True and row["digest_type"] == "crc32c"


def mixed_log(d):
    """An entry log of CRC32C, CRC32, HMAC (two passwords) and DUMMY ledgers."""
    ls = {1: ("crc32c", b""), 2: ("crc32", b""), 3: ("hmac", b"alpha"), 4: ("hmac", b"beta"), 5: ("dummy", b"")}
    path = Path(d) / "7.log"
    with bkcodec.EntryLogWriter(path) as w:
        for eid in range(6):
            for lid, (dt, pw) in ls.items():
                w.add_entry(bkcodec.encode_entry(lid, eid, eid - 1, 10 * (eid + 1), b"x" * 10, digest_type=dt, password=pw))
    return path, ls


def metadata_for(ls):
    return {
        lid: bkcodec.LedgerMetadata([(0, ["bk1:3181"])], digest_type=dt, password=pw)
        for lid, (dt, pw) in ls.items()
    }


def verdicts(table):
    out = {}
    for r in table.select(["ledger_id", "digest_type", "digest_ok", "error"]).to_pylist():
        out.setdefault(r["ledger_id"], set()).add((r["digest_type"], r["digest_ok"], r["error"] is None))
    return out


def test_mixed_digest_log_verifies_with_ledger_metadata():
    with fresh_dir() as d:
        path, ls = mixed_log(d)
        # Inference verifies the CRC ledgers; the length chains tell the DUMMY ledger
        # (verified as DUMMY is) and the HMAC ones, unchecked without their password.
        auto = verdicts(bkcodec.read_entry_log(path).read_all())
        assert auto[1] == {("crc32c", True, True)} and auto[2] == {("crc32", True, True)}
        assert auto[3] == auto[4] == {("hmac", None, True)} and auto[5] == {("dummy", True, True)}
        # With a password, inference verifies one HMAC ledger; the other stays unchecked.
        with_pw = verdicts(bkcodec.read_entry_log(path, password=b"alpha").read_all())
        assert with_pw[3] == {("hmac", True, True)} and with_pw[4] == {("hmac", None, True)}

        expected = {lid: {(dt, True, True)} for lid, (dt, _) in ls.items()}
        md = metadata_for(ls)
        assert verdicts(bkcodec.read_entry_log(path, ledger_metadata=md).read_all()) == expected
        assert verdicts(bkcodec.read_entry_log(path, digest_type=md).read_all()) == expected
        assert verdicts(bkcodec.read_entry_log(path, digest_type={k: (dt, pw) for k, (dt, pw) in ls.items()}).read_all()) == expected

        # A directory of dumped znodes, named by ledger id.
        dump = Path(d) / "dump"
        dump.mkdir()
        for lid, m in md.items():
            (dump / str(lid)).write_bytes(bkcodec.encode_ledger_metadata(m))
        assert verdicts(bkcodec.read_entry_log(path, ledger_metadata=dump).read_all()) == expected
        assert verdicts(bkcodec.read_entry_log(path, ledger_metadata=bkcodec.load_ledger_metadata_dir(dump)).read_all()) == expected

        # The wrong password is a digest mismatch on every entry of that ledger, not a guess.
        wrong = dict(md)
        wrong[4] = bkcodec.LedgerMetadata([(0, ["bk1:3181"])], digest_type="hmac", password=b"alpha")
        got = verdicts(bkcodec.read_entry_log(path, ledger_metadata=wrong).read_all())
        assert got[4] == {("hmac", False, False)} and got[3] == {("hmac", True, True)}
        # Explicit settings win over metadata; ledgers in neither are inferred.
        partial = bkcodec.read_entry_log(path, ledger_metadata=wrong, digest_type={4: ("hmac", "beta")}).read_all()
        assert verdicts(partial)[4] == {("hmac", True, True)}
        only_dummy = verdicts(bkcodec.read_entry_log(path, digest_type={5: "dummy"}).read_all())
        assert only_dummy[5] == {("dummy", True, True)} and only_dummy[1] == {("crc32c", True, True)}
        # Unchecked is not damage: raise mode reads the whole log.
        assert bkcodec.read_entry_log(path, on_error="raise").read_all().num_rows == 30


def test_bad_digest_arguments():
    with fresh_dir() as d:
        path, _ = mixed_log(d)
        with pytest.raises(ValueError):
            bkcodec.read_entry_log(path, digest_type="md5")
        with pytest.raises(TypeError):
            bkcodec.read_entry_log(path, digest_type={1: 5})
        with pytest.raises(TypeError):
            bkcodec.read_entry_log(path, digest_type={"one": "crc32"})
        with pytest.raises(TypeError):
            bkcodec.read_entry_log(path, ledger_metadata=42)
        with pytest.raises(FileNotFoundError):
            bkcodec.read_entry_log(path, ledger_metadata=Path(d) / "missing")
        with pytest.raises(ValueError):
            bkcodec.read_entry_log(path, batch_size=0)
        with pytest.raises(ValueError):
            bkcodec.read_entry_log(path, payload="text")
        with pytest.raises(ValueError):
            bkcodec.read_entry_log(path, on_error="ignore")
        with pytest.raises(ValueError):
            bkcodec.read_entry_log(path, start=10, end=5)


def test_entry_log_writer_behaviour():
    with fresh_dir() as d:
        e = bkcodec.encode_entry(1, 0, -1, 1, b"a")
        with pytest.raises(ValueError, match="give log_id"):
            bkcodec.EntryLogWriter(Path(d) / "log.bin")
        with pytest.raises(ValueError):
            bkcodec.EntryLogWriter(Path(d) / "x.log", log_id=2**32)
        with pytest.raises(ValueError):
            bkcodec.EntryLogWriter(Path(d) / "y.log", log_id=1, layout="fast")
        w = bkcodec.EntryLogWriter(Path(d) / "log.bin", log_id=3)
        assert w.position == 1024 and w.layout == "legacy"
        assert w.add_entry(e) == bkcodec.make_location(3, 1028)
        with pytest.raises(bkcodec.TruncatedError):
            w.add_entry(b"short")
        assert "entries=1" in repr(w)
        w.close()
        w.close()
        assert w.closed and w.position is None and "closed" in repr(w)
        with pytest.raises(ValueError, match="closed"):
            w.add_entry(e)
        t = bkcodec.read_entry_log(Path(d) / "log.bin").read_all()
        assert t["log_id"].to_pylist() == [None] and t["location"].to_pylist() == [None], "no id in the name"
        assert bkcodec.read_entry_log(Path(d) / "log.bin", log_id=3).read_all()["location"].to_pylist() == [(3 << 32) | 1028]

        with pytest.raises(FileExistsError):
            bkcodec.EntryLogWriter(Path(d) / "log.bin", log_id=3)
        with bkcodec.EntryLogWriter(Path(d) / "log.bin", log_id=3, overwrite=True) as w:
            pass
        assert bkcodec.entry_log_header(Path(d) / "log.bin").ledgers_map_offset == 1024, "an empty rolled log"
        assert bkcodec.ledgers_map(Path(d) / "log.bin").ledgers == {}

        # An exception inside the block leaves an open (unrolled) log.
        with pytest.raises(RuntimeError):
            with bkcodec.EntryLogWriter(Path(d) / "a.log") as w:
                w.add_entry(e)
                raise RuntimeError
        h = bkcodec.entry_log_header(Path(d) / "a.log")
        assert (h.ledgers_map_offset, h.ledgers_count, h.has_ledgers_map) == (0, 0, False)
        assert bkcodec.read_entry_log(Path(d) / "a.log").read_all().num_rows == 1
        assert bkcodec.entry_log_file_name(0xA) == "a.log"

        # The direct layout: entries from 4096, 0xF0 padding at flushes, zeros to max_file_size.
        p = Path(d) / "b.log"
        with bkcodec.EntryLogWriter(p, layout="direct", buffer_size=4096, max_file_size=65536) as w:
            assert w.add_entry(e) == bkcodec.make_location(0xB, 4100)
            w.flush()
            assert w.position == 8192
            assert w.add_entry(e) == bkcodec.make_location(0xB, 8196)
        assert os.path.getsize(p) == 65536
        data = p.read_bytes()
        assert data[4100 + len(e) : 8192] == b"\xf0" * (8192 - 4100 - len(e))
        assert bkcodec.read_entry_log(p).read_all()["offset"].to_pylist() == [4096, 8192]
        with pytest.raises(ValueError, match="too large"):
            bkcodec.EntryLogWriter(Path(d) / "c.log", layout="direct", buffer_size=4096).add_entry(
                bkcodec.encode_entry(1, 0, -1, 5000, bytes(5000)))


def test_journal_writer_behaviour():
    with fresh_dir() as d:
        p = Path(d) / "1.txn"
        with pytest.raises(ValueError):
            bkcodec.JournalWriter(p, version=3)
        with pytest.raises(ValueError):
            bkcodec.JournalWriter(Path(d) / "2.txn", alignment=100)
        w = bkcodec.JournalWriter(Path(d) / "3.txn", version=5, prealloc_size=1 << 16)
        assert w.position == 512 and w.version == 5
        assert w.add_fence(9) == 512
        w.close(flush=False)
        assert w.closed and "closed" in repr(w)
        with pytest.raises(ValueError, match="closed"):
            w.add_fence(1)
        assert os.path.getsize(Path(d) / "3.txn") == 1 << 16
        rows = bkcodec.read_journal(Path(d) / "3.txn", include_padding=True).read_all().to_pylist()
        assert [(r["record_type"], r["ledger_id"], r["journal_id"]) for r in rows] == [("fence", 9, 3)]
        with pytest.raises(FileExistsError):
            bkcodec.JournalWriter(Path(d) / "3.txn")
        with bkcodec.JournalWriter(Path(d) / "3.txn", version=4, overwrite=True) as w:
            w.add_ledger_key(2, bkcodec.master_key("pw"))
        assert bkcodec.journal_header(Path(d) / "3.txn").data_start == 8
        row = bkcodec.read_journal(Path(d) / "3.txn").read_all().to_pylist()[0]
        assert row["master_key"] == bkcodec.master_key("pw") and row["offset"] == 8


def test_index_last_mark_and_last_id_writers():
    with fresh_dir() as d:
        d = Path(d)
        blob = bkcodec.encode_lac(0x1234, 7, digest_type="crc32c")
        locs = {0: bkcodec.make_location(1, 1028), 1500: bkcodec.make_location(2, 5000)}
        path = d / "1234.idx"
        bkcodec.write_index_file(path, locs, master_key=bkcodec.master_key("pw"), fenced=True, explicit_lac=blob)
        assert os.path.getsize(path) == 1024 + 2 * 8192
        h = bkcodec.index_header(path)
        assert (h.version, h.fenced, h.state_bits, h.explicit_lac, h.explicit_lac_blob) == (1, True, 1, 7, blob)
        assert h.master_key == bkcodec.master_key("pw")
        assert "fenced=True" in repr(h) and "explicit_lac=7" in repr(h)
        rows = bkcodec.read_index(path).read_all().to_pylist()
        assert rows == [
            dict(ledger_id=0x1234, entry_id=0, location=locs[0], log_id=1, offset=1024),
            dict(ledger_id=0x1234, entry_id=1500, location=locs[1500], log_id=2, offset=4996),
        ]
        assert bkcodec.read_index(path, ledger_id=9).read_all()["ledger_id"].to_pylist() == [9, 9]
        with pytest.raises(FileExistsError):
            bkcodec.write_index_file(path, [])
        bkcodec.write_index_file(path, [(3, locs[0])], version=0, overwrite=True)
        assert bkcodec.index_header(path).explicit_lac is None and bkcodec.index_header(path).master_key == b""
        with pytest.raises(ValueError):
            bkcodec.write_index_file(d / "2.idx", {1: 0})
        with pytest.raises(ValueError):
            bkcodec.write_index_file(d / "3.idx", {-1: 5})
        with pytest.raises(ValueError):
            bkcodec.write_index_file(d / "4.idx", {}, version=0, explicit_lac=blob)
        assert bkcodec.index_path(0xABCDEF) == os.path.join("cd", "ef", "abcdef.idx")
        bad = d / "bad.idx"
        bad.write_bytes(b"BKLX" + bytes(1020))
        with pytest.raises(bkcodec.CorruptDataError) as e:
            bkcodec.read_index(bad)
        assert e.value.offset == 0 and e.value.path == str(bad)

        mark = d / "lastMark"
        bkcodec.write_last_mark(mark, 0x18BCFE56800, 24064)
        assert mark.read_bytes().hex() == "0000018bcfe568000000000000005e00"
        m = bkcodec.read_last_mark(mark)
        assert m == bkcodec.LastMark(0x18BCFE56800, 24064) and hash(m) == hash(bkcodec.LastMark(0x18BCFE56800, 24064))
        assert bkcodec.LastMark(1, 5) < bkcodec.LastMark(2, 0) < bkcodec.LastMark(2, 1)
        assert max([bkcodec.LastMark(2, 1), bkcodec.LastMark(3, 0), bkcodec.LastMark(1, 9)]) == bkcodec.LastMark(3, 0)
        assert list(m) == [0x18BCFE56800, 24064] and repr(m) == "LastMark(journal_id=1700000000000, offset=24064)"
        mark.write_bytes(mark.read_bytes()[:10])
        with pytest.raises(bkcodec.TruncatedError):
            bkcodec.read_last_mark(mark)

        last_id = d / "lastId"
        bkcodec.write_last_id(last_id, 42)
        assert last_id.read_text() == "2a\n" and bkcodec.read_last_id(last_id) == 42
        last_id.write_text("zz\n")
        with pytest.raises(bkcodec.CorruptDataError):
            bkcodec.read_last_id(last_id)
        with pytest.raises(ValueError):
            bkcodec.write_last_id(last_id, -1)


def test_locations():
    assert bkcodec.make_location(42, 1028) == 180388627460
    assert bkcodec.split_location(180388627460) == (42, 1028)
    top = bkcodec.make_location(2**32 - 1, 2**32 - 1)
    assert top == -1 and bkcodec.split_location(top) == (2**32 - 1, 2**32 - 1)
    for bad in [(-1, 0), (2**32, 0), (0, 2**32), (0, -1)]:
        with pytest.raises(ValueError):
            bkcodec.make_location(*bad)


def test_raise_mode_error_rows_stop_the_stream_after_good_rows():
    with fresh_dir() as d:
        path, ls = mixed_log(d)
        data = bytearray(path.read_bytes())
        rows = bkcodec.read_entry_log(path, payload="none").read_all().to_pylist()
        victim = next(r for r in rows if (r["ledger_id"], r["entry_id"]) == (1, 3))
        data[victim["offset"] + 4 + 32 + 4 + 2] ^= 1  # a payload byte of a CRC-32C entry
        path.write_bytes(bytes(data))
        flagged = bkcodec.read_entry_log(path).read_all()
        bad = flagged.filter(pc.is_valid(flagged["error"])).to_pylist()
        assert [(r["offset"], r["error_kind"], r["digest_ok"]) for r in bad] == [(victim["offset"], "digest_mismatch", False)]
        reader = bkcodec.read_entry_log(path, on_error="raise", batch_size=4)
        before = []
        with pytest.raises(bkcodec.DigestMismatchError) as e:
            for batch in reader:
                before.extend(batch.column("offset").to_pylist())
        assert before == [r["offset"] for r in rows if r["offset"] < victim["offset"]]
        assert e.value.offset == victim["offset"] + 4 + 32 and e.value.path == str(path)


def test_writers_shared_by_threads_take_turns(tmp_path):
    # Issue 13, small items: a writer shared by threads raised "Already borrowed".
    from concurrent.futures import ThreadPoolExecutor

    def fill(add, thread):
        return [add(bkcodec.encode_entry(thread, e, e - 1, 0, bytes(64 * (e + 1)))) for e in range(40)]

    with bkcodec.EntryLogWriter(tmp_path / "0.log", layout="direct", buffer_size=8192) as log, bkcodec.JournalWriter(
        tmp_path / "1.txn"
    ) as journal:
        with ThreadPoolExecutor(8) as pool:
            locations = [x for xs in pool.map(lambda t: fill(log.add_entry, t), range(1, 9)) for x in xs]
            list(pool.map(lambda t: fill(journal.add_entry, t), range(1, 9)))
        assert log.entry_count == 320 and len(set(locations)) == 320
    for table in (bkcodec.read_entry_log(tmp_path / "0.log").read_all(), bkcodec.read_journal(tmp_path / "1.txn").read_all()):
        entries = table.filter(pc.equal(table.column("record_type"), "entry")) if "record_type" in table.column_names else table
        assert entries.num_rows == 320 and entries.column("error").null_count == entries.num_rows
        assert sorted(zip(entries.column("ledger_id").to_pylist(), entries.column("entry_id").to_pylist())) == [
            (t, e) for t in range(1, 9) for e in range(40)
        ]


def test_write_buffer_size_too_large_is_refused(tmp_path):
    # Issue 13, small items: 2**64-1 wrapped to a 0-byte buffer.
    with pytest.raises(ValueError, match="cannot be rounded up"):
        bkcodec.EntryLogWriter(tmp_path / "0.log", layout="direct", buffer_size=2**64 - 1)
    with pytest.raises(OverflowError):
        bkcodec.EntryLogWriter(tmp_path / "1.log", layout="direct", buffer_size=2**64)
