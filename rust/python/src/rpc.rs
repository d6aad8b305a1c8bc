//! Metadata RPC messages of the thin-client proposal: one class per message, each
//! with `encode()` and a static `decode(data)`. Field meanings and the choices made
//! where the proposal is ambiguous are documented in `bkcodec_core::wire::rpc`.

use bkcodec_core::wire::rpc;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;
use crate::metadata::PyLedgerMetadata;

fn md(m: &Option<Bound<'_, PyLedgerMetadata>>) -> Option<bkcodec_core::LedgerMetadata> {
    m.as_ref().map(|m| m.get().0.clone())
}

fn py_md(m: &Option<bkcodec_core::LedgerMetadata>) -> Option<PyLedgerMetadata> {
    m.clone().map(PyLedgerMetadata)
}

/// Create/read/write/remove a ledger's metadata. `ledger_id=None` asks for a new id.
#[pyclass(name = "LedgerMetadataRequest", module = "bkcodec.rpc", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyLedgerMetadataRequest(rpc::LedgerMetadataRequest);

#[pymethods]
impl PyLedgerMetadataRequest {
    #[new]
    #[pyo3(signature = (ledger_id = None, metadata = None, expected_version = 0))]
    fn new(ledger_id: Option<i64>, metadata: Option<Bound<'_, PyLedgerMetadata>>, expected_version: i64) -> Self {
        PyLedgerMetadataRequest(rpc::LedgerMetadataRequest { ledger_id, metadata: md(&metadata), expected_version })
    }
    #[getter]
    fn ledger_id(&self) -> Option<i64> {
        self.0.ledger_id
    }
    #[getter]
    fn metadata(&self) -> Option<PyLedgerMetadata> {
        py_md(&self.0.metadata)
    }
    #[getter]
    fn expected_version(&self) -> i64 {
        self.0.expected_version
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.0.encode().py_err(py)?))
    }
    #[staticmethod]
    fn decode(py: Python<'_>, data: BytesInput) -> PyResult<Self> {
        rpc::LedgerMetadataRequest::decode(data.as_slice()).py_err(py).map(Self)
    }
    fn __repr__(&self) -> String {
        format!(
            "LedgerMetadataRequest(ledger_id={:?}, metadata={}, expected_version={})",
            self.0.ledger_id,
            if self.0.metadata.is_some() { "<LedgerMetadata>" } else { "None" },
            self.0.expected_version
        )
    }
}

#[pyclass(name = "LedgerMetadataResponse", module = "bkcodec.rpc", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyLedgerMetadataResponse(rpc::LedgerMetadataResponse);

#[pymethods]
impl PyLedgerMetadataResponse {
    #[new]
    #[pyo3(signature = (code = 0, ledger_id = 0, version = 0, metadata = None))]
    fn new(code: i32, ledger_id: i64, version: i64, metadata: Option<Bound<'_, PyLedgerMetadata>>) -> Self {
        PyLedgerMetadataResponse(rpc::LedgerMetadataResponse { code, ledger_id, version, metadata: md(&metadata) })
    }
    /// A `StatusCode` number (unknown numbers are kept).
    #[getter]
    fn code(&self) -> i32 {
        self.0.code
    }
    #[getter]
    fn ledger_id(&self) -> i64 {
        self.0.ledger_id
    }
    #[getter]
    fn version(&self) -> i64 {
        self.0.version
    }
    #[getter]
    fn metadata(&self) -> Option<PyLedgerMetadata> {
        py_md(&self.0.metadata)
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.0.encode().py_err(py)?))
    }
    #[staticmethod]
    fn decode(py: Python<'_>, data: BytesInput) -> PyResult<Self> {
        rpc::LedgerMetadataResponse::decode(data.as_slice()).py_err(py).map(Self)
    }
    fn __repr__(&self) -> String {
        format!(
            "LedgerMetadataResponse(code={}, ledger_id={}, version={}, metadata={})",
            self.0.code,
            self.0.ledger_id,
            self.0.version,
            if self.0.metadata.is_some() { "<LedgerMetadata>" } else { "None" }
        )
    }
}

#[pyclass(name = "GetLedgerRangesRequest", module = "bkcodec.rpc", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyGetLedgerRangesRequest(rpc::GetLedgerRangesRequest);

#[pymethods]
impl PyGetLedgerRangesRequest {
    #[new]
    #[pyo3(signature = (limit_per_response = 0))]
    fn new(limit_per_response: i32) -> Self {
        PyGetLedgerRangesRequest(rpc::GetLedgerRangesRequest { limit_per_response })
    }
    #[getter]
    fn limit_per_response(&self) -> i32 {
        self.0.limit_per_response
    }
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.encode())
    }
    #[staticmethod]
    fn decode(py: Python<'_>, data: BytesInput) -> PyResult<Self> {
        rpc::GetLedgerRangesRequest::decode(data.as_slice()).py_err(py).map(Self)
    }
    fn __repr__(&self) -> String {
        format!("GetLedgerRangesRequest(limit_per_response={})", self.0.limit_per_response)
    }
}

#[pyclass(name = "GetLedgerRangesResponse", module = "bkcodec.rpc", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyGetLedgerRangesResponse(rpc::GetLedgerRangesResponse);

#[pymethods]
impl PyGetLedgerRangesResponse {
    #[new]
    #[pyo3(signature = (code = 0, count = 0, serialized_ranges = None))]
    fn new(code: i32, count: i32, serialized_ranges: Option<BytesInput>) -> Self {
        let serialized_ranges = serialized_ranges.map(|b| b.as_slice().to_vec()).unwrap_or_default();
        PyGetLedgerRangesResponse(rpc::GetLedgerRangesResponse { code, count, serialized_ranges })
    }
    #[getter]
    fn code(&self) -> i32 {
        self.0.code
    }
    #[getter]
    fn count(&self) -> i32 {
        self.0.count
    }
    /// Opaque: the proposal does not define the layout.
    #[getter]
    fn serialized_ranges<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.serialized_ranges)
    }
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.encode())
    }
    #[staticmethod]
    fn decode(py: Python<'_>, data: BytesInput) -> PyResult<Self> {
        rpc::GetLedgerRangesResponse::decode(data.as_slice()).py_err(py).map(Self)
    }
    fn __repr__(&self) -> String {
        format!(
            "GetLedgerRangesResponse(code={}, count={}, serialized_ranges=<{} bytes>)",
            self.0.code,
            self.0.count,
            self.0.serialized_ranges.len()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLedgerMetadataRequest>()?;
    m.add_class::<PyLedgerMetadataResponse>()?;
    m.add_class::<PyGetLedgerRangesRequest>()?;
    m.add_class::<PyGetLedgerRangesResponse>()?;
    Ok(())
}
