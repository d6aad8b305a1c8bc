"""Filters Spark pushes to the `bookkeeper` data source: which it takes, the rows they
keep, and what they say about a whole file or byte range before it is read.

Spark (4.1 and later, with `spark.sql.python.filterPushdown.enabled`) hands a reader
the conjuncts of a query's `WHERE` as `pyspark.sql.datasource.Filter` objects. A
filter taken here is applied to every row exactly as Spark would (SQL's three-valued
logic: a comparison with null is null, and a null verdict drops the row), so Spark
does not evaluate it again; the same code answers, for a file, whether any row it can
hold may pass (`admits`). Filters are recognised by class name, so this module
imports pyarrow only and works with any pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

__all__ = ["InRanges", "Pushed", "accept", "option_filters"]

_COMPARISONS = {
    "EqualTo": pc.equal,
    "GreaterThan": pc.greater,
    "GreaterThanOrEqual": pc.greater_equal,
    "LessThan": pc.less,
    "LessThanOrEqual": pc.less_equal,
}
_STRING_TESTS = {
    "StringStartsWith": pc.starts_with,
    "StringEndsWith": pc.ends_with,
    "StringContains": pc.match_substring,
}
_UNARY = ("IsNull", "IsNotNull")


@dataclass(frozen=True)
class InRanges:
    """A read option's filter (`ledgerId="1,10:20"`): the column's value lies in one of
    `ranges`, each `[start, end)` with None for unbounded; null never does."""

    attribute: tuple[str]
    ranges: tuple[tuple[int | None, int | None], ...]


def option_filters(column: str, text: str) -> InRanges:
    """`ledgerId="3,10:20,40:"` (the `bkcodec` command line's range syntax: END is
    excluded) as a filter on `column`."""
    import argparse

    from bkcodec.cli.ranges import parse_spans

    try:
        spans = parse_spans(text)
    except argparse.ArgumentTypeError as error:
        raise ValueError(f"{column}: {error}") from None
    return InRanges((column,), tuple((s.start, s.end) for s in spans))


def _column(f) -> str | None:
    path = getattr(f, "attribute", None)
    if isinstance(path, tuple) and len(path) == 1 and isinstance(path[0], str):
        return path[0]
    return None  # a nested field: not ours


def _scalar_fits(value: Any, t: pa.DataType) -> bool:
    """Whether `value` is a literal of the column's own type (Spark passes those)."""
    if pat.is_integer(t):
        if not isinstance(value, int) or isinstance(value, bool):
            return False
        bits = t.bit_width
        return -(1 << (bits - 1)) <= value < (1 << (bits - 1)) if pat.is_signed_integer(t) else 0 <= value < (1 << bits)
    if pat.is_boolean(t):
        return isinstance(value, bool)
    if pat.is_string(t) or pat.is_large_string(t):
        return isinstance(value, str)
    return False


def _supported(f, schema: pa.Schema) -> bool:
    name = type(f).__name__
    if name == "Not":
        return _supported(f.child, schema)
    if isinstance(f, InRanges):
        return _column(f) in schema.names and pat.is_integer(schema.field(_column(f)).type)
    column = _column(f)
    if column is None or column not in schema.names:
        return False
    t = schema.field(column).type
    if not (pat.is_integer(t) or pat.is_boolean(t) or pat.is_string(t) or pat.is_large_string(t)):
        return False  # binary payloads and keys are compared by Spark
    if name in _UNARY:
        return True
    value = getattr(f, "value", None)
    if name in _COMPARISONS:
        return _scalar_fits(value, t)
    if name == "EqualNullSafe":
        return value is None or _scalar_fits(value, t)
    if name == "In":
        # A null in the list makes a miss unknown rather than false; Spark keeps those.
        return isinstance(value, tuple) and len(value) > 0 and all(_scalar_fits(v, t) for v in value)
    if name in _STRING_TESTS:
        return (pat.is_string(t) or pat.is_large_string(t)) and isinstance(value, str)
    return False


def _verdict(f, column) -> pa.Array:
    """The filter on one column's values: true, false or null, as SQL has it."""
    name = type(f).__name__
    if name == "Not":
        return pc.invert(_verdict(f.child, column))
    if isinstance(f, InRanges):
        verdict = None
        for start, end in f.ranges:
            inside = pc.is_valid(column)
            if start is not None:
                inside = pc.and_kleene(inside, pc.greater_equal(column, pa.scalar(start, pa.int64())))
            if end is not None:
                inside = pc.and_kleene(inside, pc.less(column, pa.scalar(end, pa.int64())))
            verdict = inside if verdict is None else pc.or_kleene(verdict, inside)
        return pc.if_else(pc.is_valid(column), verdict, pa.scalar(None, pa.bool_()))
    if name == "IsNull":
        return pc.is_null(column)
    if name == "IsNotNull":
        return pc.is_valid(column)
    if name == "EqualNullSafe":
        if f.value is None:
            return pc.is_null(column)
        return pc.fill_null(pc.equal(column, pa.scalar(f.value, column.type)), False)
    if name in _COMPARISONS:
        return _COMPARISONS[name](column, pa.scalar(f.value, column.type))
    if name == "In":
        found = pc.is_in(column, value_set=pa.array(f.value, column.type))
        return pc.if_else(pc.is_valid(column), found, pa.scalar(None, pa.bool_()))
    return _STRING_TESTS[name](column, pattern=f.value)


@dataclass(frozen=True)
class Pushed:
    """The filters a reader took (their AND), by the column each tests."""

    filters: tuple[Any, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.filters)

    def __add__(self, other: Pushed) -> Pushed:
        return Pushed(self.filters + other.filters)

    @property
    def columns(self) -> set[str]:
        return {_column(_innermost(f)) for f in self.filters}  # type: ignore[misc]

    def on(self, column: str) -> list:
        return [f for f in self.filters if _column(_innermost(f)) == column]

    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        """Which rows of `batch` pass every filter (null where one is unknown), or None
        when no filter tests a column of `batch`."""
        verdict = None
        for f in self.filters:
            column = _column(_innermost(f))
            if column not in batch.schema.names:
                continue
            v = _verdict(f, batch.column(column))
            verdict = v if verdict is None else pc.and_kleene(verdict, v)
        return verdict

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of `batch` that pass (a null verdict drops the row, as in SQL)."""
        verdict = self.mask(batch)
        if verdict is None:
            return batch
        return batch.filter(verdict, null_selection_behavior="drop")

    def admits(self, column: str, values: Sequence[Any], t: pa.DataType) -> bool:
        """Whether a row whose `column` holds one of `values` (None for null) can pass
        the filters on that column: False means no such row can, so a file or range
        whose rows all hold such values need not be read."""
        tests = self.on(column)
        if not tests:
            return True
        array = pa.array(list(values), t)
        verdict = None
        for f in tests:
            v = _verdict(f, array)
            verdict = v if verdict is None else pc.and_kleene(verdict, v)
        return bool(pc.any(pc.fill_null(verdict, False)).as_py())

    def interval(self, column: str) -> tuple[int | None, int | None]:
        """`[low, high)` holding every integer value the filters on `column` let
        through (None for unbounded): comparisons, equality and IN lists."""
        low: int | None = None
        high: int | None = None

        def raise_low(v: int) -> None:
            nonlocal low
            low = v if low is None else max(low, v)

        def lower_high(v: int) -> None:
            nonlocal high
            high = v if high is None else min(high, v)

        for f in self.on(column):
            name, value = type(f).__name__, getattr(f, "value", None)
            if name in ("EqualTo", "EqualNullSafe") and value is not None:
                raise_low(value)
                lower_high(value + 1)
            elif name == "GreaterThan":
                raise_low(value + 1)
            elif name == "GreaterThanOrEqual":
                raise_low(value)
            elif name == "LessThan":
                lower_high(value)
            elif name == "LessThanOrEqual":
                lower_high(value + 1)
            elif name == "In":
                raise_low(min(value))
                lower_high(max(value) + 1)
            elif isinstance(f, InRanges):
                starts = [start for start, _ in f.ranges]
                ends = [end for _, end in f.ranges]
                if None not in starts:
                    raise_low(min(starts))  # type: ignore[type-var]
                if None not in ends:
                    lower_high(max(ends))  # type: ignore[type-var]
        return low, high


def _innermost(f):
    while type(f).__name__ == "Not":
        f = f.child
    return f


def accept(filters: Iterable[Any], schema: pa.Schema) -> tuple[Pushed, list]:
    """Splits Spark's filters into those the reader applies itself and those left to
    Spark (nested fields, binary columns, literals of another type, nulls in IN lists)."""
    taken, left = [], []
    for f in filters:
        (taken if _supported(f, schema) else left).append(f)
    return Pushed(tuple(taken)), left
