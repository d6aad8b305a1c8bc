"""The entry API: the vectors of docs/formats.md#test-vectors, V2 entries, verification order, the
Entry object, and decode_entries over every accepted input type."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

import bkcodec

HEADER = bytes.fromhex("0000000000000001 0000000000000000 ffffffffffffffff 0000000000000005")
HELLO = b"hello"


def crc32c_entry(ledger_id=1, entry_id=0, payload=HELLO, **kw):
    return bkcodec.encode_entry(ledger_id, entry_id, entry_id - 1, len(payload), payload, **kw)


# docs/formats.md#test-vectors


@pytest.mark.parametrize(
    ("digest_type", "password", "digest"),
    [
        ("crc32", b"", "0000000030a56872"),
        ("crc32c", b"", "e3a5f74d"),
        ("hmac", b"secret", "985ff33d73766e6ab95e91f14097a562ffc64ae8"),
        ("hmac", b"", "00107b7f219e26462e04e16e6e7a7f41e046e090"),
        ("dummy", b"", ""),
    ],
)
def test_spec_entry_vectors(digest_type, password, digest):
    expected = HEADER + bytes.fromhex(digest) + HELLO
    assert bkcodec.encode_entry(1, 0, -1, 5, HELLO, digest_type=digest_type, password=password) == expected
    e = bkcodec.decode_entry(expected, digest_type=digest_type, password=password, ledger_id=1, entry_id=0)
    assert (e.ledger_id, e.entry_id, e.last_add_confirmed, e.length) == (1, 0, -1, 5)
    assert e.digest.hex() == digest and bytes(e.payload) == HELLO and e.digest_ok is True


def test_spec_second_and_empty_entries():
    second = bytes.fromhex(
        "0000000000000001 0000000000000001 0000000000000000 000000000000000b e159e018 20776f726c64"
    )
    assert bkcodec.encode_entry(1, 1, 0, 11, b" world") == second
    assert bkcodec.encode_entry(7, 0, -1, 0, b"")[32:].hex() == "290f6bce"
    assert bkcodec.encode_entry(7, 0, -1, 0, b"", digest_type="crc32")[32:].hex() == "000000004034243f"


def test_spec_lac_vectors_and_keys():
    prefix = "0000000000000001 0000000000000000"
    for dt, pw, digest in [
        ("crc32c", b"", "b64e4ca2"),
        ("crc32", b"", "00000000fbc05f16"),
        ("hmac", b"secret", "cf212213f695a43077f9fe40f50e4d562960b577"),
    ]:
        blob = bkcodec.encode_lac(1, 0, digest_type=dt, password=pw)
        assert blob == bytes.fromhex(prefix + digest)
        lac = bkcodec.decode_lac(blob, digest_type=dt, password=pw, ledger_id=1)
        assert (lac.ledger_id, lac.lac, lac.digest.hex(), lac.digest_ok) == (1, 0, digest, True)
    assert bkcodec.master_key(b"").hex() == "850bf1071c5e3d8c24235676f8816ae0cbe2f14f"
    assert bkcodec.master_key(b"secret").hex() == "e793cbc379107648537183605cd361d3bb789a39"
    assert bkcodec.master_key("secret") == bkcodec.master_key(b"secret")
    assert bkcodec.mac_key(b"secret").hex() == "190c685bae851574f5ab47c960a00c0466f96603"
    assert bkcodec.mac_key(bytearray()).hex() == "347ead6348e936507920c15d2ae8266ac6ce9b49"


def test_lac_errors_and_object():
    blob = bkcodec.encode_lac(3, 9, digest_type="crc32")
    with pytest.raises(bkcodec.IdMismatchError) as e:
        bkcodec.decode_lac(blob, digest_type="crc32", ledger_id=4)
    assert e.value.offset == 0
    with pytest.raises(bkcodec.DigestMismatchError) as e:
        bkcodec.decode_lac(blob[:-1] + b"\x00", digest_type="crc32")
    assert e.value.offset == 16
    with pytest.raises(bkcodec.TruncatedError):
        bkcodec.decode_lac(blob[:20], digest_type="crc32")
    with pytest.raises(ValueError, match="unknown digest type"):
        bkcodec.decode_lac(blob, digest_type="auto")
    lac = bkcodec.decode_lac(blob, digest_type="crc32")
    assert repr(lac) == "ExplicitLac(ledger_id=3, lac=9, digest_type='crc32', digest_ok=True)"
    assert lac == bkcodec.decode_lac(bytearray(blob), digest_type="CRC32")
    assert hash(lac) == hash(bkcodec.decode_lac(blob, digest_type="crc32"))
    assert lac.to_dict() == {"ledger_id": 3, "lac": 9, "digest_type": "crc32", "digest": blob[16:], "digest_ok": True}


# V2 (docs/formats.md#ledger-entries)


@pytest.mark.parametrize(("digest_type", "flags"), [("crc32", 0xA1), ("hmac", 0xA2), ("crc32c", 0xA3), ("dummy", 0xA4)])
def test_v2_layout_and_flags(digest_type, flags):
    data = bkcodec.encode_entry(-5, 2, 1, 9, b"payload", digest_type=digest_type, password=b"pw", scope_id=7)
    assert data[0] == flags
    assert struct.unpack_from(">qqqqq", data, 1) == (7, -5, 2, 1, 9)
    e = bkcodec.decode_entry(data, password=b"pw")
    assert (e.format_version, e.scope_id, e.ledger_id, e.header_len) == (2, 7, -5, 41)
    assert e.digest_type == digest_type and bytes(e.payload) == b"payload"
    assert e.payload_offset == 41 + len(e.digest)


def test_encode_format_rules():
    assert bkcodec.encode_entry(1, 0, -1, 5, HELLO)[0] == 0  # V1
    assert bkcodec.encode_entry(1, 0, -1, 5, HELLO, format_version=1) == bkcodec.encode_entry(1, 0, -1, 5, HELLO)
    v2 = bkcodec.encode_entry(1, 0, -1, 5, HELLO, format_version=2)
    assert v2[0] == 0xA3 and bkcodec.decode_entry(v2).scope_id == 0
    with pytest.raises(ValueError, match="scope"):
        bkcodec.encode_entry(1, 0, -1, 5, HELLO, scope_id=3, format_version=1)
    with pytest.raises(ValueError, match="1 or 2"):
        bkcodec.encode_entry(1, 0, -1, 5, HELLO, format_version=3)
    with pytest.raises(ValueError, match="negative ledger id"):
        bkcodec.encode_entry(-1, 0, -1, 5, HELLO)
    with pytest.raises(ValueError, match="unknown digest type"):
        bkcodec.encode_entry(1, 0, -1, 5, HELLO, digest_type="auto")
    assert bkcodec.decode_entry(bkcodec.encode_entry(-1, 0, -1, 5, HELLO, scope_id=1)).ledger_id == -1


# Verification


def test_verification_order_and_offsets():
    data = crc32c_entry(ledger_id=4, entry_id=6)
    bkcodec.decode_entry(data, ledger_id=4, entry_id=6)
    with pytest.raises(bkcodec.IdMismatchError, match="ledger id 4 where 5") as e:
        bkcodec.decode_entry(data, ledger_id=5, entry_id=7)  # ledger before entry
    assert e.value.offset == 0 and e.value.kind == "id mismatch"
    with pytest.raises(bkcodec.IdMismatchError, match="entry id 6 where 7") as e:
        bkcodec.decode_entry(data, ledger_id=4, entry_id=7)
    assert e.value.offset == 8
    bad = data[:-1] + b"X"
    with pytest.raises(bkcodec.DigestMismatchError) as e:
        bkcodec.decode_entry(bad, ledger_id=5, entry_id=7)  # digest before ids
    assert e.value.offset == 32
    with pytest.raises(bkcodec.TruncatedError) as e:
        bkcodec.decode_entry(data[:35], digest_type="crc32c")  # length before digest
    assert e.value.offset == 32
    v2 = crc32c_entry(ledger_id=4, entry_id=6, scope_id=1)
    with pytest.raises(bkcodec.IdMismatchError) as e:
        bkcodec.decode_entry(v2, entry_id=1)
    assert e.value.offset == 17
    with pytest.raises(bkcodec.DigestMismatchError) as e:
        bkcodec.decode_entry(v2[:-1] + b"X")
    assert e.value.offset == 41


def test_verify_false_checks_nothing():
    bad = crc32c_entry()[:-1] + b"X"
    e = bkcodec.decode_entry(bad, digest_type="crc32c", ledger_id=9, entry_id=9, verify=False)
    assert e.digest_ok is None and bytes(e.payload) == b"hellX"
    # Inference has to compute digests, so its answer is a verdict.
    assert bkcodec.decode_entry(crc32c_entry(), verify=False).digest_ok is True
    # Damaged, entry 0's length field still gives its digest's length: CRC-32C,
    # located, and (not verifying) nothing said of the digest.
    e = bkcodec.decode_entry(bad, verify=False)
    assert (e.digest_type, e.digest_ok, bytes(e.payload)) == ("crc32c", None, b"hellX")
    # A later entry with no predecessor to chain to: nothing tells its type.
    with pytest.raises(bkcodec.DigestMismatchError, match="no digest type verifies"):
        bkcodec.decode_entry(crc32c_entry(entry_id=3)[:-1] + b"X", verify=False)


def test_digest_type_policy():
    v2 = crc32c_entry(scope_id=2)
    assert bkcodec.decode_entry(v2, digest_type="auto").digest_type == "crc32c"
    with pytest.raises(bkcodec.DigestTypeMismatchError):
        bkcodec.decode_entry(v2, digest_type="crc32")
    # Entry 0's length field gives its digest's length: HMAC without the password is
    # unchecked (located, not called damaged); DUMMY verifies as DUMMY does.
    hmac = crc32c_entry(digest_type="hmac", password="pw")
    e = bkcodec.decode_entry(hmac)
    assert (e.digest_type, e.digest_ok, bytes(e.payload)) == ("hmac", None, HELLO)
    assert bkcodec.decode_entry(hmac, password="pw").digest_ok is True
    assert bkcodec.decode_entry(hmac, digest_type="MAC", password=memoryview(b"pw")).digest_ok
    with pytest.raises(bkcodec.DigestMismatchError, match="give the password"):
        bkcodec.decode_entry(crc32c_entry(entry_id=4, digest_type="hmac", password="pw"))
    dummy = crc32c_entry(digest_type="dummy")
    assert bkcodec.decode_entry(dummy).digest_type == "dummy"
    assert bytes(bkcodec.decode_entry(dummy, digest_type="dummy").payload) == HELLO
    with pytest.raises(ValueError, match="unknown digest type"):
        bkcodec.decode_entry(v2, digest_type="sha1")
    with pytest.raises(TypeError):
        bkcodec.decode_entry(v2, password=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "error", "offset"),
    [
        (b"", bkcodec.TruncatedError, 0),
        (b"\x00", bkcodec.TruncatedError, 0),
        (b"\x00" * 31, bkcodec.TruncatedError, 0),
        (b"\x00" * 32, bkcodec.TruncatedError, 32),  # header, no digest
        (b"\xa3" + b"\x00" * 39, bkcodec.TruncatedError, 0),
        (b"\xa3" + b"\x00" * 40, bkcodec.TruncatedError, 41),
        (b"\x80" + b"\x00" * 60, bkcodec.UnsupportedVersionError, 0),
        (b"\xf3" + b"\x00" * 60, bkcodec.UnsupportedVersionError, 0),
        (b"\xa0" + b"\x00" * 60, bkcodec.CorruptDataError, 0),
        (b"\xaf" + b"\x00" * 60, bkcodec.CorruptDataError, 0),
        (b"\xff" * 60, bkcodec.UnsupportedVersionError, 0),
    ],
)
def test_malformed_entries_are_typed_errors(data, error, offset):
    with pytest.raises(error) as e:
        bkcodec.decode_entry(data, digest_type="crc32c")
    assert e.value.offset == offset and e.value.path is None


def test_huge_header_values_are_just_values():
    big = 2**63 - 1
    data = bkcodec.encode_entry(big, big, -(2**63), big, b"x" * 20)
    e = bkcodec.decode_entry(data)
    assert (e.ledger_id, e.entry_id, e.last_add_confirmed, e.length) == (big, big, -(2**63), big)


# The Entry object


def test_entry_payload_is_a_readonly_view_of_the_input():
    data = crc32c_entry()
    e = bkcodec.decode_entry(data)
    assert isinstance(e.payload, memoryview) and e.payload.readonly and e.payload.obj is data
    buf = bytearray(data)
    e = bkcodec.decode_entry(buf)
    buf[-1] = ord("O")
    assert bytes(e.payload) == b"hellO"  # shared, not copied
    with pytest.raises(BufferError):
        buf.extend(b"more")
    arr = np.frombuffer(data, dtype=np.uint8).reshape(1, -1)
    assert bytes(bkcodec.decode_entry(arr).payload) == HELLO


def test_entry_repr_dict_and_equality():
    e = bkcodec.decode_entry(crc32c_entry())
    assert repr(e) == (
        "Entry(format_version=1, ledger_id=1, entry_id=0, last_add_confirmed=-1, length=5, "
        "digest_type='crc32c', digest_ok=True, payload=b'hello')"
    )
    long = bkcodec.decode_entry(crc32c_entry(payload=bytes(100), scope_id=3))
    assert "scope_id=3" in repr(long) and "... (100 bytes)" in repr(long)
    assert e.to_dict() == {
        "format_version": 1, "scope_id": 0, "ledger_id": 1, "entry_id": 0, "last_add_confirmed": -1,
        "length": 5, "digest_type": "crc32c", "digest": bytes.fromhex("e3a5f74d"), "payload": HELLO,
        "digest_ok": True, "header_len": 32, "payload_offset": 36,
    }
    assert e == bkcodec.decode_entry(bytearray(crc32c_entry()))
    assert e != bkcodec.decode_entry(crc32c_entry(), verify=False, digest_type="crc32c")  # digest_ok differs
    assert e != bkcodec.decode_entry(crc32c_entry(payload=b"hellp"))
    assert e != "entry"
    with pytest.raises(TypeError):
        hash(e)
    with pytest.raises(TypeError):
        bkcodec.Entry()  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        e.ledger_id = 2  # type: ignore[misc]


# decode_entries


ENTRY_FIELDS = [
    ("format_version", pa.int8()), ("scope_id", pa.int64()), ("ledger_id", pa.int64()),
    ("entry_id", pa.int64()), ("last_add_confirmed", pa.int64()), ("length", pa.int64()),
    ("digest_type", pa.string()), ("digest_ok", pa.bool_()), ("digest_unchecked_reason", pa.string()),
]


@pytest.mark.parametrize(
    ("payload", "on_error", "extra"),
    [
        ("binary", "raise", [("payload", pa.binary())]),
        ("binary_view", "raise", [("payload", pa.binary_view())]),
        ("none", "raise", []),
        ("binary", "flag", [("payload", pa.binary()), ("error", pa.string()), ("error_kind", pa.string())]),
        ("none", "flag", [("error", pa.string()), ("error_kind", pa.string())]),
    ],
)
def test_schema(payload, on_error, extra):
    batch = bkcodec.decode_entries([crc32c_entry()], payload=payload, on_error=on_error)
    assert isinstance(batch, pa.RecordBatch)
    assert batch.schema == pa.schema(ENTRY_FIELDS + extra)
    empty = bkcodec.decode_entries([], payload=payload, on_error=on_error)
    assert empty.num_rows == 0 and empty.schema == batch.schema


def mixed_entries():
    return [
        crc32c_entry(ledger_id=1, entry_id=0),
        crc32c_entry(ledger_id=-3, entry_id=1, scope_id=9, digest_type="crc32"),
        crc32c_entry(ledger_id=1, entry_id=1, payload=b"a longer payload than twelve bytes"),
        bkcodec.encode_entry(2, 0, -1, 3, b"abc", digest_type="crc32"),
    ]


def test_rows_match_decode_entry():
    entries = mixed_entries()
    batch = bkcodec.decode_entries(entries).to_pylist()
    for row, data in zip(batch, entries):
        e = bkcodec.decode_entry(data).to_dict()
        for key in ["format_version", "scope_id", "ledger_id", "entry_id", "last_add_confirmed", "length",
                    "digest_type", "digest_ok", "payload"]:
            assert row[key] == e[key], key


def test_flag_mode_keeps_going_with_partial_ids():
    good = crc32c_entry(ledger_id=5, entry_id=0)
    entries = [good, good[:-1] + b"X", good[:12], b"", b"\x90" + good, None, crc32c_entry(ledger_id=5, entry_id=1)]
    d = bkcodec.decode_entries(entries, on_error="flag").to_pydict()
    assert d["ledger_id"] == [5, 5, 5, None, None, None, 5]
    assert d["entry_id"] == [0, 0, None, None, None, None, 1]
    assert d["digest_ok"] == [True, False, None, None, None, None, True]
    assert d["digest_type"] == ["crc32c", "crc32c", None, None, None, None, "crc32c"]
    assert d["payload"][1] == b"hellX" and d["payload"][2] is None
    errors = d["error"]
    assert errors[0] is None and errors[5] is None and errors[6] is None
    assert errors[1] == "digest mismatch: stored crc32c digest does not match the entry at byte 32 of the entry"
    assert errors[2].startswith("truncated:") and errors[3].startswith("truncated:")
    assert errors[4].startswith("unsupported version:")


def test_raise_mode_names_the_entry():
    entries = [crc32c_entry(), crc32c_entry(entry_id=1), b"\x00" * 10]
    with pytest.raises(bkcodec.TruncatedError, match=r"entry 2: ") as e:
        bkcodec.decode_entries(entries)
    assert e.value.offset == 0
    chunked = pa.chunked_array([pa.array(entries[:2], pa.binary()), pa.array(entries[2:], pa.binary())])
    with pytest.raises(bkcodec.TruncatedError, match=r"entry 2: "):
        bkcodec.decode_entries(chunked)  # numbered across chunks


def test_inferred_type_is_remembered_per_ledger():
    first = crc32c_entry(ledger_id=8, entry_id=0)
    other_type = bkcodec.encode_entry(8, 1, 0, 10, HELLO, digest_type="crc32")
    with pytest.raises(bkcodec.DigestMismatchError, match="entry 1: stored crc32c digest"):
        bkcodec.decode_entries([first, other_type])
    # Each call starts afresh; another ledger is inferred on its own.
    batch = bkcodec.decode_entries([other_type, first, bkcodec.encode_entry(9, 0, -1, 1, b"z", digest_type="crc32")],
                                   on_error="flag")
    assert batch.column("digest_type").to_pylist() == ["crc32", "crc32", "crc32"]
    assert batch.column("digest_ok").to_pylist() == [True, False, True]


def test_verify_false_in_batches():
    bad = crc32c_entry()[:-1] + b"X"
    batch = bkcodec.decode_entries([bad], digest_type="crc32c", verify=False)
    assert batch.column("digest_ok").to_pylist() == [None]
    assert batch.column("payload").to_pylist() == [b"hellX"]


class ArrayOnly:
    """Exposes only the Arrow PyCapsule array protocol (no pyarrow type)."""

    def __init__(self, array):
        self._array = array

    def __arrow_c_array__(self, requested_schema=None):
        return self._array.__arrow_c_array__(requested_schema)


class StreamOnly:
    def __init__(self, chunked):
        self._chunked = chunked

    def __arrow_c_stream__(self, requested_schema=None):
        return self._chunked.__arrow_c_stream__(requested_schema)


def input_variants(entries):
    return {
        "list of bytes": list(entries),
        "tuple of bytearrays": tuple(bytearray(e) for e in entries),
        "memoryviews": [memoryview(e) for e in entries],
        "generator": (e for e in entries),
        "binary": pa.array(entries, pa.binary()),
        "large_binary": pa.array(entries, pa.large_binary()),
        "binary_view": pa.array(entries, pa.binary_view()),
        "sliced binary": pa.array([b"junk"] + list(entries), pa.binary()).slice(1),
        "chunked": pa.chunked_array([pa.array(entries[:1], pa.binary()), pa.array(entries[1:], pa.binary())]),
        "array capsule only": ArrayOnly(pa.array(entries, pa.large_binary())),
        "stream capsule only": StreamOnly(pa.chunked_array([pa.array(entries, pa.binary_view())])),
    }


@pytest.mark.parametrize("payload", ["binary", "binary_view"])
def test_every_input_type_gives_the_same_batch(payload):
    entries = mixed_entries()
    expected = bkcodec.decode_entries(entries, payload="binary")
    for name, variant in input_variants(entries).items():
        got = bkcodec.decode_entries(variant, payload=payload)
        if payload == "binary_view":
            at = got.schema.get_field_index("payload")
            got = got.set_column(at, "payload", got.column("payload").cast(pa.binary()))
        assert got.equals(expected), name


def test_polars_input():
    pl = pytest.importorskip("polars")
    entries = mixed_entries()
    got = bkcodec.decode_entries(pl.Series(entries, dtype=pl.Binary))
    assert got.equals(bkcodec.decode_entries(entries))


def test_nulls_in_arrow_input_are_null_rows():
    entries = [crc32c_entry(), None, crc32c_entry(entry_id=1)]
    batch = bkcodec.decode_entries(pa.array(entries, pa.binary()), on_error="flag")
    assert batch.column("entry_id").to_pylist() == [0, None, 1]
    assert batch.column("error").to_pylist() == [None, None, None]


def test_binary_view_payloads_share_the_input_buffer():
    entries = [crc32c_entry(entry_id=i, payload=bytes([i]) * (i * 3)) for i in range(20)]
    column = pa.array(entries, pa.binary())
    view = bkcodec.decode_entries(column, payload="binary_view").column("payload")
    values = column.buffers()[2]
    data_buffers = view.buffers()[2:]
    assert [b.address for b in data_buffers] == [values.address]
    assert view.to_pylist() == [bytes([i]) * (i * 3) for i in range(20)]
    large = pa.array(entries, pa.large_binary())
    view = bkcodec.decode_entries(large, payload="binary_view").column("payload")
    assert [b.address for b in view.buffers()[2:]] == [large.buffers()[2].address]


def test_binary_view_from_a_python_list_copies_once():
    entries = [crc32c_entry(entry_id=i, payload=bytes(range(i + 10))) for i in range(10)]
    view = bkcodec.decode_entries(entries, payload="binary_view").column("payload")
    assert len(view.buffers()[2:]) == 1  # one owned buffer for all long payloads
    assert view.to_pylist() == [bytes(range(i + 10)) for i in range(10)]


def test_bad_arguments():
    with pytest.raises(TypeError, match="decode_entry"):
        bkcodec.decode_entries(crc32c_entry())
    with pytest.raises(TypeError, match="(?i)not int32"):
        bkcodec.decode_entries(pa.array([1, 2], pa.int32()))
    with pytest.raises(TypeError, match="(?i)not (string|utf8)"):
        bkcodec.decode_entries(pa.array(["a"]))
    with pytest.raises(TypeError, match="sequence of bytes-like objects, not int$"):
        bkcodec.decode_entries(5)
    with pytest.raises(TypeError):
        bkcodec.decode_entries(["text"])
    with pytest.raises(ValueError, match="payload mode"):
        bkcodec.decode_entries([], payload="view")
    with pytest.raises(ValueError, match="on_error"):
        bkcodec.decode_entries([], on_error="ignore")
    with pytest.raises(ValueError, match="unknown digest type"):
        bkcodec.decode_entries([], digest_type="md5")


def test_public_names():
    for name in ["Entry", "ExplicitLac", "decode_entries", "decode_entry", "decode_lac", "encode_entry",
                 "encode_lac", "mac_key", "master_key"]:
        assert name in bkcodec.__all__ and hasattr(bkcodec, name)


def test_the_documented_entries_example_prints_what_it_says(capsys):
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "files.md").read_text()
    section = page.split("## Entries", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/files.md", "exec"), {})
    out = capsys.readouterr().out
    assert "Entry(format_version=1, ledger_id=1, entry_id=0" in out
    assert "'error': 'digest mismatch" in out and out.rstrip().endswith("at byte 32")


def test_an_explicit_empty_password_is_checked_and_only_an_absent_one_leaves_hmac_unchecked():
    # The empty password is a real BookKeeper password (SHA-1("mac") keys it).
    for scope in (0, 5):  # V1 and V2
        good = bkcodec.encode_entry(3, 1, 0, 10, b"payload", digest_type="hmac", password=b"", scope_id=scope)
        assert bkcodec.decode_entry(good, password=b"").digest_ok is True
        bad = bytearray(good)
        bad[-1] ^= 0x01
        with pytest.raises(bkcodec.DigestMismatchError):
            bkcodec.decode_entry(bytes(bad), password=b"")
        with pytest.raises(bkcodec.DigestMismatchError):
            bkcodec.decode_entry(bytes(bad), password="")
    # Absent: a V2 HMAC entry that does not verify with the empty key cannot be checked.
    v2 = bytearray(bkcodec.encode_entry(3, 1, 0, 10, b"payload", digest_type="hmac", password=b"secret", scope_id=5))
    assert bkcodec.decode_entry(bytes(v2)).digest_ok is None
