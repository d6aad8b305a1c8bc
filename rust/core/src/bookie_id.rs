//! Bookie identifiers (BP-41, docs/formats.md#bookie-ids).
//!
//! Since 4.12 a bookie is named by an opaque [`BookieId`] string; before that the
//! name was always its `host:port` address, and such "legacy" ids still resolve to
//! an address by the old `BookieSocketAddress` parsing rules.

use std::fmt;

use crate::error::{Error, Result};
use crate::java_number::{parse_int, split_dropping_trailing_empty};

/// A validated bookie id, compared and hashed as the plain string (as in Java).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BookieId(String);

/// Whether BookKeeper's id regex `[a-zA-Z0-9:-_.\-]+` accepts this byte. The class
/// holds the *range* `:-_` (0x3A..=0x5F), so `; < = > ? @ [ \ ] ^` are allowed too;
/// with `-`, `.`, digits and letters that is 0x2D, 0x2E, 0x30..=0x5F and 0x61..=0x7A.
#[inline]
pub const fn is_bookie_id_byte(b: u8) -> bool {
    matches!(b, b'-' | b'.' | 0x30..=0x5F | b'a'..=b'z')
}

impl BookieId {
    /// `BookieId.parse`: non-empty, every character allowed by the regex, and not
    /// `readonly` in any case (that name is the registration directory of read-only bookies).
    pub fn parse(s: &str) -> Result<BookieId> {
        Self::parse_bytes(s.as_bytes())
    }

    /// Parses raw bytes (as stored in metadata). Anything outside ASCII is invalid,
    /// so the bytes need no separate UTF-8 check.
    pub fn parse_bytes(b: &[u8]) -> Result<BookieId> {
        if b.is_empty() {
            return Err(Error::invalid_argument("bookie id is empty"));
        }
        if let Some(pos) = b.iter().position(|&c| !is_bookie_id_byte(c)) {
            return Err(Error::invalid_argument(format!(
                "bookie id {:?} has a character outside [a-zA-Z0-9:-_.\\-] at position {pos}",
                String::from_utf8_lossy(b)
            )));
        }
        if b.eq_ignore_ascii_case(b"readonly") {
            return Err(Error::invalid_argument(format!(
                "bookie id {:?} is reserved (\"readonly\" in any case)",
                String::from_utf8_lossy(b)
            )));
        }
        // Every byte is ASCII, so this is valid UTF-8.
        Ok(BookieId(b.iter().map(|&c| c as char).collect()))
    }

    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address of a legacy `host:port` id, by `new BookieSocketAddress(String)`:
    /// split on `:` (trailing empty parts dropped), at least two parts, host = part 0,
    /// port = `Integer.parseInt(part 1)`, further parts ignored. So `"+3181"` and
    /// negative ports parse, `"h:"` does not, and an IPv6 literal does not work.
    pub fn to_socket_address(&self) -> Result<(String, i32)> {
        parse_socket_address(&self.0)
    }

    /// The legacy id of an address, `host:port` (`BookieSocketAddress.toBookieId`).
    pub fn from_socket_address(host: &str, port: i32) -> Result<BookieId> {
        BookieId::parse(&format!("{host}:{port}"))
    }
}

/// `new BookieSocketAddress(String)` on any string (see [`BookieId::to_socket_address`]).
pub fn parse_socket_address(s: &str) -> Result<(String, i32)> {
    let parts = split_dropping_trailing_empty(s, ':');
    if parts.len() < 2 {
        return Err(Error::invalid_argument(format!("{s:?} is not a host:port address")));
    }
    let port = parse_int(parts[1]).ok_or_else(|| {
        Error::invalid_argument(format!("{s:?} is not a host:port address: port {:?} is not a Java int", parts[1]))
    })?;
    Ok((parts[0].to_string(), port))
}

impl fmt::Display for BookieId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for BookieId {
    type Err = Error;

    fn from_str(s: &str) -> Result<BookieId> {
        BookieId::parse(s)
    }
}

impl AsRef<str> for BookieId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn accepts_the_regex_range_quirk() {
        for ok in [
            "127.0.0.1:3181", "bookie-1", "my_bookie", "a;b", "a@b", "[::1]:3181", "a\\b", "a^b", "a=b",
            "a?b", "-", ":", ".", "_", "readonly:3181", "READONLY1",
        ] {
            assert_eq!(BookieId::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn rejects_what_java_rejects() {
        for bad in ["a/b", "a b", "a,b", "a!b", "a#b", "a`b", "a{b", "é", "", "readonly", "READONLY", "ReadOnly", "bk\n", "bk\t1", "bk~1", "bk|1"] {
            let e = BookieId::parse(bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "{bad:?}");
        }
    }

    #[test]
    fn allowed_set_is_exactly_the_java_class() {
        let allowed: Vec<u8> = (0u8..=255).filter(|&b| is_bookie_id_byte(b)).collect();
        let mut expected = vec![b'-', b'.'];
        expected.extend(0x30..=0x5Fu8);
        expected.extend(b'a'..=b'z');
        assert_eq!(allowed, expected);
        assert!(BookieId::parse_bytes(&[b'a', 0xC3, 0xA9]).is_err());
    }

    #[test]
    fn socket_address_rules() {
        let addr = |s: &str| BookieId::parse(s).unwrap().to_socket_address();
        assert_eq!(addr("127.0.0.1:3181").unwrap(), ("127.0.0.1".to_string(), 3181));
        assert_eq!(parse_socket_address("h:+3181").unwrap(), ("h".to_string(), 3181));
        assert_eq!(parse_socket_address("h:3181 ").unwrap_err().kind, ErrorKind::InvalidArgument);
        assert_eq!(addr("h:-5").unwrap(), ("h".to_string(), -5));
        assert_eq!(addr("host:1:extra").unwrap(), ("host".to_string(), 1));
        assert_eq!(addr(":1").unwrap(), (String::new(), 1));
        for bad in ["h:", "bookie-1", "::::", "[::1]:3181", "h:port", "h:99999999999", "h::1"] {
            assert!(addr(bad).is_err(), "{bad:?}");
        }
        assert_eq!(BookieId::from_socket_address("h", 0).unwrap().as_str(), "h:0");
    }
}
