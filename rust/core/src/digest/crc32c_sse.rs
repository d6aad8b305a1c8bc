//! CRC-32C on x86-64 without VPCLMULQDQ: 128-bit PCLMULQDQ folding run side by
//! side with `crc32` instruction streams (the `pclmul` path), and `crc32`
//! streams alone combined through tables (the `sse42` path, for CPUs without
//! carry-less multiplies).
//!
//! The two resources are separate execution ports on the cores measured (Intel
//! from Skylake: `crc32` on one port, once a cycle, latency three; PCLMULQDQ on
//! another, once a cycle), so each gives about 8 bytes a cycle alone and the
//! sum is the bound (`examples/crc_paths.rs` states both on the CPU at hand).
//! A block gives its first part to `S` streams of `W` words a step and its
//! second to `V` fold registers of 16 bytes; at its end one multiply per stream
//! moves the stream CRCs to the block's end, where they join the last fold
//! register. The split is a type parameter, so the share of each side can
//! follow the CPU's rates.
//!
//! Notation and multipliers as in `crc32c_x86.rs`.

use std::arch::x86_64::*;

use super::crc32c_x86::{crc32_words, lane_crc, lane_shift, mul_mod_p, register_shift, x_pow_mod_p};

// --- PCLMULQDQ folding with `crc32` streams -------------------------------------

/// A 128-bit multiplier pair `[low, high]`.
#[target_feature(enable = "sse2")]
#[inline]
fn constant(k: [u64; 2]) -> __m128i {
    _mm_set_epi64x(k[1] as i64, k[0] as i64)
}

/// `acc` moved on by the multipliers in `k`, plus `data`.
#[target_feature(enable = "pclmulqdq")]
#[inline]
fn fold(acc: __m128i, k: __m128i, data: __m128i) -> __m128i {
    let high_half = _mm_clmulepi64_si128(acc, k, 0x00);
    let low_half = _mm_clmulepi64_si128(acc, k, 0x11);
    _mm_xor_si128(_mm_xor_si128(high_half, low_half), data)
}

/// # Safety
/// `p` must be readable for 16 bytes.
#[inline(always)]
unsafe fn load(p: *const u8) -> __m128i {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above).
    unsafe { _mm_loadu_si128(p.cast()) }
}

/// # Safety
/// `p` must be readable for 8 bytes.
#[inline(always)]
unsafe fn word(p: *const u8) -> u64 {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above).
    unsafe { p.cast::<u64>().read_unaligned() }
}

/// A block of `ITERS` fold steps for `V` registers, with `S` streams of `W`
/// words a step before them: `S·8·W·ITERS` bytes of streams, then `16·V·ITERS`
/// bytes folded.
struct Block<const V: usize, const S: usize, const W: usize, const ITERS: usize>;

impl<const V: usize, const S: usize, const W: usize, const ITERS: usize> Block<V, S, W, ITERS> {
    const STREAM: usize = 8 * W * ITERS;
    const STREAMS: usize = S * Self::STREAM;
    const STEP: usize = 16 * V;
    const LEN: usize = Self::STREAMS + Self::STEP * ITERS;
    /// Moves registers ending at the block's start over its streams and first step.
    const SKIP: [u64; 2] = lane_shift(Self::STREAMS + Self::STEP);
    /// Moves stream `i`'s CRC to the block's end (the end of the last register).
    const STREAM_SHIFTS: [u64; S] = {
        let mut k = [0; S];
        let mut i = 0;
        while i < S {
            k[i] = register_shift(Self::LEN - Self::STREAM * (i + 1));
            i += 1;
        }
        k
    };

    /// Folds the block at `p` into `regs` and returns what its streams add to the
    /// last register. With `first`, `regs` hold nothing yet and `crc` is the
    /// register before the block; otherwise `regs` end at `p` and, with the
    /// streams of blocks before, hold the CRC so far.
    ///
    /// # Safety
    /// `p` must be readable for `Self::LEN` bytes, and the CPU must have SSE4.2
    /// and PCLMULQDQ.
    #[inline(always)]
    unsafe fn fold(regs: &mut [__m128i; V], crc: u32, first: bool, p: *const u8) -> __m128i {
        // SAFETY: the caller upholds this function's contract (its `# Safety`
        // above); every load is inside the block.
        unsafe {
            // Multipliers are constants: `lane_shift` at run time costs thousands of cycles.
            let k_step = constant(const { lane_shift(16 * V) });
            let region = p.add(Self::STREAMS);
            let mut c = [0u64; S];
            if first {
                c[0] = u64::from(crc);
                for (j, r) in regs.iter_mut().enumerate() {
                    *r = load(region.add(16 * j));
                }
            } else {
                let k = constant(Self::SKIP);
                for (j, r) in regs.iter_mut().enumerate() {
                    *r = fold(*r, k, load(region.add(16 * j)));
                }
            }
            for t in 0..ITERS {
                let at = region.add(Self::STEP * t);
                if t > 0 {
                    for (j, r) in regs.iter_mut().enumerate() {
                        *r = fold(*r, k_step, load(at.add(16 * j)));
                    }
                }
                for w in 0..W {
                    for (s, c) in c.iter_mut().enumerate() {
                        *c = _mm_crc32_u64(*c, word(p.add(Self::STREAM * s + 8 * (W * t + w))));
                    }
                }
            }
            let mut moved = _mm_setzero_si128();
            for (c, k) in c.iter().zip(Self::STREAM_SHIFTS) {
                let product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(*c as i64), _mm_cvtsi64_si128(k as i64), 0x00);
                moved = _mm_xor_si128(moved, product);
            }
            moved
        }
    }
}

/// The split of a `pclmul` kernel: `V` fold registers, `S` streams of `W` words a step.
pub(crate) struct Split<const V: usize, const S: usize, const W: usize>;

impl<const V: usize, const S: usize, const W: usize> Split<V, S, W> {
    /// Multipliers moving register `j` onto the last one at the end.
    const REDUCE: [[u64; 2]; V] = {
        let mut k = [[0; 2]; V];
        let mut j = 0;
        while j + 1 < V {
            k[j] = lane_shift(16 * (V - 1 - j));
            j += 1;
        }
        k
    };

    /// Messages shorter than this run one `crc32` stream: the folding's set-up
    /// and reduction cost more than they save.
    pub(crate) const MIN: usize = 2 * 16 * V;

    /// Runs the CRC-32C register `crc` over `data`.
    ///
    /// # Safety
    /// The CPU must have SSE4.2 and PCLMULQDQ.
    #[inline(always)]
    pub(crate) unsafe fn run(crc: u32, data: &[u8]) -> u32 {
        // SAFETY: the caller upholds this function's contract (its `# Safety`
        // above); every load below is within `rest`, whose length is checked first.
        unsafe {
            if data.len() < Self::MIN {
                return crc32_words(crc, data);
            }
            let mut rest = data;
            let mut regs = [_mm_setzero_si128(); V];
            let mut started = false;
            // The last block's stream CRCs, added to the last register when it
            // moves on (or at the end).
            let mut streams = _mm_setzero_si128();
            macro_rules! blocks {
                ($iters:literal) => {
                    while rest.len() >= Block::<V, S, W, $iters>::LEN {
                        regs[V - 1] = _mm_xor_si128(regs[V - 1], streams);
                        streams = Block::<V, S, W, $iters>::fold(&mut regs, crc, !started, rest.as_ptr());
                        started = true;
                        rest = &rest[Block::<V, S, W, $iters>::LEN..];
                    }
                };
            }
            if S > 0 {
                blocks!(32);
                blocks!(8);
            }
            let crc_lane = _mm_cvtsi32_si128(crc as i32);
            let step = 16 * V;
            if !started {
                // `rest` is the whole message, at least `MIN` bytes.
                let p = rest.as_ptr();
                for (j, r) in regs.iter_mut().enumerate() {
                    *r = load(p.add(16 * j));
                }
                regs[0] = _mm_xor_si128(regs[0], crc_lane);
                rest = &rest[step..];
            }
            let k_step = constant(const { lane_shift(16 * V) });
            while rest.len() >= step {
                regs[V - 1] = _mm_xor_si128(regs[V - 1], streams);
                streams = _mm_setzero_si128();
                let p = rest.as_ptr();
                for (j, r) in regs.iter_mut().enumerate() {
                    *r = fold(*r, k_step, load(p.add(16 * j)));
                }
                rest = &rest[step..];
            }
            let mut acc = _mm_xor_si128(regs[V - 1], streams);
            for (r, k) in regs[..V - 1].iter().zip(Self::REDUCE) {
                acc = fold(*r, constant(k), acc);
            }
            let k16 = constant(const { lane_shift(16) });
            while rest.len() >= 16 {
                acc = fold(acc, k16, load(rest.as_ptr()));
                rest = &rest[16..];
            }
            crc32_words(lane_crc(0, acc), rest)
        }
    }
}

/// Intel (Skylake on): `crc32` and PCLMULQDQ each once a cycle, on different
/// ports: an even split, 64 bytes a step to each side, four streams (latency
/// three) and four fold registers. Measured against other splits (V registers,
/// S streams of W words) on an Intel Xeon with AMX, in GB/s at 16 KiB / 1 KiB:
/// 4,4,2 53 / 49; 8,4,4 56 / 30 (its smallest block is 2 KiB); 8,5,3 54 / 30;
/// 6,4,3 52 / 31; 8,6,2 51 / 30; 4,3,2 48 / 43; 6,3,2 44 / 30; 4,4,1 41 / 36;
/// 4,3,1 38 / 35; folding alone with 8 registers 32 / 30.
pub(crate) type Balanced = Split<4, 4, 2>;

/// Cores whose `crc32` issues once every three cycles (AMD Zen 1 and 2): three
/// streams of one word a step beside 64 bytes folded, about the share of the
/// block the instruction can take there.
pub(crate) type FoldHeavy = Split<4, 3, 1>;

/// The split this CPU takes: see [`Balanced`] and [`FoldHeavy`].
pub(crate) fn fold_heavy_for_this_cpu() -> bool {
    // CPUID leaves 0 and 1 exist on every x86-64 CPU.
    let (vendor, signature) = (__cpuid(0), __cpuid(1).eax);
    let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6E65, 0x444D_4163); // "AuthenticAMD"
    let base_family = (signature >> 8) & 0xF;
    let family = if base_family == 0xF { base_family + ((signature >> 20) & 0xFF) } else { base_family };
    // Zen and Zen 2 are family 17h; Hygon's Dhyana (also 18h) is a Zen core.
    amd && family < 0x19
}

/// The `pclmul` path: [`Balanced`] or [`FoldHeavy`] as this CPU suits.
#[target_feature(enable = "sse4.2,pclmulqdq")]
pub(crate) fn crc32c_register_pclmul(crc: u32, data: &[u8]) -> u32 {
    use std::sync::atomic::{AtomicU8, Ordering};
    static HEAVY: AtomicU8 = AtomicU8::new(0);
    let heavy = match HEAVY.load(Ordering::Relaxed) {
        0 => {
            let h = fold_heavy_for_this_cpu();
            HEAVY.store(1 + u8::from(h), Ordering::Relaxed);
            h
        }
        v => v == 2,
    };
    // SAFETY: this function's target features.
    unsafe {
        if heavy {
            FoldHeavy::run(crc, data)
        } else {
            Balanced::run(crc, data)
        }
    }
}

/// A `pclmul` kernel of a given split, for tests and the microbenchmark.
///
/// # Safety
/// The CPU must have SSE4.2 and PCLMULQDQ.
#[target_feature(enable = "sse4.2,pclmulqdq")]
pub(crate) unsafe fn crc32c_register_split<const V: usize, const S: usize, const W: usize>(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: this function's target features.
    unsafe { Split::<V, S, W>::run(crc, data) }
}

// --- `crc32` streams alone ------------------------------------------------------

/// Streams of the `sse42` path: the instruction's latency (three cycles) times
/// its throughput (once a cycle on Intel cores; CPUs with SSE4.2 but no
/// PCLMULQDQ are Nehalem-era Intel and small Atoms).
const SSE_STREAMS: usize = 3;

/// A table moving a CRC register over `bytes` zero bytes, a byte of the
/// register at a time (`x^(8·bytes) mod P`, multiplied in software once per
/// entry at compile time).
const fn shift_table(bytes: usize) -> [[u32; 256]; 4] {
    let k = x_pow_mod_p(8 * bytes as u64);
    let mut t = [[0u32; 256]; 4];
    let mut i = 0;
    while i < 4 {
        let mut b = 0;
        while b < 256 {
            t[i][b] = mul_mod_p((b as u32) << (8 * i), k);
            b += 1;
        }
        i += 1;
    }
    t
}

#[inline(always)]
fn shift(t: &[[u32; 256]; 4], c: u32) -> u32 {
    t[0][(c & 0xFF) as usize] ^ t[1][((c >> 8) & 0xFF) as usize] ^ t[2][((c >> 16) & 0xFF) as usize] ^ t[3][(c >> 24) as usize]
}

const LONG_STREAM: usize = 1024;
const SHORT_STREAM: usize = 128;
static SHIFT_LONG: [[u32; 256]; 4] = shift_table(LONG_STREAM);
static SHIFT_SHORT: [[u32; 256]; 4] = shift_table(SHORT_STREAM);

/// Blocks of [`SSE_STREAMS`] streams of `B` bytes from register `c`, while
/// `rest` holds one.
///
/// # Safety
/// The CPU must have SSE4.2.
#[inline(always)]
unsafe fn stream_blocks<const B: usize>(mut c: u32, rest: &mut &[u8], table: &[[u32; 256]; 4]) -> u32 {
    while rest.len() >= SSE_STREAMS * B {
        let (block, after) = rest.split_at(SSE_STREAMS * B);
        let mut s = [u64::from(c), 0, 0];
        for w in (0..B).step_by(8) {
            for (i, s) in s.iter_mut().enumerate() {
                let at = i * B + w;
                // SAFETY: the caller upholds this function's contract (SSE4.2).
                *s = unsafe { _mm_crc32_u64(*s, u64::from_le_bytes(block[at..at + 8].try_into().unwrap())) };
            }
        }
        c = shift(table, shift(table, s[0] as u32) ^ s[1] as u32) ^ s[2] as u32;
        *rest = after;
    }
    c
}

/// The `sse42` path: three `crc32` streams over blocks, joined through tables.
#[target_feature(enable = "sse4.2")]
pub(crate) fn crc32c_register_sse42(crc: u32, data: &[u8]) -> u32 {
    let mut rest = data;
    // SAFETY: this function's target feature.
    let c = unsafe {
        let c = stream_blocks::<LONG_STREAM>(crc, &mut rest, &SHIFT_LONG);
        stream_blocks::<SHORT_STREAM>(c, &mut rest, &SHIFT_SHORT)
    };
    crc32_words(c, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_tables_move_a_register_over_zeros() {
        if !is_x86_feature_detected!("sse4.2") {
            eprintln!("no SSE4.2: the shift tables go unchecked against the instruction");
            return;
        }
        let mut rng = crate::test_rng::Rng(3);
        for (bytes, table) in [(LONG_STREAM, &SHIFT_LONG), (SHORT_STREAM, &SHIFT_SHORT)] {
            for _ in 0..50 {
                let c = rng.next() as u32;
                // SAFETY: SSE4.2 checked above.
                let zeros = unsafe { crc32_words(c, &vec![0; bytes]) };
                assert_eq!(shift(table, c), zeros, "{bytes} bytes from {c:#x}");
            }
        }
    }

    #[test]
    fn block_multipliers_match_bitwise_powers() {
        fn x_pow_bitwise(n: u64) -> u32 {
            let mut r = 0x8000_0000u32;
            for _ in 0..n {
                r = (r >> 1) ^ if r & 1 != 0 { super::super::crc32c_x86::POLY } else { 0 };
            }
            r
        }
        fn check<const V: usize, const S: usize, const W: usize, const I: usize>() {
            type B<const V: usize, const S: usize, const W: usize, const I: usize> = Block<V, S, W, I>;
            let len = B::<V, S, W, I>::LEN;
            for i in 0..S {
                let bytes = len - B::<V, S, W, I>::STREAM * (i + 1);
                assert_eq!(B::<V, S, W, I>::STREAM_SHIFTS[i], x_pow_bitwise(8 * bytes as u64 - 97) as u64);
            }
            let skip = B::<V, S, W, I>::STREAMS + 16 * V;
            assert_eq!(B::<V, S, W, I>::SKIP, [x_pow_bitwise(8 * skip as u64 + 31) as u64, x_pow_bitwise(8 * skip as u64 - 33) as u64]);
        }
        check::<4, 4, 2, 32>();
        check::<4, 4, 2, 8>();
        check::<4, 3, 1, 32>();
        check::<4, 3, 1, 8>();
    }
}
