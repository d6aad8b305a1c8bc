//! A nullable primitive column for per-row hot loops: a plain `Vec` push per value
//! (inlined, unlike the general Arrow builders' append), validity tracked only once
//! a null shows up.
//!
//! Hot loops that frame many rows before knowing whether to keep them write values
//! straight into [slots](PrimitiveColumn::slots) past the column's end and append
//! them afterwards with one call, or leave them to be overwritten.

use std::mem::MaybeUninit;

use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{NullBufferBuilder, ScalarBuffer};

pub struct PrimitiveColumn<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: NullBufferBuilder,
    /// Rows to reserve when the column starts filling again after a finish.
    capacity: usize,
}

impl<T: ArrowPrimitiveType> PrimitiveColumn<T> {
    pub fn with_capacity(rows: usize) -> Self {
        PrimitiveColumn { values: Vec::with_capacity(rows), nulls: NullBufferBuilder::new(rows), capacity: rows }
    }

    #[inline(always)]
    pub fn push(&mut self, value: T::Native) {
        if self.values.len() == self.values.capacity() {
            self.grow(1);
        }
        self.values.push(value);
        self.nulls.append_non_null();
    }

    /// Appends non-null values; one capacity check and one validity update for all.
    #[inline]
    pub fn extend(&mut self, values: impl ExactSizeIterator<Item = T::Native>) {
        let n = values.len();
        self.reserve(n);
        self.values.extend(values);
        self.nulls.append_n_non_nulls(n);
    }

    #[inline]
    pub fn push_null(&mut self) {
        if self.values.len() == self.values.capacity() {
            self.grow(1);
        }
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

    /// Rows to reserve when the column next starts filling after a finish.
    pub fn set_capacity(&mut self, rows: usize) {
        self.capacity = rows;
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Room for `additional` more values; after a finish, the first call reserves
    /// the capacity the column was made with.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if self.values.capacity() - self.values.len() < additional {
            self.grow(additional);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        self.values.reserve(additional.max(self.capacity));
    }

    /// Values that fit before the column has to grow.
    #[inline]
    pub fn room(&self) -> usize {
        self.values.capacity() - self.values.len()
    }

    /// The `n` slots past the column's end (reserving them if needed), to be
    /// written in place and then appended with [`append_slots`](Self::append_slots).
    /// Appending anything else first abandons them.
    #[inline]
    pub fn slots(&mut self, n: usize) -> &mut [MaybeUninit<T::Native>] {
        self.reserve(n);
        &mut self.values.spare_capacity_mut()[..n]
    }

    /// Appends the first `n` values written into [`slots`](Self::slots), all non-null.
    ///
    /// # Safety
    /// The first `n` slots of the last `slots` call have been written, and nothing
    /// has been appended or finished since.
    #[inline]
    pub unsafe fn append_slots(&mut self, n: usize) {
        debug_assert!(self.values.len() + n <= self.values.capacity());
        // SAFETY: the caller wrote these `n` slots, which lie within the capacity.
        unsafe { self.values.set_len(self.values.len() + n) };
        self.nulls.append_n_non_nulls(n);
    }

    /// The array so far; the column is left empty, its buffer handed to the array
    /// (the next row reserves a new one).
    pub fn finish(&mut self) -> PrimitiveArray<T> {
        // The next batch likely holds as many rows: reserved at once, it is not
        // copied over as it grows.
        self.capacity = self.capacity.max(self.values.len());
        let values = trimmed(std::mem::take(&mut self.values));
        PrimitiveArray::new(ScalarBuffer::from(values), self.nulls.finish())
    }
}

/// `v`, its spare capacity given back when that is most of it: an array keeps its
/// buffer's whole allocation alive, and batches kept together (`read_all` of small
/// batches, a file's last batch) must not each keep a full batch's reservation.
pub(crate) fn trimmed<T>(mut v: Vec<T>) -> Vec<T> {
    let spare = (v.capacity() - v.len()) * std::mem::size_of::<T>();
    if spare > 64 << 10 && v.len() < v.capacity() / 8 {
        v.shrink_to_fit();
    }
    v
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

    #[test]
    fn slots_are_appended_or_abandoned() {
        let mut c = PrimitiveColumn::<Int64Type>::with_capacity(0);
        c.push_null();
        let s = c.slots(4);
        for (k, slot) in s.iter_mut().enumerate() {
            slot.write(10 + k as i64);
        }
        // SAFETY: all four slots were written just above.
        unsafe { c.append_slots(3) };
        // Slots written but not appended are overwritten by the next push.
        c.slots(2)[0].write(99);
        c.push(4);
        let a = c.finish();
        assert_eq!(a.iter().collect::<Vec<_>>(), [None, Some(10), Some(11), Some(12), Some(4)]);
        // After a finish the column reserves its capacity afresh.
        c.extend([1, 2].into_iter());
        assert_eq!(c.finish().values().as_ref(), [1, 2]);
    }
}
