//! Digest types and algorithms (docs/formats.md#digests).
//!
//! A digest always covers the entry header followed by the payload, skipping the
//! stored digest itself; callers pass those parts and this module never needs
//! to know where they came from.

use hmac::{Mac, SimpleHmac};
use sha1::{Digest as _, Sha1};

use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::{Error, Result};

/// The digest types, numbered as ledger metadata persists them (the proto
/// `LedgerMetadataFormat.DigestType` values; the Java enum ordinals differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DigestType {
    Crc32 = 1,
    Hmac = 2,
    Crc32c = 3,
    Dummy = 4,
}

impl DigestType {
    pub const ALL: [DigestType; 4] =
        [DigestType::Crc32, DigestType::Hmac, DigestType::Crc32c, DigestType::Dummy];

    /// Bytes the digest takes in an entry.
    #[inline]
    pub const fn len(self) -> usize {
        match self {
            DigestType::Crc32 => 8,
            DigestType::Hmac => 20,
            DigestType::Crc32c => 4,
            DigestType::Dummy => 0,
        }
    }

    /// Whether the digest takes no bytes (the dummy digest).
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The persisted (proto) number.
    #[inline]
    pub const fn proto_value(self) -> u8 {
        self as u8
    }

    pub const fn from_proto_value(v: i64) -> Option<Self> {
        match v {
            1 => Some(DigestType::Crc32),
            2 => Some(DigestType::Hmac),
            3 => Some(DigestType::Crc32c),
            4 => Some(DigestType::Dummy),
            _ => None,
        }
    }

    /// Lowercase name used in the Python API and Arrow columns.
    pub const fn name(self) -> &'static str {
        match self {
            DigestType::Crc32 => "crc32",
            DigestType::Hmac => "hmac",
            DigestType::Crc32c => "crc32c",
            DigestType::Dummy => "dummy",
        }
    }

    /// Parses a name case-insensitively; `MAC` is accepted for HMAC as the Java API spells it.
    pub fn from_name(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "crc32" => Ok(DigestType::Crc32),
            "hmac" | "mac" => Ok(DigestType::Hmac),
            "crc32c" => Ok(DigestType::Crc32c),
            "dummy" => Ok(DigestType::Dummy),
            _ => Err(Error::invalid_argument(format!(
                "unknown digest type {name:?} (expected crc32, crc32c, hmac or dummy)"
            ))),
        }
    }
}

impl std::fmt::Display for DigestType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

// Checksum implementations, chosen by measurement (examples/crc_choice.rs,
// examples/crc_paths.rs, and calls timed side by side in one process).
// - CRC-32C: one of several paths (`CrcPath`), chosen once per process from the CPU:
//   * `avx512` (digest/crc32c_x86.rs): AVX-512 VPCLMULQDQ folding beside eight
//     `crc32` streams, about 30 bytes a cycle on AMD Zen 5, where carry-less
//     multiplies issue once every two cycles and `crc32` twice a cycle; its even
//     split suits only such cores (see `balanced_for_this_cpu`). Against
//     `crc-fast` there (ours / theirs): 64 B 1.29x, 1 KiB 1.12x, 16 KiB 1.84x,
//     64 MiB 1.12x.
//   * `crc-fast`: other CPUs with AVX-512 VPCLMULQDQ (Intel from Ice Lake, AMD
//     Zen 4), where `crc-fast`'s own VPCLMULQDQ kernel leads (Intel Xeon with
//     AMX, 16 KiB: 102 GB/s against 62 for `avx512`), and every CPU that is not
//     x86-64 (its CRC + PMULL fusion on aarch64).
//   * `pclmul` (digest/crc32c_sse.rs): x86-64 with PCLMULQDQ but no VPCLMULQDQ
//     (AVX2 Intel before Ice Lake, AMD Zen 1 to 3): 128-bit folding beside
//     `crc32` streams, split to each core's rates; forced on the Xeon above,
//     16 KiB at 0.84x the sum of the two instruction loops' bounds and 1.08x
//     `crc-fast`'s SSE4.2 + PCLMULQDQ kernel (what ran there before), 1 KiB
//     1.9x it.
//   * `sse42`: SSE4.2 without PCLMULQDQ: three `crc32` streams joined through
//     tables (0.92x the instruction's bound at 16 KiB).
//   * `portable` (digest/crc32c_table.rs): tables, on any CPU.
//   Short messages take the `crc32` instruction alone on every x86-64 path
//   with it. Many short messages run six `crc32` streams side by side.
// - CRC-32: `crc32fast` (PCLMULQDQ and AVX-512 VPCLMULQDQ folding, aarch64 CRC,
//   portable table; its table when the `portable` path is forced). `crc-fast`
//   was within noise of it from 1 KiB up and two to five times slower below
//   256 bytes on x86, which has no CRC-32 instruction.

#[cfg(target_arch = "x86_64")]
mod crc32c_sse;
mod crc32c_table;
#[cfg(target_arch = "x86_64")]
mod crc32c_x86;

/// The CRC-32C implementations a build has; which one runs long messages is
/// chosen once per process from the CPU ([`crc_path`]), and can be forced with
/// the `BKCODEC_CRC_PATH` environment variable (read at the first CRC) or
/// [`set_crc_path`], for tests and side-by-side measurements.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CrcPath {
    /// Tables, eight bytes a step: any CPU.
    Portable = 1,
    /// Three `crc32` instruction streams joined through tables: x86-64 with SSE4.2.
    Sse42 = 2,
    /// 128-bit PCLMULQDQ folding beside `crc32` streams: x86-64 with SSE4.2 and PCLMULQDQ.
    Pclmul = 3,
    /// The `crc-fast` crate's own run-time choice (VPCLMULQDQ on x86-64 with
    /// AVX-512, its PCLMULQDQ fusion below that, CRC and PMULL on aarch64).
    CrcFast = 4,
    /// 512-bit VPCLMULQDQ folding beside eight `crc32` streams: x86-64 with AVX-512.
    Avx512 = 5,
}

impl CrcPath {
    pub const ALL: [CrcPath; 5] = [CrcPath::Portable, CrcPath::Sse42, CrcPath::Pclmul, CrcPath::CrcFast, CrcPath::Avx512];

    pub const fn name(self) -> &'static str {
        match self {
            CrcPath::Portable => "portable",
            CrcPath::Sse42 => "sse42",
            CrcPath::Pclmul => "pclmul",
            CrcPath::CrcFast => "crc-fast",
            CrcPath::Avx512 => "avx512",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether this CPU runs the path.
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let sse42 = is_x86_feature_detected!("sse4.2");
            match self {
                CrcPath::Portable => true,
                // Below 257 bytes the path runs the `crc32` instruction itself.
                CrcPath::Sse42 | CrcPath::CrcFast => sse42,
                CrcPath::Pclmul => sse42 && is_x86_feature_detected!("pclmulqdq"),
                CrcPath::Avx512 => crc32c_x86::avx512_available(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            matches!(self, CrcPath::Portable | CrcPath::CrcFast)
        }
    }

    /// The path a CPU takes unless told otherwise (measured in
    /// `examples/crc_paths.rs`; figures in the note beside the dispatch).
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if crc32c_x86::avx512_available() {
                return if crc32c_x86::balanced_for_this_cpu() { CrcPath::Avx512 } else { CrcPath::CrcFast };
            }
            if CrcPath::Pclmul.available() {
                return CrcPath::Pclmul;
            }
            if CrcPath::Sse42.available() {
                return CrcPath::Sse42;
            }
            CrcPath::Portable
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            CrcPath::CrcFast
        }
    }

    fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|p| *p as u8 == v)
    }
}

impl std::fmt::Display for CrcPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The environment variable that forces a CRC-32C path (a [`CrcPath`] name);
/// a path this CPU cannot run, or an unknown name, is ignored.
pub const CRC_PATH_ENV: &str = "BKCODEC_CRC_PATH";

/// The path in use: 0 until the first CRC, then a `CrcPath` the CPU runs.
static CRC_PATH: AtomicU8 = AtomicU8::new(0);

/// The CRC-32C path in use (chosen at the first call: the environment
/// variable [`CRC_PATH_ENV`] if it names a path this CPU runs, else the
/// CPU's own).
#[doc(hidden)]
#[inline]
pub fn crc_path() -> CrcPath {
    match CrcPath::from_u8(CRC_PATH.load(Ordering::Relaxed)) {
        Some(p) => p,
        None => {
            let forced = std::env::var(CRC_PATH_ENV).ok().and_then(|n| CrcPath::from_name(&n)).filter(|p| p.available());
            let p = forced.unwrap_or_else(CrcPath::detect);
            CRC_PATH.store(p as u8, Ordering::Relaxed);
            p
        }
    }
}

/// Forces the CRC-32C path for the whole process (`None`: the CPU's own).
/// For tests and measurements; fails for a path this CPU cannot run.
#[doc(hidden)]
pub fn set_crc_path(path: Option<CrcPath>) -> Result<CrcPath> {
    let p = path.unwrap_or_else(CrcPath::detect);
    if !p.available() {
        return Err(Error::invalid_argument(format!("this CPU cannot run the {p} CRC-32C path")));
    }
    CRC_PATH.store(p as u8, Ordering::Relaxed);
    Ok(p)
}

/// CRC-32C of `data` resumed from `value` on a given path, whatever the
/// process uses; `None` if this CPU cannot run it. For tests and measurements.
#[doc(hidden)]
pub fn crc32c_append_on(path: CrcPath, value: u32, data: &[u8]) -> Option<u32> {
    path.available().then(|| !crc32c_register_on(path, !value, data))
}

/// A CRC-32C function on finalized values, as [`crc32c_append`].
#[doc(hidden)]
pub type Crc32cFn = fn(u32, &[u8]) -> u32;

/// The kernels inside the paths, each alone whatever the length, that this
/// CPU runs: for tests and the microbenchmark (`examples/crc_paths.rs`).
#[doc(hidden)]
pub fn crc32c_kernels() -> Vec<(&'static str, Crc32cFn)> {
    let mut kernels: Vec<(&'static str, Crc32cFn)> = vec![("table", |v, d| !crc32c_table::crc32c_register_table(!v, d))];
    #[cfg(target_arch = "x86_64")]
    {
        if CrcPath::Sse42.available() {
            // SAFETY: the CPU supports SSE4.2, checked just above.
            kernels.push(("crc32 1 stream", |v, d| !unsafe { crc32c_x86::crc32_words(!v, d) }));
            // SAFETY: as above.
            kernels.push(("crc32 3 streams + tables", |v, d| !unsafe { crc32c_sse::crc32c_register_sse42(!v, d) }));
        }
        if CrcPath::Pclmul.available() {
            // SAFETY: the CPU has SSE4.2 and PCLMULQDQ, checked just above.
            kernels.push(("pclmul balanced (4 regs, 4x2 crc32)", |v, d| !unsafe { crc32c_sse::crc32c_register_split::<4, 4, 2>(!v, d) }));
            // SAFETY: as above.
            kernels.push(("pclmul fold-heavy (4 regs, 3x1 crc32)", |v, d| !unsafe { crc32c_sse::crc32c_register_split::<4, 3, 1>(!v, d) }));
            // SAFETY: as above.
            kernels.push(("pclmul fold only (8 regs)", |v, d| !unsafe { crc32c_sse::crc32c_register_split::<8, 0, 0>(!v, d) }));
        }
        if CrcPath::Avx512.available() {
            // SAFETY: the CPU has the kernel's features, checked just above.
            kernels.push(("avx512 (4 zmm, 8x4 crc32)", |v, d| !unsafe { crc32c_x86::crc32c_register_avx512(!v, d) }));
        }
    }
    kernels.push(("crc-fast", |v, d| !crc32c_register_crc_fast(!v, d)));
    kernels
}

/// CRC-32C (Castagnoli) of `data`, resumed from a finalized CRC `value`
/// (BookKeeper's `resume` semantics: `crc32c_append(crc32c(a), b) == crc32c(a ‖ b)`).
#[inline]
pub fn crc32c_append(value: u32, data: &[u8]) -> u32 {
    // The register the algorithms run is the complement of a finalized CRC.
    !crc32c_register_on(crc_path(), !value, data)
}

#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// Runs the register over `data` on `path`, which this CPU must run (every
/// caller has it from `crc_path` or checked `available`).
#[inline]
fn crc32c_register_on(path: CrcPath, crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        // The path is one this CPU runs: `available` checked its features
        // before it was stored or passed.
        match path {
            CrcPath::Avx512 if data.len() >= crc32c_x86::FOLD_MIN => {
                // SAFETY: the CPU has AVX-512, VPCLMULQDQ and SSE4.2 (the path's features).
                return unsafe { crc32c_x86::crc32c_register_avx512(crc, data) };
            }
            // Short messages call the small function directly, not through the
            // kernel (whose set-up costs a few cycles even when it returns early).
            CrcPath::Avx512 | CrcPath::CrcFast | CrcPath::Pclmul if data.len() <= SHORT_SSE42_MAX => {
                // SAFETY: these paths need SSE4.2 on x86-64.
                return unsafe { crc32c_x86::crc32_words(crc, data) };
            }
            // SAFETY: the CPU has SSE4.2 and PCLMULQDQ (the path's features).
            CrcPath::Pclmul => return unsafe { crc32c_sse::crc32c_register_pclmul(crc, data) },
            // SAFETY: the CPU has SSE4.2 (the path's feature).
            CrcPath::Sse42 => return unsafe { crc32c_sse::crc32c_register_sse42(crc, data) },
            _ => {}
        }
    }
    match path {
        CrcPath::Portable => crc32c_table::crc32c_register_table(crc, data),
        _ => crc32c_register_crc_fast(crc, data),
    }
}

/// Up to this, the `crc-fast`, `avx512` and `pclmul` paths run the `crc32`
/// instruction alone (what `crc-fast` runs below it, minus its set-up; many
/// 256-byte messages ran at 1.08x the `pclmul` kernel, 1 KiB ones at 0.46x).
#[cfg(target_arch = "x86_64")]
const SHORT_SSE42_MAX: usize = 256;
// With AVX-512, every message shorter than the kernel's minimum is short.
#[cfg(target_arch = "x86_64")]
const _: () = assert!(SHORT_SSE42_MAX >= crc32c_x86::FOLD_MIN - 1);

/// `crc-fast`: VPCLMULQDQ folding fused with `crc32` streams on x86 with
/// AVX-512, PCLMULQDQ below, the CRC and PMULL instructions on aarch64.
fn crc32c_register_crc_fast(crc: u32, data: &[u8]) -> u32 {
    if crc == !0 {
        // The one-shot entry point skips the resumable digest's set-up.
        return !crc_fast::crc32_iscsi(data);
    }
    let mut digest = crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(crc));
    digest.update(data);
    !(digest.finalize() as u32)
}

/// CRC-32 (zlib / `java.util.zip.CRC32`), resumed from a finalized CRC `value`.
#[inline]
pub fn crc32_append(value: u32, data: &[u8]) -> u32 {
    let mut h = crc32_hasher(value);
    h.update(data);
    h.finalize()
}

/// `crc32fast`'s hasher from a finalized CRC: its own run-time choice
/// (VPCLMULQDQ or PCLMULQDQ folding on x86-64, the CRC instructions on
/// aarch64), or its table when the `portable` CRC-32C path is forced.
#[inline]
fn crc32_hasher(value: u32) -> crc32fast::Hasher {
    if crc_path() == CrcPath::Portable {
        crc32fast::Hasher::internal_new_baseline(value, 0)
    } else {
        crc32fast::Hasher::new_with_initial(value)
    }
}

#[inline]
pub fn crc32(data: &[u8]) -> u32 {
    crc32_append(0, data)
}

/// Appends each message to its own running CRC-32C:
/// `values[i] = crc32c_append(values[i], messages[i])` for every `i`.
///
/// Meant for many short messages (entry headers, small payloads): the `crc32`
/// instruction has a latency of three cycles and issues twice a cycle, so six
/// short messages are fed as one interleaved instruction stream. Up to 8 KiB,
/// messages not interleaved go through the AVX-512 kernel two at a time, so that
/// one's final reduction overlaps the other's blocks; longer ones take the
/// single-message path. A digest over several parts (header, then payload)
/// is two calls, the second resuming from the first.
///
/// # Panics
/// If `values` and `messages` differ in length.
pub fn crc32c_append_many(values: &mut [u32], messages: &[&[u8]]) {
    assert_eq!(values.len(), messages.len(), "one running CRC per message");
    #[cfg(target_arch = "x86_64")]
    if crc_path() != CrcPath::Portable {
        // SAFETY: every path but the portable one runs only with SSE4.2.
        unsafe { crc32c_x86::append_many(values, messages) };
        return;
    }
    append_many_portable(values, messages);
}

fn append_many_portable(values: &mut [u32], messages: &[&[u8]]) {
    for (v, m) in values.iter_mut().zip(messages) {
        *v = crc32c_append(*v, m);
    }
}

/// CRC-32C of each concatenation `heads[i] ‖ tails[i]` (an entry's header and
/// payload, say), into `out[i]`: [`crc32c_append_many`] without finalising
/// between the parts.
///
/// # Panics
/// If the three slices differ in length.
pub fn crc32c_concat_many(out: &mut [u32], heads: &[&[u8]], tails: &[&[u8]]) {
    assert!(out.len() == heads.len() && out.len() == tails.len(), "one head and one tail per CRC");
    #[cfg(target_arch = "x86_64")]
    if crc_path() != CrcPath::Portable {
        // SAFETY: every path but the portable one runs only with SSE4.2.
        unsafe { crc32c_x86::concat_many(out, heads, tails) };
        return;
    }
    concat_many_portable(out, heads, tails);
}

fn concat_many_portable(out: &mut [u32], heads: &[&[u8]], tails: &[&[u8]]) {
    for ((o, h), t) in out.iter_mut().zip(heads).zip(tails) {
        *o = crc32c_append(crc32c(h), t);
    }
}

/// SHA-1 of the concatenated parts.
pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The master ("ledger") key a bookie stores: SHA1("ledger" ‖ password) (docs/formats.md#digests).
pub fn master_key(password: &[u8]) -> [u8; 20] {
    sha1(&[b"ledger", password])
}

/// The HMAC-SHA1 key: SHA1("mac" ‖ password) (docs/formats.md#digests).
pub fn mac_key(password: &[u8]) -> [u8; 20] {
    sha1(&[b"mac", password])
}

/// A computed digest, at most 20 bytes, kept inline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DigestValue {
    bytes: [u8; 20],
    len: u8,
}

impl DigestValue {
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for DigestValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

type HmacSha1 = SimpleHmac<Sha1>;

/// A digest algorithm bound to its key: build once per ledger, use per entry.
#[derive(Clone)]
pub struct Digester {
    digest_type: DigestType,
    /// HMAC state already keyed, cloned per message so the key schedule runs once.
    hmac: Option<HmacSha1>,
}

impl std::fmt::Debug for Digester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Digester").field("digest_type", &self.digest_type).finish()
    }
}

impl Digester {
    /// `password` matters only for HMAC.
    pub fn new(digest_type: DigestType, password: &[u8]) -> Self {
        let hmac = match digest_type {
            DigestType::Hmac => Some(
                HmacSha1::new_from_slice(&mac_key(password)).expect("HMAC takes keys of any length"),
            ),
            _ => None,
        };
        Digester { digest_type, hmac }
    }

    #[inline]
    pub fn digest_type(&self) -> DigestType {
        self.digest_type
    }

    /// Digest of the concatenation of `parts`, in the form BookKeeper stores it.
    #[inline]
    pub fn compute(&self, parts: &[&[u8]]) -> DigestValue {
        let mut bytes = [0u8; 20];
        let len = self.digest_type.len();
        match self.digest_type {
            DigestType::Crc32c => {
                let c = parts.iter().fold(0u32, |c, p| crc32c_append(c, p));
                bytes[..4].copy_from_slice(&c.to_be_bytes());
            }
            DigestType::Crc32 => {
                let mut h = crc32_hasher(0);
                for p in parts {
                    h.update(p);
                }
                // Stored as a Java long: four zero bytes, then the CRC.
                bytes[4..8].copy_from_slice(&h.finalize().to_be_bytes());
            }
            DigestType::Hmac => {
                let mut m = self.hmac.clone().expect("HMAC digester is keyed");
                for p in parts {
                    m.update(p);
                }
                bytes.copy_from_slice(&m.finalize().into_bytes());
            }
            DigestType::Dummy => {}
        }
        DigestValue { bytes, len: len as u8 }
    }

    /// Whether `stored` is the digest of the parts. A stored value of the wrong
    /// width never matches (a CRC32 digest with non-zero high bytes fails too).
    #[inline]
    pub fn verify(&self, parts: &[&[u8]], stored: &[u8]) -> bool {
        stored.len() == self.digest_type.len() && self.compute(parts).as_bytes() == stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time reflected CRC with BookKeeper's resume semantics: the
    /// reference every fast path must agree with.
    fn crc_reference(poly: u32, value: u32, data: &[u8]) -> u32 {
        let mut c = !value;
        for &b in data {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            }
        }
        !c
    }
    const CASTAGNOLI: u32 = 0x82F6_3B78;
    const IEEE: u32 = 0xEDB8_8320;

    use crate::test_rng::Rng;

    /// `crc_reference` of every prefix of `data`: `out[n]` is the CRC of `data[..n]`.
    fn prefix_references(poly: u32, value: u32, data: &[u8]) -> Vec<u32> {
        let mut out = Vec::with_capacity(data.len() + 1);
        let mut c = !value;
        out.push(!c);
        for &b in data {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            }
            out.push(!c);
        }
        out
    }

    /// A named CRC-32C implementation: (running value, bytes) to the new value.
    type NamedCrc = (String, Box<dyn Fn(u32, &[u8]) -> u32>);

    /// Every CRC-32C path this build has and this CPU runs, each forced
    /// regardless of the process's choice, and the kernels inside them alone.
    fn crc32c_paths() -> Vec<NamedCrc> {
        let mut paths: Vec<NamedCrc> = vec![("dispatch".into(), Box::new(crc32c_append))];
        for p in CrcPath::ALL {
            if p.available() {
                paths.push((p.name().into(), Box::new(move |v, d| crc32c_append_on(p, v, d).unwrap())));
            } else {
                eprintln!("this CPU cannot run the {p} CRC-32C path: it goes untested here");
            }
        }
        for (name, k) in crc32c_kernels() {
            paths.push((format!("kernel {name}"), Box::new(k)));
        }
        paths
    }

    /// Sets the process's path for the life of the guard (tests run side by
    /// side, so others may see it: every path gives the same values).
    struct ForcedPath;
    impl ForcedPath {
        fn new(p: CrcPath) -> Self {
            set_crc_path(Some(p)).unwrap();
            ForcedPath
        }
    }
    impl Drop for ForcedPath {
        fn drop(&mut self) {
            set_crc_path(None).unwrap();
        }
    }

    #[test]
    fn paths_match_reference_at_random_lengths_to_100_kib_and_every_alignment() {
        let mut rng = Rng(0xC0FF_EE00_1234_5678);
        let data = rng.bytes(100 * 1024 + 64);
        let paths = crc32c_paths();
        for round in 0..160 {
            let off = round % 64;
            let len = match round % 4 {
                0 => rng.below(100 * 1024 + 1),
                1 => rng.below(4097),
                2 => rng.below(300),
                _ => [0, 1, 15, 16, 127, 128, 255, 256, 703, 704, 1023, 1024, 2815, 2816, 4095, 4096, 9216, 102_400][rng.below(18)],
            };
            let d = &data[off..off + len];
            let value = if round % 3 == 0 { 0 } else { rng.next() as u32 };
            let expected = crc_reference(CASTAGNOLI, value, d);
            for (name, path) in &paths {
                assert_eq!(path(value, d), expected, "{name}: length {len}, offset {off}, value {value:#x}");
            }
        }
    }

    #[test]
    fn path_names_round_trip_and_forcing_refuses_what_the_cpu_lacks() {
        for p in CrcPath::ALL {
            assert_eq!(CrcPath::from_name(p.name()), Some(p));
            assert_eq!(CrcPath::from_name(&p.name().to_uppercase()), Some(p));
            assert_eq!(crc32c_append_on(p, 0, b"123456789").is_some(), p.available(), "{p}");
            if p.available() {
                assert_eq!(crc32c_append_on(p, 0, b"123456789"), Some(0xe306_9283), "{p}");
            } else {
                assert!(set_crc_path(Some(p)).is_err(), "{p} forced on a CPU without it");
            }
        }
        assert_eq!(CrcPath::from_name("avx2"), None);
        assert!(CrcPath::detect().available());
        assert!(CrcPath::Portable.available());
    }

    #[test]
    fn many_and_concat_agree_on_every_forced_path() {
        let mut rng = Rng(0x7A7A);
        let data = rng.bytes(30 * 9300);
        for p in CrcPath::ALL.into_iter().filter(|p| p.available()) {
            let _forced = ForcedPath::new(p);
            for round in 0..60 {
                let count = round % 21;
                let mut at = 0;
                let (mut heads, mut tails) = (Vec::new(), Vec::new());
                for _ in 0..count {
                    let len = MANY_EDGES[rng.below(MANY_EDGES.len())];
                    let head = [0, 7, 32, 41][rng.below(4)];
                    at += rng.below(64);
                    heads.push(&data[at..at + head]);
                    tails.push(&data[at + head..at + head + len]);
                    at += head + len;
                }
                let start: Vec<u32> = (0..count).map(|i| if i % 3 == 0 { 0 } else { rng.next() as u32 }).collect();
                let mut values = start.clone();
                crc32c_append_many(&mut values, &tails);
                let mut out = vec![0u32; count];
                crc32c_concat_many(&mut out, &heads, &tails);
                for i in 0..count {
                    assert_eq!(values[i], crc_reference(CASTAGNOLI, start[i], tails[i]), "{p}: append, round {round} message {i}");
                    let whole = [heads[i], tails[i]].concat();
                    assert_eq!(out[i], crc_reference(CASTAGNOLI, 0, &whole), "{p}: concat, round {round} message {i}");
                }
            }
        }
    }

    #[test]
    fn crc32c_paths_match_reference_at_every_length_and_alignment() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let data = rng.bytes(2048 + 64);
        for off in [0, 1, 3, 8, 17, 63] {
            let d = &data[off..off + 2048];
            for value in [0, rng.next() as u32] {
                let expected = prefix_references(CASTAGNOLI, value, d);
                for (name, path) in crc32c_paths() {
                    for len in 0..=2048 {
                        assert_eq!(path(value, &d[..len]), expected[len], "{name}: len {len}, offset {off}, value {value:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn crc32c_paths_match_reference_on_large_buffers() {
        let mut rng = Rng(5);
        let data = rng.bytes(300_000);
        // Every size class of the kernel and the most of each below the next
        // (8192 + 4096 + 3·1024 + 3·256 + 3·64 + 63 = 16383), powers of two, odd sizes.
        let expected = prefix_references(CASTAGNOLI, 0x1234_5678, &data[7..]);
        let lengths = [4096, 8191, 8192, 8193, 16_384, 16_385, 16_383, 12_288 + 1024 + 64, 16_383 - 8, 65_536, 100_003, 299_993];
        for (name, path) in crc32c_paths() {
            for &len in lengths.iter().chain(&[rng.below(299_993), rng.below(299_993), rng.below(30_000)]) {
                assert_eq!(path(0x1234_5678, &data[7..7 + len]), expected[len], "{name}: len {len}");
            }
        }
    }

    #[test]
    fn crc32_matches_reference() {
        let mut rng = Rng(0x51);
        let data = rng.bytes(5000);
        for len in (0..600).chain([1023, 1024, 1025, 2047, 4096, 4097, 4999 - 63]) {
            let off = rng.below(64);
            let d = &data[off..off + len];
            let value = if len % 3 == 0 { 0 } else { rng.next() as u32 };
            assert_eq!(crc32_append(value, d), crc_reference(IEEE, value, d), "crc32 len {len}");
            assert_eq!(crc32(d), crc_reference(IEEE, 0, d));
        }
    }

    #[test]
    fn crc32_table_and_instructions_agree() {
        let mut rng = Rng(0x32);
        let data = rng.bytes(100 * 1024 + 64);
        let specialized = crc32fast::Hasher::internal_new_specialized(0, 0);
        if specialized.is_none() {
            eprintln!("crc32fast has no instruction path on this CPU: only its table is tested");
        }
        for round in 0..200 {
            let off = round % 64;
            let len = if round % 2 == 0 { rng.below(100 * 1024 + 1) } else { rng.below(600) };
            let d = &data[off..off + len];
            let value = rng.next() as u32;
            let expected = crc_reference(IEEE, value, d);
            let mut table = crc32fast::Hasher::internal_new_baseline(value, 0);
            table.update(d);
            assert_eq!(table.finalize(), expected, "table: length {len}");
            if let Some(mut h) = crc32fast::Hasher::internal_new_specialized(value, 0) {
                h.update(d);
                assert_eq!(h.finalize(), expected, "instructions: length {len}");
            }
        }
        let _forced = ForcedPath::new(CrcPath::Portable);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn resume_splits_anywhere() {
        let mut rng = Rng(42);
        let data = rng.bytes(3000);
        let whole = crc32(&data);
        for split in (0..=3000).step_by(37).chain([255, 256, 257, 2999, 3000]) {
            let (a, b) = data.split_at(split);
            assert_eq!(crc32_append(crc32(a), b), whole, "split {split}");
        }
        // CRC-32C: every split point, on every path.
        let whole_c = crc_reference(CASTAGNOLI, 0, &data);
        for (name, path) in crc32c_paths() {
            for split in 0..=data.len() {
                let (a, b) = data.split_at(split);
                assert_eq!(path(path(0, a), b), whole_c, "{name}: split {split}");
            }
        }
        // Longer, at the kernel's block boundaries and around them.
        let data = rng.bytes(20_000);
        let whole_c = crc_reference(CASTAGNOLI, 0, &data);
        for split in [1, 63, 64, 1024, 2047, 4096, 8191, 8192, 8193, 11_111, 16_384, 19_999] {
            let (a, b) = data.split_at(split);
            assert_eq!(crc32c_append(crc32c(a), b), whole_c, "split {split}");
        }
    }

    /// Lengths for the many-message tests: mostly short (interleaved), some at and
    /// around the interleaving limit, some long, some empty.
    fn many_length(rng: &mut Rng) -> usize {
        match rng.below(12) {
            0 => rng.below(5000),
            1 => 0,
            2 => [511, 512, 513, 1023, 1024, 1025][rng.below(6)],
            3 => rng.below(8),
            _ => rng.below(300),
        }
    }

    #[test]
    fn many_matches_one_at_a_time() {
        let mut rng = Rng(7);
        // Every count from 0 to 40 covers every remainder of the groups of six,
        // and rounds with mixed lengths put long messages inside groups.
        for round in 0..400 {
            let count = round % 41;
            let same_length = round % 3 == 0;
            let shared = rng.below(200);
            let messages: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let len = if same_length { shared } else { many_length(&mut rng) };
                    rng.bytes(len)
                })
                .collect();
            let refs: Vec<&[u8]> = messages.iter().map(|m| m.as_slice()).collect();
            let start: Vec<u32> = (0..count).map(|i| if i % 4 == 0 { 0 } else { rng.next() as u32 }).collect();
            let mut values = start.clone();
            crc32c_append_many(&mut values, &refs);
            for i in 0..count {
                assert_eq!(values[i], crc_reference(CASTAGNOLI, start[i], refs[i]), "round {round} message {i}");
            }
        }
        // Two calls resume like one over the concatenation.
        let headers: Vec<Vec<u8>> = (0..9).map(|_| rng.bytes(32)).collect();
        let payloads: Vec<Vec<u8>> = (0..9).map(|i| rng.bytes(i * 13)).collect();
        let mut values = vec![0u32; 9];
        crc32c_append_many(&mut values, &headers.iter().map(|h| h.as_slice()).collect::<Vec<_>>());
        crc32c_append_many(&mut values, &payloads.iter().map(|p| p.as_slice()).collect::<Vec<_>>());
        for i in 0..9 {
            assert_eq!(values[i], crc32c(&[headers[i].as_slice(), &payloads[i]].concat()));
        }
    }

    #[test]
    fn concat_many_matches_the_concatenation() {
        let mut rng = Rng(11);
        for round in 0..400 {
            let count = round % 41;
            // Entry headers: V1 (32 bytes before the digest), V2 (41), and odd ones;
            // in half the rounds all of one length, as in a batch of entries.
            let head_len = [7, 32, 41][round / 2 % 3];
            let heads: Vec<Vec<u8>> = (0..count)
                .map(|_| { let n = if round % 2 == 0 { head_len } else { [0, 7, 32, 41, 32, 41][rng.below(6)] }; rng.bytes(n) })
                .collect();
            let same_length = round % 3 == 0;
            let shared = rng.below(200);
            let tails: Vec<Vec<u8>> = (0..count)
                .map(|_| { let n = if same_length { shared } else { many_length(&mut rng) }; rng.bytes(n) })
                .collect();
            let mut out = vec![0u32; count];
            crc32c_concat_many(&mut out, &heads.iter().map(|h| h.as_slice()).collect::<Vec<_>>(),
                &tails.iter().map(|t| t.as_slice()).collect::<Vec<_>>());
            for i in 0..count {
                assert_eq!(out[i], crc_reference(CASTAGNOLI, 0, &[heads[i].as_slice(), &tails[i]].concat()), "round {round} message {i}");
            }
        }
    }

    /// Lengths at and around every threshold of the many-message paths: the
    /// kernel's minimum, the interleaving limit, the pairing range, and long ones.
    const MANY_EDGES: [usize; 25] =
        [0, 1, 7, 8, 41, 175, 176, 177, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1065, 2048, 4096, 4137, 8191, 8192, 8193, 9000];

    /// `crc32c_append_many` and `crc32c_concat_many` (and their portable forms)
    /// against one message at a time, for one set of messages.
    fn check_many(heads: &[&[u8]], tails: &[&[u8]], start: &[u32], what: &str) {
        let n = tails.len();
        let mut values = start.to_vec();
        crc32c_append_many(&mut values, tails);
        let mut portable = start.to_vec();
        append_many_portable(&mut portable, tails);
        let mut out = vec![0u32; n];
        crc32c_concat_many(&mut out, heads, tails);
        let mut out_portable = vec![0u32; n];
        concat_many_portable(&mut out_portable, heads, tails);
        for i in 0..n {
            let one = crc32c_append(start[i], tails[i]);
            assert_eq!(values[i], one, "{what}: append, message {i} of {n}, length {}", tails[i].len());
            assert_eq!(portable[i], one, "{what}: portable append, message {i}");
            let concat = crc32c_append(crc32c(heads[i]), tails[i]);
            assert_eq!(out[i], concat, "{what}: concat, message {i} of {n}, lengths {} + {}", heads[i].len(), tails[i].len());
            assert_eq!(out_portable[i], concat, "{what}: portable concat, message {i}");
        }
    }

    #[test]
    fn many_matches_one_at_a_time_around_every_threshold() {
        let mut rng = Rng(23);
        let data = rng.bytes(21 * 9200);
        // Every count up to 20 (each remainder of the groups of six, messages
        // waiting for a partner across groups), lengths drawn from the edges, each
        // message at its own offset.
        for round in 0..600 {
            let count = round % 21;
            let mid_only = round % 4 == 0;
            let mut at = 0;
            let mut heads = Vec::new();
            let mut tails = Vec::new();
            for _ in 0..count {
                let len = if mid_only { 176 + rng.below(8192 - 176 + 1) } else { MANY_EDGES[rng.below(MANY_EDGES.len())] };
                let head = [0, 7, 32, 41][rng.below(4)];
                at += rng.below(64);
                heads.push(&data[at..at + head]);
                tails.push(&data[at + head..at + head + len]);
                at += head + len;
            }
            let start: Vec<u32> = (0..count).map(|i| if i % 3 == 0 { 0 } else { rng.next() as u32 }).collect();
            check_many(&heads, &tails, &start, &format!("round {round}"));
        }
        // Every alignment, all messages at the same one.
        for off in 0..64 {
            for len in [176, 513, 1024, 1025, 4096] {
                let tails: Vec<&[u8]> = (0..7).map(|i| &data[off + i * 4160..off + i * 4160 + len + i % 2]).collect();
                let heads: Vec<&[u8]> = (0..7).map(|i| &data[off + i * 4160 + 4140..off + i * 4160 + 4140 + 17]).collect();
                check_many(&heads, &tails, &[!0, 0, 1, 2, 3, 4, 5], &format!("offset {off}, length {len}"));
            }
        }
    }

    #[test]
    #[should_panic(expected = "one running CRC per message")]
    fn many_refuses_mismatched_lengths() {
        crc32c_append_many(&mut [0, 0], &[b"a"]);
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn check_values() {
        assert_eq!(crc32(b"123456789"), 0xcbf43926);
        assert_eq!(crc32c(b"123456789"), 0xe3069283);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), 0xe3069283);
        assert_eq!(crc32_append(crc32(b"1234"), b"56789"), 0xcbf43926);
        // docs/formats.md#test-vectors: the resume vector for the ledger 1 / entry 0 header.
        let header: Vec<u8> = [1i64, 0, -1, 5].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(crc32c(&header), 0xf844c69c);
        assert_eq!(crc32c_append(0xf844c69c, b"hello"), 0xe3a5f74d);
        assert_eq!(crc32c(&[&header[..], b"hello"].concat()), 0xe3a5f74d);
    }

    #[test]
    fn keys() {
        assert_eq!(hex(&master_key(b"")), "850bf1071c5e3d8c24235676f8816ae0cbe2f14f");
        assert_eq!(hex(&master_key(b"secret")), "e793cbc379107648537183605cd361d3bb789a39");
        assert_eq!(hex(&mac_key(b"secret")), "190c685bae851574f5ab47c960a00c0466f96603");
        assert_eq!(hex(&mac_key(b"")), "347ead6348e936507920c15d2ae8266ac6ce9b49");
    }

    #[test]
    fn names_round_trip() {
        for dt in DigestType::ALL {
            assert_eq!(DigestType::from_name(dt.name()).unwrap(), dt);
            assert_eq!(DigestType::from_proto_value(dt.proto_value() as i64), Some(dt));
        }
        assert_eq!(DigestType::from_name("MAC").unwrap(), DigestType::Hmac);
        assert!(DigestType::from_name("sha256").is_err());
        assert_eq!(DigestType::from_proto_value(0), None);
    }
}
