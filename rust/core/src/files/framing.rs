//! Record framing shared by entry logs and journals: both are `[i32 size][bytes]`
//! records back to back. This module walks such a chain of records, reports every
//! span that holds no record as a [`Gap`], and resynchronises after damage. It is
//! where a record is *framed*; `scan.rs` verifies what it frames and hands the rows
//! on.
//!
//! The model in one paragraph: the walk follows size fields while each record it
//! reaches is plausible and either confirmed (strict records or a clean end after
//! it, or its digest) or contradicted by nothing. Where it loses step, it looks for
//! the next *sync point*, a record that strict tests and its own confirmation pick
//! out by position alone (so byte ranges start and stop where the whole file's walk
//! would), and reads the span between as the segmentation with the most evidence:
//! digest-verified bytes, then length-chained bytes, then strict records, then the
//! fewest damaged bytes. Digests are asked of one oracle, the scan's digest keys. An
//! entry taken whose digest then fails (or cannot be checked, and the record after
//! it misses its predecessor) gives way to the records inside it when they tile to
//! its end or one verifies ([`RecordWalk::split_failed`]). The details follow.
//!
//! Two tests decide what is a record:
//! - *accepted* (the walk is in step, right after a record or at the first record):
//!   the size field frames a plausible header (ids non-negative, the format's
//!   minimum length), and the record is confirmed (an anchor record that passes its
//!   exact form, or two more plausible records after it, or a clean end, or a
//!   verifying digest) or nothing contradicts it: no sync point lies inside it. A
//!   garbage size that fits in the file is caught by the last test and cannot
//!   swallow the good records it covers (unless it points exactly at a later record
//!   boundary, which framing alone cannot tell from a real size: then the entry's
//!   digest, when it fails, gives the records back, see [`RecordWalk::split_failed`]).
//! - *sync point* (where the walk may resume after damage, and where byte ranges
//!   start): the size field is below 16 MiB, the header passes strict tests (LAC
//!   below the entry id, entry id below 2^40, length covering the payload, exact
//!   lengths of meta and map records, zero content of padding), and the record is
//!   an anchor (journal padding, entry-log map record), or two more strictly
//!   plausible records follow it or the chain ends cleanly (end of file, or a run of
//!   zeros to the end or of fill bytes to a 4 KiB boundary starting exactly there, or
//!   an anchor whose marks survive damage to its content, see [`Framing::ends_chain`]), or,
//!   for records up to 64 KiB, its digest verifies. Of two such records
//!   starting less than 36 bytes apart (a real header and the same header read a
//!   few bytes off), one is ruled out (see [`RecordWalk::is_sync`]); a record whose
//!   digest verifies is never the one ruled out.
//!
//! A digest *verifies* when the type its ledger's setting allows (named, declared,
//! or one inference tries) matches: the framing asks the scan's [`DigestKeys`], the
//! keys its checker checks with, without the checker's memory, so the answer is the
//! same wherever a record is met.
//!
//! Where the walk loses step (a size field that frames no record, zeros where a
//! record should start, a record that nothing confirms and something contradicts:
//! a sync point inside it, or no record framing after it), the span up to the next
//! sync point is resolved as one model (see [`segmentation`]): of the readings made
//! of records chained from the walk's position, then nothing, one entry reframed by
//! its digest or one gap, then records chained exactly to the sync point, the one
//! with the most evidence wins (digest-verified bytes, then length-chained bytes,
//! then strict records, then the fewest damaged bytes). Zero runs and fill runs are
//! skipped a chunk at a time, and the search for a sync point only looks at the last
//! three bytes of each zero run (sizes below 16 MiB start with a zero byte), so
//! scanning damaged or preallocated regions is linear.
//!
//! The fill byte is the framing's: 0xF0 in direct entry logs, none in legacy entry
//! logs (whose writer never pads, so a 0xF0 run there is an overwritten record or
//! size field, reported as damage) and in journals. In a direct log a run of fill
//! bytes is padding only as the writer leaves it: from where the walk stands, not on
//! a 4 KiB boundary, up to exactly the next boundary (or the end of the file before
//! it). A run that stops short of it or goes on past it is damage.
//!
//! Every decision depends only on positions and bytes, never on where the walk
//! started, nor on how much of the file is in memory: the walk reads through a
//! [`View`], and a step that needs bytes the window does not hold returns
//! [`Need`] and is repeated once they are fetched (searches remember how far they
//! got). Byte ranges: a range `[s, e)` starts at the first sync point at or after
//! `s` (or at the first record when `s` is before it) and stops, past `e`, at the
//! first sync point it reaches. Every jump of the walk lands on or before the next
//! sync point, so one range stops exactly where the next starts and ranges that tile
//! a file yield every record once. A record that starts before `e` and covers a sync
//! point after `e` (possible only where a payload holds bytes that frame like a
//! chain of records) is reported as a [`GapKind::BadSize`] span ending at that point,
//! where the next range starts: each byte is still reported once.

use std::collections::VecDeque;
use std::sync::Arc;

use memchr::{memchr, memchr2};

use crate::digest_check::DigestKeys;
use crate::entry::HeaderLayout;
use crate::files::gap::{Gap, GapKind};
use crate::files::plausible::Plausibility;
use crate::files::runs::first_not_in;
use crate::files::window::{Fetch, Need, View};

mod segmentation;
#[cfg(test)]
mod test_files;
#[cfg(test)]
mod walk_tests;

/// Records larger than this are never taken as sync points: the first byte of a
/// sync point's size field is always zero, which makes the search a `memchr`.
pub(crate) const MAX_SYNC_RECORD: usize = (1 << 24) - 1;
/// Records up to this size may be confirmed by their digest when the chain after
/// them is damaged (bounded so a search through random bytes stays linear).
const MAX_DIGEST_RESCUE: usize = 64 * 1024;
/// A record's start, end and kind.
type RecordSpan<K> = (usize, usize, K);

/// Bytes that hold any entry's header (V1 32, V2 41).
const ENTRY_HEADER_MAX: usize = 64;
/// Entries up to this size may be recovered behind a damaged size field by their
/// digest (a larger span between two sync points is reported as damage).
const MAX_REFRAME: usize = MAX_SYNC_RECORD;
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

impl<K> Check<K> {
    /// A record of `kind` whose size field frames it to `end`, judged `verdict` by its
    /// first bytes. One the end of the file (`len`) cuts is `torn`-judged (an entry's
    /// ids are reported, so they must be ones a writer could have written) unless
    /// `strict` judged it already.
    pub(crate) fn framed(kind: K, verdict: Plausibility, torn: impl FnOnce() -> Plausibility, end: usize, len: usize, strict: bool) -> Check<K> {
        if end > len {
            let verdict = if strict || verdict != Plausibility::Plausible { verdict } else { torn() };
            return match verdict {
                Plausibility::Implausible => Check::Bad(GapKind::BadSize),
                _ => Check::Torn,
            };
        }
        match verdict {
            Plausibility::Plausible => Check::Record { end, kind },
            _ => Check::Bad(GapKind::BadRecord),
        }
    }
}

pub(crate) trait Framing {
    type Kind: Copy + Send;
    /// Filler byte the writer puts between records (0xF0 in direct entry logs).
    /// Where the format has none, such bytes are damage like any other.
    fn fill(&self) -> Option<u8>;
    /// Whether records may start with FF FF FF 00 (journal padding records).
    const PADDING_MARKER: bool;

    /// Checks the record whose size field starts at `p`. Callers guarantee
    /// `p + 4 <= v.len()`, a non-zero size field, and that the byte at `p` is not the
    /// fill byte unless its run there is no padding (then the size is negative).
    /// `strict` adds the tests a sync point must pass.
    fn check(&self, v: &View<'_>, p: usize, strict: bool) -> Fetch<Check<Self::Kind>>;

    /// The digest keys of the scan: its checker checks with them, and the framing
    /// asks them, with no memory, whether a record's digest verifies.
    fn digest_keys(&self) -> &Arc<DigestKeys>;

    /// Whether the record `[p, end)` is an entry whose digest verifies under a type
    /// its ledger's entries may have.
    fn verifies(&self, v: &View<'_>, p: usize, end: usize, kind: Self::Kind) -> Fetch<bool> {
        if !self.is_entry(kind) || !self.digest_keys().computes_any() {
            return Ok(false);
        }
        Ok(self.digest_keys().verifying_type(v.get(p + 4, end - p - 4)?).is_some())
    }

    /// Whether `[p + 4, end)` is an entry whose digest verifies, though the size
    /// field at `p` says otherwise.
    fn reframe(&self, v: &View<'_>, p: usize, end: usize) -> Fetch<Option<Self::Kind>>;

    /// Whether a record of `kind` at `p` may be a sync point (an entry log excludes
    /// the inside of its ledgers map, whose pairs of small integers mimic entries).
    fn may_sync(&self, _p: usize, _kind: Self::Kind) -> bool {
        true
    }

    /// Whether a record boundary is known to lie at `q` from outside the bytes (a
    /// journal's `lastMark`): a record ending exactly there may be a sync point.
    /// (Not a reason to accept a record the walk is in step at: a block duplicated
    /// or deleted inside the last record leaves its size field ending at the mark.)
    fn known_boundary(&self, _q: usize) -> bool {
        false
    }

    /// Records whose strict form is specific enough to end a chain on their own
    /// (journal padding records, entry-log map records).
    fn is_anchor(&self, kind: Self::Kind) -> bool;

    /// Whether the bytes at `q`, though no record passes the strict tests there,
    /// still end a chain cleanly: an anchor whose own marks are intact but whose
    /// content is damaged or cut by the end of the file. It confirms the records
    /// before it, never itself.
    fn ends_chain(&self, _v: &View<'_>, _q: usize) -> Fetch<bool> {
        Ok(false)
    }

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

/// `[start, end)` is all zeros; when `complete`, the run ends at `end` (a non-zero
/// byte or the end of the file), else it goes on at least that far.
#[derive(Debug, Clone, Copy)]
struct ZeroRun {
    start: usize,
    end: usize,
    complete: bool,
}

/// The walk over one file (or one byte range of it). Holds no borrow, so it can be
/// kept beside the window it reads through and resumed step by step.
#[derive(Debug, Clone)]
pub(crate) struct RecordWalk<K> {
    pos: usize,
    range_end: usize,
    /// The walk starts at the first sync point at or after `pos` (a range that
    /// begins after the first record), found on the first step.
    seeking: bool,
    done: bool,
    /// Steps already decided (a resolved span, a damaged header), reported before
    /// the walk goes on from `pos`.
    queue: VecDeque<Step<K>>,
    sync: Option<SyncKnowledge>,
    zeros: Option<ZeroRun>,
    /// Whether the bytes from a position to the end are zeros but for a few flaws
    /// (see [`RecordWalk::nearly_zeros_to_end`]), once known.
    tail: Option<(usize, bool)>,
}

fn step_start<K>(s: &Step<K>) -> usize {
    match s {
        Step::Record { offset, .. } => *offset,
        Step::Gap(g) => g.offset as usize,
    }
}

fn step_end<K>(s: &Step<K>) -> usize {
    match s {
        Step::Record { end, .. } => *end,
        Step::Gap(g) => g.end() as usize,
    }
}

fn gap(offset: usize, end: usize, kind: GapKind) -> Gap {
    Gap { offset: offset as u64, len: (end - offset) as u64, kind }
}

/// Whether a sync point could start at `c`: its size field starts with a zero byte
/// (records below 16 MiB) or with the journal padding marker.
fn may_start<F: Framing>(v: &View<'_>, c: usize) -> Fetch<bool> {
    let b = v.byte(c)?;
    Ok(b == 0 || (F::PADDING_MARKER && b == 0xFF))
}

/// Whether the entry record at `c` has a header that covers the size field of a
/// record at `p` (`c < p`), so that `p` is a view of it.
fn header_covers(v: &View<'_>, c: usize, p: usize) -> Fetch<bool> {
    Ok(match HeaderLayout::of(v.byte(c + 4)?) {
        HeaderLayout::Invalid => false,
        layout => p + 4 <= c + 4 + layout.header_len(),
    })
}

/// Whether the run of `byte` at `q` starts exactly there.
fn run_starts_at(v: &View<'_>, q: usize, byte: u8) -> Fetch<bool> {
    Ok(q == 0 || v.byte(q - 1)? != byte)
}

impl<K: Copy> RecordWalk<K> {
    /// A walk over `[start, end)` of a `len`-byte file whose records start at
    /// `data_start`. An entry belongs to the range its walk reaches it in (normally
    /// the range holding its size field); see the module notes for why tilings agree.
    pub(crate) fn new(len: usize, data_start: usize, start: u64, end: u64) -> RecordWalk<K> {
        let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX).min(len);
        let (start, end) = (to_usize(start), to_usize(end));
        let mut chain =
            RecordWalk { pos: len, range_end: end, seeking: false, done: true, queue: VecDeque::new(), sync: None, zeros: None, tail: None };
        if start >= end || end <= data_start {
            return chain;
        }
        chain.done = false;
        if start <= data_start {
            chain.pos = data_start;
        } else {
            chain.pos = start;
            chain.seeking = true;
        }
        chain
    }

    /// A walk that starts in step at `offset`, a known record boundary.
    pub(crate) fn in_step_at(len: usize, offset: usize) -> RecordWalk<K> {
        RecordWalk::new(len, offset.min(len), 0, u64::MAX)
    }

    /// A copy of the walk that goes on past the range's end (to look ahead).
    pub(crate) fn unbounded(&self) -> RecordWalk<K> {
        RecordWalk { range_end: usize::MAX, ..self.clone() }
    }

    /// The file's data ends at `len` now (it shrank while read): forget what was
    /// learned about the bytes past it, and stop the walk there.
    pub(crate) fn clamp(&mut self, len: usize) {
        self.sync = None;
        self.zeros = None;
        self.tail = None;
        self.range_end = self.range_end.min(len);
        // Decided steps past the new end are walked again from where they start.
        if let Some(i) = self.queue.iter().position(|s| step_end(s) > len) {
            let from = step_start(&self.queue[i]);
            self.queue.truncate(i);
            self.pos = from;
        }
        self.pos = self.pos.min(len);
    }

    /// Queues a span to be reported before anything else (a damaged header).
    pub(crate) fn push_front(&mut self, g: Gap) {
        self.queue.push_front(Step::Gap(g));
        self.done = false;
    }

    /// Where the walk stands: the next record or gap starts here (once a range's
    /// start has been found).
    pub(crate) fn position(&self) -> usize {
        // Queued records are still to be read from the window (and a cut record's
        // header, for the ids its row reports).
        let queued = self.queue.iter().find_map(|s| match s {
            Step::Record { offset, .. } => Some(*offset),
            Step::Gap(g) if g.kind == GapKind::TornRecord => Some(g.offset as usize),
            Step::Gap(_) => None,
        });
        queued.map_or(self.pos, |q| q.min(self.pos))
    }

    /// Where the range's walk begins, found if it is not known yet.
    fn settle_start<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>) -> Fetch<()> {
        if self.seeking {
            let found = self.find_sync(f, v, self.pos, self.range_end)?;
            self.seeking = false;
            match found {
                Some(p) => self.pos = p,
                None => {
                    self.pos = v.len();
                    self.done = true;
                }
            }
        }
        Ok(())
    }

    /// The entry records [`RecordWalk::next`] reaches one after another from here, as
    /// `(offset, end)`, each of which it would accept with no decision left but
    /// `chain_ok || verifies`: the walk is in step (no queued gap), the record starts
    /// before the range end and ends within it, and it frames as an entry (no zeros,
    /// fill, anchor or damage on the way). Stops after `max` records, once their
    /// entries add up to `budget` bytes (the record crossing it included), or where
    /// the window ends ([`Need`] only when not even the first record is there). The
    /// walk does not move; see [`RecordWalk::accept_verified`].
    ///
    /// A caller that finds a record's digest verified may accept it without the
    /// look-ahead: `verifies` alone confirms it, whatever `chain_ok` would say.
    pub(crate) fn clean_entries<F: Framing<Kind = K>>(
        &mut self,
        f: &F,
        v: &View<'_>,
        max: usize,
        budget: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> Fetch<()> {
        self.settle_start(f, v)?;
        if self.done || !self.queue.is_empty() {
            return Ok(());
        }
        let len = v.len();
        let mut p = self.pos;
        let mut bytes = 0usize;
        let first = out.len();
        while out.len() < max && bytes < budget && p < self.range_end && len - p >= 4 {
            let step = (|| -> Fetch<Option<usize>> {
                if v.i32_at(p)? == 0 || f.fill() == Some(v.byte(p)?) {
                    return Ok(None);
                }
                Ok(match f.check(v, p, false)? {
                    Check::Record { end, kind } if f.is_entry(kind) && !f.is_anchor(kind) && end <= self.range_end => {
                        // The whole record must be in the window, for its digest and
                        // for the rows that point into it.
                        if !v.in_window(p, end - p) {
                            return Err(Need::new(p, end - p));
                        }
                        Some(end)
                    }
                    _ => None,
                })
            })();
            match step {
                Ok(Some(end)) => {
                    out.push((p, end));
                    bytes += end - p - 4;
                    p = end;
                }
                Ok(None) => return Ok(()),
                Err(need) if out.len() == first => return Err(need),
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    /// Whether the walk is in step: no queued gap, not at its end.
    pub(crate) fn in_step(&self) -> bool {
        !self.done && !self.seeking && self.queue.is_empty()
    }

    /// Moves past the first records of an [`RecordWalk::clean_entries`] from here, `[offset,
    /// end)`, each of which its digest verified.
    pub(crate) fn accept_verified(&mut self, offset: usize, end: usize) {
        assert!(offset == self.pos && self.in_step() && offset < end, "verified records are the next ones");
        self.pos = end;
    }

    /// The next record or gap. A [`Need`] leaves the walk where it was: fetch the
    /// bytes and ask again.
    pub(crate) fn next<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>) -> Fetch<Option<Step<F::Kind>>> {
        if let Some(step) = self.queue.pop_front() {
            return Ok(Some(step));
        }
        if self.done {
            return Ok(None);
        }
        self.settle_start(f, v)?;
        if self.done {
            return Ok(None);
        }
        let len = v.len();
        let p = self.pos;
        if p >= len || (p >= self.range_end && self.is_sync(f, v, p)?) {
            self.done = true;
            return Ok(None);
        }
        if len - p < 4 {
            // One to three bytes are a size field the writer did not finish, zeros or
            // not (no writer leaves so few bytes of anything else), unless they are
            // the fill a direct log pads its last block with.
            let tail = v.get(p, len - p)?;
            let kind = if f.fill().is_some_and(|fill| tail.iter().all(|&b| b == fill)) {
                GapKind::Padding
            } else {
                GapKind::TornRecord
            };
            self.done = true;
            return Ok(Some(Step::Gap(gap(p, len, kind))));
        }
        if v.i32_at(p)? == 0 {
            return self.zero_gap(f, v, p).map(Some);
        }
        if let Some(fill) = f.fill() {
            if v.byte(p)? == fill {
                // A writer pads from the end of a record up to the next 4 KiB boundary
                // (never from a boundary), and a record follows. Any other run of fill
                // bytes stands where a size field should (an overwritten size field or
                // record, perhaps merged with padding before or after it): damage from
                // here, like any negative size. (A record overwritten up to the end of
                // the padding after it, within one block, cannot be told from padding.)
                let boundary = (p | (PADDING_BLOCK - 1)) + 1;
                let mut reached = p;
                let end = first_not_in(v, p, len.min(boundary + 1), fill, &mut reached)?;
                if p & (PADDING_BLOCK - 1) != 0 && (end == boundary || (end == len && end < boundary)) {
                    self.pos = end;
                    return Ok(Some(Step::Gap(gap(p, end, GapKind::Padding))));
                }
            }
        }
        match f.check(v, p, false)? {
            Check::Record { end, kind } => {
                // Anchors confirm themselves or not at all: a padding length damaged by
                // a multiple of the alignment still lands on a record boundary.
                let confirmed = if f.is_anchor(kind) {
                    matches!(f.check(v, p, true)?, Check::Record { .. })
                } else {
                    self.chain_ok(f, v, end, ACCEPT_CHAIN)? || f.verifies(v, p, end, kind)?
                };
                if confirmed
                    && !f.is_anchor(kind)
                    && !matches!(f.check(v, p, true)?, Check::Record { .. })
                    && !f.verifies(v, p, end, kind)?
                {
                    // Ids no writer writes (only the lenient tests pass) and records
                    // framing after it: its size field may be damaged into one pointing
                    // exactly at a later record boundary, over good records. A sync
                    // point inside it says so.
                    if let Some(r) = self.find_sync(f, v, p + 1, end)? {
                        return self.resolve(f, v, p, r, GapKind::BadSize).map(Some);
                    }
                }
                if !confirmed {
                    // Nothing confirms the record (no strict records after it, no
                    // digest). The walk has lost step if something contradicts it: a
                    // sync point inside it, or no record framing after it (an anchor
                    // is contradicted by failing its own form). Then the span up to
                    // the next sync point is read as the evidence supports best.
                    let r = self.find_sync(f, v, p + 1, len)?.unwrap_or(len);
                    if r < end || f.is_anchor(kind) || !self.plausible_at(f, v, end)? {
                        let damage = if f.is_anchor(kind) { GapKind::BadRecord } else { GapKind::BadSize };
                        return self.resolve(f, v, p, r, damage).map(Some);
                    }
                }
                if end > self.range_end {
                    // The next range starts at the first sync point after range_end;
                    // a record covering it would be reported twice. It is damage, up
                    // to the first sync point inside it (this range's records from
                    // there are good bytes again, as the whole file's walk finds them).
                    if let Some(b) = self.find_sync(f, v, (p + 1).max(self.range_end), end)? {
                        // (None lies in [range_end, b): only this range's part is left.)
                        let r = self.find_sync(f, v, p + 1, self.range_end)?.unwrap_or(b);
                        return self.resolve(f, v, p, r, GapKind::BadSize).map(Some);
                    }
                }
                self.pos = end;
                Ok(Some(Step::Record { offset: p, end, kind, reframed: false }))
            }
            Check::Torn => match self.find_sync(f, v, p + 1, len)? {
                Some(r) => self.resolve(f, v, p, r, GapKind::BadSize).map(Some),
                None => {
                    self.done = true;
                    Ok(Some(Step::Gap(gap(p, len, GapKind::TornRecord))))
                }
            },
            Check::Bad(kind) => match self.find_sync(f, v, p + 1, len)? {
                Some(r) => self.resolve(f, v, p, r, kind).map(Some),
                None => {
                    self.done = true;
                    Ok(Some(Step::Gap(gap(p, len, kind))))
                }
            },
        }
    }

    /// The entry `[p, end)` the walk just took failed its digest. When a sync point
    /// inside it starts records that end exactly at `end`, or one whose digest
    /// verifies, the entry never held them: its size field was damaged into one
    /// pointing at a later record boundary, or bytes cut from it left it ending at
    /// one. The walk then goes back and reports `[p, sync point)` as damage (or the
    /// entry a digest proves there), as a read in ranges split there does. A
    /// [`Need`] leaves the walk where it was.
    ///
    /// `unchecked`: the entry's digest could not be computed at all (an HMAC entry
    /// without its password, a V1 entry of unknown type), so it may well be whole; it
    /// gives way only to an entry inside it whose digest verifies, or to records that
    /// tile to its end, an entry last, which the entry right after it follows by the
    /// length chain (`follows`: see `digest_check::follows_by_length`). Records that
    /// merely tile prove nothing against it: its payload may hold anything; but not
    /// the previous entry of the record after it.
    pub(crate) fn split_failed<F: Framing<Kind = K>>(
        &mut self,
        f: &F,
        v: &View<'_>,
        p: usize,
        end: usize,
        unchecked: bool,
        follows: impl Fn(&[u8], &[u8], usize) -> bool,
    ) -> Fetch<Option<Step<F::Kind>>> {
        if self.pos != end || !self.in_step() {
            return Ok(None);
        }
        let Some(r) = self.find_sync(f, v, p + 1, end)? else { return Ok(None) };
        let Some(end_r) = self.frames_strongly(f, v, r)? else { return Ok(None) };
        let proven = if unchecked {
            self.digest_confirms(f, v, r, end_r)? || self.next_follows(f, v, r, end, follows)?
        } else {
            self.records_tile(f, v, r, end)? || self.digest_confirms(f, v, r, end_r)?
        };
        if !proven {
            return Ok(None);
        }
        self.resolve(f, v, p, r, GapKind::BadSize).map(Some)
    }

    /// Whether a record the walk would accept (or a clean end) starts at `q`.
    fn plausible_at<F: Framing<Kind = K>>(&self, f: &F, v: &View<'_>, q: usize) -> Fetch<bool> {
        let len = v.len();
        if q == len {
            return Ok(true);
        }
        if len - q < 4 || v.i32_at(q)? == 0 || f.fill() == Some(v.byte(q)?) {
            return Ok(false);
        }
        Ok(matches!(f.check(v, q, false)?, Check::Record { .. }))
    }

    /// Zeros at `p`: to the end of the file, or a zero region followed by data (which
    /// may begin up to three bytes before the first non-zero byte, since small size
    /// fields start with zero bytes).
    fn zero_gap<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, p: usize) -> Fetch<Step<K>> {
        let len = v.len();
        let z = self.zero_run_end(v, p)?;
        if z == len {
            self.done = true;
            return Ok(Step::Gap(gap(p, len, GapKind::TrailingZeros)));
        }
        let resume = z.saturating_sub(3).max(p);
        let r = self.find_sync(f, v, resume, len)?.unwrap_or(len);
        self.resolve(f, v, p, r, GapKind::Garbage)
    }

    /// Where the run of zeros at `p` ends (remembered, and resumed when the window
    /// ran out before the run did).
    fn zero_run_end(&mut self, v: &View<'_>, p: usize) -> Fetch<usize> {
        let (start, from) = match self.zeros {
            Some(z) if z.start <= p && p <= z.end => {
                if z.complete {
                    return Ok(z.end);
                }
                (z.start, z.end)
            }
            _ => (p, p),
        };
        let mut reached = from;
        match first_not_in(v, from, v.len(), 0, &mut reached) {
            Ok(end) => {
                self.zeros = Some(ZeroRun { start, end, complete: true });
                Ok(end)
            }
            Err(need) => {
                self.zeros = Some(ZeroRun { start, end: reached, complete: false });
                Err(need)
            }
        }
    }

    /// Whether the bytes from `z` to the end of the file are zeros but for at most
    /// one flawed byte in each 4 KiB from `z` on: the space a journal preallocates
    /// after its last record, where bits have rotted. (Records, even of zero-heavy
    /// payloads, are far denser, and the search stops at their first block; a tail
    /// this empty ends the chain as cleanly as zeros would.)
    fn nearly_zeros_to_end(&mut self, v: &View<'_>, z: usize) -> Fetch<bool> {
        if let Some((_, sparse)) = self.tail.filter(|t| t.0 == z) {
            return Ok(sparse);
        }
        let len = v.len();
        let (mut at, mut last_block) = (z, None);
        let sparse = loop {
            if at >= len {
                break true;
            }
            let block = (at - z) / PADDING_BLOCK;
            if last_block == Some(block) {
                break false;
            }
            last_block = Some(block);
            let mut reached = at + 1;
            at = first_not_in(v, at + 1, len, 0, &mut reached)?;
        };
        self.tail = Some((z, sparse));
        Ok(sparse)
    }

    /// Whether the walk, arriving at `q` after a record, finds the file continuing
    /// sensibly: `depth` more plausible records, or a clean end before them. A clean
    /// end is the end of the file, an anchor record (journal padding, entry-log map),
    /// or a run of zeros to the end of the file or of fill bytes to (or past) the next
    /// 4 KiB boundary that starts exactly at `q`. (A record whose last byte is a zero
    /// or 0xF0 is then not confirmed this way; it is still accepted when nothing
    /// contradicts it.)
    fn chain_ok<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, mut q: usize, mut depth: u32) -> Fetch<bool> {
        let len = v.len();
        loop {
            if depth == 0 || q == len {
                return Ok(true);
            }
            if len - q < 4 {
                return Ok(false);
            }
            if v.i32_at(q)? == 0 {
                let z = self.zero_run_end(v, q)?;
                return Ok((z == len || self.nearly_zeros_to_end(v, z)?) && run_starts_at(v, q, 0)?);
            }
            if let Some(fill) = f.fill() {
                if v.byte(q)? == fill {
                    let mut reached = q;
                    let end = first_not_in(v, q, len.min(q + PADDING_BLOCK), fill, &mut reached)?;
                    // Fill up to the next 4 KiB boundary, as the writer pads a flush: the
                    // run may go on past it where the next record's first bytes were
                    // overwritten with fill (that record is judged on its own).
                    let boundary = (q & !(PADDING_BLOCK - 1)) + PADDING_BLOCK;
                    let padded = q & (PADDING_BLOCK - 1) != 0 && end >= boundary;
                    return Ok((end == len || padded) && run_starts_at(v, q, fill)?);
                }
            }
            match f.check(v, q, true)? {
                Check::Record { end, kind } => {
                    if !f.may_sync(q, kind) {
                        return Ok(false);
                    }
                    if f.is_anchor(kind) {
                        return Ok(true);
                    }
                    depth -= 1;
                    q = end;
                }
                Check::Torn | Check::Bad(_) => return f.ends_chain(v, q),
            }
        }
    }

    /// Whether a record starts at `p` that the walk may resynchronise on: it passes
    /// [`RecordWalk::frames_strongly`], and it is not the wrong one of two plausible
    /// records starting less than `SHIFT_WINDOW` bytes apart. Such pairs come from a
    /// real header seen a few bytes off (small ids shifted by a byte still look like
    /// ids):
    /// - a record starting just before `p` and covering it wins, unless the records
    ///   from `p` end exactly where it ends (then it is an envelope around them);
    /// - `p` loses when the plausible records starting just after it, inside it, end
    ///   exactly where it ends (then `p` is such an envelope);
    /// - but a record whose digest verifies is a real record, never an envelope, and
    ///   wins over any view that only frames;
    /// - and an entry wins over a view whose size field lies inside its header:
    ///   the high half of a V1 ledger id, or a V2 entry's small scope id followed by
    ///   the ledger id's zero high byte (a size of 256·scope), can frame a record
    ///   ending exactly where the entry ends (told apart by a digest when there is
    ///   one; not for DUMMY entries, nor HMAC ones without the password).
    fn is_sync<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, p: usize) -> Fetch<bool> {
        let Some(end) = self.frames_strongly(f, v, p)? else { return Ok(false) };
        let mut p_verifies = None;
        for c in (p + 1).saturating_sub(SHIFT_WINDOW)..p {
            if !may_start::<F>(v, c)? || c + 4 > v.len() || v.i32_at(c)? == 0 {
                continue;
            }
            if let Check::Record { end: end_c, kind } = f.check(v, c, true)? {
                // Up to 3 bytes off, a plausible header is enough (the real record may
                // be followed by damage, and a header read 1-3 bytes early is never
                // plausible: its entry id would hold the ledger id's low bytes shifted
                // past 2^40). Further off, the record must be confirmed too, or shifted
                // views of a damaged record would hide the record after it.
                if end_c <= p || !f.may_sync(c, kind) || !(p - c <= 3 || self.frames_strongly(f, v, c)?.is_some()) {
                    continue;
                }
                if f.is_entry(kind) && header_covers(v, c, p)? {
                    let verifies = match p_verifies {
                        Some(x) => x,
                        None => *p_verifies.insert(self.digest_confirms(f, v, p, end)?),
                    };
                    if !verifies {
                        return Ok(false);
                    }
                }
                // Records from `p` ending exactly where `c` ends make `c` an envelope
                // around them, unless `c`'s digest verifies: then they are a view of
                // bytes inside a real entry.
                let c_verifies = self.digest_confirms(f, v, c, end_c)?;
                if !c_verifies && self.records_tile(f, v, p, end_c)? {
                    continue;
                }
                let verifies = match p_verifies {
                    Some(x) => x,
                    None => *p_verifies.insert(self.digest_confirms(f, v, p, end)?),
                };
                if c_verifies || !verifies {
                    return Ok(false);
                }
            }
        }
        let p_is_entry = matches!(f.check(v, p, true)?, Check::Record { kind, .. } if f.is_entry(kind));
        for c in p + 1..end.min(p + SHIFT_WINDOW) {
            if may_start::<F>(v, c)? && self.records_tile(f, v, c, end)? {
                // A view inside `p`'s header frames to its end (see above): `p` wins,
                // unless the record at `c` is one whose digest verifies.
                if p_is_entry && header_covers(v, p, c)? {
                    let Check::Record { end: end_c, .. } = f.check(v, c, true)? else { continue };
                    if !self.digest_confirms(f, v, c, end_c)? {
                        continue;
                    }
                }
                let verifies = match p_verifies {
                    Some(x) => x,
                    None => *p_verifies.insert(self.digest_confirms(f, v, p, end)?),
                };
                if !verifies {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Whether the record `[p, end)` is an entry whose digest verifies (for
    /// telling a real record from a shifted view of one; bounded like the rescue).
    fn digest_confirms<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, p: usize, end: usize) -> Fetch<bool> {
        if end - p > MAX_DIGEST_RESCUE {
            return Ok(false);
        }
        match f.check(v, p, false)? {
            Check::Record { end: e, kind } if e == end && f.is_entry(kind) => f.verifies(v, p, end, kind),
            _ => Ok(false),
        }
    }

    /// Whether strictly plausible records from `from` end exactly at `to`, an entry
    /// last, and the entry at `to` follows that one by the length chain (`follows`
    /// is given both headers and the later entry's length).
    fn next_follows<F: Framing<Kind = K>>(&self, f: &F, v: &View<'_>, from: usize, to: usize, follows: impl Fn(&[u8], &[u8], usize) -> bool) -> Fetch<bool> {
        let Some(Some((a, a_end, kind))) = self.tiling(f, v, from, to)? else { return Ok(false) };
        if !f.is_entry(kind) {
            return Ok(false);
        }
        let Some((next, next_len)) = entry_head_at(f, v, to)? else { return Ok(false) };
        Ok(follows(v.get(a + 4, (a_end - a - 4).min(ENTRY_HEADER_MAX))?, next, next_len))
    }

    /// Whether strictly plausible records from `from` end exactly at `to`.
    fn records_tile<F: Framing<Kind = K>>(&self, f: &F, v: &View<'_>, from: usize, to: usize) -> Fetch<bool> {
        Ok(self.tiling(f, v, from, to)?.is_some())
    }

    /// When strictly plausible records from `from` end exactly at `to`: the last of
    /// them (start, end, kind), none when `from` is `to`.
    fn tiling<F: Framing<Kind = K>>(&self, f: &F, v: &View<'_>, mut from: usize, to: usize) -> Fetch<Option<Option<RecordSpan<F::Kind>>>> {
        let mut last = None;
        for _ in 0..MAX_TILING_RECORDS {
            if from == to {
                return Ok(Some(last));
            }
            if from > to || from + 4 > v.len() || v.i32_at(from)? == 0 {
                return Ok(None);
            }
            match f.check(v, from, true)? {
                Check::Record { end, kind } => (last, from) = (Some((from, end, kind)), end),
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The end of the record at `p` if it passes the strict tests and is confirmed:
    /// an anchor, two more records after it (or a clean end), or, for small records,
    /// its digest.
    fn frames_strongly<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, p: usize) -> Fetch<Option<usize>> {
        if p + 4 > v.len() || v.i32_at(p)? == 0 || f.fill() == Some(v.byte(p)?) {
            return Ok(None);
        }
        match f.check(v, p, true)? {
            Check::Record { end, kind } => {
                let confirmed = f.is_anchor(kind)
                    || f.known_boundary(end)
                    || self.chain_ok(f, v, end, SYNC_CHAIN)?
                    || (end - p <= MAX_DIGEST_RESCUE && f.verifies(v, p, end, kind)?);
                Ok((f.may_sync(p, kind) && confirmed).then_some(end))
            }
            _ => Ok(None),
        }
    }

    /// The first sync point in `[from, limit)`, if any. Results are remembered (also
    /// how far a search got before the window ran out), so searching again over a
    /// span already searched costs nothing.
    pub(crate) fn find_sync<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, from: usize, limit: usize) -> Fetch<Option<usize>> {
        let limit = limit.min(v.len());
        let from0 = from;
        let mut from = from;
        if from >= limit {
            return Ok(None);
        }
        if let Some(k) = self.sync {
            if k.from <= from && from <= k.to {
                if k.found {
                    return Ok((k.to < limit).then_some(k.to));
                }
                if limit <= k.to {
                    return Ok(None);
                }
                from = k.to;
            }
        }
        let (found, to, result) = match self.search(f, v, from, limit) {
            Ok(Some(r)) => (true, r, Ok(Some(r))),
            Ok(None) => (false, limit, Ok(None)),
            Err((need, reached)) => (false, reached, Err(need)),
        };
        let knowledge = SyncKnowledge { from: from0.min(from), to, found };
        // Extend what is known when this search continued an earlier one.
        self.sync = Some(match self.sync {
            Some(k) if !k.found && k.from <= from && from <= k.to => SyncKnowledge { from: k.from, ..knowledge },
            _ => SyncKnowledge { from, ..knowledge },
        });
        result
    }

    /// The search behind [`RecordWalk::find_sync`]; on a [`Need`], also where it got to:
    /// no sync point lies before that.
    fn search<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, from: usize, limit: usize) -> Result<Option<usize>, (Need, usize)> {
        let len = v.len();
        // Candidates in [from, limit) need their size field's bytes, which may
        // extend up to three bytes past limit.
        let run_limit = len.min(limit.saturating_add(3));
        let mut p = from;
        while p < limit {
            let hay = v.contiguous_from(p, limit).map_err(|n| (n, p))?;
            let hit = if F::PADDING_MARKER { memchr2(0x00, 0xFF, hay) } else { memchr(0x00, hay) };
            let Some(k) = hit else {
                p += hay.len();
                continue;
            };
            let i = p + k;
            let byte = hay[k];
            let mut reached = i;
            if byte == 0 {
                // Inside a zero run only the last three positions can start a size
                // field with a non-zero value.
                let z = first_not_in(v, i, run_limit, 0, &mut reached).map_err(|n| (n, reached.saturating_sub(3).max(i)))?;
                if z == run_limit {
                    return Ok(None);
                }
                let first = z.saturating_sub(3).max(i);
                for c in first..z.min(limit) {
                    if self.is_sync(f, v, c).map_err(|n| (n, c))? {
                        return Ok(Some(c));
                    }
                }
                p = z;
            } else {
                // A run of 0xFF: a padding marker FF FF FF 00 can only end it.
                let z = first_not_in(v, i, run_limit, 0xFF, &mut reached).map_err(|n| (n, i))?;
                if z >= i + 3 && z < len && z - 3 < limit {
                    let c = z - 3;
                    let marker_end = v.byte(z).map_err(|n| (n, i))? == 0;
                    if marker_end && self.is_sync(f, v, c).map_err(|n| (n, i))? {
                        return Ok(Some(c));
                    }
                }
                if z == run_limit {
                    return Ok(None);
                }
                p = z;
            }
        }
        Ok(None)
    }
}

/// The header of the entry whose record starts at `q` (the bytes that hold it) and
/// the entry's length, when a strictly plausible entry record starts there.
pub(crate) fn entry_head_at<'v, F: Framing>(f: &F, v: &View<'v>, q: usize) -> Fetch<Option<(&'v [u8], usize)>> {
    if q + 4 > v.len() || v.i32_at(q)? == 0 {
        return Ok(None);
    }
    match f.check(v, q, true)? {
        Check::Record { end, kind } if f.is_entry(kind) => Ok(Some((v.get(q + 4, (end - q - 4).min(ENTRY_HEADER_MAX))?, end - q - 4))),
        _ => Ok(None),
    }
}
