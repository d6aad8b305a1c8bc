//! Many entries at once: `decode_entries`, from an Arrow column or a Python
//! sequence of bytes-like objects to a `pyarrow.RecordBatch`.

use bkcodec_core::arrow::{entry_bytes, EntryBatchOptions, EntryDecoder, OnError, PayloadMode};
use bkcodec_core::LedgerDigestSettings;
use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatch;

use crate::args::{digest_policy, Password};
use crate::buffer::BytesInput;
use crate::entries_input::{Accepted, EntriesInput};
use crate::errors::IntoPyResult;

/// What `decode_entries` takes as `entries`.
const ACCEPTED: Accepted = Accepted {
    rows: false,
    arrow: "entries must be an Arrow binary, large_binary or binary_view column",
    single: "entries must be a sequence of entries (or an Arrow binary column); decode one entry with decode_entry",
    sequence: "entries must be an Arrow binary column or a sequence of bytes-like objects",
    name_type: true,
};

/// Decodes many entries into a `pyarrow.RecordBatch`, one row per input value.
///
/// `entries` is an Arrow binary, large_binary or binary_view array or chunked array
/// (anything with `__arrow_c_array__` or `__arrow_c_stream__`), or a sequence of
/// bytes-like objects; a null (or `None`) is a null row. Columns: `format_version`,
/// `scope_id`, `ledger_id`, `entry_id`, `last_add_confirmed`, `length`, `digest_type`,
/// `digest_ok`, then `payload` (`"binary"`: copied; `"binary_view"`: views into the
/// input's Arrow buffers, or one copy for a Python sequence; `"none"`: no column),
/// then `error` when `on_error="flag"`. `on_error="raise"` raises the first bad
/// entry's error (its `.offset` is within the entry; the message names its index);
/// `"flag"` keeps going and describes each bad entry in `error`, with ids null where
/// its bytes did not hold them. `digest_type=None` names V2 entries' types from their
/// flags and infers V1 entries' per ledger. The GIL is released while decoding.
#[pyfunction]
#[pyo3(signature = (entries, *, digest_type = None, password = Password::default(), verify = true, payload = "binary", on_error = "raise"), text_signature = "(entries, *, digest_type=None, password=b'', verify=True, payload='binary', on_error='raise')")]
fn decode_entries<'py>(
    py: Python<'py>,
    entries: &Bound<'py, PyAny>,
    digest_type: Option<&str>,
    password: Password,
    verify: bool,
    payload: &str,
    on_error: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let policy = digest_policy(py, digest_type)?;
    let options = EntryBatchOptions {
        payload: PayloadMode::from_name(payload).py_err(py)?,
        on_error: OnError::from_name(on_error).py_err(py)?,
    };
    let input = EntriesInput::extract(entries, &ACCEPTED)?;
    let payload_bytes = if options.payload == PayloadMode::Binary { input.bytes(|c| entry_bytes(c.as_ref())) } else { 0 };
    let batch = py
        .detach(|| {
            let digests = LedgerDigestSettings::new(policy, password.as_bytes()).with_password_given(password.given());
            let mut decoder = EntryDecoder::with_digests(options, digests, verify, input.rows(), payload_bytes);
            match &input {
                EntriesInput::Arrow(chunks) => decoder.append_arrays(chunks, 0)?,
                EntriesInput::Buffers(buffers) => {
                    decoder.append(buffers.iter().map(|b| b.as_ref().map(BytesInput::as_slice)), 0)?;
                }
            }
            decoder.finish()
        })
        .py_err(py)?;
    PyRecordBatch::new(batch).into_pyarrow(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_entries, m)?)?;
    Ok(())
}

