"""How commands print: human tables (rich), JSON for machines, progress on stderr.

Names that come from the data (paths, topics, producer names, messages quoting
them) may hold control characters and bytes that are not UTF-8: every table cell
and line goes through `display_text` (escaped, never markup), and JSON carries
paths as `path_text` writes them (never a lone surrogate).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from ..paths import display_text, escape_surrogates, path_text


def encode_payload(data: bytes | None, mode: str) -> str | None:
    """A payload as text: `hex`, `base64`, or None for `none` (and for a null payload)."""
    if data is None or mode == "none":
        return None
    if mode == "hex":
        return data.hex()
    return base64.b64encode(data).decode("ascii")


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, os.PathLike):
        return path_text(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_surrogates(v) for v in value]
    return value


def to_json(obj: Any) -> str:
    text = json.dumps(obj, default=_json_default, separators=(",", ":"), sort_keys=False)
    if "\\ud" in text:
        # A name that is not UTF-8 got here unescaped: no JSON reader takes a lone surrogate.
        text = json.dumps(_without_surrogates(obj), default=_json_default, separators=(",", ":"), sort_keys=False)
    return text


# Paths keep at least this many columns however narrow the terminal.
MIN_PATH_WIDTH = 24


def shorten_path(path: str, width: int) -> str:
    """`path` in at most `width` characters, cut from the left at a `/` and marked
    with `…`, so the file name and its nearest directories stay whole."""
    if len(path) <= width:
        return path
    tail = path[len(path) - max(width - 1, 1) :]
    cut = tail.find("/")
    if 0 <= cut < len(tail) - 1:
        tail = tail[cut:]
    elif "/" in path:
        tail = path[path.rfind("/") :]  # even the file name is too long: keep it whole
    return "…" + tail


def path_budget(columns: Sequence[str], cells: Sequence[Sequence[str]], path_columns: Sequence[int], width: int) -> int:
    """How wide each path column may be so the table fits `width` columns: all the
    other columns fold down to their longest word (at most 16) before a path is
    shortened, and a path keeps MIN_PATH_WIDTH however narrow the terminal."""
    if not path_columns:
        return width
    gaps = 2 * (len(columns) - 1)  # one blank either side of each column boundary
    folded = 0
    for i, c in enumerate(columns):
        if i not in path_columns:
            longest_word = max((len(w) for r in cells for w in r[i].split()), default=0)
            folded += max(len(c), min(longest_word, 16))
    return max(MIN_PATH_WIDTH, (width - gaps - folded) // len(path_columns))


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def fit_columns(
    columns: Sequence[str], cells: Sequence[Sequence[str]], fixed: dict[int, int], width: int
) -> tuple[list[int], list[int]]:
    """The columns a table keeps at `width` and their widths. A cell's words (and
    numbers) are never split: a column is at least as wide as its longest word (a
    cell wraps at blanks only), `fixed` columns (paths, already shortened) as given.
    When every column fits whole, each is as wide as its longest cell; else the room
    left over the minimums goes to the columns that wrap, in proportion to what
    they lack; when even the minimums do not fit, columns are left out from the
    right (never a fixed one nor the first)."""
    natural, minimum = [], []
    for i, c in enumerate(columns):
        if i in fixed:
            natural.append(fixed[i])
            minimum.append(fixed[i])
            continue
        natural.append(max([len(c)] + [len(r[i]) for r in cells]))
        minimum.append(max([_longest_word(c)] + [_longest_word(r[i]) for r in cells] + [1]))
    kept = list(range(len(columns)))

    def total(values: list[int]) -> int:
        return sum(values[i] for i in kept) + 2 * (len(kept) - 1)

    while total(minimum) > width and any(i not in fixed for i in kept[1:]):
        kept.remove(next(i for i in reversed(kept) if i not in fixed))
    if total(natural) <= width:
        return kept, [natural[i] for i in kept]
    widths = {i: minimum[i] for i in kept}
    room = width - total(minimum)
    lack = {i: natural[i] - minimum[i] for i in kept if natural[i] > minimum[i]}
    if room > 0 and lack:
        whole = sum(lack.values())
        for i, n in lack.items():
            widths[i] += room * n // whole
    return kept, [widths[i] for i in kept]


def wrap_cell(text: str, width: int) -> str:
    """`text` on lines of at most `width` columns, broken at blanks only (a word
    longer than `width` keeps its own line whole)."""
    if len(text) <= width:
        return text
    return "\n".join(textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False)) or text


class Output:
    """One command's output channels.

    `--json` output goes to stdout and nothing else does then; progress bars go to
    stderr and only when stderr is a terminal (so pipes and CI logs stay clean).
    """

    def __init__(self, *, json_mode: bool, progress: bool | None = None, stdout: TextIO | None = None) -> None:
        self.json_mode = json_mode
        self.stdout = stdout if stdout is not None else sys.stdout
        self.console = Console(file=self.stdout, highlight=False, emoji=False)
        # The width tables fit: the terminal's, or COLUMNS when it is set; None when
        # piped without COLUMNS (tables then keep whole rows instead of folding at 80).
        self.width: int | None = self.console.width
        if not self.console.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
            self.console.width = 1000
            self.width = None
        self.err_console = Console(file=sys.stderr, highlight=False)
        if progress is None:
            progress = self.err_console.is_terminal
        self.show_progress = progress

    # Machine output
    def json(self, obj: Any) -> None:
        self.stdout.write(to_json(obj))
        self.stdout.write("\n")

    # Human output
    def line(self, text: str = "", style: str | None = None) -> None:
        if not self.json_mode:
            self.console.print(display_text(text), style=style, markup=False, soft_wrap=True)

    def write_line(self, text: str) -> None:
        """One line written as it is (aligned columns of the caller's), escaped."""
        self.stdout.write(display_text(text) + "\n")

    def markup(self, text: str) -> None:
        if not self.json_mode:
            self.console.print(text, soft_wrap=True)

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        title: str | None = None,
        right: Sequence[str] = (),
        paths: Sequence[str] = ("file",),
    ) -> None:
        """A table; the `paths` columns are never wrapped (a path cut in two cannot be
        copied): when the table is wider than the terminal they are shortened from the
        left, at a `/`, and the other cells wrap at blanks, never inside a word or a
        number; columns that still do not fit go under each row, as `name: value`
        lines indented by 4 (see `fit_columns`)."""
        if self.json_mode:
            return
        cells = [["" if v is None else display_text(str(v)) for v in r] for r in rows]
        if self._plain_table(columns, cells, title, right, paths):
            return
        path_columns = [i for i, c in enumerate(columns) if c in paths]
        budget = path_budget(columns, cells, path_columns, self.console.width)
        cells = [[shorten_path(v, budget) if i in path_columns else v for i, v in enumerate(r)] for r in cells]
        fixed = {i: max([len(columns[i])] + [len(r[i]) for r in cells]) for i in path_columns}
        width = self.console.width
        kept, widths = fit_columns(columns, cells, fixed, width)
        justify = [str.rjust if columns[i] in right and i not in path_columns else str.ljust for i in kept]
        left_out = [i for i in range(len(columns)) if i not in kept]

        def lines(r: Sequence[str]) -> list[str]:
            wrapped = [wrap_cell(r[i], w).split("\n") for i, w in zip(kept, widths)]
            return [
                "  ".join(j(x[k] if k < len(x) else "", w) for j, x, w in zip(justify, wrapped, widths)).rstrip()
                for k in range(max(len(x) for x in wrapped))
            ]

        if title is not None:
            self.console.print(Text(title, style="italic"), soft_wrap=True)
        for line in lines(columns):
            self.console.print(Text(line, style="bold"), soft_wrap=True)
        for r in cells:
            self.stdout.write("".join(line + "\n" for line in lines(r)))
            # Columns that do not fit: under their row, as `name: value`.
            rest = "; ".join(f"{columns[i]}: {r[i]}" for i in left_out if r[i])
            if rest:
                self.stdout.write(wrap_cell(rest, max(width - 4, 1)).replace("\n", "\n    ").join(("    ", "\n")))

    def _plain_table(
        self,
        columns: Sequence[str],
        cells: list[list[str]],
        title: str | None,
        right: Sequence[str],
        paths: Sequence[str],
    ) -> bool:
        """Writes the table as rich would when nothing in it needs rich: piped (no
        styles), every cell one line of printable ASCII without trailing blanks or
        markup in a header, and the whole width fits (nothing folds or shortens).
        Rich's layout costs about a millisecond a row, which a directory of many
        files turns into minutes. False when rich must do it."""
        if self.console.is_terminal or title is not None or not cells or not columns:
            return False
        if any("[" in c or c != c.rstrip() for c in columns):
            return False
        widths = [len(c) for c in columns]
        for r in cells:
            if len(r) != len(columns):
                return False
            for i, v in enumerate(r):
                if v[-1:] == " ":
                    return False
                if len(v) > widths[i]:
                    widths[i] = len(v)
        if sum(widths) + 2 * (len(widths) - 1) > self.console.width:
            return False
        text = "\n".join("\0".join(r) for r in cells) + "\0".join(columns)
        if not (text.isascii() and text.replace("\0", "").replace("\n", "").isprintable()):
            return False
        justify = [str.rjust if c in right and c not in paths else str.ljust for c in columns]

        def line(r: Sequence[str]) -> str:
            return "  ".join(j(v, w) for j, v, w in zip(justify, r, widths)).rstrip() + "\n"

        self.stdout.write(line(columns) + "".join(line(r) for r in cells))
        return True

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        """A byte-count progress bar on stderr; a no-op when progress is off."""
        if not self.show_progress:
            yield ProgressTask(None, None)
            return
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.err_console,
            transient=True,
        )
        with bar:
            task = bar.add_task(description, total=total)
            yield ProgressTask(bar, task)


class ProgressTask:
    def __init__(self, bar: Progress | None, task: Any) -> None:
        self._bar = bar
        self._task = task

    @property
    def active(self) -> bool:
        """Whether a bar is shown (work done only to move it can be skipped)."""
        return self._bar is not None

    def advance(self, n: int) -> None:
        if self._bar is not None and n:
            self._bar.advance(self._task, n)

    def update(self, *, completed: int | None = None, description: str | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=completed, description=description)
