//! Scanning entry logs: records, ledgers-map records and gaps, zero-copy.

use crate::bytes::i64_unchecked;
use crate::digest::DigestType;
use crate::entry::{decode_entry, parse_header, Entry, EntryHeader};
use crate::error::Result;
use crate::files::entry_log::ledgers_map::{map_record_pairs, MAP_ENTRY_ID, MAP_LEDGER_ID};
use crate::files::entry_log::writer::PADDING_BYTE;
use crate::files::entry_log::{EntryLog, EntryLogLayout, LEDGERS_MAP_MAX_BATCH};
use crate::files::framing::{Chain, Check, Framing, ScanOptions, Step, MAX_SYNC_RECORD};
use crate::files::gap::{Gap, GapKind};
use crate::files::location::Location;
use crate::files::plausible::{entry_verdict, entry_verifies, Verdict};
use crate::files::runs::first_not;
use crate::files::verified_run::{RunCursor, VerifiedEntry, VerifiedRuns};

/// The smallest record: a 32-byte V1 entry header with a DUMMY digest and no payload.
const MIN_RECORD: usize = crate::entry::V1_HEADER_LEN;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Entry,
    LedgersMap,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct EntryLogFraming {
    options: ScanOptions,
    /// `[start, end)` of the ledgers map the header points at, when it frames.
    map_region: Option<(usize, usize)>,
    /// 0xF0 in the direct layout, whose writer pads each flush to a 4 KiB boundary;
    /// none in the legacy layout, whose writer never pads.
    fill: Option<u8>,
}

impl EntryLogFraming {
    fn new(log: &EntryLog<'_>, options: &ScanOptions) -> Self {
        let fill = match log.layout() {
            EntryLogLayout::Direct => Some(PADDING_BYTE),
            EntryLogLayout::Legacy => None,
        };
        let mut framing = EntryLogFraming { options: options.clone(), map_region: None, fill };
        framing.map_region = framing.find_map_region(log);
        framing
    }

    /// The run of map records (and, in the direct layout, 0xF0 padding between them)
    /// from the header's map offset. Inside it only map records may be sync points.
    fn find_map_region(&self, log: &EntryLog<'_>) -> Option<(usize, usize)> {
        let data = log.data();
        let header = log.header().ok()?;
        let start = usize::try_from(header.ledgers_map_offset).ok()?;
        if !header.has_ledgers_map() || start < log.layout().data_start() as usize {
            return None;
        }
        let mut end = start;
        let mut pos = start;
        while pos + 4 <= data.len() {
            if let Some(fill) = self.fill.filter(|&fill| data[pos] == fill) {
                pos = first_not(data, pos, data.len(), fill);
                continue;
            }
            match self.check(data, pos, true) {
                Check::Record { end: e, kind: RecordKind::LedgersMap } => {
                    end = e;
                    pos = e;
                }
                _ => break,
            }
        }
        (end > start).then_some((start, end))
    }
}

fn map_verdict(head: &[u8], n: usize) -> Verdict {
    if head.len() < 20 {
        return Verdict::Short;
    }
    let k = i32::from_be_bytes(head[16..20].try_into().expect("4 bytes"));
    let ok = i64_unchecked(head, 0) == MAP_LEDGER_ID
        && i64_unchecked(head, 8) == MAP_ENTRY_ID
        && (1..=LEDGERS_MAP_MAX_BATCH as i32).contains(&k)
        && n == 20 + 16 * k as usize;
    if ok {
        Verdict::Plausible
    } else {
        Verdict::Implausible
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
    fn check(&self, data: &[u8], p: usize, strict: bool) -> Check<RecordKind> {
        let len = data.len();
        let n = i32::from_be_bytes(data[p..p + 4].try_into().expect("4 bytes"));
        if n < MIN_RECORD as i32 || (strict && n as usize > MAX_SYNC_RECORD) {
            return Check::Bad(GapKind::BadSize);
        }
        let n = n as usize;
        let body = p + 4;
        let end = body.saturating_add(n);
        let head = &data[body.min(len)..len.min(body + 41)];
        let (kind, verdict) = if head.first() == Some(&0xFF) {
            (RecordKind::LedgersMap, map_verdict(head, n))
        } else {
            (RecordKind::Entry, entry_verdict(head, n, strict))
        };
        if end > len {
            return match verdict {
                Verdict::Implausible => Check::Bad(GapKind::BadSize),
                _ => Check::Torn,
            };
        }
        match verdict {
            Verdict::Plausible => Check::Record { end, kind },
            _ => Check::Bad(GapKind::BadRecord),
        }
    }

    fn verifies(&self, data: &[u8], p: usize, end: usize, kind: RecordKind) -> bool {
        kind == RecordKind::Entry && entry_verifies(&self.options, &data[p + 4..end])
    }

    fn is_anchor(&self, kind: RecordKind) -> bool {
        kind == RecordKind::LedgersMap
    }

    fn is_entry(&self, kind: RecordKind) -> bool {
        kind == RecordKind::Entry
    }

    fn may_sync(&self, p: usize, kind: RecordKind) -> bool {
        match self.map_region {
            Some((start, end)) if p > start && p < end => kind == RecordKind::LedgersMap,
            _ => true,
        }
    }

    fn reframe(&self, data: &[u8], p: usize, end: usize) -> Option<RecordKind> {
        let bytes = data.get(p + 4..end)?;
        let plausible = !self.options.digesters.is_empty()
            && bytes.first() != Some(&0xFF)
            && entry_verdict(&bytes[..bytes.len().min(41)], bytes.len(), false) == Verdict::Plausible;
        (plausible && entry_verifies(&self.options, bytes)).then_some(RecordKind::Entry)
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
    /// starts, and a configured digest verified it.
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

/// The state of a scan without a borrow of the bytes: keep it beside the mapped file
/// (or buffer) and call [`EntryLogCursor::next_item`] with the same bytes each time.
#[derive(Debug, Clone)]
pub struct EntryLogCursor {
    framing: EntryLogFraming,
    chain: Chain,
    runs: VerifiedRuns,
    data_len: usize,
}

impl EntryLogCursor {
    pub fn new(log: &EntryLog<'_>, options: &ScanOptions, start: u64, end: u64) -> EntryLogCursor {
        let framing = EntryLogFraming::new(log, options);
        let data = log.data();
        let mut chain = Chain::new(&framing, data, log.layout().data_start() as usize, start, end);
        if start == 0 && end > 0 {
            if let Some(g) = log.header_gap() {
                chain.push_front(g);
            }
        }
        let runs = VerifiedRuns::new(options);
        EntryLogCursor { framing, chain, runs, data_len: data.len() }
    }

    /// The next item; `data` must be the bytes the cursor was created for.
    pub fn next_item<'a>(&mut self, data: &'a [u8]) -> Option<EntryLogItem<'a>> {
        assert_eq!(data.len(), self.data_len, "an entry log cursor must be driven with the bytes it was created for");
        let step = self.chain.next(&self.framing, data)?;
        Some(match step {
            Step::Gap(g) => EntryLogItem::Gap(g),
            Step::Record { offset, end, kind: RecordKind::LedgersMap, .. } => {
                EntryLogItem::LedgersMap(LedgersMapRecord { offset: offset as u64, bytes: &data[offset + 4..end] })
            }
            Step::Record { offset, end, kind: RecordKind::Entry, reframed } => {
                let bytes = &data[offset + 4..end];
                let (header, declared_digest) =
                    parse_header(bytes).expect("the framing accepted this entry header");
                EntryLogItem::Entry(LogEntry { offset: offset as u64, header, declared_digest, bytes, reframed })
            }
        })
    }

    /// The entries from here that a configured CRC-32C or CRC-32 digest verifies,
    /// appended to `out`: at most `max`, and while their lengths add up to less than
    /// `budget` bytes. They are the items [`next_item`](Self::next_item) would yield
    /// (never reframed), found without looking ahead, their digests computed
    /// together. Appends nothing when the next item is anything else; `next_item`
    /// then takes it.
    pub fn next_verified<'a>(&mut self, data: &'a [u8], max: usize, budget: usize, out: &mut Vec<VerifiedEntry<'a>>) {
        assert_eq!(data.len(), self.data_len, "an entry log cursor must be driven with the bytes it was created for");
        self.runs.next(&mut self.chain, &self.framing, data, max, budget, out);
    }

    /// Offset the scan has reached (the next item starts here).
    pub fn position(&self) -> u64 {
        self.chain.position() as u64
    }
}

impl RunCursor for EntryLogCursor {
    fn frame_run(&mut self, data: &[u8], max: usize, budget: usize, out: &mut Vec<(usize, usize)>) {
        assert_eq!(data.len(), self.data_len, "an entry log cursor must be driven with the bytes it was created for");
        self.chain.entry_run(&self.framing, data, max, budget, out);
    }

    fn accept(&mut self, offset: usize, end: usize) {
        self.chain.accept_verified(offset, end);
    }

    fn next_verified<'a>(&mut self, data: &'a [u8], max: usize, budget: usize, out: &mut Vec<VerifiedEntry<'a>>) {
        EntryLogCursor::next_verified(self, data, max, budget, out);
    }
}

/// Iterator over the items of an entry log (or a byte range of it).
#[derive(Debug, Clone)]
pub struct EntryLogScanner<'a> {
    data: &'a [u8],
    cursor: EntryLogCursor,
}

impl<'a> EntryLogScanner<'a> {
    pub(crate) fn new(data: &'a [u8], cursor: EntryLogCursor) -> Self {
        EntryLogScanner { data, cursor }
    }

    /// Gives up the borrow, keeping the scan state.
    pub fn into_cursor(self) -> EntryLogCursor {
        self.cursor
    }
}

impl<'a> Iterator for EntryLogScanner<'a> {
    type Item = EntryLogItem<'a>;

    fn next(&mut self) -> Option<EntryLogItem<'a>> {
        self.cursor.next_item(self.data)
    }
}
