//! The payload column: copied (`binary`), zero-copy views (`binary_view`), or absent.
//!
//! Views point into the buffers the entries were read from. The caller registers
//! those buffers as [view sources](PayloadColumnBuilder::set_view_sources); a payload
//! found inside one becomes a view into it (the buffer is shared, not copied), and
//! one found in none of them (bytes from a Python list, say) is copied into a buffer
//! the builder owns. Payloads of 12 bytes or fewer are stored inline, as Arrow requires.

use std::sync::Arc;

use arrow_array::builder::make_view;
use arrow_array::{ArrayRef, BinaryArray, BinaryViewArray};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_data::MAX_INLINE_VIEW_LEN;
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// How payloads are put into the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadMode {
    /// A `binary` column holding a copy of each payload.
    Binary,
    /// A `binary_view` column viewing the input's buffers without copying.
    BinaryView,
    /// No payload column.
    None,
    /// No payload: `payload_size` and `payload_hash` (XXH3-64, a signed bit
    /// pattern) instead, computed where the bytes lie (an inventory's columns).
    Hash,
}

impl PayloadMode {
    /// The modes that give a payload column or none (what the Spark sources take; the
    /// hash columns are an inventory's).
    pub const ROW_MODES: [PayloadMode; 3] = [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None];

    pub const fn name(self) -> &'static str {
        match self {
            PayloadMode::Binary => "binary",
            PayloadMode::BinaryView => "binary_view",
            PayloadMode::None => "none",
            PayloadMode::Hash => "hash",
        }
    }

    /// `"binary"`, `"binary_view"` or `"none"`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "binary" => Ok(PayloadMode::Binary),
            "binary_view" => Ok(PayloadMode::BinaryView),
            "none" => Ok(PayloadMode::None),
            "hash" => Ok(PayloadMode::Hash),
            _ => Err(Error::invalid_argument(format!(
                "unknown payload mode {name:?} (expected \"binary\", \"binary_view\", \"none\" or \"hash\")"
            ))),
        }
    }

    /// The column's Arrow type, or `None` when there is no column.
    pub fn data_type(self) -> Option<DataType> {
        match self {
            PayloadMode::Binary => Some(DataType::Binary),
            PayloadMode::BinaryView => Some(DataType::BinaryView),
            PayloadMode::None | PayloadMode::Hash => None,
        }
    }
}

/// Arrow's C++ implementation reads view offsets and buffer sizes as signed 32-bit
/// values, and `binary` offsets are i32: neither may pass this.
const MAX_ARROW_I32: usize = i32::MAX as usize;

pub(crate) enum PayloadColumnBuilder {
    Binary(BinaryColumn),
    View(ViewColumnBuilder),
    None,
}

impl PayloadColumnBuilder {
    pub(crate) fn new(mode: PayloadMode, rows: usize, bytes: usize) -> Self {
        match mode {
            PayloadMode::Binary => PayloadColumnBuilder::Binary(BinaryColumn::with_capacity(rows, bytes.min(MAX_ARROW_I32))),
            PayloadMode::BinaryView => PayloadColumnBuilder::View(ViewColumnBuilder::with_capacity(rows)),
            PayloadMode::None | PayloadMode::Hash => PayloadColumnBuilder::None,
        }
    }

    #[inline]
    pub(crate) fn append(&mut self, payload: &[u8]) -> Result<()> {
        match self {
            PayloadColumnBuilder::Binary(b) => {
                if !b.has_room(payload.len()) {
                    return Err(Error::invalid_argument(
                        "payloads add up to more than 2 GiB, the limit of a binary column; \
                         use the binary_view payload mode or smaller batches",
                    ));
                }
                b.append(payload)
            }
            PayloadColumnBuilder::View(v) => {
                v.append(payload);
                Ok(())
            }
            PayloadColumnBuilder::None => Ok(()),
        }
    }

    /// Whether `bytes` more payload bytes fit the column.
    #[inline]
    pub(crate) fn has_room(&self, bytes: usize) -> bool {
        match self {
            PayloadColumnBuilder::Binary(b) => b.has_room(bytes),
            _ => true,
        }
    }

    /// Appends every payload once [`has_room`](Self::has_room) has said they fit;
    /// when memory for them cannot be had, appends none and says so.
    #[inline]
    pub(crate) fn append_all<'p>(&mut self, payloads: impl ExactSizeIterator<Item = &'p [u8]> + Clone) -> Result<()> {
        match self {
            PayloadColumnBuilder::Binary(b) => return b.append_all(payloads),
            PayloadColumnBuilder::View(v) => v.append_all(payloads),
            PayloadColumnBuilder::None => {}
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn append_null(&mut self) {
        match self {
            PayloadColumnBuilder::Binary(b) => b.append_null(),
            PayloadColumnBuilder::View(v) => v.append_null(),
            PayloadColumnBuilder::None => {}
        }
    }

    pub(crate) fn set_view_sources(&mut self, buffers: &[Buffer]) {
        if let PayloadColumnBuilder::View(v) = self {
            v.set_sources(buffers);
        }
    }

    pub(crate) fn finish(&mut self) -> Result<Option<ArrayRef>> {
        Ok(match self {
            PayloadColumnBuilder::Binary(b) => Some(Arc::new(b.finish()?)),
            PayloadColumnBuilder::View(v) => Some(Arc::new(v.finish()?)),
            PayloadColumnBuilder::None => None,
        })
    }
}

/// A `binary` column: one value buffer the payloads are copied into, and offsets.
pub(crate) struct BinaryColumn {
    /// Starts with the 0 of the first value; one more entry per row.
    offsets: Vec<i32>,
    values: Vec<u8>,
    nulls: NullBufferBuilder,
    /// Capacities to reserve when the column fills again after a finish.
    rows_capacity: usize,
    bytes_capacity: usize,
    /// Whether payloads are written past the caches (see [`STREAMING_MIN_BYTES`]).
    streaming: bool,
}

/// A `binary` column reserved this large is written a whole 64-byte line at a time
/// with non-temporal stores ([`StreamingWriter`]): it leaves the caches before anyone
/// reads it anyway, and writing it through them first reads every line of it from
/// memory. Below it, ordinary stores win: the column still fits the caches. The
/// crossover, measured on an AMD EPYC (32 MiB L3), was between 6 and 12 MB of
/// payloads for `decode_entries` (300-byte and 1 KiB payloads) and for
/// `decode_messages` (100-byte messages): at 12 MB, 75 to 58 ns per 1 KiB entry; at
/// 6 MB, 34.6 against 36.3 ns per message without.
const STREAMING_MIN_BYTES: usize = 8 << 20;

impl BinaryColumn {
    fn with_capacity(rows: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        // A hint from the caller: memory it cannot have is left to grow into.
        let mut values = Vec::new();
        let bytes = if values.try_reserve_exact(bytes).is_ok() { bytes } else { 0 };
        BinaryColumn {
            offsets,
            values,
            nulls: NullBufferBuilder::new(rows),
            rows_capacity: rows,
            bytes_capacity: bytes,
            streaming: bytes >= STREAMING_MIN_BYTES,
        }
    }

    #[inline]
    fn has_room(&self, bytes: usize) -> bool {
        bytes <= MAX_ARROW_I32 - self.values.len()
    }

    /// Room for `rows` more offsets and `bytes` more values. The values grow by
    /// doubling, never past what a column can hold, and fallibly: payload sizes come
    /// from the data, and running out of memory is an error, not an abort.
    #[inline]
    fn reserve(&mut self, rows: usize, bytes: usize) -> Result<()> {
        if self.offsets.capacity() - self.offsets.len() < rows {
            self.offsets.reserve(rows.max(self.rows_capacity));
        }
        let (len, capacity) = (self.values.len(), self.values.capacity());
        if capacity - len < bytes {
            let need = len.saturating_add(bytes.max(self.bytes_capacity));
            let target = need.max(capacity.saturating_mul(2).min(MAX_ARROW_I32));
            if self.values.try_reserve_exact(target - len).is_err() && self.values.try_reserve_exact(bytes).is_err() {
                return Err(Error::invalid_argument(format!(
                    "no memory for {} bytes of payloads in one batch",
                    len.saturating_add(bytes)
                )));
            }
        }
        Ok(())
    }

    /// Appends a payload [`has_room`](Self::has_room) said fits.
    #[inline]
    fn append(&mut self, payload: &[u8]) -> Result<()> {
        self.reserve(1, payload.len())?;
        self.values.extend_from_slice(payload);
        // Fits: the values stay within MAX_ARROW_I32.
        self.offsets.push(self.values.len() as i32);
        self.nulls.append_non_null();
        Ok(())
    }

    /// Appends payloads which [`has_room`](Self::has_room) said fit (or, when
    /// memory for them cannot be had, none of them).
    #[inline]
    fn append_all<'p>(&mut self, payloads: impl ExactSizeIterator<Item = &'p [u8]> + Clone) -> Result<()> {
        let count = payloads.len();
        let bytes: usize = payloads.clone().map(<[u8]>::len).sum();
        self.reserve(count, bytes)?;
        let mut end = self.values.len();
        let base = self.values.as_mut_ptr();
        let offsets = &mut self.offsets.spare_capacity_mut()[..count];
        if self.streaming {
            // SAFETY: `reserve` made room for `bytes`, the payloads' total, past the
            // values' old length, where the writer starts; it writes them in order.
            let mut writer = unsafe { StreamingWriter::new(base.add(end)) };
            for (offset, p) in offsets.iter_mut().zip(payloads) {
                // SAFETY: as just above.
                unsafe { writer.write(p) };
                end += p.len();
                // Fits: the values stay within MAX_ARROW_I32.
                offset.write(end as i32);
            }
            // SAFETY: as just above.
            unsafe { writer.finish() };
        } else {
            for (offset, p) in offsets.iter_mut().zip(payloads) {
                // SAFETY: `reserve` made room for `bytes`, the payloads' total, past the
                // values' old length; `end` stays within that.
                unsafe { copy_payload(p, base.add(end)) };
                end += p.len();
                // Fits: the values stay within MAX_ARROW_I32.
                offset.write(end as i32);
            }
        }
        // SAFETY: the bytes up to `end` and one offset per payload were written above.
        unsafe {
            self.values.set_len(end);
            self.offsets.set_len(self.offsets.len() + count);
        }
        self.nulls.append_n_non_nulls(count);
        Ok(())
    }

    fn append_null(&mut self) {
        // No values: only an offset, which cannot fail to fit.
        let _ = self.reserve(1, 0);
        self.offsets.push(self.values.len() as i32);
        self.nulls.append_null();
    }

    fn finish(&mut self) -> Result<BinaryArray> {
        if self.streaming {
            // Non-temporal stores are weakly ordered: make them visible before the
            // array is handed to another thread.
            store_fence();
        }
        let offsets = crate::arrow::primitive_column::trimmed(std::mem::replace(&mut self.offsets, vec![0]));
        let values = crate::arrow::primitive_column::trimmed(std::mem::take(&mut self.values));
        // SAFETY: the offsets start at 0 and each is the value buffer's length after
        // an append, so they never decrease.
        let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
        BinaryArray::try_new(offsets, Buffer::from_vec(values), self.nulls.finish())
            .map_err(|e| Error::invalid_argument(format!("building the payload column: {e}")))
    }
}

/// Copies a payload to `dst`: without a `memcpy` call for the short ones (a call
/// costs more than the copy up to 64 bytes), as two overlapping fixed-size copies
/// (three single bytes below four).
///
/// # Safety
/// `dst` is valid for writing `src.len()` bytes and does not overlap `src`.
#[inline(always)]
unsafe fn copy_payload(src: &[u8], dst: *mut u8) {
    use std::ptr::copy_nonoverlapping as copy;
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY: every copy below lies within the first `n` bytes of `src` and `dst`,
    // which the caller guarantees are valid and apart.
    unsafe {
        match n {
            32..=64 => {
                copy(s, dst, 32);
                copy(s.add(n - 32), dst.add(n - 32), 32);
            }
            16..=31 => {
                copy(s, dst, 16);
                copy(s.add(n - 16), dst.add(n - 16), 16);
            }
            8..=15 => {
                copy(s, dst, 8);
                copy(s.add(n - 8), dst.add(n - 8), 8);
            }
            4..=7 => {
                copy(s, dst, 4);
                copy(s.add(n - 4), dst.add(n - 4), 4);
            }
            1..=3 => {
                *dst = *s;
                *dst.add(n / 2) = *s.add(n / 2);
                *dst.add(n - 1) = *s.add(n - 1);
            }
            0 => {}
            _ => copy(s, dst, n),
        }
    }
}

const LINE: usize = 64;

/// A cache line's bytes, aligned as one.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE]);

/// Writes bytes one after another from a start address, each whole 64-byte line of
/// the destination with non-temporal stores, so no line is read from memory first.
/// The bytes before the first line boundary, and those of the last line when it is
/// not whole, are written with ordinary stores (a line is never written both ways
/// at once, which would cost a partial write to memory); bytes of a line not yet
/// whole wait in `line`. A [`store_fence`] must follow before another thread reads.
struct StreamingWriter {
    /// Where the next byte goes (while `head` is not 0), else the start of the line
    /// being filled.
    at: *mut u8,
    /// Bytes left to write with ordinary stores before `at` is a line boundary.
    head: usize,
    line: Line,
    filled: usize,
}

impl StreamingWriter {
    /// # Safety
    /// `dst` is valid for writing every byte then given to [`write`](Self::write).
    unsafe fn new(dst: *mut u8) -> Self {
        StreamingWriter { at: dst, head: (dst as usize).wrapping_neg() & (LINE - 1), line: Line([0; LINE]), filled: 0 }
    }

    /// # Safety
    /// The destination has room for `src` after the bytes written so far, and does
    /// not overlap it.
    #[inline(always)]
    unsafe fn write(&mut self, mut src: &[u8]) {
        // SAFETY: every store below is within the bytes the caller said are valid:
        // `at` plus `filled` (or the head written so far) is where `src` goes.
        unsafe {
            if self.head != 0 {
                let n = self.head.min(src.len());
                copy_payload(&src[..n], self.at);
                (self.at, self.head, src) = (self.at.add(n), self.head - n, &src[n..]);
                if src.is_empty() {
                    return;
                }
            }
            if self.filled != 0 {
                // Lengths below a line, without a `memcpy` call (one a payload,
                // measured: 12% of a 64-byte entry's decode).
                let n = (LINE - self.filled).min(src.len());
                copy_payload(&src[..n], self.line.0.as_mut_ptr().add(self.filled));
                (self.filled, src) = (self.filled + n, &src[n..]);
                if self.filled < LINE {
                    return;
                }
                stream_line(self.line.0.as_ptr(), self.at);
                (self.at, self.filled) = (self.at.add(LINE), 0);
            }
            while src.len() >= LINE {
                stream_line(src.as_ptr(), self.at);
                (self.at, src) = (self.at.add(LINE), &src[LINE..]);
            }
            copy_payload(src, self.line.0.as_mut_ptr());
            self.filled = src.len();
        }
    }

    /// Writes the bytes of a line that is not whole.
    ///
    /// # Safety
    /// As [`write`](Self::write)'s.
    unsafe fn finish(self) {
        // SAFETY: those bytes were given to `write`, with room for them at `at`.
        unsafe { std::ptr::copy_nonoverlapping(self.line.0.as_ptr(), self.at, self.filled) };
    }
}

/// Stores the 64 bytes at `src` to the line at `dst` with non-temporal stores
/// (SSE2, part of x86-64; ordinary stores elsewhere).
///
/// # Safety
/// `src` is valid for reading 64 bytes, `dst` for writing them, 64-byte aligned.
#[inline(always)]
unsafe fn stream_line(src: *const u8, dst: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as the caller's; each target is 16-byte aligned.
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        for i in (0..LINE).step_by(16) {
            _mm_stream_si128(dst.add(i).cast::<__m128i>(), _mm_loadu_si128(src.add(i).cast::<__m128i>()));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as the caller's.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, LINE)
    };
}

/// Orders the non-temporal stores of a [`StreamingWriter`] before later stores.
#[inline]
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// A registered input buffer and the slice of it currently published as an output
/// data buffer (whole buffers up to 2 GiB; windows of larger ones).
struct ViewSource {
    buffer: Buffer,
    window: Option<Window>,
}

#[derive(Clone, Copy)]
struct Window {
    index: u32,
    start: usize,
    len: usize,
}

/// The published window the last viewed payload fell in, by address: most payloads
/// fall in the same one as the payload before them.
#[derive(Clone, Copy)]
struct HotWindow {
    base: usize,
    len: usize,
    index: u32,
}

impl HotWindow {
    const NONE: HotWindow = HotWindow { base: 0, len: 0, index: 0 };

    /// Offset of `payload` in the window, when it lies wholly within it.
    #[inline(always)]
    fn offset_of(&self, payload: &[u8]) -> Option<u32> {
        let offset = (payload.as_ptr() as usize).wrapping_sub(self.base);
        // A window is at most MAX_ARROW_I32 long, so the offset fits.
        (offset <= self.len && payload.len() <= self.len - offset).then_some(offset as u32)
    }
}

/// Builds a `BinaryViewArray` whose long values point into shared or owned buffers.
pub(crate) struct ViewColumnBuilder {
    views: Vec<u128>,
    nulls: NullBufferBuilder,
    rows_capacity: usize,
    /// Output data buffers; `None` marks the owned block still being filled.
    buffers: Vec<Option<Buffer>>,
    sources: Vec<ViewSource>,
    last_source: usize,
    hot: HotWindow,
    owned: Vec<u8>,
    owned_index: Option<u32>,
    /// Largest data buffer to publish: [`MAX_ARROW_I32`] (smaller in tests).
    buffer_limit: usize,
}

impl ViewColumnBuilder {
    fn with_capacity(rows: usize) -> Self {
        ViewColumnBuilder {
            views: Vec::with_capacity(rows),
            nulls: NullBufferBuilder::new(rows),
            rows_capacity: rows,
            buffers: Vec::new(),
            sources: Vec::new(),
            last_source: 0,
            hot: HotWindow::NONE,
            owned: Vec::new(),
            owned_index: None,
            buffer_limit: MAX_ARROW_I32,
        }
    }

    /// Later payloads are looked for in these buffers (replacing earlier sources;
    /// views already made keep their buffers).
    fn set_sources(&mut self, buffers: &[Buffer]) {
        self.sources = buffers.iter().map(|b| ViewSource { buffer: b.clone(), window: None }).collect();
        self.last_source = 0;
        self.hot = HotWindow::NONE;
    }

    #[inline]
    fn reserve(&mut self, rows: usize) {
        if self.views.capacity() - self.views.len() < rows {
            self.views.reserve(rows.max(self.rows_capacity));
        }
    }

    #[inline(always)]
    fn view(&mut self, payload: &[u8]) -> u128 {
        if payload.len() <= MAX_INLINE_VIEW_LEN as usize {
            return make_view(payload, 0, 0);
        }
        let (index, offset) = match self.hot.offset_of(payload) {
            Some(offset) => (self.hot.index, offset),
            None => self.place_searching(payload),
        };
        make_view(payload, index, offset)
    }

    #[inline]
    fn append(&mut self, payload: &[u8]) {
        self.reserve(1);
        let view = self.view(payload);
        self.views.push(view);
        self.nulls.append_non_null();
    }

    #[inline]
    fn append_all<'p>(&mut self, payloads: impl ExactSizeIterator<Item = &'p [u8]>) {
        let count = payloads.len();
        self.reserve(count);
        for p in payloads {
            let view = self.view(p);
            self.views.push(view);
        }
        self.nulls.append_n_non_nulls(count);
    }

    fn append_null(&mut self) {
        self.reserve(1);
        self.views.push(0);
        self.nulls.append_null();
    }

    /// Buffer index and offset for a long payload outside the hot window.
    #[inline(never)]
    fn place_searching(&mut self, payload: &[u8]) -> (u32, u32) {
        let n = self.sources.len();
        for k in 0..n {
            let i = (self.last_source + k) % n;
            if let Some(offset) = offset_within(&self.sources[i].buffer, payload) {
                self.last_source = i;
                return self.view_into_source(i, offset, payload.len());
            }
        }
        self.copy_into_owned(payload)
    }

    fn view_into_source(&mut self, source: usize, offset: usize, len: usize) -> (u32, u32) {
        if let Some(w) = self.sources[source].window {
            if offset >= w.start && offset + len <= w.start + w.len {
                self.make_hot(source, w);
                return (w.index, (offset - w.start) as u32);
            }
        }
        // Publish a new window: the whole buffer when it fits, else a slice from here.
        let buffer = &self.sources[source].buffer;
        let (start, window_len) = if buffer.len() <= self.buffer_limit {
            (0, buffer.len())
        } else {
            (offset, (buffer.len() - offset).min(self.buffer_limit))
        };
        if len > window_len - (offset - start) {
            // A single payload over 2 GiB cannot be a view; copying it cannot help either.
            return self.push_dedicated(buffer.slice_with_length(offset, len));
        }
        let index = self.buffers.len() as u32;
        self.buffers.push(Some(buffer.slice_with_length(start, window_len)));
        let w = Window { index, start, len: window_len };
        self.sources[source].window = Some(w);
        self.make_hot(source, w);
        (index, (offset - start) as u32)
    }

    fn make_hot(&mut self, source: usize, w: Window) {
        let base = self.sources[source].buffer.as_ptr() as usize + w.start;
        self.hot = HotWindow { base, len: w.len, index: w.index };
    }

    fn copy_into_owned(&mut self, payload: &[u8]) -> (u32, u32) {
        if self.owned.len() + payload.len() > self.buffer_limit {
            self.seal_owned();
        }
        if payload.len() > self.buffer_limit {
            return self.push_dedicated(Buffer::from_slice_ref(payload));
        }
        let index = match self.owned_index {
            Some(i) => i,
            None => {
                let i = self.buffers.len() as u32;
                self.buffers.push(None);
                self.owned_index = Some(i);
                i
            }
        };
        let offset = self.owned.len() as u32;
        self.owned.extend_from_slice(payload);
        (index, offset)
    }

    /// A payload too large for any 2 GiB window gets a buffer of its own at offset 0.
    fn push_dedicated(&mut self, buffer: Buffer) -> (u32, u32) {
        let index = self.buffers.len() as u32;
        self.buffers.push(Some(buffer));
        (index, 0)
    }

    fn seal_owned(&mut self) {
        if let Some(i) = self.owned_index.take() {
            self.buffers[i as usize] = Some(Buffer::from_vec(std::mem::take(&mut self.owned)));
        }
    }

    fn finish(&mut self) -> Result<BinaryViewArray> {
        self.seal_owned();
        // Every slot is filled now: the one owned block still open was just sealed.
        let buffers: Vec<Buffer> = std::mem::take(&mut self.buffers).into_iter().flatten().collect();
        for s in &mut self.sources {
            s.window = None;
        }
        self.hot = HotWindow::NONE;
        let views = ScalarBuffer::from(crate::arrow::primitive_column::trimmed(std::mem::take(&mut self.views)));
        let nulls = self.nulls.finish();
        #[cfg(debug_assertions)]
        BinaryViewArray::try_new(views.clone(), buffers.clone(), nulls.clone())
            .map_err(|e| Error::invalid_argument(format!("building the payload view column: {e}")))?;
        // SAFETY: every view comes from `make_view` over the payload's own bytes:
        // inline ones (12 bytes or fewer) are zero-padded, long ones carry their
        // first four bytes and a buffer index and offset under which the payload
        // lies wholly inside that buffer (a window checked by `offset_within` and
        // `HotWindow::offset_of`, a copy in the owned block, or a dedicated buffer).
        // Null rows have the all-zero view. The index is the buffer's position in
        // `buffers`, none of which is dropped by the flatten above.
        Ok(unsafe { BinaryViewArray::new_unchecked(views, buffers, nulls) })
    }
}

/// Where `part` starts inside `buffer`, if it lies wholly within it. Compares
/// addresses only; nothing is dereferenced.
#[inline]
fn offset_within(buffer: &Buffer, part: &[u8]) -> Option<usize> {
    let base = buffer.as_ptr() as usize;
    let addr = part.as_ptr() as usize;
    let offset = addr.checked_sub(base)?;
    (offset.checked_add(part.len())? <= buffer.len()).then_some(offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    /// Every length up to past the inline copies, at every source alignment of a
    /// word and target alignment of a vector store, leaves exactly the payload and
    /// touches nothing around it.
    #[test]
    fn short_copies_match_the_source_exactly() {
        let source: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..=130 {
            for from in 0..8 {
                for to in 0..16 {
                    let src = &source[from..from + len];
                    let mut target = vec![0xEEu8; 150];
                    // SAFETY: `target` has room for `len` bytes at `to`, apart from `source`.
                    unsafe { copy_payload(src, target.as_mut_ptr().add(to)) };
                    assert_eq!(&target[to..to + len], src, "len {len} from {from} to {to}");
                    assert!(target[..to].iter().chain(&target[to + len..]).all(|&b| b == 0xEE), "len {len}");
                }
            }
        }
    }

    /// Runs of writes of every kind of length (empty, within a line, across lines,
    /// many lines), from every alignment of the start to a line, leave exactly the
    /// bytes written, in order, and touch nothing around them.
    #[test]
    fn streaming_writes_leave_exactly_what_was_written() {
        let mut rng = crate::test_rng::Rng(0x57_2E_A3);
        for start in 0..LINE + 1 {
            for _ in 0..20 {
                let pieces: Vec<Vec<u8>> = (0..rng.below(12)).map(|_| {
                    let len = [0, 1, 5, 17, 63, 64, 65, 100, 128, 300][rng.below(10)];
                    rng.bytes(len)
                }).collect();
                let want: Vec<u8> = pieces.concat();
                // A line-aligned target, so `start` is the alignment of the first byte.
                let mut target = vec![Line([0xEE; LINE]); (start + want.len()) / LINE + 2];
                // SAFETY: the target is one allocation of whole lines.
                let bytes = unsafe { std::slice::from_raw_parts_mut(target.as_mut_ptr().cast::<u8>(), target.len() * LINE) };
                // SAFETY: `bytes` has room for all the pieces after `start`, apart from them.
                unsafe {
                    let mut w = StreamingWriter::new(bytes.as_mut_ptr().add(start));
                    for p in &pieces {
                        w.write(p);
                    }
                    w.finish();
                }
                store_fence();
                let end = start + want.len();
                assert_eq!(&bytes[start..end], &want[..], "from {start}, pieces {:?}", pieces.iter().map(Vec::len).collect::<Vec<_>>());
                assert!(bytes[..start].iter().chain(&bytes[end..]).all(|&b| b == 0xEE), "from {start}");
            }
        }
    }

    /// Payloads appended a group at a time and one at a time, with nulls between,
    /// give the same column, with valid offsets.
    #[test]
    fn binary_groups_equal_single_appends() {
        let mut rng = crate::test_rng::Rng(0xB1_7A_27);
        let payloads: Vec<Vec<u8>> = (0..300).map(|_| {
            let len = [0, 1, 7, 12, 13, 31, 32, 33, 64, 65, 100, 1000][rng.below(12)];
            rng.bytes(len)
        }).collect();
        let mut grouped = BinaryColumn::with_capacity(0, 0);
        let mut single = BinaryColumn::with_capacity(10, 10);
        let mut streamed = BinaryColumn::with_capacity(0, STREAMING_MIN_BYTES);
        assert!(streamed.streaming && !grouped.streaming);
        let mut at = 0;
        while at < payloads.len() {
            let n = rng.below(50).min(payloads.len() - at);
            let group: Vec<&[u8]> = payloads[at..at + n].iter().map(|p| &p[..]).collect();
            grouped.append_all(group.iter().copied()).unwrap();
            streamed.append_all(group.iter().copied()).unwrap();
            group.iter().for_each(|p| single.append(p).unwrap());
            grouped.append_null();
            streamed.append_null();
            single.append_null();
            at += n;
        }
        let (grouped, single, streamed) = (grouped.finish().unwrap(), single.finish().unwrap(), streamed.finish().unwrap());
        grouped.to_data().validate_full().unwrap();
        assert_eq!(grouped, single);
        assert_eq!(streamed, single);
        let values: Vec<&[u8]> = grouped.iter().flatten().collect();
        assert_eq!(values, payloads.iter().map(|p| &p[..]).collect::<Vec<_>>());
    }

    #[test]
    fn payload_mode_names() {
        assert_eq!(PayloadMode::from_name("binary_view").unwrap(), PayloadMode::BinaryView);
        assert!(PayloadMode::from_name("view").is_err());
        assert_eq!(PayloadMode::None.data_type(), None);
    }

    #[test]
    fn views_share_sources_and_copy_strays() {
        let source = Buffer::from_vec((0u8..100).collect::<Vec<_>>());
        let stray = vec![7u8; 20];
        let mut b = PayloadColumnBuilder::new(PayloadMode::BinaryView, 4, 0);
        b.set_view_sources(std::slice::from_ref(&source));
        b.append(&source.as_slice()[10..40]).unwrap();
        b.append(&stray).unwrap();
        b.append_null();
        b.append(&source.as_slice()[0..5]).unwrap();
        b.append(&source.as_slice()[50..100]).unwrap();
        let arr = b.finish().unwrap().unwrap();
        let arr = arr.as_any().downcast_ref::<BinaryViewArray>().unwrap();
        assert_eq!(arr.value(0), &source.as_slice()[10..40]);
        assert_eq!(arr.value(1), &stray[..]);
        assert!(arr.is_null(2));
        assert_eq!(arr.value(3), &source.as_slice()[0..5]);
        assert_eq!(arr.value(4), &source.as_slice()[50..100]);
        // One shared source buffer (not copied) and one owned block.
        assert_eq!(arr.data_buffers().len(), 2);
        assert!(arr.data_buffers().iter().any(|d| d.as_ptr() == source.as_ptr()));
    }

    #[test]
    fn builder_is_reusable_after_finish() {
        let source = Buffer::from_vec(vec![1u8; 64]);
        let mut b = PayloadColumnBuilder::new(PayloadMode::BinaryView, 1, 0);
        b.set_view_sources(std::slice::from_ref(&source));
        for _ in 0..2 {
            b.append(&source.as_slice()[..30]).unwrap();
            let arr = b.finish().unwrap().unwrap();
            assert_eq!(arr.len(), 1);
        }
    }

    /// Buffers past the limit are published as windows, and owned blocks are sealed
    /// at it; a payload larger than the limit gets a buffer of its own.
    #[test]
    fn windows_and_owned_blocks_respect_the_buffer_limit() {
        let source = Buffer::from_vec((0..1000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
        let mut v = ViewColumnBuilder::with_capacity(0);
        v.buffer_limit = 64;
        v.set_sources(std::slice::from_ref(&source));
        let ranges = [(10, 30), (20, 40), (500, 560), (15, 25), (900, 1000), (0, 13), (600, 700)];
        for &(a, b) in &ranges {
            v.append(&source.as_slice()[a..b]);
        }
        let strays: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8; 20 + i * 10]).collect();
        for s in &strays {
            v.append(s);
        }
        let arr = v.finish().unwrap();
        for (i, &(a, b)) in ranges.iter().enumerate() {
            assert_eq!(arr.value(i), &source.as_slice()[a..b], "range {i}");
        }
        for (i, s) in strays.iter().enumerate() {
            assert_eq!(arr.value(ranges.len() + i), &s[..]);
        }
        // Only the two oversized payloads (100 bytes each) have buffers over the limit.
        let over: Vec<usize> = arr.data_buffers().iter().map(|b| b.len()).filter(|&n| n > 64).collect();
        assert_eq!(over, [100, 100]);
        // Windows share the source's memory.
        let base = source.as_ptr() as usize..source.as_ptr() as usize + source.len();
        assert!(arr.data_buffers().iter().filter(|b| base.contains(&(b.as_ptr() as usize))).count() >= 3);
    }

    #[test]
    fn offsets_outside_the_buffer_are_not_views() {
        let a = Buffer::from_vec(vec![0u8; 16]);
        let other = [0u8; 16];
        assert_eq!(offset_within(&a, &a.as_slice()[3..9]), Some(3));
        assert_eq!(offset_within(&a, &other), None);
    }
}
