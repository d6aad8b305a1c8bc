"""A small generated bookie directory for the Spark tests, written by bkcodec's writers.

Layout (what `make_bookie(root)` returns, by name):

- `ledgers/current/0.log`: rolled; ledgers 1 (CRC32C), 2 (CRC32), 3 (HMAC, password
  "pw"), 2**63 - 1 (CRC32C), a few dozen entries each, payloads up to a few KiB, so a
  small split size cuts it into several byte ranges.
- `ledgers/current/1.log`: open (never rolled): no ledgers map.
- `ledgers/current/2.log`: rolled, then damaged: one payload byte flipped (a digest
  failure) and the last record torn off.
- `ledgers/current/3.log`: not an entry log at all (garbage).
- `journal/current/1.txn`: version 6: a ledger key, entries, a fence, an explicit LAC.
- `ledgers/current/0/1/1.idx`: the index of ledger 1, and `lastMark`, `lastId`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import bkcodec

PASSWORD = "pw"
LEDGERS = {1: "crc32c", 2: "crc32", 3: "hmac", 2**63 - 1: "crc32c"}


@dataclass
class Bookie:
    root: Path
    logs: dict[str, Path] = field(default_factory=dict)
    journal: Path | None = None
    index: Path | None = None
    # (ledger id, entry id) -> location, for every entry written to 0.log
    locations: dict[tuple[int, int], int] = field(default_factory=dict)
    flipped_offset: int = 0  # entry offset (location's offset half) of the damaged entry in 2.log


def entries(ledger_id: int, digest: str, count: int, size: int = 700) -> list[bytes]:
    out, length = [], 0
    for entry_id in range(count):
        payload = bytes((entry_id + i + ledger_id) % 251 for i in range(size * (1 + entry_id % 4)))
        length += len(payload)
        raw = bkcodec.encode_entry(
            ledger_id, entry_id, entry_id - 1, length, payload, digest_type=digest, password=PASSWORD
        )
        out.append(raw)
    return out


def make_bookie(root: Path) -> Bookie:
    bookie = Bookie(root)
    current = root / "ledgers" / "current"
    current.mkdir(parents=True)

    # 0.log: interleaved ledgers, rolled.
    per_ledger = {ledger: entries(ledger, digest, 12) for ledger, digest in LEDGERS.items()}
    with bkcodec.EntryLogWriter(current / "0.log", 0) as log:
        for entry_id in range(12):
            for ledger, raws in per_ledger.items():
                bookie.locations[(ledger, entry_id)] = log.add_entry(raws[entry_id])
    bookie.logs["rolled"] = current / "0.log"

    # 1.log: still open.
    log = bkcodec.EntryLogWriter(current / "1.log", 1)
    for raw in entries(5, "crc32c", 4, size=50):
        log.add_entry(raw)
    log.close(roll=False)
    bookie.logs["open"] = current / "1.log"

    # 2.log: a digest failure, then a torn tail.
    with bkcodec.EntryLogWriter(current / "2.log", 2) as log:
        locations = [log.add_entry(raw) for raw in entries(6, "crc32c", 5, size=100)]
    data = bytearray((current / "2.log").read_bytes())
    _, bookie.flipped_offset = bkcodec.split_location(locations[1])
    data[bookie.flipped_offset + 40] ^= 0xFF  # inside the payload (32-byte header, 4-byte digest)
    _, last = bkcodec.split_location(locations[-1])
    del data[last + 20 :]  # tears the last record (and the ledgers map after it)
    (current / "2.log").write_bytes(bytes(data))
    bookie.logs["damaged"] = current / "2.log"

    # 3.log: not an entry log.
    (current / "3.log").write_bytes(b"not a bookkeeper entry log\n" * 50)
    bookie.logs["garbage"] = current / "3.log"

    journal_dir = root / "journal" / "current"
    journal_dir.mkdir(parents=True)
    with bkcodec.JournalWriter(journal_dir / "1.txn", version=6) as journal:
        journal.add_ledger_key(7, bkcodec.master_key(PASSWORD))
        for raw in entries(7, "crc32c", 6, size=30):
            journal.add_entry(raw)
        journal.add_fence(7)
        journal.add_explicit_lac(7, bkcodec.encode_lac(7, 4, digest_type="crc32c"))
        journal.flush()
        mark = journal.position
    bookie.journal = journal_dir / "1.txn"
    bkcodec.write_last_mark(current / "lastMark", 1, mark)
    bkcodec.write_last_id(current / "lastId", 3)

    index = current / bkcodec.index_path(1)
    index.parent.mkdir(parents=True, exist_ok=True)
    bkcodec.write_index_file(
        index,
        {entry_id: bookie.locations[(1, entry_id)] for entry_id in range(12)},
        master_key=bkcodec.master_key(PASSWORD),
        fenced=True,
    )
    bookie.index = index
    return bookie
