//! Columns kept as runs of equal values, for the message columns whose rows mostly
//! repeat a value: what every message of an entry shares (its producer, publish
//! time, ids), and what almost every row leaves null or false (an error, an
//! ordering key, the null-value flag).
//!
//! A run is stored once and the array is written when the batch is finished, with
//! bulk fills; a column that stayed null throughout becomes a null array whose
//! buffers are zeroed memory, which costs nothing to write.

use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType};
use arrow_array::{
    new_empty_array, new_null_array, ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, PrimitiveArray, StringArray,
};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};

/// The all-null columns of one batch, sharing one zeroed buffer for their values
/// and validity (a batch of messages has a dozen such columns: transaction ids,
/// chunk fields, encryption fields, ...).
pub struct NullColumns {
    rows: usize,
    zeros: Buffer,
}

impl NullColumns {
    pub fn new(rows: usize) -> Self {
        NullColumns { rows, zeros: Buffer::from(arrow_buffer::MutableBuffer::from_len_zeroed((rows + 1) * 8)) }
    }

    fn nulls(&self) -> NullBuffer {
        let bits = BooleanBuffer::new(self.zeros.clone(), 0, self.rows);
        // SAFETY: every bit of the zeroed buffer is 0: all `rows` values are null.
        unsafe { NullBuffer::new_unchecked(bits, self.rows) }
    }

    /// A column of `data_type` with every row null.
    pub fn array(&self, data_type: &DataType) -> ArrayRef {
        let n = self.rows;
        let zero_offsets = || {
            // SAFETY: zero offsets are non-decreasing and within an empty value buffer.
            unsafe { OffsetBuffer::<i32>::new_unchecked(ScalarBuffer::new(self.zeros.clone(), 0, n + 1)) }
        };
        match data_type {
            DataType::Int64 => Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::new(self.zeros.clone(), 0, n), Some(self.nulls()))),
            DataType::Int32 => Arc::new(PrimitiveArray::<Int32Type>::new(ScalarBuffer::new(self.zeros.clone(), 0, n), Some(self.nulls()))),
            DataType::Timestamp(TimeUnit::Millisecond, _) => Arc::new(
                PrimitiveArray::<TimestampMillisecondType>::new(ScalarBuffer::new(self.zeros.clone(), 0, n), Some(self.nulls()))
                    .with_data_type(data_type.clone()),
            ),
            DataType::Boolean => Arc::new(BooleanArray::new(BooleanBuffer::new(self.zeros.clone(), 0, n), Some(self.nulls()))),
            // SAFETY: every value is empty, hence valid UTF-8.
            DataType::Utf8 => Arc::new(unsafe { StringArray::new_unchecked(zero_offsets(), Buffer::from_vec(Vec::<u8>::new()), Some(self.nulls())) }),
            DataType::Binary => Arc::new(BinaryArray::new(zero_offsets(), Buffer::from_vec(Vec::<u8>::new()), Some(self.nulls()))),
            DataType::Map(entries, sorted) => match entries.data_type() {
                DataType::Struct(fields) => {
                    let children = fields.iter().map(|f| new_empty_array(f.data_type())).collect();
                    match arrow_array::StructArray::try_new(fields.clone(), children, None)
                        .and_then(|e| arrow_array::MapArray::try_new(entries.clone(), zero_offsets(), e, Some(self.nulls()), *sorted))
                    {
                        Ok(map) => Arc::new(map),
                        Err(_) => new_null_array(data_type, n),
                    }
                }
                _ => new_null_array(data_type, n),
            },
            _ => new_null_array(data_type, n),
        }
    }
}

/// Appends `n` rows of `value` to `runs`, merging with the last run when equal.
#[inline(always)]
fn push_run<V: PartialEq>(runs: &mut Vec<(V, usize)>, value: V, n: usize) {
    match runs.last_mut() {
        Some((last, count)) if *last == value => *count += n,
        _ => runs.push((value, n)),
    }
}

/// An all-null column of `len` rows, from the pool when it was made for that many.
fn null_column(pool: &NullColumns, data_type: &DataType, len: usize) -> ArrayRef {
    if pool.rows == len {
        pool.array(data_type)
    } else {
        new_null_array(data_type, len)
    }
}

#[inline]
fn append_validity(nulls: &mut NullBufferBuilder, n: usize, valid: bool) {
    if valid {
        nulls.append_n_non_nulls(n);
    } else {
        nulls.append_n_nulls(n);
    }
}

/// A primitive column (integers, timestamps).
pub struct RunColumn<T: ArrowPrimitiveType> {
    runs: Vec<(Option<T::Native>, usize)>,
    len: usize,
}

impl<T: ArrowPrimitiveType> Default for RunColumn<T> {
    fn default() -> Self {
        RunColumn { runs: Vec::new(), len: 0 }
    }
}

impl<T: ArrowPrimitiveType> RunColumn<T> {
    #[inline]
    pub fn push_n(&mut self, value: Option<T::Native>, n: usize) {
        self.len += n;
        push_run(&mut self.runs, value, n);
    }

    #[inline(always)]
    pub fn push(&mut self, value: Option<T::Native>) {
        self.push_n(value, 1);
    }

    /// The array (of `data_type`, for a timestamp's time zone); the column starts
    /// again empty. An all-null column takes its buffers from `nulls`.
    pub fn finish(&mut self, data_type: &DataType, nulls_pool: &NullColumns) -> ArrayRef {
        let runs = std::mem::take(&mut self.runs);
        let len = std::mem::take(&mut self.len);
        if runs.iter().all(|(v, _)| v.is_none()) {
            return null_column(nulls_pool, data_type, len);
        }
        let mut values: Vec<T::Native> = Vec::with_capacity(len);
        let mut nulls = NullBufferBuilder::new(len);
        for (v, n) in runs {
            values.extend(std::iter::repeat_n(v.unwrap_or_default(), n));
            append_validity(&mut nulls, n, v.is_some());
        }
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls.finish()).with_data_type(data_type.clone()))
    }
}

/// A boolean column.
#[derive(Default)]
pub struct RunBools {
    runs: Vec<(Option<bool>, usize)>,
    len: usize,
}

impl RunBools {
    #[inline]
    pub fn push_n(&mut self, value: Option<bool>, n: usize) {
        self.len += n;
        push_run(&mut self.runs, value, n);
    }

    #[inline(always)]
    pub fn push(&mut self, value: Option<bool>) {
        self.push_n(value, 1);
    }

    pub fn finish(&mut self, nulls_pool: &NullColumns) -> ArrayRef {
        let runs = std::mem::take(&mut self.runs);
        let len = std::mem::take(&mut self.len);
        if runs.iter().all(|(v, _)| v.is_none()) {
            return null_column(nulls_pool, &DataType::Boolean, len);
        }
        let mut values = BooleanBufferBuilder::new(len);
        let mut nulls = NullBufferBuilder::new(len);
        for (v, n) in runs {
            values.append_n(n, v.unwrap_or(false));
            append_validity(&mut nulls, n, v.is_some());
        }
        Arc::new(BooleanArray::new(values.finish(), nulls.finish()))
    }
}

/// A string or binary column; run values are kept in one arena.
pub struct RunBytes {
    utf8: bool,
    arena: Vec<u8>,
    /// Each run: its value (a span of the arena) or null, and its length.
    runs: Vec<(Option<(usize, usize)>, usize)>,
    len: usize,
}

impl RunBytes {
    pub fn utf8() -> Self {
        RunBytes { utf8: true, arena: Vec::new(), runs: Vec::new(), len: 0 }
    }

    pub fn binary() -> Self {
        RunBytes { utf8: false, arena: Vec::new(), runs: Vec::new(), len: 0 }
    }

    #[inline(always)]
    fn push_bytes_n(&mut self, value: Option<&[u8]>, n: usize) {
        // The common case, another null after a null, without a call.
        if value.is_none() {
            if let Some((None, count)) = self.runs.last_mut() {
                *count += n;
                self.len += n;
                return;
            }
        }
        self.push_bytes_slow(value, n);
    }

    #[inline(never)]
    fn push_bytes_slow(&mut self, value: Option<&[u8]>, n: usize) {
        self.len += n;
        if let Some((last, count)) = self.runs.last_mut() {
            let same = match (*last, value) {
                (None, None) => true,
                (Some((start, end)), Some(v)) => &self.arena[start..end] == v,
                _ => false,
            };
            if same {
                *count += n;
                return;
            }
        }
        let span = value.map(|v| {
            let start = self.arena.len();
            self.arena.extend_from_slice(v);
            (start, self.arena.len())
        });
        self.runs.push((span, n));
    }

    /// Appends `n` rows of a string (this must be a UTF-8 column).
    #[inline]
    pub fn push_str_n(&mut self, value: Option<&str>, n: usize) {
        debug_assert!(self.utf8);
        self.push_bytes_n(value.map(str::as_bytes), n);
    }

    /// Appends `n` rows of bytes (this must be a binary column).
    #[inline]
    pub fn push_binary_n(&mut self, value: Option<&[u8]>, n: usize) {
        debug_assert!(!self.utf8);
        self.push_bytes_n(value, n);
    }

    pub fn finish(&mut self, nulls_pool: &NullColumns) -> Result<ArrayRef> {
        let runs = std::mem::take(&mut self.runs);
        let arena = std::mem::take(&mut self.arena);
        let len = std::mem::take(&mut self.len);
        let data_type = if self.utf8 { DataType::Utf8 } else { DataType::Binary };
        if runs.iter().all(|(v, _)| v.is_none()) {
            return Ok(null_column(nulls_pool, &data_type, len));
        }
        let total: usize = runs.iter().map(|(v, n)| v.map_or(0, |(s, e)| (e - s) * n)).sum();
        if total > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("{total} bytes are too many for one batch's column")));
        }
        let mut offsets: Vec<i32> = Vec::with_capacity(len + 1);
        let mut values: Vec<u8> = Vec::with_capacity(total);
        let mut nulls = NullBufferBuilder::new(len);
        offsets.push(0);
        for (v, n) in runs {
            let bytes = v.map_or(&[][..], |(s, e)| &arena[s..e]);
            let base = values.len();
            // n copies by doubling: a few large copies rather than n small ones.
            values.extend_from_slice(bytes);
            let total = bytes.len() * n;
            while values.len() - base < total {
                let have = values.len() - base;
                values.extend_from_within(base..base + have.min(total - have));
            }
            let len = bytes.len();
            offsets.extend((1..=n).map(|i| (base + i * len) as i32));
            append_validity(&mut nulls, n, v.is_some());
        }
        // SAFETY: offsets start at 0 and grow by each value's length up to the values'
        // length, which fits in i32 (checked above); a UTF-8 column's values are
        // copies of `&str`s.
        let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
        let values = Buffer::from_vec(values);
        Ok(if self.utf8 {
            // SAFETY: as above; a UTF-8 column's values are copies of `&str`s.
            Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls.finish()) })
        } else {
            Arc::new(BinaryArray::new(offsets, values, nulls.finish()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    #[test]
    fn pooled_null_columns_are_null_arrays_of_their_type() {
        let pool = NullColumns::new(5);
        let map = DataType::Map(
            Arc::new(arrow_schema::Field::new(
                "entries",
                DataType::Struct(arrow_schema::Fields::from(vec![
                    arrow_schema::Field::new("keys", DataType::Utf8, false),
                    arrow_schema::Field::new("values", DataType::Binary, true),
                ])),
                false,
            )),
            false,
        );
        let ts = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        for dt in [DataType::Int64, DataType::Int32, ts, DataType::Boolean, DataType::Utf8, DataType::Binary, map] {
            let a = pool.array(&dt);
            assert_eq!((a.len(), a.null_count(), a.data_type()), (5, 5, &dt));
            a.to_data().validate_full().unwrap();
            assert_eq!(a.to_data(), new_null_array(&dt, 5).to_data(), "{dt}");
        }
    }

    #[test]
    fn runs_become_the_same_arrays_as_row_by_row() {
        let mut c = RunColumn::<Int64Type>::default();
        c.push_n(Some(5), 3);
        c.push(None);
        c.push_n(Some(5), 1);
        c.push(Some(-1));
        let pool = NullColumns::new(6);
        let a = c.finish(&DataType::Int64, &pool);
        assert_eq!(a.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), [Some(5), Some(5), Some(5), None, Some(5), Some(-1)]);
        // All null: a null array of the type, with its time zone.
        c.push_n(None, 4);
        let ts = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        let a = c.finish(&ts, &NullColumns::new(4));
        assert_eq!((a.len(), a.null_count(), a.data_type()), (4, 4, &ts));
        let mut t = RunColumn::<TimestampMillisecondType>::default();
        t.push_n(Some(7), 2);
        assert_eq!(t.finish(&ts, &pool).data_type(), &ts);

        let mut b = RunBools::default();
        b.push_n(Some(false), 2);
        b.push(Some(true));
        b.push(None);
        let a = b.finish(&pool);
        assert_eq!(a.as_boolean().iter().collect::<Vec<_>>(), [Some(false), Some(false), Some(true), None]);
        b.push_n(None, 3);
        assert_eq!(b.finish(&NullColumns::new(3)).null_count(), 3);

        let mut s = RunBytes::utf8();
        s.push_str_n(Some("ab"), 2);
        s.push_str_n(None, 1);
        s.push_str_n(Some("ab"), 1);
        s.push_str_n(Some(""), 2);
        let a = s.finish(&pool).unwrap();
        assert_eq!(
            a.as_string::<i32>().iter().collect::<Vec<_>>(),
            [Some("ab"), Some("ab"), None, Some("ab"), Some(""), Some("")]
        );
        let mut bin = RunBytes::binary();
        bin.push_binary_n(None, 5);
        let a = bin.finish(&NullColumns::new(5)).unwrap();
        assert_eq!((a.len(), a.null_count(), a.data_type()), (5, 5, &DataType::Binary));
    }
}

/// A string column appended to without checking each value: the bytes are checked
/// as UTF-8 once, all together, when the batch is finished, and only a batch with
/// bad bytes somewhere is rebuilt value by value (bad bytes replaced, as Java's
/// decoding does).
#[derive(Default)]
pub struct Utf8Column {
    offsets: Vec<i32>,
    values: Vec<u8>,
    nulls: Option<NullBufferBuilder>,
    len: usize,
}

impl Utf8Column {
    #[inline(always)]
    pub fn push(&mut self, value: Option<&[u8]>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        match value {
            Some(v) => {
                extend_short(&mut self.values, v);
                if let Some(n) = &mut self.nulls {
                    n.append_non_null();
                }
            }
            None => self.nulls_from_here().append_null(),
        }
        // The decoder finishes batches before 2 GiB of values; checked again at finish.
        self.offsets.push(self.values.len() as i32);
        self.len += 1;
    }

    #[cold]
    fn nulls_from_here(&mut self) -> &mut NullBufferBuilder {
        let len = self.len;
        self.nulls.get_or_insert_with(|| {
            let mut n = NullBufferBuilder::new(len + 1);
            n.append_n_non_nulls(len);
            n
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finish(&mut self) -> Result<StringArray> {
        let mut offsets = std::mem::take(&mut self.offsets);
        let mut values = std::mem::take(&mut self.values);
        let nulls = self.nulls.take().and_then(|mut n| n.finish());
        self.len = 0;
        if offsets.is_empty() {
            offsets.push(0);
        }
        if values.len() > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("{} bytes are too many for one batch's column", values.len())));
        }
        if std::str::from_utf8(&values).is_err() || !offsets.iter().all(|&o| is_char_boundary(&values, o as usize)) {
            (offsets, values) = replace_bad_utf8(&offsets, &values);
        }
        // SAFETY: offsets start at 0 and never decrease, the last is the values'
        // length (below 2^31); the values are valid UTF-8 and every offset is a
        // character boundary (checked or made so above).
        let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
        // SAFETY: as for the offsets just above.
        Ok(unsafe { StringArray::new_unchecked(offsets, Buffer::from_vec(values), nulls) })
    }
}

/// `dst.extend_from_slice(src)` without a `memcpy` call for short values (keys,
/// names): two overlapping fixed-size copies.
#[inline(always)]
fn extend_short(dst: &mut Vec<u8>, src: &[u8]) {
    use std::ptr::copy_nonoverlapping as copy;
    let n = src.len();
    if n > 16 {
        dst.extend_from_slice(src);
        return;
    }
    dst.reserve(n);
    // SAFETY: `reserve` made room for `n` bytes past the length; every copy below
    // lies within the first `n` bytes of `src` and of that room, and `src` cannot
    // overlap the vector's spare capacity.
    unsafe {
        let (s, d) = (src.as_ptr(), dst.as_mut_ptr().add(dst.len()));
        match n {
            8..=16 => {
                copy(s, d, 8);
                copy(s.add(n - 8), d.add(n - 8), 8);
            }
            4..=7 => {
                copy(s, d, 4);
                copy(s.add(n - 4), d.add(n - 4), 4);
            }
            _ => {
                for i in 0..n {
                    *d.add(i) = *s.add(i);
                }
            }
        }
        dst.set_len(dst.len() + n);
    }
}

#[inline]
fn is_char_boundary(values: &[u8], at: usize) -> bool {
    // Not a UTF-8 continuation byte (10xxxxxx), or the end.
    values.get(at).is_none_or(|&b| (b as i8) >= -0x40)
}

/// Each value decoded with replacement of bad bytes.
fn replace_bad_utf8(offsets: &[i32], values: &[u8]) -> (Vec<i32>, Vec<u8>) {
    let mut out_offsets = Vec::with_capacity(offsets.len());
    let mut out = Vec::with_capacity(values.len());
    out_offsets.push(0);
    for w in offsets.windows(2) {
        out.extend_from_slice(String::from_utf8_lossy(&values[w[0] as usize..w[1] as usize]).as_bytes());
        out_offsets.push(out.len() as i32);
    }
    (out_offsets, out)
}

/// A `map<string, string>` column (message properties), built like [`Utf8Column`].
pub struct StringMapColumn {
    offsets: Vec<i32>,
    keys: Utf8Column,
    values: Utf8Column,
    nulls: NullBufferBuilder,
}

impl Default for StringMapColumn {
    fn default() -> Self {
        StringMapColumn { offsets: vec![0], keys: Utf8Column::default(), values: Utf8Column::default(), nulls: NullBufferBuilder::new(0) }
    }
}

impl StringMapColumn {
    /// Appends a map (its pairs), or a null one.
    #[inline]
    pub fn push<'a>(&mut self, pairs: Option<impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>>) {
        match pairs {
            Some(pairs) => {
                for (k, v) in pairs {
                    self.keys.push(Some(k));
                    self.values.push(v);
                }
                self.nulls.append_non_null();
            }
            None => self.nulls.append_null(),
        }
        self.offsets.push(self.keys.len() as i32);
    }

    /// Appends `n` empty maps.
    #[inline]
    pub fn push_empty_n(&mut self, n: usize) {
        let pairs = self.keys.len() as i32;
        self.offsets.extend(std::iter::repeat_n(pairs, n));
        self.nulls.append_n_non_nulls(n);
    }

    pub fn finish(&mut self, data_type: &DataType) -> Result<ArrayRef> {
        let DataType::Map(entries, sorted) = data_type else {
            return Err(Error::invalid_argument(format!("a map column cannot be {data_type}")));
        };
        let DataType::Struct(fields) = entries.data_type() else {
            return Err(Error::invalid_argument(format!("a map's entries cannot be {}", entries.data_type())));
        };
        let keys = Arc::new(self.keys.finish()?) as ArrayRef;
        let values = Arc::new(self.values.finish()?) as ArrayRef;
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let entries_array = arrow_array::StructArray::try_new(fields.clone(), vec![keys, values], None)
            .map_err(|e| Error::invalid_argument(format!("map entries: {e}")))?;
        // SAFETY: one offset per map, starting at 0, each the number of pairs so far.
        let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
        let map = arrow_array::MapArray::try_new(entries.clone(), offsets, entries_array, self.nulls.finish(), *sorted)
            .map_err(|e| Error::invalid_argument(format!("map column: {e}")))?;
        Ok(Arc::new(map))
    }
}

#[cfg(test)]
mod string_tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    use arrow_schema::{Field, Fields};

    #[test]
    fn short_values_are_copied_whole() {
        for n in 0..=40 {
            let src: Vec<u8> = (0..n as u8).collect();
            let mut dst = vec![9u8; 3];
            extend_short(&mut dst, &src);
            assert_eq!(&dst[3..], &src[..]);
            assert_eq!(&dst[..3], [9, 9, 9]);
        }
    }

    #[test]
    fn strings_are_checked_once_and_replaced_when_bad() {
        let mut c = Utf8Column::default();
        c.push(Some(b"ab"));
        c.push(None);
        c.push(Some("é".as_bytes()));
        let a = c.finish().unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), [Some("ab"), None, Some("é")]);
        // A value cut inside a character, and a bad byte: replaced, the others kept.
        let e = "é".as_bytes();
        c.push(Some(&e[..1]));
        c.push(Some(&e[1..]));
        c.push(Some(b"ok\xff"));
        c.push(Some(b"fine"));
        let a = c.finish().unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), [Some("\u{fffd}"), Some("\u{fffd}"), Some("ok\u{fffd}"), Some("fine")]);
        assert_eq!(c.finish().unwrap().len(), 0);
    }

    #[test]
    fn maps_of_strings() {
        let entries = Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![Field::new("keys", DataType::Utf8, false), Field::new("values", DataType::Utf8, true)])),
            false,
        );
        let dt = DataType::Map(Arc::new(entries), false);
        let mut m = StringMapColumn::default();
        m.push(Some([(&b"a"[..], Some(&b"1"[..])), (&b"b"[..], None)].into_iter()));
        m.push(None::<std::iter::Empty<(&[u8], Option<&[u8]>)>>);
        m.push(Some(std::iter::empty()));
        let a = m.finish(&dt).unwrap();
        let map = a.as_map();
        assert_eq!((map.len(), map.null_count(), map.value_length(0), map.value_length(2)), (3, 1, 2, 0));
        assert_eq!(map.keys().as_string::<i32>().value(1), "b");
        assert!(map.values().is_null(1));
        assert_eq!(a.data_type(), &dt);
    }
}
