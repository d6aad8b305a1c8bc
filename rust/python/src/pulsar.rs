//! Pulsar: messages from entries, and topic metadata (behind `bkcodec.pulsar`).
//!
//! Argument conversion only: the decoding is `bkcodec_core::pulsar`'s.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{ArrowError, DataType};
use bkcodec_core::arrow::{OnError, PayloadMode};
use bkcodec_core::pulsar::managed_ledger::{
    decode_managed_cursor_info, decode_managed_ledger_info, managed_cursor_info_value, managed_ledger_info_value,
};
use bkcodec_core::pulsar::message_batch::EntryIds;
use bkcodec_core::pulsar::topics::{owners_from_batch, read_dump_dir, TopicLedgers};
use bkcodec_core::pulsar::value::Value;
use bkcodec_core::pulsar::{DecoderCounts, DecoderOptions, LedgerOwner, MessageDecoder, MessageStream};
use bkcodec_core::{Error, ErrorKind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::{PyRecordBatch, PySchema, PyTable};

use crate::args::Password;
use crate::buffer::BytesInput;
use crate::entries_input::{Accepted, EntriesInput};
use crate::file_args::ledger_digest_settings;
use crate::errors::{to_pyerr, IntoPyResult};
use crate::metadata::PyLedgerMetadata;
use crate::record_batch_reader::PyFileBatchReader;

/// `ledger_owners`: `{ledger_id: kind}`, `{ledger_id: (kind, topic)}`, or an Arrow
/// table with `ledger_id`, `kind` and `topic` columns (`topic_ledgers`' output).
#[derive(Default)]
struct Owners(HashMap<i64, LedgerOwner>);

impl<'py> FromPyObject<'_, 'py> for Owners {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let py = ob.py();
        let mut owners = HashMap::new();
        if ob.is_none() {
            return Ok(Owners(owners));
        }
        if let Ok(dict) = ob.cast::<PyDict>() {
            for (k, v) in dict.iter() {
                let id: i64 = k.extract().map_err(|_| PyTypeError::new_err("ledger_owners keys are ledger ids (int)"))?;
                let (kind, topic): (String, Option<String>) = match v.extract::<String>() {
                    Ok(kind) => (kind, None),
                    Err(_) => v.extract().map_err(|_| {
                        PyTypeError::new_err("ledger_owners values are a kind (str) or a (kind, topic) pair")
                    })?,
                };
                owners.insert(id, LedgerOwner { kind, topic: topic.map(Into::into) });
            }
            return Ok(Owners(owners));
        }
        if ob.hasattr(intern!(py, "__arrow_c_stream__"))? || ob.hasattr(intern!(py, "__arrow_c_array__"))? {
            let reader = ob.extract::<AnyRecordBatch>()?.into_reader()?;
            for batch in reader {
                let batch = batch.map_err(|e| PyValueError::new_err(e.to_string()))?;
                owners_from_batch(&batch, &mut owners).py_err(py)?;
            }
            return Ok(Owners(owners));
        }
        Err(PyTypeError::new_err(
            "ledger_owners must be a dict {ledger_id: kind or (kind, topic)} or an Arrow table with ledger_id, kind and topic",
        ))
    }
}

fn options(
    py: Python<'_>,
    payload: &str,
    on_error: &str,
    reassemble_chunks: bool,
    skip_duplicate_entries: bool,
    batch_size: usize,
) -> PyResult<DecoderOptions> {
    if batch_size == 0 {
        return Err(PyValueError::new_err("batch_size must be at least 1"));
    }
    Ok(DecoderOptions {
        payload: PayloadMode::from_name(payload).py_err(py)?,
        on_error: OnError::from_name(on_error).py_err(py)?,
        reassemble_chunks,
        skip_duplicate_entries,
        batch_rows: batch_size,
        ..DecoderOptions::default()
    })
}

/// What the Pulsar decoders take as `entries`: Arrow arrays (entry rows as structs,
/// or bare payloads), or a sequence of payloads.
const ACCEPTED: Accepted = Accepted {
    rows: true,
    arrow: "entries must be entry rows (a record batch, table or stream with a payload column) or a binary column of payloads",
    single: "entries must be a sequence of entry payloads, not one payload",
    sequence: "entries must be Arrow entry rows, a binary column, or a sequence of bytes-like payloads",
    name_type: false,
};

/// Bytes of entry payloads in an array of entry rows or of payloads.
fn payload_bytes(array: &ArrayRef) -> usize {
    use arrow_array::cast::AsArray;
    let values = match array.data_type() {
        DataType::Struct(_) => match array.as_struct().column_by_name("payload") {
            Some(p) => p.clone(),
            None => return 0,
        },
        _ => array.clone(),
    };
    match values.data_type() {
        DataType::Binary => values.as_binary::<i32>().value_data().len(),
        DataType::LargeBinary => values.as_binary::<i64>().value_data().len(),
        DataType::BinaryView => values.as_binary_view().data_buffers().iter().map(|b| b.len()).sum(),
        _ => 0,
    }
}

/// Feeds every entry to the decoder (without the GIL).
fn push_all(input: EntriesInput, decoder: &mut MessageDecoder, first_index: &mut u64) -> Result<(), Error> {
    match input {
        EntriesInput::Arrow(chunks) => {
            for array in chunks {
                push_array(decoder, &array, *first_index)?;
                *first_index += array.len() as u64;
            }
        }
        EntriesInput::Buffers(buffers) => {
            for b in &buffers {
                if let Some(b) = b {
                    decoder.push_entry(*first_index, EntryIds::default(), Some(b.as_slice()), None)?;
                }
                *first_index += 1;
            }
        }
    }
    Ok(())
}

fn arrow_error(e: ArrowError) -> Error {
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(core) => *core,
            Err(other) => Error::new(ErrorKind::Corrupt, 0, other.to_string()),
        },
        other => Error::new(ErrorKind::Corrupt, 0, other.to_string()),
    }
}

fn push_array(decoder: &mut MessageDecoder, array: &ArrayRef, first_index: u64) -> Result<(), Error> {
    match array.data_type() {
        DataType::Struct(_) => {
            let rows = array.as_any().downcast_ref::<StructArray>().expect("a struct array");
            decoder.push_record_batch(&RecordBatch::from(rows), first_index)
        }
        _ => decoder.push_payload_array(array.as_ref(), first_index),
    }
}

/// Every batch into one, refusing more than one batch can hold.
fn single_batch(decoder: &MessageDecoder, batches: Vec<RecordBatch>) -> Result<RecordBatch, Error> {
    match batches.len() {
        0 => Ok(RecordBatch::new_empty(decoder.schema())),
        1 => Ok(batches.into_iter().next().expect("one batch")),
        _ => Err(Error::invalid_argument(
            "the messages hold more payload bytes than one record batch can (2 GiB): read them with read_messages",
        )),
    }
}

/// Messages from entries, as one `pyarrow.RecordBatch` (see `bkcodec.pulsar.decode_messages`).
#[pyfunction]
#[pyo3(signature = (entries, *, ledger_owners = None, payload = "binary", on_error = "flag", reassemble_chunks = true, skip_duplicate_entries = true))]
fn pulsar_decode_messages<'py>(
    py: Python<'py>,
    entries: &Bound<'py, PyAny>,
    ledger_owners: Option<Owners>,
    payload: &str,
    on_error: &str,
    reassemble_chunks: bool,
    skip_duplicate_entries: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mut options = options(py, payload, on_error, reassemble_chunks, skip_duplicate_entries, usize::MAX)?;
    options.batch_bytes = usize::MAX;
    // Refused as soon as the rows outgrow one batch, not once all are decoded.
    options.single_batch = true;
    let input = EntriesInput::extract(entries, &ACCEPTED)?;
    // One batch: room for what the input decodes to, rather than growing as it fills.
    options.expected_input = Some((input.bytes(payload_bytes), input.rows()));
    let batch = py
        .detach(|| {
            let mut decoder = MessageDecoder::new(options, ledger_owners.unwrap_or_default().0);
            let mut index = 0;
            push_all(input, &mut decoder, &mut index)?;
            let batches = decoder.finish_all()?;
            single_batch(&decoder, batches)
        })
        .py_err(py)?;
    PyRecordBatch::new(batch).into_pyarrow(py)
}

/// Messages from a stream of entry batches, as a `RecordBatchReader` (see `bkcodec.pulsar.read_messages`).
#[pyfunction]
#[pyo3(signature = (entries, *, ledger_owners = None, payload = "binary", on_error = "flag", reassemble_chunks = true, skip_duplicate_entries = true, batch_size = 65536, source = None))]
#[allow(clippy::too_many_arguments)]
fn pulsar_read_messages(
    py: Python<'_>,
    entries: AnyRecordBatch,
    ledger_owners: Option<Owners>,
    payload: &str,
    on_error: &str,
    reassemble_chunks: bool,
    skip_duplicate_entries: bool,
    batch_size: usize,
    source: Option<String>,
) -> PyResult<PyFileBatchReader> {
    let options = options(py, payload, on_error, reassemble_chunks, skip_duplicate_entries, batch_size)?;
    let upstream = entries.into_reader()?.map(|b| b.map_err(arrow_error));
    let stream = MessageStream::new(upstream, MessageDecoder::new(options, ledger_owners.unwrap_or_default().0));
    let source = format!("Pulsar messages from {}", source.as_deref().unwrap_or("an entry stream"));
    Ok(PyFileBatchReader::new(Box::new(stream), source))
}

/// A message decoder that keeps state between calls (chunks waiting for the rest
/// of their message, entries already read): for batches that arrive one at a
/// time, as in Spark's `mapInArrow`.
#[pyclass(module = "bkcodec.pulsar", name = "MessageDecoder", frozen)]
pub struct PyMessageDecoder {
    inner: Mutex<(MessageDecoder, u64)>,
}

impl PyMessageDecoder {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut MessageDecoder, &mut u64) -> Result<T, Error> + Send) -> PyResult<T>
    where
        T: Send,
    {
        let result = py.detach(|| {
            let mut guard = self.inner.lock().map_err(|_| Error::invalid_argument("the decoder failed earlier"))?;
            let (decoder, index) = &mut *guard;
            f(decoder, index)
        });
        result.py_err(py)
    }
}

fn batches_to_py<'py>(py: Python<'py>, batches: Vec<RecordBatch>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for b in batches {
        out.append(PyRecordBatch::new(b).into_pyarrow(py)?)?;
    }
    Ok(out)
}

#[pymethods]
impl PyMessageDecoder {
    #[new]
    #[pyo3(signature = (*, ledger_owners = None, payload = "binary", on_error = "flag", reassemble_chunks = true, skip_duplicate_entries = true, batch_size = 65536))]
    fn new(
        py: Python<'_>,
        ledger_owners: Option<Owners>,
        payload: &str,
        on_error: &str,
        reassemble_chunks: bool,
        skip_duplicate_entries: bool,
        batch_size: usize,
    ) -> PyResult<Self> {
        let options = options(py, payload, on_error, reassemble_chunks, skip_duplicate_entries, batch_size)?;
        Ok(PyMessageDecoder { inner: Mutex::new((MessageDecoder::new(options, ledger_owners.unwrap_or_default().0), 0)) })
    }

    /// Decodes more entries; returns the batches of messages completed so far.
    fn decode<'py>(&self, py: Python<'py>, entries: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let input = EntriesInput::extract(entries, &ACCEPTED)?;
        let batches = self.with(py, |decoder, index| {
            push_all(input, decoder, index)?;
            Ok(std::iter::from_fn(|| decoder.pop_batch()).collect())
        })?;
        batches_to_py(py, batches)
    }

    /// Ends the input: the last batches, with chunks that never completed as flagged rows.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let batches = self.with(py, |decoder, _| decoder.finish_all())?;
        batches_to_py(py, batches)
    }

    /// The `pyarrow.Schema` of every batch.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = self.with(py, |d, _| Ok(d.schema()))?;
        PySchema::new(schema).into_pyarrow(py)
    }

    /// Entries read, entries skipped as duplicates, rows given, rows with an error.
    #[getter]
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c: DecoderCounts = self.with(py, |d, _| Ok(d.counts()))?;
        let out = PyDict::new(py);
        out.set_item("entries", c.entries)?;
        out.set_item("duplicate_entries", c.duplicate_entries)?;
        out.set_item("rows", c.rows)?;
        out.set_item("error_rows", c.error_rows)?;
        Ok(out)
    }
}

fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Text(s) => PyString::new(py, s).into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::List(items) => {
            let out = PyList::empty(py);
            for item in items {
                out.append(value_to_py(py, item)?)?;
            }
            out.into_any()
        }
        Value::Tuple(items) => {
            let items: Vec<Bound<'py, PyAny>> = items.iter().map(|i| value_to_py(py, i)).collect::<PyResult<_>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        Value::Map(fields) => {
            let out = PyDict::new(py);
            for (k, v) in fields {
                out.set_item(k, value_to_py(py, v)?)?;
            }
            out.into_any()
        }
    })
}

/// A `/managed-ledgers/<topic>` znode value (binary, text or compressed) as a dict.
#[pyfunction]
fn pulsar_decode_managed_ledger_info<'py>(py: Python<'py>, data: BytesInput) -> PyResult<Bound<'py, PyAny>> {
    let (info, encoding) = decode_managed_ledger_info(data.as_slice()).py_err(py)?;
    value_to_py(py, &managed_ledger_info_value(&info, encoding))
}

/// A `/managed-ledgers/<topic>/<cursor>` znode value (binary, text or compressed) as a dict.
#[pyfunction]
fn pulsar_decode_managed_cursor_info<'py>(py: Python<'py>, data: BytesInput) -> PyResult<Bound<'py, PyAny>> {
    let (info, encoding) = decode_managed_cursor_info(data.as_slice()).py_err(py)?;
    value_to_py(py, &managed_cursor_info_value(&info, encoding))
}

fn as_directory(ob: &Bound<'_, PyAny>) -> Option<PathBuf> {
    if ob.is_instance_of::<PyString>() || ob.hasattr("__fspath__").unwrap_or(false) {
        ob.extract::<PathBuf>().ok()
    } else {
        None
    }
}

/// The ledger table (see `bkcodec.pulsar.topic_ledgers`): from a dump directory or
/// `(znode path, bytes)` pairs, plus ledger metadata (a dump directory, or
/// `{ledger_id: LedgerMetadata}`).
#[pyfunction]
#[pyo3(signature = (source = None, *, ledger_metadata = None))]
fn pulsar_topic_ledgers<'py>(
    py: Python<'py>,
    source: Option<&Bound<'py, PyAny>>,
    ledger_metadata: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut table = match source {
        None => TopicLedgers::new(),
        Some(s) => match as_directory(s) {
            Some(dir) => {
                if !dir.is_dir() {
                    let e = std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory");
                    return Err(to_pyerr(py, Error::io(&dir, 0, &e)));
                }
                py.detach(|| read_dump_dir(&dir)).py_err(py)?
            }
            None => {
                let mut t = TopicLedgers::new();
                for item in s.try_iter()? {
                    let (path, data): (String, BytesInput) = item?.extract().map_err(|_| {
                        PyTypeError::new_err("each item is a (znode path, bytes) pair")
                    })?;
                    t.add_znode(&path, Ok(data.as_slice()));
                }
                t
            }
        },
    };
    if let Some(md) = ledger_metadata.filter(|m| !m.is_none()) {
        match as_directory(md) {
            Some(dir) => {
                let records = py.detach(|| bkcodec_core::metadata::znode_dump::read_znode_dir(&dir)).py_err(py)?;
                for r in records {
                    let Some(id) = r.ledger_id else { continue };
                    if let Ok(m) = &r.metadata {
                        table.add_ledger_metadata(r.path.as_deref(), id, m);
                    }
                }
            }
            None => {
                let dict = md.cast::<PyDict>().map_err(|_| {
                    PyTypeError::new_err("ledger_metadata must be a directory or a dict {ledger_id: LedgerMetadata}")
                })?;
                for (k, v) in dict.iter() {
                    let id: i64 = k.extract()?;
                    let m = v.cast::<PyLedgerMetadata>().map_err(|_| {
                        PyTypeError::new_err("ledger_metadata values must be bkcodec.LedgerMetadata")
                    })?;
                    table.add_ledger_metadata(None, id, &m.get().0);
                }
            }
        }
    }
    let batch = table.to_batch().py_err(py)?;
    PyTable::try_new(vec![batch], TopicLedgers::schema())?.into_pyarrow(py)
}

/// A `TypeError` or `ValueError` (whatever `e` is) whose message starts with the argument's name.
fn naming(py: Python<'_>, argument: &str, e: PyErr) -> PyErr {
    let text = e.value(py).to_string();
    let text = text.strip_prefix("invalid argument: ").unwrap_or(&text);
    let text = if text.starts_with(argument) { text.to_string() } else { format!("{argument}: {text}") };
    if e.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(text)
    } else {
        PyValueError::new_err(text)
    }
}

/// Checks the file readers' digest settings as `read_entry_log` takes them, without
/// opening a file: `read_messages` opens its readers lazily, inside an Arrow stream,
/// where an argument error would arrive as a failed stream.
#[pyfunction]
#[pyo3(signature = (*, digest_type = None, password = None, ledger_metadata = None))]
fn pulsar_check_reader_options(
    py: Python<'_>,
    digest_type: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    ledger_metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let password: Password = match password {
        Some(p) => p.extract().map_err(|e| naming(py, "password", e))?,
        None => Password::default(),
    };
    ledger_digest_settings(py, digest_type, &password, None).map_err(|e| naming(py, "digest_type", e))?;
    ledger_digest_settings(py, None, &password, ledger_metadata).map_err(|e| naming(py, "ledger_metadata", e))?;
    Ok(())
}

/// `marker_type` values and their names (PulsarMarkers.proto).
#[pyfunction]
fn pulsar_marker_types() -> std::collections::BTreeMap<i32, &'static str> {
    bkcodec_core::pulsar::proto::MARKER_TYPES.into_iter().collect()
}

/// The entry columns the message decoder reads, with the readers' types.
#[pyfunction]
fn pulsar_input_schema(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    PySchema::new(bkcodec_core::pulsar::decoder::input_schema()).into_pyarrow(py)
}

/// A topic's full name from a bare name, `tenant/ns/topic`, a managed-ledger name or a full name.
#[pyfunction]
fn pulsar_topic_url(name: &str) -> String {
    bkcodec_core::pulsar::topics::topic_url(name)
}

/// A partition's topic (`x-partition-3` -> `x`); any other name as it is.
#[pyfunction]
fn pulsar_partitioned_topic_name(name: &str) -> &str {
    bkcodec_core::pulsar::topics::partitioned_topic_name(name)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMessageDecoder>()?;
    m.add_function(wrap_pyfunction!(pulsar_check_reader_options, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_decode_messages, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_read_messages, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_decode_managed_ledger_info, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_decode_managed_cursor_info, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_topic_ledgers, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_marker_types, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_input_schema, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_topic_url, m)?)?;
    m.add_function(wrap_pyfunction!(pulsar_partitioned_topic_name, m)?)?;
    Ok(())
}
