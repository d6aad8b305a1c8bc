"""`bkcodec inventory`, `bkcodec audit` and `bkcodec recover`: many bookies at once.

- inventory: one bookie's copies of entries to Parquet (or Arrow), to carry to
  wherever the audit runs.
- audit: bookie directories and/or inventories against a metadata dump: which
  entries are lost, under-replicated, divergent, corrupt on one copy, misplaced.
  Exit 1 when an entry is under_replicated, below_ack_quorum, lost, divergent or
  corrupt_copy; 0 otherwise (misplaced, unconfirmed, orphan, unknown and gap are
  reported, not failures).
- recover: one ledger's entries from the best copies, in entry order, to Parquet,
  Arrow, or a new entry log.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import EXIT_DAMAGE, EXIT_OK, CliError
from .export_arrow import ARROW_SUFFIXES, PARQUET_SUFFIXES, prepare_target, write_output
from .output import Output
from .readers import DIGEST_CHOICES

INVENTORY_COLUMNS_SHOWN = ("bookie_id", "copies", "verified", "failed", "damaged", "unchecked", "unreadable", "ledgers")


def _add_digest_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metadata",
        type=Path,
        metavar="DUMP",
        help="a dump of the ledgers' metadata znodes (load_ledger_metadata_dir's layout): "
        "placement, quorums, digest types and passwords",
    )
    p.add_argument("--digest-type", choices=DIGEST_CHOICES, help="digest type of ledgers the metadata does not name (default: inferred)")
    p.add_argument("--password", default="", help="HMAC password of ledgers the metadata does not name")


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "inventory",
        parents=[parent],
        help="one bookie's copies of entries (ids, verdict, payload hash, place) to Parquet",
        description="Write one row per copy of an entry a bookie holds, in its entry logs and "
        "journals: bookie id (from its cookie), ids, last-add-confirmed, digest verdict, payload "
        "size and XXH3-64 hash, file and offset, whether the index points at it, and the ledger's "
        "state in the bookie's index. Tens of bytes a copy: run it on each bookie's machine and "
        "audit the inventories anywhere.",
    )
    p.add_argument("bookie", type=Path, metavar="BOOKIE", help="a bookie directory")
    p.add_argument("--to", required=True, type=Path, metavar="OUT", help="out.parquet or out.arrow")
    p.add_argument("--bookie-id", help="the bookie's id, when its cookies do not name it")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it is a previous output of bkcodec's")
    _add_digest_arguments(p)
    p.set_defaults(run=run_inventory)

    a = sub.add_parser(
        "audit",
        parents=[parent],
        help="audit bookies (directories or inventories) against where BookKeeper placed each entry",
        description="For every entry the metadata says exists: which bookies should hold it, which "
        "hold a verified copy, and its status: under_replicated, below_ack_quorum, lost, divergent, "
        "corrupt_copy, misplaced, unconfirmed (past an open ledger's last confirmed entry), "
        "orphan (copies of a ledger with no metadata), unknown (a bookie that should hold it "
        "was not among the inputs). Without --metadata, what the copies alone tell "
        "(divergent, corrupt_copy, gap below the highest last-add-confirmed). Exit 1 when an "
        "entry is under_replicated, below_ack_quorum, lost, divergent or corrupt_copy.",
    )
    a.add_argument("inputs", nargs="+", type=Path, metavar="BOOKIE_OR_INVENTORY")
    a.add_argument("--findings", type=Path, metavar="OUT", help="also write the findings table here (.parquet or .arrow)")
    _add_digest_arguments(a)
    a.set_defaults(run=run_audit)

    r = sub.add_parser(
        "recover",
        parents=[parent],
        help="one ledger's entries from the best copies across bookies",
        description="Read one ledger's entries from several bookie directories, taking for each "
        "entry a verified copy (an indexed entry-log copy first, then a journal's). Entries whose "
        "verified copies disagree are written with an error and no payload, never chosen "
        "silently; entries no bookie holds are listed. OUT is .parquet, .arrow, or .log (a new "
        "entry log of the recovered entries, re-encoded with their digest type).",
    )
    r.add_argument("inputs", nargs="+", type=Path, metavar="BOOKIE")
    r.add_argument("--ledger", required=True, type=int, help="the ledger id")
    r.add_argument("--scope", type=int, default=0, help="the ledger's BP-35 scope (default 0)")
    r.add_argument("--to", required=True, type=Path, metavar="OUT", help="out.parquet, out.arrow or out.log")
    r.add_argument("--overwrite", action="store_true", help="replace OUT if it is a previous output of bkcodec's")
    _add_digest_arguments(r)
    r.set_defaults(run=run_recover)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    if args.metadata is not None and not args.metadata.is_dir():
        raise CliError("not a directory (a dump of the metadata store is expected)", str(args.metadata))
    return {
        "metadata": str(args.metadata) if args.metadata is not None else None,
        "digest_type": args.digest_type,
        "password": args.password,
    }


def _format(path: Path, allowed: tuple[str, ...]) -> str:
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        fmt = "parquet"
    elif suffix in ARROW_SUFFIXES:
        fmt = "arrow"
    elif suffix == ".log":
        fmt = "entry-log"
    else:
        fmt = ""
    if fmt not in allowed:
        raise CliError(f"unknown output format: name it {' or '.join('.' + a.replace('entry-', '') for a in allowed)}", str(path))
    return fmt


def run_inventory(args: argparse.Namespace, out: Output) -> int:
    from .. import cluster

    fmt = _format(args.to, ("parquet", "arrow"))
    if not args.bookie.is_dir():
        raise CliError("not a bookie directory", str(args.bookie))
    options = _options(args)
    prepare_target(args.to, [args.bookie], args.overwrite)
    notes: list[str] = []
    try:
        reader = cluster.inventory(args.bookie, bookie_id=args.bookie_id, notes=notes, **options)
    except cluster.BookieIdError as err:
        raise CliError(str(err)) from None
    counts: dict[str, int] = {}
    ledgers: set[tuple[int, int]] = set()

    def counted() -> Iterator[Any]:
        for batch in reader:
            for v in batch.column("verdict").to_pylist():
                counts[v] = counts.get(v, 0) + 1
            ledgers.update(zip(batch.column("scope_id").to_pylist(), batch.column("ledger_id").to_pylist()))
            yield batch

    try:
        write_output(fmt, args.to, reader.schema, counted(), "inventory")
    except BaseException:
        args.to.unlink(missing_ok=True)
        raise
    bookie_id = reader.schema.metadata[b"bkcodec.bookie_id"].decode()
    summary = {
        "bookie_id": bookie_id,
        "output": str(args.to),
        "copies": sum(n for v, n in counts.items() if v != "unreadable"),
        "verdicts": counts,
        "ledgers": len({k for k in ledgers if k[1] is not None}),
        "notes": notes,
    }
    if out.json_mode:
        out.json(summary)
    else:
        out.line(f"{summary['copies']} copies of {summary['ledgers']} ledgers on {bookie_id} written to {args.to}")
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        out.line(f"verdicts: {verdicts or 'none'}")
        for n in notes:
            out.line(f"note: {n}")
    return EXIT_OK


def run_audit(args: argparse.Namespace, out: Output) -> int:
    from .. import cluster

    options = _options(args)
    if args.findings is not None:
        fmt = _format(args.findings, ("parquet", "arrow"))
        prepare_target(args.findings, [*args.inputs, *([args.metadata] if args.metadata else [])], False)
    try:
        result = cluster.audit([str(p) for p in args.inputs], **options)
    except cluster.BookieIdError as err:
        raise CliError(str(err)) from None
    if args.findings is not None:
        write_output(fmt, args.findings, result.findings.schema, iter(result.findings.to_batches()), "audit findings")
    if out.json_mode:
        out.json(result.to_json())
    else:
        _print_audit(out, result, with_metadata=args.metadata is not None)
    return EXIT_DAMAGE if result.failed else EXIT_OK


def _bookie_names(bookies: list[str]) -> str:
    return ", ".join(bookies)


def _print_audit(out: Output, result: Any, *, with_metadata: bool) -> None:
    from .. import cluster

    ledgers = result.ledgers.to_pylist()
    out.line(f"audited {len(ledgers)} ledgers on {len(result.bookies)} bookies: {_bookie_names(result.bookies)}")
    if not with_metadata:
        out.line("no --metadata: placement not checked (copies, divergence and gaps only)")
    findings = result.findings.to_pylist()
    if findings:
        rows = [
            (
                f["scope_id"] or "",
                f["ledger_id"],
                f["first_entry"] if f["first_entry"] == f["last_entry"] else f"{f['first_entry']}-{f['last_entry']}",
                f["status"],
                _bookie_names(f["bookies"]),
            )
            for f in findings
        ]
        out.table(["scope", "ledger", "entries", "status", "bookies"], rows, title="findings", right=("ledger",))
    counts = {s: sum(l[s] for l in ledgers) for s in cluster.STATUSES}
    found = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    failed = any(counts[s] for s in cluster.FAILURE_STATUSES)
    out.line(f"entries: {found}" if found else "every entry is where it should be, verified")
    for n in result.notes:
        out.line(f"note: {n}")
    out.line("DATA AT RISK" if failed else "no data at risk", style="bold red" if failed else "bold green")


def run_recover(args: argparse.Namespace, out: Output) -> int:
    from .. import cluster
    from ..cluster import ledger_password

    fmt = _format(args.to, ("parquet", "arrow", "entry-log"))
    options = _options(args)
    for d in args.inputs:
        if not d.is_dir():
            raise CliError("not a bookie directory (recover reads payloads from the bookies)", str(d))
    prepare_target(args.to, [*args.inputs, *([args.metadata] if args.metadata else [])], args.overwrite)
    try:
        table = cluster.recover([str(p) for p in args.inputs], args.ledger, scope_id=args.scope, **options)
    except LookupError as err:
        raise CliError(str(err)) from None
    missing = _missing_entries(table)
    errors = [r["entry_id"] for r in table.select(["entry_id", "error"]).to_pylist() if r["error"] is not None]
    if fmt == "entry-log":
        _write_entry_log(args.to, table, ledger_password(options["metadata"], args.ledger, args.scope, args.password))
    else:
        write_output(fmt, args.to, table.schema, iter(table.to_batches()), "recover")
    summary = {
        "output": str(args.to),
        "scope_id": args.scope,
        "ledger_id": args.ledger,
        "entries": table.num_rows - len(errors),
        "divergent": errors,
        "missing": missing,
    }
    if out.json_mode:
        out.json(summary)
    else:
        out.line(f"recovered {summary['entries']} entries of ledger {args.ledger} to {args.to}")
        if errors:
            out.line(f"divergent (not written): entries {', '.join(map(str, errors))}")
        if missing:
            out.line(f"on no bookie given: entries {', '.join(map(str, missing))}")
    return EXIT_DAMAGE if errors or missing else EXIT_OK


def _missing_entries(table: Any) -> list[int]:
    ids = table.column("entry_id").to_pylist()
    have = set(ids)
    return [e for e in range(max(ids) + 1) if e not in have] if ids else []


def _write_entry_log(path: Path, table: Any, password: bytes | str) -> None:
    """The recovered entries as a new entry log (log id 0), each re-encoded as it was
    (ids, LAC, length, digest type; HMAC with the ledger's password) over the payload
    recovered, so BookKeeper's tools and bkcodec read it as the ledger."""
    from .. import EntryLogWriter, encode_entry

    rows = [r for r in table.to_pylist() if r["error"] is None and r["payload"] is not None]
    try:
        with EntryLogWriter(path, 0) as w:
            for r in rows:
                w.add_entry(
                    encode_entry(
                        r["ledger_id"],
                        r["entry_id"],
                        r["last_add_confirmed"],
                        r["length"],
                        r["payload"],
                        digest_type=r["digest_type"],
                        password=password,
                        scope_id=r["scope_id"],
                    )
                )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
