//! Scanning journals: data records, meta records, padding records and gaps, zero-copy.

use std::sync::Arc;

use crate::bytes::i64_unchecked;
use crate::digest_check::DigestKeys;
use crate::digest::DigestType;
use crate::entry::{decode_entry, parse_header, Entry, EntryFormat, EntryHeader};
use crate::error::Result;
use crate::files::framing::{Check, Framing, Step, MAX_SYNC_RECORD};
use crate::files::gap::{Gap, GapKind};
use crate::files::journal::{
    METAENTRY_ID_FENCE_KEY, METAENTRY_ID_LEDGER_EXPLICITLAC, METAENTRY_ID_LEDGER_KEY, PADDING_MASK,
    SECTOR_SIZE,
};
use crate::files::plausible::{entry_plausibility, torn_entry_plausibility, Plausibility};
use crate::files::runs::first_not;
use crate::files::scan::{LentScan, OtherRecord, RecordFormat};
use crate::files::window::{Fetch, View};

/// The smallest payload: a fence record's ledger id and entry id.
const MIN_PAYLOAD: usize = 16;
/// Meta entry ids are small negative multiples of 4096 (-4096 times a power of two
/// so far); any other negative id is an entry or meta id that damage changed.
const MIN_META_ENTRY_ID: i64 = -(1 << 32);
const META_ENTRY_ID_UNIT: i64 = 0x1000;
/// A master key is a SHA-1 (`BookieProtocol.MASTER_KEY_LENGTH`).
const MASTER_KEY_LEN: i32 = 20;
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
    /// A meta record of a type this library does not know (newer bookies write
    /// types older ones skip on replay).
    UnknownMeta,
    Padding,
}

#[derive(Debug, Clone)]
pub(crate) struct JournalFraming {
    keys: Arc<DigestKeys>,
    /// Where `lastMark` says the journal was written up to: a record boundary
    /// (the bookie marks the position after whole records it flushed).
    mark: Option<usize>,
}

fn i32_in(b: &[u8], p: usize) -> i32 {
    i32::from_be_bytes(b[p..p + 4].try_into().expect("4 bytes"))
}

/// Checks a payload of `n` bytes whose first bytes are `head`.
pub(crate) fn payload_plausibility(head: &[u8], n: usize, strict: bool) -> (RecordKind, Plausibility) {
    let Some(&first) = head.first() else { return (RecordKind::Entry, Plausibility::Short) };
    if EntryFormat::detect(first) == EntryFormat::V2 {
        return (RecordKind::Entry, entry_plausibility(head, n, strict));
    }
    if head.len() < 16 {
        return (RecordKind::Entry, Plausibility::Short);
    }
    let entry_id = i64_unchecked(head, 8);
    if entry_id >= 0 {
        return (RecordKind::Entry, entry_plausibility(head, n, strict));
    }
    // A record claiming to be a meta record must show its shape: a meta id, exactly
    // the size its layout gives, and (for explicit LACs) a blob of its own ledger.
    // A meta id no bookie version known here writes is a record BookKeeper's replay
    // skips: framed, never a sync point. Any other negative id is damage.
    if entry_id < MIN_META_ENTRY_ID || entry_id % META_ENTRY_ID_UNIT != 0 {
        return (RecordKind::Entry, Plausibility::Implausible);
    }
    if !matches!(entry_id, METAENTRY_ID_LEDGER_KEY | METAENTRY_ID_LEDGER_EXPLICITLAC | METAENTRY_ID_FENCE_KEY) {
        return (RecordKind::UnknownMeta, if strict { Plausibility::Implausible } else { Plausibility::Plausible });
    }
    if head.len() < 20 && entry_id != METAENTRY_ID_FENCE_KEY {
        return (RecordKind::Entry, Plausibility::Short);
    }
    let body_len = || i32_in(head, 16);
    let verdict = |ok: bool| if ok { Plausibility::Plausible } else { Plausibility::Implausible };
    match entry_id {
        METAENTRY_ID_LEDGER_KEY => {
            (RecordKind::LedgerKey, verdict(body_len() == MASTER_KEY_LEN && n == 20 + MASTER_KEY_LEN as usize))
        }
        METAENTRY_ID_LEDGER_EXPLICITLAC => {
            let len = body_len();
            let digest_ok = [0, 4, 8, 20].iter().any(|d| len == crate::entry::LAC_HEADER_LEN as i32 + d);
            let own_ledger = head.len() < 28 || i64_unchecked(head, 20) == i64_unchecked(head, 0);
            (RecordKind::ExplicitLac, verdict(digest_ok && n == 20 + len as usize && own_ledger))
        }
        METAENTRY_ID_FENCE_KEY => (RecordKind::Fence, verdict(n == MIN_PAYLOAD)),
        _ => unreachable!("unknown meta ids returned above"),
    }
}

impl JournalFraming {
    pub(crate) fn new(keys: Arc<DigestKeys>) -> Self {
        JournalFraming { keys, mark: None }
    }

    /// The framing, told where `lastMark` places a record boundary.
    pub(crate) fn with_mark(self, mark: Option<u64>) -> Self {
        JournalFraming { mark: mark.and_then(|m| usize::try_from(m).ok()), ..self }
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
    fn check(&self, v: &View<'_>, p: usize, strict: bool) -> Fetch<Check<RecordKind>> {
        let len = v.len();
        let n = v.i32_at(p)?;
        if n == PADDING_MASK {
            if p + 8 > len {
                return Ok(Check::Torn);
            }
            let pad = v.i32_at(p + 4)?;
            if pad < 0 {
                return Ok(Check::Bad(GapKind::BadRecord));
            }
            let end = (p + 8).saturating_add(pad as usize);
            if end > len {
                return Ok(Check::Torn);
            }
            // The writer pads from a zeroed buffer to an alignment boundary (a
            // multiple of 512); a padding length damaged by a multiple of 512 would
            // still align, so the content must be zeros too.
            if strict
                && (end & (ALIGNMENT_UNIT - 1) != 0
                    || pad as usize > MAX_PADDING
                    || first_not(v.get(p + 8, pad as usize)?, 0, pad as usize, 0) != pad as usize)
            {
                return Ok(Check::Bad(GapKind::BadRecord));
            }
            return Ok(Check::Record { end, kind: RecordKind::Padding });
        }
        if n < MIN_PAYLOAD as i32 || (strict && n as usize > MAX_SYNC_RECORD) {
            return Ok(Check::Bad(GapKind::BadSize));
        }
        let n = n as usize;
        let body = p + 4;
        let end = body.saturating_add(n);
        let head = v.get(body.min(len), len.min(body + 41).saturating_sub(body.min(len)))?;
        let (kind, verdict) = payload_plausibility(head, n, strict);
        // A torn record is judged strictly: text or noise also frames leniently.
        let torn = || if kind == RecordKind::Entry { torn_entry_plausibility(head, n) } else { verdict };
        Ok(Check::framed(kind, verdict, torn, end, len, strict))
    }

    fn digest_keys(&self) -> &Arc<DigestKeys> {
        &self.keys
    }

    /// A padding record whose marker, length and aligned end are intact: its zeros
    /// damaged, or cut by the end of the file (then what is left of them is zeros).
    fn ends_chain(&self, v: &View<'_>, q: usize) -> Fetch<bool> {
        let len = v.len();
        if q + 4 > len || v.i32_at(q)? != PADDING_MASK {
            return Ok(false);
        }
        let zeros_to_end = |from: usize| -> Fetch<bool> { Ok(first_not(v.get(from, len - from)?, 0, len - from, 0) == len - from) };
        if q + 8 > len {
            return zeros_to_end(q + 4);
        }
        let pad = v.i32_at(q + 4)?;
        if pad < 0 || pad as usize > MAX_PADDING {
            return Ok(false);
        }
        let end = q + 8 + pad as usize;
        if end > len {
            return zeros_to_end(q + 8);
        }
        Ok(end & (ALIGNMENT_UNIT - 1) == 0)
    }

    fn known_boundary(&self, q: usize) -> bool {
        self.mark == Some(q)
    }

    fn is_anchor(&self, kind: RecordKind) -> bool {
        kind == RecordKind::Padding
    }

    fn is_entry(&self, kind: RecordKind) -> bool {
        kind == RecordKind::Entry
    }

    fn reframe(&self, v: &View<'_>, p: usize, end: usize) -> Fetch<Option<RecordKind>> {
        if !self.keys.computes_any() || end < p + 4 + MIN_PAYLOAD {
            return Ok(None);
        }
        let head = v.get(p + 4, 41.min(end - p - 4))?;
        let (kind, verdict) = payload_plausibility(head, end - p - 4, false);
        if kind != RecordKind::Entry || verdict != Plausibility::Plausible {
            return Ok(None);
        }
        Ok(self.verifies(v, p, end, RecordKind::Entry)?.then_some(RecordKind::Entry))
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
    /// A meta record of a type not known here (BookKeeper's replay skips it).
    UnknownMeta { ledger_id: i64, entry_id: i64 },
    /// Padding to an alignment boundary (version 5+): `pad_len` zero bytes follow the marker.
    Padding { pad_len: u32 },
}

impl JournalRecordKind<'_> {
    /// Stable name used in Arrow columns.
    pub const fn name(&self) -> &'static str {
        match self {
            JournalRecordKind::Entry { .. } => "entry",
            JournalRecordKind::LedgerKey { .. } => "ledger_key",
            JournalRecordKind::Fence { .. } => "fence",
            JournalRecordKind::ExplicitLac { .. } => "explicit_lac",
            JournalRecordKind::UnknownMeta { .. } => "unknown_meta",
            JournalRecordKind::Padding { .. } => "padding",
        }
    }

    /// Ledger id of the record (none for padding).
    pub fn ledger_id(&self) -> Option<i64> {
        match *self {
            JournalRecordKind::Entry { header, .. } => Some(header.ledger_id),
            JournalRecordKind::LedgerKey { ledger_id, .. }
            | JournalRecordKind::Fence { ledger_id }
            | JournalRecordKind::ExplicitLac { ledger_id, .. }
            | JournalRecordKind::UnknownMeta { ledger_id, .. } => Some(ledger_id),
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
    /// starts, and a digest its ledger may have verified it.
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
            JournalRecordKind::UnknownMeta { entry_id, .. } => Some(entry_id),
            JournalRecordKind::Padding { .. } => None,
        }
    }

    /// Frames a data entry; errors carry file offsets.
    pub fn decode_entry(&self, digest_type: Option<DigestType>) -> Result<Entry<'a>> {
        decode_entry(self.payload, digest_type).map_err(|e| e.at_base(self.payload_offset()))
    }
}

/// The record `rec` (its bytes from the length field on) at `offset`.
fn record(rec: &[u8], offset: usize, kind: RecordKind, reframed: bool) -> JournalRecord<'_> {
    let payload = &rec[4..];
    let ledger_id = || i64_unchecked(payload, 0);
    let sized = |p: &[u8]| -> std::ops::Range<usize> { 20..20 + i32_in(p, 16) as usize };
    let kind = match kind {
        RecordKind::Entry => {
            let (header, declared_digest) = parse_header(payload).expect("the framing accepted this entry header");
            JournalRecordKind::Entry { header, declared_digest }
        }
        RecordKind::LedgerKey => JournalRecordKind::LedgerKey { ledger_id: ledger_id(), master_key: &payload[sized(payload)] },
        RecordKind::ExplicitLac => JournalRecordKind::ExplicitLac { ledger_id: ledger_id(), lac_blob: &payload[sized(payload)] },
        RecordKind::Fence => JournalRecordKind::Fence { ledger_id: ledger_id() },
        RecordKind::UnknownMeta => JournalRecordKind::UnknownMeta { ledger_id: ledger_id(), entry_id: i64_unchecked(payload, 8) },
        RecordKind::Padding => {
            return JournalRecord {
                offset: offset as u64,
                payload: &rec[8..],
                kind: JournalRecordKind::Padding { pad_len: (rec.len() - 8) as u32 },
                reframed,
            }
        }
    };
    JournalRecord { offset: offset as u64, payload, kind, reframed }
}

impl RecordFormat for JournalFraming {
    const ENTRY: RecordKind = RecordKind::Entry;

    fn other_record<'a>(&self, kind: RecordKind, offset: usize, bytes: &'a [u8]) -> Option<OtherRecord<'a>> {
        Some(match record(bytes, offset, kind, false).kind {
            JournalRecordKind::LedgerKey { ledger_id, master_key } => OtherRecord::LedgerKey { ledger_id, master_key },
            JournalRecordKind::Fence { ledger_id } => OtherRecord::Fence { ledger_id },
            JournalRecordKind::ExplicitLac { ledger_id, lac_blob } => OtherRecord::ExplicitLac { ledger_id, lac_blob },
            JournalRecordKind::UnknownMeta { ledger_id, entry_id } => OtherRecord::UnknownMeta { ledger_id, entry_id },
            JournalRecordKind::Padding { pad_len } => OtherRecord::Padding { pad_len },
            JournalRecordKind::Entry { .. } => return None,
        })
    }

    fn kind_of(record: &OtherRecord<'_>) -> RecordKind {
        match record {
            OtherRecord::LedgerKey { .. } => RecordKind::LedgerKey,
            OtherRecord::Fence { .. } => RecordKind::Fence,
            OtherRecord::ExplicitLac { .. } => RecordKind::ExplicitLac,
            OtherRecord::UnknownMeta { .. } => RecordKind::UnknownMeta,
            OtherRecord::Padding { .. } => RecordKind::Padding,
            OtherRecord::LedgersMap => unreachable!("journals hold no ledgers map"),
        }
    }
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

/// Iterator over the items of a journal (or a byte range of it): the readers' scan
/// (`files/scan.rs`) run on bytes in hand.
#[derive(Debug)]
pub struct JournalScanner<'a> {
    data: &'a [u8],
    steps: LentScan<'a, JournalFraming>,
}

impl<'a> JournalScanner<'a> {
    pub(crate) fn new(data: &'a [u8], steps: LentScan<'a, JournalFraming>) -> Self {
        JournalScanner { data, steps }
    }
}

impl<'a> Iterator for JournalScanner<'a> {
    type Item = JournalItem<'a>;

    fn next(&mut self) -> Option<JournalItem<'a>> {
        Some(match self.steps.next()? {
            Step::Gap(g) => JournalItem::Gap(g),
            Step::Record { offset, end, kind, reframed } => JournalItem::Record(record(&self.data[offset..end], offset, kind, reframed)),
        })
    }
}
