# Hand-written stubs for the native module; `python -m mypy.stubtest bkcodec._bkcodec`
# checks them against the build.
from typing_extensions import Buffer

__all__ = [
    "BookKeeperFormatError",
    "CorruptDataError",
    "DigestMismatchError",
    "DigestTypeMismatchError",
    "IdMismatchError",
    "TruncatedError",
    "UnsupportedVersionError",
    "crc32",
    "crc32c",
]

class BookKeeperFormatError(ValueError):
    offset: int
    path: str | None
    kind: str

class TruncatedError(BookKeeperFormatError): ...
class DigestMismatchError(BookKeeperFormatError): ...
class UnsupportedVersionError(BookKeeperFormatError): ...
class DigestTypeMismatchError(BookKeeperFormatError): ...
class IdMismatchError(BookKeeperFormatError): ...
class CorruptDataError(BookKeeperFormatError): ...

def crc32c(data: Buffer, value: int = 0) -> int: ...
def crc32(data: Buffer, value: int = 0) -> int: ...
