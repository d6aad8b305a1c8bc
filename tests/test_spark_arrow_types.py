"""The Spark-safe Arrow conversion, without Spark: every type Spark's Arrow bridge
refuses is mapped to one it takes, values stay exact, and overflow raises."""

from __future__ import annotations

import pyarrow as pa
import pytest

pytest.importorskip("bkcodec_spark")
from bkcodec_spark.arrow_types import (  # noqa: E402
    SparkSafeTypeError,
    spark_accepts_views,
    spark_safe_schema,
    spark_safe_type,
    to_spark_safe,
)

# Types Spark's ArrowUtils.fromArrowType rejects (measured on 3.5 to 4.3).
REFUSED = [
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.dictionary(pa.int32(), pa.string()),
    pa.binary(4),
    pa.float16(),
    pa.date64(),
    pa.timestamp("ms", "UTC"),
    pa.timestamp("s"),
    pa.timestamp("ns", "UTC"),
]


def accepted(t: pa.DataType, views: bool) -> bool:
    """Whether Spark's Arrow bridge takes `t` (the refused list, recursively)."""
    if t in REFUSED or pa.types.is_dictionary(t) or pa.types.is_fixed_size_binary(t):
        return False
    if pa.types.is_fixed_size_list(t) or pa.types.is_union(t):
        return False
    if (pa.types.is_binary_view(t) or pa.types.is_string_view(t)) and not views:
        return False
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return accepted(t.value_type, views)
    if pa.types.is_struct(t):
        return all(accepted(t.field(i).type, views) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return accepted(t.key_type, views) and accepted(t.item_type, views)
    return True


@pytest.mark.parametrize(
    "given, expected",
    [
        (pa.uint8(), pa.int16()),
        (pa.uint16(), pa.int32()),
        (pa.uint32(), pa.int64()),
        (pa.uint64(), pa.int64()),
        (pa.dictionary(pa.int8(), pa.uint32()), pa.int64()),
        (pa.binary(20), pa.binary()),
        (pa.float16(), pa.float32()),
        (pa.binary_view(), pa.binary()),
        (pa.string_view(), pa.string()),
        (pa.date64(), pa.date32()),
        (pa.timestamp("ms", "UTC"), pa.timestamp("us", "UTC")),
        (pa.timestamp("s"), pa.timestamp("us")),
        (pa.timestamp("ns", "UTC"), pa.timestamp("us", "UTC")),
        (pa.list_(pa.uint64()), pa.list_(pa.int64())),
        (pa.list_(pa.uint8(), 3), pa.list_(pa.int16())),
        (pa.large_list(pa.binary(4)), pa.large_list(pa.binary())),
        (pa.map_(pa.string_view(), pa.uint16()), pa.map_(pa.string(), pa.int32())),
        (
            pa.struct([pa.field("a", pa.uint32(), nullable=False), pa.field("b", pa.string())]),
            pa.struct([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string())]),
        ),
        # Already accepted: unchanged.
        (pa.int64(), pa.int64()),
        (pa.large_binary(), pa.large_binary()),
        (pa.timestamp("us", "UTC"), pa.timestamp("us", "UTC")),
        (pa.bool_(), pa.bool_()),
    ],
)
def test_types(given, expected):
    assert spark_safe_type(given) == expected
    assert accepted(spark_safe_type(given), views=False)


def test_views_kept_when_spark_takes_them():
    assert spark_safe_type(pa.binary_view(), views=True) == pa.binary_view()
    assert spark_safe_type(pa.struct([("s", pa.string_view())]), views=True) == pa.struct([("s", pa.string_view())])
    assert spark_accepts_views("4.3.0") and spark_accepts_views("5.0.1")
    assert not spark_accepts_views("4.2.1") and not spark_accepts_views("3.5.6")


def test_no_spark_type_raises():
    with pytest.raises(SparkSafeTypeError, match="union"):
        spark_safe_type(pa.sparse_union([pa.field("a", pa.int8())]))


def test_schema_keeps_names_nullability_and_metadata():
    schema = pa.schema(
        [pa.field("offset", pa.uint64(), nullable=False), pa.field("payload", pa.binary_view())],
        metadata={b"k": b"v"},
    )
    safe = spark_safe_schema(schema)
    assert safe == pa.schema([pa.field("offset", pa.int64(), nullable=False), pa.field("payload", pa.binary())])
    assert safe.metadata == {b"k": b"v"}
    assert spark_safe_schema(schema, nullable=True).field("offset").nullable


def test_batch_values_exact_and_schema_equal():
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([0, 2**63 - 1, None], pa.uint64()),
            pa.array([255, 0, 7], pa.uint8()),
            pa.array([b"ab", b"", None], pa.binary_view()),
            pa.array(["x", "y", "x"]).dictionary_encode(),
            pa.array([b"\x00\x01", b"\xff\xff", b"zz"], pa.binary(2)),
        ],
        names=["offset", "u8", "payload", "kind", "key"],
    )
    safe = to_spark_safe(batch)
    assert safe.schema == spark_safe_schema(batch.schema)
    assert all(accepted(f.type, views=False) for f in safe.schema)
    assert safe.to_pydict() == {
        "offset": [0, 2**63 - 1, None],
        "u8": [255, 0, 7],
        "payload": [b"ab", b"", None],
        "kind": ["x", "y", "x"],
        "key": [b"\x00\x01", b"\xff\xff", b"zz"],
    }


def test_table_and_target_schema_with_new_names_and_nullability():
    table = pa.table({"a": pa.array([1, 2], pa.uint32())})
    target = pa.schema([pa.field("b", pa.int64(), nullable=False)])
    out = to_spark_safe(table, target)
    assert isinstance(out, pa.Table)
    assert out.schema.equals(target) and out.column("b").to_pylist() == [1, 2]


def test_dictionary_of_unsigned_and_chunked_dictionaries():
    chunks = pa.chunked_array(
        [pa.array([1, 2, 1], pa.uint64()).dictionary_encode(), pa.array([3], pa.uint64()).dictionary_encode()]
    )
    table = pa.Table.from_arrays([chunks], names=["v"])
    out = to_spark_safe(table)
    assert out.schema.field("v").type == pa.int64()
    assert out.column("v").to_pylist() == [1, 2, 1, 3]


def test_columns_already_safe_are_not_copied():
    payload = pa.array([b"x" * 100, b"y"])
    batch = pa.RecordBatch.from_arrays([payload], names=["payload"])
    out = to_spark_safe(batch)
    assert out.column(0).buffers()[2].address == payload.buffers()[2].address


def test_overflow_raises_rather_than_wrapping():
    batch = pa.RecordBatch.from_arrays([pa.array([2**63], pa.uint64())], names=["v"])
    with pytest.raises(pa.ArrowInvalid):
        to_spark_safe(batch)


def test_millisecond_timestamps_widen_exactly():
    ms = pa.array([1_700_000_000_123, None, -1], pa.timestamp("ms", "UTC"))
    safe = to_spark_safe(pa.table({"t": ms})).column("t")
    assert safe.type == pa.timestamp("us", "UTC") and safe.to_pylist() == ms.to_pylist()
    with pytest.raises(pa.ArrowInvalid):
        to_spark_safe(pa.table({"t": pa.array([2**62], pa.timestamp("ms"))}))


def test_column_count_must_match_the_target():
    batch = pa.RecordBatch.from_arrays([pa.array([1])], names=["a"])
    with pytest.raises(ValueError, match="expected 2 columns"):
        to_spark_safe(batch, pa.schema([("a", pa.int64()), ("b", pa.int64())]))


def test_nested_columns():
    struct = pa.StructArray.from_arrays(
        [pa.array(["a", "b"]).dictionary_encode(), pa.array([1, 2], pa.uint32())], names=["k", "v"]
    )
    lists = pa.array([[1, 2], [3]], pa.list_(pa.uint64()))
    keys = pa.array([[b"ab"], [b"cd"]], pa.list_(pa.binary(2)))
    out = to_spark_safe(pa.RecordBatch.from_arrays([struct, lists, keys], names=["s", "l", "k"]))
    assert all(accepted(f.type, views=False) for f in out.schema)
    assert out.to_pydict() == {
        "s": [{"k": "a", "v": 1}, {"k": "b", "v": 2}],
        "l": [[1, 2], [3]],
        "k": [[b"ab"], [b"cd"]],
    }
