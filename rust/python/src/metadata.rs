//! Ledger metadata: the `LedgerMetadata` class, decode/encode, znode paths, and
//! the batch forms (an Arrow table, a directory of dumped znodes).

use std::path::PathBuf;

use bkcodec_core::metadata::table::{ledger_metadata_batch, ledger_metadata_schema};
use bkcodec_core::metadata::znode::{self, ZnodeLayout};
use bkcodec_core::metadata::znode_dump::{decode_znode, scan_znode_dir, SkippedFile, ZnodeRecord};
use bkcodec_core::metadata::{self, Ensemble, LedgerMetadata, LedgerState, CURRENT_FORMAT_VERSION};
use bkcodec_core::{DigestType, Error};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3_arrow::PyTable;

use crate::bookie_id::{extract_bookie_id, PyBookieId};
use crate::buffer::BytesInput;
use crate::errors::{to_pyerr, IntoPyResult};

// The Python signatures spell the current format out as 3 (a literal shows in help()).
const _: () = assert!(CURRENT_FORMAT_VERSION == 3);

/// Ledger metadata as BookKeeper stores it in ZooKeeper or etcd.
#[pyclass(name = "LedgerMetadata", module = "bkcodec", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyLedgerMetadata(pub LedgerMetadata);

fn extract_ensembles(ob: &Bound<'_, PyAny>) -> PyResult<Vec<Ensemble>> {
    let pairs: Vec<Bound<'_, PyAny>> = match ob.cast::<PyDict>() {
        Ok(d) => d.items().iter().collect(),
        Err(_) => ob.try_iter()?.collect::<PyResult<_>>()?,
    };
    pairs
        .iter()
        .map(|pair| {
            let (first_entry_id, bookies): (i64, Bound<'_, PyAny>) = pair.extract().map_err(|_| {
                PyTypeError::new_err("each ensemble is a (first_entry_id, [bookie, ...]) pair")
            })?;
            let bookies = bookies.try_iter()?.map(|b| extract_bookie_id(&b?)).collect::<PyResult<Vec<_>>>()?;
            Ok(Ensemble { first_entry_id, bookies })
        })
        .collect()
}

fn extract_custom(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, Vec<u8>)>> {
    let Some(ob) = ob else { return Ok(Vec::new()) };
    let d = ob.cast::<PyDict>().map_err(|_| PyTypeError::new_err("custom_metadata is a dict[str, bytes]"))?;
    d.iter()
        .map(|(k, v)| {
            let k: String = k.extract()?;
            let v: Vec<u8> = v.extract::<BytesInput>().map(|b| b.as_slice().to_vec())?;
            Ok((k, v))
        })
        .collect()
}

#[pymethods]
impl PyLedgerMetadata {
    /// Builds metadata; `ensembles` is a list of `(first_entry_id, [bookie, ...])`
    /// pairs or a dict of them, bookies as `BookieId` or `str`. Sizes default from the
    /// ensembles (write quorum = ensemble size, ack quorum = write quorum). Raises
    /// `ValueError` for anything BookKeeper's builder refuses.
    #[new]
    #[pyo3(signature = (
        ensembles, *, ensemble_size=None, write_quorum_size=None, ack_quorum_size=None, state="OPEN",
        last_entry_id=-1, length=0, digest_type=None, password=None, ctime=None, custom_metadata=None,
        ctoken=0, format_version=3,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        ensembles: &Bound<'_, PyAny>,
        ensemble_size: Option<i32>,
        write_quorum_size: Option<i32>,
        ack_quorum_size: Option<i32>,
        state: &str,
        last_entry_id: i64,
        length: i64,
        digest_type: Option<&str>,
        password: Option<BytesInput>,
        ctime: Option<i64>,
        custom_metadata: Option<&Bound<'_, PyAny>>,
        ctoken: i64,
        format_version: u8,
    ) -> PyResult<Self> {
        let ensembles = extract_ensembles(ensembles)?;
        let ensemble_size = match ensemble_size {
            Some(n) => n,
            None => ensembles.first().map(|e| e.bookies.len() as i32).ok_or_else(|| {
                PyValueError::new_err("there must be at least one ensemble")
            })?,
        };
        let write_quorum_size = write_quorum_size.unwrap_or(ensemble_size);
        let state = LedgerState::from_name(state).ok_or_else(|| {
            PyValueError::new_err(format!("state {state:?} is not OPEN, IN_RECOVERY or CLOSED"))
        })?;
        let digest_type = digest_type.map(DigestType::from_name).transpose().py_err(py)?;
        let md = LedgerMetadata {
            format_version,
            ensemble_size,
            write_quorum_size,
            ack_quorum_size: ack_quorum_size.unwrap_or(write_quorum_size),
            state,
            last_entry_id,
            length,
            ensembles,
            digest_type,
            password: password.map(|p| p.as_slice().to_vec()),
            ctime,
            custom_metadata: extract_custom(custom_metadata)?,
            ctoken,
        };
        md.validate().py_err(py)?;
        Ok(PyLedgerMetadata(md))
    }

    /// The format the metadata was read from (1, 2 or 3).
    #[getter]
    fn format_version(&self) -> u8 {
        self.0.format_version
    }
    #[getter]
    fn ensemble_size(&self) -> i32 {
        self.0.ensemble_size
    }
    #[getter]
    fn write_quorum_size(&self) -> i32 {
        self.0.write_quorum_size
    }
    #[getter]
    fn ack_quorum_size(&self) -> i32 {
        self.0.ack_quorum_size
    }
    /// "OPEN", "IN_RECOVERY" or "CLOSED".
    #[getter]
    fn state(&self) -> &'static str {
        self.0.state.name()
    }
    #[getter]
    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
    /// -1 unless closed.
    #[getter]
    fn last_entry_id(&self) -> i64 {
        self.0.last_entry_id
    }
    /// 0 unless closed.
    #[getter]
    fn length(&self) -> i64 {
        self.0.length
    }
    /// `[(first_entry_id, [BookieId, ...]), ...]` in entry order.
    #[getter]
    fn ensembles<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .0
            .ensembles
            .iter()
            .map(|e| ensemble_tuple(py, e))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }
    /// "crc32", "crc32c", "hmac", "dummy", or None when the metadata has no password.
    #[getter]
    fn digest_type(&self) -> Option<&'static str> {
        self.0.digest_type.map(|d| d.name())
    }
    #[getter]
    fn password<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.0.password.as_deref().map(|p| PyBytes::new(py, p))
    }
    /// Creation time in ms, or None when not stored.
    #[getter]
    fn ctime(&self) -> Option<i64> {
        self.0.ctime
    }
    #[getter]
    fn custom_metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.0.custom_metadata {
            d.set_item(k, PyBytes::new(py, v))?;
        }
        Ok(d)
    }
    #[getter]
    fn ctoken(&self) -> i64 {
        self.0.ctoken
    }

    /// The bookies that store `entry_id`, or None below the first ensemble.
    fn ensemble_at<'py>(&self, py: Python<'py>, entry_id: i64) -> PyResult<Option<Bound<'py, PyList>>> {
        self.0
            .ensemble_at(entry_id)
            .map(|e| PyList::new(py, e.bookies.iter().map(|b| PyBookieId(b.clone()))))
            .transpose()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = &self.0;
        let mut s = format!(
            "LedgerMetadata(format_version={}, state='{}', ensemble_size={}, write_quorum_size={}, ack_quorum_size={}",
            m.format_version,
            m.state.name(),
            m.ensemble_size,
            m.write_quorum_size,
            m.ack_quorum_size
        );
        if m.is_closed() {
            s += &format!(", last_entry_id={}, length={}", m.last_entry_id, m.length);
        }
        if let (Some(dt), Some(pw)) = (m.digest_type, &m.password) {
            // The password is a secret; say only that it is there.
            s += &format!(", digest_type='{}', password=<{} bytes>", dt.name(), pw.len());
        }
        s += &format!(", ensembles={}", m.ensembles.len());
        if let Some(c) = m.ctime {
            s += &format!(", ctime={c}");
        }
        if !m.custom_metadata.is_empty() {
            let keys = PyList::new(py, m.custom_metadata.iter().map(|(k, _)| k.as_str()))?;
            s += &format!(", custom_metadata_keys={}", keys.repr()?);
        }
        if m.ctoken != 0 {
            s += &format!(", ctoken={}", m.ctoken);
        }
        Ok(s + ")")
    }
}

fn ensemble_tuple<'py>(py: Python<'py>, e: &Ensemble) -> PyResult<Bound<'py, PyTuple>> {
    let bookies = PyList::new(py, e.bookies.iter().map(|b| PyBookieId(b.clone())))?;
    PyTuple::new(py, [e.first_entry_id.into_pyobject(py)?.into_any(), bookies.into_any()])
}

/// Decodes the data of a ledger metadata znode (formats 1, 2 and 3).
#[pyfunction]
fn decode_ledger_metadata(py: Python<'_>, data: BytesInput) -> PyResult<PyLedgerMetadata> {
    metadata::decode_ledger_metadata(data.as_slice()).py_err(py).map(PyLedgerMetadata)
}

/// Encodes metadata as BookKeeper writes `format_version` (3 unless told).
#[pyfunction]
#[pyo3(signature = (md, format_version = 3))]
fn encode_ledger_metadata<'py>(py: Python<'py>, md: &PyLedgerMetadata, format_version: u8) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = metadata::encode_ledger_metadata(&md.0, format_version).py_err(py)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The znode path (or etcd key) of a ledger's metadata.
#[pyfunction]
#[pyo3(signature = (ledger_id, layout = "hierarchical", prefix = None))]
fn ledger_znode_path(py: Python<'_>, ledger_id: i64, layout: &str, prefix: Option<&str>) -> PyResult<String> {
    let layout = ZnodeLayout::from_name(layout).py_err(py)?;
    znode::ledger_znode_path(ledger_id, layout, prefix.unwrap_or(layout.default_prefix())).py_err(py)
}

/// Every ledger-manager layout's name, in the order BookKeeper introduced them.
#[pyfunction]
fn znode_layouts() -> Vec<&'static str> {
    ZnodeLayout::ALL.iter().map(|l| l.name()).collect()
}

/// The ledger id a znode path (or etcd key) names, in any layout.
#[pyfunction]
fn parse_ledger_znode_path(py: Python<'_>, path: PathBuf) -> PyResult<i64> {
    znode::parse_ledger_znode_path(&path.to_string_lossy()).map(|(id, _)| id).py_err(py)
}

/// A directory (str or path-like) rather than an iterable of pairs.
fn as_directory(items: &Bound<'_, PyAny>) -> Option<PathBuf> {
    let os = items.py().import("os").ok()?;
    let pathlike = os.getattr("PathLike").ok()?;
    if items.is_instance_of::<pyo3::types::PyString>() || items.is_instance(&pathlike).unwrap_or(false) {
        items.extract::<PathBuf>().ok()
    } else {
        None
    }
}

fn records_from_items(items: &Bound<'_, PyAny>) -> PyResult<Vec<ZnodeRecord>> {
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let item = item?;
        let (key, data): (Bound<'_, PyAny>, BytesInput) = item.extract().map_err(|_| {
            PyTypeError::new_err("each item is a (znode path or ledger id, bytes) pair")
        })?;
        let record = if let Ok(id) = key.extract::<i64>() {
            decode_znode(None, Some(id), data.as_slice())
        } else {
            let path: PathBuf = key.extract().map_err(|_| {
                PyTypeError::new_err("the first element of each item is a znode path (str) or a ledger id (int)")
            })?;
            decode_znode(Some(&path.to_string_lossy()), None, data.as_slice())
        };
        out.push(record);
    }
    Ok(out)
}

/// A dump directory's znodes. When it holds files but none named as ledger
/// metadata, a `UserWarning` says which were skipped and why: an empty result
/// alone would look like an empty dump. (A dump's usual other files, `LAYOUT`,
/// cookies and the like, pass without a word when ledgers are found.)
fn read_dir_warning_if_empty(py: Python<'_>, dir: &std::path::Path) -> PyResult<Vec<ZnodeRecord>> {
    let (records, skipped) = py.detach(|| scan_znode_dir(dir)).py_err(py)?;
    if records.is_empty() && !skipped.is_empty() {
        let message = skipped_files_message(dir, &skipped);
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        PyErr::warn(py, &category, &std::ffi::CString::new(message).unwrap_or_default(), 1)?;
    }
    Ok(records)
}

fn skipped_files_message(dir: &std::path::Path, skipped: &[SkippedFile]) -> String {
    const SHOWN: usize = 5;
    let names: Vec<&str> = skipped.iter().take(SHOWN).map(|f| f.path.as_str()).collect();
    let more = skipped.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let mut reasons: Vec<&str> = skipped.iter().map(|f| f.reason.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    format!(
        "no ledger metadata found in {}: {} files skipped ({}{more}): {}",
        dir.display(),
        skipped.len(),
        names.join(", "),
        reasons.join("; ")
    )
}

/// One row per znode: decoded fields, the ensembles as a list column, the ledger id
/// from the path, and `error`/`error_offset` for znodes that do not decode.
#[pyfunction]
fn ledger_metadata_table<'py>(py: Python<'py>, items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let records = match as_directory(items) {
        Some(dir) => read_dir_warning_if_empty(py, &dir)?,
        None => records_from_items(items)?,
    };
    let batch = py.detach(|| ledger_metadata_batch(&records)).py_err(py)?;
    PyTable::try_new(vec![batch], ledger_metadata_schema())?.into_pyarrow(py)
}

/// `{ledger_id: LedgerMetadata}` for every ledger metadata file under `path`.
/// With `strict` (the default) the first bad znode, or a ledger id seen twice,
/// raises; otherwise those are skipped.
#[pyfunction]
#[pyo3(signature = (path, *, strict = true))]
fn load_ledger_metadata_dir<'py>(py: Python<'py>, path: PathBuf, strict: bool) -> PyResult<Bound<'py, PyDict>> {
    let records = read_dir_warning_if_empty(py, &path)?;
    let out = PyDict::new(py);
    for r in records {
        let (Some(id), Some(p)) = (r.ledger_id, r.path.as_deref()) else { continue };
        match r.metadata {
            Ok(md) => {
                if out.contains(id)? {
                    if strict {
                        let e = Error::invalid_argument(format!("ledger {id} appears twice; the second is {p}"));
                        return Err(to_pyerr(py, e));
                    }
                    continue;
                }
                out.set_item(id, PyLedgerMetadata(md))?;
            }
            Err(e) if strict => return Err(to_pyerr(py, e)),
            Err(_) => {}
        }
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLedgerMetadata>()?;
    m.add_function(wrap_pyfunction!(decode_ledger_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(encode_ledger_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_znode_path, m)?)?;
    m.add_function(wrap_pyfunction!(parse_ledger_znode_path, m)?)?;
    m.add_function(wrap_pyfunction!(znode_layouts, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_metadata_table, m)?)?;
    m.add_function(wrap_pyfunction!(load_ledger_metadata_dir, m)?)?;
    Ok(())
}
