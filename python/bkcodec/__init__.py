"""bkcodec: read Apache BookKeeper entries and bookie files into Apache Arrow.

The native core lives in the private module ``bkcodec._bkcodec``; this package
re-exports its public names.
"""

from bkcodec._bkcodec import (
    BookKeeperFormatError,
    CorruptDataError,
    DigestMismatchError,
    DigestTypeMismatchError,
    IdMismatchError,
    LedgerId,
    TruncatedError,
    UnsupportedVersionError,
    crc32,
    crc32c,
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
    "BookKeeperFormatError",
    "CorruptDataError",
    "DigestMismatchError",
    "DigestTypeMismatchError",
    "IdMismatchError",
    "LedgerId",
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
]
