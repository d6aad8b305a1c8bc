//! The `entries` argument of `decode_entries` and of the Pulsar decoders: Arrow
//! chunks imported zero-copy, or buffers borrowed from a Python sequence, converted
//! while the GIL is held.

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};
use pyo3_arrow::input::AnyArray;

use crate::buffer::BytesInput;

pub(crate) enum EntriesInput {
    /// Arrow chunks (zero-copy imports) of one of the accepted types.
    Arrow(Vec<ArrayRef>),
    /// Buffers borrowed from the items of a Python sequence; `None` items stay `None`.
    Buffers(Vec<Option<BytesInput>>),
}

/// What a function takes as `entries`, and how its errors say so.
pub(crate) struct Accepted {
    /// Entry rows (a struct array with a `payload` column) besides binary columns.
    pub rows: bool,
    /// Said of an Arrow input of another type (", not <type>" follows).
    pub arrow: &'static str,
    /// Said of a single bytes-like object.
    pub single: &'static str,
    /// Said of an object that is not a sequence (", not <type name>" follows when
    /// `name_type`).
    pub sequence: &'static str,
    pub name_type: bool,
}

impl EntriesInput {
    pub(crate) fn extract(entries: &Bound<'_, PyAny>, accepted: &Accepted) -> PyResult<Self> {
        let py = entries.py();
        if entries.hasattr(intern!(py, "__arrow_c_array__"))? || entries.hasattr(intern!(py, "__arrow_c_stream__"))? {
            let (chunks, field) = entries.extract::<AnyArray>()?.into_chunked_array()?.into_inner();
            return match field.data_type() {
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Ok(EntriesInput::Arrow(chunks)),
                DataType::Struct(_) if accepted.rows => Ok(EntriesInput::Arrow(chunks)),
                other => Err(PyTypeError::new_err(format!("{}, not {other}", accepted.arrow))),
            };
        }
        if entries.is_instance_of::<PyBytes>()
            || entries.is_instance_of::<PyByteArray>()
            || entries.is_instance_of::<PyMemoryView>()
            || entries.is_instance_of::<PyString>()
        {
            return Err(PyTypeError::new_err(accepted.single));
        }
        let items = entries.try_iter().map_err(|_| {
            PyTypeError::new_err(if accepted.name_type {
                format!("{}, not {}", accepted.sequence, entries.get_type().name().map(|n| n.to_string()).unwrap_or_default())
            } else {
                accepted.sequence.to_string()
            })
        })?;
        let mut buffers = Vec::with_capacity(entries.len().unwrap_or(0));
        for item in items {
            let item = item?;
            buffers.push(if item.is_none() { None } else { Some(item.extract::<BytesInput>()?) });
        }
        Ok(EntriesInput::Buffers(buffers))
    }

    pub(crate) fn rows(&self) -> usize {
        match self {
            EntriesInput::Arrow(chunks) => chunks.iter().map(|c| c.len()).sum(),
            EntriesInput::Buffers(b) => b.len(),
        }
    }

    /// The input's bytes, an Arrow chunk's as `array_bytes` counts them: a size hint
    /// for the columns the output copies.
    pub(crate) fn bytes(&self, array_bytes: impl Fn(&ArrayRef) -> usize) -> usize {
        match self {
            EntriesInput::Arrow(chunks) => chunks.iter().map(array_bytes).sum(),
            EntriesInput::Buffers(b) => b.iter().flatten().map(|x| x.as_slice().len()).sum(),
        }
    }
}
