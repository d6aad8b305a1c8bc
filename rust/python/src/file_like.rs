//! Python objects as the readers' sources: what a path argument may be instead of
//! a path. A pyarrow `NativeFile` (`pyarrow.fs.FileSystem.open_input_file`: remote
//! stores read in ranges), or any object with `read_at(n, offset)` and `size()`, or
//! with `seek`/`read` and a length `seek(0, 2)` tells.
//!
//! The core reads through `ReadAt` without the GIL; each read here takes it only for
//! the Python call and copies what came back into the reader's window.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bkcodec_core::files::{FileSource, ReadAt};
use bkcodec_core::Error;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// How the object is read.
enum Access {
    /// `read_at(n, offset)`: positioned reads, safe to share.
    ReadAt,
    /// `seek(offset)` then `read(n)`: one at a time (a Python read may release the
    /// GIL between the two calls, so the lock, not the GIL, keeps them together).
    SeekRead(Mutex<()>),
}

/// A Python file-like object read at offsets.
pub struct PyFileSource {
    object: Py<PyAny>,
    access: Access,
    len: u64,
    path: PathBuf,
}

impl PyFileSource {
    pub fn new(object: &Bound<'_, PyAny>) -> PyResult<PyFileSource> {
        let access = if object.hasattr("read_at")? {
            Access::ReadAt
        } else if object.hasattr("seek")? && object.hasattr("read")? {
            Access::SeekRead(Mutex::new(()))
        } else {
            return Err(PyTypeError::new_err(format!(
                "a file to read is a path, or an object with read_at(n, offset) and size() (a pyarrow NativeFile) \
                 or with seek() and read(), not {}",
                object.get_type().name()?
            )));
        };
        let len = match object.getattr("size") {
            Ok(size) if size.is_callable() => size.call0()?.extract::<u64>()?,
            Ok(size) if !size.is_none() => size.extract::<u64>()?,
            _ => object.call_method1("seek", (0, 2))?.extract::<u64>()?,
        };
        Ok(PyFileSource { object: object.clone().unbind(), access, len, path: PathBuf::from(name_of(object)?) })
    }

    fn call_read<'py>(&self, py: Python<'py>, offset: u64, want: usize) -> PyResult<Bound<'py, PyAny>> {
        let object = self.object.bind(py);
        match self.access {
            Access::ReadAt => object.call_method1("read_at", (want, offset)),
            Access::SeekRead(_) => {
                object.call_method1("seek", (offset,))?;
                object.call_method1("read", (want,))
            }
        }
    }

    /// One Python read of up to `buf.len()` bytes at `offset`, copied into `buf`.
    fn read_once(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let got = self.call_read(py, offset, buf.len()).map_err(|e| python_io_error(py, e, "read"))?;
            if let Ok(bytes) = got.cast::<PyBytes>() {
                let data = bytes.as_bytes();
                if data.len() > buf.len() {
                    let asked = buf.len();
                    return Err(io::Error::other(format!("read returned {} bytes where {asked} were asked for", data.len())));
                }
                buf[..data.len()].copy_from_slice(data);
                return Ok(data.len());
            }
            // pyarrow Buffers, bytearrays, memoryviews: anything with the buffer protocol.
            let view = PyBuffer::<u8>::get(&got).map_err(|e| python_io_error(py, e, "read"))?;
            let n = view.item_count();
            if n > buf.len() {
                return Err(io::Error::other(format!("read returned {n} bytes where {} were asked for", buf.len())));
            }
            view.copy_to_slice(py, &mut buf[..n]).map_err(|e| python_io_error(py, e, "read"))?;
            Ok(n)
        })
    }
}

/// What errors call the object: its `path` (pyarrow's files, with the bucket and key
/// of a remote one), else its `name` (Python's files), else its type.
fn name_of(object: &Bound<'_, PyAny>) -> PyResult<String> {
    for attribute in ["path", "name"] {
        if let Ok(value) = object.getattr(attribute) {
            if let Ok(text) = value.extract::<String>() {
                if !text.is_empty() {
                    return Ok(text);
                }
            }
        }
    }
    Ok(format!("<{}>", object.get_type().name()?))
}

/// A Python exception from a read as an I/O error (the core adds file and offset):
/// an `OSError`'s errno is kept.
fn python_io_error(py: Python<'_>, e: PyErr, call: &str) -> io::Error {
    let value = e.value(py);
    let text = format!("{call} raised {}: {value}", value.get_type().name().map(|n| n.to_string()).unwrap_or_default());
    let errno = value.getattr("errno").ok().and_then(|n| n.extract::<i32>().ok());
    match errno {
        Some(code) => io::Error::new(io::Error::from_raw_os_error(code).kind(), text),
        None => io::Error::other(text),
    }
}

impl ReadAt for PyFileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        // Taken before the GIL, so a thread holding it never waits for the GIL while
        // another holding the GIL waits for it.
        let _turn = match &self.access {
            Access::SeekRead(lock) => Some(lock.lock().unwrap_or_else(|e| e.into_inner())),
            Access::ReadAt => None,
        };
        let mut done = 0;
        while done < buf.len() {
            match self.read_once(offset + done as u64, &mut buf[done..])? {
                0 => break,
                n => done += n,
            }
        }
        Ok(done)
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// A reader's input: a path (opened here, without the GIL) or a file-like object.
pub enum FileInput {
    Path(PathBuf),
    Object(Arc<PyFileSource>),
}

impl<'py> FromPyObject<'_, 'py> for FileInput {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(path) = ob.extract::<PathBuf>() {
            return Ok(FileInput::Path(path));
        }
        Ok(FileInput::Object(Arc::new(PyFileSource::new(&ob.to_owned())?)))
    }
}

impl FileInput {

    /// The path, or the object's name: where ids in file names are read from.
    pub fn path(&self) -> &Path {
        match self {
            FileInput::Path(p) => p,
            FileInput::Object(o) => &o.path,
        }
    }

    /// The source, opened (a path) without the GIL.
    pub fn open(&self) -> Result<Arc<dyn ReadAt>, Error> {
        match self {
            FileInput::Path(p) => Ok(Arc::new(FileSource::open(p)?)),
            FileInput::Object(o) => Ok(o.clone()),
        }
    }
}
