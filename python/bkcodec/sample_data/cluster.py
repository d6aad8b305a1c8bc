"""A small simulated BookKeeper cluster, written with bkcodec's own writers.

`make_cluster(path)` lays out five bookies (InterleavedLedgerStorage, as `bookie.py`
lays out one) and a dump of the ledgers' metadata, with replication faults planted at
known entries, for tests and the demo of a cluster audit:

    <path>/bookie-<n>/journal/current/VERSION        cookie: bookie-<n>.cluster.test:3181
    <path>/bookie-<n>/journal/current/<hex id>.txn   the last flushed records, the
                                                     lastMark, then the unflushed ones
    <path>/bookie-<n>/ledgers/current/VERSION        the same cookie
    <path>/bookie-<n>/ledgers/current/0.log          a rolled entry log (ledgers map)
    <path>/bookie-<n>/ledgers/current/1.log          the current, unrolled entry log
    <path>/bookie-<n>/ledgers/current/lastId, lastMark
    <path>/bookie-<n>/ledgers/current/<x>/<y>/<id>.idx  an index file per ledger of scope 0
    <path>/metadata/ledgers/...                      the ledgers' metadata znodes (format 3)
    <path>/metadata/ledgers/<uuid>                   the scoped ledger's znode (BP-35 id)
    <path>/cluster-manifest.json                     what was written, the faults, and
                                                     what an audit must find

Each bookie stores the entries BookKeeper's round-robin schedule places on it (entry e
of a segment with ensemble size E and write quorum Qw lives at ensemble positions
(e + w) mod E, w < Qw), except where a fault is planted: a missing copy, a lost entry,
a stale copy left on a replaced bookie, a corrupt copy, a divergent copy, an entry
below its ack quorum, an open ledger's unconfirmed last entry, a ledger with no
metadata, and one copy repackaged with another LAC (no finding). bookie-5 is written
but left out of the audit inputs, so entries it should hold are `unknown`.

`SampleCluster.expected_findings` lists, as runs of consecutive entries, every status
an audit of bookie-1..4 against the metadata must report (see `_STATUS_RULES`).

The cluster step of the sample: after the single bookie of `bookie.py`, a demo builds
this cluster, audits bookie-1..4 against `metadata/` and compares what it finds with
`cluster-manifest.json`'s `expected_findings`.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import (
    Cookie,
    EntryLogWriter,
    JournalWriter,
    LedgerId,
    LedgerMetadata,
    encode_entry,
    encode_ledger_metadata,
    ledger_znode_path,
    master_key,
    write_index_file,
    write_last_id,
    write_last_mark,
)

__all__ = [
    "CLUSTER_MANIFEST_NAME",
    "ClusterBookie",
    "ClusterLedger",
    "ExpectedFinding",
    "PlantedFault",
    "SampleCluster",
    "bookie_id",
    "make_cluster",
    "write_set",
]

CLUSTER_MANIFEST_NAME = "cluster-manifest.json"
BOOKIES = 5
LEFT_OUT = ("bookie-5",)
JOURNAL_ID_BASE = 1_700_000_000_000  # millisecond timestamps, as bookies name journals
ROLLED_LOG_ID = 0
OPEN_LOG_ID = 1
JOURNAL_FLUSHED_TAIL = 4  # flushed records a journal still holds before its lastMark
SCOPE = 0x5EED

_STATUS_RULES = """\
expected entries: closed ledger 0..last_entry_id; open ledger 0..max(highest LAC among
verified copies, first entry of the last ensemble - 1). Only the audit's input bookies
(all but bookie-5) are looked at. A bookie counts once per entry.
divergent: good copies with >= 2 different payloads. corrupt_copy: >= 1 bad and >= 1
good copy. k = write-set bookies holding a good copy, m = write-set bookies not among
the inputs: k >= Qw fine; elif m > 0 unknown; elif k >= Qa under_replicated; elif a good
copy exists anywhere below_ack_quorum; else lost. misplaced: a copy outside the write
set. unconfirmed: copies past the last expected entry. orphan: copies of a ledger with
no metadata. Copies differing only in LAC produce nothing.
bookies: under_replicated/below_ack_quorum/lost the write-set bookies lacking a good
copy; unknown the left-out write-set bookies; misplaced/corrupt_copy the bookies holding
those copies; divergent/orphan/unconfirmed the bookies holding copies.
A run is consecutive entries with one status and one bookie list."""


def bookie_id(n: int) -> str:
    return f"bookie-{n}.cluster.test:3181"


def write_set(first_entry_ensembles: list[tuple[int, list[str]]], entry_id: int, write_quorum: int) -> list[str]:
    """The bookies that store `entry_id` (RoundRobinDistributionSchedule, 64-bit)."""
    _, ensemble = max((x for x in first_entry_ensembles if x[0] <= entry_id), key=lambda x: x[0])
    size = len(ensemble)
    return [ensemble[(entry_id + w) % size] for w in range(write_quorum)]


@dataclass
class ClusterBookie:
    name: str  # "bookie-1"
    bookie_id: str
    dir: Path
    in_audit: bool
    journal_id: int
    # Relative to `dir` -> kind and what it holds ("scope/ledger" -> entry ids).
    files: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ClusterLedger:
    scope_id: int
    ledger_id: int
    name: str
    digest_type: str
    password: str
    ensemble_size: int
    write_quorum: int
    ack_quorum: int
    # The placement the ledger was written with (for an orphan: never in metadata).
    ensembles: list[tuple[int, list[str]]]
    state: str | None  # None: no metadata
    last_entry_id: int | None
    entries: int  # written by the client: 0..entries-1
    length: int
    has_metadata: bool
    metadata_path: str | None  # relative to the root

    @property
    def qualified_name(self) -> str:
        return LedgerId(self.scope_id, self.ledger_id).qualified_name


@dataclass
class PlantedFault:
    scope_id: int
    ledger_id: int
    first_entry: int
    last_entry: int
    kind: str
    bookies: list[str]
    description: str


@dataclass
class ExpectedFinding:
    scope_id: int
    ledger_id: int
    first_entry: int
    last_entry: int
    status: str
    bookies: list[str]

    def sort_key(self) -> tuple[int, int, int, str]:
        return (self.scope_id, self.ledger_id, self.first_entry, self.status)


@dataclass
class SampleCluster:
    root: Path
    bookies: list[ClusterBookie]
    metadata_dir: Path
    left_out: list[str]  # bookie ids left out of the audit inputs
    ledgers: list[ClusterLedger]
    expected_findings: list[ExpectedFinding]
    faults: list[PlantedFault] = field(default_factory=list)
    seed: int = 11
    entries_scale: int = 1

    def bookie(self, name_or_id: str) -> ClusterBookie:
        return next(b for b in self.bookies if name_or_id in (b.name, b.bookie_id))

    def ledger(self, ledger_id: int, scope_id: int = 0) -> ClusterLedger:
        return next(x for x in self.ledgers if (x.scope_id, x.ledger_id) == (scope_id, ledger_id))

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "seed": self.seed,
            "entries_scale": self.entries_scale,
            "bookies": [asdict(b) | {"dir": str(b.dir)} for b in self.bookies],
            "metadata_dir": str(self.metadata_dir),
            "left_out": list(self.left_out),
            "ledgers": [
                asdict(x) | {"ensembles": [[f, list(e)] for f, e in x.ensembles], "qualified_name": x.qualified_name}
                for x in self.ledgers
            ],
            "faults": [asdict(f) for f in self.faults],
            "status_rules": _STATUS_RULES,
            "expected_findings": [asdict(f) for f in self.expected_findings],
        }


@dataclass
class _Copy:
    data: bytes
    payload: bytes
    lac: int
    good: bool


_Key = tuple[int, int, int]  # scope, ledger, entry


def make_cluster(path: str | os.PathLike[str], *, seed: int = 11, entries_scale: int = 1) -> SampleCluster:
    """Writes the simulated cluster into `path` (created; must be empty or absent).

    `entries_scale` multiplies every ledger's entry count (faults stay where they are;
    ledger 3's ensemble change stays at the middle). The description is also saved as
    `<path>/cluster-manifest.json`.
    """
    if entries_scale < 1:
        raise ValueError("entries_scale must be at least 1")
    root = Path(path)
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    s = entries_scale
    b = {n: bookie_id(n) for n in range(1, BOOKIES + 1)}

    def ledger(
        ledger_id: int, name: str, entries: int, e: int, qw: int, qa: int, ensembles: list[tuple[int, list[int]]],
        *, state: str | None = "CLOSED", digest: str = "crc32c", password: str = "", scope: int = 0,
    ) -> ClusterLedger:
        return ClusterLedger(
            scope, ledger_id, name, digest, password, e, qw, qa,
            [(f, [b[n] for n in ens]) for f, ens in ensembles],
            state, None if state is None else (entries - 1 if state == "CLOSED" else -1),
            entries, 0, state is not None, None,
        )

    ledgers = [
        ledger(1, "healthy", 20 * s, 3, 3, 2, [(0, [1, 2, 3])]),
        ledger(2, "missing copy", 20 * s, 3, 3, 2, [(0, [1, 2, 3])]),
        ledger(3, "striped, ensemble change", 20 * s, 4, 3, 2, [(0, [1, 2, 3, 4]), (10 * s, [1, 2, 3, 5])]),
        ledger(4, "lost entry", 15 * s, 3, 2, 2, [(0, [1, 2, 3])]),
        ledger(5, "corrupt copy", 15 * s, 3, 3, 2, [(0, [1, 2, 3])], digest="hmac", password="secret"),
        ledger(6, "divergent", 15 * s, 3, 3, 2, [(0, [1, 2, 3])]),
        ledger(7, "open", 15 * s, 3, 3, 2, [(0, [1, 2, 3])], state="OPEN"),
        ledger(8, "orphan", 10 * s, 2, 2, 2, [(0, [1, 2])], state=None),
        ledger(9, "scoped (BP-35)", 12 * s, 3, 2, 2, [(0, [1, 2, 3])], scope=SCOPE),
        ledger(10, "below ack quorum", 10 * s, 3, 3, 2, [(0, [1, 2, 3])]),
    ]
    by_id = {(x.scope_id, x.ledger_id): x for x in ledgers}

    # The client's entries: LAC e-1, running length, random payloads.
    canonical: dict[_Key, _Copy] = {}
    for x in ledgers:
        for e in range(x.entries):
            payload = rng.randbytes(rng.randint(50, 1500))
            x.length += len(payload)
            data = _encode(x, e, e - 1, x.length, payload)
            canonical[(x.scope_id, x.ledger_id, e)] = _Copy(data, payload, e - 1, True)

    # Placement: bookie id -> key -> copy.
    holdings: dict[str, dict[_Key, _Copy]] = {bid: {} for bid in b.values()}
    for x in ledgers:
        for e in range(x.entries):
            for bid in write_set(x.ensembles, e, x.write_quorum):
                holdings[bid][(x.scope_id, x.ledger_id, e)] = canonical[(x.scope_id, x.ledger_id, e)]

    faults: list[PlantedFault] = []

    def fault(x: ClusterLedger, first: int, last: int, kind: str, bookies: list[int], text: str) -> None:
        faults.append(PlantedFault(x.scope_id, x.ledger_id, first, last, kind, sorted(b[n] for n in bookies), text))

    # 1: entry 5 on b2 repackaged with another LAC (same payload, valid digest).
    x, e = by_id[(0, 1)], 5
    c = canonical[(0, 1, e)]
    repacked_lac = e - 3
    length = _running_length(canonical, x, e)
    holdings[b[2]][(0, 1, e)] = _Copy(_encode(x, e, repacked_lac, length, c.payload), c.payload, repacked_lac, True)
    fault(x, e, e, "other_lac", [2], f"entry {e} on bookie-2 carries LAC {repacked_lac} (the others {e - 1}), "
          "same payload and a valid digest, as re-replication repackages an entry: no finding")
    # 2: entries 7..8 absent from b3.
    x = by_id[(0, 2)]
    for e in (7, 8):
        del holdings[b[3]][(0, 2, e)]
    fault(x, 7, 8, "missing_copy", [3], "entries 7..8 absent from bookie-3")
    # 3: stale copies of the first entries of the second segment left on b4.
    x = by_id[(0, 3)]
    change = x.ensembles[1][0]
    for e in range(change, change + 3):
        holdings[b[4]][(0, 3, e)] = canonical[(0, 3, e)]
    fault(x, change, change + 2, "stale_copy", [4],
          f"bookie-4 keeps copies of entries {change}..{change + 2}, written before bookie-5 replaced it")
    fault(x, change, x.entries - 1, "left_out_bookie", [5],
          f"bookie-5 (segment from {change}) is left out of the audit inputs")
    # 4: entry 3 on no bookie.
    x = by_id[(0, 4)]
    for bid in b.values():
        holdings[bid].pop((0, 4, 3), None)
    fault(x, 3, 3, "lost_entry", [n for n in (1, 2)], "entry 3 is on no bookie")
    # 5: entry 4 on b2 with one payload byte flipped after encoding.
    x = by_id[(0, 5)]
    c = canonical[(0, 5, 4)]
    flip_at = len(c.data) - len(c.payload) + len(c.payload) // 2
    damaged = bytearray(c.data)
    damaged[flip_at] ^= 0x10
    holdings[b[2]][(0, 5, 4)] = _Copy(bytes(damaged), c.payload, c.lac, False)
    fault(x, 4, 4, "corrupt_copy", [2], f"entry 4 on bookie-2 has payload byte {len(c.payload) // 2} flipped "
          "after encoding (HMAC digest fails)")
    # 6: entry 6 on b2 with another payload of the same size, validly encoded.
    x, e = by_id[(0, 6)], 6
    c = canonical[(0, 6, e)]
    other = bytes(v ^ 0x5A for v in c.payload)
    holdings[b[2]][(0, 6, e)] = _Copy(_encode(x, e, e - 1, _running_length(canonical, x, e), other), other, e - 1, True)
    fault(x, e, e, "divergent_copy", [2], f"entry {e} on bookie-2 has another payload (same size) with a valid digest")
    # 7: the open ledger: its last entries only in journals.
    x = by_id[(0, 7)]
    unflushed = {(0, 7, e) for e in range(x.entries - 3, x.entries)}
    fault(x, x.entries - 3, x.entries - 1, "unflushed", [1, 2, 3],
          f"entries {x.entries - 3}..{x.entries - 1} only in the journals (after lastMark)")
    fault(x, x.entries - 1, x.entries - 1, "unconfirmed", [1, 2, 3],
          f"OPEN, last_entry_id -1; the highest LAC is {x.entries - 2}, so entry {x.entries - 1} is unconfirmed")
    # 8: orphan.
    x = by_id[(0, 8)]
    fault(x, 0, x.entries - 1, "no_metadata", [1, 2], "copies on bookie-1 and bookie-2, no metadata")
    # 10: entry 2 only on b1.
    x = by_id[(0, 10)]
    for n in (2, 3):
        del holdings[b[n]][(0, 10, 2)]
    fault(x, 2, 2, "below_ack_quorum", [2, 3], "entry 2 only on bookie-1")

    # The order bookies receive writes: rounds of one entry per ledger; the open
    # ledger's unflushed entries come last.
    order = [
        (x.scope_id, x.ledger_id, e)
        for e in range(max(x.entries for x in ledgers))
        for x in ledgers
        if e < x.entries and (x.scope_id, x.ledger_id, e) not in unflushed
    ] + sorted(unflushed)

    instance_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))  # one per cluster
    bookies: list[ClusterBookie] = []
    for n, bid in b.items():
        name = f"bookie-{n}"
        bookie = ClusterBookie(name, bid, root / name, name not in LEFT_OUT, JOURNAL_ID_BASE + n * 1000)
        mine = holdings[bid]
        flushed = [k for k in order if k in mine and k not in unflushed]
        pending = [k for k in order if k in mine and k in unflushed]
        _write_bookie(bookie, x_by_key=by_id, copies=mine, flushed=flushed, pending=pending,
                      instance_id=instance_id)
        bookies.append(bookie)
    corrupt = holdings[b[2]][(0, 5, 4)]
    tail = bookies[1].files[_journal_rel(bookies[1])]["ledgers"].get("0/5", [])
    assert 4 not in tail and not corrupt.good  # the corrupt copy is only in an entry log

    metadata_dir = root / "metadata"
    for x in ledgers:
        if not x.has_metadata:
            continue
        md = LedgerMetadata(
            x.ensembles,
            ensemble_size=x.ensemble_size,
            write_quorum_size=x.write_quorum,
            ack_quorum_size=x.ack_quorum,
            digest_type=x.digest_type,
            password=x.password.encode(),
            state=x.state or "OPEN",
            last_entry_id=x.last_entry_id if x.last_entry_id is not None else -1,
            length=x.length if x.state == "CLOSED" else 0,
            ctime=JOURNAL_ID_BASE,
        )
        if x.scope_id == 0:
            rel = ledger_znode_path(x.ledger_id).lstrip("/")
        else:
            rel = "ledgers/" + str(LedgerId(x.scope_id, x.ledger_id).to_uuid())
        znode = metadata_dir / rel
        znode.parent.mkdir(parents=True, exist_ok=True)
        znode.write_bytes(encode_ledger_metadata(md, 3))
        x.metadata_path = "metadata/" + rel
    for x in ledgers:
        if x.state == "OPEN":
            x.length = 0

    inputs = {bk.bookie_id for bk in bookies if bk.in_audit}
    findings = expected_findings(ledgers, {bid: h for bid, h in holdings.items() if bid in inputs}, inputs)
    cluster = SampleCluster(root, bookies, metadata_dir, [bk.bookie_id for bk in bookies if not bk.in_audit],
                            ledgers, findings, faults, seed, entries_scale)
    (root / CLUSTER_MANIFEST_NAME).write_text(json.dumps(cluster.to_json(), indent=2) + "\n")
    return cluster


def _encode(x: ClusterLedger, entry_id: int, lac: int, length: int, payload: bytes) -> bytes:
    return encode_entry(x.ledger_id, entry_id, lac, length, payload,
                        digest_type=x.digest_type, password=x.password, scope_id=x.scope_id)


def _running_length(canonical: dict[_Key, _Copy], x: ClusterLedger, entry_id: int) -> int:
    return sum(len(canonical[(x.scope_id, x.ledger_id, e)].payload) for e in range(entry_id + 1))


def _journal_rel(bookie: ClusterBookie) -> str:
    return f"journal/current/{bookie.journal_id:x}.txn"


def _ledger_key(k: _Key) -> str:
    return f"{k[0]}/{k[1]}"


def _write_bookie(bookie: ClusterBookie, *, x_by_key: dict[tuple[int, int], ClusterLedger], copies: dict[_Key, _Copy],
                  flushed: list[_Key], pending: list[_Key], instance_id: str) -> None:
    root = bookie.dir
    jdir, ldir = root / "journal", root / "ledgers"
    (jdir / "current").mkdir(parents=True)
    (ldir / "current").mkdir(parents=True)
    cookie = Cookie(bookie.bookie_id, ["/data/bookkeeper/journal"], ["/data/bookkeeper/ledgers"],
                    instance_id=instance_id).encode()
    for d in (jdir, ldir):
        (d / "current" / "VERSION").write_text(cookie)
        rel = str((d / "current" / "VERSION").relative_to(root))
        bookie.files[rel] = {"kind": "cookie", "bookie_id": bookie.bookie_id}

    def held(keys: list[_Key]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for k in keys:
            out.setdefault(_ledger_key(k), []).append(k[2])
        return out

    # Entry logs: half the flushed copies in the rolled log, the rest in the open one.
    locations: dict[int, dict[int, int]] = {}
    half = (len(flushed) + 1) // 2
    for log_id, chunk, roll in ((ROLLED_LOG_ID, flushed[:half], True), (OPEN_LOG_ID, flushed[half:], False)):
        rel = f"ledgers/current/{log_id:x}.log"
        with EntryLogWriter(root / rel) as w:
            for k in chunk:
                location = w.add_entry(copies[k].data)
                if k[0] == 0:
                    locations.setdefault(k[1], {})[k[2]] = location
            w.close(roll=roll)
        bookie.files[rel] = {"kind": "entry_log", "rolled": roll, "entries": len(chunk), "ledgers": held(chunk)}

    # Journal V6: the last flushed records, lastMark, then what is not yet flushed.
    jrel = _journal_rel(bookie)
    tail = flushed[max(0, len(flushed) - JOURNAL_FLUSHED_TAIL):]
    keyed: set[tuple[int, int]] = set()
    mark: int | None = None
    with JournalWriter(root / jrel, version=6, alignment=512, prealloc_size=16 * 1024) as j:
        for group in (tail, pending):
            for k in group:
                x = x_by_key[(k[0], k[1])]
                if (k[0], k[1]) not in keyed:
                    j.add_ledger_key(k[1], master_key(x.password))
                    keyed.add((k[0], k[1]))
                j.add_entry(copies[k].data)
            j.flush()
            if group is tail:
                mark = j.position
        j.close()
    assert mark is not None
    bookie.files[jrel] = {
        "kind": "journal", "version": 6, "entries": len(tail) + len(pending), "last_mark": mark,
        "ledgers": held(tail + pending), "flushed": held(tail), "unflushed": held(pending),
    }
    write_last_mark(ldir / "current" / "lastMark", bookie.journal_id, mark)
    bookie.files["ledgers/current/lastMark"] = {"kind": "last_mark", "journal_id": bookie.journal_id, "offset": mark}
    write_last_id(ldir / "current" / "lastId", OPEN_LOG_ID)
    bookie.files["ledgers/current/lastId"] = {"kind": "last_id", "log_id": OPEN_LOG_ID}

    # Index files for the ledgers of scope 0 it has flushed entries of.
    for ledger_id, locs in sorted(locations.items()):
        x = x_by_key[(0, ledger_id)]
        rel = "ledgers/current/" + LedgerId(0, ledger_id).index_path()
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        write_index_file(root / rel, locs, master_key=master_key(x.password))
        bookie.files[rel] = {"kind": "index", "ledger_id": ledger_id, "entries": sorted(locs)}


def expected_findings(ledgers: list[ClusterLedger], holdings: dict[str, dict[_Key, _Copy]],
                      inputs: set[str]) -> list[ExpectedFinding]:
    """Applies the status rules to the copies on the input bookies."""
    per_entry: dict[tuple[int, int], dict[int, dict[str, _Copy]]] = {}
    for bid, copies in holdings.items():
        for (scope, lid, e), c in copies.items():
            per_entry.setdefault((scope, lid), {}).setdefault(e, {})[bid] = c
    out: list[ExpectedFinding] = []
    for x in ledgers:
        entries = per_entry.get((x.scope_id, x.ledger_id), {})
        marks: dict[int, list[tuple[str, tuple[str, ...]]]] = {}

        def mark(e: int, status: str, bookies: set[str] | list[str]) -> None:
            marks.setdefault(e, []).append((status, tuple(sorted(bookies))))

        if not x.has_metadata:
            for e, held in entries.items():
                mark(e, "orphan", set(held))
        else:
            if x.state == "CLOSED":
                assert x.last_entry_id is not None
                last = x.last_entry_id
            else:
                lacs = [c.lac for held in entries.values() for c in held.values() if c.good]
                last = max(max(lacs, default=-1), x.ensembles[-1][0] - 1)
            for e in range(last + 1):
                held = entries.get(e, {})
                ws = write_set(x.ensembles, e, x.write_quorum)
                good = {bid for bid, c in held.items() if c.good}
                bad = {bid for bid, c in held.items() if not c.good}
                if len({held[bid].payload for bid in good}) >= 2:
                    mark(e, "divergent", set(held))
                if bad and good:
                    mark(e, "corrupt_copy", bad)
                k = [bid for bid in ws if bid in good]
                missing = [bid for bid in ws if bid not in inputs]
                if len(k) >= x.write_quorum:
                    pass
                elif missing:
                    mark(e, "unknown", missing)
                elif len(k) >= x.ack_quorum:
                    mark(e, "under_replicated", [bid for bid in ws if bid not in good])
                elif good:
                    mark(e, "below_ack_quorum", [bid for bid in ws if bid not in good])
                else:
                    mark(e, "lost", [bid for bid in ws if bid not in good])
                outside = set(held) - set(ws)
                if outside:
                    mark(e, "misplaced", outside)
            for e, held in entries.items():
                if e > last:
                    mark(e, "unconfirmed", set(held))
        runs: dict[tuple[str, tuple[str, ...]], list[list[int]]] = {}
        for e in sorted(marks):
            for status, bookies in marks[e]:
                spans = runs.setdefault((status, bookies), [])
                if spans and spans[-1][1] == e - 1:
                    spans[-1][1] = e
                else:
                    spans.append([e, e])
        for (status, bookies), spans in runs.items():
            for first, last_e in spans:
                out.append(ExpectedFinding(x.scope_id, x.ledger_id, first, last_e, status, list(bookies)))
    out.sort(key=ExpectedFinding.sort_key)
    return out
