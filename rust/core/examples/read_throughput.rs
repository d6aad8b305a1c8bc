//! File-reader throughput with the file already in memory (no page cache): the
//! scan, digest and row-building work alone, the bytes scanned in place (`memory`)
//! or copied through the reader's window as from a file (`window`). A legacy entry
//! log of CRC-32C V1 entries, read into `binary_view` batches, verified.
//! `cargo run --release --example read_throughput [payload bytes] [total MiB]`.

use std::time::Instant;

use arrow_buffer::Buffer;
use std::sync::Arc;

use bkcodec_core::arrow::{EntryBatchOptions, EntryLogBatchReader, FileScanOptions, OnError, PayloadMode};
use bkcodec_core::files::{MemorySource, ReadAt};
use bkcodec_core::entry::encode_entry;
use bkcodec_core::files::EntryLogWriter;
use bkcodec_core::{DigestPolicy, DigestType, Digester, EntryHeader, LedgerDigests};

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let payload_len = arg(1, 1024);
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
    let rounds = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or((40usize << 20).div_ceil(total).max(5));
    for (name, source) in [
        ("memory", Arc::new(MemorySource::new(log.clone())) as Arc<dyn ReadAt>),
        ("window", Arc::new(Copying(log.clone())) as Arc<dyn ReadAt>),
    ] {
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let start = Instant::now();
            let entries = EntryBatchOptions { payload: PayloadMode::BinaryView, on_error: OnError::Flag };
            let options = FileScanOptions::new(entries, LedgerDigests::new(DigestPolicy::Fixed(DigestType::Crc32c), b""));
            let reader = EntryLogBatchReader::new(source.clone(), Some(1), options).unwrap();
            let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
            assert_eq!(rows, count);
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!(
            "{name}: {count} entries of {payload_len} B ({:.1} MiB): {:.1} ns/entry, {:.2} GB/s",
            log.len() as f64 / (1 << 20) as f64,
            best * 1e9 / count as f64,
            log.len() as f64 / best / 1e9
        );
    }
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
