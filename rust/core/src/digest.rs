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

/// CRC-32C (Castagnoli) of `data`, resumed from a finalized CRC `value`
/// (BookKeeper's `resume` semantics: `crc32c_append(crc32c(a), b) == crc32c(a ‖ b)`).
#[inline]
pub fn crc32c_append(value: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(value, data)
}

#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
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
