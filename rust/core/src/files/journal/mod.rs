//! Journal files (FORMATS.md §5): versions 1 to 6, `[i32 len][payload]` records,
//! padding records from version 5, and meta records (ledger key, fence, explicit LAC).

mod scan;
mod writer;

use std::path::Path;

pub use scan::{JournalCursor, JournalItem, JournalRecord, JournalRecordKind, JournalScanner};
pub use writer::JournalWriter;

use crate::bytes::i32_at;
use crate::error::{Error, ErrorKind, Result};
use crate::files::framing::ScanOptions;
use crate::files::gap::{Gap, GapKind};

pub const MAGIC: [u8; 4] = *b"BKLG";
/// Header size of versions 5 and 6 (`SECTOR_SIZE`).
pub const SECTOR_SIZE: u64 = 512;
/// Header size of versions 2 to 4: magic and version.
pub const VERSION_HEADER_LEN: u64 = 8;
/// Length field of a padding record (`PADDING_MASK`, 0xFFFFFF00).
pub const PADDING_MASK: i32 = -0x100;
pub const MIN_VERSION: i32 = 1;
pub const MAX_VERSION: i32 = 6;

/// Entry ids of meta records.
pub const METAENTRY_ID_LEDGER_KEY: i64 = -0x1000;
pub const METAENTRY_ID_FENCE_KEY: i64 = -0x2000;
/// Never written to a file; it only marks a position in the journal's queue.
pub const METAENTRY_ID_FORCE_LEDGER: i64 = -0x4000;
pub const METAENTRY_ID_LEDGER_EXPLICITLAC: i64 = -0x8000;

/// The format version and where records start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalHeader {
    pub version: i32,
    /// False for version 1 files, which start with records.
    pub has_magic: bool,
}

impl JournalHeader {
    /// Detects the version as `JournalChannel` does: `BKLG` and a version in the first
    /// 8 bytes, otherwise (no magic, or fewer than 8 bytes) version 1.
    pub fn parse(data: &[u8]) -> Result<JournalHeader> {
        if data.len() < VERSION_HEADER_LEN as usize || data[..4] != MAGIC {
            return Ok(JournalHeader { version: 1, has_magic: false });
        }
        let version = i32_at(data, 4)?;
        if !(MIN_VERSION..=MAX_VERSION).contains(&version) {
            return Err(Error::new(ErrorKind::UnsupportedVersion, 4,
                format!("journal version {version}; known versions are {MIN_VERSION} to {MAX_VERSION}")));
        }
        Ok(JournalHeader { version, has_magic: true })
    }

    /// Offset of the first record.
    pub fn data_start(&self) -> u64 {
        match self.version {
            v if v >= 5 => SECTOR_SIZE,
            v if v >= 2 => VERSION_HEADER_LEN,
            _ => 0,
        }
    }

    /// Whether flushes are padded to the alignment (version 5 and later).
    pub fn has_padding(&self) -> bool {
        self.version >= 5
    }
}

/// A journal held in memory or mapped.
#[derive(Debug, Clone, Copy)]
pub struct Journal<'a> {
    data: &'a [u8],
    header: JournalHeader,
}

impl<'a> Journal<'a> {
    /// Fails only on a version this library does not know (as BookKeeper does).
    pub fn new(data: &'a [u8]) -> Result<Journal<'a>> {
        Ok(Journal { data, header: JournalHeader::parse(data)? })
    }

    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    pub fn header(&self) -> JournalHeader {
        self.header
    }

    pub(crate) fn header_gap(&self) -> Option<Gap> {
        let len = self.data.len() as u64;
        let start = self.header.data_start();
        (len > 0 && len < start).then_some(Gap { offset: 0, len, kind: GapKind::TornHeader })
    }

    /// Every record and gap from the first record to the end of the file.
    pub fn scan(&self, options: &ScanOptions) -> JournalScanner<'a> {
        self.scan_range(options, 0, u64::MAX)
    }

    /// Replay from a known record boundary, such as a `lastMark` offset (offsets before
    /// the first record read from the first record, as BookKeeper does).
    pub fn scan_from(&self, options: &ScanOptions, offset: u64) -> JournalScanner<'a> {
        let start = offset.max(self.header.data_start());
        JournalScanner::new(self.data, JournalCursor::resume_at(self, options, start))
    }

    /// The records of the byte range `[start, end)`; ranges that tile the file yield
    /// each record once (see [`crate::files`]).
    pub fn scan_range(&self, options: &ScanOptions, start: u64, end: u64) -> JournalScanner<'a> {
        JournalScanner::new(self.data, JournalCursor::new(self, options, start, end))
    }
}

/// The file name BookKeeper gives journal `journal_id`: lowercase hex, `.txn`.
pub fn file_name(journal_id: i64) -> String {
    format!("{journal_id:x}.txn")
}

/// The journal id in a journal's file name (`<hex>.txn`), or `None`.
pub fn journal_id_from_path(path: &Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    crate::files::parse_hex_id(name.strip_suffix(".txn")?)
}
