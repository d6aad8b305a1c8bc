import zlib

import pytest

import bkcodec


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
