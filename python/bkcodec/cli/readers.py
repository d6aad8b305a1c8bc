"""The library calls the commands share: opening a file's reader, digest options,
and walking its batches with progress."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import digest_types
from .discover import ENTRY_LOG, JOURNAL, BookieFile
from .errors import CliError
from .output import Output, ProgressTask

DIGEST_CHOICES = ("auto", *digest_types())


def add_digest_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("digests")
    g.add_argument(
        "--digest-type",
        choices=DIGEST_CHOICES,
        default="auto",
        help="digest type of every ledger; auto (default) reads it from V2 entries and "
        "infers it per ledger for V1 entries (CRC32C, CRC32, HMAC with --password)",
    )
    g.add_argument("--password", default="", help="ledger password (HMAC digests)")
    g.add_argument(
        "--metadata",
        type=Path,
        metavar="DIR",
        help="a directory of dumped ledger-metadata znodes: each ledger's digest type and password",
    )


@dataclass
class DigestOptions:
    digest_type: str | None
    password: bytes
    ledger_metadata: dict[int, Any] | None = field(default=None)

    def kwargs(self) -> dict[str, Any]:
        return {
            "digest_type": self.digest_type,
            "password": self.password,
            "ledger_metadata": self.ledger_metadata,
        }


def digest_options(args: argparse.Namespace) -> DigestOptions:
    from .. import load_ledger_metadata_dir

    metadata = None
    if args.metadata is not None:
        if not args.metadata.is_dir():
            raise CliError("not a directory of ledger metadata", str(args.metadata))
        with warnings.catch_warnings(record=True) as skipped:
            warnings.simplefilter("always")
            metadata = load_ledger_metadata_dir(args.metadata, strict=False)
        if not metadata:
            # The library's warning names the files it skipped and why.
            why = str(skipped[0].message) if skipped else "no ledger metadata found (one file per znode expected)"
            raise CliError(why, None if skipped else str(args.metadata))
    digest = None if args.digest_type == "auto" else args.digest_type
    return DigestOptions(digest, args.password.encode(), metadata)


def open_reader(
    f: BookieFile,
    digests: DigestOptions,
    *,
    verify: bool = True,
    payload: str = "none",
    start: int | None = None,
    end: int | None = None,
    last_mark: int | None = None,
):
    """The library's RecordBatchReader over an entry log's or a journal's rows
    (`last_mark`: the offset the bookie's lastMark names in this journal)."""
    from .. import read_entry_log, read_journal

    options: dict[str, Any] = dict(verify=verify, payload=payload, on_error="flag", start=start, end=end)
    options.update(digests.kwargs())
    if f.kind == ENTRY_LOG:
        return read_entry_log(f.path, **options)
    if f.kind == JOURNAL:
        return read_journal(f.path, last_mark=last_mark, **options)
    raise ValueError(f"{f.path}: a {f.kind} has no entries to read")


def file_size(f: BookieFile) -> int:
    """The file's size; 0 for one gone since it was listed (its read reports it)."""
    try:
        return f.path.stat().st_size
    except OSError:
        return 0


def batches_with_progress(reader, task: ProgressTask, base: int) -> Iterator[Any]:
    """Yields a reader's batches, moving the bar to the end of each batch's last record."""
    import pyarrow.compute as pc

    for batch in reader:
        if batch.num_rows and task.active:
            end = pc.max(pc.add(batch.column("offset"), batch.column("record_size"))).as_py()
            task.update(completed=base + end)
        yield batch


def scanned_bytes(files: list[BookieFile]) -> int:
    return sum(file_size(f) for f in files if f.kind in (ENTRY_LOG, JOURNAL))


def progress_over(out: Output, files: list[BookieFile], description: str):
    return out.progress(description, scanned_bytes(files))
