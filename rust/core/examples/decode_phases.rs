//! Where `decode_entries` spends its time, per entry: the CRC-32C of the entries
//! alone (`concat_many`), framing and checking them (`check_group`), the whole
//! decode into each payload mode, and writing output of the same size (fresh
//! memory). 100k entries of one ledger, CRC-32C, V1, in one Arrow column.
//!
//!     cargo run --release -p bkcodec-core --example decode_phases [payload bytes]
//!
//! `ONLY=binary` (or `binary_view`, `none`) repeats that decode alone, for a profiler.
// Measurement kernels, not shipped: each loop states once why its loads stay in bounds.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::time::Instant;
use arrow_array::BinaryArray;
use bkcodec_core::arrow::{EntryBatchOptions, EntryDecoder, OnError, PayloadMode};
use bkcodec_core::digest_check::GROUP_LEN;
use bkcodec_core::entry::encode_entry;
use bkcodec_core::{CheckedEntry, DigestChecker, DigestPolicy, DigestType, Digester, EntryHeader, LedgerDigestSettings, DigestStatus};

// The wheel's allocator: fresh batch buffers cost what they cost there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn best(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut b = f64::MAX;
    for _ in 0..rounds { let t = Instant::now(); f(); b = b.min(t.elapsed().as_secs_f64()); }
    b
}

fn main() {
    let n = 100_000usize;
    let payload_len: usize = std::env::args().nth(1).and_then(|v| v.parse().ok()).unwrap_or(64);
    let digester = Digester::new(DigestType::Crc32c, b"pw");
    let payload: Vec<u8> = (0..payload_len).map(|i| (i as u8).wrapping_mul(37)).collect();
    let len = payload_len as i64;
    let array = BinaryArray::from_iter_values((0..n as i64).map(|i| encode_entry(&EntryHeader::new(0, 7, i, i - 1, len * (i + 1)), &payload, &digester).unwrap()));
    let entries: Vec<&[u8]> = (0..n).map(|i| array.value(i)).collect();
    let heads: Vec<&[u8]> = entries.iter().map(|e| &e[..32]).collect();
    let tails: Vec<&[u8]> = entries.iter().map(|e| &e[36..]).collect();
    let rounds = 30;
    if let Ok(mode) = std::env::var("ONLY") {
        // For profiling: one decode, over and over.
        let mode = PayloadMode::from_name(&mode).unwrap();
        for _ in 0..std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(500) {
            let options = EntryBatchOptions { payload: mode, on_error: OnError::Raise };
            let mut decoder = EntryDecoder::new(options, DigestPolicy::Fixed(DigestType::Crc32c), b"pw", true, n, array.values().len());
            decoder.append_array(&array, 0).unwrap();
            std::hint::black_box(decoder.finish().unwrap());
        }
        return;
    }
    let mut out = vec![0u32; n];
    let t_crc = best(rounds, || { for (o, (h, t)) in out.chunks_mut(GROUP_LEN).zip(heads.chunks(GROUP_LEN).zip(tails.chunks(GROUP_LEN))) { bkcodec_core::digest::crc32c_concat_many(o, h, t); } std::hint::black_box(&out); });
    let mut checker = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Crc32c), b"pw"), true);
    let empty = CheckedEntry { header: EntryHeader::new(0, 0, 0, 0, 0), digest_type: None, payload_at: 0, verdict: DigestStatus::NotAsked };
    let mut checked = vec![empty; GROUP_LEN];
    let t_group = best(rounds, || { for c in entries.chunks(GROUP_LEN) { let k = checker.check_group(c, &mut checked[..c.len()]); assert_eq!(k, c.len()); } std::hint::black_box(&checked); });
    let mut t_decode = [0.0; 3];
    for (i, mode) in [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None].into_iter().enumerate() {
        t_decode[i] = best(rounds, || {
            let options = EntryBatchOptions { payload: mode, on_error: OnError::Raise };
            let mut decoder = EntryDecoder::new(options, DigestPolicy::Fixed(DigestType::Crc32c), b"pw", true, n, array.values().len());
            decoder.append_array(&array, 0).unwrap();
            let batch = decoder.finish().unwrap();
            assert_eq!(batch.num_rows(), n);
        });
    }
    // Output memory alone: what the columns hold, allocated and written.
    let t_alloc = best(rounds, || {
        let cols: Vec<Vec<i64>> = (0..5).map(|_| { let mut v = Vec::with_capacity(n); v.extend(0..n as i64); v }).collect();
        let mut p = Vec::with_capacity(n * payload_len); for t in &tails { p.extend_from_slice(t); }
        std::hint::black_box((&cols, &p));
    });
    let ns = |s: f64| s * 1e9 / n as f64;
    println!("{payload_len} B: concat_many {:.1} ns, check_group {:.1} ns, decode binary {:.1} / view {:.1} / none {:.1} ns, output memory {:.1} ns per entry",
        ns(t_crc), ns(t_group), ns(t_decode[0]), ns(t_decode[1]), ns(t_decode[2]), ns(t_alloc));
}
