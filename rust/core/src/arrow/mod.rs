//! Arrow output: decoded BookKeeper data as record batches.
//!
//! `reader_columns.rs` defines every column a reader's batch can have (`primitive_column.rs` the nullable primitive column they build on); `entries.rs` decodes
//! entries given in memory, `file_reader.rs` streams entry logs and journals (the
//! sink of `files/scan.rs`), `index_file.rs` streams index files.

pub mod primitive_column;
pub mod reader_columns;
pub mod entries;
pub mod payload;

// Bookie files as streams of batches.
pub mod file_reader;
pub mod index_file;

pub use primitive_column::PrimitiveColumn;
pub use entries::{entry_bytes, EntryBatchOptions, EntryDecoder, OnError};
pub use file_reader::{
    entry_log_schema, error_kinds, journal_schema, ArrowBatchReader, BatchStream, EntryLogBatchReader, FileScanOptions,
    JournalBatchReader, DEFAULT_BATCH_BYTES, DEFAULT_BATCH_ROWS,
};
pub use index_file::{index_schema, IndexBatchReader};
pub use payload::PayloadMode;

/// A ledgers map as a batch: `ledger_id`, `size` (bytes of that ledger's records,
/// each entry's length + 4), sorted by ledger id.
pub fn ledgers_map_batch(map: &crate::files::LedgersMap) -> arrow_array::RecordBatch {
    use std::sync::Arc;
    let ids = arrow_array::Int64Array::from_iter_values(map.ledgers.iter().map(|l| l.ledger_id));
    let sizes = arrow_array::Int64Array::from_iter_values(map.ledgers.iter().map(|l| l.size));
    arrow_array::RecordBatch::try_new(ledgers_map_schema(), vec![Arc::new(ids), Arc::new(sizes)]).expect("two columns of one length")
}

pub fn ledgers_map_schema() -> arrow_schema::SchemaRef {
    use arrow_schema::{DataType, Field, Schema};
    std::sync::Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("size", DataType::Int64, false),
    ]))
}
