"""`bkcodec rebuild-index`: a new DbLedgerStorage `locations` database from a scan
of the entry logs, as BookKeeper's `rebuild-db-ledger-locations-index` builds one,
written into a new directory only: the bookie itself is never written to."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from .errors import EXIT_OK, CliError
from .output import Output
from .readers import batches_with_progress


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "rebuild-index",
        parents=[parent],
        help="write a new DbLedgerStorage locations index from a scan of the entry logs",
        description="Scan every entry log of a bookie and write, for each of its index "
        "directories, a new RocksDB `locations` database (and `scoped-locations` for "
        "entries with a scope) with a bookie's options, as BookKeeper's "
        "rebuild-db-ledger-locations-index does: the entries of the ledgers the bookie's "
        "`ledgers` database lists (every ledger when it has none, or with --all-ledgers); "
        "when an entry is in several logs, the newest log wins. The databases go below "
        "DIR, laid out as the bookie's index directories (DIR/<index dir>/current/"
        "locations), to be checked and then copied in place by hand; the bookie is never "
        "written to. DIR must be new (or empty) and outside the bookie. Needs "
        "bkcodec[rocksdb].",
    )
    p.add_argument("bookie", type=Path, metavar="BOOKIE", help="a bookie directory (its root, or a ledger directory)")
    p.add_argument("--to", required=True, type=Path, metavar="DIR", help="a new directory for the rebuilt databases")
    p.add_argument(
        "--all-ledgers",
        action="store_true",
        help="index the entries of every ledger found, not only the ledgers the bookie's ledgers database lists",
    )
    p.set_defaults(run=run)


def _relative(d: Path, root: Path) -> Path:
    for base in (root, root.parent):
        try:
            return d.relative_to(base)
        except ValueError:
            pass
    return Path(d.name)


def _prepare(target: Path, bookie_dirs: list[Path]) -> bool:
    """Checks that `target` is new (or an empty directory) and outside the bookie;
    returns whether it must be created."""
    from .. import output_target

    try:
        output_target.check_outside_inputs(target, bookie_dirs)
    except output_target.OutputTargetError as err:
        raise CliError(f"{err.reason} (the rebuilt index goes to a new directory elsewhere)", err.path) from None
    if target.exists():
        if not target.is_dir() or any(target.iterdir()):
            raise CliError("already exists and is not an empty directory", str(target))
        return False
    if not target.parent.is_dir():
        raise CliError("no such directory", str(target.parent))
    return True


def _active_ledgers(ledger_databases: list[Any]) -> set[tuple[int, int]] | None:
    """The ledgers a bookie's ledger index lists (LocationsIndexRebuildOp keeps only
    their entries); None without a readable ledger index."""
    import pyarrow.compute as pc

    from .. import read_ledger_index

    if not ledger_databases:
        return None
    active: set[tuple[int, int]] = set()
    for db in ledger_databases:
        for batch in read_ledger_index(db.path, on_error="flag"):
            good = batch.filter(pc.is_valid(batch.column("ledger_id")))
            ids = good.select(["scope_id", "ledger_id"]).to_pydict()
            active.update(zip(ids["scope_id"], ids["ledger_id"]))
    return active


def run(args: argparse.Namespace, out: Output) -> int:
    from .. import bookie_layout, index_db
    from ..index_check import index_units

    if not args.bookie.exists():
        raise CliError("no such file or directory", str(args.bookie))
    if not args.bookie.is_dir():
        raise CliError("not a directory: rebuild-index reads a bookie directory", str(args.bookie))
    try:
        index_db._rocksdict()
    except index_db.RocksDBUnavailableError as err:
        raise CliError(str(err)) from None
    layout = bookie_layout(args.bookie)
    if not layout.entry_logs:
        raise CliError("no entry logs found", str(args.bookie))
    bookie_dirs = [args.bookie, *layout.ledger_dirs, *layout.index_dirs, *layout.journal_dirs]
    created = _prepare(args.to, bookie_dirs)

    # DbLedgerStorage keeps one entry logger per ledger directory, indexed in the
    # paired index directory; any other bookie gets an index per ledger directory.
    units = []
    if layout.storage == "DbLedgerStorage":
        units = index_units(layout)[0]
    plan = []
    for ledger_dir, index_dir in layout.dir_pairs:
        if ledger_dir is None:
            continue
        unit = next((u for u in units if u.ledger_dir == ledger_dir), None)
        logs = sorted((f for f in layout.entry_logs if f.dir == ledger_dir and f.log_id is not None), key=lambda f: f.log_id)
        if not logs:
            continue
        where = _relative(index_dir or ledger_dir, Path(layout.root)) / "current"
        ledger_dbs = unit.ledger_databases if unit is not None else []
        plan.append((ledger_dir, logs, args.to / where, ledger_dbs))
    if not plan:
        raise CliError("no entry logs with a known log id found in a ledger directory", str(args.bookie))

    if created:
        args.to.mkdir()
    try:
        result = rebuild(plan, out, all_ledgers=args.all_ledgers)
    except BaseException:
        # No half-built index left to be mistaken for a whole one.
        if created:
            shutil.rmtree(args.to, ignore_errors=True)
        else:
            for child in args.to.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
        raise
    result["output"] = str(args.to)
    if out.json_mode:
        out.json(result)
    else:
        print_result(out, result)
    return EXIT_OK


def rebuild(plan: list[tuple[Path, list[Any], Path, list[Any]]], out: Output, *, all_ledgers: bool) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    from .. import _bkcodec, index_db, read_entry_log

    total = sum(f.path.stat().st_size for _, logs, _, _ in plan for f in logs)
    databases: list[dict[str, Any]] = []
    notes: list[str] = []
    with out.progress("rebuilding the index", total) as task:
        base = 0
        for ledger_dir, logs, target, ledger_dbs in plan:
            active = None if all_ledgers else _active_ledgers(ledger_dbs)
            active_unscoped = pa.array(sorted(lid for scope, lid in active or () if scope == 0), pa.int64())
            if active is None and not all_ledgers:
                notes.append(f"{ledger_dir}: no ledgers database found; every ledger's entries are indexed")
            target.mkdir(parents=True, exist_ok=True)
            writers: dict[bool, Any] = {}
            counts = {False: [0, set()], True: [0, set()]}
            skipped = 0
            try:
                for log in logs:
                    reader = read_entry_log(log.path, verify=False, payload="none", on_error="flag")
                    for batch in batches_with_progress(reader, task, base):
                        keep = pc.and_(pc.is_valid(batch.column("location")), pc.is_valid(batch.column("ledger_id")))
                        keep = pc.and_(keep, pc.is_valid(batch.column("entry_id")))
                        rows = batch.filter(keep).select(["scope_id", "ledger_id", "entry_id", "location"])
                        rows = rows.set_column(0, "scope_id", pc.fill_null(rows.column("scope_id"), 0))
                        for scoped in (False, True):
                            is_scoped = pc.not_equal(rows.column("scope_id"), 0)
                            part = rows.filter(is_scoped if scoped else pc.invert(is_scoped))
                            if active is not None and part.num_rows:
                                if scoped:
                                    pairs = zip(part.column("scope_id").to_pylist(), part.column("ledger_id").to_pylist())
                                    listed = pa.array([p in active for p in pairs], pa.bool_())
                                else:
                                    listed = pc.is_in(part.column("ledger_id"), value_set=active_unscoped)
                                skipped += part.num_rows - (pc.sum(listed).as_py() or 0)
                                part = part.filter(listed)
                            if not part.num_rows:
                                continue
                            cols = [part.column(c).to_pylist() for c in ("scope_id", "ledger_id", "entry_id", "location")]
                            keys, values = _bkcodec._encode_location_pairs(*cols)
                            if scoped not in writers:
                                role = "scoped-locations" if scoped else "locations"
                                writers[scoped] = index_db._Writer(target / role, role, flush=True)
                            for k, v in zip(keys, values):
                                writers[scoped].put(k, v)
                            counts[scoped][0] += part.num_rows
                            counts[scoped][1].update(zip(cols[0], cols[1]))
                    base += log.path.stat().st_size
                    task.update(completed=base)
            finally:
                for w in writers.values():
                    w.close()
            for scoped, w in sorted(writers.items()):
                databases.append(
                    {
                        "path": str(w.path),
                        "role": "scoped-locations" if scoped else "locations",
                        "ledger_dir": str(ledger_dir),
                        "entry_logs": len(logs),
                        "entries": counts[scoped][0],
                        "ledgers": len(counts[scoped][1]),
                    }
                )
            if skipped:
                notes.append(f"{ledger_dir}: {skipped} entries of ledgers the ledgers database does not list were left out")
            if not writers:
                notes.append(f"{ledger_dir}: no entries to index")
    return {
        "databases": databases,
        "entries": sum(d["entries"] for d in databases),
        "notes": notes,
    }


def print_result(out: Output, result: dict[str, Any]) -> None:
    out.table(
        ["database", "role", "entries", "ledgers", "from ledger dir", "entry logs"],
        [[d["path"], d["role"], d["entries"], d["ledgers"], d["ledger_dir"], d["entry_logs"]] for d in result["databases"]],
        right=("entries", "ledgers", "entry logs"),
    )
    for note in result["notes"]:
        out.line(f"note: {note}")
    out.line(f"rebuilt {result['entries']} index entries into {result['output']} (the bookie was not written to)")
