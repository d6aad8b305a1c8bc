"""Range arguments: `3`, `10:20` (20 excluded), `:20`, `10:`, and comma lists of them;
for `--ledger` also qualified names and UUIDs."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Span:
    start: int | None  # inclusive; None = unbounded
    end: int | None  # exclusive; None = unbounded

    def __str__(self) -> str:
        if self.end is not None and self.start is not None and self.end == self.start + 1:
            return str(self.start)
        return f"{'' if self.start is None else self.start}:{'' if self.end is None else self.end}"


# Ids and offsets are signed 64-bit in BookKeeper's files.
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _int(text: str, what: str, upper: int = INT64_MAX) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: not an integer: {text!r}") from None
    if not INT64_MIN <= value <= upper:
        raise argparse.ArgumentTypeError(f"{what}: {text} is out of range (ids and offsets are signed 64-bit)")
    return value


def non_negative(text: str) -> int:
    """An argparse `type` for counts such as --limit."""
    value = _int(text, "count")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def parse_spans(text: str) -> tuple[Span, ...]:
    """`3,10:20,40:` -> spans, as the core reads the syntax for every reader and
    source; used as an argparse `type`."""
    from .._bkcodec import parse_id_ranges

    try:
        ranges = parse_id_ranges(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    # The core's inclusive bounds; the 64-bit extremes bound nothing.
    return tuple(Span(None if lo == INT64_MIN else lo, None if hi == INT64_MAX else hi + 1) for lo, hi in ranges)


def parse_offset_range(text: str) -> Span:
    """One byte range `START:END` for a reader's start/end."""
    spans = parse_spans(text)
    if len(spans) != 1:
        raise argparse.ArgumentTypeError("--offset takes one range START:END")
    s = spans[0]
    if (s.start is not None and s.start < 0) or (s.end is not None and s.end < 0):
        raise argparse.ArgumentTypeError("byte offsets are not negative")
    return s


def mask(column, spans: tuple[Span, ...]):
    """A boolean mask: the column's value lies in any span (nulls never match)."""
    import pyarrow.compute as pc

    result = None
    for s in spans:
        m = None
        if s.start is not None:
            m = pc.greater_equal(column, s.start)
        if s.end is not None:
            hi = pc.less(column, s.end)
            m = hi if m is None else pc.and_(m, hi)
        if m is None:
            m = pc.is_valid(column)
        result = m if result is None else pc.or_(result, m)
    return pc.fill_null(result, False)


def qualified_ledger(text: str) -> Any:
    """The `LedgerId` a qualified name or UUID names (one ledger with its scope), as
    the core parses them, or None for text of another shape."""
    from .. import LedgerId

    try:
        return LedgerId.from_qualified_name(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class LedgerSelection:
    """`--ledger`: ledger ids and ranges of them (any scope), and qualified names or
    UUIDs (one ledger of one scope), in one comma list: `3,7:10,00000000-0000-0005-0000-000000000007`."""

    spans: tuple[Span, ...]
    qualified: tuple[tuple[int, int], ...]  # (scope_id, ledger_id)

    def mask(self, batch):
        """Rows of the selected ledgers. A qualified name matches its ledger id in its
        scope, or with the scope unknown (a damaged record whose header held the ledger
        id only); without a scope_id column (index files) the scope is 0."""
        import pyarrow as pa
        import pyarrow.compute as pc

        ledger = batch.column("ledger_id")
        result = mask(ledger, self.spans) if self.spans else pa.array([False] * batch.num_rows)
        if self.qualified:
            names = batch.schema.names
            scope = batch.column("scope_id") if "scope_id" in names else pa.array([0] * batch.num_rows, pa.int64())
            for s, lid in self.qualified:
                in_scope = pc.or_(pc.is_null(scope), pc.fill_null(pc.equal(scope, s), False))
                one = pc.and_(in_scope, pc.fill_null(pc.equal(ledger, lid), False))
                result = pc.or_(result, one)
        return result

    def rows_with_unknown(self, batch):
        """The rows of the selected ledgers, and every row whose ledger is unknown (a
        damaged span may hold the selected ledgers' entries)."""
        if batch.num_rows == 0:
            return batch
        import pyarrow.compute as pc

        return batch.filter(pc.or_(self.mask(batch), pc.is_null(batch.column("ledger_id"))))


def add_ledger_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ledger",
        type=parse_ledger_selection,
        metavar="LEDGERS",
        help="ledger ids and ranges (any scope), qualified names or UUIDs (one scope), e.g. 3,7:10",
    )


def parse_ledger_selection(text: str) -> LedgerSelection:
    """`3,10:20,<qualified name>` -> a LedgerSelection; used as an argparse `type`."""
    spans: list[Span] = []
    qualified: list[tuple[int, int]] = []
    for part in text.split(","):
        part = part.strip()
        lid = qualified_ledger(part)
        if lid is not None:
            qualified.append((lid.scope_id, lid.ledger_id))
        else:
            spans.extend(parse_spans(part or text))  # an empty part: parse_spans says so, quoting the whole
    return LedgerSelection(tuple(spans), tuple(qualified))
