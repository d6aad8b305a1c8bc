//! Journal files (docs/formats.md#journals): versions 1 to 6, `[i32 len][payload]` records,
//! padding records from version 5, and meta records (ledger key, fence, explicit LAC).

mod scan;
mod writer;

use std::path::Path;

pub use scan::{JournalItem, JournalRecord, JournalRecordKind, JournalScanner};
pub(crate) use scan::JournalFraming;
pub use writer::JournalWriter;

use crate::bytes::{i32_at, i64_at};
use crate::digest_check::DigestKeys;
use crate::files::plausible::MAX_SYNC_ENTRY_ID;
use crate::files::source::ReadAt;
use crate::error::{Error, ErrorKind, Result};
use crate::files::framing::RecordWalk;
use crate::files::scan::{LentScan, RecordScan, RecordScanSettings};
use crate::files::window::Window;
use crate::ledger_digest_settings::LedgerDigestSettings;
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

    /// Every record and gap from the first record to the end of the file, as the
    /// readers frame them (`read_journal`). Entries are listed whatever their digests
    /// say; `digests` confirm records around damage.
    pub fn scan(&self, digests: &LedgerDigestSettings) -> JournalScanner<'a> {
        self.scan_range(digests, 0, u64::MAX)
    }

    /// Replay from a known record boundary, such as a `lastMark` offset (offsets before
    /// the first record read from the first record, as BookKeeper does).
    pub fn scan_from(&self, digests: &LedgerDigestSettings, offset: u64) -> JournalScanner<'a> {
        let at = offset.max(self.header.data_start()).min(self.data.len() as u64) as usize;
        let settings = RecordScanSettings { verify: false, ..RecordScanSettings::new(digests.clone()) };
        let framing = JournalFraming::new(DigestKeys::new(digests));
        let walk = RecordWalk::in_step_at(self.data.len(), at);
        let scan = RecordScan::new(Window::lent(self.data), framing, walk, &settings);
        JournalScanner::new(self.data, LentScan::new(scan))
    }

    /// The records of the byte range `[start, end)`; ranges that tile the file yield
    /// each record once (see [`crate::files`]).
    pub fn scan_range(&self, digests: &LedgerDigestSettings, start: u64, end: u64) -> JournalScanner<'a> {
        let settings = RecordScanSettings { start, end, verify: false, ..RecordScanSettings::new(digests.clone()) };
        let (scan, _) = open_scan(Window::lent(self.data), &settings, None).expect("bytes in memory read without errors");
        JournalScanner::new(self.data, LentScan::new(scan))
    }
}

/// A journal opened for a scan: its header (or why it is damaged) and where its
/// records start.
#[derive(Debug, Clone)]
pub struct JournalFacts {
    pub len: u64,
    pub header: std::result::Result<JournalHeader, Error>,
    pub data_start: u64,
}

/// Reads the header the way a scan needs it: the header (version 1 when the file
/// starts without the magic), or why it is damaged; where the records start (for a
/// damaged header, what the file supports: 512 when the rest of the first sector is
/// zeros, as a version 5 or 6 writer leaves it, else 8); and the gap a scan reports
/// first, if any.
pub fn detect_header(source: &dyn ReadAt) -> (std::result::Result<JournalHeader, Error>, u64, Option<Gap>) {
    let len = source.len();
    if len == 0 {
        return (Err(Error::truncated(0, VERSION_HEADER_LEN, 0).with_detail("empty file: no journal header")), 0,
            Some(Gap { offset: 0, len: 0, kind: GapKind::TornHeader }));
    }
    // The first sector, and the first record of a version 5 or later journal after it.
    let read = match crate::files::source::read_vec_at(source, 0, SECTOR_SIZE as usize + 64) {
        Ok(read) => read,
        // Unreadable is not damaged: the caller says so as an I/O error.
        Err(e) if e.kind == ErrorKind::Io => return (Err(e), 0, None),
        Err(_) => Vec::new(),
    };
    let head = &read[..read.len().min(SECTOR_SIZE as usize)];
    let sector_zeros = head.len() == SECTOR_SIZE as usize && head[VERSION_HEADER_LEN as usize..].iter().all(|&b| b == 0);
    let inferred = if sector_zeros { SECTOR_SIZE } else { VERSION_HEADER_LEN };
    let bad = |e: Error, start: u64| (Err(e), start, Some(Gap { offset: 0, len: start.min(len), kind: GapKind::BadHeader }));
    if head.len() >= VERSION_HEADER_LEN as usize && head[..4] == MAGIC {
        return match JournalHeader::parse(head) {
            // Versions 5 and later pad the header to a sector with zeros: data there
            // says the version is damaged (an earlier version's journal has its first
            // record at 8) when a record starts at 8, or a record's ids follow a size
            // field there (the size itself damaged) and no record starts at 512, where
            // the version's first record would be.
            Ok(h) if h.data_start() == SECTOR_SIZE
                && head.len() == SECTOR_SIZE as usize
                && !sector_zeros
                && (record_at(head, 8) || (record_ids_at(head, 8) && !record_fits_at(&read, SECTOR_SIZE as usize, len))) =>
            {
                bad(
                    Error::corrupt(4, format!(
                        "the header says version {}, whose header is a sector of zeros after its first 8 bytes, \
                         but bytes 8 to 512 hold data: the version is damaged", h.version
                    )),
                    VERSION_HEADER_LEN,
                )
            }
            Ok(h) => {
                let start = h.data_start();
                let gap = (len < start).then_some(Gap { offset: 0, len, kind: GapKind::TornHeader });
                (Ok(h), start, gap)
            }
            Err(e) => bad(e, inferred),
        };
    }
    // No magic: a version 1 journal, unless this is a damaged magic (a bit or two
    // off, followed by a version a writer uses).
    let near_magic = head.len() >= VERSION_HEADER_LEN as usize
        && head[..4].iter().zip(MAGIC).map(|(a, b)| (a ^ b).count_ones()).sum::<u32>() <= 2;
    if near_magic {
        return bad(crate::files::bad_magic("journal magic", &head[..4], &MAGIC), inferred);
    }
    (Ok(JournalHeader { version: 1, has_magic: false }), 0, None)
}

/// Whether `head` holds a plausible record at `at` (its size field and the entry
/// header after it).
fn record_at(head: &[u8], at: usize) -> bool {
    let Ok(n) = i32_at(head, at) else { return false };
    n >= 16
        && matches!(
            scan::payload_plausibility(&head[at + 4..], n as usize, false).1,
            crate::files::plausible::Plausibility::Plausible | crate::files::plausible::Plausibility::Short
        )
}

/// Whether a non-zero size field at `at` is followed by ids a record has, whatever
/// the size says: a V1 ledger id and an entry id below 2^40, or a journal meta
/// record's id.
fn record_ids_at(head: &[u8], at: usize) -> bool {
    let (Ok(size), Ok(ledger_id), Ok(entry_id)) = (i32_at(head, at), i64_at(head, at + 4), i64_at(head, at + 12)) else { return false };
    let meta = [METAENTRY_ID_LEDGER_KEY, METAENTRY_ID_FENCE_KEY, METAENTRY_ID_FORCE_LEDGER, METAENTRY_ID_LEDGER_EXPLICITLAC];
    size != 0
        && ledger_id >= 0
        && ((0..MAX_SYNC_ENTRY_ID).contains(&entry_id) || meta.contains(&entry_id))
        && (ledger_id, entry_id) != (0, 0)
}

/// Whether `read` holds at `at` a record that fits in the file (`len` bytes) and
/// whose header the bytes read show to be plausible.
fn record_fits_at(read: &[u8], at: usize, len: u64) -> bool {
    let Ok(n) = i32_at(read, at) else { return false };
    n >= 16
        && (at as u64 + 4 + n as u64) <= len
        && matches!(scan::payload_plausibility(&read[at + 4..], n as usize, false).1, crate::files::plausible::Plausibility::Plausible)
}

/// The header of the journal in `source`, as `journal_header` reports it: the
/// version its magic gives, or version 1 for a file that starts with a record (or
/// with zeros: no records yet) instead; an empty file, or one that starts with
/// neither, is not a journal.
pub fn read_header(source: &dyn ReadAt) -> Result<JournalHeader> {
    let (header, _, _) = detect_header(source);
    let header = header?;
    if !header.has_magic {
        let head = crate::files::source::read_vec_at(source, 0, 64)?;
        // Zeros are a version 1 journal's end of data (its preallocated space).
        let plausible = i32_at(&head, 0).is_ok_and(|n| n == 0) || record_at(&head, 0);
        if !plausible {
            return Err(crate::files::bad_magic("journal magic", &head[..head.len().min(4)], &MAGIC)
                .with_detail(format!("not a journal: no {:?} magic, and no version 1 record at byte 0",
                    std::str::from_utf8(&MAGIC).unwrap_or_default())));
        }
    }
    Ok(header)
}

/// The scan of the journal in `source`. Never refuses a file: a damaged header is
/// the scan's first row and the records are read from where the file supports.
/// `last_mark`: the offset `lastMark` says this journal was written up to; records
/// ending before it give a `before_last_mark` row.
pub(crate) fn open_scan<'a>(
    window: Window<'a>,
    settings: &crate::files::scan::RecordScanSettings,
    last_mark: Option<u64>,
) -> Result<(crate::files::scan::RecordScan<'a, JournalFraming>, JournalFacts)> {
    let source = window.source().clone();
    let len = source.len();
    let (header, data_start, gap) = detect_header(&*source);
    match &header {
        // Unreadable is not damaged: an I/O error, not a `bad_header` row.
        Err(e) if e.kind == ErrorKind::Io => return Err(e.clone()),
        _ => {}
    }
    let framing = JournalFraming::new(DigestKeys::new(&settings.digests)).with_mark(last_mark);
    let mut walk = crate::files::framing::RecordWalk::new(len as usize, data_start as usize, settings.start, settings.end);
    // Said by the range the end of the file belongs to (which warmed up, so knows
    // where the records before it ended).
    let last_range = settings.end >= len && settings.start < len.max(1);
    let gap = gap.filter(|_| settings.start == 0 && settings.end > 0);
    if let Some(g) = gap {
        walk.push_front(g);
    }
    let mut scan = crate::files::scan::RecordScan::new(window, framing, walk, settings);
    scan.warm_up_from(data_start as usize, settings);
    if let Some(g) = gap {
        let detail = match (&header, g.kind) {
            (Err(e), _) => format!("not a journal header: {}", e.detail),
            (Ok(h), _) => format!("the file is {len} bytes, shorter than the {}-byte header of a version {} journal", h.data_start(), h.version),
        };
        scan.describe(0, g.kind, detail);
    }
    if let (Some(mark), true) = (last_mark, last_range) {
        scan.expect_data_to(mark.max(data_start) as usize);
    }
    Ok((scan, JournalFacts { len, header, data_start }))
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
