//! Ledger index files: `read_index`, `index_header`, `write_index_file`, `index_path`.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use bkcodec_core::arrow::IndexBatchReader;
use bkcodec_core::files::source::read_vec_at;
use bkcodec_core::files::FileSource;
use bkcodec_core::entry::decode_lac;
use bkcodec_core::files::index_file::{
    encode_index_file, index_path as core_index_path, ledger_id_from_index_path as core_index_path_ledger_id, STATE_FENCED_BIT,
};
use bkcodec_core::files::{IndexHeader, Location};
use bkcodec_core::{DigestType, Error};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMapping};

use crate::buffer::BytesInput;
use crate::file_like::FileInput;
use crate::errors::IntoPyResult;
use crate::record_batch_reader::PyFileBatchReader;

/// Reads an index file's entry locations as a `RecordBatchReader`.
#[pyfunction]
#[pyo3(signature = (path, *, ledger_id = None, include_absent = false, batch_size = 65536))]
fn read_index(
    py: Python<'_>,
    path: FileInput,
    ledger_id: Option<i64>,
    include_absent: bool,
    batch_size: usize,
) -> PyResult<PyFileBatchReader> {
    let ledger_id = ledger_id.or_else(|| core_index_path_ledger_id(path.path()));
    let reader = py.detach(|| IndexBatchReader::new(path.open()?, ledger_id, include_absent, batch_size)).py_err(py)?;
    let path = path.path();
    let source = format!("index file {:?}", path.display().to_string());
    Ok(PyFileBatchReader::new(Box::new(reader), source))
}

/// The header of a ledger index file.
#[pyclass(module = "bkcodec", name = "IndexHeader", frozen, eq)]
#[derive(PartialEq)]
pub struct PyIndexHeader {
    version: i32,
    master_key: Vec<u8>,
    state_bits: i32,
    explicit_lac_blob: Option<Vec<u8>>,
}

#[pymethods]
impl PyIndexHeader {
    /// 0, or 1 (with an explicit-LAC field).
    #[getter]
    fn version(&self) -> i32 {
        self.version
    }

    /// The ledger's master key: SHA-1("ledger" + password).
    #[getter]
    fn master_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.master_key)
    }

    #[getter]
    fn state_bits(&self) -> i32 {
        self.state_bits
    }

    #[getter]
    fn fenced(&self) -> bool {
        self.state_bits & STATE_FENCED_BIT != 0
    }

    /// The explicit-LAC blob (ledger id, LAC, digest), if one was stored.
    #[getter]
    fn explicit_lac_blob<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.explicit_lac_blob.as_deref().map(|b| PyBytes::new(py, b))
    }

    /// The LAC value in the blob (see `decode_lac` to verify its digest).
    #[getter]
    fn explicit_lac(&self) -> Option<i64> {
        self.explicit_lac_blob.as_deref().and_then(|b| decode_lac(b, DigestType::Dummy).ok()).map(|l| l.lac)
    }

    fn __repr__(&self) -> String {
        let lac = self.explicit_lac().map_or_else(|| "None".to_string(), |l| l.to_string());
        format!(
            "IndexHeader(version={}, master_key=<{} bytes>, fenced={}, explicit_lac={lac})",
            self.version,
            self.master_key.len(),
            if self.fenced() { "True" } else { "False" }
        )
    }
}

/// Reads and checks an index file's header as `FileInfo.readHeader` does.
#[pyfunction]
fn index_header(py: Python<'_>, path: PathBuf) -> PyResult<PyIndexHeader> {
    let head = py
        .detach(|| {
            let source = FileSource::open(&path)?;
            let head = read_vec_at(&source, 0, bkcodec_core::files::index_file::HEADER_LEN as usize)?;
            IndexHeader::parse(&head).map_err(|e| e.in_file(&path))?;
            Ok::<_, Error>(head)
        })
        .py_err(py)?;
    let h = IndexHeader::parse(&head).expect("parsed above");
    Ok(PyIndexHeader {
        version: h.version,
        master_key: h.master_key.to_vec(),
        state_bits: h.state_bits,
        explicit_lac_blob: h.explicit_lac.map(<[u8]>::to_vec),
    })
}

/// `{entry_id: location}` from a mapping or an iterable of pairs.
fn extract_locations(locations: &Bound<'_, PyAny>) -> PyResult<Vec<(u64, Location)>> {
    let pairs: Vec<(i64, i64)> = if let Ok(m) = locations.cast::<PyMapping>() {
        m.items()?.extract()?
    } else {
        locations
            .try_iter()
            .map_err(|_| PyTypeError::new_err("locations is a mapping or an iterable of (entry_id, location) pairs"))?
            .map(|p| p?.extract::<(i64, i64)>())
            .collect::<PyResult<_>>()?
    };
    let mut by_entry = BTreeMap::new();
    for (entry_id, raw) in pairs {
        let entry_id = u64::try_from(entry_id).map_err(|_| PyValueError::new_err(format!("entry id {entry_id} is negative")))?;
        let location = Location::from_raw(raw)
            .ok_or_else(|| PyValueError::new_err(format!("entry {entry_id} has location 0, which means no entry")))?;
        by_entry.insert(entry_id, location);
    }
    Ok(by_entry.into_iter().collect())
}

/// Writes an index file as the bookie's `FileInfo` does: the header, then whole
/// 8 KiB pages of locations up to the page holding the highest entry id.
#[pyfunction]
#[pyo3(signature = (path, locations, *, master_key = None, fenced = false, explicit_lac = None, version = 1, overwrite = false))]
#[allow(clippy::too_many_arguments)]
fn write_index_file(
    py: Python<'_>,
    path: PathBuf,
    locations: &Bound<'_, PyAny>,
    master_key: Option<BytesInput>,
    fenced: bool,
    explicit_lac: Option<BytesInput>,
    version: i32,
    overwrite: bool,
) -> PyResult<()> {
    let entries = extract_locations(locations)?;
    let header = IndexHeader {
        version,
        master_key: master_key.as_ref().map_or(&[][..], BytesInput::as_slice),
        state_bits: if fenced { STATE_FENCED_BIT } else { 0 },
        explicit_lac: explicit_lac.as_ref().map(BytesInput::as_slice),
    };
    let bytes = header.encode().and_then(|_| encode_index_file(&header, &entries)).py_err(py)?;
    py.detach(|| {
        let mut open = OpenOptions::new();
        open.write(true);
        if overwrite {
            open.create(true).truncate(true);
        } else {
            open.create_new(true);
        }
        let mut file = open.open(&path).map_err(|e| Error::io(&path, 0, &e))?;
        file.write_all(&bytes).and_then(|_| file.sync_all()).map_err(|e| Error::io(&path, 0, &e))
    })
    .py_err(py)
}

/// Where the bookie keeps a ledger's index file, relative to an index directory's
/// `current/`: `hex(bits 8-15)/hex(bits 0-7)/hex(ledger_id).idx`.
#[pyfunction]
fn index_path(ledger_id: i64) -> String {
    core_index_path(0, ledger_id).to_string_lossy().into_owned()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyIndexHeader>()?;
    m.add_function(wrap_pyfunction!(read_index, m)?)?;
    m.add_function(wrap_pyfunction!(index_header, m)?)?;
    m.add_function(wrap_pyfunction!(write_index_file, m)?)?;
    m.add_function(wrap_pyfunction!(index_path, m)?)?;
    Ok(())
}
