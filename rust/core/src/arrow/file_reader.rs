//! Entry logs and journals as lazy streams of record batches: one reader type over
//! the one scan (`files/scan.rs`), which it serves as a [`ScanSink`]: a row is each
//! column's value for it (`reader_columns.rs`), and the readers differ only in their lists
//! of columns.
//!
//! Entry logs: `log_id`, `offset` (of the record's size field), `location` (`log_id
//! << 32 | offset + 4`, what indexes store), `record_size` (the size field: the
//! entry's length), `record_type` (`entry` or `damage`, as in journals), the entry
//! columns, then `error` and `error_kind` under
//! `OnError::Flag`. The ledgers map at the end of a rolled log gives no rows;
//! padding and preallocated zeros give none either. Damage gives a row per damaged
//! span, its entry columns null (but the ids of a torn entry when its header
//! survives), `record_size` the span's length and `error` what is wrong.
//!
//! Journals: `journal_id`, `offset`, `record_size` (the bytes after the length
//! field; for a damaged span, its length), `record_type` (`entry`, `ledger_key`,
//! `fence`, `explicit_lac`, `padding` when asked for, `damage`), the entry columns,
//! `master_key`, `explicit_lac`, `explicit_lac_blob`, then the error columns.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, FieldRef, Schema, SchemaRef};

use super::reader_columns::{
    constant_column, entry_columns, error_columns, explicit_lac_column, location_column, offset_column,
    record_bytes_column, record_size_column, record_type_column, Column, Fields, SingleRowValues, CleanEntries,
};
use super::entries::{EntryBatchOptions, OnError};
use super::payload::PayloadMode;
use crate::plan::admits;
use crate::digest::DigestType;
use crate::digest_policy::DigestPolicy;
use crate::entry::HeaderLayout;
use crate::error::{Error, Result};
use crate::files::entry_log::{self, EntryLogFacts, EntryLogFraming};
use crate::files::journal::{self, JournalFacts, JournalFraming};
use crate::files::scan::{gap_message, Fill, OtherRecord, RecordFormat, RecordScan, SingleRow, ScanSink, RecordScanSettings, ScannedEntry};
use crate::files::source::{FileSource, ReadAt};
use crate::files::window::{View, Window};
use crate::files::GapKind;
use crate::ledger_digest_settings::LedgerDigestSettings;

/// Rows per batch unless asked otherwise.
pub const DEFAULT_BATCH_ROWS: usize = 65_536;
/// Entry bytes per batch at most: bounds memory, and keeps a copied payload column
/// far from its 2 GiB limit, whatever the entry sizes.
pub const DEFAULT_BATCH_BYTES: usize = 8 << 20;

/// How a bookie-file reader scans and what rows it builds.
#[derive(Debug, Clone)]
pub struct FileReaderOptions {
    pub entries: EntryBatchOptions,
    /// Check each entry's digest (digest types are still inferred when not given).
    pub verify: bool,
    pub digests: LedgerDigestSettings,
    /// A batch ends after this many rows...
    pub batch_rows: usize,
    /// ...or once its entries add up to this many bytes.
    pub batch_bytes: usize,
    /// The byte range `[start, end)`: a record belongs to the range its size field
    /// starts in, so ranges that tile a file read every record once.
    pub start: u64,
    pub end: u64,
    /// Only these columns are built (None: every column), in the reader's order: a
    /// caller that needs two columns does not pay for the rest. The scan, and so
    /// which rows there are and what they are flagged with, is the same.
    pub columns: Option<Vec<String>>,
    /// Only the rows this filter admits are built: a query for one ledger does not
    /// pay for the others' columns. The scan and its digest checks are the same, so
    /// the rows built are exactly those a filter after the read would keep.
    pub rows: RowFilter,
}

/// Inclusive ranges a row's values must fall in, column by column (None: no test on
/// that column). A row without the column's value (damage has no ledger id) passes
/// no test on it, as in SQL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowFilter {
    pub scope_id: Option<Vec<(i64, i64)>>,
    pub ledger_id: Option<Vec<(i64, i64)>>,
    pub entry_id: Option<Vec<(i64, i64)>>,
    pub offset: Option<Vec<(i64, i64)>>,
}

impl RowFilter {
    /// Whether every row passes (no test at all).
    pub fn is_empty(&self) -> bool {
        self.scope_id.is_none() && self.ledger_id.is_none() && self.entry_id.is_none() && self.offset.is_none()
    }

    /// Whether a row with these values (None: the row has none) passes.
    pub fn admits(&self, scope_id: Option<i64>, ledger_id: Option<i64>, entry_id: Option<i64>, offset: Option<i64>) -> bool {
        let test = |ranges: &Option<Vec<(i64, i64)>>, value: Option<i64>| match ranges {
            None => true,
            Some(r) => value.is_some_and(|v| admits(r, v)),
        };
        test(&self.scope_id, scope_id)
            && test(&self.ledger_id, ledger_id)
            && test(&self.entry_id, entry_id)
            && test(&self.offset, offset)
    }
}

impl FileReaderOptions {
    pub fn new(entries: EntryBatchOptions, digests: LedgerDigestSettings) -> Self {
        FileReaderOptions {
            entries,
            verify: true,
            digests,
            batch_rows: DEFAULT_BATCH_ROWS,
            batch_bytes: DEFAULT_BATCH_BYTES,
            start: 0,
            end: u64::MAX,
            columns: None,
            rows: RowFilter::default(),
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

    fn scan_settings(&self) -> RecordScanSettings {
        RecordScanSettings {
            digests: self.digests.clone(),
            verify: self.verify,
            start: self.start,
            end: self.end,
            raise: self.entries.on_error == OnError::Raise,
            retain: self.entries.payload == PayloadMode::BinaryView,
        }
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

/// Which record file a reader reads: its columns and what its records become.
pub(crate) trait FileKind: Send {
    type Format: RecordFormat + Send;
    /// The columns before and after the entry columns.
    fn leading(&self, rows: usize) -> Vec<Box<dyn Column>>;
    fn trailing(&self, rows: usize) -> Vec<Box<dyn Column>>;
    /// Whether a journal record gives a row.
    fn keeps(&self, record: &OtherRecord<'_>) -> bool;
}

/// Entry logs: one log id on every row.
pub(crate) struct EntryLogKind {
    log_id: Option<u32>,
}

impl FileKind for EntryLogKind {
    type Format = EntryLogFraming;

    fn leading(&self, rows: usize) -> Vec<Box<dyn Column>> {
        vec![
            constant_column("log_id", self.log_id.map(i64::from)),
            offset_column(rows),
            location_column(self.log_id, rows),
            record_size_column(rows),
            record_type_column(),
        ]
    }

    fn trailing(&self, _rows: usize) -> Vec<Box<dyn Column>> {
        Vec::new()
    }

    fn keeps(&self, _: &OtherRecord<'_>) -> bool {
        false
    }
}

/// Journals: meta records have rows; padding records when asked for.
pub(crate) struct JournalKind {
    journal_id: Option<i64>,
    include_padding: bool,
}

impl FileKind for JournalKind {
    type Format = JournalFraming;

    fn leading(&self, rows: usize) -> Vec<Box<dyn Column>> {
        vec![constant_column("journal_id", self.journal_id), offset_column(rows), record_size_column(rows), record_type_column()]
    }

    fn trailing(&self, rows: usize) -> Vec<Box<dyn Column>> {
        vec![
            record_bytes_column("master_key", |r| r.master_key),
            explicit_lac_column(rows),
            record_bytes_column("explicit_lac_blob", |r| r.lac_blob),
        ]
    }

    fn keeps(&self, record: &OtherRecord<'_>) -> bool {
        self.include_padding || !matches!(record, OtherRecord::Padding { .. })
    }
}

/// A file reader's batch as it is built: its columns, in schema order.
struct FileBatchBuilder<K> {
    kind: K,
    columns: Vec<Box<dyn Column>>,
    rows: usize,
    /// The digest type every V1 entry is read as, when the reader names one (for
    /// the rows of entries that do not frame).
    fixed: Option<DigestType>,
    filter: RowFilter,
    /// Rows of the batch the row filter left unbuilt.
    dropped: usize,
}

impl<K: FileKind> FileBatchBuilder<K> {
    fn new(kind: K, options: &FileReaderOptions, rows: usize) -> Self {
        let payload_bytes = options.batch_bytes.saturating_mul(2);
        let mut columns = kind.leading(rows);
        columns.extend(entry_columns(options.entries.payload, rows, payload_bytes, true));
        columns.extend(kind.trailing(rows));
        if options.entries.on_error == OnError::Flag {
            columns.extend(error_columns());
        }
        if let Some(wanted) = &options.columns {
            columns.retain(|c| wanted.iter().any(|w| w == c.field().name()));
        }
        let fixed = match options.digests.default_setting().0 {
            DigestPolicy::Fixed(dt) if options.digests.ledger_count() == 0 => Some(dt),
            _ => None,
        };
        FileBatchBuilder { kind, columns, rows: 0, fixed, filter: options.rows.clone(), dropped: 0 }
    }

    fn admits_entry(&self, e: &ScannedEntry) -> bool {
        let h = &e.checked.header;
        self.filter.admits(Some(h.scope_id), Some(h.ledger_id), Some(h.entry_id), i64::try_from(e.offset).ok())
    }

    fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.columns.iter().map(|c| c.field()).collect::<Vec<FieldRef>>()))
    }

    fn push(&mut self, row: &SingleRowValues<'_>) {
        let f = &row.fields;
        if !self.filter.admits(f.scope_id, f.ledger_id, f.entry_id, i64::try_from(row.offset).ok()) {
            self.dropped += 1;
            return;
        }
        for c in &mut self.columns {
            c.push_row(row);
        }
        self.rows += 1;
    }

    /// Builds the rows of a run of clean entries.
    fn build_entries(&mut self, view: &View<'_>, run: &[ScannedEntry]) {
        let mut raw: [&[u8]; crate::digest_check::GROUP_LEN] = [&[]; crate::digest_check::GROUP_LEN];
        for chunk in run.chunks(crate::digest_check::GROUP_LEN) {
            for (r, e) in raw.iter_mut().zip(chunk) {
                *r = view.get(e.at, e.len).expect("a run's entries are in the window");
            }
            let run = CleanEntries { entries: chunk, raw: &raw[..chunk.len()] };
            for c in &mut self.columns {
                c.push_clean_entries(&run);
            }
            self.rows += chunk.len();
        }
    }
}

impl<K: FileKind> ScanSink for FileBatchBuilder<K> {
    fn rows(&self) -> usize {
        self.rows
    }

    fn entries(&mut self, view: &View<'_>, run: &[ScannedEntry]) {
        if self.filter.is_empty() {
            return self.build_entries(view, run);
        }
        // The admitted entries, a stretch of consecutive ones at a time.
        let mut rest = run;
        while !rest.is_empty() {
            let skip = rest.iter().take_while(|e| !self.admits_entry(e)).count();
            self.dropped += skip;
            rest = &rest[skip..];
            let take = rest.iter().take_while(|e| self.admits_entry(e)).count();
            self.build_entries(view, &rest[..take]);
            rest = &rest[take..];
        }
    }

    fn row(&mut self, view: &View<'_>, row: SingleRow<'_>) {
        let data = match row {
            SingleRow::FlaggedEntry { entry, message, kind, .. } => {
                let bytes = view.get(entry.at, entry.len).expect("a flagged entry is in the window");
                SingleRowValues::entry(&entry, bytes, Some((message, kind)))
            }
            SingleRow::UnframedEntry { offset, bytes, message, kind, .. } => {
                let declared = bytes.first().and_then(|&b| match HeaderLayout::of(b) {
                    HeaderLayout::V2(dt) => Some(dt),
                    HeaderLayout::V1 => self.fixed,
                    HeaderLayout::Invalid => None,
                });
                SingleRowValues {
                    offset,
                    size: bytes.len() as u64,
                    record_type: "entry",
                    fields: Fields::partial(bytes),
                    digest_type: declared,
                    located: true,
                    error: Some(message),
                    error_kind: Some(kind),
                    ..SingleRowValues::default()
                }
            }
            SingleRow::Record { offset, span, record } => {
                if !self.kind.keeps(&record) {
                    return;
                }
                let (ledger_id, entry_id, master_key, lac_blob) = match record {
                    OtherRecord::LedgerKey { ledger_id, master_key } => {
                        (Some(ledger_id), Some(journal::METAENTRY_ID_LEDGER_KEY), Some(master_key), None)
                    }
                    OtherRecord::Fence { ledger_id } => (Some(ledger_id), Some(journal::METAENTRY_ID_FENCE_KEY), None, None),
                    OtherRecord::ExplicitLac { ledger_id, lac_blob } => {
                        (Some(ledger_id), Some(journal::METAENTRY_ID_LEDGER_EXPLICITLAC), None, Some(lac_blob))
                    }
                    OtherRecord::UnknownMeta { ledger_id, entry_id } => (Some(ledger_id), Some(entry_id), None, None),
                    OtherRecord::Padding { .. } | OtherRecord::LedgersMap => (None, None, None, None),
                };
                SingleRowValues {
                    offset,
                    size: span - 4,
                    record_type: record.name(),
                    fields: Fields::ids(ledger_id, entry_id),
                    master_key,
                    lac_blob,
                    ..SingleRowValues::default()
                }
            }
            SingleRow::Damage { gap, detail, torn_ids } => SingleRowValues {
                offset: gap.offset,
                size: gap.len,
                record_type: "damage",
                fields: Fields::ids(torn_ids.map(|t| t.0), torn_ids.map(|t| t.1)),
                error: Some(match detail {
                    Some(d) => format!("{}: {d}", gap.kind.as_str()),
                    None => gap_message(&gap),
                }),
                error_kind: Some(gap.kind.as_str()),
                ..SingleRowValues::default()
            },
            SingleRow::Unlisted(_) => return,
        };
        self.push(&data);
    }
}

/// Streams the rows of one record file (or one byte range of it), a batch at a time.
pub(crate) struct RecordFileReader<K: FileKind> {
    scan: RecordScan<'static, K::Format>,
    rows: FileBatchBuilder<K>,
    schema: SchemaRef,
    options: FileReaderOptions,
    /// Raised after the batch of rows that came before it.
    pending: Option<Error>,
    done: bool,
}

impl<K: FileKind> RecordFileReader<K> {
    fn new(scan: RecordScan<'static, K::Format>, kind: K, options: FileReaderOptions) -> Self {
        let rows = FileBatchBuilder::new(kind, &options, options.batch_rows.min(8192));
        RecordFileReader { schema: rows.schema(), scan, rows, options, pending: None, done: false }
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        if self.done {
            return None;
        }
        loop {
            match self.scan.fill(&mut self.rows, self.options.batch_rows, self.options.batch_bytes) {
                Ok(Fill::More) => {}
                Ok(Fill::Done) => self.done = true,
                Err(e) => self.pending = Some(e),
            }
            let frozen = self.scan.finish_batch();
            let dropped = std::mem::take(&mut self.rows.dropped);
            if self.rows.rows > 0 {
                return Some(self.finish(frozen.as_ref()));
            }
            // A batch whose rows the row filter all left unbuilt: the scan goes on.
            if self.done || self.pending.is_some() || dropped == 0 {
                self.done = true;
                return self.pending.take().map(Err);
            }
        }
    }

    fn finish(&mut self, frozen: Option<&crate::files::window::Frozen>) -> Result<RecordBatch> {
        self.rows.rows = 0;
        let arrays = self.rows.columns.iter_mut().map(|c| c.finish(frozen)).collect::<Result<Vec<ArrayRef>>>();
        let arrays = match arrays {
            Ok(a) => a,
            Err(e) => {
                // A column that cannot be built (a payload column past 2 GiB) ends the stream.
                self.done = true;
                return Err(e);
            }
        };
        RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| Error::invalid_argument(format!("assembling a file batch: {e}")))
    }
}

impl<K: FileKind> Iterator for RecordFileReader<K> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.next_batch()
    }
}

impl<K: FileKind> BatchStream for RecordFileReader<K>
where
    K::Format: Send,
{
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Streams the entries of one entry log (or one byte range of it).
pub struct EntryLogBatchReader {
    inner: RecordFileReader<EntryLogKind>,
    facts: EntryLogFacts,
}

impl EntryLogBatchReader {
    /// Opens `path`; the log id comes from the file name (`<hex>.log`) unless
    /// `log_id` is given, and without one `log_id` and `location` are null.
    pub fn open(path: impl AsRef<Path>, log_id: Option<i64>, options: FileReaderOptions) -> Result<Self> {
        let path = path.as_ref();
        let log_id = log_id.or_else(|| entry_log::log_id_from_path(path));
        Self::new(Arc::new(FileSource::open(path)?), log_id, options)
    }

    /// A reader over any source. A damaged header (or an empty file) is the first
    /// row, not a refusal: the records after it are read as the layout they support.
    pub fn new(source: Arc<dyn ReadAt>, log_id: Option<i64>, options: FileReaderOptions) -> Result<Self> {
        options.validate()?;
        let log_id = log_id
            .map(|id| {
                u32::try_from(id).map_err(|_| {
                    Error::invalid_argument(format!("entry log id {id} does not fit the 32 bits of a location"))
                })
            })
            .transpose()?;
        let (scan, facts) = entry_log::open_scan(Window::new(source)?, &options.scan_settings())?;
        let inner = RecordFileReader::new(scan, EntryLogKind { log_id }, options);
        Ok(EntryLogBatchReader { inner, facts })
    }

    pub fn path(&self) -> Option<&Path> {
        self.inner.scan.source().path()
    }

    pub fn log_id(&self) -> Option<u32> {
        self.inner.rows.kind.log_id
    }

    pub fn file_len(&self) -> u64 {
        self.facts.len
    }

    /// The header as read (or why it is damaged) and the layout.
    pub fn facts(&self) -> &EntryLogFacts {
        &self.facts
    }

    /// Bytes the reader holds in memory for its scan.
    pub fn held(&self) -> usize {
        self.inner.scan.held()
    }
}

impl Iterator for EntryLogBatchReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.inner.next_batch()
    }
}

impl BatchStream for EntryLogBatchReader {
    fn schema(&self) -> SchemaRef {
        self.inner.schema.clone()
    }
}

/// Streams the records of one journal (or one byte range of it).
pub struct JournalBatchReader {
    inner: RecordFileReader<JournalKind>,
    facts: JournalFacts,
}

impl JournalBatchReader {
    /// Opens `path`; the journal id comes from the file name (`<hex>.txn`) unless
    /// `journal_id` is given (without either, `journal_id` is null).
    pub fn open(path: impl AsRef<Path>, journal_id: Option<i64>, include_padding: bool, options: FileReaderOptions) -> Result<Self> {
        let path = path.as_ref();
        let journal_id = journal_id.or_else(|| journal::journal_id_from_path(path));
        Self::new(Arc::new(FileSource::open(path)?), journal_id, include_padding, None, options)
    }

    /// A reader over any source. `last_mark`: the offset `lastMark` says this
    /// journal was written up to (records ending before it give a row).
    pub fn new(
        source: Arc<dyn ReadAt>,
        journal_id: Option<i64>,
        include_padding: bool,
        last_mark: Option<u64>,
        options: FileReaderOptions,
    ) -> Result<Self> {
        options.validate()?;
        let (scan, facts) = journal::open_scan(Window::new(source)?, &options.scan_settings(), last_mark)?;
        let inner = RecordFileReader::new(scan, JournalKind { journal_id, include_padding }, options);
        Ok(JournalBatchReader { inner, facts })
    }

    pub fn path(&self) -> Option<&Path> {
        self.inner.scan.source().path()
    }

    pub fn journal_id(&self) -> Option<i64> {
        self.inner.rows.kind.journal_id
    }

    pub fn file_len(&self) -> u64 {
        self.facts.len
    }

    pub fn facts(&self) -> &JournalFacts {
        &self.facts
    }

    pub fn held(&self) -> usize {
        self.inner.scan.held()
    }
}

impl Iterator for JournalBatchReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.inner.next_batch()
    }
}

impl BatchStream for JournalBatchReader {
    fn schema(&self) -> SchemaRef {
        self.inner.schema.clone()
    }
}

/// The schema [`EntryLogBatchReader`] produces under `options`.
pub fn entry_log_schema(options: &FileReaderOptions) -> SchemaRef {
    FileBatchBuilder::new(EntryLogKind { log_id: None }, options, 0).schema()
}

/// The schema [`JournalBatchReader`] produces under `options`.
pub fn journal_schema(options: &FileReaderOptions) -> SchemaRef {
    FileBatchBuilder::new(JournalKind { journal_id: None, include_padding: false }, options, 0).schema()
}

/// Every `error_kind` a file reader's row may carry, for documentation and
/// validation: damaged spans (see [`GapKind`]) and entries.
pub fn error_kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = GapKind::ALL.iter().filter(|k| k.is_damage()).map(|k| k.as_str()).collect();
    kinds.extend([
        "digest_mismatch",
        "length_mismatch",
        "reframed",
        "truncated_entry",
        "bad_entry_version",
        "digest_type_mismatch",
        "bad_entry",
    ]);
    kinds
}
