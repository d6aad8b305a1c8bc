//! Many ledgers' metadata as one Arrow record batch: a row per znode, with the
//! ensembles as a nested list column and an error column for znodes that fail.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, MapBuilder, StringBuilder};
use arrow_array::{ArrayRef, Int64Array, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use super::znode_dump::ZnodeRecord;
use crate::error::{Error, ErrorKind, Result};

fn ensemble_fields() -> Fields {
    Fields::from(vec![
        Field::new("first_entry_id", DataType::Int64, false),
        Field::new("bookies", DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, false))), false),
    ])
}

fn ensembles_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Struct(ensemble_fields()), false)))
}

fn custom_metadata_type() -> DataType {
    // Built by MapBuilder, whose default names these are.
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("keys", DataType::Utf8, false),
            Field::new("values", DataType::Binary, true),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// The columns, in order. Metadata columns are null on error rows.
pub fn ledger_metadata_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("format_version", DataType::Int32, true),
        Field::new("ensemble_size", DataType::Int32, true),
        Field::new("write_quorum_size", DataType::Int32, true),
        Field::new("ack_quorum_size", DataType::Int32, true),
        Field::new("state", DataType::Utf8, true),
        Field::new("last_entry_id", DataType::Int64, true),
        Field::new("length", DataType::Int64, true),
        Field::new("digest_type", DataType::Utf8, true),
        Field::new("password", DataType::Binary, true),
        Field::new("ctime", DataType::Int64, true),
        Field::new("ctoken", DataType::Int64, true),
        Field::new("custom_metadata", custom_metadata_type(), true),
        Field::new("ensembles", ensembles_type(), true),
        Field::new("error", DataType::Utf8, true),
        Field::new("error_offset", DataType::Int64, true),
    ]))
}

/// One row per record, in the order given.
pub fn ledger_metadata_batch(records: &[ZnodeRecord]) -> Result<RecordBatch> {
    let n = records.len();
    let mut path = StringBuilder::new();
    let mut ledger_id = Int64Builder::with_capacity(n);
    let mut format_version = Int32Builder::with_capacity(n);
    let mut ensemble_size = Int32Builder::with_capacity(n);
    let mut write_quorum = Int32Builder::with_capacity(n);
    let mut ack_quorum = Int32Builder::with_capacity(n);
    let mut state = StringBuilder::new();
    let mut last_entry_id = Int64Builder::with_capacity(n);
    let mut length = Int64Builder::with_capacity(n);
    let mut digest_type = StringBuilder::new();
    let mut password = BinaryBuilder::new();
    let mut ctime = Int64Builder::with_capacity(n);
    let mut ctoken = Int64Builder::with_capacity(n);
    let mut custom = MapBuilder::new(None, StringBuilder::new(), BinaryBuilder::new());
    let mut error = StringBuilder::new();
    let mut error_offset = Int64Builder::with_capacity(n);
    // Ensembles are assembled from flat arrays and offsets.
    let mut row_ensembles: Vec<usize> = Vec::with_capacity(n);
    let mut row_valid: Vec<bool> = Vec::with_capacity(n);
    let mut first_ids: Vec<i64> = Vec::new();
    let mut bookie_counts: Vec<usize> = Vec::new();
    let mut bookies = StringBuilder::new();

    for r in records {
        path.append_option(r.path.as_deref());
        ledger_id.append_option(r.ledger_id);
        match &r.metadata {
            Ok(md) => {
                format_version.append_value(md.format_version as i32);
                ensemble_size.append_value(md.ensemble_size);
                write_quorum.append_value(md.write_quorum_size);
                ack_quorum.append_value(md.ack_quorum_size);
                state.append_value(md.state.name());
                last_entry_id.append_value(md.last_entry_id);
                length.append_value(md.length);
                digest_type.append_option(md.digest_type.map(|d| d.name()));
                password.append_option(md.password.as_deref());
                ctime.append_option(md.ctime);
                ctoken.append_value(md.ctoken);
                for (k, v) in &md.custom_metadata {
                    custom.keys().append_value(k);
                    custom.values().append_value(v);
                }
                custom.append(true).map_err(arrow_error)?;
                for e in &md.ensembles {
                    first_ids.push(e.first_entry_id);
                    bookie_counts.push(e.bookies.len());
                    for b in &e.bookies {
                        bookies.append_value(b.as_str());
                    }
                }
                row_ensembles.push(md.ensembles.len());
                row_valid.push(true);
                error.append_null();
                error_offset.append_null();
            }
            Err(e) => {
                format_version.append_null();
                ensemble_size.append_null();
                write_quorum.append_null();
                ack_quorum.append_null();
                state.append_null();
                last_entry_id.append_null();
                length.append_null();
                digest_type.append_null();
                password.append_null();
                ctime.append_null();
                ctoken.append_null();
                custom.append(false).map_err(arrow_error)?;
                row_ensembles.push(0);
                row_valid.push(false);
                error.append_value(match &e.path {
                    Some(p) => format!("{} ({})", e.message(), p.display()),
                    None => e.message(),
                });
                error_offset.append_value(e.offset as i64);
            }
        }
    }

    let bookie_lists = ListArray::try_new(
        Arc::new(Field::new_list_field(DataType::Utf8, false)),
        OffsetBuffer::from_lengths(bookie_counts),
        Arc::new(bookies.finish()) as ArrayRef,
        None,
    )
    .map_err(arrow_error)?;
    let ensemble_structs = StructArray::try_new(
        ensemble_fields(),
        vec![Arc::new(Int64Array::from(first_ids)) as ArrayRef, Arc::new(bookie_lists) as ArrayRef],
        None,
    )
    .map_err(arrow_error)?;
    let ensembles = ListArray::try_new(
        Arc::new(Field::new_list_field(DataType::Struct(ensemble_fields()), false)),
        OffsetBuffer::from_lengths(row_ensembles),
        Arc::new(ensemble_structs) as ArrayRef,
        Some(NullBuffer::from(row_valid)),
    )
    .map_err(arrow_error)?;

    let columns: Vec<ArrayRef> = vec![
        Arc::new(path.finish()),
        Arc::new(ledger_id.finish()),
        Arc::new(format_version.finish()),
        Arc::new(ensemble_size.finish()),
        Arc::new(write_quorum.finish()),
        Arc::new(ack_quorum.finish()),
        Arc::new(state.finish()),
        Arc::new(last_entry_id.finish()),
        Arc::new(length.finish()),
        Arc::new(digest_type.finish()),
        Arc::new(password.finish()),
        Arc::new(ctime.finish()),
        Arc::new(ctoken.finish()),
        Arc::new(custom.finish()),
        Arc::new(ensembles),
        Arc::new(error.finish()),
        Arc::new(error_offset.finish()),
    ];
    RecordBatch::try_new(ledger_metadata_schema(), columns).map_err(arrow_error)
}

/// Arrow only fails here if this module built inconsistent columns.
fn arrow_error(e: arrow_schema::ArrowError) -> Error {
    Error::new(ErrorKind::InvalidArgument, 0, format!("building the metadata table: {e}"))
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    use arrow_array::Array;

    use super::*;
    use crate::metadata::znode_dump::decode_znode;

    const V1: &[u8] = b"BookieMetadataFormatVersion\t1\n2\n3\n10\n0\ta:1\tb:1\tc:1\n5\td:1\te:1\tf:1\n4\tCLOSED";

    #[test]
    fn one_row_per_znode_with_errors_in_place() {
        let records = vec![
            decode_znode(Some("/ledgers/00/0000/L0007"), None, V1),
            decode_znode(Some("/ledgers/L0000000008"), None, b"garbage"),
            decode_znode(Some("/ledgers/LAYOUT"), None, V1),
            decode_znode(None, Some(9), V1),
        ];
        let batch = ledger_metadata_batch(&records).unwrap();
        assert_eq!(batch.num_rows(), 4);
        assert_eq!(batch.schema(), ledger_metadata_schema());
        let ids = batch.column_by_name("ledger_id").unwrap().as_primitive::<Int64Type>();
        assert_eq!(ids.iter().collect::<Vec<_>>(), [Some(7), Some(8), None, Some(9)]);
        let errors = batch.column_by_name("error").unwrap().as_string::<i32>();
        assert!(errors.is_null(0) && errors.is_null(3));
        assert!(errors.value(1).starts_with("corrupt: ledger metadata header corrupt (expected"), "{}", errors.value(1));
        assert!(errors.value(2).contains("not a ledger metadata path"));
        let offsets = batch.column_by_name("error_offset").unwrap().as_primitive::<Int64Type>();
        assert_eq!(offsets.iter().collect::<Vec<_>>(), [None, Some(0), Some(0), None]);
        let quorum = batch.column_by_name("write_quorum_size").unwrap().as_primitive::<Int32Type>();
        assert_eq!(quorum.iter().collect::<Vec<_>>(), [Some(2), None, None, Some(2)]);

        let ensembles = batch.column_by_name("ensembles").unwrap().as_list::<i32>();
        assert!(ensembles.is_null(1));
        let row0 = ensembles.value(0);
        let row0 = row0.as_struct();
        assert_eq!(row0.len(), 2);
        let firsts = row0.column(0).as_primitive::<Int64Type>();
        assert_eq!(firsts.values().to_vec(), [0, 5]);
        let bookies = row0.column(1).as_list::<i32>();
        let second = bookies.value(1);
        let second = second.as_string::<i32>();
        assert_eq!(second.iter().flatten().collect::<Vec<_>>(), ["d:1", "e:1", "f:1"]);
        let custom = batch.column_by_name("custom_metadata").unwrap();
        assert!(custom.is_null(1) && !custom.is_null(0));
    }

    #[test]
    fn an_empty_batch_has_the_schema() {
        let batch = ledger_metadata_batch(&[]).unwrap();
        assert_eq!((batch.num_rows(), batch.num_columns()), (0, 17));
    }
}
