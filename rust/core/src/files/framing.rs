//! Record framing shared by entry logs and journals: both are `[i32 size][bytes]`
//! records back to back. This module walks such a chain of records, reports every
//! span that holds no record as a [`Gap`], and resynchronises after damage.
//!
//! Two tests decide what is a record:
//! - *accepted* (the walk is in step, at the byte after a good record): the size
//!   field frames a plausible header, and either the records after it frame too, or
//!   its digest verifies, or no resynchronisation point lies inside it. A garbage
//!   size that fits in the file is caught by the last test, so it cannot swallow the
//!   good records it covers.
//! - *sync point* (the walk lost step, or a byte range starts mid-file): the size
//!   field is below 16 MiB, the header passes stricter tests (ids, last-add-confirmed
//!   below the entry id, non-negative length), and two more records after it frame
//!   with plausible headers, or the chain ends cleanly (end of file, zeros to the end,
//!   padding, the ledgers map), or, for small records, a configured digest verifies.
//!   Every sync point is also accepted, and every decision depends only on the
//!   position and the bytes, never on where the walk started.
//!
//! Byte ranges: a range `[s, e)` starts at the first sync point at or after `s` and
//! stops, past `e`, at the first sync point it reaches. Because every jump of the
//! walk lands on or before the next sync point, the walk of one range stops exactly
//! where the next range starts, and ranges that tile a file yield every record once.
//! A record that starts before `e` and covers a sync point after `e` is reported as
//! a [`GapKind::BadSize`] span ending at that point (the next range starts there).

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
    /// Filler byte written between records (0xF0 in direct entry logs).
    const FILL: Option<u8>;
    /// Whether records may start with FF FF FF 00 (journal padding records).
    const PADDING_MARKER: bool;

    /// Checks the record whose size field starts at `p`. Callers guarantee
    /// `p + 4 <= data.len()`, a non-zero size field, and that `data[p]` is not the
    /// fill byte. `strict` adds the tests a sync point must pass.
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
}

#[inline]
fn i32_at(data: &[u8], p: usize) -> i32 {
    i32::from_be_bytes(data[p..p + 4].try_into().expect("4 bytes"))
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
        if p >= len || (p >= self.range_end && self.is_sync(f, data, p)) {
            self.done = true;
            return None;
        }
        if len - p < 4 {
            self.done = true;
            let kind = if data[p..].iter().all(|&b| b == 0) {
                GapKind::TrailingZeros
            } else if F::FILL.is_some_and(|fill| data[p..].iter().all(|&b| b == fill)) {
                GapKind::Padding
            } else {
                GapKind::TornRecord
            };
            return Some(Step::Gap(gap(p, len, kind)));
        }
        if i32_at(data, p) == 0 {
            return Some(self.zero_gap(f, data, p));
        }
        if let Some(fill) = F::FILL {
            if data[p] == fill {
                let end = first_not(data, p, len, fill);
                // Four fill bytes in the middle of a block may be a size field
                // overwritten in front of an intact entry.
                if end - p == 4 && end % PADDING_BLOCK != 0 {
                    if let Some(r) = self.find_sync(f, data, p + 1, len) {
                        if let Some(kind) = f.reframe(data, p, r) {
                            self.pos = r;
                            return Some(Step::Record { offset: p, end: r, kind, reframed: true });
                        }
                    }
                }
                self.pos = end;
                return Some(Step::Gap(gap(p, end, GapKind::Padding)));
            }
        }
        match f.check(data, p, false) {
            Check::Record { end, kind } => {
                let anchor = f.is_anchor(kind) && matches!(f.check(data, p, true), Check::Record { .. });
                if !anchor && !self.chain_ok(f, data, end, ACCEPT_CHAIN) && !f.verifies(data, p, end, kind) {
                    // The next record does not frame: either this size field is wrong
                    // or the damage starts after this record. A sync point inside the
                    // record says the size field is wrong; one after it may still
                    // frame this entry with a digest that verifies.
                    if let Some(r) = self.find_sync(f, data, p + 1, len) {
                        if r < end {
                            return Some(self.damage_from(f, data, p, r, GapKind::BadSize));
                        }
                        if let Some(kind) = f.reframe(data, p, r) {
                            self.pos = r;
                            return Some(Step::Record { offset: p, end: r, kind, reframed: true });
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
        Step::Gap(match found {
            Some(r) if r <= z => {
                self.pos = r;
                gap(p, r, GapKind::Zeros)
            }
            Some(r) => {
                self.pos = r;
                self.pending[0] = Some(gap(z, r, GapKind::Garbage));
                gap(p, z, GapKind::Zeros)
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
    /// or a run of zeros to the end of the file or of 0xF0 to a 4 KiB boundary that
    /// starts exactly at `q`. (A record whose last byte is a zero or 0xF0 is then not
    /// confirmed this way; it is still accepted when nothing contradicts it.)
    fn chain_ok<F: Framing>(&mut self, f: &F, data: &[u8], mut q: usize, mut depth: u32) -> bool {
        let len = data.len();
        loop {
            if q == len || len - q < 4 {
                return true;
            }
            if i32_at(data, q) == 0 {
                return self.zero_run_end(data, q) == len && run_starts_at(data, q, 0);
            }
            if let Some(fill) = F::FILL {
                if data[q] == fill {
                    let end = first_not(data, q, len.min(q + PADDING_BLOCK), fill);
                    return (end == len || (end % PADDING_BLOCK == 0 && end - q < PADDING_BLOCK))
                        && run_starts_at(data, q, fill);
                }
            }
            if depth == 0 {
                return true;
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

    /// Whether a record starts at `p` that the walk may resynchronise on.
    fn is_sync<F: Framing>(&mut self, f: &F, data: &[u8], p: usize) -> bool {
        if p + 4 > data.len() || i32_at(data, p) == 0 || F::FILL == Some(data[p]) {
            return false;
        }
        match f.check(data, p, true) {
            Check::Record { end, kind } => {
                f.may_sync(p, kind)
                    && (f.is_anchor(kind) || self.chain_ok(f, data, end, SYNC_CHAIN))
                    || (end - p <= MAX_DIGEST_RESCUE && f.verifies(data, p, end, kind))
            }
            _ => false,
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
