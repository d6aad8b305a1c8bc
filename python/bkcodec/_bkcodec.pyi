# Hand-written stubs for the native module; `python -m mypy.stubtest bkcodec._bkcodec`
# checks them against the build.
from typing import Any, Literal, Sequence, final

import pyarrow  # type: ignore[import-untyped]
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

# Entries

_DigestTypeName = Literal["crc32", "crc32c", "hmac", "dummy"]

@final
class Entry:
    @property
    def format_version(self) -> int: ...
    @property
    def scope_id(self) -> int: ...
    @property
    def ledger_id(self) -> int: ...
    @property
    def entry_id(self) -> int: ...
    @property
    def last_add_confirmed(self) -> int: ...
    @property
    def length(self) -> int: ...
    @property
    def digest_type(self) -> _DigestTypeName: ...
    @property
    def digest(self) -> bytes: ...
    @property
    def payload(self) -> memoryview: ...
    @property
    def digest_ok(self) -> bool | None: ...
    @property
    def header_len(self) -> int: ...
    @property
    def payload_offset(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]

@final
class ExplicitLac:
    @property
    def ledger_id(self) -> int: ...
    @property
    def lac(self) -> int: ...
    @property
    def digest_type(self) -> _DigestTypeName: ...
    @property
    def digest(self) -> bytes: ...
    @property
    def digest_ok(self) -> bool | None: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

def decode_entry(
    data: Buffer,
    *,
    digest_type: str | None = None,
    password: Buffer | str = b"",
    ledger_id: int | None = None,
    entry_id: int | None = None,
    verify: bool = True,
) -> Entry: ...
def encode_entry(
    ledger_id: int,
    entry_id: int,
    last_add_confirmed: int,
    length: int,
    payload: Buffer,
    *,
    digest_type: str = "crc32c",
    password: Buffer | str = b"",
    scope_id: int = 0,
    format_version: int | None = None,
) -> bytes: ...
def decode_entries(
    entries: Any | Sequence[Buffer | None],
    *,
    digest_type: str | None = None,
    password: Buffer | str = b"",
    verify: bool = True,
    payload: Literal["binary", "binary_view", "none"] = "binary",
    on_error: Literal["raise", "flag"] = "raise",
) -> pyarrow.RecordBatch: ...
def decode_lac(
    data: Buffer,
    *,
    digest_type: str,
    password: Buffer | str = b"",
    ledger_id: int | None = None,
    verify: bool = True,
) -> ExplicitLac: ...
def encode_lac(
    ledger_id: int,
    lac: int,
    *,
    digest_type: str = "crc32c",
    password: Buffer | str = b"",
) -> bytes: ...
def master_key(password: Buffer | str) -> bytes: ...
def mac_key(password: Buffer | str) -> bytes: ...
