//! Explicit-LAC blobs: `decode_lac`, `encode_lac` and the `ExplicitLac` class.

use bkcodec_core::entry::{decode_lac as core_decode_lac, encode_lac as core_encode_lac};
use bkcodec_core::{DigestType, Digester};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::args::Password;
use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;

/// A decoded explicit-LAC blob: ledger id, last-add-confirmed, digest.
#[pyclass(module = "bkcodec", name = "ExplicitLac", frozen)]
pub struct PyExplicitLac {
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    lac: i64,
    digest_type: DigestType,
    digest: Vec<u8>,
    #[pyo3(get)]
    digest_ok: Option<bool>,
}

#[pymethods]
impl PyExplicitLac {
    #[getter]
    fn digest_type(&self) -> &'static str {
        self.digest_type.name()
    }

    #[getter]
    fn digest<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.digest)
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("ledger_id", self.ledger_id)?;
        d.set_item("lac", self.lac)?;
        d.set_item("digest_type", self.digest_type.name())?;
        d.set_item("digest", self.digest(py))?;
        d.set_item("digest_ok", self.digest_ok)?;
        Ok(d)
    }

    fn __eq__(&self, other: &Self) -> bool {
        (self.ledger_id, self.lac, self.digest_type, &self.digest, self.digest_ok)
            == (other.ledger_id, other.lac, other.digest_type, &other.digest, other.digest_ok)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.ledger_id, self.lac, self.digest_type, &self.digest, self.digest_ok).hash(&mut h);
        h.finish()
    }

    fn __repr__(&self) -> String {
        let ok = match self.digest_ok {
            Some(true) => "True",
            Some(false) => "False",
            None => "None",
        };
        format!(
            "ExplicitLac(ledger_id={}, lac={}, digest_type='{}', digest_ok={ok})",
            self.ledger_id,
            self.lac,
            self.digest_type.name()
        )
    }
}

/// Decodes an explicit-LAC blob and, unless `verify` is false, checks it as
/// BookKeeper's `verifyDigestAndReturnLac` does: length, digest, ledger id.
#[pyfunction]
#[pyo3(signature = (data, *, digest_type, password = Password::default(), ledger_id = None, verify = true), text_signature = "(data, *, digest_type, password=b'', ledger_id=None, verify=True)")]
fn decode_lac(
    py: Python<'_>,
    data: BytesInput,
    digest_type: &str,
    password: Password,
    ledger_id: Option<i64>,
    verify: bool,
) -> PyResult<PyExplicitLac> {
    let dt = crate::args::digest_type(py, digest_type)?;
    let blob = core_decode_lac(data.as_slice(), dt).py_err(py)?;
    let digest_ok = if verify {
        blob.verify(&Digester::new(dt, password.as_bytes()), ledger_id).py_err(py)?;
        Some(true)
    } else {
        None
    };
    Ok(PyExplicitLac { ledger_id: blob.ledger_id, lac: blob.lac, digest_type: dt, digest: blob.digest().to_vec(), digest_ok })
}

/// Packages an explicit LAC as `computeDigestAndPackageForSendingLac` does.
#[pyfunction]
#[pyo3(signature = (ledger_id, lac, *, digest_type = "crc32c", password = Password::default()), text_signature = "(ledger_id, lac, *, digest_type='crc32c', password=b'')")]
fn encode_lac<'py>(
    py: Python<'py>,
    ledger_id: i64,
    lac: i64,
    digest_type: &str,
    password: Password,
) -> PyResult<Bound<'py, PyBytes>> {
    let dt = crate::args::digest_type(py, digest_type)?;
    Ok(PyBytes::new(py, &core_encode_lac(ledger_id, lac, &Digester::new(dt, password.as_bytes()))))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyExplicitLac>()?;
    m.add_function(wrap_pyfunction!(decode_lac, m)?)?;
    m.add_function(wrap_pyfunction!(encode_lac, m)?)?;
    Ok(())
}
