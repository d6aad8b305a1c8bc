"""A seeded damage campaign against the entry-log and journal readers.

Originals are golden files (when the corpus is there) and files written here: entry
logs of both layouts, rolled and open, journals V4 to V6, V1 and V2 entries of every
digest type (CRC32, CRC32C, DUMMY, HMAC with and without its password given), several
ledgers, sizes that make shifted views (V2 records of 10 + 256·S bytes). Each is
damaged (bit flips, byte runs, zeroed 512 B and 4 KiB pages, 0xF0 runs, truncation at
a record boundary ±8, duplicated and deleted 4 KiB blocks, size fields set to 0, ±1,
huge or negative, header and ledgers-map damage, two of these at once) and read in a
worker process with a time limit, whole and in tiled byte ranges, with the digest
types inferred and told, raising and flagging, and its ledgers map asked for. The
outcome is checked against the undamaged original:

- every record whose bytes (size field included) are untouched comes back at its
  offset: an entry verified with its payload (HMAC without the password: framed,
  `digest_ok` null; DUMMY: verified by its ids, or under inference unchecked when
  nothing is left to tell its ledger's type), a journal meta record as itself;
- no damaged record comes back verified (a DUMMY entry proves only its ids, so one
  damaged elsewhere may), and every damaged record is covered by a flagged row (or,
  when damage leaves no way to tell its digest type, reported unchecked: counted);
- no flagged row where nothing was damaged;
- tiled ranges give exactly the rows of the whole-file read;
- with `on_error="raise"`, the rows before the first flagged one, then its typed
  error at its offset, naming the file;
- `ledgers_map()` never gives `source="map"` with ledgers other than the original's;
- the worker neither crashes nor hangs, and its peak RSS stays bounded.

`python tests/damage_campaign.py --files 3000 --seed 1` runs it standalone and prints
the counts; the test suite runs a few hundred files (`test_damage_campaign.py`).
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import select
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(os.environ.get("BKCODEC_GOLDEN", REPO.parent / "shared" / "golden"))

PASSWORD = b"secret"
OTHER_PASSWORD = b"not-given"  # HMAC ledgers written with this are read without their password
DIGESTS = ["crc32c", "crc32", "hmac", "hmac_nopw", "dummy"]
HEADER = {"crc32c": 4, "crc32": 8, "hmac": 20, "hmac_nopw": 20, "dummy": 0}

# A read that takes longer than this is a hang (files are at most a few MiB).
READ_TIMEOUT = float(os.environ.get("BKCODEC_CAMPAIGN_TIMEOUT", "120"))
# Peak RSS of a worker, over what it holds after importing pyarrow and bkcodec.
RSS_BOUND_MB = 400
# What the reads of one small file may add to the peak.
RSS_JUMP_MB = 150

GOLDEN_FILES = [
    ("entry_log", "entrylogs/many_ledgers/current/10.log"),
    ("entry_log", "entrylogs/multi_ledger/current/0.log"),
    ("entry_log", "entrylogs/open_log/current/2a.log"),
    ("entry_log", "entrylogs/torn_mid_entry_body/current/0.log"),
    ("entry_log", "direct_entrylogs/direct_open/current/0.log"),
    ("entry_log", "direct_entrylogs/direct_rolled/current/0.log"),
    ("journal", "journals/v5/journal/current/18bcfe56be8.txn"),
    ("journal", "journals/v6/journal/current/18bcfe56800.txn"),
]

# Row tuple fields, as the worker returns them.
OFF, SIZE, TYPE, LID, EID, DT, OK, EK, ERR, PAY, LAC, LENGTH = range(12)


# ---------------------------------------------------------------------------
# The worker: reads files as it is told and answers with rows.


def _rows(table, kind):
    import pyarrow as pa

    n = table.num_rows
    col = lambda name: table.column(name).to_pylist() if name in table.column_names else [None] * n  # noqa: E731
    if kind == "journal":
        types = col("record_type")
    else:
        types = ["entry" if v is not None else "damage" for v in col("format_version")]
    if "payload" in table.column_names:
        payloads = [None if p is None else zlib.crc32(p) for p in table.column("payload").cast(pa.binary()).to_pylist()]
    else:
        payloads = [None] * n
    return list(zip(col("offset"), col("record_size"), types, col("ledger_id"), col("entry_id"),
                    col("digest_type"), col("digest_ok"), col("error_kind"), col("error"), payloads,
                    col("last_add_confirmed"), col("length")))


def _open(kind, path, kw):
    import bkcodec

    return (bkcodec.read_entry_log if kind == "entry_log" else bkcodec.read_journal)(path, **kw)


def _error(e):
    return ("error", type(e).__name__, str(e), getattr(e, "offset", None), getattr(e, "path", None))


def _one_read(kind, path, what):
    import bkcodec

    op = what[0]
    try:
        if op == "rows":
            return ("ok", _rows(_open(kind, path, what[1]).read_all(), kind))
        if op == "tiles":
            out = []
            bounds = what[2]
            for s, e in zip(bounds, bounds[1:]):
                out.extend(_rows(_open(kind, path, dict(what[1], start=s, end=e)).read_all(), kind))
            return ("ok", out)
        if op == "raise":
            got = []
            reader = _open(kind, path, dict(what[1], on_error="raise"))
            try:
                for batch in reader:
                    got.extend(_rows_of_batch(batch, kind))
            except bkcodec.BookKeeperFormatError as e:
                return ("raised", got, type(e).__name__, e.offset, e.path, str(e))
            return ("ok", got)
        if op == "map":
            m = bkcodec.ledgers_map(path, password=PASSWORD)
            return ("ok", (m.source, dict(m.ledgers), m.fallback_reason))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which judges it
        return _error(e)
    except BaseException as e:  # a Rust panic (pyo3's PanicException) is no Exception
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return ("panic", type(e).__name__, str(e))
    raise ValueError(op)


def _rows_of_batch(batch, kind):
    import pyarrow as pa

    return [(r[0], r[1], r[2]) for r in _rows(pa.Table.from_batches([batch]), kind)]


def peak_rss_kb():
    """This process's peak resident memory in KiB (VmHWM). Not `ru_maxrss`: Linux
    carries that across exec, so a process started from a large parent (a test
    run with Spark) would report the parent's size."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def worker_main():
    import bkcodec  # noqa: F401 - imported before the baseline RSS is taken
    import pyarrow  # noqa: F401

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    base = peak_rss_kb()
    _send(stdout, ("ready", base))
    while True:
        job = _recv(stdin)
        if job is None:
            return
        kind, path, reads = job
        answers = [_one_read(kind, path, w) for w in reads]
        _send(stdout, ("done", answers, peak_rss_kb()))


def _send(f, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack(">Q", len(data)) + data)
    f.flush()


def _recv(f):
    head = f.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack(">Q", head)
    return pickle.loads(f.read(n))


class Worker:
    """A worker process; `ask` returns its answer, or ("hang", ...) / ("crash", rc)."""

    def __init__(self):
        self.proc = None
        self.base_rss_kb = 0
        self.peak_rss_kb = 0
        self.crashes = 0

    def _start(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        ready = self._read(60)
        if not ready or ready[0] != "ready":
            raise RuntimeError(f"campaign worker did not start: {ready!r}")
        self.base_rss_kb = max(self.base_rss_kb, ready[1])

    def _read(self, timeout):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        need = 8
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                return ("hang",)
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, max(need - len(buf), 65536) if len(buf) >= 8 else need - len(buf))
            if not chunk:
                return ("crash", self.proc.wait())
            buf += chunk
            if len(buf) >= 8 and need == 8:
                need = 8 + struct.unpack(">Q", buf[:8])[0]
        return pickle.loads(buf[8:need])

    def ask(self, kind, path, reads, timeout=READ_TIMEOUT):
        if self.proc is None:
            self._start()
        try:
            _send(self.proc.stdin, (kind, str(path), reads))
        except BrokenPipeError:
            pass
        answer = self._read(timeout)
        if answer[0] == "done":
            self.peak_rss_kb = max(self.peak_rss_kb, answer[2])
            return answer
        # A hang or a crash: this worker is done with.
        if answer[0] == "hang":
            self.proc.kill()
            self.proc.wait()
        self.crashes += 1
        self.proc = None
        return answer

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc = None


# ---------------------------------------------------------------------------
# Originals.


@dataclass
class Record:
    offset: int
    span: int  # size field included
    rtype: str  # entry, ledger_key, fence, explicit_lac
    ledger_id: int
    entry_id: int | None
    digest: str | None  # for entries: one of DIGESTS
    version: int | None  # entry format 1 or 2
    payload_crc: int | None


@dataclass
class Original:
    name: str
    kind: str  # entry_log or journal
    file_name: str
    data: bytes
    records: list[Record]
    data_start: int
    map_start: int | None = None  # a rolled entry log's ledgers map
    layout: str | None = None
    told: dict = field(default_factory=dict)  # digest_type= naming every ledger
    map_ledgers: dict | None = None  # the original's ledgers map, when it has one
    bad_spans: list = field(default_factory=list)  # damage the original has already
    data_end: int = 0  # where the last record ends
    last_mark: int | None = None  # a journal's lastMark offset
    pads: list = field(default_factory=list)  # a journal's padding records, (offset, span)

    def record_bytes(self, r):
        return self.data[r.offset : r.offset + r.span]


def _ledgers(rng, n):
    out = []
    used = set()
    for _ in range(n):
        while True:
            lid = rng.choice([rng.randrange(1, 64), rng.randrange(1 << 40), (1 << 63) - 1 - rng.randrange(8)])
            if lid not in used:
                used.add(lid)
                break
        digest = rng.choice(DIGESTS)
        scope = rng.choice([0, 0, rng.randrange(1, 9)])
        if os.environ.get("CAMPAIGN_NO_NOPW") and digest == "hmac_nopw":
            digest = "hmac"
        out.append({"id": lid, "digest": digest, "scope": scope, "next": 0, "length": 0})
    return out


def _payload(rng, ledger):
    scope = ledger["scope"]
    if scope and rng.random() < 0.3:
        # A V2 record of 10 + 256·S bytes: the bytes 10 into it read as a size of 256·S
        # that frames a record ending exactly at the real end (a shifted view).
        size = 10 + 256 * scope - 41 - HEADER[ledger["digest"]]
        size = max(size, 0)
    else:
        size = rng.choice([0, 1, 7, 40, 100, 300, 1241, 1500, 4093, 5000])
    style = rng.random()
    if style < 0.3:
        return bytes(size)
    if style < 0.4:
        return b"\xf0" * size
    return rng.randbytes(size)


def _entry(rng, ledger):
    import bkcodec

    payload = _payload(rng, ledger)
    eid = ledger["next"]
    ledger["next"] += 1
    ledger["length"] += len(payload)
    digest = ledger["digest"]
    pw = OTHER_PASSWORD if digest == "hmac_nopw" else PASSWORD
    return bkcodec.encode_entry(ledger["id"], eid, eid - 1, ledger["length"], payload,
                                digest_type="hmac" if digest.startswith("hmac") else digest,
                                password=pw, scope_id=ledger["scope"])


def _told(ledgers):
    return {
        l["id"]: ("hmac", OTHER_PASSWORD if l["digest"] == "hmac_nopw" else PASSWORD) if l["digest"].startswith("hmac") else l["digest"]
        for l in ledgers
    }


def generated_entry_log(seed, d):
    import bkcodec

    rng = random.Random(seed)
    layout = rng.choice(["legacy", "direct"])
    ledgers = _ledgers(rng, rng.randrange(1, 6))
    rolled = rng.random() < 0.8
    path = Path(d) / "5.log"
    offsets = []
    w = bkcodec.EntryLogWriter(path, layout=layout, buffer_size=rng.choice([8192, 16384, 1 << 20]), overwrite=True)
    for _ in range(rng.randrange(3, 60)):
        ledger = rng.choice(ledgers)
        offsets.append(bkcodec.split_location(w.add_entry(_entry(rng, ledger)))[1] - 4)
        if layout == "direct" and rng.random() < 0.1:
            w.flush()
    w.close(roll=rolled)
    return _from_file(f"gen-log-{seed}-{layout}{'-rolled' if rolled else ''}", "entry_log", path, offsets,
                      told=_told(ledgers), digests={l["id"]: l["digest"] for l in ledgers})


def generated_journal(seed, d):
    import bkcodec

    rng = random.Random(seed)
    version = rng.choice([4, 5, 6])
    ledgers = _ledgers(rng, rng.randrange(1, 5))
    path = Path(d) / "1a.txn"
    offsets = []
    with bkcodec.JournalWriter(path, version=version, alignment=rng.choice([512, 4096]),
                               prealloc_size=rng.choice([0, 0, 65536]), overwrite=True) as w:
        for _ in range(rng.randrange(3, 60)):
            ledger = rng.choice(ledgers)
            k = rng.random()
            if k < 0.75:
                offsets.append(w.add_entry(_entry(rng, ledger)))
            elif k < 0.85:
                offsets.append(w.add_ledger_key(ledger["id"], bkcodec.master_key(PASSWORD)))
            elif k < 0.9:
                offsets.append(w.add_fence(ledger["id"]))
            elif k < 0.95:
                lac = bkcodec.encode_lac(ledger["id"], max(ledger["next"] - 1, 0), digest_type="crc32c")
                at = w.add_explicit_lac(ledger["id"], lac)
                if at is not None:
                    offsets.append(at)
            else:
                w.flush()
    return _from_file(f"gen-journal-{seed}-v{version}", "journal", path, offsets,
                      told=_told(ledgers), digests={l["id"]: l["digest"] for l in ledgers})


def golden_original(kind, rel):
    path = GOLDEN / rel
    if not path.exists():
        return None
    return _from_file(f"golden:{rel}", kind, path, None, told=None, digests=None)


def _from_file(name, kind, path, offsets, told, digests):
    """The original as the reader reads it intact (which must agree with the writer)."""
    import bkcodec

    data = Path(path).read_bytes()
    kw = {"password": PASSWORD}
    rows = _rows(_open(kind, path, kw).read_all(), kind)
    bad = [r for r in rows if r[ERR] is not None]
    good = [r for r in rows if r[ERR] is None]
    if offsets is not None:
        assert not bad, (name, bad)
        assert [r[OFF] for r in good] == offsets, name
    if told is None:
        # Golden: the types as inference found them (every entry verifies, or is an HMAC
        # entry checked with the password).
        told = {}
        for r in good:
            if r[TYPE] == "entry":
                assert r[OK] is True, (name, r)
                told[r[LID]] = ("hmac", PASSWORD) if r[DT] == "hmac" else r[DT]
        digests = {lid: (t[0] if isinstance(t, tuple) else t) for lid, t in told.items()}
    told_rows = {r[OFF]: r for r in _rows(_open(kind, path, dict(kw, digest_type=told)).read_all(), kind)}
    records = []
    for r in good:
        t = told_rows[r[OFF]]
        assert t[ERR] is None and (t[TYPE] != "entry" or t[OK] is True), (name, t)
        version = None
        if r[TYPE] == "entry":
            version = 2 if data[r[OFF] + 4] & 0x80 else 1
        records.append(Record(r[OFF], 4 + r[SIZE], r[TYPE], r[LID], r[EID],
                              digests.get(r[LID]) if r[TYPE] == "entry" else None, version, t[PAY]))
    o = Original(name, kind, Path(path).name, data, records, 0, told=told,
                 bad_spans=[(r[OFF], r[OFF] + 4 + r[SIZE]) for r in bad])
    if kind == "journal":
        padded = _rows(_open(kind, path, dict(kw, include_padding=True)).read_all(), kind)
        o.pads = [(r[OFF], 4 + r[SIZE]) for r in padded if r[TYPE] == "padding"]
    o.data_end = max([r.offset + r.span for r in records] + [b for _, b in o.bad_spans] + [o.data_start])
    if kind == "entry_log":
        try:
            h = bkcodec.entry_log_header(path)
            o.layout, o.data_start = h.layout, h.data_start
            if h.has_ledgers_map:
                o.map_start = h.ledgers_map_offset
                m = bkcodec.ledgers_map(path)
                o.map_ledgers = dict(m.ledgers) if m.source == "map" else None
        except ValueError:
            o.data_start = 1024
    else:
        o.data_start = bkcodec.journal_header(path).data_start
        o.last_mark = o.data_end
        mark = Path(path).parent.parent.parent / "ledgers" / "current" / "lastMark"
        if mark.exists():
            m = bkcodec.read_last_mark(mark)
            if "%x" % m.journal_id == Path(path).stem:
                o.last_mark = m.offset
    return o


# ---------------------------------------------------------------------------
# Damage.


@dataclass
class Damaged:
    original: Original
    data: bytes
    ops: list[str]
    # (original start, original end, damaged start): where original bytes are now.
    segments: list[tuple[int, int, int]]
    # [a, b) of damaged-file bytes that no longer hold what the segments say, and the
    # seams where segments meet.
    changed: list[tuple[int, int]]
    header_changed: bool = False
    map_changed: bool = False


def _identity(o):
    return Damaged(o, o.data, [], [(0, len(o.data), 0)], [])


def _in_place(dm, at, new, name):
    at = max(0, min(at, len(dm.data)))
    new = new[: len(dm.data) - at]
    if not new:
        return dm
    old = dm.data[at : at + len(new)]
    diff = [i for i in range(len(new)) if new[i] != old[i]]
    data = dm.data[:at] + new + dm.data[at + len(new):]
    changed = dm.changed + ([(at + diff[0], at + diff[-1] + 1)] if diff else [])
    return Damaged(dm.original, data, dm.ops + [name], dm.segments, changed, dm.header_changed, dm.map_changed)


def _restructure(dm, pieces, name):
    """The damaged file rebuilt from `pieces`, spans [a, b) of the current one."""
    data = b"".join(dm.data[a:b] for a, b in pieces)
    segments, changed = [], []
    at = 0
    for a, b in pieces:
        for oa, ob, na in dm.segments:
            lo, hi = max(a, na), min(b, na + ob - oa)
            if lo < hi:
                segments.append((oa + lo - na, oa + hi - na, at + lo - a))
        for ca, cb in dm.changed:
            lo, hi = max(a, ca), min(b, cb)
            if lo < hi or (ca == cb and a <= ca < b):
                changed.append((at + lo - a, at + max(lo, hi) - a))
        at += b - a
        if at < len(data):
            changed.append((at, at))  # a seam
    return Damaged(dm.original, data, dm.ops + [name], segments, changed, dm.header_changed, dm.map_changed)


def _region(dm, rng, o):
    """A position to damage: mostly in the records, sometimes anywhere."""
    end = len(dm.data)
    data_end = o.map_start if o.map_start and o.map_start <= end else end
    if o.kind == "journal" and o.records:
        data_end = min(end, max(r.offset + r.span for r in o.records) + 600)
    if rng.random() < 0.1 or data_end <= o.data_start:
        return rng.randrange(end)
    return rng.randrange(o.data_start, data_end)


def _boundaries(o):
    b = {r.offset for r in o.records} | {r.offset + r.span for r in o.records}
    if o.map_start:
        b.add(o.map_start)
    b.add(len(o.data))
    return sorted(b)


SIZE_VALUES = ["zero", "plus1", "minus1", "huge", "negative"]


def damage_once(dm, rng):
    o = dm.original
    n = len(dm.data)
    if n == 0:
        return dm
    op = rng.choices(
        ["flip", "run", "zero512", "zero4k", "f0run", "truncate", "dup4k", "del4k", "size", "header", "map"],
        weights=[14, 8, 6, 6, 6, 10, 5, 5, 14, 6, 6 if o.map_start else 0],
    )[0]
    if op == "flip":
        out = dm
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            at = _region(out, rng, o)
            out = _in_place(out, at, bytes([out.data[at] ^ (1 << rng.randrange(8))]), f"flip@{at}")
        return out
    if op == "run":
        at = _region(dm, rng, o)
        k = rng.choice([rng.randrange(1, 16), rng.randrange(1, 3000)])
        return _in_place(dm, at, rng.randbytes(k), f"run@{at}+{k}")
    if op in ("zero512", "zero4k"):
        page = 512 if op == "zero512" else 4096
        at = _region(dm, rng, o) // page * page
        return _in_place(dm, at, bytes(page), f"{op}@{at}")
    if op == "f0run":
        at = rng.choice([_region(dm, rng, o), rng.choice([r.offset for r in o.records] or [o.data_start])])
        k = rng.choice([rng.randrange(1, 8), rng.randrange(1, 5000)])
        return _in_place(dm, at, b"\xf0" * k, f"f0@{at}+{k}")
    if op == "truncate":
        # (Boundaries of the original, for a file not restructured yet.)
        cut = rng.choice(_boundaries(o)) + rng.randint(-8, 8)
        cut = max(1, min(cut, n - 1)) if n > 1 else 0
        return _restructure(dm, [(0, cut)], f"truncate@{cut}")
    if op in ("dup4k", "del4k"):
        # (Not the first block: records moved into the header's place are another
        # file, not a damaged one; header damage has its own op.)
        blocks = n // 4096
        if blocks < 2:
            return damage_once(dm, rng)
        b = rng.randrange(1, blocks) * 4096
        if op == "dup4k":
            return _restructure(dm, [(0, b + 4096), (b, n)], f"dup4k@{b}")
        return _restructure(dm, [(0, b), (b + 4096, n)], f"del4k@{b}")
    if op == "size":
        if not o.records:
            return damage_once(dm, rng)
        r = rng.choice(o.records)
        size = r.span - 4
        how = rng.choice(SIZE_VALUES)
        value = {
            "zero": 0,
            "plus1": size + 1,
            "minus1": size - 1,
            "huge": rng.choice([(1 << 31) - 1, n * 2, 1 << 24, rng.randrange(n, 1 << 31)]),
            "negative": rng.choice([-1, -(1 << 31), rng.randrange(-(1 << 31), 0), -252645136]),  # 0xF0F0F0F0
        }[how]
        out = _in_place(dm, r.offset, struct.pack(">i", value), f"size-{how}@{r.offset}")
        return out
    if op == "header":
        fields = [(0, 4), (4, 8)] + ([(8, 16), (16, 20)] if o.kind == "entry_log" else [])
        a, b = rng.choice(fields)
        at = rng.randrange(a, b)
        if rng.random() < 0.7:
            new = bytes([dm.data[at] ^ (1 << rng.randrange(8))])
        else:
            new = rng.randbytes(b - a)
            at = a
        out = _in_place(dm, at, new, f"header@{at}")
        out.header_changed = out.header_changed or out.data[:20] != dm.data[:20]
        return out
    if op == "map":
        start = o.map_start
        if start >= n:
            return damage_once(dm, rng)
        at = rng.randrange(start, n)
        new = bytes([dm.data[at] ^ (1 << rng.randrange(8))]) if rng.random() < 0.7 else rng.randbytes(rng.randrange(1, 40))
        out = _in_place(dm, at, new, f"map@{at}")
        out.map_changed = True
        return out
    raise ValueError(op)


def damage(o, rng):
    dm = damage_once(_identity(o), rng)
    if rng.random() < 0.15:
        dm = damage_once(dm, rng)
    if o.map_start is not None:
        # Any change at or past the map offset, or to the header's map fields.
        map_at = next((na + o.map_start - oa for oa, ob, na in dm.segments if oa <= o.map_start < ob), None)
        tail_moved = map_at != o.map_start or dm.data[o.map_start:] != o.data[o.map_start:]
        dm.map_changed = dm.map_changed or tail_moved or dm.data[8:20] != o.data[8:20]
    dm.header_changed = dm.header_changed or dm.data[:20] != o.data[:20]
    return dm


# ---------------------------------------------------------------------------
# Judging.


@dataclass
class Outcome:
    counts: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)

    def fail(self, what, dm, detail):
        self.counts[f"FAIL {what}"] += 1
        if len(self.failures) < 200:
            self.failures.append((what, dm.original.name, dm.ops, detail))


def _row_end(r):
    return r[OFF] + (r[SIZE] if r[TYPE] == "damage" else 4 + r[SIZE])


def placements(dm):
    """(damaged offset, record, intact) for every record whose start survives."""
    o = dm.original
    out = []
    for rec in o.records:
        for oa, ob, na in dm.segments:
            if oa <= rec.offset < ob:
                n = na + rec.offset - oa
                intact = dm.data[n : n + rec.span] == o.data[rec.offset : rec.offset + rec.span]
                out.append((n, rec, intact))
    return out


def _changed_bytes(dm, n, rec):
    """Positions (within the record) of the placement's bytes that differ from the original."""
    o = dm.original
    got = dm.data[n : n + rec.span]
    want = o.data[rec.offset : rec.offset + rec.span]
    diff = [i for i in range(min(len(got), len(want))) if got[i] != want[i]]
    if len(got) < len(want):
        diff.append(len(got))
    return diff


def _damaged_pads(dm):
    """Spans of the damaged file holding a journal padding record whose bytes
    changed (padding is no row, so no record placement covers it)."""
    o = dm.original
    out = []
    for offset, span in o.pads:
        for oa, ob, na in dm.segments:
            if oa <= offset < ob:
                n = na + offset - oa
                if dm.data[n : n + span] != o.data[offset : offset + span]:
                    out.append((n, n + span))
    return out


def _orphans(dm):
    """Spans of the damaged file holding the tail of a record whose start is gone
    (cut away, or left behind a deleted or duplicated block)."""
    o = dm.original
    out = []
    for oa, ob, na in dm.segments:
        for rec in o.records:
            if rec.offset < oa < rec.offset + rec.span:
                out.append((na, na + min(rec.offset + rec.span, ob) - oa))
    return out


def _inside_damaged_entry(rows, n, places):
    """Whether `n` lies inside an entry returned at a record's own offset, framed by
    its intact size field, whose digest fails (its bytes after a seam are other
    records: a duplicated or deleted block)."""
    starts = {m for m, _, _ in places}
    return any(r[TYPE] == "entry" and r[EK] == "digest_mismatch" and r[OFF] < n < _row_end(r) and r[OFF] in starts for r in rows)


def _unconfirmable(dm, n, rec, places, told=False):
    """Why an intact record that framing alone must confirm (no digest to verify:
    DUMMY, HMAC without its password) has too little after it to be confirmed once
    the walk lost step before it, or None: fewer than two intact records follow it
    before the data ends (the end of the file, a torn record, zeros or 0xF0 bytes
    that run on from the last record's own bytes, which cannot be told from a view
    ending inside them) or before a direct log's padding damaged short of its 4 KiB
    boundary."""
    unverifiable = rec.rtype != "entry" or rec.digest in ("dummy", "hmac_nopw") and not (told and rec.digest == "hmac_nopw")
    if not unverifiable:
        return None
    intact = {m: r for m, r, ok in places if ok}
    data = dm.data
    q, chain = n, 0
    while q in intact and chain < 3:
        q += intact[q].span
        chain += 1
    if chain >= 3:
        return None
    tail = data[q:]
    if not tail:
        return END_OF_DATA
    run = tail[0]
    if run in (0, 0xF0) and q > 0 and data[q - 1] == run:
        return END_OF_DATA
    # Damage follows (a damaged record, or a record cut by the end of the file).
    if any(m == q and not ok for m, r, ok in places):
        return END_OF_DATA
    if _damaged_padding(dm, q):
        return DAMAGED_PADDING
    return None


END_OF_DATA = "intact unverifiable record lost: nothing after it confirms it (the end of the data)"
DAMAGED_PADDING = "intact unverifiable record lost: nothing after it confirms it (the padding after it damaged)"


def _damaged_padding(dm, q):
    """Whether a direct log's padding starts at `q` (0xF0 bytes from the end of a
    record, off a 4 KiB boundary) and was damaged before its boundary: the run stops
    short of it at a changed byte. Such padding cannot end a chain cleanly (a view
    can end where a run of 0xF0 starts just as well), so it confirms nothing."""
    o, data = dm.original, dm.data
    if o.layout != "direct" or q % 4096 == 0 or data[q : q + 1] != b"\xf0":
        return False
    stop = min(len(data), (q // 4096 + 1) * 4096)
    end = q
    while end < stop and data[end] == 0xF0:
        end += 1
    return end < stop and any(a <= end < max(b, a + 1) for a, b in dm.changed)


def _padding_run(dm, n):
    """Whether a run of 0xF0 from `n` reaches exactly a 4 KiB boundary (or the end of
    the file) in a direct log: exactly what padding looks like."""
    o = dm.original
    if o.layout != "direct" or dm.data[n : n + 1] != b"\xf0":
        return False
    end = n
    while end < len(dm.data) and dm.data[end] == 0xF0:
        end += 1
    return n % 4096 != 0 and (end % 4096 == 0 or end == len(dm.data)) and end - n < 4096


def _detectable(rec, diff, told):
    """Whether damage at these positions of a record must be flagged."""
    if rec.rtype != "entry":
        # A meta record's size, meta id and (ledger key, explicit LAC) length are
        # checked; nothing checks its ledger id, key or LAC blob bytes.
        return any(i < 4 or 12 <= i < 24 for i in diff) or diff[-1] >= rec.span
    if rec.digest not in ("dummy", "hmac_nopw") or (told and rec.digest == "hmac_nopw"):
        return True
    # A DUMMY entry proves only its size and ids (which must be ones a writer writes);
    # an HMAC one without its password, only its size.
    ids_end = 4 + (25 if rec.version == 2 else 16) if rec.digest == "dummy" else 4
    return any(i < ids_end for i in diff) or diff[-1] >= rec.span


def _plausible_ids(r):
    """Ids a writer could have written (what a DUMMY entry can be checked for)."""
    return r[EID] is not None and 0 <= r[EID] < 1 << 40 and r[LAC] is not None and -1 <= r[LAC] < r[EID]


def _dummy_verified(r, places):
    """A DUMMY entry verified though its bytes are not an original record's: fine when
    the original record there has the same ids and size (DUMMY proves nothing else);
    counted when its ids are plausible ones (a DUMMY entry whose ids were damaged
    into other plausible ids cannot be told from an intact one); else None."""
    if r[DT] != "dummy":
        return None
    origin = [rec for n, rec, _ in places if n == r[OFF]]
    if origin and (origin[0].ledger_id, origin[0].entry_id, origin[0].span) == (r[LID], r[EID], 4 + r[SIZE]):
        return "damaged DUMMY entry verified by its intact ids"
    if origin and _plausible_ids(r):
        return "damaged DUMMY entry verified (ids damaged into plausible ones)"
    return None


def _tail_gone(dm, n, last_mark_given):
    """Whether the damage left only zeros from `n` to the end of the file (at least a
    whole size field): a journal without its lastMark (or past it: its preallocated
    tail), or an entry log without its ledgers map, ends like that when it is intact."""
    o = dm.original
    # (The zeros may start before `n`: a run of them to the end, as long as a size field.)
    start = len(dm.data.rstrip(b"\0"))
    if n < start or len(dm.data) - min(n, start) < 4:
        return False
    if o.kind == "journal":
        return not last_mark_given or n >= o.last_mark
    return o.map_ledgers is None or dm.map_changed


def _header_still_valid(dm):
    o = dm.original
    magic, version = dm.data[:4], struct.unpack(">i", dm.data[4:8])[0]
    if magic != o.data[:4]:
        return False
    return 1 <= version <= 6 if o.kind == "journal" else version in (0, 1)


def judge(dm, answers, out: Outcome, cuts, last_mark_given=False):
    o = dm.original
    data = dm.data
    whole, tiles, told, raised, lmap, unverified = answers
    for label, a in (("whole", whole), ("tiles", tiles), ("told", told), ("verify=False", unverified), ("raise", raised), ("map", lmap)):
        if a is not None and a[0] == "panic":
            out.fail("panic", dm, (label, a))
            return
    for label, a in (("whole", whole), ("tiles", tiles), ("told", told), ("verify=False", unverified)):
        if a is not None and a[0] != "ok":
            out.fail("raised in flag mode", dm, (label, a))
            return
    rows = whole[1]
    by_offset = {}
    for r in rows:
        by_offset.setdefault(r[OFF], []).append(r)
    # Rows in order, inside the file.
    offs = [r[OFF] for r in rows]
    if offs != sorted(offs) or any(r[OFF] > len(data) for r in rows):
        out.fail("rows out of order or outside the file", dm, offs[:50])

    flagged = [r for r in rows if r[ERR] is not None]
    places = placements(dm)
    record_bytes = {}
    for rec in o.records:
        record_bytes.setdefault(o.record_bytes(rec), rec)

    # Intact records come back.
    unconfirmed = []
    for n, rec, intact in places:
        if not intact:
            continue
        out.counts["intact records"] += 1
        got = [r for r in by_offset.get(n, []) if r[TYPE] == rec.rtype]
        if not got and _inside_damaged_entry(rows, n, places):
            out.counts["intact record lost inside a damaged entry that frames whole (a seam inside it)"] += 1
            continue
        why = None if got else _unconfirmable(dm, n, rec, places)
        if why:
            out.counts[why] += 1
            unconfirmed.append((n, n + rec.span))
            continue
        if not got:
            out.fail("intact record lost", dm, (n, rec, by_offset.get(n)))
            continue
        r = got[0]
        if rec.rtype != "entry":
            if r[ERR] is not None or r[LID] != rec.ledger_id:
                out.fail("intact meta record damaged", dm, (n, rec, r))
            continue
        if (r[LID], r[EID], r[ERR]) != (rec.ledger_id, rec.entry_id, None) or 4 + r[SIZE] != rec.span:
            out.fail("intact entry flagged", dm, (n, rec, r))
            continue
        if rec.digest == "hmac_nopw":
            ok = r[OK] is None
        elif rec.digest == "dummy" and r[OK] is None and r[DT] is None:
            out.counts["intact DUMMY unchecked (type unknown)"] += 1
            ok = True
        else:
            ok = r[OK] is True and (r[PAY] is None or r[PAY] == rec.payload_crc)
        if not ok:
            out.fail("intact entry not verified", dm, (n, rec, r))

    # Nothing damaged is verified.
    for r in rows:
        if r[ERR] is None and r[OK] is True:
            span = data[r[OFF] : r[OFF] + 4 + r[SIZE]]
            if span in record_bytes:
                continue
            why = _dummy_verified(r, places)
            if why:
                out.counts[why] += 1
                continue
            out.fail("damaged record verified", dm, (r, [rec for n, rec, _ in places if n == r[OFF]]))

    # Damage is flagged.
    for n, rec, intact in places:
        if intact or n >= len(data):
            continue
        out.counts["damaged records"] += 1
        diff = _changed_bytes(dm, n, rec)
        cover = [r for r in flagged if r[OFF] <= n < max(_row_end(r), r[OFF] + 1)]
        if cover:
            continue
        at = [r for r in by_offset.get(n, []) if r[TYPE] == "entry"]
        if at and at[0][ERR] is None and at[0][OK] is None and at[0][DT] is None:
            out.counts["damaged entry reported unchecked (type unknown)"] += 1
            continue
        if at and at[0][ERR] is None and at[0][OK] is None and at[0][DT] == "hmac" and rec.digest == "hmac":
            # No entry of its ledger verifies with the password given (here, the only
            # one or all of them damaged): another password, for all the reader knows.
            out.counts["damaged HMAC entry unchecked (no entry of its ledger verifies)"] += 1
            continue
        if at and at[0][ERR] is None and at[0][OK] is True and _dummy_verified(at[0], places):
            continue  # counted above
        if not _detectable(rec, diff, False):
            out.counts["damage a DUMMY or password-less HMAC entry cannot show"] += 1
            continue
        last = not any(ok and m >= n + rec.span for m, _, ok in places)
        if rec.digest in ("dummy", "hmac_nopw") and last and all(i < 4 for i in diff):
            out.counts["size field of an unverifiable last record (padding or zeros after it)"] += 1
            continue
        # (Where the reader framed it: a size field one too large ends it a byte on.)
        framed_end = max([n + rec.span] + [_row_end(r) for r in at])
        if rec.digest in ("dummy", "hmac_nopw") and any(r[OFF] <= framed_end and n <= _row_end(r) for r in flagged):
            # Such an entry is flagged by what its damage does around it (a size field
            # one short leaves a byte behind it, flagged there; one too large takes the
            # next record's first byte, and the rest of it is flagged).
            out.counts["damaged DUMMY or password-less HMAC entry flagged next to it"] += 1
            continue
        inside = [r for r in rows if r[TYPE] != "damage" and r[ERR] is None and r[OFF] < n < _row_end(r)
                   and any(m == r[OFF] for m, _, _ in places)]
        if inside:
            # A copy of a record placed inside another one (a duplicated block),
            # damaged where the one around it cannot show it (DUMMY, or no password).
            out.counts["damaged record inside a record returned whole"] += 1
            continue
        if any(r[TYPE] == "unknown_meta" for r in by_offset.get(n, [])) and all(12 <= i < 20 for i in diff):
            # The entry id made a negative one no bookie writes: BookKeeper's replay
            # reads the record as a meta entry of a newer type and goes on, as we do.
            out.counts["damage that makes an entry id an unknown meta id (read as BookKeeper reads it)"] += 1
            continue
        if _padding_run(dm, n):
            out.counts["damage that reads as direct-log padding (0xF0 to a 4 KiB boundary)"] += 1
            continue
        if _tail_gone(dm, n, last_mark_given):
            out.counts["damage that leaves a clean end (zeros to the end)"] += 1
            continue
        out.fail("damage not flagged", dm, (n, rec, diff[:8], by_offset.get(n)))

    # No flagged row where nothing was damaged.
    disturbed = list(dm.changed) + [(n, n + rec.span) for n, rec, intact in places if not intact]
    disturbed += [(a, b) for a, b in o.bad_spans] + _orphans(dm) + _damaged_pads(dm) + unconfirmed
    for a, b in dm.changed:
        if a == b:
            disturbed.append((a - 1, a + 1))
    if len(data) < len(o.data):
        disturbed.append((len(data) - 1, 1 << 62))
    for r in flagged:
        if dm.header_changed and r[OFF] == 0:
            continue
        if r[EK] == "before_last_mark":
            continue  # the data ends before the mark: the damage removed or zeroed it
        if data[8:20] != o.data[8:20] and r[EK] == "truncated":
            continue  # the header's map offset was damaged
        if dm.map_changed and o.map_start is not None and (r[OFF] >= min(o.map_start, len(data)) or r[EK] == "truncated"):
            continue
        a, b = r[OFF], max(_row_end(r), r[OFF] + 1)
        # (A row may end where the damage starts: zeros before a damaged byte.)
        if not any(x <= b and a <= max(y, x + 1) for x, y in disturbed):
            out.fail("flagged row where nothing was damaged", dm, r)

    # A header whose magic or version was damaged is a flagged row at 0 (unless the
    # version is still one the format has).
    if dm.header_changed and data[:8] != o.data[:8] and len(data) >= 8 and not _header_still_valid(dm):
        if _tail_gone(dm, 0, last_mark_given):
            out.counts["damage that leaves a clean end (zeros to the end)"] += 1
        elif not any(r[OFF] == 0 and r[ERR] is not None for r in rows):
            out.fail("damaged header not flagged", dm, rows[:2])

    # Tiles are the whole.
    if tiles is not None and tiles[1] != rows:
        first = next((i for i, (x, y) in enumerate(zip(tiles[1], rows)) if x != y), min(len(tiles[1]), len(rows)))
        at = min([r[OFF] for r in tiles[1][first : first + 1] + rows[first : first + 1]] or [0])
        map_at = next((na + o.map_start - oa for oa, ob, na in dm.segments if oa <= o.map_start < ob), None) if o.map_start else None
        if map_at is not None and (map_at != o.map_start or data[:20] != o.data[:20]) and at >= map_at:
            # The map moved (a block before it duplicated or deleted), or the header
            # is damaged, so the header does not say where the map is: a range starting inside a map record sees the
            # pairs it holds as records, where the whole walk steps over the record.
            out.counts["tiles differ inside a ledgers map the header does not point at"] += 1
        else:
            out.fail("tiled read differs from the whole", dm, (cuts, first, tiles[1][first : first + 2], rows[first : first + 2]))

    # Told the types, intact DUMMY and HMAC entries verify; nothing damaged does.
    if told is not None:
        trows = told[1]
        tby = {}
        for r in trows:
            tby.setdefault(r[OFF], r)
        for n, rec, intact in places:
            if intact and rec.rtype == "entry":
                r = tby.get(n)
                if r is None and _unconfirmable(dm, n, rec, places, told=True):
                    continue
                if r is None or r[ERR] is not None or r[OK] is not True or r[PAY] != rec.payload_crc:
                    out.fail("intact entry not verified with its type told", dm, (n, rec, r))
        for r in trows:
            if r[ERR] is None and r[OK] is True and data[r[OFF] : r[OFF] + 4 + r[SIZE]] not in record_bytes:
                if _dummy_verified(r, places):
                    continue
                out.fail("damaged record verified with its type told", dm, r)

    # verify=False flags no digest, and frames every record as the verified read does
    # (it computes the digests that confirm framing, only not reporting them).
    if unverified is not None:
        for r in unverified[1]:
            if r[EK] in ("digest_mismatch", "length_mismatch"):
                out.fail("verify=False flagged a digest", dm, r)
                break
        framed = [(r[OFF], r[SIZE], r[TYPE]) for r in unverified[1]]
        if framed != [(r[OFF], r[SIZE], r[TYPE]) for r in rows]:
            out.fail("verify=False framed otherwise than the verified read", dm, framed)

    # Raising: the rows before the first flagged one, then its error.
    if raised is not None:
        before = [(r[OFF], r[SIZE], r[TYPE]) for r in rows[: rows.index(flagged[0])]] if flagged else [(r[OFF], r[SIZE], r[TYPE]) for r in rows]
        if raised[0] == "ok":
            if flagged:
                out.fail("on_error=raise did not raise", dm, flagged[0])
            elif raised[1] != before:
                out.fail("on_error=raise rows differ", dm, None)
        elif raised[0] == "raised":
            _, got, etype, eoff, epath, msg = raised
            f = flagged[0] if flagged else None
            if f is None:
                out.fail("on_error=raise raised on a clean read", dm, (etype, eoff, msg))
            else:
                at_row = eoff == f[OFF] or (f[TYPE] != "damage" and f[OFF] + 4 <= eoff < f[OFF] + 4 + max(f[SIZE], 1))
                if got != before or not at_row or not epath or not epath.endswith(o.file_name):
                    out.fail("on_error=raise error not at the first flagged row", dm, (etype, eoff, epath, msg, f, len(got), len(before)))
        else:
            out.fail("on_error=raise raised an untyped error", dm, raised)

    # The ledgers map is the original's or a scan.
    if lmap is not None:
        if lmap[0] != "ok":
            out.fail("ledgers_map raised", dm, lmap)
        else:
            source, ledgers, reason = lmap[1]
            out.counts[f"ledgers_map source={source}"] += 1
            lie = source == "map" and ledgers != o.map_ledgers
            if lie and o.map_ledgers and sorted(ledgers.values()) == sorted(o.map_ledgers.values()):
                # Only a ledger id changed in the map: every size still adds up, and
                # only a scan could tell (`ledgers_map` does not scan a usable map).
                out.counts["ledgers_map trusted a map whose ledger id was damaged (sizes intact)"] += 1
            elif lie and o.map_ledgers and o.layout == "direct" and set(ledgers) == set(o.map_ledgers):
                # Only sizes changed, in a log that pads: the sizes still add up to no
                # more than the records before the map (the padding's slack), and only
                # a scan could tell, as for a ledger id.
                out.counts["ledgers_map trusted a direct log's map whose size was damaged within its padding"] += 1
            elif lie:
                out.fail("ledgers_map trusted a wrong map", dm, (dm.ops, {k: (v, (o.map_ledgers or {}).get(k)) for k, v in ledgers.items() if (o.map_ledgers or {}).get(k) != v}))


# ---------------------------------------------------------------------------
# The campaign.


def originals(seed, d, golden=True):
    """The golden originals and an endless supply of generated ones."""
    out = []
    if golden and GOLDEN.is_dir():
        for kind, rel in GOLDEN_FILES:
            g = golden_original(kind, rel)
            if g is not None:
                out.append(g)
    return out


def _keep_case(keep, i, dm, answers, asked, outcome):
    """Writes a failing case: the damaged file, the original, what was read, the failure."""
    d = Path(keep) / f"case{i}"
    d.mkdir(parents=True, exist_ok=True)
    (d / dm.original.file_name).write_bytes(dm.data)
    (d / ("original-" + dm.original.file_name)).write_bytes(dm.original.data)
    with open(d / "case.txt", "w") as f:
        print("original:", dm.original.name, file=f)
        print("ops:", dm.ops, file=f)
        print("reads:", asked, file=f)
        print("failures:", [x for x in outcome.failures if x[2] == dm.ops and x[1] == dm.original.name], file=f)
        print("records:", file=f)
        for r in dm.original.records:
            print("  ", r, file=f)
        for a in answers:
            print("answer:", file=f)
            if a is None:
                print("  None", file=f)
            elif a[0] == "ok" and isinstance(a[1], list):
                for r in a[1]:
                    print("  ", r, file=f)
            else:
                print("  ", a, file=f)


def run(files, seed, golden=True, progress=None, workdir=None, keep=None):
    rng = random.Random(seed)
    outcome = Outcome()
    worker = Worker()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bkcodec-campaign-", dir=workdir) as d:
        d = Path(d)
        gold = originals(seed, d / "golden", golden)
        made = 0
        pool = []
        failed = {}
        for i in range(files):
            # About one file in six damages a golden original; a new original every
            # few files.
            if gold and rng.random() < 0.16:
                o = rng.choice(gold)
            else:
                if not pool or rng.random() < 0.35:
                    gen = d / f"gen{made}"
                    gen.mkdir()
                    s = rng.randrange(1 << 32)
                    o = generated_entry_log(s, gen) if rng.random() < 0.6 else generated_journal(s, gen)
                    pool = (pool + [o])[-6:]
                    made += 1
                o = rng.choice(pool)
            dm = damage(o, rng)
            out_dir = d / "damaged"
            out_dir.mkdir(exist_ok=True)
            path = out_dir / o.file_name
            path.write_bytes(dm.data)
            outcome.counts[f"files {o.kind}"] += 1
            outcome.counts["files golden" if o.name.startswith("golden") else "files generated"] += 1
            for op in dm.ops:
                outcome.counts["damage " + op.split("@")[0]] += 1
            # (Batches of one row of a file of thousands cost pyarrow a chunk per column
            # each: not what the RSS bound is about.)
            kw = {"password": PASSWORD, "batch_size": rng.choice([1, 7, 64, 65536] if len(o.records) < 2000 else [64, 65536]),
                  "payload": rng.choice(["binary", "binary_view"])}
            last_mark_given = o.kind == "journal" and rng.random() < 0.5
            if last_mark_given:
                kw["last_mark"] = o.last_mark
            cuts = sorted({rng.randrange(len(dm.data) + 1) for _ in range(rng.randrange(1, 5))}) if dm.data else []
            bounds = [0, *cuts, len(dm.data) + 1]
            reads = [("rows", kw), ("tiles", kw, bounds)]
            extra = rng.random()
            reads.append(("rows", dict(kw, digest_type=o.told)) if extra < 0.4 else None)
            reads.append(("raise", dict(kw, batch_size=rng.choice([1, 7, 65536]))) if rng.random() < 0.3 else None)
            reads.append(("map",) if o.kind == "entry_log" else None)
            reads.append(("rows", dict(kw, verify=False)) if rng.random() < 0.1 else None)
            asked = [r for r in reads if r is not None]
            peak_before = worker.peak_rss_kb or worker.base_rss_kb
            answer = worker.ask(o.kind, path, asked)
            # (After a few files: the first reads set up what every read reuses.)
            if answer[0] == "done" and i >= 10 and answer[2] - peak_before > RSS_JUMP_MB * 1024:
                outcome.fail("reads of one file raised the peak RSS", dm, ((answer[2] - peak_before) // 1024, "MB", len(dm.data), "bytes"))
            if answer[0] != "done":
                outcome.fail("worker " + answer[0], dm, answer)
                # Keep the file for the report.
                kept = Path(keep or d.parent) / f"bkcodec-campaign-{answer[0]}-{seed}-{i}-{o.file_name}"
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_bytes(dm.data)
                continue
            it = iter(answer[1])
            answers = [next(it) if r is not None else None for r in reads]
            try:
                judge(dm, answers, outcome, cuts, last_mark_given)
            except Exception as e:  # noqa: BLE001 - a checker bug must not hide the rest
                import traceback

                outcome.fail("checker error", dm, traceback.format_exc())
            if keep and any(k.startswith("FAIL") for k in outcome.counts if outcome.counts[k] > failed.get(k, 0)):
                _keep_case(keep, i, dm, answers, asked, outcome)
            failed = dict(outcome.counts)
            if progress and (i + 1) % progress == 0:
                print(f"  {i + 1} files, {time.monotonic() - started:.0f} s", file=sys.stderr)
    worker.close()
    outcome.counts["worker peak RSS MB"] = worker.peak_rss_kb // 1024
    outcome.counts["worker RSS after import MB"] = worker.base_rss_kb // 1024
    if worker.peak_rss_kb > (worker.base_rss_kb + RSS_BOUND_MB * 1024):
        outcome.counts["FAIL peak RSS"] += 1
        outcome.failures.append(("peak RSS", "", [], worker.peak_rss_kb))
    outcome.counts["seconds"] = int(time.monotonic() - started)
    return outcome


def report(outcome):
    lines = []
    for k in sorted(outcome.counts, key=lambda k: (k.startswith("FAIL"), k)):
        lines.append(f"{outcome.counts[k]:>8}  {k}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-golden", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--failures", type=int, default=20, help="how many failures to print")
    p.add_argument("--keep", help="a directory to write each failing case to")
    args = p.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    outcome = run(args.files, args.seed, golden=not args.no_golden, progress=100, keep=args.keep)
    print(report(outcome))
    for f in outcome.failures[: args.failures]:
        print("FAIL", f)
    return 1 if any(k.startswith("FAIL") for k in outcome.counts) else 0


if __name__ == "__main__":
    sys.exit(main())
