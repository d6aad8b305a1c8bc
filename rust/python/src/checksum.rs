//! `crc32c` and `crc32` with BookKeeper's resume semantics.

use bkcodec_core::digest;
use pyo3::prelude::*;

use crate::buffer::BytesInput;

/// Inputs at least this large are checksummed with the GIL released.
const RELEASE_GIL_ABOVE: usize = 64 * 1024;

/// CRC-32C of `data`, resumed from the finalized CRC `value`.
#[pyfunction]
#[pyo3(signature = (data, value = 0))]
fn crc32c(py: Python<'_>, data: BytesInput, value: u32) -> u32 {
    let s = data.as_slice();
    if s.len() >= RELEASE_GIL_ABOVE {
        py.detach(|| digest::crc32c_append(value, s))
    } else {
        digest::crc32c_append(value, s)
    }
}

/// CRC-32 (zlib) of `data`, resumed from the finalized CRC `value`.
#[pyfunction]
#[pyo3(signature = (data, value = 0))]
fn crc32(py: Python<'_>, data: BytesInput, value: u32) -> u32 {
    let s = data.as_slice();
    if s.len() >= RELEASE_GIL_ABOVE {
        py.detach(|| digest::crc32_append(value, s))
    } else {
        digest::crc32_append(value, s)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(crc32, m)?)?;
    Ok(())
}
