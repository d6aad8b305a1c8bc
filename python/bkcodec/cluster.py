"""The cluster: every copy of every entry across many bookies, audited against where
BookKeeper placed it, and ledgers recovered from the best copies.

- :func:`inventory`: one bookie's copies, one small row each (ids, verdict, a hash of
  the payload, where it is, whether the index points at it), as a stream; written
  to Parquet it is what travels from each bookie's machine.
- :func:`audit`: bookie directories and/or inventories against the ledgers'
  metadata: a table of findings (runs of entries with one status) and a summary
  per ledger. The rules are the core's (``bkcodec._bkcodec.cluster_statuses``
  lists them, most severe first); docs/cluster.md explains each.
- :func:`recover`: a ledger's entries from the best copies, in entry order.
- :func:`write_set`: the ensemble positions that store an entry.

This module only gathers arguments from a bookie's layout; the reading, hashing,
placement and judging are the core's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import bookie_layout
from .paths import path_from_text, path_text
from ._bkcodec import (
    INVENTORY_BOOKIE_ID_KEY,
    cluster_audit,
    cluster_load_metadata,
    read_records_at,
    cluster_read_inventory,
    cluster_schemas,
    cluster_statuses,
    cluster_write_set,
)

__all__ = [
    "AuditResult",
    "CopyCatalog",
    "FAILURE_STATUSES",
    "FINDINGS_SCHEMA",
    "INVENTORY_SCHEMA",
    "LEDGERS_SCHEMA",
    "STATUSES",
    "audit",
    "bookie_id_of",
    "inventory",
    "load_metadata",
    "ledger_password",
    "read_inventory_file",
    "recover",
    "write_set",
]

#: Every status, most severe first.
STATUSES: tuple[str, ...] = tuple(name for name, _ in cluster_statuses())
#: The statuses that make `bkcodec audit` exit 1.
FAILURE_STATUSES: frozenset[str] = frozenset(name for name, failure in cluster_statuses() if failure)

_Path = str | os.PathLike[str]

#: The columns of an inventory, of the audit's findings, and of its ledger summary.
INVENTORY_SCHEMA, FINDINGS_SCHEMA, LEDGERS_SCHEMA = cluster_schemas()


def load_metadata(dump: _Path, notes: list[str] | None = None) -> dict[tuple[int, int], Any]:
    """A metadata dump's ledgers by `(scope, ledger)`, scoped (BP-35) ledgers named by
    their UUID included; files that do not read are appended to `notes`."""
    ledgers, problems = cluster_load_metadata(dump)
    if notes is not None:
        notes.extend(f"metadata not read: {p}" for p in problems)
    return ledgers


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    """The ensemble positions that store `entry_id`: `(entry_id + w) mod E` for
    `w < write_quorum` (BookKeeper's round-robin schedule, in 64 bits)."""
    return cluster_write_set(entry_id, ensemble_size, write_quorum)


class BookieIdError(ValueError):
    """A bookie directory whose cookies do not name one bookie id."""


def bookie_id_of(path: _Path) -> str:
    """The bookie id a bookie directory's cookies (`current/VERSION`) name, which
    ensembles use. Raises BookieIdError when none does, or they disagree."""
    layout = bookie_layout(path)
    ids = {c.bookie_id for c in layout.cookies.values()}
    if len(ids) == 1:
        return ids.pop()
    if not ids:
        raise BookieIdError(f"{os.fsdecode(path)}: no cookie (current/VERSION) names the bookie; pass its id")
    raise BookieIdError(f"{os.fsdecode(path)}: its cookies name several bookies ({', '.join(sorted(ids))}); pass its id")


def _index_parts(layout: Any, notes: list[str]) -> list[tuple[list[Any], Any, Any]]:
    """(entry logs, location index table, ledger states table) per entry logger."""
    from .index_check import index_table, index_units, ledger_states
    from .index_db import RocksDBUnavailableError

    units, unit_notes = index_units(layout)
    notes.extend(unit_notes)
    parts = []
    covered: set[Path] = set()
    for unit in units:
        logs = list(unit.logs.values())
        covered.update(Path(f.path) for f in logs)
        try:
            index, states = index_table(unit), ledger_states(unit)
        except RocksDBUnavailableError as err:
            notes.append(f"{unit.label}: index not read ({err}); `indexed` is null")
            index, states = None, None
        parts.append((logs, index, states))
    rest = [f for f in layout.entry_logs if Path(f.path) not in covered]
    if rest:
        parts.append((rest, None, None))
    return parts


def inventory(
    bookie: _Path,
    *,
    bookie_id: str | None = None,
    metadata: _Path | dict | None = None,
    digest_type: str | None = None,
    password: bytes | str = b"",
    batch_size: int = 65536,
    notes: list[str] | None = None,
) -> pa.RecordBatchReader:
    """The inventory of one bookie directory: one row per copy of an entry found in
    its entry logs and journals (see docs/cluster.md for the columns).

    `bookie_id` defaults to the one its cookies name. `metadata` (a dump directory or
    the mapping `load_ledger_metadata_dir` returns) gives each ledger's digest type and
    password, so HMAC copies are checked rather than `unchecked`. Notes on what could
    not be cross-checked (an index not read) are appended to `notes`.
    """
    path = Path(os.fspath(bookie))
    if not path.is_dir():
        raise NotADirectoryError(f"{path}: not a bookie directory")
    layout = bookie_layout(path)
    notes = notes if notes is not None else []
    if bookie_id is None:
        try:
            bookie_id = bookie_id_of(path)
        except BookieIdError as err:
            # Copies of a bookie's files without its cookie: named by their place, which
            # no ensemble names (an audit then sees its copies as misplaced).
            bookie_id = path_text(path.resolve())
            notes.append(f"{err}; named by its path")
    options = dict(digest_type=digest_type, password=password, ledger_metadata=metadata, batch_size=batch_size)
    readers = [
        cluster_read_inventory(
            bookie_id,
            [(f.path, "entry_log") for f in logs],
            index=index,
            ledger_states=states,
            **options,
        )
        for logs, index, states in _index_parts(layout, notes)
    ]
    journals = [(f.path, "journal") for f in layout.journals]
    if journals or not readers:
        readers.append(cluster_read_inventory(bookie_id, journals, **options))
    schema = readers[0].schema

    def batches() -> Iterator[pa.RecordBatch]:
        for r in readers:
            yield from r

    return pa.RecordBatchReader.from_batches(schema, batches())


#: What the audit reads of an inventory.
AUDIT_COLUMNS = ("bookie_id", "scope_id", "ledger_id", "entry_id", "last_add_confirmed", "verdict", "payload_hash")


def read_inventory_file(path: _Path, columns: Sequence[str] | None = None) -> tuple[str, pa.RecordBatchReader]:
    """An inventory written to Parquet (or Arrow IPC) as `(bookie id, stream of
    batches)`, only `columns` when given: an audit of many large inventories holds
    one batch of each at a time."""
    import pyarrow.parquet as pq

    path = Path(os.fspath(path))
    key = INVENTORY_BOOKIE_ID_KEY.encode()
    if path.suffix.lower() in (".arrow", ".feather", ".ipc"):
        source = pa.memory_map(str(path))
        ipc = pa.ipc.open_file(source)
        schema = ipc.schema
        batches = (ipc.get_batch(i) for i in range(ipc.num_record_batches))
    else:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        batches = parquet.iter_batches(batch_size=65536, columns=list(columns) if columns else None)
    if key not in (schema.metadata or {}):
        raise ValueError(f"{path}: not a bkcodec inventory (no {INVENTORY_BOOKIE_ID_KEY} in its schema)")
    wanted = pa.schema([schema.field(c) for c in columns]) if columns else schema
    selected = (b.select(list(columns)) if columns else b for b in batches)
    return schema.metadata[key].decode(), pa.RecordBatchReader.from_batches(wanted, selected)


@dataclass
class AuditResult:
    """The audit's tables and what was audited."""

    findings: pa.Table
    ledgers: pa.Table
    bookies: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether any finding is a failure (`bkcodec audit` exits 1)."""
        return any(s in FAILURE_STATUSES for s in self.findings.column("status").to_pylist())

    def to_json(self) -> dict[str, Any]:
        return {
            "bookies": self.bookies,
            "findings": self.findings.to_pylist(),
            "ledgers": self.ledgers.to_pylist(),
            "notes": self.notes,
        }


def _is_inventory_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in (".parquet", ".pq", ".arrow", ".feather", ".ipc")


def inventories(
    inputs: Sequence[_Path], *, metadata: _Path | dict | None = None, notes: list[str] | None = None, **options: Any
) -> list[tuple[str, Any]]:
    """Each input as `(bookie id, inventory)`: inventory files as read, bookie
    directories inventoried now."""
    out = []
    for given in inputs:
        path = Path(os.fspath(given))
        if _is_inventory_file(path):
            out.append(read_inventory_file(path, AUDIT_COLUMNS))
        elif path.is_dir():
            reader = inventory(path, metadata=metadata, notes=notes, **options)
            out.append((reader.schema.metadata[INVENTORY_BOOKIE_ID_KEY.encode()].decode(), reader))
        elif not path.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        else:
            raise ValueError(f"{path}: neither a bookie directory nor an inventory (.parquet, .arrow)")
    return out


def _row_count(path: _Path) -> int:
    """An inventory file's rows, from its footer (Parquet) or none (Arrow)."""
    import pyarrow.parquet as pq

    path = Path(os.fspath(path))
    return pq.ParquetFile(path).metadata.num_rows if path.suffix.lower() in (".parquet", ".pq") else 0


def audit(inputs: Sequence[_Path], *, metadata: _Path | dict | None = None, **options: Any) -> AuditResult:
    """Audits bookie directories and/or inventory files against `metadata` (a dump
    directory, or a mapping of ledger id or `(scope, ledger)` to LedgerMetadata);
    without it, what the copies alone tell (divergent and corrupt copies, gaps
    below the highest last-add-confirmed)."""
    notes: list[str] = []
    found = inventories(inputs, metadata=metadata, notes=notes, **options)
    bookies = [b for b, _ in found]
    duplicates = {b for b in bookies if bookies.count(b) > 1}
    if duplicates:
        notes.append(f"bookie ids given more than once (their copies are merged): {', '.join(sorted(duplicates))}")
    expected = sum(_row_count(p) for p in inputs if _is_inventory_file(Path(os.fspath(p))))
    findings, ledgers, problems = cluster_audit(
        [inv for _, inv in found], bookies=bookies, metadata=metadata, expected_copies=expected
    )
    notes.extend(f"metadata not read: {p}" for p in problems)
    return AuditResult(findings, ledgers, list(dict.fromkeys(bookies)), notes)


class CopyCatalog:
    """The verified copies of some ledgers across bookie directories (one inventory
    pass over each bookie), to read each entry once, from its best copy.

    The preference among verified copies: an entry-log copy the index points at, then
    any entry-log copy, then a journal's, in bookie order.
    """

    def __init__(
        self,
        inputs: Sequence[_Path],
        *,
        ledgers: Iterable[int] | None = None,
        metadata: _Path | dict | None = None,
        **options: Any,
    ) -> None:
        import pyarrow.compute as pc

        dirs = [Path(os.fspath(p)) for p in inputs]
        for d in dirs:
            if not d.is_dir():
                raise NotADirectoryError(f"{d}: copies are read from bookie directories (inventories hold no payloads)")
        self.metadata = metadata
        self.options = options
        keep = pa.array(sorted(set(ledgers)), pa.int64()) if ledgers is not None else None
        # (scope, ledger) -> entry -> candidates, best first; and entries with only bad copies.
        self._candidates: dict[tuple[int, int], dict[int, list[dict[str, Any]]]] = {}
        self._bad: dict[tuple[int, int], dict[int, dict[str, Any]]] = {}
        wanted = ["bookie_id", "scope_id", "ledger_id", "entry_id", "last_add_confirmed", "length", "digest_type"]
        wanted += ["verdict", "payload_hash", "source", "file", "offset", "indexed"]
        for _, inv in inventories(dirs, metadata=metadata, **options):
            for batch in inv:
                # Only the rows and columns a choice needs become Python objects.
                rows = pc.is_valid(batch.column("ledger_id"))
                if keep is not None:
                    rows = pc.and_(rows, pc.fill_null(pc.is_in(batch.column("ledger_id"), value_set=keep), False))
                for r in batch.filter(rows).select(wanted).to_pylist():
                    key = (r["scope_id"], r["ledger_id"])
                    if r["verdict"] == "verified":
                        self._candidates.setdefault(key, {}).setdefault(r["entry_id"], []).append(r)
                    else:
                        self._bad.setdefault(key, {}).setdefault(r["entry_id"], r)
        for entries in self._candidates.values():
            for rs in entries.values():
                rs.sort(key=lambda r: (r["source"] != "entry_log", r["indexed"] is not True, r["bookie_id"]))

    def ledgers(self) -> list[tuple[int, int]]:
        """`(scope, ledger)` of every ledger with a copy, in order."""
        return sorted(set(self._candidates) | set(self._bad))

    def recover(self, ledger: int, scope_id: int = 0) -> pa.Table:
        """One ledger's entries in entry order (the schema RECOVERED_SCHEMA), each read
        again at its place and its digest checked again (a file may have changed since
        it was inventoried; the next copy is then taken). Entries whose verified copies
        disagree (`divergent`), or that have no verified copy, come with `error` set and
        no payload: none is chosen silently."""
        from . import decode_entries

        key = (scope_id, ledger)
        if key not in self._candidates and key not in self._bad:
            raise LookupError(f"no copy of ledger {ledger} (scope {scope_id}) on the bookies given")
        candidates = self._candidates.get(key, {})
        divergent = {e for e, rs in candidates.items() if len({r["payload_hash"] for r in rs}) > 1}
        password = ledger_password(self.metadata, ledger, scope_id, self.options.get("password", b""))
        chosen: dict[int, tuple[dict[str, Any], bytes]] = {}
        pending = {e: list(rs) for e, rs in candidates.items() if e not in divergent}
        while pending:
            by_file: dict[str, list[tuple[int, dict[str, Any]]]] = {}
            for e, rs in pending.items():
                r = rs.pop(0)
                by_file.setdefault(r["file"], []).append((e, r))
            for file, picks in by_file.items():
                records = read_records_at(path_from_text(file), [r["offset"] for _, r in picks])
                digest_type = picks[0][1]["digest_type"]
                decoded = decode_entries(records.column("record"), digest_type=digest_type, password=password, on_error="flag")
                rows = decoded.select(["ledger_id", "entry_id", "digest_ok", "payload"]).to_pylist()
                for (e, r), d in zip(picks, rows):
                    if d["digest_ok"] and (d["ledger_id"], d["entry_id"]) == (ledger, e):
                        chosen[e] = (r, d["payload"])
            pending = {e: rs for e, rs in pending.items() if e not in chosen and rs}
        bad = self._bad.get(key, {})
        out = []
        for e in sorted(set(candidates) | set(bad)):
            if e in chosen:
                (r, payload), error = chosen[e], None
            elif e in divergent:
                r, payload, error = candidates[e][0], None, "divergent: verified copies hold different payloads"
            elif e in candidates:
                r, payload, error = candidates[e][0], None, "no copy verifies when read again (the files changed)"
            else:
                r, payload, error = bad[e], None, f"no verified copy: the copies are {bad[e]['verdict']}"
            out.append(
                {
                    "scope_id": scope_id,
                    "ledger_id": ledger,
                    "entry_id": e,
                    "last_add_confirmed": r["last_add_confirmed"],
                    "length": r["length"],
                    "digest_type": r["digest_type"],
                    "payload": payload,
                    "bookie_id": None if error else r["bookie_id"],
                    "file": None if error else r["file"],
                    "offset": None if error else r["offset"],
                    "error": error,
                }
            )
        return pa.Table.from_pylist(out, schema=RECOVERED_SCHEMA)


def recover(
    inputs: Sequence[_Path],
    ledger: int,
    *,
    scope_id: int = 0,
    metadata: _Path | dict | None = None,
    **options: Any,
) -> pa.Table:
    """The entries of one ledger from the best copies among bookie directories, in
    entry order (see CopyCatalog.recover): rows say which copy was taken (`bookie_id`,
    `file`, `offset`); divergent entries and entries with no verified copy come with
    `error` and no payload."""
    return CopyCatalog(inputs, ledgers=[ledger], metadata=metadata, **options).recover(ledger, scope_id)


def ledger_password(metadata: Any, ledger: int, scope_id: int, default: bytes | str) -> bytes | str:
    """A ledger's password: its metadata's, else the one given."""
    if isinstance(metadata, dict):
        md = metadata.get((scope_id, ledger)) or (metadata.get(ledger) if scope_id == 0 else None)
    elif metadata is not None and scope_id == 0:
        from . import load_ledger_metadata_dir

        md = load_ledger_metadata_dir(metadata, strict=False).get(ledger)
    else:
        md = None
    if md is not None and md.password is not None:
        return bytes(md.password)
    return default


RECOVERED_SCHEMA = pa.schema(
    [
        ("scope_id", pa.int64()),
        ("ledger_id", pa.int64()),
        ("entry_id", pa.int64()),
        ("last_add_confirmed", pa.int64()),
        ("length", pa.int64()),
        ("digest_type", pa.string()),
        ("payload", pa.binary()),
        ("bookie_id", pa.string()),
        ("file", pa.string()),
        ("offset", pa.int64()),
        ("error", pa.string()),
    ]
)
