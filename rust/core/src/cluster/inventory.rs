//! A bookie's inventory: one row per copy of an entry it holds, in its entry logs
//! (flushed) or its journals (not flushed yet), small enough to travel where the
//! bookie's files cannot (tens of bytes a copy: ids, verdict, a hash of the payload).
//!
//! The rows come from the file readers themselves, asked for `payload_size` and
//! `payload_hash` instead of payloads (XXH3-64 where the bytes lie, kept as a signed
//! bit pattern; the `twox-hash` build chooses AVX2 at run time, 3x the portable one). Each entry-log copy says whether the
//! bookie's index points at it; each copy carries its ledger's state as the
//! bookie's ledger index knows it (fenced, limbo). A file that cannot be read gives
//! one `unreadable` row naming it, so an audit knows that bookie was not seen whole.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::arrow::{BatchStream, EntryLogBatchReader, FileReaderOptions, JournalBatchReader};
use crate::digest::DigestType;
use crate::error::{Error, Result};
use crate::files::entry_log::log_id_from_path;
use crate::files::journal::journal_id_from_path;
use crate::files::ReadAt;
use crate::path_text::escape_path;

/// What a copy's digest says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CopyVerdict {
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

impl CopyVerdict {
    pub const ALL: [CopyVerdict; 5] = [CopyVerdict::Verified, CopyVerdict::Unchecked, CopyVerdict::Failed, CopyVerdict::Damaged, CopyVerdict::Unreadable];

    pub const fn as_str(self) -> &'static str {
        match self {
            CopyVerdict::Verified => "verified",
            CopyVerdict::Unchecked => "unchecked",
            CopyVerdict::Failed => "failed",
            CopyVerdict::Damaged => "damaged",
            CopyVerdict::Unreadable => "unreadable",
        }
    }

    pub fn from_name(name: &str) -> Option<CopyVerdict> {
        CopyVerdict::ALL.into_iter().find(|v| v.as_str() == name)
    }

    /// Whether the copy holds the entry as written, as far as anything can tell.
    pub const fn is_good(self) -> bool {
        matches!(self, CopyVerdict::Verified | CopyVerdict::Unchecked)
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

/// Text columns whose values repeat (a bookie id, a file name, a verdict): a
/// dictionary each, so a row costs a key, not a copy of the text.
fn labels() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The inventory's columns.
pub fn inventory_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("bookie_id", labels(), false),
        Field::new("scope_id", DataType::Int64, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("last_add_confirmed", DataType::Int64, true),
        Field::new("length", DataType::Int64, true),
        Field::new("digest_type", labels(), true),
        Field::new("verdict", labels(), false),
        Field::new("error_kind", DataType::Utf8, true),
        Field::new("error", DataType::Utf8, true),
        Field::new("payload_size", DataType::Int64, true),
        // XXH3-64 as a signed bit pattern, as ids are: Spark and Parquet readers
        // without unsigned types keep it whole.
        Field::new("payload_hash", DataType::Int64, true),
        Field::new("source", labels(), false),
        Field::new("file", labels(), false),
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

/// The columns of a batch of inventory rows, in schema order, from the per-row
/// values that are not the reader's own columns.
struct Columns {
    bookie_id: String,
    source: CopySource,
    file: String,
}

impl Columns {
    fn constant(&self, value: &str, rows: usize) -> ArrayRef {
        let keys = Int32Array::from(vec![0; rows]);
        Arc::new(DictionaryArray::new(keys, Arc::new(StringArray::from(vec![value]))))
    }

    fn coded(keys: Int32Array, values: Vec<&str>) -> ArrayRef {
        Arc::new(DictionaryArray::new(keys, Arc::new(StringArray::from(values))))
    }

    /// `ids`: scope, ledger, entry, LAC, length; `text`: error kind and error.
    #[allow(clippy::too_many_arguments)]
    fn batch(
        &self,
        rows: usize,
        ids: [ArrayRef; 5],
        digest_type: Int32Array,
        verdict: Int32Array,
        text: [ArrayRef; 2],
        payload: [ArrayRef; 2],
        offset: ArrayRef,
        flags: [ArrayRef; 4],
    ) -> Result<RecordBatch> {
        let [scope, ledger, entry, lac, length] = ids;
        let [error_kind, error] = text;
        let [size, hash] = payload;
        let [indexed, ledger_indexed, fenced, limbo] = flags;
        let columns: Vec<ArrayRef> = vec![
            self.constant(&self.bookie_id, rows),
            scope,
            ledger,
            entry,
            lac,
            length,
            Self::coded(digest_type, DigestType::ALL.iter().map(|d| d.name()).collect()),
            Self::coded(verdict, CopyVerdict::ALL.iter().map(|v| v.as_str()).collect()),
            error_kind,
            error,
            size,
            hash,
            self.constant(self.source.as_str(), rows),
            self.constant(&self.file, rows),
            offset,
            indexed,
            ledger_indexed,
            fenced,
            limbo,
        ];
        RecordBatch::try_new(inventory_schema(), columns)
            .map_err(|e| Error::invalid_argument(format!("assembling an inventory batch: {e}")))
    }

    /// The one row of a file that could not be read.
    fn unreadable(&self, error: &Error) -> Result<RecordBatch> {
        let nulls = || Arc::new(Int64Array::new_null(1)) as ArrayRef;
        let no_flag = || Arc::new(BooleanArray::new_null(1)) as ArrayRef;
        self.batch(
            1,
            [nulls(), nulls(), nulls(), nulls(), nulls()],
            Int32Array::new_null(1),
            Int32Array::from(vec![CopyVerdict::Unreadable as i32]),
            [Arc::new(StringArray::from(vec![error.kind.as_str()])), Arc::new(StringArray::from(vec![error.to_string()]))],
            [nulls(), nulls()],
            Arc::new(Int64Array::from(vec![(error.offset > 0).then_some(error.offset as i64)])),
            [no_flag(), no_flag(), no_flag(), no_flag()],
        )
    }
}

/// The rows `rows` of `a` (all of it, shared, when `rows` is `None`).
fn select<A: Array + Clone + 'static>(a: &A, rows: Option<&[usize]>, pick: impl Fn(&A, &[usize]) -> A) -> ArrayRef {
    match rows {
        None => Arc::new(a.clone()),
        Some(r) => Arc::new(pick(a, r)),
    }
}

fn pick_i64(a: &Int64Array, rows: &[usize]) -> Int64Array {
    rows.iter().map(|&i| a.is_valid(i).then(|| a.value(i))).collect()
}

fn pick_str(a: &StringArray, rows: &[usize]) -> StringArray {
    rows.iter().map(|&i| a.is_valid(i).then(|| a.value(i))).collect()
}

/// The position in `DigestType::ALL` of a digest type's name.
fn digest_code(name: &str) -> Option<i32> {
    DigestType::ALL.iter().position(|d| d.name() == name).map(|p| p as i32)
}

/// The inventory rows of one batch of an entry-log or journal reader (read with
/// `payload="hash"` and `on_error="flag"`): its entries, and its damaged
/// records whose ids survive. Journal meta records and damage without ids give
/// none. Columns the reader has are shared, not copied, when every row is kept.
pub fn copies_of_batch(batch: &RecordBatch, source: CopySource, file: &str, context: &InventoryContext) -> Result<RecordBatch> {
    let scope = int64_column(batch, "scope_id")?;
    let ledger = int64_column(batch, "ledger_id")?;
    let entry = int64_column(batch, "entry_id")?;
    let lac = int64_column(batch, "last_add_confirmed")?;
    let length = int64_column(batch, "length")?;
    let offset = int64_column(batch, "offset")?;
    let location = batch.column_by_name("location").and_then(|c| c.as_primitive_opt::<Int64Type>());
    let string = |name: &str| -> Option<&StringArray> { batch.column_by_name(name).and_then(|c| c.as_string_opt::<i32>()) };
    let (digest_type, error_kind, error_text, record_type) =
        (string("digest_type"), string("error_kind"), string("error"), string("record_type"));
    let digest_ok: Option<&BooleanArray> = batch.column_by_name("digest_ok").and_then(|c| c.as_boolean_opt());
    let (size, hash) = (int64_column(batch, "payload_size")?, int64_column(batch, "payload_hash")?);

    // Rows with ids, and for journals only entries (and damage that kept its ids).
    let kept = |i: usize| {
        ledger.is_valid(i)
            && entry.is_valid(i)
            && entry.value(i) >= 0
            && record_type.is_none_or(|t| t.is_null(i) || matches!(t.value(i), "entry" | "damage"))
    };
    let n = batch.num_rows();
    let selection: Option<Vec<usize>> = if (0..n).all(kept) { None } else { Some((0..n).filter(|&i| kept(i)).collect()) };
    let rows: Vec<usize>;
    let each: &[usize] = match &selection {
        Some(r) => r,
        None => {
            rows = (0..n).collect();
            &rows
        }
    };
    let sel = selection.as_deref();
    let count = each.len();

    let mut verdicts = Vec::with_capacity(count);
    let mut digest_codes = Vec::with_capacity(count);
    let mut damaged = false;
    for &i in each {
        let ok = digest_ok.and_then(|d| d.is_valid(i).then(|| d.value(i)));
        let error = error_kind.and_then(|e| e.is_valid(i).then(|| e.value(i)));
        let verdict = match (ok, error) {
            (Some(true), _) => CopyVerdict::Verified,
            (Some(false), _) | (None, Some("digest_mismatch")) => CopyVerdict::Failed,
            (None, Some(_)) => CopyVerdict::Damaged,
            (None, None) => CopyVerdict::Unchecked,
        };
        damaged |= verdict == CopyVerdict::Damaged;
        verdicts.push(verdict as i32);
        digest_codes.push(digest_type.and_then(|d| d.is_valid(i).then(|| d.value(i))).and_then(digest_code));
    }
    // What a damaged record holds is not its payload.
    let payload: [ArrayRef; 2] = if damaged {
        let kept = |a: &Int64Array| -> ArrayRef {
            Arc::new(
                each.iter()
                    .zip(&verdicts)
                    .map(|(&i, &v)| (v != CopyVerdict::Damaged as i32 && a.is_valid(i)).then(|| a.value(i)))
                    .collect::<Int64Array>(),
            )
        };
        [kept(size), kept(hash)]
    } else {
        [select(size, sel, pick_i64), select(hash, sel, pick_i64)]
    };
    let scope_ids = match scope.null_count() {
        0 => select(scope, sel, pick_i64),
        // V1 entries have no scope: scope 0.
        _ => Arc::new(each.iter().map(|&i| if scope.is_null(i) { 0 } else { scope.value(i) }).collect::<Int64Array>()),
    };
    let text = |a: Option<&StringArray>| match a {
        Some(a) => select(a, sel, pick_str),
        None => Arc::new(StringArray::new_null(count)) as ArrayRef,
    };
    let indexed: ArrayRef = match (source, &context.index, location) {
        (CopySource::EntryLog, Some(index), Some(loc)) => Arc::new(
            each.iter()
                .map(|&i| {
                    let s = if scope.is_null(i) { 0 } else { scope.value(i) };
                    loc.is_valid(i).then(|| index.get(s, ledger.value(i), entry.value(i)) == Some(loc.value(i) as u64))
                })
                .collect::<BooleanArray>(),
        ),
        _ => Arc::new(BooleanArray::new_null(count)),
    };
    let [ledger_indexed, fenced, limbo]: [ArrayRef; 3] = match &context.ledgers {
        Some(states) => {
            let flags: Vec<Option<&LedgerFlags>> = each
                .iter()
                .map(|&i| states.get(&(if scope.is_null(i) { 0 } else { scope.value(i) }, ledger.value(i))))
                .collect();
            [
                Arc::new(flags.iter().map(|f| Some(f.is_some())).collect::<BooleanArray>()),
                Arc::new(flags.iter().map(|f| f.map(|f| f.fenced)).collect::<BooleanArray>()),
                Arc::new(flags.iter().map(|f| f.map(|f| f.limbo)).collect::<BooleanArray>()),
            ]
        }
        None => [0, 0, 0].map(|_| Arc::new(BooleanArray::new_null(count)) as ArrayRef),
    };
    let columns = Columns { bookie_id: context.bookie_id.clone(), source, file: file.to_string() };
    columns.batch(
        count,
        [
            scope_ids,
            select(ledger, sel, pick_i64),
            select(entry, sel, pick_i64),
            select(lac, sel, pick_i64),
            select(length, sel, pick_i64),
        ],
        Int32Array::from(digest_codes),
        Int32Array::from(verdicts),
        [text(error_kind), text(error_text)],
        payload,
        select(offset, sel, pick_i64),
        [indexed, ledger_indexed, fenced, limbo],
    )
}

/// A file an inventory reads: a path (opened when its turn comes), or a source
/// already open (an object in a remote store, read in ranges) with its name.
pub enum InventoryFile {
    Path(PathBuf),
    Opened { source: Arc<dyn ReadAt>, name: PathBuf },
}

impl InventoryFile {
    fn name(&self) -> &Path {
        match self {
            InventoryFile::Path(p) => p,
            InventoryFile::Opened { name, .. } => name,
        }
    }
}

impl From<PathBuf> for InventoryFile {
    fn from(path: PathBuf) -> Self {
        InventoryFile::Path(path)
    }
}

/// Streams the inventory of a list of files (a bookie's entry logs and journals, or
/// one entry logger's), opening each file only when the one before is done.
pub struct InventoryReader {
    files: VecDeque<(InventoryFile, CopySource)>,
    current: Option<(Box<dyn BatchStream>, String, CopySource)>,
    options: FileReaderOptions,
    context: InventoryContext,
    schema: SchemaRef,
}

impl InventoryReader {
    /// `options` are the file readers' (digest settings, batch sizes); payloads are
    /// only hashed, where they lie, and errors are always flagged.
    pub fn new(files: Vec<(InventoryFile, CopySource)>, mut options: FileReaderOptions, context: InventoryContext) -> Self {
        options.entries.payload = crate::arrow::PayloadMode::Hash;
        options.entries.on_error = crate::arrow::OnError::Flag;
        options.verify = true;
        let metadata = HashMap::from([(BOOKIE_ID_METADATA_KEY.to_string(), context.bookie_id.clone())]);
        let schema = Arc::new(inventory_schema().as_ref().clone().with_metadata(metadata));
        InventoryReader { files: files.into(), current: None, options, context, schema }
    }

    fn open(&self, file: &InventoryFile, kind: CopySource) -> Result<Box<dyn BatchStream>> {
        let options = self.options.clone();
        Ok(match (file, kind) {
            (InventoryFile::Path(p), CopySource::EntryLog) => Box::new(EntryLogBatchReader::open(p, None, options)?),
            (InventoryFile::Path(p), CopySource::Journal) => Box::new(JournalBatchReader::open(p, None, false, options)?),
            (InventoryFile::Opened { source, name }, CopySource::EntryLog) => {
                Box::new(EntryLogBatchReader::new(source.clone(), log_id_from_path(name), options)?)
            }
            (InventoryFile::Opened { source, name }, CopySource::Journal) => {
                Box::new(JournalBatchReader::new(source.clone(), journal_id_from_path(name), false, None, options)?)
            }
        })
    }

    fn unreadable_row(&self, path: &str, source: CopySource, error: &Error) -> Result<RecordBatch> {
        Columns { bookie_id: self.context.bookie_id.clone(), source, file: path.to_string() }.unreadable(error)
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
            // Names need not be UTF-8: escaped losslessly, as every `file` column is.
            let file = escape_path(path.name()).into_owned();
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
