//! Journals as a lazy stream of record batches.
//!
//! Columns: `journal_id`, `offset` (of the record's length field), `record_size`
//! (the bytes after the length field; for a damaged span, the span's length),
//! `record_type`, the entry columns, `master_key`, `explicit_lac`,
//! `explicit_lac_blob`, and `error` under `OnError::Flag`.
//!
//! `record_type` is `entry` (a data entry, decoded and verified like any entry),
//! `ledger_key`, `fence`, `explicit_lac` (meta records: `ledger_id` and the meta
//! `entry_id` they store, with the master key or LAC blob in their own columns),
//! `unknown` (a meta record of an id this library does not know, which BookKeeper
//! skips), `padding` (only when asked for: what a V5+ writer adds at each flush) and
//! `damage` (a damaged span: `error` says what is wrong).

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder};
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, FieldRef, SchemaRef};

use super::column::PrimitiveColumn;
use super::entries::{EntryBatchBuilder, OnError};
use super::entry_log::torn_ids;
use super::file_scan::{
    assemble, batch_builder, file_schema, FastPathScratch, FastPaths, LaneRows, RowCapacity, gap_error, gap_message, reframed_error, BatchStream, FileScanOptions, VerifiedRunRows, REFRAMED_MESSAGE,
};
use super::mapped_file::{MappedFile, PageWindow};
use crate::digest::DigestType;
use crate::digest_policy::{EntryChecks, ResolvedEntry};
use crate::entry::{decode_lac, Entry};
use crate::error::{Error, Result};
use crate::files::journal::{self, JournalCursor, JournalItem, JournalRecord, JournalRecordKind};
use crate::files::{entry_log, index_file, Gap, GapKind, Journal, VerifiedEntry};
use crate::ledger_digests::LedgerResolver;

/// The smallest record (length field and a fence's 16 bytes), for capacity hints.
const MIN_RECORD_BYTES: usize = 20;

/// `record_type` of a damaged span.
pub const DAMAGE_RECORD_TYPE: &str = "damage";

fn leading_fields() -> [FieldRef; 4] {
    [
        Arc::new(Field::new("journal_id", DataType::Int64, true)),
        Arc::new(Field::new("offset", DataType::Int64, false)),
        Arc::new(Field::new("record_size", DataType::Int64, false)),
        Arc::new(Field::new("record_type", DataType::Utf8, false)),
    ]
}

fn trailing_fields() -> [FieldRef; 3] {
    [
        Arc::new(Field::new("master_key", DataType::Binary, true)),
        Arc::new(Field::new("explicit_lac", DataType::Int64, true)),
        Arc::new(Field::new("explicit_lac_blob", DataType::Binary, true)),
    ]
}

/// The schema [`JournalBatchReader`] produces under `options`.
pub fn journal_schema(options: &FileScanOptions) -> SchemaRef {
    file_schema(&options.entries, &leading_fields(), &trailing_fields())
}

/// The rows of one batch as they are built.
struct JournalRows {
    journal_id: Option<i64>,
    on_error: OnError,
    checks: EntryChecks,
    resolver: LedgerResolver,
    builder: EntryBatchBuilder,
    offsets: PrimitiveColumn<Int64Type>,
    sizes: PrimitiveColumn<Int64Type>,
    record_types: RecordTypeColumn,
    meta: MetaColumns,
}

/// `record_type`, kept as runs of one name (most rows are entries) and spelled out
/// when the batch is finished.
#[derive(Default)]
struct RecordTypeColumn {
    runs: Vec<(&'static str, usize)>,
}

impl RecordTypeColumn {
    #[inline]
    fn push_n(&mut self, name: &'static str, n: usize) {
        match self.runs.last_mut() {
            Some((last, count)) if *last == name => *count += n,
            _ => self.runs.push((name, n)),
        }
    }

    /// The names so far; the column is left empty.
    fn finish(&mut self) -> Result<StringArray> {
        let rows: usize = self.runs.iter().map(|r| r.1).sum();
        let bytes: usize = self.runs.iter().map(|(name, n)| name.len() * n).sum();
        if bytes > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("{rows} rows are too many for one batch's record_type column")));
        }
        let mut values: Vec<u8> = Vec::with_capacity(bytes);
        let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
        offsets.push(0);
        for (name, n) in self.runs.drain(..) {
            for _ in 0..n {
                values.extend_from_slice(name.as_bytes());
                offsets.push(values.len() as i32);
            }
        }
        Ok(StringArray::new(OffsetBuffer::new(offsets.into()), values.into(), None))
    }
}

/// `master_key`, `explicit_lac` and `explicit_lac_blob`: null but on the few meta
/// records, so runs of null rows are appended at once.
#[derive(Default)]
struct MetaColumns {
    master_keys: BinaryBuilder,
    explicit_lacs: Int64Builder,
    lac_blobs: BinaryBuilder,
    /// Null rows not appended yet.
    nulls_owed: usize,
}

impl MetaColumns {
    #[inline]
    fn push_nulls(&mut self, n: usize) {
        self.nulls_owed += n;
    }

    fn push(&mut self, master_key: Option<&[u8]>, lac_blob: Option<&[u8]>) {
        if master_key.is_none() && lac_blob.is_none() {
            return self.push_nulls(1);
        }
        self.settle();
        self.master_keys.append_option(master_key);
        // The LAC value sits before the digest, whatever the digest type.
        self.explicit_lacs.append_option(lac_blob.and_then(|b| decode_lac(b, DigestType::Dummy).ok()).map(|l| l.lac));
        self.lac_blobs.append_option(lac_blob);
    }

    fn settle(&mut self) {
        if self.nulls_owed > 0 {
            self.master_keys.append_nulls(self.nulls_owed);
            self.explicit_lacs.append_nulls(self.nulls_owed);
            self.lac_blobs.append_nulls(self.nulls_owed);
            self.nulls_owed = 0;
        }
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.settle();
        vec![
            Arc::new(self.master_keys.finish()),
            Arc::new(self.explicit_lacs.finish()),
            Arc::new(self.lac_blobs.finish()),
        ]
    }
}

impl JournalRows {
    #[inline]
    fn push_row(&mut self, offset: u64, size: u64, record_type: &'static str) {
        self.offsets.push(offset as i64);
        self.sizes.push(size as i64);
        self.record_types.push_n(record_type, 1);
    }

    #[inline]
    fn push_meta(&mut self, master_key: Option<&[u8]>, lac_blob: Option<&[u8]>) {
        self.meta.push(master_key, lac_blob);
    }

    /// Appends the row of the data entry `payload` whose length field is at
    /// `offset`; an error is what `OnError::Raise` raises.
    fn append_entry(&mut self, offset: u64, payload: &[u8], reframed: bool) -> Result<()> {
        let size = payload.len() as u64;
        if reframed {
            let resolver = self.resolver.for_entry(payload);
            if let Ok(resolved) = resolver.resolve(payload, self.checks.digest) {
                if resolved.passes(self.checks) {
                    if self.on_error == OnError::Raise {
                        return Err(reframed_error(offset));
                    }
                    self.builder.append_entry_with_error(&resolved, REFRAMED_MESSAGE)?;
                    self.push_row(offset, size, "entry");
                    self.push_meta(None, None);
                    return Ok(());
                }
            }
        }
        self.builder
            .decode_append(self.resolver.for_entry(payload), payload, self.checks)
            .map_err(|err| err.at_base(offset + 4))?;
        self.push_row(offset, size, "entry");
        self.push_meta(None, None);
        Ok(())
    }

    /// A meta or padding record (`data` is the whole file).
    fn append_record(&mut self, r: &JournalRecord<'_>, span: u64) {
        let (master_key, lac_blob) = match r.kind {
            JournalRecordKind::LedgerKey { master_key, .. } => (Some(master_key), None),
            JournalRecordKind::ExplicitLac { lac_blob, .. } => (None, Some(lac_blob)),
            _ => (None, None),
        };
        self.builder.append_without_entry(r.kind.ledger_id(), r.entry_id(), None);
        self.push_row(r.offset, span - 4, r.kind.name());
        self.push_meta(master_key, lac_blob);
    }

    fn append_gap(&mut self, data: &[u8], g: &Gap) -> Result<()> {
        if self.on_error == OnError::Raise {
            return Err(gap_error(g));
        }
        let (ledger_id, entry_id) = match g.kind {
            GapKind::TornRecord => torn_ids(data.get(g.offset as usize + 4..g.end() as usize).unwrap_or(&[])),
            _ => (None, None),
        };
        self.builder.append_without_entry(ledger_id, entry_id, Some(&gap_message(g)));
        self.push_row(g.offset, g.len, DAMAGE_RECORD_TYPE);
        self.push_meta(None, None);
        Ok(())
    }

    /// Rows to reserve in the position columns of the next batch.
    fn set_capacity(&mut self, rows: usize) {
        self.offsets.set_capacity(rows);
        self.sizes.set_capacity(rows);
    }

    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        // One journal per reader: its id is the same on every row.
        let rows = self.offsets.len();
        let journal_ids = match self.journal_id {
            Some(id) => Int64Array::from_value(id, rows),
            None => Int64Array::new_null(rows),
        };
        let leading: Vec<ArrayRef> = vec![
            Arc::new(journal_ids),
            Arc::new(self.offsets.finish()),
            Arc::new(self.sizes.finish()),
            Arc::new(self.record_types.finish()?),
        ];
        let trailing = self.meta.finish();
        assemble(schema, leading, &mut self.builder, trailing)
    }
}

impl LaneRows for JournalRows {
    fn builder_and_resolver(&mut self) -> (&mut EntryBatchBuilder, &mut LedgerResolver) {
        (&mut self.builder, &mut self.resolver)
    }

    fn push_run(&mut self, run: &[(usize, usize)]) {
        self.offsets.extend(run.iter().map(|&(offset, _)| offset as i64));
        self.sizes.extend(run.iter().map(|&(offset, end)| (end - offset - 4) as i64));
        self.record_types.push_n("entry", run.len());
        self.meta.push_nulls(run.len());
    }
}

impl VerifiedRunRows for JournalRows {
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
            self.offsets.extend(run.iter().map(|v| v.offset as i64));
            self.sizes.extend(run.iter().map(|v| v.bytes.len() as i64));
            self.record_types.push_n("entry", run.len());
            self.meta.push_nulls(run.len());
        } else {
            // Row by row: the row that overflows the payload column says so.
            for (v, entry) in run.iter().zip(passed.iter()) {
                self.builder
                    .append_entry(&ResolvedEntry { entry: *entry, digest_ok: Some(true) }, None)
                    .map_err(|err| err.at_base(v.entry_offset()))?;
                self.push_row(v.offset, v.bytes.len() as u64, "entry");
                self.push_meta(None, None);
            }
        }
        passed.clear();
        Ok(())
    }
}

/// Streams the records of one journal (or one byte range of it), a batch at a time.
pub struct JournalBatchReader {
    file: MappedFile,
    options: FileScanOptions,
    include_padding: bool,
    schema: SchemaRef,
    cursor: JournalCursor,
    rows: JournalRows,
    pending: Option<Error>,
    done: bool,
    pages: PageWindow,
    capacity: RowCapacity,
    fast: FastPaths,
}

impl std::fmt::Debug for JournalBatchReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalBatchReader").field("file", &self.file).field("journal_id", &self.rows.journal_id).finish()
    }
}

impl JournalBatchReader {
    /// Maps `path`; the journal id comes from the file name (`<hex>.txn`) unless
    /// `journal_id` is given (without either, `journal_id` is null).
    pub fn open(path: impl AsRef<Path>, journal_id: Option<i64>, include_padding: bool, options: FileScanOptions) -> Result<Self> {
        let path = path.as_ref();
        let journal_id = journal_id.or_else(|| journal::journal_id_from_path(path));
        Self::new(MappedFile::open(path)?, journal_id, include_padding, options)
    }

    /// A file without the journal magic is a version 1 journal, as BookKeeper reads
    /// it; a version it does not know, or another bookie file's magic, is an error.
    pub fn new(file: MappedFile, journal_id: Option<i64>, include_padding: bool, options: FileScanOptions) -> Result<Self> {
        options.validate()?;
        let data = file.bytes();
        for (magic, what) in [(entry_log::MAGIC, "an entry log"), (index_file::MAGIC, "a ledger index file")] {
            if data.starts_with(&magic) {
                return Err(file.locate(Error::corrupt(0, format!("not a journal: the file starts like {what}"))));
            }
        }
        let journal = Journal::new(data).map_err(|e| file.locate(e))?;
        let cursor = JournalCursor::new(&journal, &options.digests.scan_options(), options.start, options.end);
        let capacity = RowCapacity::new(&options, &file, MIN_RECORD_BYTES);
        let rows = capacity.rows();
        let builder = batch_builder(&options, &file, rows);
        let mut resolver = options.digests.resolver();
        let checks = if options.verify { EntryChecks::DIGEST } else { EntryChecks::default() };
        let fast = FastPaths::new(&mut resolver, checks);
        Ok(JournalBatchReader {
            include_padding,
            schema: journal_schema(&options),
            cursor,
            rows: JournalRows {
                journal_id,
                on_error: options.entries.on_error,
                checks,
                resolver,
                builder,
                offsets: PrimitiveColumn::with_capacity(rows),
                sizes: PrimitiveColumn::with_capacity(rows),
                record_types: RecordTypeColumn::default(),
                meta: MetaColumns::default(),
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

    pub fn journal_id(&self) -> Option<i64> {
        self.rows.journal_id
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
                JournalItem::Record(r) => match r.kind {
                    JournalRecordKind::Entry { .. } => {
                        bytes += r.payload.len();
                        self.rows.append_entry(r.offset, r.payload, r.reframed)
                    }
                    JournalRecordKind::Padding { .. } if !self.include_padding => Ok(()),
                    _ => {
                        self.rows.append_record(&r, r.span_len());
                        Ok(())
                    }
                },
                JournalItem::Gap(g) if g.kind.is_damage() => self.rows.append_gap(data, &g),
                JournalItem::Gap(_) => Ok(()),
            };
            if let Err(e) = result {
                self.pending = Some(self.file.locate(e));
                break;
            }
        }
        self.pages.batch_done(&self.file, self.cursor.position());
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
}

impl Iterator for JournalBatchReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.next_batch()
    }
}

impl BatchStream for JournalBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::file_scan::test_files::*;
    use crate::files::JournalWriter;
    use crate::{DigestPolicy, DigestType};
    use crate::test_rng::Rng;
    use arrow_buffer::Buffer;
    use std::io::Cursor;

    fn sample_journal(rng: &mut Rng, count: usize) -> Vec<u8> {
        let mut w = JournalWriter::new(Cursor::new(Vec::new()), 6, 512, 1 << 14).unwrap();
        let mut next = [0i64; LEDGER_TYPES.len()];
        for k in 0..count {
            match rng.below(15) {
                0 => {
                    w.add_ledger_key(100, &[k as u8; 20]).unwrap();
                }
                1 => {
                    w.add_fence(102).unwrap();
                }
                _ => {
                    let l = ledger(rng);
                    w.add_entry(&entry(rng, l, next[l])).unwrap();
                    next[l] += 1;
                }
            }
            if rng.below(6) == 0 {
                w.flush().unwrap();
            }
        }
        w.flush().unwrap();
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn runs_give_the_rows_of_the_plain_step() {
        let mut rng = Rng(0x070A_11E5);
        let mut rows = 0;
        for round in 0..400 {
            let mut bytes = sample_journal(&mut rng, 40);
            for _ in 0..rng.below(4) {
                damage(&mut rng, &mut bytes, 512);
            }
            let options = scan_options(&mut rng, bytes.len());
            let padding = rng.below(2) == 0;
            let buffer = Buffer::from_vec(bytes);
            let open = || {
                JournalBatchReader::new(MappedFile::from_buffer(buffer.clone()), Some(5), padding, options.clone()).unwrap()
            };
            let got = collect(open());
            let want = collect(open().without_verified_runs());
            assert_eq!(got.1, want.1, "round {round} {options:?}");
            assert_eq!(got.0, want.0, "round {round} {options:?}");
            rows += got.0.iter().map(RecordBatch::num_rows).sum::<usize>();
        }
        assert!(rows > 2000, "{rows} rows");
    }

    /// The CRC-32C lane gives the batches (and the error) of the plain step and of
    /// the verified runs without it, under the settings it serves.
    #[test]
    fn lane_gives_the_rows_of_the_plain_step() {
        let mut rng = Rng(0x070A_C32C);
        let (mut rows, mut whole) = (0, 0);
        for round in 0..400 {
            let mut bytes = sample_journal(&mut rng, 60);
            for _ in 0..rng.below(4) {
                damage(&mut rng, &mut bytes, 512);
            }
            let mut options = scan_options(&mut rng, bytes.len());
            let policy = if rng.below(2) == 0 { DigestPolicy::Fixed(DigestType::Crc32c) } else { DigestPolicy::Auto };
            options.digests = crate::LedgerDigests::new(policy, if rng.below(2) == 0 { b"pw" } else { b"" });
            options.verify = true;
            let padding = rng.below(2) == 0;
            let buffer = Buffer::from_vec(bytes);
            let open = || {
                JournalBatchReader::new(MappedFile::from_buffer(buffer.clone()), Some(5), padding, options.clone()).unwrap()
            };
            assert!(open().fast.lane.is_enabled(), "round {round}: the lane serves {options:?}");
            let got = collect(open());
            for want in [collect(open().without_verified_runs()), collect(open().without_crc32c_lane())] {
                assert_eq!(got.1, want.1, "round {round} {options:?}");
                assert_eq!(got.0, want.0, "round {round} {options:?}");
            }
            rows += got.0.iter().map(RecordBatch::num_rows).sum::<usize>();
            whole += usize::from(got.1.is_none());
        }
        assert!(rows > 5000 && whole > 100, "{rows} rows, {whole} journals read to the end");
    }
}
