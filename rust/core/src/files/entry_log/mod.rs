//! Entry logs (docs/formats.md#entry-logs): the legacy `DefaultEntryLogger` layout and the
//! direct-I/O `DirectEntryLogger` layout, told apart by the dummy record the direct
//! writer puts at offset 1024.

mod ledgers_map;
mod scan;
mod writer;

use std::collections::BTreeMap;
use std::path::Path;

pub use ledgers_map::{LedgerSize, LedgersMap, LedgersMapSource, LEDGERS_MAP_MAX_BATCH};
pub use scan::{EntryLogItem, EntryLogScanner, LedgersMapRecord, LogEntry};
pub(crate) use scan::EntryLogFraming;
pub use writer::EntryLogWriter;

use crate::bytes::{i32_at, i64_at, slice_at};
use crate::digest_check::DigestKeys;
use crate::error::{Error, ErrorKind, Result};
use crate::files::framing::RecordWalk;
use crate::files::scan::{LentScan, RecordScanSettings};
use crate::files::window::Window;
use crate::ledger_digest_settings::LedgerDigestSettings;
use crate::files::gap::{Gap, GapKind};
use crate::files::plausible::{entry_plausibility, Plausibility};
use crate::files::source::{read_vec_at, ReadAt, SliceSource};

pub const MAGIC: [u8; 4] = *b"BKLO";
/// Header size of the legacy layout, and where its first record starts.
pub const LEGACY_HEADER_LEN: u64 = 1024;
/// Header block of the direct layout; its first record starts here.
pub const DIRECT_HEADER_LEN: u64 = 4096;
/// Size of the dummy record at offset 1024 of a direct log (4096 - 1024 - 4).
pub const DIRECT_DUMMY_RECORD_SIZE: i32 = 3068;
/// Bytes after 1024 that layout detection looks at: up to the first record of a
/// direct log and its size field.
/// A record's size field and the longest entry header: what [`record_at`] judges.
pub(crate) const RECORD_HEAD: usize = 4 + 41;
/// From 1024 to the head of a record at 4096.
const DETECT_LEN: usize = (DIRECT_HEADER_LEN - LEGACY_HEADER_LEN) as usize + RECORD_HEAD;
/// The last bytes of a direct log's header block: zeros, unless damaged.
const HEADER_TAIL: usize = 1024;
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

/// The bytes from 1024 that [`EntryLogLayout::detect`] looks at: the start of the
/// dummy record, and only when those are zeros (a damaged dummy record) the rest up
/// to a direct log's first record (a source that reads in small requests is asked
/// for no more than it needs).
fn detection_bytes(source: &dyn ReadAt) -> Result<Vec<u8>> {
    // A size field and the longest header: a direct log's dummy record or a legacy
    // log's first record settle it (and a small read is all a source that fails
    // large ones is asked for), anything else needs the block up to 4096.
    let mut bytes = read_vec_at(source, LEGACY_HEADER_LEN, RECORD_HEAD)?;
    if bytes.len() == RECORD_HEAD && !dummy_record_at(&bytes, 0) && !record_at(&bytes, 0) {
        bytes.append(&mut read_vec_at(source, LEGACY_HEADER_LEN + RECORD_HEAD as u64, DETECT_LEN - RECORD_HEAD)?);
    }
    Ok(bytes)
}

/// Whether a direct log's dummy record (3068 bytes of ledger -1) starts at `p`.
fn dummy_record_at(data: &[u8], p: usize) -> bool {
    i32_at(data, p).ok() == Some(DIRECT_DUMMY_RECORD_SIZE) && i64_at(data, p + 4).ok() == Some(-1)
}

/// Whether a record with a strictly plausible entry header starts at `p`.
pub(crate) fn record_at(data: &[u8], p: usize) -> bool {
    let Ok(n) = i32_at(data, p) else { return false };
    let head = data.get(p + 4..).unwrap_or_default();
    n > 0 && head.len() >= RECORD_HEAD - 4 && entry_plausibility(&head[..RECORD_HEAD - 4], n as usize, true) == Plausibility::Plausible
}

impl EntryLogLayout {
    /// [`EntryLogLayout::detect`] on a source, reading what it looks at.
    pub fn detect_in(source: &dyn ReadAt) -> EntryLogLayout {
        let mut probe = vec![0u8; LEGACY_HEADER_LEN as usize];
        match detection_bytes(source) {
            Ok(mut block) => {
                probe.append(&mut block);
                EntryLogLayout::detect(&probe)
            }
            Err(_) => EntryLogLayout::Legacy,
        }
    }

    /// Detects the layout from the dummy record a direct log has at 1024, or, when
    /// that is damaged, from where the records start: nothing but zeros from 1024
    /// and a record at 4096 make a direct log (a legacy log's first record is at
    /// 1024), and so do no record at 1024, a record at 4096 and zeros in the last
    /// KiB before it (the dummy record overwritten, the rest of the block intact).
    pub fn detect(data: &[u8]) -> EntryLogLayout {
        let (legacy, direct) = (LEGACY_HEADER_LEN as usize, DIRECT_HEADER_LEN as usize);
        let dummy = dummy_record_at(data, legacy);
        let records_at_4096 = data.len() >= direct + 4
            && data[legacy..direct].iter().all(|&b| b == 0)
            && data[direct..direct + 4] != [0; 4];
        let block_tail_zeros = data.len() >= direct && data[direct - HEADER_TAIL..direct].iter().all(|&b| b == 0);
        let moved_records = block_tail_zeros && !record_at(data, legacy) && record_at(data, direct);
        if dummy || records_at_4096 || moved_records {
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

    /// Every record, gap and map record from the first record to the end of the
    /// file, as the readers frame them (`read_entry_log`). Entries are listed whatever
    /// their digests say; `digests` confirm records around damage.
    pub fn scan(&self, digests: &LedgerDigestSettings) -> EntryLogScanner<'a> {
        self.scan_range(digests, 0, u64::MAX)
    }

    /// The records of the byte range `[start, end)`: each record belongs to the range
    /// holding its size field, and ranges that tile the file yield each record once
    /// (see [`crate::files`] for the rule at range edges). The scan reads past `end`
    /// to finish the last record.
    pub fn scan_range(&self, digests: &LedgerDigestSettings, start: u64, end: u64) -> EntryLogScanner<'a> {
        let settings = RecordScanSettings { start, end, verify: false, ..RecordScanSettings::new(digests.clone()) };
        let (scan, _) = open_scan(Window::lent(self.data), &settings).expect("bytes in memory read without errors");
        EntryLogScanner::new(self.data, LentScan::new(scan))
    }

    /// The ledgers map from the trailer, or from a scan when the trailer is missing
    /// or inconsistent (what BookKeeper's `getEntryLogMetadata` does): what
    /// [`ledgers_map_of`] gives for the same bytes and digests.
    pub fn ledgers_map(&self, digests: &LedgerDigestSettings) -> LedgersMap {
        ledgers_map_in(Window::lent(self.data), digests).expect("bytes in memory read without errors")
    }

    /// Only the trailer: an error says why it cannot be used.
    pub fn read_ledgers_map_trailer(&self) -> Result<Vec<LedgerSize>> {
        ledgers_map::read_trailer(&SliceSource(self.data), &self.header()?, self.layout)
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

/// An entry log opened for a scan: its header (or why it is damaged) and layout.
#[derive(Debug, Clone)]
pub struct EntryLogFacts {
    pub len: u64,
    pub header: std::result::Result<EntryLogHeader, Error>,
    /// The header's layout, or (when it is damaged) the one its first record
    /// supports: a direct log keeps its dummy record at 1024 whatever happens to the
    /// 20 bytes before it.
    pub layout: EntryLogLayout,
}

/// The scan of the entry log in `source`. Never refuses a file: a damaged or short
/// header is the scan's first row (`bad_header`, `torn_header`; an empty file is a
/// torn header of 0 bytes), and the records after it are read as the layout they
/// support; a header that places the ledgers map past the end of the file gives a
/// `truncated` row at the end.
pub(crate) fn open_scan<'a>(
    window: Window<'a>,
    settings: &crate::files::scan::RecordScanSettings,
) -> Result<(crate::files::scan::RecordScan<'a, EntryLogFraming>, EntryLogFacts)> {
    let source = window.source().clone();
    let len = source.len();
    let header = read_header(&*source);
    let layout = match &header {
        Ok(h) => h.layout,
        // Unreadable is not damaged: an I/O error, not a `bad_header` row.
        Err(e) if e.kind == ErrorKind::Io => return Err(e.clone()),
        Err(_) => EntryLogLayout::detect_in(&*source),
    };
    let data_start = layout.data_start();
    let framing = EntryLogFraming::new(&*source, layout, header.as_ref().ok(), DigestKeys::new(&settings.digests));
    let mut walk = RecordWalk::new(len as usize, data_start as usize, settings.start, settings.end);
    let from_start = settings.start == 0 && settings.end > 0;
    let header_gap = if len < data_start {
        let detail = if len == 0 {
            "empty file: no entry log header".to_string()
        } else {
            format!("the file is {len} bytes, shorter than the {data_start}-byte header of a {} log", layout.as_str())
        };
        Some((GapKind::TornHeader, detail))
    } else {
        header.as_ref().err().map(|e| (GapKind::BadHeader, format!("not an entry log header: {}", e.detail)))
    };
    let header_gap = header_gap.filter(|_| from_start);
    if let Some((kind, _)) = &header_gap {
        walk.push_front(Gap { offset: 0, len: len.min(data_start), kind: *kind });
    }
    let mut scan = crate::files::scan::RecordScan::new(window, framing, walk, settings);
    scan.warm_up_from(data_start as usize, settings);
    if let Some((kind, detail)) = header_gap {
        scan.describe(0, kind, detail);
    }
    if let Ok(h) = &header {
        if let Err(e) = ledgers_map::map_offset(h, layout, len) {
            // The map is past the end: the log was cut short after it was rolled.
            // (Said once, by the range the end of the file belongs to.)
            if e.kind == ErrorKind::Truncated && settings.start < len && settings.end >= len && len >= data_start {
                let missing = (h.ledgers_map_offset as u64).saturating_sub(len).max(1);
                scan.add_trailing(Gap { offset: len, len: missing, kind: GapKind::Truncated }, e.detail);
            }
        }
    }
    Ok((scan, EntryLogFacts { len, header, layout }))
}

/// The ledgers map of the entry log in `source`: its trailer when that is usable
/// (see `ledgers_map.rs` for what is checked), else the sizes a scan of the records
/// finds, with the reason. `password` lets the scan confirm HMAC entries around
/// damage.
pub fn ledgers_map_of(source: std::sync::Arc<dyn ReadAt>, password: &[u8]) -> Result<LedgersMap> {
    let digests = LedgerDigestSettings::new(crate::digest_policy::DigestPolicy::Auto, password);
    ledgers_map_in(Window::new(source)?, &digests)
}

/// The ledgers map of the entry log `window` reads (see [`ledgers_map_of`]).
fn ledgers_map_in(window: Window<'_>, digests: &LedgerDigestSettings) -> Result<LedgersMap> {
    use crate::files::scan::{SingleRow, ScanSink, ScannedEntry};
    use crate::files::window::View;

    /// Adds up each ledger's records (entry length + 4, as BookKeeper counts).
    struct Sizes {
        sizes: BTreeMap<i64, i64>,
        rows: usize,
    }

    impl ScanSink for Sizes {
        fn rows(&self) -> usize {
            self.rows
        }

        fn entries(&mut self, _: &View<'_>, run: &[ScannedEntry]) {
            for e in run {
                *self.sizes.entry(e.checked.header.ledger_id).or_insert(0) += e.len as i64 + 4;
            }
        }

        fn row(&mut self, _: &View<'_>, row: SingleRow<'_>) {
            let (ledger, len) = match row {
                SingleRow::FlaggedEntry { entry, .. } => (Some(entry.checked.header.ledger_id), entry.len),
                SingleRow::UnframedEntry { bytes, .. } => {
                    (crate::entry::HeaderView::read(bytes).map(|(h, _)| h.ledger_id()), bytes.len())
                }
                _ => (None, 0),
            };
            if let Some(l) = ledger {
                *self.sizes.entry(l).or_insert(0) += len as i64 + 4;
            }
        }
    }

    let source = window.source().clone();
    let header = read_header(&*source);
    let layout = match &header {
        Ok(h) => h.layout,
        // Unreadable is not damaged: an I/O error, not a `bad_header` row.
        Err(e) if e.kind == ErrorKind::Io => return Err(e.clone()),
        Err(_) => EntryLogLayout::detect_in(&*source),
    };
    let scan = || {
        let settings = RecordScanSettings { verify: false, ..RecordScanSettings::new(digests.clone()) };
        let (mut scan, _) = open_scan(window, &settings)?;
        let mut sizes = Sizes { sizes: BTreeMap::new(), rows: 0 };
        while scan.fill(&mut sizes, usize::MAX, usize::MAX)? == crate::files::scan::Fill::More {
            scan.finish_batch();
        }
        Ok(sizes.sizes)
    };
    ledgers_map::ledgers_map(&*source, header, layout, scan)
}

/// The header of the entry log in `source`, read and checked.
pub fn read_header(source: &dyn ReadAt) -> Result<EntryLogHeader> {
    let head = read_vec_at(source, 0, HEADER_FIELDS_LEN)?;
    let mut bytes = head;
    if bytes.len() == HEADER_FIELDS_LEN && bytes[..4] == MAGIC {
        // `parse` also detects the layout from the bytes after 1024.
        bytes.resize(LEGACY_HEADER_LEN as usize, 0);
        let mut tail = detection_bytes(source)?;
        bytes.append(&mut tail);
    }
    EntryLogHeader::parse(&bytes)
}

/// The entry whose bytes start at `entry_offset` of the log in `source` (the offset
/// half of a location, just after the size field), as BookKeeper's `readEntry` finds
/// it: the size field must hold at least a header and the entry must end inside the
/// file.
pub fn read_entry_at(source: &dyn ReadAt, entry_offset: u64) -> Result<Vec<u8>> {
    if entry_offset < 4 {
        return Err(Error::invalid_argument(format!("entry offset {entry_offset} leaves no room for a size field")));
    }
    let at = entry_offset - 4;
    let mut size = [0u8; 4];
    crate::files::source::read_exact_at(source, at, &mut size)?;
    let n = i32::from_be_bytes(size);
    if n < crate::entry::V1_HEADER_LEN as i32 {
        return Err(Error::corrupt(at, format!("entry size field holds {n}, below the 32-byte entry header")));
    }
    if entry_offset + n as u64 > source.len() {
        return Err(Error::truncated(entry_offset, n as u64, source.len().saturating_sub(entry_offset))
            .with_detail(format!("entry of {n} bytes runs past the end of the {}-byte log", source.len())));
    }
    read_vec_at(source, entry_offset, n as usize)
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
