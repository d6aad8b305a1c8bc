"""Messages of the metadata RPC service from BookKeeper's thin-client proposal.

Each message class has ``encode()`` and a static ``decode(data)``; ledger metadata
travels as ``bkcodec.LedgerMetadata`` (the binary format-3 message)::

    req = rpc.LedgerMetadataRequest(ledger_id=7)
    rpc.LedgerMetadataRequest.decode(req.encode()) == req

The proposal never became code. Where it is ambiguous this module decides: proto3
semantics (zeros are not written), except that ``LedgerMetadataRequest.ledger_id``
keeps presence (None asks for a new id; 0 is a real ledger); unknown status codes
are kept as plain ints; ``serialized_ranges`` stays opaque bytes.
"""

from __future__ import annotations

from enum import IntEnum

from bkcodec._bkcodec import (
    GetLedgerRangesRequest,
    GetLedgerRangesResponse,
    LedgerMetadataRequest,
    LedgerMetadataResponse,
)

__all__ = [
    "GetLedgerRangesRequest",
    "GetLedgerRangesResponse",
    "LedgerMetadataRequest",
    "LedgerMetadataResponse",
    "StatusCode",
]


class StatusCode(IntEnum):
    """The proposal's ``StatusCode`` values."""

    SUCCESS = 0
    BAD_REQUEST = 400
    INTERNAL_SERVER_ERROR = 500
    NOT_IMPLEMENTED = 501
    UNEXPECTED = 600
    LEDGER_METADATA_ERROR = 700
    LEDGER_EXISTS = 701
    LEDGER_NOT_FOUND = 702
    BAD_VERSION = 900
