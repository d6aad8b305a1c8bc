"""A bookie's index against its entry logs: every indexed entry must be where the
index says, and entries the index does not know are reported (informational).

    report = bkcodec.check_index("/data/bookie")
    report.checked, report.failures, report.unindexed

`bkcodec verify` runs the same check on the entries its own scan reads.

DbLedgerStorage: each ledger directory has its own entry logger (log ids start
again in each) and its index directory's `locations` (and `scoped-locations`)
databases point into it. InterleavedLedgerStorage: one entry logger for every
ledger directory, indexed by `.idx` files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .index_db import LEDGER_ROLES, LOCATION_ROLES, RocksDBUnavailableError, is_database_error
from .paths import path_text

if TYPE_CHECKING:
    import pyarrow as pa

# The locations database beside each ledgers database.
LOCATIONS_OF = {"ledgers": "locations", "scoped-ledgers": "scoped-locations"}

# What the entry scan keeps of each entry, for the join with the index (and
# `file_id`, the entry log's number in ScannedEntries.paths).
SCANNED_COLUMNS = ("location", "scope_id", "ledger_id", "entry_id")


@dataclass
class IndexUnit:
    """One index and the entry logs its locations point into."""

    storage: str
    label: str  # the index directory, as path_text writes it
    location_databases: list[Any] = field(default_factory=list)
    ledger_databases: list[Any] = field(default_factory=list)
    index_files: list[Any] = field(default_factory=list)
    logs: dict[int, Any] = field(default_factory=dict)  # log id -> entry log
    ledger_dir: Path | None = None


def index_units(layout: Any) -> tuple[list[IndexUnit], list[str]]:
    """The units of a bookie's index, and notes on what cannot be checked."""
    notes: list[str] = []
    units: list[IndexUnit] = []
    if layout.storage == "DbLedgerStorage":
        for ledger_dir, index_dir in layout.dir_pairs:
            if index_dir is None:
                notes.append(f"{ledger_dir}: no index directory found for it; its entry logs are not checked against an index")
                continue
            dbs = [db for db in layout.databases if db.dir == index_dir]
            unit = IndexUnit(
                "DbLedgerStorage",
                path_text(index_dir),
                [db for db in dbs if db.role in LOCATION_ROLES],
                [db for db in dbs if db.role in LEDGER_ROLES],
                ledger_dir=ledger_dir,
            )
            if ledger_dir is None:
                notes.append(f"{index_dir}: its ledger directory is not in the tree; its locations are not checked")
                continue
            unit.logs = {f.log_id: f for f in layout.entry_logs if f.dir == ledger_dir and f.log_id is not None}
            units.append(unit)
    elif layout.storage == "InterleavedLedgerStorage":
        unit = IndexUnit("InterleavedLedgerStorage", path_text(layout.root), index_files=layout.index_files)
        for f in layout.entry_logs:
            if f.log_id is None:
                continue
            if f.log_id in unit.logs:
                notes.append(f"entry log id {f.log_id} is in two places ({unit.logs[f.log_id].path}, {f.path}); the first is checked")
                continue
            unit.logs[f.log_id] = f
        units.append(unit)
    return units, notes


def index_file_locations(rows: pa.Table, scope_id: int | None) -> pa.Table:
    """An index file's rows (`read_index`) as the location databases' rows, with
    its scope."""
    import pyarrow as pa

    n = rows.num_rows
    return pa.table(
        {
            "scope_id": pa.array([scope_id or 0] * n, pa.int64()),
            "ledger_id": rows.column("ledger_id"),
            "entry_id": rows.column("entry_id"),
            "location": rows.column("location"),
            "log_id": rows.column("log_id"),
            "offset": rows.column("offset"),
            "error": pa.nulls(n, pa.string()),
        }
    )


def index_table(unit: IndexUnit) -> Any:
    """Every location of a unit: scope_id, ledger_id, entry_id, location, log_id,
    offset (of the size field), error, source (the database or index file)."""
    import pyarrow as pa

    from . import read_index, read_location_index

    tables = []
    for db in unit.location_databases:
        t = read_location_index(db.path, on_error="flag").read_all()
        tables.append(t.append_column("source", pa.array([path_text(db.path)] * t.num_rows, pa.string())))
    for f in unit.index_files:
        try:
            t = read_index(f.path).read_all()
        except (OSError, ValueError):
            continue  # a damaged header or an unreadable file: the file check reports it
        t = index_file_locations(t, f.scope_id)
        tables.append(t.append_column("source", pa.array([path_text(f.path)] * t.num_rows, pa.string())))
    if not tables:
        return None
    return pa.concat_tables([t.cast(tables[0].schema) for t in tables])


def ledger_states(unit: IndexUnit, failures: list[dict[str, Any]] | None = None, listed: dict[str, int] | None = None) -> Any:
    """scope_id, ledger_id, state (`fenced`, `limbo` or `active`) of the ledgers the
    index knows; None when it has no ledger index (the states are then unknown).
    Rows that do not decode go to `failures`; `listed` gets each ledgers
    database's count of ledgers."""
    import pyarrow as pa

    from . import index_header, read_ledger_index

    rows: list[tuple[int, int, str]] = []
    if unit.storage == "DbLedgerStorage":
        if not unit.ledger_databases:
            return None
        for db in unit.ledger_databases:
            count = 0
            for r in read_ledger_index(db.path, on_error="flag").read_all().to_pylist():
                if r["error"] is not None and failures is not None:
                    failures.append(_row_failure(unit, r, path_text(db.path)))
                if r["ledger_id"] is None:
                    continue
                count += 1
                state = "limbo" if r["limbo"] else "fenced" if r["fenced"] else "active"
                rows.append((r["scope_id"], r["ledger_id"], state))
            if listed is not None:
                listed[str(db.path)] = count
    else:
        for f in unit.index_files:
            try:
                fenced = index_header(f.path).fenced
            except (OSError, ValueError):
                fenced = False
            if f.ledger_id is not None:
                rows.append((f.scope_id or 0, f.ledger_id, "fenced" if fenced else "active"))
    scope, ledger, state = zip(*rows) if rows else ((), (), ())
    return pa.table({"scope_id": pa.array(scope, pa.int64()), "ledger_id": pa.array(ledger, pa.int64()), "state": pa.array(state, pa.string())})


def _what_is_there(path: Path) -> str:
    import stat

    try:
        st = path.lstat()
    except FileNotFoundError:
        return "missing"
    except OSError as err:
        return f"unreadable ({err.strerror})"
    if stat.S_ISDIR(st.st_mode):
        try:
            empty = not any(path.iterdir())
        except OSError as err:
            return f"an unreadable directory ({err.strerror})"
        return "an empty directory" if empty else "a directory that holds no RocksDB database"
    if stat.S_ISREG(st.st_mode):
        return "a file, not a RocksDB database"
    if stat.S_ISLNK(st.st_mode):
        return f"a link to {path.resolve()}, not a RocksDB database"
    return "not a RocksDB database"


def missing_location_database(ledger_db: Any, ledgers: int, database_paths: set[str]) -> tuple[str, str] | None:
    """(path, problem) when a ledgers database lists ledgers but the locations
    database beside it is not there: the locations of their entries are lost."""
    role = LOCATIONS_OF.get(ledger_db.role)
    if role is None or ledgers <= 0:
        return None
    expected = Path(ledger_db.path).parent / role
    if str(expected) in database_paths:
        return None
    return str(expected), (
        f"{expected}: {_what_is_there(expected)}, while {ledger_db.path} lists {ledgers} "
        f"ledger{'s' if ledgers != 1 else ''}: where their entries are is lost"
    )


@dataclass
class IndexReport:
    checked: int = 0  # index entries checked
    failures: list[dict[str, Any]] = field(default_factory=list)
    unindexed: list[dict[str, Any]] = field(default_factory=list)  # one per (file, scope, ledger, state)
    unindexed_entries: int = 0
    notes: list[str] = field(default_factory=list)
    unchecked: str | None = None


def _failure(file: str, row: dict[str, Any], problem: str, error: str, source: str | None = None) -> dict[str, Any]:
    return {
        "file": file,
        "kind": "index",
        "offset": row.get("offset"),
        "ledger_id": row.get("ledger_id"),
        "entry_id": row.get("entry_id"),
        "scope_id": row.get("scope_id"),
        "location": row.get("location"),
        "database": source,
        "problem": problem,
        "error": error,
    }


def _row_failure(unit: IndexUnit, r: dict[str, Any], source: str) -> dict[str, Any]:
    """A flagged row of a database: a key or value that does not decode, or the
    database as a whole (then the failure is the index directory's, as when
    RocksDB cannot open it)."""
    if is_database_error(r["error"], source):
        return _failure(unit.label, r, "index_database", r["error"], source)
    return _failure(source, r, "index_record", r["error"], source)


def _rows(table: Any) -> Iterator[dict[str, Any]]:
    for batch in table.to_batches(max_chunksize=65536):
        yield from batch.to_pylist()


def check_unit(
    unit: IndexUnit, scanned: Any, paths: list[str], report: IndexReport, unreadable: set[str] | None = None
) -> None:
    """Joins a unit's index with the entries scanned from its entry logs.

    `scanned`: SCANNED_COLUMNS plus `file_id` (the entry log's index in `paths`)
    for every entry the scan framed, whatever its digest said (the file check
    reports digests). `unreadable`: entry logs that could not be read; index
    entries pointing into them are not checked (nothing says they are not there).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    # Both indexes are read first: without RocksDB nothing of the unit is reported.
    index = index_table(unit)
    ledger_failures: list[dict[str, Any]] = []
    listed: dict[str, int] = {}
    states = ledger_states(unit, ledger_failures, listed)
    report.failures.extend(ledger_failures)
    location_paths = {str(db.path) for db in unit.location_databases}
    for db in unit.ledger_databases:
        missing = missing_location_database(db, listed.get(str(db.path), 0), location_paths)
        if missing is not None:
            report.failures.append(_failure(unit.label, {}, "index_database", missing[1], path_text(missing[0])))
    if index is None:
        report.notes.append(f"{unit.label}: no location index found; its entry logs are all unindexed")
        index = pa.table(
            {c: pa.array([], pa.int64()) for c in ("scope_id", "ledger_id", "entry_id", "location", "log_id", "offset")}
            | {"error": pa.array([], pa.string()), "source": pa.array([], pa.string())}
        )
    report.checked += index.num_rows

    bad = pc.or_(pc.is_valid(index.column("error")), pc.is_null(index.column("log_id")))
    for r in _rows(index.filter(bad)):
        if r["error"] is not None:
            report.failures.append(_row_failure(unit, r, r["source"]))
        else:
            report.failures.append(
                _failure(r["source"], r, "index_location", f"location {r['location']} cannot point at an entry", r["source"])
            )
    index = index.filter(pc.invert(bad))

    log_ids = pa.array(sorted(unit.logs), pa.int64())
    present = pc.is_in(index.column("log_id"), value_set=log_ids)
    for r in _rows(index.filter(pc.invert(present))):
        where = f" in {unit.ledger_dir}" if unit.ledger_dir is not None else ""
        report.failures.append(
            _failure(
                r["source"],
                r,
                "index_no_log",
                f"ledger {r['ledger_id']} entry {r['entry_id']}: location {r['location']} points into entry log "
                f"{r['log_id']:x}.log, which is not{where}",
                r["source"],
            )
        )
    index = index.filter(present)

    unread = [log_id for log_id, f in unit.logs.items() if str(f.path) in (unreadable or ())]
    if unread:
        into = pc.is_in(index.column("log_id"), value_set=pa.array(unread, pa.int64()))
        skipped = pc.sum(into).as_py() or 0
        if skipped:
            logs = ", ".join(path_text(unit.logs[i].path) for i in unread)
            report.notes.append(f"{skipped} index entries point into entry logs that could not be read ({logs}): not checked")
        index = index.filter(pc.invert(into))

    found = scanned.rename_columns([f"s_{c}" if c != "location" else c for c in scanned.column_names])
    joined = index.join(found, keys="location", join_type="left outer")
    missing = pc.is_null(joined.column("s_ledger_id"))
    for r in _rows(joined.filter(missing)):
        log = unit.logs[r["log_id"]]
        report.failures.append(
            _failure(
                path_text(log.path),
                r,
                "index_no_entry",
                f"ledger {r['ledger_id']} entry {r['entry_id']}: no entry at offset {r['offset']} "
                f"(location {r['location']})",
                r["source"],
            )
        )
    here = joined.filter(pc.invert(missing))
    differ = pc.or_(
        pc.or_(pc.not_equal(here.column("s_ledger_id"), here.column("ledger_id")), pc.not_equal(here.column("s_entry_id"), here.column("entry_id"))),
        pc.not_equal(pc.fill_null(here.column("s_scope_id"), 0), here.column("scope_id")),
    )
    for r in _rows(here.filter(differ)):
        report.failures.append(
            _failure(
                path_text(paths[r["s_file_id"]]),
                r,
                "index_wrong_entry",
                f"ledger {r['ledger_id']} entry {r['entry_id']}: offset {r['offset']} holds "
                f"ledger {r['s_ledger_id']} entry {r['s_entry_id']} (location {r['location']})",
                r["source"],
            )
        )

    # Entries of the logs that the index does not know.
    unindexed = scanned.join(index.select(["location"]), keys="location", join_type="left anti")
    if unindexed.num_rows == 0:
        return
    report.unindexed_entries += unindexed.num_rows
    # A copy of an entry the index points at elsewhere (compaction copies entries
    # into a new log; the old one waits for garbage collection).
    keys = ["scope_id", "ledger_id", "entry_id"]
    indexed_keys = index.select(keys)
    indexed_keys = indexed_keys.append_column("copy", pa.array([True] * indexed_keys.num_rows, pa.bool_()))
    unindexed = unindexed.join(indexed_keys, keys=keys, join_type="left outer")
    if states is None:
        state = pa.array(["unknown"] * unindexed.num_rows, pa.string())
        unindexed = unindexed.append_column("state", state)
    else:
        unindexed = unindexed.join(states, keys=["scope_id", "ledger_id"], join_type="left outer")
        # No ledger-index row (DbLedgerStorage) or index file (InterleavedLedgerStorage):
        # a deleted ledger whose entries wait for garbage collection.
        gone = "deleted" if unit.storage == "DbLedgerStorage" else "no index file"
        unindexed = unindexed.set_column(
            unindexed.column_names.index("state"), "state", pc.fill_null(unindexed.column("state"), gone)
        )
    copy = pc.fill_null(unindexed.column("copy"), False)
    unindexed = unindexed.set_column(
        unindexed.column_names.index("state"), "state", pc.if_else(copy, "indexed elsewhere", unindexed.column("state"))
    )
    groups = unindexed.group_by(["file_id", "scope_id", "ledger_id", "state"]).aggregate(
        [("entry_id", "count"), ("entry_id", "min"), ("entry_id", "max")]
    )
    for g in sorted(groups.to_pylist(), key=lambda g: (paths[g["file_id"]], g["scope_id"], g["ledger_id"], g["state"])):
        report.unindexed.append(
            {
                "file": path_text(paths[g["file_id"]]),
                "scope_id": g["scope_id"],
                "ledger_id": g["ledger_id"],
                "entries": g["entry_id_count"],
                "first_entry": g["entry_id_min"],
                "last_entry": g["entry_id_max"],
                "ledger_state": g["state"],
            }
        )


class ScannedEntries:
    """What the file check's entry-log scan keeps for the index check: four int64
    columns and a file number per framed entry (36 bytes each)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.ids: dict[str, int] = {}
        self.tables: dict[str, list[Any]] = {}
        self.unreadable: set[str] = set()  # entry logs that could not be read

    def add(self, path: str, batch: Any) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return
        if path not in self.tables:
            self.tables[path] = []
            self.ids[path] = len(self.paths)
            self.paths.append(path)
        keep = pc.and_(pc.is_valid(batch.column("location")), pc.is_valid(batch.column("ledger_id")))
        keep = pc.and_(keep, pc.is_valid(batch.column("entry_id")))
        t = pa.Table.from_batches([batch.select(list(SCANNED_COLUMNS))]).filter(keep)
        t = t.append_column("file_id", pa.repeat(pa.scalar(self.ids[path], pa.int32()), t.num_rows))
        self.tables[path].append(t)

    def of(self, unit: IndexUnit) -> Any:
        import pyarrow as pa

        parts = [t for f in unit.logs.values() for t in self.tables.get(str(f.path), [])]
        if not parts:
            schema = pa.schema([(c, pa.int64()) for c in SCANNED_COLUMNS] + [("file_id", pa.int32())])
            return schema.empty_table()
        return pa.concat_tables(parts)


def check_layouts(layouts: list[Any], scanned: ScannedEntries) -> IndexReport:
    """Checks the index of every bookie layout given."""
    report = IndexReport()
    units: list[IndexUnit] = []
    for layout in layouts:
        u, notes = index_units(layout)
        units.extend(u)
        report.notes.extend(notes)
    if not units:
        return report
    for unit in units:
        try:
            check_unit(unit, scanned.of(unit), scanned.paths, report, scanned.unreadable)
        except RocksDBUnavailableError as err:
            report.unchecked = str(err)
        except (OSError, ValueError) as err:
            # An index database RocksDB cannot open (or that is not one): a finding.
            report.failures.append(
                _failure(unit.label, {}, "index_database", " ".join(str(err).split()), unit.label)
            )
    return report


def check_index(*paths: Any) -> IndexReport:
    """The index of each bookie directory given (DbLedgerStorage's location databases,
    or InterleavedLedgerStorage's `.idx` files) against its entry logs: `checked`
    index entries, `failures` (an index entry with no entry where it points, a
    database or record that does not read), `unindexed` entries by ledger and state,
    `notes`, and `unchecked` with the reason when the index could not be read at all
    (no RocksDB binding: `bkcodec[rocksdb]`). Entry logs are read without checking
    digests (`bkcodec.verify` does that); one the system will not let be read is
    left out, and index entries pointing into it are not checked."""
    from . import bookie_layout, read_entry_log

    layouts = [bookie_layout(p) for p in paths]
    scanned = ScannedEntries()
    for layout in layouts:
        for f in layout.entry_logs:
            try:
                with read_entry_log(f.path, verify=False, payload="none") as reader:
                    for batch in reader:
                        scanned.add(str(f.path), batch)
            except OSError:
                scanned.unreadable.add(str(f.path))
    return check_layouts(layouts, scanned)
