//! The cluster: a bookie's inventory, the audit of many, and the placement rule
//! (see `bkcodec.cluster`, which assembles the arguments from a bookie's layout).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use bkcodec_core::cluster::{
    self, ledger_flags_from_batches, Audit, ClusterMetadata, CopySource, InventoryContext, InventoryFile, InventoryReader, LocationIndex, Status,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyTuple};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;

use crate::args::Password;
use crate::errors::IntoPyResult;
use crate::file_args::file_scan_options;
use crate::file_like::FileInput;
use crate::metadata::PyLedgerMetadata;
use crate::record_batch_reader::PyFileBatchReader;

fn batches(input: AnyRecordBatch) -> PyResult<Vec<RecordBatch>> {
    input
        .into_reader()?
        .map(|b| b.map_err(|e| PyValueError::new_err(format!("reading an Arrow stream: {e}"))))
        .collect()
}

/// The inventory of one bookie's files (or one entry logger's), as a `RecordBatchReader`.
#[pyfunction]
#[pyo3(signature = (
    bookie_id, files, *, index = None, ledger_states = None, digest_type = None, password = Password::default(),
    ledger_metadata = None, batch_size = 65536,
), text_signature = "(bookie_id, files, *, index=None, ledger_states=None, digest_type=None, password=b'', ledger_metadata=None, batch_size=65536)")]
#[allow(clippy::too_many_arguments)]
fn cluster_read_inventory(
    py: Python<'_>,
    bookie_id: String,
    files: Vec<(FileInput, String)>,
    index: Option<AnyRecordBatch>,
    ledger_states: Option<AnyRecordBatch>,
    digest_type: Option<&Bound<'_, PyAny>>,
    password: Password,
    ledger_metadata: Option<&Bound<'_, PyAny>>,
    batch_size: usize,
) -> PyResult<PyFileBatchReader> {
    let options = file_scan_options(
        py, digest_type, &password, ledger_metadata, true, batch_size, "hash", "flag", None, None,
    )?;
    let files = files
        .into_iter()
        .map(|(input, kind)| {
            let file = match input {
                FileInput::Path(p) => InventoryFile::Path(p),
                object => InventoryFile::Opened { name: object.path().to_path_buf(), source: object.open()? },
            };
            CopySource::from_name(&kind).map(|k| (file, k))
        })
        .collect::<Result<Vec<_>, _>>()
        .py_err(py)?;
    let index = index.map(batches).transpose()?;
    let index = index.map(|b| LocationIndex::from_batches(&b)).transpose().py_err(py)?.map(Arc::new);
    let states = ledger_states.map(batches).transpose()?;
    let ledgers = states.map(|b| ledger_flags_from_batches(&b)).transpose().py_err(py)?.map(Arc::new);
    let count = files.len();
    let source = format!("inventory of bookie {bookie_id:?} ({count} files)");
    let context = InventoryContext { bookie_id, index, ledgers };
    Ok(PyFileBatchReader::new(Box::new(InventoryReader::new(files, options, context)), source))
}

/// The ledgers' metadata by `(scope, ledger)`: a dump directory (read by the core,
/// scoped UUID names included), or a mapping of ledger id (or `(scope, ledger)`) to
/// `LedgerMetadata`. Returns the metadata and the dump's unreadable files.
fn metadata_of(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<(ClusterMetadata, Vec<String>)> {
    if let Ok(mapping) = value.cast::<PyMapping>() {
        let mut out = HashMap::new();
        for item in mapping.items()?.iter() {
            let (key, md): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let key = match key.cast::<PyTuple>() {
                Ok(pair) => pair.extract::<(i64, i64)>()?,
                Err(_) => (0, key.extract::<i64>().map_err(|_| PyTypeError::new_err("metadata keys are ledger ids or (scope_id, ledger_id) pairs"))?),
            };
            let md = md
                .cast::<PyLedgerMetadata>()
                .map_err(|_| PyTypeError::new_err("metadata values are LedgerMetadata"))?;
            out.insert(key, md.get().0.clone());
        }
        return Ok((out, Vec::new()));
    }
    let dir: PathBuf = value
        .extract()
        .map_err(|_| PyTypeError::new_err("metadata is a dump directory or a mapping of ledger id to LedgerMetadata"))?;
    let (ledgers, problems) = py.detach(|| cluster::load_metadata(&dir)).py_err(py)?;
    Ok((ledgers, problems.iter().map(|e| e.to_string()).collect()))
}

/// Audits inventories (Arrow streams or tables) against metadata: returns
/// `(findings, ledgers, metadata_problems)`.
#[pyfunction]
#[pyo3(signature = (inventories, *, bookies = Vec::new(), metadata = None, incomplete = Vec::new(), expected_copies = 0))]
fn cluster_audit(
    py: Python<'_>,
    inventories: Vec<AnyRecordBatch>,
    bookies: Vec<String>,
    metadata: Option<&Bound<'_, PyAny>>,
    incomplete: Vec<String>,
    expected_copies: usize,
) -> PyResult<(Py<PyAny>, Py<PyAny>, Vec<String>)> {
    let mut audit = Audit::new();
    audit.reserve(expected_copies);
    for b in &bookies {
        audit.add_bookie(b).py_err(py)?;
    }
    for b in &incomplete {
        audit.mark_incomplete(b).py_err(py)?;
    }
    for input in inventories {
        for batch in input.into_reader()? {
            let batch = batch.map_err(|e| PyValueError::new_err(format!("reading an inventory: {e}")))?;
            audit.add_inventory_batch(&batch).py_err(py)?;
        }
    }
    let (metadata, problems) = match metadata.filter(|m| !m.is_none()) {
        Some(m) => {
            let (md, problems) = metadata_of(py, m)?;
            (Some(md), problems)
        }
        None => (None, Vec::new()),
    };
    let report = py.detach(|| audit.run(metadata.as_ref())).py_err(py)?;
    let findings = PyTable::try_new(vec![report.findings.clone()], report.findings.schema())?.into_pyarrow(py)?;
    let ledgers = PyTable::try_new(vec![report.ledgers.clone()], report.ledgers.schema())?.into_pyarrow(py)?;
    Ok((findings.unbind(), ledgers.unbind(), problems))
}

/// The ensemble positions that store `entry_id` (BookKeeper's round-robin schedule).
#[pyfunction]
fn cluster_write_set(entry_id: i64, ensemble_size: usize, write_quorum: usize) -> PyResult<Vec<usize>> {
    if entry_id < 0 || ensemble_size == 0 || write_quorum == 0 || write_quorum > ensemble_size {
        return Err(PyValueError::new_err(format!(
            "need entry_id >= 0 and 0 < write_quorum <= ensemble_size (got {entry_id}, {ensemble_size}, {write_quorum})"
        )));
    }
    Ok(cluster::write_set(entry_id, ensemble_size, write_quorum).collect())
}

/// The records at `offsets` of an entry log or journal (each offset that of a
/// record's size field, as readers and inventories give it): an Arrow table of
/// `offset`, `record` (the entry's bytes) and `error` (why there is none there).
/// For reading chosen copies without scanning their files.
#[pyfunction]
fn read_records_at(py: Python<'_>, path: PathBuf, offsets: Vec<u64>) -> PyResult<Py<PyAny>> {
    use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
    use arrow_array::ArrayRef;
    use arrow_schema::{DataType, Field, Schema};
    use bkcodec_core::files::source::{read_record_at, FileSource};

    let batch = py
        .detach(|| -> Result<RecordBatch, bkcodec_core::Error> {
            let source = FileSource::open(&path)?;
            let (mut offset, mut record, mut error) = (Int64Builder::new(), BinaryBuilder::new(), StringBuilder::new());
            for at in offsets {
                offset.append_value(at as i64);
                match read_record_at(&source, at, i32::MAX as usize) {
                    Ok(bytes) => {
                        record.append_value(&bytes);
                        error.append_null();
                    }
                    Err(e) => {
                        record.append_null();
                        error.append_value(e.to_string());
                    }
                }
            }
            let schema = Arc::new(Schema::new(vec![
                Field::new("offset", DataType::Int64, false),
                Field::new("record", DataType::Binary, true),
                Field::new("error", DataType::Utf8, true),
            ]));
            let columns: Vec<ArrayRef> = vec![Arc::new(offset.finish()), Arc::new(record.finish()), Arc::new(error.finish())];
            RecordBatch::try_new(schema, columns).map_err(|e| bkcodec_core::Error::invalid_argument(e.to_string()))
        })
        .py_err(py)?;
    Ok(PyTable::try_new(vec![batch.clone()], batch.schema())?.into_pyarrow(py)?.unbind())
}

type PyClusterMetadata = HashMap<(i64, i64), PyLedgerMetadata>;

/// A metadata dump's ledgers by `(scope, ledger)` (scoped UUID names included),
/// and the files that did not read, as text.
#[pyfunction]
fn cluster_load_metadata(py: Python<'_>, path: PathBuf) -> PyResult<(PyClusterMetadata, Vec<String>)> {
    let (ledgers, problems) = py.detach(|| cluster::load_metadata(&path)).py_err(py)?;
    let ledgers = ledgers.into_iter().map(|(k, md)| (k, PyLedgerMetadata(md))).collect();
    Ok((ledgers, problems.iter().map(|e| e.to_string()).collect()))
}

/// The schemas of an inventory, of the audit's findings and of its ledger summary.
#[pyfunction]
fn cluster_schemas(py: Python<'_>) -> PyResult<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> {
    use pyo3_arrow::PySchema;
    let to_py = |s: arrow_schema::SchemaRef| PySchema::new(s).into_pyarrow(py).map(|o| o.unbind());
    Ok((to_py(cluster::inventory_schema())?, to_py(cluster::findings_schema())?, to_py(cluster::ledgers_schema())?))
}

/// Every audit status, most severe first, with whether it is a failure.
#[pyfunction]
fn cluster_statuses() -> Vec<(&'static str, bool)> {
    Status::ALL.iter().map(|s| (s.as_str(), s.is_failure())).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cluster_read_inventory, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_audit, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_write_set, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_statuses, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_load_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(read_records_at, m)?)?;
    m.add("INVENTORY_BOOKIE_ID_KEY", cluster::BOOKIE_ID_METADATA_KEY)?;
    Ok(())
}
