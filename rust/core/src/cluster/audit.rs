//! The audit of a cluster: every copy the inventories list, held against where
//! BookKeeper placed each entry (its ledger's metadata), entry by entry.
//!
//! For each entry the metadata says exists (a closed ledger's `0 ..= lastEntryId`;
//! an open one's up to what recovery would take: the highest last-add-confirmed a
//! good copy carries, at least the last ensemble's first entry - 1):
//!
//! - a copy is *good* when its digest verifies (or cannot be checked: HMAC without
//!   its password), *bad* when it fails or its record is damaged; a bookie counts
//!   once, good when any of its copies is;
//! - `k` is the number of the entry's write set holding a good copy, `m` the number
//!   of the write set the audit did not see (not among the inputs, or not read
//!   whole and without a good copy);
//! - replication: `k >= Qw` fine; else `m > 0` **unknown** (never `lost` or
//!   `under_replicated` while a bookie that should hold it was not looked at); else
//!   `k >= Qa` **under_replicated**; else a good copy anywhere **below_ack_quorum**;
//!   else **lost**;
//! - beside it: **divergent** (verified copies with different payloads),
//!   **corrupt_copy** (a bad copy while a good one exists: repairable),
//!   **misplaced** (a copy on a bookie outside the write set);
//! - copies past the last entry are **unconfirmed**; copies of a ledger the
//!   metadata does not know are **orphan**.
//!
//! Without metadata only what the copies tell is audited: divergent and corrupt
//! copies, and **gap** for entries below the highest last-add-confirmed that no
//! input holds. Copies that differ only in their last-add-confirmed (and so in
//! their digest: re-replication repackages an entry) are alike.
//!
//! Findings come as runs: consecutive entries of one ledger with one status, the
//! bookies concerned being the union over the run.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::inventory::{CopyVerdict, BOOKIE_ID_METADATA_KEY};
use super::placement::{segment_index, write_set, Quorums};
use crate::error::{Error, Result};
use crate::metadata::{LedgerMetadata, LedgerState};

/// What the audit says of an entry (or, for `orphan`, of a ledger's copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Lost,
    Divergent,
    BelowAckQuorum,
    CorruptCopy,
    UnderReplicated,
    Unknown,
    Gap,
    Misplaced,
    Unconfirmed,
    Orphan,
}

impl Status {
    /// Most severe first: a ledger's status is the first any of its entries has.
    pub const ALL: [Status; 10] = [
        Status::Lost,
        Status::Divergent,
        Status::BelowAckQuorum,
        Status::CorruptCopy,
        Status::UnderReplicated,
        Status::Unknown,
        Status::Gap,
        Status::Misplaced,
        Status::Unconfirmed,
        Status::Orphan,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Lost => "lost",
            Status::Divergent => "divergent",
            Status::BelowAckQuorum => "below_ack_quorum",
            Status::CorruptCopy => "corrupt_copy",
            Status::UnderReplicated => "under_replicated",
            Status::Unknown => "unknown",
            Status::Gap => "gap",
            Status::Misplaced => "misplaced",
            Status::Unconfirmed => "unconfirmed",
            Status::Orphan => "orphan",
        }
    }

    /// Whether the status is a failure (the audit exits 1): data at risk or lost.
    /// The others are reported: they need a look, not a repair.
    pub const fn is_failure(self) -> bool {
        matches!(
            self,
            Status::Lost | Status::Divergent | Status::BelowAckQuorum | Status::CorruptCopy | Status::UnderReplicated
        )
    }
}

/// A copy as the audit keeps it: 24 bytes, so tens of millions fit (the
/// last-add-confirmed matters only as each ledger's highest, kept per ledger).
#[derive(Debug, Clone, Copy)]
struct CopyRow {
    ledger: u32,
    bookie: u16,
    verdict: u8,
    entry: i64,
    hash: u64,
}

const VERIFIED: u8 = 0;
const UNCHECKED: u8 = 1;
const BAD: u8 = 2;

/// The copies of a cluster's inventories, gathered for [`Audit::run`].
#[derive(Debug, Default)]
pub struct Audit {
    bookies: Vec<String>,
    bookie_index: HashMap<String, u16>,
    /// Per bookie: a file of it could not be read, so what it lacks proves nothing.
    incomplete: Vec<bool>,
    ledgers: Vec<(i64, i64)>,
    ledger_index: HashMap<(i64, i64), u32>,
    /// Per ledger, the highest last-add-confirmed a good copy carries (-1: none).
    max_lac: Vec<i64>,
    copies: Vec<CopyRow>,
}

/// The audit's two tables.
#[derive(Debug, Clone)]
pub struct AuditReport {
    pub findings: RecordBatch,
    pub ledgers: RecordBatch,
}

impl AuditReport {
    /// Whether any finding is a failure.
    pub fn has_failures(&self) -> bool {
        let statuses = self.findings.column_by_name("status").expect("findings have a status").as_string::<i32>();
        statuses.iter().flatten().any(|s| Status::ALL.iter().any(|st| st.as_str() == s && st.is_failure()))
    }
}

impl Audit {
    pub fn new() -> Self {
        Audit::default()
    }

    /// Declares a bookie among the inputs (a bookie with no copies at all was still
    /// looked at). Returns its number.
    pub fn add_bookie(&mut self, bookie_id: &str) -> Result<u16> {
        if let Some(&n) = self.bookie_index.get(bookie_id) {
            return Ok(n);
        }
        let n = u16::try_from(self.bookies.len())
            .map_err(|_| Error::invalid_argument("an audit takes at most 65,536 bookies"))?;
        self.bookies.push(bookie_id.to_string());
        self.incomplete.push(false);
        self.bookie_index.insert(bookie_id.to_string(), n);
        Ok(n)
    }

    /// Declares that a bookie was not read whole (a file of it could not be read,
    /// maybe in another part of the work): what it lacks proves nothing.
    pub fn mark_incomplete(&mut self, bookie_id: &str) -> Result<()> {
        let n = self.add_bookie(bookie_id)?;
        self.incomplete[n as usize] = true;
        Ok(())
    }

    /// The bookies of the inputs, in the order they were added.
    pub fn bookies(&self) -> &[String] {
        &self.bookies
    }

    /// Adds one batch of an inventory (the schema of [`super::inventory_schema`];
    /// the bookie named by its rows, or by the schema's metadata when it has none).
    pub fn add_inventory_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if let Some(id) = batch.schema().metadata().get(BOOKIE_ID_METADATA_KEY) {
            self.add_bookie(id)?;
        }
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| Error::invalid_argument(format!("an inventory has a column `{name}`")))
        };
        let bookie = Texts::of(column("bookie_id")?, "bookie_id")?;
        let int = |name: &str| -> Result<&arrow_array::Int64Array> {
            column(name)?.as_primitive_opt::<Int64Type>().ok_or_else(|| Error::invalid_argument(format!("{name} is an int64 column")))
        };
        let (scope, ledger, entry, lac) = (int("scope_id")?, int("ledger_id")?, int("entry_id")?, int("last_add_confirmed")?);
        let verdict = Texts::of(column("verdict")?, "verdict")?;
        let hash = column("payload_hash")?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| Error::invalid_argument("payload_hash is an int64 column"))?;
        let mut last_bookie: Option<(&str, u16)> = None;
        for i in 0..batch.num_rows() {
            let name = bookie.value(i);
            let b = match last_bookie {
                Some((n, b)) if n == name => b,
                _ => {
                    let b = self.add_bookie(name)?;
                    last_bookie = Some((name, b));
                    b
                }
            };
            let v = CopyVerdict::from_name(verdict.value(i))
                .ok_or_else(|| Error::invalid_argument(format!("unknown verdict {:?} in an inventory", verdict.value(i))))?;
            if v == CopyVerdict::Unreadable {
                self.incomplete[b as usize] = true;
                continue;
            }
            if ledger.is_null(i) || entry.is_null(i) || entry.value(i) < 0 {
                continue;
            }
            let key = (if scope.is_null(i) { 0 } else { scope.value(i) }, ledger.value(i));
            let l = self.ledger_number(key)?;
            if v.is_good() && !lac.is_null(i) {
                let m = &mut self.max_lac[l as usize];
                *m = (*m).max(lac.value(i));
            }
            self.copies.push(CopyRow {
                ledger: l,
                bookie: b,
                verdict: match v {
                    CopyVerdict::Verified => VERIFIED,
                    CopyVerdict::Unchecked => UNCHECKED,
                    _ => BAD,
                },
                entry: entry.value(i),
                hash: if hash.is_null(i) { 0 } else { hash.value(i) as u64 },
            });
        }
        Ok(())
    }

    fn ledger_number(&mut self, key: (i64, i64)) -> Result<u32> {
        if let Some(&l) = self.ledger_index.get(&key) {
            return Ok(l);
        }
        let l = u32::try_from(self.ledgers.len()).map_err(|_| Error::invalid_argument("too many ledgers for one audit"))?;
        self.ledgers.push(key);
        self.max_lac.push(-1);
        self.ledger_index.insert(key, l);
        Ok(l)
    }

    /// Room for `copies` more copies at once (the inputs' row counts, when known):
    /// no doubling of a vector of tens of millions on the way.
    pub fn reserve(&mut self, copies: usize) {
        self.copies.reserve_exact(copies);
    }

    /// Audits the copies against `metadata` (per `(scope, ledger)`), or, without
    /// it, against what the copies alone tell.
    pub fn run(mut self, metadata: Option<&HashMap<(i64, i64), LedgerMetadata>>) -> Result<AuditReport> {
        if let Some(md) = metadata {
            let mut keys: Vec<(i64, i64)> = md.keys().copied().collect();
            keys.sort_unstable();
            for key in keys {
                self.ledger_number(key)?;
            }
        }
        self.copies.sort_unstable_by_key(|c| (c.ledger, c.entry, c.bookie));
        let mut order: Vec<u32> = (0..self.ledgers.len() as u32).collect();
        order.sort_unstable_by_key(|&l| self.ledgers[l as usize]);
        let mut starts = vec![0usize; self.ledgers.len() + 1];
        for c in &self.copies {
            starts[c.ledger as usize + 1] += 1;
        }
        for l in 0..self.ledgers.len() {
            starts[l + 1] += starts[l];
        }
        let mut out = Output::new(&self.bookies);
        for l in order {
            let key = self.ledgers[l as usize];
            let copies = &self.copies[starts[l as usize]..starts[l as usize + 1]];
            let md = metadata.and_then(|m| m.get(&key));
            let ledger = LedgerAudit::new(key, copies, &self.incomplete, self.max_lac[l as usize]);
            match (metadata.is_some(), md) {
                (_, Some(md)) => ledger.against_metadata(md, &mut out),
                (true, None) => ledger.orphan(&mut out),
                (false, None) => ledger.copies_only(&mut out),
            }
        }
        out.finish()
    }
}

/// A text column as an inventory has it: a dictionary (as written), or plain
/// strings (as Spark and other writers give it back).
enum Texts<'a> {
    Plain(&'a arrow_array::StringArray),
    Coded(&'a arrow_array::Int32Array, &'a arrow_array::StringArray),
}

impl<'a> Texts<'a> {
    fn of(array: &'a ArrayRef, name: &str) -> Result<Texts<'a>> {
        if let Some(plain) = array.as_string_opt::<i32>() {
            return Ok(Texts::Plain(plain));
        }
        if let Some(coded) = array.as_dictionary_opt::<arrow_array::types::Int32Type>() {
            if let Some(values) = coded.values().as_string_opt::<i32>() {
                return Ok(Texts::Coded(coded.keys(), values));
            }
        }
        Err(Error::invalid_argument(format!("{name} is a string column (or a dictionary of strings)")))
    }

    fn value(&self, i: usize) -> &'a str {
        match self {
            Texts::Plain(a) => a.value(i),
            Texts::Coded(keys, values) => values.value(keys.value(i) as usize),
        }
    }
}

/// One ledger's copies, grouped by entry.
struct LedgerAudit<'a> {
    key: (i64, i64),
    /// The highest last-add-confirmed a good copy carries (-1: none).
    max_lac: i64,
    copies: &'a [CopyRow],
    incomplete: &'a [bool],
    runs: StatusRuns,
    counts: [u64; Status::ALL.len()],
}

/// The copies of one entry, folded per bookie.
#[derive(Default)]
struct EntryCopies {
    /// Bookies with a good copy, and with a bad one (sorted; a bookie can be in both).
    good: Vec<u16>,
    bad: Vec<u16>,
    holders: Vec<u16>,
    verified_hashes: BTreeSet<u64>,
    verified_holders: Vec<u16>,
}

impl EntryCopies {
    fn of(copies: &[CopyRow]) -> Self {
        let mut e = EntryCopies::default();
        for c in copies {
            push_unique(&mut e.holders, c.bookie);
            match c.verdict {
                BAD => push_unique(&mut e.bad, c.bookie),
                v => {
                    push_unique(&mut e.good, c.bookie);
                    if v == VERIFIED {
                        e.verified_hashes.insert(c.hash);
                        push_unique(&mut e.verified_holders, c.bookie);
                    }
                }
            }
        }
        e
    }
}

/// Copies come sorted by bookie, so a bookie is new exactly when it is not the last.
fn push_unique(v: &mut Vec<u16>, b: u16) {
    if v.last() != Some(&b) {
        v.push(b);
    }
}

impl<'a> LedgerAudit<'a> {
    fn new(key: (i64, i64), copies: &'a [CopyRow], incomplete: &'a [bool], max_lac: i64) -> Self {
        LedgerAudit { key, max_lac, copies, incomplete, runs: StatusRuns::default(), counts: [0; Status::ALL.len()] }
    }

    /// The copies grouped by entry id, in entry order.
    fn entries(&self) -> impl Iterator<Item = (i64, &'a [CopyRow])> + 'a {
        let copies = self.copies;
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= copies.len() {
                return None;
            }
            let entry = copies[at].entry;
            let end = at + copies[at..].iter().take_while(|c| c.entry == entry).count();
            let group = &copies[at..end];
            at = end;
            Some((entry, group))
        })
    }

    fn note(&mut self, entry: i64, status: Status, bookies: &[u16]) {
        self.counts[status as usize] += 1;
        self.runs.add(entry, status, bookies);
    }

    /// What the copies of one entry say whatever the placement: divergent, corrupt.
    fn copy_findings(&mut self, entry: i64, e: &EntryCopies) {
        if e.verified_hashes.len() > 1 {
            self.note(entry, Status::Divergent, &e.verified_holders);
        }
        if !e.bad.is_empty() && !e.good.is_empty() {
            self.note(entry, Status::CorruptCopy, &e.bad);
        }
    }

    fn orphan(mut self, out: &mut Output) {
        for (entry, group) in self.entries() {
            let e = EntryCopies::of(group);
            self.note(entry, Status::Orphan, &e.holders);
            self.copy_findings(entry, &e);
        }
        out.ledger(self, None);
    }

    fn copies_only(mut self, out: &mut Output) {
        let max_lac = self.max_lac;
        let mut next = 0i64;
        for (entry, group) in self.entries() {
            for missing in next..entry.min(max_lac.saturating_add(1)) {
                self.note(missing, Status::Gap, &[]);
            }
            next = entry.saturating_add(1);
            let e = EntryCopies::of(group);
            self.copy_findings(entry, &e);
        }
        for missing in next..=max_lac {
            self.note(missing, Status::Gap, &[]);
        }
        out.ledger(self, None);
    }

    fn against_metadata(mut self, md: &LedgerMetadata, out: &mut Output) {
        let Some(quorums) = Quorums::of(md).filter(|_| !md.ensembles.is_empty()) else {
            // No usable schedule (refused by BookKeeper too): the copies alone.
            let summary = LedgerSummary { metadata: Some(md), last_entry: None };
            self.copies_only_into(out, summary);
            return;
        };
        let last_entry = match md.state {
            LedgerState::Closed => md.last_entry_id,
            LedgerState::Open | LedgerState::InRecovery => {
                let max_lac = self.max_lac;
                let last_start = md.ensembles.last().map_or(0, |s| s.first_entry_id);
                max_lac.max(last_start - 1)
            }
        };
        let placement = Placement::new(md, quorums, out);
        let mut next = 0i64;
        let entries: Vec<(i64, &[CopyRow])> = self.entries().collect();
        for (entry, group) in entries {
            if entry > last_entry {
                self.absent(&placement, next, last_entry);
                next = last_entry.saturating_add(1);
                let e = EntryCopies::of(group);
                self.note(entry, Status::Unconfirmed, &e.holders);
                self.copy_findings(entry, &e);
                continue;
            }
            self.absent(&placement, next, entry - 1);
            next = entry + 1;
            let e = EntryCopies::of(group);
            self.placed(&placement, entry, &e);
        }
        self.absent(&placement, next, last_entry);
        out.ledger(self, Some(LedgerSummary { metadata: Some(md), last_entry: Some(last_entry) }));
    }

    fn copies_only_into(mut self, out: &mut Output, summary: LedgerSummary<'_>) {
        let entries: Vec<(i64, &[CopyRow])> = self.entries().collect();
        for (entry, group) in entries {
            let e = EntryCopies::of(group);
            self.copy_findings(entry, &e);
        }
        out.ledger(self, Some(summary));
    }

    /// Entries `first ..= last`, which no input holds.
    fn absent(&mut self, placement: &Placement, first: i64, last: i64) {
        let empty = EntryCopies::default();
        let mut entry = first;
        while entry <= last {
            // A long stretch with no copies repeats with the ensemble's period: when
            // one period gives one status, the whole stretch (to its segment's end) does.
            let segment_end = placement.segment_end(entry).min(last);
            let period = placement.period(entry) as i64;
            if segment_end - entry > 4 * period {
                let found: Vec<Option<(Status, Vec<u16>)>> =
                    (entry..entry + period).map(|e| placement.replication(e, &empty, self.incomplete)).collect();
                let statuses: BTreeSet<Option<Status>> = found.iter().map(|f| f.as_ref().map(|f| f.0)).collect();
                if statuses.len() == 1 {
                    if let Some(status) = statuses.into_iter().next().flatten() {
                        let mut bookies: Vec<u16> = found.into_iter().flatten().flat_map(|f| f.1).collect();
                        bookies.sort_unstable();
                        bookies.dedup();
                        self.counts[status as usize] += (segment_end - entry + 1) as u64;
                        self.runs.add_span(entry, segment_end, status, &bookies);
                    }
                    entry = segment_end + 1;
                    continue;
                }
            }
            if let Some((status, bookies)) = placement.replication(entry, &empty, self.incomplete) {
                self.note(entry, status, &bookies);
            }
            entry += 1;
        }
    }

    fn placed(&mut self, placement: &Placement, entry: i64, e: &EntryCopies) {
        if let Some((status, bookies)) = placement.replication(entry, e, self.incomplete) {
            self.note(entry, status, &bookies);
        }
        self.copy_findings(entry, e);
        let set = placement.write_set(entry);
        let misplaced: Vec<u16> = e.holders.iter().copied().filter(|b| !set.contains(b)).collect();
        if !misplaced.is_empty() {
            self.note(entry, Status::Misplaced, &misplaced);
        }
    }
}

/// A ledger's ensembles, each bookie as the audit's number for its name (the
/// inputs' numbers come first; bookies only the metadata names come after).
struct Placement {
    quorums: Quorums,
    inputs: usize,
    segments: Vec<(i64, Vec<u16>)>,
}

impl Placement {
    fn new(md: &LedgerMetadata, quorums: Quorums, out: &mut Output) -> Self {
        let segments = md
            .ensembles
            .iter()
            .map(|s| (s.first_entry_id, s.bookies.iter().map(|b| out.bookie_number(b.as_str())).collect()))
            .collect();
        Placement { quorums, inputs: out.inputs, segments }
    }

    fn segment(&self, entry: i64) -> &[u16] {
        let i = segment_index(&self.segments, entry, |s| s.0).unwrap_or(0);
        &self.segments[i].1
    }

    /// The last entry of the segment `entry` is in.
    fn segment_end(&self, entry: i64) -> i64 {
        let i = self.segments.partition_point(|(first, _)| *first <= entry);
        self.segments.get(i).map_or(i64::MAX, |(first, _)| first - 1)
    }

    fn period(&self, entry: i64) -> usize {
        self.segment(entry).len().max(1)
    }

    fn write_set(&self, entry: i64) -> Vec<u16> {
        let bookies = self.segment(entry);
        write_set(entry, bookies.len(), self.quorums.write_quorum.min(bookies.len())).map(|p| bookies[p]).collect()
    }

    /// The entry's replication finding and the bookies concerned; `None` when its
    /// write set holds it in full.
    fn replication(&self, entry: i64, e: &EntryCopies, incomplete: &[bool]) -> Option<(Status, Vec<u16>)> {
        let mut holding = 0;
        let mut lacking = Vec::new();
        let mut unseen = Vec::new();
        for b in self.write_set(entry) {
            if e.good.binary_search(&b).is_ok() {
                holding += 1;
            } else if (b as usize) >= self.inputs || incomplete[b as usize] {
                unseen.push(b);
            } else {
                lacking.push(b);
            }
        }
        let q = self.quorums;
        let (status, mut bookies) = if holding >= q.write_quorum {
            return None;
        } else if !unseen.is_empty() {
            (Status::Unknown, unseen)
        } else if holding >= q.ack_quorum {
            (Status::UnderReplicated, lacking)
        } else if !e.good.is_empty() {
            (Status::BelowAckQuorum, lacking)
        } else {
            (Status::Lost, lacking)
        };
        bookies.sort_unstable();
        Some((status, bookies))
    }
}

/// Consecutive entries with one status: open runs, one per status.
#[derive(Default)]
struct StatusRuns {
    open: HashMap<Status, (i64, i64, BTreeSet<u16>)>,
    done: Vec<(i64, i64, Status, BTreeSet<u16>)>,
}

impl StatusRuns {
    fn add(&mut self, entry: i64, status: Status, bookies: &[u16]) {
        self.add_span(entry, entry, status, bookies);
    }

    fn add_span(&mut self, first: i64, last: i64, status: Status, bookies: &[u16]) {
        match self.open.get_mut(&status) {
            Some(run) if run.1.checked_add(1) == Some(first) => {
                run.1 = last;
                run.2.extend(bookies.iter().copied());
            }
            _ => {
                if let Some(run) = self.open.insert(status, (first, last, bookies.iter().copied().collect())) {
                    self.done.push((run.0, run.1, status, run.2));
                }
            }
        }
    }

    fn finish(mut self) -> Vec<(i64, i64, Status, BTreeSet<u16>)> {
        for (status, run) in self.open.drain() {
            self.done.push((run.0, run.1, status, run.2));
        }
        self.done.sort_unstable_by_key(|r| (r.0, r.2));
        self.done
    }
}

struct LedgerSummary<'a> {
    metadata: Option<&'a LedgerMetadata>,
    last_entry: Option<i64>,
}

/// The findings and ledger tables as they are built.
struct Output {
    /// The inputs' bookies, then bookies only metadata names.
    bookies: Vec<String>,
    bookie_index: HashMap<String, u16>,
    inputs: usize,
    f_scope: Int64Builder,
    f_ledger: Int64Builder,
    f_first: Int64Builder,
    f_last: Int64Builder,
    f_entries: Int64Builder,
    f_status: StringBuilder,
    f_bookies: ListBuilder<StringBuilder>,
    l_scope: Int64Builder,
    l_ledger: Int64Builder,
    l_state: StringBuilder,
    l_status: StringBuilder,
    l_ensemble: Int64Builder,
    l_write: Int64Builder,
    l_ack: Int64Builder,
    l_last_entry_id: Int64Builder,
    l_last_entry: Int64Builder,
    l_copies: Int64Builder,
    l_bookies: ListBuilder<StringBuilder>,
    l_counts: Vec<Int64Builder>,
}

impl Output {
    fn new(bookies: &[String]) -> Self {
        Output {
            bookies: bookies.to_vec(),
            bookie_index: bookies.iter().enumerate().map(|(i, b)| (b.clone(), i as u16)).collect(),
            inputs: bookies.len(),
            f_scope: Int64Builder::new(),
            f_ledger: Int64Builder::new(),
            f_first: Int64Builder::new(),
            f_last: Int64Builder::new(),
            f_entries: Int64Builder::new(),
            f_status: StringBuilder::new(),
            f_bookies: ListBuilder::new(StringBuilder::new()),
            l_scope: Int64Builder::new(),
            l_ledger: Int64Builder::new(),
            l_state: StringBuilder::new(),
            l_status: StringBuilder::new(),
            l_ensemble: Int64Builder::new(),
            l_write: Int64Builder::new(),
            l_ack: Int64Builder::new(),
            l_last_entry_id: Int64Builder::new(),
            l_last_entry: Int64Builder::new(),
            l_copies: Int64Builder::new(),
            l_bookies: ListBuilder::new(StringBuilder::new()),
            l_counts: Status::ALL.iter().map(|_| Int64Builder::new()).collect(),
        }
    }

    /// The number naming `bookie_id` in findings (a new one past the inputs' for a
    /// bookie that only metadata names; names beyond 65,536 share the last number).
    fn bookie_number(&mut self, bookie_id: &str) -> u16 {
        if let Some(&n) = self.bookie_index.get(bookie_id) {
            return n;
        }
        let n = u16::try_from(self.bookies.len()).unwrap_or(u16::MAX);
        if n < u16::MAX {
            self.bookies.push(bookie_id.to_string());
            self.bookie_index.insert(bookie_id.to_string(), n);
        }
        n
    }

    fn ledger(&mut self, audit: LedgerAudit<'_>, summary: Option<LedgerSummary<'_>>) {
        let (scope, ledger) = audit.key;
        let copies = audit.copies;
        let counts = audit.counts;
        for (first, last, status, bookies) in audit.runs.finish() {
            self.f_scope.append_value(scope);
            self.f_ledger.append_value(ledger);
            self.f_first.append_value(first);
            self.f_last.append_value(last);
            self.f_entries.append_value(last - first + 1);
            self.f_status.append_value(status.as_str());
            // By name: the numbers follow the order the inputs came in.
            let mut names: Vec<&str> = bookies.iter().map(|&b| self.bookies[b as usize].as_str()).collect();
            names.sort_unstable();
            for name in names {
                self.f_bookies.values().append_value(name);
            }
            self.f_bookies.append(true);
        }
        let md = summary.as_ref().and_then(|s| s.metadata);
        self.l_scope.append_value(scope);
        self.l_ledger.append_value(ledger);
        self.l_state.append_option(md.map(|m| m.state.name()));
        let worst = Status::ALL.iter().find(|s| counts[**s as usize] > 0);
        self.l_status.append_value(worst.map_or("ok", |s| s.as_str()));
        self.l_ensemble.append_option(md.map(|m| m.ensemble_size as i64));
        self.l_write.append_option(md.map(|m| m.write_quorum_size as i64));
        self.l_ack.append_option(md.map(|m| m.ack_quorum_size as i64));
        self.l_last_entry_id.append_option(md.map(|m| m.last_entry_id));
        self.l_last_entry.append_option(summary.as_ref().and_then(|s| s.last_entry));
        self.l_copies.append_value(copies.len() as i64);
        let holders: BTreeSet<&str> = copies.iter().map(|c| self.bookies[c.bookie as usize].as_str()).collect();
        for name in holders {
            self.l_bookies.values().append_value(name);
        }
        self.l_bookies.append(true);
        for (builder, count) in self.l_counts.iter_mut().zip(counts) {
            builder.append_value(count as i64);
        }
    }

    fn finish(mut self) -> Result<AuditReport> {
        let findings: Vec<ArrayRef> = vec![
            Arc::new(self.f_scope.finish()),
            Arc::new(self.f_ledger.finish()),
            Arc::new(self.f_first.finish()),
            Arc::new(self.f_last.finish()),
            Arc::new(self.f_entries.finish()),
            Arc::new(self.f_status.finish()),
            Arc::new(self.f_bookies.finish()),
        ];
        let mut ledgers: Vec<ArrayRef> = vec![
            Arc::new(self.l_scope.finish()),
            Arc::new(self.l_ledger.finish()),
            Arc::new(self.l_state.finish()),
            Arc::new(self.l_status.finish()),
            Arc::new(self.l_ensemble.finish()),
            Arc::new(self.l_write.finish()),
            Arc::new(self.l_ack.finish()),
            Arc::new(self.l_last_entry_id.finish()),
            Arc::new(self.l_last_entry.finish()),
            Arc::new(self.l_copies.finish()),
            Arc::new(self.l_bookies.finish()),
        ];
        ledgers.extend(self.l_counts.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
        let wrap = |e: arrow_schema::ArrowError| Error::invalid_argument(format!("assembling the audit: {e}"));
        Ok(AuditReport {
            findings: RecordBatch::try_new(findings_schema(), findings).map_err(wrap)?,
            ledgers: RecordBatch::try_new(ledgers_schema(), ledgers).map_err(wrap)?,
        })
    }
}

fn bookie_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

/// One row per run of consecutive entries of a ledger with one status.
pub fn findings_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("scope_id", DataType::Int64, false),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("first_entry", DataType::Int64, false),
        Field::new("last_entry", DataType::Int64, false),
        Field::new("entries", DataType::Int64, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("bookies", bookie_list(), false),
    ]))
}

/// One row per ledger: its metadata's shape, its worst status, and how many
/// entries have each status.
pub fn ledgers_schema() -> SchemaRef {
    let mut fields = vec![
        Field::new("scope_id", DataType::Int64, false),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("state", DataType::Utf8, true),
        Field::new("status", DataType::Utf8, false),
        Field::new("ensemble_size", DataType::Int64, true),
        Field::new("write_quorum", DataType::Int64, true),
        Field::new("ack_quorum", DataType::Int64, true),
        Field::new("last_entry_id", DataType::Int64, true),
        Field::new("last_entry", DataType::Int64, true),
        Field::new("copies", DataType::Int64, false),
        Field::new("bookies", bookie_list(), false),
    ];
    fields.extend(Status::ALL.iter().map(|s| Field::new(s.as_str(), DataType::Int64, false)));
    Arc::new(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookie_id::BookieId;
    use crate::cluster::inventory::inventory_schema;
    use crate::metadata::Ensemble;
    use arrow_array::builder::{Int64Builder, StringBuilder};
    use arrow_array::{BooleanArray, Int64Array, StringArray};

    /// One inventory row: (bookie, ledger, entry, lac, verdict, payload hash).
    type Copy = (&'static str, i64, i64, i64, &'static str, u64);

    fn inventory(copies: &[Copy]) -> RecordBatch {
        let n = copies.len();
        let ints = |f: &dyn Fn(&Copy) -> i64| Arc::new(Int64Array::from_iter_values(copies.iter().map(f))) as ArrayRef;
        let strings = |f: &dyn Fn(&Copy) -> &str| {
            let mut b = StringBuilder::new();
            copies.iter().for_each(|c| b.append_value(f(c)));
            Arc::new(b.finish()) as ArrayRef
        };
        let mut hashes = Int64Builder::new();
        copies.iter().for_each(|c| hashes.append_value(c.5 as i64));
        let nulls_i = Arc::new(Int64Array::new_null(n)) as ArrayRef;
        let nulls_s = Arc::new(StringArray::new_null(n)) as ArrayRef;
        let nulls_b = Arc::new(BooleanArray::new_null(n)) as ArrayRef;
        let columns: Vec<ArrayRef> = vec![
            strings(&|c| c.0),
            ints(&|_| 0),
            ints(&|c| c.1),
            ints(&|c| c.2),
            ints(&|c| c.3),
            nulls_i.clone(),
            nulls_s.clone(),
            strings(&|c| c.4),
            nulls_s.clone(),
            nulls_s.clone(),
            nulls_i.clone(),
            Arc::new(hashes.finish()) as ArrayRef,
            strings(&|_| "entry_log"),
            strings(&|_| "0.log"),
            nulls_i,
            nulls_b.clone(),
            nulls_b.clone(),
            nulls_b.clone(),
            nulls_b,
        ];
        // Plain strings where the inventory writes dictionaries: as Spark gives them back.
        let fields: Vec<Field> = inventory_schema()
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Dictionary(_, _) => Field::new(f.name(), DataType::Utf8, f.is_nullable()),
                _ => f.as_ref().clone(),
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    fn metadata(e: i32, qw: i32, qa: i32, ensembles: &[(i64, &[&str])], state: LedgerState, last: i64) -> LedgerMetadata {
        LedgerMetadata {
            format_version: 3,
            ensemble_size: e,
            write_quorum_size: qw,
            ack_quorum_size: qa,
            state,
            last_entry_id: if state == LedgerState::Closed { last } else { -1 },
            length: 0,
            ensembles: ensembles
                .iter()
                .map(|(first, bookies)| Ensemble {
                    first_entry_id: *first,
                    bookies: bookies.iter().map(|b| BookieId::parse(b).unwrap()).collect(),
                })
                .collect(),
            digest_type: None,
            password: None,
            ctime: None,
            custom_metadata: Vec::new(),
            ctoken: 0,
        }
    }

    /// The findings as (ledger, first, last, status, bookies).
    fn run(bookies: &[&str], copies: &[Copy], md: Option<HashMap<(i64, i64), LedgerMetadata>>) -> Vec<(i64, i64, i64, String, Vec<String>)> {
        let mut audit = Audit::new();
        for b in bookies {
            audit.add_bookie(b).unwrap();
        }
        audit.add_inventory_batch(&inventory(copies)).unwrap();
        let report = audit.run(md.as_ref()).unwrap();
        let f = &report.findings;
        let col = |n: &str| f.column_by_name(n).unwrap().clone();
        let (ledger, first, last) = (col("ledger_id"), col("first_entry"), col("last_entry"));
        let (status, names) = (col("status"), col("bookies"));
        (0..f.num_rows())
            .map(|i| {
                let list = names.as_list::<i32>().value(i);
                (
                    ledger.as_primitive::<Int64Type>().value(i),
                    first.as_primitive::<Int64Type>().value(i),
                    last.as_primitive::<Int64Type>().value(i),
                    status.as_string::<i32>().value(i).to_string(),
                    list.as_string::<i32>().iter().map(|s| s.unwrap().to_string()).collect(),
                )
            })
            .collect()
    }

    fn full(ledger: i64, entries: std::ops::Range<i64>, bookies: &[&'static str]) -> Vec<Copy> {
        entries.flat_map(|e| bookies.iter().map(move |b| (*b, ledger, e, e - 1, "verified", 1000 + e as u64))).collect()
    }

    const ABC: [&str; 3] = ["a:1", "b:1", "c:1"];

    #[test]
    fn a_fully_replicated_ledger_has_no_findings_even_when_copies_differ_in_their_lac() {
        let mut copies = full(1, 0..10, &ABC);
        copies[4].3 = 0; // entry 1 on a: another LAC, the same payload
        let md = HashMap::from([((0, 1), metadata(3, 3, 2, &[(0, &ABC)], LedgerState::Closed, 9))]);
        assert!(run(&ABC, &copies, Some(md)).is_empty());
    }

    #[test]
    fn replication_statuses_follow_the_quorums() {
        // E=3 Qw=3 Qa=2: entry 2 on two bookies, entry 5 on one, entry 7 on none.
        let copies: Vec<Copy> = full(1, 0..10, &ABC)
            .into_iter()
            .filter(|c| !(c.2 == 2 && c.0 == "c:1" || c.2 == 5 && c.0 != "a:1" || c.2 == 7))
            .collect();
        let md = HashMap::from([((0, 1), metadata(3, 3, 2, &[(0, &ABC)], LedgerState::Closed, 9))]);
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            run(&ABC, &copies, Some(md)),
            vec![
                (1, 2, 2, "under_replicated".into(), s(&["c:1"])),
                (1, 5, 5, "below_ack_quorum".into(), s(&["b:1", "c:1"])),
                (1, 7, 7, "lost".into(), s(&["a:1", "b:1", "c:1"])),
            ]
        );
    }

    #[test]
    fn a_bookie_not_among_the_inputs_or_not_read_whole_makes_its_entries_unknown_not_lost() {
        let md = HashMap::from([((0, 1), metadata(3, 2, 2, &[(0, &ABC)], LedgerState::Closed, 5))]);
        // c is not an input: entries whose write set holds c (1, 2, 4, 5) are unknown;
        // 0 and 3 (a, b) are complete.
        let copies: Vec<Copy> = full(1, 0..6, &["a:1", "b:1"])
            .into_iter()
            .filter(|c| cluster_write_set_holds(c.2, if c.0 == "a:1" { 0 } else { 1 }))
            .collect();
        let got = run(&["a:1", "b:1"], &copies, Some(md.clone()));
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(got, vec![(1, 1, 2, "unknown".into(), s(&["c:1"])), (1, 4, 5, "unknown".into(), s(&["c:1"]))]);
        // c given but one of its files unreadable: the same, never lost.
        let mut with_c = copies.clone();
        with_c.push(("c:1", 0, -1, -1, "unreadable", 0));
        let got = run(&["a:1", "b:1", "c:1"], &with_c, Some(md));
        assert!(got.iter().all(|f| f.3 == "unknown"), "{got:?}");
    }

    fn cluster_write_set_holds(entry: i64, position: usize) -> bool {
        crate::cluster::stores(position, entry, 3, 2)
    }

    #[test]
    fn corrupt_divergent_and_misplaced_copies_are_named_with_their_bookies() {
        let mut copies = full(1, 0..4, &ABC);
        copies.push(("d:1", 1, 1, 0, "verified", 1001)); // a stale copy outside the write set
        for c in copies.iter_mut() {
            if c.2 == 2 && c.0 == "b:1" {
                c.4 = "failed";
            }
            if c.2 == 3 && c.0 == "c:1" {
                c.5 = 9; // another payload, digest fine
            }
        }
        let md = HashMap::from([((0, 1), metadata(3, 3, 2, &[(0, &ABC)], LedgerState::Closed, 3))]);
        let got = run(&["a:1", "b:1", "c:1", "d:1"], &copies, Some(md));
        let statuses: Vec<(i64, &str, usize)> = got.iter().map(|f| (f.1, f.3.as_str(), f.4.len())).collect();
        assert_eq!(
            statuses,
            vec![(1, "misplaced", 1), (2, "corrupt_copy", 1), (2, "under_replicated", 1), (3, "divergent", 3)]
        );
    }

    #[test]
    fn an_open_ledger_ends_at_the_highest_lac_and_copies_past_it_are_unconfirmed() {
        let copies = full(1, 0..8, &ABC); // entry e carries LAC e - 1: the highest is 6
        let md = HashMap::from([((0, 1), metadata(3, 3, 2, &[(0, &ABC)], LedgerState::Open, -1))]);
        let got = run(&ABC, &copies, Some(md));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].1, got[0].2, got[0].3.as_str()), (7, 7, "unconfirmed"));
        // An ensemble change at 20 that no copy reaches: recovery's floor is the last
        // ensemble's first entry - 1, so 8 ..= 19 should exist and no bookie holds them.
        let md = HashMap::from([((0, 1), metadata(3, 3, 2, &[(0, &ABC), (20, &ABC)], LedgerState::Open, -1))]);
        let got = run(&ABC, &copies, Some(md));
        assert_eq!(got.iter().map(|f| (f.1, f.2, f.3.as_str())).collect::<Vec<_>>(), vec![(8, 19, "lost")]);
    }

    #[test]
    fn ledgers_without_metadata_are_orphans_and_metadata_without_copies_is_lost() {
        let copies = full(2, 0..3, &ABC);
        let md = HashMap::from([((0, 1), metadata(3, 3, 2, &[(0, &ABC)], LedgerState::Closed, 1))]);
        let got = run(&ABC, &copies, Some(md));
        assert_eq!(
            got.iter().map(|f| (f.0, f.1, f.2, f.3.as_str())).collect::<Vec<_>>(),
            vec![(1, 0, 1, "lost"), (2, 0, 2, "orphan")]
        );
    }

    #[test]
    fn a_huge_copyless_stretch_is_one_run_not_an_entry_at_a_time() {
        let md = HashMap::from([((0, 1), metadata(3, 2, 2, &[(0, &ABC)], LedgerState::Closed, 1 << 40))]);
        let got = run(&ABC, &[], Some(md));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].1, got[0].2, got[0].3.as_str()), (0, 1 << 40, "lost"));
    }

    #[test]
    fn without_metadata_gaps_below_the_highest_lac_are_reported() {
        let copies: Vec<Copy> = full(1, 0..6, &ABC).into_iter().filter(|c| c.2 != 2).collect();
        let got = run(&ABC, &copies, None);
        assert_eq!(got.iter().map(|f| (f.1, f.2, f.3.as_str())).collect::<Vec<_>>(), vec![(2, 2, "gap")]);
    }
}
