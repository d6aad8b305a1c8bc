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
    assemble, batch_builder, file_schema, row_capacity, gap_error, gap_message, reframed_error, BatchStream, FileScanOptions, REFRAMED_MESSAGE,
};
use super::mapped_file::{MappedFile, PageReleaser};
use crate::digest_policy::EntryChecks;
use crate::entry::parse_header;
use crate::error::{Error, Result};
use crate::files::entry_log::{self, EntryLogCursor, EntryLogItem, LedgersMap, LogEntry};
use crate::files::{EntryLog, EntryLogHeader, Gap, GapKind, Location};
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
    log_ids: PrimitiveColumn<Int64Type>,
    offsets: PrimitiveColumn<Int64Type>,
    locations: PrimitiveColumn<Int64Type>,
    sizes: PrimitiveColumn<Int64Type>,
}

impl EntryLogRows {
    fn push_position(&mut self, offset: u64, location: Option<i64>, size: u64) {
        self.log_ids.push_option(self.log_id.map(i64::from));
        self.offsets.push(offset as i64);
        self.locations.push_option(location);
        self.sizes.push(size as i64);
    }

    /// Appends an entry's row; an error is what `OnError::Raise` raises.
    fn append_entry(&mut self, e: &LogEntry<'_>) -> Result<()> {
        let location = self.log_id.and_then(|id| e.location(id)).map(Location::to_raw);
        if e.reframed {
            let resolver = self.resolver.for_entry(e.bytes);
            // When the scan's digests and this reader's settings disagree, the
            // entry's own error (below) says why.
            if let Ok(resolved) = resolver.resolve(e.bytes, self.checks.digest) {
                if resolved.passes(self.checks) {
                    if self.on_error == OnError::Raise {
                        return Err(reframed_error(e.offset));
                    }
                    self.builder.append_entry_with_error(&resolved, REFRAMED_MESSAGE)?;
                    self.push_position(e.offset, location, e.size());
                    return Ok(());
                }
            }
        }
        self.builder
            .decode_append(self.resolver.for_entry(e.bytes), e.bytes, self.checks)
            .map_err(|err| err.at_base(e.entry_offset()))?;
        self.push_position(e.offset, location, e.size());
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
        self.push_position(g.offset, None, g.len);
        Ok(())
    }

    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        let leading: Vec<ArrayRef> = vec![
            Arc::new(self.log_ids.finish()),
            Arc::new(self.offsets.finish()),
            Arc::new(self.locations.finish()),
            Arc::new(self.sizes.finish()),
        ];
        assemble(schema, leading, &mut self.builder, Vec::new())
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
    pages: PageReleaser,
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
        let builder = batch_builder(&options, &file, MIN_RECORD_BYTES);
        let rows = row_capacity(&options, &file, MIN_RECORD_BYTES);
        Ok(EntryLogBatchReader {
            schema: entry_log_schema(&options),
            cursor,
            rows: EntryLogRows {
                log_id,
                on_error: options.entries.on_error,
                checks: if options.verify { EntryChecks::DIGEST } else { EntryChecks::default() },
                resolver: options.digests.resolver(),
                builder,
                log_ids: PrimitiveColumn::with_capacity(rows),
                offsets: PrimitiveColumn::with_capacity(rows),
                locations: PrimitiveColumn::with_capacity(rows),
                sizes: PrimitiveColumn::with_capacity(rows),
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

    pub fn log_id(&self) -> Option<u32> {
        self.rows.log_id
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
                EntryLogItem::Entry(e) => {
                    bytes += e.bytes.len();
                    self.rows.append_entry(&e)
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
        let batch = self.rows.finish(&self.schema);
        self.rows.builder = batch_builder(&self.options, &self.file, MIN_RECORD_BYTES);
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
