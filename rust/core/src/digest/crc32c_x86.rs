//! CRC-32C on x86-64: the SSE4.2 `crc32` instruction for short messages and for
//! many messages interleaved, and for long ones AVX-512 VPCLMULQDQ folding run side
//! by side with eight `crc32` instruction streams.
//!
//! Why both at once: a carry-less multiply issues once every two cycles on the
//! machine this was tuned on (Zen 5, at any vector width), and folding 64 bytes
//! takes two, so folding alone tops out near 16 bytes a cycle. The `crc32`
//! instruction runs on the integer side, twice a cycle with a latency of three:
//! another 16 bytes a cycle given six or more independent streams. A block gives
//! its first half to eight streams and its second half to four 512-bit fold
//! registers; at the end of the block two more multiplies move the eight stream
//! CRCs to the block's end, where they are added into the fold registers.
//!
//! Notation: CRC-32C is reflected, so bit 0 of a byte is its highest-degree
//! coefficient, and a 32-bit value `v` stands for the polynomial with the
//! coefficient of x^k in bit 31−k. A 128-bit lane loaded little-endian holds 16
//! message bytes, its low 64 bits the higher-degree half. A carry-less product of
//! two 64-bit operands read this way comes out multiplied by an extra x.

use std::arch::x86_64::*;

/// The reflected Castagnoli polynomial (x^32 implied).
pub(super) const POLY: u32 = 0x82F6_3B78;

/// `a·b mod P` for reflected polynomials.
pub(super) const fn mul_mod_p(a: u32, b: u32) -> u32 {
    // Horner over b's coefficients from x^31 (bit 0) down to x^0 (bit 31).
    let mut r = 0u32;
    let mut k = 0;
    while k < 32 {
        r = (r >> 1) ^ if r & 1 != 0 { POLY } else { 0 };
        if (b >> k) & 1 != 0 {
            r ^= a;
        }
        k += 1;
    }
    r
}

/// `x^n mod P`, reflected, by square and multiply.
pub(super) const fn x_pow_mod_p(mut n: u64) -> u32 {
    let mut result = 0x8000_0000; // x^0
    let mut square = 0x4000_0000; // x^1
    while n != 0 {
        if n & 1 != 0 {
            result = mul_mod_p(result, square);
        }
        square = mul_mod_p(square, square);
        n >>= 1;
    }
    result
}

/// The multipliers that move a 128-bit lane `bytes` further along the message:
/// its low (higher-degree) half must gain x^(8·bytes+64), its high half x^(8·bytes).
/// A multiplier sits in the low 32 bits of its operand, which makes it worth x^32
/// more, and the product adds one x: so each is x^33 short of its target.
pub(super) const fn lane_shift(bytes: usize) -> [u64; 2] {
    let bits = 8 * bytes as u64;
    [x_pow_mod_p(bits + 64 - 33) as u64, x_pow_mod_p(bits - 33) as u64]
}

/// The multiplier that moves a CRC register so its message ends `bytes` further
/// on. The register is the message times x^32; in the low 32 bits of a lane it is
/// worth x^32 more, the multiplier too, and the product adds one x: x^(8·bytes−97).
pub(super) const fn register_shift(bytes: usize) -> u64 {
    x_pow_mod_p(8 * bytes as u64 - 97) as u64
}

/// Whether the kernel's even split between folding and `crc32` streams suits this
/// CPU: AMD from Zen 5 (family 1Ah), where it was measured. Elsewhere the two
/// sides run at other rates (Intel cores issue `crc32` once a cycle, so the
/// streams would hold the folding back), and `crc-fast` keeps long messages.
pub(super) fn balanced_for_this_cpu() -> bool {
    // CPUID leaves 0 and 1 exist on every x86-64 CPU.
    let (vendor, signature) = (__cpuid(0), __cpuid(1).eax);
    let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6E65, 0x444D_4163); // "AuthenticAMD"
    let base_family = (signature >> 8) & 0xF;
    let family = if base_family == 0xF { base_family + ((signature >> 20) & 0xFF) } else { base_family };
    amd && family >= 0x1A
}

/// Whether this CPU runs [`crc32c_register_avx512`] (correctly, if not
/// necessarily fast: see [`balanced_for_this_cpu`]).
pub(crate) fn avx512_available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("vpclmulqdq")
        && is_x86_feature_detected!("sse4.2")
}

// --- the `crc32` instruction -----------------------------------------------------

/// Runs the `crc32` instruction over `data` from register state `crc`.
#[target_feature(enable = "sse4.2")]
#[inline]
pub(crate) fn crc32_words(crc: u32, data: &[u8]) -> u32 {
    let words = data.chunks_exact(8);
    let mut tail = words.remainder();
    let mut c = u64::from(crc);
    for w in words {
        c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().unwrap()));
    }
    let mut c = c as u32;
    if let Some((w, rest)) = tail.split_first_chunk::<4>() {
        c = _mm_crc32_u32(c, u32::from_le_bytes(*w));
        tail = rest;
    }
    if let Some((w, rest)) = tail.split_first_chunk::<2>() {
        c = _mm_crc32_u16(c, u16::from_le_bytes(*w));
        tail = rest;
    }
    if let Some(&b) = tail.first() {
        c = _mm_crc32_u8(c, b);
    }
    c
}

/// Independent messages fed to the `crc32` instruction side by side: its latency
/// (three cycles) times its throughput (two a cycle).
const STREAMS: usize = 6;

/// Groups of messages up to this long are interleaved; from here on a message
/// alone on the folding path is as fast.
const INTERLEAVE_MAX: usize = 512;

/// Six CRC registers advanced over their messages as one instruction stream for
/// the words all of them have, then each message's rest. Forced inline: as a
/// call, passing six slices and registers through memory cost more than the
/// checksums of short messages.
///
/// # Safety
/// The CPU must support SSE4.2.
#[inline(always)]
unsafe fn interleaved(c: &mut [u32; STREAMS], data: &[&[u8]; STREAMS]) {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        let mut words = usize::MAX;
        for d in data {
            words = words.min(d.len() / 8);
        }
        let [d0, d1, d2, d3, d4, d5] = *data;
        let [mut c0, mut c1, mut c2, mut c3, mut c4, mut c5] =
            [u64::from(c[0]), u64::from(c[1]), u64::from(c[2]), u64::from(c[3]), u64::from(c[4]), u64::from(c[5])];
        for w in 0..words {
            // SAFETY: 8·w + 8 <= 8·words <= the length of every message.
            {
                let at = 8 * w;
                c0 = _mm_crc32_u64(c0, word(d0.as_ptr().add(at)));
                c1 = _mm_crc32_u64(c1, word(d1.as_ptr().add(at)));
                c2 = _mm_crc32_u64(c2, word(d2.as_ptr().add(at)));
                c3 = _mm_crc32_u64(c3, word(d3.as_ptr().add(at)));
                c4 = _mm_crc32_u64(c4, word(d4.as_ptr().add(at)));
                c5 = _mm_crc32_u64(c5, word(d5.as_ptr().add(at)));
            }
        }
        *c = [c0 as u32, c1 as u32, c2 as u32, c3 as u32, c4 as u32, c5 as u32];
        let done = 8 * words;
        let len = d0.len();
        if data.iter().all(|d| d.len() == len) {
            // Equal lengths (a V2 entry header has 41 bytes): the last bytes side by side too.
            let mut at = done;
            if len - at >= 4 {
                for (c, d) in c.iter_mut().zip(data) {
                    *c = _mm_crc32_u32(*c, u32::from_le_bytes(d[at..at + 4].try_into().unwrap()));
                }
                at += 4;
            }
            if len - at >= 2 {
                for (c, d) in c.iter_mut().zip(data) {
                    *c = _mm_crc32_u16(*c, u16::from_le_bytes(d[at..at + 2].try_into().unwrap()));
                }
                at += 2;
            }
            if len - at == 1 {
                for (c, d) in c.iter_mut().zip(data) {
                    *c = _mm_crc32_u8(*c, d[at]);
                }
            }
        } else {
            for (c, d) in c.iter_mut().zip(data) {
                *c = crc32_words(*c, &d[done..]);
            }
        }
    }
}

/// How far ahead of the message being checksummed the messages after it are
/// asked for: a batch larger than the caches (a column of mid-size entries) is
/// otherwise read at the latency of each miss, its messages too short and their
/// `crc32` streams too scattered for the hardware prefetchers.
const MESSAGES_AHEAD: usize = 8 << 10;
/// Bytes of one message prefetched at most (the kernel prefetches long ones itself).
const PREFETCH_MESSAGE_MAX: usize = 8 << 10;

/// Prefetches the messages after `current` (by index) up to [`MESSAGES_AHEAD`]
/// bytes beyond it; `next` is the first not prefetched yet.
#[inline(always)]
fn prefetch_ahead(messages: &[&[u8]], current: usize, next: &mut usize) {
    let mut ahead = 0;
    let mut i = current + 1;
    while i < messages.len() && ahead < MESSAGES_AHEAD {
        let m = messages[i];
        if i >= *next {
            let n = m.len().min(PREFETCH_MESSAGE_MAX);
            for line in (0..n).step_by(64) {
                // SAFETY: a prefetch is a hint for an address inside `m`; it never faults.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(m.as_ptr().add(line).cast()) };
            }
            *next = i + 1;
        }
        ahead += m.len();
        i += 1;
    }
}

/// Whether a message of `len` bytes waits for a partner to run beside it in
/// [`crc32c_register_avx512_two`] (only with AVX-512 on a CPU the kernel suits).
#[inline]
fn pairs_with(len: usize, pairs: bool) -> bool {
    pairs && (PAIR_MIN..=PAIR_MAX).contains(&len)
}

/// Messages not interleaved: mid-size ones two at a time, a message waiting in
/// `pending` (its index) for the next; the rest one at a time.
///
/// # Safety
/// With `pairs`, the CPU must have the features [`crc32c_register_avx512`] enables.
#[inline(always)]
unsafe fn append_each(values: &mut [u32], messages: &[&[u8]], first: usize, pairs: bool, pending: &mut Option<usize>, prefetched: &mut usize) {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        for i in first..values.len() {
            let m = messages[i];
            prefetch_ahead(messages, i, prefetched);
            if !pairs_with(m.len(), pairs) {
                values[i] = super::crc32c_append(values[i], m);
            } else if let Some(j) = pending.take() {
                let (a, b) = crc32c_register_avx512_two(!values[j], messages[j], !values[i], m);
                (values[j], values[i]) = (!a, !b);
            } else {
                *pending = Some(i);
            }
        }
    }
}

/// [`super::crc32c_append_many`] with SSE4.2: six short messages at a time, and
/// with AVX-512 two mid-size ones.
///
/// Two mid-size messages at once, measured (two 1 KiB messages at unaligned
/// addresses, best of several runs, against two kernel calls): the kernel twice
/// in one function 1.08x to 1.10x at 1 KiB, within noise at 512 bytes and 2 KiB;
/// with a 41-byte head, 1.10x at 4 KiB (hence pairs up to 8 KiB);
/// one message folded by four registers while the other ran on eight `crc32`
/// streams, each side 256 bytes a step, 0.78x to 0.85x (each message's chain is
/// long: a kilobyte on one resource, then moving the streams to vector
/// registers and back). The kernel at 1 KiB already runs at about 80% of its
/// 16 KiB rate, which bounds what any pairing can gain.
#[target_feature(enable = "sse4.2")]
pub(crate) fn append_many(values: &mut [u32], messages: &[&[u8]]) {
    let pairs = super::crc_path() == super::CrcPath::Avx512;
    let mut pending = None;
    let mut prefetched = 0;
    let groups = values.len() / STREAMS;
    for g in 0..groups {
        let at = STREAMS * g;
        let m: &[&[u8]; STREAMS] = messages[at..at + STREAMS].try_into().unwrap();
        let v: &mut [u32; STREAMS] = (&mut values[at..at + STREAMS]).try_into().unwrap();
        if m.iter().all(|m| m.len() <= INTERLEAVE_MAX) {
            let mut c = v.map(|v| !v);
            // SAFETY: this function's target feature.
            unsafe { interleaved(&mut c, m) };
            for (v, c) in v.iter_mut().zip(c) {
                *v = !c;
            }
        } else {
            // SAFETY: `pairs` only with the kernel's features.
            unsafe { append_each(&mut values[..at + STREAMS], messages, at, pairs, &mut pending, &mut prefetched) };
        }
    }
    // SAFETY: as above.
    unsafe { append_each(values, messages, groups * STREAMS, pairs, &mut pending, &mut prefetched) };
    if let Some(j) = pending {
        values[j] = super::crc32c_append(values[j], messages[j]);
    }
}

/// [`append_each`] for [`concat_many`]: the pair's messages are `heads[i] ‖ tails[i]`.
///
/// # Safety
/// With `pairs`, the CPU must have the features [`crc32c_register_avx512`] enables.
#[inline(always)]
unsafe fn concat_each(
    out: &mut [u32],
    heads: &[&[u8]],
    tails: &[&[u8]],
    first: usize,
    pairs: bool,
    pending: &mut Option<usize>,
    prefetched: &mut usize,
) {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        for i in first..out.len() {
            let (h, t) = (heads[i], tails[i]);
            prefetch_ahead(tails, i, prefetched);
            if !pairs_with(t.len(), pairs) {
                out[i] = super::crc32c_append(super::crc32c(h), t);
            } else if let Some(j) = pending.take() {
                let (a, b) = crc32c_register_avx512_two(crc32_words(!0, heads[j]), tails[j], crc32_words(!0, h), t);
                (out[j], out[i]) = (!a, !b);
            } else {
                *pending = Some(i);
            }
        }
    }
}

/// [`super::crc32c_concat_many`] with SSE4.2: six short messages at a time, and
/// with AVX-512 two mid-size ones.
#[target_feature(enable = "sse4.2")]
pub(crate) fn concat_many(out: &mut [u32], heads: &[&[u8]], tails: &[&[u8]]) {
    let pairs = super::crc_path() == super::CrcPath::Avx512;
    let mut pending = None;
    let mut prefetched = 0;
    let groups = out.len() / STREAMS;
    for g in 0..groups {
        let at = STREAMS * g;
        let h: &[&[u8]; STREAMS] = heads[at..at + STREAMS].try_into().unwrap();
        let t: &[&[u8]; STREAMS] = tails[at..at + STREAMS].try_into().unwrap();
        if t.iter().all(|t| t.len() <= INTERLEAVE_MAX) {
            let mut c = [!0; STREAMS];
            // SAFETY: this function's target feature.
            unsafe {
                interleaved(&mut c, h);
                interleaved(&mut c, t);
            }
            for (o, c) in out[at..at + STREAMS].iter_mut().zip(c) {
                *o = !c;
            }
        } else {
            // SAFETY: `pairs` only with the kernel's features.
            unsafe { concat_each(&mut out[..at + STREAMS], heads, tails, at, pairs, &mut pending, &mut prefetched) };
        }
    }
    // SAFETY: as above.
    unsafe { concat_each(out, heads, tails, groups * STREAMS, pairs, &mut pending, &mut prefetched) };
    if let Some(j) = pending {
        out[j] = super::crc32c_append(super::crc32c(heads[j]), tails[j]);
    }
}

// --- AVX-512 folding with `crc32` streams -------------------------------------------

/// Messages shorter than this run the `crc32` instruction alone: up to 21 of
/// them, with a call or two in flight, issue faster than the folding path's
/// set-up and reduction.
pub(crate) const FOLD_MIN: usize = 176;

/// Bytes per fold step of the four fold registers.
const STEP: usize = 256;

// The multipliers, computed at compile time.
const SHIFT_STEP: [u64; 2] = lane_shift(STEP);
const SHIFT_192: [u64; 2] = lane_shift(192);
const SHIFT_128: [u64; 2] = lane_shift(128);
const SHIFT_64: [u64; 2] = lane_shift(64);
const SHIFT_48: [u64; 2] = lane_shift(48);
const SHIFT_32: [u64; 2] = lane_shift(32);
const SHIFT_16: [u64; 2] = lane_shift(16);

/// For a tail of `t` bytes (8 <= t < 64): the multipliers moving the four lanes of
/// the last fold register to its end, lane `j` by 48 − 16·j + t bytes.
const END_SHIFTS: [[u64; 8]; 64] = {
    let mut table = [[0; 8]; 64];
    let mut t = 8;
    while t < 64 {
        let mut j = 0;
        while j < 4 {
            let k = lane_shift(48 - 16 * j + t);
            table[t][2 * j] = k[0];
            table[t][2 * j + 1] = k[1];
            j += 1;
        }
        t += 1;
    }
    table
};

/// A 512-bit vector of one 128-bit lane pattern `[low, high]` repeated.
#[target_feature(enable = "avx512f")]
#[inline]
fn broadcast(k: [u64; 2]) -> __m512i {
    _mm512_broadcast_i32x4(_mm_set_epi64x(k[1] as i64, k[0] as i64))
}

/// `[k[0], k[1], ..., k[7]]` as eight 64-bit elements.
#[target_feature(enable = "avx512f")]
#[inline]
fn vector(k: [u64; 8]) -> __m512i {
    let k = k.map(|x| x as i64);
    _mm512_set_epi64(k[7], k[6], k[5], k[4], k[3], k[2], k[1], k[0])
}

/// `acc` moved on by the multipliers in `k`, plus `data`.
#[target_feature(enable = "avx512f,vpclmulqdq")]
#[inline]
fn fold(acc: __m512i, k: __m512i, data: __m512i) -> __m512i {
    let high_half = _mm512_clmulepi64_epi128(acc, k, 0x00);
    let low_half = _mm512_clmulepi64_epi128(acc, k, 0x11);
    _mm512_ternarylogic_epi64(high_half, low_half, data, 0x96)
}

/// # Safety
/// `p` must be readable for 64 bytes.
#[inline(always)]
unsafe fn load(p: *const u8) -> __m512i {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        _mm512_loadu_si512(p.cast())
    }
}

/// # Safety
/// `p` must be readable for 8 bytes.
#[inline(always)]
unsafe fn word(p: *const u8) -> u64 {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        p.cast::<u64>().read_unaligned()
    }
}

/// A block of `ITERS` fold steps: eight `crc32` streams of 32·ITERS bytes each,
/// then 256·ITERS bytes for the fold registers.
struct Block<const ITERS: usize>;

impl<const ITERS: usize> Block<ITERS> {
    /// Words each stream takes per fold step, one per fold register: 8 streams ×
    /// 4 words match the 256 bytes of a fold step, each side doing 16 bytes a cycle.
    const WORDS: usize = 4;
    const STREAM: usize = 8 * Self::WORDS * ITERS;
    const STREAMS: usize = 8 * Self::STREAM;
    const LEN: usize = Self::STREAMS + STEP * ITERS;
    /// Moves registers ending at the block's start over its streams and first step.
    const SKIP: [u64; 2] = lane_shift(Self::STREAMS + STEP);
    /// Moves stream `i`'s CRC to the end of lane `i / 2` of the last fold register.
    const STREAM_SHIFTS: [u64; 8] = {
        let mut k = [0; 8];
        let mut i = 0;
        while i < 8 {
            let lane_end = Self::LEN - 64 + 16 * (i / 2 + 1);
            k[i] = register_shift(lane_end - Self::STREAM * (i + 1));
            i += 1;
        }
        k
    };

    /// Folds the block at `p` into `regs` and returns what its streams add to the
    /// last register. With `first`, `regs` hold nothing yet and `crc` is the
    /// register before the block; otherwise `regs` end at `p` and, with the
    /// streams of blocks before, hold the CRC so far. Called only from
    /// [`crc32c_register_avx512`], into which it is inlined (a function with
    /// target features cannot be forced inline).
    ///
    /// # Safety
    /// `p` must be readable for `Self::LEN` bytes, and the CPU must have the
    /// features [`crc32c_register_avx512`] enables.
    #[inline(always)]
    unsafe fn fold<const PREFETCH: usize>(regs: &mut [__m512i; 4], crc: u32, first: bool, p: *const u8) -> __m512i {
        // SAFETY: the caller upholds this function's contract (its `# Safety` above),
        // which is all the operations below need.
        unsafe {
            let k_step = broadcast(SHIFT_STEP);
            let region = p.add(Self::STREAMS);
            let mut c = [0u64; 8];
            if first {
                c[0] = u64::from(crc);
                *regs = [load(region), load(region.add(64)), load(region.add(128)), load(region.add(192))];
            } else {
                let k = broadcast(Self::SKIP);
                for (j, r) in regs.iter_mut().enumerate() {
                    *r = fold(*r, k, load(region.add(64 * j)));
                }
            }
            for t in 0..ITERS {
                let at = region.add(STEP * t);
                if PREFETCH > 0 {
                    // Hints only: an address past the end does no harm.
                    let ahead = p.wrapping_add(PREFETCH + 2 * STEP * t);
                    for line in 0..8 {
                        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64 * line).cast());
                    }
                }
                // One fold register, then one word of each stream: the mix the two
                // sides execute at, so neither waits behind a queue of the other.
                for (w, reg) in regs.iter_mut().enumerate() {
                    if t > 0 {
                        *reg = fold(*reg, k_step, load(at.add(64 * w)));
                    }
                    for (s, c) in c.iter_mut().enumerate() {
                        *c = _mm_crc32_u64(*c, word(p.add(Self::STREAM * s + 8 * Self::WORDS * t + 8 * w)));
                    }
                }
            }
            // Stream CRCs 2j and 2j+1 in lane j, each moved by its own multiplier.
            fold(vector(c), vector(Self::STREAM_SHIFTS), _mm512_setzero_si512())
        }
    }
}

/// How far ahead the largest blocks prefetch.
const PREFETCH_AHEAD: usize = 2 * 8192;

/// Runs the CRC-32C register `crc` over `data`.
#[target_feature(enable = "avx512f,vpclmulqdq,sse4.2")]
pub(crate) fn crc32c_register_avx512(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: this function's target features.
    unsafe { kernel(crc, data) }
}

/// Messages from this long up to [`PAIR_MAX`] go two at a time through
/// [`crc32c_register_avx512_two`] when not interleaved.
pub(crate) const PAIR_MIN: usize = FOLD_MIN;
/// Longer messages amortise the kernel's set-up and final reduction alone.
pub(crate) const PAIR_MAX: usize = 8192;

/// Two messages through the kernel in one function, so that the second's
/// blocks issue while the first's final reduction (a chain of some fifty
/// cycles) completes. (Measured against other ways of running two messages at
/// once in the notes of `append_many`.)
#[target_feature(enable = "avx512f,vpclmulqdq,sse4.2")]
pub(crate) fn crc32c_register_avx512_two(crc_a: u32, a: &[u8], crc_b: u32, b: &[u8]) -> (u32, u32) {
    // SAFETY: this function's target features.
    unsafe { (kernel(crc_a, a), kernel(crc_b, b)) }
}

/// [`crc32c_register_avx512`], inlined where it is called.
///
/// # Safety
/// The CPU must have the features [`crc32c_register_avx512`] enables.
#[inline(always)]
unsafe fn kernel(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        if data.len() < FOLD_MIN {
            return crc32_words(crc, data);
        }
        let mut rest = data;
        // SAFETY: every read below is within `rest`, whose length is checked first.
        {
            let mut regs = [_mm512_setzero_si512(); 4];
            let mut started = false;
            // The last block's stream CRCs, added to the last register when it moves
            // on (or at the end, where the sum need not wait for them).
            let mut streams = _mm512_setzero_si512();
            macro_rules! block {
                ($iters:literal, $prefetch:expr) => {
                    regs[3] = _mm512_xor_si512(regs[3], streams);
                    streams = Block::<$iters>::fold::<$prefetch>(&mut regs, crc, !started, rest.as_ptr());
                    started = true;
                    rest = &rest[Block::<$iters>::LEN..];
                };
            }
            // From memory, the block's nine read streams outrun the hardware
            // prefetchers: ask for the lines two blocks ahead while there are some.
            while rest.len() >= Block::<16>::LEN + PREFETCH_AHEAD {
                block!(16, PREFETCH_AHEAD);
            }
            // 8 KiB blocks, then at most one of 4 KiB and up to three of 1 KiB. (A
            // 2 KiB block measured slower than two of 1 KiB; a 512-byte one no faster
            // than folding alone.)
            macro_rules! blocks {
                ($iters:literal) => {
                    while rest.len() >= Block::<$iters>::LEN {
                        block!($iters, 0);
                    }
                };
            }
            blocks!(16);
            blocks!(8);
            blocks!(2);
            let crc_lane = _mm512_castsi128_si512(_mm_cvtsi32_si128(crc as i32));
            if !started && rest.len() >= STEP {
                let p = rest.as_ptr();
                regs = [_mm512_xor_si512(load(p), crc_lane), load(p.add(64)), load(p.add(128)), load(p.add(192))];
                rest = &rest[STEP..];
                started = true;
            }
            if started {
                let k_step = broadcast(SHIFT_STEP);
                while rest.len() >= STEP {
                    regs[3] = _mm512_xor_si512(regs[3], streams);
                    streams = _mm512_setzero_si512();
                    let p = rest.as_ptr();
                    for (j, r) in regs.iter_mut().enumerate() {
                        *r = fold(*r, k_step, load(p.add(64 * j)));
                    }
                    rest = &rest[STEP..];
                }
                finish(reduce(regs, streams), rest)
            } else {
                let acc = _mm512_xor_si512(load(rest.as_ptr()), crc_lane);
                finish(acc, &rest[64..])
            }
        }
    }
}

/// The four fold registers folded into the last one, with the stream CRCs
/// `streams` (already moved to its lanes) added last.
///
/// # Safety
/// The CPU must have the features [`crc32c_register_avx512`] enables.
#[inline(always)]
unsafe fn reduce(regs: [__m512i; 4], streams: __m512i) -> __m512i {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        let a = fold(regs[0], broadcast(SHIFT_192), regs[3]);
        let b = fold(regs[1], broadcast(SHIFT_128), _mm512_clmulepi64_epi128(regs[2], broadcast(SHIFT_64), 0x00));
        let c = _mm512_clmulepi64_epi128(regs[2], broadcast(SHIFT_64), 0x11);
        _mm512_ternarylogic_epi64(a, b, _mm512_xor_si512(c, streams), 0x96)
    }
}

/// The CRC register of a message whose bytes up to `rest` are folded into `acc`.
///
/// # Safety
/// The CPU must have the features [`crc32c_register_avx512`] enables.
#[inline(always)]
unsafe fn finish(mut acc: __m512i, mut rest: &[u8]) -> u32 {
    // SAFETY: the caller upholds this function's contract (its `# Safety` above),
    // which is all the operations below need.
    unsafe {
        let k64 = broadcast(SHIFT_64);
        while rest.len() >= 64 {
            acc = fold(acc, k64, load(rest.as_ptr()));
            rest = &rest[64..];
        }
        // The four lanes moved onto the last, then added. A tail of a word or more
        // is not run after them (a chain of up to ten `crc32`s): the lanes move
        // past it too, and its CRC from zero, computed meanwhile, is added.
        let tail = rest.len();
        let moved = if tail >= 8 {
            fold(acc, vector(END_SHIFTS[tail]), _mm512_setzero_si512())
        } else {
            let [k48, k32, k16] = [SHIFT_48, SHIFT_32, SHIFT_16];
            let k = vector([k48[0], k48[1], k32[0], k32[1], k16[0], k16[1], 0, 0]);
            fold(acc, k, _mm512_maskz_mov_epi64(0xC0, acc))
        };
        // The CRC of the 16 bytes the lane stands for.
        let c = lane_crc(0, lanes_sum(moved));
        if tail >= 8 {
            c ^ crc32_words(0, rest)
        } else {
            crc32_words(c, rest)
        }
    }
}

/// The sum of the four 128-bit lanes of `v`.
#[target_feature(enable = "avx512f")]
#[inline]
fn lanes_sum(v: __m512i) -> __m128i {
    let half = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
    _mm_xor_si128(_mm256_castsi256_si128(half), _mm256_extracti128_si256::<1>(half))
}

/// Register `crc` run over the 16 bytes `lane` holds.
#[target_feature(enable = "sse4.2")]
#[inline]
pub(super) fn lane_crc(crc: u32, lane: __m128i) -> u32 {
    let c = _mm_crc32_u64(u64::from(crc), _mm_cvtsi128_si64(lane) as u64);
    _mm_crc32_u64(c, _mm_extract_epi64::<1>(lane) as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x^n mod P one multiplication by x at a time, as a CRC register shifts.
    fn x_pow_bitwise(n: u64) -> u32 {
        let mut r = 0x8000_0000u32;
        for _ in 0..n {
            r = (r >> 1) ^ if r & 1 != 0 { POLY } else { 0 };
        }
        r
    }

    #[test]
    fn multipliers_match_bitwise_powers() {
        for n in (0..2000).chain([4095, 4096, 65_535, 65_536, 131_071, 200_000]) {
            assert_eq!(x_pow_mod_p(n), x_pow_bitwise(n), "x^{n}");
        }
        // Every multiplier the kernel uses, recomputed the slow way.
        let lanes = |bytes: usize| [x_pow_bitwise(8 * bytes as u64 + 31) as u64, x_pow_bitwise(8 * bytes as u64 - 33) as u64];
        for (k, bytes) in [(SHIFT_STEP, 256), (SHIFT_192, 192), (SHIFT_128, 128), (SHIFT_64, 64), (SHIFT_48, 48), (SHIFT_32, 32), (SHIFT_16, 16)] {
            assert_eq!(k, lanes(bytes), "lane shift {bytes}");
        }
        fn check_block<const I: usize>(lanes: impl Fn(usize) -> [u64; 2]) {
            assert_eq!(Block::<I>::SKIP, lanes(Block::<I>::STREAMS + 256));
            for i in 0..8 {
                let bytes = Block::<I>::LEN - 64 + 16 * (i / 2 + 1) - Block::<I>::STREAM * (i + 1);
                assert_eq!(Block::<I>::STREAM_SHIFTS[i], x_pow_bitwise(8 * bytes as u64 - 97) as u64);
            }
        }
        for (t, shifts) in END_SHIFTS.iter().enumerate().skip(8) {
            for j in 0..4 {
                assert_eq!(shifts[2 * j..2 * j + 2], lanes(48 - 16 * j + t), "tail {t} lane {j}");
            }
        }
        check_block::<16>(lanes);
        check_block::<8>(lanes);
        check_block::<2>(lanes);
    }
}
