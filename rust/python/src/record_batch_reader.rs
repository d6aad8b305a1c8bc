//! `RecordBatchReader`: a lazy, once-consumable stream of record batches read from a
//! bookie file. It speaks the Arrow PyCapsule stream interface, so pyarrow, polars
//! and duckdb take it without a copy; iterating it directly yields
//! `pyarrow.RecordBatch`es, each scanned with the GIL released.

use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, RecordBatch, StructArray};
use arrow_schema::{Field, SchemaRef};
use bkcodec_core::arrow::{ArrowBatchReader, BatchStream};
use bkcodec_core::Error;
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_arrow::ffi::{to_stream_pycapsule, ArrayIterator};
use pyo3_arrow::{PyRecordBatch, PySchema, PyTable};

use crate::errors::to_pyerr;

/// A stream of `pyarrow.RecordBatch`es read lazily from a bookie file.
#[pyclass(module = "bkcodec", name = "RecordBatchReader", frozen)]
pub struct PyFileBatchReader {
    stream: Mutex<Option<Box<dyn BatchStream>>>,
    schema: SchemaRef,
    /// What is read, for the repr: e.g. "entry log '/data/current/0.log' (532841 bytes)".
    source: String,
}

impl PyFileBatchReader {
    pub fn new(stream: Box<dyn BatchStream>, source: String) -> Self {
        let schema = stream.schema();
        PyFileBatchReader { stream: Mutex::new(Some(stream)), schema, source }
    }

    fn take(&self) -> PyResult<Box<dyn BatchStream>> {
        self.stream
            .lock()
            .map_err(|_| PyValueError::new_err("the reader failed while reading"))?
            .take()
            .ok_or_else(|| PyValueError::new_err("the reader is closed or was consumed"))
    }

    /// The next batch, scanned with the GIL released; `None` at the end.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        // The lock is taken and dropped while detached, so a thread waiting on it
        // never holds the GIL this thread needs back.
        let next: Option<Option<Result<RecordBatch, Error>>> = py.detach(|| {
            let mut guard = self.stream.lock().ok()?;
            Some(guard.as_mut().and_then(|s| s.next()))
        });
        match next {
            None => Err(PyValueError::new_err("the reader failed while reading")),
            Some(None) => Ok(None),
            Some(Some(Ok(batch))) => Ok(Some(batch)),
            Some(Some(Err(e))) => Err(to_pyerr(py, e)),
        }
    }
}

#[pymethods]
impl PyFileBatchReader {
    /// The `pyarrow.Schema` of every batch.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.schema.clone()).into_pyarrow(py)
    }

    /// True once the stream was read to the end, handed to another library, or closed.
    #[getter]
    fn closed(&self) -> bool {
        self.stream.lock().map(|s| s.is_none()).unwrap_or(true)
    }

    /// Exports the stream (Arrow PyCapsule interface); the reader is consumed.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let reader = ArrowBatchReader(self.take()?);
        let schema = self.schema.clone();
        let arrays = reader.map(|batch| batch.map(|b| Arc::new(StructArray::from(b)) as ArrayRef));
        let field = Field::new_struct("", schema.fields().clone(), false).with_metadata(schema.metadata.clone());
        Ok(to_stream_pycapsule(py, Box::new(ArrayIterator::new(arrays, Arc::new(field))), requested_schema)?)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // The end of the stream, or an error (raised once), closes it.
        match self.next_batch(py) {
            Ok(Some(batch)) => Ok(Some(PyRecordBatch::new(batch).into_pyarrow(py)?)),
            Ok(None) => {
                self.close();
                Ok(None)
            }
            Err(e) => {
                self.close();
                Err(e)
            }
        }
    }

    /// The next `pyarrow.RecordBatch`; `StopIteration` at the end (as pyarrow's reader).
    fn read_next_batch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.__next__(py)?.ok_or_else(|| PyStopIteration::new_err(()))
    }

    /// Every remaining batch as a `pyarrow.Table`.
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut stream = self.take()?;
        let batches: Result<Vec<RecordBatch>, Error> = py.detach(|| stream.by_ref().collect());
        let batches = batches.map_err(|e| to_pyerr(py, e))?;
        PyTable::try_new(batches, self.schema.clone())?.into_pyarrow(py)
    }

    /// Stops reading and unmaps the file (batches already read stay valid).
    fn close(&self) {
        if let Ok(mut s) = self.stream.lock() {
            s.take();
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.schema.fields().iter().map(|f| f.name().as_str()).collect();
        format!(
            "<bkcodec.RecordBatchReader of {}: {} columns ({}){}>",
            self.source,
            names.len(),
            names.join(", "),
            if self.closed() { ", closed" } else { "" }
        )
    }
}
