//! Where a reader's bytes come from: a file read with positioned reads (`pread`),
//! bytes already in memory, or anything else that can read at an offset (the
//! bindings add Python file objects).
//!
//! Files are never memory-mapped. A mapping turns a file that shrinks while it is
//! read (compaction and garbage collection rewrite and delete entry logs on a live
//! bookie) into a `SIGBUS` that kills the process, and it cannot keep the payloads
//! a reader has handed out from changing with the file. A positioned read of a
//! vanished range just comes back short, which the reader reports as the file
//! having shrunk, and the bytes read are the reader's own.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};

use arrow_buffer::Buffer;

use crate::error::{Error, Result};

/// Random access to the bytes of one file (or anything shaped like one).
pub trait ReadAt: Send + Sync {
    /// The length when the source was opened: readers read up to here and no
    /// further, so a file still being appended to is read as it was.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads into `buf` from `offset`. Fewer bytes than asked (0 included) means
    /// the data ends there now.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// [`ReadAt::read_at`] into memory not written yet; the bytes it reports read
    /// are then initialised. Readers fill fresh buffers with this: a source that
    /// reads through the operating system writes them once, where zeroing them first
    /// would write every byte twice. The default zeroes `buf`, then reads.
    fn read_at_uninit(&self, offset: u64, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
        buf.fill(MaybeUninit::new(0));
        // SAFETY: every byte of `buf` was just initialised, and `u8` and
        // `MaybeUninit<u8>` share their layout.
        let buf = unsafe { &mut *(buf as *mut [MaybeUninit<u8>] as *mut [u8]) };
        self.read_at(offset, buf)
    }

    /// Where the next byte at or after `offset` that may be non-zero is: sparse
    /// files skip their holes here without reading them. `None` when only zeros
    /// (or nothing) follow. Sources that cannot tell return `Some(offset)`.
    fn next_data(&self, offset: u64) -> Option<u64> {
        Some(offset)
    }

    /// The whole content as an Arrow buffer, when it is in memory already (scans
    /// then borrow it instead of copying).
    fn as_buffer(&self) -> Option<&Buffer> {
        None
    }

    /// The current length, when the source can tell it (a file's `fstat`): a
    /// reader that finds fewer bytes than [`ReadAt::len`] asks, to say how far
    /// the file shrank.
    fn current_len(&self) -> Option<u64> {
        None
    }

    /// The file errors should name.
    fn path(&self) -> Option<&Path> {
        None
    }
}

/// A regular file, read with `pread`.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    path: PathBuf,
    len: u64,
}

impl FileSource {
    /// Opens `path` for reading. Anything but a regular file (a FIFO, a device, a
    /// directory, a socket) is refused at once with an error naming what it is:
    /// reading a FIFO would block until a writer comes, and a device or `/proc`
    /// file has no length to read up to. The open itself never blocks (FIFOs are
    /// opened non-blocking, then refused).
    pub fn open(path: impl AsRef<Path>) -> Result<FileSource> {
        let path = path.as_ref();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| open_error(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, 0, &e))?;
        let kind = meta.file_type();
        let what = if kind.is_file() {
            None
        } else if kind.is_dir() {
            Some("a directory")
        } else if kind.is_fifo() {
            Some("a FIFO (named pipe)")
        } else if kind.is_char_device() {
            Some("a character device")
        } else if kind.is_block_device() {
            Some("a block device")
        } else if kind.is_socket() {
            Some("a socket")
        } else {
            Some("not a regular file")
        };
        if kind.is_dir() {
            return Err(Error::io(path, 0, &io::Error::from_raw_os_error(libc::EISDIR)));
        }
        if let Some(what) = what {
            return Err(Error::invalid_argument(format!("{} is {what}, not a regular file", path.display())).in_file(path));
        }
        if let Some(fs) = pseudo_file_system(&file) {
            return Err(Error::invalid_argument(format!(
                "{} is a {fs} file (its size is not its content's), not a bookie file", path.display()
            ))
            .in_file(path));
        }
        Ok(FileSource { len: meta.len(), file, path: path.to_path_buf() })
    }
}

/// The name of the pseudo file system `file` is on (`/proc`, `/sys`), whose files
/// `stat` as empty or 4096 bytes whatever they hold: a reader would read nothing, or
/// a page of text as records.
fn pseudo_file_system(file: &File) -> Option<&'static str> {
    use std::os::fd::AsRawFd;
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    const SYSFS_MAGIC: i64 = 0x6265_6572;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs writes a `statfs` into the buffer it is given, for a descriptor
    // this file owns; the buffer is read only when the call succeeded.
    let st = unsafe {
        if libc::fstatfs(file.as_raw_fd(), st.as_mut_ptr()) != 0 {
            return None;
        }
        st.assume_init()
    };
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between platforms
    match st.f_type as i64 {
        PROC_SUPER_MAGIC => Some("/proc"),
        SYSFS_MAGIC => Some("/sys"),
        _ => None,
    }
}

/// An open error in the user's terms ("is a directory" rather than errno 21 from a
/// later read).
fn open_error(path: &Path, e: io::Error) -> Error {
    Error::io(path, 0, &e)
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `MaybeUninit<u8>` has `u8`'s layout, and `read_at_uninit` only
        // writes bytes pread read (never uninitialised memory), so `buf` stays
        // initialised.
        let buf = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
        self.read_at_uninit(offset, buf)
    }

    fn read_at_uninit(&self, offset: u64, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let mut done = 0;
        while done < buf.len() {
            let at = libc::off_t::try_from(offset + done as u64)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset past the largest file offset"))?;
            let rest = &mut buf[done..];
            // SAFETY: pread writes at most `rest.len()` bytes into the memory it is
            // given, which `rest` borrows mutably, and never reads it; the descriptor
            // is this source's own.
            let n = unsafe { libc::pread(self.file.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len(), at) };
            match n {
                0 => break,
                n if n > 0 => done += n as usize,
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        Ok(done)
    }

    fn next_data(&self, offset: u64) -> Option<u64> {
        if offset >= self.len {
            return None;
        }
        let Ok(at) = i64::try_from(offset) else { return Some(offset) };
        use std::os::fd::AsRawFd;
        // SAFETY: lseek on a descriptor this source owns; SEEK_DATA only moves the
        // file position, which positioned reads do not use.
        let found = unsafe { libc::lseek(self.file.as_raw_fd(), at, libc::SEEK_DATA) };
        if found < 0 {
            // ENXIO: no data at or after `offset`; anything else (a filesystem
            // without SEEK_DATA): assume data.
            let errno = io::Error::last_os_error().raw_os_error();
            return if errno == Some(libc::ENXIO) { None } else { Some(offset) };
        }
        let found = found as u64;
        (found < self.len).then_some(found)
    }

    fn current_len(&self) -> Option<u64> {
        self.file.metadata().ok().map(|m| m.size())
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// Bytes already in memory.
#[derive(Debug, Clone)]
pub struct MemorySource {
    buffer: Buffer,
    path: Option<PathBuf>,
}

impl MemorySource {
    pub fn new(buffer: Buffer) -> MemorySource {
        MemorySource { buffer, path: None }
    }

    pub fn from_vec(bytes: Vec<u8>) -> MemorySource {
        MemorySource::new(Buffer::from_vec(bytes))
    }

    /// A whole (small) file read into memory.
    pub fn read(path: impl AsRef<Path>) -> Result<MemorySource> {
        let path = path.as_ref();
        let source = FileSource::open(path)?;
        let bytes = read_vec_at(&source, 0, usize::try_from(source.len()).unwrap_or(usize::MAX))?;
        Ok(MemorySource::from_vec(bytes).with_path(path))
    }

    /// Names the file errors should mention.
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> MemorySource {
        self.path = Some(path.into());
        self
    }

    pub fn bytes(&self) -> &[u8] {
        self.buffer.as_slice()
    }

    pub fn len(&self) -> u64 {
        self.buffer.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
}

impl ReadAt for MemorySource {
    fn len(&self) -> u64 {
        self.buffer.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let data = self.buffer.as_slice();
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn as_buffer(&self) -> Option<&Buffer> {
        Some(&self.buffer)
    }

    fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

/// Bytes borrowed from the caller, as a source (for scans of bytes in hand).
#[derive(Debug, Clone, Copy)]
pub struct SliceSource<'a>(pub &'a [u8]);

impl ReadAt for SliceSource<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, or says how the source fell short:
/// `Truncated` at the offset where its data now ends. For the small reads of
/// headers and trailers.
pub fn read_exact_at(source: &dyn ReadAt, offset: u64, buf: &mut [u8]) -> Result<()> {
    let n = source.read_at(offset, buf).map_err(|e| io_error(source, offset, e))?;
    if n < buf.len() {
        return Err(short_read(source, offset, buf.len(), n));
    }
    Ok(())
}

/// Up to `len` bytes at `offset` (fewer at the end of the data), in a new vector.
pub fn read_vec_at(source: &dyn ReadAt, offset: u64, len: usize) -> Result<Vec<u8>> {
    let available = source.len().saturating_sub(offset).min(len as u64) as usize;
    let mut buf = vec![0u8; available];
    let n = source.read_at(offset, &mut buf).map_err(|e| io_error(source, offset, e))?;
    buf.truncate(n);
    Ok(buf)
}

/// A small file's bytes (a cookie, `lastMark`, `lastId`, a dumped znode): at most
/// `max_len` of them. Anything but a regular file is refused at once, as
/// [`FileSource::open`] does (a FIFO would block, a device never ends), and a
/// larger file is an error naming it and its size, not read; the read stops at the
/// length the file had when opened, so one still growing cannot make it more.
/// `what` names the file in errors ("cookie", "znode").
pub fn read_small_file(path: &Path, max_len: u64, what: &str) -> Result<Vec<u8>> {
    let source = FileSource::open(path)?;
    let len = source.len();
    if len > max_len {
        return Err(Error::corrupt(0, format!("a {what} of {len} bytes is larger than any (at most {max_len})")).in_file(path));
    }
    // Within max_len, which the caller keeps small.
    read_vec_at(&source, 0, len as usize)
}

pub(crate) fn io_error(source: &dyn ReadAt, offset: u64, e: io::Error) -> Error {
    match source.path() {
        Some(p) => Error::io(p, offset, &e),
        None => Error::io(Path::new("<buffer>"), offset, &e),
    }
}

/// The error for a read at `offset` of `wanted` bytes that got `got`, where the
/// source promised more: the file shrank while it was being read.
pub(crate) fn short_read(source: &dyn ReadAt, offset: u64, wanted: usize, got: usize) -> Error {
    let end = offset + got as u64;
    let now = source.current_len().map_or_else(String::new, |n| format!(", {n} now"));
    let e = if end < source.len() {
        Error::truncated(end, (wanted - got) as u64, 0).with_detail(format!(
            "the file shrank while being read: it ends at byte {end} ({} bytes when opened{now})",
            source.len()
        ))
    } else {
        Error::truncated(end, (wanted - got) as u64, 0)
            .with_detail(format!("needed {wanted} bytes at byte {offset}, the file ends at byte {end}"))
    };
    match source.path() {
        Some(p) => e.in_file(p),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::os::unix::fs::FileExt;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bkcodec-source-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_a_file_and_reports_shrinking() {
        let dir = temp_dir("shrink");
        let path = dir.join("f");
        std::fs::write(&path, (0..10_000u32).map(|i| i as u8).collect::<Vec<_>>()).unwrap();
        let src = FileSource::open(&path).unwrap();
        assert_eq!(src.len(), 10_000);
        let mut buf = [0u8; 16];
        read_exact_at(&src, 256, &mut buf).unwrap();
        assert_eq!(buf[0], 0);
        assert_eq!(buf[15], 15);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(1000).unwrap();
        let e = read_exact_at(&src, 990, &mut buf).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 1000));
        assert!(e.detail.contains("shrank"), "{}", e.detail);
        assert!(e.detail.contains("1000 now"), "{}", e.detail);
        assert_eq!(e.path.as_deref(), Some(path.as_path()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_what_is_not_a_regular_file_at_once() {
        let dir = temp_dir("kinds");
        let e = FileSource::open(&dir).unwrap_err();
        assert_eq!((e.kind, e.os_error()), (ErrorKind::Io, Some(libc::EISDIR)));
        assert!(e.detail.contains("Is a directory"), "{}", e.detail);
        let fifo = dir.join("3.log");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = FileSource::open(&fifo).unwrap_err();
        assert!(e.detail.contains("FIFO"), "{}", e.detail);
        let e = FileSource::open("/dev/null").unwrap_err();
        assert!(e.detail.contains("character device"), "{}", e.detail);
        let e = FileSource::open(dir.join("missing")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Io);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn small_files_are_read_whole_within_a_bound_and_only_when_regular() {
        let dir = temp_dir("small");
        let path = dir.join("VERSION");
        std::fs::write(&path, b"5\nbookieHost: \"b:3181\"\n").unwrap();
        assert_eq!(read_small_file(&path, 1 << 10, "cookie").unwrap(), b"5\nbookieHost: \"b:3181\"\n");
        // Larger than the bound: refused without reading it (a sparse gigabyte here).
        File::create(&path).unwrap().set_len(1 << 30).unwrap();
        let e = read_small_file(&path, 1 << 20, "cookie").unwrap_err();
        assert_eq!((e.kind, e.path.as_deref()), (ErrorKind::Corrupt, Some(path.as_path())));
        assert!(e.detail.contains("cookie of 1073741824 bytes"), "{}", e.detail);
        // A FIFO is refused at once, not waited on; a device that never ends too.
        let fifo = dir.join("lastMark");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_small_file(&fifo, 16, "lastMark").unwrap_err();
        assert!(e.detail.contains("FIFO") && e.path.as_deref() == Some(fifo.as_path()), "{e}");
        let e = read_small_file(Path::new("/dev/zero"), 1 << 20, "cookie").unwrap_err();
        assert!(e.detail.contains("character device"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn skips_holes_of_sparse_files() {
        let dir = temp_dir("sparse");
        let path = dir.join("f");
        let f = File::create(&path).unwrap();
        f.write_all_at(b"data", 0).unwrap();
        f.set_len(64 << 20).unwrap();
        let src = FileSource::open(&path).unwrap();
        assert_eq!(src.next_data(0), Some(0));
        // Past the first block only zeros follow (a filesystem without SEEK_DATA
        // says "data" everywhere, which is also correct, only slower).
        if let Some(at) = src.next_data(1 << 20) {
            assert_eq!(at, 1 << 20);
        }
        assert_eq!(src.next_data(64 << 20), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_sources_lend_their_buffer() {
        let src = MemorySource::from_vec(vec![1, 2, 3]).with_path("x");
        assert_eq!(src.as_buffer().unwrap().as_slice(), &[1, 2, 3]);
        assert_eq!(read_vec_at(&src, 1, 10).unwrap(), vec![2, 3]);
        let mut buf = [0u8; 4];
        assert_eq!(read_exact_at(&src, 0, &mut buf).unwrap_err().kind, ErrorKind::Truncated);
    }
}

/// The record whose 4-byte big-endian size field is at `offset` (an entry log's or a
/// journal's): the `size` bytes after the field. The size is held to what the source
/// still has from there, and to `max_len`, before anything is allocated, so a damaged
/// field cannot ask for more.
pub fn read_record_at(source: &dyn ReadAt, offset: u64, max_len: usize) -> Result<Vec<u8>> {
    let mut field = [0u8; 4];
    read_exact_at(source, offset, &mut field)?;
    let size = u32::from_be_bytes(field) as u64;
    let available = source.len().saturating_sub(offset + 4);
    if size == 0 || size > available || size > max_len as u64 {
        let why = if size == 0 {
            "is 0".to_string()
        } else if size > available {
            format!("runs past the end of the data ({available} bytes after it)")
        } else {
            format!("is above the {max_len}-byte bound")
        };
        let e = Error::corrupt(offset, format!("no record here: its size field ({size}) {why}"));
        return Err(match source.path() {
            Some(p) => e.in_file(p),
            None => e,
        });
    }
    let mut buf = vec![0u8; size as usize];
    read_exact_at(source, offset + 4, &mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod record_tests {
    use super::*;

    #[test]
    fn a_record_is_read_whole_at_its_size_field_and_a_bad_size_allocates_nothing() {
        let mut bytes = vec![0xAA; 3];
        bytes.extend_from_slice(&5u32.to_be_bytes());
        bytes.extend_from_slice(b"hello");
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        let source = SliceSource(&bytes);
        assert_eq!(read_record_at(&source, 3, 1 << 20).unwrap(), b"hello");
        assert!(read_record_at(&source, 3, 4).unwrap_err().detail.contains("bound"));
        assert!(read_record_at(&source, 12, 1 << 20).unwrap_err().detail.contains("past the end"));
        assert_eq!(read_record_at(&source, 0, 1 << 20).unwrap_err().offset, 0);
        assert!(read_record_at(&source, 100, 1 << 20).is_err());
    }
}
