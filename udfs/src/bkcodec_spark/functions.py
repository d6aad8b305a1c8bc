"""Column functions: entry decoding as a struct, and small id helpers.

    df.select(decode_entry_udf("raw").alias("e"))
    df.select(qualified_name_udf("scope_id", "ledger_id"))   # a column named qualified_name
    bkcodec_spark.register(spark)   # the same, for SQL: bk_decode_entry(raw), ...

Unaliased, the columns are named `entry`, `qualified_name`, `ledger`, `log_id` and
`offset`. Each is a vectorized UDF: an Arrow UDF where Spark has them (4.1 and later), a
pandas UDF before. The decoding itself is `bkcodec`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import bkcodec
import pyarrow as pa
import pyarrow.compute as pc

from bkcodec_spark.arrow_types import spark_safe_type
from bkcodec_spark.entries import EntryOptions, OnError, PayloadMode, entry_arrow_schema

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import DataType

__all__ = [
    "decode_entry_udf",
    "location_log_id_udf",
    "location_offset_udf",
    "qualified_name_udf",
    "ledger_id_udf",
    "register",
]

ArrowFunction = Callable[..., pa.Array]

_LEDGER_ID_TYPE = pa.struct([pa.field("scope_id", pa.int64()), pa.field("ledger_id", pa.int64())])


def _arrow_udfs_available() -> bool:
    import pyspark.sql.functions as F

    return hasattr(F, "arrow_udf")


def vectorized_udf(function: ArrowFunction, return_type: pa.DataType, engine: str | None = None):
    """A Spark UDF running `function` (Arrow arrays in, an Arrow array out).

    `engine` "arrow" uses `arrow_udf` (Spark 4.1+), "pandas" a `pandas_udf` that
    converts at the edges; None picks "arrow" when this Spark has it.
    """
    from pyspark.sql.pandas.types import from_arrow_type

    spark_type = from_arrow_type(spark_safe_type(return_type, views=False))
    engine = engine or ("arrow" if _arrow_udfs_available() else "pandas")
    if engine == "arrow":
        return _arrow_engine(function, return_type, spark_type)
    if engine == "pandas":
        return _pandas_engine(function, return_type, spark_type)
    raise ValueError(f"unknown engine {engine!r} (expected 'arrow' or 'pandas')")


def _arrow_engine(function: ArrowFunction, return_type: pa.DataType, spark_type: DataType):
    from pyspark.sql.functions import arrow_udf

    # Left unannotated: Spark then takes it for a scalar UDF without inspecting hints.
    def run(*columns):
        return _exactly(function(*columns), return_type)

    udf: Any = arrow_udf  # its overloads expect type hints, which `run` leaves out
    return udf(run, spark_type)


def _pandas_engine(function: ArrowFunction, return_type: pa.DataType, spark_type: DataType):
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    def run(*series):
        result = _exactly(function(*(pa.Array.from_pandas(s) for s in series)), return_type)
        # Arrow-backed pandas columns keep 64-bit ids exact through the round trip.
        if pa.types.is_struct(return_type):
            return pa.Table.from_struct_array(result).to_pandas(types_mapper=pd.ArrowDtype)
        return result.to_pandas(types_mapper=pd.ArrowDtype)

    udf: Any = pandas_udf  # its overloads expect type hints, which `run` leaves out
    return udf(run, spark_type)


def _int64(values: pa.Array) -> pa.Array:
    # A pandas UDF sees a long column with nulls as float64; the checked cast restores it.
    return values if values.type == pa.int64() else values.cast(pa.int64())


def _exactly(result: pa.Array | pa.ChunkedArray, return_type: pa.DataType) -> pa.Array:
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return result if result.type == return_type else result.cast(return_type)


def decode_entry_udf(
    column: Column | str,
    *,
    digest_type: str | None = None,
    password: bytes | str = b"",
    verify: bool = True,
    payload: PayloadMode = "binary",
    on_error: OnError = "flag",
    engine: str | None = None,
) -> Column:
    """A struct column of the decoded entry in the binary `column`.

    Fields are `bkcodec.decode_entries`' columns; a bad entry gives a struct with
    `error` set (`on_error="flag"`), a null input a null struct (with the pandas
    engine, which cannot return a null struct, a struct of nulls). `digest_type`
    None or "auto" infers V1 digest types per ledger within each Arrow batch.
    """
    return _decode_entry_function(digest_type, password, verify, payload, on_error, engine)(column).alias("entry")


def _decode_entry_function(digest_type, password, verify, payload, on_error, engine):
    options = EntryOptions(digest_type, password, verify, payload, on_error)
    options.decode([])  # checks the option values on the driver
    fields = list(entry_arrow_schema(payload, on_error))
    struct_type = pa.struct(fields)

    def decode(raw: pa.Array) -> pa.Array:
        batch = options.decode(raw)
        columns = [column.cast(field.type) for column, field in zip(batch.columns, fields)]
        validity = pc.is_valid(raw)
        return pa.StructArray.from_arrays(columns, fields=fields, mask=pc.invert(validity))

    return vectorized_udf(decode, struct_type, engine)


def qualified_name_udf(scope_id: Column | str, ledger_id: Column | str, *, engine: str | None = None) -> Column:
    """The 32-hex-digit qualified name of the 128-bit ledger id (scope_id, ledger_id)."""
    return _qualified_name_function(engine)(scope_id, ledger_id).alias("qualified_name")


def _qualified_name_function(engine):
    def names(scopes: pa.Array, ledgers: pa.Array) -> pa.Array:
        return pa.array(
            [
                None if s is None or l is None else bkcodec.LedgerId(s, l).qualified_name
                for s, l in zip(_int64(scopes).to_pylist(), _int64(ledgers).to_pylist())
            ],
            pa.string(),
        )

    return vectorized_udf(names, pa.string(), engine)


def ledger_id_udf(qualified_name: Column | str, *, engine: str | None = None) -> Column:
    """A struct<scope_id, ledger_id> from a qualified name (or UUID); null if it does not parse."""
    return _ledger_id_function(engine)(qualified_name).alias("ledger")


def _ledger_id_function(engine):
    def parse(names: pa.Array) -> pa.Array:
        return pa.array([_parse_ledger_id(n) for n in names.to_pylist()], _LEDGER_ID_TYPE)

    return vectorized_udf(parse, _LEDGER_ID_TYPE, engine)


def _parse_ledger_id(name: str | None) -> dict | None:
    if name is None:
        return None
    try:
        ledger = bkcodec.LedgerId.from_qualified_name(name)
    except ValueError:
        return None
    return {"scope_id": ledger.scope_id, "ledger_id": ledger.ledger_id}


def location_log_id_udf(location: Column | str, *, engine: str | None = None) -> Column:
    """The entry log id of an index location (its high 32 bits); null for 0 ("no entry")."""
    return _location_function("log_id", engine)(location).alias("log_id")


def location_offset_udf(location: Column | str, *, engine: str | None = None) -> Column:
    """The offset in its entry log of the entry bytes an index location names (its low
    32 bits, just past the record's size field); null for 0 ("no entry")."""
    return _location_function("offset", engine)(location).alias("offset")


def _location_function(part: str, engine):
    half = 0 if part == "log_id" else 1

    def split(locations: pa.Array) -> pa.Array:
        values = _int64(locations).to_pylist()
        return pa.array(
            [None if v is None or v == 0 else bkcodec.split_location(v)[half] for v in values], pa.int64()
        )

    return vectorized_udf(split, pa.int64(), engine)


def register(
    spark: SparkSession,
    *,
    prefix: str = "bk_",
    digest_type: str | None = None,
    password: bytes | str = b"",
    verify: bool = True,
    payload: PayloadMode = "binary",
    engine: str | None = None,
) -> list[str]:
    """Registers the functions for SQL and returns their names.

    `bk_decode_entry(raw)` (with the digest options given here), `bk_qualified_name(scope_id,
    ledger_id)`, `bk_ledger_id(name)`, `bk_location_log_id(location)`, `bk_location_offset(location)`.

    Also registers the `bookkeeper` format with this session, so its reads run the
    Python of `PYSPARK_PYTHON` (a packed environment's, on a cluster) rather than
    Spark's pick for formats it finds by name (`PYSPARK_DRIVER_PYTHON` when set).
    """
    functions = {
        "decode_entry": _decode_entry_function(digest_type, password, verify, payload, "flag", engine),
        "qualified_name": _qualified_name_function(engine),
        "ledger_id": _ledger_id_function(engine),
        "location_log_id": _location_function("log_id", engine),
        "location_offset": _location_function("offset", engine),
    }
    for name, function in functions.items():
        spark.udf.register(prefix + name, function)
    from bkcodec_spark.datasource import BookKeeperDataSource

    spark.dataSource.register(BookKeeperDataSource)
    return [prefix + name for name in functions]
