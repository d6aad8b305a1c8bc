//! One entry at a time: `decode_entry`, `encode_entry` and the `Entry` class.

use bkcodec_core::entry::encode_entry as core_encode_entry;
use bkcodec_core::entry::Entry;
use bkcodec_core::{check_entry_with, Digester, EntryFormat, EntryHeader, Error, LedgerDigestSettings, DigestStatus};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMemoryView, PySlice};

use crate::args::{digest_policy, Password};
use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;

/// Entries at least this large are decoded and encoded with the GIL released.
const RELEASE_GIL_ABOVE: usize = 64 * 1024;

/// A decoded ledger entry. `payload` is a read-only view into the bytes it was
/// decoded from (no copy); keep using it only while those bytes stay unchanged.
#[pyclass(module = "bkcodec", name = "Entry", frozen)]
pub struct PyEntry {
    #[pyo3(get)]
    format_version: u8,
    #[pyo3(get)]
    scope_id: i64,
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    entry_id: i64,
    #[pyo3(get)]
    last_add_confirmed: i64,
    #[pyo3(get)]
    length: i64,
    digest_type: &'static str,
    digest: Vec<u8>,
    #[pyo3(get)]
    payload: Py<PyAny>,
    #[pyo3(get)]
    digest_ok: Option<bool>,
    #[pyo3(get)]
    header_len: usize,
    #[pyo3(get)]
    payload_offset: usize,
}

#[pymethods]
impl PyEntry {
    /// "crc32", "crc32c", "hmac" or "dummy".
    #[getter]
    fn digest_type(&self) -> &'static str {
        self.digest_type
    }

    /// The stored digest bytes (empty for DUMMY).
    #[getter]
    fn digest<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.digest)
    }

    /// Every attribute in a dict, the payload copied to `bytes`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("format_version", self.format_version)?;
        d.set_item("scope_id", self.scope_id)?;
        d.set_item("ledger_id", self.ledger_id)?;
        d.set_item("entry_id", self.entry_id)?;
        d.set_item("last_add_confirmed", self.last_add_confirmed)?;
        d.set_item("length", self.length)?;
        d.set_item("digest_type", self.digest_type)?;
        d.set_item("digest", self.digest(py))?;
        d.set_item("payload", self.payload_bytes(py)?)?;
        d.set_item("digest_ok", self.digest_ok)?;
        d.set_item("header_len", self.header_len)?;
        d.set_item("payload_offset", self.payload_offset)?;
        Ok(d)
    }

    /// Equal when every field and the payload bytes are equal.
    fn __eq__(&self, py: Python<'_>, other: &Self) -> PyResult<bool> {
        let same_fields = (self.format_version, self.scope_id, self.ledger_id, self.entry_id)
            == (other.format_version, other.scope_id, other.ledger_id, other.entry_id)
            && (self.last_add_confirmed, self.length, self.digest_type, &self.digest, self.digest_ok)
                == (other.last_add_confirmed, other.length, other.digest_type, &other.digest, other.digest_ok);
        Ok(same_fields && self.payload.bind(py).eq(other.payload.bind(py))?)
    }

    /// Entries view bytes that may change, so they are not hashable.
    #[classattr]
    const __hash__: Option<Py<PyAny>> = None;

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let scope = if self.format_version == 2 { format!("scope_id={}, ", self.scope_id) } else { String::new() };
        let payload = self.payload_bytes(py)?;
        let payload_len = payload.as_bytes().len();
        let shown = PyBytes::new(py, &payload.as_bytes()[..payload_len.min(16)]).repr()?;
        let more = if payload_len > 16 { format!("... ({payload_len} bytes)") } else { String::new() };
        let ok = match self.digest_ok {
            Some(true) => "True",
            Some(false) => "False",
            None => "None",
        };
        Ok(format!(
            "Entry(format_version={}, {scope}ledger_id={}, entry_id={}, last_add_confirmed={}, length={}, \
             digest_type='{}', digest_ok={ok}, payload={shown}{more})",
            self.format_version, self.ledger_id, self.entry_id, self.last_add_confirmed, self.length, self.digest_type,
        ))
    }
}

impl PyEntry {
    fn payload_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(self.payload.bind(py).call_method0("tobytes")?.cast_into::<PyBytes>()?)
    }

    /// Builds the Python object; `payload` is the view of the entry's payload.
    fn new(e: &Entry<'_>, verdict: DigestStatus, payload: Py<PyAny>) -> Self {
        PyEntry {
            format_version: e.header.format.number(),
            scope_id: e.header.scope_id,
            ledger_id: e.header.ledger_id,
            entry_id: e.header.entry_id,
            last_add_confirmed: e.header.last_add_confirmed,
            length: e.header.length,
            digest_type: e.digest_type.name(),
            digest: e.digest().to_vec(),
            payload,
            digest_ok: verdict.digest_ok(),
            header_len: e.header.format.header_len(),
            payload_offset: e.payload_offset(),
        }
    }
}

/// A read-only, byte-format view of `data[start:end]`, sharing its memory.
pub fn byte_view<'py>(data: &Bound<'py, PyAny>, start: usize, end: usize) -> PyResult<Bound<'py, PyAny>> {
    let py = data.py();
    let view = PyMemoryView::from(data)?;
    let flat = if view.getattr("ndim")?.extract::<usize>()? == 1 && view.getattr("format")?.extract::<String>()? == "B" {
        view.into_any()
    } else {
        view.call_method1("cast", ("B",))?
    };
    let view = flat.get_item(PySlice::new(py, start as isize, end as isize, 1))?;
    view.call_method0("toreadonly")
}

/// Decodes one entry (V1 or V2) and, unless `verify` is false, checks it the way
/// BookKeeper does: length, digest, ledger id, entry id.
#[pyfunction]
#[pyo3(signature = (data, *, digest_type = None, password = Password::default(), ledger_id = None, entry_id = None, verify = true), text_signature = "(data, *, digest_type=None, password=b'', ledger_id=None, entry_id=None, verify=True)")]
fn decode_entry(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    digest_type: Option<&str>,
    password: Password,
    ledger_id: Option<i64>,
    entry_id: Option<i64>,
    verify: bool,
) -> PyResult<PyEntry> {
    let policy = digest_policy(py, digest_type)?;
    let input: BytesInput = data.extract()?;
    let bytes = input.as_slice();
    let digests = LedgerDigestSettings::new(policy, password.as_bytes()).with_password_given(password.given());
    let work = || check_entry_with(bytes, &digests, verify, ledger_id, entry_id);
    let (entry, verdict) = if bytes.len() >= RELEASE_GIL_ABOVE { py.detach(work) } else { work() }.py_err(py)?;
    let payload = byte_view(data, entry.payload_offset(), bytes.len())?;
    Ok(PyEntry::new(&entry, verdict, payload.unbind()))
}

/// Packages an entry as a BookKeeper client does. Scope 0 without an explicit
/// format writes V1, byte-identical to BookKeeper; a non-zero scope, or
/// `format_version=2`, writes V2.
#[pyfunction]
#[pyo3(signature = (ledger_id, entry_id, last_add_confirmed, length, payload, *, digest_type = "crc32c", password = Password::default(), scope_id = 0, format_version = None), text_signature = "(ledger_id, entry_id, last_add_confirmed, length, payload, *, digest_type='crc32c', password=b'', scope_id=0, format_version=None)")]
#[allow(clippy::too_many_arguments)]
fn encode_entry<'py>(
    py: Python<'py>,
    ledger_id: i64,
    entry_id: i64,
    last_add_confirmed: i64,
    length: i64,
    payload: BytesInput,
    digest_type: &str,
    password: Password,
    scope_id: i64,
    format_version: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let dt = crate::args::digest_type(py, digest_type)?;
    let format = match (format_version, scope_id) {
        (None, 0) | (Some(1), 0) => EntryFormat::V1,
        (None, _) | (Some(2), _) => EntryFormat::V2,
        (Some(1), _) => {
            return Err(Error::invalid_argument("format_version=1 cannot carry a non-zero scope_id")).py_err(py)
        }
        (Some(v), _) => {
            return Err(Error::invalid_argument(format!("format_version must be 1 or 2, not {v}"))).py_err(py)
        }
    };
    let header = EntryHeader { format, scope_id, ledger_id, entry_id, last_add_confirmed, length };
    let body = payload.as_slice();
    let work = || core_encode_entry(&header, body, &Digester::new(dt, password.as_bytes()));
    let bytes = if body.len() >= RELEASE_GIL_ABOVE { py.detach(work) } else { work() }.py_err(py)?;
    Ok(PyBytes::new(py, &bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEntry>()?;
    m.add_function(wrap_pyfunction!(decode_entry, m)?)?;
    m.add_function(wrap_pyfunction!(encode_entry, m)?)?;
    Ok(())
}

