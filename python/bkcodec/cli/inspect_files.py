"""`bkcodec inspect`: what each bookie file holds, at a glance."""

from __future__ import annotations

import argparse
from typing import Any

from ..paths import path_text
from .discover import ENTRY_LOG, INDEX, JOURNAL, LAST_ID, LAST_MARK, BookieFile, discover
from .errors import exit_code, unreadable_reason
from ..index_check import LOCATIONS_OF
from .output import Output
from .readers import DigestOptions, batches_with_progress, file_size, open_reader, progress_over
from .scan_stats import FileTally, check_ledgers_map, ledgers_map_problem

LEDGER_ROWS_SHOWN = 20


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "inspect",
        parents=[parent],
        help="summarise bookie files: kind, version, entries, ledgers, ledgers map, torn tails",
        description="Summarise bookie files, or every bookie file below a directory "
        "(entry logs *.log, journals *.txn, index files *.idx, lastMark, lastId). For a "
        "directory, also the bookie: its storage (DbLedgerStorage or "
        "InterleavedLedgerStorage), cookie, directories, and per index database the "
        "ledgers, entries and live key range. Exit codes: 0, or 1 when a rolled entry "
        "log's ledgers map is unusable or disagrees with its entries, or an index "
        "database cannot be read whole, holds keys or values that do not decode, or "
        "is missing beside a ledgers database that lists ledgers; 2 usage or I/O error, or "
        "(nothing damaged) a file or directory that cannot be read, listed as unreadable "
        "while the others are still inspected.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or bookie directories")
    p.add_argument(
        "--all-ledgers",
        action="store_true",
        help=f"list every ledger of a file (tables show the first {LEDGER_ROWS_SHOWN} otherwise)",
    )
    p.set_defaults(run=run)


def _error_text(err: BaseException) -> str:
    return " ".join(str(err).split())


def inspect_scanned(f: BookieFile, task, base: int) -> tuple[dict[str, Any], FileTally]:
    """One pass over an entry log's or journal's rows (digests not checked: see verify)."""
    tally = FileTally()
    reader = open_reader(f, DigestOptions(None, b""), verify=False, payload="none")
    for batch in batches_with_progress(reader, task, base):
        tally.add_batch(batch)
    info: dict[str, Any] = {
        "entries": tally.entries,
        "ledgers": len(tally.ledgers),
        "format_versions": {f"v{k}": v for k, v in sorted(tally.formats.items(), key=lambda kv: str(kv[0]))},
        "ledger_bytes": [t.to_json() for _, t in sorted(tally.ledgers.items(), key=_ledger_order)],
        "torn_tail": tally.torn_tail,
        "damage": tally.gaps,
        "data_end": tally.data_end,
    }
    return info, tally


def _ledger_order(item):
    (scope, ledger), _ = item
    return (scope is None, scope or 0, ledger is None, ledger or 0)


def inspect_entry_log(f: BookieFile, task, base: int) -> dict[str, Any]:
    from .. import entry_log_header

    info: dict[str, Any] = {}
    try:
        h = entry_log_header(f.path)
        info.update(
            layout=h.layout,
            version=h.version,
            header_ledgers_map_offset=h.ledgers_map_offset,
            header_ledgers_count=h.ledgers_count,
        )
    except ValueError as err:
        info.update(layout=None, version=None, header_error=_error_text(err))
        h = None
    scanned, tally = inspect_scanned(f, task, base)
    info.update(scanned)
    lmap = check_ledgers_map(f.path, h, tally, _error_text)
    info["ledgers_map"] = lmap
    return info


def inspect_journal(f: BookieFile, task, base: int) -> dict[str, Any]:
    from .. import journal_header

    info: dict[str, Any] = {}
    try:
        h = journal_header(f.path)
        info.update(version=h.version, data_start=h.data_start)
    except ValueError as err:
        info.update(version=None, header_error=_error_text(err))
    scanned, tally = inspect_scanned(f, task, base)
    info.update(scanned)
    info["records"] = dict(sorted(tally.records.items()))
    return info


def inspect_index(f: BookieFile) -> dict[str, Any]:
    import pyarrow.compute as pc

    from .. import index_header, read_index

    h = index_header(f.path)
    table = read_index(f.path).read_all()
    ledger_ids = table.column("ledger_id").unique().to_pylist() if table.num_rows else []
    info: dict[str, Any] = {
        "version": h.version,
        "ledger_id": ledger_ids[0] if len(ledger_ids) == 1 else None,
        "fenced": h.fenced,
        "master_key": h.master_key.hex(),
        "explicit_lac": h.explicit_lac,
        "entries": table.num_rows,
        "last_entry": pc.max(table.column("entry_id")).as_py() if table.num_rows else None,
        "entry_logs": sorted(x for x in table.column("log_id").unique().to_pylist() if x is not None),
    }
    return info


def inspect_last_mark(f: BookieFile) -> dict[str, Any]:
    from .. import read_last_mark

    mark = read_last_mark(f.path)
    return {"journal_id": mark.journal_id, "journal_file": f"{mark.journal_id:x}.txn", "offset": mark.offset}


def inspect_last_id(f: BookieFile) -> dict[str, Any]:
    from .. import read_last_id

    log_id = read_last_id(f.path)
    return {"log_id": log_id, "entry_log_file": f"{log_id:x}.log"}


def inspect_file(f: BookieFile, task, base: int) -> dict[str, Any]:
    info: dict[str, Any] = {"path": path_text(f.path), "kind": f.kind, "size": file_size(f)}
    try:
        if f.kind == ENTRY_LOG:
            info.update(inspect_entry_log(f, task, base))
        elif f.kind == JOURNAL:
            info.update(inspect_journal(f, task, base))
        elif f.kind == INDEX:
            info.update(inspect_index(f))
        elif f.kind == LAST_MARK:
            info.update(inspect_last_mark(f))
        elif f.kind == LAST_ID:
            info.update(inspect_last_id(f))
    except ValueError as err:
        # A damaged file is a finding, not a failure of the command.
        info["error"] = _error_text(err)
    except OSError as err:
        # Neither clean nor damaged: not read. The other files still are.
        info["unreadable"] = unreadable_reason(err)
    return info


def run(args: argparse.Namespace, out: Output) -> int:
    found = discover(args.paths, allow_databases=True)
    bookies = [inspect_bookie(layout, out) for layout in found.layouts]
    results = inspect_files(found.files, out)
    if out.json_mode:
        out.json({"bookies": bookies, "files": results})
    else:
        for bookie in bookies:
            print_bookie(out, bookie)
        print_report(out, results, args.all_ledgers)
    # A rolled log's map is what BookKeeper's garbage collector and compaction trust
    # to tell which ledgers it holds: one that is unusable or wrong is damage.
    bad_maps = [r for r in results if r.get("ledgers_map") and ledgers_map_problem(r["ledgers_map"])]
    # So is an index that lost entries or ledgers.
    bad_databases = [d for b in bookies for d in b["databases"] if d.get("error") or d.get("bad_keys")]
    unreadable = any(b["unreadable"] for b in bookies) or any("unreadable" in r for r in results)
    return exit_code(damage=bool(bad_maps or bad_databases), unreadable=unreadable)


def _cookie_json(cookie: Any) -> dict[str, Any]:
    return {
        "layout_version": cookie.layout_version,
        "bookie_id": cookie.bookie_id,
        "instance_id": cookie.instance_id,
        "journal_dirs": cookie.journal_dirs,
        "ledger_dirs": cookie.ledger_dirs,
        "index_dirs": cookie.index_dirs,
    }


def inspect_bookie(layout: Any, out: Output) -> dict[str, Any]:
    """The bookie a directory holds: storage, cookie, directories, index databases."""
    cookies = layout.cookies
    distinct = {c.encode() for c in cookies.values()}
    first = next(iter(cookies.values()), None)
    info: dict[str, Any] = {
        "root": path_text(layout.root),
        "storage": layout.storage,
        "cookie": _cookie_json(first) if first is not None else None,
        "cookie_files": [path_text(p) for p in cookies],
        "cookies_agree": len(distinct) <= 1,
        "journal_dirs": [path_text(d) for d in layout.journal_dirs],
        "ledger_dirs": [path_text(d) for d in layout.ledger_dirs],
        "index_dirs": [path_text(d) for d in layout.index_dirs],
        "dir_pairs": [[None if d is None else path_text(d) for d in pair] for pair in layout.dir_pairs],
        "databases": [],
        "notes": layout.notes,
        # What the walk could not list: what is below it is not inspected.
        "unreadable": [{"path": path_text(p), "error": reason} for p, reason in layout.unreadable],
    }
    with out.progress("reading index databases", None) as task:
        for db in layout.databases:
            info["databases"].append(inspect_database(db, task))
    info["databases"].extend(_missing_databases(layout.databases, info["databases"]))
    return info


def _missing_databases(databases: list[Any], infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A locations database that is not there beside a ledgers database that lists ledgers."""
    from ..index_check import missing_location_database

    paths = {str(db.path) for db in databases}
    missing = []
    for db, info in zip(databases, infos):
        found = missing_location_database(db, info.get("ledgers") or 0, paths)
        if found is not None:
            path, problem = found
            missing.append({"path": path_text(path), "role": LOCATIONS_OF[db.role], "dir": path_text(db.dir), "error": problem})
            paths.add(path)
    return missing


def inspect_database(db: Any, task) -> dict[str, Any]:
    """Counts of one index database: keys, ledgers, entries, live key range."""
    import pyarrow.compute as pc

    from .. import index_db

    info: dict[str, Any] = {"path": path_text(db.path), "role": db.role, "dir": path_text(db.dir)}
    if db.role not in index_db.LOCATION_ROLES + index_db.LEDGER_ROLES:
        info["unchecked"] = "not an index bkcodec reads"
        return info
    location = db.role in index_db.LOCATION_ROLES
    try:
        read = index_db.read_location_index if location else index_db.read_ledger_index
        keys = bad = 0
        ledgers: set[tuple[int, int]] = set()
        first = last = None
        fenced = limbo = 0
        errors: list[str] = []
        for batch in read(db.path, on_error="flag"):
            good = batch.filter(pc.is_null(batch.column("error")))
            # Rows about the database as a whole are not keys.
            whole = [e for e in batch.column("error").drop_null().to_pylist() if index_db.is_database_error(e, db.path)]
            errors.extend(whole)
            keys += batch.num_rows - len(whole)
            bad += batch.num_rows - len(whole) - good.num_rows
            task.advance(batch.num_rows)
            if not good.num_rows:
                continue
            ids = ["scope_id", "ledger_id", "entry_id"] if location else ["scope_id", "ledger_id"]
            row = good.select(ids)
            if first is None:
                first = list(row.slice(0, 1).to_pylist()[0].values())
            last = list(row.slice(good.num_rows - 1, 1).to_pylist()[0].values())
            pairs = good.select(["scope_id", "ledger_id"]).to_pydict()
            ledgers.update(zip(pairs["scope_id"], pairs["ledger_id"]))
            if not location:
                fenced += pc.sum(pc.fill_null(good.column("fenced"), False)).as_py() or 0
                limbo += pc.sum(pc.fill_null(good.column("limbo"), False)).as_py() or 0
        info.update(keys=keys, ledgers=len(ledgers), first_key=first, last_key=last, bad_keys=bad)
        if location:
            info["entries"] = keys - bad
        else:
            info.update(fenced=fenced, limbo=limbo)
        if errors:
            info["error"] = "; ".join(errors)
        elif not location and db.role == "ledgers":
            info["storage_flags"] = index_db.storage_flags(db.path)
    except index_db.RocksDBUnavailableError as err:
        info["unchecked"] = str(err)
    except (OSError, ValueError) as err:
        info["error"] = _error_text(err)
    return info


def _key_text(key: list[int] | None) -> str:
    if key is None:
        return ""
    scope, *rest = key
    return "/".join(str(k) for k in ([scope, *rest] if scope else rest))


def print_bookie(out: Output, b: dict[str, Any]) -> None:
    out.line(f"bookie {b['root']}: {b['storage'] or 'no index found (storage unknown)'}")
    c = b["cookie"]
    if c is not None:
        agree = "all the same" if b["cookies_agree"] else "THEY DIFFER"
        out.line(
            f"  cookie ({len(b['cookie_files'])} files, {agree}): bookie {c['bookie_id']}, "
            f"instance {c['instance_id'] or '-'}, layout version {c['layout_version']}"
        )
        out.line(f"    journal dirs {', '.join(c['journal_dirs'])}; ledger dirs {', '.join(c['ledger_dirs'])}"
                 + (f"; index dirs {', '.join(c['index_dirs'])}" if c["index_dirs"] else ""))
    else:
        out.line("  cookie: none found")
    if b["journal_dirs"]:
        out.line(f"  journal dirs: {', '.join(b['journal_dirs'])}")
    for ledger_dir, index_dir in b["dir_pairs"]:
        if ledger_dir is None:
            out.line(f"  index dir {index_dir} (its ledger dir not found)")
        elif index_dir in (None, ledger_dir):
            out.line(f"  ledger dir: {ledger_dir}" + ("" if index_dir else " (no index)"))
        else:
            out.line(f"  ledger dir: {ledger_dir}, its index in {index_dir}")
    if b["databases"]:
        rows = []
        for d in b["databases"]:
            notes = d.get("unchecked") or ""
            if d.get("bad_keys"):
                notes = f"{d['bad_keys']} keys or values do not decode"
            if d.get("error"):
                notes = "; ".join(n for n in (notes, f"ERROR: {d['error']}") if n)
            if d.get("role") in ("ledgers", "scoped-ledgers") and "keys" in d:
                extra = [f"{d['fenced']} fenced", f"{d['limbo']} in limbo"]
                if d.get("storage_flags") is not None:
                    flags = d["storage_flags"]
                    extra.insert(0, f"storage flags {flags}" + (" (needs integrity check)" if flags & 1 else ""))
                notes = ", ".join(extra + ([notes] if notes else []))
            rows.append(
                [
                    f"  {d['path']}",
                    d["role"] or "?",
                    d.get("ledgers", ""),
                    d.get("entries", ""),
                    _key_text(d.get("first_key")),
                    _key_text(d.get("last_key")),
                    notes,
                ]
            )
        out.table(["  database", "role", "ledgers", "entries", "first key", "last key", "notes"], rows, right=("ledgers", "entries"))
    for note in b["notes"]:
        out.line(f"  note: {note}")
    for u in b.get("unreadable", []):
        out.line(f"  UNREADABLE: {u['path']}: {u['error']} (what is below it is not inspected)")
    out.line()


def inspect_files(files: list[BookieFile], out: Output) -> list[dict[str, Any]]:
    results = []
    with progress_over(out, files, "inspecting") as task:
        base = 0
        for f in files:
            results.append(inspect_file(f, task, base))
            if f.kind in (ENTRY_LOG, JOURNAL):
                base += file_size(f)
                task.update(completed=base)
    return results


def _yes_no(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "no")


def _map_cell(info: dict[str, Any]) -> str:
    m = info.get("ledgers_map")
    if m is None:
        return ""
    if not m["present"]:
        return "absent"
    if m.get("consistent"):
        return "consistent"
    return "INCONSISTENT" if m.get("source") not in (None, "scan") else "unusable"


def _version_cell(info: dict[str, Any]) -> str:
    v = info.get("version")
    if v is None:
        return "?"
    layout = info.get("layout")
    return f"{v} ({layout})" if layout and layout != "legacy" else str(v)


def _detail(info: dict[str, Any]) -> str:
    kind = info["kind"]
    if "unreadable" in info:
        return f"UNREADABLE: {info['unreadable']}"
    if "error" in info:
        return f"ERROR: {info['error']}"
    if kind == LAST_MARK:
        return f"journal {info['journal_file']} offset {info['offset']}"
    if kind == LAST_ID:
        return f"last entry log {info['entry_log_file']}"
    if kind == INDEX:
        parts = [f"ledger {info['ledger_id']}", f"last entry {info['last_entry']}"]
        if info["fenced"]:
            parts.append("fenced")
        if info["explicit_lac"] is not None:
            parts.append(f"explicit LAC {info['explicit_lac']}")
        return ", ".join(parts)
    if kind == JOURNAL:
        return ", ".join(f"{k} {v}" for k, v in info.get("records", {}).items() if k != "entry")
    return ""


def print_report(out: Output, results: list[dict[str, Any]], all_ledgers: bool) -> None:
    rows = []
    for info in results:
        scanned = info["kind"] in (ENTRY_LOG, JOURNAL)
        rows.append(
            [
                info["path"],
                info["kind"].replace("_", " "),
                _version_cell(info) if info["kind"] not in (LAST_MARK, LAST_ID) else "",
                info["size"],
                info.get("entries", ""),
                info.get("ledgers", "") if scanned else "",
                _map_cell(info),
                _yes_no(info.get("torn_tail")) if scanned else "",
                _detail(info),
            ]
        )
    out.table(
        ["file", "kind", "version", "size", "entries", "ledgers", "ledgers map", "torn tail", "notes"],
        rows,
        right=("size", "entries", "ledgers"),
    )
    for info in results:
        if info["kind"] not in (ENTRY_LOG, JOURNAL) or "unreadable" in info:
            continue
        out.line()
        header = f"{info['path']}: {info.get('entries', 0)} entries in {info.get('ledgers', 0)} ledgers"
        versions = info.get("format_versions") or {}
        if versions:
            header += " (" + ", ".join(f"{n} {k.upper()}" for k, n in versions.items()) + ")"
        out.line(header)
        if "header_error" in info:
            out.line(f"  header: {info['header_error']}")
        ledger_rows = info.get("ledger_bytes", [])
        shown = ledger_rows if all_ledgers else ledger_rows[:LEDGER_ROWS_SHOWN]
        if shown:
            out.table(
                ["  scope", "ledger", "entries", "bytes", "entry ids"],
                [
                    [
                        f"  {r['scope_id']}",
                        "?" if r["ledger_id"] is None else r["ledger_id"],
                        r["entries"],
                        r["bytes"],
                        "" if r["first_entry"] is None else f"{r['first_entry']}..{r['last_entry']}",
                    ]
                    for r in shown
                ],
                right=("  scope", "ledger", "entries", "bytes"),
            )
        if len(shown) < len(ledger_rows):
            out.line(f"  ... and {len(ledger_rows) - len(shown)} more ledgers (--all-ledgers lists them)")
        m = info.get("ledgers_map")
        if m is not None:
            if m.get("error"):
                out.line(f"  ledgers map: {m['error']}")
            elif m["present"] and m.get("source") == "scan":
                out.line(f"  ledgers map unusable ({m.get('fallback_reason', 'unknown reason')}); ledgers counted by scanning")
            elif m["present"] and m.get("consistent") is False:
                out.line(f"  ledgers map disagrees with the entries for {len(m.get('mismatches', []))} ledgers")
            elif not m["present"]:
                out.line("  ledgers map: absent (log not rolled); ledgers counted by scanning")
        for g in info.get("damage", []):
            out.line(f"  damage at offset {g['offset']} ({g['length']} bytes): {g['error']}")
