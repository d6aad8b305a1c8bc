//! Measures the decompressors `pulsar/codec.rs` could use, on what Pulsar stores: a
//! batch of 100 JSON-like 100-byte messages (about 11 KB) and a 1 MiB payload,
//! compressed as Java producers do. Prints GB/s of output and ratios from one run.
//!
//!     cargo run --release -p bkcodec-core --example pulsar_codec_choice
//!
//! Candidates: LZ4 raw blocks with `lz4_flex` (checked, unsafe decoding: the
//! configuration in use) and the C library through `lz4`; ZSTD with the C library
//! through `zstd` and pure-Rust `ruzstd`; ZLIB, streaming (what Java's unterminated
//! streams need), with zlib-rs (through `flate2`, in use) and `miniz_oxide`;
//! Snappy with `snap`, the only well-kept raw-format decoder in Rust.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bkcodec_core::pulsar::codec::{Compression, Decompressor};
use bkcodec_core::pulsar::testing::java_zlib;

const MIN_PASS: Duration = Duration::from_millis(60);

fn batch_payload() -> Vec<u8> {
    let mut out = Vec::new();
    for seq in 0..100u64 {
        let text = format!("{{\"order\":{seq},\"customer\":\"c-{}\",\"amount\":{}}}", seq % 977, seq * 7 % 10_000);
        let message: Vec<u8> = text.bytes().cycle().take(100).collect();
        out.extend_from_slice(&[0, 0, 0, 6, 0x18, 100, 0x40, seq as u8 & 0x7f, 0x12, 0]);
        out.extend_from_slice(&message);
    }
    out
}

fn large_payload() -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 20);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    while out.len() < 1 << 20 {
        // Half text, half noise: a mixed payload.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(format!("event {} value {} ", x % 1000, x >> 40).as_bytes());
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(1 << 20);
    out
}

/// Best GB/s (of output) of `f` over a few passes.
fn measure(size: usize, mut f: impl FnMut() -> usize) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut calls = 0u64;
        while start.elapsed() < MIN_PASS {
            assert_eq!(black_box(f()), size);
            calls += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / calls as f64);
    }
    size as f64 / best / 1e9
}

fn main() {
    for (name, data) in [("batch of 100 x 100 B", batch_payload()), ("1 MiB", large_payload())] {
        let n = data.len();
        println!("{name} ({n} bytes):");
        let mut out = vec![0u8; n];
        let mut ours = Decompressor::new();
        let mut vec_out = Vec::new();

        let lz4 = lz4_flex::block::compress(&data);
        let a = measure(n, || lz4_flex::block::decompress_into(&lz4, &mut out).unwrap());
        let b = measure(n, || lz4::block::decompress_to_buffer(&lz4, Some(n as i32), &mut out).unwrap());
        let c = measure(n, || {
            ours.decompress(Compression::Lz4, &lz4, n as u64, &mut vec_out).unwrap();
            vec_out.len()
        });
        println!("  lz4   lz4_flex {a:6.2} GB/s | lz4 (C) {b:6.2} GB/s ({:.2}x) | in the decoder {c:6.2} GB/s", a / b);

        let zst = zstd::bulk::compress(&data, 3).unwrap();
        let mut dctx = zstd::bulk::Decompressor::new().unwrap();
        let a = measure(n, || dctx.decompress_to_buffer(&zst, &mut out).unwrap());
        let mut rz = ruzstd::decoding::FrameDecoder::new();
        let b = measure(n, || rz.decode_all(&zst, &mut out).unwrap());
        let c = measure(n, || {
            ours.decompress(Compression::Zstd, &zst, n as u64, &mut vec_out).unwrap();
            vec_out.len()
        });
        println!("  zstd  zstd (C)  {a:6.2} GB/s | ruzstd  {b:6.2} GB/s ({:.2}x) | in the decoder {c:6.2} GB/s", a / b);

        let java = java_zlib(&data);
        let a = measure(n, || {
            ours.decompress(Compression::Zlib, &java, n as u64, &mut vec_out).unwrap();
            vec_out.len()
        });
        let mut state = miniz_oxide::inflate::stream::InflateState::new(miniz_oxide::DataFormat::Zlib);
        let b = measure(n, || {
            state.reset(miniz_oxide::DataFormat::Zlib);
            let r = miniz_oxide::inflate::stream::inflate(&mut state, &java, &mut out, miniz_oxide::MZFlush::Sync);
            r.bytes_written
        });
        println!("  zlib  zlib-rs {a:6.2} GB/s | miniz_oxide {b:6.2} GB/s ({:.2}x), both streaming Java's sync-flushed streams", a / b);

        let snappy = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let a = measure(n, || {
            ours.decompress(Compression::Snappy, &snappy, n as u64, &mut vec_out).unwrap();
            vec_out.len()
        });
        println!("  snappy snap {a:6.2} GB/s");
    }
}
