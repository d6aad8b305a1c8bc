//! Bookies as a whole: `file_kind`, `bookie_layout`, cookies, and the byte layouts
//! of DbLedgerStorage's RocksDB indexes (`decode_location_index`,
//! `decode_ledger_index` and the private encoders the index writers use). Reading
//! the databases is the Python side's, through a RocksDB binding.

use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use bkcodec_core::arrow::OnError;
use bkcodec_core::bookie::cookie::{encode_dir_list, read_cookie_file, CURRENT_LAYOUT_VERSION};
use bkcodec_core::bookie::index_batch::{decode_ledger_pairs, decode_location_pairs};
use bkcodec_core::bookie::index_db::{ledger_key, location_key, STORAGE_FLAGS_KEY, STORAGE_FLAG_NEEDS_INTEGRITY_CHECK};
use bkcodec_core::bookie::layout::{bookie_dir_of, FileKind};
use bkcodec_core::bookie::{self, BookieLayout, Cookie, LedgerData};
use bkcodec_core::LedgerId;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3_arrow::input::AnyArray;
use pyo3_arrow::PyRecordBatch;

use crate::buffer::BytesInput;
use crate::errors::IntoPyResult;

/// A path and what it is (see `file_kind`). Usable as a path (`os.fspath`).
#[pyclass(module = "bkcodec", name = "BookieFile", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyBookieFile {
    #[pyo3(get)]
    path: PathBuf,
    #[pyo3(get)]
    kind: &'static str,
    /// The bookie directory the file belongs to: the parent of its `current/`.
    #[pyo3(get)]
    dir: PathBuf,
    #[pyo3(get)]
    log_id: Option<i64>,
    #[pyo3(get)]
    journal_id: Option<i64>,
    #[pyo3(get)]
    ledger_id: Option<i64>,
    #[pyo3(get)]
    scope_id: Option<i64>,
    /// For RocksDB databases and their files: `locations`, `ledgers`,
    /// `scoped-locations`, `scoped-ledgers`, `metadata-cache` (None when unknown).
    #[pyo3(get)]
    role: Option<&'static str>,
    #[pyo3(get)]
    note: Option<String>,
}

impl From<&bookie::BookieFile> for PyBookieFile {
    fn from(f: &bookie::BookieFile) -> Self {
        let (mut log_id, mut journal_id, mut ledger_id, mut scope_id) = (None, None, None, None);
        match f.kind {
            FileKind::EntryLog { log_id: id } => log_id = id,
            FileKind::Journal { journal_id: id } => journal_id = id,
            FileKind::Index { scope_id: s, ledger_id: id } => {
                ledger_id = id;
                scope_id = Some(s);
            }
            _ => {}
        }
        PyBookieFile {
            path: f.path.clone(),
            kind: f.kind.name(),
            dir: bookie_dir_of(f),
            log_id,
            journal_id,
            ledger_id,
            scope_id,
            role: f.kind.role().map(|r| r.as_str()),
            note: f.note.clone(),
        }
    }
}

#[pymethods]
impl PyBookieFile {
    fn __fspath__(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }

    fn __repr__(&self) -> String {
        let mut extra = String::new();
        for (name, v) in [("log_id", self.log_id), ("journal_id", self.journal_id), ("scope_id", self.scope_id), ("ledger_id", self.ledger_id)] {
            if let Some(v) = v {
                extra.push_str(&format!(", {name}={v}"));
            }
        }
        if let Some(r) = self.role {
            extra.push_str(&format!(", role={r:?}"));
        }
        if let Some(n) = &self.note {
            extra.push_str(&format!(", note={n:?}"));
        }
        format!("BookieFile({:?}, kind={:?}{extra})", self.path.display().to_string(), self.kind)
    }
}

/// What one path is: `entry_log`, `journal`, `index`, `last_mark`, `last_id`,
/// `cookie`, `bookie_status`, `rocksdb` (a database directory), `rocksdb_file` (a
/// file inside one, never an entry log whatever its name), `directory` or `other`.
/// A file whose name says nothing is recognised by its magic; text named like an
/// entry log, journal or index file is `other`, with a `note`; so is a FIFO or a
/// device, which is never opened. With `sniff=False`, from the name and parent
/// directory alone, without touching the disk (for a path that may be gone).
#[pyfunction]
#[pyo3(signature = (path, *, sniff = true))]
fn file_kind(py: Python<'_>, path: PathBuf, sniff: bool) -> PyResult<PyBookieFile> {
    if !sniff {
        let kind = bookie::layout::kind_from_name(&path);
        return Ok(PyBookieFile::from(&bookie::BookieFile { path, kind, note: None }));
    }
    let f = py.detach(|| bookie::classify(&path)).py_err(py)?;
    Ok(PyBookieFile::from(&f))
}

fn str_refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A bookie cookie (`current/VERSION`).
#[pyclass(module = "bkcodec", name = "Cookie", frozen, eq)]
#[derive(PartialEq, Clone)]
pub struct PyCookie(Cookie);

#[pymethods]
impl PyCookie {
    #[new]
    #[pyo3(signature = (bookie_id, journal_dirs, ledger_dirs, *, index_dirs = None, instance_id = None, layout_version = 5))]
    fn new(
        bookie_id: String,
        journal_dirs: Vec<String>,
        ledger_dirs: Vec<String>,
        index_dirs: Option<Vec<String>>,
        instance_id: Option<String>,
        layout_version: i32,
    ) -> PyResult<Self> {
        if !(3..=CURRENT_LAYOUT_VERSION).contains(&layout_version) {
            return Err(PyValueError::new_err(format!("cookie layout versions are 3 to 5, not {layout_version}")));
        }
        Ok(PyCookie(Cookie {
            layout_version,
            bookie_id,
            journal_dirs: journal_dirs.join(","),
            ledger_dirs: encode_dir_list(&str_refs(&ledger_dirs)),
            instance_id,
            index_dirs: index_dirs.map(|d| encode_dir_list(&str_refs(&d))),
        }))
    }

    /// Parses a cookie's bytes as `Cookie.parse` does.
    #[staticmethod]
    fn parse(py: Python<'_>, data: BytesInput) -> PyResult<Self> {
        Cookie::parse(data.as_slice()).map(PyCookie).py_err(py)
    }

    /// The text BookKeeper writes for this cookie.
    fn encode(&self) -> String {
        self.0.encode()
    }

    #[getter]
    fn layout_version(&self) -> i32 {
        self.0.layout_version
    }

    #[getter]
    fn bookie_id(&self) -> &str {
        &self.0.bookie_id
    }

    #[getter]
    fn journal_dirs(&self) -> Vec<String> {
        self.0.journal_dir_list()
    }

    #[getter]
    fn ledger_dirs(&self) -> Vec<String> {
        self.0.ledger_dir_list()
    }

    /// None when the indexes are in the ledger dirs.
    #[getter]
    fn index_dirs(&self) -> Option<Vec<String>> {
        self.0.index_dir_list()
    }

    #[getter]
    fn instance_id(&self) -> Option<&str> {
        self.0.instance_id.as_deref()
    }

    fn __repr__(&self) -> String {
        format!(
            "Cookie(bookie_id={:?}, journal_dirs={:?}, ledger_dirs={:?}, index_dirs={:?}, instance_id={:?}, layout_version={})",
            self.0.bookie_id,
            self.0.journal_dir_list(),
            self.0.ledger_dir_list(),
            self.0.index_dir_list(),
            self.0.instance_id,
            self.0.layout_version
        )
    }
}

/// Reads a cookie file (`current/VERSION`).
#[pyfunction]
fn read_cookie(py: Python<'_>, path: PathBuf) -> PyResult<PyCookie> {
    py.detach(|| read_cookie_file(&path)).map(PyCookie).py_err(py)
}

/// A RocksDB database found in a bookie. Usable as a path (`os.fspath`).
#[pyclass(module = "bkcodec", name = "IndexDatabase", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyIndexDatabase {
    #[pyo3(get)]
    path: PathBuf,
    /// `locations`, `ledgers`, `scoped-locations`, `scoped-ledgers`,
    /// `metadata-cache`, or None for a database bkcodec does not know.
    #[pyo3(get)]
    role: Option<&'static str>,
    /// The bookie directory it is in (the parent of its `current/`).
    #[pyo3(get)]
    dir: PathBuf,
}

#[pymethods]
impl PyIndexDatabase {
    fn __fspath__(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }

    fn __repr__(&self) -> String {
        let role = self.role.map_or_else(|| "None".to_string(), |r| format!("{r:?}"));
        format!("IndexDatabase({:?}, role={role})", self.path.display().to_string())
    }
}

/// What a tree holds: its files by kind, RocksDB databases, cookies, journal,
/// ledger and index directories, and which storage the bookie runs.
#[pyclass(module = "bkcodec", name = "BookieLayout", frozen)]
pub struct PyBookieLayout(BookieLayout);

#[pymethods]
impl PyBookieLayout {
    #[getter]
    fn root(&self) -> PathBuf {
        self.0.root.clone()
    }

    /// `"DbLedgerStorage"` (RocksDB indexes), `"InterleavedLedgerStorage"` (`.idx`
    /// files) or None (no index found).
    #[getter]
    fn storage(&self) -> Option<&'static str> {
        self.0.storage.map(|s| s.name())
    }

    /// Every file, sorted by path (files inside RocksDB databases as `rocksdb_file`).
    #[getter]
    fn files(&self) -> Vec<PyBookieFile> {
        self.0.files.iter().map(PyBookieFile::from).collect()
    }

    /// The files of the given kinds, in path order.
    #[pyo3(signature = (*kinds))]
    fn files_of(&self, kinds: Vec<String>) -> PyResult<Vec<PyBookieFile>> {
        for k in &kinds {
            if !FileKind::NAMES.contains(&k.as_str()) {
                return Err(PyValueError::new_err(format!("unknown file kind {k:?} (one of {})", FileKind::NAMES.join(", "))));
            }
        }
        Ok(self.0.files.iter().filter(|f| kinds.iter().any(|k| k == f.kind.name())).map(PyBookieFile::from).collect())
    }

    #[getter]
    fn entry_logs(&self) -> PyResult<Vec<PyBookieFile>> {
        self.files_of(vec!["entry_log".into()])
    }

    #[getter]
    fn journals(&self) -> PyResult<Vec<PyBookieFile>> {
        self.files_of(vec!["journal".into()])
    }

    #[getter]
    fn index_files(&self) -> PyResult<Vec<PyBookieFile>> {
        self.files_of(vec!["index".into()])
    }

    #[getter]
    fn databases(&self) -> Vec<PyIndexDatabase> {
        self.0
            .databases
            .iter()
            .map(|d| PyIndexDatabase { path: d.path.clone(), role: d.role.map(|r| r.as_str()), dir: d.dir.clone() })
            .collect()
    }

    /// `{path: Cookie}` for every cookie that reads (the others are in `notes`).
    #[getter]
    fn cookies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for c in &self.0.cookies {
            if let Ok(cookie) = &c.cookie {
                d.set_item(&c.path, PyCookie(cookie.clone()))?;
            }
        }
        Ok(d)
    }

    #[getter]
    fn journal_dirs(&self) -> Vec<PathBuf> {
        self.0.journal_dirs.clone()
    }

    /// In the cookie's order when a cookie names them, else by path.
    #[getter]
    fn ledger_dirs(&self) -> Vec<PathBuf> {
        self.0.ledger_dirs.clone()
    }

    #[getter]
    fn index_dirs(&self) -> Vec<PathBuf> {
        self.0.index_dirs.clone()
    }

    /// `(ledger_dir, index_dir)` pairs: the index directory holding each ledger
    /// directory's indexes (the same directory unless the bookie has `indexDirs`);
    /// None where one of the two is not in the tree.
    #[getter]
    fn dir_pairs(&self) -> Vec<(Option<PathBuf>, Option<PathBuf>)> {
        self.0.dir_pairs.iter().map(|p| (p.ledger_dir.clone(), p.index_dir.clone())).collect()
    }

    /// Findings about the tree: unreadable directories, cookies that differ or
    /// name directories not found, files that are not what their names say.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.0.notes.clone()
    }

    /// `(path, reason)` for each directory or entry the walk could not read (what is
    /// below it is not in `files`).
    #[getter]
    fn unreadable(&self) -> Vec<(PathBuf, String)> {
        self.0.unreadable.clone()
    }

    fn __repr__(&self) -> String {
        let count = |k: &str| self.0.files.iter().filter(|f| f.kind.name() == k).count();
        format!(
            "<bkcodec.BookieLayout of {:?}: storage={}, {} entry logs, {} journals, {} index files, {} databases, {} cookies>",
            self.0.root.display().to_string(),
            self.0.storage.map_or("None", |s| s.name()),
            count("entry_log"),
            count("journal"),
            count("index"),
            self.0.databases.len(),
            self.0.cookies.len()
        )
    }
}

/// Walks `path` (a bookie root, a journal, ledger or index directory, a `current/`,
/// any tree, or one file) and says what is there.
#[pyfunction]
fn bookie_layout(py: Python<'_>, path: PathBuf) -> PyResult<PyBookieLayout> {
    py.detach(|| bookie::discover(&path)).map(PyBookieLayout).py_err(py)
}

/// One byte string of a Python sequence: bytes (read in place), or another
/// bytes-like object through the buffer protocol.
enum PyByteString<'py> {
    Bytes(Bound<'py, PyBytes>),
    Buffer(BytesInput),
}

/// Byte strings from an Arrow binary column or a Python sequence, borrowed.
enum ByteColumn<'py> {
    Arrow(Vec<ArrayRef>),
    Python(Vec<Option<PyByteString<'py>>>),
}

impl<'py> ByteColumn<'py> {
    fn extract(what: &str, ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = ob.py();
        if ob.hasattr(intern!(py, "__arrow_c_array__"))? || ob.hasattr(intern!(py, "__arrow_c_stream__"))? {
            let (chunks, field) = ob.extract::<AnyArray>()?.into_chunked_array()?.into_inner();
            return match field.data_type() {
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
                    Ok(ByteColumn::Arrow(chunks))
                }
                other => Err(PyTypeError::new_err(format!("{what} must be an Arrow binary column, not {other}"))),
            };
        }
        let items = ob
            .try_iter()
            .map_err(|_| PyTypeError::new_err(format!("{what} must be an Arrow binary column or a sequence of bytes")))?;
        let mut out = Vec::with_capacity(ob.len().unwrap_or(0));
        for item in items {
            let item = item?;
            out.push(if item.is_none() {
                None
            } else {
                match item.cast_into::<PyBytes>() {
                    Ok(b) => Some(PyByteString::Bytes(b)),
                    Err(e) => Some(PyByteString::Buffer(e.into_inner().extract::<BytesInput>()?)),
                }
            });
        }
        Ok(ByteColumn::Python(out))
    }

    fn slices(&self) -> Vec<Option<&[u8]>> {
        match self {
            ByteColumn::Arrow(chunks) => {
                let mut out = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
                for c in chunks {
                    match c.data_type() {
                        DataType::Binary => out.extend(c.as_binary::<i32>().iter()),
                        DataType::LargeBinary => out.extend(c.as_binary::<i64>().iter()),
                        DataType::BinaryView => out.extend(c.as_binary_view().iter()),
                        _ => out.extend(c.as_fixed_size_binary().iter()),
                    }
                }
                out
            }
            ByteColumn::Python(items) => items
                .iter()
                .map(|i| {
                    i.as_ref().map(|i| match i {
                        PyByteString::Bytes(b) => b.as_bytes(),
                        PyByteString::Buffer(b) => b.as_slice(),
                    })
                })
                .collect(),
        }
    }
}

/// A core decoder of index key/value pairs.
type PairDecoder = fn(&[Option<&[u8]>], &[Option<&[u8]>], bool, OnError) -> bkcodec_core::Result<arrow_array::RecordBatch>;

fn decode_pairs<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    values: &Bound<'py, PyAny>,
    scoped: bool,
    on_error: &str,
    decode: PairDecoder,
) -> PyResult<Bound<'py, PyAny>> {
    let on_error = OnError::from_name(on_error).py_err(py)?;
    let keys = ByteColumn::extract("keys", keys)?;
    let values = ByteColumn::extract("values", values)?;
    let (k, v) = (keys.slices(), values.slices());
    let batch = py.detach(|| decode(&k, &v, scoped, on_error)).py_err(py)?;
    PyRecordBatch::new(batch).into_pyarrow(py)
}

/// Decodes the keys and values of a `locations` database (`scoped=True`: a
/// `scoped-locations` one) into a `pyarrow.RecordBatch`: `scope_id`, `ledger_id`,
/// `entry_id`, `location`, `log_id`, `offset` (of the entry's size field), then
/// `error` with `on_error="flag"`.
#[pyfunction]
#[pyo3(signature = (keys, values, *, scoped = false, on_error = "raise"))]
fn decode_location_index<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    values: &Bound<'py, PyAny>,
    scoped: bool,
    on_error: &str,
) -> PyResult<Bound<'py, PyAny>> {
    decode_pairs(py, keys, values, scoped, on_error, decode_location_pairs)
}

/// Decodes the keys and values of a `ledgers` database (`scoped=True`: a
/// `scoped-ledgers` one): `scope_id`, `ledger_id`, `exists`, `fenced`, `master_key`,
/// `explicit_lac`, `limbo`, then `error` with `on_error="flag"`. The storage-flags
/// key gives no row.
#[pyfunction]
#[pyo3(signature = (keys, values, *, scoped = false, on_error = "raise"))]
fn decode_ledger_index<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    values: &Bound<'py, PyAny>,
    scoped: bool,
    on_error: &str,
) -> PyResult<Bound<'py, PyAny>> {
    decode_pairs(py, keys, values, scoped, on_error, decode_ledger_pairs)
}

/// Decodes `(key, value)` pairs as a RocksDB binding's iterator yields them (a list
/// of 2-tuples of bytes): the readers' fast path, without splitting the pairs in
/// Python. `ledgers` picks the ledger index layout, else the location index.
#[pyfunction]
#[pyo3(signature = (items, *, ledgers, scoped, on_error))]
fn _decode_index_items<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyList>,
    ledgers: bool,
    scoped: bool,
    on_error: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let on_error = OnError::from_name(on_error).py_err(py)?;
    let mut pairs: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> = Vec::with_capacity(items.len());
    for item in items.iter() {
        let pair = item.cast_into::<PyTuple>().map_err(|_| PyTypeError::new_err("items must be (key, value) tuples"))?;
        if pair.len() != 2 {
            return Err(PyTypeError::new_err("items must be (key, value) tuples"));
        }
        let bytes = |i| pair.get_item(i).and_then(|b| Ok(b.cast_into::<PyBytes>()?));
        pairs.push((bytes(0)?, bytes(1)?));
    }
    let keys: Vec<Option<&[u8]>> = pairs.iter().map(|(k, _)| Some(k.as_bytes())).collect();
    let values: Vec<Option<&[u8]>> = pairs.iter().map(|(_, v)| Some(v.as_bytes())).collect();
    let decode: PairDecoder = if ledgers { decode_ledger_pairs } else { decode_location_pairs };
    let batch = py.detach(|| decode(&keys, &values, scoped, on_error)).py_err(py)?;
    PyRecordBatch::new(batch).into_pyarrow(py)
}

/// Keys and values for a location index: a 16-byte key for scope 0, 24 bytes
/// otherwise (those go to the scoped database), the 8-byte location value.
#[pyfunction]
#[pyo3(signature = (scope_ids, ledger_ids, entry_ids, locations))]
fn _encode_location_pairs<'py>(
    py: Python<'py>,
    scope_ids: Vec<i64>,
    ledger_ids: Vec<i64>,
    entry_ids: Vec<i64>,
    locations: Vec<i64>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let n = ledger_ids.len();
    if scope_ids.len() != n || entry_ids.len() != n || locations.len() != n {
        return Err(PyValueError::new_err("scope_ids, ledger_ids, entry_ids and locations differ in length"));
    }
    let keys = PyList::empty(py);
    let values = PyList::empty(py);
    for i in 0..n {
        keys.append(PyBytes::new(py, &location_key(LedgerId::new(scope_ids[i], ledger_ids[i]), entry_ids[i])))?;
        values.append(PyBytes::new(py, &locations[i].to_be_bytes()))?;
    }
    Ok((keys, values))
}

/// A ledgers-database key and `LedgerData` value.
#[pyfunction]
#[pyo3(signature = (scope_id, ledger_id, master_key, *, fenced = false, exists = true, explicit_lac = None, limbo = None))]
#[allow(clippy::too_many_arguments)]
fn _encode_ledger_pair<'py>(
    py: Python<'py>,
    scope_id: i64,
    ledger_id: i64,
    master_key: BytesInput,
    fenced: bool,
    exists: bool,
    explicit_lac: Option<BytesInput>,
    limbo: Option<bool>,
) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
    let mut data = LedgerData::new(master_key.as_slice(), fenced);
    data.exists = Some(exists);
    data.explicit_lac = explicit_lac.map(|b| b.as_slice().to_vec());
    data.limbo = limbo;
    let key = ledger_key(LedgerId::new(scope_id, ledger_id), scope_id != 0);
    (PyBytes::new(py, &key), PyBytes::new(py, &data.to_bytes()))
}

/// The storage flags value of a `ledgers` database (8 bytes, big-endian);
/// `CorruptDataError` for a value of another length.
#[pyfunction]
fn parse_storage_flags(py: Python<'_>, value: &[u8]) -> PyResult<i64> {
    bkcodec_core::bookie::index_db::parse_storage_flags(value).py_err(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBookieFile>()?;
    m.add_class::<PyBookieLayout>()?;
    m.add_class::<PyIndexDatabase>()?;
    m.add_class::<PyCookie>()?;
    m.add_function(wrap_pyfunction!(file_kind, m)?)?;
    m.add_function(wrap_pyfunction!(bookie_layout, m)?)?;
    m.add_function(wrap_pyfunction!(read_cookie, m)?)?;
    m.add_function(wrap_pyfunction!(decode_location_index, m)?)?;
    m.add_function(wrap_pyfunction!(decode_ledger_index, m)?)?;
    m.add_function(wrap_pyfunction!(_decode_index_items, m)?)?;
    m.add_function(wrap_pyfunction!(_encode_location_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(_encode_ledger_pair, m)?)?;
    m.add("STORAGE_FLAGS_KEY", PyBytes::new(m.py(), &STORAGE_FLAGS_KEY))?;
    m.add("STORAGE_FLAG_NEEDS_INTEGRITY_CHECK", STORAGE_FLAG_NEEDS_INTEGRITY_CHECK)?;
    m.add_function(wrap_pyfunction!(parse_storage_flags, m)?)?;
    Ok(())
}
