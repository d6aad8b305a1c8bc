//! Ledger index files as a stream of record batches: one row per entry id with a
//! location (or per slot, absent ones included, when asked).
//!
//! Columns: `ledger_id` (from the file name unless given), `entry_id`, `location`
//! (as stored: the log id above the offset of the entry bytes), `log_id` and `offset`
//! (the offset of the entry's size field, 4 bytes before, as `read_entry_log` and the
//! location databases report it). Absent slots have null location, log id and
//! offset; a location that cannot point at an entry has null log id and offset.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::primitive_column::PrimitiveColumn;
use super::file_reader::BatchStream;
use crate::error::{Error, Result};
use crate::files::index_file::{self, IndexHeader, HEADER_LEN, SLOT_LEN};
use crate::files::source::{read_vec_at, FileSource, ReadAt};
use crate::files::Location;

pub fn index_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("location", DataType::Int64, true),
        Field::new("log_id", DataType::Int64, true),
        Field::new("offset", DataType::Int64, true),
    ]))
}

/// Streams the slots of one index file, reading them a batch at a time.
pub struct IndexBatchReader {
    source: Arc<dyn ReadAt>,
    ledger_id: Option<i64>,
    include_absent: bool,
    batch_rows: usize,
    next_entry: u64,
    slots: u64,
    schema: SchemaRef,
    done: bool,
}

impl std::fmt::Debug for IndexBatchReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexBatchReader").field("path", &self.source.path()).field("slots", &self.slots).finish()
    }
}

impl IndexBatchReader {
    /// Opens `path` and checks its header; the ledger id comes from the file name
    /// (`<hex>.idx`) unless given.
    pub fn open(path: impl AsRef<Path>, ledger_id: Option<i64>, include_absent: bool, batch_rows: usize) -> Result<Self> {
        let path = path.as_ref();
        let ledger_id = ledger_id.or_else(|| index_file::ledger_id_from_index_path(path));
        Self::new(Arc::new(FileSource::open(path)?), ledger_id, include_absent, batch_rows)
    }

    pub fn new(source: Arc<dyn ReadAt>, ledger_id: Option<i64>, include_absent: bool, batch_rows: usize) -> Result<Self> {
        if batch_rows == 0 {
            return Err(Error::invalid_argument("batch sizes must be positive"));
        }
        let locate = |e: Error| match source.path() {
            Some(p) => e.in_file(p),
            None => e,
        };
        let head = read_vec_at(&*source, 0, HEADER_LEN as usize).map_err(locate)?;
        IndexHeader::parse(&head).map_err(locate)?;
        let slots = source.len().saturating_sub(HEADER_LEN) / SLOT_LEN;
        Ok(IndexBatchReader { source, ledger_id, include_absent, batch_rows, next_entry: 0, slots, schema: index_schema(), done: false })
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut entry_ids = PrimitiveColumn::<Int64Type>::with_capacity(self.batch_rows.min(8192));
        let mut locations = PrimitiveColumn::<Int64Type>::with_capacity(self.batch_rows.min(8192));
        let mut log_ids = PrimitiveColumn::<Int64Type>::with_capacity(self.batch_rows.min(8192));
        let mut offsets = PrimitiveColumn::<Int64Type>::with_capacity(self.batch_rows.min(8192));
        const CHUNK_SLOTS: u64 = 8192;
        while self.next_entry < self.slots && entry_ids.len() < self.batch_rows {
            let first = self.next_entry;
            let n = CHUNK_SLOTS.min(self.slots - first);
            let at = HEADER_LEN + first * SLOT_LEN;
            let bytes = read_vec_at(&*self.source, at, (n * SLOT_LEN) as usize)?;
            if (bytes.len() as u64) < n * SLOT_LEN {
                return Err(crate::files::source::short_read(&*self.source, at, (n * SLOT_LEN) as usize, bytes.len()));
            }
            let mut taken = 0u64;
            for (i, slot) in bytes.chunks_exact(SLOT_LEN as usize).enumerate() {
                if entry_ids.len() >= self.batch_rows {
                    break;
                }
                taken = i as u64 + 1;
                let location = Location::from_raw(i64::from_be_bytes(slot.try_into().expect("8 bytes")));
                if location.is_none() && !self.include_absent {
                    continue;
                }
                entry_ids.push((first + i as u64) as i64);
                locations.push_option(location.map(Location::to_raw));
                // As every reader reports an entry: the offset of its size field.
                let parts = location.and_then(|l| Some((i64::from(l.log_id), l.size_field_offset()? as i64)));
                log_ids.push_option(parts.map(|(log_id, _)| log_id));
                offsets.push_option(parts.map(|(_, offset)| offset));
            }
            self.next_entry = first + taken;
        }
        if entry_ids.is_empty() {
            return Ok(None);
        }
        let rows = entry_ids.len();
        let ledger_ids: arrow_array::Int64Array = std::iter::repeat_n(self.ledger_id, rows).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(ledger_ids),
            Arc::new(entry_ids.finish()),
            Arc::new(locations.finish()),
            Arc::new(log_ids.finish()),
            Arc::new(offsets.finish()),
        ];
        RecordBatch::try_new(self.schema.clone(), columns)
            .map(Some)
            .map_err(|e| Error::invalid_argument(format!("assembling an index batch: {e}")))
    }
}

impl Iterator for IndexBatchReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if self.done {
            return None;
        }
        match self.next_batch() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(match self.source.path() {
                    Some(p) => e.in_file(p),
                    None => e,
                }))
            }
        }
    }
}

impl BatchStream for IndexBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
