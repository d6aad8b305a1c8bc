//! Decoding a column of entries (an Arrow binary array, or any sequence of byte
//! slices) into an [`EntryBatchBuilder`], one row per input value.

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;

use super::entries::EntryBatchBuilder;
use crate::digest_policy::{DigestResolver, EntryChecks};
use crate::error::{Error, Result};

/// Appends one row per item: `None` is a null row, anything else a decoded entry
/// (or, under `OnError::Flag`, a flagged row). Items are numbered from `first_index`
/// in error messages, so a caller feeding chunks keeps the numbering of the whole input.
pub fn append_entries<'a>(
    builder: &mut EntryBatchBuilder,
    resolver: &mut DigestResolver,
    entries: impl IntoIterator<Item = Option<&'a [u8]>>,
    first_index: usize,
    checks: EntryChecks,
) -> Result<()> {
    for (i, item) in entries.into_iter().enumerate() {
        match item {
            None => builder.append_null(),
            Some(bytes) => builder
                .decode_append(resolver, bytes, checks)
                .map_err(|e| numbered(e, first_index + i))?,
        }
    }
    Ok(())
}

/// [`append_entries`] over an Arrow `binary`, `large_binary` or `binary_view`
/// array; its buffers become the view sources, so `binary_view` payloads share them.
pub fn append_entry_array(
    builder: &mut EntryBatchBuilder,
    resolver: &mut DigestResolver,
    array: &dyn Array,
    first_index: usize,
    checks: EntryChecks,
) -> Result<()> {
    match array.data_type() {
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            builder.set_view_sources(std::slice::from_ref(a.values()));
            append_entries(builder, resolver, a.iter(), first_index, checks)
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            builder.set_view_sources(std::slice::from_ref(a.values()));
            append_entries(builder, resolver, a.iter(), first_index, checks)
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            builder.set_view_sources(a.data_buffers());
            append_entries(builder, resolver, a.iter(), first_index, checks)
        }
        other => Err(Error::invalid_argument(format!(
            "entries must be binary, large_binary or binary_view, not {other}"
        ))),
    }
}

/// Bytes held by the values of a `binary`, `large_binary` or `binary_view` array
/// (only the slice in use, nulls counting nothing): a capacity hint for copied
/// payloads. 0 for other types.
pub fn entry_bytes(array: &dyn Array) -> usize {
    match array.data_type() {
        DataType::Binary => {
            let o = array.as_binary::<i32>().value_offsets();
            (o[o.len() - 1] - o[0]) as usize
        }
        DataType::LargeBinary => {
            let o = array.as_binary::<i64>().value_offsets();
            (o[o.len() - 1] - o[0]) as usize
        }
        // The low 32 bits of a view are the value's length.
        DataType::BinaryView => array.as_binary_view().views().iter().map(|v| *v as u32 as usize).sum(),
        _ => 0,
    }
}

/// Names the input item an error came from, keeping its kind and offset.
fn numbered(e: Error, index: usize) -> Error {
    let detail = format!("entry {index}: {}", e.detail);
    e.with_detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::{EntryBatchOptions, OnError, PayloadMode};
    use crate::digest::{DigestType, Digester};
    use crate::digest_policy::DigestPolicy;
    use crate::entry::{encode_entry, EntryHeader};
    use crate::error::ErrorKind;
    use arrow_array::types::Int64Type;
    use arrow_array::{BinaryArray, BinaryViewArray, Int32Array, LargeBinaryArray};

    fn entries() -> Vec<Option<Vec<u8>>> {
        let d = Digester::new(DigestType::Crc32, b"");
        let mut v: Vec<Option<Vec<u8>>> = (0..5)
            .map(|i| Some(encode_entry(&EntryHeader::new(0, 2, i, i - 1, 0), &[b'p'; 20], &d).unwrap()))
            .collect();
        v[2] = None;
        v
    }

    fn decode(array: &dyn Array, mode: PayloadMode, on_error: OnError) -> Result<arrow_array::RecordBatch> {
        let mut b = EntryBatchBuilder::new(EntryBatchOptions { payload: mode, on_error }, array.len(), 0);
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        append_entry_array(&mut b, &mut r, array, 0, EntryChecks::DIGEST)?;
        b.finish()
    }

    #[test]
    fn every_binary_type_gives_the_same_rows() {
        let e = entries();
        let refs: Vec<Option<&[u8]>> = e.iter().map(|x| x.as_deref()).collect();
        let arrays: Vec<Box<dyn Array>> = vec![
            Box::new(BinaryArray::from(refs.clone())),
            Box::new(LargeBinaryArray::from(refs.clone())),
            Box::new(BinaryViewArray::from(refs.clone())),
        ];
        let expected = decode(arrays[0].as_ref(), PayloadMode::Binary, OnError::Raise).unwrap();
        for a in &arrays {
            for mode in [PayloadMode::Binary, PayloadMode::BinaryView] {
                let got = decode(a.as_ref(), mode, OnError::Raise).unwrap();
                assert_eq!(got.num_rows(), 5);
                for name in ["ledger_id", "entry_id", "digest_ok"] {
                    assert_eq!(got.column_by_name(name), expected.column_by_name(name));
                }
                let ids = got.column_by_name("entry_id").unwrap().as_primitive::<Int64Type>().clone();
                assert!(ids.is_null(2), "a null input is a null row");
                let p = got.column_by_name("payload").unwrap();
                let values: Vec<Option<&[u8]>> = match mode {
                    PayloadMode::Binary => p.as_binary::<i32>().iter().collect(),
                    _ => p.as_binary_view().iter().collect(),
                };
                assert_eq!(values[0], Some(&[b'p'; 20][..]));
            }
        }
    }

    #[test]
    fn raise_names_the_entry_index_and_keeps_the_offset() {
        let mut e = entries();
        e[3].as_mut().unwrap()[45] ^= 0x10;
        let refs: Vec<Option<&[u8]>> = e.iter().map(|x| x.as_deref()).collect();
        let err = decode(&BinaryArray::from(refs.clone()), PayloadMode::None, OnError::Raise).unwrap_err();
        assert_eq!((err.kind, err.offset), (ErrorKind::DigestMismatch, 32));
        assert!(err.detail.starts_with("entry 3: "), "{}", err.detail);
        let flagged = decode(&BinaryArray::from(refs), PayloadMode::None, OnError::Flag).unwrap();
        assert_eq!(flagged.num_rows(), 5);
        assert_eq!(flagged.column_by_name("error").unwrap().null_count(), 4);
    }

    #[test]
    fn entry_bytes_counts_the_slice_in_use() {
        let values: Vec<&[u8]> = vec![b"abc", b"", b"0123456789abcdef"];
        let binary = BinaryArray::from(values.clone());
        assert_eq!(entry_bytes(&binary), 19);
        assert_eq!(entry_bytes(&binary.slice(1, 2)), 16);
        assert_eq!(entry_bytes(&LargeBinaryArray::from(values.clone()).slice(0, 1)), 3);
        assert_eq!(entry_bytes(&BinaryViewArray::from(values)), 19);
        assert_eq!(entry_bytes(&Int32Array::from(vec![1])), 0);
    }

    #[test]
    fn other_types_are_refused() {
        let err = decode(&Int32Array::from(vec![1]), PayloadMode::Binary, OnError::Raise).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
    }
}
