//! File-reader throughput with the file already in memory (no mapping, no page
//! cache): the scan, digest and row-building work alone. A legacy entry log of
//! CRC-32C V1 entries, read into `binary_view` batches, verified.
//! `cargo run --release --example read_throughput [payload bytes] [total MiB]`.

use std::time::Instant;

use arrow_buffer::Buffer;
use bkcodec_core::arrow::{EntryBatchOptions, EntryLogBatchReader, FileScanOptions, MappedFile, OnError, PayloadMode};
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
    let mut best = f64::MAX;
    let rounds = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or((40usize << 20).div_ceil(total).max(5));
    for _ in 0..rounds {
        let start = Instant::now();
        let entries = EntryBatchOptions { payload: PayloadMode::BinaryView, on_error: OnError::Flag };
        let options = FileScanOptions::new(entries, LedgerDigests::new(DigestPolicy::Fixed(DigestType::Crc32c), b""));
        let reader = EntryLogBatchReader::new(MappedFile::from_buffer(log.clone()), Some(1), options).unwrap();
        let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, count);
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{count} entries of {payload_len} B ({:.1} MiB): {:.1} ns/entry, {:.2} GB/s",
        log.len() as f64 / (1 << 20) as f64,
        best * 1e9 / count as f64,
        log.len() as f64 / best / 1e9
    );
}
