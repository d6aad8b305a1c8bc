"""Bookie files as Arrow streams: which files a path names, which kind they are, and
how bkcodec reads them.

The data source and the jobs go through here, so two things sit in one place each:
listing the input files (`list_files`, on the driver) and opening one file, or one
byte range of it, for a task (`open_split`). Everything that looks at bytes is
bkcodec's.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import warnings
from dataclasses import dataclass, replace
from typing import Iterable, Iterator

import bkcodec
import pyarrow as pa

__all__ = [
    "KINDS",
    "FileSplit",
    "Listing",
    "ListedFile",
    "NoFilesWarning",
    "ReadOptions",
    "expand_paths",
    "file_size",
    "kind_of",
    "list_files",
    "name_id_of",
    "open_split",
    "plan_splits",
    "read_split",
    "reader_schema",
    "split_file",
]

ENTRY_LOG, JOURNAL, INDEX = "entrylog", "journal", "index"
KINDS = (ENTRY_LOG, JOURNAL, INDEX)
# The data source's kind names for bkcodec's file kinds.
_KIND_OF_CORE = {"entry_log": ENTRY_LOG, "journal": JOURNAL, "index": INDEX}
# For messages only: which files are of which kind is bkcodec.file_kind's to say.
_SUFFIX = {ENTRY_LOG: ".log", JOURNAL: ".txn", INDEX: ".idx"}
# The column each kind's reader fills from the hex id in the file name.
NAME_ID_COLUMN = {ENTRY_LOG: "log_id", JOURNAL: "journal_id", INDEX: "ledger_id"}
DIGEST_TYPES = ("auto", *bkcodec.digest_types())
PAYLOADS = ("binary", "binary_view", "none")


class NoFilesWarning(UserWarning):
    """The paths hold no file of the kind asked for: the result is empty."""


def kind_of(path: str | os.PathLike) -> str | None:
    """The kind BookKeeper's name for `path` gives it (`<hex>.log`, `.txn`, `.idx`, as
    bkcodec.file_kind reads names; `server.log` is none), or None. By name only: a
    file named and placed as an entry log is read as one, damaged or not."""
    return _KIND_OF_CORE.get(bkcodec.file_kind(path, sniff=False).kind)


def name_id_of(path: str | os.PathLike) -> int | None:
    """The id a bookie file's name gives (`<hex>.log`, `.txn`, `.idx`, as bkcodec
    reads BookKeeper's names), or None."""
    found = bkcodec.file_kind(path, sniff=False)
    return {"entry_log": found.log_id, "journal": found.journal_id, "index": found.ledger_id}.get(found.kind)


def log_id_of(path: str | os.PathLike) -> int | None:
    """The id in an entry log's name (`<hex>.log`, as BookKeeper names them), or None."""
    return bkcodec.file_kind(path, sniff=False).log_id


@dataclass(frozen=True)
class ReadOptions:
    """How entries inside the files are decoded (the data source's options)."""

    digest_type: str = "auto"
    password: str = ""
    verify: bool = True
    payload: str = "binary"
    # A directory of ledger metadata (a ZooKeeper dump): each ledger's own digest type
    # and password.
    ledger_metadata: str | None = None

    def __post_init__(self):
        if self.digest_type not in DIGEST_TYPES:
            raise ValueError(f"digestType must be one of {', '.join(DIGEST_TYPES)}, not {self.digest_type!r}")
        if self.payload not in PAYLOADS:
            raise ValueError(f"payload must be one of {', '.join(PAYLOADS)}, not {self.payload!r}")

    @property
    def reader_arguments(self) -> dict:
        """Keyword arguments of `bkcodec.read_entry_log` and `read_journal`."""
        return {
            "digest_type": None if self.digest_type == "auto" else self.digest_type,
            "password": self.password,
            "verify": self.verify,
            "payload": self.payload,
            "on_error": "flag",
            "ledger_metadata": self.ledger_metadata,
        }


@dataclass(frozen=True)
class FileSplit:
    """A file, or the byte range `[start, end)` of one (each record belongs to the
    range holding its size field, so ranges that tile a file read each record once).
    `size` is the file's size when it was listed (None if it could not be read)."""

    path: str
    kind: str
    start: int | None = None
    end: int | None = None
    size: int | None = None

    @property
    def length(self) -> int:
        """Bytes this split covers (0 for a file that could not be sized)."""
        if self.start is not None and self.end is not None:
            return max(0, self.end - self.start)
        return self.size or 0

    def describe(self) -> str:
        return self.path if self.start is None else f"{self.path} (bytes {self.start}..{self.end})"


@dataclass(frozen=True)
class ListedFile:
    path: str
    size: int | None  # None: named explicitly but gone (read as one flagged row)


@dataclass(frozen=True)
class Listing:
    """The files of one kind a read covers, sorted by path, and why it may be empty."""

    kind: str
    files: tuple[ListedFile, ...]
    note: str | None = None

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


def expand_paths(paths: str | Iterable[str], *, missing_ok: bool = False) -> list[str]:
    """Files named by `paths`: files, directories (walked) and globs, sorted, no repeats.

    `paths` is one path or several; a string holding a JSON list (as Spark passes
    `load([...])`) counts as several. A `file:` URI prefix is dropped, and relative
    paths are made absolute. A missing path raises FileNotFoundError, or with
    `missing_ok` is kept (its reader reports it) and a glob matching nothing is skipped.
    """
    if isinstance(paths, str):
        paths = json.loads(paths) if paths.startswith("[") else [paths]
    found: dict[str, None] = {}
    for given in paths:
        # Absolute, so the splits name the same files wherever they are read.
        given = os.path.abspath(os.path.expanduser(_local(given)))
        matches = sorted(glob.glob(given, recursive=True)) if glob.has_magic(given) else [given]
        if not matches and not missing_ok:
            raise FileNotFoundError(f"no file matches {given}")
        for match in matches:
            if os.path.isdir(match):
                for root, dirs, names in os.walk(match):
                    dirs.sort()
                    for name in sorted(names):
                        found.setdefault(os.path.join(root, name))
            elif os.path.exists(match) or missing_ok:
                found.setdefault(match)
            else:
                raise FileNotFoundError(f"no such file or directory: {match}")
    return sorted(found)


def _local(path: str) -> str:
    if path.startswith("file://"):
        return path[len("file://") :]
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


def select_kind(files: list[str], kind: str) -> tuple[str, list[str]]:
    """The kind to read and the files of that kind.

    `kind="auto"` takes the one kind the file names show and fails when they show
    several or none. A named kind takes files named for it (possibly none); a path
    given as a single file is read as the named kind whatever its name.
    """
    if kind != "auto" and kind not in KINDS:
        raise ValueError(f"kind must be auto or one of {', '.join(KINDS)}, not {kind!r}")
    by_kind: dict[str, list[str]] = {}
    for f in files:
        k = kind_of(f)
        if k is not None:
            by_kind.setdefault(k, []).append(f)
    if kind == "auto":
        if len(by_kind) != 1:
            found = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items())) or "no bookie files"
            raise ValueError(
                f"cannot tell which kind of bookie file to read ({found} among {len(files)} files); "
                f"set .option('kind', ...) to one of {', '.join(KINDS)}"
            )
        return next(iter(by_kind.items()))
    if len(files) == 1 and kind_of(files[0]) is None:
        return kind, files
    return kind, by_kind.get(kind, [])


def list_files(paths: str | Iterable[str], kind: str, *, missing_ok: bool = False) -> Listing:
    """The files of `kind` (or, with "auto", the one kind present) that `paths` name,
    with their sizes: the one place input files are listed.

    A named kind with no such files is an empty listing with a `note`, and a
    `NoFilesWarning`; explicitly named files that are gone are kept with size None
    when `missing_ok` (each reads as one flagged row).
    """
    chosen, selected = select_kind(expand_paths(paths, missing_ok=missing_ok), kind)
    listed = tuple(ListedFile(path, file_size(path)) for path in selected)
    note = None
    if not listed:
        shown = paths if isinstance(paths, str) else ", ".join(map(str, paths))
        note = f"no {chosen} files (*{_SUFFIX[chosen]}) in {shown}: the result is empty"
        warnings.warn(note, NoFilesWarning, stacklevel=2)
    return Listing(chosen, listed, note)


def file_size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None  # read() reports it as a flagged row


def plan_splits(files: list[str], kind: str, split_size: int) -> list[FileSplit]:
    """One split per file, and byte ranges of at most `split_size` for large entry logs
    and journals."""
    if split_size <= 0:
        raise ValueError(f"splitSize must be positive, not {split_size}")
    splits = []
    for path in files:
        splits.extend(split_file(FileSplit(path, kind, size=file_size(path)), split_size))
    return splits


def split_file(split: FileSplit, split_size: int) -> list[FileSplit]:
    """`split` cut into byte ranges of at most `split_size` (entry logs and journals,
    whose readers take ranges; index files are small and read whole)."""
    if split.kind == INDEX or split.size is None:
        return [split]
    start = 0 if split.start is None else split.start
    end = split.size if split.end is None else split.end
    if end - start <= split_size:
        return [split]
    return [replace(split, start=s, end=min(s + split_size, end)) for s in range(start, end, split_size)]


def open_split(split: FileSplit, options: ReadOptions) -> bkcodec.RecordBatchReader:
    """bkcodec's lazy reader for one split (nothing is read until it is iterated): the
    one place a task opens a file."""
    if split.kind == ENTRY_LOG:
        return bkcodec.read_entry_log(split.path, start=split.start, end=split.end, **options.reader_arguments)
    if split.kind == JOURNAL:
        return bkcodec.read_journal(split.path, start=split.start, end=split.end, **options.reader_arguments)
    return bkcodec.read_index(split.path)


def read_split(split: FileSplit, options: ReadOptions) -> Iterator[pa.RecordBatch]:
    """The split's rows, batch by batch; bkcodec's typed errors propagate."""
    with open_split(split, options) as reader:
        yield from reader


@functools.lru_cache(maxsize=None)
def reader_schema(kind: str, options: ReadOptions) -> pa.Schema:
    """The Arrow schema bkcodec's reader gives files of `kind` read with `options`."""
    core_kind = {ENTRY_LOG: "entry_log", JOURNAL: "journal", INDEX: "index"}[kind]
    return bkcodec.reader_schema(core_kind, payload=options.payload, on_error="flag")
