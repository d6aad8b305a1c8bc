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
    entry_log_schema, error_kinds, journal_schema, ArrowBatchReader, BatchStream, EntryLogBatchReader, FileReaderOptions,
    JournalBatchReader, RowFilter, DEFAULT_BATCH_BYTES, DEFAULT_BATCH_ROWS,
};
pub use index_file::{index_schema, IndexBatchReader};
pub use payload::PayloadMode;

/// The columns of several readers' rows in one stream (`read_bookie`'s, and the Spark
/// sources' for entry logs and journals together): `file` and `file_kind` (never
/// null), then every reader's columns, first seen first, but where a row is (log or
/// journal position) in front and `error` last; every column from a reader nullable.
pub fn merged_file_schema(schemas: &[arrow_schema::SchemaRef]) -> arrow_schema::SchemaRef {
    use arrow_schema::{DataType, Field, Schema};
    let mut all: Vec<Field> = Vec::new();
    for schema in schemas {
        for f in schema.fields() {
            if !all.iter().any(|a| a.name() == f.name()) {
                all.push(f.as_ref().clone());
            }
        }
    }
    const FRONT: [&str; 6] = ["log_id", "journal_id", "offset", "location", "record_size", "record_type"];
    let find = |name: &str| all.iter().find(|f| f.name() == name).cloned();
    let mut columns: Vec<Field> = FRONT.iter().filter_map(|n| find(n)).collect();
    columns.extend(all.iter().filter(|f| !FRONT.contains(&f.name().as_str()) && f.name() != "error").cloned());
    columns.extend(find("error"));
    let mut fields = vec![Field::new("file", DataType::Utf8, false), Field::new("file_kind", DataType::Utf8, false)];
    fields.extend(columns.into_iter().map(|f| f.with_nullable(true)));
    std::sync::Arc::new(Schema::new(fields))
}

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
