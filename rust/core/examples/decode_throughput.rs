//! Decode throughput of the entry batch path: 100k entries (64-byte payloads unless
//! named), into each payload mode, verified unless named.
//! `cargo run --release --example decode_throughput [name filter]`.

use std::time::Instant;

use arrow_array::BinaryArray;
use bkcodec_core::arrow::{EntryBatchOptions, EntryDecoder, OnError, PayloadMode};
use bkcodec_core::entry::encode_entry;
use bkcodec_core::{DigestPolicy, DigestType, Digester, EntryHeader};

// The wheel's allocator: fresh batch buffers cost what they cost there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: usize = 100_000;
fn n() -> usize { std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(N) }

fn entries(dt: DigestType, payload_len: usize) -> BinaryArray {
    let digester = Digester::new(dt, b"pw");
    let payload: Vec<u8> = (0..payload_len).map(|i| (i as u8).wrapping_mul(37)).collect();
    let len = payload_len as i64;
    BinaryArray::from_iter_values((0..n() as i64).map(|i| {
        encode_entry(&EntryHeader::new(0, 7, i, i - 1, len * (i + 1)), &payload, &digester).unwrap()
    }))
}

fn run(name: &str, (dt, payload_len): (DigestType, usize), policy: DigestPolicy, mode: PayloadMode, verify: bool) {
    // An argument runs only the case it names, or else the cases whose name contains it.
    if std::env::args().nth(1).is_some_and(|only| !(name == only || !CASES.contains(&only.as_str()) && name.contains(&only))) {
        return;
    }
    let array = &entries(dt, payload_len);
    let mut best = f64::MAX;
    for _ in 0..15 * N / n() {
        let start = Instant::now();
        let options = EntryBatchOptions { payload: mode, on_error: OnError::Raise };
        let mut decoder = EntryDecoder::new(options, policy, b"pw", verify, n(), array.values().len());
        decoder.append_array(array, 0).unwrap();
        let batch = decoder.finish().unwrap();
        assert_eq!(batch.num_rows(), n());
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!("{name:<28} {:>6.1} ns/entry", best * 1e9 / n() as f64);
}

const CASES: [&str; 9] = [
    "crc32c 64 binary",
    "crc32c 64 binary_view",
    "crc32c 64 none",
    "crc32c 64 binary no-verify",
    "crc32c 64 none no-verify",
    "crc32c 64 binary auto",
    "crc32 64 binary",
    "hmac 64 binary",
    "crc32c 1024 binary",
];

fn main() {
    let fixed = DigestPolicy::Fixed;
    let verify = true;
    let crc32c = (DigestType::Crc32c, 64);
    run("crc32c 64 binary", crc32c, fixed(DigestType::Crc32c), PayloadMode::Binary, verify);
    run("crc32c 64 binary_view", crc32c, fixed(DigestType::Crc32c), PayloadMode::BinaryView, verify);
    run("crc32c 64 none", crc32c, fixed(DigestType::Crc32c), PayloadMode::None, verify);
    run("crc32c 64 binary no-verify", crc32c, fixed(DigestType::Crc32c), PayloadMode::Binary, false);
    run("crc32c 64 none no-verify", crc32c, fixed(DigestType::Crc32c), PayloadMode::None, false);
    run("crc32c 64 binary auto", crc32c, DigestPolicy::Auto, PayloadMode::Binary, verify);
    let crc32 = (DigestType::Crc32, 64);
    run("crc32 64 binary", crc32, fixed(DigestType::Crc32), PayloadMode::Binary, verify);
    let hmac = (DigestType::Hmac, 64);
    run("hmac 64 binary", hmac, fixed(DigestType::Hmac), PayloadMode::Binary, verify);
    let large = (DigestType::Crc32c, 1024);
    run("crc32c 1024 binary", large, fixed(DigestType::Crc32c), PayloadMode::Binary, verify);
}
