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
bookie compacting meanwhile does not disturb the read.

The byte layouts of keys and values are the core's (``decode_location_index``,
``decode_ledger_index``); this module only iterates the database in batches.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa

from bkcodec._bkcodec import (
    STORAGE_FLAGS_KEY,
    BookKeeperFormatError,
    IndexDatabase,
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
#: Bit 0 of the storage flags: the bookie checks its entries' integrity on start.
STORAGE_FLAG_NEEDS_INTEGRITY_CHECK = 1
DEFAULT_BATCH_SIZE = 65536
# How often a snapshot is retaken when a live bookie removed a file mid-copy.
SNAPSHOT_ATTEMPTS = 3


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


def _is_table_file(name: str) -> bool:
    return name.endswith((".sst", ".blob"))


def _is_copied_file(name: str) -> bool:
    return name in ("CURRENT", "IDENTITY") or name.startswith(("MANIFEST-", "OPTIONS-")) or name.endswith(".log")


def _take_snapshot(source: Path, target: Path) -> None:
    """Copies what RocksDB rewrites or replays, links the immutable table files."""
    # CURRENT first: the manifest it names is copied after it, so the pair agrees
    # unless the bookie rolled its manifest in between (then the open fails and the
    # snapshot is taken again).
    names = sorted(os.listdir(source), key=lambda n: (n != "CURRENT", n))
    for name in names:
        src = source / name
        if not src.is_file():
            continue
        if _is_copied_file(name):
            shutil.copyfile(src, target / name)
    # Table files are listed after the manifest was copied, so every file it names
    # is here unless a compaction removed it since (then the open fails, as above).
    for name in sorted(os.listdir(source)):
        if _is_table_file(name):
            os.symlink((source / name).resolve(), target / name)


class IndexSnapshot:
    """A read-only RocksDB open of a snapshot of one database (see the module doc).

    Use as a context manager; `db` is the `rocksdict.Rdict` (raw mode: bytes keys
    and values). The temporary copy is removed on `close()`, or when the object is
    collected or the interpreter exits.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        rocksdict = _rocksdict()
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(errno.ENOENT, "no such RocksDB database", str(self.path))
        last_error: Exception | None = None
        for _ in range(SNAPSHOT_ATTEMPTS):
            tmp = Path(tempfile.mkdtemp(prefix="bkcodec-rocksdb-"))
            cleanup = weakref.finalize(self, shutil.rmtree, tmp, True)
            try:
                _take_snapshot(self.path, tmp)
                options = rocksdict.Options(raw_mode=True)
                options.create_if_missing(False)
                # Open every table file now: a live bookie's compactions cannot pull
                # one away later.
                options.set_max_open_files(-1)
                self.db = rocksdict.Rdict(
                    str(tmp), options, access_type=rocksdict.AccessType.read_only(error_if_log_file_exist=False)
                )
            except FileNotFoundError as err:
                cleanup()
                last_error = err
                continue
            except Exception as err:
                cleanup()
                if "No such file" in str(err) or "does not exist" in str(err):
                    last_error = err
                    continue
                raise OSError(f"{self.path}: RocksDB cannot open it: {err}") from err
            self._cleanup = cleanup
            return
        raise OSError(f"{self.path}: RocksDB cannot open it (files changed while it was copied): {last_error}")

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
    `rocksdict.Rdict`). For ad-hoc queries; the readers below use the same."""
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


def _batches(dbs: list[Any], kind: str, batch_size: int, on_error: str) -> Iterator[pa.RecordBatch]:
    for db in dbs:
        with IndexSnapshot(db.path) as snap:
            scoped = _scoped(db, snap.db, kind)
            items = snap.db.items()
            while True:
                chunk = list(islice(items, batch_size))
                if not chunk:
                    break
                try:
                    yield _decode_index_items(chunk, ledgers=kind == "ledger", scoped=scoped, on_error=on_error)
                except BookKeeperFormatError as err:
                    err.path = str(db.path)
                    err.args = (f"{db.path}: {err}",)
                    raise


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
    return IndexBatchReader(schema, _batches(dbs, kind, batch_size, on_error), source)


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
    a row with its `error` (`"flag"`). Memory stays within about one batch.
    """
    return _reader(path, "location", batch_size, on_error)


def read_ledger_index(
    path: str | os.PathLike[str], *, batch_size: int = DEFAULT_BATCH_SIZE, on_error: str = "raise"
) -> IndexBatchReader:
    """The ledgers of a `ledgers` or `scoped-ledgers` database (or of every such
    database below a directory) as an Arrow stream: `scope_id`, `ledger_id`,
    `exists`, `fenced`, `master_key`, `explicit_lac` (null when absent), `limbo`
    (null when absent), then `error` with `on_error="flag"`. The storage flags are
    not a ledger: see `storage_flags`.
    """
    return _reader(path, "ledger", batch_size, on_error)


def storage_flags(path: str | os.PathLike[str]) -> int | None:
    """The storage flags of a bookie (kept in its first `ledgers` database), or of
    one `ledgers` database; None when no database holds them. Bit 0
    (`STORAGE_FLAG_NEEDS_INTEGRITY_CHECK`) asks for an integrity check on start."""
    from bkcodec._bkcodec import CorruptDataError

    for db in index_databases(path, ("ledgers",)):
        with IndexSnapshot(db.path) as snap:
            value = snap.db.get(STORAGE_FLAGS_KEY)
        if value is not None:
            if len(value) != 8:
                raise CorruptDataError(f"{db.path}: the storage flags value is {len(value)} bytes, not 8")
            return int.from_bytes(value, "big", signed=True)
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
