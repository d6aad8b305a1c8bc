"""bkcodec: read Apache BookKeeper entries and bookie files into Apache Arrow.

The native core lives in the private module ``bkcodec._bkcodec``; this package
re-exports its public names.
"""

from bkcodec._bkcodec import (
    BookieId,
    BookKeeperFormatError,
    CorruptDataError,
    DigestMismatchError,
    DigestTypeMismatchError,
    IdMismatchError,
    LedgerMetadata,
    TruncatedError,
    UnsupportedVersionError,
    crc32,
    crc32c,
    decode_ledger_metadata,
    encode_ledger_metadata,
    ledger_metadata_table,
    ledger_znode_path,
    load_ledger_metadata_dir,
    parse_ledger_znode_path,
)

__all__ = [
    "BookieId",
    "BookKeeperFormatError",
    "CorruptDataError",
    "DigestMismatchError",
    "DigestTypeMismatchError",
    "IdMismatchError",
    "LedgerMetadata",
    "TruncatedError",
    "UnsupportedVersionError",
    "crc32",
    "crc32c",
    "decode_ledger_metadata",
    "encode_ledger_metadata",
    "ledger_metadata_table",
    "ledger_znode_path",
    "load_ledger_metadata_dir",
    "parse_ledger_znode_path",
]

# Submodules: v2 wire frames and the metadata RPC messages.
from bkcodec import rpc, wire  # noqa: E402
