"""`bkcodec verify`: check every digest and every record's framing; list what fails."""

from __future__ import annotations

import argparse
from typing import Any

from .discover import ENTRY_LOG, INDEX, JOURNAL, LAST_ID, LAST_MARK, BookieFile, discover
from .errors import EXIT_DAMAGE, EXIT_OK
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
from .index_check import IndexReport, ScannedEntries, check_layouts
from .scan_stats import FileTally


# What the readers say when no digest type verifies a V1 entry (wrong type or password,
# a DUMMY ledger, or real damage).
_NO_DIGEST_VERIFIES = "no digest type verifies"
MAX_FAILURES_SHOWN = 50


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
        "and entry. Exit codes: 0 clean, 1 damage found, 2 usage or I/O error.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or bookie directories")
    p.add_argument(
        "--max-failures",
        type=int,
        default=MAX_FAILURES_SHOWN,
        metavar="N",
        help=f"list at most N failures (default {MAX_FAILURES_SHOWN}; 0 lists all; --json always lists all)",
    )
    add_digest_options(p)
    p.set_defaults(run=run)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def verify_scanned(
    f: BookieFile, digests: DigestOptions, task, base: int, scanned: ScannedEntries | None = None
) -> tuple[dict[str, Any], list[dict]]:
    tally = FileTally()
    for batch in batches_with_progress(open_reader(f, digests, verify=True, payload="none"), task, base):
        tally.add_batch(batch)
        if scanned is not None and f.kind == ENTRY_LOG:
            scanned.add(str(f.path), batch)
    failures = []
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
        "damaged_spans": len(tally.gaps),
        "records": dict(sorted(tally.records.items())),
    }
    return summary, failures


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


def _ledger_digest(digests: DigestOptions, ledger_id: int | None) -> tuple[str | None, bytes]:
    md = (digests.ledger_metadata or {}).get(ledger_id) if ledger_id is not None else None
    if md is not None and md.digest_type is not None:
        return md.digest_type, md.password or b""
    return digests.digest_type, digests.password


def verify_files(
    files: list[BookieFile], digests: DigestOptions, out: Output, layouts: list[Any] | None = None
) -> dict[str, Any]:
    """Checks every file, then the index of every bookie layout given; returns
    `clean`, `summary`, per-file reports, every failure, the `index` check and the
    `unindexed` entries (grouped by file and ledger)."""
    reports = []
    failures: list[dict[str, Any]] = []
    layouts = [layout for layout in layouts or [] if layout.storage is not None]
    scanned = ScannedEntries() if layouts else None
    with progress_over(out, files, "verifying") as task:
        base = 0
        for f in files:
            report: dict[str, Any] = {"path": str(f.path), "kind": f.kind, "size": file_size(f)}
            try:
                if f.kind in (ENTRY_LOG, JOURNAL):
                    summary, found = verify_scanned(f, digests, task, base, scanned)
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
            report.update(summary)
            report["failures"] = len(found)
            reports.append(report)
            failures.extend({"file": str(f.path), "kind": f.kind, **x} for x in found)

    index = check_layouts(layouts, scanned) if scanned is not None else None
    if index is not None:
        failures.extend(index.failures)
    totals = {
        "files": len(reports),
        "damaged_files": sum(1 for r in reports if r["failures"]),
        "entries": sum(r.get("entries", 0) for r in reports if r["kind"] in (ENTRY_LOG, JOURNAL)),
        "digest_ok": sum(r.get("digest_ok", 0) for r in reports),
        "failed_entries": sum(r.get("failed_entries", 0) for r in reports),
        "unchecked": sum(r.get("unchecked", 0) for r in reports),
        "damaged_spans": sum(r.get("damaged_spans", 0) for r in reports),
        "failures": len(failures),
    }
    return {
        "clean": not failures,
        "summary": totals,
        "files": reports,
        "failures": failures,
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


def run(args: argparse.Namespace, out: Output) -> int:
    found = discover(args.paths, allow_databases=True)
    result = verify_files(found.files, digest_options(args), out, found.layouts)
    if out.json_mode:
        out.json(result)
    else:
        print_report(out, result, args.max_failures)
    return EXIT_OK if result["clean"] else EXIT_DAMAGE


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
                r.get("failed_entries", r["failures"]),
                r.get("unchecked", ""),
                r.get("damaged_spans", ""),
            ]
            for r in reports
        ],
        right=("entries", "ok", "failed", "unchecked", "damaged spans"),
    )
    out.line()
    status = "clean" if not failures else f"DAMAGE FOUND in {totals['damaged_files']} of {totals['files']} files"
    out.line(
        f"{status}: {totals['entries']} entries, {totals['digest_ok']} verified, "
        f"{totals['failed_entries']} failed, {totals['unchecked']} unchecked; "
        f"{totals['damaged_spans']} damaged spans"
    )
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
        if any(_NO_DIGEST_VERIFIES in (x["error"] or "") for x in failures):
            out.line(
                "hint: entries whose digest type could not be inferred fail; name it with "
                "--digest-type, give --password for HMAC, or pass the ledgers' --metadata"
            )


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
        out.line("not indexed (informational: deleted ledgers await garbage collection):")
        out.table(
            ["file", "scope", "ledger", "entries", "entry ids", "ledger state"],
            [
                [u["file"], u["scope_id"], u["ledger_id"], u["entries"], f"{u['first_entry']}..{u['last_entry']}", u["ledger_state"]]
                for u in result["unindexed"]
            ],
            right=("scope", "ledger", "entries"),
        )
