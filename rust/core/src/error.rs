//! One error type for everything the core parses: what went wrong, where (byte
//! offset, and the file once a file reader knows it), and a short detail.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::path_text::escape_path;

/// What kind of damage or misuse was found. Bindings map each kind onto one
/// exception class, so adding a kind here means adding one mapping there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Fewer bytes than the format requires.
    Truncated,
    /// The stored digest does not match the computed one.
    DigestMismatch,
    /// A version field names a format this library does not know.
    UnsupportedVersion,
    /// The caller's digest type differs from the one the data declares.
    DigestTypeMismatch,
    /// The ledger id or entry id differs from the one the caller expected.
    IdMismatch,
    /// A field holds a value the format forbids (bad magic, negative length, ...).
    Corrupt,
    /// The caller passed an argument the format cannot represent.
    InvalidArgument,
    /// The operating system failed to read or write a file.
    Io,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::DigestMismatch => "digest mismatch",
            ErrorKind::UnsupportedVersion => "unsupported version",
            ErrorKind::DigestTypeMismatch => "digest type mismatch",
            ErrorKind::IdMismatch => "id mismatch",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Io => "I/O error",
        }
    }
}

/// An error with the byte offset at which it was found.
///
/// `offset` is relative to the buffer handed to the parser; file readers
/// rebase it to an absolute file offset and attach the path with [`Error::in_file`].
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub offset: u64,
    pub detail: String,
    pub path: Option<PathBuf>,
    /// For [`ErrorKind::Io`], the operating system's error, so bindings can map its
    /// errno (`FileNotFoundError`, `PermissionError`, ...) without reading the text.
    pub io: Option<Arc<std::io::Error>>,
}

impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        let io = |e: &Error| e.io.as_ref().map(|io| (io.kind(), io.raw_os_error()));
        (self.kind, self.offset, &self.detail, &self.path) == (other.kind, other.offset, &other.detail, &other.path)
            && io(self) == io(other)
    }
}

impl Eq for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, offset: u64, detail: impl Into<String>) -> Self {
        Error { kind, offset, detail: detail.into(), path: None, io: None }
    }

    pub fn truncated(offset: u64, needed: u64, available: u64) -> Self {
        Error::new(
            ErrorKind::Truncated,
            offset,
            format!("needed {needed} bytes, {available} available"),
        )
    }

    pub fn corrupt(offset: u64, detail: impl Into<String>) -> Self {
        Error::new(ErrorKind::Corrupt, offset, detail)
    }

    pub fn invalid_argument(detail: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, 0, detail)
    }

    pub fn io(path: &Path, offset: u64, err: &std::io::Error) -> Self {
        let kept = match err.raw_os_error() {
            Some(errno) => std::io::Error::from_raw_os_error(errno),
            None => std::io::Error::new(err.kind(), err.to_string()),
        };
        let mut e = Error::new(ErrorKind::Io, offset, err.to_string()).in_file(path);
        e.io = Some(Arc::new(kept));
        e
    }

    /// The errno of an I/O error, when the operating system gave one.
    pub fn os_error(&self) -> Option<i32> {
        self.io.as_ref().and_then(|e| e.raw_os_error())
    }

    /// Replaces the detail, keeping kind and offset (for context a low-level read lacks).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    /// Shift a buffer-relative offset by `base` (where the buffer starts in its file).
    pub fn at_base(mut self, base: u64) -> Self {
        self.offset = self.offset.saturating_add(base);
        self
    }

    /// Attach the file this error was found in (kept if already set).
    pub fn in_file(mut self, path: &Path) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }

    /// The message without the location, for error columns that carry the offset separately.
    pub fn message(&self) -> String {
        format!("{}: {}", self.kind.as_str(), self.detail)
    }
}

/// `kind: detail at byte N of path`: the location once, from `offset` and `path`, so
/// details never name the offset themselves; the path escaped as [`crate::path_text`]
/// says (it need not be UTF-8). Argument errors are about the caller's
/// arguments, not bytes of data, and carry no offset (their details say where in an
/// argument string, when that matters).
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.detail)?;
        match (&self.path, self.kind) {
            (Some(p), ErrorKind::InvalidArgument) => write!(f, " ({})", escape_path(p)),
            (Some(p), _) => write!(f, " at byte {} of {}", self.offset, escape_path(p)),
            (None, ErrorKind::InvalidArgument) => Ok(()),
            (None, _) => write!(f, " at byte {}", self.offset),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_location_once() {
        let e = Error::corrupt(12, "bad magic");
        assert_eq!(e.to_string(), "corrupt: bad magic at byte 12");
        let e = Error::truncated(0, 4, 1).in_file(Path::new("x/0.log"));
        assert_eq!(e.to_string(), "truncated: needed 4 bytes, 1 available at byte 0 of x/0.log");
    }

    #[test]
    fn display_escapes_a_path_that_is_not_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/bk-\xff/0.log"));
        let e = Error::corrupt(3, "bad magic").in_file(path);
        assert_eq!(e.to_string(), "corrupt: bad magic at byte 3 of /tmp/bk-\\xff/0.log");
    }

    #[test]
    fn argument_errors_carry_no_offset() {
        let e = Error::invalid_argument("unknown digest type \"x\"");
        assert_eq!(e.to_string(), "invalid argument: unknown digest type \"x\"");
        let e = Error::invalid_argument("log id too large").in_file(Path::new("a.log"));
        assert_eq!(e.to_string(), "invalid argument: log id too large (a.log)");
    }
}
