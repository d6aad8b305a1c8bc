//! A batch's buffers as primitives for Java: for each column its null count and the
//! address and length of its validity, offsets and data buffers, which Java wraps
//! without a copy (`BufferAllocator.wrapForeignAllocation`). The batch stays in the
//! registry, alive, until Java frees it.

use arrow_array::{Array, RecordBatch};
use arrow_data::transform::MutableArrayData;
use arrow_data::ArrayData;
use arrow_schema::DataType;
use bkcodec_core::{Error, Result};

/// Longs per column in [`describe`]: null count, then (address, length) of the
/// validity, offsets and data buffers (0, 0 where a column has none).
pub const LONGS_PER_COLUMN: usize = 7;

/// The batch with every column starting at offset 0 (a sliced column copied), so
/// each buffer Java sees starts at the column's first value.
pub fn unsliced(batch: RecordBatch) -> Result<(RecordBatch, Vec<ArrayData>)> {
    let mut datas = Vec::with_capacity(batch.num_columns());
    for column in batch.columns() {
        let data = column.to_data();
        let sliced = data.offset() != 0 || data.nulls().is_some_and(|n| n.offset() != 0);
        let data = if sliced {
            let mut copy = MutableArrayData::new(vec![&data], false, data.len());
            copy.try_extend(0, 0, data.len()).map_err(|e| Error::invalid_argument(e.to_string()))?;
            copy.freeze()
        } else {
            data
        };
        datas.push(data);
    }
    Ok((batch, datas))
}

/// `[rows, then LONGS_PER_COLUMN per column]`.
pub fn describe(rows: usize, datas: &[ArrayData]) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(1 + datas.len() * LONGS_PER_COLUMN);
    out.push(rows as i64);
    for data in datas {
        let (validity_addr, validity_len) = match data.nulls() {
            Some(n) if n.null_count() > 0 => (n.buffer().as_ptr() as i64, n.buffer().len() as i64),
            _ => (0, 0),
        };
        out.push(data.null_count() as i64);
        out.push(validity_addr);
        out.push(validity_len);
        let buffers = data.buffers();
        let buffer = |i: usize| buffers.get(i).map_or((0, 0), |b| (b.as_ptr() as i64, b.len() as i64));
        match data.data_type() {
            DataType::Utf8 | DataType::Binary => {
                let (oa, ol) = buffer(0);
                let (da, dl) = buffer(1);
                out.extend([oa, ol, da, dl]);
            }
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Float64 | DataType::Boolean => {
                let (da, dl) = buffer(0);
                out.extend([0, 0, da, dl]);
            }
            other => return Err(Error::invalid_argument(format!("no Java vector for the Arrow type {other}"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn sliced_columns_are_copied_to_start_at_zero() {
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3), Some(4)]));
        let strs: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), Some("bb"), None, Some("ccc")]));
        let batch = RecordBatch::try_from_iter(vec![("i", ints), ("s", strs)]).unwrap().slice(1, 3);
        let (_, datas) = unsliced(batch).unwrap();
        let longs = describe(3, &datas).unwrap();
        assert_eq!(longs[0], 3);
        assert_eq!(longs[1], 1); // one null among the ints
        assert_eq!(longs[1 + LONGS_PER_COLUMN], 1); // and one among the strings
        let ints = Int64Array::from(datas[0].clone());
        assert_eq!(ints.iter().collect::<Vec<_>>(), vec![None, Some(3), Some(4)]);
        let strs = StringArray::from(datas[1].clone());
        assert_eq!(strs.value_offsets()[0], 0);
        assert_eq!(strs.iter().collect::<Vec<_>>(), vec![Some("bb"), None, Some("ccc")]);
    }
}
