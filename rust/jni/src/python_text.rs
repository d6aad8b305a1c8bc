//! An error as the `error` column of the Python source's flagged row spells it:
//! `f"{type(error).__name__}: {error}"` of the exception bkcodec's Python bindings
//! raise for it (`rust/python/src/errors.rs`), so both sources give the same rows.

use bkcodec_core::path_text::escape_path;
use bkcodec_core::{Error, ErrorKind};

/// `TruncatedError: truncated: needed 4 bytes, ... at byte 0 of /x/0.log`,
/// `FileNotFoundError: [Errno 2] No such file or directory: '/x/0.log'`, ...
pub fn error_text(err: &Error) -> String {
    let class = match err.kind {
        ErrorKind::Truncated => "TruncatedError",
        ErrorKind::DigestMismatch => "DigestMismatchError",
        ErrorKind::UnsupportedVersion => "UnsupportedVersionError",
        ErrorKind::DigestTypeMismatch => "DigestTypeMismatchError",
        ErrorKind::IdMismatch => "IdMismatchError",
        ErrorKind::Corrupt => "CorruptDataError",
        ErrorKind::InvalidArgument => "ValueError",
        ErrorKind::Io => return os_error_text(err),
    };
    format!("{class}: {err}")
}

/// Python's `OSError(errno, strerror, filename)`: the subclass its errno maps to and
/// `[Errno N] text: 'path'`.
fn os_error_text(err: &Error) -> String {
    let Some(code) = err.os_error() else {
        return match &err.path {
            Some(p) => format!("OSError: {}: {}", err.detail, escape_path(p)),
            None => format!("OSError: {}", err.detail),
        };
    };
    let text = std::io::Error::from_raw_os_error(code).to_string();
    let text = text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_string();
    let class = os_error_class(code);
    match &err.path {
        Some(p) => format!("{class}: [Errno {code}] {text}: {}", python_repr(&p.to_string_lossy())),
        None => format!("{class}: [Errno {code}] {text}"),
    }
}

/// The `OSError` subclass CPython raises for an errno (PEP 3151).
fn os_error_class(code: i32) -> &'static str {
    match code {
        libc::ENOENT => "FileNotFoundError",
        libc::EACCES | libc::EPERM => "PermissionError",
        libc::EISDIR => "IsADirectoryError",
        libc::ENOTDIR => "NotADirectoryError",
        libc::EEXIST => "FileExistsError",
        libc::EAGAIN | libc::EALREADY | libc::EINPROGRESS => "BlockingIOError",
        libc::ECHILD => "ChildProcessError",
        libc::EPIPE | libc::ESHUTDOWN => "BrokenPipeError",
        libc::ECONNABORTED => "ConnectionAbortedError",
        libc::ECONNREFUSED => "ConnectionRefusedError",
        libc::ECONNRESET => "ConnectionResetError",
        libc::EINTR => "InterruptedError",
        libc::ESRCH => "ProcessLookupError",
        libc::ETIMEDOUT => "TimeoutError",
        _ => "OSError",
    }
}

/// `repr(str)` for printable text: single quotes unless the text holds one and no
/// double quote; backslashes and the chosen quote escaped, control characters as
/// `\n`, `\t`, `\xNN`.
fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_missing_file_reads_as_pythons_file_not_found() {
        let e = Error::io(Path::new("/x/0.log"), 0, &std::io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(error_text(&e), "FileNotFoundError: [Errno 2] No such file or directory: '/x/0.log'");
    }

    #[test]
    fn format_errors_keep_the_core_message() {
        let e = Error::truncated(0, 4, 1).in_file(Path::new("x/0.log"));
        assert_eq!(error_text(&e), "TruncatedError: truncated: needed 4 bytes, 1 available at byte 0 of x/0.log");
    }

    #[test]
    fn repr_picks_quotes_as_python_does() {
        assert_eq!(python_repr("a'b"), "\"a'b\"");
        assert_eq!(python_repr("a'b\""), "'a\\'b\"'");
        assert_eq!(python_repr("a\\b"), "'a\\\\b'");
    }
}
