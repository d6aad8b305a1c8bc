//! Decode throughput of the entry batch path: 100k CRC32C entries with 64-byte
//! payloads, verified, into each payload mode. `cargo run --release --example decode_throughput`.

use std::time::Instant;

use arrow_array::BinaryArray;
use bkcodec_core::arrow::{append_entry_array, EntryBatchBuilder, EntryBatchOptions, OnError, PayloadMode};
use bkcodec_core::entry::encode_entry;
use bkcodec_core::{DigestPolicy, DigestResolver, DigestType, Digester, EntryChecks, EntryHeader};

fn main() {
    const N: usize = 100_000;
    let digester = Digester::new(DigestType::Crc32c, b"");
    let payload: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
    let entries: Vec<Vec<u8>> = (0..N as i64)
        .map(|i| encode_entry(&EntryHeader::new(0, 7, i, i - 1, 64 * (i + 1)), &payload, &digester).unwrap())
        .collect();
    let array = BinaryArray::from_iter_values(entries.iter());
    for policy in [DigestPolicy::Fixed(DigestType::Crc32c), DigestPolicy::Auto] {
        for mode in [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None] {
            let mut best = f64::MAX;
            for _ in 0..15 {
                let start = Instant::now();
                let options = EntryBatchOptions { payload: mode, on_error: OnError::Raise };
                let mut builder = EntryBatchBuilder::new(options, N, array.values().len());
                let mut resolver = DigestResolver::new(policy, b"");
                append_entry_array(&mut builder, &mut resolver, &array, 0, EntryChecks::DIGEST).unwrap();
                let batch = builder.finish().unwrap();
                assert_eq!(batch.num_rows(), N);
                best = best.min(start.elapsed().as_secs_f64());
            }
            println!("{policy:?} {mode:?}: {:.1} ns/entry", best * 1e9 / N as f64);
        }
    }
}
