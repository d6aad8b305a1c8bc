"""`bkcodec export`: the rows of entry logs and journals to Parquet or Arrow IPC."""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import output_target
from ..bookie import aligned_batch, merged_schema, unreadable_batch
from ..paths import path_text
from .discover import ENTRY_LOG, JOURNAL, BookieFile, find_bookie_files
from .errors import EXIT_CODES_HELP, CliError, HelpFormatter, exit_code, unreadable_reason
from .output import Output
from .ranges import LedgerSelection, add_ledger_option
from .readers import (
    DigestOptions,
    add_digest_options,
    batches_with_progress,
    digest_options,
    file_size,
    open_reader,
)

PARQUET_SUFFIXES = (".parquet", ".pq")
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")


def add_parser(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "export",
        parents=[parent],
        help="write the rows of entry logs and journals to Parquet or Arrow IPC",
        description="Write every entry (and journal record, and damaged span with its error) "
        "of the given files to one Parquet file (.parquet), one Arrow IPC file (.arrow, "
        ".feather), or with --partition-by ledger a Parquet dataset directory with one "
        "ledger_id=N/ subdirectory per ledger. Rows carry their source file in a `file` column "
        "(a name that is not UTF-8 with its other bytes as \\xNN, backslashes doubled). "
        "With --ledger only those ledgers' rows are written, and the damaged spans whose "
        "ledger cannot be told (they may hold them). A file that cannot be read is one row "
        "with error_kind unreadable, the others are still exported. The output is written "
        "under a temporary name and renamed when complete: an interrupted export (Ctrl-C, "
        "SIGTERM) leaves nothing behind.",
        epilog=EXIT_CODES_HELP.format(findings="a written row has an error (a damaged span or a failed digest); "
                                      "the output is still written"),
        formatter_class=HelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="entry logs, journals, or bookie directories")
    p.add_argument("--to", required=True, type=Path, metavar="OUT", help="out.parquet, out.arrow, or a directory")
    p.add_argument(
        "--partition-by",
        choices=("ledger",),
        help="write a Parquet dataset directory partitioned by ledger id (hive style: ledger_id=N/)",
    )
    p.add_argument("--payload", choices=("binary", "none"), default="binary", help="keep payloads (default) or leave them out")
    p.add_argument("--no-verify", action="store_true", help="do not check digests (digest_ok is then null)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_ledger_option(p)
    add_digest_options(p)
    p.set_defaults(run=run)


def _output_format(args: argparse.Namespace) -> str:
    suffix = args.to.suffix.lower()
    if args.partition_by:
        if suffix in ARROW_SUFFIXES:
            raise CliError("--partition-by writes a Parquet dataset directory, not an Arrow file", str(args.to))
        return "parquet-dataset"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in ARROW_SUFFIXES:
        return "arrow"
    raise CliError(
        "unknown output format: name it .parquet or .arrow (or pass --partition-by ledger for a directory)",
        str(args.to),
    )


def prepare_target(path: Path, inputs: Sequence[str | os.PathLike[str]], overwrite: bool) -> None:
    """The command's one check of its target: outside what it reads, and new unless
    --overwrite replaces a previous output of bkcodec's."""
    try:
        output_target.prepare_target(path, inputs, overwrite=overwrite)
    except output_target.OutputTargetError as err:
        raise CliError(err.reason, err.path) from None


# Small batches (small files give one each) are gathered up to these sizes before
# they are written: one Parquet row group or IPC batch per file made the writer's
# footer, held in memory to the end, grow with the number of files.
COALESCE_ROWS = 64 * 1024
COALESCE_BYTES = 16 * 1024 * 1024
COPY_EVERY = 64


def _coalesced(batches: Iterator[Any]) -> Iterator[Any]:
    """`batches` in order, runs of small ones concatenated; a batch of at least
    COALESCE_ROWS rows or COALESCE_BYTES bytes passes as it is."""
    import pyarrow as pa

    pending: list[Any] = []
    rows = nbytes = fresh = 0  # fresh: batches at the end of `pending` not yet copied
    for b in batches:
        size = b.nbytes
        if b.num_rows >= COALESCE_ROWS or size >= COALESCE_BYTES:
            if pending:
                yield _concatenated(pa, pending)
                pending, rows, nbytes, fresh = [], 0, 0, 0
            yield b
            continue
        pending.append(b)
        rows += b.num_rows
        nbytes += size
        fresh += 1
        if fresh == COPY_EVERY:
            # A reader's batch may keep its whole read buffer alive: copied, the
            # run holds only its rows.
            pending[-fresh:] = [_concatenated(pa, pending[-fresh:])]
            fresh = 0
        if rows >= COALESCE_ROWS or nbytes >= COALESCE_BYTES:
            yield _concatenated(pa, pending)
            pending, rows, nbytes, fresh = [], 0, 0, 0
    if pending:
        yield _concatenated(pa, pending)


def _concatenated(pa: Any, batches: list[Any]) -> Any:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def partial_name(target: Path) -> Path:
    """Where `target` is written until it is complete: beside it, hidden, named for
    this process."""
    return target.with_name(f".{target.name}.partial-{os.getpid()}")


def write_output(fmt: str, target: Path, schema, batches: Iterator[Any], what: str = "export") -> None:
    """Writes `batches` to `target` as `fmt`, the schema marked as bkcodec's output (so
    --overwrite may later replace it). The output is written under `partial_name`
    and renamed to `target` once complete; whatever stops it (an error, Ctrl-C,
    SIGTERM, see `cli.main`) removes the partial output, so nothing that looks whole
    is left behind."""
    target = Path(target)
    partial = partial_name(target)
    try:
        _write_output(fmt, partial, schema, batches, what)
        os.replace(partial, target)
    except BaseException:
        if partial.is_dir() and not partial.is_symlink():
            shutil.rmtree(partial, ignore_errors=True)
        else:
            partial.unlink(missing_ok=True)
        raise


def _write_output(fmt: str, target: Path, schema, batches: Iterator[Any], what: str) -> None:
    import pyarrow as pa

    schema = output_target.marked_schema(schema, what)
    batches = (b.replace_schema_metadata(schema.metadata) for b in _coalesced(batches))

    if fmt == "parquet":
        import pyarrow.parquet as pq

        with pq.ParquetWriter(target, schema) as writer:
            for b in batches:
                writer.write_batch(b)
    elif fmt == "arrow":
        with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            for b in batches:
                writer.write_batch(b)
    else:
        import pyarrow.dataset as ds

        ds.write_dataset(
            pa.RecordBatchReader.from_batches(schema, batches),
            target,
            format="parquet",
            partitioning=ds.partitioning(pa.schema([schema.field("ledger_id")]), flavor="hive"),
            existing_data_behavior="error",
        )


def run(args: argparse.Namespace, out: Output) -> int:
    fmt = _output_format(args)
    files = find_bookie_files(args.paths, kinds=(ENTRY_LOG, JOURNAL))
    digests = digest_options(args)
    prepare_target(args.to, args.paths, args.overwrite)
    result = export_files(
        files, digests, args.to, fmt, out, payload=args.payload, verify=not args.no_verify, ledgers=args.ledger
    )
    if out.json_mode:
        out.json(result)
    else:
        print_result(out, result)
    damaged = result["rows_with_errors"] - len(result["unreadable"])
    return exit_code(damage=damaged > 0, unreadable=bool(result["unreadable"]))


def export_files(
    files: list[BookieFile],
    digests: DigestOptions,
    target: Path,
    fmt: str,
    out: Output,
    *,
    payload: str = "binary",
    verify: bool = True,
    ledgers: LedgerSelection | None = None,
) -> dict[str, Any]:
    """Writes the files' rows (of the selected ledgers) to `target` as `fmt` (parquet,
    arrow, parquet-dataset). A file that cannot be read is one row (`error_kind`
    `unreadable`) and is listed in the result's `unreadable`."""

    def reader_of(f: BookieFile):
        return open_reader(f, digests, verify=verify, payload=payload)

    def schema_of(f: BookieFile):
        from .. import reader_schema

        try:
            return reader_of(f).schema
        except OSError:
            kind: Any = f.kind  # an entry log or a journal
            mode: Any = payload
            return reader_schema(kind, payload=mode, on_error="flag")

    import pyarrow as pa

    # A reader's columns follow from its kind and options, not from the file: one
    # file of each kind gives them (opening every file here cost a reader per file).
    first: dict[str, BookieFile] = {}
    for f in files:
        first.setdefault(f.kind, f)
    schema = merged_schema([schema_of(f) for f in first.values()])
    counts = {"rows": 0, "entries": 0, "damaged": 0}
    unreadable: list[dict[str, Any]] = []

    with out.progress("exporting", sum(file_size(f) for f in files)) as task:

        def batches() -> Iterator[Any]:
            import pyarrow.compute as pc

            base = 0
            for f in files:
                try:
                    for batch in batches_with_progress(reader_of(f), task, base):
                        batch = batch if ledgers is None else ledgers.rows_with_unknown(batch)
                        counts["rows"] += batch.num_rows
                        if batch.num_rows:
                            counts["damaged"] += pc.sum(pc.is_valid(batch.column("error"))).as_py() or 0
                        yield aligned_batch(batch, schema, f.path, f.kind)
                except OSError as err:
                    # Neither clean nor damaged: one row says it was not read; the
                    # other files still are.
                    unreadable.append({"file": path_text(f.path), "kind": f.kind, "error": unreadable_reason(err)})
                    counts["rows"] += 1
                    counts["damaged"] += 1
                    yield unreadable_batch(schema, f.path, f.kind, err)
                base += file_size(f)
                task.update(completed=base)

        write_output(fmt, target, schema, batches())

    return {
        "output": path_text(target),
        "format": fmt,
        "partitioned_by": "ledger_id" if fmt == "parquet-dataset" else None,
        "files": len(files),
        "rows": counts["rows"],
        "rows_with_errors": counts["damaged"],
        "unreadable": unreadable,
    }


def print_result(out: Output, result: dict[str, Any]) -> None:
    what = {
        "parquet": "Parquet",
        "arrow": "Arrow IPC file",
        "parquet-dataset": "Parquet dataset, one ledger_id=N/ directory per ledger",
    }[result["format"]]
    out.line(
        f"exported {result['rows']} rows ({result['rows_with_errors']} with errors) from "
        f"{result['files']} files to {result['output']} ({what})"
    )
    for u in result.get("unreadable", []):
        out.line(f"UNREADABLE (one row with error_kind unreadable): {u['file']}: {u['error']}")
