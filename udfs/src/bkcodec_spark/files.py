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
import re
import warnings
from dataclasses import dataclass
from typing import Iterable, Iterator

import bkcodec
import pyarrow as pa

__all__ = [
    "BOOKIE",
    "KINDS",
    "FileSplit",
    "Listing",
    "ListedFile",
    "NoFilesWarning",
    "ReadOptions",
    "expand_paths",
    "file_size",
    "remote_filesystem",
    "source",
    "is_remote",
    "kind_of",
    "list_files",
    "name_id_of",
    "open_split",
    "read_split",
    "reader_schema",
]

# The data source's kind names, each with bkcodec's file kind and the column its
# reader fills from the id in a file's name: the core's table (the JVM source's too).
_READ_KINDS = bkcodec.read_kinds()
KINDS = tuple(name for name, _, _ in _READ_KINDS)
_KIND_OF_CORE = {core: name for name, core, _ in _READ_KINDS}
CORE_KIND = {name: core for name, core, _ in _READ_KINDS}
ENTRY_LOG, JOURNAL, INDEX = _KIND_OF_CORE["entry_log"], _KIND_OF_CORE["journal"], _KIND_OF_CORE["index"]
# Entry logs and journals read together (a bookie directory with kind=auto), as
# bkcodec.read_bookie(kind="entries") merges them, each row with its `file_kind`.
BOOKIE = "bookie"
# URI schemes read through pyarrow.fs (s3a and s3n are Hadoop's names for S3).
REMOTE_SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "abfs": "abfs", "abfss": "abfss", "hdfs": "hdfs", "viewfs": "viewfs"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# For messages only: which files are of which kind is bkcodec.file_kind's to say.
_SUFFIX = {ENTRY_LOG: ".log", JOURNAL: ".txn", INDEX: ".idx", BOOKIE: ".log, *.txn"}
# The column each kind's reader fills from the hex id in the file name.
NAME_ID_COLUMN = {name: column for name, _, column in _READ_KINDS}
DIGEST_TYPES = ("auto", *bkcodec.digest_types())
PAYLOADS = tuple(bkcodec.payload_modes())


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
    # Options of the remote filesystem ((name, value) pairs, pyarrow.fs's names).
    filesystem: tuple[tuple[str, str], ...] = ()

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
    kind: str | None = None  # the file's own kind, in a BOOKIE listing


@dataclass(frozen=True)
class Listing:
    """The files of one kind a read covers, sorted by path, and why it may be empty."""

    kind: str
    files: tuple[ListedFile, ...]
    note: str | None = None
    # Files left out, each with why (text files named like entry logs, ...).
    skipped: tuple[tuple[str, str], ...] = ()
    # The remote filesystem's options, for reads on the driver while planning.
    filesystem: tuple[tuple[str, str], ...] = ()

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


def is_remote(path: str) -> bool:
    """Whether `path` is a URI read through pyarrow.fs (`s3://`, `s3a://`, `gs://`,
    `abfs://`, `hdfs://`, ...); `file://` and plain paths are local."""
    match = _SCHEME.match(str(path))
    return bool(match) and match.group(1).lower() in REMOTE_SCHEMES


def _option_value(name: str, text: str):
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    if name.endswith("_timeout"):
        return float(text)
    return text


# pyarrow.fs's option names (S3FileSystem, GcsFileSystem), found from any spelling:
# Spark lower-cases option names, so `fs.endpointOverride` arrives as `endpointoverride`.
_FS_OPTION_NAMES = {
    name.replace("_", ""): name
    for name in (
        "access_key", "secret_key", "session_token", "region", "scheme", "endpoint_override", "anonymous",
        "role_arn", "session_name", "external_id", "load_frequency", "allow_bucket_creation",
        "allow_bucket_deletion", "request_timeout", "connect_timeout", "background_writes",
        "force_virtual_addressing", "access_token", "target_service_account", "default_bucket_location",
        "retry_time_limit", "project_id", "account_name", "account_key", "user", "kerb_ticket",
    )
}


def _snake(name: str) -> str:
    name = name.strip()
    return _FS_OPTION_NAMES.get(name.replace("_", "").lower(), re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower())


@functools.lru_cache(maxsize=64)
def _filesystem(scheme: str, authority: str, options: tuple[tuple[str, str], ...]):
    import pyarrow.fs as pafs

    kwargs = {_snake(name): _option_value(_snake(name), value) for name, value in options}
    if kwargs and scheme == "s3":
        return pafs.S3FileSystem(**kwargs)
    if kwargs and scheme == "gs":
        return pafs.GcsFileSystem(**kwargs)
    # Elsewhere (and without options) the URI says it all; options become its query.
    from urllib.parse import urlencode

    query = "?" + urlencode(kwargs) if kwargs else ""
    return pafs.FileSystem.from_uri(f"{scheme}://{authority}/{query}")[0]


def remote_filesystem(uri: str, options: tuple[tuple[str, str], ...] = ()):
    """`(pyarrow filesystem, path in it)` for a remote `uri`; one filesystem per
    scheme, authority and options in a process. `options` are pyarrow.fs's
    constructor arguments (`endpoint_override`, `access_key`, `region`, ...; camelCase
    names are taken too); without them credentials and endpoints come from the
    environment (`AWS_*`, ...), as pyarrow reads it."""
    match = _SCHEME.match(uri)
    if not match or match.group(1).lower() not in REMOTE_SCHEMES:
        raise ValueError(f"not a remote path: {uri}")
    scheme = REMOTE_SCHEMES[match.group(1).lower()]
    rest = uri[match.end() :]
    authority, _, key = rest.partition("/")
    fs = _filesystem(scheme, authority, tuple(options))
    if scheme in ("s3", "gs"):
        return fs, f"{authority}/{key}".rstrip("/")
    # hdfs, abfs: the authority names the cluster or account, paths start at the root.
    return fs, "/" + key.rstrip("/")


def _remote_uri(given: str, path_in_fs: str) -> str:
    """The URI of `path_in_fs`, in the scheme and authority `given` used."""
    match = _SCHEME.match(given)
    assert match is not None
    authority, _, _ = given[match.end() :].partition("/")
    if REMOTE_SCHEMES[match.group(1).lower()] in ("s3", "gs"):
        return f"{match.group(0)}{path_in_fs}"
    return f"{match.group(0)}{authority}{path_in_fs}"


def _glob_regex(pattern: str) -> re.Pattern:
    """`pattern` as glob.glob(recursive=True) reads it: `**` any directories, `*` and
    `?` within one name, `[...]` a set."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _expand_remote(given: str, options, missing_ok: bool) -> dict[str, int | None]:
    """Files `given` (a remote file, directory or glob) names, with their sizes, from
    the filesystem's listing."""
    import pyarrow.fs as pafs

    fs, path = remote_filesystem(given, options)
    found: dict[str, int | None] = {}
    if glob.has_magic(path):
        base = path[: min(i for i, c in enumerate(path) if c in "*?[")].rpartition("/")[0]
        wanted = _glob_regex(path)
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
        for info in infos:
            if info.type == pafs.FileType.File and wanted.match(info.path):
                found[_remote_uri(given, info.path)] = info.size
        if not found and not missing_ok:
            raise FileNotFoundError(f"no file matches {given}")
        return found
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        for item in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
            if item.type == pafs.FileType.File:
                found[_remote_uri(given, item.path)] = item.size
    elif info.type == pafs.FileType.File:
        found[given] = info.size
    elif missing_ok:
        found[given] = None
    else:
        raise FileNotFoundError(f"no such file or directory: {given}")
    return found


def _path_list(paths: str | Iterable[str]) -> list[str]:
    if isinstance(paths, str):
        return json.loads(paths) if paths.startswith("[") else [paths]
    return [str(p) for p in paths]


def _expand(paths: str | Iterable[str], missing_ok: bool, options=()) -> dict[str, int | None]:
    """`expand_paths` with each file's size where the listing gave it (remote files)."""
    found: dict[str, int | None] = {}
    for given in _path_list(paths):
        if is_remote(given):
            for path, size in _expand_remote(given, options, missing_ok).items():
                found.setdefault(path, size)
            continue
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
                        found.setdefault(os.path.join(root, name), None)
            elif os.path.exists(match) or missing_ok:
                found.setdefault(match, None)
            else:
                raise FileNotFoundError(f"no such file or directory: {match}")
    return dict(sorted(found.items()))


def expand_paths(paths: str | Iterable[str], *, missing_ok: bool = False, filesystem: tuple = ()) -> list[str]:
    """Files named by `paths`: files, directories (walked) and globs, sorted, no repeats.

    `paths` is one path or several; a string holding a JSON list (as Spark passes
    `load([...])`) counts as several. A `file:` URI prefix is dropped, and relative
    paths are made absolute; remote URIs (`s3://`, `gs://`, `hdfs://`, ...) are listed
    through pyarrow.fs with the `filesystem` options. A missing path raises
    FileNotFoundError, or with `missing_ok` is kept (its reader reports it) and a glob
    matching nothing is skipped.
    """
    return list(_expand(paths, missing_ok, filesystem))


def _local(path: str) -> str:
    if path.startswith("file://"):
        return path[len("file://") :]
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


def select_kind(files: list[str], kind: str) -> tuple[str, list[str]]:
    """The kind to read and the files of that kind.

    `kind="auto"` takes the kind the file names show: entry logs and journals
    together are BOOKIE (read merged); index files only when nothing else is there;
    it fails when there are no bookie files. A named kind takes files named for it
    (possibly none); a path given as a single file is read as the named kind
    whatever its name.
    """
    if kind not in ("auto", BOOKIE) and kind not in KINDS:
        raise ValueError(f"kind must be auto or one of {', '.join(KINDS)}, not {kind!r}")
    by_kind: dict[str, list[str]] = {}
    for f in files:
        k = kind_of(f)
        if k is not None:
            by_kind.setdefault(k, []).append(f)
    if kind == BOOKIE:  # as `auto` chose it when the read was first planned
        return BOOKIE, sorted(by_kind.get(ENTRY_LOG, []) + by_kind.get(JOURNAL, []))
    if kind == "auto":
        if ENTRY_LOG in by_kind and JOURNAL in by_kind:
            return BOOKIE, sorted(by_kind[ENTRY_LOG] + by_kind[JOURNAL])
        for k in (ENTRY_LOG, JOURNAL, INDEX):
            if k in by_kind:
                return k, by_kind[k]
        raise ValueError(
            f"no bookie files among {len(files)} files; set .option('kind', ...) to one of {', '.join(KINDS)} "
            "to read a file of another name"
        )
    if len(files) == 1 and kind_of(files[0]) is None:
        return kind, files
    return kind, by_kind.get(kind, [])


def _not_bookie_files(paths: list[str], listed: Iterable[str] = ()) -> dict[str, str]:
    """Of files named like bookie files, those that are not, each with the note
    saying what it is. Local files: as bkcodec's discovery tells from their bytes (a
    RocksDB write-ahead log, a log4j log named `<hex>.log`). Remote files are not
    opened while listing: only a `*.log` in a directory the listing shows to be a
    RocksDB database (its `CURRENT` and `MANIFEST-*`) is left out."""
    names_in: dict[str, set[str]] = {}
    for path in listed:
        if is_remote(path):
            parent, _, name = path.rpartition("/")
            names_in.setdefault(parent, set()).add(name)
    databases = {d for d, names in names_in.items() if "CURRENT" in names and any(n.startswith("MANIFEST-") for n in names)}
    out = {}
    for path in paths:
        if is_remote(path):
            if path.rpartition("/")[0] in databases:
                out[path] = "a RocksDB database's write-ahead log, not an entry log"
            continue
        if not os.path.exists(path):
            continue
        found = bkcodec.file_kind(path)
        if _KIND_OF_CORE.get(found.kind) is None:
            out[path] = found.note or f"a {found.kind.replace('_', ' ')}, not a bookie file"
    return out


def list_files(
    paths: str | Iterable[str], kind: str, *, missing_ok: bool = False, filesystem: tuple = ()
) -> Listing:
    """The files of `kind` that `paths` name, with their sizes: the one place input
    files are listed. With "auto", the one kind present, or entry logs and journals
    together (BOOKIE: a bookie directory); files named like bookie files that are not
    (by their content, as bkcodec's discovery tells) are skipped with a warning.

    A named kind with no such files is an empty listing with a `note`, and a
    `NoFilesWarning`; explicitly named files that are gone are kept with size None
    when `missing_ok` (each reads as one flagged row).
    """
    found = _expand(paths, missing_ok, filesystem)
    named = [p for p in found if kind_of(p) is not None]
    skipped = _not_bookie_files(named, found) if kind in ("auto", BOOKIE) else {}
    chosen, selected = select_kind([p for p in found if p not in skipped], kind)
    listed = tuple(
        ListedFile(path, found[path] if found[path] is not None else file_size(path), kind_of(path) if chosen == BOOKIE else None)
        for path in selected
    )
    for path, why in skipped.items():
        warnings.warn(f"skipped {path}: {why}", NoFilesWarning, stacklevel=2)
    note = None
    if not listed:
        shown = paths if isinstance(paths, str) else ", ".join(map(str, paths))
        note = f"no {chosen} files (*{_SUFFIX[chosen]}) in {shown}: the result is empty"
        warnings.warn(note, NoFilesWarning, stacklevel=2)
    return Listing(chosen, listed, note, tuple(skipped.items()), tuple(filesystem))


def file_size(path: str, filesystem: tuple = ()) -> int | None:
    try:
        if is_remote(path):
            fs, key = remote_filesystem(path, filesystem)
            return fs.get_file_info(key).size
        return os.path.getsize(path)
    except (OSError, ValueError):
        return None  # read() reports it as a flagged row


def source(path: str, filesystem: tuple = ()):
    """What bkcodec's readers take for `path`: the path itself, or for a remote file
    the pyarrow file its filesystem opens (read in ranges, `read_at`)."""
    if not is_remote(path):
        return path
    fs, key = remote_filesystem(path, filesystem)
    return fs.open_input_file(key)


def open_split(split: FileSplit, options: ReadOptions) -> bkcodec.RecordBatchReader:
    """bkcodec's lazy reader for one split (nothing is read until it is iterated): the
    one place a task opens a file. A remote file is read in ranges through pyarrow.fs,
    its id taken from its name as for a local one."""
    given = source(split.path, options.filesystem)
    ids = {} if given is split.path else {_ID_ARGUMENT[split.kind]: name_id_of(split.path)}
    if split.kind == ENTRY_LOG:
        return bkcodec.read_entry_log(given, start=split.start, end=split.end, **ids, **options.reader_arguments)
    if split.kind == JOURNAL:
        return bkcodec.read_journal(given, start=split.start, end=split.end, **ids, **options.reader_arguments)
    return bkcodec.read_index(given, **ids)


_ID_ARGUMENT = {ENTRY_LOG: "log_id", JOURNAL: "journal_id", INDEX: "ledger_id"}


def read_split(split: FileSplit, options: ReadOptions) -> Iterator[pa.RecordBatch]:
    """The split's rows, batch by batch; bkcodec's typed errors propagate."""
    with open_split(split, options) as reader:
        yield from reader


@functools.lru_cache(maxsize=None)
def reader_schema(kind: str, options: ReadOptions) -> pa.Schema:
    """The Arrow schema bkcodec's reader gives files of `kind` read with `options`."""
    if kind == BOOKIE:
        from bkcodec.bookie import merged_schema

        # read_bookie's merged columns, after its `file_kind` (the data source adds `file`).
        merged = merged_schema([reader_schema(ENTRY_LOG, options), reader_schema(JOURNAL, options)])
        return pa.schema([f for f in merged if f.name != "file"])
    return bkcodec.reader_schema(CORE_KIND[kind], payload=options.payload, on_error="flag")
