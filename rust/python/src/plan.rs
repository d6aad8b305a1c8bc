//! `plan_partitions`: the core's planner (`bkcodec_core::plan`), which the Python and
//! JVM Spark sources both pack their reads with, so they cannot drift apart.

use std::path::PathBuf;

use bkcodec_core::plan::{narrow_to_offsets, pack_splits, parse_id_ranges, FileSplit, ReadKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// A split as Python passes it: `(path, kind, start, end, size)`, None for a bound or
/// size not known; kind `entrylog`, `journal` or `index`.
type SplitTuple = (String, String, Option<u64>, Option<u64>, Option<u64>);

fn split_of(py: Python<'_>, (path, kind, start, end, size): SplitTuple) -> PyResult<FileSplit> {
    let kind = ReadKind::from_name(&kind).py_err(py)?;
    Ok(FileSplit { path: PathBuf::from(path), kind, start, end, size })
}

fn tuple_of(s: FileSplit) -> SplitTuple {
    (s.path.to_string_lossy().into_owned(), s.kind.name().to_string(), s.start, s.end, s.size)
}

/// The partitions of `splits` (files, or byte ranges of them, in path order): the
/// target size (`split_size`, lowered so there are at least `min_partitions`), large
/// entry logs and journals cut into ranges of it, and consecutive splits packed to it,
/// each counting `open_cost` bytes more. Returns lists of split tuples.
#[pyfunction]
#[pyo3(signature = (splits, *, split_size, min_partitions, open_cost))]
fn plan_partitions(
    py: Python<'_>,
    splits: Vec<SplitTuple>,
    split_size: u64,
    min_partitions: u64,
    open_cost: u64,
) -> PyResult<Vec<Vec<SplitTuple>>> {
    let kept = splits.into_iter().map(|s| split_of(py, s)).collect::<PyResult<Vec<_>>>()?;
    let groups = pack_splits(&kept, split_size, min_partitions, open_cost).py_err(py)?;
    Ok(groups.into_iter().map(|g| g.into_iter().map(tuple_of).collect()).collect())
}

/// `split` narrowed to the bytes a read needs for rows whose `offset` lies in
/// `[low, high)` (None: unbounded), or None when no row of it can pass (see
/// `bkcodec_core::plan::narrow_to_offsets`).
#[pyfunction(name = "narrow_to_offsets")]
#[pyo3(signature = (split, low, high))]
fn py_narrow_to_offsets(py: Python<'_>, split: SplitTuple, low: Option<i64>, high: Option<i64>) -> PyResult<Option<SplitTuple>> {
    Ok(narrow_to_offsets(&split_of(py, split)?, low, high).map(tuple_of))
}

/// The command line's range syntax (`3,10:20,40:`, END excluded) as inclusive
/// `(low, high)` pairs, as the core reads it for every reader and source; a
/// refusal (ValueError, its text alone, for an argument parser to name) is prefixed
/// with `name` when one is given.
#[pyfunction(name = "parse_id_ranges")]
#[pyo3(signature = (text, name = ""))]
fn py_parse_id_ranges(text: &str, name: &str) -> PyResult<Vec<(i64, i64)>> {
    parse_id_ranges(name, text).map_err(|e| PyValueError::new_err(e.detail))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(py_parse_id_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(py_narrow_to_offsets, m)?)?;
    Ok(())
}
