"""Range arguments: `3`, `10:20` (20 excluded), `:20`, `10:`, and comma lists of them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    start: int | None  # inclusive; None = unbounded
    end: int | None  # exclusive; None = unbounded

    def __str__(self) -> str:
        if self.end is not None and self.start is not None and self.end == self.start + 1:
            return str(self.start)
        return f"{'' if self.start is None else self.start}:{'' if self.end is None else self.end}"


def _int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: not an integer: {text!r}") from None


def parse_spans(text: str) -> tuple[Span, ...]:
    """`3,10:20,40:` -> spans; used as an argparse `type`."""
    spans = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise argparse.ArgumentTypeError(f"empty range in {text!r}")
        if ":" in part:
            lo, _, hi = part.partition(":")
            start = _int(lo, "range start") if lo.strip() else None
            end = _int(hi, "range end") if hi.strip() else None
            if start is not None and end is not None and end <= start:
                raise argparse.ArgumentTypeError(f"empty range {part!r}: the end is excluded and must be above the start")
            spans.append(Span(start, end))
        else:
            v = _int(part, "value")
            spans.append(Span(v, v + 1))
    return tuple(spans)


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
