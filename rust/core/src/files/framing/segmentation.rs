//! Resolving a span where the walk lost step: the segmentation the evidence
//! supports best.
//!
//! The walk is in step at `p` and cannot go on there with confidence; `r` is the
//! next sync point (or the end of the file). Every reading of `[p, r)` this module
//! considers has the same shape:
//!
//! - a *head*: records chained from `p` by their size fields (what the walk itself
//!   would take), possibly none;
//! - a *middle*: nothing, one entry whose size field alone was damaged (its digest
//!   verifies over the bytes up to the tail), or one gap typed by what it holds;
//! - a *tail*: records whose size fields chain exactly to `r` (at the end of the
//!   file also to a record the end cuts, or to zeros that run to the end),
//!   possibly none.
//!
//! Writer padding (fill to a 4 KiB boundary) may sit between records on either
//! side. Of all readings, the one with the most evidence wins, compared in order:
//! digest-verified bytes, then bytes of entries that follow the entry before them
//! by their ledger's length chain, then bytes of records that pass the strict tests
//! of a sync point, then record bytes (the fewest gap bytes), then the latest gap
//! (the walk's own reading, from `p`, first). Damage is one contiguous span: records
//! are trusted only where they link to a trusted point, the walk's position or the
//! sync point, so frames that random bytes happen to form inside damage never
//! become records.

use std::collections::HashMap;

use super::*;
use crate::digest_check::follows_by_length;
use crate::files::plausible::{entry_plausibility, Plausibility};

/// Records followed along one chain (a head, or a tail from one start).
const MAX_LINKS: usize = 64;
/// Tail starts considered in one span (frames are rare outside records; a span
/// this dense in them is resolved on the first ones).
const MAX_TAIL_STARTS: usize = 1 << 14;
/// Tail starts are looked for only this far before `r` (a tail longer than this
/// would have given a sync point itself).
const TAIL_SPAN: usize = MAX_SYNC_RECORD + 64 * 1024;
/// Bytes digested for reframing in one span.
const REFRAME_BUDGET: usize = 64 << 20;

/// What a reading shows. Readings compare by digest-verified bytes, then bytes
/// linked by the length chain, then records passing the strict tests (each one
/// more size field that lands where a plausible header starts; counted, not
/// weighed: one long frame over damage or zeros proves no more than one short
/// one), then the fewest damaged bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Evidence {
    /// Entry bytes whose digest verifies.
    pub verified: usize,
    /// Entry bytes whose header follows the entry before it by the length chain.
    pub linked: usize,
    /// Records passing the strict tests of a sync point.
    pub strict: usize,
    /// Bytes in gaps that are damage (not writer padding, not zeros at the end).
    pub damaged: usize,
}

impl Evidence {
    fn key(&self) -> (usize, usize, usize, std::cmp::Reverse<usize>) {
        (self.verified, self.linked, self.strict, std::cmp::Reverse(self.damaged))
    }

    fn damage(damaged: usize) -> Evidence {
        Evidence { damaged, ..Evidence::default() }
    }
}

impl PartialOrd for Evidence {
    fn partial_cmp(&self, o: &Evidence) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Evidence {
    fn cmp(&self, o: &Evidence) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

impl std::ops::Add for Evidence {
    type Output = Evidence;
    fn add(self, o: Evidence) -> Evidence {
        Evidence {
            verified: self.verified + o.verified,
            linked: self.linked + o.linked,
            damaged: self.damaged + o.damaged,
            strict: self.strict + o.strict,
        }
    }
}

/// One piece of a chain: a record, or writer padding after one.
#[derive(Debug, Clone, Copy)]
struct Link<K> {
    at: usize,
    end: usize,
    /// None: writer padding.
    kind: Option<K>,
    evidence: Evidence,
}

/// How a chain of size fields ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Exactly at `r`.
    Reached,
    /// In a record the end of the file cuts, starting at this position.
    Torn(usize),
    /// In zeros from this position to the end of the file.
    Zeros(usize),
    /// At this position, in bytes that are no record.
    Broken(usize),
    /// At this position after [`MAX_LINKS`] records: a chain this long is the walk
    /// in step again, and the walk goes on from here.
    Long(usize),
}

/// A tail from one start: what it shows and how it ends.
#[derive(Debug, Clone, Copy)]
struct Tail {
    evidence: Evidence,
    ending: Ending,
    /// The tail's first entry record (for the length chain from the entry before).
    first_entry: Option<(usize, usize)>,
    /// Records in it, and how many of them pass only the lenient tests.
    records: usize,
    lenient: usize,
}

/// The middle of a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Middle {
    None,
    Reframed,
    Gap,
}

#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Links of the head taken.
    head: usize,
    middle: Middle,
    /// Where the tail starts; with no middle and the whole head, `r` or the head's
    /// own ending.
    tail: usize,
    /// Evidence, then where the first gap starts (later is better).
    score: (Evidence, usize),
}

/// The length of the header after the size field at `q`, if the bytes there pass
/// the strict tests of an entry header (the size field aside), else 0.
fn strict_header_at(v: &View<'_>, q: usize) -> Fetch<usize> {
    let len = v.len();
    if q + 4 >= len {
        return Ok(0);
    }
    let layout = HeaderLayout::of(v.byte(q + 4)?);
    if layout == HeaderLayout::Invalid {
        return Ok(0);
    }
    let n = layout.header_len() + 20;
    let head = v.get(q + 4, ENTRY_HEADER_MAX.min(len - q - 4))?;
    Ok(if entry_plausibility(head, n, true) == Plausibility::Plausible { layout.header_len() } else { 0 })
}

impl<K: Copy> RecordWalk<K> {
    /// Resolves `[p, r)` (see the module notes): queues the steps of the best
    /// reading, moves the walk to its end, and returns the first step. `damage`
    /// names a gap at `p` that starts with non-zero bytes.
    pub(super) fn resolve<F: Framing<Kind = K>>(
        &mut self,
        f: &F,
        v: &View<'_>,
        p: usize,
        r: usize,
        damage: GapKind,
    ) -> Fetch<Step<K>> {
        let (head, head_ending) = self.links_from(f, v, p, r)?;
        let mut tails: HashMap<usize, Option<Tail>> = HashMap::new();
        let mut starts = Vec::new();
        // (Zeros at p are no tail start but for their last three bytes.)
        let zeros = if v.len() - p >= 4 && v.i32_at(p)? == 0 { self.zero_run_end(v, p)?.saturating_sub(3) } else { 0 };
        let from = (p + 1).max(r.saturating_sub(TAIL_SPAN)).max(zeros);
        self.tail_starts(f, v, from, r, &mut tails, &mut starts)?;

        // Each prefix of the head: where it leaves the walk, what it shows, its last entry.
        let mut prefixes = vec![(p, Evidence::default(), None::<(usize, usize)>)];
        for l in &head {
            let (_, mut ev, mut last) = prefixes[prefixes.len() - 1];
            ev = ev + l.evidence;
            if l.kind.is_some_and(|k| f.is_entry(k)) {
                if let Some((a, _)) = last {
                    if self.links_by_length(v, a, l.at, l.end)? {
                        ev.linked += l.end - l.at - 4;
                    }
                }
                last = Some((l.at, l.end));
            }
            prefixes.push((l.end, ev, last));
        }

        // Where the head places size fields: each link's start and where it ends.
        let head_starts: Vec<usize> = std::iter::once(p)
            .chain(head.iter().map(|l| l.end))
            .filter(|&q| q < r)
            .collect();
        let mut best: Option<Reading> = None;
        let better = |best: &Option<Reading>, score: (Evidence, usize)| best.is_none_or(|b| score > b.score);
        // The whole head with its own ending: r, or at the end of the file a cut
        // record or zeros to the end.
        let (h_all, ev_all, _) = prefixes[head.len()];
        let whole_gap_start = match head_ending {
            Ending::Reached | Ending::Long(_) => Some(r),
            Ending::Torn(t) | Ending::Zeros(t) => Some(t),
            Ending::Broken(_) => None,
        };
        if let Some(g) = whole_gap_start {
            let torn = if let Ending::Torn(t) = head_ending { v.len() - t } else { 0 };
            let ev = ev_all + Evidence::damage(torn);
            best = Some(Reading { head: head.len(), middle: Middle::None, tail: h_all, score: (ev, g) });
        }
        let mut budget = REFRAME_BUDGET;
        for (i, &(h, ev_h, last_h)) in prefixes.iter().enumerate() {
            for c in starts.iter().copied().filter(|&c| c >= h).chain(std::iter::once(r)) {
                let tail = if c == r {
                    Tail { evidence: Evidence::default(), ending: Ending::Reached, first_entry: None, records: 0, lenient: 0 }
                } else {
                    match tails.get(&c).copied().flatten() {
                        Some(t) => t,
                        None => continue,
                    }
                };
                if c == h {
                    if c == r {
                        continue; // (the whole head, above)
                    }
                    // Head and tail meet.
                    let mut ev = ev_h + tail.evidence;
                    if let (Some((a, _)), Some((b, b_end))) = (last_h, tail.first_entry) {
                        if b == c && self.links_by_length(v, a, b, b_end)? {
                            ev.linked += b_end - b - 4;
                        }
                    }
                    if better(&best, (ev, r)) {
                        best = Some(Reading { head: i, middle: Middle::None, tail: c, score: (ev, r) });
                    }
                    continue;
                }
                // A record the end of the file cuts, where the head places it, holds
                // what lies after its start: only a sync point breaks it.
                if let Ending::Torn(t) = head_ending {
                    if r == v.len() && h <= t && t < c {
                        continue;
                    }
                }
                // Headers hold ids, not sizes: a tail whose first size field lies in
                // the header of an entry the head frames at or after h (the record it
                // ends in included) is a view of that header, unless a digest says
                // otherwise.
                if c < r && tail.evidence.verified == 0 {
                    let mut covered = false;
                    for &q in head_starts.iter().filter(|&&q| h <= q && q < c && c < q + 4 + ENTRY_HEADER_MAX) {
                        // (A header the strict tests accept at q is one, whatever the
                        // size field before it says.)
                        let covers = c < q + 4 + strict_header_at(v, q)?;
                        if covers {
                            covered = true;
                            break;
                        }
                    }
                    if covered {
                        continue;
                    }
                }
                let ev = ev_h + tail.evidence + Evidence::damage(c - h);
                if better(&best, (ev, h)) {
                    best = Some(Reading { head: i, middle: Middle::Gap, tail: c, score: (ev, h) });
                }
                // The entry at h whose size field alone was damaged: its digest
                // verifies over the bytes up to the tail.
                let n = c - h;
                let ev = ev_h + tail.evidence;
                let upper = ev + Evidence { verified: n, linked: n, strict: 1, damaged: 0 };
                if n <= MAX_REFRAME + 4 && n <= budget && better(&best, (upper, r)) {
                    budget -= n;
                    if f.reframe(v, h, c)?.is_some() {
                        let ev = ev + Evidence { verified: n - 4, ..Evidence::default() };
                        if better(&best, (ev, r)) {
                            best = Some(Reading { head: i, middle: Middle::Reframed, tail: c, score: (ev, r) });
                        }
                    }
                }
            }
        }
        let best = best.expect("a gap up to r is always a reading");
        self.queue_reading(f, v, p, r, (&head, head_ending), best, damage)?;
        Ok(self.queue.pop_front().expect("a reading has a step"))
    }

    /// Whether the entry record at `b` follows the one at `a` by its ledger's
    /// length chain.
    fn links_by_length(&self, v: &View<'_>, a: usize, b: usize, b_end: usize) -> Fetch<bool> {
        let a_head = v.get(a + 4, ENTRY_HEADER_MAX.min(b.saturating_sub(a + 4)))?;
        let b_len = b_end - b - 4;
        let b_head = v.get(b + 4, ENTRY_HEADER_MAX.min(b_len))?;
        Ok(follows_by_length(a_head, b_head, b_len))
    }

    /// The link at `q` (a record framing within `r`, or writer padding), or how a
    /// chain ends there.
    fn link_at<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, q: usize, r: usize) -> Fetch<Result<Link<K>, Ending>> {
        let len = v.len();
        if let Some(fill) = f.fill() {
            if v.byte(q)? == fill && q & (PADDING_BLOCK - 1) != 0 {
                let boundary = (q | (PADDING_BLOCK - 1)) + 1;
                let mut reached = q;
                let end = first_not_in(v, q, r.min(boundary + 1), fill, &mut reached)?;
                if end == boundary || (end == len && end < boundary) {
                    return Ok(Ok(Link { at: q, end, kind: None, evidence: Evidence::default() }));
                }
            }
        }
        if r - q < 4 {
            // One to three bytes at the end are a size field the writer did not
            // finish (or, all fill, a direct log's padding; see `RecordWalk::next`).
            let fill_only = f.fill().is_some_and(|fill| v.get(q, r - q).is_ok_and(|b| b.iter().all(|&x| x == fill)));
            return Ok(match (r == len, fill_only) {
                (true, true) => Ok(Link { at: q, end: r, kind: None, evidence: Evidence::default() }),
                (true, false) => Err(Ending::Torn(q)),
                _ => Err(Ending::Broken(q)),
            });
        }
        if v.i32_at(q)? == 0 {
            let z = self.zero_run_end(v, q)?;
            return Ok(Err(if z == len && r == len { Ending::Zeros(q) } else { Ending::Broken(q) }));
        }
        match f.check(v, q, false)? {
            Check::Record { end, kind } if end <= r => {
                let framed = end - q;
                let strict = matches!(f.check(v, q, true)?, Check::Record { .. });
                if f.is_anchor(kind) && !strict {
                    // Anchors confirm themselves or not at all.
                    return Ok(Err(Ending::Broken(q)));
                }
                let verified = f.is_entry(kind) && framed <= MAX_DIGEST_RESCUE && f.verifies(v, q, end, kind)?;
                let evidence = Evidence {
                    verified: if verified { framed - 4 } else { 0 },
                    linked: 0,
                    damaged: 0,
                    strict: usize::from(strict),
                };
                Ok(Ok(Link { at: q, end, kind: Some(kind), evidence }))
            }
            Check::Torn if r == len => Ok(Err(Ending::Torn(q))),
            _ => Ok(Err(Ending::Broken(q))),
        }
    }

    /// The links chained from `q` towards `r`, and how the chain ends.
    fn links_from<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, mut q: usize, r: usize) -> Fetch<(Vec<Link<K>>, Ending)> {
        let mut links = Vec::new();
        while q < r {
            if links.len() == MAX_LINKS {
                return Ok((links, Ending::Long(q)));
            }
            match self.link_at(f, v, q, r)? {
                Ok(l) => {
                    q = l.end;
                    links.push(l);
                }
                Err(ending) => return Ok((links, ending)),
            }
        }
        Ok((links, Ending::Reached))
    }

    /// Finds the tail starts in `[from, r)`: positions where a size field may start
    /// (a zero byte, or a journal padding marker; in a zero run only its last three
    /// positions) whose chain ends well.
    fn tail_starts<F: Framing<Kind = K>>(
        &mut self,
        f: &F,
        v: &View<'_>,
        from: usize,
        r: usize,
        tails: &mut HashMap<usize, Option<Tail>>,
        starts: &mut Vec<usize>,
    ) -> Fetch<()> {
        let mut c = from;
        while c < r && starts.len() < MAX_TAIL_STARTS {
            let hay = v.contiguous_from(c, r)?;
            let hit = if F::PADDING_MARKER { memchr2(0x00, 0xFF, hay) } else { memchr(0x00, hay) };
            let Some(k) = hit else {
                c += hay.len();
                continue;
            };
            c += k;
            if c + 4 <= v.len() && v.i32_at(c)? == 0 {
                let mut reached = c;
                let z = first_not_in(v, c, r, 0, &mut reached)?;
                c = z.saturating_sub(3).max(c + 1);
                continue;
            }
            if self.tail_from(f, v, c, r, tails)?.is_some() {
                starts.push(c);
            }
            c += 1;
        }
        Ok(())
    }

    /// The tail from `c`, if its chain ends well and (ending anywhere but `r`) holds
    /// a record. Memoised: chains from nearby starts share their ends.
    fn tail_from<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, c: usize, r: usize, tails: &mut HashMap<usize, Option<Tail>>) -> Fetch<Option<Tail>> {
        let len = v.len();
        if let Some(known) = tails.get(&c) {
            return Ok(*known);
        }
        let mut path: Vec<Link<K>> = Vec::new();
        let mut q = c;
        let mut end: Option<Tail> = loop {
            if q == r {
                break Some(Tail { evidence: Evidence::default(), ending: Ending::Reached, first_entry: None, records: 0, lenient: 0 });
            }
            if let Some(known) = tails.get(&q) {
                break *known;
            }
            if path.len() == MAX_LINKS {
                break None;
            }
            match self.link_at(f, v, q, r)? {
                Ok(l) => {
                    q = l.end;
                    path.push(l);
                }
                // With no sync point after it, a chain may end anywhere the file's
                // last bytes stop framing (kept only if its records are strict).
                Err(e) if r == len || matches!(e, Ending::Torn(_) | Ending::Zeros(_)) => {
                    let damaged = match e {
                        Ending::Torn(t) | Ending::Broken(t) | Ending::Long(t) => len - t,
                        Ending::Zeros(_) | Ending::Reached => 0,
                    };
                    break Some(Tail { evidence: Evidence::damage(damaged), ending: e, first_entry: None, records: 0, lenient: 0 });
                }
                Err(_) => break None,
            }
        };
        if path.is_empty() {
            // Nothing but an ending at c: no tail of its own.
            tails.insert(c, None);
            return Ok(None);
        }
        for l in path.iter().rev() {
            let Some(t) = end else {
                tails.insert(l.at, None);
                continue;
            };
            let mut ev = t.evidence + l.evidence;
            let mut first_entry = t.first_entry;
            if l.kind.is_some_and(|k| f.is_entry(k)) {
                if let Some((b, b_end)) = t.first_entry {
                    if b == l.end && self.links_by_length(v, l.at, b, b_end)? {
                        ev.linked += b_end - b - 4;
                    }
                }
                first_entry = Some((l.at, l.end));
            }
            let (records, lenient) = match l.kind {
                Some(_) => (t.records + 1, t.lenient + 1 - l.evidence.strict),
                None => (t.records, t.lenient),
            };
            let tail = Tail { evidence: ev, ending: t.ending, first_entry, records, lenient };
            // A tail that does not land exactly on a sync point (it ends with the
            // file, in a record the end cuts, in zeros to the end, or, with no sync
            // point after it, in damage) is weaker evidence: it must hold records,
            // all passing the strict tests.
            let keep = (t.ending == Ending::Reached && r < len) || (records > 0 && lenient == 0);
            tails.insert(l.at, keep.then_some(tail));
            end = Some(tail);
        }
        Ok(tails.get(&c).copied().flatten())
    }

    /// Queues the steps of `reading` and moves the walk to its end.
    #[allow(clippy::too_many_arguments)]
    fn queue_reading<F: Framing<Kind = K>>(
        &mut self,
        f: &F,
        v: &View<'_>,
        p: usize,
        r: usize,
        (head, head_ending): (&[Link<K>], Ending),
        reading: Reading,
        damage: GapKind,
    ) -> Fetch<()> {
        let mut steps: Vec<Step<K>> = Vec::new();
        let push_link = |steps: &mut Vec<Step<K>>, l: &Link<K>| match l.kind {
            Some(kind) => steps.push(Step::Record { offset: l.at, end: l.end, kind, reframed: false }),
            None => steps.push(Step::Gap(gap(l.at, l.end, GapKind::Padding))),
        };
        for l in &head[..reading.head] {
            push_link(&mut steps, l);
        }
        let h = head[..reading.head].last().map_or(p, |l| l.end);
        let c = reading.tail;
        match reading.middle {
            Middle::None => {}
            Middle::Reframed => {
                let kind = f.reframe(v, h, c)?.expect("the entry verified a moment ago");
                steps.push(Step::Record { offset: h, end: c, kind, reframed: true });
            }
            Middle::Gap => {
                let kind = if h == p { damage } else { self.damage_at(f, v, h)? };
                steps.extend(self.typed_gaps(f, v, h, c, kind)?.into_iter().map(Step::Gap));
            }
        }
        // The tail, walked again from its start (the same links, by the same tests),
        // or the whole head's own ending.
        let whole_head = reading.head == head.len() && reading.middle == Middle::None && c == h;
        let (tail, ending) = if whole_head { (Vec::new(), head_ending) } else { self.links_from(f, v, c, r)? };
        for l in &tail {
            push_link(&mut steps, l);
        }
        let len = v.len();
        let end = match ending {
            Ending::Reached => r,
            Ending::Long(q) => q,
            Ending::Torn(t) => {
                steps.push(Step::Gap(gap(t, len, GapKind::TornRecord)));
                len
            }
            Ending::Zeros(z) => {
                steps.push(Step::Gap(gap(z, len, GapKind::TrailingZeros)));
                len
            }
            Ending::Broken(b) => {
                // (A reading's tail never breaks; should one, the rest is a gap.)
                let kind = self.damage_at(f, v, b)?;
                steps.extend(self.typed_gaps(f, v, b, r, kind)?.into_iter().map(Step::Gap));
                r
            }
        };
        self.pos = end;
        self.queue.extend(steps);
        Ok(())
    }

    /// What is wrong with the size field at `q`, where no record may start.
    fn damage_at<F: Framing<Kind = K>>(&self, f: &F, v: &View<'_>, q: usize) -> Fetch<GapKind> {
        if q + 4 > v.len() {
            return Ok(GapKind::TornRecord);
        }
        Ok(match f.check(v, q, false)? {
            Check::Bad(kind) => kind,
            _ => GapKind::BadSize,
        })
    }

    /// The gap `[u, c)` as it reads: zeros; zeros then other bytes (or a record the
    /// end of the file cuts); or damage named `damage`. Fewer zeros than the
    /// smallest record before other bytes are a zeroed size field and the zero
    /// bytes of the header it framed: one damaged record.
    fn typed_gaps<F: Framing<Kind = K>>(&mut self, f: &F, v: &View<'_>, u: usize, c: usize, damage: GapKind) -> Fetch<Vec<Gap>> {
        let len = v.len();
        let z = self.zero_run_end(v, u)?.min(c);
        if z == c {
            return Ok(vec![gap(u, c, if c == len { GapKind::TrailingZeros } else { GapKind::Zeros })]);
        }
        if c - u < 4 || v.i32_at(u)? != 0 {
            return Ok(vec![gap(u, c, damage)]);
        }
        if z - u < MIN_RECORD_SPAN {
            return Ok(vec![gap(u, c, GapKind::BadSize)]);
        }
        if c == len {
            // A record the end of the file cuts, right after the zeros?
            for t in z.saturating_sub(3).max(u)..=z {
                if t + 4 <= len && v.i32_at(t)? != 0 && matches!(f.check(v, t, false)?, Check::Torn) {
                    return Ok(vec![gap(u, t, GapKind::Zeros), gap(t, len, GapKind::TornRecord)]);
                }
            }
        }
        Ok(vec![gap(u, z, GapKind::Zeros), gap(z, c, GapKind::Garbage)])
    }
}

#[cfg(test)]
mod tests {
    //! Each test pins one term of the model on a damage shape it decides.
    use std::io::Cursor;

    use crate::digest::DigestType;
    use crate::files::framing::test_files::{bump_size, entry, legacy_log, read, read_journal};
    use crate::files::gap::GapKind;
    use crate::files::journal::JournalWriter;

    #[test]
    fn a_verified_reframing_beats_a_size_field_one_too_large() {
        // A CRC32 entry whose size field reads one too large, then an intact DUMMY
        // entry: the digest proves the entry up to the next record, which stays whole.
        let a = entry(7, 0, -1, 40, &[1; 40], DigestType::Crc32);
        let b = entry(7, 1, 0, 90, &[2; 50], DigestType::Crc32);
        let c = entry(9, 0, -1, 60, &[3; 60], DigestType::Dummy);
        let d = entry(9, 1, 0, 70, &[4; 10], DigestType::Dummy);
        let (mut data, at) = legacy_log(&[a, b, c, d]);
        bump_size(&mut data, at[1], 1);
        assert_eq!(
            read(&data),
            vec![(at[0], "entry".into()), (at[1], "reframed".into()), (at[2], "entry".into()), (at[3], "entry".into())]
        );
    }

    #[test]
    fn zeros_end_where_a_strict_record_starts() {
        // Zeros over two records, then a record whose size field starts with zero
        // bytes, then damage to the end: the record starts at its own size field, not
        // where its first non-zero byte would put a cut record.
        let es: Vec<Vec<u8>> = (0..4).map(|i| entry(21, i, i - 1, 100 * (i + 1), &[5; 100], DigestType::Dummy)).collect();
        let (mut data, at) = legacy_log(&es);
        data[at[1]..at[3]].fill(0);
        let end = data.len();
        data.extend_from_slice(&[0xFF, 0xFF, 0xFB, 0xFF, 0, 0, 0, 9]);
        let got = read(&data);
        assert_eq!(got[..3], [(at[0], "entry".into()), (at[1], "zeros".into()), (at[3], "entry".into())], "{got:?}");
        assert!(got.len() == 4 && got[3].0 == end, "{got:?}");
    }

    /// A log whose second record's size field is negative and whose last record
    /// ends the file with no sync point after the damage.
    fn damaged_before_last(last_lac: i64) -> (Vec<(usize, String)>, Vec<usize>) {
        let a = entry(3, 0, -1, 10, &[1; 10], DigestType::Dummy);
        let b = entry(3, 1, 0, 20, &[2; 10], DigestType::Dummy);
        let c = entry(3, 2, last_lac, 30, &[3; 10], DigestType::Dummy);
        let (mut data, at) = legacy_log(&[a, b, c]);
        data[at[1]..at[1] + 4].copy_from_slice(&(-5i32).to_be_bytes());
        (read(&data), at)
    }

    #[test]
    fn a_tail_that_ends_with_the_file_must_pass_the_strict_tests() {
        // The last record lands exactly on the end of the file either way; only
        // with a LAC below its id (the strict tests) is it taken.
        let (got, at) = damaged_before_last(1);
        assert_eq!(got, vec![(at[0], "entry".into()), (at[1], "bad_size".into()), (at[2], "entry".into())]);
        let (got, at) = damaged_before_last(2);
        assert_eq!(got, vec![(at[0], "entry".into()), (at[1], "bad_size".into())]);
    }

    #[test]
    fn damage_between_two_trusted_points_is_one_gap() {
        // Random bytes over the middle of three records: one gap from the walk's
        // position to the next sync point, and the records either side intact.
        let es: Vec<Vec<u8>> = (0..6).map(|i| entry(4, i, i - 1, 64 * (i + 1), &[i as u8; 64], DigestType::Crc32c)).collect();
        let (mut data, at) = legacy_log(&es);
        let mut x: u32 = 0x1234_5678;
        for b in &mut data[at[2] + 2..at[3] + 50] {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = (x >> 24) as u8 | 0x80;
        }
        let got = read(&data);
        let gaps: Vec<_> = got.iter().filter(|(_, k)| k != "entry").collect();
        assert_eq!(gaps.len(), 1, "{got:?}");
        assert_eq!(gaps[0].0, at[2]);
        assert!(got.contains(&(at[4], "entry".into())) && got.contains(&(at[5], "entry".into())), "{got:?}");
    }

    #[test]
    fn strict_records_count_before_damaged_bytes() {
        // The evidence order itself: a reading with one more strict record wins over
        // one with fewer damaged bytes; verified bytes win over both.
        use super::Evidence;
        let more_strict = Evidence { strict: 2, damaged: 500, ..Evidence::default() };
        let less_damage = Evidence { strict: 1, damaged: 10, ..Evidence::default() };
        assert!(more_strict > less_damage);
        let verified = Evidence { verified: 1, strict: 0, damaged: 10_000, ..Evidence::default() };
        assert!(verified > more_strict);
        let linked = Evidence { linked: 1, damaged: 10_000, ..Evidence::default() };
        assert!(linked > more_strict && verified > linked);
    }

    #[test]
    fn a_journal_entry_after_a_size_field_one_too_large_is_kept() {
        // The same shape in a V4 journal whose last entry is the one after the
        // damaged size field: the end of the file is the only boundary after it.
        let mut w = JournalWriter::new(Cursor::new(Vec::new()), 4, 512, 0).unwrap();
        let a = w.add_entry(&entry(8, 0, -1, 30, &[1; 30], DigestType::Crc32)).unwrap() as usize;
        let b = w.add_entry(&entry(8, 1, 0, 130, &[2; 100], DigestType::Crc32)).unwrap() as usize;
        let c = w.add_entry(&entry(58, 3, 2, 8042, &[0; 1241], DigestType::Dummy)).unwrap() as usize;
        let mut data = w.finish().unwrap().into_inner();
        bump_size(&mut data, b, 1);
        let got: Vec<(usize, String)> = read_journal(&data).into_iter().filter(|(_, k)| k != "trailing_zeros").collect();
        assert_eq!(got, vec![(a, "entry".into()), (b, "reframed".into()), (c, "entry".into())]);
    }

    /// A V4 journal holding one entry and a fence, the fence's meta id set to `id`.
    fn journal_with_meta(id: i64) -> Vec<(usize, String)> {
        let mut w = JournalWriter::new(Cursor::new(Vec::new()), 4, 512, 0).unwrap();
        w.add_entry(&entry(5, 0, -1, 10, &[1; 10], DigestType::Crc32c)).unwrap();
        let fence = w.add_fence(5).unwrap() as usize;
        w.add_entry(&entry(5, 1, 0, 20, &[2; 10], DigestType::Crc32c)).unwrap();
        let mut data = w.finish().unwrap().into_inner();
        // The record's length field, its ledger id, then its entry id.
        assert_eq!(data[fence..fence + 4], 16i32.to_be_bytes());
        data[fence + 12..fence + 20].copy_from_slice(&id.to_be_bytes());
        read_journal(&data)
    }

    #[test]
    fn an_unknown_journal_meta_record_is_framed_not_damage() {
        let got = journal_with_meta(-0x10000);
        assert_eq!(got.iter().map(|g| g.1.as_str()).collect::<Vec<_>>(), ["entry", "unknown_meta -65536", "entry"]);
        // An id far below any meta id is an entry id damage made negative.
        let got = journal_with_meta(i64::MIN + 5);
        assert!(got.iter().any(|g| g.1 == GapKind::BadRecord.as_str() || g.1 == GapKind::BadSize.as_str()), "{got:?}");
        assert_eq!(got.iter().filter(|g| g.1 == "entry").count(), 2, "{got:?}");
    }
}
