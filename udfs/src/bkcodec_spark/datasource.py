"""`spark.read.format("bookkeeper")`: entry logs, journals and index files as rows.

    spark.read.format("bookkeeper").load("/data/bookie/ledgers/current/*.log")
    spark.read.format("bookkeeper").option("kind", "journal").load("/data/bookie/journal")

Options (all strings, as Spark passes them):

- `kind`: `auto` (default: the one kind the file names show), `entrylog`, `journal`, `index`.
- `digestType`: `auto` (default), `crc32`, `crc32c`, `hmac`, `dummy`.
- `password`: the ledgers' password (for HMAC), default empty.
- `ledgerMetadata`: a directory of ledger metadata (a ZooKeeper dump, as
  `bkcodec.load_ledger_metadata_dir` reads it): each ledger is verified with its own
  digest type and password, which is how DUMMY ledgers and HMAC ledgers with
  different passwords are read.
- `verify`: `true` (default) or `false`.
- `payload`: `binary` (default), `binary_view` (read as binary by Spark), `none`.
- `splitSize`: entry logs larger than this are read in byte ranges of this size, in
  parallel (default 128m; a number of bytes, or with a k/m/g suffix).

Rows are the bkcodec reader's, after a `file` column naming the file; one partition
reads one file (or one byte range of a large entry log). A file that cannot be read
at all becomes one row with `error` set rather than a failed job, and damage inside
a file becomes flagged rows where bkcodec's scan finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from bkcodec_spark import files
from bkcodec_spark.arrow_types import spark_safe_schema, to_spark_safe
from bkcodec_spark.entries import spark_struct

__all__ = ["BookKeeperDataSource", "FilePartition", "parse_size"]

DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
_SIZE_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


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


@dataclass(frozen=True)
class ReadPlan:
    """Everything a read needs, worked out once from the options."""

    kind: str
    options: files.ReadOptions
    splits: tuple[files.FileSplit, ...]

    @classmethod
    def from_options(cls, options) -> ReadPlan:
        paths = options.get("paths") or options.get("path")
        if not paths:
            raise ValueError('give the files to read: spark.read.format("bookkeeper").load(path_or_glob)')
        read_options = files.ReadOptions(
            digest_type=options.get("digestType", "auto").lower(),
            password=options.get("password", ""),
            verify=_flag(options.get("verify", "true"), "verify"),
            payload=options.get("payload", "binary").lower(),
            ledger_metadata=options.get("ledgerMetadata") or None,
        )
        kind, selected = files.select_kind(files.expand_paths(paths), options.get("kind", "auto").lower())
        split_size = parse_size(options.get("splitSize", str(DEFAULT_SPLIT_SIZE)))
        return cls(kind, read_options, tuple(files.plan_splits(selected, kind, split_size)))

    def arrow_schema(self) -> pa.Schema:
        """The rows' Arrow schema as Spark is told it: `file`, the reader's columns, `error`."""
        reader = spark_safe_schema(files.reader_schema(self.kind, self.options), views=False, nullable=True)
        fields = [pa.field("file", pa.string()), *reader]
        if "error" not in reader.names:
            fields.append(pa.field("error", pa.string()))
        return pa.schema(fields)


class BookKeeperDataSource(DataSource):
    """The `bookkeeper` format (see the module documentation for the options)."""

    @classmethod
    def name(cls) -> str:
        return "bookkeeper"

    def schema(self) -> StructType:
        return spark_struct(ReadPlan.from_options(self.options).arrow_schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        return BookKeeperReader(ReadPlan.from_options(self.options), schema)


class FilePartition(InputPartition):
    """One file or byte range, with the read options: everything `read` needs."""

    def __init__(self, split: files.FileSplit, options: files.ReadOptions):
        super().__init__(split.path)
        self.split = split
        self.options = options


class BookKeeperReader(DataSourceReader):
    def __init__(self, plan: ReadPlan, schema: StructType):
        from pyspark.sql.pandas.types import to_arrow_schema

        self.plan = plan
        # Spark compares batches with exactly this (nullability included).
        self.arrow_schema = to_arrow_schema(schema)

    def partitions(self) -> list[InputPartition]:
        return [FilePartition(split, self.plan.options) for split in self.plan.splits]

    def read(self, partition: InputPartition):
        assert isinstance(partition, FilePartition)
        split = partition.split
        try:
            for batch in files.read_split(split, partition.options):
                yield self._with_file(batch, split.path)
        except (OSError, ValueError) as error:
            # A file bkcodec cannot read at all (or stops reading): one flagged row, so
            # the rows read before it and the other files still arrive.
            yield self._error_row(split, error)

    def _with_file(self, batch: pa.RecordBatch, path: str) -> pa.RecordBatch:
        columns = {"file": pa.repeat(pa.scalar(path, pa.string()), batch.num_rows)}
        for name in batch.schema.names:
            columns[name] = batch.column(name)
        arrays = [
            columns[f.name] if f.name in columns else pa.nulls(batch.num_rows, f.type) for f in self.arrow_schema
        ]
        return to_spark_safe(pa.RecordBatch.from_arrays(arrays, names=self.arrow_schema.names), self.arrow_schema)

    def _error_row(self, split: files.FileSplit, error: Exception) -> pa.RecordBatch:
        where = f" (bytes {split.start}..{split.end})" if split.start is not None else ""
        values = {"file": split.path, "error": f"{type(error).__name__}: {error}{where}"}
        offset = getattr(error, "offset", None)
        # In entry logs and journals `offset` is a position in the file (an index
        # file's `offset` column is a position in an entry log).
        if offset is not None and split.kind != files.INDEX:
            values["offset"] = offset
        arrays = [pa.array([values.get(f.name)], f.type) for f in self.arrow_schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
