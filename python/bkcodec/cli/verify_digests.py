"""`bkcodec verify`: check every digest and every record's framing; list what fails."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..paths import path_text
from .discover import ENTRY_LOG, INDEX, JOURNAL, LAST_ID, LAST_MARK, BookieFile, discover, journal_marks
from .errors import EXIT_CODES_HELP, HelpFormatter, exit_code, unreadable_reason
from .output import Output
from .readers import (
    DigestOptions,
    add_digest_options,
    batches_with_progress,
    digest_options,
    file_size,
    open_reader,
    progress_over,
)
from ..index_check import IndexReport, ScannedEntries, check_layouts
from .ranges import LedgerSelection, add_ledger_option, non_negative
from .scan_stats import FileTally, check_ledgers_map, ledgers_map_problem


MAX_FAILURES_SHOWN = 50

# What to say of an entry not checked, by its row's digest_unchecked_reason.
UNCHECKED_REASONS = {
    "no_password": "HMAC without the ledger's password (give --password or --metadata)",
    "unknown_type": "digest type unknown: no entry of the ledger verifies and its lengths do not tell "
    "(give --digest-type or --metadata)",
}


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "verify",
        parents=[parent],
        help="check every entry's digest and every file's structure; exit 1 on damage",
        description="Check every digest of every entry in entry logs and journals, the "
        "framing of every record, and the headers of index, lastMark and lastId files. "
        "In a bookie directory, also check its index (DbLedgerStorage's RocksDB "
        "databases, or .idx files) against the entry logs: every indexed entry must be "
        "at its location; entries the index does not know are listed as unindexed "
        "(informational). Prints a summary and each failure with file, offset, ledger "
        "and entry. "
        "Entries that cannot be checked (HMAC without the password, a ledger whose "
        "digest type nothing tells) are counted as unchecked, with the reason; they "
        "are not damage unless --strict. A file or directory that cannot be read "
        "(permissions) is listed as unreadable, neither clean nor damaged, and the "
        "others are still checked. "
        "With --ledger only those ledgers' entries and index files are checked; damaged "
        "spans whose ledger cannot be told are still listed, as they may hold them. "
        "Exit codes: 0 clean, 1 damage found, 2 usage or I/O error (or, with no damage "
        "found, something unreadable).",
        epilog=EXIT_CODES_HELP.format(findings="a failed digest, a damaged span, an index entry that does not "
                                      "match the logs (with --strict, unchecked entries too)"),
        formatter_class=HelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or bookie directories")
    p.add_argument(
        "--max-failures",
        type=non_negative,
        default=MAX_FAILURES_SHOWN,
        metavar="N",
        help=f"list at most N failures (default {MAX_FAILURES_SHOWN}; 0 lists all; --json always lists all)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="count entries whose digest could not be checked as failures",
    )
    add_ledger_option(p)
    add_digest_options(p)
    p.set_defaults(run=run)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def verify_scanned(
    f: BookieFile,
    digests: DigestOptions,
    task,
    base: int,
    ledgers: LedgerSelection | None = None,
    scanned: ScannedEntries | None = None,
    last_mark: int | None = None,
) -> tuple[dict[str, Any], list[dict]]:
    tally = FileTally()
    # The ledgers map is checked against every entry the log holds, whatever --ledger says.
    whole = FileTally() if ledgers is not None and f.kind == ENTRY_LOG else tally
    reader = open_reader(f, digests, verify=True, payload="none", last_mark=last_mark)
    for batch in batches_with_progress(reader, task, base):
        # So is the index.
        if scanned is not None and f.kind == ENTRY_LOG:
            scanned.add(str(f.path), batch)
        tally.add_batch(batch if ledgers is None else ledgers.rows_with_unknown(batch))
        if whole is not tally:
            whole.add_batch(batch)
    failures = []
    map_summary = None
    if f.kind == ENTRY_LOG:
        map_summary, problem = _check_map(f, whole)
        if problem is not None:
            failures.append(problem)
    for e in tally.entry_errors:
        failures.append(
            {
                "offset": e["offset"],
                "ledger_id": e["ledger_id"],
                "entry_id": e["entry_id"],
                "scope_id": e["scope_id"],
                "problem": "digest" if e.get("digest_ok") is False else "entry",
                "error": e["error"],
            }
        )
    for g in tally.gaps:
        failures.append(
            {
                "offset": g["offset"],
                "ledger_id": g["ledger_id"],
                "entry_id": g["entry_id"],
                "scope_id": None,
                "problem": g["kind"],
                "error": g["error"],
            }
        )
    summary = {
        "entries": tally.entries,
        "digest_ok": tally.digest_ok,
        "failed_entries": len(tally.entry_errors),
        "unchecked": tally.digest_unchecked,
        "unchecked_reasons": _unchecked_reasons(tally),
        "damaged_spans": len(tally.gaps),
        "records": dict(sorted(tally.records.items())),
    }
    if map_summary is not None:
        summary["ledgers_map"] = map_summary
    return summary, failures


def _check_map(f: BookieFile, whole: FileTally) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The log's ledgers map against its scan: a summary, and a failure when the map
    the header promises is unusable or wrong (garbage collection trusts it)."""
    from .. import entry_log_header

    try:
        header = entry_log_header(f.path)
    except ValueError:
        header = None  # the scan reports the damaged header
    lmap = check_ledgers_map(f.path, header, whole, _one_line)
    summary = {k: lmap.get(k) for k in ("present", "source", "consistent")}
    problem = ledgers_map_problem(lmap)
    if problem is None:
        return summary, None
    return summary, {
        "offset": header.ledgers_map_offset if header is not None and header.has_ledgers_map else None,
        "ledger_id": None,
        "entry_id": None,
        "scope_id": None,
        "problem": "ledgers_map",
        "error": problem,
    }


def _unchecked_reasons(tally: FileTally) -> dict[str, int]:
    return {UNCHECKED_REASONS.get(r, r or "not verified"): n for r, n in tally.unchecked.items()}


def verify_small_file(f: BookieFile, digests: DigestOptions) -> tuple[dict[str, Any], list[dict]]:
    """Index, lastMark and lastId files: their structure, and an index's explicit LAC digest."""
    from .. import decode_lac, index_header, read_index, read_last_id, read_last_mark

    summary: dict[str, Any] = {}
    if f.kind == INDEX:
        h = index_header(f.path)
        table = read_index(f.path).read_all()
        summary["entries"] = table.num_rows
        blob = h.explicit_lac_blob
        if blob is not None:
            ledger_ids = table.column("ledger_id").unique().to_pylist() if table.num_rows else []
            digest, password = _ledger_digest(digests, ledger_ids[0] if len(ledger_ids) == 1 else None)
            if digest is None:
                summary["explicit_lac"] = "unchecked"
            else:
                try:
                    decode_lac(blob, digest_type=digest, password=password, verify=True)
                    summary["explicit_lac"] = "ok"
                except ValueError as err:
                    summary["explicit_lac"] = "failed"
                    return summary, [
                        {
                            "offset": None,
                            "ledger_id": ledger_ids[0] if len(ledger_ids) == 1 else None,
                            "entry_id": None,
                            "scope_id": 0,
                            "problem": "explicit_lac",
                            "error": f"explicit LAC in the header: {_one_line(err)}",
                        }
                    ]
    elif f.kind == LAST_MARK:
        mark = read_last_mark(f.path)
        summary.update(journal_id=mark.journal_id, offset=mark.offset)
    elif f.kind == LAST_ID:
        summary["log_id"] = read_last_id(f.path)
    return summary, []


def _index_selected(f: BookieFile, ledgers: LedgerSelection) -> bool:
    """An index file of a selected ledger, by its path (`<hex id>.idx`, under the
    scope's directories for a scoped ledger), so damaged index files are judged too."""
    from .. import LedgerId

    try:
        ledger_id = int(f.path.stem, 16)
    except ValueError:
        return True
    if ledger_id >= 2**63:
        ledger_id -= 2**64
    if any((s.start is None or ledger_id >= s.start) and (s.end is None or ledger_id < s.end) for s in ledgers.spans):
        return True
    return any(f.path.as_posix().endswith("/" + LedgerId(s, lid).index_path()) for s, lid in ledgers.qualified)


def _ledger_digest(digests: DigestOptions, ledger_id: int | None) -> tuple[str | None, bytes]:
    md = (digests.ledger_metadata or {}).get(ledger_id) if ledger_id is not None else None
    if md is not None and md.digest_type is not None:
        return md.digest_type, md.password or b""
    return digests.digest_type, digests.password


def verify_files(
    files: list[BookieFile],
    digests: DigestOptions,
    out: Output,
    ledgers: LedgerSelection | None = None,
    layouts: list[Any] | None = None,
) -> dict[str, Any]:
    """Checks every file (of the selected ledgers), then the index of every bookie
    layout given; returns `clean`, `summary`, per-file reports, every failure, what
    could not be read (`unreadable`: files and directories, neither clean nor
    damaged), the `index` check and the `unindexed` entries (grouped by file and
    ledger)."""
    reports = []
    failures: list[dict[str, Any]] = []
    unreadable: list[dict[str, Any]] = [
        {"file": path_text(p), "kind": None, "error": reason} for layout in layouts or [] for p, reason in layout.unreadable
    ]
    marks = journal_marks(layouts or [])
    layouts = [layout for layout in layouts or [] if layout.storage is not None]
    scanned = ScannedEntries() if layouts else None
    with progress_over(out, files, "verifying") as task:
        base = 0
        for f in files:
            report: dict[str, Any] = {"path": path_text(f.path), "kind": f.kind, "size": file_size(f)}
            try:
                if f.kind in (ENTRY_LOG, JOURNAL):
                    mark = marks.get(os.path.realpath(f.path)) if f.kind == JOURNAL else None
                    summary, found = verify_scanned(f, digests, task, base, ledgers, scanned, mark)
                    base += report["size"]
                    task.update(completed=base)
                else:
                    summary, found = verify_small_file(f, digests)
            except ValueError as err:
                # Unreadable as a whole (bad header): one failure for the file.
                summary = {}
                found = [
                    {
                        "offset": getattr(err, "offset", None),
                        "ledger_id": None,
                        "entry_id": None,
                        "scope_id": None,
                        "problem": "file",
                        "error": _one_line(err),
                    }
                ]
            except OSError as err:
                # Not read at all (permissions, gone since it was listed): neither
                # clean nor damaged, and the other files are still checked.
                summary, found = {"unreadable": unreadable_reason(err)}, []
                unreadable.append({"file": report["path"], "kind": f.kind, "error": summary["unreadable"]})
                if scanned is not None and f.kind == ENTRY_LOG:
                    scanned.unreadable.add(str(f.path))
            report.update(summary)
            report["failures"] = len(found)
            reports.append(report)
            failures.extend({"file": report["path"], "kind": f.kind, **x} for x in found)

    index = check_layouts(layouts, scanned) if scanned is not None else None
    if index is not None:
        if ledgers is not None:
            index.failures = _of_ledgers(index.failures, ledgers)
            index.unindexed = _of_ledgers(index.unindexed, ledgers)
            index.unindexed_entries = sum(u["entries"] for u in index.unindexed)
        failures.extend(index.failures)
    totals = {
        "files": len(reports),
        "damaged_files": sum(1 for r in reports if r["failures"]),
        "entries": sum(r.get("entries", 0) for r in reports if r["kind"] in (ENTRY_LOG, JOURNAL)),
        "digest_ok": sum(r.get("digest_ok", 0) for r in reports),
        "failed_entries": sum(r.get("failed_entries", 0) for r in reports),
        "unchecked": sum(r.get("unchecked", 0) for r in reports),
        "unchecked_reasons": _sum_counts(r.get("unchecked_reasons", {}) for r in reports),
        "damaged_spans": sum(r.get("damaged_spans", 0) for r in reports),
        "failures": len(failures),
        "unreadable": len(unreadable),
    }
    return {
        "clean": not failures and not unreadable,
        "summary": totals,
        "files": reports,
        "failures": failures,
        "unreadable": unreadable,
        "index": _index_summary(layouts, index),
        "unindexed": index.unindexed if index is not None else [],
    }


def _index_summary(layouts: list[Any], index: IndexReport | None) -> dict[str, Any] | None:
    if index is None:
        return None
    return {
        "storage": sorted({layout.storage for layout in layouts}),
        "checked": index.unchecked is None,
        "unchecked_reason": index.unchecked,
        "entries": index.checked,
        "failures": len(index.failures),
        "unindexed_entries": index.unindexed_entries,
        "notes": index.notes,
    }


def _of_ledgers(rows: list[dict[str, Any]], ledgers: LedgerSelection) -> list[dict[str, Any]]:
    """The rows of the selected ledgers, and those whose ledger is unknown."""
    if not rows:
        return rows
    import pyarrow as pa

    ids = pa.RecordBatch.from_pydict(
        {
            "ledger_id": pa.array([r.get("ledger_id") for r in rows], pa.int64()),
            "scope_id": pa.array([r.get("scope_id") for r in rows], pa.int64()),
        }
    )
    keep = ledgers.mask(ids).to_pylist()
    return [r for r, k in zip(rows, keep) if k or r.get("ledger_id") is None]


def _sum_counts(counts) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in counts:
        for k, n in c.items():
            total[k] = total.get(k, 0) + n
    return total


def run(args: argparse.Namespace, out: Output) -> int:
    found = discover(args.paths, allow_databases=True)
    files = found.files
    if args.ledger is not None:
        files = [f for f in files if f.kind != INDEX or _index_selected(f, args.ledger)]
    result = verify_files(files, digest_options(args), out, args.ledger, found.layouts)
    # --strict: what could not be checked is not known to be intact.
    damaged = bool(result["failures"]) or bool(args.strict and result["summary"]["unchecked"])
    if damaged:
        result["clean"] = False
    result["strict"] = args.strict
    if out.json_mode:
        out.json(result)
    else:
        print_report(out, result, args.max_failures)
    return exit_code(damage=damaged, unreadable=bool(result["unreadable"]))


def print_report(out: Output, result: dict[str, Any], max_failures: int = 0) -> None:
    totals, reports, failures = result["summary"], result["files"], result["failures"]
    out.table(
        ["file", "kind", "entries", "ok", "failed", "unchecked", "damaged spans"],
        [
            [
                r["path"],
                r["kind"].replace("_", " "),
                r.get("entries", ""),
                r.get("digest_ok", ""),
                "UNREADABLE" if "unreadable" in r else r.get("failed_entries", r["failures"]),
                r.get("unchecked", ""),
                r.get("damaged_spans", ""),
            ]
            for r in reports
        ],
        right=("entries", "ok", "failed", "unchecked", "damaged spans"),
    )
    out.line()
    unreadable = result.get("unreadable") or []
    not_read = f"{len(unreadable)} {'path' if len(unreadable) == 1 else 'paths'} UNREADABLE (not checked)"
    if failures:
        where = [f"{totals['damaged_files']} of {totals['files']} files"] if totals["damaged_files"] else []
        if (result.get("index") or {}).get("failures"):
            where.append("the index")
        status = f"DAMAGE FOUND in {' and '.join(where) or 'the index'}"
        if unreadable:
            status += f"; {not_read}"
    elif unreadable:
        status = f"NOT CLEAN: {not_read}"
    elif not result["clean"]:
        status = "NOT CLEAN (--strict: unchecked entries)"
    else:
        status = "clean"
    out.line(
        f"{status}: {totals['entries']} entries, {totals['digest_ok']} verified, "
        f"{totals['failed_entries']} failed, {totals['unchecked']} unchecked; "
        f"{totals['damaged_spans']} damaged spans"
    )
    for reason, n in sorted(totals["unchecked_reasons"].items()):
        out.line(f"  unchecked: {n} entries: {reason}")
    if unreadable:
        out.line()
        out.line("unreadable (neither clean nor damaged: not read):")
        out.table(["file", "kind", "error"], [[u["file"], (u["kind"] or "").replace("_", " "), u["error"]] for u in unreadable])
    print_index(out, result)
    if failures:
        out.line()
        out.table(
            ["file", "offset", "ledger", "entry", "problem", "error"],
            [
                [
                    x["file"],
                    x["offset"],
                    x["ledger_id"],
                    x["entry_id"],
                    x["problem"],
                    x["error"],
                ]
                for x in (failures[:max_failures] if max_failures else failures)
            ],
            right=("offset", "ledger", "entry"),
        )
        if max_failures and len(failures) > max_failures:
            out.line(f"... and {len(failures) - max_failures} more failures (--max-failures 0 or --json lists all)")


# What each ledger state of entries the index does not know means (`ledger state`;
# the states of ledgers the index knows, `active`, `fenced`, `limbo`, take the default).
UNINDEXED_STATES = {
    "deleted": "the ledgers database has no row for the ledger: deleted, its entries await garbage collection",
    "no index file": "no index file (.idx) for the ledger in this ledger directory",
    "indexed elsewhere": "the index points at another copy of the entry (compaction copied it; this one awaits garbage collection)",
    "unknown": "the bookie has no ledger index to say whether the ledger exists",
}


def print_index(out: Output, result: dict[str, Any]) -> None:
    index = result.get("index")
    if index is None:
        return
    storage = " and ".join(index["storage"])
    if not index["checked"]:
        out.line(f"index ({storage}): unchecked: {index['unchecked_reason']}")
    else:
        out.line(
            f"index ({storage}): {index['entries']} entries checked against the entry logs, "
            f"{index['failures']} failures; {index['unindexed_entries']} entries in the logs are not indexed"
        )
    for note in index["notes"]:
        out.line(f"  note: {note}")
    if result["unindexed"]:
        out.line()
        out.line("not indexed (informational):")
        for state in sorted({u["ledger_state"] for u in result["unindexed"]}):
            out.line(f"  {state}: {UNINDEXED_STATES.get(state, 'the ledger is in the index, these entries are not')}")
        out.table(
            ["file", "scope", "ledger", "entries", "entry ids", "ledger state"],
            [
                [u["file"], u["scope_id"], u["ledger_id"], u["entries"], f"{u['first_entry']}..{u['last_entry']}", u["ledger_state"]]
                for u in result["unindexed"]
            ],
            right=("scope", "ledger", "entries"),
        )
