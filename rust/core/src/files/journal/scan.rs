//! Scanning journals: data records, meta records, padding records and gaps, zero-copy.

use crate::bytes::i64_unchecked;
use crate::digest::DigestType;
use crate::entry::{decode_entry, parse_header, Entry, EntryFormat, EntryHeader};
use crate::error::Result;
use crate::files::framing::{Chain, Check, Framing, ScanOptions, Step, MAX_SYNC_RECORD};
use crate::files::gap::{Gap, GapKind};
use crate::files::journal::{
    Journal, METAENTRY_ID_FENCE_KEY, METAENTRY_ID_LEDGER_EXPLICITLAC, METAENTRY_ID_LEDGER_KEY, PADDING_MASK,
    SECTOR_SIZE,
};
use crate::files::plausible::{entry_verdict, entry_verifies, Verdict};
use crate::files::runs::first_not;
use crate::files::verified_run::{RunCursor, VerifiedEntry, VerifiedRuns};

/// The smallest payload: a fence record's ledger id and entry id.
const MIN_PAYLOAD: usize = 16;
/// Padding records end on an alignment boundary, a multiple of 512.
const ALIGNMENT_UNIT: usize = SECTOR_SIZE as usize;
/// Longest padding a sync point may have (alignments are a few KiB in practice).
const MAX_PADDING: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Entry,
    LedgerKey,
    Fence,
    ExplicitLac,
    Padding,
    Unknown,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct JournalFraming {
    options: ScanOptions,
}

fn i32_in(b: &[u8], p: usize) -> i32 {
    i32::from_be_bytes(b[p..p + 4].try_into().expect("4 bytes"))
}

/// Checks a payload of `n` bytes whose first bytes are `head`.
fn payload_verdict(head: &[u8], n: usize, strict: bool) -> (RecordKind, Verdict) {
    let Some(&first) = head.first() else { return (RecordKind::Entry, Verdict::Short) };
    if EntryFormat::detect(first) == EntryFormat::V2 {
        return (RecordKind::Entry, entry_verdict(head, n, strict));
    }
    if head.len() < 16 {
        return (RecordKind::Entry, Verdict::Short);
    }
    let entry_id = i64_unchecked(head, 8);
    if entry_id >= 0 {
        return (RecordKind::Entry, entry_verdict(head, n, strict));
    }
    // A meta record whose body is `[i32 len][len bytes]` after the ids.
    let sized = |kind: RecordKind, min_len: i32| {
        if head.len() < 20 {
            return (kind, Verdict::Short);
        }
        let len = i32_in(head, 16);
        let fits = len >= 0 && 20 + len as usize <= n;
        let exact = 20 + len as usize == n && len >= min_len;
        (kind, if fits && (!strict || exact) { Verdict::Plausible } else { Verdict::Implausible })
    };
    match entry_id {
        METAENTRY_ID_LEDGER_KEY => sized(RecordKind::LedgerKey, 0),
        METAENTRY_ID_LEDGER_EXPLICITLAC => sized(RecordKind::ExplicitLac, crate::entry::LAC_HEADER_LEN as i32),
        METAENTRY_ID_FENCE_KEY => {
            (RecordKind::Fence, if !strict || n == MIN_PAYLOAD { Verdict::Plausible } else { Verdict::Implausible })
        }
        // Unknown meta records are read (and skipped by BookKeeper), never synced on.
        _ => (RecordKind::Unknown, if strict { Verdict::Implausible } else { Verdict::Plausible }),
    }
}

impl Framing for JournalFraming {
    type Kind = RecordKind;
    const PADDING_MARKER: bool = true;

    #[inline]
    fn fill(&self) -> Option<u8> {
        None
    }

    #[inline]
    fn check(&self, data: &[u8], p: usize, strict: bool) -> Check<RecordKind> {
        let len = data.len();
        let n = i32_in(data, p);
        if n == PADDING_MASK {
            if p + 8 > len {
                return Check::Torn;
            }
            let pad = i32_in(data, p + 4);
            if pad < 0 {
                return Check::Bad(GapKind::BadRecord);
            }
            let end = (p + 8).saturating_add(pad as usize);
            if end > len {
                return Check::Torn;
            }
            // The writer pads from a zeroed buffer to an alignment boundary (a
            // multiple of 512); a padding length damaged by a multiple of 512 would
            // still align, so the content must be zeros too.
            if strict
                && (end & (ALIGNMENT_UNIT - 1) != 0 || pad as usize > MAX_PADDING || first_not(data, p + 8, end, 0) != end)
            {
                return Check::Bad(GapKind::BadRecord);
            }
            return Check::Record { end, kind: RecordKind::Padding };
        }
        if n < MIN_PAYLOAD as i32 || (strict && n as usize > MAX_SYNC_RECORD) {
            return Check::Bad(GapKind::BadSize);
        }
        let n = n as usize;
        let body = p + 4;
        let end = body.saturating_add(n);
        let head = &data[body.min(len)..len.min(body + 41)];
        let (kind, verdict) = payload_verdict(head, n, strict);
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
        kind == RecordKind::Padding
    }

    fn is_entry(&self, kind: RecordKind) -> bool {
        kind == RecordKind::Entry
    }

    fn reframe(&self, data: &[u8], p: usize, end: usize) -> Option<RecordKind> {
        let bytes = data.get(p + 4..end)?;
        if self.options.digesters.is_empty() {
            return None;
        }
        let (kind, verdict) = payload_verdict(&bytes[..bytes.len().min(41)], bytes.len(), false);
        (kind == RecordKind::Entry && verdict == Verdict::Plausible && entry_verifies(&self.options, bytes))
            .then_some(RecordKind::Entry)
    }
}

/// What a journal record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalRecordKind<'a> {
    /// A data entry, stored exactly as the client packaged it.
    Entry { header: EntryHeader, declared_digest: Option<DigestType> },
    /// The ledger's master key (entry id -4096).
    LedgerKey { ledger_id: i64, master_key: &'a [u8] },
    /// The ledger was fenced (entry id -8192).
    Fence { ledger_id: i64 },
    /// An explicit-LAC blob (entry id -32768): ledger id, LAC, digest.
    ExplicitLac { ledger_id: i64, lac_blob: &'a [u8] },
    /// Padding to an alignment boundary (version 5+): `pad_len` zero bytes follow the marker.
    Padding { pad_len: u32 },
    /// A meta record with an entry id this library does not know (BookKeeper skips them).
    Unknown { ledger_id: i64, entry_id: i64 },
}

impl JournalRecordKind<'_> {
    /// Stable name used in Arrow columns.
    pub const fn name(&self) -> &'static str {
        match self {
            JournalRecordKind::Entry { .. } => "entry",
            JournalRecordKind::LedgerKey { .. } => "ledger_key",
            JournalRecordKind::Fence { .. } => "fence",
            JournalRecordKind::ExplicitLac { .. } => "explicit_lac",
            JournalRecordKind::Padding { .. } => "padding",
            JournalRecordKind::Unknown { .. } => "unknown",
        }
    }

    /// Ledger id of the record (none for padding).
    pub fn ledger_id(&self) -> Option<i64> {
        match *self {
            JournalRecordKind::Entry { header, .. } => Some(header.ledger_id),
            JournalRecordKind::LedgerKey { ledger_id, .. }
            | JournalRecordKind::Fence { ledger_id }
            | JournalRecordKind::ExplicitLac { ledger_id, .. }
            | JournalRecordKind::Unknown { ledger_id, .. } => Some(ledger_id),
            JournalRecordKind::Padding { .. } => None,
        }
    }
}

/// One journal record.
#[derive(Debug, Clone, Copy)]
pub struct JournalRecord<'a> {
    /// Offset of the record's length field.
    pub offset: u64,
    /// The bytes after the length field (for padding: after the padding length).
    pub payload: &'a [u8],
    pub kind: JournalRecordKind<'a>,
    /// The length field was damaged: the entry was framed by where the next record
    /// starts, and a configured digest verified it.
    pub reframed: bool,
}

impl<'a> JournalRecord<'a> {
    /// Offset of the payload.
    pub fn payload_offset(&self) -> u64 {
        match self.kind {
            JournalRecordKind::Padding { .. } => self.offset + 8,
            _ => self.offset + 4,
        }
    }

    /// Bytes the record covers, length field included.
    pub fn span_len(&self) -> u64 {
        self.payload_offset() - self.offset + self.payload.len() as u64
    }

    /// Entry id as the journal stores it (meta ids for meta records; none for padding).
    pub fn entry_id(&self) -> Option<i64> {
        match self.kind {
            JournalRecordKind::Entry { header, .. } => Some(header.entry_id),
            JournalRecordKind::LedgerKey { .. } => Some(METAENTRY_ID_LEDGER_KEY),
            JournalRecordKind::Fence { .. } => Some(METAENTRY_ID_FENCE_KEY),
            JournalRecordKind::ExplicitLac { .. } => Some(METAENTRY_ID_LEDGER_EXPLICITLAC),
            JournalRecordKind::Unknown { entry_id, .. } => Some(entry_id),
            JournalRecordKind::Padding { .. } => None,
        }
    }

    /// Frames a data entry; errors carry file offsets.
    pub fn decode_entry(&self, digest_type: Option<DigestType>) -> Result<Entry<'a>> {
        decode_entry(self.payload, digest_type).map_err(|e| e.at_base(self.payload_offset()))
    }
}

fn record<'a>(data: &'a [u8], offset: usize, end: usize, kind: RecordKind, reframed: bool) -> JournalRecord<'a> {
    let payload = &data[offset + 4..end];
    let ids = |p: &[u8]| (i64_unchecked(p, 0), i64_unchecked(p, 8));
    let sized = |p: &'a [u8]| {
        let len = i32_in(p, 16) as usize;
        &p[20..20 + len]
    };
    let kind = match kind {
        RecordKind::Entry => {
            let (header, declared_digest) = parse_header(payload).expect("the framing accepted this entry header");
            JournalRecordKind::Entry { header, declared_digest }
        }
        RecordKind::LedgerKey => JournalRecordKind::LedgerKey { ledger_id: ids(payload).0, master_key: sized(payload) },
        RecordKind::ExplicitLac => JournalRecordKind::ExplicitLac { ledger_id: ids(payload).0, lac_blob: sized(payload) },
        RecordKind::Fence => JournalRecordKind::Fence { ledger_id: ids(payload).0 },
        RecordKind::Unknown => {
            let (ledger_id, entry_id) = ids(payload);
            JournalRecordKind::Unknown { ledger_id, entry_id }
        }
        RecordKind::Padding => {
            return JournalRecord {
                offset: offset as u64,
                payload: &data[offset + 8..end],
                kind: JournalRecordKind::Padding { pad_len: (end - offset - 8) as u32 },
                reframed,
            }
        }
    };
    JournalRecord { offset: offset as u64, payload, kind, reframed }
}

/// What a journal scan yields, in file order.
#[derive(Debug, Clone, Copy)]
pub enum JournalItem<'a> {
    Record(JournalRecord<'a>),
    Gap(Gap),
}

impl JournalItem<'_> {
    pub fn offset(&self) -> u64 {
        match self {
            JournalItem::Record(r) => r.offset,
            JournalItem::Gap(g) => g.offset,
        }
    }
}

/// The state of a journal scan without a borrow of the bytes (see `EntryLogCursor`).
#[derive(Debug, Clone)]
pub struct JournalCursor {
    framing: JournalFraming,
    chain: Chain,
    runs: VerifiedRuns,
    data_len: usize,
}

impl JournalCursor {
    pub fn new(journal: &Journal<'_>, options: &ScanOptions, start: u64, end: u64) -> JournalCursor {
        let framing = JournalFraming { options: options.clone() };
        let data = journal.data();
        let mut chain = Chain::new(&framing, data, journal.header().data_start() as usize, start, end);
        if start == 0 && end > 0 {
            if let Some(g) = journal.header_gap() {
                chain.push_front(g);
            }
        }
        let runs = VerifiedRuns::new(options);
        JournalCursor { framing, chain, runs, data_len: data.len() }
    }

    /// A scan that starts in step at `offset`, a known record boundary.
    pub(crate) fn resume_at(journal: &Journal<'_>, options: &ScanOptions, offset: u64) -> JournalCursor {
        let framing = JournalFraming { options: options.clone() };
        let data = journal.data();
        let at = usize::try_from(offset).unwrap_or(usize::MAX).min(data.len());
        let chain = Chain::new(&framing, data, at, 0, u64::MAX);
        let runs = VerifiedRuns::new(options);
        JournalCursor { framing, chain, runs, data_len: data.len() }
    }

    /// The next item; `data` must be the bytes the cursor was created for.
    pub fn next_item<'a>(&mut self, data: &'a [u8]) -> Option<JournalItem<'a>> {
        assert_eq!(data.len(), self.data_len, "a journal cursor must be driven with the bytes it was created for");
        Some(match self.chain.next(&self.framing, data)? {
            Step::Gap(g) => JournalItem::Gap(g),
            Step::Record { offset, end, kind, reframed } => JournalItem::Record(record(data, offset, end, kind, reframed)),
        })
    }

    /// The data entries from here that a configured CRC-32C or CRC-32 digest
    /// verifies, appended to `out`: at most `max`, and while their lengths add up to
    /// less than `budget` bytes. They are the records [`next_item`](Self::next_item)
    /// would yield (never reframed), found without looking ahead, their digests
    /// computed together. Appends nothing when the next item is anything else;
    /// `next_item` then takes it.
    pub fn next_verified<'a>(&mut self, data: &'a [u8], max: usize, budget: usize, out: &mut Vec<VerifiedEntry<'a>>) {
        assert_eq!(data.len(), self.data_len, "a journal cursor must be driven with the bytes it was created for");
        self.runs.next(&mut self.chain, &self.framing, data, max, budget, out);
    }

    pub fn position(&self) -> u64 {
        self.chain.position() as u64
    }
}

impl RunCursor for JournalCursor {
    fn frame_run(&mut self, data: &[u8], max: usize, budget: usize, out: &mut Vec<(usize, usize)>) {
        assert_eq!(data.len(), self.data_len, "a journal cursor must be driven with the bytes it was created for");
        self.chain.entry_run(&self.framing, data, max, budget, out);
    }

    fn accept(&mut self, offset: usize, end: usize) {
        self.chain.accept_verified(offset, end);
    }

    fn next_verified<'a>(&mut self, data: &'a [u8], max: usize, budget: usize, out: &mut Vec<VerifiedEntry<'a>>) {
        JournalCursor::next_verified(self, data, max, budget, out);
    }
}

/// Iterator over the items of a journal (or a byte range of it).
#[derive(Debug, Clone)]
pub struct JournalScanner<'a> {
    data: &'a [u8],
    cursor: JournalCursor,
}

impl<'a> JournalScanner<'a> {
    pub(crate) fn new(data: &'a [u8], cursor: JournalCursor) -> Self {
        JournalScanner { data, cursor }
    }

    pub fn into_cursor(self) -> JournalCursor {
        self.cursor
    }
}

impl<'a> Iterator for JournalScanner<'a> {
    type Item = JournalItem<'a>;

    fn next(&mut self) -> Option<JournalItem<'a>> {
        self.cursor.next_item(self.data)
    }
}
