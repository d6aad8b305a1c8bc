"""DbLedgerStorage bookies: the RocksDB location and ledger indexes read through a
real RocksDB without touching the bookie, and the commands that use them (inspect,
verify against the index, dump by id, rebuild-index).

The bookies are built by `db_bookie.make_db_bookie` (see its docstring for what
each ledger is) and around the golden corpus's entry logs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("rocksdict", reason="the RocksDB tests need bkcodec[rocksdb] (rocksdict)")

import rocksdict  # noqa: E402

import bkcodec  # noqa: E402
from bkcodec import index_db  # noqa: E402
from bkcodec.cli import main  # noqa: E402
from conftest import read_jsonl  # noqa: E402
from db_bookie import MASTER_KEY, SCOPED, make_db_bookie, tree_hash  # noqa: E402

INDEX_COLUMNS = ["scope_id", "ledger_id", "entry_id", "location", "log_id", "offset"]


def cli(*args, expect: int | None = 0) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    if expect is not None:
        assert code == expect, (code, out.getvalue(), err.getvalue())
    return code, out.getvalue(), err.getvalue()


def cli_json(*args, expect: int = 0):
    return json.loads(cli(*args, "--json", expect=expect)[1])


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_db_bookie(tmp_path_factory.mktemp("dbls") / "bookie")


def index_rows(path) -> dict[tuple[int, int, int], int]:
    t = pa.table(bkcodec.read_location_index(path))
    assert t.column_names == INDEX_COLUMNS
    return {(r["scope_id"], r["ledger_id"], r["entry_id"]): r["location"] for r in t.to_pylist()}


# ---- reading the indexes


def test_layout_of_a_db_ledger_storage_bookie(bookie):
    layout = bkcodec.bookie_layout(bookie.root)
    assert layout.storage == "DbLedgerStorage"
    assert layout.ledger_dirs == bookie.ledger_dirs and layout.index_dirs == bookie.index_dirs
    assert layout.dir_pairs == list(zip(bookie.ledger_dirs, bookie.index_dirs))
    assert layout.journal_dirs == [bookie.journal_dir]
    roles = sorted((Path(d.dir).name, d.role) for d in layout.databases)
    assert roles == [("index0", "ledgers"), ("index0", "locations"), ("index0", "scoped-ledgers"),
                     ("index0", "scoped-locations"), ("index1", "ledgers"), ("index1", "locations")]
    # RocksDB's write-ahead logs are named like entry logs; none is taken for one.
    wals = [f for f in layout.files if f.kind == "rocksdb_file" and Path(f.path).suffix == ".log"]
    assert wals and all(f.log_id is None for f in wals)
    assert sorted(str(Path(f.path).relative_to(bookie.root)) for f in layout.entry_logs) == [
        "ledgers0/current/0.log", "ledgers0/current/1.log", "ledgers1/current/0.log"]
    assert {c.instance_id for c in layout.cookies.values()} == {"6f1d0e8a-2c3b-4a5d-8e7f-901234567890"}


def test_location_index_rows_equal_the_writes(bookie):
    want = {k: loc for k, (_, loc) in bookie.indexed.items()}
    assert index_rows(bookie.root) == want
    for n, d in enumerate(bookie.index_dirs):
        assert index_rows(d) == {k: loc for k, (dn, loc) in bookie.indexed.items() if dn == n}
    assert index_rows(bookie.databases(0) / "scoped-locations") == {
        k: loc for k, (_, loc) in bookie.indexed.items() if k[0] == SCOPED.scope_id}
    # Range-deleted ledger 6 is absent; ledger 4, only in the write-ahead log, is there.
    assert not any(k[1] == 6 for k in index_rows(bookie.root))
    assert {k[2] for k in index_rows(bookie.root) if k[1] == 4} == set(range(5))
    wal = [p for p in (bookie.databases(0) / "locations").glob("*.log")]
    assert wal and max(p.stat().st_size for p in wal) > 0


def test_offsets_are_where_read_entry_log_finds_the_entries(bookie):
    t = pa.table(bkcodec.read_location_index(bookie.root))
    for r in t.to_pylist():
        n = bookie.indexed[(r["scope_id"], r["ledger_id"], r["entry_id"])][0]
        assert (r["log_id"], r["offset"] + 4) == bkcodec.split_location(r["location"])
        log = bookie.ledger_dirs[n] / "current" / f"{r['log_id']:x}.log"
        rows = bkcodec.read_entry_log(log, start=r["offset"], end=r["offset"] + 1).read_all().to_pylist()
        assert [(x["ledger_id"], x["entry_id"], x["location"], x["digest_ok"]) for x in rows] == [
            (r["ledger_id"], r["entry_id"], r["location"], True)]


@pytest.mark.skipif(shutil.which("sst_dump") is None, reason="sst_dump (Debian's rocksdb-tools) is not installed")
def test_the_deleted_ledger_is_still_in_a_table_file(bookie):
    # A reader of table files that ignored range tombstones would bring ledger 6 back.
    key = bkcodec.LedgerId(6).location_key(0).hex().upper()
    dumps = [
        subprocess.run(["sst_dump", f"--file={p}", "--command=scan", "--output_hex"], capture_output=True, text=True).stdout
        for p in (bookie.databases(0) / "locations").glob("*.sst")
    ]
    assert any(key in d for d in dumps)


def test_ledger_index_and_storage_flags(bookie):
    t = pa.table(bkcodec.read_ledger_index(bookie.root))
    assert t.column_names == ["scope_id", "ledger_id", "exists", "fenced", "master_key", "explicit_lac", "limbo"]
    rows = {(r["scope_id"], r["ledger_id"]): r for r in t.to_pylist()}
    assert set(rows) == set(bookie.ledgers)
    assert all(r["master_key"] == MASTER_KEY and r["exists"] for r in rows.values())
    assert {k[1] for k, r in rows.items() if r["fenced"]} == {4, 5}
    assert rows[(0, 8)]["limbo"] is True and rows[(0, 2)]["limbo"] is None
    assert rows[(0, 8)]["explicit_lac"] == bkcodec.encode_lac(8, 3) and rows[(0, 2)]["explicit_lac"] is None
    assert bkcodec.storage_flags(bookie.root) == index_db.STORAGE_FLAG_NEEDS_INTEGRITY_CHECK
    assert bkcodec.storage_flags(bookie.index_dirs[1]) is None


def test_a_second_rocksdb_wrote_directory_1(bookie):
    if not bookie.written_by_ldb:
        pytest.skip("Debian's ldb (rocksdb-tools) is not installed: directory 1 was written by rocksdict")
    assert index_rows(bookie.databases(1) / "locations") == {
        k: loc for k, (n, loc) in bookie.indexed.items() if n == 1}
    ledgers = pa.table(bkcodec.read_ledger_index(bookie.databases(1) / "ledgers")).to_pylist()
    assert [(r["ledger_id"], r["fenced"]) for r in ledgers] == [(1, False), (3, False), (5, True)]


def test_reading_never_writes_into_the_bookie(bookie, tmp_path):
    before = tree_hash(bookie.root)
    pa.table(bkcodec.read_location_index(bookie.root))
    pa.table(bkcodec.read_ledger_index(bookie.root))
    bkcodec.storage_flags(bookie.root)
    for kind in bkcodec.bookie.BOOKIE_KINDS:
        if kind != "index":
            pa.table(bkcodec.read_bookie(bookie.root, kind=kind))
    cli("inspect", bookie.root, "--json")
    cli("verify", bookie.root, "--json")
    cli("dump", bookie.root, "--ledger", "2,4", "--json")
    cli("export", bookie.root, "--to", tmp_path / "x.parquet")
    cli("rebuild-index", bookie.root, "--to", tmp_path / "rebuilt")
    assert tree_hash(bookie.root) == before


def test_a_live_database_reads(tmp_path):
    # A running bookie holds the database's lock and keeps writing its WAL.
    db = tmp_path / "locations"
    live = rocksdict.Rdict(str(db), index_db.bookkeeper_options("locations"))
    try:
        for e in range(100):
            live[bkcodec.LedgerId(3).location_key(e)] = (1 << 32 | 1024 + e * 64).to_bytes(8, "big")
        rows = index_rows(db)
        assert len(rows) == 100 and rows[(0, 3, 99)] == 1 << 32 | 1024 + 99 * 64
    finally:
        live.close()


def test_without_rocksdict(monkeypatch, bookie):
    monkeypatch.setitem(sys.modules, "rocksdict", None)
    with pytest.raises(ImportError, match=r"bkcodec\[rocksdb\]") as e:
        bkcodec.read_location_index(bookie.root)
    assert isinstance(e.value, bkcodec.RocksDBUnavailableError)
    with pytest.raises(bkcodec.RocksDBUnavailableError):
        bkcodec.read_ledger_index(bookie.root)
    # The commands go on with what needs no RocksDB and say what was not checked.
    report = cli_json("verify", bookie.root)
    assert report["clean"] and report["index"]["checked"] is False
    assert "bkcodec[rocksdb]" in report["index"]["unchecked_reason"]
    dbs = cli_json("inspect", bookie.root)["bookies"][0]["databases"]
    assert all("bkcodec[rocksdb]" in d["unchecked"] for d in dbs if d["role"] != "metadata-cache")
    assert cli("rebuild-index", bookie.root, "--to", bookie.root.parent / "never", expect=2)[2].count("bkcodec[rocksdb]") == 1
    code, out, err = cli("dump", bookie.root, "--ledger", "2", "--entry", "0", "--json")
    assert "reading every file instead" in err and json.loads(out)["ledger_id"] == 2


def test_decoding_keys_and_values():
    keys = [bkcodec.LedgerId(7).location_key(e) for e in range(3)] + [b"\1\2\3"]
    values = [(5 << 32 | 1028 + 100 * e).to_bytes(8, "big") for e in range(4)]
    for kind in (pa.binary(), pa.large_binary(), pa.binary_view()):
        batch = bkcodec.decode_location_index(pa.array(keys[:3], kind), pa.array(values[:3], kind))
        assert batch.column("entry_id").to_pylist() == [0, 1, 2]
    fixed = bkcodec.decode_location_index(pa.array(keys[:3], pa.binary(16)), pa.array(values[:3], pa.binary(8)))
    assert fixed.column("offset").to_pylist() == [1024, 1124, 1224]
    with pytest.raises(bkcodec.CorruptDataError, match="010203"):
        bkcodec.decode_location_index(keys, values)
    flagged = bkcodec.decode_location_index(keys, values, on_error="flag")
    assert flagged.column("ledger_id").to_pylist() == [7, 7, 7, None]
    assert flagged.column("error").to_pylist()[:3] == [None] * 3
    scoped = bkcodec.decode_location_index([SCOPED.location_key(4)], [values[0]], scoped=True)
    assert scoped.to_pylist()[0]["scope_id"] == SCOPED.scope_id and scoped.to_pylist()[0]["ledger_id"] == SCOPED.ledger_id
    with pytest.raises(bkcodec.CorruptDataError):
        bkcodec.decode_location_index([SCOPED.location_key(4)], [values[0]])


def test_a_bad_key_in_a_database(tmp_path):
    db = tmp_path / "locations"
    index_db.write_location_index(db, {(1, 0): 1 << 32 | 1028})
    w = rocksdict.Rdict(str(db), index_db.bookkeeper_options("locations"))
    w[b"\0\0\0\0\0\0\0\1\0"] = b"\0" * 8  # 9 bytes: no BookKeeper key
    w.close()
    with pytest.raises(bkcodec.CorruptDataError) as e:
        bkcodec.read_location_index(db).read_all()
    assert e.value.path == str(db) and "16 bytes, this one 9" in str(e.value)
    with pytest.raises(pa.ArrowInvalid, match="16 bytes, this one 9"):
        pa.table(bkcodec.read_location_index(db))
    t = pa.table(bkcodec.read_location_index(db, on_error="flag"))
    assert t.column("ledger_id").to_pylist() == [None, 1] or t.column("ledger_id").to_pylist() == [1, None]
    assert t.column("error").null_count == 1


# ---- verify, inspect, dump, rebuild-index


def test_verify_an_intact_bookie(bookie):
    report = cli_json("verify", bookie.root)
    assert report["clean"] and report["failures"] == []
    assert not any("/locations/" in f["path"] or "/ledgers/" in f["path"] for f in report["files"])
    index = report["index"]
    assert index["checked"] and index["entries"] == len(bookie.indexed) and index["failures"] == 0
    unindexed = {(Path(u["file"]).parent.parent.name, u["ledger_id"], u["ledger_state"]): (u["first_entry"], u["last_entry"], u["entries"])
                 for u in report["unindexed"]}
    assert unindexed == {("ledgers0", 6, "deleted"): (0, 3, 4), ("ledgers0", 8, "limbo"): (4, 5, 2), ("ledgers1", 5, "fenced"): (2, 2, 1)}
    assert index["unindexed_entries"] == len(bookie.unindexed)
    text = cli("verify", bookie.root)[1]
    assert "index (DbLedgerStorage): 30 entries checked" in text and "limbo" in text and "deleted" in text


def test_verify_an_index_entry_that_points_at_nothing(bookie, tmp_path):
    copy = tmp_path / "bookie"
    shutil.copytree(bookie.root, copy, symlinks=True)
    loc = copy / "index0" / "current" / "locations"
    db = rocksdict.Rdict(str(loc), index_db.bookkeeper_options("locations"))
    _, loc_2_0 = bookie.indexed[(0, 2, 0)]
    db[bkcodec.LedgerId(2).location_key(99)] = (loc_2_0 + 7).to_bytes(8, "big")  # inside entry 0's bytes
    db[bkcodec.LedgerId(2).location_key(100)] = (7 << 32 | 1028).to_bytes(8, "big")  # log 7 is not there
    db.close()
    report = cli_json("verify", copy, expect=1)
    got = {(x["problem"], x["ledger_id"], x["entry_id"], x["location"]) for x in report["failures"]}
    assert got == {("index_no_entry", 2, 99, loc_2_0 + 7), ("index_no_log", 2, 100, 7 << 32 | 1028)}
    missing = next(x for x in report["failures"] if x["entry_id"] == 99)
    assert missing["file"] == str(copy / "ledgers0" / "current" / "0.log") and missing["offset"] == (loc_2_0 & 0xFFFFFFFF) + 3
    code, text, _ = cli("verify", copy, expect=1)
    assert "index_no_entry" in text and " 99 " in text and "7.log" in text


def test_an_index_database_rocksdb_cannot_open(bookie, tmp_path):
    copy = tmp_path / "bookie"
    shutil.copytree(bookie.root, copy, symlinks=True)
    for sst in (copy / "index0" / "current" / "locations").glob("*.sst"):
        sst.write_bytes(b"\0" * 64)
    report = cli_json("verify", copy, expect=1)
    assert [x["problem"] for x in report["failures"]] == ["index_database"]
    assert report["failures"][0]["file"] == str(copy / "index0")
    inspected = cli_json("inspect", copy, expect=1)["bookies"][0]["databases"]
    assert "error" in next(d for d in inspected if d["path"].endswith("index0/current/locations"))


def test_inspect_shows_storage_cookie_and_counts(bookie):
    b = cli_json("inspect", bookie.root)["bookies"][0]
    assert b["storage"] == "DbLedgerStorage" and b["cookies_agree"] and len(b["cookie_files"]) == 5
    assert b["cookie"]["bookie_id"] == "bk-test.example.org:3181" and b["cookie"]["layout_version"] == 5
    dbs = {(Path(d["dir"]).name, d["role"]): d for d in b["databases"]}
    loc0 = dbs[("index0", "locations")]
    assert (loc0["entries"], loc0["ledgers"], loc0["first_key"], loc0["last_key"]) == (15, 3, [0, 2, 0], [0, 8, 3])
    led0 = dbs[("index0", "ledgers")]
    assert (led0["ledgers"], led0["fenced"], led0["limbo"], led0["storage_flags"]) == (3, 1, 1, 1)
    assert dbs[("index1", "locations")]["entries"] == 11
    scoped = dbs[("index0", "scoped-locations")]
    assert scoped["first_key"] == [SCOPED.scope_id, SCOPED.ledger_id, 0]
    text = cli("inspect", bookie.root)[1]
    assert "bookie" in text and "DbLedgerStorage" in text and "storage flags 1 (needs integrity check)" in text


def test_dump_by_id_reads_through_the_index(bookie):
    rows = [json.loads(line) for line in cli("dump", bookie.root, "--ledger", "4,8", "--entry", "1:3", "--json")[1].splitlines()]
    assert sorted((r["ledger_id"], r["entry_id"]) for r in rows) == [(4, 1), (4, 2), (8, 1), (8, 2)]
    for r in rows:
        assert bytes.fromhex(r["payload"]) == bookie.payloads[(0, r["ledger_id"], r["entry_id"])] and r["digest_ok"]
    # A scoped ledger with a UUID-derived (negative) id, by id and scope.
    rows = [json.loads(line) for line in cli("dump", bookie.root, f"--ledger={SCOPED.ledger_id}", "--scope", str(SCOPED.scope_id), "--json")[1].splitlines()]
    assert [(r["scope_id"], r["entry_id"]) for r in rows] == [(SCOPED.scope_id, e) for e in range(4)]
    # A deleted ledger: nothing indexed (the scan still finds its entries).
    code, out, err = cli("dump", bookie.root, "--ledger", "6")
    assert out == "" and "holds no entries" in err
    assert len(cli("dump", bookie.root, "--ledger", "6", "--scan", "--json")[1].splitlines()) == 4


def test_dump_by_id_on_interleaved_storage(tmp_path):
    from bkcodec.sample_data import make_bookie_dir

    sample = make_bookie_dir(tmp_path / "b", entries_per_ledger=6, flip_payload_byte=False, torn_tail=False)
    rows = [json.loads(line) for line in cli("dump", sample.root, "--ledger", "1", "--entry", "3:5", "--json", "--payload", "none")[1].splitlines()]
    assert [(r["ledger_id"], r["entry_id"]) for r in rows] == [(1, 3), (1, 4)]
    assert all(r["file"].endswith(".log") for r in rows)


def test_rebuild_index_round_trip(bookie, tmp_path):
    out = tmp_path / "rebuilt"
    result = cli_json("rebuild-index", bookie.root, "--to", out, "--all-ledgers")
    scan = {}
    for n, d in enumerate(bookie.ledger_dirs):
        for log in sorted((d / "current").glob("*.log")):
            for r in bkcodec.read_entry_log(log, payload="none").read_all().to_pylist():
                scan[(n, r["scope_id"], r["ledger_id"], r["entry_id"])] = r["location"]
    for n, index_dir in enumerate(bookie.index_dirs):
        rebuilt = index_rows(out / index_dir.name)
        assert rebuilt == {k[1:]: v for k, v in scan.items() if k[0] == n}
    assert result["entries"] == len(scan)
    # By default, as BookKeeper does, only the ledgers the ledgers database lists.
    default = cli_json("rebuild-index", bookie.root, "--to", tmp_path / "default")
    assert result["entries"] - default["entries"] == 4 and not any(k[1] == 6 for k in index_rows(tmp_path / "default"))
    if shutil.which("ldb"):
        # A second RocksDB (older: it skips the newer one's unknown options) reads it too.
        db = out / "index1/current/locations"
        text = subprocess.run(["ldb", f"--db={db}", "--hex", "--ignore_unknown_options", "scan"], capture_output=True, text=True, check=True).stdout
        assert len(text.splitlines()) == sum(1 for k in scan if k[0] == 1)
    # Only ever a new directory, outside the bookie.
    assert "not an empty directory" in cli("rebuild-index", bookie.root, "--to", out, expect=2)[2]
    assert "inside the bookie" in cli("rebuild-index", bookie.root, "--to", bookie.index_dirs[0] / "new", expect=2)[2]


def test_read_bookie(bookie):
    entries = pa.table(bkcodec.read_bookie(bookie.root, payload="none"))
    kinds = entries.group_by("file_kind").aggregate([("file", "count")]).to_pylist()
    assert {k["file_kind"]: k["file_count"] for k in kinds} == {"entry_log": 37, "journal": 7}
    assert entries.column_names[:2] == ["file", "file_kind"]
    logs = pa.table(bkcodec.read_bookie(bookie.root, kind="entry_log", payload="none"))
    assert logs.num_rows == 37 and set(logs.column("file_kind").to_pylist()) == {"entry_log"}
    locations = pa.table(bkcodec.read_bookie(bookie.root, kind="location_index"))
    assert locations.column_names == ["file", "file_kind", *INDEX_COLUMNS] and locations.num_rows == len(bookie.indexed)
    assert pa.table(bkcodec.read_bookie(bookie.root, kind="ledger_index")).num_rows == len(bookie.ledgers)
    with pytest.raises(ValueError, match="no index"):
        bkcodec.read_bookie(bookie.root, kind="index")
    with pytest.raises(ValueError, match="unknown kind"):
        bkcodec.read_bookie(bookie.root, kind="logs")


# ---- around the golden corpus


def test_golden_entry_log_in_a_db_ledger_storage_bookie(golden, tmp_path):
    manifest = read_jsonl(golden("entrylogs", "multi_ledger.jsonl"))
    entries = [r for r in manifest if r["record"] == "entry"]
    current = tmp_path / "ledgers" / "current"
    current.mkdir(parents=True)
    shutil.copy(golden("entrylogs", "multi_ledger", "current", "0.log"), current / "0.log")
    index_db.write_location_index(current / "locations", {(r["ledger_id"], r["entry_id"]): r["location"] for r in entries})
    index_db.write_ledger_index(current / "ledgers", [{"ledger_id": l, "master_key": b"\0" * 20} for l in {r["ledger_id"] for r in entries}])
    before = tree_hash(tmp_path)
    report = cli_json("verify", tmp_path)
    assert report["clean"] and report["index"]["entries"] == 300 and report["unindexed"] == []
    e = entries[123]
    rows = [json.loads(x) for x in cli("dump", tmp_path, "--ledger", e["ledger_id"], "--entry", e["entry_id"], "--json")[1].splitlines()]
    assert len(rows) == 1 and hashlib.sha256(bytes.fromhex(rows[0]["payload"])).hexdigest() == e["payload_sha256"]
    assert tree_hash(tmp_path) == before


def test_the_index_check_is_a_library_call(bookie):
    report = bkcodec.check_index(bookie.root)
    assert report.unchecked is None and report.failures == []
    assert report.checked == len(bookie.indexed)
    assert report.unindexed_entries == len(bookie.unindexed)
