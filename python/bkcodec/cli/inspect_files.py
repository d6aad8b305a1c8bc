"""`bkcodec inspect`: what each bookie file holds, at a glance."""

from __future__ import annotations

import argparse
from typing import Any

from .discover import ENTRY_LOG, INDEX, JOURNAL, LAST_ID, LAST_MARK, BookieFile, find_bookie_files
from .errors import EXIT_OK
from .output import Output
from .readers import DigestOptions, batches_with_progress, file_size, open_reader, progress_over
from .scan_stats import FileTally

LEDGER_ROWS_SHOWN = 20


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "inspect",
        parents=[parent],
        help="summarise bookie files: kind, version, entries, ledgers, ledgers map, torn tails",
        description="Summarise bookie files, or every bookie file below a directory "
        "(entry logs *.log, journals *.txn, index files *.idx, lastMark, lastId).",
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
    from .. import entry_log_header, ledgers_map

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
    lmap: dict[str, Any] = {"present": bool(h is not None and h.has_ledgers_map)}
    try:
        m = ledgers_map(f.path)
        from_trailer = m.source != "scan"
        lmap["source"] = m.source
        if m.fallback_reason:
            lmap["fallback_reason"] = m.fallback_reason
        if from_trailer:
            listed = {int(k): int(v) for k, v in m.ledgers.items()}
            scanned_bytes = tally.bytes_by_ledger_id()
            mismatches = [
                {"ledger_id": lid, "map_bytes": listed.get(lid), "scanned_bytes": scanned_bytes.get(lid)}
                for lid in sorted(set(listed) | set(scanned_bytes))
                if listed.get(lid) != scanned_bytes.get(lid)
            ]
            lmap["ledgers"] = len(listed)
            lmap["consistent"] = not mismatches and (h is None or h.ledgers_count == len(listed))
            lmap["mismatches"] = mismatches
        else:
            lmap["consistent"] = None
    except ValueError as err:
        lmap.update(source=None, consistent=False, error=_error_text(err))
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
    info: dict[str, Any] = {"path": str(f.path), "kind": f.kind, "size": file_size(f)}
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
    return info


def run(args: argparse.Namespace, out: Output) -> int:
    results = inspect_files(find_bookie_files(args.paths), out)
    if out.json_mode:
        out.json({"files": results})
    else:
        print_report(out, results, args.all_ledgers)
    return EXIT_OK


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
        if info["kind"] not in (ENTRY_LOG, JOURNAL):
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
