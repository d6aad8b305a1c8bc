//! A nullable primitive column for per-row hot loops: a plain `Vec` push per value
//! (inlined, unlike the general Arrow builders' append), validity tracked only once
//! a null shows up.

use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{NullBufferBuilder, ScalarBuffer};

pub struct PrimitiveColumn<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: NullBufferBuilder,
}

impl<T: ArrowPrimitiveType> PrimitiveColumn<T> {
    pub fn with_capacity(rows: usize) -> Self {
        PrimitiveColumn { values: Vec::with_capacity(rows), nulls: NullBufferBuilder::new(rows) }
    }

    #[inline(always)]
    pub fn push(&mut self, value: T::Native) {
        self.values.push(value);
        self.nulls.append_non_null();
    }

    /// Appends non-null values; one capacity check and one validity update for all.
    #[inline]
    pub fn extend(&mut self, values: impl ExactSizeIterator<Item = T::Native>) {
        let n = values.len();
        self.values.extend(values);
        self.nulls.append_n_non_nulls(n);
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.values.push(T::Native::default());
        self.nulls.append_null();
    }

    #[inline]
    pub fn push_option(&mut self, value: Option<T::Native>) {
        match value {
            Some(v) => self.push(v),
            None => self.push_null(),
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The array so far; the column is left empty (its capacity kept for the next batch).
    pub fn finish(&mut self) -> PrimitiveArray<T> {
        let capacity = self.values.capacity();
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(capacity));
        PrimitiveArray::new(ScalarBuffer::from(values), self.nulls.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    #[test]
    fn values_and_nulls() {
        let mut c = PrimitiveColumn::<Int64Type>::with_capacity(2);
        c.push(5);
        c.push_null();
        c.push_option(Some(-1));
        c.extend([7, 8].into_iter());
        assert_eq!(c.len(), 5);
        let a = c.finish();
        assert_eq!(a.iter().collect::<Vec<_>>(), [Some(5), None, Some(-1), Some(7), Some(8)]);
        assert!(c.is_empty());
        c.push(1);
        let b = c.finish();
        assert_eq!((b.len(), b.null_count()), (1, 0));
    }
}
