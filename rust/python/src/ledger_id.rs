//! `LedgerId`: the 128-bit ledger id (scope and ledger halves) with its
//! qualified name, UUID form, index file path and location key.

use bkcodec_core::ledger_id::LedgerId as CoreLedgerId;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyString, PyTuple};

use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;

/// A 128-bit ledger id: `scope_id` is the most significant 64 bits and
/// `ledger_id` the least, both signed 64-bit values as Java stores them.
///
/// `LedgerId(ledger_id)` is scope 0, the ids BookKeeper writes today;
/// `LedgerId(scope_id, ledger_id)` names both halves.
#[pyclass(name = "LedgerId", module = "bkcodec", frozen, eq, ord, hash)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LedgerId(pub CoreLedgerId);

#[pymethods]
impl LedgerId {
    #[new]
    #[pyo3(signature = (first, second = None, /))]
    fn new(first: i64, second: Option<i64>) -> Self {
        match second {
            None => LedgerId(CoreLedgerId::unscoped(first)),
            Some(ledger_id) => LedgerId(CoreLedgerId::new(first, ledger_id)),
        }
    }

    /// The id whose 128-bit value is `value` (0 <= value < 2**128).
    #[staticmethod]
    fn from_value(value: u128) -> Self {
        LedgerId(CoreLedgerId::from_value(value))
    }

    /// Parses 32 hex digits (either case) or the 8-4-4-4-12 UUID spelling.
    #[staticmethod]
    fn from_qualified_name(py: Python<'_>, name: &str) -> PyResult<Self> {
        Ok(LedgerId(CoreLedgerId::from_qualified_name(name).py_err(py)?))
    }

    /// From a `uuid.UUID`, or a string `uuid.UUID` accepts: scope = most
    /// significant 64 bits, ledger id = least significant 64 bits.
    #[staticmethod]
    fn from_uuid(value: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = value.py();
        let uuid_class = py.import("uuid")?.getattr("UUID")?;
        let uuid = if value.is_instance_of::<PyString>() {
            uuid_class.call1((value,))?
        } else if value.is_instance(&uuid_class)? {
            value.clone()
        } else {
            return Err(PyTypeError::new_err(format!(
                "expected a uuid.UUID or a str, got {}",
                value.get_type().name()?
            )));
        };
        Ok(LedgerId(CoreLedgerId::from_value(uuid.getattr("int")?.extract()?)))
    }

    /// The same 128-bit value as a `uuid.UUID`.
    #[allow(clippy::wrong_self_convention)] // pyo3 methods borrow their receiver
    fn to_uuid<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let kwargs = [("int", self.0.value())].into_py_dict(py)?;
        py.import("uuid")?.getattr("UUID")?.call((), Some(&kwargs))
    }

    #[getter]
    fn scope_id(&self) -> i64 {
        self.0.scope_id
    }

    #[getter]
    fn ledger_id(&self) -> i64 {
        self.0.ledger_id
    }

    /// The 128-bit value, `(scope_id mod 2**64) << 64 | (ledger_id mod 2**64)`.
    #[getter]
    fn value(&self) -> u128 {
        self.0.value()
    }

    /// Exactly 32 lowercase hex digits.
    #[getter]
    fn qualified_name(&self) -> String {
        self.0.qualified_name()
    }

    /// The index file path relative to `<indexDir>/current`, with `/` separators.
    fn index_path(&self) -> String {
        self.0.index_path()
    }

    /// The DbLedgerStorage entry-location key: 16 bytes for scope 0, 24 otherwise.
    fn location_key<'py>(&self, py: Python<'py>, entry_id: i64) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.0.location_key(entry_id).as_bytes())
    }

    /// `(LedgerId, entry_id)` from a 16- or 24-byte location key.
    #[staticmethod]
    fn parse_location_key(py: Python<'_>, key: BytesInput) -> PyResult<(LedgerId, i64)> {
        let (id, entry_id) = CoreLedgerId::parse_location_key(key.as_slice()).py_err(py)?;
        Ok((LedgerId(id), entry_id))
    }

    fn __int__(&self) -> u128 {
        self.0.value()
    }

    fn __str__(&self) -> String {
        self.0.qualified_name()
    }

    fn __repr__(&self) -> String {
        format!("LedgerId({}, {})", self.0.scope_id, self.0.ledger_id)
    }

    fn __getnewargs__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, [self.0.scope_id, self.0.ledger_id])
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LedgerId>()
}
