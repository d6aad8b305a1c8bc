"""A whole bookie as one Arrow stream: `read_bookie` reads the files the core's
discovery (`bookie_layout`) finds below a directory, one kind or entry logs and
journals merged.

The `file` column holds each row's path as `bkcodec.paths.path_text` writes it
(lossless: a name that is not UTF-8 has its other bytes as `\\xNN`, backslashes
doubled; `path_from_text` gives the path back)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from bkcodec._bkcodec import (
    BookieFile,
    bookie_layout,
    merged_file_schema,
    read_entry_log,
    read_index,
    read_journal,
    reader_schema,
)
from bkcodec.paths import path_text

__all__ = ["BOOKIE_KINDS", "aligned_batch", "aligned_columns", "merged_schema", "read_bookie", "read_bookie_files", "unreadable_batch"]

#: What `read_bookie(kind=...)` reads. `entries`: entry logs and journals merged.
BOOKIE_KINDS = ("entries", "entry_log", "journal", "index", "location_index", "ledger_index")

_SCAN_OPTIONS = ("digest_type", "password", "ledger_metadata", "verify", "payload", "on_error", "batch_size")


def _open(f: BookieFile, options: dict[str, Any]) -> Any:
    if f.kind == "entry_log":
        return read_entry_log(f.path, **options)
    if f.kind == "journal":
        return read_journal(f.path, **options)
    if f.kind == "index":
        batch = {"batch_size": options["batch_size"]} if "batch_size" in options else {}
        return read_index(f.path, **batch)
    raise ValueError(f"{f.path}: a {f.kind.replace('_', ' ')} has no rows to read")


def merged_schema(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """`file` and `file_kind`, then every reader's columns (entry logs and journals
    differ): where a row is first (log or journal position), the error last. The
    core's merge, which the JVM Spark source uses too."""
    return merged_file_schema(list(schemas))


def repeated_text(text: str, count: int) -> pa.Array:
    """`text` `count` times, built from buffers (pyarrow's `repeat` of a string scalar
    costs about 200 ns a row)."""
    data = text.encode()
    try:
        import numpy as np
    except ImportError:  # numpy is optional for bkcodec
        return pa.repeat(pa.scalar(text, pa.string()), count)
    if count * len(data) >= 1 << 31:
        return pa.array([text] * count, pa.string())  # past 32-bit offsets (never for a path)
    offsets = np.arange(count + 1, dtype=np.int32) * np.int32(len(data))
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data * count))


def aligned_columns(batch: pa.RecordBatch, schema: pa.Schema, file: str, kind: str) -> list[pa.Array]:
    """A reader's batch's columns in `schema`'s order: `file` and `file_kind` (where
    the schema has them) the text given, columns the batch lacks null."""
    n = batch.num_rows
    names = set(batch.schema.names)
    columns = []
    for field in schema:
        if field.name == "file":
            columns.append(repeated_text(file, n))
        elif field.name == "file_kind":
            columns.append(repeated_text(kind, n))
        elif field.name in names:
            columns.append(batch.column(field.name))
        else:
            columns.append(pa.nulls(n, field.type))
    return columns


def aligned_batch(batch: pa.RecordBatch, schema: pa.Schema, path: str | os.PathLike[str], kind: str) -> pa.RecordBatch:
    """A reader's batch in the merged schema: its file (as `path_text` writes it) and
    kind first, absent columns null."""
    return pa.RecordBatch.from_arrays(aligned_columns(batch, schema, path_text(path), kind), schema=schema)


def unreadable_batch(schema: pa.Schema, path: str | os.PathLike[str], kind: str, err: OSError) -> pa.RecordBatch:
    """One row for a file the operating system would not let be read (permissions, a
    file gone since it was listed): its file and kind, `error_kind` `unreadable`
    (neither clean nor damaged), the `error` saying why; every other column null."""
    reason = err.strerror or str(err)
    values: dict[str, Any] = {
        "file": path_text(path),
        "file_kind": kind,
        "error": f"unreadable: {reason}",
        "error_kind": "unreadable",
    }
    return pa.RecordBatch.from_pylist([{k: v for k, v in values.items() if k in schema.names}], schema=schema)


def file_schema(f: BookieFile, options: dict[str, Any]) -> pa.Schema:
    """The schema of a file's reader; the kind's when the file cannot be opened."""
    try:
        return _open(f, options).schema
    except OSError:
        if f.kind == "index":
            return reader_schema("index")
        flags = {k: options[k] for k in ("payload", "on_error") if options.get(k) is not None}
        kind: Any = f.kind  # an entry log or a journal: the only kinds opened here
        return reader_schema(kind, **flags)


def read_bookie_files(files: Sequence[BookieFile], **options: Any) -> pa.RecordBatchReader:
    """The rows of the given entry logs, journals and index files in one stream,
    each after its `file` and `file_kind` (see `read_bookie`)."""
    if not files:
        raise ValueError("no files to read")
    first: dict[str, BookieFile] = {}
    for f in files:
        first.setdefault(f.kind, f)
    schema = merged_schema([file_schema(f, options) for f in first.values()])
    flag = options.get("on_error", "flag") == "flag" and "error_kind" in schema.names

    def batches() -> Iterator[pa.RecordBatch]:
        for f in files:
            try:
                reader = _open(f, options)
            except OSError as err:
                # Unreadable is neither clean nor damaged: one row says so, the
                # other files are still read.
                if not flag:
                    raise
                yield unreadable_batch(schema, f.path, f.kind, err)
                continue
            for batch in reader:
                yield aligned_batch(batch, schema, f.path, f.kind)

    return pa.RecordBatchReader.from_batches(schema, batches())


def _database_rows(dbs: Sequence[Any], kind: str, options: dict[str, Any]) -> pa.RecordBatchReader:
    from bkcodec import index_db

    read = index_db.read_location_index if kind == "location_index" else index_db.read_ledger_index
    allowed = {k: options[k] for k in ("batch_size", "on_error") if options.get(k) is not None}
    inner = read(dbs[0].path, **allowed).schema
    schema = pa.schema([pa.field("file", pa.string(), nullable=False), pa.field("file_kind", pa.string(), nullable=False), *inner])

    def batches() -> Iterator[pa.RecordBatch]:
        for db in dbs:
            for batch in read(db.path, **allowed):
                yield aligned_batch(batch, schema, db.path, "rocksdb")

    return pa.RecordBatchReader.from_batches(schema, batches())


def read_bookie(path: str | os.PathLike[str], kind: str = "entries", **options: Any) -> pa.RecordBatchReader:
    """Every row of a bookie directory (a bookie root, journal, ledger or index
    directory, a `current/`, or any tree; one file also works) as one Arrow stream.

    `kind`: `"entries"` (default: entry logs and journals merged, columns absent
    from one kind null), `"entry_log"`, `"journal"`, `"index"` (`.idx` files),
    `"location_index"` or `"ledger_index"` (DbLedgerStorage's RocksDB databases;
    needs `bkcodec[rocksdb]`). Each row starts with its `file` and `file_kind`
    (`rocksdb` for index databases); then the reader's columns. Files are found
    by `bookie_layout` (a RocksDB write-ahead log is never an entry log; log4j's
    `*.log` files are skipped) and read in path order. `options` go to the readers
    (`digest_type`, `password`, `ledger_metadata`, `verify`, `payload`, `on_error`,
    `batch_size`; the index databases take `batch_size` and `on_error`).
    """
    if kind not in BOOKIE_KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(BOOKIE_KINDS)})")
    unknown = set(options) - set(_SCAN_OPTIONS)
    if unknown:
        raise TypeError(f"read_bookie() got unexpected options: {', '.join(sorted(unknown))}")
    layout = bookie_layout(path)
    if kind in ("location_index", "ledger_index"):
        roles = ("locations", "scoped-locations") if kind == "location_index" else ("ledgers", "scoped-ledgers")
        dbs = [db for db in layout.databases if db.role in roles]
        if not dbs:
            raise ValueError(f"{path}: no {' or '.join(roles)} database found")
        return _database_rows(dbs, kind, options)
    wanted = ("entry_log", "journal") if kind == "entries" else (kind,)
    files = layout.files_of(*wanted)
    if not files:
        what = " or ".join(k.replace("_", " ") + "s" for k in wanted)
        raise ValueError(f"{Path(path)}: no {what} found")
    if kind == "index":
        options = {k: v for k, v in options.items() if k == "batch_size"}
    return read_bookie_files(files, **options)
