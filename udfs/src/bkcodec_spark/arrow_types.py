"""Arrow data Spark accepts: the conversion applied to every batch handed to Spark.

Spark's Arrow bridge refuses unsigned integers, dictionaries, fixed-size binary,
half floats, date64, timestamps in units other than microseconds, fixed-size and view
lists, and (before Spark 4.3) the binary/string view types. `spark_safe_type` maps each of those to the nearest type Spark takes,
recursively through lists, structs and maps; `to_spark_safe` casts a batch to it.
This module imports pyarrow only, so it is usable (and tested) without Spark.
"""

from __future__ import annotations

from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

__all__ = [
    "SparkSafeTypeError",
    "spark_accepts_views",
    "spark_safe_field",
    "spark_safe_schema",
    "spark_safe_type",
    "to_spark_safe",
]


class SparkSafeTypeError(TypeError):
    """An Arrow type with no Spark counterpart."""


# Widening keeps every value exact; uint64 is narrowed with a checked cast (bookie
# offsets, sizes and ids stay far below 2**63, and a value that does not fit raises
# rather than wrapping).
_UNSIGNED = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.int64(),
}


def spark_accepts_views(version: str | None = None) -> bool:
    """Whether this Spark (default: the installed pyspark) takes binary/string views."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (4, 3)


def spark_safe_type(t: pa.DataType, *, views: bool = False) -> pa.DataType:
    """The type Spark accepts for values of type `t` (`t` itself when it already does).

    `views=True` keeps binary_view and string_view (Spark 4.3 and later take them).
    """
    if t in _UNSIGNED:
        return _UNSIGNED[t]
    if pat.is_dictionary(t):
        return spark_safe_type(t.value_type, views=views)
    if pat.is_fixed_size_binary(t):
        return pa.binary()
    if pat.is_float16(t):
        return pa.float32()
    if pat.is_binary_view(t):
        return t if views else pa.binary()
    if pat.is_string_view(t):
        return t if views else pa.string()
    if pat.is_date64(t):
        return pa.date32()
    if pat.is_timestamp(t) and t.unit != "us":
        # Spark's timestamps are microseconds: seconds and milliseconds widen exactly
        # (a value out of range raises), nanoseconds narrow with a checked cast.
        return pa.timestamp("us", t.tz)
    if pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t) or _is_list_view(t):
        value_field = spark_safe_field(t.value_field, views=views)
        return pa.large_list(value_field) if pat.is_large_list(t) else pa.list_(value_field)
    if pat.is_map(t):
        return pa.map_(
            spark_safe_field(t.key_field, views=views),
            spark_safe_field(t.item_field, views=views),
            keys_sorted=t.keys_sorted,
        )
    if pat.is_struct(t):
        return pa.struct([spark_safe_field(t.field(i), views=views) for i in range(t.num_fields)])
    if pat.is_union(t) or _is_type(t, "is_run_end_encoded"):
        raise SparkSafeTypeError(f"Spark has no type for Arrow {t}")
    return t


def _is_type(t: pa.DataType, predicate: str) -> bool:
    # Predicates for newer types exist only in newer pyarrow releases.
    test = getattr(pat, predicate, None)
    return bool(test is not None and test(t))


def _is_list_view(t: pa.DataType) -> bool:
    return _is_type(t, "is_list_view") or _is_type(t, "is_large_list_view")


def spark_safe_field(field: pa.Field, *, views: bool = False) -> pa.Field:
    return field.with_type(spark_safe_type(field.type, views=views))


def spark_safe_schema(schema: pa.Schema, *, views: bool = False, nullable: bool | None = None) -> pa.Schema:
    """`schema` with every type made Spark-safe; `nullable` forces every top-level field's flag."""
    fields: Iterable[pa.Field] = (spark_safe_field(f, views=views) for f in schema)
    if nullable is not None:
        fields = (f.with_nullable(nullable) for f in fields)
    return pa.schema(list(fields), metadata=schema.metadata)


def to_spark_safe(
    data: pa.RecordBatch | pa.Table, schema: pa.Schema | None = None, *, views: bool = False
) -> pa.RecordBatch | pa.Table:
    """`data` cast to `schema` (default: `spark_safe_schema(data.schema)`), field for field.

    Columns are matched by position and renamed to the target's names; the result's
    schema equals `schema` exactly (nullability included), as Spark's Python data
    sources require. Columns whose type is already right are passed through uncopied.
    """
    target = schema if schema is not None else spark_safe_schema(data.schema, views=views)
    if len(target) != data.num_columns:
        raise ValueError(f"expected {len(target)} columns, got {data.num_columns}: {data.schema.names}")
    columns = [_cast(column, field.type) for column, field in zip(data.columns, target)]
    if isinstance(data, pa.Table):
        return pa.Table.from_arrays(columns, schema=target)
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _cast(column, target: pa.DataType):
    if column.type == target:
        return column
    if pat.is_dictionary(column.type):
        # Decode first so a dictionary of unsigned values is checked like any other.
        column = _decode_dictionary(column)
        if column.type == target:
            return column
    return pc.cast(column, target, safe=True)


def _decode_dictionary(column):
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([chunk.dictionary_decode() for chunk in column.chunks], column.type.value_type)
    return column.dictionary_decode()
