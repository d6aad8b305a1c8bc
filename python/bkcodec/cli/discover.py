"""Finding bookie files: explicit paths and whole bookie directories."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import CliError, UnknownFormatError

ENTRY_LOG = "entry_log"
JOURNAL = "journal"
INDEX = "index"
LAST_MARK = "last_mark"
LAST_ID = "last_id"

KINDS = (ENTRY_LOG, JOURNAL, INDEX, LAST_MARK, LAST_ID)

# File names as the bookie writes them (FORMATS.md §3.1, §5.1, §5.6, §6.1): hex ids for
# logs, journals and index files, so log4j's `bookkeeper-server.log` never matches.
_NAMED = (
    (re.compile(r"^[0-9a-fA-F]+\.log$"), ENTRY_LOG),
    (re.compile(r"^[0-9a-fA-F]+\.txn$"), JOURNAL),
    (re.compile(r"^[0-9a-fA-F]+\.idx$"), INDEX),
    (re.compile(r"^lastMark(\.\d+)?$"), LAST_MARK),
    (re.compile(r"^lastId$"), LAST_ID),
)

_MAGIC = {b"BKLO": ENTRY_LOG, b"BKLG": JOURNAL, b"BKLE": INDEX}
_MAGIC_OF = {kind: magic for magic, kind in _MAGIC.items()}


@dataclass(frozen=True)
class BookieFile:
    path: Path
    kind: str

    def __str__(self) -> str:
        return str(self.path)


def kind_from_name(name: str) -> str | None:
    for pattern, kind in _NAMED:
        if pattern.match(name):
            return kind
    return None


def _head(path: Path, n: int = 64) -> bytes:
    with path.open("rb") as f:
        return f.read(n)


_TEXT = set(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


def _is_text(head: bytes) -> bool:
    return bool(head) and all(b in _TEXT for b in head)


def _text_instead_of(kind: str, head: bytes) -> bool:
    """A file named like an entry log or index file that holds text (a log4j
    `0.log`, say) rather than a damaged binary file, which readers report on."""
    magic = _MAGIC_OF.get(kind)
    return kind in (ENTRY_LOG, INDEX) and magic is not None and not head.startswith(magic) and _is_text(head)


def classify(path: Path) -> str:
    """The kind of a file named on the command line, by name and then by magic.

    Raises UnknownFormatError for anything else, and for text in a file named like
    an entry log or index file. A binary file whose magic is wrong is taken on its
    name: the readers then report its damaged header.
    """
    head = _head(path)
    kind = kind_from_name(path.name)
    if kind is None:
        kind = _MAGIC.get(head[:4])
        if kind is None:
            raise UnknownFormatError(
                "unknown format: not an entry log, journal, index file, lastMark or lastId "
                f"(name not recognised, first bytes {head[:8].hex() or 'none'})",
                str(path),
            )
        return kind
    if _text_instead_of(kind, head):
        raise UnknownFormatError(
            f"unknown format: named like a {kind.replace('_', ' ')} but holds text "
            f"(no {_MAGIC_OF[kind].decode()} magic)",
            str(path),
        )
    return kind


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise CliError("no such file or directory", str(path))
    if not os.access(path, os.R_OK):
        raise CliError("permission denied", str(path))


def walk(root: Path) -> list[BookieFile]:
    """Every bookie file below a directory, sorted by path; other files are skipped."""
    found: list[BookieFile] = []

    def on_error(err: OSError) -> None:
        raise CliError(err.strerror or str(err), err.filename)

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        dirnames.sort()
        for name in sorted(filenames):
            kind = kind_from_name(name)
            if kind is None:
                continue
            path = Path(dirpath, name)
            if kind in (ENTRY_LOG, INDEX):
                # Skip text files a walk stumbles on that only look like ours by name.
                try:
                    head = _head(path)
                except OSError as err:
                    raise CliError(err.strerror or str(err), str(path)) from None
                if _text_instead_of(kind, head):
                    continue
            found.append(BookieFile(path, kind))
    return found


def find_bookie_files(paths: Iterable[str | os.PathLike[str]], kinds: Iterable[str] = KINDS) -> list[BookieFile]:
    """Resolves command-line paths: files are classified, directories walked.

    A directory that holds no bookie file is an error, as is a file of an unwanted kind.
    """
    wanted = set(kinds)
    out: list[BookieFile] = []
    for p in paths:
        path = Path(p)
        _check_readable(path)
        if path.is_dir():
            found = [f for f in walk(path) if f.kind in wanted]
            if not found:
                names = ", ".join(k.replace("_", " ") for k in KINDS if k in wanted)
                raise CliError(f"no bookie files found ({names})", str(path))
            out.extend(found)
        else:
            try:
                kind = classify(path)
            except IsADirectoryError:
                raise CliError("is a directory", str(path)) from None
            if kind not in wanted:
                names = " or ".join(k.replace("_", " ") for k in KINDS if k in wanted)
                raise CliError(f"is a {kind.replace('_', ' ')}; this command reads {names}", str(path))
            out.append(BookieFile(path, kind))
    # The same file named twice (or found under two roots) is read once.
    seen: set[Path] = set()
    unique = []
    for f in out:
        key = f.path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique
