//! A bookie's inventory: one row per copy of an entry it holds, in its entry logs
//! (flushed) or its journals (not flushed yet), small enough to travel where the
//! bookie's files cannot (tens of bytes a copy: ids, verdict, a hash of the payload).
//!
//! The rows come from the file readers themselves, payloads as views into the read
//! window (no copy), hashed with XXH3-64 (kept as a signed bit pattern). Each entry-log copy says whether the
//! bookie's index points at it; each copy carries its ledger's state as the
//! bookie's ledger index knows it (fenced, limbo). A file that cannot be read gives
//! one `unreadable` row naming it, so an audit knows that bookie was not seen whole.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryViewArray, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use xxhash_rust::xxh3::xxh3_64;

use crate::arrow::{BatchStream, EntryLogBatchReader, FileScanOptions, JournalBatchReader};
use crate::error::{Error, Result};

/// What a copy's digest says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// The digest verifies: these are the bytes the writer sent.
    Verified,
    /// It was not checked (HMAC without its password): present, not vouched for.
    Unchecked,
    /// The digest does not match: the bytes were damaged (or written wrong).
    Failed,
    /// The record is damaged beyond a digest check (torn, cut short), its ids readable.
    Damaged,
    /// A file that could not be read at all (no ids): the bookie was not seen whole.
    Unreadable,
}

impl Verdict {
    pub const ALL: [Verdict; 5] = [Verdict::Verified, Verdict::Unchecked, Verdict::Failed, Verdict::Damaged, Verdict::Unreadable];

    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Unchecked => "unchecked",
            Verdict::Failed => "failed",
            Verdict::Damaged => "damaged",
            Verdict::Unreadable => "unreadable",
        }
    }

    pub fn from_name(name: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == name)
    }

    /// Whether the copy holds the entry as written, as far as anything can tell.
    pub const fn is_good(self) -> bool {
        matches!(self, Verdict::Verified | Verdict::Unchecked)
    }
}

/// Where on the bookie a copy was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopySource {
    EntryLog,
    Journal,
}

impl CopySource {
    pub const fn as_str(self) -> &'static str {
        match self {
            CopySource::EntryLog => "entry_log",
            CopySource::Journal => "journal",
        }
    }

    pub fn from_name(name: &str) -> Result<CopySource> {
        match name {
            "entry_log" => Ok(CopySource::EntryLog),
            "journal" => Ok(CopySource::Journal),
            _ => Err(Error::invalid_argument(format!("unknown copy source {name:?} (expected \"entry_log\" or \"journal\")"))),
        }
    }
}

/// The schema metadata key naming the bookie an inventory covers (so an empty
/// inventory still says which bookie was looked at).
pub const BOOKIE_ID_METADATA_KEY: &str = "bkcodec.bookie_id";

/// The inventory's columns.
pub fn inventory_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("bookie_id", DataType::Utf8, false),
        Field::new("scope_id", DataType::Int64, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("last_add_confirmed", DataType::Int64, true),
        Field::new("length", DataType::Int64, true),
        Field::new("digest_type", DataType::Utf8, true),
        Field::new("verdict", DataType::Utf8, false),
        Field::new("error_kind", DataType::Utf8, true),
        Field::new("error", DataType::Utf8, true),
        Field::new("payload_size", DataType::Int64, true),
        // XXH3-64 as a signed bit pattern, as ids are: Spark and Parquet readers
        // without unsigned types keep it whole.
        Field::new("payload_hash", DataType::Int64, true),
        Field::new("source", DataType::Utf8, false),
        Field::new("file", DataType::Utf8, false),
        Field::new("offset", DataType::Int64, true),
        Field::new("indexed", DataType::Boolean, true),
        Field::new("ledger_indexed", DataType::Boolean, true),
        Field::new("fenced", DataType::Boolean, true),
        Field::new("limbo", DataType::Boolean, true),
    ]))
}

/// A ledger's state in a bookie's ledger index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LedgerFlags {
    pub fenced: bool,
    pub limbo: bool,
}

/// Where a bookie's index says each entry is: `(scope, ledger, entry) -> location`
/// (`log_id << 32 | offset of the entry`), for one entry logger's logs.
#[derive(Debug, Default, Clone)]
pub struct LocationIndex {
    locations: HashMap<(i64, i64, i64), u64>,
}

impl LocationIndex {
    /// From batches with `scope_id`, `ledger_id`, `entry_id` and `location` (rows
    /// with a null among them, flagged damage, are left out).
    pub fn from_batches<'a>(batches: impl IntoIterator<Item = &'a RecordBatch>) -> Result<Self> {
        let mut locations = HashMap::new();
        for batch in batches {
            let scope = int64_column(batch, "scope_id")?;
            let ledger = int64_column(batch, "ledger_id")?;
            let entry = int64_column(batch, "entry_id")?;
            let location = int64_column(batch, "location")?;
            for i in 0..batch.num_rows() {
                if ledger.is_null(i) || entry.is_null(i) || location.is_null(i) {
                    continue;
                }
                let scope = if scope.is_null(i) { 0 } else { scope.value(i) };
                locations.insert((scope, ledger.value(i), entry.value(i)), location.value(i) as u64);
            }
        }
        Ok(LocationIndex { locations })
    }

    pub fn get(&self, scope: i64, ledger: i64, entry: i64) -> Option<u64> {
        self.locations.get(&(scope, ledger, entry)).copied()
    }

    pub fn len(&self) -> usize {
        self.locations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locations.is_empty()
    }
}

/// The ledger states a bookie's ledger index holds, from batches with `scope_id`,
/// `ledger_id` and `state` (`fenced`, `limbo` or anything else for neither).
pub fn ledger_flags_from_batches<'a>(batches: impl IntoIterator<Item = &'a RecordBatch>) -> Result<HashMap<(i64, i64), LedgerFlags>> {
    let mut out = HashMap::new();
    for batch in batches {
        let scope = int64_column(batch, "scope_id")?;
        let ledger = int64_column(batch, "ledger_id")?;
        let state = batch
            .column_by_name("state")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| Error::invalid_argument("ledger states need a string column `state`"))?;
        for i in 0..batch.num_rows() {
            if ledger.is_null(i) {
                continue;
            }
            let scope = if scope.is_null(i) { 0 } else { scope.value(i) };
            let flags: &mut LedgerFlags = out.entry((scope, ledger.value(i))).or_default();
            match state.is_valid(i).then(|| state.value(i)) {
                Some("fenced") => flags.fenced = true,
                Some("limbo") => flags.limbo = true,
                _ => {}
            }
        }
    }
    Ok(out)
}

fn int64_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a Int64Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or_else(|| Error::invalid_argument(format!("expected an int64 column `{name}`")))
}

/// What an inventory of one bookie (or one of its entry loggers) knows beside the
/// files: whose they are, and what its indexes say.
#[derive(Debug, Clone, Default)]
pub struct InventoryContext {
    pub bookie_id: String,
    /// `None`: the bookie has no readable location index for these logs.
    pub index: Option<Arc<LocationIndex>>,
    /// `None`: no ledger index (states unknown).
    pub ledgers: Option<Arc<HashMap<(i64, i64), LedgerFlags>>>,
}

/// Builds the inventory rows of one reader batch.
struct RowsBuilder {
    bookie_id: StringBuilder,
    scope_id: Int64Builder,
    ledger_id: Int64Builder,
    entry_id: Int64Builder,
    lac: Int64Builder,
    length: Int64Builder,
    digest_type: StringBuilder,
    verdict: StringBuilder,
    error_kind: StringBuilder,
    error: StringBuilder,
    payload_size: Int64Builder,
    payload_hash: Int64Builder,
    source: StringBuilder,
    file: StringBuilder,
    offset: Int64Builder,
    indexed: BooleanBuilder,
    ledger_indexed: BooleanBuilder,
    fenced: BooleanBuilder,
    limbo: BooleanBuilder,
}

impl RowsBuilder {
    fn new(rows: usize) -> Self {
        RowsBuilder {
            bookie_id: StringBuilder::with_capacity(rows, rows * 16),
            scope_id: Int64Builder::with_capacity(rows),
            ledger_id: Int64Builder::with_capacity(rows),
            entry_id: Int64Builder::with_capacity(rows),
            lac: Int64Builder::with_capacity(rows),
            length: Int64Builder::with_capacity(rows),
            digest_type: StringBuilder::with_capacity(rows, rows * 6),
            verdict: StringBuilder::with_capacity(rows, rows * 8),
            error_kind: StringBuilder::new(),
            error: StringBuilder::new(),
            payload_size: Int64Builder::with_capacity(rows),
            payload_hash: Int64Builder::with_capacity(rows),
            source: StringBuilder::with_capacity(rows, rows * 9),
            file: StringBuilder::with_capacity(rows, rows * 32),
            offset: Int64Builder::with_capacity(rows),
            indexed: BooleanBuilder::with_capacity(rows),
            ledger_indexed: BooleanBuilder::with_capacity(rows),
            fenced: BooleanBuilder::with_capacity(rows),
            limbo: BooleanBuilder::with_capacity(rows),
        }
    }

    fn finish(mut self) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.bookie_id.finish()),
            Arc::new(self.scope_id.finish()),
            Arc::new(self.ledger_id.finish()),
            Arc::new(self.entry_id.finish()),
            Arc::new(self.lac.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.digest_type.finish()),
            Arc::new(self.verdict.finish()),
            Arc::new(self.error_kind.finish()),
            Arc::new(self.error.finish()),
            Arc::new(self.payload_size.finish()),
            Arc::new(self.payload_hash.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.file.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.indexed.finish()),
            Arc::new(self.ledger_indexed.finish()),
            Arc::new(self.fenced.finish()),
            Arc::new(self.limbo.finish()),
        ];
        RecordBatch::try_new(inventory_schema(), columns).map_err(|e| Error::invalid_argument(format!("assembling an inventory batch: {e}")))
    }

    fn unreadable(&mut self, context: &InventoryContext, source: CopySource, file: &str, error: &Error) {
        self.bookie_id.append_value(&context.bookie_id);
        for b in [&mut self.scope_id, &mut self.ledger_id, &mut self.entry_id, &mut self.lac, &mut self.length] {
            b.append_null();
        }
        self.digest_type.append_null();
        self.verdict.append_value(Verdict::Unreadable.as_str());
        self.error_kind.append_value(error.kind.as_str());
        self.error.append_value(error.to_string());
        self.payload_size.append_null();
        self.payload_hash.append_null();
        self.source.append_value(source.as_str());
        self.file.append_value(file);
        self.offset.append_option((error.offset > 0).then_some(error.offset as i64));
        for b in [&mut self.indexed, &mut self.ledger_indexed, &mut self.fenced, &mut self.limbo] {
            b.append_null();
        }
    }
}

/// The inventory rows of one batch of an entry-log or journal reader (read with
/// `payload="binary_view"` and `on_error="flag"`): its entries, and its damaged
/// records whose ids survive. Journal meta records and damage without ids give none.
pub fn copies_of_batch(batch: &RecordBatch, source: CopySource, file: &str, context: &InventoryContext) -> Result<RecordBatch> {
    let scope = int64_column(batch, "scope_id")?;
    let ledger = int64_column(batch, "ledger_id")?;
    let entry = int64_column(batch, "entry_id")?;
    let lac = int64_column(batch, "last_add_confirmed")?;
    let length = int64_column(batch, "length")?;
    let offset = int64_column(batch, "offset")?;
    let location = batch.column_by_name("location").and_then(|c| c.as_primitive_opt::<Int64Type>());
    let string = |name: &str| -> Option<&StringArray> { batch.column_by_name(name).and_then(|c| c.as_string_opt::<i32>()) };
    let digest_type = string("digest_type");
    let error_kind = string("error_kind");
    let error_text = string("error");
    let record_type = string("record_type");
    let digest_ok = batch.column_by_name("digest_ok").and_then(|c| c.as_boolean_opt()).cloned();
    let digest_ok: Option<BooleanArray> = digest_ok;
    let payload: Option<&BinaryViewArray> = batch.column_by_name("payload").and_then(|c| c.as_binary_view_opt());
    let payload = payload.ok_or_else(|| Error::invalid_argument("an inventory reads batches with a binary_view payload column"))?;

    let mut out = RowsBuilder::new(batch.num_rows());
    for i in 0..batch.num_rows() {
        if ledger.is_null(i) || entry.is_null(i) {
            continue;
        }
        if let Some(types) = record_type {
            if types.is_valid(i) && !matches!(types.value(i), "entry" | "damage") {
                continue; // a journal's ledger key, fence or explicit LAC
            }
        }
        let entry_id = entry.value(i);
        if entry_id < 0 {
            continue;
        }
        let scope_id = if scope.is_null(i) { 0 } else { scope.value(i) };
        let ledger_id = ledger.value(i);
        let ok = digest_ok.as_ref().and_then(|d| d.is_valid(i).then(|| d.value(i)));
        let error = error_kind.and_then(|e| e.is_valid(i).then(|| e.value(i)));
        let verdict = match (ok, error) {
            (Some(true), _) => Verdict::Verified,
            (Some(false), _) | (None, Some("digest_mismatch")) => Verdict::Failed,
            (None, Some(_)) => Verdict::Damaged,
            (None, None) => Verdict::Unchecked,
        };
        out.bookie_id.append_value(&context.bookie_id);
        out.scope_id.append_value(scope_id);
        out.ledger_id.append_value(ledger_id);
        out.entry_id.append_value(entry_id);
        out.lac.append_option(lac.is_valid(i).then(|| lac.value(i)));
        out.length.append_option(length.is_valid(i).then(|| length.value(i)));
        out.digest_type.append_option(digest_type.and_then(|d| d.is_valid(i).then(|| d.value(i))));
        out.verdict.append_value(verdict.as_str());
        out.error_kind.append_option(error);
        out.error.append_option(error_text.and_then(|e| e.is_valid(i).then(|| e.value(i))));
        if payload.is_valid(i) && matches!(verdict, Verdict::Verified | Verdict::Unchecked | Verdict::Failed) {
            let bytes = payload.value(i);
            out.payload_size.append_value(bytes.len() as i64);
            out.payload_hash.append_value(xxh3_64(bytes) as i64);
        } else {
            out.payload_size.append_null();
            out.payload_hash.append_null();
        }
        out.source.append_value(source.as_str());
        out.file.append_value(file);
        out.offset.append_option(offset.is_valid(i).then(|| offset.value(i)));
        let indexed = match (source, &context.index, location) {
            (CopySource::EntryLog, Some(index), Some(loc)) if loc.is_valid(i) => {
                Some(index.get(scope_id, ledger_id, entry_id) == Some(loc.value(i) as u64))
            }
            _ => None,
        };
        out.indexed.append_option(indexed);
        match &context.ledgers {
            Some(states) => {
                let flags = states.get(&(scope_id, ledger_id));
                out.ledger_indexed.append_value(flags.is_some());
                out.fenced.append_option(flags.map(|f| f.fenced));
                out.limbo.append_option(flags.map(|f| f.limbo));
            }
            None => {
                out.ledger_indexed.append_null();
                out.fenced.append_null();
                out.limbo.append_null();
            }
        }
    }
    out.finish()
}

/// Streams the inventory of a list of files (a bookie's entry logs and journals, or
/// one entry logger's), opening each file only when the one before is done.
pub struct InventoryReader {
    files: VecDeque<(PathBuf, CopySource)>,
    current: Option<(Box<dyn BatchStream>, String, CopySource)>,
    options: FileScanOptions,
    context: InventoryContext,
    schema: SchemaRef,
}

impl InventoryReader {
    /// `options` are the file readers' (digest settings, batch sizes); the payload
    /// is always read as views and errors are always flagged.
    pub fn new(files: Vec<(PathBuf, CopySource)>, mut options: FileScanOptions, context: InventoryContext) -> Self {
        options.entries.payload = crate::arrow::PayloadMode::BinaryView;
        options.entries.on_error = crate::arrow::OnError::Flag;
        options.verify = true;
        let metadata = HashMap::from([(BOOKIE_ID_METADATA_KEY.to_string(), context.bookie_id.clone())]);
        let schema = Arc::new(inventory_schema().as_ref().clone().with_metadata(metadata));
        InventoryReader { files: files.into(), current: None, options, context, schema }
    }

    fn open(&self, path: &PathBuf, source: CopySource) -> Result<Box<dyn BatchStream>> {
        Ok(match source {
            CopySource::EntryLog => Box::new(EntryLogBatchReader::open(path, None, self.options.clone())?),
            CopySource::Journal => Box::new(JournalBatchReader::open(path, None, false, self.options.clone())?),
        })
    }

    fn unreadable_row(&self, path: &str, source: CopySource, error: &Error) -> Result<RecordBatch> {
        let mut rows = RowsBuilder::new(1);
        rows.unreadable(&self.context, source, path, error);
        rows.finish()
    }

    fn with_schema(&self, batch: RecordBatch) -> RecordBatch {
        batch.with_schema(self.schema.clone()).expect("the inventory schema with metadata")
    }
}

impl Iterator for InventoryReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if let Some((reader, file, source)) = &mut self.current {
                let (file, source) = (file.clone(), *source);
                match reader.next() {
                    Some(Ok(batch)) => {
                        let rows = copies_of_batch(&batch, source, &file, &self.context);
                        match rows {
                            Ok(rows) if rows.num_rows() == 0 => continue,
                            Ok(rows) => return Some(Ok(self.with_schema(rows))),
                            Err(e) => return Some(Err(e)),
                        }
                    }
                    Some(Err(e)) => {
                        // The file changed or vanished under the reader: what was read stands.
                        self.current = None;
                        return Some(self.unreadable_row(&file, source, &e).map(|b| self.with_schema(b)));
                    }
                    None => self.current = None,
                }
            }
            let (path, source) = self.files.pop_front()?;
            let file = path.display().to_string();
            match self.open(&path, source) {
                Ok(reader) => self.current = Some((reader, file, source)),
                Err(e) => return Some(self.unreadable_row(&file, source, &e).map(|b| self.with_schema(b))),
            }
        }
    }
}

impl BatchStream for InventoryReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
