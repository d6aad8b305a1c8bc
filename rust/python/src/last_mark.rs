//! `lastMark` (where journal replay starts) and `lastId` (the last entry log id).

use std::path::PathBuf;

use bkcodec_core::files::source::read_vec_at;
use bkcodec_core::files::FileSource;
use bkcodec_core::files::last_mark::{encode_last_id, parse_last_id};
use bkcodec_core::files::LastMark;
use bkcodec_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::IntoPyResult;

/// A journal position: the journal's id and a byte offset in it. Marks order as
/// BookKeeper compares them (by journal id, then offset); a mark unpacks as
/// `journal_id, offset = mark`.
#[pyclass(module = "bkcodec", name = "LastMark", frozen, eq, ord, hash)]
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyLastMark(LastMark);

#[pymethods]
impl PyLastMark {
    #[new]
    fn new(journal_id: i64, offset: i64) -> Self {
        PyLastMark(LastMark { journal_id, offset })
    }

    #[getter]
    fn journal_id(&self) -> i64 {
        self.0.journal_id
    }

    #[getter]
    fn offset(&self) -> i64 {
        self.0.offset
    }

    /// The 16 bytes of a `lastMark` file.
    fn encode(&self) -> Vec<u8> {
        self.0.encode().to_vec()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyTuple::new(py, [self.0.journal_id, self.0.offset])?.as_any().try_iter()?.into_any())
    }

    fn __repr__(&self) -> String {
        format!("LastMark(journal_id={}, offset={})", self.0.journal_id, self.0.offset)
    }
}

/// A small file's bytes (up to 64 KiB: `lastMark` is 16 bytes, `lastId` a line).
fn read_file(py: Python<'_>, path: &PathBuf) -> PyResult<Vec<u8>> {
    py.detach(|| {
        let source = FileSource::open(path)?;
        read_vec_at(&source, 0, 64 << 10)
    })
    .py_err(py)
}

fn write_file(py: Python<'_>, path: &PathBuf, bytes: &[u8]) -> PyResult<()> {
    py.detach(|| std::fs::write(path, bytes).map_err(|e| Error::io(path, 0, &e))).py_err(py)
}

/// Reads a `lastMark` file (16 bytes: journal id, offset). A shorter file raises
/// `TruncatedError` (BookKeeper ignores such a file).
#[pyfunction]
fn read_last_mark(py: Python<'_>, path: PathBuf) -> PyResult<PyLastMark> {
    let file = read_file(py, &path)?;
    LastMark::parse(&file).map(PyLastMark).map_err(|e| e.in_file(&path)).py_err(py)
}

/// Writes a `lastMark` file as the bookie does.
#[pyfunction]
fn write_last_mark(py: Python<'_>, path: PathBuf, journal_id: i64, offset: i64) -> PyResult<()> {
    write_file(py, &path, &LastMark { journal_id, offset }.encode())
}

/// Reads a `lastId` file: the last entry log id allocated (hex text).
#[pyfunction]
fn read_last_id(py: Python<'_>, path: PathBuf) -> PyResult<i64> {
    let file = read_file(py, &path)?;
    parse_last_id(&file).map_err(|e| e.in_file(&path)).py_err(py)
}

/// Writes a `lastId` file as the bookie does (lowercase hex and a newline).
#[pyfunction]
fn write_last_id(py: Python<'_>, path: PathBuf, log_id: i64) -> PyResult<()> {
    if log_id < 0 {
        return Err(Error::invalid_argument(format!("entry log id {log_id} is negative"))).py_err(py);
    }
    write_file(py, &path, encode_last_id(log_id).as_bytes())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLastMark>()?;
    m.add_function(wrap_pyfunction!(read_last_mark, m)?)?;
    m.add_function(wrap_pyfunction!(write_last_mark, m)?)?;
    m.add_function(wrap_pyfunction!(read_last_id, m)?)?;
    m.add_function(wrap_pyfunction!(write_last_id, m)?)?;
    Ok(())
}
