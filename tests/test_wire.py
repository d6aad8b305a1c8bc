"""v2 wire frames (docs/formats.md#v2-wire-frames, #test-vectors) and the metadata RPC messages."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bkcodec import (
    BookKeeperFormatError,
    CorruptDataError,
    LedgerMetadata,
    TruncatedError,
    UnsupportedVersionError,
    crc32c,
    encode_ledger_metadata,
    rpc,
    wire,
)

# Ledger 1, entry 0, LAC -1, length 5, "hello", CRC32C (docs/formats.md#test-vectors).
HEADER = struct.pack(">qqqq", 1, 0, -1, 5)
HELLO = HEADER + struct.pack(">I", crc32c(HEADER + b"hello")) + b"hello"
KEY = hashlib.sha1(b"ledger" + b"secret").digest()


def test_the_69_byte_add_frame():
    assert HELLO.hex() == "0000000000000001" "0000000000000000" "ffffffffffffffff" "0000000000000005" "e3a5f74d" "68656c6c6f"
    frame = wire.encode_add_request(KEY, HELLO)
    assert len(frame) == 69
    assert frame == bytes.fromhex("00000041 02010000 e793cbc379107648537183605cd361d3bb789a39") + HELLO
    req = wire.decode_request(frame)
    assert isinstance(req, wire.AddRequest)
    assert (req.op, req.version, req.flags) == (wire.OpCode.ADDENTRY, 2, 0)
    assert (req.master_key, req.entry, req.ledger_id, req.entry_id) == (KEY, HELLO, 1, 0)
    assert req.encode() == frame
    assert req == wire.AddRequest(KEY, HELLO)


def test_header_words():
    assert wire.encode_add_request(KEY, HELLO)[4:8].hex() == "02010000"
    fenced = wire.encode_read_request(1, 0, master_key=KEY, flags=wire.Flag.DO_FENCING)
    assert fenced[4:8].hex() == "02020001"
    recovery = wire.encode_add_request(KEY, HELLO, flags=wire.Flag.RECOVERY_ADD | wire.Flag.HIGH_PRIORITY)
    assert recovery[4:8].hex() == "02010006"


def test_version_0_legacy_header():
    frame = bytes.fromhex("00000014 00000002") + struct.pack(">qq", 7, -1)
    req = wire.decode_request(frame)
    assert isinstance(req, wire.ReadRequest)
    assert (req.version, req.op, req.flags, req.ledger_id, req.entry_id) == (0, 2, 0, 7, -1)
    assert wire.encode_read_request(7, -1, version=0) == frame
    with pytest.raises(ValueError):
        wire.ReadRequest(7, -1, flags=1, version=0)  # no room for flags


@pytest.mark.parametrize("version_byte", [0x03, 0x7F, 0x80, 0xFF])
def test_versions_outside_0_to_2_are_ebadversion(version_byte):
    frame = bytearray(wire.encode_read_request(1, 2))
    frame[4] = version_byte
    for decode in (wire.decode_request, wire.decode_response):
        with pytest.raises(UnsupportedVersionError, match=r"EBADVERSION \(103\)") as info:
            decode(bytes(frame))
        assert info.value.offset == 4
    with pytest.raises(ValueError):
        wire.ReadRequest(1, 2, version=3)


def test_fencing_reads_carry_the_key():
    plain = wire.encode_read_request(5, 9)
    assert struct.unpack(">i", plain[:4])[0] == 20
    fenced = wire.encode_read_request(5, 9, master_key=KEY, flags=wire.Flag.DO_FENCING)
    assert struct.unpack(">i", fenced[:4])[0] == 40
    assert fenced[-20:] == KEY
    assert wire.decode_request(fenced).master_key == KEY
    assert wire.decode_request(plain).master_key is None
    with pytest.raises(ValueError):
        wire.encode_read_request(5, 9, flags=wire.Flag.DO_FENCING)
    with pytest.raises(ValueError):
        wire.encode_read_request(5, 9, master_key=KEY)
    with pytest.raises(ValueError):
        wire.encode_read_request(5, 9, master_key=KEY[:19], flags=1)
    # Version 1 may flag fencing but never sends the key.
    assert len(wire.encode_read_request(5, 9, flags=1, version=1)) == 24
    # A fencing read whose key is missing on the wire.
    short = bytes.fromhex("00000014 02020001") + struct.pack(">qq", 5, 9)
    with pytest.raises(TruncatedError) as info:
        wire.decode_request(short)
    assert info.value.offset == 24


def test_responses():
    add = wire.decode_response(wire.encode_add_response(1, 2, wire.ReturnCode.EFENCED))
    assert isinstance(add, wire.AddResponse)
    assert (add.rc, add.ledger_id, add.entry_id, add.flags) == (104, 1, 2, 0)
    assert wire.encode_add_response(1, 2, 104) == bytes.fromhex("00000018 02010000 00000068") + struct.pack(">qq", 1, 2)
    read = wire.decode_response(wire.encode_read_response(1, -1, HELLO))
    assert isinstance(read, wire.ReadResponse)
    assert (read.rc, read.entry_id, read.data) == (0, -1, HELLO)
    err = wire.decode_response(wire.encode_read_response(1, 3, rc=wire.ReturnCode.ENOENTRY))
    assert (err.rc, err.data) == (2, b"")


def test_batch_read():
    req = wire.encode_batch_read_request(1, 2, 3, 4, 5)
    assert req == bytes.fromhex("00000028 02070000") + struct.pack(">qqqiq", 1, 2, 3, 4, 5)
    fenced = wire.decode_request(wire.encode_batch_read_request(1, 2, 3, 4, 5, master_key=KEY, flags=1))
    assert isinstance(fenced, wire.BatchReadRequest)
    assert (fenced.max_count, fenced.max_size, fenced.master_key) == (4, 5, KEY)
    entries = [HELLO, b"", HELLO[:32]]
    frame = wire.encode_batch_read_response(1, 0, 3, entries)
    assert len(frame) == 4 + 32 + sum(4 + len(e) for e in entries)
    resp = wire.decode_response(frame)
    assert isinstance(resp, wire.BatchReadResponse)
    assert (resp.request_id, resp.entries, resp.rc) == (3, entries, 0)
    # An item running past the end of the frame.
    body = frame[4:] + struct.pack(">i", 10) + b"abc"
    with pytest.raises(TruncatedError) as info:
        wire.decode_response(struct.pack(">i", len(body)) + body)
    assert info.value.offset == len(frame) + 4


def test_auth_message():
    msg = wire.AuthMessage("AuthDisabledPlugin", b"")
    frame = msg.encode()
    assert frame[4:8].hex() == "02030000"
    assert wire.decode_request(frame) == msg
    assert wire.decode_response(frame) == msg


def test_bp35_entries_are_refused_with_ebadreq():
    v2_entry = b"\xa3" + struct.pack(">q", 7) + HELLO
    with pytest.raises(ValueError, match=r"EBADREQ \(100\)"):
        wire.encode_add_request(KEY, v2_entry)
    with pytest.raises(ValueError, match="EBADREQ"):
        wire.AddRequest(KEY, b"\x80" + HELLO[1:])
    frame = struct.pack(">i", 24 + len(v2_entry)) + bytes.fromhex("02010000") + KEY + v2_entry
    with pytest.raises(CorruptDataError) as info:
        wire.decode_request(frame)
    assert info.value.offset == 28


@pytest.mark.parametrize(
    "frame, error, offset",
    [
        (b"", TruncatedError, 0),
        (b"\x00\x00\x00", TruncatedError, 0),
        (bytes.fromhex("00000002 0201"), TruncatedError, 4),
        (bytes.fromhex("00000010 02010000"), TruncatedError, 4),
        (bytes.fromhex("7fffffff 02010000"), CorruptDataError, 0),  # beyond the maximum frame size
        (bytes.fromhex("ffffffff 02010000"), CorruptDataError, 0),  # negative
        (bytes.fromhex("00000004 02040000"), CorruptDataError, 4),  # READ_LAC has no v2 frame
        (bytes.fromhex("00000004 02090000"), CorruptDataError, 4),
        (bytes.fromhex("00000004 02010000 00"), CorruptDataError, 8),  # bytes after the frame
        (bytes.fromhex("00000018 02010000") + KEY, TruncatedError, 28),  # entry too short for its ids
    ],
)
def test_malformed_frames(frame, error, offset):
    with pytest.raises(error) as info:
        wire.decode_request(frame)
    assert info.value.offset == offset


def test_huge_length_is_checked_not_allocated():
    frame = bytes.fromhex("7fffffff 02010000")
    with pytest.raises(TruncatedError) as info:
        wire.decode_request(frame, max_frame_size=2**62)
    assert info.value.offset == 4
    assert wire.DEFAULT_MAX_FRAME_SIZE == 5 * 1024 * 1024


def test_split_frames():
    frames = [wire.encode_add_request(KEY, HELLO), wire.encode_read_request(1, 0), wire.AuthMessage("p", b"x").encode()]
    stream = b"".join(frames)
    assert wire.split_frames(stream) == frames
    assert [type(wire.decode_request(f)) for f in wire.split_frames(stream)] == [
        wire.AddRequest, wire.ReadRequest, wire.AuthMessage
    ]
    with pytest.raises(TruncatedError) as info:
        wire.split_frames(stream[:-1])
    assert info.value.offset == len(frames[0]) + len(frames[1]) + 4


def test_split_frames_of_a_stream_cut_mid_frame():
    frames = [wire.encode_add_request(KEY, HELLO), wire.encode_read_request(1, 0), wire.AuthMessage("p", b"x").encode()]
    stream = b"".join(frames)
    ends = [sum(len(f) for f in frames[: i + 1]) for i in range(len(frames))]
    for cut in range(len(stream) + 1):
        whole, rest = wire.split_frames(stream[:cut], partial=True)
        assert whole == [f for f, end in zip(frames, ends) if end <= cut], cut
        assert rest == stream[sum(len(f) for f in whole) : cut]
    # The rest, with the bytes that arrive next, makes the frame whole.
    whole, rest = wire.split_frames(stream[:-3], partial=True)
    assert wire.split_frames(rest + stream[-3:]) == frames[len(whole) :]
    # A length no frame can have is damage, raised at its offset.
    with pytest.raises(CorruptDataError) as info:
        wire.split_frames(frames[0] + b"\xff\xff\xff\xff" + b"x", partial=True)
    assert info.value.offset == len(frames[0])


def test_return_code_mapping_and_enums_agree():
    table = {0: 0, 1: 402, 2: 403, 100: 404, 101: 501, 102: 502, 103: 503, 104: 504, 105: 505, 106: 506, 107: 507}
    for v2, v3 in table.items():
        assert wire.v2_to_v3_status(v2) == v3
        assert wire.v3_to_v2_status(v3) == v2
    assert wire.v2_to_v3_status(3) is None and wire.v3_to_v2_status(400) is None
    assert {c.name: c.value for c in wire.ReturnCode} == {
        wire.StatusCode(wire.v2_to_v3_status(c)).name: c.value for c in wire.ReturnCode
    }
    assert [int(c) for c in wire.ReturnCode] == sorted(table)


# ---------------------------------------------------------------- properties

longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)
versions = st.sampled_from([0, 1, 2])
keys = st.binary(min_size=20, max_size=20)


@st.composite
def requests(draw):
    version = draw(versions)
    flags = 0 if version == 0 else draw(st.integers(0, 0xFFFF))
    fencing_key = draw(keys) if version == 2 and flags & 1 else None
    kind = draw(st.sampled_from(["add", "read", "batch", "auth"]))
    if kind == "add":
        entry = bytes([draw(st.integers(0, 0x7F))]) + draw(st.binary(min_size=15, max_size=80))
        return wire.AddRequest(draw(keys), entry, flags=flags, version=version)
    if kind == "read":
        return wire.ReadRequest(draw(longs), draw(longs), master_key=fencing_key, flags=flags, version=version)
    if kind == "batch":
        return wire.BatchReadRequest(
            draw(longs), draw(longs), draw(longs), draw(ints), draw(longs), master_key=fencing_key, flags=flags,
            version=version,
        )
    return wire.AuthMessage(draw(st.text(max_size=20)), draw(st.binary(max_size=20)), flags=flags, version=version)


@st.composite
def responses(draw):
    version = draw(versions)
    flags = 0 if version == 0 else draw(st.integers(0, 0xFFFF))
    kind = draw(st.sampled_from(["add", "read", "batch"]))
    if kind == "add":
        return wire.AddResponse(draw(longs), draw(longs), draw(ints), version=version, flags=flags)
    if kind == "read":
        return wire.ReadResponse(draw(longs), draw(longs), draw(st.binary(max_size=80)), draw(ints), version=version, flags=flags)
    return wire.BatchReadResponse(
        draw(longs), draw(longs), draw(longs), draw(st.lists(st.binary(max_size=30), max_size=5)), draw(ints),
        version=version, flags=flags,
    )


@given(requests())
def test_requests_round_trip(req):
    frame = req.encode()
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert wire.decode_request(frame) == req


@given(responses())
def test_responses_round_trip(resp):
    assert wire.decode_response(resp.encode()) == resp


@given(st.binary(max_size=120))
def test_random_bytes_raise_only_format_errors(data):
    for decode in (wire.decode_request, wire.decode_response, wire.split_frames):
        try:
            decode(data)
        except BookKeeperFormatError as e:
            assert 0 <= e.offset <= len(data) + 4


@given(requests(), st.data())
def test_mutated_frames_raise_only_format_errors(req, data):
    frame = bytearray(req.encode())
    pos = data.draw(st.integers(0, len(frame) - 1))
    frame[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    for candidate in (bytes(frame), bytes(frame[:cut])):
        for decode in (wire.decode_request, wire.decode_response):
            try:
                decode(candidate)
            except BookKeeperFormatError:
                pass


# ---------------------------------------------------------------- metadata RPC messages

MD = LedgerMetadata(
    [(0, ["a:1", "b:1"]), (10, ["c:1", "d:1"])], ack_quorum_size=1, state="CLOSED", last_entry_id=20, length=300,
    digest_type="crc32c", password=b"pw", ctime=1700000000000, custom_metadata={"k": b"v"}, ctoken=3,
)


def test_ledger_metadata_request():
    assert rpc.LedgerMetadataRequest().encode() == b""
    assert rpc.LedgerMetadataRequest(ledger_id=0).encode() == b"\x08\x00"  # 0 is a ledger, not "new"
    assert rpc.LedgerMetadataRequest.decode(b"").ledger_id is None
    assert rpc.LedgerMetadataRequest.decode(b"\x08\x00").ledger_id == 0
    req = rpc.LedgerMetadataRequest(ledger_id=7, metadata=MD, expected_version=2)
    data = req.encode()
    back = rpc.LedgerMetadataRequest.decode(data)
    assert back == req and back.metadata == MD and back.expected_version == 2
    # The nested message is the format-3 body: what the znode holds after its header and length.
    znode = encode_ledger_metadata(MD)
    body = znode[len(b"BookieMetadataFormatVersion\t3\n") + 1 :]
    assert data == b"\x08\x07\x12" + bytes([len(body)]) + body + b"\x18\x02"


def test_ledger_metadata_response_and_ranges():
    resp = rpc.LedgerMetadataResponse(code=rpc.StatusCode.LEDGER_NOT_FOUND, ledger_id=7, version=9)
    back = rpc.LedgerMetadataResponse.decode(resp.encode())
    assert back == resp and back.code == rpc.StatusCode.LEDGER_NOT_FOUND and back.metadata is None
    with_md = rpc.LedgerMetadataResponse(metadata=MD)
    assert rpc.LedgerMetadataResponse.decode(with_md.encode()).metadata == MD
    # Unknown status numbers are kept (proto3 enums are open).
    assert rpc.LedgerMetadataResponse.decode(rpc.LedgerMetadataResponse(code=1234).encode()).code == 1234
    assert rpc.GetLedgerRangesRequest(100).encode() == b"\x08\x64"
    assert rpc.GetLedgerRangesRequest.decode(b"\x08\x64").limit_per_response == 100
    ranges = rpc.GetLedgerRangesResponse(code=0, count=3, serialized_ranges=b"\x01\x02")
    assert rpc.GetLedgerRangesResponse.decode(ranges.encode()) == ranges
    assert [c.value for c in rpc.StatusCode] == [0, 400, 500, 501, 600, 700, 701, 702, 900]


def test_rpc_bad_input_raises_typed_errors():
    with pytest.raises(CorruptDataError):
        rpc.LedgerMetadataResponse.decode(b"\x22\x05\x08")
    with pytest.raises(CorruptDataError, match="metadata"):
        rpc.LedgerMetadataResponse.decode(b"\x22\x00")  # nested metadata without its required fields
    with pytest.raises(CorruptDataError):
        rpc.GetLedgerRangesResponse.decode(b"\x1a\x05ab")


@given(st.binary(max_size=60))
def test_rpc_random_bytes_raise_only_format_errors(data):
    for cls in (rpc.LedgerMetadataRequest, rpc.LedgerMetadataResponse, rpc.GetLedgerRangesRequest, rpc.GetLedgerRangesResponse):
        try:
            cls.decode(data)
        except BookKeeperFormatError:
            pass


@given(st.none() | st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1), st.booleans())
def test_rpc_request_round_trips(ledger_id, expected_version, with_md):
    req = rpc.LedgerMetadataRequest(ledger_id, MD if with_md else None, expected_version)
    assert rpc.LedgerMetadataRequest.decode(req.encode()) == req
