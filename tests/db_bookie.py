"""DbLedgerStorage bookies for the tests: BookKeeper's directory layout, real RocksDB
indexes with BookKeeper's options, entry logs from bkcodec's writers.

`make_db_bookie(root)` writes (ledger L lives in directory `L mod 2`, BookKeeper's
`signSafeMod`; a scoped ledger by its low 64 bits):

    journal/current/{VERSION, 1.txn}
    ledgers0/current/{VERSION, 0.log (rolled), 1.log (open), lastId, lastMark, BOOKIE_STATUS}
    ledgers1/current/{VERSION, 0.log (rolled), lastId, lastMark}
    index0/current/{VERSION, locations/, ledgers/, scoped-locations/, scoped-ledgers/}
    index1/current/{VERSION, locations/, ledgers/}

(with `separate_index_dirs=False` the databases sit in `ledgersN/current/`).
Log id 0 exists in both ledger directories: each directory has its own entry logger.

Directory 0's `locations` holds ledger 2 and the first entries of ledger 8 in flushed
LZ4 table files; ledger 6 was range-deleted (a tombstone in a table file); ledger 4
(fenced) was written after the last flush, so it is only in the write-ahead log, as
a crashed bookie leaves it (the database is copied while open). Its `ledgers`
database holds 2, 4 (fenced) and 8 (limbo) and the storage flags; ledger 6's key was
deleted. Entries of 6 and the last two of 8 are in the entry logs but not indexed.
Directory 1's databases hold ledgers 1, 3 and 5 (fenced, its last entry not
indexed) and are written by Debian's `ldb` (a
second RocksDB) when it is installed, else by rocksdict. The scoped databases hold a
ledger whose id comes from a UUID (its low half negative) with V2 entries.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import rocksdict

import bkcodec
from bkcodec import index_db

PASSWORD = b"pw"
MASTER_KEY = bkcodec.master_key(PASSWORD)
SCOPED = bkcodec.LedgerId.from_uuid(uuid.UUID("3f9c2a71-5d1e-4b8a-9e6f-0c2d4b7a8e90"))
assert SCOPED.scope_id != 0 and SCOPED.ledger_id < 0 and SCOPED.ledger_id % 2 == 0
BOOKIE_ID = "bk-test.example.org:3181"
INSTANCE_ID = "6f1d0e8a-2c3b-4a5d-8e7f-901234567890"


def tree_hash(root: Path) -> str:
    """Every file and directory below `root`: name, type, size, mtime and bytes."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = Path(dirpath, name)
            st = p.lstat()
            h.update(f"{p.relative_to(root)}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
            if p.is_file() and not p.is_symlink():
                h.update(p.read_bytes())
    return h.hexdigest()


def ldb_path() -> str | None:
    return shutil.which("ldb")


@dataclass
class DbBookie:
    root: Path
    journal_dir: Path
    ledger_dirs: list[Path]
    index_dirs: list[Path]
    # (scope, ledger, entry) -> (directory number, location): what the indexes hold.
    indexed: dict[tuple[int, int, int], tuple[int, int]] = field(default_factory=dict)
    # (directory number, log id, scope, ledger, entry) of entries in logs but not indexed, with the state.
    unindexed: dict[tuple[int, int, int, int, int], str] = field(default_factory=dict)
    # (scope, ledger) -> the ledgers-database row.
    ledgers: dict[tuple[int, int], dict] = field(default_factory=dict)
    # (scope, ledger, entry) -> payload, for every entry written to an entry log.
    payloads: dict[tuple[int, int, int], bytes] = field(default_factory=dict)
    written_by_ldb: bool = False

    def databases(self, n: int) -> Path:
        return self.index_dirs[n] / "current"


def _entries(ledger: int, count: int, *, scope: int = 0, size: int = 300) -> list[tuple[int, bytes, bytes]]:
    out, length = [], 0
    for e in range(count):
        payload = bytes((e * 7 + ledger + i) % 251 for i in range(size + 37 * e))
        length += len(payload)
        raw = bkcodec.encode_entry(ledger, e, e - 1, length, payload, digest_type="crc32c", scope_id=scope)
        out.append((e, payload, raw))
    return out


def _ldb_load(db: Path, pairs: list[tuple[bytes, bytes]], *, lz4: bool) -> None:
    args = [ldb_path() or "ldb", f"--db={db}", "--create_if_missing", "--hex"]
    if lz4:
        args += ["--compression_type=lz4", "--block_size=65536", "--bloom_bits=10"]
    text = "".join(f"0x{k.hex().upper()} ==> 0x{v.hex().upper()}\n" for k, v in pairs)
    subprocess.run([*args, "load"], input=text, text=True, check=True, capture_output=True, timeout=60)


def make_db_bookie(root: Path, *, separate_index_dirs: bool = True, use_ldb: bool | None = None) -> DbBookie:
    root.mkdir(parents=True)
    use_ldb = ldb_path() is not None if use_ldb is None else use_ldb
    journal = root / "journal"
    ledger_dirs = [root / "ledgers0", root / "ledgers1"]
    index_dirs = [root / "index0", root / "index1"] if separate_index_dirs else ledger_dirs
    b = DbBookie(root, journal, ledger_dirs, index_dirs, written_by_ldb=use_ldb)
    cookie = bkcodec.Cookie(
        BOOKIE_ID,
        [f"/srv/bookkeeper/{journal.name}"],
        [f"/srv/bookkeeper/{d.name}" for d in ledger_dirs],
        index_dirs=[f"/srv/bookkeeper/{d.name}" for d in index_dirs] if separate_index_dirs else None,
        instance_id=INSTANCE_ID,
    )
    for d in {journal, *ledger_dirs, *index_dirs}:
        (d / "current").mkdir(parents=True, exist_ok=True)
        (d / "current" / "VERSION").write_text(cookie.encode())
    (ledger_dirs[0] / "current" / "BOOKIE_STATUS").write_text("1,READ_WRITE,1700000000000,false\n")

    per_ledger = {lid: _entries(lid, n) for lid, n in {1: 5, 2: 6, 3: 4, 4: 5, 5: 3, 6: 4, 8: 6}.items()}
    scoped = _entries(SCOPED.ledger_id, 4, scope=SCOPED.scope_id)
    for lid, rows in per_ledger.items():
        for e, payload, _ in rows:
            b.payloads[(0, lid, e)] = payload
    for e, payload, _ in scoped:
        b.payloads[(SCOPED.scope_id, SCOPED.ledger_id, e)] = payload

    # Entry logs: directory 0 has a rolled 0.log and an open 1.log, directory 1 a rolled 0.log.
    locations: dict[tuple[int, int, int], tuple[int, int, int]] = {}  # key -> (dir, log id, location)

    def write_log(n: int, log_id: int, rows: list[tuple[int, int, list]], roll: bool = True) -> None:
        w = bkcodec.EntryLogWriter(ledger_dirs[n] / "current" / f"{log_id:x}.log", log_id)
        # Interleave the ledgers' entries, as a bookie's entry logger does.
        for i in range(max(len(r[2]) for r in rows)):
            for scope, lid, entries in rows:
                if i < len(entries):
                    e, _, raw = entries[i]
                    locations[(scope, lid, e)] = (n, log_id, w.add_entry(raw))
        w.close(roll=roll)

    write_log(0, 0, [(0, 2, per_ledger[2]), (0, 6, per_ledger[6]), (0, 8, per_ledger[8])])
    write_log(0, 1, [(0, 4, per_ledger[4]), (SCOPED.scope_id, SCOPED.ledger_id, scoped)], roll=False)
    write_log(1, 0, [(0, 1, per_ledger[1]), (0, 3, per_ledger[3]), (0, 5, per_ledger[5])])
    bkcodec.write_last_id(ledger_dirs[0] / "current" / "lastId", 1)
    bkcodec.write_last_id(ledger_dirs[1] / "current" / "lastId", 0)

    with bkcodec.JournalWriter(journal / "current" / "1.txn") as j:
        j.add_ledger_key(4, MASTER_KEY)
        for _, _, raw in per_ledger[4]:
            j.add_entry(raw)
        j.add_fence(4)
        j.flush()
        mark = j.position
    for d in ledger_dirs:
        bkcodec.write_last_mark(d / "current" / "lastMark", 1, mark)

    def indexed(scope: int, lid: int, entries: list) -> list[tuple[int, int, int, int]]:
        rows = []
        for e, _, _ in entries:
            n, _, loc = locations[(scope, lid, e)]
            b.indexed[(scope, lid, e)] = (n, loc)
            rows.append((scope, lid, e, loc))
        return rows

    def not_indexed(scope: int, lid: int, entries: list, state: str) -> None:
        for e, _, _ in entries:
            n, log_id, _ = locations[(scope, lid, e)]
            b.unindexed[(n, log_id, scope, lid, e)] = state

    # Directory 0, rocksdict with BookKeeper's options.
    db0 = b.databases(0)
    opts = index_db.bookkeeper_options("locations")
    loc0 = rocksdict.Rdict(str(db0 / "locations"), opts)
    for rows in (indexed(0, 2, per_ledger[2]), [(0, 6, e, locations[(0, 6, e)][2]) for e, _, _ in per_ledger[6]],
                 indexed(0, 8, per_ledger[8][:4])):
        keys, values = bkcodec._bkcodec._encode_location_pairs(*map(list, zip(*rows)))
        for k, v in zip(keys, values):
            loc0[k] = v
    loc0.flush()
    # Ledger 6 deleted: a range delete over all its keys, as EntryLocationIndex does.
    loc0.delete_range(bkcodec.LedgerId(6).location_key(0), bkcodec.LedgerId(6).location_key(2**63 - 1))
    loc0.flush()
    not_indexed(0, 6, per_ledger[6], "deleted")
    not_indexed(0, 8, per_ledger[8][4:], "limbo")
    # Ledger 4 after the last flush: only the write-ahead log has it. The database is
    # copied while open, as a crash leaves it.
    keys, values = bkcodec._bkcodec._encode_location_pairs(*map(list, zip(*indexed(0, 4, per_ledger[4]))))
    for k, v in zip(keys, values):
        loc0[k] = v
    shutil.copytree(db0 / "locations", db0 / "locations.crashed")
    loc0.close()
    shutil.rmtree(db0 / "locations")
    (db0 / "locations.crashed").rename(db0 / "locations")
    (db0 / "locations" / "rocksdict-config.json").unlink(missing_ok=True)

    ledgers0 = [
        {"ledger_id": 2, "master_key": MASTER_KEY},
        {"ledger_id": 4, "master_key": MASTER_KEY, "fenced": True},
        {"ledger_id": 6, "master_key": MASTER_KEY},
        {"ledger_id": 8, "master_key": MASTER_KEY, "limbo": True, "explicit_lac": bkcodec.encode_lac(8, 3)},
    ]
    index_db.write_ledger_index(db0 / "ledgers", ledgers0, storage_flags=index_db.STORAGE_FLAG_NEEDS_INTEGRITY_CHECK)
    led0 = rocksdict.Rdict(str(db0 / "ledgers"), index_db.bookkeeper_options("ledgers"))
    del led0[(6).to_bytes(8, "big")]  # LedgerMetadataIndex.removeDeletedLedgers: a point delete
    led0.close()
    (db0 / "ledgers" / "rocksdict-config.json").unlink(missing_ok=True)
    for r in ledgers0:
        if r["ledger_id"] != 6:
            b.ledgers[(0, r["ledger_id"])] = r

    scoped_rows = indexed(SCOPED.scope_id, SCOPED.ledger_id, scoped)
    index_db.write_location_index(db0 / "scoped-locations", scoped_rows, scoped=True)
    scoped_ledger = {"scope_id": SCOPED.scope_id, "ledger_id": SCOPED.ledger_id, "master_key": MASTER_KEY}
    index_db.write_ledger_index(db0 / "scoped-ledgers", [scoped_ledger], scoped=True)
    b.ledgers[(SCOPED.scope_id, SCOPED.ledger_id)] = scoped_ledger

    # Directory 1: ledgers 1, 3, 5 (5 fenced), written by ldb when it is there.
    db1 = b.databases(1)
    rows1 = indexed(0, 1, per_ledger[1]) + indexed(0, 3, per_ledger[3]) + indexed(0, 5, per_ledger[5][:2])
    not_indexed(0, 5, per_ledger[5][2:], "fenced")
    ledgers1 = [
        {"ledger_id": 1, "master_key": MASTER_KEY},
        {"ledger_id": 3, "master_key": MASTER_KEY},
        {"ledger_id": 5, "master_key": MASTER_KEY, "fenced": True},
    ]
    if use_ldb:
        keys, values = bkcodec._bkcodec._encode_location_pairs(*map(list, zip(*rows1)))
        _ldb_load(db1 / "locations", list(zip(keys, values)), lz4=True)
        pairs = [bkcodec._bkcodec._encode_ledger_pair(0, r["ledger_id"], r["master_key"], fenced=r.get("fenced", False))
                 for r in ledgers1]
        _ldb_load(db1 / "ledgers", pairs, lz4=False)
    else:
        index_db.write_location_index(db1 / "locations", rows1)
        index_db.write_ledger_index(db1 / "ledgers", ledgers1)
    for r in ledgers1:
        b.ledgers[(0, r["ledger_id"])] = r
    return b
