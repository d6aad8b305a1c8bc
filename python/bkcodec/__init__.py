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
    LedgerId,
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
from bkcodec._bkcodec import (
    Entry,
    ExplicitLac,
    decode_entries,
    decode_entry,
    decode_lac,
    encode_entry,
    encode_lac,
    mac_key,
    master_key,
)

__all__ = [
    "BookieId",
    "BookKeeperFormatError",
    "CorruptDataError",
    "DigestMismatchError",
    "DigestTypeMismatchError",
    "IdMismatchError",
    "LedgerId",
    "LedgerMetadata",
    "TruncatedError",
    "UnsupportedVersionError",
    "crc32",
    "crc32c",
    # entries
    "Entry",
    "ExplicitLac",
    "decode_entries",
    "decode_entry",
    "decode_lac",
    "encode_entry",
    "encode_lac",
    "mac_key",
    "master_key",
    "decode_ledger_metadata",
    "encode_ledger_metadata",
    "ledger_metadata_table",
    "ledger_znode_path",
    "load_ledger_metadata_dir",
    "parse_ledger_znode_path",
]

# Submodules: v2 wire frames and the metadata RPC messages.
from bkcodec import rpc, wire  # noqa: E402
