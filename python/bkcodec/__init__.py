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
]
