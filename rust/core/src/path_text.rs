//! Paths as text. A Linux path is bytes and need not be UTF-8; where one must become
//! text (error messages, notes) it is escaped losslessly: each byte that is not
//! part of valid UTF-8 is written `\xNN` (two lowercase hex digits) and each
//! backslash `\\`; a path that is UTF-8 without a backslash is unchanged. The
//! Python package writes `file` columns with the same rule (`bkcodec.path_text`).

use std::borrow::Cow;
use std::ffi::OsString;
use std::fmt::Write;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// `path` as text, escaped as the module says.
pub fn escape_path(path: &Path) -> Cow<'_, str> {
    let bytes = path.as_os_str().as_encoded_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains('\\') => Cow::Borrowed(s),
        _ => Cow::Owned(escape_bytes(bytes)),
    }
}

fn escape_bytes(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    let push_text = |out: &mut String, text: &str| {
        for c in text.chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
    };
    loop {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                push_text(&mut out, text);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                // The bytes before `valid_up_to` are UTF-8, so this borrows them.
                push_text(&mut out, &String::from_utf8_lossy(good));
                let bad = e.error_len().unwrap_or(rest.len());
                for b in &rest[..bad] {
                    let _ = write!(out, "\\x{b:02x}");
                }
                bytes = &rest[bad..];
            }
        }
    }
}

/// The path [`escape_path`] wrote `text` for; None when `text` holds an escape the
/// rule never writes.
pub fn unescape_path(text: &str) -> Option<PathBuf> {
    if !text.contains('\\') {
        return Some(PathBuf::from(text));
    }
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'\\' {
            out.push(b);
            rest = tail;
            continue;
        }
        match tail {
            [b'\\', more @ ..] => {
                out.push(b'\\');
                rest = more;
            }
            [b'x', hi, lo, more @ ..] => {
                let hex = std::str::from_utf8(&[*hi, *lo]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())?;
                out.push(hex);
                rest = more;
            }
            _ => return None,
        }
    }
    Some(PathBuf::from(OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(bytes: &[u8]) -> PathBuf {
        PathBuf::from(OsString::from_vec(bytes.to_vec()))
    }

    #[test]
    fn utf8_paths_without_backslashes_are_unchanged() {
        assert!(matches!(escape_path(Path::new("/data/bk/ledgers/current/0.log")), Cow::Borrowed(_)));
        assert_eq!(escape_path(Path::new("/data/bké/0.log")), "/data/bké/0.log");
    }

    #[test]
    fn other_bytes_and_backslashes_are_escaped_losslessly() {
        let cases: [(&[u8], &str); 5] = [
            (b"/tmp/bk-\xff/bookie", "/tmp/bk-\\xff/bookie"),
            (b"a\\b", "a\\\\b"),
            (b"a\\xff", "a\\\\xff"),
            (b"\xe2\x82/\xc3\xa9\xed\xa0\x80", "\\xe2\\x82/\u{e9}\\xed\\xa0\\x80"),
            (b"\xff\\\xfe", "\\xff\\\\\\xfe"),
        ];
        for (raw, text) in cases {
            let p = path(raw);
            assert_eq!(escape_path(&p), text, "{raw:?}");
            assert_eq!(unescape_path(text).as_deref(), Some(p.as_path()), "{text}");
        }
        assert_eq!(unescape_path("a\\q"), None);
        assert_eq!(unescape_path("a\\x4"), None);
        assert_eq!(unescape_path("a\\"), None);
    }
}
