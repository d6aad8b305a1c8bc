"""BookieId: BookKeeper's validation (golden rows), string form, equality, legacy addresses."""

from __future__ import annotations

import pickle
import re

import pytest
from conftest import read_jsonl
from hypothesis import given
from hypothesis import strategies as st

from bkcodec import BookieId

# Java's regex, read by Python's engine: `:-_` is the same range 0x3A..0x5F in both.
JAVA_PATTERN = re.compile(r"[a-zA-Z0-9:-_.\-]+")


def java_accepts(s: str) -> bool:
    return JAVA_PATTERN.fullmatch(s) is not None and s.lower() != "readonly"


@pytest.mark.golden
def test_all_golden_rows(golden):
    rows = read_jsonl(golden("metadata", "bookie_ids.jsonl"))
    assert len(rows) == 43
    for row in rows:
        assert row["input"].encode() == bytes.fromhex(row["input_utf8_hex"])
        if row["accepted"]:
            b = BookieId.parse(row["input"])
            assert str(b) == row["to_string"]
            assert BookieId(row["input"]) == b
        else:
            with pytest.raises(ValueError):
                BookieId.parse(row["input"])


@pytest.mark.parametrize("s", ["a;b", "a\\b", "[::1]:3181", "a@b", "a^b", "readonly:3181", "-", ":"])
def test_range_quirk_accepts(s):
    assert str(BookieId.parse(s)) == s


@pytest.mark.parametrize("s", ["a,b", "READONLY", "readOnly", "", "é", "a b", "a/b", "bk\n", "a{b", "a`b"])
def test_rejects(s):
    with pytest.raises(ValueError):
        BookieId.parse(s)


def test_rejection_is_a_plain_value_error_not_a_format_error():
    import bkcodec

    with pytest.raises(ValueError) as info:
        BookieId.parse("a,b")
    assert not isinstance(info.value, bkcodec.BookKeeperFormatError)


def test_equality_hash_order_and_pickle():
    a, b = BookieId("bookie-1"), BookieId.parse("bookie-1")
    assert a == b and hash(a) == hash(b)
    assert len({a, b, BookieId("bookie-2")}) == 2
    assert a != "bookie-1"  # a BookieId is not its string
    assert sorted([BookieId("b"), BookieId("a")]) == [BookieId("a"), BookieId("b")]
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(BookieId("a\\b")) == "BookieId('a\\\\b')"


@pytest.mark.parametrize(
    "s, address",
    [
        ("127.0.0.1:3181", ("127.0.0.1", 3181)),
        ("bk1.example.org:3181", ("bk1.example.org", 3181)),
        ("host:port:extra", None),
        ("host:1:extra", ("host", 1)),
        ("h:-5", ("h", -5)),
        (":3181", ("", 3181)),
        ("h:007", ("h", 7)),
        ("bookie-1", None),
        ("::::", None),
        ("[::1]:3181", None),
        ("h:99999999999", None),
    ],
)
def test_legacy_socket_address(s, address):
    b = BookieId.parse(s)
    if address is None:
        with pytest.raises(ValueError):
            b.to_socket_address()
    else:
        assert b.to_socket_address() == address


@given(st.text(alphabet=st.characters(max_codepoint=0x17F), max_size=12))
def test_validation_matches_the_java_regex(s):
    if java_accepts(s):
        assert str(BookieId.parse(s)) == s
    else:
        with pytest.raises(ValueError):
            BookieId.parse(s)


@given(st.text(alphabet="ab:-+0123456789", min_size=1, max_size=12))
def test_socket_address_follows_split_and_parse_int(s):
    # Python model of `split(":")` (trailing empties dropped) and Integer.parseInt.
    parts = s.split(":")
    while parts and parts[-1] == "":
        parts.pop()
    expected = None
    if len(parts) >= 2 and re.fullmatch(r"[+-]?[0-9]+", parts[1]):
        port = int(parts[1])
        if -(2**31) <= port < 2**31:
            expected = (parts[0], port)
    if not java_accepts(s):
        return
    if expected is None:
        with pytest.raises(ValueError):
            BookieId(s).to_socket_address()
    else:
        assert BookieId(s).to_socket_address() == expected
