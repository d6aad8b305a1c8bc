//! The one place core errors become Python exceptions.
//!
//! Every format error is a `BookKeeperFormatError` (a `ValueError`) carrying
//! `.offset`, `.path` and `.kind`; its subclass says which kind.

use bkcodec_core::path_text::escape_path;
use bkcodec_core::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(bkcodec, BookKeeperFormatError, PyValueError, "Malformed or damaged BookKeeper data.");
create_exception!(bkcodec, TruncatedError, BookKeeperFormatError, "Fewer bytes than the format requires.");
create_exception!(bkcodec, DigestMismatchError, BookKeeperFormatError, "The stored digest does not match the data.");
create_exception!(bkcodec, UnsupportedVersionError, BookKeeperFormatError, "A version field names a format this library does not know.");
create_exception!(bkcodec, DigestTypeMismatchError, BookKeeperFormatError, "The requested digest type differs from the one the data declares.");
create_exception!(bkcodec, IdMismatchError, BookKeeperFormatError, "The ledger id or entry id differs from the expected one.");
create_exception!(bkcodec, CorruptDataError, BookKeeperFormatError, "A field holds a value the format forbids.");

/// Converts a core error into the matching Python exception, with `offset`,
/// `path` and `kind` attributes set on the instance.
pub fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    let msg = err.to_string();
    let pyerr = match err.kind {
        ErrorKind::Truncated => TruncatedError::new_err(msg),
        ErrorKind::DigestMismatch => DigestMismatchError::new_err(msg),
        ErrorKind::UnsupportedVersion => UnsupportedVersionError::new_err(msg),
        ErrorKind::DigestTypeMismatch => DigestTypeMismatchError::new_err(msg),
        ErrorKind::IdMismatch => IdMismatchError::new_err(msg),
        ErrorKind::Corrupt => CorruptDataError::new_err(msg),
        ErrorKind::InvalidArgument => return PyValueError::new_err(msg),
        ErrorKind::Io => return os_error(&err),
    };
    let value = pyerr.value(py);
    // The path as the OS spells it (a str with surrogate escapes where it is not UTF-8).
    let path = err.path.as_ref().map(|p| p.as_os_str());
    // Setting attributes on a fresh exception instance cannot fail in practice;
    // if it did, the exception itself is still the right one to raise.
    let _ = value.setattr("offset", err.offset);
    let _ = value.setattr("path", path);
    let _ = value.setattr("kind", err.kind.as_str());
    pyerr
}

/// An I/O error as Python's `OSError(errno, strerror, filename)`, which Python turns
/// into the matching subclass (`FileNotFoundError`, `PermissionError`, ...), from
/// the operating system's error the core kept.
fn os_error(err: &Error) -> PyErr {
    match err.os_error() {
        Some(code) => {
            let text = std::io::Error::from_raw_os_error(code).to_string();
            let text = text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_string();
            PyOSError::new_err((code, text, err.path.as_ref().map(|p| p.as_os_str().to_owned())))
        }
        None => PyOSError::new_err(match &err.path {
            Some(p) => format!("{}: {}", err.detail, escape_path(p)),
            None => err.detail.clone(),
        }),
    }
}

/// Extension for `Result<T, Error>` so call sites read `.py_err(py)?`.
pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_pyerr(py, e))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("BookKeeperFormatError", py.get_type::<BookKeeperFormatError>())?;
    m.add("TruncatedError", py.get_type::<TruncatedError>())?;
    m.add("DigestMismatchError", py.get_type::<DigestMismatchError>())?;
    m.add("UnsupportedVersionError", py.get_type::<UnsupportedVersionError>())?;
    m.add("DigestTypeMismatchError", py.get_type::<DigestTypeMismatchError>())?;
    m.add("IdMismatchError", py.get_type::<IdMismatchError>())?;
    m.add("CorruptDataError", py.get_type::<CorruptDataError>())?;
    Ok(())
}
