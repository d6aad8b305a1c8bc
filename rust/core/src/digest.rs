//! Digest types and algorithms (FORMATS.md §1.3, §2).
//!
//! A digest always covers the entry header followed by the payload, skipping the
//! stored digest itself; callers pass those parts and this module never needs
//! to know where they came from.

use hmac::{Mac, SimpleHmac};
use sha1::{Digest as _, Sha1};

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

// Checksum implementations, chosen by measurement (examples/crc_choice.rs):
// - CRC-32C: `crc-fast`. It picks at run time among AVX-512 VPCLMULQDQ folding,
//   PCLMULQDQ folding fused with the SSE4.2 `crc32` instruction, the aarch64 CRC
//   and PMULL instructions, and a portable table; below 257 bytes it runs the
//   `crc32` instruction alone. It measured about 2x the `crc32c` crate (SSE4.2
//   `crc32` only) from 64 bytes to 64 MiB.
// - CRC-32: `crc32fast` (PCLMULQDQ and AVX-512 VPCLMULQDQ folding, aarch64 CRC,
//   portable table). `crc-fast` was within noise of it from 1 KiB up and two to
//   five times slower below 256 bytes on x86, which has no CRC-32 instruction.

/// CRC-32C (Castagnoli) of `data`, resumed from a finalized CRC `value`
/// (BookKeeper's `resume` semantics: `crc32c_append(crc32c(a), b) == crc32c(a ‖ b)`).
#[inline]
pub fn crc32c_append(value: u32, data: &[u8]) -> u32 {
    // The resumable digest's set-up costs as much as the checksum itself below a
    // few hundred bytes, so the common cases avoid it: a fresh CRC takes the
    // one-shot entry point, a short resumed one the `crc32` instruction directly
    // (what `crc-fast` itself runs below 256 bytes).
    if value == 0 {
        return crc_fast::crc32_iscsi(data);
    }
    #[cfg(target_arch = "x86_64")]
    if data.len() <= SHORT_RESUME_MAX && std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2, checked just above.
        return !unsafe { crc32c_register_sse42(!value, data) };
    }
    let mut digest = crc32c_resumed(value);
    digest.update(data);
    digest.finalize() as u32
}

/// Resumed CRCs of at most this many bytes run the `crc32` instruction inline.
#[cfg(target_arch = "x86_64")]
const SHORT_RESUME_MAX: usize = 256;

/// A CRC-32C digest continuing from a finalized value (its register is the complement).
#[inline]
fn crc32c_resumed(value: u32) -> crc_fast::Digest {
    crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(!value))
}

#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// CRC-32 (zlib / `java.util.zip.CRC32`), resumed from a finalized CRC `value`.
#[inline]
pub fn crc32_append(value: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(value);
    h.update(data);
    h.finalize()
}

#[inline]
pub fn crc32(data: &[u8]) -> u32 {
    crc32_append(0, data)
}

/// Messages longer than this go to the single-message path, whose folding beats
/// three interleaved `crc32` instruction streams.
const MANY_INTERLEAVE_MAX: usize = 256;

/// Appends each message to its own running CRC-32C:
/// `values[i] = crc32c_append(values[i], messages[i])` for every `i`.
///
/// Meant for many short messages (entry headers, small payloads): the `crc32`
/// instruction has a latency of three cycles and a throughput of one, so three
/// messages are fed as one interleaved instruction stream. A digest over several
/// parts (header, then payload) is two calls, the second resuming from the first.
///
/// # Panics
/// If `values` and `messages` differ in length.
pub fn crc32c_append_many(values: &mut [u32], messages: &[&[u8]]) {
    assert_eq!(values.len(), messages.len(), "one running CRC per message");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2, checked just above.
        unsafe { crc32c_append_many_sse42(values, messages) };
        return;
    }
    for (v, m) in values.iter_mut().zip(messages) {
        *v = crc32c_append(*v, m);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_append_many_sse42(values: &mut [u32], messages: &[&[u8]]) {
    let mut groups = values.chunks_exact_mut(3).zip(messages.chunks_exact(3));
    for (v, m) in &mut groups {
        if m.iter().all(|m| m.len() <= MANY_INTERLEAVE_MAX) {
            let out = crc32c_x3_sse42([v[0], v[1], v[2]], [m[0], m[1], m[2]]);
            v.copy_from_slice(&out);
        } else {
            for (v, m) in v.iter_mut().zip(m) {
                *v = crc32c_append(*v, m);
            }
        }
    }
    let done = values.len() / 3 * 3;
    for (v, m) in values[done..].iter_mut().zip(&messages[done..]) {
        *v = crc32c_append(*v, m);
    }
}

/// CRC-32C of each concatenation `heads[i] ‖ tails[i]` (an entry's header and
/// payload, say), into `out[i]`: [`crc32c_append_many`] without finalising
/// between the parts, for short messages.
///
/// # Panics
/// If the three slices differ in length.
pub fn crc32c_concat_many(out: &mut [u32], heads: &[&[u8]], tails: &[&[u8]]) {
    assert!(out.len() == heads.len() && out.len() == tails.len(), "one head and one tail per CRC");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2, checked just above.
        unsafe { crc32c_concat_many_sse42(out, heads, tails) };
        return;
    }
    for ((o, h), t) in out.iter_mut().zip(heads).zip(tails) {
        *o = crc32c_append(crc32c(h), t);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_concat_many_sse42(out: &mut [u32], heads: &[&[u8]], tails: &[&[u8]]) {
    // No closures here: they would not inherit the target feature, and the
    // `crc32` calls inside them would not be inlined.
    let mut groups = out.chunks_exact_mut(3).zip(heads.chunks_exact(3)).zip(tails.chunks_exact(3));
    for ((o, h), t) in &mut groups {
        if t[0].len() <= MANY_INTERLEAVE_MAX && t[1].len() <= MANY_INTERLEAVE_MAX && t[2].len() <= MANY_INTERLEAVE_MAX {
            let c = crc32c_x3_register_sse42([!0; 3], [h[0], h[1], h[2]]);
            let c = crc32c_x3_register_sse42(c, [t[0], t[1], t[2]]);
            o[0] = !c[0];
            o[1] = !c[1];
            o[2] = !c[2];
        } else {
            for k in 0..3 {
                o[k] = crc32c_append(crc32c(h[k]), t[k]);
            }
        }
    }
    let done = out.len() / 3 * 3;
    for i in done..out.len() {
        out[i] = crc32c_append(crc32c(heads[i]), tails[i]);
    }
}

/// Three CRC-32C registers advanced over their messages as one instruction
/// stream for the words all three have, then each message's rest alone.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
fn crc32c_x3_register_sse42(registers: [u32; 3], data: [&[u8]; 3]) -> [u32; 3] {
    use std::arch::x86_64::_mm_crc32_u64;
    let mut c = [u64::from(registers[0]), u64::from(registers[1]), u64::from(registers[2])];
    let [a, b, d] = [data[0].chunks_exact(8), data[1].chunks_exact(8), data[2].chunks_exact(8)];
    let mut words = 0;
    for ((a, b), d) in a.zip(b).zip(d) {
        c[0] = _mm_crc32_u64(c[0], u64::from_le_bytes(a.try_into().unwrap()));
        c[1] = _mm_crc32_u64(c[1], u64::from_le_bytes(b.try_into().unwrap()));
        c[2] = _mm_crc32_u64(c[2], u64::from_le_bytes(d.try_into().unwrap()));
        words += 1;
    }
    [
        crc32c_register_sse42(c[0] as u32, &data[0][words * 8..]),
        crc32c_register_sse42(c[1] as u32, &data[1][words * 8..]),
        crc32c_register_sse42(c[2] as u32, &data[2][words * 8..]),
    ]
}

/// Three CRC-32C streams in one instruction stream, then each stream's tail alone.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
fn crc32c_x3_sse42(values: [u32; 3], data: [&[u8]; 3]) -> [u32; 3] {
    use std::arch::x86_64::_mm_crc32_u64;
    // The instruction works on the register; a finalized CRC is its complement.
    let mut c = values.map(|v| u64::from(!v));
    let [a, b, d] = data.map(|m| m.chunks_exact(8));
    let mut words = 0;
    for ((a, b), d) in a.zip(b).zip(d) {
        c[0] = _mm_crc32_u64(c[0], u64::from_le_bytes(a.try_into().unwrap()));
        c[1] = _mm_crc32_u64(c[1], u64::from_le_bytes(b.try_into().unwrap()));
        c[2] = _mm_crc32_u64(c[2], u64::from_le_bytes(d.try_into().unwrap()));
        words += 1;
    }
    let mut out = [0u32; 3];
    for k in 0..3 {
        out[k] = !crc32c_register_sse42(c[k] as u32, &data[k][words * 8..]);
    }
    out
}

/// Runs the `crc32` instruction over `data` from register state `crc`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
fn crc32c_register_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut c = u64::from(crc);
    let words = data.chunks_exact(8);
    let tail = words.remainder();
    for w in words {
        c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().unwrap()));
    }
    let mut c = c as u32;
    for &byte in tail {
        c = _mm_crc32_u8(c, byte);
    }
    c
}

/// SHA-1 of the concatenated parts.
pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The master ("ledger") key a bookie stores: SHA1("ledger" ‖ password) (§1.4).
pub fn master_key(password: &[u8]) -> [u8; 20] {
    sha1(&[b"ledger", password])
}

/// The HMAC-SHA1 key: SHA1("mac" ‖ password) (§1.3).
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
                let mut h = crc32fast::Hasher::new();
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

    #[test]
    fn fast_paths_match_reference_at_every_length_and_alignment() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let data = rng.bytes(5000);
        // Every length up to 600 crosses the inline, small and folding paths;
        // offsets 0..64 change the alignment the SIMD loops see.
        for len in (0..600).chain([1023, 1024, 1025, 2047, 4096, 4097, 4999 - 63]) {
            let off = rng.below(64);
            let d = &data[off..off + len];
            let value = if len % 3 == 0 { 0 } else { rng.next() as u32 };
            assert_eq!(crc32c_append(value, d), crc_reference(CASTAGNOLI, value, d), "crc32c len {len}");
            assert_eq!(crc32_append(value, d), crc_reference(IEEE, value, d), "crc32 len {len}");
            assert_eq!(crc32c(d), crc_reference(CASTAGNOLI, 0, d));
            assert_eq!(crc32(d), crc_reference(IEEE, 0, d));
        }
    }

    #[test]
    fn resume_splits_anywhere() {
        let mut rng = Rng(42);
        let data = rng.bytes(3000);
        let whole_c = crc32c(&data);
        let whole = crc32(&data);
        for split in (0..=3000).step_by(37).chain([255, 256, 257, 2999, 3000]) {
            let (a, b) = data.split_at(split);
            assert_eq!(crc32c_append(crc32c(a), b), whole_c, "split {split}");
            assert_eq!(crc32_append(crc32(a), b), whole, "split {split}");
        }
    }

    #[test]
    fn many_matches_one_at_a_time() {
        let mut rng = Rng(7);
        for round in 0..200 {
            let count = rng.below(20);
            // Mostly short messages (the interleaved path), some long ones and
            // some of unequal length in one group of three.
            let messages: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let len = match rng.below(10) {
                        0 => rng.below(2000),
                        1 => 0,
                        _ => rng.below(300),
                    };
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
        for round in 0..200 {
            let count = rng.below(20);
            let heads: Vec<Vec<u8>> = (0..count).map(|_| { let n = [0, 7, 32, 41][rng.below(4)]; rng.bytes(n) }).collect();
            let tails: Vec<Vec<u8>> = (0..count)
                .map(|_| { let n = if rng.below(8) == 0 { rng.below(2000) } else { rng.below(300) }; rng.bytes(n) })
                .collect();
            let mut out = vec![0u32; count];
            crc32c_concat_many(&mut out, &heads.iter().map(|h| h.as_slice()).collect::<Vec<_>>(),
                &tails.iter().map(|t| t.as_slice()).collect::<Vec<_>>());
            for i in 0..count {
                assert_eq!(out[i], crc_reference(CASTAGNOLI, 0, &[heads[i].as_slice(), &tails[i]].concat()), "round {round} message {i}");
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
        // FORMATS.md §13: the resume vector for the ledger 1 / entry 0 header.
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
