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
