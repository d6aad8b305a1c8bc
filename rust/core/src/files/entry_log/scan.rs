//! Scanning entry logs: records, ledgers-map records and gaps, zero-copy.

use std::sync::Arc;

use crate::bytes::i64_unchecked;
use crate::digest_check::DigestKeys;
use crate::digest::DigestType;
use crate::entry::{decode_entry, parse_header, Entry, EntryHeader};
use crate::error::Result;
use crate::files::entry_log::ledgers_map::{map_record_pairs, map_region, MAP_ENTRY_ID, MAP_LEDGER_ID};
use crate::files::entry_log::writer::PADDING_BYTE;
use crate::files::entry_log::{record_at, EntryLogHeader, EntryLogLayout, LEDGERS_MAP_MAX_BATCH, RECORD_HEAD};
use crate::files::framing::{Check, Framing, Step, MAX_SYNC_RECORD};
use crate::files::gap::{Gap, GapKind};
use crate::files::location::Location;
use crate::files::plausible::{entry_plausibility, torn_entry_plausibility, Plausibility};
use crate::files::source::ReadAt;
use crate::files::scan::{LentScan, OtherRecord, RecordFormat};
use crate::files::window::{Fetch, View};

/// The smallest record: a 32-byte V1 entry header with a DUMMY digest and no payload.
const MIN_RECORD: usize = crate::entry::V1_HEADER_LEN;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Entry,
    LedgersMap,
}

#[derive(Debug, Clone)]
pub(crate) struct EntryLogFraming {
    keys: Arc<DigestKeys>,
    /// Where the ledgers map the header points at starts, when the file bears the
    /// header out (map records frame there, or the map's first size field or the
    /// file's length is what the header's ledger count gives): from there on only
    /// map records may be, so a damaged map never reads as entries...
    map_start: Option<usize>,
    /// ...up to here, where map records listing every ledger the header counts end
    /// (what follows a complete map is no map: blocks of the log copied there, say).
    map_end: usize,
    /// 0xF0 in the direct layout, whose writer pads each flush to a 4 KiB boundary;
    /// none in the legacy layout, whose writer never pads.
    fill: Option<u8>,
}

impl EntryLogFraming {
    /// The framing of a log of `layout` whose header (when it parses) is `header`.
    pub(crate) fn new(source: &dyn ReadAt, layout: EntryLogLayout, header: Option<&EntryLogHeader>, keys: Arc<DigestKeys>) -> Self {
        let fill = match layout {
            EntryLogLayout::Direct => Some(PADDING_BYTE),
            EntryLogLayout::Legacy => None,
        };
        let (map_start, map_end) = match header.and_then(|h| trusted_map(source, h, layout, fill)) {
            Some((start, end)) => (Some(start), end),
            None => (None, usize::MAX),
        };
        EntryLogFraming { keys, map_start, map_end, fill }
    }

    /// Whether `p` lies in the map region (where only map records may be).
    fn in_map(&self, p: usize) -> bool {
        self.map_start.is_some_and(|m| p >= m) && p < self.map_end
    }
}

/// The header's map offset, when the file bears it out, and where the map ends when
/// its records list every ledger the header counts (see `map_start`).
fn trusted_map(source: &dyn ReadAt, header: &EntryLogHeader, layout: EntryLogLayout, fill: Option<u8>) -> Option<(usize, usize)> {
    if let Some((start, end, ledgers)) = map_region(source, header, layout, fill) {
        let complete = header.ledgers_count > 0 && ledgers == i64::from(header.ledgers_count);
        return Some((start, if complete { end } else { usize::MAX }));
    }
    let start = crate::files::entry_log::ledgers_map::map_offset(header, layout, source.len()).ok()??;
    let count = i64::from(header.ledgers_count);
    if count <= 0 {
        return None;
    }
    let batch = LEDGERS_MAP_MAX_BATCH as i64;
    let first_size = 20 + 16 * count.min(batch);
    let total = 24 * ((count + batch - 1) / batch) + 16 * count;
    let mut head = [0u8; RECORD_HEAD];
    let got = source.read_at(start, &mut head).unwrap_or(0);
    let size = i32::from_be_bytes(head[..4].try_into().expect("4 bytes"));
    // Neither the size nor the length is enough alone where an entry stands at the
    // offset (a block duplicated before the map moves entries there, and an entry's
    // size can be the one a map starts with). A map's first record starts with the
    // map's ledger id -1, or its size field is zeroed.
    let entry_there = got == head.len() && head[4] != 0xFF && record_at(&head, 0);
    let size_matches = got >= 4 && i64::from(size) == first_size && !entry_there;
    let looks_like_map = got >= 5 && (head[4] == 0xFF || head[..4] == [0; 4]);
    let length_matches = layout == EntryLogLayout::Legacy && source.len() - start == total as u64 && looks_like_map;
    (size_matches || length_matches).then_some((start as usize, usize::MAX))
}

pub(crate) fn map_verdict(head: &[u8], n: usize) -> Plausibility {
    if head.len() < 20 {
        return Plausibility::Short;
    }
    let k = i32::from_be_bytes(head[16..20].try_into().expect("4 bytes"));
    let ok = i64_unchecked(head, 0) == MAP_LEDGER_ID
        && i64_unchecked(head, 8) == MAP_ENTRY_ID
        && (1..=LEDGERS_MAP_MAX_BATCH as i32).contains(&k)
        && n == 20 + 16 * k as usize;
    if ok {
        Plausibility::Plausible
    } else {
        Plausibility::Implausible
    }
}

impl Framing for EntryLogFraming {
    type Kind = RecordKind;
    const PADDING_MARKER: bool = false;

    #[inline]
    fn fill(&self) -> Option<u8> {
        self.fill
    }

    #[inline]
    fn check(&self, v: &View<'_>, p: usize, strict: bool) -> Fetch<Check<RecordKind>> {
        let len = v.len();
        let n = v.i32_at(p)?;
        if n < MIN_RECORD as i32 || (strict && n as usize > MAX_SYNC_RECORD) {
            return Ok(Check::Bad(GapKind::BadSize));
        }
        let n = n as usize;
        let body = p + 4;
        let end = body.saturating_add(n);
        let head = v.get(body.min(len), len.min(body + 41).saturating_sub(body.min(len)))?;
        let (kind, verdict) = if head.first() == Some(&0xFF) {
            (RecordKind::LedgersMap, map_verdict(head, n))
        } else if self.in_map(p) && !head.is_empty() {
            return Ok(Check::Bad(GapKind::InsideMap));
        } else {
            (RecordKind::Entry, entry_plausibility(head, n, strict))
        };
        // A torn record is judged strictly: text or noise also frames leniently.
        let torn = || if kind == RecordKind::Entry { torn_entry_plausibility(head, n) } else { verdict };
        Ok(Check::framed(kind, verdict, torn, end, len, strict))
    }

    fn digest_keys(&self) -> &Arc<DigestKeys> {
        &self.keys
    }

    fn is_anchor(&self, kind: RecordKind) -> bool {
        kind == RecordKind::LedgersMap
    }

    fn is_entry(&self, kind: RecordKind) -> bool {
        kind == RecordKind::Entry
    }

    fn may_sync(&self, p: usize, kind: RecordKind) -> bool {
        match self.map_start {
            Some(start) if p > start && p < self.map_end => kind == RecordKind::LedgersMap,
            _ => true,
        }
    }

    fn reframe(&self, v: &View<'_>, p: usize, end: usize) -> Fetch<Option<RecordKind>> {
        if !self.keys.computes_any() || end < p + 4 + MIN_RECORD {
            return Ok(None);
        }
        let head = v.get(p + 4, 41.min(end - p - 4))?;
        let plausible = head.first() != Some(&0xFF) && entry_plausibility(head, end - p - 4, false) == Plausibility::Plausible;
        if !plausible {
            return Ok(None);
        }
        Ok(self.verifies(v, p, end, RecordKind::Entry)?.then_some(RecordKind::Entry))
    }
}

impl RecordFormat for EntryLogFraming {
    const ENTRY: RecordKind = RecordKind::Entry;

    fn other_record<'a>(&self, kind: RecordKind, _offset: usize, _bytes: &'a [u8]) -> Option<OtherRecord<'a>> {
        (kind == RecordKind::LedgersMap).then_some(OtherRecord::LedgersMap)
    }

    fn kind_of(_: &OtherRecord<'_>) -> RecordKind {
        RecordKind::LedgersMap
    }
}

/// One entry found in a log.
#[derive(Debug, Clone, Copy)]
pub struct LogEntry<'a> {
    /// Offset of the record's size field (what BookKeeper's scanner reports).
    pub offset: u64,
    pub header: EntryHeader,
    /// The digest type a V2 entry declares (V1 entries do not say).
    pub declared_digest: Option<DigestType>,
    /// The entry exactly as stored.
    pub bytes: &'a [u8],
    /// The size field was damaged: the entry was framed by where the next record
    /// starts, and a digest its ledger may have verified it.
    pub reframed: bool,
}

impl<'a> LogEntry<'a> {
    /// The stored entry length (the size field's value).
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Offset of the entry bytes: the offset half of a location.
    pub fn entry_offset(&self) -> u64 {
        self.offset + 4
    }

    /// Where an index would point for this entry, if the offset fits the 32 bits a location holds.
    pub fn location(&self, log_id: u32) -> Option<Location> {
        Location::new(log_id, self.entry_offset()).ok()
    }

    /// Frames header, digest and payload; errors carry file offsets.
    pub fn decode(&self, digest_type: Option<DigestType>) -> Result<Entry<'a>> {
        decode_entry(self.bytes, digest_type).map_err(|e| e.at_base(self.entry_offset()))
    }
}

/// One ledgers-map record of the trailer.
#[derive(Debug, Clone, Copy)]
pub struct LedgersMapRecord<'a> {
    /// Offset of the record's size field.
    pub offset: u64,
    /// The record's bytes after the size field.
    pub bytes: &'a [u8],
}

impl<'a> LedgersMapRecord<'a> {
    /// Number of (ledger id, size) pairs.
    pub fn len(&self) -> usize {
        (self.bytes.len() - 20) / 16
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The (ledger id, total bytes of that ledger's records) pairs, in file order.
    pub fn pairs(&self) -> impl Iterator<Item = (i64, i64)> + 'a {
        map_record_pairs(self.bytes)
    }
}

/// What a scan yields, in file order.
#[derive(Debug, Clone, Copy)]
pub enum EntryLogItem<'a> {
    Entry(LogEntry<'a>),
    LedgersMap(LedgersMapRecord<'a>),
    Gap(Gap),
}

impl EntryLogItem<'_> {
    /// Where the item starts: the size field of a record, the first byte of a gap.
    pub fn offset(&self) -> u64 {
        match self {
            EntryLogItem::Entry(e) => e.offset,
            EntryLogItem::LedgersMap(m) => m.offset,
            EntryLogItem::Gap(g) => g.offset,
        }
    }

    /// Bytes the item covers, size field included.
    pub fn span_len(&self) -> u64 {
        match self {
            EntryLogItem::Entry(e) => e.bytes.len() as u64 + 4,
            EntryLogItem::LedgersMap(m) => m.bytes.len() as u64 + 4,
            EntryLogItem::Gap(g) => g.len,
        }
    }
}

/// The item a step of the walk found, with its bytes.
pub(crate) fn item_of(data: &[u8], step: Step<RecordKind>) -> EntryLogItem<'_> {
    match step {
        Step::Gap(g) => EntryLogItem::Gap(g),
        Step::Record { offset, end, kind: RecordKind::LedgersMap, .. } => {
            EntryLogItem::LedgersMap(LedgersMapRecord { offset: offset as u64, bytes: &data[offset + 4..end] })
        }
        Step::Record { offset, end, kind: RecordKind::Entry, reframed } => {
            let bytes = &data[offset + 4..end];
            let (header, declared_digest) = parse_header(bytes).expect("the framing accepted this entry header");
            EntryLogItem::Entry(LogEntry { offset: offset as u64, header, declared_digest, bytes, reframed })
        }
    }
}

/// Iterator over the items of an entry log (or a byte range of it): the readers'
/// scan (`files/scan.rs`) run on bytes in hand.
#[derive(Debug)]
pub struct EntryLogScanner<'a> {
    data: &'a [u8],
    steps: LentScan<'a, EntryLogFraming>,
}

impl<'a> EntryLogScanner<'a> {
    pub(crate) fn new(data: &'a [u8], steps: LentScan<'a, EntryLogFraming>) -> Self {
        EntryLogScanner { data, steps }
    }
}

impl<'a> Iterator for EntryLogScanner<'a> {
    type Item = EntryLogItem<'a>;

    fn next(&mut self) -> Option<EntryLogItem<'a>> {
        Some(item_of(self.data, self.steps.next()?))
    }
}
