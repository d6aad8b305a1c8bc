//! A file read through a memory map whose pages Arrow batches can share.
//!
//! Payload views (`binary_view`) point straight into the map: the map is an Arrow
//! [`Buffer`] owner, so it stays mapped while any batch refers to it. A streaming
//! reader gives back the pages it has passed ([`MappedFile::release`]), which keeps
//! its resident set bounded however large the file is; the page cache still holds
//! them, and a later access (a payload view, a second reader) maps them again.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;
use memmap2::{Advice, Mmap};

use crate::error::{Error, Result};

enum Backing {
    Map(Arc<Mmap>),
    /// An empty file (which cannot be mapped), or bytes already in memory.
    Memory(Buffer),
}

/// The bytes of one file and the path errors should name.
pub struct MappedFile {
    backing: Backing,
    path: Option<PathBuf>,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile").field("len", &self.len()).field("path", &self.path).finish()
    }
}

impl MappedFile {
    /// Maps `path` read-only. The file must not be truncated while mapped (bookies
    /// only append to their files, and delete whole files, which is safe).
    pub fn open(path: impl AsRef<Path>) -> Result<MappedFile> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, 0, &e))?;
        let len = file.metadata().map_err(|e| Error::io(path, 0, &e))?.len();
        if len == 0 {
            return Ok(MappedFile { backing: Backing::Memory(Buffer::from_vec(Vec::<u8>::new())), path: Some(path.into()) });
        }
        // SAFETY: the map is read-only; the caller is told not to truncate the file.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, 0, &e))?;
        // Readers go front to back; a failed hint is harmless.
        let _ = map.advise(Advice::Sequential);
        Ok(MappedFile { backing: Backing::Map(Arc::new(map)), path: Some(path.into()) })
    }

    /// Bytes already in memory (tests, buffers received from elsewhere).
    pub fn from_buffer(buffer: Buffer) -> MappedFile {
        MappedFile { backing: Backing::Memory(buffer), path: None }
    }

    pub fn with_path(mut self, path: impl Into<PathBuf>) -> MappedFile {
        self.path = Some(path.into());
        self
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Map(m) => m,
            Backing::Memory(b) => b.as_slice(),
        }
    }

    pub fn len(&self) -> u64 {
        self.bytes().len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Attaches the path to an error whose offset is already absolute.
    pub fn locate(&self, err: Error) -> Error {
        match &self.path {
            Some(p) => err.in_file(p),
            None => err,
        }
    }

    /// The whole file as an Arrow buffer sharing the map (no copy).
    pub fn buffer(&self) -> Buffer {
        match &self.backing {
            Backing::Map(m) => {
                let ptr = NonNull::new(m.as_ptr() as *mut u8).expect("a mapping is never at address 0");
                // SAFETY: the pointer and length describe the mapping, which `owner`
                // keeps alive (and unmodified: it is read-only) as long as the buffer lives.
                unsafe { Buffer::from_custom_allocation(ptr, m.len(), m.clone()) }
            }
            Backing::Memory(b) => b.clone(),
        }
    }

    /// Maps the pages of `[start, end)` ahead of a scan, so the software prefetches
    /// inside it (which are dropped at unmapped pages) work. One byte is read every
    /// [`FAULT_AROUND`] bytes: each fault maps that whole window of cached pages at
    /// once (the kernel's fault-around), or a whole large folio. This is cheaper than
    /// `MADV_POPULATE_READ`, which also walks every page after faulting it in (about
    /// 20% of a cached 64 MiB log's read time here). Pages that are not cached are
    /// read in as the scan would read them. Nothing happens for bytes in memory.
    pub fn populate(&self, start: u64, end: u64) {
        let Backing::Map(m) = &self.backing else { return };
        let end = end.min(m.len() as u64) as usize;
        let mut at = start as usize / FAULT_AROUND * FAULT_AROUND;
        while at < end {
            // SAFETY: `at < end <= len`, inside the mapping; a volatile read so the
            // touch is not optimised away.
            unsafe { std::ptr::read_volatile(m.as_ptr().add(at)) };
            at += FAULT_AROUND;
        }
    }

    /// Gives back the resident pages of `[start, end)` (whole pages inside it): the
    /// caller has read past them. Nothing happens for bytes in memory.
    pub fn release(&self, start: u64, end: u64) {
        const PAGE: u64 = 4096;
        let Backing::Map(m) = &self.backing else { return };
        let start = start.div_ceil(PAGE) * PAGE;
        let end = end.min(m.len() as u64) / PAGE * PAGE;
        if start >= end {
            return;
        }
        // SAFETY: the mapping is a read-only view of a file that is not modified while
        // mapped; after MADV_DONTNEED the next access maps the same file pages again,
        // so every reference into the map keeps seeing the same bytes. A failed
        // hint only leaves the pages resident.
        let _ = unsafe {
            m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start as usize, (end - start) as usize)
        };
    }
}

/// Maps a mapped file's pages just ahead of a forward scan and gives them back
/// behind it, one batch behind: the pages of the batch just handed out stay mapped
/// while its consumer works on it (payload views read them), so a streaming reader
/// keeps about two batches of the file resident however large the file is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageWindow {
    released: u64,
    previous_batch_end: u64,
    /// Pages before this have been populated.
    populated: u64,
}

/// The span a page fault maps when its pages are cached: Linux's default
/// `fault_around_bytes`. A smaller setting only leaves some faults to the scan.
const FAULT_AROUND: usize = 64 << 10;
/// Bytes populated at a time ahead of the scan.
const POPULATE_CHUNK: u64 = 1 << 20;
/// The next chunk is populated once the scan is this close to the end of the last.
const POPULATE_LEAD: u64 = 256 << 10;

impl PageWindow {
    pub fn new(start: u64) -> Self {
        PageWindow { released: start, previous_batch_end: start, populated: start }
    }

    /// The scan stands at `pos`: maps the next chunk when it is near.
    #[inline]
    pub fn advance(&mut self, file: &MappedFile, pos: u64) {
        if pos.saturating_add(POPULATE_LEAD) > self.populated {
            self.populate_from(file, pos);
        }
    }

    #[inline(never)]
    fn populate_from(&mut self, file: &MappedFile, pos: u64) {
        let start = self.populated.max(pos);
        let end = pos.saturating_add(POPULATE_LEAD + POPULATE_CHUNK).min(file.len());
        file.populate(start, end);
        self.populated = end.max(self.populated);
    }

    /// A batch ended with the scan at `pos`.
    pub fn batch_done(&mut self, file: &MappedFile, pos: u64) {
        if self.previous_batch_end > self.released {
            file.release(self.released, self.previous_batch_end);
            self.released = self.previous_batch_end;
        }
        self.previous_batch_end = self.previous_batch_end.max(pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn shares_the_map_and_survives_released_pages() {
        let dir = std::env::temp_dir().join(format!("bkcodec-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data");
        let content: Vec<u8> = (0..5 * 4096u32).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path).unwrap().write_all(&content).unwrap();
        let f = MappedFile::open(&path).unwrap();
        assert_eq!(f.bytes(), &content[..]);
        let b = f.buffer();
        assert_eq!(b.as_ptr(), f.bytes().as_ptr(), "the buffer is the map, not a copy");
        // Populating any range, also past the end or backwards, reads nothing beyond it.
        f.populate(0, u64::MAX);
        f.populate(3 * 4096 + 1, 10);
        f.populate(1 << 40, 1 << 41);
        f.release(0, 4 * 4096);
        drop(f);
        // The buffer keeps the map alive, and released pages read back the same bytes.
        assert_eq!(b.as_slice(), &content[..]);
        std::fs::remove_dir_all(&dir).unwrap();

        let empty = dir.with_extension("empty");
        std::fs::File::create(&empty).unwrap();
        let e = MappedFile::open(&empty).unwrap();
        assert!(e.is_empty() && e.buffer().is_empty());
        std::fs::remove_file(&empty).unwrap();
        let missing = MappedFile::open(dir.join("missing")).unwrap_err();
        assert_eq!(missing.kind, crate::error::ErrorKind::Io);
        assert!(missing.path.is_some());
    }
}
