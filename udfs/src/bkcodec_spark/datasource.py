"""`spark.read.format("bookkeeper")`: entry logs, journals and index files as rows.

    spark.read.format("bookkeeper").load("/data/bookie/ledgers/current/*.log")
    spark.read.format("bookkeeper").option("kind", "journal").load("/data/bookie/journal")

Options (all strings, as Spark passes them; any other option is refused):

- `kind`: `auto` (default: the one kind the file names show), `entrylog`, `journal`,
  `index`. A named kind with no such files gives an empty result and a warning.
- `digestType`: `auto` (default), `crc32`, `crc32c`, `hmac`, `dummy`.
- `password`: the ledgers' password (for HMAC), default empty.
- `ledgerMetadata`: a directory of ledger metadata (a ZooKeeper dump, as
  `bkcodec.load_ledger_metadata_dir` reads it): each ledger is verified with its own
  digest type and password, which is how DUMMY ledgers and HMAC ledgers with
  different passwords are read.
- `verify`: `true` (default) or `false`.
- `payload`: `binary` (default), `binary_view` (Spark's Python data sources take
  plain binary, so read as `binary`), `none`.
- `columns`: the columns to read, comma-separated (default: all). Spark does not tell
  a Python data source which columns a query uses, so this (or a schema given with
  `.schema(...)`, any subset of the columns) is how a read leaves out what it does
  not need: without `payload` no payload is decoded or sent, without `file` no path
  is repeated on every row.
- `splitSize`: the most bytes one partition reads (default 512m; a number of bytes,
  or with a k/m/g suffix): small files are packed together up to it, larger entry
  logs and journals are read in byte ranges of it, in parallel.
- `minPartitions`: at least this many partitions when there is enough to read
  (default: the driver's CPU count), so small reads still use every core.
- `fs.<name>`: options of the remote filesystem (`s3://`, `s3a://`, `gs://`, `abfs://`,
  `hdfs://` paths are read through `pyarrow.fs`): `fs.endpointOverride`,
  `fs.accessKey`, `fs.secretKey`, `fs.region`, ... (pyarrow's names, in any case).
  Without them pyarrow takes credentials from the environment (`AWS_*`, ...).
- `ledgerId`, `entryId`, `scopeId`, `logId`, `journalId`, `offset`: row filters in the
  command line's range syntax (`7`, `10:20` with 20 excluded, `:20`, `100:`, comma
  lists). Only matching rows reach Spark, and files and byte ranges that cannot hold
  any are not read (see `bkcodec_spark.planning`).

Rows are the bkcodec reader's, after a `file` column naming the file. A bookie
directory (entry logs and journals together) with `kind` `auto` is read merged, as
`bkcodec.read_bookie(kind="entries")` reads it, each row with its `file_kind`; files
named like entry logs that are not (log4j logs, RocksDB write-ahead logs) are skipped
with a warning, and index files are read with `kind` `index`. A file that
cannot be read at all (gone, not a bookie file, a zero-length entry log) becomes one
row with `error` set rather than a failed job, and damage inside a file becomes
flagged rows where bkcodec's scan finds it.

`where` filters Spark pushes (`spark.sql.python.filterPushdown.enabled`) are taken
the same way only on Spark versions that keep a pushed read to its own query (see
`pushdown_is_safe`); elsewhere Spark applies them itself.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from bkcodec.bookie import aligned_columns
from bkcodec_spark import files, planning, pushdown
from bkcodec_spark.arrow_types import spark_safe_schema, to_spark_safe
from bkcodec_spark.entries import spark_struct

__all__ = ["BookKeeperDataSource", "FilePartition", "ReadPlan", "parse_size"]

# Four times Spark's own file sources' 128 MiB: each Python data source task costs
# Spark 10 to 40 ms before it reads a byte (measured in local[2]; 2 to 5 times a JVM
# task's cost), so fewer, longer tasks, while a large read still has a partition per
# core (see bkcodec.plan_partitions). 673 MB of entry logs on 2 cores: 6 partitions to
# 2, a one-ledger read 0.26 to 0.17 s, a groupBy 0.49 to 0.39 s.
DEFAULT_SPLIT_SIZE = 512 * 1024 * 1024
_SIZE_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# Option names as Spark hands them over (lower-cased); `path`/`paths` come from load().
OPTIONS = (
    "kind",
    "digestType",
    "password",
    "ledgerMetadata",
    "verify",
    "payload",
    "columns",
    "splitSize",
    "minPartitions",
    # Row filters, in the command line's range syntax ("3,10:20,40:"; END excluded):
    "ledgerId",
    "entryId",
    "scopeId",
    "logId",
    "journalId",
    "offset",
)
ROW_FILTER_OPTIONS = {
    "ledgerId": "ledger_id",
    "entryId": "entry_id",
    "scopeId": "scope_id",
    "logId": "log_id",
    "journalId": "journal_id",
    "offset": "offset",
}
_PATH_OPTIONS = ("path", "paths")


def parse_size(text: str) -> int:
    """`"134217728"`, `"128m"`, `"1g"`, ... in bytes."""
    value = text.strip().lower().removesuffix("b")
    scale = _SIZE_SUFFIXES.get(value[-1:], 1)
    if scale != 1:
        value = value[:-1]
    try:
        size = int(value) * scale
    except ValueError:
        raise ValueError(f"not a size: {text!r} (a number of bytes, or with a k, m or g suffix)") from None
    if size <= 0:
        raise ValueError(f"splitSize must be positive, not {text!r}")
    return size


def _flag(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, not {text!r}")
    return value == "true"


def _positive(text: str, name: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"{name} must be a positive whole number, not {text!r}")
    return value


def check_option_names(names) -> None:
    known = {name.lower(): name for name in OPTIONS}
    unknown = sorted(
        n for n in names if n.lower() not in known and n.lower() not in _PATH_OPTIONS and not n.lower().startswith("fs.")
    )
    if unknown:
        raise ValueError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for the bookkeeper "
            f"format; it takes {', '.join(OPTIONS)}"
        )


def full_schema(kind: str, options: files.ReadOptions) -> pa.Schema:
    """Every column a read of `kind` gives, as Spark is told them: `file`, the reader's
    columns (its nullability: a column bkcodec always fills is not null), then `error`."""
    reader = spark_safe_schema(files.reader_schema(kind, options), views=False)
    fields = [pa.field("file", pa.string(), nullable=False)]
    for field in reader:
        # The data source's own row for an unreadable index file has no entry id.
        fields.append(field.with_nullable(True) if kind == files.INDEX else field)
    if "error" not in reader.names:
        fields.append(pa.field("error", pa.string()))
    return pa.schema(fields)


def project(full: pa.Schema, requested: pa.Schema, kind: str) -> pa.Schema:
    """`requested` (a schema given with `.schema(...)`, or picked by `columns`) checked
    against the columns the read gives."""
    if len(set(requested.names)) != len(requested.names):
        raise ValueError(f"columns named twice: {requested.names}")
    for field in requested:
        if field.name not in full.names:
            raise ValueError(f"no column {field.name!r} in {kind} rows; they have {', '.join(full.names)}")
        ours = full.field(field.name)
        if field.type != ours.type:
            raise ValueError(f"column {field.name!r} is {ours.type}, not {field.type}")
        if ours.nullable and not field.nullable:
            raise ValueError(f"column {field.name!r} can be null (in flagged rows); declare it nullable")
    return requested


@dataclass(frozen=True)
class ReadPlan:
    """What a read needs, worked out once from the options (the files are listed
    separately, when the read is planned)."""

    paths: str
    kind: str
    options: files.ReadOptions
    columns: tuple[str, ...] | None
    split_size: int
    min_partitions: int
    # (option name, its text) for the row filters given as options
    row_filter_options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, options, kind: str | None = None) -> ReadPlan:
        check_option_names(list(options.keys()))
        given = {str(key).lower(): value for key, value in options.items()}

        def get(name: str, default: str = "") -> str:
            return given.get(name.lower(), default)

        paths = get("paths") or get("path")
        if not paths:
            raise ValueError('give the files to read: spark.read.format("bookkeeper").load(path_or_glob)')
        read_options = files.ReadOptions(
            digest_type=get("digestType", "auto").lower(),
            password=get("password", ""),
            verify=_flag(get("verify", "true"), "verify"),
            payload=get("payload", "binary").lower(),
            ledger_metadata=get("ledgerMetadata") or None,
            filesystem=tuple(sorted((k[len("fs.") :], v) for k, v in given.items() if k.startswith("fs."))),
        )
        columns_option = get("columns", "").strip()
        columns = tuple(c.strip() for c in columns_option.split(",")) if columns_option else None
        requested_kind = get("kind", "auto").lower()
        if requested_kind != "auto" and requested_kind not in files.KINDS:
            raise ValueError(f"kind must be auto or one of {', '.join(files.KINDS)}, not {requested_kind!r}")
        return cls(
            paths=paths,
            kind=kind or requested_kind,
            options=read_options,
            columns=columns,
            split_size=parse_size(get("splitSize", str(DEFAULT_SPLIT_SIZE))),
            min_partitions=_positive(get("minPartitions", str(os.cpu_count() or 1)), "minPartitions"),
            row_filter_options=tuple((name, get(name)) for name in ROW_FILTER_OPTIONS if get(name).strip()),
        )

    def list_files(self, *, missing_ok: bool = False) -> files.Listing:
        return files.list_files(self.paths, self.kind, missing_ok=missing_ok, filesystem=self.options.filesystem)

    def resolved(self, listing: files.Listing) -> ReadPlan:
        return replace(self, kind=listing.kind)

    def full_schema(self) -> pa.Schema:
        return full_schema(self.kind, self.options)

    def arrow_schema(self) -> pa.Schema:
        """The rows' Arrow schema as Spark is told it: the `columns` asked for, or all."""
        full = self.full_schema()
        self.row_filters(full)  # checks the filter options at load()
        if self.columns is None:
            return full
        unknown = [c for c in self.columns if c not in full.names]
        if unknown:
            raise ValueError(f"no column {unknown[0]!r} in {self.kind} rows; they have {', '.join(full.names)}")
        return project(full, pa.schema([full.field(c) for c in self.columns]), self.kind)

    def row_filters(self, full: pa.Schema) -> pushdown.Pushed:
        """The row filters given as options (`ledgerId`, `offset`, ...), checked
        against the columns rows of this kind have."""
        taken = []
        for name, text in self.row_filter_options:
            column = ROW_FILTER_OPTIONS[name]
            if column not in full.names:
                raise ValueError(f"option {name} filters {column}, which {self.kind} rows do not have")
            taken.append(pushdown.option_filters(column, text))
        return pushdown.Pushed(tuple(taken))

    def read_options(self, columns: list[str]) -> files.ReadOptions:
        """The reader's options for rows of `columns`: no payload decoded unless asked
        for, and binary rather than views (which Spark's data source check refuses)."""
        payload = self.options.payload
        if "payload" not in columns:
            payload = "none"
        elif payload == "binary_view":
            payload = "binary"
        return replace(self.options, payload=payload)


class BookKeeperDataSource(DataSource):
    """The `bookkeeper` format (see the module documentation for the options)."""

    @classmethod
    def name(cls) -> str:
        return "bookkeeper"

    def schema(self) -> StructType:
        plan = ReadPlan.from_options(self.options)
        # Spark asks for the schema and then for the reader, each in its own Python
        # worker, and both list the files: only the reader's listing warns (of files
        # left out, of a kind with no files), so each warning is printed once.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", files.NoFilesWarning)
            listing = plan.list_files()
        # Kept with the data source Spark stores for this DataFrame, so `auto` picks
        # the same kind when each action re-lists the files.
        self._kind = listing.kind
        return spark_struct(plan.resolved(listing).arrow_schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        plan = ReadPlan.from_options(self.options, getattr(self, "_kind", None))
        # Listed when Spark plans the read (Spark 4 plans a DataFrame's read once, at
        # its first action): a file named explicitly that has gone is one flagged row.
        listing = plan.list_files(missing_ok=True)
        plan = plan.resolved(listing)
        reader_class = FilteringReader if _planned_with_pushdown() and pushdown_is_safe() else BookKeeperReader
        return reader_class(plan, listing, schema)


def pushdown_is_safe(version: str | None = None) -> bool:
    """Whether this Spark (default: the installed pyspark) keeps a pushed read to the
    query that pushed it.

    Spark 4.1 to 4.3 store the read planned with a query's pushed filters on the
    DataFrame's data source and replay it for the DataFrame's later queries that push
    no filter (a `count()` after a `where("ledger_id = 1")` counts ledger 1 only), so
    on those the data source takes no filter and Spark filters the rows itself; the
    `ledgerId`, `offset`, ... options prune instead. Spark 5 plans each scan's pushed
    read on its own.
    """
    if version is None:
        import pyspark

        version = pyspark.__version__
    return int(version.split(".")[0]) >= 5


def _planned_with_pushdown() -> bool:
    """Whether Spark asks for this reader while planning with filter pushdown.

    Spark (4.1+) refuses a reader that implements `pushFilters` when
    `spark.sql.python.filterPushdown.enabled` is off, and does not tell the data
    source which it is; it plans pushdown reads in a worker module of their own,
    which is what the caller's frame shows. Anything else gets the plain reader.
    """
    frame = sys._getframe(1)
    for _ in range(6):
        frame = frame.f_back
        if frame is None:
            return False
        spec = frame.f_globals.get("__spec__")
        module = getattr(spec, "name", None) or frame.f_globals.get("__name__", "")
        if module == "pyspark.sql.worker.data_source_pushdown_filters":
            return True
    return False


class FilePartition(InputPartition):
    """Files or byte ranges read one after another by one task, with the read options."""

    def __init__(self, splits: tuple[files.FileSplit, ...], options: files.ReadOptions):
        super().__init__([split.describe() for split in splits[:3]])
        self.splits = splits
        self.options = options


class BookKeeperReader(DataSourceReader):
    def __init__(self, plan: ReadPlan, listing: files.Listing, schema: StructType):
        from pyspark.sql.pandas.types import to_arrow_schema

        self.plan = plan
        full = plan.full_schema()
        # Spark compares batches with exactly this (nullability included).
        self.arrow_schema = project(full, to_arrow_schema(schema), plan.kind)
        if plan.columns is not None and tuple(self.arrow_schema.names) != plan.columns:
            raise ValueError(f"the schema given ({self.arrow_schema.names}) and the columns option disagree")
        self.pushed = plan.row_filters(full)
        self._full = full
        self._listing = listing

    def __getstate__(self):
        # The listing is only needed to plan partitions on the driver; each task gets
        # its own files in its partition, not the whole listing.
        state = dict(self.__dict__)
        state.pop("_listing", None)
        return state

    def _wide_schema(self) -> pa.Schema:
        """The columns rows are built with: those asked for and those filtered on."""
        wanted = set(self.arrow_schema.names) | self.pushed.columns
        return pa.schema([f for f in self._full if f.name in wanted])

    def partitions(self) -> list[InputPartition]:
        groups = planning.plan_partitions(
            self._listing,
            self.pushed,
            split_size=self.plan.split_size,
            min_partitions=self.plan.min_partitions,
            password=self.plan.options.password,
        )
        options = self.plan.read_options(self._wide_schema().names)
        return [FilePartition(tuple(group), options) for group in groups]

    def read(self, partition: InputPartition):
        if not isinstance(partition, FilePartition):
            return  # Spark's stand-in when there is nothing to read
        wide = self._wide_schema()
        for split in partition.splits:
            for batch in self._read_split(split, partition.options, wide):
                batch = self.pushed.apply(batch)
                if batch.num_rows:
                    yield pa.RecordBatch.from_arrays(
                        [batch.column(name) for name in self.arrow_schema.names], schema=self.arrow_schema
                    )

    def _read_split(self, split: files.FileSplit, options: files.ReadOptions, wide: pa.Schema):
        try:
            for batch in files.read_split(split, options):
                yield self._with_file(batch, split, wide)
        except (OSError, ValueError) as error:
            # A file bkcodec cannot read at all (or stops reading): one flagged row, so
            # the rows read before it and the other files still arrive. A ranged read
            # reports it only from the range that holds the offset.
            row = self._error_row(split, error, wide, options.filesystem)
            if row is not None:
                yield row

    @staticmethod
    def _with_file(batch: pa.RecordBatch, split: files.FileSplit, wide: pa.Schema) -> pa.RecordBatch:
        arrays = aligned_columns(batch, wide, split.path, files.CORE_KIND[split.kind])
        return to_spark_safe(pa.RecordBatch.from_arrays(arrays, names=wide.names), wide)

    @staticmethod
    def _error_row(
        split: files.FileSplit, error: Exception, wide: pa.Schema, filesystem: tuple = ()
    ) -> pa.RecordBatch | None:
        where = f" (bytes {split.start}..{split.end})" if split.start is not None else ""
        # In entry logs and journals `offset` is a position in the file (an index
        # file's `offset` column is a position in an entry log).
        offset = getattr(error, "offset", None)
        if offset is None or split.kind == files.INDEX:
            offset = 0
        if split.start is not None and not (split.start <= offset < max(split.end or 0, split.start + 1)):
            return None  # another range of the file holds it
        size = files.file_size(split.path, filesystem)
        values = {
            "file": split.path,
            "file_kind": files.CORE_KIND[split.kind],
            "error": f"{type(error).__name__}: {error}{where}",
            files.NAME_ID_COLUMN[split.kind]: files.name_id_of(split.path),
            # What could not be read: from the offset to the end of the split.
            "record_size": max(0, (split.end if split.end is not None else (size or 0)) - offset),
            "record_type": "damage",
            "error_kind": "unreadable",
        }
        if split.kind != files.INDEX:
            values["offset"] = offset
        arrays = [pa.array([values.get(f.name)], f.type) for f in wide]
        return pa.RecordBatch.from_arrays(arrays, schema=wide)


class FilteringReader(BookKeeperReader):
    """The reader Spark plans with filter pushdown on: it takes the filters it can
    apply itself (see `bkcodec_spark.pushdown`), prunes files and ranges with them
    and sends Spark only the rows that pass."""

    def pushFilters(self, filters):
        taken, left = pushdown.accept(filters, self.arrow_schema)
        self.pushed = self.pushed + taken
        return left
