"""A small sample bookie directory, written with bkcodec's own writers.

`make_bookie_dir(path)` lays out what a bookie running InterleavedLedgerStorage
leaves on disk, with known contents and known damage, for demos, tests, benchmarks
and Spark jobs:

    <path>/journal/current/<hex id>.txn      journal V6: ledger keys, entries, a fence,
                                             an explicit LAC, padding at each flush
    <path>/ledgers/current/0.log             a rolled entry log (ledgers map appended)
    <path>/ledgers/current/1.log             the current, unrolled entry log
    <path>/ledgers/current/lastId            the last entry log id
    <path>/ledgers/current/lastMark          journal id and offset of the last flush
    <path>/ledgers/current/<x>/<y>/<id>.idx  an index file per ledger of scope 0
    <path>/metadata/ledgers/...              the ledgers' metadata znodes, as dumped

Ledgers use every digest type (HMAC with a password; its password and every other
ledger's digest type are in the metadata), and two ledgers have a scope id, so their
entries are Entry Format V2 (first byte 0xA1/0xA3).

The planted damage (see `SampleBookie.damage`): one payload byte flipped in one entry
of the rolled log, and the unrolled log cut off in the middle of its last entry, as a
crash leaves it. Everything else verifies.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import (
    EntryLogWriter,
    JournalWriter,
    LedgerId,
    LedgerMetadata,
    encode_entry,
    encode_lac,
    encode_ledger_metadata,
    ledger_znode_path,
    master_key,
    write_index_file,
    write_last_id,
    write_last_mark,
)

__all__ = ["SampleBookie", "SampleLedger", "PlantedDamage", "make_bookie_dir", "MANIFEST_NAME"]

MANIFEST_NAME = "sample-manifest.json"
JOURNAL_ID = 1_700_000_000_000  # a millisecond timestamp, as the bookie names journals
ROLLED_LOG_ID = 0
OPEN_LOG_ID = 1
BOOKIE = "bookie-1.example.org:3181"


@dataclass
class SampleLedger:
    scope_id: int
    ledger_id: int
    digest_type: str
    password: str
    entries: int
    # Journal meta records for this ledger.
    fenced: bool = False
    explicit_lac: int | None = None

    @property
    def qualified_name(self) -> str:
        return LedgerId(self.scope_id, self.ledger_id).qualified_name


@dataclass
class PlantedDamage:
    """One thing `bkcodec verify` must report, exactly where it is."""

    file: str  # relative to the sample root
    problem: str  # "digest" (a failed digest) or "torn_record" (a record cut off by the end of the file)
    offset: int  # of the record's size field, as verify reports
    ledger_id: int
    entry_id: int
    detail: str


@dataclass
class SampleBookie:
    root: Path
    journal_dir: Path
    ledger_dir: Path
    metadata_dir: Path
    ledgers: list[SampleLedger]
    # Relative path -> what is in it: kind, entries, and per entry log the entries
    # of each ledger (as "scope/ledger" keys) that a reader finds intact or damaged.
    files: dict[str, dict[str, Any]]
    damage: list[PlantedDamage] = field(default_factory=list)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "journal_dir": str(self.journal_dir),
            "ledger_dir": str(self.ledger_dir),
            "metadata_dir": str(self.metadata_dir),
            "ledgers": [asdict(x) | {"qualified_name": x.qualified_name} for x in self.ledgers],
            "files": self.files,
            "damage": [asdict(d) for d in self.damage],
        }


# (scope, ledger, digest type, password). Passwords matter only to HMAC, but every
# ledger has one, as BookKeeper clients always pass one.
_LEDGERS = (
    (0, 1, "crc32c", ""),
    (0, 2, "crc32", ""),
    (0, 3, "hmac", "secret"),
    (0, 4, "dummy", ""),
    (5, 7, "crc32c", ""),  # scope != 0: Entry Format V2
    (5, 8, "crc32", ""),
)


def make_bookie_dir(
    path: str | os.PathLike[str],
    *,
    entries_per_ledger: int = 24,
    max_payload: int = 1500,
    seed: int = 7,
    flip_payload_byte: bool = True,
    torn_tail: bool = True,
) -> SampleBookie:
    """Writes the sample bookie directory into `path` (created; must be empty or absent).

    Half of each ledger's entries go to the rolled log, the rest to the open one,
    interleaved across ledgers as a bookie interleaves concurrent writes. The journal
    holds every entry. Returns what was written and where the damage is; the same
    description is saved as `<path>/sample-manifest.json`.
    """
    if entries_per_ledger < 2:
        raise ValueError("entries_per_ledger must be at least 2 (one per entry log)")
    root = Path(path)
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    rng = random.Random(seed)
    journal_dir = root / "journal"
    ledger_dir = root / "ledgers"
    metadata_dir = root / "metadata"
    (journal_dir / "current").mkdir(parents=True)
    (ledger_dir / "current").mkdir(parents=True)
    metadata_dir.mkdir(parents=True)

    ledgers = [SampleLedger(s, lid, dt, pw, entries_per_ledger) for s, lid, dt, pw in _LEDGERS]
    ledgers[1].fenced = True
    ledgers[0].explicit_lac = entries_per_ledger - 2

    # Every entry, in the order a bookie receives them: ledgers interleaved.
    writes: list[tuple[SampleLedger, int, bytes, bytes]] = []
    lengths = {id(x): 0 for x in ledgers}
    for entry_id in range(entries_per_ledger):
        for x in ledgers:
            payload = rng.randbytes(rng.randint(1, max_payload))
            lengths[id(x)] += len(payload)
            entry = encode_entry(
                x.ledger_id,
                entry_id,
                entry_id - 1,
                lengths[id(x)],
                payload,
                digest_type=x.digest_type,
                password=x.password,
                scope_id=x.scope_id,
            )
            writes.append((x, entry_id, payload, entry))

    files: dict[str, dict[str, Any]] = {}
    damage: list[PlantedDamage] = []
    half = len(writes) // 2

    def key(x: SampleLedger) -> str:
        return f"{x.scope_id}/{x.ledger_id}"

    # Entry logs. Locations feed the index files; a log is rolled when the next starts.
    locations: dict[int, dict[int, int]] = {x.ledger_id: {} for x in ledgers if x.scope_id == 0}
    record_offsets: dict[tuple[str, int, int], int] = {}
    for log_id, chunk, roll in ((ROLLED_LOG_ID, writes[:half], True), (OPEN_LOG_ID, writes[half:], False)):
        rel = f"ledgers/current/{log_id:x}.log"
        per_ledger: dict[str, int] = {}
        with EntryLogWriter(root / rel) as w:
            for x, entry_id, _, entry in chunk:
                location = w.add_entry(entry)
                record_offsets[(rel, x.ledger_id, entry_id)] = (location & 0xFFFFFFFF) - 4
                if x.scope_id == 0:
                    locations[x.ledger_id][entry_id] = location
                per_ledger[key(x)] = per_ledger.get(key(x), 0) + 1
            w.close(roll=roll)
        files[rel] = {"kind": "entry_log", "rolled": roll, "entries": len(chunk), "ledgers": per_ledger}

    # Damage 1: a flipped payload byte in the rolled log (a CRC32C ledger, so any
    # single flip is caught). Framing, sizes and the ledgers map stay intact.
    rolled = f"ledgers/current/{ROLLED_LOG_ID:x}.log"
    if flip_payload_byte:
        victim, victim_entry = ledgers[0], 3
        payload = next(p for x, e, p, _ in writes[:half] if x is victim and e == victim_entry)
        record = record_offsets[(rolled, victim.ledger_id, victim_entry)]
        flip_at = record + 4 + 32 + 4 + len(payload) // 2  # size field, V1 header, CRC32C digest
        with open(root / rolled, "r+b") as f:
            f.seek(flip_at)
            byte = f.read(1)[0]
            f.seek(flip_at)
            f.write(bytes([byte ^ 0x10]))
        damage.append(
            PlantedDamage(
                rolled,
                "digest",
                record,
                victim.ledger_id,
                victim_entry,
                f"payload byte at file offset {flip_at} flipped (0x{byte:02x} -> 0x{byte ^ 0x10:02x})",
            )
        )

    # Damage 2: the open log ends in the middle of its last entry (a crash mid-write).
    open_rel = f"ledgers/current/{OPEN_LOG_ID:x}.log"
    if torn_tail:
        last_x, last_entry, _, last_bytes = writes[-1]
        record = record_offsets[(open_rel, last_x.ledger_id, last_entry)]
        cut = record + 4 + 41 + len(last_bytes) // 3  # keeps the header: the ids stay readable
        os.truncate(root / open_rel, cut)
        damage.append(
            PlantedDamage(
                open_rel,
                "torn_record",
                record,
                last_x.ledger_id,
                last_entry,
                f"file cut at {cut}, {record + 4 + len(last_bytes) - cut} bytes short of the end of the entry",
            )
        )
        info = files[open_rel]
        info["entries"] -= 1
        info["ledgers"][key(last_x)] -= 1
        info["torn_tail"] = True
        if last_x.scope_id == 0:
            del locations[last_x.ledger_id][last_entry]
    files[rolled]["torn_tail"] = False
    files.setdefault(open_rel, {}).setdefault("torn_tail", False)

    # Journal V6: each ledger's key before its first entry, a flush every few
    # records (padding to 512 bytes), then a fence and an explicit LAC.
    journal_rel = f"journal/current/{JOURNAL_ID:x}.txn"
    records = {"entry": 0, "ledger_key": 0, "fence": 0, "explicit_lac": 0}
    keyed: set[int] = set()
    with JournalWriter(root / journal_rel, version=6, alignment=512, prealloc_size=64 * 1024) as j:
        for i, (x, _, _, entry) in enumerate(writes):
            if x.ledger_id not in keyed:
                j.add_ledger_key(x.ledger_id, master_key(x.password))
                keyed.add(x.ledger_id)
                records["ledger_key"] += 1
            j.add_entry(entry)
            records["entry"] += 1
            if i % 5 == 4:
                j.flush()
        for x in ledgers:
            if x.fenced:
                j.add_fence(x.ledger_id)
                records["fence"] += 1
            if x.explicit_lac is not None:
                lac = encode_lac(x.ledger_id, x.explicit_lac, digest_type=x.digest_type, password=x.password)
                j.add_explicit_lac(x.ledger_id, lac)
                records["explicit_lac"] += 1
        j.flush()
        mark = j.position
        j.close()
    assert mark is not None  # the writer was open when it was read
    files[journal_rel] = {
        "kind": "journal",
        "version": 6,
        "entries": records["entry"],
        "records": records,
        "ledgers": {key(x): x.entries for x in ledgers},
        "torn_tail": False,
    }

    write_last_mark(ledger_dir / "current" / "lastMark", JOURNAL_ID, mark)
    files["ledgers/current/lastMark"] = {"kind": "last_mark", "journal_id": JOURNAL_ID, "offset": mark}
    write_last_id(ledger_dir / "current" / "lastId", OPEN_LOG_ID)
    files["ledgers/current/lastId"] = {"kind": "last_id", "log_id": OPEN_LOG_ID}

    # Index files (InterleavedLedgerStorage) for the ledgers of scope 0.
    for x in ledgers:
        if x.scope_id != 0:
            continue
        rel = "ledgers/current/" + LedgerId(0, x.ledger_id).index_path()
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        lac_blob = None
        if x.explicit_lac is not None:
            lac_blob = encode_lac(x.ledger_id, x.explicit_lac, digest_type=x.digest_type, password=x.password)
        write_index_file(
            root / rel,
            locations[x.ledger_id],
            master_key=master_key(x.password),
            fenced=x.fenced,
            explicit_lac=lac_blob,
        )
        files[rel] = {
            "kind": "index",
            "ledger_id": x.ledger_id,
            "entries": len(locations[x.ledger_id]),
            "fenced": x.fenced,
            "explicit_lac": x.explicit_lac,
        }

    # Ledger metadata, as a dump of the znodes (`bkcodec.load_ledger_metadata_dir`).
    for x in ledgers:
        md = LedgerMetadata(
            [(0, [BOOKIE])],
            write_quorum_size=1,
            ack_quorum_size=1,
            digest_type=x.digest_type,
            password=x.password.encode(),
            state="CLOSED" if x.fenced else "OPEN",
            last_entry_id=entries_per_ledger - 1 if x.fenced else -1,
            length=lengths[id(x)] if x.fenced else 0,
        )
        znode = metadata_dir / ledger_znode_path(x.ledger_id).lstrip("/")
        znode.parent.mkdir(parents=True, exist_ok=True)
        znode.write_bytes(encode_ledger_metadata(md))

    sample = SampleBookie(root, journal_dir, ledger_dir, metadata_dir, ledgers, files, damage)
    (root / MANIFEST_NAME).write_text(json.dumps(sample.to_json(), indent=2) + "\n")
    return sample
