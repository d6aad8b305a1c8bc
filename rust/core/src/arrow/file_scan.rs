//! What the bookie-file readers share: their options, lazy streams of record batches,
//! column order, and how damage becomes an error or a flagged row.
//!
//! A file reader's rows have the file-position columns first, then the entry
//! columns of [`EntryBatchBuilder`] (without `error`), then columns of its own, then
//! `error` last (under [`OnError::Flag`]).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, FieldRef, Schema, SchemaRef};

use super::entries::{EntryBatchBuilder, EntryBatchOptions, OnError, StagedGroup, GROUP_LEN};
use super::mapped_file::MappedFile;
use super::payload::PayloadMode;
use crate::digest::DigestType;
use crate::digest_policy::{DigestPolicy, EntryChecks, ResolvedEntry};
use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::files::{Gap, GapKind, RunCursor, VerifiedEntry};
use crate::ledger_digests::{LedgerDigests, LedgerResolver};

/// Rows per batch unless asked otherwise.
pub const DEFAULT_BATCH_ROWS: usize = 65_536;
/// Entry bytes per batch at most: bounds memory, and keeps a copied payload column
/// far from its 2 GiB limit, whatever the entry sizes. Small enough that a payload
/// buffer (twice this) stays below the size at which allocators map fresh pages for
/// every batch (glibc: 32 MiB), so a stream reuses the memory of the batches its
/// consumer has dropped instead of faulting in new pages.
pub const DEFAULT_BATCH_BYTES: usize = 8 << 20;

/// How a bookie-file reader scans and what rows it builds.
#[derive(Debug, Clone)]
pub struct FileScanOptions {
    pub entries: EntryBatchOptions,
    /// Check each entry's digest (digest types are still inferred when not given).
    pub verify: bool,
    pub digests: LedgerDigests,
    /// A batch ends after this many rows...
    pub batch_rows: usize,
    /// ...or once its entries add up to this many bytes.
    pub batch_bytes: usize,
    /// The byte range `[start, end)`: a record belongs to the range its size field
    /// starts in, so ranges that tile a file read every record once.
    pub start: u64,
    pub end: u64,
}

impl FileScanOptions {
    pub fn new(entries: EntryBatchOptions, digests: LedgerDigests) -> Self {
        FileScanOptions {
            entries,
            verify: true,
            digests,
            batch_rows: DEFAULT_BATCH_ROWS,
            batch_bytes: DEFAULT_BATCH_BYTES,
            start: 0,
            end: u64::MAX,
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.batch_rows == 0 || self.batch_bytes == 0 {
            return Err(Error::invalid_argument("batch sizes must be positive"));
        }
        if self.start > self.end {
            return Err(Error::invalid_argument(format!("byte range start {} is past its end {}", self.start, self.end)));
        }
        Ok(())
    }
}

/// A lazy stream of record batches of one schema, each built on demand.
pub trait BatchStream: Iterator<Item = Result<RecordBatch>> + Send {
    fn schema(&self) -> SchemaRef;
}

/// A [`BatchStream`] as arrow-rs's [`RecordBatchReader`] (for the Arrow C stream
/// interface); errors travel as [`ArrowError::ExternalError`] holding the [`Error`].
pub struct ArrowBatchReader(pub Box<dyn BatchStream>);

impl Iterator for ArrowBatchReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for ArrowBatchReader {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}

/// Rows to reserve per batch. The first batch reserves what the file can hold, at
/// most a few thousand (reserving a full default batch for a file of large entries
/// would only churn memory); later ones as many as the largest batch so far, so
/// columns of many small entries do not grow by copying in every batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowCapacity {
    rows: usize,
    max: usize,
}

impl RowCapacity {
    pub fn new(options: &FileScanOptions, file: &MappedFile, row_bytes: usize) -> Self {
        const FIRST_RESERVED_ROWS: usize = 8192;
        let max = options.batch_rows.min(file.bytes().len() / row_bytes + 1);
        RowCapacity { rows: max.min(FIRST_RESERVED_ROWS), max }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// A batch of `rows` rows was finished.
    pub fn batch_done(&mut self, rows: usize) {
        self.rows = self.rows.max(rows).min(self.max);
    }
}

/// A builder for one batch of a file's entries. A fresh one per batch: a finished
/// payload column gives its buffer away, and regrowing it by doubling would copy the
/// payloads again. The payload capacity covers the byte budget and the entry that
/// crosses it; reserved pages that are never written cost no memory.
pub(crate) fn batch_builder(options: &FileScanOptions, file: &MappedFile, rows: usize) -> EntryBatchBuilder {
    let len = file.bytes().len();
    let payload_bytes = options.batch_bytes.saturating_mul(2).min(len);
    let mut builder = EntryBatchBuilder::new(options.entries, rows, payload_bytes);
    if options.entries.payload == PayloadMode::BinaryView {
        builder.set_view_sources(std::slice::from_ref(&file.buffer()));
    }
    builder
}

/// Leading fields, the entry fields without `error`, trailing fields, then `error`.
pub(crate) fn file_schema(options: &EntryBatchOptions, leading: &[FieldRef], trailing: &[FieldRef]) -> SchemaRef {
    let mut entry = options.fields();
    let error = (options.on_error == OnError::Flag).then(|| entry.pop().expect("the error field"));
    let fields: Vec<FieldRef> =
        leading.iter().cloned().chain(entry).chain(trailing.iter().cloned()).chain(error).collect();
    Arc::new(Schema::new(fields))
}

/// One batch in the order of [`file_schema`].
pub(crate) fn assemble(
    schema: &SchemaRef,
    leading: Vec<ArrayRef>,
    builder: &mut EntryBatchBuilder,
    trailing: Vec<ArrayRef>,
) -> Result<RecordBatch> {
    let mut entry: Vec<ArrayRef> = builder.finish_columns()?.into_iter().map(|(_, a)| a).collect();
    let error = (builder.options().on_error == OnError::Flag).then(|| entry.pop().expect("the error column"));
    let columns: Vec<ArrayRef> = leading.into_iter().chain(entry).chain(trailing).chain(error).collect();
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| Error::invalid_argument(format!("assembling a file batch: {e}")))
}

/// What a damaged span says in the `error` column: its kind (a stable name to filter
/// on), what that means, and its length.
pub(crate) fn gap_message(gap: &Gap) -> String {
    format!("{}: {} ({} bytes)", gap.kind.as_str(), gap.kind.describe(), gap.len)
}

/// A damaged span as the error `on_error="raise"` raises.
pub(crate) fn gap_error(gap: &Gap) -> Error {
    let kind = match gap.kind {
        GapKind::TornRecord | GapKind::TornHeader => ErrorKind::Truncated,
        _ => ErrorKind::Corrupt,
    };
    Error::new(kind, gap.offset, gap_message(gap))
}

/// The note on an entry found behind a damaged size field.
pub(crate) const REFRAMED_MESSAGE: &str = "bad_size: the size field in front of this entry is wrong; \
     the entry was framed by where the next record starts and its digest verifies";

/// The same as an error, for `on_error="raise"`.
pub(crate) fn reframed_error(offset: u64) -> Error {
    Error::corrupt(offset, REFRAMED_MESSAGE)
}

/// Damaged files and reader settings for the readers' tests.
#[cfg(test)]
pub(crate) mod test_files {
    use super::*;
    use crate::arrow::PayloadMode;
    use crate::digest::{DigestType, Digester};
    use crate::digest_policy::DigestPolicy;
    use crate::entry::{encode_entry, EntryHeader};
    use crate::test_rng::Rng;

    /// Ledgers 100.. of these digest types (HMAC keyed with "pw").
    pub const LEDGER_TYPES: [DigestType; 5] =
        [DigestType::Crc32c, DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac, DigestType::Dummy];

    /// An entry of ledger `100 + ledger`, mostly V1, some V2.
    pub fn entry(rng: &mut Rng, ledger: usize, id: i64) -> Vec<u8> {
        let size = [0usize, 5, 13, 100, 700, 2000][rng.below(6)];
        let payload: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
        let scope = if rng.below(10) == 0 { 1 } else { 0 };
        let h = EntryHeader::new(scope, 100 + ledger as i64, id, id - 1, size as i64 * (id + 1));
        encode_entry(&h, &payload, &Digester::new(LEDGER_TYPES[ledger], b"pw")).unwrap()
    }

    /// Which ledger the next entry belongs to: long stretches of the first.
    pub fn ledger(rng: &mut Rng) -> usize {
        if rng.below(4) == 0 { rng.below(LEDGER_TYPES.len()) } else { 0 }
    }

    /// Flips, overwrites, zeros, inserts or cuts bytes after `from`.
    pub fn damage(rng: &mut Rng, bytes: &mut Vec<u8>, from: usize) {
        let len = bytes.len();
        if len <= from + 8 {
            return;
        }
        let at = from + rng.below(len - from - 8);
        match rng.below(6) {
            0 => bytes[at] ^= 1 << rng.below(8),
            1 => bytes[at..at + 4].copy_from_slice(&(rng.next() as u32).to_be_bytes()),
            2 => {
                let n = (1 + rng.below(200)).min(len - at);
                bytes[at..at + n].fill(0);
            }
            3 => {
                let n = 1 + rng.below(100);
                let garbage: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                bytes.splice(at..at, garbage);
            }
            4 => bytes.truncate(at),
            _ => {
                let n = (1 + rng.below(300)).min(len - at);
                bytes.drain(at..at + n);
            }
        }
    }

    /// Reader settings covering payload modes, error handling, digest policies,
    /// small batches (so runs meet batch ends) and byte ranges of a `len`-byte file.
    pub fn scan_options(rng: &mut Rng, len: usize) -> FileScanOptions {
        let payload = [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None][rng.below(3)];
        let on_error = if rng.below(3) == 0 { OnError::Raise } else { OnError::Flag };
        let (policy, password): (DigestPolicy, &[u8]) = match rng.below(6) {
            0 => (DigestPolicy::Auto, b""),
            1 => (DigestPolicy::Auto, b"pw"),
            2 => (DigestPolicy::Fixed(DigestType::Crc32c), b""),
            3 => (DigestPolicy::Fixed(DigestType::Crc32), b""),
            4 => (DigestPolicy::Fixed(DigestType::Hmac), b"pw"),
            _ => (DigestPolicy::Fixed(DigestType::Dummy), b""),
        };
        let mut digests = LedgerDigests::new(policy, password);
        // Some ledgers named in metadata, rightly or wrongly.
        for ledger in 100..100 + LEDGER_TYPES.len() as i64 {
            if rng.below(4) == 0 {
                let digest_type = [None, Some(DigestType::Crc32c), Some(DigestType::Crc32), Some(DigestType::Hmac)][rng.below(4)];
                let password = if rng.below(2) == 0 { b"pw".to_vec() } else { b"other".to_vec() };
                digests.insert(ledger, crate::metadata::LedgerDigestInfo { digest_type, password });
            }
        }
        let mut options = FileScanOptions::new(EntryBatchOptions { payload, on_error }, digests);
        options.verify = rng.below(5) != 0;
        options.batch_rows = [3, 17, 1000][rng.below(3)];
        options.batch_bytes = [500, 5000, 1 << 20][rng.below(3)];
        if rng.below(3) == 0 {
            options.start = rng.below(len + 1) as u64;
            options.end = options.start + rng.below(len + 1) as u64;
        }
        options
    }

    /// A stream's batches, and its error as (kind, offset, detail), for comparing.
    pub fn collect(stream: impl Iterator<Item = Result<RecordBatch>>) -> (Vec<RecordBatch>, Option<(ErrorKind, u64, String)>) {
        let mut batches = Vec::new();
        for b in stream {
            match b {
                Ok(b) => batches.push(b),
                Err(e) => return (batches, Some((e.kind, e.offset, e.detail))),
            }
        }
        (batches, None)
    }
}

/// A file reader's rows, as the CRC-32C lane appends to them.
pub(crate) trait LaneRows {
    fn builder_and_resolver(&mut self) -> (&mut EntryBatchBuilder, &mut LedgerResolver);

    /// The reader's own columns for a run of entry records whose entry columns were
    /// just appended.
    fn push_run(&mut self, run: &[(usize, usize)]);
}

/// Turns of a reader's loop (each a verified run or one item) that skip the lane
/// after it took nothing: damage and entries of other types cost the lane's
/// framing and digests only now and then.
const LANE_BACKOFF: u32 = 8;
/// Entry bytes framed at a time for the lane (its groups end near this too).
const LANE_BYTES: usize = 8 << 10;

/// The file readers' fast path: the scan frames the next records, and the run of
/// them from the first that are CRC-32C entries whose digests match is staged
/// straight into the columns and appended. Their rows are the plain step's (a
/// record in step whose digest verifies is accepted, and its row is its fields,
/// verified). It serves a reader that verifies, under one digest setting for every
/// ledger: CRC-32C, or inferred (then only for ledgers already found to be
/// CRC-32C, so inference stays with the plain step). Anything else is left to the
/// verified runs and the plain step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Crc32cLane {
    enabled: bool,
    /// Loop turns left before the lane is tried again.
    backoff: u32,
}

impl Crc32cLane {
    pub fn new(resolver: &mut LedgerResolver, checks: EntryChecks) -> Self {
        let policy = resolver.sole().map(|r| r.policy());
        let enabled = checks == EntryChecks::DIGEST
            && matches!(policy, Some(DigestPolicy::Fixed(DigestType::Crc32c) | DigestPolicy::Auto));
        Crc32cLane { enabled, backoff: 0 }
    }

    #[cfg(test)]
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    #[cfg(test)]
    pub fn disable(&mut self) {
        self.enabled = false;
    }

    /// One turn of a reader's loop: appends a run, at most `rows_left` entries and
    /// about `budget` entry bytes, and returns the entry bytes taken; 0 when the
    /// reader takes the next item its other ways. `group` and `records` are scratch.
    #[allow(clippy::too_many_arguments)]
    pub fn take<'a>(
        &mut self,
        rows: &mut impl LaneRows,
        cursor: &mut impl RunCursor,
        data: &'a [u8],
        rows_left: usize,
        budget: usize,
        group: &mut StagedGroup<'a>,
        records: &mut Vec<(usize, usize)>,
    ) -> usize {
        if !self.enabled {
            return 0;
        }
        if self.backoff > 0 {
            self.backoff -= 1;
            return 0;
        }
        records.clear();
        cursor.frame_run(data, rows_left.min(GROUP_LEN), budget.min(LANE_BYTES), records);
        let mut raws: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
        for (raw, &(offset, end)) in raws.iter_mut().zip(records.iter()) {
            *raw = &data[offset + 4..end];
        }
        let (builder, resolver) = rows.builder_and_resolver();
        let resolver = resolver.sole().expect("the lane serves only readers without ledger settings");
        let inferred = resolver.policy() == DigestPolicy::Auto;
        let taken = builder.append_crc32c_prefix(&raws[..records.len()], group, |ledger_id| {
            !inferred || resolver.remembered_v1_type(ledger_id) == Some(DigestType::Crc32c)
        });
        if taken == 0 {
            self.backoff = LANE_BACKOFF;
            return 0;
        }
        let run = &records[..taken];
        rows.push_run(run);
        cursor.accept(run[0].0, run[taken - 1].1);
        run.iter().map(|&(offset, end)| end - offset - 4).sum()
    }
}

/// The ways a reader takes runs of entries before its plain step: the CRC-32C lane,
/// then (when verifying) the verified runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastPaths {
    pub lane: Crc32cLane,
    verified_runs: bool,
}

/// Scratch space for [`FastPaths::take`], kept for a batch.
pub(crate) struct FastPathScratch<'a> {
    group: StagedGroup<'a>,
    records: Vec<(usize, usize)>,
    run: Vec<VerifiedEntry<'a>>,
    passed: Vec<Entry<'a>>,
}

impl FastPathScratch<'_> {
    pub fn new() -> Self {
        FastPathScratch { group: StagedGroup::new(), records: Vec::with_capacity(GROUP_LEN), run: Vec::new(), passed: Vec::new() }
    }
}

impl FastPaths {
    pub fn new(resolver: &mut LedgerResolver, checks: EntryChecks) -> Self {
        FastPaths { lane: Crc32cLane::new(resolver, checks), verified_runs: checks.digest }
    }

    /// Only the plain step (the reference the fast paths are checked against).
    #[cfg(test)]
    pub fn disable(&mut self) {
        self.lane.disable();
        self.verified_runs = false;
    }

    /// One turn of a reader's loop: appends a run of at most `rows_left` entries and
    /// about `budget` entry bytes, and returns the entry bytes taken; 0 when the
    /// reader takes the next item by its plain step. An error is a row's, for the
    /// reader to raise after the rows before it.
    #[allow(clippy::too_many_arguments)]
    pub fn take<'a, R: LaneRows + VerifiedRunRows>(
        &mut self,
        rows: &mut R,
        cursor: &mut impl RunCursor,
        data: &'a [u8],
        rows_left: usize,
        budget: usize,
        scratch: &mut FastPathScratch<'a>,
    ) -> Result<usize> {
        let taken = self.lane.take(rows, cursor, data, rows_left, budget, &mut scratch.group, &mut scratch.records);
        if taken > 0 || !self.verified_runs {
            return Ok(taken);
        }
        scratch.run.clear();
        cursor.next_verified(data, rows_left, budget, &mut scratch.run);
        rows.append_verified(&scratch.run, &mut scratch.passed)?;
        Ok(scratch.run.iter().map(|v| v.bytes.len()).sum())
    }
}

/// A file reader's rows, fed runs of entries the scan accepted on a keyless digest
/// (only when the reader verifies digests).
pub(crate) trait VerifiedRunRows {
    fn resolver_and_checks(&mut self) -> (&mut LedgerResolver, EntryChecks);

    /// One entry through the reader's general path (its digest checked again).
    fn append_checked(&mut self, v: &VerifiedEntry<'_>) -> Result<()>;

    /// Appends `passed`, the entries of `run` whose scan verdicts are reused, and empties it.
    fn append_passed<'a>(&mut self, run: &[VerifiedEntry<'a>], passed: &mut Vec<Entry<'a>>) -> Result<()>;

    /// Appends a run. The scan's verdict is the reader's for an entry that resolves
    /// to the same digest type (a keyless digest needs no password), so such entries
    /// are appended a group at a time without digesting them again; any other entry
    /// takes [`append_checked`](Self::append_checked). `passed` is scratch space.
    fn append_verified<'a>(&mut self, run: &[VerifiedEntry<'a>], passed: &mut Vec<Entry<'a>>) -> Result<()> {
        passed.clear();
        for (i, v) in run.iter().enumerate() {
            let (resolver, checks) = self.resolver_and_checks();
            debug_assert!(checks.digest);
            let reused = resolver
                .for_entry(v.bytes)
                .try_resolve(v.bytes, false)
                .map(|r| ResolvedEntry { entry: r.entry, digest_ok: Some(true) })
                .filter(|r| r.entry.digest_type == v.digest_type && r.passes(checks));
            match reused {
                Some(r) => passed.push(r.entry),
                None => {
                    self.append_passed(&run[i - passed.len()..i], passed)?;
                    self.append_checked(v)?;
                }
            }
        }
        self.append_passed(&run[run.len() - passed.len()..], passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest_policy::DigestPolicy;
    use arrow_buffer::Buffer;

    #[test]
    fn row_capacity_follows_the_largest_batch() {
        let entries = EntryBatchOptions { payload: PayloadMode::Binary, on_error: OnError::Flag };
        let mut options = FileScanOptions::new(entries, LedgerDigests::new(DigestPolicy::Auto, b""));
        let file = MappedFile::from_buffer(Buffer::from_vec(vec![0u8; 1 << 20]));
        let mut capacity = RowCapacity::new(&options, &file, 32);
        assert_eq!(capacity.rows(), 8192, "a few thousand rows at first");
        capacity.batch_done(20_000);
        capacity.batch_done(100);
        assert_eq!(capacity.rows(), 20_000, "then the largest batch so far");
        capacity.batch_done(1 << 30);
        assert_eq!(capacity.rows(), (1 << 20) / 32 + 1, "never more than the file holds");
        options.batch_rows = 500;
        let mut small = RowCapacity::new(&options, &file, 32);
        small.batch_done(10_000);
        assert_eq!(small.rows(), 500, "nor more than a batch");
    }
}
