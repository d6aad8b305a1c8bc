//! What the core knows about its own output, for callers that plan before they read
//! (the Spark data source, the CLI): reader schemas, error kinds, digest names.

use bkcodec_core::arrow::{
    entry_log_schema, error_kinds as core_error_kinds, index_schema, journal_schema, EntryBatchOptions, FileReaderOptions,
    OnError, PayloadMode,
};
use bkcodec_core::digest_check::Unchecked;
use bkcodec_core::plan::ReadKind;
use bkcodec_core::{DigestType, LedgerDigestSettings};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_arrow::PySchema;

use crate::errors::IntoPyResult;

/// The schema `read_entry_log`, `read_journal` or `read_index` gives under these options.
#[pyfunction]
#[pyo3(signature = (kind, *, payload = "binary", on_error = "flag"))]
fn reader_schema<'py>(py: Python<'py>, kind: &str, payload: &str, on_error: &str) -> PyResult<Bound<'py, PyAny>> {
    let entries = EntryBatchOptions {
        payload: PayloadMode::from_name(payload).py_err(py)?,
        on_error: OnError::from_name(on_error).py_err(py)?,
    };
    let options = FileReaderOptions::new(entries, LedgerDigestSettings::default());
    let schema = match kind {
        "entry_log" => entry_log_schema(&options),
        "journal" => journal_schema(&options),
        "index" => index_schema(),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown reader kind {other:?}: expected \"entry_log\", \"journal\" or \"index\""
            )))
        }
    };
    PySchema::new(schema).into_pyarrow(py)
}

/// Every value the readers' `error_kind` column can take.
#[pyfunction]
fn error_kinds() -> Vec<&'static str> {
    core_error_kinds()
}

/// The digest type names the readers accept and report.
#[pyfunction]
fn digest_types() -> Vec<&'static str> {
    DigestType::ALL.iter().map(|d| d.name()).collect()
}

/// The columns of several readers' rows in one stream (`read_bookie`'s): `file`,
/// `file_kind`, then the readers' columns, position first and `error` last.
#[pyfunction]
fn merged_file_schema(py: Python<'_>, schemas: Vec<PySchema>) -> PyResult<Bound<'_, PyAny>> {
    let schemas: Vec<_> = schemas.into_iter().map(|s| s.into_inner()).collect();
    PySchema::new(bkcodec_core::arrow::merged_file_schema(&schemas)).into_pyarrow(py)
}

/// The payload modes that give a payload column or none: `binary`, `binary_view`, `none`.
#[pyfunction]
fn payload_modes() -> Vec<&'static str> {
    PayloadMode::ROW_MODES.iter().map(|m| m.name()).collect()
}

/// The Spark sources' file kinds: `(name, file_kind, name_id_column)`, e.g.
/// `("entrylog", "entry_log", "log_id")`.
#[pyfunction]
fn read_kinds() -> Vec<(&'static str, &'static str, &'static str)> {
    ReadKind::FILE_KINDS
        .iter()
        .map(|k| (k.name(), k.file_kind().unwrap_or_default(), k.name_id_column().unwrap_or_default()))
        .collect()
}

/// Every value the readers' `digest_unchecked_reason` column can take.
#[pyfunction]
fn digest_unchecked_reasons() -> Vec<&'static str> {
    Unchecked::ALL.iter().map(|u| u.as_str()).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merged_file_schema, m)?)?;
    m.add_function(wrap_pyfunction!(payload_modes, m)?)?;
    m.add_function(wrap_pyfunction!(read_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(digest_unchecked_reasons, m)?)?;
    m.add_function(wrap_pyfunction!(reader_schema, m)?)?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(digest_types, m)?)?;
    m.add("OFFSET_LOOKUP_LEAD", bkcodec_core::files::scan::OFFSET_LOOKUP_LEAD)?;
    Ok(())
}
