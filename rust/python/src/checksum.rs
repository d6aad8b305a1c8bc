//! `crc32c` and `crc32` with BookKeeper's resume semantics.
//!
//! Each is a C-level `METH_FASTCALL` function rather than a `#[pyfunction]`:
//! pyo3's argument handling costs about as much as checksumming a hundred bytes,
//! and these are called once per short message. An exact `bytes` with an
//! optional positional `int` is checksummed at once; any other call has its
//! arguments parsed here and reads any buffer.

use std::ffi::{c_ulong, CStr};

use bkcodec_core::digest;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use pyo3::{ffi, IntoPyObjectExt};

use crate::buffer::BytesInput;

/// Inputs at least this large are checksummed with the GIL released.
const RELEASE_GIL_ABOVE: usize = 64 * 1024;

/// Runs `checksum` over the bytes of `data` (any buffer). `bytes` is read
/// directly: a buffer export costs about as much as checksumming a kilobyte.
fn with_bytes(data: &Bound<'_, PyAny>, value: u32, checksum: fn(u32, &[u8]) -> u32) -> PyResult<u32> {
    let py = data.py();
    let run = |s: &[u8]| {
        if s.len() >= RELEASE_GIL_ABOVE {
            py.detach(|| checksum(value, s))
        } else {
            checksum(value, s)
        }
    };
    match data.cast::<PyBytes>() {
        Ok(b) => Ok(run(b.as_bytes())),
        Err(_) => Ok(run(data.extract::<BytesInput>()?.as_slice())),
    }
}

/// `name(data, value=0)` called with any arguments: parsed as Python would a
/// function of that signature, then `checksum` of any buffer.
///
/// # Safety
/// As for a `METH_FASTCALL | METH_KEYWORDS` function: `args` holds `nargs`
/// positional values followed by one value per name in `kwnames`.
unsafe fn checksum_any(
    py: Python<'_>,
    name: &str,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    checksum: fn(u32, &[u8]) -> u32,
) -> PyResult<u32> {
    let nargs = nargs as usize;
    if nargs > 2 {
        return Err(PyTypeError::new_err(format!(
            "{name}() takes from 1 to 2 positional arguments but {nargs} were given"
        )));
    }
    let arg = |i: usize| {
        // SAFETY: `i` is below `nargs` plus the keywords' count (the caller's contract).
        unsafe { Bound::from_borrowed_ptr(py, *args.add(i)) }
    };
    let mut data = (nargs >= 1).then(|| arg(0));
    let mut value = (nargs >= 2).then(|| arg(1));
    if !kwnames.is_null() {
        // SAFETY: kwnames is a tuple of strings when not null.
        let keywords = unsafe { Bound::from_borrowed_ptr(py, kwnames) }.cast_into::<PyTuple>()?;
        for (i, keyword) in keywords.iter().enumerate() {
            let keyword = keyword.cast_into::<PyString>()?;
            let slot = match keyword.to_str()? {
                "data" => &mut data,
                "value" => &mut value,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "{name}() got an unexpected keyword argument '{other}'"
                    )))
                }
            };
            if slot.is_some() {
                return Err(PyTypeError::new_err(format!("{name}() got multiple values for argument '{keyword}'")));
            }
            *slot = Some(arg(nargs + i));
        }
    }
    let data = data
        .ok_or_else(|| PyTypeError::new_err(format!("{name}() missing 1 required positional argument: 'data'")))?;
    let value = match value {
        Some(v) => v.extract::<u32>()?,
        None => 0,
    };
    with_bytes(&data, value, checksum)
}

/// `value` as a `u32` when it is an exact `int` in range; `None` leaves the
/// error (a wrong type, a negative or too large number) to [`checksum_any`].
///
/// # Safety
/// The GIL must be held and `value` a valid object.
unsafe fn exact_u32(value: *mut ffi::PyObject) -> Option<u32> {
    // SAFETY: the GIL is held and `value` is valid (the caller's contract); the
    // C API calls below need nothing more.
    unsafe {
        if ffi::PyLong_CheckExact(value) == 0 {
            return None;
        }
        let v = ffi::PyLong_AsUnsignedLong(value);
        if v == c_ulong::MAX && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        u32::try_from(v).ok()
    }
}

/// The bytes of `data` when it is an exact `bytes`, or a `bytearray` small enough
/// to be read with the GIL held throughout (nothing can resize it meanwhile).
///
/// # Safety
/// The GIL must be held and `data` a valid object; the slice lives no longer
/// than the caller's reference to `data` (and, for a `bytearray`, the GIL).
#[inline(always)]
unsafe fn direct_bytes<'a>(data: *mut ffi::PyObject) -> Option<&'a [u8]> {
    // SAFETY: the GIL is held and `data` is valid (the caller's contract); each slice
    // covers the object's own storage, of the length it reports.
    unsafe {
        if ffi::PyBytes_CheckExact(data) != 0 {
            let len = ffi::Py_SIZE(data) as usize;
            return Some(std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(data).cast::<u8>(), len));
        }
        if ffi::PyByteArray_CheckExact(data) != 0 {
            let len = ffi::Py_SIZE(data) as usize;
            if len < RELEASE_GIL_ABOVE {
                // An empty bytearray may have no storage: a null pointer is no slice.
                let start = ffi::PyByteArray_AsString(data).cast::<u8>();
                return Some(if len == 0 { &[] } else { std::slice::from_raw_parts(start, len) });
            }
        }
        None
    }
}

/// The entry points' body: `checksum` of an exact `bytes` (or small `bytearray`)
/// passed alone or with a positional `int` at once, any other call through
/// [`checksum_any`].
///
/// # Safety
/// As for a `METH_FASTCALL | METH_KEYWORDS` function: the GIL is held and
/// `args` holds `nargs` positional values followed by one per name in `kwnames`.
#[inline(always)]
unsafe fn checksum_call(
    name: &str,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    checksum: fn(u32, &[u8]) -> u32,
) -> *mut ffi::PyObject {
    if kwnames.is_null() && (nargs == 1 || nargs == 2) {
        // SAFETY: the caller's contract; the caller's references keep `data` alive
        // for the call, and only immutable `bytes` are read without the GIL.
        unsafe {
            let value = if nargs == 2 { exact_u32(*args.add(1)) } else { Some(0) };
            if let (Some(bytes), Some(value)) = (direct_bytes(*args), value) {
                let crc = if bytes.len() >= RELEASE_GIL_ABOVE {
                    let thread = ffi::PyEval_SaveThread();
                    let crc = checksum(value, bytes);
                    ffi::PyEval_RestoreThread(thread);
                    crc
                } else {
                    checksum(value, bytes)
                };
                return ffi::PyLong_FromUnsignedLong(c_ulong::from(crc));
            }
        }
    }
    // SAFETY: Python calls this with the GIL held; the rest is the caller's contract.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `args`, `nargs` and `kwnames` as Python passed them (the caller's contract).
    match unsafe { checksum_any(py, name, args, nargs, kwnames, checksum) } {
        // SAFETY: the GIL is held.
        Ok(crc) => unsafe { ffi::PyLong_FromUnsignedLong(c_ulong::from(crc)) },
        Err(err) => {
            err.restore(py);
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn crc32c_entry(
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: called by Python as a METH_FASTCALL | METH_KEYWORDS function.
    unsafe { checksum_call("crc32c", args, nargs, kwnames, digest::crc32c_append) }
}

unsafe extern "C" fn crc32_entry(
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: called by Python as a METH_FASTCALL | METH_KEYWORDS function.
    unsafe { checksum_call("crc32", args, nargs, kwnames, digest::crc32_append) }
}

type Entry = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    ffi::Py_ssize_t,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;

/// Adds the function `name` to `m`.
fn add_entry(m: &Bound<'_, PyModule>, name: &'static CStr, doc: &'static CStr, entry: Entry) -> PyResult<()> {
    // CPython keeps a pointer to the definition for the function's lifetime.
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: entry },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: doc.as_ptr(),
    }));
    let py = m.py();
    let module_name = m.name()?.into_bound_py_any(py)?;
    // SAFETY: the definition lives forever; module and name are valid objects.
    let function = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(def, m.as_ptr(), module_name.as_ptr()))?
    };
    m.add(name.to_str().expect("ASCII name"), function)
}

/// The CRC-32C path in use (`portable`, `sse42`, `pclmul`, `crc-fast`, `avx512`).
#[pyfunction]
fn _crc_path() -> &'static str {
    digest::crc_path().name()
}

/// The CRC-32C paths this CPU runs.
#[pyfunction]
fn _crc_paths() -> Vec<&'static str> {
    digest::CrcPath::ALL.into_iter().filter(|p| p.available()).map(|p| p.name()).collect()
}

fn path_named(name: &str) -> PyResult<digest::CrcPath> {
    digest::CrcPath::from_name(name)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown CRC-32C path {name:?}")))
}

/// Forces the CRC-32C path for the whole process (`None`: the CPU's own), for
/// tests and measurements; returns the path now in use.
#[pyfunction]
#[pyo3(signature = (name))]
fn _set_crc_path(name: Option<&str>) -> PyResult<&'static str> {
    let path = name.map(path_named).transpose()?;
    digest::set_crc_path(path).map(|p| p.name()).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// `crc32c` on one path alone, whatever the process uses (`_crc32c_portable`,
/// `_crc32c_sse42`, ...): the same kind of entry point as `crc32c`, so paths
/// compare side by side in one process at the cost `crc32c` has. A path this
/// CPU cannot run raises `ValueError`.
macro_rules! path_entries {
    ($(($entry:ident, $path:expr, $name:literal, $cname:literal)),* $(,)?) => {
        $(
            unsafe extern "C" fn $entry(
                _module: *mut ffi::PyObject,
                args: *const *mut ffi::PyObject,
                nargs: ffi::Py_ssize_t,
                kwnames: *mut ffi::PyObject,
            ) -> *mut ffi::PyObject {
                if !$path.available() {
                    // SAFETY: Python calls this with the GIL held.
                    let py = unsafe { Python::assume_attached() };
                    pyo3::exceptions::PyValueError::new_err(format!("this CPU cannot run the {} CRC-32C path", $path)).restore(py);
                    return std::ptr::null_mut();
                }
                // SAFETY: called by Python as a METH_FASTCALL | METH_KEYWORDS
                // function; the path is one this CPU runs, checked just above.
                unsafe {
                    checksum_call($name, args, nargs, kwnames, |v, d| {
                        digest::crc32c_append_on($path, v, d).expect("the CPU runs the path, checked before")
                    })
                }
            }
        )*
        const PATH_ENTRIES: &[(&CStr, Entry)] = &[$(($cname, $entry)),*];
    };
}

path_entries!(
    (crc32c_portable_entry, digest::CrcPath::Portable, "_crc32c_portable", c"_crc32c_portable"),
    (crc32c_sse42_entry, digest::CrcPath::Sse42, "_crc32c_sse42", c"_crc32c_sse42"),
    (crc32c_pclmul_entry, digest::CrcPath::Pclmul, "_crc32c_pclmul", c"_crc32c_pclmul"),
    (crc32c_crc_fast_entry, digest::CrcPath::CrcFast, "_crc32c_crc_fast", c"_crc32c_crc_fast"),
    (crc32c_avx512_entry, digest::CrcPath::Avx512, "_crc32c_avx512", c"_crc32c_avx512"),
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_crc_path, m)?)?;
    m.add_function(wrap_pyfunction!(_crc_paths, m)?)?;
    m.add_function(wrap_pyfunction!(_set_crc_path, m)?)?;
    for (name, entry) in PATH_ENTRIES {
        add_entry(m, name, c"(data, value=0)\n--\n\nCRC-32C on one path alone (for tests and measurements).", *entry)?;
    }
    // The signature line before "--" is what `inspect.signature` reads.
    add_entry(
        m,
        c"crc32c",
        c"crc32c(data, value=0)\n--\n\nCRC-32C of `data`, resumed from the finalized CRC `value`.",
        crc32c_entry,
    )?;
    add_entry(
        m,
        c"crc32",
        c"crc32(data, value=0)\n--\n\nCRC-32 (zlib) of `data`, resumed from the finalized CRC `value`.",
        crc32_entry,
    )
}
