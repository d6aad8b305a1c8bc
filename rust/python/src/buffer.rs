//! Zero-copy input: any object with the buffer protocol (bytes, bytearray,
//! memoryview, mmap, numpy arrays) is read in place.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A contiguous byte buffer borrowed from a Python object for as long as this lives.
pub struct BytesInput {
    buf: PyBuffer<u8>,
}

impl BytesInput {
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the buffer is C-contiguous (checked on extraction) and stays
        // alive while `self.buf` holds its export. As with every zero-copy reader
        // of mutable buffers, concurrent mutation by other threads is the caller's
        // responsibility.
        unsafe { std::slice::from_raw_parts(self.buf.buf_ptr() as *const u8, self.buf.len_bytes()) }
    }
}

impl<'py> FromPyObject<'_, 'py> for BytesInput {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let buf = PyBuffer::<u8>::get(&ob).map_err(|_| {
            PyTypeError::new_err(format!(
                "expected a bytes-like object (bytes, bytearray, memoryview, mmap, ...), got {}",
                ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        if !buf.is_c_contiguous() {
            return Err(PyTypeError::new_err("buffer must be C-contiguous"));
        }
        Ok(BytesInput { buf })
    }
}
