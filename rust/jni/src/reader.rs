//! One split (a file, or a byte range of one) read into batches of the columns a
//! query asked for, as the Python source reads it (`BookKeeperReader.read`): the
//! core reader's rows, `file` (and `file_kind`) added, absent columns null; a file
//! that cannot be read, or stops reading, is one flagged row (reported only by the
//! range that holds the offset), so the other files and the rows before still arrive.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, RecordBatchOptions, StringArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, SchemaRef};
use bkcodec_core::arrow::{BatchStream, EntryLogBatchReader, IndexBatchReader, JournalBatchReader};
use bkcodec_core::files::source::FileSource;
use bkcodec_core::plan::{admits, ReadKind};
use bkcodec_core::{Error, Result};

use crate::columns::{core_kind_name, name_id, name_id_column, SourceOptions};
use crate::python_text::error_text;

/// What a task reads: one split of a partition.
#[derive(Debug, Clone)]
pub struct Split {
    pub path: PathBuf,
    /// The file's own kind (entry log, journal or index).
    pub kind: ReadKind,
    pub start: Option<u64>,
    pub end: Option<u64>,
}

enum State {
    NotOpened,
    Reading(Box<dyn BatchStream>),
    Done,
}

/// Batches of one split in `schema` (the columns asked for, in order).
pub struct SplitReader {
    split: Split,
    /// The path as rows name it.
    path_text: String,
    /// The columns given.
    schema: SchemaRef,
    options: SourceOptions,
    columns: Vec<String>,
    state: State,
}

impl SplitReader {
    /// `schema`: the columns to give.
    pub fn new(split: Split, schema: SchemaRef, options: SourceOptions) -> SplitReader {
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let path_text = split.path.to_string_lossy().into_owned();
        SplitReader { split, path_text, schema, options, columns, state: State::NotOpened }
    }

    /// A file's flagged row for `error`, unless the row filters drop it (it names no
    /// ledger, entry or scope; its offset is the error's; an index file's names its
    /// ledger, and no entry, offset or log id).
    fn error_row_passing(&self, error: &Error) -> Result<Option<RecordBatch>> {
        let rows = &self.options.rows;
        let passes = match self.split.kind {
            ReadKind::Index => rows.admits(None, name_id(&self.split.path, ReadKind::Index), None, None) && self.options.log_ids.is_none(),
            _ => rows.admits(None, None, None, i64::try_from(error_offset(error)).ok()),
        };
        if !passes {
            return Ok(None);
        }
        self.error_row(error)
    }

    fn open(&self) -> Result<Box<dyn BatchStream>> {
        let mut scan = self.options.scan_options(Some(&self.columns))?;
        // Only the reader's columns the query asks for are built; a count asks for
        // none, and gets the cheapest (its rows are what matter).
        let mut wanted: Vec<String> = self.columns.iter().filter(|c| !matches!(c.as_str(), "file" | "file_kind")).cloned().collect();
        if wanted.is_empty() {
            wanted.push("offset".into());
        }
        scan.columns = Some(wanted);
        // The row filters: the core builds only the rows they keep.
        scan.rows = self.options.rows.clone();
        scan.start = self.split.start.unwrap_or(0);
        scan.end = self.split.end.unwrap_or(u64::MAX);
        let path = &self.split.path;
        let source = Arc::new(FileSource::open(path)?);
        Ok(match self.split.kind {
            ReadKind::Index => Box::new(
                IndexBatchReader::new(source, name_id(path, ReadKind::Index), false, scan.batch_rows).map_err(|e| e.in_file(path))?,
            ),
            ReadKind::Journal => Box::new(
                JournalBatchReader::new(source, name_id(path, self.split.kind), false, None, scan).map_err(|e| e.in_file(path))?,
            ),
            _ => Box::new(EntryLogBatchReader::new(source, name_id(path, self.split.kind), scan).map_err(|e| e.in_file(path))?),
        })
    }

    /// The next batch with rows; None at the end of the split.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            match &mut self.state {
                State::Done => return Ok(None),
                // A file whose name id the logId or journalId option does not admit.
                State::NotOpened if !self.options.admits_file(&self.split.path, self.split.kind) => self.state = State::Done,
                State::NotOpened => match self.open() {
                    Ok(stream) => self.state = State::Reading(stream),
                    Err(e) => {
                        self.state = State::Done;
                        if let Some(row) = self.error_row_passing(&e)? {
                            return Ok(Some(row));
                        }
                    }
                },
                State::Reading(stream) => match stream.next() {
                    None => self.state = State::Done,
                    Some(Err(e)) => {
                        self.state = State::Done;
                        if let Some(row) = self.error_row_passing(&e)? {
                            return Ok(Some(row));
                        }
                    }
                    Some(Ok(batch)) if batch.num_rows() == 0 => {}
                    Some(Ok(batch)) if self.split.kind == ReadKind::Index => {
                        let kept = self.index_rows_passing(&batch)?;
                        if kept.num_rows() > 0 {
                            return self.with_file(&kept).map(Some);
                        }
                    }
                    Some(Ok(batch)) => return self.with_file(&batch).map(Some),
                },
            }
        }
    }

    /// The rows of an index file's batch that pass the row filters (the core builds
    /// only passing rows of entry logs and journals; an index file's are few): on its
    /// `ledger_id`, `entry_id`, `offset` (where in an entry log the entry is) and
    /// `log_id` columns, a null passing no test.
    fn index_rows_passing(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let (rows, log_ids) = (&self.options.rows, &self.options.log_ids);
        if rows.is_empty() && log_ids.is_none() {
            return Ok(batch.clone());
        }
        let column = |name: &str| -> Result<&Int64Array> {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
                .ok_or_else(|| Error::invalid_argument(format!("internal: index rows without an Int64 {name} column")))
        };
        let (ledgers, entries, offsets, logs) = (column("ledger_id")?, column("entry_id")?, column("offset")?, column("log_id")?);
        let value = |a: &Int64Array, i: usize| a.is_valid(i).then(|| a.value(i));
        let kept: Vec<usize> = (0..batch.num_rows())
            .filter(|&i| {
                rows.admits(None, value(ledgers, i), value(entries, i), value(offsets, i))
                    && log_ids.as_ref().is_none_or(|r| value(logs, i).is_some_and(|id| admits(r, id)))
            })
            .collect();
        let arrays: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| -> Result<ArrayRef> {
                let c = c.as_any().downcast_ref::<Int64Array>().ok_or_else(|| Error::invalid_argument("internal: index rows hold Int64 columns"))?;
                Ok(Arc::new(kept.iter().map(|&i| value(c, i)).collect::<Int64Array>()))
            })
            .collect::<Result<_>>()?;
        batch_of(&batch.schema(), arrays, kept.len())
    }

    /// The reader's batch in the source's columns.
    fn with_file(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let n = batch.num_rows();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for field in self.schema.fields() {
            let array: ArrayRef = match field.name().as_str() {
                "file" => repeated(&self.path_text, n),
                "file_kind" => repeated(core_kind_name(self.split.kind), n),
                name => match batch.column_by_name(name) {
                    Some(column) if column.data_type() == field.data_type() => column.clone(),
                    Some(column) => {
                        return Err(Error::invalid_argument(format!(
                            "column {name} is {} in the reader's rows, not {}",
                            column.data_type(),
                            field.data_type()
                        )))
                    }
                    None => new_null_array(field.data_type(), n),
                },
            };
            arrays.push(array);
        }
        batch_of(&self.schema, arrays, n)
    }

    /// The one row for a split that cannot be read (from `offset` on), or None when
    /// another range of the file holds the offset.
    fn error_row(&self, error: &Error) -> Result<Option<RecordBatch>> {
        let split = &self.split;
        let offset = error_offset(error);
        if let Some(start) = split.start {
            let end = split.end.unwrap_or(0).max(start + 1);
            if !(start <= offset && offset < end) {
                return Ok(None);
            }
        }
        let size = std::fs::metadata(&split.path).ok().map(|m| m.len());
        let until = split.end.or(size).unwrap_or(0);
        let record_size = until.saturating_sub(offset).min(i64::MAX as u64) as i64;
        let place = match (split.start, split.end) {
            (Some(s), Some(e)) => format!(" (bytes {s}..{e})"),
            (Some(s), None) => format!(" (bytes {s}..None)"),
            _ => String::new(),
        };
        let text = format!("{}{place}", error_text(error));
        let id_column = name_id_column(split.kind);
        let name_id = name_id(&split.path, split.kind);
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for field in self.schema.fields() {
            let name = field.name().as_str();
            let t = field.data_type();
            let array: ArrayRef = match name {
                "file" => repeated(&self.path_text, 1),
                "file_kind" => repeated(core_kind_name(split.kind), 1),
                "error" => repeated(&text, 1),
                "record_type" => repeated("damage", 1),
                "error_kind" => repeated("unreadable", 1),
                "record_size" if *t == DataType::Int64 => Arc::new(Int64Array::from(vec![record_size])),
                // (An index file's `offset` column is a position in an entry log.)
                "offset" if *t == DataType::Int64 && split.kind != ReadKind::Index => {
                    Arc::new(Int64Array::from(vec![offset.min(i64::MAX as u64) as i64]))
                }
                n if n == id_column && *t == DataType::Int64 => Arc::new(Int64Array::from(vec![name_id])),
                _ if field.is_nullable() => new_null_array(t, 1),
                _ if *t == DataType::Boolean => Arc::new(BooleanArray::from(vec![false])),
                _ => new_null_array(t, 1),
            };
            arrays.push(array);
        }
        batch_of(&self.schema, arrays, 1).map(Some)
    }
}

/// The offset the Python source gives a file's flagged row: its format errors carry
/// one; OSError and ValueError do not (0).
fn error_offset(error: &Error) -> u64 {
    match error.kind {
        bkcodec_core::ErrorKind::Io | bkcodec_core::ErrorKind::InvalidArgument => 0,
        _ => error.offset,
    }
}

/// A batch of `rows` rows, also when no column is asked for (a count).
fn batch_of(schema: &SchemaRef, arrays: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &options).map_err(|e| Error::invalid_argument(e.to_string()))
}

/// `text` `n` times, its bytes written once into a buffer of their exact size (grown
/// value by value, the buffer was copied over as it doubled).
fn repeated(text: &str, n: usize) -> ArrayRef {
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(text.len(), n));
    // SAFETY: the values are `text` again and again, valid UTF-8 split only where each
    // copy starts, which is where the offsets point.
    Arc::new(unsafe { StringArray::new_unchecked(offsets, text.repeat(n).into_bytes().into(), None) })
}
