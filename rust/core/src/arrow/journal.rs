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

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, FieldRef, SchemaRef};

use super::column::PrimitiveColumn;
use super::entries::{EntryBatchBuilder, OnError};
use super::entry_log::torn_ids;
use super::file_scan::{
    assemble, batch_builder, file_schema, row_capacity, gap_error, gap_message, reframed_error, BatchStream, FileScanOptions, REFRAMED_MESSAGE,
};
use super::mapped_file::{MappedFile, PageReleaser};
use crate::digest::DigestType;
use crate::digest_policy::EntryChecks;
use crate::entry::decode_lac;
use crate::error::{Error, Result};
use crate::files::journal::{self, JournalCursor, JournalItem, JournalRecord, JournalRecordKind};
use crate::files::{entry_log, index_file, Gap, GapKind, Journal};
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
    journal_ids: PrimitiveColumn<Int64Type>,
    offsets: PrimitiveColumn<Int64Type>,
    sizes: PrimitiveColumn<Int64Type>,
    record_types: StringBuilder,
    master_keys: BinaryBuilder,
    explicit_lacs: PrimitiveColumn<Int64Type>,
    lac_blobs: BinaryBuilder,
}

impl JournalRows {
    fn push_row(&mut self, offset: u64, size: u64, record_type: &str) {
        self.journal_ids.push_option(self.journal_id);
        self.offsets.push(offset as i64);
        self.sizes.push(size as i64);
        self.record_types.append_value(record_type);
    }

    fn push_meta(&mut self, master_key: Option<&[u8]>, lac_blob: Option<&[u8]>) {
        self.master_keys.append_option(master_key);
        // The LAC value sits before the digest, whatever the digest type.
        self.explicit_lacs.push_option(lac_blob.and_then(|b| decode_lac(b, DigestType::Dummy).ok()).map(|l| l.lac));
        self.lac_blobs.append_option(lac_blob);
    }

    fn append_entry(&mut self, r: &JournalRecord<'_>) -> Result<()> {
        let size = r.payload.len() as u64;
        if r.reframed {
            let resolver = self.resolver.for_entry(r.payload);
            if let Ok(resolved) = resolver.resolve(r.payload, self.checks.digest) {
                if resolved.passes(self.checks) {
                    if self.on_error == OnError::Raise {
                        return Err(reframed_error(r.offset));
                    }
                    self.builder.append_entry_with_error(&resolved, REFRAMED_MESSAGE)?;
                    self.push_row(r.offset, size, "entry");
                    self.push_meta(None, None);
                    return Ok(());
                }
            }
        }
        self.builder
            .decode_append(self.resolver.for_entry(r.payload), r.payload, self.checks)
            .map_err(|err| err.at_base(r.payload_offset()))?;
        self.push_row(r.offset, size, "entry");
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

    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        let leading: Vec<ArrayRef> = vec![
            Arc::new(self.journal_ids.finish()),
            Arc::new(self.offsets.finish()),
            Arc::new(self.sizes.finish()),
            Arc::new(self.record_types.finish()),
        ];
        let trailing: Vec<ArrayRef> = vec![
            Arc::new(self.master_keys.finish()),
            Arc::new(self.explicit_lacs.finish()),
            Arc::new(self.lac_blobs.finish()),
        ];
        assemble(schema, leading, &mut self.builder, trailing)
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
    pages: PageReleaser,
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
        let rows = row_capacity(&options, &file, MIN_RECORD_BYTES);
        let builder = batch_builder(&options, &file, MIN_RECORD_BYTES);
        Ok(JournalBatchReader {
            include_padding,
            schema: journal_schema(&options),
            cursor,
            rows: JournalRows {
                journal_id,
                on_error: options.entries.on_error,
                checks: if options.verify { EntryChecks::DIGEST } else { EntryChecks::default() },
                resolver: options.digests.resolver(),
                builder,
                journal_ids: PrimitiveColumn::with_capacity(rows),
                offsets: PrimitiveColumn::with_capacity(rows),
                sizes: PrimitiveColumn::with_capacity(rows),
                record_types: StringBuilder::new(),
                master_keys: BinaryBuilder::new(),
                explicit_lacs: PrimitiveColumn::with_capacity(rows),
                lac_blobs: BinaryBuilder::new(),
            },
            pending: None,
            done: false,
            pages: PageReleaser::new(options.start),
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
        while self.rows.builder.len() < self.options.batch_rows && bytes < self.options.batch_bytes {
            let Some(item) = self.cursor.next_item(data) else {
                self.done = true;
                break;
            };
            let result = match item {
                JournalItem::Record(r) => match r.kind {
                    JournalRecordKind::Entry { .. } => {
                        bytes += r.payload.len();
                        self.rows.append_entry(&r)
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
        let batch = self.rows.finish(&self.schema);
        self.rows.builder = batch_builder(&self.options, &self.file, MIN_RECORD_BYTES);
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
