"""BookKeeper's v2 binary wire protocol (``BookieProtocol``): frames, headers and codes.

Every message is a class; ``encode()`` gives the whole frame, length prefix
included. A frame does not say whether it is a request or a response (an ADD
request and an ADD response share their header), so there are two decoders::

    frame = wire.encode_add_request(master_key, entry)
    req = wire.decode_request(frame)        # -> AddRequest
    req.ledger_id, req.entry_id, req.flags, req.version

Malformed frames raise ``bkcodec.BookKeeperFormatError`` subclasses with the byte
offset (from the frame's first byte); a version outside [0, 2] raises
``UnsupportedVersionError`` (a bookie answers EBADVERSION). ``encode_add_request``
refuses a BP-35 versioned entry (first byte with bit 7 set), which the v2
protocol cannot carry (EBADREQ).
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import TYPE_CHECKING, Union

from bkcodec._bkcodec import (
    DEFAULT_MAX_FRAME_SIZE,
    AddRequest,
    AddResponse,
    AuthMessage,
    BatchReadRequest,
    BatchReadResponse,
    ReadRequest,
    ReadResponse,
    decode_request,
    decode_response,
    split_frames,
    v2_to_v3_status,
    v3_to_v2_status,
    wire_flags,
    wire_op_codes,
    wire_return_codes,
)

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "AddRequest",
    "AddResponse",
    "AuthMessage",
    "BatchReadRequest",
    "BatchReadResponse",
    "Flag",
    "OpCode",
    "ReadRequest",
    "ReadResponse",
    "Request",
    "Response",
    "ReturnCode",
    "StatusCode",
    "decode_request",
    "decode_response",
    "encode_add_request",
    "encode_add_response",
    "encode_batch_read_request",
    "encode_batch_read_response",
    "encode_read_request",
    "encode_read_response",
    "split_frames",
    "v2_to_v3_status",
    "v3_to_v2_status",
]

if TYPE_CHECKING:
    from typing_extensions import Buffer

Request = Union[AddRequest, ReadRequest, BatchReadRequest, AuthMessage]
Response = Union[AddResponse, ReadResponse, BatchReadResponse, AuthMessage]


# The codes are the core's (rust/core/src/wire/v2.rs), as Python enums.
OpCode = IntEnum("OpCode", wire_op_codes(), module=__name__)  # type: ignore[misc]
OpCode.__doc__ = "v2 opcodes. Only ADDENTRY, READENTRY, AUTH and BATCH_READ_ENTRY have v2 frames."
Flag = IntFlag("Flag", wire_flags(), module=__name__)  # type: ignore[misc]
Flag.__doc__ = "Header flags."
ReturnCode = IntEnum("ReturnCode", [(name, v2) for name, v2, _ in wire_return_codes()], module=__name__)  # type: ignore[misc]
ReturnCode.__doc__ = "v2 return codes (``BookieProtocol.E*``); ``v2_to_v3_status`` maps them to ``StatusCode``."
StatusCode = IntEnum("StatusCode", [(name, v3) for name, _, v3 in wire_return_codes()], module=__name__)  # type: ignore[misc]
StatusCode.__doc__ = "v3 protocol status codes (``BookkeeperProtocol.StatusCode``)."


def encode_add_request(master_key: Buffer, entry: Buffer, *, flags: int = 0, version: int = 2) -> bytes:
    """An ADD request frame: the 20-byte master key, then the (V1) entry."""
    return AddRequest(master_key, entry, flags=flags, version=version).encode()


def encode_add_response(ledger_id: int, entry_id: int, rc: int = 0, *, version: int = 2) -> bytes:
    return AddResponse(ledger_id, entry_id, rc, version=version).encode()


def encode_read_request(
    ledger_id: int, entry_id: int, *, master_key: Buffer | None = None, flags: int = 0, version: int = 2
) -> bytes:
    """A READ request frame; a fencing read (``flags=Flag.DO_FENCING``) needs the master key."""
    return ReadRequest(ledger_id, entry_id, master_key=master_key, flags=flags, version=version).encode()


def encode_read_response(
    ledger_id: int, entry_id: int, data: Buffer | None = None, rc: int = 0, *, version: int = 2
) -> bytes:
    return ReadResponse(ledger_id, entry_id, data, rc, version=version).encode()


def encode_batch_read_request(
    ledger_id: int,
    start_entry_id: int,
    request_id: int,
    max_count: int,
    max_size: int,
    *,
    master_key: Buffer | None = None,
    flags: int = 0,
    version: int = 2,
) -> bytes:
    return BatchReadRequest(
        ledger_id, start_entry_id, request_id, max_count, max_size, master_key=master_key, flags=flags, version=version
    ).encode()


def encode_batch_read_response(
    ledger_id: int, start_entry_id: int, request_id: int, entries: list[Buffer], rc: int = 0, *, version: int = 2
) -> bytes:
    return BatchReadResponse(ledger_id, start_entry_id, request_id, entries, rc, version=version).encode()
