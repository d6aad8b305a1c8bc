//! `lastMark` (journal replay start, docs/formats.md#lastmark) and `lastId` (last entry log
//! id, docs/formats.md#lastid).

use crate::bytes::{i64_at, slice_at};
use crate::error::{Error, Result};

pub const LAST_MARK_LEN: usize = 16;

/// The position up to which the journal is known to be persisted in the ledger storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LastMark {
    pub journal_id: i64,
    pub offset: i64,
}

impl LastMark {
    /// Reads the 16 bytes BookKeeper writes. A shorter file is a `Truncated` error
    /// (BookKeeper logs it and ignores the file); bytes after the 16th are not read.
    pub fn parse(data: &[u8]) -> Result<LastMark> {
        slice_at(data, 0, LAST_MARK_LEN)
            .map_err(|e| e.with_detail(format!("lastMark of {} bytes is shorter than 16", data.len())))?;
        Ok(LastMark { journal_id: i64_at(data, 0)?, offset: i64_at(data, 8)? })
    }

    pub fn encode(&self) -> [u8; LAST_MARK_LEN] {
        let mut out = [0u8; LAST_MARK_LEN];
        out[..8].copy_from_slice(&self.journal_id.to_be_bytes());
        out[8..].copy_from_slice(&self.offset.to_be_bytes());
        out
    }
}

/// Parses a `lastId` file: the first line, lowercase or uppercase hex.
pub fn parse_last_id(data: &[u8]) -> Result<i64> {
    let line = data.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let text = std::str::from_utf8(line).map_err(|_| Error::corrupt(0, "lastId is not UTF-8 text"))?;
    let text = text.trim_end_matches('\r');
    crate::files::parse_hex_id(text)
        .ok_or_else(|| Error::corrupt(0, format!("lastId holds {text:?}, not a hexadecimal log id")))
}

/// The `lastId` text BookKeeper writes: lowercase hex and a newline.
pub fn encode_last_id(log_id: i64) -> String {
    format!("{log_id:x}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn last_mark_round_trip_and_short_files() {
        let m = LastMark { journal_id: 0x18bcfe56800, offset: 24064 };
        let b = m.encode();
        assert_eq!(b.iter().map(|x| format!("{x:02x}")).collect::<String>(), "0000018bcfe568000000000000005e00");
        assert_eq!(LastMark::parse(&b).unwrap(), m);
        for n in 0..16 {
            assert_eq!(LastMark::parse(&b[..n]).unwrap_err().kind, ErrorKind::Truncated);
        }
    }

    #[test]
    fn last_id_text() {
        assert_eq!(parse_last_id(b"2a\n").unwrap(), 42);
        assert_eq!(parse_last_id(b"FF").unwrap(), 255);
        assert_eq!(encode_last_id(42), "2a\n");
        for bad in [&b""[..], b"\n", b"xyz\n", b"-1\n", b"10000000000000000\n"] {
            assert_eq!(parse_last_id(bad).unwrap_err().kind, ErrorKind::Corrupt, "{bad:?}");
        }
    }
}
