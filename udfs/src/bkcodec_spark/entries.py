"""Decoding a binary column of raw entries with `DataFrame.mapInArrow`.

    decoded = df.mapInArrow(*decode_entries_in_arrow(df, "raw", keep=["key"]))

`decode_entries_in_arrow` returns the function and the Spark schema that go with
it; `decode_entries(df, ...)` is the same in one call. The function hands each
Arrow batch Spark gives it to `bkcodec.decode_entries`, and returns the kept input
columns beside the decoded ones, cast to exactly the declared schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Literal, NamedTuple, Sequence

import bkcodec
import pyarrow as pa

from bkcodec_spark.arrow_types import spark_accepts_views, spark_safe_schema, to_spark_safe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = [
    "EntryDecoder",
    "MapInArrow",
    "decode_entries",
    "decode_entries_in_arrow",
    "entry_arrow_schema",
    "entry_schema",
]


PayloadMode = Literal["binary", "binary_view", "none"]
OnError = Literal["raise", "flag"]


@dataclass(frozen=True)
class EntryOptions:
    """What `bkcodec.decode_entries` is told; `digest_type` "auto" means inferred."""

    digest_type: str | None = None
    password: bytes | str = b""
    verify: bool = True
    payload: PayloadMode = "binary"
    on_error: OnError = "flag"

    def decode(self, entries) -> pa.RecordBatch:
        return bkcodec.decode_entries(
            entries,
            digest_type=None if self.digest_type in (None, "auto") else self.digest_type,
            password=self.password,
            verify=self.verify,
            payload=self.payload,
            on_error=self.on_error,
        )


def entry_arrow_schema(
    payload: PayloadMode = "binary", on_error: OnError = "flag", *, views: bool | None = None
) -> pa.Schema:
    """The Arrow schema of decoded entry columns as Spark receives them.

    Asks bkcodec itself (an empty decode), so it always matches the decoder and
    checks the option names. `views=None` keeps binary views where this Spark takes them.
    """
    batch = EntryOptions(payload=payload, on_error=on_error).decode([])
    return spark_safe_schema(batch.schema, views=spark_accepts_views() if views is None else views)


def entry_schema(payload: PayloadMode = "binary", on_error: OnError = "flag") -> StructType:
    """The Spark schema of the decoded entry columns (`format_version` ... `error`)."""
    return spark_struct(entry_arrow_schema(payload, on_error))


def spark_struct(schema: pa.Schema) -> StructType:
    """The Spark schema for batches of `schema` (views become plain binary and strings,
    which is what Spark calls them whether or not it takes them as views)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(spark_safe_schema(schema, views=False))


class MapInArrow(NamedTuple):
    """A function and its output schema, unpacked into `df.mapInArrow(*...)`."""

    function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
    schema: StructType


@dataclass(frozen=True)
class EntryDecoder:
    """The `mapInArrow` function: raw entries in `column`, decoded rows out.

    Pickled to the Python workers; it carries every option and the exact output schema.
    """

    column: str
    keep: tuple[str, ...]
    options: EntryOptions
    decoded_schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            decoded = to_spark_safe(self.options.decode(batch.column(self.column)), self.decoded_schema)
            kept = [batch.column(name) for name in self.keep]
            kept_fields = [batch.schema.field(name) for name in self.keep]
            yield pa.RecordBatch.from_arrays(
                kept + decoded.columns, schema=pa.schema(kept_fields + list(self.decoded_schema))
            )


def decode_entries_in_arrow(
    df: DataFrame,
    column: str = "raw",
    *,
    keep: Sequence[str] | str = (),
    digest_type: str | None = None,
    password: bytes | str = b"",
    verify: bool = True,
    payload: PayloadMode = "binary",
    on_error: OnError = "flag",
) -> MapInArrow:
    """`(function, schema)` for `df.mapInArrow` that decodes the binary `column`.

    `keep` names input columns to carry alongside (before the decoded columns), or
    `"*"` for every column but `column`. The other arguments are
    `bkcodec.decode_entries`'s; `digest_type` None or "auto" infers V1 digest types
    per ledger. `on_error="flag"` (the default here) turns a bad entry into a row with
    an `error`, so one damaged entry does not fail the job.
    """
    from pyspark.sql.types import BinaryType, StructType

    if column not in df.columns:
        raise ValueError(f"no column {column!r} in {df.columns}")
    if not isinstance(df.schema[column].dataType, BinaryType):
        raise TypeError(f"column {column!r} must be binary, not {df.schema[column].dataType.simpleString()}")
    if keep == "*":
        kept = tuple(name for name in df.columns if name != column)
    else:
        kept = (keep,) if isinstance(keep, str) else tuple(keep)
    missing = [name for name in kept if name not in df.columns]
    if missing:
        raise ValueError(f"keep names columns that are not in the DataFrame: {missing}")
    options = EntryOptions(digest_type, password, verify, payload, on_error)
    options.decode([])  # checks the option values here rather than in every task
    decoded = entry_arrow_schema(payload, on_error)
    clashes = sorted(set(kept) & set(decoded.names))
    if clashes:
        raise ValueError(f"kept columns clash with decoded columns: {clashes}; rename them first")
    schema = StructType([df.schema[name] for name in kept] + spark_struct(decoded).fields)
    return MapInArrow(EntryDecoder(column, kept, options, decoded), schema)


def decode_entries(df: DataFrame, column: str = "raw", **options) -> DataFrame:
    """`df.mapInArrow(*decode_entries_in_arrow(df, column, **options))`."""
    return df.mapInArrow(*decode_entries_in_arrow(df, column, **options))
