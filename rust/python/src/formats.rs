//! What the core knows about its own output, for callers that plan before they read
//! (the Spark data source, the CLI): reader schemas, error kinds, digest names.

use bkcodec_core::arrow::{
    entry_log_schema, error_kinds as core_error_kinds, index_schema, journal_schema, EntryBatchOptions, FileReaderOptions,
    OnError, PayloadMode,
};
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(reader_schema, m)?)?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(digest_types, m)?)?;
    m.add("OFFSET_LOOKUP_LEAD", bkcodec_core::files::scan::OFFSET_LOOKUP_LEAD)?;
    Ok(())
}
