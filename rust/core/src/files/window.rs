//! The bytes a scan can see: a window of the file read ahead of the scan, held in
//! memory the reader owns.
//!
//! Framing reads the file at absolute offsets through a [`View`]. When it needs
//! bytes the window does not hold, the read returns [`Need`] instead of the bytes;
//! the scan's driver fetches them ([`Window::fetch`]) and repeats the step. Steps
//! depend only on positions and bytes, so a repeated step decides exactly what it
//! would have decided with the whole file in memory, and long searches remember
//! how far they got so repeating them costs nothing.
//!
//! The window is one contiguous buffer, read in chunks just ahead of the scan, so
//! the bytes the scan frames and digests are in the CPU's cache. It keeps the bytes
//! from the oldest one the current batch refers to (its payload views point into
//! it, see [`Window::freeze`]) or, when payloads are copied out, from the scan's
//! position, so memory stays near one batch whatever the file's size. Small reads
//! far from it (a header a long way ahead, a byte behind it) go to a few small peek
//! blocks instead of stretching it. Holes of sparse files are filled with zeros
//! without being read.

use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex};

use arrow_buffer::{Buffer, MutableBuffer};

use crate::error::{Error, ErrorKind, Result};
use crate::files::source::{io_error, short_read, ReadAt, SliceSource};

/// Bytes `[at, at + len)` of the file, which the window does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Need {
    pub at: usize,
    pub len: usize,
}

impl Need {
    pub fn new(at: usize, len: usize) -> Need {
        Need { at, len }
    }
}

/// A read through a [`View`]: the bytes, or what has to be fetched first.
pub(crate) type Fetch<T> = std::result::Result<T, Need>;

/// Bytes read from the file at a time.
const READ_CHUNK: usize = 256 << 10;
/// The window grows to this before it drops bytes the scan has passed.
pub(crate) const MAX_WINDOW: usize = 64 << 20;
/// The largest record a scan loads in one piece.
pub(crate) const MAX_LOADED_RECORD: usize = 256 << 20;
/// Reads up to this size may go to a peek block.
const PEEK_MAX: usize = 64 << 10;
const PEEK_BLOCK: usize = 128 << 10;
const PEEK_SLOTS: usize = 4;
/// Window starts are aligned down to this (aligned reads copy fastest).
const ALIGN: usize = 4096;
/// Frozen buffers kept for reuse once the batches holding them are dropped: a
/// caller iterating batches holds the last one while the next is built, so the
/// one before it is the first free. Reusing them spares the kernel zeroing fresh
/// pages for every batch (on 1 KiB entries that cost more than the reads).
const RETIRED_KEPT: usize = 2;
/// Window buffers of readers that ended, for the next readers to take up: a
/// process reading file after file would otherwise fault in and zero fresh memory
/// for the first batches of each. At most [`SPARES_KEPT`] are kept, each at most
/// [`SPARE_MAX`] bytes (a batch's span is a few MiB).
static SPARES: Mutex<Vec<MutableBuffer>> = Mutex::new(Vec::new());
const SPARES_KEPT: usize = 2;
const SPARE_MAX: usize = 32 << 20;

/// A spare buffer of at least `capacity` bytes, emptied.
fn take_spare(capacity: usize) -> Option<MutableBuffer> {
    let mut spares = SPARES.lock().ok()?;
    let i = spares.iter().position(|b| b.capacity() >= capacity)?;
    let mut buffer = spares.swap_remove(i);
    buffer.truncate(0);
    Some(buffer)
}

/// Keeps `buffer` for a later window.
fn keep_spare(buffer: MutableBuffer) {
    if buffer.capacity() == 0 || buffer.capacity() > SPARE_MAX {
        return;
    }
    if let Ok(mut spares) = SPARES.lock() {
        if spares.len() < SPARES_KEPT {
            spares.push(buffer);
        }
    }
}

/// What a scan step sees of the file: the window and the peek blocks, addressed by
/// absolute offset.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    data: &'a [u8],
    base: usize,
    len: usize,
    peeks: &'a [(usize, Vec<u8>)],
}

impl<'a> View<'a> {
    /// A view of bytes that are all in memory (never returns [`Need`]).
    #[cfg(test)]
    pub fn whole(data: &'a [u8]) -> View<'a> {
        View { data, base: 0, len: data.len(), peeks: &[] }
    }

    /// The length of the file the scan reads (not of the window).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// `n` bytes at `at`. The caller keeps `at + n <= len()`.
    #[inline(always)]
    pub fn get(&self, at: usize, n: usize) -> Fetch<&'a [u8]> {
        debug_assert!(at.checked_add(n).is_some_and(|end| end <= self.len), "read of {n} bytes at {at} past {}", self.len);
        let rel = at.wrapping_sub(self.base);
        if rel <= self.data.len() && n <= self.data.len() - rel {
            return Ok(&self.data[rel..rel + n]);
        }
        self.get_peeked(at, n)
    }

    #[cold]
    fn get_peeked(&self, at: usize, n: usize) -> Fetch<&'a [u8]> {
        for (start, block) in self.peeks {
            let rel = at.wrapping_sub(*start);
            if rel <= block.len() && n <= block.len() - rel {
                return Ok(&block[rel..rel + n]);
            }
        }
        Err(Need { at, len: n })
    }

    /// Whether `[at, at + n)` is in the window itself (not a peek block): the
    /// bytes rows point into must be, since the window is what a batch keeps.
    #[inline(always)]
    pub fn in_window(&self, at: usize, n: usize) -> bool {
        let rel = at.wrapping_sub(self.base);
        rel <= self.data.len() && n <= self.data.len() - rel
    }

    #[inline(always)]
    pub fn byte(&self, at: usize) -> Fetch<u8> {
        Ok(self.get(at, 1)?[0])
    }

    #[inline(always)]
    pub fn i32_at(&self, at: usize) -> Fetch<i32> {
        let b = self.get(at, 4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The bytes from `at` up to `limit` (at most) that the window holds in one
    /// piece, at least one byte: for loops that scan a long way.
    #[inline]
    pub fn contiguous_from(&self, at: usize, limit: usize) -> Fetch<&'a [u8]> {
        debug_assert!(at < limit && limit <= self.len);
        let rel = at.wrapping_sub(self.base);
        if rel < self.data.len() {
            let end = (limit - self.base).min(self.data.len());
            return Ok(&self.data[rel..end]);
        }
        for (start, block) in self.peeks {
            let rel = at.wrapping_sub(*start);
            if rel < block.len() {
                let end = (limit - start).min(block.len());
                return Ok(&block[rel..end]);
            }
        }
        Err(Need { at, len: (limit - at).min(READ_CHUNK) })
    }
}

/// The bytes a batch's rows point into, frozen: `buffer[0]` is file offset `base`.
#[derive(Debug, Clone)]
pub(crate) struct Frozen {
    pub buffer: Buffer,
    pub base: usize,
}

/// A source whose bytes are all in memory: a scan reads them in place.
enum Memory<'a> {
    /// An Arrow buffer (batches' payload views share it).
    Buffer(Buffer),
    /// Bytes the caller lends for as long as the scan lives (the in-memory scans).
    Slice(&'a [u8]),
}

impl Memory<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Memory::Buffer(b) => b.as_slice(),
            Memory::Slice(s) => s,
        }
    }

    /// The bytes as a buffer for payload views (a lent slice is copied).
    fn buffer(&self) -> Buffer {
        match self {
            Memory::Buffer(b) => b.clone(),
            Memory::Slice(s) => Buffer::from_slice_ref(s),
        }
    }
}

/// A scan's window over one source.
pub(crate) struct Window<'a> {
    source: Arc<dyn ReadAt + 'a>,
    len: usize,
    /// The whole source, when it is in memory: then there is nothing to fetch.
    memory: Option<Memory<'a>>,
    buf: MutableBuffer,
    base: usize,
    /// Frozen buffers handed to batches, oldest first, kept to reuse their memory
    /// once the batches drop them.
    retired: Vec<Buffer>,
    /// How far the window is expected to reach from its start (see
    /// [`Window::expect_span`]).
    span: usize,
    peeks: Vec<(usize, Vec<u8>)>,
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window").field("len", &self.len).field("base", &self.base).field("held", &self.buf.len()).finish()
    }
}

impl<'a> Window<'a> {
    pub fn new(source: Arc<dyn ReadAt + 'a>) -> Result<Window<'a>> {
        let len = usize::try_from(source.len())
            .map_err(|_| Error::invalid_argument(format!("a source of {} bytes does not fit in memory addresses", source.len())))?;
        let memory = source.as_buffer().cloned().map(Memory::Buffer);
        Ok(Window { source, len, memory, buf: MutableBuffer::new(0), base: 0, retired: Vec::new(), span: 0, peeks: Vec::new() })
    }

    /// A window over bytes in hand, read in place.
    pub fn lent(bytes: &'a [u8]) -> Window<'a> {
        let source: Arc<dyn ReadAt + 'a> = Arc::new(SliceSource(bytes));
        let memory = Some(Memory::Slice(bytes));
        Window { source, len: bytes.len(), memory, buf: MutableBuffer::new(0), base: 0, retired: Vec::new(), span: 0, peeks: Vec::new() }
    }

    pub fn source(&self) -> &Arc<dyn ReadAt + 'a> {
        &self.source
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn view(&self) -> View<'_> {
        match &self.memory {
            Some(m) => View { data: m.bytes(), base: 0, len: self.len, peeks: &[] },
            None => View { data: self.buf.as_slice(), base: self.base, len: self.len, peeks: &self.peeks },
        }
    }

    /// The window is expected to reach about `bytes` from its start (a batch's
    /// bytes, when its rows point into it): its buffers are allocated that large
    /// at once, since growing one copies it and faults in fresh memory each time.
    pub fn expect_span(&mut self, bytes: usize) {
        self.span = bytes.min(MAX_WINDOW);
    }

    /// Bytes held in memory for the scan (window and peeks).
    pub fn held(&self) -> usize {
        self.buf.capacity() + self.peeks.iter().map(|p| p.1.capacity()).sum::<usize>()
    }

    /// Makes `need` readable. `keep_from` is the oldest offset the scan still uses
    /// whole (the first byte the current batch's rows point into, or the scan's
    /// position): the window keeps everything from there. Returns false, having
    /// fetched nothing, when that would take the window past its size and the
    /// caller can free it by ending its batch (`keep_from` below `hard_keep`, the
    /// scan's position).
    pub fn fetch(&mut self, need: Need, keep_from: usize, hard_keep: usize) -> Result<bool> {
        self.fetch_into(need, keep_from, hard_keep, false)
    }

    /// [`Window::fetch`] into the window itself, never a peek block.
    pub fn fetch_whole(&mut self, need: Need, keep_from: usize, hard_keep: usize) -> Result<bool> {
        self.fetch_into(need, keep_from, hard_keep, true)
    }

    fn fetch_into(&mut self, need: Need, keep_from: usize, hard_keep: usize, whole: bool) -> Result<bool> {
        if self.memory.is_some() || need.at >= self.len {
            return Err(Error::new(ErrorKind::Corrupt, need.at as u64,
                format!("internal: a scan asked for {} bytes at {} of a {}-byte source it holds", need.len, need.at, self.len)));
        }
        let end = need.at.saturating_add(need.len).min(self.len);
        let held_end = self.base + self.buf.len();
        // A small read behind the window, or far ahead of it, goes to a peek block:
        // moving the window there and back would repeat itself.
        let far_ahead = need.at > held_end.saturating_add(MAX_WINDOW / 4);
        if !whole && need.len <= PEEK_MAX && (need.at < self.base || far_ahead) {
            self.peek(need.at, end)?;
            return Ok(true);
        }
        let keep = keep_from.min(need.at);
        // Extend the window (from `keep` at the earliest) when that stays small.
        let lo = if keep >= self.base && keep <= held_end { self.base.max(align_down(keep)) } else { align_down(keep) };
        let target = align_up(end, READ_CHUNK).min(self.len).max(end);
        if target - lo <= MAX_WINDOW {
            self.hold(lo, target)?;
            return Ok(true);
        }
        if !whole && need.len <= PEEK_MAX {
            self.peek(need.at, end)?;
            return Ok(true);
        }
        if keep_from < hard_keep.min(need.at) {
            return Ok(false);
        }
        // A record too large for the usual window: hold just it.
        if end - need.at > MAX_LOADED_RECORD {
            return Err(Error::new(ErrorKind::InvalidArgument, need.at as u64, format!(
                "a record of {} bytes is larger than the {} MiB a reader loads at once", end - need.at, MAX_LOADED_RECORD >> 20)));
        }
        self.hold(align_down(need.at), end)?;
        Ok(true)
    }

    /// Makes the window exactly `[lo, hi)` at least, keeping what it already holds
    /// of that span.
    fn hold(&mut self, lo: usize, hi: usize) -> Result<()> {
        let held_end = self.base + self.buf.len();
        if lo >= self.base && lo <= held_end {
            // Drop the bytes before `lo` when they are a good part of the buffer.
            let dead = lo - self.base;
            if dead > 0 && (dead >= self.buf.len() / 2 || hi - self.base > self.buf.capacity()) {
                let live = self.buf.len() - dead;
                self.buf.as_slice_mut().copy_within(dead.., 0);
                self.buf.truncate(live);
                self.base = lo;
            }
        } else {
            self.buf.truncate(0);
            self.base = lo;
        }
        let from = self.base + self.buf.len();
        if hi > from {
            self.read_into_buf(from, hi)?;
        }
        Ok(())
    }

    /// Appends file bytes `[from, to)` to the buffer (whose end is `from`).
    fn read_into_buf(&mut self, from: usize, to: usize) -> Result<()> {
        let start = self.buf.len();
        let wanted = to - from;
        let end = start + wanted;
        if self.buf.capacity() == 0 {
            if let Some(spare) = take_spare(end.max(self.span)) {
                self.buf = spare;
            }
        }
        if self.buf.capacity() - start < wanted {
            self.buf.reserve(wanted.max(self.span.saturating_sub(start)));
        }
        // The file's bytes go straight into the buffer's spare capacity (a fresh
        // buffer is not zeroed first: that pass cost a tenth of a cached read).
        // SAFETY: `reserve` made the capacity at least `end`, so the `wanted` bytes
        // from `start` lie inside the allocation, which `self.buf` owns and nothing
        // else borrows while they are written.
        let spare = unsafe {
            std::slice::from_raw_parts_mut(self.buf.as_mut_ptr().add(start).cast::<MaybeUninit<u8>>(), wanted)
        };
        let n = read_filling_holes(&*self.source, from, spare)?;
        // SAFETY: `read_filling_holes` initialised the first `n` bytes it was given.
        unsafe { self.buf.set_len(start + n) };
        if n == wanted {
            Ok(())
        } else {
            Err(short_read(&*self.source, from as u64, wanted, n))
        }
    }

    fn peek(&mut self, at: usize, end: usize) -> Result<()> {
        let lo = align_down(at);
        let hi = (lo + PEEK_BLOCK).max(end).min(self.len);
        let mut block = Vec::with_capacity(hi - lo);
        let n = read_filling_holes(&*self.source, lo, &mut block.spare_capacity_mut()[..hi - lo])?;
        if n < end - lo {
            return Err(short_read(&*self.source, lo as u64, hi - lo, n));
        }
        // SAFETY: `read_filling_holes` initialised the first `n` bytes of the spare
        // capacity, which is at least `hi - lo >= n` bytes.
        unsafe { block.set_len(n) };
        if self.peeks.len() == PEEK_SLOTS {
            self.peeks.remove(0);
        }
        self.peeks.push((lo, block));
        Ok(())
    }

    /// The source's data ends at `len` now (it shrank): reads stop there.
    pub fn clamp(&mut self, len: usize) {
        if self.memory.is_some() || len >= self.len {
            return;
        }
        self.len = len;
        if self.base >= len {
            self.buf.truncate(0);
            self.base = len;
        } else if self.base + self.buf.len() > len {
            self.buf.truncate(len - self.base);
        }
        self.peeks.retain(|(start, _)| *start < len);
        for (start, block) in &mut self.peeks {
            block.truncate(len - *start);
        }
    }

    /// The window's bytes as an Arrow buffer for a batch's payload views, and the
    /// file offset of its first byte; the window goes on from `keep_from` in a new
    /// buffer (reusing the memory of a frozen one that no batch holds any more).
    pub fn freeze(&mut self, keep_from: usize) -> Frozen {
        if let Some(m) = &self.memory {
            return Frozen { buffer: m.buffer(), base: 0 };
        }
        let base = self.base;
        let next_base = align_down(keep_from.clamp(base, base + self.buf.len()));
        let tail = &self.buf.as_slice()[next_base - base..];
        let mut reused = None;
        for i in 0..self.retired.len() {
            match self.retired.remove(i).into_mutable() {
                Ok(buffer) => {
                    reused = Some(buffer);
                    break;
                }
                Err(shared) => self.retired.insert(i, shared),
            }
        }
        let mut next = match reused {
            Some(mut buffer) => {
                buffer.truncate(0);
                buffer
            }
            None => {
                let capacity = self.buf.len().max(self.span).max(READ_CHUNK);
                take_spare(capacity).unwrap_or_else(|| MutableBuffer::new(capacity))
            }
        };
        next.extend_from_slice(tail);
        let frozen: Buffer = std::mem::replace(&mut self.buf, next).into();
        self.base = next_base;
        if self.retired.len() == RETIRED_KEPT {
            self.retired.remove(0);
        }
        self.retired.push(frozen.clone());
        Frozen { buffer: frozen, base }
    }

    /// The bytes from `from` up to `to` (or the end of the window), copied into a
    /// buffer of their own for a batch's payload views: for a batch that holds a
    /// small part of the window, which then goes on in its own buffer.
    pub fn copy_out(&self, from: usize, to: usize) -> Frozen {
        if let Some(m) = &self.memory {
            return Frozen { buffer: m.buffer(), base: 0 };
        }
        let end = self.base + self.buf.len();
        let (from, to) = (from.clamp(self.base, end), to.clamp(self.base, end));
        let bytes = &self.buf.as_slice()[from - self.base..to.max(from) - self.base];
        Frozen { buffer: Buffer::from_slice_ref(bytes), base: from }
    }

    /// Forgets the bytes before `keep_from` (payloads are copied out, nothing
    /// points into the window): they are dropped at the next fetch that needs room.
    pub fn release(&mut self, keep_from: usize) {
        if self.memory.is_some() {
            return;
        }
        let held_end = self.base + self.buf.len();
        let lo = align_down(keep_from);
        if lo > self.base && lo <= held_end && lo - self.base >= MAX_WINDOW / 4 {
            let dead = lo - self.base;
            let live = self.buf.len() - dead;
            self.buf.as_slice_mut().copy_within(dead.., 0);
            self.buf.truncate(live);
            self.base = lo;
        }
        self.peeks.retain(|(start, block)| start + block.len() > keep_from);
    }
}

impl Drop for Window<'_> {
    /// The window's buffers go to the spares (those no batch holds any more).
    fn drop(&mut self) {
        keep_spare(std::mem::replace(&mut self.buf, MutableBuffer::new(0)));
        for frozen in self.retired.drain(..) {
            if let Ok(buffer) = frozen.into_mutable() {
                keep_spare(buffer);
            }
        }
    }
}

#[inline]
fn align_down(v: usize) -> usize {
    v & !(ALIGN - 1)
}

#[inline]
fn align_up(v: usize, to: usize) -> usize {
    v.div_ceil(to) * to
}

/// Reads `buf.len()` bytes from `offset` (fewer at the end of the data), writing
/// zeros for the holes of a sparse file instead of reading them. The bytes it
/// reports read are initialised.
fn read_filling_holes(source: &dyn ReadAt, offset: usize, buf: &mut [MaybeUninit<u8>]) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let at = (offset + done) as u64;
        let data = source.next_data(at);
        let hole_end = match data {
            None => offset + buf.len(),
            Some(d) => (d as usize).min(offset + buf.len()),
        };
        if hole_end > offset + done {
            // Zeros up to the data (or to the end of what was asked): the file holds
            // them as a hole, but only up to its current end.
            let n = hole_end - (offset + done);
            let end_now = source.current_len().map_or(usize::MAX, |l| l as usize);
            let n = n.min(end_now.saturating_sub(offset + done));
            buf[done..done + n].fill(MaybeUninit::new(0));
            done += n;
            if n == 0 {
                break;
            }
            continue;
        }
        let chunk = (buf.len() - done).min(READ_CHUNK);
        let n = source.read_at_uninit(at, &mut buf[done..done + chunk]).map_err(|e| io_error(source, at, e))?;
        done += n.min(chunk);
        if n < chunk {
            break;
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::source::MemorySource;

    /// A source that is not in memory (reads are copies), to exercise fetching.
    struct Copying(Vec<u8>);

    impl ReadAt for Copying {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
            let start = (offset as usize).min(self.0.len());
            let n = buf.len().min(self.0.len() - start);
            buf[..n].copy_from_slice(&self.0[start..start + n]);
            Ok(n)
        }
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Reads through the window, fetching on demand, agree with the bytes.
    fn read(w: &mut Window, at: usize, n: usize, keep: usize) -> Vec<u8> {
        loop {
            match w.view().get(at, n) {
                Ok(b) => return b.to_vec(),
                Err(need) => assert!(w.fetch(need, keep, keep).unwrap()),
            }
        }
    }

    #[test]
    fn fetches_in_chunks_slides_and_peeks() {
        let data = pattern(200 << 20);
        let mut w = Window::new(Arc::new(Copying(data.clone()))).unwrap();
        assert_eq!(read(&mut w, 10, 100, 0), &data[10..110]);
        // Sequential reads extend the window; far reads past its size slide it or peek.
        for at in [5000, 300_000, 70 << 20, 150 << 20, 3, (150 << 20) + 1000] {
            assert_eq!(read(&mut w, at, 4096, at), &data[at..at + 4096], "at {at}");
            assert!(w.held() <= MAX_WINDOW + 2 * READ_CHUNK + PEEK_SLOTS * PEEK_BLOCK + 4096, "held {}", w.held());
        }
        // A large read far behind the window reloads it there.
        assert_eq!(read(&mut w, 1 << 20, 1 << 20, 1 << 20), &data[1 << 20..2 << 20]);
    }

    #[test]
    fn frozen_buffers_keep_their_bytes_and_are_reused() {
        let data = pattern(3 << 20);
        let mut w = Window::new(Arc::new(Copying(data.clone()))).unwrap();
        read(&mut w, 0, 1 << 20, 0);
        let first = w.freeze(1000);
        assert_eq!(first.base, 0);
        assert_eq!(&first.buffer.as_slice()[..1 << 20], &data[..1 << 20]);
        assert_eq!(read(&mut w, 1000, 2 << 20, 1000), &data[1000..1000 + (2 << 20)]);
        let ptr = first.buffer.as_ptr();
        drop(first);
        let second = w.freeze(3 << 20);
        assert_eq!(&second.buffer.as_slice()[1000..2000], &data[1000..2000]);
        // The first buffer was dropped by its batch: the window reuses its memory.
        assert_eq!(w.buf.as_ptr(), ptr);
    }

    /// Batches held by the caller keep their bytes while the window goes on in
    /// other buffers; once they are dropped, their buffers come back (not zeroed
    /// again), and reads through them give the file's bytes, not a former batch's.
    #[test]
    fn held_batches_keep_their_bytes_and_dropped_ones_are_reused() {
        let data = pattern(12 << 20);
        let mut w = Window::new(Arc::new(Copying(data.clone()))).unwrap();
        w.expect_span(1 << 20);
        let mut at = 0;
        // Uneven batches, so reused buffers are filled to other lengths than before.
        let batch = |w: &mut Window, at: &mut usize| {
            let n = (700 << 10) + (*at / 7 % 4096);
            assert_eq!(read(w, *at, n, *at), &data[*at..*at + n], "at {at}");
            let frozen = w.freeze(*at + n);
            let span = (*at, n);
            *at += n;
            (frozen, span)
        };
        let intact = |(f, (a, n)): &(Frozen, (usize, usize))| f.buffer.as_slice()[a - f.base..a - f.base + n] == data[*a..a + n];
        let held: Vec<_> = (0..5).map(|_| batch(&mut w, &mut at)).collect();
        assert!(held.iter().all(intact), "a buffer a batch holds was reused");
        let addresses: Vec<usize> = held.iter().map(|(f, _)| f.buffer.as_ptr() as usize).collect();
        drop(held);
        let later: Vec<_> = (0..5).map(|_| batch(&mut w, &mut at)).collect();
        assert!(later.iter().all(intact));
        let reused = later.iter().filter(|(f, _)| addresses.contains(&(f.buffer.as_ptr() as usize))).count();
        assert!(reused > 0, "no dropped buffer was taken up again");
        assert!(w.retired.len() <= RETIRED_KEPT);
    }

    /// A window that takes up an ended window's buffers (whose bytes are another
    /// file's, and are not zeroed again) reads its own file's bytes.
    #[test]
    fn spare_buffers_of_ended_windows_hold_only_new_reads() {
        for round in 0..4u8 {
            let data: Vec<u8> = pattern(3 << 20).iter().map(|b| b.wrapping_add(round)).collect();
            let mut w = Window::new(Arc::new(Copying(data.clone()))).unwrap();
            w.expect_span(1 << 20);
            let mut at = 0;
            let mut held = Vec::new();
            while at + (600 << 10) <= data.len() {
                let n = (600 << 10) - usize::from(round) * 4096;
                assert_eq!(read(&mut w, at, n, at), &data[at..at + n], "round {round} at {at}");
                held.push((w.freeze(at + n), at, n));
                at += n;
            }
            for (f, a, n) in &held {
                assert_eq!(&f.buffer.as_slice()[a - f.base..a - f.base + n], &data[*a..a + n]);
            }
            // Some batches outlive their reader, some do not.
            held.truncate(1);
            drop(w);
        }
        assert!(SPARES.lock().unwrap().iter().all(|b| b.capacity() <= SPARE_MAX));
    }

    #[test]
    fn memory_sources_are_never_fetched() {
        let data = pattern(10_000);
        let mut w = Window::new(Arc::new(MemorySource::from_vec(data.clone()))).unwrap();
        assert_eq!(w.view().get(9000, 1000).unwrap(), &data[9000..]);
        assert!(w.fetch(Need { at: 0, len: 1 }, 0, 0).is_err());
        let f = w.freeze(5);
        assert_eq!((f.buffer.as_slice(), f.base), (&data[..], 0));
    }

    #[test]
    fn a_shrunk_source_is_a_truncated_error() {
        let mut w = Window::new(Arc::new(Copying(pattern(1000)))).unwrap();
        // The source claims 1000 bytes; pretend the file shrank by asking a copy of 500.
        let short: Arc<dyn ReadAt> = Arc::new(Shrunk(Copying(pattern(500)), 1000));
        w.source = short;
        let e = w.fetch(Need { at: 400, len: 200 }, 0, 0).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 500));
    }

    struct Shrunk(Copying, u64);

    impl ReadAt for Shrunk {
        fn len(&self) -> u64 {
            self.1
        }
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read_at(offset, buf)
        }
    }
}
