//! Where a reader's bytes come from: a memory-mapped file (memory stays bounded by
//! the page cache, files over 4 GiB work) or any in-memory buffer.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::{Advice, Mmap};

use crate::error::{Error, Result};

/// The bytes of one file, mapped or owned, and the path errors should name.
pub struct ByteSource {
    bytes: Box<dyn AsRef<[u8]> + Send + Sync>,
    path: Option<PathBuf>,
}

impl std::fmt::Debug for ByteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteSource").field("len", &self.len()).field("path", &self.path).finish()
    }
}

impl ByteSource {
    /// Maps `path` read-only. The file must not be truncated while mapped (bookies
    /// only append to logs and journals, and delete whole files, which is safe).
    pub fn open(path: impl AsRef<Path>) -> Result<ByteSource> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, 0, &e))?;
        let len = file.metadata().map_err(|e| Error::io(path, 0, &e))?.len();
        let bytes: Box<dyn AsRef<[u8]> + Send + Sync> = if len == 0 {
            Box::new(Vec::new())
        } else {
            // SAFETY: the map is read-only; the caller is told not to truncate the file.
            let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, 0, &e))?;
            // Scans read front to back; a failed hint is harmless.
            let _ = map.advise(Advice::Sequential);
            Box::new(map)
        };
        Ok(ByteSource { bytes, path: Some(path.to_path_buf()) })
    }

    /// Bytes already in memory (a test buffer, a Python buffer kept alive by its owner).
    pub fn from_bytes(bytes: impl AsRef<[u8]> + Send + Sync + 'static) -> ByteSource {
        ByteSource { bytes: Box::new(bytes), path: None }
    }

    /// Names the file errors should mention.
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> ByteSource {
        self.path = Some(path.into());
        self
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        (*self.bytes).as_ref()
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

    /// Attaches this source's path to an error whose offset is already absolute.
    pub fn locate(&self, err: Error) -> Error {
        match &self.path {
            Some(p) => err.in_file(p),
            None => err,
        }
    }

    /// Rebases an error found in the slice starting at `base`, and attaches the path.
    pub fn locate_at(&self, base: u64, err: Error) -> Error {
        self.locate(err.at_base(base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("bkcodec-source-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn maps_files_and_names_them_in_errors() {
        let p = temp_file("data", b"BKLO and more");
        let src = ByteSource::open(&p).unwrap();
        assert_eq!(src.bytes(), b"BKLO and more");
        assert_eq!((src.len(), src.path()), (13, Some(p.as_path())));
        let e = src.locate_at(100, Error::corrupt(4, "x"));
        assert_eq!((e.offset, e.path.as_deref()), (104, Some(p.as_path())));
        std::fs::remove_file(&p).unwrap();

        let empty = temp_file("empty", b"");
        assert!(ByteSource::open(&empty).unwrap().is_empty());
        std::fs::remove_file(&empty).unwrap();

        let missing = std::env::temp_dir().join("bkcodec-source-does-not-exist");
        let e = ByteSource::open(&missing).unwrap_err();
        assert_eq!((e.kind, e.path.as_deref()), (ErrorKind::Io, Some(missing.as_path())));
    }

    #[test]
    fn in_memory_bytes() {
        let src = ByteSource::from_bytes(vec![1u8, 2, 3]);
        assert_eq!((src.bytes(), src.path()), (&[1u8, 2, 3][..], None));
        assert_eq!(src.locate(Error::corrupt(1, "x")).path, None);
        let named = ByteSource::from_bytes(&b"abc"[..]).with_path("x.log");
        assert_eq!(named.locate(Error::corrupt(1, "x")).path, Some(PathBuf::from("x.log")));
    }
}
