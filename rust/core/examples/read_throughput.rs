//! File-reader throughput: a legacy entry log of CRC-32C V1 entries read into
//! `binary_view` batches, verified.
//!
//! Without a path, the log is built in memory and read twice: scanned in place
//! (`memory`: the scan, digest and row-building work alone) and copied through the
//! reader's window as from a file (`window`). With a path, that file is read from
//! the page cache (`file`), timed in turn with the floor of a positioned-read
//! design: `pread` into one reused buffer and reading every word (`pread+sum`),
//! and the same with a CRC-32C instead of the sum (`pread+crc32c`).
//!
//! `cargo run --release --example read_throughput [payload bytes] [total MiB] [path]`
//! (`ROUNDS=n` sets how many times each is timed, the best counting; `NO_FLOORS=1`
//! times the reader alone, for profiling; `BATCH_KIB=n` sets the batches' entry bytes.)

use std::sync::Arc;
use std::time::Instant;

use arrow_buffer::Buffer;

use bkcodec_core::arrow::{EntryBatchOptions, EntryLogBatchReader, FileReaderOptions, OnError, PayloadMode};
use bkcodec_core::entry::encode_entry;
use bkcodec_core::files::EntryLogWriter;
use bkcodec_core::files::{FileSource, MemorySource, ReadAt};
use bkcodec_core::{DigestPolicy, DigestType, Digester, EntryHeader, LedgerDigestSettings};

// The wheel's allocator: fresh batch buffers cost what they cost there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rounds(default: usize) -> usize {
    std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Rows of one full read of `source`.
fn read_all(source: &Arc<dyn ReadAt>) -> usize {
    let entries = EntryBatchOptions { payload: PayloadMode::BinaryView, on_error: OnError::Flag };
    let mut options = FileReaderOptions::new(entries, LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Crc32c), b"bench"));
    if let Some(kib) = std::env::var("BATCH_KIB").ok().and_then(|v| v.parse::<usize>().ok()) {
        options.batch_bytes = kib << 10;
    }
    let reader = EntryLogBatchReader::new(source.clone(), Some(1), options).unwrap();
    // Each batch is dropped once the next exists, as a caller iterating them does.
    let mut last = None;
    let mut rows = 0;
    for batch in reader {
        let batch = batch.unwrap();
        rows += batch.num_rows();
        last = Some(batch);
    }
    drop(last);
    rows
}

const FLOOR_CHUNK: usize = 256 << 10;

/// `pread` of the whole file into one reused buffer, each chunk then read by `f`.
fn pread_floor(file: &std::fs::File, buf: &mut [u8], mut f: impl FnMut(&[u8]) -> u64) -> u64 {
    use std::os::unix::fs::FileExt;
    let (mut at, mut acc) = (0u64, 0u64);
    loop {
        let n = file.read_at(buf, at).unwrap();
        if n == 0 {
            return acc;
        }
        acc = acc.wrapping_add(f(&buf[..n]));
        at += n as u64;
    }
}

fn sum_words(data: &[u8]) -> u64 {
    let mut acc = [0u64; 8];
    for chunk in data.chunks_exact(64) {
        for (a, w) in acc.iter_mut().zip(chunk.chunks_exact(8)) {
            *a = a.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()));
        }
    }
    acc.iter().fold(0, |x, y| x.wrapping_add(*y))
}

fn report(name: &str, seconds: f64, bytes: usize, entries: usize) {
    println!(
        "{name:>14}: {:>6.1} ns/entry, {:>6.2} GB/s",
        seconds * 1e9 / entries as f64,
        bytes as f64 / seconds / 1e9
    );
}

fn main() {
    let payload_len = arg(1, 1024);
    if let Some(path) = std::env::args().nth(3) {
        return read_file(&path, payload_len);
    }
    let total = arg(2, 4) << 20;
    let digester = Digester::new(DigestType::Crc32c, b"");
    let payload: Vec<u8> = (0..payload_len).map(|i| (i as u8).wrapping_mul(37)).collect();
    let mut writer = EntryLogWriter::legacy(std::io::Cursor::new(Vec::new())).unwrap();
    let mut count = 0usize;
    while (writer.position() as usize) < total {
        let i = count as i64;
        let entry = encode_entry(&EntryHeader::new(0, 1 + i % 4, i / 4, i / 4 - 1, i), &payload, &digester).unwrap();
        writer.add_entry(&entry).unwrap();
        count += 1;
    }
    let log = Buffer::from_vec(writer.finish_rolled().unwrap().into_inner());
    let sources = [
        ("memory", Arc::new(MemorySource::new(log.clone())) as Arc<dyn ReadAt>),
        ("window", Arc::new(Copying(log.clone())) as Arc<dyn ReadAt>),
    ];
    let mut best = [f64::MAX; 2];
    for _ in 0..rounds((40usize << 20).div_ceil(total).max(5)) {
        for (b, (_, source)) in best.iter_mut().zip(&sources) {
            let start = Instant::now();
            assert_eq!(read_all(source), count);
            *b = b.min(start.elapsed().as_secs_f64());
        }
    }
    println!("{count} entries of {payload_len} B ({:.1} MiB)", log.len() as f64 / (1 << 20) as f64);
    for ((name, _), b) in sources.iter().zip(best) {
        report(name, b, log.len(), count);
    }
}

/// A file from the page cache, read by the reader and by the floors, in turn.
fn read_file(path: &str, payload_len: usize) {
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    let source: Arc<dyn ReadAt> = Arc::new(FileSource::open(path).unwrap());
    let rows = read_all(&source);
    let mut buf = vec![0u8; FLOOR_CHUNK];
    let mut best = [f64::MAX; 3];
    for _ in 0..rounds(20) {
        let start = Instant::now();
        assert_eq!(read_all(&source), rows);
        best[0] = best[0].min(start.elapsed().as_secs_f64());
        if std::env::var_os("NO_FLOORS").is_some() {
            continue;
        }
        let start = Instant::now();
        std::hint::black_box(pread_floor(&file, &mut buf, sum_words));
        best[1] = best[1].min(start.elapsed().as_secs_f64());
        let start = Instant::now();
        std::hint::black_box(pread_floor(&file, &mut buf, |d| u64::from(bkcodec_core::digest::crc32c(d))));
        best[2] = best[2].min(start.elapsed().as_secs_f64());
    }
    println!("{path}: {rows} rows ({payload_len} B payloads), {:.1} MiB", len as f64 / (1 << 20) as f64);
    for (name, b) in ["file", "pread+sum", "pread+crc32c"].iter().zip(best) {
        report(name, b, len, rows);
    }
    println!("file / pread+sum: {:.2}x", best[1] / best[0]);
}

/// Bytes served by copying, as a file's are.
struct Copying(Buffer);

impl ReadAt for Copying {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = (offset as usize).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0.as_slice()[start..start + n]);
        Ok(n)
    }
}
