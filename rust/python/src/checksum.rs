//! `crc32c` and `crc32` with BookKeeper's resume semantics.

use bkcodec_core::digest;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::BytesInput;

/// Inputs at least this large are checksummed with the GIL released.
const RELEASE_GIL_ABOVE: usize = 64 * 1024;

/// Runs `checksum` over the bytes of `data` (any buffer). `bytes` is read
/// directly: a buffer export costs about as much as checksumming a kilobyte.
fn with_bytes(data: &Bound<'_, PyAny>, value: u32, checksum: fn(u32, &[u8]) -> u32) -> PyResult<u32> {
    let py = data.py();
    let run = |s: &[u8]| {
        if s.len() >= RELEASE_GIL_ABOVE {
            py.detach(|| checksum(value, s))
        } else {
            checksum(value, s)
        }
    };
    match data.cast::<PyBytes>() {
        Ok(b) => Ok(run(b.as_bytes())),
        Err(_) => Ok(run(data.extract::<BytesInput>()?.as_slice())),
    }
}

/// CRC-32C of `data`, resumed from the finalized CRC `value`.
#[pyfunction]
#[pyo3(signature = (data, value = 0))]
fn crc32c(data: &Bound<'_, PyAny>, value: u32) -> PyResult<u32> {
    with_bytes(data, value, digest::crc32c_append)
}

/// CRC-32 (zlib) of `data`, resumed from the finalized CRC `value`.
#[pyfunction]
#[pyo3(signature = (data, value = 0))]
fn crc32(data: &Bound<'_, PyAny>, value: u32) -> PyResult<u32> {
    with_bytes(data, value, digest::crc32_append)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(crc32, m)?)?;
    Ok(())
}
