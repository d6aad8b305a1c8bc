//! What this CPU can do for CRC-32C, against what `digest::crc32c` and the CRC
//! crates do, in one run: the bound a CRC-32C note states and its figure's
//! distance from it.
//!
//!     cargo run --release -p bkcodec-core --example crc32c_bound
//!
//! The bound loops are the steady state of the two ways x86-64 computes a CRC:
//! - carry-less multiply folding (PCLMULQDQ on 128 bits, VPCLMULQDQ on 256 and 512
//!   bits), with 4 and 8 independent fold registers: each step multiplies every
//!   register by the constant that moves it past the next block and adds the
//!   block. The folded registers are checked to give the message's CRC. Only the
//!   final reduction to 32 bits (a fixed few dozen cycles) is left out, so these
//!   are upper bounds for folding alone;
//! - the `crc32` instruction on 8-byte words: one stream (bound by its latency),
//!   and 3, 6 and 8 streams side by side (bound by its throughput). The streams'
//!   CRCs are not combined (a few multiplies per message).
//!
//! A kernel that runs both at once (as `digest::crc32c` does on AMD Zen 5) is
//! bounded by their sum, printed as `clmul + crc32`. Messages are 16 KiB (the size
//! the targets name) and 1 KiB, many distinct ones in a 256 KiB working set (as a
//! batch reader sees them); GB/s are the best of many short passes. Bytes per cycle use
//! the clock measured by a chain of dependent multiplies (three cycles each).
//! `examples/crc_paths.rs` does the same for every CRC-32C path the CPU runs.

// Measurement kernels, not shipped: each loop states once why its loads stay in bounds.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::arch::x86_64::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

use bkcodec_core::digest;

const WORKING_SET: usize = 256 * 1024;
/// Short passes, many of them: on a machine shared with other work, the best of
/// them is one that ran without being preempted.
const MIN_PASS: Duration = Duration::from_millis(2);
const PASSES: usize = 60;

/// The reflected Castagnoli polynomial (x^32 implied).
const POLY: u32 = 0x82F6_3B78;

/// `x^n mod P`, reflected, one shift at a time (computed at compile time).
const fn x_pow_mod_p(n: u64) -> u32 {
    let mut r = 0x8000_0000u32;
    let mut i = 0;
    while i < n {
        r = (r >> 1) ^ if r & 1 != 0 { POLY } else { 0 };
        i += 1;
    }
    r
}

/// The multipliers that move a 128-bit lane `bytes` further along the message
/// (each x^33 short of its target: the operand's low 32 bits and the product's
/// extra x), as `digest/crc32c_x86.rs` derives them.
const fn lane_shift(bytes: usize) -> [i64; 2] {
    let bits = 8 * bytes as u64;
    [x_pow_mod_p(bits + 64 - 33) as i64, x_pow_mod_p(bits - 33) as i64]
}

/// The multipliers of one fold step of `R` registers of `width` bytes (`[R - 1]`),
/// and those moving register `j` onto the last at the end (`[j]`).
const fn shifts<const R: usize>(width: usize) -> [[i64; 2]; R] {
    let mut k = [[0; 2]; R];
    let mut j = 0;
    while j + 1 < R {
        k[j] = lane_shift((R - 1 - j) * width);
        j += 1;
    }
    k[R - 1] = lane_shift(R * width);
    k
}

/// A folding loop: registers of `W` bytes, `R` of them, and what it returns (the
/// message folded into one register's bytes).
trait Fold {
    const WIDTH: usize;
    const NAME: &'static str;
    /// # Safety
    /// The CPU has the instructions the implementation enables; `data.len()` is a
    /// non-zero multiple of `R * WIDTH`.
    unsafe fn run<const R: usize>(data: &[u8]) -> [u8; 64];
}

struct Xmm;
struct Ymm;
struct Zmm;

#[target_feature(enable = "pclmulqdq,sse4.1")]
fn fold_xmm(acc: __m128i, k: __m128i, data: __m128i) -> __m128i {
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)), data)
}

#[target_feature(enable = "avx2,vpclmulqdq")]
fn fold_ymm(acc: __m256i, k: __m256i, data: __m256i) -> __m256i {
    _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(acc, k, 0x00), _mm256_clmulepi64_epi128(acc, k, 0x11)), data)
}

#[target_feature(enable = "avx512f,vpclmulqdq")]
fn fold_zmm(acc: __m512i, k: __m512i, data: __m512i) -> __m512i {
    let high_half = _mm512_clmulepi64_epi128(acc, k, 0x00);
    let low_half = _mm512_clmulepi64_epi128(acc, k, 0x11);
    _mm512_ternarylogic_epi64(high_half, low_half, data, 0x96)
}

impl Fold for Xmm {
    const WIDTH: usize = 16;
    const NAME: &'static str = "PCLMULQDQ 128-bit";
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    unsafe fn run<const R: usize>(data: &[u8]) -> [u8; 64] {
        let shifts = const { shifts::<R>(16) };
        let [lo, hi] = shifts[R - 1];
        let k = _mm_set_epi64x(hi, lo);
        let p = data.as_ptr();
        // SAFETY (every load): within `data`, whose length the caller keeps a
        // multiple of R * 16.
        let mut acc: [__m128i; R] = std::array::from_fn(|j| unsafe { _mm_loadu_si128(p.add(16 * j).cast()) });
        let mut at = R * 16;
        while at < data.len() {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = fold_xmm(*a, k, unsafe { _mm_loadu_si128(p.add(at + 16 * j).cast()) });
            }
            at += R * 16;
        }
        let mut v = acc[R - 1];
        for (j, a) in acc[..R - 1].iter().enumerate() {
            let [lo, hi] = shifts[j];
            v = fold_xmm(*a, _mm_set_epi64x(hi, lo), v);
        }
        let mut out = [0u8; 64];
        // SAFETY: 16 bytes into a 64-byte array.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) };
        out
    }
}

impl Fold for Ymm {
    const WIDTH: usize = 32;
    const NAME: &'static str = "VPCLMULQDQ 256-bit";
    #[target_feature(enable = "avx2,vpclmulqdq")]
    unsafe fn run<const R: usize>(data: &[u8]) -> [u8; 64] {
        let shifts = const { shifts::<R>(32) };
        let [lo, hi] = shifts[R - 1];
        let k = _mm256_set_epi64x(hi, lo, hi, lo);
        let p = data.as_ptr();
        // SAFETY (every load): as for `Xmm`, in steps of R * 32.
        let mut acc: [__m256i; R] = std::array::from_fn(|j| unsafe { _mm256_loadu_si256(p.add(32 * j).cast()) });
        let mut at = R * 32;
        while at < data.len() {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = fold_ymm(*a, k, unsafe { _mm256_loadu_si256(p.add(at + 32 * j).cast()) });
            }
            at += R * 32;
        }
        let mut v = acc[R - 1];
        for (j, a) in acc[..R - 1].iter().enumerate() {
            let [lo, hi] = shifts[j];
            v = fold_ymm(*a, _mm256_set_epi64x(hi, lo, hi, lo), v);
        }
        let mut out = [0u8; 64];
        // SAFETY: 32 bytes into a 64-byte array.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) };
        out
    }
}

impl Fold for Zmm {
    const WIDTH: usize = 64;
    const NAME: &'static str = "VPCLMULQDQ 512-bit";
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    unsafe fn run<const R: usize>(data: &[u8]) -> [u8; 64] {
        let broadcast = |[lo, hi]: [i64; 2]| _mm512_broadcast_i32x4(_mm_set_epi64x(hi, lo));
        let shifts = const { shifts::<R>(64) };
        let k = broadcast(shifts[R - 1]);
        let p = data.as_ptr();
        // SAFETY (every load): as for `Xmm`, in steps of R * 64.
        let mut acc: [__m512i; R] = std::array::from_fn(|j| unsafe { _mm512_loadu_si512(p.add(64 * j).cast()) });
        let mut at = R * 64;
        while at < data.len() {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = fold_zmm(*a, k, unsafe { _mm512_loadu_si512(p.add(at + 64 * j).cast()) });
            }
            at += R * 64;
        }
        let mut v = acc[R - 1];
        for (j, a) in acc[..R - 1].iter().enumerate() {
            v = fold_zmm(*a, broadcast(shifts[j]), v);
        }
        let mut out = [0u8; 64];
        // SAFETY: 64 bytes into a 64-byte array.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
        out
    }
}

/// The CRC-32C register (no pre- or post-inversion) of `data` from 0, with the
/// `crc32` instruction: what a folded register must give.
#[target_feature(enable = "sse4.2")]
fn raw_crc(data: &[u8]) -> u32 {
    let mut c = 0u64;
    for w in data.chunks_exact(8) {
        c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().unwrap()));
    }
    c as u32
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

/// The clock, from a chain of dependent 64-bit multiplies (latency three on
/// every x86-64 core since Core 2 and Zen). A chain of adds is no clock on
/// Golden Cove cores (Sapphire Rapids), which fold small immediate adds away at
/// rename: it read 21 GHz there.
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

fn size_name(n: usize) -> String {
    if n >= 1024 { format!("{} KiB", n / 1024) } else { format!("{n} B") }
}

fn main() {
    let has = |f: &str| std::arch::is_x86_feature_detected!("avx512f") && f == "avx512f"
        || std::arch::is_x86_feature_detected!("vpclmulqdq") && f == "vpclmulqdq"
        || std::arch::is_x86_feature_detected!("avx2") && f == "avx2";
    assert!(std::arch::is_x86_feature_detected!("sse4.2") && std::arch::is_x86_feature_detected!("pclmulqdq"));
    let (avx512, vpclmul) = (has("avx512f"), has("vpclmulqdq"));
    let ghz = clock_ghz();
    println!("clock from dependent multiplies: {ghz:.2} GHz; VPCLMULQDQ {vpclmul}, AVX-512 {avx512}");

    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let data: Vec<u8> = (0..WORKING_SET)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();

    for size in [16 * 1024, 1024] {
        let bufs: Vec<&[u8]> = data.chunks_exact(size).collect();
        println!("\n{} messages: GB/s, bytes/cycle", size_name(size));
        let line = |name: &str, gbps: f64| println!("  {name:<38} {gbps:>7.1} GB/s {:>6.1} B/cycle", gbps / ghz);
        let mut clmul_best = ("", 0.0f64);
        macro_rules! fold {
            ($width:ty, $regs:literal, $ok:expr) => {
                if $ok && size % ($regs * <$width>::WIDTH) == 0 {
                    // The folded register's CRC is the message's.
                    // SAFETY: the CPU has the loop's instructions (checked by `$ok`),
                    // and the message is a multiple of its step.
                    let folded = unsafe { <$width>::run::<$regs>(bufs[0]) };
                    // SAFETY: SSE4.2 was checked at the start.
                    let (got, want) = unsafe { (raw_crc(&folded[..<$width>::WIDTH]), raw_crc(bufs[0])) };
                    assert_eq!(got, want, "{} x{}", <$width>::NAME, $regs);
                    // SAFETY: as above.
                    let gbps = measure(&bufs, |b| u64::from(unsafe { <$width>::run::<$regs>(b) }[0]));
                    let name = concat!(stringify!($regs), " registers");
                    line(&format!("{} {name}", <$width>::NAME), gbps);
                    if gbps > clmul_best.1 {
                        clmul_best = (<$width>::NAME, gbps);
                    }
                }
            };
        }
        fold!(Xmm, 4, true);
        fold!(Xmm, 8, true);
        fold!(Ymm, 4, vpclmul);
        fold!(Ymm, 8, vpclmul);
        fold!(Zmm, 4, vpclmul && avx512);
        fold!(Zmm, 8, vpclmul && avx512);
        let mut crc32_best = 0.0f64;
        for (name, f) in [
            ("crc32 instruction, 1 stream", crc32_streams::<1> as unsafe fn(&[u8]) -> u64),
            ("crc32 instruction, 3 streams", crc32_streams::<3>),
            ("crc32 instruction, 6 streams", crc32_streams::<6>),
            ("crc32 instruction, 8 streams", crc32_streams::<8>),
        ] {
            // SAFETY: SSE4.2 was checked at the start.
            let gbps = measure(&bufs, |b| unsafe { f(b) });
            line(name, gbps);
            crc32_best = crc32_best.max(gbps);
        }
        let both = clmul_best.1 + crc32_best;
        line("bound: clmul + crc32 (both resources)", both);

        println!("  implementations:");
        let ours = measure(&bufs, |b| u64::from(digest::crc32c(b)));
        #[allow(clippy::type_complexity)]
        let candidates: [(&str, fn(&[u8]) -> u32); 3] = [
            ("crc32c 0.6", |d| crc32c::crc32c(d)),
            ("crc-fast", |d| crc_fast::crc32_iscsi(d)),
            ("crc (table)", |d| crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI).checksum(d)),
        ];
        for (name, f) in candidates {
            assert_eq!(f(bufs[0]), digest::crc32c(bufs[0]), "{name}");
            let gbps = measure(&bufs, |b| u64::from(f(b)));
            line(&format!("{name} ({:.2}x ours)", gbps / ours), gbps);
        }
        line("digest::crc32c (ours)", ours);
        println!(
            "  ours: {:.2}x the best folding loop ({}), {:.2}x the best crc32 loop, {:.2}x both together",
            ours / clmul_best.1,
            clmul_best.0,
            ours / crc32_best,
            ours / both
        );
    }
}
