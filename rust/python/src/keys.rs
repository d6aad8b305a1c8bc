//! Keys BookKeeper derives from a ledger password.

use bkcodec_core::digest;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::Password;

/// The master ("ledger") key a bookie stores: SHA-1("ledger" + password).
#[pyfunction]
fn master_key<'py>(py: Python<'py>, password: Password) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &digest::master_key(password.as_bytes()))
}

/// The HMAC-SHA1 key of the HMAC digest: SHA-1("mac" + password).
#[pyfunction]
fn mac_key<'py>(py: Python<'py>, password: Password) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &digest::mac_key(password.as_bytes()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(master_key, m)?)?;
    m.add_function(wrap_pyfunction!(mac_key, m)?)?;
    Ok(())
}
