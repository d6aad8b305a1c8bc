//! The native half of the `bookkeeper-jvm` Spark source (`udfs/java`): JNI entry
//! points over `bkcodec-core`, which knows the bytes. This crate knows the JVM: it
//! turns Java's strings into the core's options, the core's batches into buffer
//! addresses Java wraps without a copy, and errors into Java exceptions.
//!
//! Handles (readers and batches) are ids in registries, not pointers: a handle Java
//! frees twice, or never had, is an exception, never a wild pointer. Each batch is
//! kept until Java frees it (`freeBatch`, called when Spark closes the batch's
//! vectors); closing a reader never frees its batches (Spark may close a reader
//! while its batches are still in use). Every entry point catches panics and turns
//! them, and every error, into a Java exception naming the file and byte offset.

pub mod columns;
pub mod export;
pub mod python_text;
pub mod reader;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use arrow_data::ArrayData;
use arrow_schema::Schema;
use bkcodec_core::plan::{plan_partitions, prune_by_ledgers, select_files, ReadKind, DEFAULT_OPEN_COST};
use bkcodec_core::{Error, ErrorKind};
use jni::objects::{JClass, JObjectArray, JString};
use jni::sys::{jlong, jlongArray, jobjectArray, jstring};
use jni::JNIEnv;

use crate::columns::{describe, full_schema, SourceOptions};
use crate::reader::{Split, SplitReader};

static NEXT_ID: AtomicI64 = AtomicI64::new(1);

type Readers = HashMap<i64, Arc<Mutex<SplitReader>>>;
/// A batch Java holds: the batch and its (unsliced) column data, whose buffers Java reads.
type Batches = HashMap<i64, (RecordBatch, Vec<ArrayData>)>;

fn readers() -> MutexGuard<'static, Readers> {
    static READERS: LazyLock<Mutex<Readers>> = LazyLock::new(Mutex::default);
    READERS.lock().unwrap_or_else(|e| e.into_inner())
}

fn batches() -> MutexGuard<'static, Batches> {
    static BATCHES: LazyLock<Mutex<Batches>> = LazyLock::new(Mutex::default);
    BATCHES.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many batches Java holds and has not freed (for tests: none once a query is done).
pub fn live_batches() -> usize {
    batches().len()
}

/// What an entry point failed with: the Java exception class and its message.
struct Failure {
    class: &'static str,
    message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let class = match e.kind {
            ErrorKind::InvalidArgument => "java/lang/IllegalArgumentException",
            ErrorKind::Io => "java/io/IOException",
            _ => "io/bkcodec/spark/BookKeeperFormatException",
        };
        Failure { class, message: e.to_string() }
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Failure {
        Failure { class: "java/lang/IllegalStateException", message: format!("JNI: {e}") }
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure { class: "java/lang/IllegalArgumentException", message: message.into() }
}

/// Runs `body`, turning a panic or an error into a pending Java exception and
/// `fallback` as the return value Java ignores.
fn guarded<'local, T>(env: &mut JNIEnv<'local>, fallback: T, body: impl FnOnce(&mut JNIEnv<'local>) -> Result<T, Failure>) -> T {
    let outcome = catch_unwind(AssertUnwindSafe(|| body(env)));
    let failure = match outcome {
        Ok(Ok(value)) => return value,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Failure { class: "java/lang/IllegalStateException", message: format!("bkcodec native code failed: {what}") }
        }
    };
    // A Java exception already pending (from a failed JNI call) is the one Java sees.
    if !env.exception_check().unwrap_or(true) {
        let _ = env.throw_new(failure.class, failure.message);
    }
    fallback
}

fn string(env: &mut JNIEnv<'_>, s: &JString<'_>) -> Result<String, Failure> {
    if s.is_null() {
        return Err(invalid("a null string"));
    }
    Ok(env.get_string(s)?.into())
}

fn strings(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> Result<Vec<String>, Failure> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    let n = env.get_array_length(array)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let item = JString::from(env.get_object_array_element(array, i)?);
        out.push(string(env, &item)?);
    }
    Ok(out)
}

/// Options as alternating names and values.
fn pairs(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> Result<Vec<(String, String)>, Failure> {
    let flat = strings(env, array)?;
    if flat.len() % 2 != 0 {
        return Err(invalid("options come as name, value pairs"));
    }
    Ok(flat.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect())
}

fn new_strings<'local>(env: &mut JNIEnv<'local>, items: &[String]) -> Result<jobjectArray, Failure> {
    let array = env.new_object_array(items.len() as i32, "java/lang/String", jni::objects::JObject::null())?;
    for (i, item) in items.iter().enumerate() {
        let s = env.new_string(item)?;
        env.set_object_array_element(&array, i as i32, &s)?;
        env.delete_local_ref(s)?;
    }
    Ok(array.into_raw())
}

/// The columns a query reads (none for a count), in its order.
fn schema_of(kind: &str, options: &SourceOptions, columns: &[String]) -> Result<Arc<Schema>, Failure> {
    let full = full_schema(ReadKind::from_name(kind)?, options)?;
    let mut fields = Vec::with_capacity(columns.len());
    for name in columns {
        let field = full.field_with_name(name).map_err(|_| invalid(format!("no column {name:?} in {kind} rows")))?;
        fields.push(field.clone());
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// `Native.schema(kind, options)`: `name<TAB>type<TAB>nullable` lines of every column.
#[no_mangle]
pub extern "system" fn Java_io_bkcodec_spark_Native_schema<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    kind: JString<'local>,
    options: JObjectArray<'local>,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let kind = string(env, &kind)?;
        let options = SourceOptions::from_pairs(&pairs(env, &options)?)?;
        let text = describe(&*full_schema(ReadKind::from_name(&kind)?, &options)?)?;
        Ok(env.new_string(text)?.into_raw())
    })
}

/// `Native.plan(paths, kind, splitSize, minPartitions, options)`: the read's kind,
/// then one line per split, `partition<TAB>kind<TAB>start<TAB>end<TAB>size<TAB>path`
/// (-1 for none), then `skip<TAB>path<TAB>why` for files left out. Entry logs whose
/// ledgers map holds no ledger the pushed ledger filter admits are not read.
#[no_mangle]
pub extern "system" fn Java_io_bkcodec_spark_Native_plan<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    paths: JObjectArray<'local>,
    kind: JString<'local>,
    split_size: jlong,
    min_partitions: jlong,
    options: JObjectArray<'local>,
) -> jobjectArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let paths: Vec<PathBuf> = strings(env, &paths)?.into_iter().map(PathBuf::from).collect();
        let kind = ReadKind::from_name(&string(env, &kind)?)?;
        let options = SourceOptions::from_pairs(&pairs(env, &options)?)?;
        if split_size <= 0 || min_partitions <= 0 {
            return Err(invalid("splitSize and minPartitions must be positive"));
        }
        let mut listing = select_files(&paths, kind)?;
        if let Some(ranges) = &options.rows.ledger_id {
            listing = prune_by_ledgers(&listing, ranges, options.password.as_bytes());
        }
        // Files whose name id the logId or journalId option does not admit hold no row.
        listing.files.retain(|f| options.admits_file(&f.path, f.kind));
        let offsets = options.rows.offset.as_deref();
        let partitions = plan_partitions(&listing, offsets, split_size as u64, min_partitions as u64, DEFAULT_OPEN_COST)?;
        let mut lines = vec![listing.kind.name().to_string(), listing.note.clone().unwrap_or_default()];
        let n = |v: Option<u64>| v.map_or(-1, |v| v.min(i64::MAX as u64) as i64);
        for (i, group) in partitions.iter().enumerate() {
            for s in group {
                lines.push(format!("{i}\t{}\t{}\t{}\t{}\t{}", s.kind.name(), n(s.start), n(s.end), n(s.size), s.path.to_string_lossy()));
            }
        }
        for (path, why) in &listing.skipped {
            lines.push(format!("skip\t{}\t{why}", path.to_string_lossy()));
        }
        new_strings(env, &lines)
    })
}

/// `Native.open(path, kind, start, end, options, columns)`: a reader of one split
/// (start -1: the whole file); nothing is read until `next`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_bkcodec_spark_Native_open<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    path: JString<'local>,
    read_kind: JString<'local>,
    file_kind: JString<'local>,
    start: jlong,
    end: jlong,
    options: JObjectArray<'local>,
    columns: JObjectArray<'local>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let path = PathBuf::from(string(env, &path)?);
        let read_kind = string(env, &read_kind)?;
        let kind = ReadKind::from_name(&string(env, &file_kind)?)?;
        if !matches!(kind, ReadKind::EntryLog | ReadKind::Journal | ReadKind::Index) {
            return Err(invalid(format!("a split is an entry log, a journal or an index file, not {}", kind.name())));
        }
        let options = SourceOptions::from_pairs(&pairs(env, &options)?)?;
        let columns = strings(env, &columns)?;
        let schema = schema_of(&read_kind, &options, &columns)?;
        let (start, end) = match (start, end) {
            (s, e) if s < 0 && e < 0 => (None, None),
            (s, e) if s >= 0 && e >= s => (Some(s as u64), Some(e as u64)),
            (s, e) => return Err(invalid(format!("byte range {s}..{e} of {} is not a range", path.display()))),
        };
        let reader = SplitReader::new(Split { path, kind, start, end }, schema, options);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        readers().insert(id, Arc::new(Mutex::new(reader)));
        Ok(id)
    })
}

/// `Native.next(reader)`: the next batch as `[batch id, rows, 7 longs per column]`
/// (see `export::describe`), or null at the end of the split.
#[no_mangle]
pub extern "system" fn Java_io_bkcodec_spark_Native_next<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    reader: jlong,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let Some(handle) = readers().get(&reader).cloned() else {
            return Err(Failure { class: "java/lang/IllegalStateException", message: format!("no open reader {reader}") });
        };
        let next = handle.lock().unwrap_or_else(|e| e.into_inner()).next_batch()?;
        let Some(batch) = next else { return Ok(std::ptr::null_mut()) };
        let rows = batch.num_rows();
        let (batch, datas) = export::unsliced(batch)?;
        let mut longs = vec![0i64];
        longs.extend(export::describe(rows, &datas)?);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        longs[0] = id;
        batches().insert(id, (batch, datas));
        let array = env.new_long_array(longs.len() as i32)?;
        env.set_long_array_region(&array, 0, &longs)?;
        Ok(array.into_raw())
    })
}

/// `Native.freeBatch(batch)`: Java is done with the batch's buffers.
#[no_mangle]
pub extern "system" fn Java_io_bkcodec_spark_Native_freeBatch<'local>(mut env: JNIEnv<'local>, _class: JClass<'local>, batch: jlong) {
    guarded(&mut env, (), |_| match batches().remove(&batch) {
        Some(_) => Ok(()),
        None => Err(Failure { class: "java/lang/IllegalStateException", message: format!("batch {batch} was freed already") }),
    })
}

/// `Native.close(reader)`: the file is closed; batches Java holds stay valid.
#[no_mangle]
pub extern "system" fn Java_io_bkcodec_spark_Native_close<'local>(mut env: JNIEnv<'local>, _class: JClass<'local>, reader: jlong) {
    guarded(&mut env, (), |_| {
        readers().remove(&reader);
        Ok(())
    })
}

/// `Native.liveBatches()`: batches handed to Java and not freed yet.
#[no_mangle]
pub extern "system" fn Java_io_bkcodec_spark_Native_liveBatches<'local>(mut env: JNIEnv<'local>, _class: JClass<'local>) -> jlong {
    guarded(&mut env, 0, |_| Ok(live_batches() as jlong))
}
