//! Ledger index files as a stream of record batches: one row per entry id with a
//! location (or per slot, absent ones included, when asked).
//!
//! Columns: `ledger_id` (from the file name unless given), `entry_id`, `location`
//! (as stored: `log_id << 32 | offset`), `log_id` and `offset` (its two halves, the
//! offset being that of the entry bytes in the entry log). Absent slots have null
//! location, log id and offset.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::column::PrimitiveColumn;
use super::file_scan::BatchStream;
use super::mapped_file::MappedFile;
use crate::error::{Error, Result};
use crate::files::index_file::{self, IndexFile};
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

/// Streams the slots of one index file.
#[derive(Debug)]
pub struct IndexBatchReader {
    file: MappedFile,
    ledger_id: Option<i64>,
    include_absent: bool,
    batch_rows: usize,
    next_entry: u64,
    slots: u64,
    schema: SchemaRef,
}

impl IndexBatchReader {
    /// Maps `path` and checks its header; the ledger id comes from the file name
    /// (`<hex>.idx`) unless given.
    pub fn open(path: impl AsRef<Path>, ledger_id: Option<i64>, include_absent: bool, batch_rows: usize) -> Result<Self> {
        let path = path.as_ref();
        let ledger_id = ledger_id.or_else(|| index_file::ledger_id_from_index_path(path));
        Self::new(MappedFile::open(path)?, ledger_id, include_absent, batch_rows)
    }

    pub fn new(file: MappedFile, ledger_id: Option<i64>, include_absent: bool, batch_rows: usize) -> Result<Self> {
        if batch_rows == 0 {
            return Err(Error::invalid_argument("batch sizes must be positive"));
        }
        let slots = IndexFile::parse(file.bytes()).map_err(|e| file.locate(e))?.slot_count();
        Ok(IndexBatchReader { file, ledger_id, include_absent, batch_rows, next_entry: 0, slots, schema: index_schema() })
    }

}

impl Iterator for IndexBatchReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let index = IndexFile::parse(self.file.bytes()).expect("the header parsed when the reader was made");
        let rows = self.batch_rows.min((self.slots - self.next_entry) as usize);
        let mut entry_ids = PrimitiveColumn::<Int64Type>::with_capacity(rows);
        let mut locations = PrimitiveColumn::<Int64Type>::with_capacity(rows);
        let mut log_ids = PrimitiveColumn::<Int64Type>::with_capacity(rows);
        let mut offsets = PrimitiveColumn::<Int64Type>::with_capacity(rows);
        while self.next_entry < self.slots && entry_ids.len() < self.batch_rows {
            let entry_id = self.next_entry;
            self.next_entry += 1;
            let location = index.location(entry_id);
            if location.is_none() && !self.include_absent {
                continue;
            }
            entry_ids.push(entry_id as i64);
            locations.push_option(location.map(Location::to_raw));
            log_ids.push_option(location.map(|l| i64::from(l.log_id)));
            offsets.push_option(location.map(|l| i64::from(l.offset)));
        }
        if entry_ids.is_empty() {
            return None;
        }
        let mut ledger_ids = PrimitiveColumn::<Int64Type>::with_capacity(entry_ids.len());
        for _ in 0..entry_ids.len() {
            ledger_ids.push_option(self.ledger_id);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(ledger_ids.finish()),
            Arc::new(entry_ids.finish()),
            Arc::new(locations.finish()),
            Arc::new(log_ids.finish()),
            Arc::new(offsets.finish()),
        ];
        Some(
            RecordBatch::try_new(self.schema.clone(), columns)
                .map_err(|e| Error::invalid_argument(format!("assembling an index batch: {e}"))),
        )
    }
}

impl BatchStream for IndexBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
