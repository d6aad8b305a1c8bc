"""128-bit ledger ids (docs/formats.md#128-bit-ledger-ids): value, names, UUIDs, index paths, location keys."""

from __future__ import annotations

import pickle
import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bkcodec
from bkcodec import LedgerId

from conftest import golden_path, read_jsonl

i64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
u128 = st.integers(min_value=0, max_value=2**128 - 1)


def java_hex(v: int) -> str:
    """Java Integer/Long.toHexString of a value already masked to its width."""
    return format(v, "x")


@given(i64, i64)
def test_halves_round_trip_through_every_form(scope, ledger):
    lid = LedgerId(scope, ledger)
    assert (lid.scope_id, lid.ledger_id) == (scope, ledger)
    value = (scope % 2**64) << 64 | (ledger % 2**64)
    assert lid.value == int(lid) == value
    assert LedgerId.from_value(value) == lid

    name = lid.qualified_name
    assert name == format(value, "032x") == str(lid)
    assert LedgerId.from_qualified_name(name) == lid
    assert LedgerId.from_qualified_name(name.upper()) == lid

    u = lid.to_uuid()
    assert isinstance(u, uuid.UUID) and u.int == value
    assert LedgerId.from_qualified_name(str(u)) == lid
    assert LedgerId.from_qualified_name(str(u).upper()) == lid
    assert LedgerId.from_uuid(u) == lid
    assert LedgerId.from_uuid(str(u)) == lid

    assert eval(repr(lid), {"LedgerId": LedgerId}) == lid
    assert pickle.loads(pickle.dumps(lid)) == lid
    assert hash(LedgerId(scope, ledger)) == hash(lid)


@given(u128)
def test_value_round_trip(value):
    assert LedgerId.from_value(value).value == value


@given(u128, u128)
def test_ordering_follows_value_and_names(a, b):
    x, y = LedgerId.from_value(a), LedgerId.from_value(b)
    assert (x < y) == (a < b) == (x.qualified_name < y.qualified_name)
    assert (x <= y) == (a <= b)
    assert (x == y) == (a == b)


def test_single_argument_is_scope_zero():
    assert LedgerId(5) == LedgerId(0, 5)
    assert LedgerId(5).scope_id == 0
    assert repr(LedgerId(0, 5)) == "LedgerId(0, 5)"
    assert LedgerId(0, 5).qualified_name == "0" * 31 + "5"
    assert LedgerId(1, -1).qualified_name == "0000000000000001ffffffffffffffff"


def test_constructor_rejects_out_of_range_halves():
    with pytest.raises(OverflowError):
        LedgerId(2**63)
    with pytest.raises(OverflowError):
        LedgerId(-(2**63) - 1, 0)
    with pytest.raises(OverflowError):
        LedgerId.from_value(2**128)
    with pytest.raises(OverflowError):
        LedgerId.from_value(-1)


def test_random_uuid_gives_negative_ledger_id():
    # RFC 4122 variant bits sit at the top of the low half.
    for _ in range(32):
        lid = LedgerId.from_uuid(uuid.uuid4())
        assert lid.ledger_id < 0
    lid = LedgerId.from_uuid("f47ac10b-58cc-4372-a567-0e02b2c3d479")
    assert lid.scope_id == 0xF47AC10B58CC4372 - 2**64
    assert lid.ledger_id == 0xA5670E02B2C3D479 - 2**64


def test_from_uuid_rejects_other_types():
    with pytest.raises(TypeError):
        LedgerId.from_uuid(12)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LedgerId.from_uuid("not a uuid")


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        ("", None),
        ("5", None),
        ("0x" + "0" * 30, 1),
        ("0" * 31 + "g", 31),
        (" " + "0" * 31, 0),
        ("0" * 33, None),
        ("00000000-0000-0000-0000_000000000005", 23),
        ("{00000000-0000-0000-0000-0000000005}", 0),
        ("urn:uuid:00000000-0000-0000-0000-000000000005", None),
        ("000000000000-0000-0000-00000000000005", None),
    ],
)
def test_qualified_name_rejects_other_spellings(name, offset):
    # An argument error: the position in the string, never a byte offset of data.
    expected = f"at position {offset} where" if offset is not None else f"got {len(name)} characters$"
    with pytest.raises(ValueError, match=expected) as info:
        LedgerId.from_qualified_name(name)
    assert "at byte" not in str(info.value)


@pytest.mark.parametrize(
    ("ledger", "path"),
    [
        (5, "0/5/5.idx"),
        (0x1234, "12/34/1234.idx"),
        (0xABCDEF, "cd/ef/abcdef.idx"),
        (0, "0/0/0.idx"),
        (2147483655, "0/7/80000007.idx"),
        (-1, "ff/ff/ffffffffffffffff.idx"),
        (-(2**63), "0/0/8000000000000000.idx"),
    ],
)
def test_index_path_scope_zero(ledger, path):
    assert LedgerId(ledger).index_path() == path


@given(i64, i64)
def test_index_path_matches_java_to_hex_string(scope, ledger):
    s, lid = scope % 2**64, ledger % 2**64
    if scope == 0:
        expected = f"{java_hex((lid >> 8) & 0xFF)}/{java_hex(lid & 0xFF)}/{java_hex(lid)}.idx"
    else:
        expected = "/".join(
            java_hex(v) for v in (s >> 32, s & 0xFFFFFFFF, lid >> 32, lid & 0xFFFFFFFF)
        ) + f"/{java_hex(lid)}.idx"
    assert LedgerId(scope, ledger).index_path() == expected


def test_index_path_with_scope_example():
    assert LedgerId(1, 5).index_path() == "0/1/0/5/5.idx"
    assert LedgerId(-1, -2).index_path() == "ffffffff/ffffffff/ffffffff/fffffffe/fffffffffffffffe.idx"


def test_index_path_matches_golden_corpus():
    manifest = golden_path("index", "index.jsonl")
    rows = read_jsonl(manifest)
    assert rows
    for row in rows:
        path = "ledgers/current/" + LedgerId(row["ledger_id"]).index_path()
        assert path == row["path"]
        assert (manifest.parent / path).is_file()


@given(i64, i64, i64)
def test_location_key_layout_and_parse(scope, ledger, entry):
    lid = LedgerId(scope, ledger)
    key = lid.location_key(entry)
    if scope == 0:
        assert key == struct.pack(">qq", ledger, entry)
    else:
        assert key == struct.pack(">qqq", scope, ledger, entry)
    assert LedgerId.parse_location_key(key) == (lid, entry)
    assert LedgerId.parse_location_key(bytearray(key)) == (lid, entry)


@pytest.mark.parametrize("key", [b"", b"\x01" * 8, b"\x01" * 17, b"\x01" * 25, bytes(24)])
def test_parse_location_key_rejects_bad_keys(key):
    with pytest.raises(bkcodec.CorruptDataError) as e:
        LedgerId.parse_location_key(key)
    assert e.value.offset == 0


def test_ledger_id_is_usable_as_dict_key():
    d = {LedgerId(1, 2): "a"}
    assert d[LedgerId.from_qualified_name("00000000000000010000000000000002")] == "a"
    assert LedgerId(1, 2) != (1 << 64) | 2
    with pytest.raises(TypeError):
        LedgerId(1) < 2  # type: ignore[operator]

