import inspect
import os
import random
import re
import zlib

import crc32c as crc32c_wheel
import google_crc32c
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bkcodec
from bkcodec import _bkcodec as _native


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_check_values_accept_any_buffer(kind):
    assert bkcodec.crc32c(kind(b"123456789")) == 0xE3069283
    assert bkcodec.crc32(kind(b"123456789")) == 0xCBF43926


def test_resume_is_bookkeeper_semantics():
    assert bkcodec.crc32c(b"") == 0
    assert bkcodec.crc32c(b"56789", bkcodec.crc32c(b"1234")) == 0xE3069283
    assert bkcodec.crc32(b"56789", bkcodec.crc32(b"1234")) == 0xCBF43926


def test_crc32_matches_zlib_on_large_input():
    data = bytes(range(256)) * 4099
    assert bkcodec.crc32(data) == zlib.crc32(data)
    assert bkcodec.crc32(data[1000:], bkcodec.crc32(data[:1000])) == zlib.crc32(data)


def test_rejects_non_buffers():
    with pytest.raises(TypeError):
        bkcodec.crc32c("text")  # type: ignore[arg-type]


# Property tests against the reference wheels. Lengths reach past the sizes at
# which the implementations switch paths (256 bytes, a few KiB).
payloads = st.binary(max_size=6000)
u32 = st.integers(min_value=0, max_value=2**32 - 1)


@given(payloads)
def test_crc32c_matches_both_wheels(data):
    expected = crc32c_wheel.crc32c(data)
    assert google_crc32c.value(data) == expected
    assert bkcodec.crc32c(data) == expected


@given(payloads, u32)
def test_crc32c_resume_matches_wheel_resume(data, value):
    assert bkcodec.crc32c(data, value) == crc32c_wheel.crc32c(data, value=value)
    assert bkcodec.crc32c(data, value) == google_crc32c.extend(value, data)


@given(payloads, u32)
def test_crc32_matches_zlib(data, value):
    assert bkcodec.crc32(data) == zlib.crc32(data)
    assert bkcodec.crc32(data, value) == zlib.crc32(data, value)


@given(payloads, st.data())
def test_resume_at_any_split(data, draw):
    split = draw.draw(st.integers(min_value=0, max_value=len(data)))
    head, tail = data[:split], data[split:]
    assert bkcodec.crc32c(tail, bkcodec.crc32c(head)) == bkcodec.crc32c(data)
    assert bkcodec.crc32(tail, bkcodec.crc32(head)) == bkcodec.crc32(data)


@settings(max_examples=30)
@given(st.binary(min_size=1, max_size=600), st.integers(min_value=0, max_value=63))
def test_buffer_kinds_and_offsets_agree(data, offset):
    # A slice of a memoryview starts at any alignment; bytes take a separate path.
    backing = bytearray(offset) + bytearray(data)
    view = memoryview(backing)[offset:]
    expected_c, expected = crc32c_wheel.crc32c(data), zlib.crc32(data)
    for buf in (data, bytearray(data), view):
        assert bkcodec.crc32c(buf) == expected_c
        assert bkcodec.crc32(buf) == expected


def test_large_inputs_release_the_gil_and_stay_exact():
    data = bytes(range(256)) * (3 * 1024) + b"tail"  # over the 64 KiB threshold
    assert bkcodec.crc32c(data) == crc32c_wheel.crc32c(data)
    assert bkcodec.crc32c(memoryview(data)) == crc32c_wheel.crc32c(data)
    assert bkcodec.crc32(data, 12345) == zlib.crc32(data, 12345)


def test_rejects_bad_values_and_layouts():
    with pytest.raises(OverflowError):
        bkcodec.crc32c(b"x", 2**32)
    with pytest.raises(OverflowError):
        bkcodec.crc32c(b"x", 2**64)
    with pytest.raises(TypeError):
        bkcodec.crc32c(b"x", 1.0)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        bkcodec.crc32(b"x", -1)
    with pytest.raises(TypeError):
        bkcodec.crc32c(memoryview(b"abcdef")[::2])


# Exact bytes (and small bytearrays) with a positional value are checksummed
# without general argument parsing; every other form of call must agree with it.


@pytest.mark.parametrize("name", ["crc32c", "crc32"])
def test_every_form_of_call_agrees(name):
    f = getattr(bkcodec, name)
    head = f(b"1234")
    expected = f(b"123456789")

    class Int(int):
        pass

    class Bytes(bytes):
        pass

    assert f(b"56789", head) == expected
    assert f(b"56789", value=head) == expected
    assert f(data=b"56789", value=head) == expected
    assert f(value=head, data=bytearray(b"56789")) == expected
    assert f(Bytes(b"56789"), Int(head)) == expected
    assert f(memoryview(b"56789"), head) == expected
    assert f(b"x", True) == f(b"x", 1)
    assert f(bytearray()) == f(b"") == 0


def test_large_bytearrays_are_exported_and_exact():
    # Over 64 KiB a bytearray is read through the buffer protocol (which stops it
    # from being resized while the GIL is released).
    data = bytearray(range(256)) * 300
    assert bkcodec.crc32c(data) == crc32c_wheel.crc32c(bytes(data))
    assert bkcodec.crc32(data, 7) == zlib.crc32(bytes(data), 7)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda f: f(), "missing 1 required positional argument: 'data'"),
        (lambda f: f(b"", 0, 1), "takes from 1 to 2 positional arguments but 3 were given"),
        (lambda f: f(b"", foo=1), "got an unexpected keyword argument 'foo'"),
        (lambda f: f(b"", data=b""), "got multiple values for argument 'data'"),
        (lambda f: f(b"", 1, value=2), "got multiple values for argument 'value'"),
    ],
)
@pytest.mark.parametrize("name", ["crc32c", "crc32"])
def test_argument_errors_read_like_pythons(name, call, message):
    with pytest.raises(TypeError, match=re.escape(f"{name}() {message}")):
        call(getattr(bkcodec, name))


def test_signatures():
    for f in (bkcodec.crc32c, bkcodec.crc32):
        assert str(inspect.signature(f)) == "(data, value=0)"
        assert f.__module__ == "bkcodec._bkcodec"


# --- the CRC-32C paths (portable, sse42, pclmul, crc-fast, avx512), each forced ----

CRC_PATHS = _native._crc_paths()
ALL_PATHS = ["portable", "sse42", "pclmul", "crc-fast", "avx512"]


def crc32c_on(name):
    """`crc32c` on the named path alone (`_crc32c_pclmul`, ...)."""
    return getattr(_native, "_crc32c_" + name.replace("-", "_"))


@pytest.fixture
def forced_path(request):
    """Forces the path named by the test's parameter for the whole process, then
    gives the CPU's own back."""
    _native._set_crc_path(request.param)
    yield request.param
    _native._set_crc_path(None)


def test_the_portable_path_runs_everywhere_and_unknown_names_are_refused():
    assert "portable" in CRC_PATHS
    assert _native._crc_path() in CRC_PATHS or os.environ.get("BKCODEC_CRC_PATH")
    with pytest.raises(ValueError, match="unknown CRC-32C path"):
        _native._set_crc_path("avx3")
    for name in ALL_PATHS:
        if name in CRC_PATHS:
            assert crc32c_on(name)(b"123456789") == 0xE3069283
        else:
            with pytest.raises(ValueError, match=f"cannot run the {name} CRC-32C path"):
                crc32c_on(name)(b"123456789")


def test_a_path_named_in_the_environment_is_the_one_in_use():
    name = os.environ.get("BKCODEC_CRC_PATH")
    if not name:
        pytest.skip("BKCODEC_CRC_PATH not set: the CPU's own path is in use")
    if name not in CRC_PATHS:
        pytest.skip(f"this CPU cannot run the {name} path (it runs {', '.join(CRC_PATHS)})")
    assert _native._crc_path() == name


@pytest.mark.parametrize("name", CRC_PATHS)
def test_each_path_agrees_with_the_wheels_at_every_alignment(name):
    data = bytes(random.Random(30).getrandbits(8) for _ in range(100 * 1024 + 64))
    rng = random.Random(name)
    for round_ in range(120):
        offset = round_ % 64
        length = rng.choice([rng.randrange(100 * 1024), rng.randrange(5000), rng.randrange(300)])
        part = data[offset : offset + length]
        value = 0 if round_ % 3 == 0 else rng.getrandbits(32)
        assert crc32c_on(name)(part, value) == crc32c_wheel.crc32c(part, value), (name, offset, length)
        assert crc32c_on(name)(memoryview(part), value=value) == crc32c_wheel.crc32c(part, value)


@pytest.mark.golden
@pytest.mark.parametrize("forced_path", CRC_PATHS, indirect=True)
def test_each_path_gives_bookkeepers_verdicts_on_its_crc32c_entries(forced_path):
    """The golden corpus's verdict test (entry by entry, good and corrupted) and
    a batch decode, on the forced path."""
    import test_entries_golden as golden

    assert _native._crc_path() == forced_path
    for kind in ("", ".corrupt"):
        golden.test_verifier_and_recovery_verdicts("CRC32C", kind)
    entries = [data for _, data in golden.load("CRC32C")]
    table = bkcodec.decode_entries(pa.array(entries, pa.binary()), digest_type="crc32c")
    assert table.num_rows == len(entries) == 58
