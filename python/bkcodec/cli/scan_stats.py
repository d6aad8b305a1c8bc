"""Per-file tallies over a reader's rows: entries, ledgers, damaged spans, torn tails.

A row is a damaged span when it has an `error_kind` and no entry fields (or, in a
journal, `record_type` "damage"); an entry row with an `error_kind` is a damaged
entry; an entry whose `digest_ok` is null with no error was not checked, and its
`digest_type` says why (null: its ledger's type is unknown; "hmac": no password)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

# A torn tail: the file ends inside a record or its header.
TORN_KINDS = ("torn_record", "torn_header")
# Batches of at most this many entries are tallied per ledger in Python.
SMALL_BATCH = 64


def _value_counts(array: Any) -> tuple[list[Any], list[int]]:
    import pyarrow.compute as pc

    vc = pc.value_counts(array)
    return vc.field("values").to_pylist(), vc.field("counts").to_pylist()


@dataclass
class LedgerTally:
    scope_id: int
    ledger_id: int
    entries: int = 0
    bytes: int = 0  # sum of record size + 4, what the ledgers map counts
    first_entry: int | None = None
    last_entry: int | None = None

    def merge(self, entries: int, nbytes: int, first: int | None, last: int | None) -> None:
        self.entries += entries
        self.bytes += nbytes
        if first is not None:
            self.first_entry = first if self.first_entry is None else min(self.first_entry, first)
        if last is not None:
            self.last_entry = last if self.last_entry is None else max(self.last_entry, last)

    def to_json(self) -> dict[str, Any]:
        return {
            "scope_id": self.scope_id,
            "ledger_id": self.ledger_id,
            "entries": self.entries,
            "bytes": self.bytes,
            "first_entry": self.first_entry,
            "last_entry": self.last_entry,
        }


@dataclass
class FileTally:
    """What one pass over a file's rows found."""

    records: Counter = field(default_factory=Counter)  # by record_type
    ledgers: dict[tuple[int, int], LedgerTally] = field(default_factory=dict)
    formats: Counter = field(default_factory=Counter)  # entry format version -> count
    digest_ok: int = 0
    digest_unchecked: int = 0
    # Unchecked entries by the core's digest_unchecked_reason (None: not asked to verify).
    unchecked: Counter = field(default_factory=Counter)
    entry_errors: list[dict[str, Any]] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    data_end: int = 0

    @property
    def entries(self) -> int:
        return self.records["entry"]

    @property
    def torn_tail(self) -> bool:
        return any(g["kind"] in TORN_KINDS for g in self.gaps)

    def add_batch(self, batch: Any) -> None:
        """Tallies one batch with Arrow kernels; only damaged rows reach Python."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return
        kind = batch.column("error_kind")
        record_type = batch.column("record_type")
        # Damage, and an entry record whose header no layout reads (no format version).
        is_gap = pc.or_(
            pc.equal(record_type, "damage"),
            pc.and_(pc.is_valid(kind), pc.is_null(batch.column("format_version"))),
        )
        is_gap = pc.fill_null(is_gap, False)
        if pc.any(is_gap).as_py():
            cols = ["offset", "record_size", "ledger_id", "entry_id", "error", "error_kind"]
            for row in batch.filter(is_gap).select(cols).to_pylist():
                self.gaps.append(
                    {
                        "offset": row["offset"],
                        "length": row["record_size"],
                        "kind": row["error_kind"] or "damage",
                        "ledger_id": row["ledger_id"],
                        "entry_id": row["entry_id"],
                        "error": row["error"],
                    }
                )
        records = batch.filter(pc.invert(is_gap))
        if records.num_rows == 0:
            return
        rtype = record_type.filter(pc.invert(is_gap))
        ends = pc.add(pc.add(records.column("offset"), records.column("record_size")), 4)
        self.data_end = max(self.data_end, pc.max(ends).as_py())
        for value, count in zip(*_value_counts(rtype)):
            self.records[value] += count
        is_entry = pc.equal(rtype, "entry")
        entries = records.filter(is_entry)
        if entries.num_rows == 0:
            return
        scope = pc.fill_null(entries.column("scope_id"), 0)
        if entries.num_rows <= SMALL_BATCH:
            self._tally_ledgers_small(scope, entries)
        else:
            self._tally_ledgers(pa, scope, entries)
        for value, count in zip(*_value_counts(entries.column("format_version"))):
            self.formats[value] += count
        self._tally_digests(pc, entries)

    def _tally_ledgers_small(self, scope: Any, entries: Any) -> None:
        # What the group_by below computes, for a batch too small to repay
        # starting Acero's hash aggregation (a millisecond each: per file for a
        # directory of small logs).
        groups: dict[tuple[int, int], list[Any]] = {}
        rows = zip(scope.to_pylist(), *(entries.column(c).to_pylist() for c in ("ledger_id", "entry_id", "record_size")))
        for scope_id, ledger_id, entry_id, size in rows:
            g = groups.get((scope_id, ledger_id))
            if g is None:
                g = groups[(scope_id, ledger_id)] = [0, None, None, None]
            if size is not None:
                g[0] += 1
                g[1] = size if g[1] is None else g[1] + size
            if entry_id is not None:
                g[2] = entry_id if g[2] is None else min(g[2], entry_id)
                g[3] = entry_id if g[3] is None else max(g[3], entry_id)
        for key, (count, total, first, last) in groups.items():
            self._merge_ledger(key, count, total, first, last)

    def _merge_ledger(self, key: tuple[int, int], count: int, total: int, first: Any, last: Any) -> None:
        tally = self.ledgers.get(key)
        if tally is None:
            tally = self.ledgers[key] = LedgerTally(key[0], key[1])
        tally.merge(count, total + 4 * count, first, last)

    def _tally_ledgers(self, pa: Any, scope: Any, entries: Any) -> None:
        table = pa.table(
            {
                "scope_id": scope,
                "ledger_id": entries.column("ledger_id"),
                "entry_id": entries.column("entry_id"),
                "record_size": entries.column("record_size"),
            }
        )
        grouped = table.group_by(["scope_id", "ledger_id"]).aggregate(
            [("record_size", "count"), ("record_size", "sum"), ("entry_id", "min"), ("entry_id", "max")]
        )
        for g in grouped.to_pylist():
            key = (g["scope_id"], g["ledger_id"])
            self._merge_ledger(key, g["record_size_count"], g["record_size_sum"], g["entry_id_min"], g["entry_id_max"])

    def _tally_digests(self, pc: Any, entries: Any) -> None:
        ok = entries.column("digest_ok")
        bad = pc.fill_null(pc.or_(pc.is_valid(entries.column("error")), pc.equal(ok, False)), False)
        n_bad = pc.sum(bad).as_py() or 0
        n_good = pc.sum(pc.fill_null(pc.and_(ok, pc.invert(bad)), False)).as_py() or 0
        self.digest_ok += n_good
        # Neither failed nor verified: not checked, for the reason the core gives
        # (HMAC without the password, a ledger whose digest type nothing tells; null
        # with verify off).
        unchecked = pc.and_(pc.invert(bad), pc.is_null(ok))
        if pc.any(unchecked).as_py():
            reasons = entries.column("digest_unchecked_reason").filter(unchecked)
            for value, count in zip(*_value_counts(reasons)):
                self.unchecked[value] += count
        self.digest_unchecked += entries.num_rows - n_bad - n_good
        if n_bad:
            cols = ["offset", "scope_id", "ledger_id", "entry_id", "digest_type", "digest_ok", "error", "error_kind"]
            for row in entries.filter(bad).select(cols).to_pylist():
                row["scope_id"] = row["scope_id"] or 0
                row["error"] = row["error"] or "digest mismatch"
                self.entry_errors.append(row)

    def bytes_by_ledger_id(self) -> dict[int, int]:
        """Bytes per 64-bit ledger id, the key a ledgers map uses."""
        out: dict[int, int] = defaultdict(int)
        for (_, ledger_id), t in self.ledgers.items():
            out[ledger_id] += t.bytes
        return dict(out)


def check_ledgers_map(path: Any, header: Any, tally: FileTally, error_text: Any = str) -> dict[str, Any]:
    """An entry log's ledgers map against what a full scan of the log found.

    `present`: the header says the log was rolled with a map; `source`: where
    `bkcodec.ledgers_map` took it from ("scan" when the map is missing or unusable,
    with its `fallback_reason`); `consistent`: the map lists exactly the scanned
    ledgers and bytes (None when there is no map to compare); `mismatches` per ledger.
    `tally` must hold every row of the log, whatever a --ledger filter shows."""
    from .. import ledgers_map

    lmap: dict[str, Any] = {"present": bool(header is not None and header.has_ledgers_map)}
    try:
        m = ledgers_map(path)
    except ValueError as err:
        lmap.update(source=None, consistent=False, error=error_text(err))
        return lmap
    lmap["source"] = m.source
    if m.fallback_reason:
        lmap["fallback_reason"] = m.fallback_reason
    if m.source == "scan":
        lmap["consistent"] = None
        return lmap
    listed = {int(k): int(v) for k, v in m.ledgers.items()}
    scanned_bytes = tally.bytes_by_ledger_id()
    mismatches = [
        {"ledger_id": lid, "map_bytes": listed.get(lid), "scanned_bytes": scanned_bytes.get(lid)}
        for lid in sorted(set(listed) | set(scanned_bytes))
        if listed.get(lid) != scanned_bytes.get(lid)
    ]
    lmap["ledgers"] = len(listed)
    lmap["consistent"] = not mismatches and (header is None or header.ledgers_count == len(listed))
    lmap["mismatches"] = mismatches
    return lmap


def ledgers_map_problem(lmap: dict[str, Any]) -> str | None:
    """What is wrong with a rolled log's ledgers map, or None: a map the header
    promises that is unreadable or unusable, or that disagrees with the scan."""
    if lmap.get("error"):
        return f"ledgers map: {lmap['error']}"
    if not lmap["present"]:
        return None  # an open log has no map yet
    if lmap.get("source") == "scan":
        if (lmap.get("fallback_reason") or "").startswith("truncated"):
            return None  # the log was cut short before its map: the scan's `truncated` row says so
        return f"ledgers map unusable ({lmap.get('fallback_reason') or 'unknown reason'}); the header says the log was rolled with one"
    if lmap.get("consistent") is False:
        mismatches = lmap.get("mismatches", [])
        if mismatches:
            shown = "; ".join(
                f"{m['ledger_id']}: map {m['map_bytes'] if m['map_bytes'] is not None else 'none'}, "
                f"entries {m['scanned_bytes'] if m['scanned_bytes'] is not None else 'none'}"
                for m in mismatches[:3]
            )
            more = f"; and {len(mismatches) - 3} more" if len(mismatches) > 3 else ""
            return f"ledgers map disagrees with the entries for {len(mismatches)} ledgers (ledger {shown}{more})"
        return "ledgers map lists another number of ledgers than the header says"
    return None
