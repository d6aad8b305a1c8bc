//! v2 wire frames: one class per message, `decode_request`/`decode_response` for
//! whole frames, `split_frames` for a captured stream, and the return-code mapping.
//!
//! Every class checks itself on construction by encoding (so an object that exists
//! can always be sent), and `encode()` gives the frame with its length prefix.

use bkcodec_core::wire::v2::{self, OpCode, Request, Response, MASTER_KEY_LENGTH};
use bkcodec_core::wire::{self, DEFAULT_MAX_FRAME_SIZE};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;

fn key(b: &[u8]) -> PyResult<[u8; MASTER_KEY_LENGTH]> {
    b.try_into().map_err(|_| {
        PyValueError::new_err(format!("a master key is {MASTER_KEY_LENGTH} bytes, got {}", b.len()))
    })
}

fn opt_key(b: Option<BytesInput>) -> PyResult<Option<[u8; MASTER_KEY_LENGTH]>> {
    b.map(|b| key(b.as_slice())).transpose()
}

fn bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

/// ADD request: master key and entry (a V1 entry; BP-35 entries are refused, EBADREQ).
#[pyclass(name = "AddRequest", module = "bkcodec.wire", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyAddRequest {
    #[pyo3(get)]
    version: i8,
    #[pyo3(get)]
    flags: u16,
    master_key: [u8; MASTER_KEY_LENGTH],
    entry: Vec<u8>,
}

impl PyAddRequest {
    fn core(&self) -> v2::AddRequest<'_> {
        v2::AddRequest { version: self.version, flags: self.flags, master_key: self.master_key, entry: &self.entry }
    }
}

#[pymethods]
impl PyAddRequest {
    #[new]
    #[pyo3(signature = (master_key, entry, *, flags = 0, version = 2))]
    fn new(py: Python<'_>, master_key: BytesInput, entry: BytesInput, flags: u16, version: i8) -> PyResult<Self> {
        let m = PyAddRequest { version, flags, master_key: key(master_key.as_slice())?, entry: entry.as_slice().to_vec() };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::AddEntry as u8
    }
    #[getter]
    fn master_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        bytes(py, &self.master_key)
    }
    #[getter]
    fn entry<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        bytes(py, &self.entry)
    }
    /// Read from the entry, as the bookie does.
    #[getter]
    fn ledger_id(&self) -> i64 {
        self.core().ledger_id()
    }
    #[getter]
    fn entry_id(&self) -> i64 {
        self.core().entry_id()
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "AddRequest(ledger_id={}, entry_id={}, entry=<{} bytes>, flags={}, version={})",
            self.ledger_id(),
            self.entry_id(),
            self.entry.len(),
            self.flags,
            self.version
        )
    }
}

#[pyclass(name = "AddResponse", module = "bkcodec.wire", frozen, eq, get_all)]
#[derive(Clone, PartialEq)]
pub struct PyAddResponse {
    ledger_id: i64,
    entry_id: i64,
    rc: i32,
    version: i8,
    flags: u16,
}

impl PyAddResponse {
    fn core(&self) -> v2::AddResponse {
        v2::AddResponse { version: self.version, flags: self.flags, rc: self.rc, ledger_id: self.ledger_id, entry_id: self.entry_id }
    }
}

#[pymethods]
impl PyAddResponse {
    #[new]
    #[pyo3(signature = (ledger_id, entry_id, rc = 0, *, version = 2, flags = 0))]
    fn new(py: Python<'_>, ledger_id: i64, entry_id: i64, rc: i32, version: i8, flags: u16) -> PyResult<Self> {
        let m = PyAddResponse { ledger_id, entry_id, rc, version, flags };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::AddEntry as u8
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "AddResponse(ledger_id={}, entry_id={}, rc={}, version={}, flags={})",
            self.ledger_id, self.entry_id, self.rc, self.version, self.flags
        )
    }
}

/// READ request; with `flags & 1` (fencing) at version 2 it carries the master key.
#[pyclass(name = "ReadRequest", module = "bkcodec.wire", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyReadRequest {
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    entry_id: i64,
    master_key: Option<[u8; MASTER_KEY_LENGTH]>,
    #[pyo3(get)]
    flags: u16,
    #[pyo3(get)]
    version: i8,
}

impl PyReadRequest {
    fn core(&self) -> v2::ReadRequest {
        v2::ReadRequest {
            version: self.version,
            flags: self.flags,
            ledger_id: self.ledger_id,
            entry_id: self.entry_id,
            master_key: self.master_key,
        }
    }
}

#[pymethods]
impl PyReadRequest {
    #[new]
    #[pyo3(signature = (ledger_id, entry_id, *, master_key = None, flags = 0, version = 2))]
    fn new(py: Python<'_>, ledger_id: i64, entry_id: i64, master_key: Option<BytesInput>, flags: u16, version: i8) -> PyResult<Self> {
        let m = PyReadRequest { ledger_id, entry_id, master_key: opt_key(master_key)?, flags, version };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::ReadEntry as u8
    }
    #[getter]
    fn master_key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.master_key.as_ref().map(|k| bytes(py, k))
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "ReadRequest(ledger_id={}, entry_id={}, master_key={}, flags={}, version={})",
            self.ledger_id,
            self.entry_id,
            if self.master_key.is_some() { "<20 bytes>" } else { "None" },
            self.flags,
            self.version
        )
    }
}

/// READ response: the stored entry when `rc` is 0 (EOK).
#[pyclass(name = "ReadResponse", module = "bkcodec.wire", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyReadResponse {
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    entry_id: i64,
    data: Vec<u8>,
    #[pyo3(get)]
    rc: i32,
    #[pyo3(get)]
    version: i8,
    #[pyo3(get)]
    flags: u16,
}

impl PyReadResponse {
    fn core(&self) -> v2::ReadResponse<'_> {
        v2::ReadResponse {
            version: self.version,
            flags: self.flags,
            rc: self.rc,
            ledger_id: self.ledger_id,
            entry_id: self.entry_id,
            data: &self.data,
        }
    }
}

#[pymethods]
impl PyReadResponse {
    #[new]
    #[pyo3(signature = (ledger_id, entry_id, data = None, rc = 0, *, version = 2, flags = 0))]
    fn new(py: Python<'_>, ledger_id: i64, entry_id: i64, data: Option<BytesInput>, rc: i32, version: i8, flags: u16) -> PyResult<Self> {
        let data = data.map(|d| d.as_slice().to_vec()).unwrap_or_default();
        let m = PyReadResponse { ledger_id, entry_id, data, rc, version, flags };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::ReadEntry as u8
    }
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        bytes(py, &self.data)
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "ReadResponse(ledger_id={}, entry_id={}, data=<{} bytes>, rc={}, version={})",
            self.ledger_id,
            self.entry_id,
            self.data.len(),
            self.rc,
            self.version
        )
    }
}

/// BATCH_READ request (BookKeeper 4.17+).
#[pyclass(name = "BatchReadRequest", module = "bkcodec.wire", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyBatchReadRequest {
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    start_entry_id: i64,
    #[pyo3(get)]
    request_id: i64,
    #[pyo3(get)]
    max_count: i32,
    #[pyo3(get)]
    max_size: i64,
    master_key: Option<[u8; MASTER_KEY_LENGTH]>,
    #[pyo3(get)]
    flags: u16,
    #[pyo3(get)]
    version: i8,
}

impl PyBatchReadRequest {
    fn core(&self) -> v2::BatchReadRequest {
        v2::BatchReadRequest {
            version: self.version,
            flags: self.flags,
            ledger_id: self.ledger_id,
            start_entry_id: self.start_entry_id,
            request_id: self.request_id,
            max_count: self.max_count,
            max_size: self.max_size,
            master_key: self.master_key,
        }
    }
}

#[pymethods]
impl PyBatchReadRequest {
    #[new]
    #[pyo3(signature = (ledger_id, start_entry_id, request_id, max_count, max_size, *, master_key = None, flags = 0, version = 2))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        ledger_id: i64,
        start_entry_id: i64,
        request_id: i64,
        max_count: i32,
        max_size: i64,
        master_key: Option<BytesInput>,
        flags: u16,
        version: i8,
    ) -> PyResult<Self> {
        let m = PyBatchReadRequest {
            ledger_id,
            start_entry_id,
            request_id,
            max_count,
            max_size,
            master_key: opt_key(master_key)?,
            flags,
            version,
        };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::BatchReadEntry as u8
    }
    #[getter]
    fn master_key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.master_key.as_ref().map(|k| bytes(py, k))
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "BatchReadRequest(ledger_id={}, start_entry_id={}, request_id={}, max_count={}, max_size={}, flags={}, version={})",
            self.ledger_id, self.start_entry_id, self.request_id, self.max_count, self.max_size, self.flags, self.version
        )
    }
}

/// BATCH_READ response: the entries read, in order.
#[pyclass(name = "BatchReadResponse", module = "bkcodec.wire", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyBatchReadResponse {
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    start_entry_id: i64,
    #[pyo3(get)]
    request_id: i64,
    entries: Vec<Vec<u8>>,
    #[pyo3(get)]
    rc: i32,
    #[pyo3(get)]
    version: i8,
    #[pyo3(get)]
    flags: u16,
}

impl PyBatchReadResponse {
    fn core(&self) -> v2::BatchReadResponse<'_> {
        v2::BatchReadResponse {
            version: self.version,
            flags: self.flags,
            rc: self.rc,
            ledger_id: self.ledger_id,
            start_entry_id: self.start_entry_id,
            request_id: self.request_id,
            entries: self.entries.iter().map(|e| &e[..]).collect(),
        }
    }
}

#[pymethods]
impl PyBatchReadResponse {
    #[new]
    #[pyo3(signature = (ledger_id, start_entry_id, request_id, entries = Vec::new(), rc = 0, *, version = 2, flags = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        ledger_id: i64,
        start_entry_id: i64,
        request_id: i64,
        entries: Vec<BytesInput>,
        rc: i32,
        version: i8,
        flags: u16,
    ) -> PyResult<Self> {
        let entries = entries.iter().map(|e| e.as_slice().to_vec()).collect();
        let m = PyBatchReadResponse { ledger_id, start_entry_id, request_id, entries, rc, version, flags };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::BatchReadEntry as u8
    }
    #[getter]
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.entries.iter().map(|e| bytes(py, e)))
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "BatchReadResponse(ledger_id={}, start_entry_id={}, request_id={}, entries=<{} entries>, rc={}, version={})",
            self.ledger_id,
            self.start_entry_id,
            self.request_id,
            self.entries.len(),
            self.rc,
            self.version
        )
    }
}

/// AUTH message (either direction).
#[pyclass(name = "AuthMessage", module = "bkcodec.wire", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyAuthMessage {
    #[pyo3(get)]
    auth_plugin_name: String,
    payload: Vec<u8>,
    #[pyo3(get)]
    version: i8,
    #[pyo3(get)]
    flags: u16,
}

impl PyAuthMessage {
    fn core(&self) -> v2::AuthMessage {
        v2::AuthMessage {
            version: self.version,
            flags: self.flags,
            auth_plugin_name: self.auth_plugin_name.clone(),
            payload: self.payload.clone(),
        }
    }
}

#[pymethods]
impl PyAuthMessage {
    #[new]
    #[pyo3(signature = (auth_plugin_name, payload, *, version = 2, flags = 0))]
    fn new(py: Python<'_>, auth_plugin_name: String, payload: BytesInput, version: i8, flags: u16) -> PyResult<Self> {
        let m = PyAuthMessage { auth_plugin_name, payload: payload.as_slice().to_vec(), version, flags };
        m.core().encode().py_err(py)?;
        Ok(m)
    }
    #[getter]
    fn op(&self) -> u8 {
        OpCode::Auth as u8
    }
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        bytes(py, &self.payload)
    }
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(bytes(py, &self.core().encode().py_err(py)?))
    }
    fn __repr__(&self) -> String {
        format!("AuthMessage(auth_plugin_name={:?}, payload=<{} bytes>, version={})", self.auth_plugin_name, self.payload.len(), self.version)
    }
}

fn auth(py: Python<'_>, m: v2::AuthMessage) -> PyResult<Py<PyAny>> {
    let v = PyAuthMessage { auth_plugin_name: m.auth_plugin_name, payload: m.payload, version: m.version, flags: m.flags };
    Ok(Py::new(py, v)?.into_any())
}

/// Decodes one whole request frame (length prefix included).
#[pyfunction]
#[pyo3(signature = (frame, *, max_frame_size = DEFAULT_MAX_FRAME_SIZE))]
fn decode_request(py: Python<'_>, frame: BytesInput, max_frame_size: usize) -> PyResult<Py<PyAny>> {
    Ok(match v2::decode_request(frame.as_slice(), max_frame_size).py_err(py)? {
        Request::Add(m) => Py::new(
            py,
            PyAddRequest { version: m.version, flags: m.flags, master_key: m.master_key, entry: m.entry.to_vec() },
        )?
        .into_any(),
        Request::Read(m) => Py::new(
            py,
            PyReadRequest {
                ledger_id: m.ledger_id,
                entry_id: m.entry_id,
                master_key: m.master_key,
                flags: m.flags,
                version: m.version,
            },
        )?
        .into_any(),
        Request::BatchRead(m) => Py::new(
            py,
            PyBatchReadRequest {
                ledger_id: m.ledger_id,
                start_entry_id: m.start_entry_id,
                request_id: m.request_id,
                max_count: m.max_count,
                max_size: m.max_size,
                master_key: m.master_key,
                flags: m.flags,
                version: m.version,
            },
        )?
        .into_any(),
        Request::Auth(m) => auth(py, m)?,
    })
}

/// Decodes one whole response frame (length prefix included).
#[pyfunction]
#[pyo3(signature = (frame, *, max_frame_size = DEFAULT_MAX_FRAME_SIZE))]
fn decode_response(py: Python<'_>, frame: BytesInput, max_frame_size: usize) -> PyResult<Py<PyAny>> {
    Ok(match v2::decode_response(frame.as_slice(), max_frame_size).py_err(py)? {
        Response::Add(m) => Py::new(
            py,
            PyAddResponse { ledger_id: m.ledger_id, entry_id: m.entry_id, rc: m.rc, version: m.version, flags: m.flags },
        )?
        .into_any(),
        Response::Read(m) => Py::new(
            py,
            PyReadResponse {
                ledger_id: m.ledger_id,
                entry_id: m.entry_id,
                data: m.data.to_vec(),
                rc: m.rc,
                version: m.version,
                flags: m.flags,
            },
        )?
        .into_any(),
        Response::BatchRead(m) => Py::new(
            py,
            PyBatchReadResponse {
                ledger_id: m.ledger_id,
                start_entry_id: m.start_entry_id,
                request_id: m.request_id,
                entries: m.entries.iter().map(|e| e.to_vec()).collect(),
                rc: m.rc,
                version: m.version,
                flags: m.flags,
            },
        )?
        .into_any(),
        Response::Auth(m) => auth(py, m)?,
    })
}

/// Splits a captured byte stream into whole frames (length prefixes included).
/// With `partial=True` a stream cut mid-frame is no error: `(frames, rest)`, the
/// whole frames and the bytes after them.
#[pyfunction]
#[pyo3(signature = (data, *, max_frame_size = DEFAULT_MAX_FRAME_SIZE, partial = false))]
fn split_frames<'py>(
    py: Python<'py>,
    data: BytesInput,
    max_frame_size: usize,
    partial: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let data = data.as_slice();
    if !partial {
        let frames = wire::split_frames(data, max_frame_size).py_err(py)?;
        return Ok(PyList::new(py, frames.into_iter().map(|f| bytes(py, f)))?.into_any());
    }
    let (frames, rest) = wire::split_whole_frames(data, max_frame_size).py_err(py)?;
    let frames = PyList::new(py, frames.into_iter().map(|f| bytes(py, f)))?;
    Ok((frames, bytes(py, &data[rest..])).into_pyobject(py)?.into_any())
}

/// The v3 `StatusCode` of a v2 return code, or None for a code without one.
#[pyfunction]
fn v2_to_v3_status(rc: i32) -> Option<i32> {
    v2::v2_to_v3_status(rc)
}

/// The v2 return code of a v3 `StatusCode`, or None.
#[pyfunction]
fn v3_to_v2_status(status: i32) -> Option<i32> {
    v2::v3_to_v2_status(status)
}

/// The v2 opcodes, `(name, value)`.
#[pyfunction]
fn wire_op_codes() -> Vec<(&'static str, u8)> {
    OpCode::ALL.iter().map(|&op| (op.name(), op as u8)).collect()
}

/// The header flags, `(name, bit)`.
#[pyfunction]
fn wire_flags() -> Vec<(&'static str, u16)> {
    v2::flags::ALL.to_vec()
}

/// The return codes, `(name, v2 value, v3 StatusCode value)`.
#[pyfunction]
fn wire_return_codes() -> Vec<(&'static str, i32, i32)> {
    v2::RETURN_CODES.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAddRequest>()?;
    m.add_class::<PyAddResponse>()?;
    m.add_class::<PyReadRequest>()?;
    m.add_class::<PyReadResponse>()?;
    m.add_class::<PyBatchReadRequest>()?;
    m.add_class::<PyBatchReadResponse>()?;
    m.add_class::<PyAuthMessage>()?;
    m.add_function(wrap_pyfunction!(decode_request, m)?)?;
    m.add_function(wrap_pyfunction!(decode_response, m)?)?;
    m.add_function(wrap_pyfunction!(split_frames, m)?)?;
    m.add_function(wrap_pyfunction!(v2_to_v3_status, m)?)?;
    m.add_function(wrap_pyfunction!(v3_to_v2_status, m)?)?;
    m.add_function(wrap_pyfunction!(wire_op_codes, m)?)?;
    m.add_function(wrap_pyfunction!(wire_flags, m)?)?;
    m.add_function(wrap_pyfunction!(wire_return_codes, m)?)?;
    m.add("DEFAULT_MAX_FRAME_SIZE", DEFAULT_MAX_FRAME_SIZE)?;
    Ok(())
}
