//! Arguments shared by the bookie-file readers: the digest settings (a digest type
//! for every ledger, or per-ledger settings from ledger metadata, a mapping or a
//! directory of dumped znodes), payload and error handling, batch size, byte range.

use std::path::PathBuf;

use bkcodec_core::metadata::znode_dump::read_znode_dir;
use bkcodec_core::arrow::{EntryBatchOptions, FileReaderOptions, OnError, PayloadMode};
use bkcodec_core::{DigestPolicy, DigestType, LedgerDigestInfo, LedgerDigestSettings};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyString, PyTuple};

use crate::args::{digest_policy, Password};
use crate::errors::{to_pyerr, IntoPyResult};
use crate::metadata::PyLedgerMetadata;

/// One ledger's settings: `LedgerMetadata`, a digest type name, or
/// `(digest_type, password)`.
fn ledger_info(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<LedgerDigestInfo> {
    if let Ok(md) = value.cast::<PyLedgerMetadata>() {
        return Ok(md.get().0.digest_info());
    }
    if let Ok(name) = value.cast::<PyString>() {
        let dt = DigestType::from_name(name.to_str()?).py_err(py)?;
        return Ok(LedgerDigestInfo { digest_type: Some(dt), password: Vec::new() });
    }
    if let Ok(pair) = value.cast::<PyTuple>() {
        if pair.len() == 2 {
            let name: Option<String> = pair.get_item(0)?.extract()?;
            let dt = name.map(|n| DigestType::from_name(&n)).transpose().py_err(py)?;
            let password: Password = pair.get_item(1)?.extract()?;
            return Ok(LedgerDigestInfo { digest_type: dt, password: password.as_bytes().to_vec() });
        }
    }
    Err(PyTypeError::new_err(format!(
        "a ledger's digest settings are a LedgerMetadata, a digest type name or a (digest_type, password) pair, not {}",
        value.get_type().name()?
    )))
}

fn insert_mapping(py: Python<'_>, digests: &mut LedgerDigestSettings, mapping: &Bound<'_, PyMapping>) -> PyResult<()> {
    for item in mapping.items()?.iter() {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let ledger_id: i64 = key
            .extract()
            .map_err(|_| PyTypeError::new_err("ledger ids (the mapping's keys) must be integers"))?;
        digests.insert(ledger_id, ledger_info(py, &value)?);
    }
    Ok(())
}

/// `digest_type` is `None`/`"auto"`, a digest type name, or a mapping of per-ledger
/// settings (other ledgers are inferred); `ledger_metadata` is a mapping (as
/// `load_ledger_metadata_dir` returns) or a directory of dumped znodes.
pub fn ledger_digest_settings(
    py: Python<'_>,
    digest_type: Option<&Bound<'_, PyAny>>,
    password: &Password,
    ledger_metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<LedgerDigestSettings> {
    let mut per_ledger: Option<Bound<'_, PyMapping>> = None;
    let policy = match digest_type {
        None => DigestPolicy::Auto,
        Some(v) if v.is_none() => DigestPolicy::Auto,
        Some(v) => match v.cast::<PyString>() {
            Ok(name) => digest_policy(py, Some(name.to_str()?))?,
            Err(_) => {
                let mapping = v.cast::<PyMapping>().map_err(|_| {
                    PyTypeError::new_err("digest_type is None, \"auto\", a digest type name, or a mapping of ledger id to settings")
                })?;
                per_ledger = Some(mapping.clone());
                DigestPolicy::Auto
            }
        },
    };
    let mut digests = LedgerDigestSettings::new(policy, password.as_bytes());
    if let Some(md) = ledger_metadata.filter(|m| !m.is_none()) {
        if let Ok(mapping) = md.cast::<PyMapping>() {
            insert_mapping(py, &mut digests, mapping)?;
        } else if let Ok(dir) = md.extract::<PathBuf>() {
            let records = py.detach(|| read_znode_dir(&dir)).py_err(py)?;
            for r in records {
                let (Some(id), metadata) = (r.ledger_id, r.metadata) else { continue };
                let metadata = metadata.map_err(|e| to_pyerr(py, e))?;
                digests.insert(id, metadata.digest_info());
            }
        } else {
            return Err(PyTypeError::new_err(
                "ledger_metadata is a mapping of ledger id to LedgerMetadata (or settings) or a directory of dumped znodes",
            ));
        }
    }
    // Explicit per-ledger settings win over metadata.
    if let Some(mapping) = per_ledger {
        insert_mapping(py, &mut digests, &mapping)?;
    }
    Ok(digests)
}

/// The options of `read_entry_log` and `read_journal`.
#[allow(clippy::too_many_arguments)]
pub fn file_scan_options(
    py: Python<'_>,
    digest_type: Option<&Bound<'_, PyAny>>,
    password: &Password,
    ledger_metadata: Option<&Bound<'_, PyAny>>,
    verify: bool,
    batch_size: usize,
    payload: &str,
    on_error: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> PyResult<FileReaderOptions> {
    if batch_size == 0 {
        return Err(PyValueError::new_err("batch_size must be positive"));
    }
    let entries = EntryBatchOptions {
        payload: PayloadMode::from_name(payload).py_err(py)?,
        on_error: OnError::from_name(on_error).py_err(py)?,
    };
    let mut options = FileReaderOptions::new(entries, ledger_digest_settings(py, digest_type, password, ledger_metadata)?);
    options.verify = verify;
    options.batch_rows = batch_size;
    options.start = start.unwrap_or(0);
    options.end = end.unwrap_or(u64::MAX);
    Ok(options)
}
