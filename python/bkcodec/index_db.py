"""DbLedgerStorage's RocksDB indexes, read without writing a byte into the bookie.

A bookie running DbLedgerStorage keeps, in each index directory's ``current/``, a
``locations`` database (ledger, entry -> entry-log location) and a ``ledgers``
database (ledger -> fenced, master key, explicit LAC, limbo); bkcodec adds
``scoped-locations`` and ``scoped-ledgers`` for BP-35 ledgers with a scope.

The databases are read through a real RocksDB (the optional extra
``bkcodec[rocksdb]``, which installs ``rocksdict``): deleted ledgers are RocksDB
range deletes and recent writes sit in the write-ahead log, and only RocksDB reads
both right. RocksDB writes even when it opens a database read-only (its info log,
a replayed write-ahead log), so the database is never opened where it is: its
small files (``CURRENT``, ``MANIFEST-*``, ``OPTIONS-*``, the write-ahead logs) are
copied into a temporary directory, its table files (``*.sst``) linked there, and
that copy is opened read-only. Every table file is opened at once, so a live
bookie compacting meanwhile does not disturb the read. Copies skip the holes of
sparse files; a file RocksDB would open that is not a regular file (a FIFO would
block the open forever) is refused.

RocksDB reads damage quietly: an iterator stops at a block whose checksum fails,
the default recovery replays a write-ahead log up to its first bad record, and a
truncated MANIFEST forgets the table files it added last. So the write-ahead logs
are replayed whole or the database is reported, every scan's iterator status is
checked, and table files the opened database does not hold are reported: a
database that cannot be read whole raises `IndexDatabaseError` (or, with
``on_error="flag"``, gives a row whose error starts with the database's path).

The byte layouts of keys and values are the core's (``decode_location_index``,
``decode_ledger_index``); this module only iterates the database in batches.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from bkcodec.paths import escape_surrogates, path_text

from bkcodec._bkcodec import (
    STORAGE_FLAG_NEEDS_INTEGRITY_CHECK,
    STORAGE_FLAGS_KEY,
    BookKeeperFormatError,
    CorruptDataError,
    IndexDatabase,
    parse_storage_flags,
    _decode_index_items,
    _encode_ledger_pair,
    _encode_location_pairs,
    bookie_layout,
    decode_ledger_index,
    decode_location_index,
    file_kind,
)

__all__ = [
    "IndexBatchReader",
    "IndexDatabaseError",
    "RocksDBUnavailableError",
    "STORAGE_FLAG_NEEDS_INTEGRITY_CHECK",
    "index_databases",
    "location_index_schema",
    "ledger_index_schema",
    "open_index_database",
    "read_ledger_index",
    "read_location_index",
    "storage_flags",
    "write_ledger_index",
    "write_location_index",
]

EXTRA = "bkcodec[rocksdb]"
LOCATION_ROLES = ("locations", "scoped-locations")
LEDGER_ROLES = ("ledgers", "scoped-ledgers")
DEFAULT_BATCH_SIZE = 65536
# How often a snapshot is retaken when a live bookie removed a file mid-copy.
SNAPSHOT_ATTEMPTS = 3
# Snapshot directories are named `<prefix><pid>-<pid namespace>-...`, so that those
# of a process killed while reading can be told and removed.
SNAPSHOT_PREFIX = "bkcodec-rocksdb-"
#: A file of a database larger than this is not copied: a bookie's write-ahead
#: logs roll with its 64 MiB write buffers, and a MANIFEST rolls at 1 GiB.
MAX_COPIED_BYTES = 2 << 30
COPY_CHUNK = 1 << 20


class RocksDBUnavailableError(ImportError):
    """Reading a RocksDB index needs the optional RocksDB binding."""


def _rocksdict() -> Any:
    try:
        import rocksdict
    except ImportError as err:
        raise RocksDBUnavailableError(
            f"reading DbLedgerStorage indexes needs RocksDB: pip install '{EXTRA}' ({err})", name="rocksdict"
        ) from None
    return rocksdict


def location_index_schema(on_error: str = "raise") -> pa.Schema:
    """The columns of `read_location_index`."""
    return decode_location_index([], [], on_error=on_error).schema


def ledger_index_schema(on_error: str = "raise") -> pa.Schema:
    """The columns of `read_ledger_index`."""
    return decode_ledger_index([], [], on_error=on_error).schema


# ---------------------------------------------------------------- snapshots


class IndexDatabaseError(CorruptDataError):
    """An index database that cannot be read whole: a damaged table file or
    write-ahead log, table files its MANIFEST lost, or a file RocksDB would read
    that is not a regular file. `path` is the database."""


def _is_table_file(name: str) -> bool:
    return name.endswith((".sst", ".blob"))


def _is_wal(name: str) -> bool:
    return name.endswith(".log") and name[:-4].isdigit()


def _is_copied_file(name: str) -> bool:
    return name in ("CURRENT", "IDENTITY") or name.startswith(("MANIFEST-", "OPTIONS-")) or _is_wal(name)


def _file_type(mode: int) -> str:
    for test, what in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def _not_regular(db: Path, path: Path, mode: int) -> IndexDatabaseError:
    name = f"{path.name} (a link to {os.readlink(path)})" if os.path.islink(path) else path.name
    err = IndexDatabaseError(f"{db}: {name} is {_file_type(mode)}, not a regular file: the database is not read")
    err.path = str(db)
    return err


def _regular_stat(db: Path, path: Path) -> os.stat_result:
    """The file's status, through a link; a file that is not a regular one is
    refused before anything opens it (opening a FIFO blocks forever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            err = IndexDatabaseError(
                f"{db}: {path.name} is a symbolic link to nothing ({os.readlink(path)}): the database is not read"
            )
            err.path = str(db)
            raise err from None
        raise  # removed meanwhile: the snapshot is taken again
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(db, path, st.st_mode)
    return st


def _data_extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The byte ranges of a file that hold data (holes of a sparse file left out)."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        yield 0, size
        return
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, seek_data)
        except OSError as err:
            if err.errno == errno.ENXIO:  # only a hole after pos
                return
            yield pos, size  # the file system cannot tell: all of it
            return
        if start >= size:
            return
        end = min(os.lseek(fd, start, seek_hole), size)
        yield start, end
        pos = end


def _copy_sparse(db: Path, src: Path, dst: Path) -> None:
    """Copies `src` without writing its holes or zero runs (a sparse write-ahead
    log of gigabytes costs nothing), refusing what is not a regular file."""
    fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since it was looked at
            raise _not_regular(db, src, st.st_mode)
        with open(dst, "wb") as out:
            for start, end in _data_extents(fd, st.st_size):
                pos = start
                while pos < end:
                    chunk = os.pread(fd, min(COPY_CHUNK, end - pos), pos)
                    if not chunk:  # shrank meanwhile
                        break
                    if chunk.count(0) != len(chunk):
                        out.seek(pos)
                        out.write(chunk)
                    pos += len(chunk)
            out.truncate(st.st_size)
    finally:
        os.close(fd)


def _take_snapshot(source: Path, target: Path) -> list[str]:
    """Copies what RocksDB rewrites or replays, links the immutable table files;
    returns the problems found (a write-ahead log too large to be one, not copied).
    Every file RocksDB would open must be a regular file (or a link to one)."""
    problems = []
    # CURRENT first: the manifest it names is copied after it, so the pair agrees
    # unless the bookie rolled its manifest in between (then the open fails and the
    # snapshot is taken again).
    names = sorted(os.listdir(source), key=lambda n: (n != "CURRENT", n))
    for name in names:
        if not _is_copied_file(name):
            continue
        src = source / name
        st = _regular_stat(source, src)
        if st.st_size > MAX_COPIED_BYTES:
            if not _is_wal(name):
                err = IndexDatabaseError(
                    f"{source}: {name} is {st.st_size} bytes, more than {MAX_COPIED_BYTES} "
                    "(no RocksDB file of a bookie grows so large): the database is not read"
                )
                err.path = str(source)
                raise err
            problems.append(
                f"{source}: write-ahead log {name} is {st.st_size} bytes, more than {MAX_COPIED_BYTES} "
                "(a bookie's write-ahead logs stay far smaller): not read, its writes are missing"
            )
            continue
        _copy_sparse(source, src, target / name)
    # Table files are listed after the manifest was copied, so every file it names
    # is here unless a compaction removed it since (then the open fails, as above).
    for name in sorted(os.listdir(source)):
        if _is_table_file(name):
            _regular_stat(source, source / name)
            os.symlink((source / name).resolve(), target / name)
    return problems


def _locked(db: Path) -> bool:
    """Whether a process holds the database's lock (a running bookie), as
    /proc/locks tells: opening LOCK to ask would drop this process's own lock on
    it when closed."""
    try:
        st = os.stat(db / "LOCK")
        with open("/proc/locks") as f:
            locks = f.read()
    except OSError:
        return False
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(inode in line.split() for line in locks.splitlines())


def _pid_namespace() -> str:
    """This process's pid namespace (its inode number), so that a snapshot of a
    process in another container sharing the temporary directory is not taken
    for a dead one's."""
    try:
        return os.readlink("/proc/self/ns/pid").rpartition("[")[2].rstrip("]") or "0"
    except OSError:
        return "0"


def _snapshot_prefix() -> str:
    return f"{SNAPSHOT_PREFIX}{os.getpid()}-{_pid_namespace()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's
    return True


def _remove_stale_snapshots(tmpdir: str | None = None) -> list[str]:
    """Removes the snapshot directories that processes which died reading (killed,
    say) left in the temporary directory: this user's, of this pid namespace,
    whose process is gone. Returns the paths removed."""
    tmpdir = tmpdir or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = list(os.scandir(tmpdir))
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    namespace = _pid_namespace()
    for entry in entries:
        if not entry.name.startswith(SNAPSHOT_PREFIX):
            continue
        pid, ns, *_ = entry.name[len(SNAPSHOT_PREFIX):].split("-") + ["", ""]
        if not pid.isdigit() or int(pid) == os.getpid() or ns != namespace:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid) or _pid_alive(int(pid)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def _removed_meanwhile(err: BaseException) -> bool:
    """A file gone between the listing and the copy or the open: a live bookie's
    compaction or manifest roll, so the snapshot is taken again."""
    if isinstance(err, FileNotFoundError):
        return True
    # RocksDB's own errors are plain exceptions.
    return isinstance(err, Exception) and not isinstance(err, (OSError, ValueError)) and (
        "No such file" in str(err) or "does not exist" in str(err)
    )


class IndexSnapshot:
    """A read-only RocksDB open of a snapshot of one database (see the module doc).

    Use as a context manager; `db` is the `rocksdict.Rdict` (raw mode: bytes keys
    and values). `problems` lists what keeps the open database from being the
    whole of it (a damaged write-ahead log replayed only up to the damage, table
    files the MANIFEST lost, a write-ahead log too large to copy), each naming the
    database; `check()` raises the first. The temporary copy is removed on
    `close()`, or when the object is collected or the interpreter exits; one a
    killed process left is removed by the next snapshot taken.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        rocksdict = _rocksdict()
        self.path = Path(path)
        self.problems: list[str] = []
        if not self.path.is_dir():
            raise FileNotFoundError(errno.ENOENT, "no such RocksDB database", str(self.path))
        _remove_stale_snapshots()
        last_error: BaseException | None = None
        for _ in range(SNAPSHOT_ATTEMPTS):
            tmp = Path(tempfile.mkdtemp(prefix=_snapshot_prefix()))
            cleanup = weakref.finalize(self, shutil.rmtree, tmp, True)
            self._tmp = tmp
            try:
                problems = _take_snapshot(self.path, tmp)
                self.db, opened = self._open(rocksdict, tmp)
                problems += opened
                problems += self._lost_table_files(tmp)
            except BaseException as err:
                self.close()
                cleanup()
                if _removed_meanwhile(err):
                    last_error = err
                    continue
                if isinstance(err, (OSError, ValueError)) or not isinstance(err, Exception):
                    raise
                raise OSError(f"{self.path}: RocksDB cannot open it: {self._text(err)}") from err
            self.problems = problems
            self._cleanup = cleanup
            return
        raise OSError(
            f"{self.path}: RocksDB cannot open it (a file it names is missing, or files changed while "
            f"they were copied): {self._text(last_error)}"
        )

    def _text(self, err: object) -> str:
        """RocksDB's message with the snapshot's paths put back to the database's."""
        return " ".join(str(err).replace(str(self._tmp), str(self.path)).split())

    def _open(self, rocksdict: Any, tmp: Path) -> tuple[Any, list[str]]:
        """Opens the snapshot; a write-ahead log RocksDB replays only in part is a
        problem. RocksDB's default recovery stops quietly at the first damaged
        record, so the log is first replayed whole or not at all."""
        modes = rocksdict.DBRecoveryMode

        def attempt(mode: Any) -> Any:
            options = rocksdict.Options(raw_mode=True)
            options.create_if_missing(False)
            # Open every table file now: a live bookie's compactions cannot pull
            # one away later.
            options.set_max_open_files(-1)
            options.set_paranoid_checks(True)
            options.set_wal_recovery_mode(mode)
            return rocksdict.Rdict(str(tmp), options, access_type=rocksdict.AccessType.read_only(error_if_log_file_exist=False))

        try:
            return attempt(modes.absolute_consistency()), []
        except Exception as err:
            if "Corruption" not in str(err):
                raise
        wals = ", ".join(sorted(n for n in os.listdir(tmp) if _is_wal(n))) or "?"
        try:
            db = attempt(modes.tolerate_corrupted_tail_records())
            # A running bookie may be writing the record the copy ends in.
            if _locked(self.path):
                return db, []
            return db, [
                f"{self.path}: write-ahead log {wals} ends inside a record: the write it held is lost "
                "(a truncated log, or a write a crash cut short)"
            ]
        except Exception as err:
            if "Corruption" not in str(err):
                raise
            damage = self._text(err)
        # Replayed up to the damage, as RocksDB (and so the bookie) would.
        return attempt(modes.point_in_time()), [
            f"{self.path}: write-ahead log {wals} is damaged ({damage}): RocksDB replays it only up to "
            "the damage, the writes after it are lost"
        ]

    def _lost_table_files(self, tmp: Path) -> list[str]:
        """Table files in the directory that the database (as its MANIFEST
        describes it) does not hold: a truncated or damaged MANIFEST drops the
        files it added last. A running bookie's flush or compaction writes such
        files too, so a locked database is given the benefit of the doubt."""
        live = {Path(f["name"]).name for f in self.db.live_files()}
        lost = sorted(n for n in os.listdir(tmp) if n.endswith(".sst") and n not in live)
        if not lost or _locked(self.path):
            return []
        return [
            f"{self.path}: table file{'s' if len(lost) > 1 else ''} {', '.join(lost)} "
            f"{'are' if len(lost) > 1 else 'is'} not in the database its MANIFEST describes: "
            f"the keys in {'them' if len(lost) > 1 else 'it'} are not read (a truncated or damaged MANIFEST, "
            "or a flush or compaction a crash cut short)"
        ]

    def error(self, message: str) -> IndexDatabaseError:
        err = IndexDatabaseError(message)
        err.path = str(self.path)
        return err

    def check(self) -> None:
        """Raises the first problem found, if any."""
        if self.problems:
            raise self.error(self.problems[0])

    def scan(self, batch_size: int, from_key: bytes | None = None) -> Iterator[list[tuple[bytes, bytes]]]:
        """The (key, value) pairs in key order from `from_key`, in lists of up to
        `batch_size`. An iterator stops early and quietly at a block RocksDB
        cannot read: its status is checked at the end, and that raises."""
        it = self.db.iter()
        if from_key is None:
            it.seek_to_first()
        else:
            it.seek(from_key)
        valid, key, value, step = it.valid, it.key, it.value, it.next
        while True:
            chunk: list[tuple[bytes, bytes]] = []
            while len(chunk) < batch_size and valid():
                chunk.append((key(), value()))
                step()
            if chunk:
                yield chunk
            if len(chunk) < batch_size:
                break
        try:
            it.status()
        except Exception as err:
            raise self.error(f"{self.path}: RocksDB cannot read it whole: {self._text(err)}") from None

    def get(self, key: bytes) -> bytes | None:
        try:
            return self.db.get(key)
        except Exception as err:
            raise self.error(f"{self.path}: RocksDB cannot read it whole: {self._text(err)}") from None

    def close(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
            del self.db
        cleanup = getattr(self, "_cleanup", None)
        if cleanup is not None:
            cleanup()

    def __enter__(self) -> IndexSnapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_index_database(path: str | os.PathLike[str]) -> IndexSnapshot:
    """A read-only snapshot of one RocksDB database (a context manager; `.db` is the
    `rocksdict.Rdict`). For ad-hoc queries; the readers below use the same. Its
    `problems` say what keeps it from being the whole database, and `scan()`
    iterates checking RocksDB's status (a plain `.db.items()` stops quietly at a
    damaged block)."""
    return IndexSnapshot(path)


# ---------------------------------------------------------------- finding databases


def index_databases(path: str | os.PathLike[str], roles: Iterable[str] = LOCATION_ROLES + LEDGER_ROLES) -> list[IndexDatabase]:
    """The index databases at `path` (one database directory, or every database of
    the given roles below a bookie root, ledger or index directory), in path order.

    A database named directly is taken whatever its role (a `locations.BACKUP-...`
    copy, say); one below a directory only for a role asked for.
    """
    wanted = set(roles)
    found = file_kind(path)
    if found.kind == "rocksdb":
        # The walk of a database directory lists that database (its role by name).
        return bookie_layout(path).databases[:1]
    if found.kind != "directory":
        raise ValueError(f"{path}: not a RocksDB database or a directory holding one (it is {found.kind.replace('_', ' ')})")
    return [db for db in bookie_layout(path).databases if db.role in wanted]


def _scoped(db: Any, rdict: Any, kind: str) -> bool:
    """Whether a database holds scoped keys: by its role, else by its first key."""
    if db.role is not None:
        return bool(db.role.startswith("scoped-"))
    for key in rdict.keys():
        return len(key) == (24 if kind == "location" else 16)
    return False


def is_database_error(error: str | None, path: str | os.PathLike[str]) -> bool:
    """Whether a flagged row's error is about the database at `path` as a whole
    (it starts with the database's path, as `path_text` writes it; `path` may be
    that text already) rather than about one key or value."""
    if error is None:
        return False
    return error.startswith(f"{path_text(path)}: ") or error.startswith(f"{os.fspath(path)}: ")


def error_batch(schema: pa.Schema, message: str) -> pa.RecordBatch:
    """One flagged row: the error, every other column null (bytes of a name that
    were not UTF-8 spelled `\\xNN`, as Arrow strings must be UTF-8)."""
    return pa.RecordBatch.from_pylist([{"error": escape_surrogates(message)}], schema=schema)


def _database_message(path: Path, err: BaseException) -> str:
    """An error about a database as one line starting with its path."""
    text = str(err)
    if isinstance(err, OSError) and err.strerror and err.filename is not None:
        where = "" if os.fspath(err.filename) == str(path) else f"{err.filename}: "
        text = f"{where}{err.strerror}"
    text = escape_surrogates(" ".join(text.split()))
    where = path_text(path)
    return text if text.startswith(f"{where}: ") else f"{where}: {text}"


def _corrupt(path: str | os.PathLike[str], message: str) -> CorruptDataError:
    err = CorruptDataError(f"{path}: {message}")
    err.path = os.fspath(path)
    return err


def _storage_flags_problem(value: bytes | None) -> str | None:
    """What is wrong with a storage flags value, as the core reads it; None if nothing."""
    if value is None:
        return None
    try:
        parse_storage_flags(value)
    except CorruptDataError as err:
        return str(err)
    return None


def _batches(dbs: list[Any], kind: str, batch_size: int, on_error: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    flag = on_error == "flag"
    for db in dbs:
        try:
            snap = IndexSnapshot(db.path)
        except (OSError, ValueError) as err:
            if not flag:
                raise
            yield error_batch(schema, _database_message(Path(db.path), err))
            continue
        with snap:
            if not flag:
                snap.check()
            for problem in snap.problems:
                yield error_batch(schema, problem)
            try:
                if kind == "ledger":
                    # The storage flags share the ledgers' key space; the decoder
                    # leaves them out, so a bad one is reported here.
                    flags = _storage_flags_problem(snap.get(STORAGE_FLAGS_KEY))
                    if flags is not None:
                        if not flag:
                            raise _corrupt(db.path, flags)
                        yield error_batch(schema, flags)
                scoped = _scoped(db, snap.db, kind)
                for chunk in snap.scan(batch_size):
                    try:
                        yield _decode_index_items(chunk, ledgers=kind == "ledger", scoped=scoped, on_error=on_error)
                    except BookKeeperFormatError as err:
                        err.path = str(db.path)
                        err.args = (f"{db.path}: {err}",)
                        raise
            except IndexDatabaseError as err:
                if not flag:
                    raise
                yield error_batch(schema, str(err))


class IndexBatchReader:
    """A lazy, once-consumable stream of `pyarrow.RecordBatch`es read from index
    databases, with the interface of `bkcodec.RecordBatchReader`: the Arrow
    PyCapsule stream interface (`pa.table(reader)`, polars, duckdb), iteration,
    `read_next_batch()`, `read_all()`, `schema`, `close()`. Iterated in Python, a
    bad key raises its typed error (`CorruptDataError`); through the C stream
    interface pyarrow raises `ArrowInvalid` with the same message."""

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch], source: str) -> None:
        self._schema = schema
        self._batches: Iterator[pa.RecordBatch] | None = batches
        self._source = source

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def closed(self) -> bool:
        return self._batches is None

    def _take(self) -> Iterator[pa.RecordBatch]:
        if self._batches is None:
            raise ValueError("the reader is closed or was consumed")
        batches, self._batches = self._batches, None
        return batches

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return pa.RecordBatchReader.from_batches(self._schema, self._take()).__arrow_c_stream__(requested_schema)

    def __iter__(self) -> IndexBatchReader:
        return self

    def __next__(self) -> pa.RecordBatch:
        if self._batches is None:
            raise StopIteration
        try:
            return next(self._batches)
        except BaseException:
            self.close()
            raise

    def read_next_batch(self) -> pa.RecordBatch:
        return next(self)

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self._take()), self._schema)

    def close(self) -> None:
        """Stops reading; the database snapshot is removed."""
        batches, self._batches = self._batches, None
        close = getattr(batches, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> IndexBatchReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(self._schema.names)
        state = ", closed" if self.closed else ""
        return f"<bkcodec.index_db.IndexBatchReader of {self._source}: {len(self._schema)} columns ({names}){state}>"


def _reader(path: str | os.PathLike[str], kind: str, batch_size: int, on_error: str) -> IndexBatchReader:
    if batch_size <= 0:
        raise ValueError("batch_size must be positive")
    if on_error not in ("raise", "flag"):
        raise ValueError(f'unknown on_error {on_error!r} (expected "raise" or "flag")')
    _rocksdict()
    roles = LOCATION_ROLES if kind == "location" else LEDGER_ROLES
    dbs = index_databases(path, roles)
    if not dbs:
        raise ValueError(f"{path}: no {' or '.join(roles)} database found")
    schema = location_index_schema(on_error) if kind == "location" else ledger_index_schema(on_error)
    source = f"{len(dbs)} {kind} index database{'s' if len(dbs) > 1 else ''} at {str(path)!r}"
    return IndexBatchReader(schema, _batches(dbs, kind, batch_size, on_error, schema), source)


def read_location_index(
    path: str | os.PathLike[str], *, batch_size: int = DEFAULT_BATCH_SIZE, on_error: str = "raise"
) -> IndexBatchReader:
    """The entry locations of a `locations` or `scoped-locations` database, or of
    every such database below a bookie root, ledger or index directory (in path
    order; each in key order), as an Arrow stream.

    Columns: `scope_id`, `ledger_id`, `entry_id`, `location` (as stored: `log_id
    << 32 | offset of the entry bytes`), `log_id`, `offset` (of the entry's size
    field, as `read_entry_log` reports it), then `error` with `on_error="flag"`.
    Range-deleted ledgers are absent, write-ahead-log writes present. A key or
    value that does not decode raises `CorruptDataError` (`on_error="raise"`) or is
    a row with its `error` (`"flag"`). A database that cannot be read whole (see
    the module doc) raises `IndexDatabaseError` (or `OSError` when RocksDB cannot
    open it), or with `"flag"` gives what can be read and a row whose ids are null
    and whose error starts with the database's path (`is_database_error`). Memory
    stays within about one batch.
    """
    return _reader(path, "location", batch_size, on_error)


def read_ledger_index(
    path: str | os.PathLike[str], *, batch_size: int = DEFAULT_BATCH_SIZE, on_error: str = "raise"
) -> IndexBatchReader:
    """The ledgers of a `ledgers` or `scoped-ledgers` database (or of every such
    database below a directory) as an Arrow stream: `scope_id`, `ledger_id`,
    `exists`, `fenced`, `master_key`, `explicit_lac` (null when absent), `limbo`
    (null when absent), then `error` with `on_error="flag"`. The storage flags are
    not a ledger (see `storage_flags`), but a flags value that is not 8 bytes is
    reported like a value that does not decode. Errors as `read_location_index`.
    """
    return _reader(path, "ledger", batch_size, on_error)


def storage_flags(path: str | os.PathLike[str]) -> int | None:
    """The storage flags of a bookie (kept in its first `ledgers` database), or of
    one `ledgers` database; None when no database holds them. Bit 0
    (`STORAGE_FLAG_NEEDS_INTEGRITY_CHECK`) asks for an integrity check on start."""
    for db in index_databases(path, ("ledgers",)):
        with IndexSnapshot(db.path) as snap:
            snap.check()
            value = snap.get(STORAGE_FLAGS_KEY)
        if value is not None:
            problem = _storage_flags_problem(value)
            if problem is not None:
                raise _corrupt(db.path, problem)
            return parse_storage_flags(value)
    return None


# ---------------------------------------------------------------- writing


def bookkeeper_options(role: str) -> Any:
    """RocksDB options as a bookie sets them (`KeyValueStorageRocksDB`): for the
    location index LZ4 blocks of 64 KiB, a 10-bit bloom filter, 64 MiB write
    buffers and table files; for the others the defaults. Table format 5 with
    xxHash checksums for all."""
    rocksdict = _rocksdict()
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    table = rocksdict.BlockBasedOptions()
    table.set_format_version(5)
    table.set_checksum_type(rocksdict.ChecksumType.xxhash())
    if role in LOCATION_ROLES:
        options.set_compression_type(rocksdict.DBCompressionType.lz4())
        options.set_write_buffer_size(64 << 20)
        options.set_max_write_buffer_number(4)
        options.set_level_zero_file_num_compaction_trigger(4)
        options.set_max_bytes_for_level_base(256 << 20)
        options.set_target_file_size_base(64 << 20)
        options.set_level_compaction_dynamic_level_bytes(True)
        options.set_max_open_files(-1)
        table.set_block_size(64 * 1024)
        table.set_bloom_filter(10, False)
        table.set_cache_index_and_filter_blocks(True)
    options.set_block_based_table_factory(table)
    options.set_keep_log_file_num(30)
    return options


class _Writer:
    """A database opened for writing with a bookie's options; `flush=False` leaves
    the writes in the write-ahead log only, as a bookie that crashed leaves them."""

    def __init__(self, path: str | os.PathLike[str], role: str, flush: bool) -> None:
        rocksdict = _rocksdict()
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            # RocksDB's own refusal is a bare Exception ("File exists").
            raise FileExistsError(errno.EEXIST, "a file is there, not a RocksDB database (a directory)", str(self.path))
        self.flush = flush
        self.db = rocksdict.Rdict(str(self.path), bookkeeper_options(role))
        self.batch = rocksdict.WriteBatch(raw_mode=True)
        self.rocksdict = rocksdict

    def put(self, key: bytes, value: bytes) -> None:
        self.batch.put(key, value)
        if len(self.batch) >= 100_000:
            self.write()

    def write(self) -> None:
        if len(self.batch):
            self.db.write(self.batch)
            self.batch = self.rocksdict.WriteBatch(raw_mode=True)

    def close(self) -> None:
        self.write()
        if self.flush:
            self.db.flush()
        self.db.close()
        # rocksdict remembers its own settings in the database directory; a bookie's
        # databases have no such file.
        (self.path / "rocksdict-config.json").unlink(missing_ok=True)


def _location_columns(rows: Any) -> tuple[list[int], list[int], list[int], list[int]]:
    if isinstance(rows, Mapping):
        items = [(*k, v) for k, v in rows.items()]
        return _location_columns(items)
    if hasattr(rows, "__arrow_c_stream__") or hasattr(rows, "__arrow_c_array__") or isinstance(rows, (pa.Table, pa.RecordBatch)):
        table = pa.table(rows) if not isinstance(rows, pa.Table) else rows
        n = table.num_rows
        scope = table.column("scope_id").to_pylist() if "scope_id" in table.column_names else [0] * n
        return scope, table.column("ledger_id").to_pylist(), table.column("entry_id").to_pylist(), table.column("location").to_pylist()
    scope, ledger, entry, location = [], [], [], []
    for row in rows:
        if len(row) == 3:
            s, (l, e, loc) = 0, row
        else:
            s, l, e, loc = row
        scope.append(s)
        ledger.append(l)
        entry.append(e)
        location.append(loc)
    return scope, ledger, entry, location


def write_location_index(
    path: str | os.PathLike[str], rows: Any, *, scoped: bool = False, flush: bool = True
) -> int:
    """Writes entry locations into the RocksDB database at `path` (created if
    missing) as a bookie does: 16-byte keys (`scoped=True`: 24-byte keys of a
    `scoped-locations` database), 8-byte locations, the bookie's options (LZ4).

    `rows`: a mapping `{(ledger_id, entry_id): location}` (or `(scope_id, ledger_id,
    entry_id)` keys), an iterable of such tuples with the location last, or an
    Arrow table with `ledger_id`, `entry_id`, `location` (and `scope_id`) columns.
    `flush=False` leaves the writes in the write-ahead log only. Returns the count.
    Never use it on a bookie's own database: write a new one.
    """
    scope, ledger, entry, location = _location_columns(rows)
    if any(s != 0 for s in scope) and not scoped:
        raise ValueError("rows with a scope id go to a scoped-locations database (scoped=True)")
    if scoped and any(s == 0 for s in scope):
        raise ValueError("scope 0 rows go to a locations database (scoped=False)")
    keys, values = _encode_location_pairs(scope, ledger, entry, location)
    writer = _Writer(path, "scoped-locations" if scoped else "locations", flush)
    try:
        for k, v in zip(keys, values):
            writer.put(k, v)
    finally:
        writer.close()
    return len(keys)


def write_ledger_index(
    path: str | os.PathLike[str],
    ledgers: Any,
    *,
    scoped: bool = False,
    storage_flags: int | None = None,
    flush: bool = True,
) -> int:
    """Writes ledgers into the RocksDB database at `path` (created if missing) as a
    bookie's `LedgerMetadataIndex` does. `ledgers`: rows as `read_ledger_index`
    gives them (an Arrow table, or dicts with `ledger_id`, `master_key` and
    optionally `scope_id`, `fenced`, `exists`, `explicit_lac`, `limbo`), or a
    mapping `{ledger_id: dict}`. `storage_flags` stores the flags key (directory 0's
    `ledgers` database holds it). Returns the number of ledgers written."""
    if isinstance(ledgers, Mapping):
        rows = [dict(v, ledger_id=k) for k, v in ledgers.items()]
    elif isinstance(ledgers, (pa.Table, pa.RecordBatch)) or hasattr(ledgers, "__arrow_c_stream__"):
        rows = pa.table(ledgers).to_pylist() if not isinstance(ledgers, pa.Table) else ledgers.to_pylist()
    else:
        rows = list(ledgers)
    if storage_flags is not None and scoped:
        raise ValueError("the storage flags live in a ledgers database, not a scoped one")
    writer = _Writer(path, "scoped-ledgers" if scoped else "ledgers", flush)
    try:
        for r in rows:
            scope = r.get("scope_id") or 0
            if (scope != 0) != scoped:
                raise ValueError(f"ledger {scope}/{r['ledger_id']}: scope {'0 goes to ledgers' if scoped else 'ids go to scoped-ledgers'}")
            key, value = _encode_ledger_pair(
                scope,
                r["ledger_id"],
                r["master_key"],
                fenced=bool(r.get("fenced", False)),
                exists=r.get("exists", True) is not False,
                explicit_lac=r.get("explicit_lac"),
                limbo=r.get("limbo"),
            )
            writer.put(key, value)
        if storage_flags is not None:
            writer.put(STORAGE_FLAGS_KEY, storage_flags.to_bytes(8, "big", signed=True))
    finally:
        writer.close()
    return len(rows)
