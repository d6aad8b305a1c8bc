//! Bookie files: entry logs (legacy and direct-I/O layouts), journals, ledger index
//! files, `lastMark` and `lastId` (FORMATS.md §3-6).
//!
//! Readers work on a byte slice: a mapped file ([`ByteSource::open`]) or any buffer.
//! Offsets are absolute file offsets (`u64` in the API), so files over 4 GiB work.
//!
//! Scans never stop at damage. A torn tail, a bad size field, zeros or garbage
//! become a [`Gap`] naming its byte span and what is wrong, and the scan resumes at
//! the next position where a record and the records after it frame (see
//! `framing.rs` for the exact rules). Scans can be restricted to byte ranges; ranges
//! that tile a file yield each record exactly once.

mod framing;
mod plausible;
mod runs;

pub mod entry_log;
pub mod gap;
pub mod index_file;
pub mod journal;
pub mod last_mark;
pub mod location;
pub mod source;

pub use entry_log::{EntryLog, EntryLogHeader, EntryLogItem, EntryLogLayout, EntryLogWriter, LedgersMap};
pub use framing::ScanOptions;
pub use gap::{Gap, GapKind};
pub use index_file::{IndexFile, IndexHeader};
pub use journal::{Journal, JournalHeader, JournalItem, JournalRecord, JournalWriter};
pub use last_mark::LastMark;
pub use location::Location;
pub use source::ByteSource;

/// Parses a file-name id the way BookKeeper does (`Long.parseLong(s, 16)`):
/// hex digits of either case, no prefix, within the signed 64-bit range.
pub(crate) fn parse_hex_id(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    i64::from_str_radix(s, 16).ok()
}
