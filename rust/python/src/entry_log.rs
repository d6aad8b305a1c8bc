//! Entry logs: `read_entry_log`, `entry_log_header`, `ledgers_map` and `EntryLogWriter`.

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::PathBuf;

use std::sync::{Mutex, MutexGuard};

use bkcodec_core::arrow::{ledgers_map_batch, EntryLogBatchReader};
use bkcodec_core::files::entry_log::{self, LedgersMap, LedgersMapSource};
use bkcodec_core::files::{EntryLogHeader, EntryLogLayout, EntryLogWriter, Location};
use bkcodec_core::{Error, ErrorKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PyTable;

use crate::args::Password;
use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;
use crate::file_args::file_scan_options;
use crate::file_like::FileInput;
use crate::record_batch_reader::PyFileBatchReader;

/// Reads an entry log's entries lazily as a `RecordBatchReader`.
#[pyfunction]
#[pyo3(signature = (
    path, *, digest_type = None, password = Password::default(), verify = true, batch_size = 65536,
    payload = "binary", on_error = "flag", start = None, end = None, ledger_metadata = None, log_id = None,
), text_signature = "(path, *, digest_type=None, password=b'', verify=True, batch_size=65536, payload='binary', on_error='flag', start=None, end=None, ledger_metadata=None, log_id=None)")]
#[allow(clippy::too_many_arguments)]
fn read_entry_log(
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
    log_id: Option<i64>,
) -> PyResult<PyFileBatchReader> {
    let options = file_scan_options(
        py, digest_type, &password, ledger_metadata, verify, batch_size, payload, on_error, start, end,
    )?;
    let log_id = log_id.or_else(|| entry_log::log_id_from_path(path.path()));
    let reader = py.detach(|| EntryLogBatchReader::new(path.open()?, log_id, options)).py_err(py)?;
    let path = path.path();
    let id = reader.log_id().map_or_else(|| "unknown".to_string(), |id| id.to_string());
    let source = format!("entry log {:?} ({} bytes, log id {id})", path.display().to_string(), reader.file_len());
    Ok(PyFileBatchReader::new(Box::new(reader), source))
}

/// The header fields of an entry log (the same 20 bytes in both layouts).
#[pyclass(module = "bkcodec", name = "EntryLogHeader", frozen, eq)]
#[derive(PartialEq)]
pub struct PyEntryLogHeader(EntryLogHeader);

#[pymethods]
impl PyEntryLogHeader {
    /// 0 (before BookKeeper 4.4, no ledgers map) or 1.
    #[getter]
    fn version(&self) -> i32 {
        self.0.version
    }

    /// Offset of the first ledgers-map record; 0 while the log was never rolled.
    #[getter]
    fn ledgers_map_offset(&self) -> i64 {
        self.0.ledgers_map_offset
    }

    #[getter]
    fn ledgers_count(&self) -> i32 {
        self.0.ledgers_count
    }

    /// `"legacy"` (DefaultEntryLogger) or `"direct"` (DirectEntryLogger).
    #[getter]
    fn layout(&self) -> &'static str {
        self.0.layout.as_str()
    }

    /// Where records start: 1024 (legacy) or 4096 (direct).
    #[getter]
    fn data_start(&self) -> u64 {
        self.0.layout.data_start()
    }

    /// Whether the header points at a ledgers map (version 1 and a non-zero offset).
    #[getter]
    fn has_ledgers_map(&self) -> bool {
        self.0.has_ledgers_map()
    }

    fn __repr__(&self) -> String {
        format!(
            "EntryLogHeader(version={}, ledgers_map_offset={}, ledgers_count={}, layout='{}')",
            self.0.version,
            self.0.ledgers_map_offset,
            self.0.ledgers_count,
            self.0.layout.as_str()
        )
    }
}

/// Reads and checks an entry log's header (magic `BKLO`, version 0 or 1).
#[pyfunction]
fn entry_log_header(py: Python<'_>, path: FileInput) -> PyResult<PyEntryLogHeader> {
    py.detach(|| {
        let source = path.open()?;
        entry_log::read_header(&*source).map_err(|e| {
            let detail = format!("not an entry log: {}", e.detail);
            e.with_detail(detail).in_file(path.path())
        })
    })
    .map(PyEntryLogHeader)
    .py_err(py)
}

/// The ledgers a rolled entry log's map lists, or None when the map cannot be trusted
/// to list every entry (an open log, no map, or one found inconsistent) or the file
/// cannot be read: what a reader may prune the log by.
#[pyfunction]
#[pyo3(signature = (path, *, password = Password::default()), text_signature = "(path, *, password=b'')")]
fn ledgers_in_map(py: Python<'_>, path: FileInput, password: Password) -> Option<Vec<i64>> {
    py.detach(|| bkcodec_core::plan::ledgers_in_map_of(path.open().ok()?, password.as_bytes()))
}

/// Which ledgers an entry log holds and how many bytes of records each has.
#[pyclass(module = "bkcodec", name = "LedgersMap", frozen)]
pub struct PyLedgersMap(LedgersMap);

#[pymethods]
impl PyLedgersMap {
    /// `"map"`: read from the ledgers map the logger appended when it rolled the log;
    /// `"scan"`: computed by scanning the entries (no usable map, as in BookKeeper).
    #[getter]
    fn source(&self) -> &'static str {
        match self.0.source {
            LedgersMapSource::Trailer => "map",
            LedgersMapSource::Scan => "scan",
        }
    }

    /// `{ledger_id: size}`, size being the sum of the ledger's entry lengths + 4 each.
    #[getter]
    fn ledgers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for l in &self.0.ledgers {
            d.set_item(l.ledger_id, l.size)?;
        }
        Ok(d)
    }

    /// Why the map was not used, when `source` is `"scan"`.
    #[getter]
    fn fallback_reason(&self) -> Option<String> {
        self.0.fallback_reason.as_ref().map(|e| e.message())
    }

    #[getter]
    fn total_size(&self) -> i64 {
        self.0.total_size()
    }

    /// `ledger_id`, `size` columns, sorted by ledger id.
    fn to_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batch = ledgers_map_batch(&self.0);
        let schema = batch.schema();
        PyTable::try_new(vec![batch], schema)?.into_pyarrow(py)
    }

    fn __len__(&self) -> usize {
        self.0.ledgers.len()
    }

    fn __repr__(&self) -> String {
        format!("LedgersMap(source='{}', {} ledgers, {} bytes)", self.source(), self.0.ledgers.len(), self.0.total_size())
    }
}

/// The ledgers map of an entry log, or, when it is missing or inconsistent, the
/// same figures from a scan (what BookKeeper's `getEntryLogMetadata` does).
/// The map is checked for what it can prove without a scan (sizes that fit the
/// file and add up, the header's count); `bkcodec verify` compares it with a scan.
/// `password` lets the scan confirm HMAC entries around damage.
#[pyfunction]
#[pyo3(signature = (path, *, password = Password::default()), text_signature = "(path, *, password=b'')")]
fn ledgers_map(py: Python<'_>, path: FileInput, password: Password) -> PyResult<PyLedgersMap> {
    py.detach(|| {
        let source = path.open()?;
        entry_log::ledgers_map_of(source, password.as_bytes()).map_err(|e| e.in_file(path.path()))
    })
    .map(PyLedgersMap)
    .py_err(py)
}

/// Writes an entry log byte for byte as BookKeeper's entry loggers do.
#[pyclass(module = "bkcodec", name = "EntryLogWriter", frozen)]
pub struct PyEntryLogWriter {
    /// Threads sharing one writer take turns (the lock is waited for without the GIL).
    state: Mutex<WriterState>,
    path: PathBuf,
    log_id: u32,
    layout: EntryLogLayout,
}

type EntryLog = EntryLogWriter<BufWriter<File>>;

struct WriterState {
    writer: Option<EntryLog>, // None once closed
    entries: u64,
}

fn io_error(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::io(path, 0, &e)
}

impl PyEntryLogWriter {
    fn state(&self) -> MutexGuard<'_, WriterState> {
        // A panic inside a write leaves the writer as it was; keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the open writer and the entry count, without the GIL.
    fn write<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut EntryLog, &mut u64) -> Result<T, Error> + Send) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.state();
            let WriterState { writer, entries } = &mut *guard;
            let writer = writer.as_mut().ok_or_else(|| {
                Error::invalid_argument(format!("entry log writer for {} is closed", self.path.display()))
            })?;
            f(writer, entries).map_err(|e| e.in_file(&self.path))
        })
        .py_err(py)
    }
}

#[pymethods]
impl PyEntryLogWriter {
    /// Creates `path` (refusing to replace a file unless `overwrite`). The log id
    /// comes from the file name (`<hex>.log`) unless given. `layout="direct"`
    /// writes the DirectEntryLogger layout, its write buffer `buffer_size` bytes
    /// (padded with 0xF0 to 4 KiB at each flush) and the file extended with zeros to
    /// `max_file_size` (0: no preallocation). Threads may share a writer: their calls
    /// take turns.
    #[new]
    #[pyo3(
        signature = (path, log_id = None, *, layout = "legacy", buffer_size = 1 << 20, max_file_size = 0, overwrite = false),
        text_signature = "(path, log_id=None, *, layout='legacy', buffer_size=1048576, max_file_size=0, overwrite=False)"
    )]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        log_id: Option<i64>,
        layout: &str,
        buffer_size: u64,
        max_file_size: u64,
        overwrite: bool,
    ) -> PyResult<Self> {
        let layout = match layout {
            "legacy" => EntryLogLayout::Legacy,
            "direct" => EntryLogLayout::Direct,
            other => return Err(PyValueError::new_err(format!("layout {other:?} is not \"legacy\" or \"direct\""))),
        };
        let log_id = log_id.or_else(|| entry_log::log_id_from_path(&path)).ok_or_else(|| {
            PyValueError::new_err(format!("{} is not named <hex id>.log; give log_id", path.display()))
        })?;
        let log_id = u32::try_from(log_id)
            .map_err(|_| PyValueError::new_err(format!("entry log id {log_id} does not fit the 32 bits of a location")))?;
        let writer = py
            .detach(|| {
                let mut open = OpenOptions::new();
                open.write(true);
                if overwrite {
                    open.create(true).truncate(true);
                } else {
                    open.create_new(true);
                }
                let out = BufWriter::with_capacity(1 << 20, open.open(&path).map_err(|e| io_error(&path, e))?);
                match layout {
                    EntryLogLayout::Legacy => EntryLogWriter::legacy(out),
                    EntryLogLayout::Direct => EntryLogWriter::direct(out, buffer_size, max_file_size),
                }
                .map_err(|e| e.in_file(&path))
            })
            .py_err(py)?;
        let state = Mutex::new(WriterState { writer: Some(writer), entries: 0 });
        Ok(PyEntryLogWriter { state, path, log_id, layout })
    }

    /// Appends an entry exactly as a client packaged it; returns its location
    /// (`log_id << 32 | offset of the entry bytes`), what an index stores.
    fn add_entry(&self, py: Python<'_>, entry: BytesInput) -> PyResult<i64> {
        let offset = self.write(py, |w, entries| {
            let offset = w.add_entry(entry.as_slice())?;
            *entries += 1;
            Ok(offset)
        })?;
        Location::new(self.log_id, offset).map(Location::to_raw).py_err(py)
    }

    /// Flushes the output; in the direct layout this ends the write buffer, padding
    /// with 0xF0 to the next 4 KiB boundary as the logger does at each flush.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.write(py, |w, _| w.flush())
    }

    /// Finishes the file. `roll=True` appends the ledgers map and patches the header
    /// with its offset and ledger count, as rotating a log does; `roll=False` leaves
    /// an open log (no map, header map offset 0). Closing twice does nothing.
    #[pyo3(signature = (*, roll = true))]
    fn close(&self, py: Python<'_>, roll: bool) -> PyResult<()> {
        let path = &self.path;
        py.detach(|| {
            let Some(writer) = self.state().writer.take() else { return Ok(()) };
            let out = if roll { writer.finish_rolled() } else { writer.finish_open() }.map_err(|e| e.in_file(path))?;
            let file = out.into_inner().map_err(|e| io_error(path, e.into_error()))?;
            file.sync_all().map_err(|e| io_error(path, e))
        })
        .py_err(py)
    }

    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    #[getter]
    fn log_id(&self) -> u32 {
        self.log_id
    }

    #[getter]
    fn layout(&self) -> &'static str {
        self.layout.as_str()
    }

    /// Offset the next record's size field will have.
    #[getter]
    fn position(&self, py: Python<'_>) -> Option<u64> {
        py.detach(|| self.state().writer.as_ref().map(|w| w.position()))
    }

    /// Entries added so far.
    #[getter]
    fn entry_count(&self, py: Python<'_>) -> u64 {
        py.detach(|| self.state().entries)
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.state().writer.is_none())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Rolls the log on a normal exit; after an exception leaves it open (unrolled).
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
        let (entries, closed) = py.detach(|| {
            let state = self.state();
            (state.entries, state.writer.is_none())
        });
        format!(
            "<bkcodec.EntryLogWriter {:?} log_id={} layout='{}' entries={}{}>",
            self.path.display().to_string(),
            self.log_id,
            self.layout.as_str(),
            entries,
            if closed { " closed" } else { "" }
        )
    }
}

/// Splits a location as indexes store it into `(log_id, offset)`, the offset being
/// that of the entry bytes (just after the record's size field).
#[pyfunction]
fn split_location(location: i64) -> (u32, u32) {
    let raw = location as u64;
    ((raw >> 32) as u32, raw as u32)
}

/// `log_id << 32 | offset`, as indexes store an entry's location.
#[pyfunction]
fn make_location(py: Python<'_>, log_id: i64, offset: i64) -> PyResult<i64> {
    let log_id = u32::try_from(log_id)
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, 0, format!("log id {log_id} does not fit in 32 bits")))
        .py_err(py)?;
    let offset = u64::try_from(offset)
        .map_err(|_| Error::invalid_argument(format!("offset {offset} is negative")))
        .py_err(py)?;
    Location::new(log_id, offset).map(Location::to_raw).py_err(py)
}

/// The file name BookKeeper gives entry log `log_id`: lowercase hex and `.log`.
#[pyfunction]
fn entry_log_file_name(log_id: i64) -> String {
    entry_log::file_name(log_id)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEntryLogHeader>()?;
    m.add_class::<PyLedgersMap>()?;
    m.add_class::<PyEntryLogWriter>()?;
    m.add_function(wrap_pyfunction!(read_entry_log, m)?)?;
    m.add_function(wrap_pyfunction!(entry_log_header, m)?)?;
    m.add_function(wrap_pyfunction!(ledgers_map, m)?)?;
    m.add_function(wrap_pyfunction!(ledgers_in_map, m)?)?;
    m.add_function(wrap_pyfunction!(split_location, m)?)?;
    m.add_function(wrap_pyfunction!(make_location, m)?)?;
    m.add_function(wrap_pyfunction!(entry_log_file_name, m)?)?;
    Ok(())
}
