"""Paths as text, and text fit for a terminal.

A Linux path is bytes and need not be UTF-8; Python holds such a name as a str
with surrogate escapes (`os.fsdecode`), which neither Arrow nor JSON can carry.
Where a path becomes text (the `file` columns of `read_bookie` and `bkcodec
export`, `--json` output) it is escaped losslessly: each byte that is not part of
valid UTF-8 is written `\\xNN` (two lowercase hex digits) and each backslash
`\\\\`; a path that is UTF-8 without a backslash is unchanged. `path_from_text`
undoes it. The Rust core spells paths in messages the same way.

`display_text` is for people: what a table or a line prints of names that come
from the data (paths, topics, producer names) never reaches the terminal as a
control character (an escape sequence could clear the screen or retitle the
window).
"""

from __future__ import annotations

import os
import re
import unicodedata

__all__ = ["display_text", "escape_surrogates", "path_from_text", "path_text"]


def path_text(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """`path` as text: UTF-8 as it is, other bytes `\\xNN`, backslashes doubled."""
    raw = os.fsencode(path)
    if b"\\" not in raw:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


_HEX_ESCAPE = re.compile(r"\\x[0-9a-f]{2}")


def path_from_text(text: str) -> str:
    """The path `path_text` wrote `text` for, as `os.fsdecode` gives it (usable
    with `open`); ValueError for an escape the rule never writes."""
    if "\\" not in text:
        return text
    out = bytearray()
    i = 0
    while True:
        j = text.find("\\", i)
        if j < 0:
            out += text[i:].encode("utf-8", "surrogateescape")
            return os.fsdecode(bytes(out))
        out += text[i:j].encode("utf-8", "surrogateescape")
        if text.startswith("\\\\", j):
            out += b"\\"
            i = j + 2
        elif _HEX_ESCAPE.match(text, j):
            out.append(int(text[j + 2 : j + 4], 16))
            i = j + 4
        else:
            raise ValueError(f"not a path as path_text writes one: {text!r}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    return _escape_char(m.group())


def escape_surrogates(text: str) -> str:
    """`text` with the bytes `os.fsdecode` could not decode spelled `\\xNN` (as
    `path_text` spells them): a message naming such a path, made fit for Arrow and
    JSON, which take UTF-8 only."""
    return _SURROGATE.sub(_escape_surrogate, text)


# Control characters, format characters (bidirectional overrides), line and
# paragraph separators, and the surrogates that stand for bytes that were not UTF-8.
_UNSAFE = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


def _escape_char(c: str) -> str:
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # a byte os.fsdecode could not decode
        return f"\\x{n - 0xDC00:02x}"
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def display_text(text: str) -> str:
    """`text` with every character a terminal would act on, rather than show,
    escaped (`\\x1b`, `\\u202e`), and bytes that were not UTF-8 as `\\xNN`."""
    if text.isprintable():
        return text
    return "".join(_escape_char(c) if unicodedata.category(c) in _UNSAFE else c for c in text)
