//! Record framing shared by entry logs and journals: both are `[i32 size][bytes]`
//! records back to back. This module walks such a chain of records, reports every
//! span that holds no record as a [`Gap`], and resynchronises after damage.
//!
//! Two tests decide what is a record:
//! - *accepted* (the walk is in step, right after a record or at the first record):
//!   the size field frames a plausible header (ids non-negative, the format's
//!   minimum length), and the record is confirmed (an anchor record that passes its
//!   exact form, or two more plausible records after it, or a clean end, or a
//!   configured digest) or nothing contradicts it: no sync point lies inside it. A
//!   garbage size that fits in the file is caught by the last test and cannot
//!   swallow the good records it covers (unless it points exactly at a later record
//!   boundary, which framing alone cannot tell from a real size).
//! - *sync point* (where the walk may resume after damage, and where byte ranges
//!   start): the size field is below 16 MiB, the header passes strict tests (LAC
//!   below the entry id, entry id below 2^40, length covering the payload, exact
//!   lengths of meta and map records, zero content of padding), and the record is
//!   an anchor (journal padding, entry-log map record), or two more strictly
//!   plausible records follow it or the chain ends cleanly (end of file, or a run of
//!   zeros to the end or of fill bytes to a 4 KiB boundary starting exactly there), or,
//!   for records up to 64 KiB, a configured digest verifies. Of two such records
//!   starting less than 36 bytes apart (a real header and the same header read a
//!   few bytes off), one is ruled out (see [`Chain::is_sync`]).
//!
//! When the walk is in step at a damaged record and a digest verifies the bytes up
//! to the next sync point, the entry is kept, flagged as reframed. Otherwise the
//! bytes up to the next sync point are one gap, named after what was wrong first.
//! Zero runs and fill runs are skipped a chunk at a time, and the search for a sync
//! point only looks at the last three bytes of each zero run (sizes below 16 MiB
//! start with a zero byte), so scanning damaged or preallocated regions is linear.
//!
//! The fill byte is the framing's: 0xF0 in direct entry logs, none in legacy entry
//! logs (whose writer never pads, so a 0xF0 run there is an overwritten record or
//! size field, reported as damage) and in journals. In a direct log a run of fill
//! bytes is padding only as the writer leaves it: from where the walk stands, not on
//! a 4 KiB boundary, up to exactly the next boundary (or the end of the file before
//! it). A run that stops short of it or goes on past it is damage.
//!
//! Every decision depends only on positions and bytes, never on where the walk
//! started. Byte ranges: a range `[s, e)` starts at the first sync point at or after
//! `s` (or at the first record when `s` is before it) and stops, past `e`, at the
//! first sync point it reaches. Every jump of the walk lands on or before the next
//! sync point, so one range stops exactly where the next starts and ranges that tile
//! a file yield every record once. A record that starts before `e` and covers a sync
//! point after `e` (possible only where a payload holds bytes that frame like a
//! chain of records) is reported as a [`GapKind::BadSize`] span ending at that point,
//! where the next range starts: each byte is still reported once.

use memchr::{memchr, memchr2};

use crate::digest::{DigestType, Digester};
use crate::files::gap::{Gap, GapKind};
use crate::files::runs::first_not;

/// Records larger than this are never taken as sync points: the first byte of a
/// sync point's size field is always zero, which makes the search a `memchr`.
pub(crate) const MAX_SYNC_RECORD: usize = (1 << 24) - 1;
/// Records up to this size may be confirmed by their digest when the chain after
/// them is damaged (bounded so a search through random bytes stays linear).
const MAX_DIGEST_RESCUE: usize = 64 * 1024;
/// Records after a sync point that must frame (unless the chain ends cleanly first).
const SYNC_CHAIN: u32 = 2;
/// Records after an accepted record that are checked before searching inside it.
const ACCEPT_CHAIN: u32 = 2;
/// The smallest record, size field included: a size field and a 32-byte header.
const MIN_RECORD_SPAN: usize = 36;
/// Two real records never start closer than this, so of two plausible records
/// starting closer, one is a shifted view.
const SHIFT_WINDOW: usize = MIN_RECORD_SPAN;
/// Records followed when checking whether records end exactly at a position.
const MAX_TILING_RECORDS: usize = 64;
/// Direct-I/O writers pad to this boundary.
pub(crate) const PADDING_BLOCK: usize = 4096;

/// Digests the scanners may use to confirm a record where framing alone is ambiguous.
/// Scanners never require a digest; without one they rely on framing only.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    pub(crate) digesters: Vec<Digester>,
}

impl ScanOptions {
    pub fn new() -> Self {
        ScanOptions::default()
    }

    /// Adds a digest type to try (`password` matters only for HMAC). Logs that mix
    /// ledgers of several digest types can name each.
    pub fn with_digest(mut self, digest_type: DigestType, password: &[u8]) -> Self {
        if digest_type != DigestType::Dummy {
            self.digesters.push(Digester::new(digest_type, password));
        }
        self
    }

    pub fn digest_types(&self) -> Vec<DigestType> {
        self.digesters.iter().map(|d| d.digest_type()).collect()
    }
}

/// What a framing says about the bytes at a size field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check<K> {
    /// A record ending at `end` (exclusive), inside the file.
    Record { end: usize, kind: K },
    /// A plausible record that runs past the end of the file.
    Torn,
    /// Not a record.
    Bad(GapKind),
}

pub(crate) trait Framing {
    type Kind: Copy;
    /// Filler byte the writer puts between records (0xF0 in direct entry logs).
    /// Where the format has none, such bytes are damage like any other.
    fn fill(&self) -> Option<u8>;
    /// Whether records may start with FF FF FF 00 (journal padding records).
    const PADDING_MARKER: bool;

    /// Checks the record whose size field starts at `p`. Callers guarantee
    /// `p + 4 <= data.len()`, a non-zero size field, and that `data[p]` is not the
    /// fill byte unless its run there is no padding (then the size is negative).
    /// `strict` adds the tests a sync point must pass.
    fn check(&self, data: &[u8], p: usize, strict: bool) -> Check<Self::Kind>;

    /// Whether a configured digest verifies the record `[p, end)`.
    fn verifies(&self, data: &[u8], p: usize, end: usize, kind: Self::Kind) -> bool;

    /// Whether `[p + 4, end)` is an entry whose digest verifies, though the size
    /// field at `p` says otherwise.
    fn reframe(&self, data: &[u8], p: usize, end: usize) -> Option<Self::Kind>;

    /// Whether a record of `kind` at `p` may be a sync point (an entry log excludes
    /// the inside of its ledgers map, whose pairs of small integers mimic entries).
    fn may_sync(&self, _p: usize, _kind: Self::Kind) -> bool {
        true
    }

    /// Records whose strict form is specific enough to end a chain on their own
    /// (journal padding records, entry-log map records).
    fn is_anchor(&self, kind: Self::Kind) -> bool;

    /// Records holding an entry (what a digest can confirm).
    fn is_entry(&self, kind: Self::Kind) -> bool;
}

/// One step of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<K> {
    /// `reframed`: the size field was wrong; the record ends where the next record
    /// starts, and a digest proved the entry intact.
    Record { offset: usize, end: usize, kind: K, reframed: bool },
    Gap(Gap),
}

/// What is known about sync points: none in `[from, to)`, and one at `to` if `found`.
#[derive(Debug, Clone, Copy)]
struct SyncKnowledge {
    from: usize,
    to: usize,
    found: bool,
}

/// The walk over one file (or one byte range of it). Holds no borrow, so a caller
/// can keep it next to the bytes it walks (a mapped file, a Python buffer) and
/// resume it batch by batch.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    pos: usize,
    range_end: usize,
    done: bool,
    pending: [Option<Gap>; 2],
    sync: Option<SyncKnowledge>,
    /// `[a, b)` is all zeros and `b` is the end of that run.
    zeros: Option<(usize, usize)>,
    /// Bytes up to here have been prefetched.
    prefetched: usize,
}

#[inline]
fn i32_at(data: &[u8], p: usize) -> i32 {
    i32::from_be_bytes(data[p..p + 4].try_into().expect("4 bytes"))
}

const CACHE_LINE: usize = 64;
const PREFETCH_DISTANCE: usize = 8192;
const PREFETCH_PER_STEP: usize = 32 * CACHE_LINE;

#[inline(always)]
fn prefetch(data: &[u8], at: usize) {
    debug_assert!(at < data.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `at` is inside `data`; a prefetch never faults and changes no memory.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(data.as_ptr().add(at) as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// Whether a sync point could start at `c`: its size field starts with a zero byte
/// (records below 16 MiB) or with the journal padding marker.
fn may_start<F: Framing>(data: &[u8], c: usize) -> bool {
    data[c] == 0 || (F::PADDING_MARKER && data[c] == 0xFF)
}

/// Whether the run of `byte` at `q` starts exactly there.
fn run_starts_at(data: &[u8], q: usize, byte: u8) -> bool {
    q == 0 || data[q - 1] != byte
}

fn gap(offset: usize, end: usize, kind: GapKind) -> Gap {
    Gap { offset: offset as u64, len: (end - offset) as u64, kind }
}

impl Chain {
    /// A walk over `[start, end)` of a file whose records start at `data_start`. An
    /// entry belongs to the range its walk reaches it in (normally the range holding
    /// its size field); see the module notes for why tilings agree.
    pub(crate) fn new<F: Framing>(f: &F, data: &[u8], data_start: usize, start: u64, end: u64) -> Chain {
        let len = data.len();
        let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX).min(len);
        let (start, end) = (to_usize(start), to_usize(end));
        let mut chain = Chain {
            pos: len,
            range_end: end,
            done: true,
            pending: [None, None],
            sync: None,
            zeros: None,
            prefetched: 0,
        };
        if start >= end || end <= data_start {
            return chain;
        }
        let first = if start <= data_start { Some(data_start) } else { chain.find_sync(f, data, start, end) };
        if let Some(p) = first {
            chain.pos = p;
            chain.done = false;
        }
        chain
    }

    /// Queues a span to be reported before anything else (a damaged header).
    pub(crate) fn push_front(&mut self, g: Gap) {
        self.pending.rotate_right(1);
        self.pending[0] = Some(g);
    }

    /// Where the walk stands: the next record or gap starts here.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The entry records [`Chain::next`] reaches one after another from here, as
    /// `(offset, end)`, each of which it would accept with no decision left but
    /// `chain_ok || verifies`: the walk is in step (no queued gap), the record starts
    /// before the range end and ends within it, and it frames as an entry (no zeros,
    /// fill, anchor or damage on the way). Stops after `max` records, or once their
    /// entries add up to `budget` bytes (the record crossing it included). The walk
    /// does not move; see [`Chain::accept_verified`].
    ///
    /// A caller that finds a record's digest verified may accept it without the
    /// look-ahead: `verifies` alone confirms it, whatever `chain_ok` would say.
    pub(crate) fn entry_run<F: Framing>(
        &mut self,
        f: &F,
        data: &[u8],
        max: usize,
        budget: usize,
        out: &mut Vec<(usize, usize)>,
    ) {
        if self.done || self.pending.iter().any(Option::is_some) {
            return;
        }
        let len = data.len();
        let mut p = self.pos;
        let mut bytes = 0usize;
        while out.len() < max && bytes < budget && p < self.range_end && len - p >= 4 {
            if i32_at(data, p) == 0 || f.fill() == Some(data[p]) {
                return;
            }
            self.prefetch_ahead(data, p);
            match f.check(data, p, false) {
                Check::Record { end, kind } if f.is_entry(kind) && !f.is_anchor(kind) && end <= self.range_end => {
                    out.push((p, end));
                    bytes += end - p - 4;
                    p = end;
                }
                _ => return,
            }
        }
    }

    /// Whether the walk is in step: no queued gap, not at its end.
    pub(crate) fn in_step(&self) -> bool {
        !self.done && self.pending.iter().all(Option::is_none)
    }

    /// Moves past the first records of an [`Chain::entry_run`] from here, `[offset,
    /// end)`, each of which a configured digest verified.
    pub(crate) fn accept_verified(&mut self, offset: usize, end: usize) {
        assert!(offset == self.pos && self.in_step() && offset < end, "verified records are the next ones");
        self.pos = end;
    }

    pub(crate) fn next<F: Framing>(&mut self, f: &F, data: &[u8]) -> Option<Step<F::Kind>> {
        for slot in &mut self.pending {
            if let Some(g) = slot.take() {
                return Some(Step::Gap(g));
            }
        }
        if self.done {
            return None;
        }
        let len = data.len();
        let p = self.pos;
        self.prefetch_ahead(data, p);
        if p >= len || (p >= self.range_end && self.is_sync(f, data, p)) {
            self.done = true;
            return None;
        }
        if len - p < 4 {
            self.done = true;
            let kind = if data[p..].iter().all(|&b| b == 0) {
                GapKind::TrailingZeros
            } else if f.fill().is_some_and(|fill| data[p..].iter().all(|&b| b == fill)) {
                GapKind::Padding
            } else {
                GapKind::TornRecord
            };
            return Some(Step::Gap(gap(p, len, kind)));
        }
        if i32_at(data, p) == 0 {
            return Some(self.zero_gap(f, data, p));
        }
        if let Some(fill) = f.fill() {
            if data[p] == fill {
                // A writer pads from the end of a record up to the next 4 KiB boundary
                // (never from a boundary), and a record follows. Any other run of fill
                // bytes stands where a size field should (an overwritten size field or
                // record, perhaps merged with padding before or after it): damage from
                // here, like any negative size. (A record overwritten up to the end of
                // the padding after it, within one block, cannot be told from padding.)
                let boundary = (p | (PADDING_BLOCK - 1)) + 1;
                let end = first_not(data, p, len, fill);
                if p & (PADDING_BLOCK - 1) != 0 && (end == boundary || (end == len && end < boundary)) {
                    self.pos = end;
                    return Some(Step::Gap(gap(p, end, GapKind::Padding)));
                }
            }
        }
        match f.check(data, p, false) {
            Check::Record { end, kind } => {
                // Anchors confirm themselves or not at all: a padding length damaged by
                // a multiple of the alignment still lands on a record boundary.
                let confirmed = if f.is_anchor(kind) {
                    matches!(f.check(data, p, true), Check::Record { .. })
                } else {
                    self.chain_ok(f, data, end, ACCEPT_CHAIN) || f.verifies(data, p, end, kind)
                };
                if !confirmed {
                    // The records after this one do not frame: either this size field
                    // is wrong or the damage starts later. A sync point inside the
                    // record says the size field is wrong. When not even the next
                    // record is plausible (or this is no entry), the next sync point
                    // may still frame an entry here with a digest that verifies. (Not
                    // tried otherwise: a run of records that never confirm would each
                    // digest everything up to a distant sync point.)
                    if let Some(r) = self.find_sync(f, data, p + 1, len) {
                        if r < end {
                            return Some(self.damage_from(f, data, p, r, GapKind::BadSize));
                        }
                        if f.is_anchor(kind) || !self.plausible_at(f, data, end) {
                            if let Some(kind) = f.reframe(data, p, r) {
                                self.pos = r;
                                return Some(Step::Record { offset: p, end: r, kind, reframed: true });
                            }
                        }
                    }
                }
                if end > self.range_end {
                    // The next range starts at the first sync point after range_end;
                    // a record covering it would be reported twice.
                    if let Some(b) = self.find_sync(f, data, (p + 1).max(self.range_end), end) {
                        self.pos = b;
                        return Some(Step::Gap(gap(p, b, GapKind::BadSize)));
                    }
                }
                self.pos = end;
                Some(Step::Record { offset: p, end, kind, reframed: false })
            }
            Check::Torn => match self.find_sync(f, data, p + 1, len) {
                Some(r) => Some(self.damage_from(f, data, p, r, GapKind::BadSize)),
                None => {
                    self.done = true;
                    Some(Step::Gap(gap(p, len, GapKind::TornRecord)))
                }
            },
            Check::Bad(kind) => match self.find_sync(f, data, p + 1, len) {
                Some(r) => Some(self.damage_from(f, data, p, r, kind)),
                None => {
                    self.done = true;
                    Some(Step::Gap(gap(p, len, kind)))
                }
            },
        }
    }

    /// The walk was in step at `p` and the next sync point is `r`: the entry between
    /// them if its size field was the only damage (a digest proves it), else a gap.
    fn damage_from<F: Framing>(&mut self, f: &F, data: &[u8], p: usize, r: usize, kind: GapKind) -> Step<F::Kind> {
        self.pos = r;
        if let Some(k) = f.reframe(data, p, r) {
            return Step::Record { offset: p, end: r, kind: k, reframed: true };
        }
        let kind = if data[p..r].iter().all(|&b| b == 0) { GapKind::Zeros } else { kind };
        Step::Gap(gap(p, r, kind))
    }

    /// Asks for the bytes just ahead of `p`. Finding each record needs the size
    /// field of the one before, so without this every small record would wait for
    /// a load from memory.
    #[inline]
    fn prefetch_ahead(&mut self, data: &[u8], p: usize) {
        let from = self.prefetched.max(p);
        let to = data.len().min(p + PREFETCH_DISTANCE).min(from + PREFETCH_PER_STEP);
        let mut at = from;
        while at < to {
            prefetch(data, at);
            at += CACHE_LINE;
        }
        self.prefetched = at.max(self.prefetched);
    }

    /// Whether a record the walk would accept (or a clean end) starts at `q`.
    fn plausible_at<F: Framing>(&self, f: &F, data: &[u8], q: usize) -> bool {
        let len = data.len();
        if q == len {
            return true;
        }
        if len - q < 4 || i32_at(data, q) == 0 || f.fill() == Some(data[q]) {
            return false;
        }
        matches!(f.check(data, q, false), Check::Record { .. })
    }

    /// Zeros at `p`: to the end of the file, or a zero region followed by data (which
    /// may begin up to three bytes before the first non-zero byte, since small size
    /// fields start with zero bytes).
    fn zero_gap<F: Framing>(&mut self, f: &F, data: &[u8], p: usize) -> Step<F::Kind> {
        let len = data.len();
        let z = self.zero_run_end(data, p);
        if z == len {
            self.done = true;
            return Step::Gap(gap(p, len, GapKind::TrailingZeros));
        }
        let resume = z.saturating_sub(3).max(p);
        let found = self.find_sync(f, data, resume, len);
        if let Some(r) = found {
            // A zeroed size field in front of an intact entry.
            if let Some(kind) = f.reframe(data, p, r) {
                self.pos = r;
                return Step::Record { offset: p, end: r, kind, reframed: true };
            }
        }
        // Fewer zeros than the smallest record are no zeroed record of their own:
        // they are a zeroed size field and the leading zero bytes of the header it
        // framed (small ids), so the record is one damaged span.
        let part_of_record = z - p < MIN_RECORD_SPAN;
        Step::Gap(match found {
            Some(r) if r <= z => {
                self.pos = r;
                gap(p, r, GapKind::Zeros)
            }
            Some(r) if part_of_record => {
                self.pos = r;
                gap(p, r, GapKind::BadSize)
            }
            Some(r) => {
                self.pos = r;
                self.pending[0] = Some(gap(z, r, GapKind::Garbage));
                gap(p, z, GapKind::Zeros)
            }
            None if part_of_record => {
                // (A record that seems torn just after these zeros is a shifted view of
                // the damaged header.)
                self.done = true;
                gap(p, len, GapKind::BadSize)
            }
            None => {
                self.done = true;
                // A record torn by the end of the file right after the zeros?
                let torn = (resume..=z).find(|&c| c + 4 <= len && i32_at(data, c) != 0
                    && matches!(f.check(data, c, false), Check::Torn));
                match torn {
                    Some(c) => {
                        self.pending[0] = Some(gap(c, len, GapKind::TornRecord));
                        gap(p, c, GapKind::Zeros)
                    }
                    None => {
                        self.pending[0] = Some(gap(z, len, GapKind::Garbage));
                        gap(p, z, GapKind::Zeros)
                    }
                }
            }
        })
    }

    fn zero_run_end(&mut self, data: &[u8], p: usize) -> usize {
        if let Some((a, b)) = self.zeros {
            if a <= p && p <= b {
                return b;
            }
        }
        let z = first_not(data, p, data.len(), 0);
        self.zeros = Some((p, z));
        z
    }

    /// Whether the walk, arriving at `q` after a record, finds the file continuing
    /// sensibly: `depth` more plausible records, or a clean end before them. A clean
    /// end is the end of the file, an anchor record (journal padding, entry-log map),
    /// or a run of zeros to the end of the file or of fill bytes to a 4 KiB boundary that
    /// starts exactly at `q`. (A record whose last byte is a zero or 0xF0 is then not
    /// confirmed this way; it is still accepted when nothing contradicts it.)
    fn chain_ok<F: Framing>(&mut self, f: &F, data: &[u8], mut q: usize, mut depth: u32) -> bool {
        let len = data.len();
        loop {
            if depth == 0 || q == len {
                return true;
            }
            if len - q < 4 {
                return false;
            }
            if i32_at(data, q) == 0 {
                return self.zero_run_end(data, q) == len && run_starts_at(data, q, 0);
            }
            if let Some(fill) = f.fill() {
                if data[q] == fill {
                    let end = first_not(data, q, len.min(q + PADDING_BLOCK), fill);
                    return (end == len || (end & (PADDING_BLOCK - 1) == 0 && end - q < PADDING_BLOCK))
                        && run_starts_at(data, q, fill);
                }
            }
            match f.check(data, q, true) {
                Check::Record { end, kind } => {
                    if !f.may_sync(q, kind) {
                        return false;
                    }
                    if f.is_anchor(kind) {
                        return true;
                    }
                    depth -= 1;
                    q = end;
                }
                Check::Torn | Check::Bad(_) => return false,
            }
        }
    }

    /// Whether a record starts at `p` that the walk may resynchronise on: it passes
    /// [`Chain::frames_strongly`], and it is not the wrong one of two plausible
    /// records starting less than `SHIFT_WINDOW` bytes apart. Such pairs come from a
    /// real header seen a few bytes off (small ids shifted by a byte still look like
    /// ids):
    /// - a record starting just before `p` and covering it wins, unless the records
    ///   from `p` end exactly where it ends (then it is an envelope around them);
    /// - `p` loses when the plausible records starting just after it, inside it, end
    ///   exactly where it ends (then `p` is such an envelope).
    fn is_sync<F: Framing>(&mut self, f: &F, data: &[u8], p: usize) -> bool {
        let Some(end) = self.frames_strongly(f, data, p) else { return false };
        for c in (p + 1).saturating_sub(SHIFT_WINDOW)..p {
            if !may_start::<F>(data, c) || c + 4 > data.len() || i32_at(data, c) == 0 {
                continue;
            }
            if let Check::Record { end: end_c, kind } = f.check(data, c, true) {
                // Up to 3 bytes off, a plausible header is enough (the real record may
                // be followed by damage, and a header read 1-3 bytes early is never
                // plausible: its entry id would hold the ledger id's low bytes shifted
                // past 2^40). Further off, the record must be confirmed too, or shifted
                // views of a damaged record would hide the record after it.
                let wins = end_c > p
                    && f.may_sync(c, kind)
                    && !self.records_tile(f, data, p, end_c)
                    && (p - c <= 3 || self.frames_strongly(f, data, c).is_some());
                if wins {
                    return false;
                }
            }
        }
        for c in p + 1..end.min(p + SHIFT_WINDOW) {
            if may_start::<F>(data, c) && self.records_tile(f, data, c, end) {
                return false;
            }
        }
        true
    }

    /// Whether strictly plausible records from `from` end exactly at `to`.
    fn records_tile<F: Framing>(&self, f: &F, data: &[u8], mut from: usize, to: usize) -> bool {
        for _ in 0..MAX_TILING_RECORDS {
            if from == to {
                return true;
            }
            if from > to || from + 4 > data.len() || i32_at(data, from) == 0 {
                return false;
            }
            match f.check(data, from, true) {
                Check::Record { end, .. } => from = end,
                _ => return false,
            }
        }
        false
    }

    /// The end of the record at `p` if it passes the strict tests and is confirmed:
    /// an anchor, two more records after it (or a clean end), or, for small records,
    /// a configured digest.
    fn frames_strongly<F: Framing>(&mut self, f: &F, data: &[u8], p: usize) -> Option<usize> {
        if p + 4 > data.len() || i32_at(data, p) == 0 || f.fill() == Some(data[p]) {
            return None;
        }
        match f.check(data, p, true) {
            Check::Record { end, kind } => {
                let confirmed = f.is_anchor(kind)
                    || self.chain_ok(f, data, end, SYNC_CHAIN)
                    || (end - p <= MAX_DIGEST_RESCUE && f.verifies(data, p, end, kind));
                (f.may_sync(p, kind) && confirmed).then_some(end)
            }
            _ => None,
        }
    }

    /// The first sync point in `[from, limit)`, if any. Results are remembered, so
    /// searching again over a span already searched costs nothing.
    pub(crate) fn find_sync<F: Framing>(&mut self, f: &F, data: &[u8], from: usize, limit: usize) -> Option<usize> {
        let limit = limit.min(data.len());
        let mut from = from;
        if from >= limit {
            return None;
        }
        if let Some(k) = self.sync {
            if k.from <= from && from <= k.to {
                if k.found {
                    return (k.to < limit).then_some(k.to);
                }
                if limit <= k.to {
                    return None;
                }
                from = k.to;
            }
        }
        let found = self.search(f, data, from, limit);
        let knowledge = match found {
            Some(r) => SyncKnowledge { from, to: r, found: true },
            None => SyncKnowledge { from, to: limit, found: false },
        };
        // Extend what is known when this search continued an earlier one.
        self.sync = Some(match self.sync {
            Some(k) if !k.found && k.from <= from && from <= k.to => SyncKnowledge { from: k.from, ..knowledge },
            _ => knowledge,
        });
        found
    }

    fn search<F: Framing>(&mut self, f: &F, data: &[u8], from: usize, limit: usize) -> Option<usize> {
        let len = data.len();
        // Candidates in [from, limit) need their size field's bytes, which may
        // extend up to three bytes past limit.
        let run_limit = len.min(limit.saturating_add(3));
        let mut p = from;
        while p < limit {
            let hay = &data[p..limit];
            let hit = if F::PADDING_MARKER { memchr2(0x00, 0xFF, hay) } else { memchr(0x00, hay) };
            let i = p + hit?;
            if data[i] == 0 {
                // Inside a zero run only the last three positions can start a size
                // field with a non-zero value.
                let z = first_not(data, i, run_limit, 0);
                if z == run_limit {
                    return None;
                }
                let first = z.saturating_sub(3).max(i);
                for c in first..z.min(limit) {
                    if self.is_sync(f, data, c) {
                        return Some(c);
                    }
                }
                p = z;
            } else {
                // A run of 0xFF: a padding marker FF FF FF 00 can only end it.
                let z = first_not(data, i, run_limit, 0xFF);
                if z >= i + 3 && z < len && data[z] == 0 && z - 3 < limit && self.is_sync(f, data, z - 3) {
                    return Some(z - 3);
                }
                if z == run_limit {
                    return None;
                }
                p = z;
            }
        }
        None
    }
}
