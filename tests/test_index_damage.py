"""Damaged RocksDB indexes of a DbLedgerStorage bookie: every kind of damage that
RocksDB itself reads quietly (an iterator that stops at a bad block, a write-ahead
log replayed up to its first bad record, a MANIFEST that forgot table files) is an
error or a flagged row naming the database, and `verify` exits 1 naming it; files
that are not regular files are refused, never opened (a FIFO blocks forever); the
snapshot copies sparse files sparsely and leaves nothing behind in $TMPDIR.

The bookies are `db_bookie.make_db_bookie`'s; each test damages a copy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("rocksdict", reason="the RocksDB tests need bkcodec[rocksdb] (rocksdict)")

import rocksdict  # noqa: E402

import bkcodec  # noqa: E402
from bkcodec import index_db  # noqa: E402
from db_bookie import make_db_bookie, tree_hash  # noqa: E402

# Far more than any of these reads takes; a hang fails the test instead of stalling it.
TIMEOUT = 60


@pytest.fixture(scope="module")
def bookie(tmp_path_factory):
    return make_db_bookie(tmp_path_factory.mktemp("damage") / "bookie")


def damaged_copy(bookie, tmp_path: Path, damage) -> Path:
    copy = tmp_path / "bookie"
    shutil.copytree(bookie.root, copy, symlinks=True)
    damage(copy / "index0" / "current")
    return copy


def locations(copy: Path) -> Path:
    return copy / "index0" / "current" / "locations"


def in_locations0(bookie) -> int:
    """How many entries directory 0's `locations` database holds."""
    return sum(1 for (scope, _, _), (n, _) in bookie.indexed.items() if n == 0 and scope == 0)


def run(*args, tmpdir: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """A command in a child process, its snapshots in `tmpdir`; never waits past `timeout`."""
    tmpdir.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmpdir))
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)


def bkcodec_cli(*args, tmpdir: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return run("-m", "bkcodec", *args, "--no-progress", tmpdir=tmpdir, timeout=timeout)


def names_database(failures: list[dict], db: Path) -> bool:
    return any(f.get("database") == str(db) or str(db) in (f.get("error") or "") for f in failures)


def flagged_errors(table: pa.Table) -> list[str]:
    return table.column("error").drop_null().to_pylist()


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def wal_of(db: Path) -> Path:
    (wal,) = [p for p in db.glob("*.log") if p.stem.isdigit()]
    return wal


# ---- the damage kinds


def flip_table_file(current: Path) -> None:
    # Inside the first data block: the database opens, its scan stops there.
    flip(sorted((current / "locations").glob("*.sst"))[0], 100)


def flip_wal_mid_file(current: Path) -> None:
    wal = wal_of(current / "locations")
    flip(wal, wal.stat().st_size // 2)


def truncate_wal(current: Path) -> None:
    wal = wal_of(current / "locations")
    os.truncate(wal, wal.stat().st_size // 2)


def truncate_manifest(current: Path) -> None:
    (manifest,) = (current / "locations").glob("MANIFEST-*")
    os.truncate(manifest, manifest.stat().st_size // 2)


def remove_named_table_file(current: Path) -> None:
    sorted((current / "locations").glob("*.sst"))[-1].unlink()


def remove_locations(current: Path) -> None:
    shutil.rmtree(current / "locations")


def empty_locations(current: Path) -> None:
    shutil.rmtree(current / "locations")
    (current / "locations").mkdir()


def file_for_locations(current: Path) -> None:
    shutil.rmtree(current / "locations")
    (current / "locations").write_bytes(b"\0" * 4096)


def fifo_for_table_file(current: Path) -> None:
    sst = sorted((current / "locations").glob("*.sst"))[0]
    sst.unlink()
    os.mkfifo(sst)


def extra_fifo_table_file(current: Path) -> None:
    os.mkfifo(current / "locations" / "000099.sst")


# ---- a table file that fails its checksum


def test_a_table_file_failing_its_checksum_is_an_error_not_zero_rows(tmp_path):
    db = tmp_path / "locations"
    assert index_db.write_location_index(db, {(1, e): 1 << 32 | 1028 + 64 * e for e in range(1000)}) == 1000
    (sst,) = db.glob("*.sst")
    flip(sst, 100)
    before = tree_hash(tmp_path)
    with pytest.raises(bkcodec.CorruptDataError, match="block checksum mismatch") as e:
        index_db.read_location_index(db).read_all()
    assert isinstance(e.value, index_db.IndexDatabaseError) and e.value.path == str(db)
    # Named by the bookie's file, not the snapshot's.
    assert str(db) in str(e.value) and str(sst) in str(e.value) and "bkcodec-rocksdb" not in str(e.value)
    with pytest.raises(pa.ArrowInvalid, match="checksum mismatch"):
        pa.table(index_db.read_location_index(db))
    flagged = index_db.read_location_index(db, on_error="flag").read_all()
    (error,) = flagged_errors(flagged)
    assert index_db.is_database_error(error, db) and "cannot read it whole" in error
    assert flagged.num_rows == 1 and flagged.column("ledger_id").null_count == 1
    assert tree_hash(tmp_path) == before


# ---- damage RocksDB recovers from quietly


def test_a_write_ahead_log_damaged_mid_file_loses_entries_loudly(bookie, tmp_path):
    copy = damaged_copy(bookie, tmp_path, flip_wal_mid_file)
    loc = locations(copy)
    wal = wal_of(loc)
    # RocksDB's default recovery replays the log up to the damage: some of ledger 4 is gone.
    flagged = index_db.read_location_index(loc, on_error="flag").read_all()
    (error,) = flagged_errors(flagged)
    assert error.startswith(f"{loc}: ") and wal.name in error and "damaged" in error
    assert 0 < flagged.num_rows - 1 < in_locations0(bookie)
    with pytest.raises(bkcodec.CorruptDataError, match=wal.name):
        index_db.read_location_index(loc).read_all()
    report = json.loads(bkcodec_cli("verify", copy, "--json", tmpdir=tmp_path / "t").stdout)
    assert not report["clean"] and names_database(report["failures"], loc)
    assert bkcodec_cli("inspect", copy, tmpdir=tmp_path / "t").returncode == 1


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_write_ahead_log_that_is_not_a_regular_file_is_refused(bookie, tmp_path, kind):
    def replace(current: Path) -> None:
        wal = wal_of(current / "locations")
        wal.unlink()
        if kind == "fifo":
            os.mkfifo(wal)
        else:
            os.symlink("/dev/zero", wal)

    copy = damaged_copy(bookie, tmp_path, replace)
    loc = locations(copy)
    name = sorted(p.name for p in loc.glob("0*.log"))[0]
    with pytest.raises(bkcodec.CorruptDataError, match=f"{name}.*not a regular file"):
        index_db.read_location_index(loc).read_all()
    proc = bkcodec_cli("verify", copy, "--json", tmpdir=tmp_path / "t")
    assert proc.returncode == 1
    failures = json.loads(proc.stdout)["failures"]
    assert names_database(failures, loc) and any(name in f["error"] for f in failures)


def test_a_truncated_manifest_that_lost_table_files_is_reported(bookie, tmp_path):
    copy = damaged_copy(bookie, tmp_path, truncate_manifest)
    loc = locations(copy)
    flagged = index_db.read_location_index(loc, on_error="flag").read_all()
    errors = flagged_errors(flagged)
    assert any(e.startswith(f"{loc}: ") and ".sst" in e and "MANIFEST" in e for e in errors)
    with pytest.raises(bkcodec.CorruptDataError, match="MANIFEST"):
        index_db.read_location_index(loc).read_all()
    proc = bkcodec_cli("verify", copy, "--json", tmpdir=tmp_path / "t")
    assert proc.returncode == 1 and names_database(json.loads(proc.stdout)["failures"], loc)


@pytest.mark.parametrize("damage", [remove_locations, empty_locations, file_for_locations], ids=["missing", "empty", "a file"])
def test_a_locations_database_gone_while_the_ledgers_database_lists_ledgers(bookie, tmp_path, damage):
    copy = damaged_copy(bookie, tmp_path, damage)
    loc = locations(copy)
    proc = bkcodec_cli("verify", copy, "--json", tmpdir=tmp_path / "t")
    assert proc.returncode == 1, proc.stdout[-2000:]
    failures = json.loads(proc.stdout)["failures"]
    assert names_database(failures, loc) and any("lists 3 ledgers" in f["error"] for f in failures)
    inspected = bkcodec_cli("inspect", copy, "--json", tmpdir=tmp_path / "t")
    assert inspected.returncode == 1
    dbs = json.loads(inspected.stdout)["bookies"][0]["databases"]
    assert "error" in next(d for d in dbs if d["path"] == str(loc))


@pytest.mark.parametrize("what", ["ledger value", "storage flags"])
def test_a_ledgers_value_that_does_not_decode_is_damage(bookie, tmp_path, what):
    def spoil(current: Path) -> None:
        db = rocksdict.Rdict(str(current / "ledgers"), index_db.bookkeeper_options("ledgers"))
        key = (2).to_bytes(8, "big") if what == "ledger value" else bkcodec._bkcodec.STORAGE_FLAGS_KEY
        db[key] = b"\x01\x02"
        db.close()
        (current / "ledgers" / "rocksdict-config.json").unlink(missing_ok=True)

    copy = damaged_copy(bookie, tmp_path, spoil)
    ledgers = copy / "index0" / "current" / "ledgers"
    with pytest.raises(bkcodec.CorruptDataError, match="0102"):
        index_db.read_ledger_index(ledgers).read_all()
    flagged = index_db.read_ledger_index(ledgers, on_error="flag").read_all()
    assert len(flagged_errors(flagged)) == 1
    proc = bkcodec_cli("verify", copy, "--json", tmpdir=tmp_path / "t")
    assert proc.returncode == 1
    failures = json.loads(proc.stdout)["failures"]
    assert [(f["file"], f["problem"]) for f in failures] == [(str(ledgers), "index_record")]
    assert bkcodec_cli("inspect", copy, tmpdir=tmp_path / "t").returncode == 1


# ---- a FIFO among the table files


@pytest.mark.parametrize("damage", [fifo_for_table_file, extra_fifo_table_file], ids=["in place of one", "an extra one"])
def test_a_fifo_table_file_is_refused_and_never_hangs(bookie, tmp_path, damage):
    copy = damaged_copy(bookie, tmp_path, damage)
    loc = locations(copy)
    (fifo,) = [p.name for p in loc.iterdir() if p.is_fifo()]
    before = tree_hash(copy)
    t = tmp_path / "t"
    for args in (("verify", copy), ("inspect", copy)):
        proc = bkcodec_cli(*args, tmpdir=t)
        assert proc.returncode == 1 and fifo in proc.stdout and "not a regular file" in proc.stdout, (args, proc.stdout[-3000:])
    proc = bkcodec_cli("dump", copy, "--ledger", "2", "--payload", "none", tmpdir=t)
    # dump prints the refused database as a problem row and exits 1, as verify does.
    assert proc.returncode == 1 and f"{loc}: {fifo} is a FIFO" in proc.stdout
    read = "import sys, bkcodec; bkcodec.read_location_index(sys.argv[1]).read_all()"
    proc = run("-c", read, loc, tmpdir=t)
    assert proc.returncode == 1 and "IndexDatabaseError" in proc.stderr and fifo in proc.stderr
    assert tree_hash(copy) == before and list(t.iterdir()) == []


# ---- huge and sparse write-ahead logs, snapshots left behind


def test_a_huge_sparse_write_ahead_log_is_reported_not_copied(bookie, tmp_path):
    copy = damaged_copy(bookie, tmp_path, lambda current: os.truncate(wal_of(current / "locations"), 8 << 30))
    loc = locations(copy)
    t = tmp_path / "t"
    read = (
        "import sys, json, pyarrow as pa, bkcodec\n"
        "t = bkcodec.read_location_index(sys.argv[1], on_error='flag').read_all()\n"
        "print(json.dumps([t.num_rows, t.column('error').drop_null().to_pylist()]))\n"
    )
    start = time.monotonic()
    proc = run("-c", read, loc, tmpdir=t, timeout=30)
    assert time.monotonic() - start < 30 and proc.returncode == 0, proc.stderr
    rows, errors = json.loads(proc.stdout)
    (error,) = errors
    assert error.startswith(f"{loc}: ") and wal_of(loc).name in error and str(8 << 30) in error and "not read" in error
    assert list(t.iterdir()) == []
    verify = bkcodec_cli("verify", copy, "--json", tmpdir=t, timeout=30)
    assert verify.returncode == 1 and names_database(json.loads(verify.stdout)["failures"], loc)


def test_a_sparse_write_ahead_log_is_copied_sparsely(bookie, tmp_path, monkeypatch):
    wal_size = 64 << 20
    copy = damaged_copy(bookie, tmp_path, lambda current: os.truncate(wal_of(current / "locations"), wal_size))
    loc = locations(copy)
    t = tmp_path / "t"
    t.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(t))
    with index_db.open_index_database(loc) as snap:
        (snapshot,) = t.iterdir()
        copied = (snapshot / wal_of(loc).name).stat()
        assert copied.st_size == wal_size and copied.st_blocks * 512 < 1 << 20
        assert snap.problems == []
    assert list(t.iterdir()) == []
    # Zeros after the last record are RocksDB's padding: the database reads whole.
    rows = index_db.read_location_index(loc).read_all()
    assert rows.num_rows == in_locations0(bookie)


def test_a_killed_readers_snapshot_is_removed_by_the_next_read(bookie, tmp_path, monkeypatch):
    t = tmp_path / "t"
    loc = bookie.databases(0) / "locations"
    killed = (
        "import os, signal, sys\n"
        "from bkcodec import index_db\n"
        "snap = index_db.open_index_database(sys.argv[1])\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = run("-c", killed, loc, tmpdir=t)
    assert proc.returncode == -signal.SIGKILL
    (left,) = t.iterdir()
    assert left.name.startswith("bkcodec-rocksdb-")
    monkeypatch.setattr(tempfile, "tempdir", str(t))
    index_db.read_location_index(loc).read_all()
    assert list(t.iterdir()) == []


# ---- a running bookie is not damage


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="whether a database is in use is told by /proc/locks")
def test_a_running_bookies_torn_log_tail_and_unfinished_table_file_are_not_damage(tmp_path):
    db = tmp_path / "locations"
    live = rocksdict.Rdict(str(db), index_db.bookkeeper_options("locations"))
    try:
        for e in range(20):
            live[bkcodec.LedgerId(3).location_key(e)] = (1 << 32 | 1024 + e * 64).to_bytes(8, "big")
        live.flush()
        for e in range(20, 30):
            live[bkcodec.LedgerId(3).location_key(e)] = (1 << 32 | 1024 + e * 64).to_bytes(8, "big")
        # A record being appended (its header, a few bytes of its body) and a
        # compaction's output not yet in the MANIFEST.
        with open(wal_of(db), "ab") as wal:
            wal.write(b"\x11\x22\x33\x44\x50\x00\x01abc")
        (sst,) = db.glob("*.sst")
        shutil.copy(sst, db / "000999.sst")
        assert index_db.read_location_index(db).read_all().num_rows == 30
        # The same files in a database no process holds: damage.
        shutil.copytree(db, tmp_path / "copy")
    finally:
        live.close()
    flagged = index_db.read_location_index(tmp_path / "copy", on_error="flag").read_all()
    errors = flagged_errors(flagged)
    assert any("ends inside a record" in e for e in errors) and any("000999.sst" in e for e in errors)
    assert flagged.num_rows - len(errors) == 30


# ---- every kind through verify


@pytest.mark.parametrize(
    "damage",
    [flip_table_file, flip_wal_mid_file, truncate_wal, truncate_manifest, remove_named_table_file, remove_locations,
     empty_locations, file_for_locations, fifo_for_table_file, extra_fifo_table_file],
)
def test_verify_reports_rocksdb_damage_naming_the_database(bookie, tmp_path, damage):
    copy = damaged_copy(bookie, tmp_path, damage)
    before = tree_hash(copy)
    t = tmp_path / "t"
    proc = bkcodec_cli("verify", copy, "--json", tmpdir=t)
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    report = json.loads(proc.stdout)
    assert not report["clean"] and names_database(report["failures"], locations(copy))
    text = bkcodec_cli("verify", copy, tmpdir=t)
    assert text.returncode == 1 and str(locations(copy)) in text.stdout
    assert tree_hash(copy) == before and list(t.iterdir()) == []


def test_an_intact_bookie_still_verifies_clean(bookie, tmp_path):
    t = tmp_path / "t"
    before = tree_hash(bookie.root)
    proc = bkcodec_cli("verify", bookie.root, "--json", tmpdir=t)
    assert proc.returncode == 0 and json.loads(proc.stdout)["clean"]
    assert bkcodec_cli("inspect", bookie.root, tmpdir=t).returncode == 0
    assert bkcodec.storage_flags(bookie.root) == index_db.STORAGE_FLAG_NEEDS_INTEGRITY_CHECK
    assert pa.table(bkcodec.read_ledger_index(bookie.root)).num_rows == len(bookie.ledgers)
    assert tree_hash(bookie.root) == before and list(t.iterdir()) == []
