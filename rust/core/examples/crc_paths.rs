//! Every CRC-32C path this CPU runs, forced one at a time, against the bound of
//! the instructions it uses, measured here in the same run:
//!
//!     cargo run --release -p bkcodec-core --example crc_paths
//!
//! Bounds are the steady state of bare instruction loops over the same
//! messages (no set-up, no final reduction, so upper bounds):
//! - `sse42`: the `crc32` instruction on 8-byte words, the best of 1 to 8
//!   independent streams (its latency times its throughput);
//! - `pclmul`: PCLMULQDQ folding of 128-bit registers (the best of 4 and 8)
//!   plus the `crc32` bound: the path runs both at once, on separate ports;
//! - `avx512` (and `crc-fast` on CPUs where it picks VPCLMULQDQ): 512-bit
//!   VPCLMULQDQ folding plus the `crc32` bound;
//! - `portable`: no instruction bound; beside it the `crc` crate's 16-table loop.
//!
//! Then the kernels inside the paths alone, with the `crc32c` crate (three
//! `crc32` streams, as the PyPI wheels run) and `crc-fast`'s SSE4.2 +
//! PCLMULQDQ kernel (copied in `crc_paths/crc_fast_sse.rs`: what `crc-fast`,
//! and so `digest::crc32c`, ran on x86-64 without AVX-512 before the `pclmul`
//! path). Messages are many distinct ones in a 256 KiB working set, as a batch
//! reader sees them; GB/s are the best of many short passes, so a shared
//! machine's preemptions fall out. Bytes per cycle use the clock measured by a
//! chain of dependent multiplies (three cycles each on every x86-64 core since
//! Core 2 and Zen).

// Measurement loops, not shipped: each states once why its loads stay in bounds.
#![allow(clippy::undocumented_unsafe_blocks)]

#[path = "crc_paths/crc_fast_sse.rs"]
mod crc_fast_sse;

use std::arch::x86_64::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

use bkcodec_core::digest::{self, CrcPath};

const WORKING_SET: usize = 256 * 1024;
const MIN_PASS: Duration = Duration::from_millis(2);
const PASSES: usize = 40;

/// Best GB/s over passes of `f` across `bufs`.
fn measure(bufs: &[&[u8]], mut f: impl FnMut(&[u8]) -> u64) -> f64 {
    let bytes: usize = bufs.iter().map(|b| b.len()).sum();
    let mut best = f64::MAX;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut rounds = 0u64;
        let mut acc = 0u64;
        while start.elapsed() < MIN_PASS || rounds == 0 {
            for b in bufs {
                acc ^= f(black_box(b));
            }
            rounds += 1;
        }
        black_box(acc);
        best = best.min(start.elapsed().as_secs_f64() / rounds as f64);
    }
    bytes as f64 / best / 1e9
}

/// The clock, from a chain of dependent 64-bit multiplies (latency three).
/// (A chain of adds is no clock on Golden Cove cores, which fold small
/// immediate adds away at rename.)
fn clock_ghz() -> f64 {
    const MULS: u64 = 8 * 2_000_000;
    let mut best = f64::MAX;
    for _ in 0..PASSES {
        let mut x = 3u64;
        let start = Instant::now();
        // SAFETY: register arithmetic only.
        unsafe {
            std::arch::asm!(
                "2:",
                "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
                "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
                "dec {n}",
                "jnz 2b",
                x = inout(reg) x,
                n = inout(reg) MULS / 8 => _,
                options(nomem, nostack),
            );
        }
        best = best.min(start.elapsed().as_secs_f64());
        black_box(x);
    }
    3.0 * MULS as f64 / best / 1e9
}

/// `S` streams of the `crc32` instruction over `S` equal parts of `data`.
#[target_feature(enable = "sse4.2")]
fn crc32_streams<const S: usize>(data: &[u8]) -> u64 {
    let part = data.len() / S / 8 * 8;
    let mut c = [0u64; S];
    let p = data.as_ptr();
    for w in (0..part).step_by(8) {
        for (s, c) in c.iter_mut().enumerate() {
            // SAFETY: `s * part + w + 8 <= S * part <= data.len()`.
            *c = _mm_crc32_u64(*c, unsafe { p.add(s * part + w).cast::<u64>().read_unaligned() });
        }
    }
    c.iter().fold(0, |a, b| a ^ b)
}

/// Folding `R` 128-bit registers over `data` (a multiple of `16 R` bytes); the
/// multiplier's value does not change the timing.
#[target_feature(enable = "pclmulqdq,sse4.1")]
fn fold_xmm<const R: usize>(data: &[u8]) -> u64 {
    let k = _mm_set_epi64x(0x1234_5678, 0x9ABC_DEF0);
    let p = data.as_ptr();
    let mut acc = [_mm_setzero_si128(); R];
    for at in (0..data.len() / (16 * R) * (16 * R)).step_by(16 * R) {
        for (j, a) in acc.iter_mut().enumerate() {
            // SAFETY: `at + 16 j + 16 <= data.len()`.
            let d = unsafe { _mm_loadu_si128(p.add(at + 16 * j).cast()) };
            *a = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(*a, k, 0x00), _mm_clmulepi64_si128(*a, k, 0x11)), d);
        }
    }
    acc.iter().fold(0, |s, a| s ^ _mm_cvtsi128_si64(*a) as u64)
}

/// Folding `R` 512-bit registers.
#[target_feature(enable = "avx512f,vpclmulqdq")]
fn fold_zmm<const R: usize>(data: &[u8]) -> u64 {
    let k = _mm512_set1_epi64(0x1234_5678);
    let p = data.as_ptr();
    let mut acc = [_mm512_setzero_si512(); R];
    for at in (0..data.len() / (64 * R) * (64 * R)).step_by(64 * R) {
        for (j, a) in acc.iter_mut().enumerate() {
            // SAFETY: `at + 64 j + 64 <= data.len()`.
            let d = unsafe { _mm512_loadu_si512(p.add(at + 64 * j).cast()) };
            let (lo, hi) = (_mm512_clmulepi64_epi128(*a, k, 0x00), _mm512_clmulepi64_epi128(*a, k, 0x11));
            *a = _mm512_ternarylogic_epi64(lo, hi, d, 0x96);
        }
    }
    acc.iter().fold(0, |s, a| s ^ _mm_cvtsi128_si64(_mm512_castsi512_si128(*a)) as u64)
}

const CRC_TABLE16: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

fn size_name(n: usize) -> String {
    if n >= 1024 { format!("{} KiB", n / 1024) } else { format!("{n} B") }
}

fn main() {
    let f = |name: &str| std::arch::is_x86_feature_detected!("sse4.2") && name == "sse4.2"
        || std::arch::is_x86_feature_detected!("pclmulqdq") && name == "pclmulqdq"
        || std::arch::is_x86_feature_detected!("avx2") && name == "avx2"
        || std::arch::is_x86_feature_detected!("avx512f") && name == "avx512f"
        || std::arch::is_x86_feature_detected!("vpclmulqdq") && name == "vpclmulqdq";
    let (sse42, pclmul, avx512) = (f("sse4.2"), f("pclmulqdq") && f("sse4.2"), f("avx512f") && f("vpclmulqdq"));
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_default();
    let ghz = clock_ghz();
    println!("{model}: SSE4.2 {sse42}, PCLMULQDQ {}, AVX2 {}, AVX-512F {}, VPCLMULQDQ {}", f("pclmulqdq"), f("avx2"), f("avx512f"), f("vpclmulqdq"));
    println!("clock from dependent multiplies: {ghz:.2} GHz; path chosen here: {}", digest::crc_path());

    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let data: Vec<u8> = (0..WORKING_SET)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();

    for size in [16 * 1024, 1024, 256] {
        let bufs: Vec<&[u8]> = data.chunks_exact(size).collect();
        let rate = |gbps: f64| format!("{gbps:>6.1} GB/s {:>5.1} B/c", gbps / ghz);
        println!("\n{} messages", size_name(size));
        println!("  bound loops:");
        let mut crc32_bound = 0.0f64;
        if sse42 {
            for (name, k) in [
                ("crc32, 1 stream", crc32_streams::<1> as unsafe fn(&[u8]) -> u64),
                ("crc32, 3 streams", crc32_streams::<3>),
                ("crc32, 4 streams", crc32_streams::<4>),
                ("crc32, 6 streams", crc32_streams::<6>),
                ("crc32, 8 streams", crc32_streams::<8>),
            ] {
                // SAFETY: SSE4.2 checked.
                let g = measure(&bufs, |b| unsafe { k(b) });
                println!("    {name:<34} {}", rate(g));
                crc32_bound = crc32_bound.max(g);
            }
        }
        let mut xmm_bound = 0.0f64;
        if pclmul {
            for (name, k) in [("PCLMULQDQ 128-bit, 4 registers", fold_xmm::<4> as unsafe fn(&[u8]) -> u64), ("PCLMULQDQ 128-bit, 8 registers", fold_xmm::<8>)] {
                if size < 2 * 16 * 8 {
                    continue;
                }
                // SAFETY: PCLMULQDQ checked (SSE4.1 comes with SSE4.2).
                let g = measure(&bufs, |b| unsafe { k(b) });
                println!("    {name:<34} {}", rate(g));
                xmm_bound = xmm_bound.max(g);
            }
        }
        let mut zmm_bound = 0.0f64;
        if avx512 {
            for (name, k) in [("VPCLMULQDQ 512-bit, 4 registers", fold_zmm::<4> as unsafe fn(&[u8]) -> u64), ("VPCLMULQDQ 512-bit, 8 registers", fold_zmm::<8>)] {
                // Messages of at least two steps of the wider loop, or it never runs.
                if size < 2 * 64 * 8 {
                    continue;
                }
                // SAFETY: AVX-512F and VPCLMULQDQ checked.
                let g = measure(&bufs, |b| unsafe { k(b) });
                println!("    {name:<34} {}", rate(g));
                zmm_bound = zmm_bound.max(g);
            }
        }
        let table16 = measure(&bufs, |b| u64::from(CRC_TABLE16.checksum(b)));
        println!("    {:<34} {}", "crc crate, 16 tables (no bound)", rate(table16));

        // Today's code on this CPU: `crc-fast` above 256 bytes; on x86-64
        // without AVX-512, crc-fast's SSE kernel (measured below).
        let today = measure(&bufs, |b| u64::from(digest::crc32c_append_on(CrcPath::CrcFast, 0, b).unwrap()));
        println!("  paths (forced): GB/s, B/cycle, bound, share of bound, vs crc-fast's choice here");
        for p in CrcPath::ALL {
            if !p.available() {
                println!("    {:<10} not on this CPU", p.name());
                continue;
            }
            let bound = match p {
                CrcPath::Portable => table16,
                CrcPath::Sse42 => crc32_bound,
                CrcPath::Pclmul => xmm_bound + crc32_bound,
                CrcPath::CrcFast | CrcPath::Avx512 if avx512 => zmm_bound + crc32_bound,
                CrcPath::CrcFast | CrcPath::Avx512 => xmm_bound + crc32_bound,
            };
            let want = digest::crc32c_append_on(CrcPath::Portable, 0, bufs[0]);
            assert_eq!(digest::crc32c_append_on(p, 0, bufs[0]), want, "{p}");
            let g = measure(&bufs, |b| u64::from(digest::crc32c_append_on(p, 0, b).unwrap()));
            let what = if p == CrcPath::Portable { "of the 16-table loop" } else { "of bound" };
            println!("    {:<10} {}  bound {bound:>6.1} GB/s  {:>4.2}x {what}  {:>4.2}x crc-fast", p.name(), rate(g), g / bound, g / today);
        }
        println!("  kernels alone:");
        let mut kernels: Vec<(&str, digest::Crc32cFn)> = digest::crc32c_kernels();
        if pclmul {
            // SAFETY: SSE4.2 and PCLMULQDQ checked; the pointer and length are a slice's.
            kernels.push(("crc-fast SSE v4s3x3 (copy)", |v, d| !unsafe { crc_fast_sse::crc32_iscsi_sse_v4s3x3(!v, d.as_ptr(), d.len()) }));
        }
        kernels.push(("crc32c 0.6 crate (3 crc32 streams)", |v, d| crc32c::crc32c_append(v, d)));
        let want = digest::crc32c(bufs[0]);
        for (name, k) in kernels {
            assert_eq!(k(0, bufs[0]), want, "{name}");
            let g = measure(&bufs, |b| u64::from(k(0, b)));
            println!("    {name:<38} {}  {:>4.2}x crc-fast", rate(g), g / today);
        }
    }
}
