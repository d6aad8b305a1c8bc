//! Key/value pairs of a DbLedgerStorage index, as a RocksDB iterator hands them
//! over, decoded into Arrow record batches (one row per key).
//!
//! Location indexes: `scope_id`, `ledger_id`, `entry_id`, `location`, `log_id`,
//! `offset` (of the entry's size field, `(location & 0xffffffff) - 4`, as the
//! entry-log reader reports it; null with `log_id` for a location that cannot
//! point at an entry). Ledger indexes: `scope_id`, `ledger_id`, `exists`, `fenced`,
//! `master_key`, `explicit_lac` (null when absent), `limbo` (null when absent); the
//! storage-flags key is not a ledger and gives no row. With `OnError::Flag` an
//! `error` column follows and a pair that does not decode is a row with nulls where
//! its bytes said nothing; with `OnError::Raise` it is an error naming the key.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::index_db::{
    location_parts, parse_ledger_key, parse_location_key, parse_location_value, LedgerData, STORAGE_FLAGS_KEY,
};
use crate::arrow::OnError;
use crate::error::{Error, Result};
use crate::ledger_id::LedgerId;

fn error_field() -> Field {
    Field::new("error", DataType::Utf8, true)
}

pub fn location_index_schema(on_error: OnError) -> SchemaRef {
    let mut fields = vec![
        Field::new("scope_id", DataType::Int64, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("location", DataType::Int64, true),
        Field::new("log_id", DataType::Int64, true),
        Field::new("offset", DataType::Int64, true),
    ];
    if on_error == OnError::Flag {
        fields.push(error_field());
    }
    Arc::new(Schema::new(fields))
}

pub fn ledger_index_schema(on_error: OnError) -> SchemaRef {
    let mut fields = vec![
        Field::new("scope_id", DataType::Int64, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("exists", DataType::Boolean, true),
        Field::new("fenced", DataType::Boolean, true),
        Field::new("master_key", DataType::Binary, true),
        Field::new("explicit_lac", DataType::Binary, true),
        Field::new("limbo", DataType::Boolean, true),
    ];
    if on_error == OnError::Flag {
        fields.push(error_field());
    }
    Arc::new(Schema::new(fields))
}

fn pair<'a>(keys: &[Option<&'a [u8]>], values: &[Option<&'a [u8]>]) -> Result<()> {
    if keys.len() != values.len() {
        return Err(Error::invalid_argument(format!("{} keys but {} values", keys.len(), values.len())));
    }
    Ok(())
}

fn present<'a>(v: Option<&'a [u8]>, what: &str) -> Result<&'a [u8]> {
    v.ok_or_else(|| Error::corrupt(0, format!("a null {what}")))
}

/// Decodes location-index pairs (`scoped` for a `scoped-locations` database).
pub fn decode_location_pairs(
    keys: &[Option<&[u8]>],
    values: &[Option<&[u8]>],
    scoped: bool,
    on_error: OnError,
) -> Result<RecordBatch> {
    pair(keys, values)?;
    let n = keys.len();
    let mut scope = Int64Builder::with_capacity(n);
    let mut ledger = Int64Builder::with_capacity(n);
    let mut entry = Int64Builder::with_capacity(n);
    let mut location = Int64Builder::with_capacity(n);
    let mut log_id = Int64Builder::with_capacity(n);
    let mut offset = Int64Builder::with_capacity(n);
    let mut errors = StringBuilder::new();
    for (k, v) in keys.iter().zip(values) {
        let decoded = present(*k, "key").and_then(|k| parse_location_key(k, scoped));
        let value = present(*v, "value").and_then(parse_location_value);
        let error = match (&decoded, &value) {
            (Err(e), _) | (_, Err(e)) => {
                if on_error == OnError::Raise {
                    return Err(e.clone());
                }
                Some(e.message())
            }
            _ => None,
        };
        match decoded {
            Ok((id, e)) => {
                scope.append_value(id.scope_id);
                ledger.append_value(id.ledger_id);
                entry.append_value(e);
            }
            Err(_) => {
                scope.append_null();
                ledger.append_null();
                entry.append_null();
            }
        }
        location.append_option(value.as_ref().ok().copied());
        let parts = value.ok().and_then(location_parts);
        log_id.append_option(parts.map(|p| p.0));
        offset.append_option(parts.map(|p| p.1));
        if on_error == OnError::Flag {
            errors.append_option(error);
        }
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(scope.finish()),
        Arc::new(ledger.finish()),
        Arc::new(entry.finish()),
        Arc::new(location.finish()),
        Arc::new(log_id.finish()),
        Arc::new(offset.finish()),
    ];
    if on_error == OnError::Flag {
        columns.push(Arc::new(errors.finish()));
    }
    RecordBatch::try_new(location_index_schema(on_error), columns).map_err(|e| Error::invalid_argument(e.to_string()))
}

/// Decodes ledger-index pairs (`scoped` for a `scoped-ledgers` database). The
/// storage-flags key of a `ledgers` database is skipped.
pub fn decode_ledger_pairs(
    keys: &[Option<&[u8]>],
    values: &[Option<&[u8]>],
    scoped: bool,
    on_error: OnError,
) -> Result<RecordBatch> {
    pair(keys, values)?;
    let n = keys.len();
    let mut scope = Int64Builder::with_capacity(n);
    let mut ledger = Int64Builder::with_capacity(n);
    let mut exists = BooleanBuilder::with_capacity(n);
    let mut fenced = BooleanBuilder::with_capacity(n);
    let mut master_key = BinaryBuilder::with_capacity(n, n * 20);
    let mut explicit_lac = BinaryBuilder::new();
    let mut limbo = BooleanBuilder::with_capacity(n);
    let mut errors = StringBuilder::new();
    for (k, v) in keys.iter().zip(values) {
        if !scoped && *k == Some(&STORAGE_FLAGS_KEY[..]) {
            continue;
        }
        let id: Result<LedgerId> = present(*k, "key").and_then(|k| parse_ledger_key(k, scoped));
        let data = present(*v, "value").and_then(LedgerData::decode_checked);
        let error = match (&id, &data) {
            (Err(e), _) | (_, Err(e)) => {
                if on_error == OnError::Raise {
                    return Err(e.clone());
                }
                Some(e.message())
            }
            _ => None,
        };
        scope.append_option(id.as_ref().ok().map(|i| i.scope_id));
        ledger.append_option(id.as_ref().ok().map(|i| i.ledger_id));
        let data = data.ok();
        exists.append_option(data.as_ref().and_then(|d| d.exists));
        fenced.append_option(data.as_ref().and_then(|d| d.fenced));
        master_key.append_option(data.as_ref().and_then(|d| d.master_key.as_deref()));
        explicit_lac.append_option(data.as_ref().and_then(|d| d.explicit_lac.as_deref()));
        limbo.append_option(data.as_ref().and_then(|d| d.limbo));
        if on_error == OnError::Flag {
            errors.append_option(error);
        }
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(scope.finish()),
        Arc::new(ledger.finish()),
        Arc::new(exists.finish()),
        Arc::new(fenced.finish()),
        Arc::new(master_key.finish()),
        Arc::new(explicit_lac.finish()),
        Arc::new(limbo.finish()),
    ];
    if on_error == OnError::Flag {
        columns.push(Arc::new(errors.finish()));
    }
    RecordBatch::try_new(ledger_index_schema(on_error), columns).map_err(|e| Error::invalid_argument(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookie::index_db::{ledger_key, location_key};
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    use arrow_array::types::Int64Type;
    use prost::Message;

    fn ints(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
        batch.column_by_name(name).unwrap().as_primitive::<Int64Type>().iter().collect()
    }

    #[test]
    fn location_rows() {
        let keys = [location_key(LedgerId::unscoped(3), 0), location_key(LedgerId::unscoped(3), 1), vec![1, 2, 3]];
        let values = [(7i64 << 32 | 1028).to_be_bytes().to_vec(), 0i64.to_be_bytes().to_vec(), 9i64.to_be_bytes().to_vec()];
        let k: Vec<Option<&[u8]>> = keys.iter().map(|k| Some(&k[..])).collect();
        let v: Vec<Option<&[u8]>> = values.iter().map(|v| Some(&v[..])).collect();
        let b = decode_location_pairs(&k[..2], &v[..2], false, OnError::Raise).unwrap();
        assert_eq!(b.schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
                   ["scope_id", "ledger_id", "entry_id", "location", "log_id", "offset"]);
        assert_eq!(ints(&b, "ledger_id"), [Some(3), Some(3)]);
        assert_eq!(ints(&b, "log_id"), [Some(7), None]);
        assert_eq!(ints(&b, "offset"), [Some(1024), None]);
        assert_eq!(ints(&b, "location"), [Some(7 << 32 | 1028), Some(0)]);

        let e = decode_location_pairs(&k, &v, false, OnError::Raise).unwrap_err();
        assert!(e.detail.contains("010203"), "{}", e.detail);
        let b = decode_location_pairs(&k, &v, false, OnError::Flag).unwrap();
        assert_eq!(b.num_rows(), 3);
        assert_eq!(ints(&b, "ledger_id"), [Some(3), Some(3), None]);
        assert_eq!(ints(&b, "location"), [Some(7 << 32 | 1028), Some(0), Some(9)]);
        let errors = b.column_by_name("error").unwrap().as_string::<i32>();
        assert!(errors.is_null(0) && errors.is_null(1) && errors.value(2).starts_with("corrupt: location key 010203"));

        let scoped = location_key(LedgerId::new(5, -2), 4);
        let b = decode_location_pairs(&[Some(&scoped[..])], &[Some(&values[0][..])], true, OnError::Raise).unwrap();
        assert_eq!((ints(&b, "scope_id"), ints(&b, "ledger_id"), ints(&b, "entry_id")), (vec![Some(5)], vec![Some(-2)], vec![Some(4)]));
        assert!(decode_location_pairs(&[None], &[Some(&values[0][..])], false, OnError::Raise).is_err());
        assert!(decode_location_pairs(&k, &v[..1], false, OnError::Flag).is_err());
    }

    #[test]
    fn ledger_rows_skip_the_storage_flags() {
        let mut fenced = LedgerData::new(&[1; 20], true);
        fenced.explicit_lac = Some(vec![9; 24]);
        let plain = LedgerData::new(&[0; 20], false);
        let keys = [ledger_key(LedgerId::unscoped(1), false), STORAGE_FLAGS_KEY.to_vec(), ledger_key(LedgerId::unscoped(2), false)];
        let values = [fenced.encode_to_vec(), 1i64.to_be_bytes().to_vec(), plain.encode_to_vec()];
        let k: Vec<Option<&[u8]>> = keys.iter().map(|k| Some(&k[..])).collect();
        let v: Vec<Option<&[u8]>> = values.iter().map(|v| Some(&v[..])).collect();
        let b = decode_ledger_pairs(&k, &v, false, OnError::Raise).unwrap();
        assert_eq!(ints(&b, "ledger_id"), [Some(1), Some(2)]);
        let lac = b.column_by_name("explicit_lac").unwrap().as_binary::<i32>();
        assert_eq!((lac.value(0), lac.is_null(1)), (&[9u8; 24][..], true));
        let limbo = b.column_by_name("limbo").unwrap().as_boolean();
        assert!(limbo.is_null(0) && limbo.is_null(1));
        let fenced_col = b.column_by_name("fenced").unwrap().as_boolean();
        assert!(fenced_col.value(0) && !fenced_col.value(1));
        // In a scoped database nothing is special: the same bytes are a bad key there.
        assert!(decode_ledger_pairs(&k[1..2], &v[1..2], true, OnError::Raise).is_err());
        let b = decode_ledger_pairs(&[Some(&keys[0][..])], &[Some(&[0xff][..])], false, OnError::Flag).unwrap();
        assert_eq!(ints(&b, "ledger_id"), [Some(1)]);
        assert!(b.column_by_name("error").unwrap().as_string::<i32>().value(0).contains("LedgerData"));
    }
}
