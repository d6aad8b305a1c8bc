//! Bookie files: entry logs (legacy and direct-I/O layouts), journals, ledger index
//! files, `lastMark` and `lastId` (docs/formats.md#entry-logs and the sections after it).
//!
//! Readers read through a [`ReadAt`](source::ReadAt) source (a file read with
//! `pread`, bytes in memory), a window at a time (`window.rs`); the in-memory scans
//! (`EntryLog::scan`, `Journal::scan`) take a byte slice and run the readers' scan
//! on it in place, so both frame a file alike. Offsets are absolute file offsets
//! (`u64` in the API), so files over 4 GiB work.
//!
//! Scans never stop at damage. A torn tail, a bad size field, zeros or garbage
//! become a [`Gap`] naming its byte span and what is wrong, and the scan resumes at
//! the next position where a record and the records after it frame (see
//! `framing.rs` for the exact rules). Scans can be restricted to byte ranges; ranges
//! that tile a file yield each record exactly once.

mod framing;
pub(crate) mod plausible;
mod runs;
pub mod scan;
pub mod window;

pub mod entry_log;
pub mod gap;
pub mod index_file;
pub mod journal;
pub mod last_mark;
pub mod location;
pub mod source;

pub use entry_log::{EntryLog, EntryLogHeader, EntryLogItem, EntryLogLayout, EntryLogWriter, LedgersMap};
pub use gap::{Gap, GapKind};
pub use index_file::{IndexFile, IndexHeader};
pub use journal::{Journal, JournalHeader, JournalItem, JournalRecord, JournalWriter};
pub use last_mark::LastMark;
pub use location::Location;
pub use source::{FileSource, MemorySource, ReadAt};

use crate::error::Error;

/// Parses a file-name id the way BookKeeper does (`Long.parseLong(s, 16)`):
/// hex digits of either case, no prefix, within the signed 64-bit range.
pub(crate) fn parse_hex_id(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    i64::from_str_radix(s, 16).ok()
}

/// The error for a file whose first bytes are not the `expected` magic. Bytes are
/// shown in hex (a magic of control bytes or zeros would print as nothing), and also
/// as text when they are printable ASCII.
pub(crate) fn bad_magic(what: &str, found: &[u8], expected: &[u8]) -> Error {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ");
    let text = |b: &[u8]| {
        if !b.is_empty() && b.iter().all(|x| x.is_ascii_graphic() || *x == b' ') {
            format!(" \"{}\"", String::from_utf8_lossy(b))
        } else {
            String::new()
        }
    };
    Error::corrupt(0, format!("{what} is {}{} (expected{}, {})", hex(found), text(found), text(expected), hex(expected)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_magic_shows_every_byte() {
        let e = bad_magic("entry log magic", &[0x00, 0x01, 0xfe, 0x41], b"BKLO");
        assert_eq!(e.detail, "entry log magic is 00 01 fe 41 (expected \"BKLO\", 42 4b 4c 4f)");
        assert_eq!(e.offset, 0);
        let e = bad_magic("index signature", b"BKLG", b"BKLE");
        assert_eq!(e.detail, "index signature is 42 4b 4c 47 \"BKLG\" (expected \"BKLE\", 42 4b 4c 45)");
    }
}
