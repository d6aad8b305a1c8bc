//! `BookieId`: a validated bookie name, compared and hashed as its string.

use bkcodec_core::BookieId;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::IntoPyResult;

/// A bookie id (BP-41), validated as `BookieId.parse` validates it.
#[pyclass(name = "BookieId", module = "bkcodec", frozen, eq, ord, hash)]
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyBookieId(pub BookieId);

#[pymethods]
impl PyBookieId {
    #[new]
    fn new(py: Python<'_>, id: &str) -> PyResult<Self> {
        BookieId::parse(id).py_err(py).map(PyBookieId)
    }

    /// Validates `id` and wraps it; raises `ValueError` when BookKeeper would refuse it.
    #[staticmethod]
    fn parse(py: Python<'_>, id: &str) -> PyResult<Self> {
        Self::new(py, id)
    }

    /// `(host, port)` of a legacy `host:port` id, by `BookieSocketAddress` rules;
    /// raises `ValueError` for an id that is no address.
    fn to_socket_address(&self, py: Python<'_>) -> PyResult<(String, i32)> {
        self.0.to_socket_address().py_err(py)
    }

    fn __str__(&self) -> &str {
        self.0.as_str()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("BookieId({})", PyString::new(py, self.0.as_str()).repr()?))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyString>,))> {
        let py = slf.py();
        Ok((slf.get_type().into_any(), (PyString::new(py, slf.get().0.as_str()),)))
    }
}

/// A bookie given as a `BookieId` or a string.
pub fn extract_bookie_id(ob: &Bound<'_, PyAny>) -> PyResult<BookieId> {
    if let Ok(id) = ob.cast::<PyBookieId>() {
        return Ok(id.get().0.clone());
    }
    let s: &str = ob.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "a bookie is a BookieId or a str, not {}",
            ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    BookieId::parse(s).py_err(ob.py())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBookieId>()?;
    Ok(())
}
