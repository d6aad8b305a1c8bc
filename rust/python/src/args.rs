//! Argument types shared by the entry functions: passwords and digest-type names.

use bkcodec_core::{DigestPolicy, DigestType};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;

/// A ledger password: any bytes-like object, or a `str` taken as UTF-8 (how
/// BookKeeper turns a configured password into bytes).
#[derive(Default)]
pub enum Password {
    #[default]
    Empty,
    Text(String),
    Bytes(BytesInput),
}

impl Password {
    /// Whether the caller gave one, even empty (the empty password is a real
    /// BookKeeper password), rather than leaving it out.
    pub fn given(&self) -> bool {
        !matches!(self, Password::Empty)
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Password::Empty => b"",
            Password::Text(s) => s.as_bytes(),
            Password::Bytes(b) => b.as_slice(),
        }
    }
}

impl<'py> FromPyObject<'_, 'py> for Password {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.cast::<PyString>() {
            return Ok(Password::Text(s.to_str()?.to_owned()));
        }
        ob.extract::<BytesInput>()
            .map(Password::Bytes)
            .map_err(|_| PyTypeError::new_err("password must be bytes-like or str"))
    }
}

/// `None`/`"auto"` or a digest type name.
pub fn digest_policy(py: Python<'_>, name: Option<&str>) -> PyResult<DigestPolicy> {
    DigestPolicy::from_name(name).py_err(py)
}

/// A digest type name; `"auto"` is refused where the data cannot say its own type.
pub fn digest_type(py: Python<'_>, name: &str) -> PyResult<DigestType> {
    DigestType::from_name(name).py_err(py)
}
