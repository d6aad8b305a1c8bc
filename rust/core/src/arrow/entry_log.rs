//! Entry logs as a lazy stream of record batches.
//!
//! Columns: `log_id`, `offset` (of the record's size field), `location` (`log_id <<
//! 32 | offset + 4`, what indexes store), `record_size` (the size field: the entry's
//! length), the entry columns, and `error` under `OnError::Flag`. The ledgers map
//! at the end of a rolled log is not made of entries and gives no rows; padding and
//! preallocated zeros give none either. Damage gives a row per damaged span, its
//! entry columns null (but the ids of a torn entry when its header survives),
//! `record_size` the span's length and `error` what is wrong.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use super::column::PrimitiveColumn;
use super::entries::{EntryBatchBuilder, OnError};
use super::file_scan::{
    assemble, batch_builder, file_schema, FastPathScratch, FastPaths, LaneRows, RowCapacity, gap_error, gap_message, reframed_error, BatchStream, FileScanOptions, VerifiedRunRows, REFRAMED_MESSAGE,
};
use super::mapped_file::{MappedFile, PageWindow};
use crate::digest_policy::{EntryChecks, ResolvedEntry};
use crate::entry::{parse_header, Entry};
use crate::error::{Error, Result};
use crate::files::entry_log::{self, EntryLogCursor, EntryLogItem, LedgersMap};
use crate::files::{EntryLog, EntryLogHeader, Gap, GapKind, Location, VerifiedEntry};
use crate::ledger_digests::LedgerResolver;

/// The smallest record (size field and a 32-byte entry header), for capacity hints.
const MIN_RECORD_BYTES: usize = 36;

/// The position columns, in order.
fn position_fields() -> [FieldRef; 4] {
    [
        Arc::new(Field::new("log_id", DataType::Int64, true)),
        Arc::new(Field::new("offset", DataType::Int64, false)),
        Arc::new(Field::new("location", DataType::Int64, true)),
        Arc::new(Field::new("record_size", DataType::Int64, false)),
    ]
}

/// The schema [`EntryLogBatchReader`] produces under `options`.
pub fn entry_log_schema(options: &FileScanOptions) -> SchemaRef {
    file_schema(&options.entries, &position_fields(), &[])
}

/// The ids of a torn entry, when the part in the file holds its header.
pub(crate) fn torn_ids(bytes: &[u8]) -> (Option<i64>, Option<i64>) {
    match parse_header(bytes) {
        Ok((h, _)) => (Some(h.ledger_id), Some(h.entry_id)),
        Err(_) => (None, None),
    }
}

/// The rows of one batch as they are built.
struct EntryLogRows {
    log_id: Option<u32>,
    on_error: OnError,
    checks: EntryChecks,
    resolver: LedgerResolver,
    builder: EntryBatchBuilder,
    offsets: PrimitiveColumn<Int64Type>,
    /// Built only with a log id (without one every location is null).
    locations: Option<PrimitiveColumn<Int64Type>>,
    sizes: PrimitiveColumn<Int64Type>,
}

impl EntryLogRows {
    #[inline]
    fn push_position(&mut self, offset: u64, size: u64) {
        self.push_location(offset);
        self.offsets.push(offset as i64);
        self.sizes.push(size as i64);
    }

    /// The positions of entries appended together, `(offset of the size field,
    /// entry bytes)` each, in file order.
    fn push_run_positions(&mut self, run: impl ExactSizeIterator<Item = (u64, u64)> + Clone) {
        let Some((last, _)) = run.clone().last() else { return };
        match (self.log_id, &mut self.locations) {
            // Offsets grow along a run: when the last fits a location, all do.
            (Some(id), Some(locations)) if u32::try_from(last + 4).is_ok() => {
                let high = i64::from(id) << 32;
                locations.extend(run.clone().map(|(offset, _)| high | (offset + 4) as i64));
            }
            (_, Some(_)) => {
                for (offset, _) in run.clone() {
                    self.push_location(offset);
                }
            }
            (_, None) => {}
        }
        self.offsets.extend(run.clone().map(|(offset, _)| offset as i64));
        self.sizes.extend(run.map(|(_, size)| size as i64));
    }

    /// The location of the entry whose size field is at `offset` (null past the 32
    /// bits a location has for offsets).
    #[inline]
    fn push_location(&mut self, offset: u64) {
        if let (Some(id), Some(locations)) = (self.log_id, &mut self.locations) {
            locations.push_option(Location::new(id, offset + 4).ok().map(Location::to_raw));
        }
    }

    /// Appends the row of the entry `bytes` whose size field is at `offset`; an
    /// error is what `OnError::Raise` raises.
    fn append_entry(&mut self, offset: u64, bytes: &[u8], reframed: bool) -> Result<()> {
        if reframed {
            let resolver = self.resolver.for_entry(bytes);
            // When the scan's digests and this reader's settings disagree, the
            // entry's own error (below) says why.
            if let Ok(resolved) = resolver.resolve(bytes, self.checks.digest) {
                if resolved.passes(self.checks) {
                    if self.on_error == OnError::Raise {
                        return Err(reframed_error(offset));
                    }
                    self.builder.append_entry_with_error(&resolved, REFRAMED_MESSAGE)?;
                    self.push_position(offset, bytes.len() as u64);
                    return Ok(());
                }
            }
        }
        self.builder
            .decode_append(self.resolver.for_entry(bytes), bytes, self.checks)
            .map_err(|err| err.at_base(offset + 4))?;
        self.push_position(offset, bytes.len() as u64);
        Ok(())
    }

    /// Appends a damaged span's row (`data` is the whole file).
    fn append_gap(&mut self, data: &[u8], g: &Gap) -> Result<()> {
        if self.on_error == OnError::Raise {
            return Err(gap_error(g));
        }
        let (ledger_id, entry_id) = match g.kind {
            GapKind::TornRecord => torn_ids(data.get(g.offset as usize + 4..g.end() as usize).unwrap_or(&[])),
            _ => (None, None),
        };
        self.builder.append_without_entry(ledger_id, entry_id, Some(&gap_message(g)));
        if let Some(locations) = &mut self.locations {
            locations.push_null();
        }
        self.offsets.push(g.offset as i64);
        self.sizes.push(g.len as i64);
        Ok(())
    }

    /// Rows to reserve in the position columns of the next batch.
    fn set_capacity(&mut self, rows: usize) {
        for column in [&mut self.offsets, &mut self.sizes].into_iter().chain(self.locations.as_mut()) {
            column.set_capacity(rows);
        }
    }

    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        let rows = self.offsets.len();
        // One log per reader: its id is the same on every row.
        let log_ids = match self.log_id {
            Some(id) => Int64Array::from_value(i64::from(id), rows),
            None => Int64Array::new_null(rows),
        };
        let locations: ArrayRef = match &mut self.locations {
            Some(locations) => Arc::new(locations.finish()),
            None => Arc::new(Int64Array::new_null(rows)),
        };
        let leading: Vec<ArrayRef> = vec![
            Arc::new(log_ids),
            Arc::new(self.offsets.finish()),
            locations,
            Arc::new(self.sizes.finish()),
        ];
        assemble(schema, leading, &mut self.builder, Vec::new())
    }
}

impl LaneRows for EntryLogRows {
    fn builder_and_resolver(&mut self) -> (&mut EntryBatchBuilder, &mut LedgerResolver) {
        (&mut self.builder, &mut self.resolver)
    }

    fn push_run(&mut self, run: &[(usize, usize)]) {
        self.push_run_positions(run.iter().map(|&(offset, end)| (offset as u64, (end - offset - 4) as u64)));
    }
}

impl VerifiedRunRows for EntryLogRows {
    fn resolver_and_checks(&mut self) -> (&mut LedgerResolver, EntryChecks) {
        (&mut self.resolver, self.checks)
    }

    fn append_checked(&mut self, v: &VerifiedEntry<'_>) -> Result<()> {
        self.append_entry(v.offset, v.bytes, false)
    }

    fn append_passed<'a>(&mut self, run: &[VerifiedEntry<'a>], passed: &mut Vec<Entry<'a>>) -> Result<()> {
        debug_assert_eq!(run.len(), passed.len());
        if passed.is_empty() {
            return Ok(());
        }
        if self.builder.append_passed(passed, Some(true)) {
            self.push_run_positions(run.iter().map(|v| (v.offset, v.bytes.len() as u64)));
        } else {
            // Row by row: the row that overflows the payload column says so.
            for (v, entry) in run.iter().zip(passed.iter()) {
                self.builder
                    .append_entry(&ResolvedEntry { entry: *entry, digest_ok: Some(true) }, None)
                    .map_err(|err| err.at_base(v.entry_offset()))?;
                self.push_position(v.offset, v.bytes.len() as u64);
            }
        }
        passed.clear();
        Ok(())
    }
}

/// Streams the entries of one entry log (or one byte range of it), a batch at a time.
pub struct EntryLogBatchReader {
    file: MappedFile,
    options: FileScanOptions,
    schema: SchemaRef,
    cursor: EntryLogCursor,
    rows: EntryLogRows,
    /// Raised after the batch of rows that came before it.
    pending: Option<Error>,
    done: bool,
    pages: PageWindow,
    capacity: RowCapacity,
    fast: FastPaths,
}

impl std::fmt::Debug for EntryLogBatchReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryLogBatchReader").field("file", &self.file).field("log_id", &self.rows.log_id).finish()
    }
}

impl EntryLogBatchReader {
    /// Maps `path` and checks its header; the log id comes from the file name
    /// (`<hex>.log`) unless `log_id` is given, and without one `log_id` and
    /// `location` are null.
    pub fn open(path: impl AsRef<Path>, log_id: Option<i64>, options: FileScanOptions) -> Result<Self> {
        let path = path.as_ref();
        let log_id = log_id.or_else(|| entry_log::log_id_from_path(path));
        Self::new(MappedFile::open(path)?, log_id, options)
    }

    /// A reader over bytes already mapped or in memory. An empty file is an empty log
    /// (a brand-new log's header may not be written yet); any other file must start
    /// with an entry log header.
    pub fn new(file: MappedFile, log_id: Option<i64>, options: FileScanOptions) -> Result<Self> {
        options.validate()?;
        let log_id = log_id
            .map(|id| {
                u32::try_from(id).map_err(|_| {
                    Error::invalid_argument(format!("entry log id {id} does not fit the 32 bits of a location"))
                })
            })
            .transpose()?;
        if !file.is_empty() {
            EntryLogHeader::parse(file.bytes())
                .map_err(|e| {
                    let detail = format!("not an entry log: {}", e.detail);
                    file.locate(e.with_detail(detail))
                })?;
        }
        let log = EntryLog::new(file.bytes());
        let cursor = EntryLogCursor::new(&log, &options.digests.scan_options(), options.start, options.end);
        let capacity = RowCapacity::new(&options, &file, MIN_RECORD_BYTES);
        let rows = capacity.rows();
        let builder = batch_builder(&options, &file, rows);
        let mut resolver = options.digests.resolver();
        let checks = if options.verify { EntryChecks::DIGEST } else { EntryChecks::default() };
        let fast = FastPaths::new(&mut resolver, checks);
        Ok(EntryLogBatchReader {
            schema: entry_log_schema(&options),
            cursor,
            rows: EntryLogRows {
                log_id,
                on_error: options.entries.on_error,
                checks,
                resolver,
                builder,
                offsets: PrimitiveColumn::with_capacity(rows),
                locations: log_id.map(|_| PrimitiveColumn::with_capacity(rows)),
                sizes: PrimitiveColumn::with_capacity(rows),
            },
            pending: None,
            done: false,
            pages: PageWindow::new(options.start),
            capacity,
            fast,
            options,
            file,
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.file.path()
    }

    pub fn log_id(&self) -> Option<u32> {
        self.rows.log_id
    }

    pub fn file_len(&self) -> u64 {
        self.file.len()
    }

    /// The same reader taking every item by the plain scan step (the reference the
    /// runs are checked against).
    #[cfg(test)]
    pub(crate) fn without_verified_runs(mut self) -> Self {
        self.fast.disable();
        self
    }

    /// The same reader without the CRC-32C lane (verified runs and the plain step).
    #[cfg(test)]
    pub(crate) fn without_crc32c_lane(mut self) -> Self {
        self.fast.lane.disable();
        self
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        if self.done {
            return None;
        }
        let data = self.file.bytes();
        let mut bytes = 0usize;
        let mut scratch = FastPathScratch::new();
        while self.rows.builder.len() < self.options.batch_rows && bytes < self.options.batch_bytes {
            self.pages.advance(&self.file, self.cursor.position());
            let rows_left = self.options.batch_rows - self.rows.builder.len();
            let budget = self.options.batch_bytes - bytes;
            match self.fast.take(&mut self.rows, &mut self.cursor, data, rows_left, budget, &mut scratch) {
                Ok(0) => {}
                Ok(taken) => {
                    bytes += taken;
                    continue;
                }
                Err(e) => {
                    self.pending = Some(self.file.locate(e));
                    break;
                }
            }
            let Some(item) = self.cursor.next_item(data) else {
                self.done = true;
                break;
            };
            let result = match item {
                EntryLogItem::Entry(e) => {
                    bytes += e.bytes.len();
                    self.rows.append_entry(e.offset, e.bytes, e.reframed)
                }
                EntryLogItem::Gap(g) if g.kind.is_damage() => self.rows.append_gap(data, &g),
                EntryLogItem::LedgersMap(_) | EntryLogItem::Gap(_) => Ok(()),
            };
            if let Err(e) = result {
                self.pending = Some(self.file.locate(e));
                break;
            }
        }
        self.release_passed_pages();
        if self.rows.builder.is_empty() {
            self.done = true;
            return self.pending.take().map(Err);
        }
        self.capacity.batch_done(self.rows.builder.len());
        let batch = self.rows.finish(&self.schema);
        self.rows.set_capacity(self.capacity.rows());
        self.rows.builder = batch_builder(&self.options, &self.file, self.capacity.rows());
        Some(batch)
    }

    fn release_passed_pages(&mut self) {
        self.pages.batch_done(&self.file, self.cursor.position());
    }
}

impl Iterator for EntryLogBatchReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.next_batch()
    }
}

impl BatchStream for EntryLogBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// A ledgers map as a batch: `ledger_id`, `size` (bytes of that ledger's records,
/// each entry's length + 4), sorted by ledger id.
pub fn ledgers_map_batch(map: &LedgersMap) -> RecordBatch {
    let ids = Int64Array::from_iter_values(map.ledgers.iter().map(|l| l.ledger_id));
    let sizes = Int64Array::from_iter_values(map.ledgers.iter().map(|l| l.size));
    RecordBatch::try_new(ledgers_map_schema(), vec![Arc::new(ids), Arc::new(sizes)]).expect("two columns of one length")
}

pub fn ledgers_map_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("size", DataType::Int64, false),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::file_scan::test_files::*;
    use crate::files::EntryLogWriter;
    use crate::{DigestPolicy, DigestType};
    use crate::test_rng::Rng;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use arrow_buffer::Buffer;
    use std::io::Cursor;

    fn sample_log(rng: &mut Rng, count: usize) -> Vec<u8> {
        let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
        let mut next = [0i64; LEDGER_TYPES.len()];
        for _ in 0..count {
            let l = ledger(rng);
            w.add_entry(&entry(rng, l, next[l])).unwrap();
            next[l] += 1;
        }
        w.finish_rolled().unwrap().into_inner()
    }

    /// The CRC-32C lane gives the batches (and the error) of the plain step, and of
    /// the verified runs without it, on healthy and damaged logs, under the settings
    /// it serves: CRC-32C or inferred digests with no ledger settings, verifying.
    #[test]
    fn lane_gives_the_rows_of_the_plain_step() {
        let mut rng = Rng(0x1A4E_C32C);
        let (mut rows, mut laned) = (0, 0);
        for round in 0..400 {
            let mut bytes = sample_log(&mut rng, 60);
            for _ in 0..rng.below(4) {
                damage(&mut rng, &mut bytes, 1024);
            }
            let mut options = scan_options(&mut rng, bytes.len());
            let policy = if rng.below(2) == 0 { DigestPolicy::Fixed(DigestType::Crc32c) } else { DigestPolicy::Auto };
            options.digests = crate::LedgerDigests::new(policy, if rng.below(2) == 0 { b"pw" } else { b"" });
            options.verify = true;
            let buffer = Buffer::from_vec(bytes);
            let open = || EntryLogBatchReader::new(MappedFile::from_buffer(buffer.clone()), Some(3), options.clone()).unwrap();
            assert!(open().fast.lane.is_enabled(), "round {round}: the lane serves {options:?}");
            let got = collect(open());
            for want in [collect(open().without_verified_runs()), collect(open().without_crc32c_lane())] {
                assert_eq!(got.1, want.1, "round {round} {options:?}");
                assert_eq!(got.0, want.0, "round {round} {options:?}");
            }
            rows += got.0.iter().map(RecordBatch::num_rows).sum::<usize>();
            laned += usize::from(got.1.is_none());
        }
        assert!(rows > 5000 && laned > 100, "{rows} rows, {laned} logs read to the end");
    }

    /// Under inference the lane takes only entries of ledgers already found to be
    /// CRC-32C: a ledger inferred as CRC-32 keeps that type for entries whose
    /// CRC-32C would match, as in the plain step; and a damaged entry after a run
    /// the lane took is flagged where it is.
    #[test]
    fn lane_leaves_inference_to_the_plain_step() {
        let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
        let mut damaged_at = 0;
        for i in 0..60i64 {
            // Ledger 9 starts as CRC-32 and (as no writer would) goes on in CRC-32C.
            let (ledger, dt) = if i < 40 { (8, DigestType::Crc32c) } else { (9, if i < 45 { DigestType::Crc32 } else { DigestType::Crc32c }) };
            let h = crate::EntryHeader::new(0, ledger, i, i - 1, 10 * (i + 1));
            let mut e = crate::entry::encode_entry(&h, &[i as u8; 10], &crate::Digester::new(dt, b"")).unwrap();
            if i == 30 {
                e[40] ^= 1;
                damaged_at = w.position();
            }
            w.add_entry(&e).unwrap();
        }
        let buffer = Buffer::from_vec(w.finish_rolled().unwrap().into_inner());
        let entries = crate::arrow::EntryBatchOptions { payload: crate::arrow::PayloadMode::Binary, on_error: OnError::Flag };
        let options = FileScanOptions::new(entries, crate::LedgerDigests::new(DigestPolicy::Auto, b""));
        let open = || EntryLogBatchReader::new(MappedFile::from_buffer(buffer.clone()), Some(3), options.clone()).unwrap();
        let got = collect(open());
        assert_eq!(got, collect(open().without_verified_runs()));
        let batch = &got.0[0];
        let errors = batch.column_by_name("error").unwrap().as_string::<i32>();
        let offsets = batch.column_by_name("offset").unwrap().as_primitive::<Int64Type>();
        let bad: Vec<usize> = (0..batch.num_rows()).filter(|&i| errors.is_valid(i)).collect();
        assert_eq!(bad.len(), 1 + 15, "the damaged entry and ledger 9's CRC-32C ones");
        assert_eq!(offsets.value(bad[0]) as u64, damaged_at);
        assert!(errors.value(bad[0]).contains("crc32c"), "{}", errors.value(bad[0]));
        assert!(bad[1..].iter().all(|&i| errors.value(i).contains("crc32 ")), "{}", errors.value(bad[1]));
    }

    /// Batches of more rows than the first reservation (columns grow, then later
    /// batches reserve more) hold the rows small batches do.
    #[test]
    fn large_batches_hold_the_rows_of_small_ones() {
        let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
        let digester = crate::Digester::new(crate::DigestType::Crc32c, b"");
        for i in 0..30_000i64 {
            let h = crate::EntryHeader::new(0, 1 + i % 3, i / 3, i / 3 - 1, i);
            w.add_entry(&crate::entry::encode_entry(&h, &[i as u8; 3], &digester).unwrap()).unwrap();
        }
        let buffer = Buffer::from_vec(w.finish_rolled().unwrap().into_inner());
        let read = |batch_rows: usize, batch_bytes: usize| {
            let entries = crate::arrow::EntryBatchOptions { payload: crate::arrow::PayloadMode::BinaryView, on_error: OnError::Flag };
            let digests = crate::LedgerDigests::new(crate::DigestPolicy::Fixed(crate::DigestType::Crc32c), b"");
            let mut options = FileScanOptions::new(entries, digests);
            options.batch_rows = batch_rows;
            options.batch_bytes = batch_bytes;
            let batches = collect(EntryLogBatchReader::new(MappedFile::from_buffer(buffer.clone()), Some(3), options).unwrap()).0;
            let mut rows: Vec<(i64, i64, i64, i64, Option<bool>)> = Vec::new();
            for b in &batches {
                let int = |name: &str| b.column_by_name(name).unwrap().as_primitive::<Int64Type>().clone();
                let (ledger, entry, offset, location) = (int("ledger_id"), int("entry_id"), int("offset"), int("location"));
                let ok = b.column_by_name("digest_ok").unwrap().as_boolean().clone();
                for i in 0..b.num_rows() {
                    rows.push((ledger.value(i), entry.value(i), offset.value(i), location.value(i), ok.is_valid(i).then(|| ok.value(i))));
                }
            }
            (batches.len(), rows)
        };
        let (large_batches, large) = read(65_536, 400_000);
        let (_, small) = read(1000, 1 << 20);
        assert_eq!(large.len(), 30_000);
        assert!((2..10).contains(&large_batches), "{large_batches} batches");
        assert!(large.iter().all(|r| r.4 == Some(true)));
        assert_eq!(large, small);
    }

    /// Runs of entries accepted on their digests give the batches (and the error)
    /// the plain scan step gives, on healthy and damaged logs, under any settings.
    #[test]
    fn runs_give_the_rows_of_the_plain_step() {
        let mut rng = Rng(0x106F_11E5);
        let mut rows = 0;
        for round in 0..400 {
            let mut bytes = sample_log(&mut rng, 40);
            for _ in 0..rng.below(4) {
                damage(&mut rng, &mut bytes, 1024);
            }
            let options = scan_options(&mut rng, bytes.len());
            let buffer = Buffer::from_vec(bytes);
            let open = || EntryLogBatchReader::new(MappedFile::from_buffer(buffer.clone()), Some(3), options.clone()).unwrap();
            let got = collect(open());
            let want = collect(open().without_verified_runs());
            assert_eq!(got.1, want.1, "round {round} {options:?}");
            assert_eq!(got.0, want.0, "round {round} {options:?}");
            rows += got.0.iter().map(RecordBatch::num_rows).sum::<usize>();
        }
        assert!(rows > 2000, "{rows} rows");
    }
}
