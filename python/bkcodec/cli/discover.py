"""Finding bookie files: explicit paths and whole bookie directories.

What a file is comes from the core (`bkcodec.file_kind`, `bkcodec.bookie_layout`),
the one place that knows how BookKeeper names and places its files: a file inside
a RocksDB database (DbLedgerStorage's index) is never an entry log, log4j's
`*.log` files are not entry logs, text named like an entry log is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .. import BookieFile, BookieLayout, bookie_layout, file_kind
from .errors import CliError, UnknownFormatError

ENTRY_LOG = "entry_log"
JOURNAL = "journal"
INDEX = "index"
LAST_MARK = "last_mark"
LAST_ID = "last_id"

KINDS = (ENTRY_LOG, JOURNAL, INDEX, LAST_MARK, LAST_ID)

__all__ = ["BookieFile", "Discovery", "KINDS", "classify", "discover", "find_bookie_files", "journal_marks"]


def _words(kind: str) -> str:
    return kind.replace("_", " ")


def _head(path: Path, n: int = 8) -> bytes:
    with path.open("rb") as f:
        return f.read(n)


def classify(path: Path) -> BookieFile:
    """The kind of a file named on the command line (by name and place, else by
    magic). Raises UnknownFormatError for anything that is not a bookie file."""
    found = file_kind(path)
    if found.kind == "other":
        if found.note:
            raise UnknownFormatError(f"unknown format: {found.note}", str(path))
        raise UnknownFormatError(
            "unknown format: not an entry log, journal, index file, lastMark or lastId "
            f"(name not recognised, first bytes {_head(path).hex() or 'none'})",
            str(path),
        )
    return found


@dataclass
class Discovery:
    """What the command-line paths hold: bookie files, and the layout of each
    directory among them (its databases, cookies and directories)."""

    files: list[BookieFile] = field(default_factory=list)
    layouts: list[BookieLayout] = field(default_factory=list)

    @property
    def databases(self) -> list:
        return [db for layout in self.layouts for db in layout.databases]


def journal_marks(layouts: Iterable[BookieLayout]) -> dict[str, int]:
    """For each journal a bookie's `lastMark` names, the offset it names there (by the
    journal's real path). BookKeeper replays from the largest mark its ledger
    directories hold; a mark past the journal's data means lost writes."""
    from .. import read_last_mark

    marks: dict[str, int] = {}
    for layout in layouts:
        found = []
        for f in layout.files_of(LAST_MARK):
            try:
                found.append(read_last_mark(f.path))
            except (OSError, ValueError):
                pass  # verify reports the lastMark file itself
        if not found:
            continue
        mark = max(found)
        for j in layout.journals:
            if j.journal_id == mark.journal_id:
                marks[os.path.realpath(j.path)] = mark.offset
    return marks


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise CliError("no such file or directory", str(path))
    if not os.access(path, os.R_OK):
        raise CliError("permission denied", str(path))


def discover(
    paths: Iterable[str | os.PathLike[str]], kinds: Iterable[str] = KINDS, *, allow_databases: bool = False
) -> Discovery:
    """Resolves command-line paths: files are classified, directories walked.

    A directory holding no bookie file of the wanted kinds is an error (unless
    `allow_databases` and it holds index databases), as is a file of an unwanted
    kind. The same file named twice is read once.
    """
    wanted = set(kinds)
    out = Discovery()
    for p in paths:
        path = Path(p)
        _check_readable(path)
        if path.is_dir():
            if file_kind(path).kind == "rocksdb" and not allow_databases:
                raise CliError("is a RocksDB database (a DbLedgerStorage index), not a bookie directory", str(path))
            layout = bookie_layout(path)
            found = [f for f in layout.files if f.kind in wanted]
            if not found and not (allow_databases and layout.databases):
                names = ", ".join(_words(k) for k in KINDS if k in wanted)
                raise CliError(f"no bookie files found ({names})", str(path))
            out.layouts.append(layout)
            out.files.extend(found)
        else:
            f = classify(path)
            if f.kind not in wanted:
                names = " or ".join(_words(k) for k in KINDS if k in wanted)
                what = _words(f.kind)
                if f.kind == "rocksdb_file":
                    what = f"file of the RocksDB database {f.role or Path(f.path).parent.name} (a DbLedgerStorage index)"
                raise CliError(f"is a {what}; this command reads {names}", str(path))
            out.files.append(f)
    seen: set[Path] = set()
    unique = []
    for f in out.files:
        key = Path(f.path).resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    out.files = unique
    return out


def find_bookie_files(paths: Iterable[str | os.PathLike[str]], kinds: Iterable[str] = KINDS) -> list[BookieFile]:
    """The bookie files of the wanted kinds at the command-line paths."""
    return discover(paths, kinds).files
