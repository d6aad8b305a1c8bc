//! The one scan of a record file (an entry log or a journal), batch by batch.
//!
//! Where things happen, in order:
//! - bytes come from a [`ReadAt`] source into the scan's [`Window`] (`window.rs`);
//! - a record is *framed* by the walk of `framing.rs`, through the entry-log or
//!   journal framing (`entry_log/scan.rs`, `journal/scan.rs`);
//! - an entry is *verified* by the [`DigestChecker`] (`digest_check.rs`): runs of
//!   entries whose digests verify are taken together (their CRCs computed as
//!   interleaved streams, the walk moved past them without its look-ahead), and
//!   everything else one step at a time;
//! - every entry, record and damaged span becomes a *row* of a [`ScanSink`] (the
//!   Arrow readers in `arrow/file_reader.rs`; the in-memory scans, through
//!   [`LentScan`]; ledgers-map counts), which never calls back into the scan.
//!
//! A file that shrinks while it is read is read up to where its data now ends and
//! a row says it shrank; an I/O error ends the scan with a row naming the offset.
//!
//! A byte range that starts past the first record is *warmed up*: the scan first
//! walks up to [`WARM_UP_BYTES`] before it, giving no rows, so that what it knows
//! there (each ledger's digest type and length chain, whether a password is the
//! ledger's, where the last record ended) is what a read of the whole file knows:
//! ranges that tile a file give exactly the rows of the whole-file read.

use std::sync::Arc;

use crate::digest_check::{follows_by_length, CheckedEntry, DigestChecker, LedgerKey, Lesson, LookAhead, Outcome, DigestStatus, GROUP_LEN};
use crate::error::{Error, ErrorKind, Result};
use crate::files::framing::{entry_head_at, RecordWalk, Framing, Step};
use crate::files::gap::{Gap, GapKind};
use crate::files::source::ReadAt;
use crate::files::window::{Frozen, Need, View, Window};
use crate::ledger_digest_settings::LedgerDigestSettings;

/// How a scan reads and checks.
#[derive(Debug, Clone)]
pub struct RecordScanSettings {
    pub digests: LedgerDigestSettings,
    /// Check digests (types are inferred either way, to locate payloads).
    pub verify: bool,
    /// The byte range `[start, end)`; see `framing.rs` for how ranges tile.
    pub start: u64,
    pub end: u64,
    /// Stop at the first damaged span or bad entry, returning it as the error.
    pub raise: bool,
    /// The rows of a batch keep pointing into the window (payload views): it holds
    /// everything from the batch's first row until the batch is frozen.
    pub retain: bool,
}

impl RecordScanSettings {
    pub fn new(digests: LedgerDigestSettings) -> Self {
        RecordScanSettings { digests, verify: true, start: 0, end: u64::MAX, raise: false, retain: false }
    }
}

/// An entry record and how its check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedEntry {
    /// File offset of the record's size field.
    pub offset: u64,
    /// File offset of the entry's first byte.
    pub at: usize,
    /// The entry's length (the size field's value).
    pub len: usize,
    pub checked: CheckedEntry,
}

impl std::borrow::Borrow<CheckedEntry> for ScannedEntry {
    fn borrow(&self) -> &CheckedEntry {
        &self.checked
    }
}

/// So that [`DigestChecker::check_group`] writes a run's checks in place.
impl std::borrow::BorrowMut<CheckedEntry> for ScannedEntry {
    fn borrow_mut(&mut self) -> &mut CheckedEntry {
        &mut self.checked
    }
}

impl ScannedEntry {
    /// The payload's span in the file, when the entry's digest type (so where its
    /// payload starts) is known.
    #[inline(always)]
    pub fn payload(&self) -> Option<(usize, usize)> {
        let skip = self.checked.payload_at as usize;
        (skip > 0).then(|| (self.at + skip, self.len - skip))
    }
}

/// A record that holds no entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherRecord<'a> {
    LedgerKey { ledger_id: i64, master_key: &'a [u8] },
    Fence { ledger_id: i64 },
    ExplicitLac { ledger_id: i64, lac_blob: &'a [u8] },
    /// A journal meta record of a type not known here.
    UnknownMeta { ledger_id: i64, entry_id: i64 },
    Padding { pad_len: u32 },
    /// A record of an entry log's ledgers map (its index: no row in a reader).
    LedgersMap,
}

impl OtherRecord<'_> {
    pub const fn name(&self) -> &'static str {
        match self {
            OtherRecord::LedgerKey { .. } => "ledger_key",
            OtherRecord::Fence { .. } => "fence",
            OtherRecord::ExplicitLac { .. } => "explicit_lac",
            OtherRecord::UnknownMeta { .. } => "unknown_meta",
            OtherRecord::Padding { .. } => "padding",
            OtherRecord::LedgersMap => "ledgers_map",
        }
    }
}

/// A row the scan gives one at a time, outside a run of clean entries: a flagged or
/// unframed entry, a record that holds no entry, a damaged span.
#[derive(Debug, Clone)]
pub enum SingleRow<'a> {
    /// An entry whose fields are known but which is damaged (or found behind a
    /// damaged size field): the error says how.
    /// `message` is the `error` column's text, `kind` its `error_kind`; `reframed`:
    /// framed by where the next record starts, its size field being damaged.
    FlaggedEntry { entry: ScannedEntry, message: String, kind: &'static str, reframed: bool },
    /// An entry record that does not frame as an entry under the settings.
    UnframedEntry { offset: u64, bytes: &'a [u8], message: String, kind: &'static str, reframed: bool },
    Record { offset: u64, span: u64, record: OtherRecord<'a> },
    /// A span holding no record: damage.
    Damage { gap: Gap, detail: Option<String>, torn_ids: Option<(i64, i64)> },
    /// Padding or preallocated zeros: what healthy files hold, which readers give no
    /// row (the in-memory scans list them).
    Unlisted(Gap),
}

/// What a scan fills: runs of clean entries and single rows, in file order.
pub(crate) trait ScanSink {
    /// Rows so far in the current batch.
    fn rows(&self) -> usize;
    /// Entries whose checks passed (verified, or unchecked with no damage), in file
    /// order. `view` holds their bytes.
    fn entries(&mut self, view: &View<'_>, run: &[ScannedEntry]);
    /// Any other row.
    fn row(&mut self, view: &View<'_>, row: SingleRow<'_>);
}

/// What a record file's framing adds to the walk: the rows of records that are not
/// entries.
pub(crate) trait RecordFormat: Framing {
    /// The kind of entry records.
    const ENTRY: Self::Kind;

    /// The row of a record the walk accepted that holds no entry (`None` for an entry).
    fn other_record<'a>(&self, kind: Self::Kind, offset: usize, bytes: &'a [u8]) -> Option<OtherRecord<'a>>;

    /// The kind of the record a row holds (the inverse of [`RecordFormat::other_record`]).
    fn kind_of(record: &OtherRecord<'_>) -> Self::Kind;
}

/// How far [`RecordScan::fill`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// The batch is full (or the window needs freeing first); more may follow.
    More,
    /// The scan reached the end of its range.
    Done,
}

/// How far the scan looks ahead for an unknown ledger's type.
const LOOK_AHEAD_BYTES: usize = 4 << 20;
const LOOK_AHEAD_RECORDS: usize = 4096;
const MAX_SYNC_RECORD_BYTES: usize = crate::files::framing::MAX_SYNC_RECORD;

/// How far before a range's start its scan walks first (see the module notes): as
/// far as the look-ahead for a ledger's type reaches.
pub(crate) const WARM_UP_BYTES: u64 = LOOK_AHEAD_BYTES as u64;

/// How far before an offset a byte range must start to hold every row that starts
/// there as the whole file reads it. A range starts where its walk can resume (the
/// first sync point at or after its start), which a damaged span never is, so a
/// lookup by offset reads from this far before it and keeps the rows that start at
/// or after it (its walk is in step with the whole file's by then).
pub const OFFSET_LOOKUP_LEAD: u64 = WARM_UP_BYTES;

/// Plain steps the clean path sits out after a run took nothing (damage, entries
/// whose type needs inferring or that have no digest), so such files pay for its
/// framing only now and then.
const RUN_BACKOFF: u32 = 8;

/// A scan of one file: its window, walk and checker, and the state between batches.
pub(crate) struct RecordScan<'a, F: RecordFormat> {
    window: Window<'a>,
    framing: F,
    walk: RecordWalk<F::Kind>,
    /// Checks digests whatever the read asked: a digest that verifies confirms a
    /// record where framing alone would look ahead, so an unverified read frames as
    /// fast (and as well) as a verified one. Only its rows do not say.
    checker: DigestChecker,
    /// Whether rows give the digests' verdicts (`verify`); else they are "not asked".
    report_digests: bool,
    raise: bool,
    retain: bool,
    /// The first byte the current batch's rows point into.
    batch_keep: Option<usize>,
    /// Entry bytes in the current batch.
    batch_bytes: usize,
    backoff: u32,
    records: Vec<(usize, usize)>,
    run: Vec<ScannedEntry>,
    /// The file was `len` bytes when opened and its data now ends at `at`.
    shrank: Option<(usize, usize, String)>,
    /// Rows to give once the walk is done (what the header promised and the file lacks).
    trailing: Vec<(Gap, String)>,
    /// What to say of particular damaged spans the walk reports (a damaged header's
    /// own error), by offset and kind.
    details: Vec<(u64, GapKind, String)>,
    /// Where the last record ended.
    records_end: usize,
    /// Where the last damaged span the walk reported ended.
    damage_end: usize,
    /// Where the data must reach (a journal's `lastMark`).
    expected_end: Option<usize>,
    /// The last bytes fetched, to stop a step that could never proceed.
    last_need: Option<Need>,
    /// A step taken but not yet turned into a row (its record was not in the window).
    held_step: Option<Step<F::Kind>>,
    /// Ledgers whose type the scan looked ahead for (once each).
    looked_ahead: std::collections::HashSet<LedgerKey>,
    /// Warming up (see the module notes): the walk is before the range; the range's
    /// own walk.
    warm: Option<RecordWalk<F::Kind>>,
    done: bool,
}

impl<'a, F: RecordFormat> RecordScan<'a, F> {
    pub(crate) fn new(window: Window<'a>, framing: F, walk: RecordWalk<F::Kind>, settings: &RecordScanSettings) -> Self {
        let checker = DigestChecker::with_keys(framing.digest_keys().clone(), true).with_dummy_chains();
        let records_end = walk.position();
        RecordScan {
            window,
            framing,
            walk,
            checker,
            report_digests: settings.verify,
            raise: settings.raise,
            retain: settings.retain,
            batch_keep: None,
            batch_bytes: 0,
            backoff: 0,
            records: Vec::with_capacity(GROUP_LEN),
            run: Vec::with_capacity(GROUP_LEN),
            shrank: None,
            trailing: Vec::new(),
            details: Vec::new(),
            records_end,
            damage_end: 0,
            expected_end: None,
            last_need: None,
            held_step: None,
            looked_ahead: std::collections::HashSet::new(),
            warm: None,
            done: false,
        }
    }

    /// Makes a range that starts past `data_start` (the first record) warm up first
    /// (see the module notes).
    pub(crate) fn warm_up_from(&mut self, data_start: usize, settings: &RecordScanSettings) {
        let len = self.window.len();
        if settings.start <= data_start as u64 || settings.start >= settings.end.min(len as u64) {
            return;
        }
        let from = settings.start.saturating_sub(WARM_UP_BYTES);
        let cold = std::mem::replace(&mut self.walk, RecordWalk::new(len, data_start, from, settings.start));
        self.records_end = self.walk.position();
        self.warm = Some(cold);
    }

    /// Walks the bytes before the range, its rows dropped and nothing raised, then
    /// starts the range's own walk. (The warm-up stops where that walk begins, at the
    /// range's first sync point, or at the end of the data when there is none; or
    /// where the bytes before the range fail to read, which the range does not report.)
    fn warm_up(&mut self) {
        struct Drop;
        impl ScanSink for Drop {
            fn rows(&self) -> usize {
                0
            }
            fn entries(&mut self, _: &View<'_>, _: &[ScannedEntry]) {}
            fn row(&mut self, _: &View<'_>, _: SingleRow<'_>) {}
        }
        let (raise, retain) = (self.raise, self.retain);
        (self.raise, self.retain) = (false, false);
        let mut walked = Ok(());
        while self.warm.is_some() && walked.is_ok() {
            walked = self.fill_rows(&mut Drop, usize::MAX, usize::MAX).map(|_| ());
            self.finish_batch();
        }
        (self.raise, self.retain) = (raise, retain);
        if walked.is_err() {
            // The bytes before the range could not be read (an I/O error, a file that
            // shrank): the range is read as it would be without warming up, and says
            // so itself if its own bytes fail too.
            self.start_range();
            self.records_end = self.walk.position();
        }
    }

    pub(crate) fn source(&self) -> &Arc<dyn ReadAt + 'a> {
        self.window.source()
    }

    /// What the row of the damaged span of `kind` at `offset` says, when the walk
    /// reports it.
    pub(crate) fn describe(&mut self, offset: u64, kind: GapKind, detail: String) {
        self.details.push((offset, kind, detail));
    }

    /// Adds a row to give once the walk is done.
    pub(crate) fn add_trailing(&mut self, gap: Gap, detail: String) {
        self.trailing.push((gap, detail));
    }

    /// The records must reach `end` (a journal's `lastMark`): a row says so at the
    /// end of the scan when they stop short of it.
    pub(crate) fn expect_data_to(&mut self, end: usize) {
        self.expected_end = Some(end);
    }

    /// Bytes held in memory for the scan.
    pub fn held(&self) -> usize {
        self.window.held()
    }


    /// Appends rows to `sink` until it holds `max_rows` rows or `max_bytes` entry
    /// bytes, or the scan ends. An error is the first damage under `raise`, or what
    /// stopped the reads when even that cannot be a row; the rows before it are in
    /// the sink.
    pub fn fill(&mut self, sink: &mut dyn ScanSink, max_rows: usize, max_bytes: usize) -> Result<Fill> {
        if self.warm.is_some() {
            self.warm_up();
        }
        self.fill_rows(sink, max_rows, max_bytes)
    }

    fn fill_rows(&mut self, sink: &mut dyn ScanSink, max_rows: usize, max_bytes: usize) -> Result<Fill> {
        if self.done {
            return Ok(Fill::Done);
        }
        self.batch_bytes = 0;
        if self.retain {
            // The window holds the batch's records, what runs past the byte budget
            // (a run of entries, a record), and the read-ahead.
            self.window.expect_span(max_bytes.saturating_add(max_bytes / 4).saturating_add(1 << 20));
        }
        if self.held_step.is_some() && !self.take_held_step(sink)? {
            return Ok(Fill::More);
        }
        loop {
            if sink.rows() >= max_rows || self.batch_bytes >= max_bytes {
                return Ok(Fill::More);
            }
            if self.backoff == 0 && self.walk.in_step() && self.checker.verifies() {
                let (rows_left, budget) = (max_rows - sink.rows(), max_bytes - self.batch_bytes);
                match self.take_clean_entries(sink, rows_left, budget) {
                    Ok(true) => {
                        self.last_need = None;
                        continue;
                    }
                    Ok(false) => self.backoff = RUN_BACKOFF,
                    Err(need) => {
                        // Not the plain step asking again: a search of the plain step
                        // may have moved the window past the walk's position (a zero
                        // run longer than the window).
                        self.last_need = None;
                        match self.fetch_whole(need) {
                            Ok(true) => {}
                            Ok(false) => return Ok(Fill::More),
                            // The file shrank under the run: the walk is clamped to its
                            // new end, and the plain step says what became of the record.
                            Err(e) if e.kind == ErrorKind::Truncated && !self.raise => self.backoff = RUN_BACKOFF,
                            Err(e) => return Err(e),
                        }
                        continue;
                    }
                }
            }
            self.backoff = self.backoff.saturating_sub(1);
            let step = match self.walk.next(&self.framing, &self.window.view()) {
                Ok(step) => {
                    self.last_need = None;
                    step
                }
                Err(need) => {
                    if !self.fetch(need)? {
                        return Ok(Fill::More);
                    }
                    continue;
                }
            };
            match step {
                Some(step) => {
                    self.held_step = Some(step);
                    if !self.take_held_step(sink)? {
                        return Ok(Fill::More);
                    }
                }
                None if self.warm.is_some() => {
                    self.start_range();
                    return Ok(Fill::Done);
                }
                None => {
                    self.finish(sink)?;
                    return Ok(Fill::Done);
                }
            }
        }
    }

    /// The warm-up walk stopped (where the range's own walk begins, or at the end of
    /// the data): the range's own walk starts, knowing what the warm-up learned.
    fn start_range(&mut self) {
        let Some(cold) = self.warm.take() else { return };
        self.walk = cold;
        (self.held_step, self.last_need, self.backoff, self.batch_keep, self.batch_bytes) = (None, None, 0, None, 0);
        self.window.release(self.walk.position());
    }

    /// The clean path: the entries from the walk's position that frame without
    /// look-ahead and whose digests verify, checked together. False when it took
    /// none.
    fn take_clean_entries(&mut self, sink: &mut dyn ScanSink, rows_left: usize, budget: usize) -> std::result::Result<bool, Need> {
        self.records.clear();
        let view = self.window.view();
        self.walk.clean_entries(&self.framing, &view, rows_left.min(GROUP_LEN), budget, &mut self.records)?;
        if self.records.is_empty() {
            return Ok(false);
        }
        let mut entries: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
        for (e, &(p, end)) in entries.iter_mut().zip(&self.records) {
            *e = view.get(p + 4, end - p - 4).expect("a run's records are in the window");
        }
        let n = self.records.len();
        self.run.clear();
        self.run.extend(self.records.iter().map(|&(p, end)| ScannedEntry { offset: p as u64, at: p + 4, len: end - p - 4, checked: empty_checked() }));
        let k = self.checker.check_group(&entries[..n], &mut self.run);
        if k == 0 {
            return Ok(false);
        }
        self.run.truncate(k);
        if !self.report_digests {
            for e in &mut self.run {
                e.checked.verdict = DigestStatus::NotAsked;
            }
        }
        let (first, last) = (self.records[0].0, self.records[k - 1].1);
        self.walk.accept_verified(first, last);
        self.batch_keep.get_or_insert(first);
        self.batch_bytes += last - first - 4 * k;
        self.records_end = last;
        sink.entries(&view, &self.run);
        Ok(true)
    }

    /// The step the walk just took (held until its record is in the window, which
    /// rows point into). False: the window needs the batch to end first.
    fn take_held_step(&mut self, sink: &mut dyn ScanSink) -> Result<bool> {
        let Some(step) = self.held_step else { return Ok(true) };
        let step = match step {
            Step::Record { offset, end, .. } if !self.window.view().in_window(offset, end - offset) => {
                match self.fetch_whole(Need::new(offset, end - offset)) {
                    Ok(true) => step,
                    Ok(false) => return Ok(false),
                    // The file shrank under the record: what is left of it is torn.
                    Err(e) if e.kind == ErrorKind::Truncated && !self.raise => {
                        let now = self.window.len();
                        let gap = Gap { offset: offset as u64, len: (now.saturating_sub(offset)) as u64, kind: GapKind::TornRecord };
                        self.held_step = None;
                        if gap.len > 0 {
                            self.damage(sink, &self.window.view(), gap, None, None)?;
                        }
                        return Ok(true);
                    }
                    Err(e) => return Err(e),
                }
            }
            _ => step,
        };
        self.held_step = None;
        self.take_step(sink, step)?;
        Ok(true)
    }

    /// Looks at the entries after the walk's position (a few MiB, a few thousand
    /// records) for what tells `ledger`'s digest type (see [`LookAhead`]).
    /// Framing is not changed by it; what it finds comes back as a lesson on top of
    /// `base` (the entry in question's own, not yet learned). `keep` (that entry)
    /// stays in the window.
    fn look_ahead(&mut self, ledger: LedgerKey, keep: usize, base: Option<Lesson>) -> Lesson {
        // (Past the range's end too: what is learned decides no framing.)
        let mut walk = self.walk.unbounded();
        let from = walk.position();
        let mut learned = LookAhead::new(ledger);
        let mut records = 0;
        // With payload views, the batch's rows so far point into the window too.
        let hold = if self.retain { self.batch_keep.map_or(keep, |b| b.min(keep)) } else { keep };
        loop {
            let step = match walk.next(&self.framing, &self.window.view()) {
                Ok(Some(step)) => step,
                Ok(None) => break,
                Err(need) => {
                    let far = need.at.saturating_add(need.len).saturating_sub(keep) > LOOK_AHEAD_BYTES + MAX_SYNC_RECORD_BYTES;
                    if far || !matches!(self.window.fetch(need, hold, hold), Ok(true)) {
                        break;
                    }
                    continue;
                }
            };
            let Step::Record { offset, end, kind, .. } = step else { continue };
            records += 1;
            if records > LOOK_AHEAD_RECORDS || offset > from + LOOK_AHEAD_BYTES {
                break;
            }
            if !self.framing.is_entry(kind) {
                continue;
            }
            let view = self.window.view();
            let Ok(bytes) = view.get(offset + 4, end - offset - 4) else { break };
            if learned.consider(&self.checker, bytes) {
                break;
            }
        }
        learned.lesson(&self.checker, base)
    }

    /// One step of the walk as a row (or none).
    fn take_step(&mut self, sink: &mut dyn ScanSink, step: Step<F::Kind>) -> Result<()> {
        let view = self.window.view();
        match step {
            Step::Gap(gap) if !gap.kind.is_damage() => {
                sink.row(&view, SingleRow::Unlisted(gap));
                Ok(())
            }
            Step::Gap(gap) => {
                self.damage_end = self.damage_end.max(gap.end() as usize);
                let torn_ids = match gap.kind {
                    GapKind::TornRecord => torn_ids(&view, &gap),
                    _ => None,
                };
                let detail = self.details.iter().find(|d| (d.0, d.1) == (gap.offset, gap.kind)).map(|d| d.2.clone());
                self.damage(sink, &view, gap, detail, torn_ids)
            }
            Step::Record { offset, end, kind, reframed } if self.framing.is_entry(kind) => {
                self.records_end = end;
                self.batch_keep.get_or_insert(offset);
                let bytes = view.get(offset + 4, end - offset - 4).expect("a step's record is in the window");
                self.batch_bytes += bytes.len();
                // The checker answers without learning: what the entry teaches is
                // learned once it is taken as one (damage teaches nothing; a read in
                // ranges never takes it for a record at all).
                let mut looked_ahead = None;
                let (mut outcome, mut lesson) = self.checker.assess(bytes, None);
                if let Some(ledger) = self.checker.needs_look_ahead(&outcome) {
                    // The first entry of a ledger seen here did not verify (damaged, or
                    // of a type the digests cannot tell): the ledger's entries further
                    // on may say which.
                    if self.looked_ahead.insert(ledger) {
                        looked_ahead = Some(ledger);
                        let found = self.look_ahead(ledger, offset, lesson);
                        if !self.window.view().in_window(offset, end - offset) {
                            self.fetch_whole(Need::new(offset, end - offset))?;
                        }
                        let view = self.window.view();
                        let bytes = view.get(offset + 4, end - offset - 4).expect("the record was fetched back");
                        (outcome, lesson) = self.checker.assess(bytes, Some(found));
                    }
                }
                let mismatch = matches!(&outcome, Outcome::Framed(_, Some(e)) if e.kind == ErrorKind::DigestMismatch);
                let unconfirmed = lesson.is_some_and(|l| l.span_unconfirmed());
                let unchecked = matches!(&outcome, Outcome::Framed(c, None) if matches!(c.verdict, DigestStatus::Unchecked(_)));
                // An unchecked entry whose size and length fields agree may still have
                // lost bytes from inside: the record after it then lacks its ledger's
                // previous entry, which this one may hold.
                let suspect = unconfirmed || (unchecked && !reframed && self.may_hold_next_predecessor(offset, end, lesson));
                if !reframed && (mismatch || suspect) {
                    if let Some(step) = self.split_failed(offset, end, suspect) {
                        // Not one entry: the span before the records it held, then them
                        // (its lesson is not learned).
                        if let Some(ledger) = looked_ahead {
                            self.looked_ahead.remove(&ledger);
                        }
                        self.records_end = offset;
                        self.batch_bytes -= end - offset - 4;
                        return self.take_step(sink, step);
                    }
                }
                if let Some(lesson) = lesson {
                    self.checker.learn(lesson);
                }
                if !reframed && (mismatch || suspect) && !self.window.view().in_window(offset, end - offset) {
                    self.fetch_whole(Need::new(offset, end - offset))?;
                }
                if !self.report_digests {
                    // Unverified reads say nothing of digests (what the digest check
                    // found of the entry's own framing, a length chain, neither).
                    if let Outcome::Framed(checked, _) = outcome {
                        outcome = Outcome::Framed(CheckedEntry { verdict: DigestStatus::NotAsked, ..checked }, None);
                    }
                }
                let view = self.window.view();
                let bytes = view.get(offset + 4, end - offset - 4).expect("a step's record is in the window");
                let scanned = |checked| ScannedEntry { offset: offset as u64, at: offset + 4, len: bytes.len(), checked };
                match outcome {
                    Outcome::Framed(checked, None) if !reframed => {
                        sink.entries(&view, std::slice::from_ref(&scanned(checked)));
                    }
                    Outcome::Framed(checked, error) => {
                        let (raised, message, kind) = match error {
                            Some(e) => {
                                let kind = match e.kind {
                                    ErrorKind::DigestMismatch => "digest_mismatch",
                                    ErrorKind::IdMismatch => "bad_entry",
                                    _ => "length_mismatch",
                                };
                                (e.clone().at_base(offset as u64 + 4), entry_message(&e), kind)
                            }
                            None => (Error::corrupt(offset as u64, REFRAMED_MESSAGE), REFRAMED_MESSAGE.to_string(), "reframed"),
                        };
                        if self.raise {
                            return Err(self.locate(raised));
                        }
                        sink.row(&view, SingleRow::FlaggedEntry { entry: scanned(checked), message, kind, reframed });
                    }
                    Outcome::Unframed(error) => {
                        if self.raise {
                            return Err(self.locate(error.at_base(offset as u64 + 4)));
                        }
                        let kind = entry_error_kind(DigestStatus::NotAsked, Some(error.kind));
                        sink.row(&view, SingleRow::UnframedEntry { offset: offset as u64, bytes, message: entry_message(&error), kind, reframed });
                    }
                }
                Ok(())
            }
            Step::Record { offset, end, kind, .. } => {
                self.records_end = end;
                let bytes = view.get(offset, end - offset).expect("a step's record is in the window");
                if let Some(record) = self.framing.other_record(kind, offset, bytes) {
                    self.batch_keep.get_or_insert(offset);
                    sink.row(&view, SingleRow::Record { offset: offset as u64, span: (end - offset) as u64, record });
                }
                Ok(())
            }
        }
    }

    /// Whether the record at `end` is an entry whose ledger's previous entry has not
    /// been seen (not its entry 0, nor the one after the last seen), and the entry
    /// `[offset, end)` holds that entry's ids as a header would (a search much cheaper
    /// than looking for records inside it). Fetches what it needs while the entry
    /// stays in the window.
    fn may_hold_next_predecessor(&mut self, offset: usize, end: usize, pending: Option<Lesson>) -> bool {
        let hold = if self.retain { self.batch_keep.map_or(offset, |b| b.min(offset)) } else { offset };
        loop {
            let view = self.window.view();
            match entry_head_at(&self.framing, &view, end) {
                Ok(Some((head, _))) => {
                    let Some(ids) = self.checker.missing_predecessor(head, pending) else { return false };
                    let Ok(bytes) = view.get(offset + 5, end - offset - 5) else { return false };
                    return memchr::memmem::find(bytes, &ids).is_some();
                }
                Ok(None) => return false,
                Err(need) => {
                    if !matches!(self.window.fetch(need, hold, hold), Ok(true)) {
                        return false;
                    }
                }
            }
        }
    }

    /// [`RecordWalk::split_failed`] on the entry `[offset, end)` just taken, fetching what
    /// it needs while the entry stays in the window.
    fn split_failed(&mut self, offset: usize, end: usize, unchecked: bool) -> Option<Step<F::Kind>> {
        let hold = if self.retain { self.batch_keep.map_or(offset, |b| b.min(offset)) } else { offset };
        loop {
            match self.walk.split_failed(&self.framing, &self.window.view(), offset, end, unchecked, follows_by_length) {
                Ok(step) => return step,
                Err(need) => {
                    if !matches!(self.window.fetch(need, hold, hold), Ok(true)) {
                        return None;
                    }
                }
            }
        }
    }

    fn damage(&self, sink: &mut dyn ScanSink, view: &View<'_>, gap: Gap, detail: Option<String>, torn_ids: Option<(i64, i64)>) -> Result<()> {
        if self.raise {
            let kind = match gap.kind {
                GapKind::TornRecord | GapKind::TornHeader | GapKind::Truncated | GapKind::Shrank => ErrorKind::Truncated,
                GapKind::Unreadable => ErrorKind::Io,
                _ => ErrorKind::Corrupt,
            };
            let message = match &detail {
                Some(d) => format!("{}: {d}", gap.kind.as_str()),
                None => gap_message(&gap),
            };
            return Err(self.locate(Error::new(kind, gap.offset, message)));
        }
        sink.row(view, SingleRow::Damage { gap, detail, torn_ids });
        Ok(())
    }

    /// The walk is done: what the file lacks, then how it shrank.
    fn finish(&mut self, sink: &mut dyn ScanSink) -> Result<()> {
        self.done = true;
        let view = self.window.view();
        // (From the end of the records, or of the damage after them: rows do not overlap.)
        let at = self.records_end.max(self.damage_end);
        if let Some(mark) = self.expected_end.filter(|&m| m > at) {
            let detail = format!(
                "lastMark says this journal was written up to byte {mark}; its data ends at byte {at}"
            );
            let gap = Gap { offset: at as u64, len: (mark - at) as u64, kind: GapKind::BeforeLastMark };
            self.damage(sink, &view, gap, Some(detail), None)?;
        }
        for (gap, detail) in std::mem::take(&mut self.trailing) {
            self.damage(sink, &view, gap, Some(detail), None)?;
        }
        if let Some((at, len, detail)) = self.shrank.take() {
            let gap = Gap { offset: at as u64, len: (len - at) as u64, kind: GapKind::Shrank };
            self.damage(sink, &view, gap, Some(detail), None)?;
        }
        Ok(())
    }

    /// Fetches what a step needs. False: the window cannot grow without dropping
    /// bytes the batch's rows point into, so the batch must end first. A file that
    /// shrank is read on up to its new end; other read errors end the scan.
    fn fetch(&mut self, need: Need) -> Result<bool> {
        // Every fetch makes the bytes a step asked for readable, so the step asked
        // again gets further; the same request twice in a row would mean it cannot.
        if self.last_need.replace(need) == Some(need) {
            return Err(self.locate(Error::new(ErrorKind::Corrupt, need.at as u64, format!(
                "internal: the scan asked twice for the same {} bytes at byte {}; stopping rather than looping",
                need.len, need.at))));
        }
        let pos = self.walk.position();
        let keep = if self.retain { self.batch_keep.unwrap_or(pos).min(pos) } else { pos };
        match self.window.fetch(need, keep, pos) {
            Ok(true) => Ok(true),
            // The batch ends first, and the next one asks again.
            Ok(false) => {
                self.last_need = None;
                Ok(false)
            }
            Err(e) if e.kind == ErrorKind::Truncated && self.shrank.is_none() => {
                let old = self.window.len();
                let now = (e.offset as usize).min(self.window.source().current_len().map_or(usize::MAX, |l| l as usize));
                self.shrank = Some((now, old, e.detail.clone()));
                self.window.clamp(now);
                self.walk.clamp(now);
                Ok(true)
            }
            Err(e) if self.raise => Err(self.locate(e)),
            Err(e) => {
                // Nothing more can be read: say where, and stop there.
                let len = self.window.source().len() as usize;
                let at = need.at.max(pos).min(len);
                self.window.clamp(pos);
                self.walk.clamp(pos);
                self.add_trailing(Gap { offset: at as u64, len: (len - at) as u64, kind: GapKind::Unreadable }, e.message());
                Ok(true)
            }
        }
    }

    /// [`RecordScan::fetch`] into the window itself: bytes rows will point into. A
    /// file that shrank is clamped as there, and the error returned for the caller
    /// to say what became of the record.
    fn fetch_whole(&mut self, need: Need) -> Result<bool> {
        let pos = self.walk.position().min(need.at);
        let keep = if self.retain { self.batch_keep.unwrap_or(pos).min(pos) } else { pos };
        match self.window.fetch_whole(need, keep, pos) {
            Ok(fetched) => Ok(fetched),
            Err(e) if e.kind == ErrorKind::Truncated && self.shrank.is_none() => {
                let old = self.window.len();
                let now = (e.offset as usize).min(self.window.source().current_len().map_or(usize::MAX, |l| l as usize));
                self.shrank = Some((now, old, e.detail.clone()));
                self.window.clamp(now);
                self.walk.clamp(now);
                Err(self.locate(e))
            }
            Err(e) => Err(self.locate(e)),
        }
    }

    /// Ends the current batch: for payload views, the window's bytes the batch's
    /// rows point into (the window goes on in a new buffer); otherwise the window
    /// forgets what the scan has passed.
    pub fn finish_batch(&mut self) -> Option<Frozen> {
        let pos = self.walk.position();
        let first = self.batch_keep.take();
        if self.retain {
            // A batch holding a small part of the window (few rows, or the file's last
            // ones) gets a copy of its own bytes: batches kept together must not each
            // keep a whole window alive.
            if let Some(from) = first.filter(|&from| pos.saturating_sub(from).saturating_mul(4) < self.window.held()) {
                return Some(self.window.copy_out(from, pos));
            }
            Some(self.window.freeze(pos))
        } else {
            self.window.release(pos);
            None
        }
    }

    fn locate(&self, e: Error) -> Error {
        match self.window.source().path() {
            Some(p) => e.in_file(p),
            None => e,
        }
    }
}

/// A scan of bytes in hand as walk steps, in file order: what the in-memory scans
/// (`EntryLog::scan`, `Journal::scan`) are made of, so they frame a file exactly as
/// the readers do. Entries whose check failed are steps too (the in-memory scans
/// leave digests to the caller); steps carry offsets, the bytes are the caller's.
pub(crate) struct LentScan<'a, F: RecordFormat> {
    scan: RecordScan<'a, F>,
    steps: Steps<F>,
    done: bool,
}

/// Rows per batch of a [`LentScan`].
const LENT_BATCH_ROWS: usize = 1024;

impl<'a, F: RecordFormat> LentScan<'a, F> {
    pub(crate) fn new(scan: RecordScan<'a, F>) -> Self {
        let steps = Steps { steps: std::collections::VecDeque::with_capacity(LENT_BATCH_ROWS), len: scan.window.len() };
        LentScan { scan, steps, done: false }
    }
}

impl<F: RecordFormat> std::fmt::Debug for LentScan<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentScan").field("position", &self.scan.walk.position()).field("done", &self.done).finish()
    }
}

impl<F: RecordFormat> Iterator for LentScan<'_, F> {
    type Item = Step<F::Kind>;

    fn next(&mut self) -> Option<Step<F::Kind>> {
        loop {
            if let Some(step) = self.steps.steps.pop_front() {
                return Some(step);
            }
            if self.done {
                return None;
            }
            // Bytes in memory are never fetched, and nothing is raised: only a bug fails.
            let fill = self.scan.fill(&mut self.steps, LENT_BATCH_ROWS, usize::MAX).expect("a scan of bytes in memory does not fail");
            self.done = fill == Fill::Done;
            self.scan.finish_batch();
        }
    }
}

/// The rows of a [`LentScan`] as steps. Rows of what the file lacks (past its end,
/// or an empty file's header) are no span of it, so no step.
struct Steps<F: RecordFormat> {
    steps: std::collections::VecDeque<Step<F::Kind>>,
    /// The file's length.
    len: usize,
}

impl<F: RecordFormat> ScanSink for Steps<F> {
    fn rows(&self) -> usize {
        self.steps.len()
    }

    fn entries(&mut self, _: &View<'_>, run: &[ScannedEntry]) {
        let step = |e: &ScannedEntry| Step::Record { offset: e.offset as usize, end: e.at + e.len, kind: F::ENTRY, reframed: false };
        self.steps.extend(run.iter().map(step));
    }

    fn row(&mut self, _: &View<'_>, row: SingleRow<'_>) {
        let (offset, end, kind, reframed) = match row {
            SingleRow::FlaggedEntry { entry, reframed, .. } => (entry.offset as usize, entry.at + entry.len, F::ENTRY, reframed),
            SingleRow::UnframedEntry { offset, bytes, reframed, .. } => {
                let (offset, end) = (offset as usize, offset as usize + 4 + bytes.len());
                if crate::entry::HeaderView::read(bytes).is_none() {
                    // No entry header to report: the record's bytes, as damage.
                    self.steps.push_back(Step::Gap(Gap { offset: offset as u64, len: (end - offset) as u64, kind: GapKind::BadRecord }));
                    return;
                }
                (offset, end, F::ENTRY, reframed)
            }
            SingleRow::Record { offset, span, record } => (offset as usize, (offset + span) as usize, F::kind_of(&record), false),
            SingleRow::Damage { gap, .. } | SingleRow::Unlisted(gap) => {
                if gap.len > 0 && gap.offset < self.len as u64 {
                    self.steps.push_back(Step::Gap(gap));
                }
                return;
            }
        };
        self.steps.push_back(Step::Record { offset, end, kind, reframed });
    }
}

fn empty_checked() -> CheckedEntry {
    CheckedEntry {
        header: crate::entry::EntryHeader::new(0, 0, 0, 0, 0),
        digest_type: None,
        payload_at: 0,
        verdict: DigestStatus::NotAsked,
    }
}

/// The ids of a torn entry, when the part in the file holds its header.
fn torn_ids(view: &View<'_>, gap: &Gap) -> Option<(i64, i64)> {
    let at = gap.offset as usize + 4;
    let end = gap.end() as usize;
    if end <= at {
        return None; // torn inside its size field: no header to read (and no bytes past the file)
    }
    let head = view.get(at, (end - at).min(41)).ok()?;
    let (h, _) = crate::entry::HeaderView::read(head)?;
    Some((h.ledger_id(), h.entry_id()))
}

/// What a damaged span says in the `error` column: its kind (a stable name to filter
/// on), what that means, and its length.
pub fn gap_message(gap: &Gap) -> String {
    format!("{}: {} ({} bytes)", gap.kind.as_str(), gap.kind.describe(), gap.len)
}

/// The note on an entry found behind a damaged size field.
pub const REFRAMED_MESSAGE: &str = "bad_size: the size field in front of this entry is wrong; \
     the entry was framed by where the next record starts and its digest verifies";

/// An entry's error as its row says it: what is wrong, at a byte of the entry.
pub fn entry_message(e: &Error) -> String {
    format!("{} at byte {} of the entry", e.message(), e.offset)
}

/// The stable name of what is wrong with an entry row, for the `error_kind` column.
pub fn entry_error_kind(verdict: DigestStatus, unframed: Option<ErrorKind>) -> &'static str {
    match (verdict, unframed) {
        (_, Some(ErrorKind::Truncated)) => "truncated_entry",
        (_, Some(ErrorKind::UnsupportedVersion)) => "bad_entry_version",
        (_, Some(ErrorKind::DigestTypeMismatch)) => "digest_type_mismatch",
        (_, Some(_)) => "bad_entry",
        (DigestStatus::Mismatch, None) => "digest_mismatch",
        _ => "bad_entry",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record torn inside its 4-byte size field has no ids (found by fuzzing: the
    /// header read started past the end of the file).
    #[test]
    fn torn_size_field_has_no_ids() {
        let bytes = [0u8, 0, 1, 0, 0, 0, 0x7e];
        let view = View::whole(&bytes);
        for len in 1..=3 {
            let gap = Gap { offset: (bytes.len() - len) as u64, len: len as u64, kind: GapKind::TornRecord };
            assert_eq!(torn_ids(&view, &gap), None);
        }
    }
}
