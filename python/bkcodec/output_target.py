"""Where a command may write: never into the bookie it reads, and never over anything
but a previous output of its own.

Every command that writes (`export`, `pulsar messages --to`, `rebuild-index`,
`inventory`, `recover`, the Spark jobs) checks its target here before it reads a
byte. Paths are compared after resolving `..` and symbolic links, so no spelling of a
path inside the bookie gets through. `--overwrite` removes only what bkcodec wrote
before: a Parquet or Arrow file whose schema carries the `bkcodec.output` marker, a
dataset directory of such files, or a Spark output directory (its `_SUCCESS` and
part files) or an empty directory; anything else is refused, to be removed by hand.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

#: The schema metadata key every file bkcodec writes carries; its value says what wrote it.
OUTPUT_MARKER = b"bkcodec.output"


class OutputTargetError(ValueError):
    """A target a command must not write to (inside its input, or not its own output to
    replace). `path` names the target."""

    def __init__(self, message: str, path: str | os.PathLike[str]) -> None:
        super().__init__(f"{os.fsdecode(path)!s}: {message}")
        self.path = os.fsdecode(path)
        self.reason = message


def marked_schema(schema, what: str):
    """`schema` with the marker that lets a later `--overwrite` recognise the file."""
    metadata = dict(schema.metadata or {})
    metadata[OUTPUT_MARKER] = what.encode()
    return schema.with_metadata(metadata)


def _resolved(path: str | os.PathLike[str]) -> Path:
    # strict=False: a target need not exist yet; its existing part is resolved.
    return Path(os.path.abspath(os.fspath(path))).resolve(strict=False)


def _is_within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _bookie_dir_of(path: Path) -> Path | None:
    """The bookie directory (journal, ledger or index directory: the parent of a
    `current/`, as the core's layout names it) that `path` is or lies in."""
    if path.is_dir() and (path / "current").is_dir():
        return path
    for candidate in (path, *path.parents):
        if candidate.name == "current":
            return candidate.parent
    return None


def protected_dirs(inputs: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The directories a command reading `inputs` must leave untouched: each input
    directory with every journal, ledger and index directory its layout names; for an
    input file, its directory; for anything in a bookie directory, that directory, and
    the bookie's root when it holds the bookie's other directories beside it (a
    `journal/current` beside `ledgers/current`)."""
    from . import bookie_layout

    dirs: list[Path] = []
    for given in inputs:
        path = _resolved(given)
        if not path.exists():
            dirs.append(path)  # reading it will fail; nothing beside it is read
            continue
        if path.is_dir():
            dirs.append(path)
            try:
                layout = bookie_layout(path)
            except Exception:  # noqa: BLE001 - an unreadable tree protects what was named
                layout = None
            if layout is not None:
                dirs.extend(_resolved(d) for d in (layout.root, *layout.journal_dirs, *layout.ledger_dirs, *layout.index_dirs))
        else:
            dirs.append(path.parent)
        bookie_dir = _bookie_dir_of(path)
        if bookie_dir is not None:
            dirs.append(bookie_dir)
            root = bookie_dir.parent
            try:
                siblings = [d for d in root.iterdir() if d != bookie_dir and (d / "current").is_dir()]
            except OSError:
                siblings = []
            if siblings:
                dirs.append(root)
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def check_outside_inputs(target: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raises OutputTargetError when `target` lies inside an input's bookie (through
    `..` or a symbolic link too), is an input itself, or holds one."""
    resolved = _resolved(target)
    inputs = list(inputs)
    for d in protected_dirs(inputs):
        if _is_within(resolved, d):
            raise OutputTargetError(f"is inside the bookie being read ({d}); write the output elsewhere", target)
    for given in inputs:
        if _is_within(_resolved(given), resolved):
            raise OutputTargetError(f"holds the input {os.fsdecode(given)}; write the output elsewhere", target)


# What Spark leaves in an output directory: part files, its commit markers, checksum
# files beside them, and partition directories named key=value.
_SPARK_FILE = re.compile(r"^(part-.*|_SUCCESS|_committed_.*|_started_.*|\..*\.crc)$")
_PARTITION_DIR = re.compile(r"^[^=/]+=[^/]*$")


def _is_marked_arrow_file(path: Path) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            schema = pq.read_schema(path)
        else:
            with pa.memory_map(str(path)) as source:
                schema = pa.ipc.open_file(source).schema
    except Exception:  # noqa: BLE001 - not a readable Arrow file: not ours
        return False
    return OUTPUT_MARKER in (schema.metadata or {})


def _is_previous_output(path: Path) -> bool:
    if path.is_symlink():
        return False
    if path.is_file():
        return _is_marked_arrow_file(path)
    if not path.is_dir():
        return False
    names = [p.relative_to(path) for p in path.rglob("*")]
    if not names:
        return True  # an empty directory: nothing to lose
    files = [n for n in names if (path / n).is_file() and not (path / n).is_symlink()]
    dirs = [n for n in names if (path / n).is_dir() and not (path / n).is_symlink()]
    if len(files) + len(dirs) != len(names):
        return False  # a link or a special file: not something we wrote
    if not all(_PARTITION_DIR.match(part) for d in dirs for part in d.parts):
        return False
    if (path / "_SUCCESS").is_file():
        return all(_SPARK_FILE.match(f.name) for f in files)
    # A dataset `export --partition-by` wrote: marked Parquet files in partition directories.
    return bool(files) and all(f.suffix == ".parquet" and _is_marked_arrow_file(path / f) for f in files)


def prepare_target(
    target: str | os.PathLike[str],
    inputs: Sequence[str | os.PathLike[str]],
    *,
    overwrite: bool,
) -> None:
    """Checks that `target` may be written: outside the inputs, in an existing
    directory, and new unless `overwrite` is given and it is a previous output of
    bkcodec's, which is then removed. Raises OutputTargetError otherwise."""
    check_outside_inputs(target, inputs)
    path = Path(os.path.abspath(os.fspath(target)))
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise OutputTargetError("already exists (pass --overwrite to replace it)", target)
        if not _is_previous_output(path):
            raise OutputTargetError(
                "exists and is not an output bkcodec wrote; --overwrite replaces only those (remove it by hand)",
                target,
            )
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    if not path.parent.is_dir():
        raise OutputTargetError("no such directory", path.parent)
