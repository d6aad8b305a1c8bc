//! Entry logs (FORMATS.md §3 and §4): the legacy `DefaultEntryLogger` layout and the
//! direct-I/O `DirectEntryLogger` layout, told apart by the dummy record the direct
//! writer puts at offset 1024.

mod ledgers_map;
mod scan;
mod writer;

use std::path::Path;

pub use ledgers_map::{LedgerSize, LedgersMap, LedgersMapSource, LEDGERS_MAP_MAX_BATCH};
pub use scan::{EntryLogCursor, EntryLogItem, EntryLogScanner, LedgersMapRecord, LogEntry};
pub use writer::EntryLogWriter;

use crate::bytes::{i32_at, i64_at, slice_at};
use crate::error::{Error, ErrorKind, Result};
use crate::files::framing::ScanOptions;
use crate::files::gap::{Gap, GapKind};

pub const MAGIC: [u8; 4] = *b"BKLO";
/// Header size of the legacy layout, and where its first record starts.
pub const LEGACY_HEADER_LEN: u64 = 1024;
/// Header block of the direct layout; its first record starts here.
pub const DIRECT_HEADER_LEN: u64 = 4096;
/// Size of the dummy record at offset 1024 of a direct log (4096 - 1024 - 4).
pub const DIRECT_DUMMY_RECORD_SIZE: i32 = 3068;
/// Bytes of the header that carry fields; the rest is zeros.
pub const HEADER_FIELDS_LEN: usize = 20;

/// Which writer laid the file out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryLogLayout {
    /// `DefaultEntryLogger`: 1024-byte header, records packed from 1024.
    Legacy,
    /// `DirectEntryLogger`: 4096-byte header block, records from 4096, 0xF0 padding
    /// at each flush, zeros after the data.
    Direct,
}

impl EntryLogLayout {
    /// Detects the layout from the dummy record a direct log has at 1024.
    pub fn detect(data: &[u8]) -> EntryLogLayout {
        let dummy = i32_at(data, LEGACY_HEADER_LEN as usize).ok() == Some(DIRECT_DUMMY_RECORD_SIZE)
            && i64_at(data, LEGACY_HEADER_LEN as usize + 4).ok() == Some(-1);
        if dummy {
            EntryLogLayout::Direct
        } else {
            EntryLogLayout::Legacy
        }
    }

    pub const fn data_start(self) -> u64 {
        match self {
            EntryLogLayout::Legacy => LEGACY_HEADER_LEN,
            EntryLogLayout::Direct => DIRECT_HEADER_LEN,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            EntryLogLayout::Legacy => "legacy",
            EntryLogLayout::Direct => "direct",
        }
    }
}

/// The header fields (the same 20 leading bytes in both layouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryLogHeader {
    /// 0 = before 4.4 (no ledgers map), 1 = with ledgers map.
    pub version: i32,
    /// Offset of the first ledgers-map record; 0 while the log was never rolled.
    pub ledgers_map_offset: i64,
    /// Number of distinct ledgers in the map.
    pub ledgers_count: i32,
    pub layout: EntryLogLayout,
}

impl EntryLogHeader {
    /// Parses and checks the header: magic `BKLO` and version 0 or 1.
    pub fn parse(data: &[u8]) -> Result<EntryLogHeader> {
        let head = slice_at(data, 0, HEADER_FIELDS_LEN)
            .map_err(|e| e.with_detail(format!("entry log of {} bytes is shorter than its header fields", data.len())))?;
        if head[..4] != MAGIC {
            return Err(crate::files::bad_magic("entry log magic", &head[..4], &MAGIC));
        }
        let version = i32_at(data, 4)?;
        if !(0..=1).contains(&version) {
            return Err(Error::new(ErrorKind::UnsupportedVersion, 4,
                format!("entry log header version {version}; known versions are 0 and 1")));
        }
        Ok(EntryLogHeader {
            version,
            ledgers_map_offset: i64_at(data, 8)?,
            ledgers_count: i32_at(data, 16)?,
            layout: EntryLogLayout::detect(data),
        })
    }

    /// Whether the header points at a ledgers map (what BookKeeper requires before reading one).
    pub fn has_ledgers_map(&self) -> bool {
        self.version >= 1 && self.ledgers_map_offset != 0
    }
}

/// An entry log held in memory or mapped: header, scans, ledgers map, reads by location.
#[derive(Debug, Clone, Copy)]
pub struct EntryLog<'a> {
    data: &'a [u8],
    layout: EntryLogLayout,
}

impl<'a> EntryLog<'a> {
    /// Never fails: a damaged header is reported by [`EntryLog::header`] and, as a
    /// gap, by the scans, which still read every record they can frame.
    pub fn new(data: &'a [u8]) -> EntryLog<'a> {
        EntryLog { data, layout: EntryLogLayout::detect(data) }
    }

    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    pub fn len(&self) -> u64 {
        self.data.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn layout(&self) -> EntryLogLayout {
        self.layout
    }

    pub fn header(&self) -> Result<EntryLogHeader> {
        EntryLogHeader::parse(self.data)
    }

    /// A damaged or short header, as the gap a scan reports first.
    pub(crate) fn header_gap(&self) -> Option<Gap> {
        let len = self.data.len() as u64;
        let data_start = self.layout.data_start();
        if len == 0 {
            return None;
        }
        let kind = if len < data_start {
            GapKind::TornHeader
        } else if EntryLogHeader::parse(self.data).is_err() {
            GapKind::BadHeader
        } else {
            return None;
        };
        Some(Gap { offset: 0, len: len.min(data_start), kind })
    }

    /// Every record, gap and map record from the first record to the end of the file.
    pub fn scan(&self, options: &ScanOptions) -> EntryLogScanner<'a> {
        self.scan_range(options, 0, u64::MAX)
    }

    /// The records of the byte range `[start, end)`: each record belongs to the range
    /// holding its size field, and ranges that tile the file yield each record once
    /// (see [`crate::files`] for the rule at range edges). The scan reads past `end`
    /// to finish the last record.
    pub fn scan_range(&self, options: &ScanOptions, start: u64, end: u64) -> EntryLogScanner<'a> {
        EntryLogScanner::new(self.data, EntryLogCursor::new(self, options, start, end))
    }

    /// The ledgers map from the trailer, or from a scan when the trailer is missing
    /// or inconsistent (what BookKeeper's `getEntryLogMetadata` does).
    pub fn ledgers_map(&self, options: &ScanOptions) -> LedgersMap {
        ledgers_map::ledgers_map(self, options)
    }

    /// Only the trailer: an error says why it cannot be used.
    pub fn read_ledgers_map_trailer(&self) -> Result<Vec<LedgerSize>> {
        ledgers_map::read_trailer(self)
    }

    /// The entry whose bytes start at `entry_offset` (the offset half of a location,
    /// just after the size field), as BookKeeper's `readEntry` finds it.
    pub fn entry_at(&self, entry_offset: u64) -> Result<&'a [u8]> {
        if entry_offset < 4 {
            return Err(Error::invalid_argument(format!("entry offset {entry_offset} leaves no room for a size field")));
        }
        let at = usize::try_from(entry_offset - 4).map_err(|_| Error::truncated(entry_offset - 4, 4, 0))?;
        let n = i32_at(self.data, at)?;
        if n < crate::entry::V1_HEADER_LEN as i32 {
            return Err(Error::corrupt(at as u64, format!("entry size field holds {n}, below the 32-byte entry header")));
        }
        slice_at(self.data, at + 4, n as usize)
            .map_err(|e| e.with_detail(format!("entry of {n} bytes runs past the end of the {}-byte log", self.data.len())))
    }
}

/// The file name BookKeeper gives entry log `log_id`: lowercase hex, `.log`.
pub fn file_name(log_id: i64) -> String {
    format!("{log_id:x}.log")
}

/// The log id in an entry log's file name (`<hex>.log`, either case), or `None`.
pub fn log_id_from_path(path: &Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_suffix(".log")?;
    crate::files::parse_hex_id(hex)
}
