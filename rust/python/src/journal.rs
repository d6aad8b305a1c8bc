//! Journals: `read_journal`, `journal_header` and `JournalWriter`.

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::PathBuf;

use std::sync::{Mutex, MutexGuard};

use bkcodec_core::arrow::JournalBatchReader;
use bkcodec_core::files::{journal, JournalHeader, JournalWriter};
use bkcodec_core::Error;
use pyo3::prelude::*;

use crate::args::Password;
use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;
use crate::file_args::file_scan_options;
use crate::file_like::FileInput;
use crate::record_batch_reader::PyFileBatchReader;

/// Reads a journal's records lazily as a `RecordBatchReader`.
#[pyfunction]
#[pyo3(signature = (
    path, *, digest_type = None, password = Password::default(), verify = true, batch_size = 65536,
    payload = "binary", on_error = "flag", start = None, end = None, ledger_metadata = None,
    include_padding = false, journal_id = None, last_mark = None,
), text_signature = "(path, *, digest_type=None, password=b'', verify=True, batch_size=65536, payload='binary', on_error='flag', start=None, end=None, ledger_metadata=None, include_padding=False, journal_id=None, last_mark=None)")]
#[allow(clippy::too_many_arguments)]
fn read_journal(
    py: Python<'_>,
    path: FileInput,
    digest_type: Option<&Bound<'_, PyAny>>,
    password: Password,
    verify: bool,
    batch_size: usize,
    payload: &str,
    on_error: &str,
    start: Option<u64>,
    end: Option<u64>,
    ledger_metadata: Option<&Bound<'_, PyAny>>,
    include_padding: bool,
    journal_id: Option<i64>,
    last_mark: Option<u64>,
) -> PyResult<PyFileBatchReader> {
    let options = file_scan_options(
        py, digest_type, &password, ledger_metadata, verify, batch_size, payload, on_error, start, end,
    )?;
    let journal_id = journal_id.or_else(|| journal::journal_id_from_path(path.path()));
    let reader = py
        .detach(|| JournalBatchReader::new(path.open()?, journal_id, include_padding, last_mark, options))
        .py_err(py)?;
    let path = path.path();
    let id = reader.journal_id().map_or_else(|| "unknown".to_string(), |id| id.to_string());
    let source = format!("journal {:?} ({} bytes, journal id {id})", path.display().to_string(), reader.file_len());
    Ok(PyFileBatchReader::new(Box::new(reader), source))
}

/// A journal's format version and where its records start.
#[pyclass(module = "bkcodec", name = "JournalHeader", frozen, eq)]
#[derive(PartialEq)]
pub struct PyJournalHeader(JournalHeader);

#[pymethods]
impl PyJournalHeader {
    /// 1 to 6; a file without the `BKLG` magic is version 1.
    #[getter]
    fn version(&self) -> i32 {
        self.0.version
    }

    #[getter]
    fn has_magic(&self) -> bool {
        self.0.has_magic
    }

    /// Offset of the first record: 0 (V1), 8 (V2-V4) or 512 (V5+).
    #[getter]
    fn data_start(&self) -> u64 {
        self.0.data_start()
    }

    /// Whether flushes are padded to the alignment (V5+).
    #[getter]
    fn has_padding(&self) -> bool {
        self.0.has_padding()
    }

    fn __repr__(&self) -> String {
        format!("JournalHeader(version={}, has_magic={}, data_start={})", self.0.version, py_bool(self.0.has_magic), self.0.data_start())
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Detects a journal's version as BookKeeper does.
#[pyfunction]
fn journal_header(py: Python<'_>, path: FileInput) -> PyResult<PyJournalHeader> {
    py.detach(|| {
        let source = path.open()?;
        journal::read_header(&*source).map_err(|e| e.in_file(path.path()))
    })
    .map(PyJournalHeader)
    .py_err(py)
}

/// Writes a journal byte for byte as BookKeeper's journal thread does.
#[pyclass(module = "bkcodec", name = "JournalWriter", frozen)]
pub struct PyJournalWriter {
    /// Threads sharing one writer take turns (the lock is waited for without the GIL);
    /// `None` once closed.
    writer: Mutex<Option<JournalWriter<BufWriter<File>>>>,
    path: PathBuf,
    version: i32,
}

type Journal = JournalWriter<BufWriter<File>>;

impl PyJournalWriter {
    fn state(&self) -> MutexGuard<'_, Option<Journal>> {
        // A panic inside a write leaves the writer as it was; keep using it.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn write<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Journal) -> Result<T, Error> + Send) -> PyResult<T> {
        py.detach(|| {
            let mut state = self.state();
            let writer = state.as_mut().ok_or_else(|| {
                Error::invalid_argument(format!("journal writer for {} is closed", self.path.display()))
            })?;
            f(writer).map_err(|e| e.in_file(&self.path))
        })
        .py_err(py)
    }
}

#[pymethods]
impl PyJournalWriter {
    /// Creates `path` (refusing to replace a file unless `overwrite`). `version` 4,
    /// 5 or 6 (BookKeeper's default); from version 5 each `flush()` pads to
    /// `alignment` (a multiple of 512). `prealloc_size` > 0 extends the file with
    /// zeros in steps of that size, as BookKeeper does (its default is 16 MiB; at
    /// most 1 GiB is taken). Threads may share a writer: their calls take turns.
    #[new]
    #[pyo3(signature = (path, *, version = 6, alignment = 512, prealloc_size = 0, overwrite = false))]
    fn new(py: Python<'_>, path: PathBuf, version: i32, alignment: u64, prealloc_size: u64, overwrite: bool) -> PyResult<Self> {
        // Refused before the file is created.
        JournalWriter::<File>::check_options(version, alignment, prealloc_size).py_err(py)?;
        let writer = py
            .detach(|| {
                let mut open = OpenOptions::new();
                open.write(true);
                if overwrite {
                    open.create(true).truncate(true);
                } else {
                    open.create_new(true);
                }
                let file = open.open(&path).map_err(|e| Error::io(&path, 0, &e))?;
                JournalWriter::new(BufWriter::with_capacity(1 << 20, file), version, alignment, prealloc_size)
                    .map_err(|e| e.in_file(&path))
            })
            .py_err(py)?;
        Ok(PyJournalWriter { writer: Mutex::new(Some(writer)), path, version })
    }

    /// Journals an entry exactly as the client packaged it; returns the offset of its
    /// record (of the length field).
    fn add_entry(&self, py: Python<'_>, entry: BytesInput) -> PyResult<u64> {
        self.write(py, |w| w.add_entry(entry.as_slice()))
    }

    /// A ledger-key record (`BookieImpl.createMasterKeyEntry`); returns its offset.
    fn add_ledger_key(&self, py: Python<'_>, ledger_id: i64, master_key: BytesInput) -> PyResult<u64> {
        self.write(py, |w| w.add_ledger_key(ledger_id, master_key.as_slice()))
    }

    /// A fence record (`LedgerDescriptor.createLedgerFenceEntry`); returns its offset.
    fn add_fence(&self, py: Python<'_>, ledger_id: i64) -> PyResult<u64> {
        self.write(py, |w| w.add_fence(ledger_id))
    }

    /// An explicit-LAC record holding `lac_blob` (see `encode_lac`); returns its
    /// offset, or `None` below version 6, where BookKeeper drops it.
    fn add_explicit_lac(&self, py: Python<'_>, ledger_id: i64, lac_blob: BytesInput) -> PyResult<Option<u64>> {
        self.write(py, |w| w.add_explicit_lac(ledger_id, lac_blob.as_slice()))
    }

    /// Ends a batch as the journal thread's flush does: from version 5, a padding
    /// record up to the next alignment boundary.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.write(py, |w| w.flush())
    }

    /// Finishes the file: `flush()` first unless `flush=False` (a journal cut off
    /// mid-batch), then the preallocated zeros. Closing twice does nothing.
    #[pyo3(signature = (*, flush = true))]
    fn close(&self, py: Python<'_>, flush: bool) -> PyResult<()> {
        let path = &self.path;
        py.detach(|| {
            let Some(mut writer) = self.state().take() else { return Ok(()) };
            if flush {
                writer.flush().map_err(|e| e.in_file(path))?;
            }
            let out = writer.finish().map_err(|e| e.in_file(path))?;
            let file = out.into_inner().map_err(|e| Error::io(path, 0, e.error()))?;
            file.sync_all().map_err(|e| Error::io(path, 0, &e))
        })
        .py_err(py)
    }

    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    #[getter]
    fn version(&self) -> i32 {
        self.version
    }

    /// Offset the next record's length field will have.
    #[getter]
    fn position(&self, py: Python<'_>) -> Option<u64> {
        py.detach(|| self.state().as_ref().map(|w| w.position()))
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.state().is_none())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes (flushing the last batch) on a normal exit; after an exception closes
    /// without the final flush.
    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py, exc_type.is_none())?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<bkcodec.JournalWriter {:?} version={}{}>",
            self.path.display().to_string(),
            self.version,
            if self.closed(py) { " closed" } else { "" }
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyJournalHeader>()?;
    m.add_class::<PyJournalWriter>()?;
    m.add_function(wrap_pyfunction!(read_journal, m)?)?;
    m.add_function(wrap_pyfunction!(journal_header, m)?)?;
    Ok(())
}
