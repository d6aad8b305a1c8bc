"""Error messages name a location once: data errors end in one `at byte N` (`of PATH`
for files), argument errors carry no byte offset at all."""

import re

import pyarrow as pa
import pytest

import bkcodec
from bkcodec import wire

_AT_BYTE = re.compile(r" at byte \d+")

DATA_ERRORS = {
    "empty entry": lambda: bkcodec.decode_entry(b""),
    "short entry": lambda: bkcodec.decode_entry(b"x" * 10),
    "empty metadata": lambda: bkcodec.decode_ledger_metadata(b""),
    "metadata cut in its header": lambda: bkcodec.decode_ledger_metadata(b"BookieMeta"),
    "metadata with another header": lambda: bkcodec.decode_ledger_metadata(b"garbage"),
    "short frame": lambda: wire.decode_request(b"\x00\x00\x00\x01x"),
    "batch entry": lambda: bkcodec.decode_entries(pa.array([b"xx"]), on_error="raise"),
}

ARGUMENT_ERRORS = {
    "digest type": lambda: bkcodec.decode_entry(b"\x00" * 40, digest_type="nope"),
    "encode digest type": lambda: bkcodec.encode_entry(1, 0, -1, 5, b"x", digest_type="bogus"),
    "qualified name length": lambda: bkcodec.LedgerId.from_qualified_name("x"),
    "qualified name character": lambda: bkcodec.LedgerId.from_qualified_name("0" * 31 + "g"),
    "on_error": lambda: bkcodec.decode_entries(pa.array([b"xx"]), on_error="bogus"),
    "bookie id": lambda: bkcodec.BookieId.parse("a,b"),
    "layout": lambda: bkcodec.ledger_znode_path(1, "bogus"),
    "znode path": lambda: bkcodec.parse_ledger_znode_path("/x/y"),
}


@pytest.mark.parametrize("call", DATA_ERRORS.values(), ids=DATA_ERRORS.keys())
def test_data_errors_name_their_offset_once(call):
    with pytest.raises(bkcodec.BookKeeperFormatError) as info:
        call()
    text = str(info.value)
    assert len(_AT_BYTE.findall(text)) == 1, text
    assert text.endswith(f" at byte {info.value.offset}"), text


@pytest.mark.parametrize("call", ARGUMENT_ERRORS.values(), ids=ARGUMENT_ERRORS.keys())
def test_argument_errors_carry_no_offset(call):
    with pytest.raises(ValueError) as info:
        call()
    assert not isinstance(info.value, bkcodec.BookKeeperFormatError)
    assert not _AT_BYTE.search(str(info.value)), str(info.value)


def test_file_errors_name_offset_and_path_once(tmp_path):
    path = tmp_path / "0.log"
    path.write_bytes(b"root:x:0:0" + b"\x00" * 2000)
    with pytest.raises(bkcodec.CorruptDataError) as info:
        bkcodec.read_entry_log(path, on_error="raise").read_all()
    text = str(info.value)
    assert len(_AT_BYTE.findall(text)) == 1 and text.endswith(f"at byte 0 of {path}"), text
