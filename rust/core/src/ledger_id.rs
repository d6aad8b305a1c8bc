//! 128-bit ledger ids (docs/formats.md#128-bit-ledger-ids): the value, its qualified name and UUID
//! spelling, the index file path and the DbLedgerStorage location key.
//!
//! Both halves are Java longs. The 128-bit value reads them as unsigned bit
//! patterns, `(scope as u64) << 64 | (ledger as u64)`, so ordering, names and
//! UUIDs all agree.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::bytes::i64_unchecked;
use crate::error::{Error, ErrorKind, Result};

/// A ledger id: `scope_id` is the most significant 64 bits, `ledger_id` the least.
/// Scope 0 is every ledger BookKeeper writes today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LedgerId {
    pub scope_id: i64,
    pub ledger_id: i64,
}

/// Length of a qualified name: 128 bits as hex digits.
pub const QUALIFIED_NAME_LEN: usize = 32;
/// Length of the 8-4-4-4-12 UUID spelling.
const UUID_STRING_LEN: usize = 36;
/// Where the UUID spelling puts its hyphens.
const UUID_HYPHENS: [usize; 4] = [8, 13, 18, 23];

/// Key length in the scope-0 location index: `ledgerId ‖ entryId`.
pub const LOCATION_KEY_LEN: usize = 16;
/// Key length in the scoped location index: `scope ‖ ledgerId ‖ entryId`.
pub const SCOPED_LOCATION_KEY_LEN: usize = 24;

impl LedgerId {
    #[inline]
    pub const fn new(scope_id: i64, ledger_id: i64) -> Self {
        LedgerId { scope_id, ledger_id }
    }

    /// A 64-bit ledger id as BookKeeper has them (scope 0).
    #[inline]
    pub const fn unscoped(ledger_id: i64) -> Self {
        LedgerId { scope_id: 0, ledger_id }
    }

    /// The 128-bit value.
    #[inline]
    pub const fn value(self) -> u128 {
        ((self.scope_id as u64 as u128) << 64) | (self.ledger_id as u64 as u128)
    }

    #[inline]
    pub const fn from_value(value: u128) -> Self {
        LedgerId { scope_id: (value >> 64) as u64 as i64, ledger_id: value as u64 as i64 }
    }

    /// The value as 16 big-endian bytes, which is also the UUID's byte form
    /// (most significant bits = scope, least significant bits = ledger id).
    #[inline]
    pub const fn to_uuid_bytes(self) -> [u8; 16] {
        self.value().to_be_bytes()
    }

    #[inline]
    pub const fn from_uuid_bytes(bytes: [u8; 16]) -> Self {
        Self::from_value(u128::from_be_bytes(bytes))
    }

    /// `ledgerQualifiedName`: exactly 32 lowercase hex digits, zero-padded.
    pub fn qualified_name(self) -> String {
        format!("{:032x}", self.value())
    }

    /// The 8-4-4-4-12 lowercase UUID spelling of the same value.
    pub fn uuid_string(self) -> String {
        let h = self.qualified_name();
        format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
    }

    /// Parses 32 hex digits (either case) or the 8-4-4-4-12 UUID spelling, and
    /// nothing else: no prefix, sign, braces or surrounding space. The error
    /// names the offset of the first offending character.
    pub fn from_qualified_name(name: &str) -> Result<Self> {
        let bytes = name.as_bytes();
        let is_uuid = match bytes.len() {
            QUALIFIED_NAME_LEN => false,
            UUID_STRING_LEN => true,
            n => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    0,
                    format!(
                        "a ledger qualified name is 32 hex digits or a 36-character UUID, got {n} characters"
                    ),
                ))
            }
        };
        let mut value: u128 = 0;
        for (i, &c) in bytes.iter().enumerate() {
            if is_uuid && UUID_HYPHENS.contains(&i) {
                if c != b'-' {
                    return Err(bad_char(i, c, "'-'"));
                }
                continue;
            }
            let digit = (c as char).to_digit(16).ok_or_else(|| bad_char(i, c, "a hex digit"))?;
            value = (value << 4) | digit as u128;
        }
        Ok(Self::from_value(value))
    }

    /// The index file of this ledger, relative to `<indexDir>/current`
    /// (both layouts in docs/formats.md#index-files). Every component
    /// is Java `toHexString` of an unsigned value: lowercase, unpadded.
    pub fn index_path(self) -> String {
        let id = self.ledger_id as u64;
        if self.scope_id == 0 {
            format!("{:x}/{:x}/{:x}.idx", (id >> 8) & 0xff, id & 0xff, id)
        } else {
            let scope = self.scope_id as u64;
            format!(
                "{:x}/{:x}/{:x}/{:x}/{:x}.idx",
                scope >> 32,
                scope & 0xffff_ffff,
                id >> 32,
                id & 0xffff_ffff,
                id
            )
        }
    }

    /// The DbLedgerStorage entry-location key for `entry_id` (docs/formats.md#dbledgerstorage-indexes):
    /// 16 bytes for scope 0 (what BookKeeper writes), 24 bytes otherwise.
    pub fn location_key(self, entry_id: i64) -> LocationKey {
        let mut bytes = [0u8; SCOPED_LOCATION_KEY_LEN];
        let mut at = 0;
        if self.scope_id != 0 {
            bytes[..8].copy_from_slice(&self.scope_id.to_be_bytes());
            at = 8;
        }
        bytes[at..at + 8].copy_from_slice(&self.ledger_id.to_be_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&entry_id.to_be_bytes());
        LocationKey { bytes, len: (at + 16) as u8 }
    }

    /// Reads a location key back into the ledger id and entry id. A 24-byte key
    /// with scope 0 is refused: that key lives in the 16-byte index, so the two
    /// spellings never name the same entry.
    pub fn parse_location_key(key: &[u8]) -> Result<(LedgerId, i64)> {
        match key.len() {
            LOCATION_KEY_LEN => Ok((LedgerId::unscoped(i64_unchecked(key, 0)), i64_unchecked(key, 8))),
            SCOPED_LOCATION_KEY_LEN => {
                let scope_id = i64_unchecked(key, 0);
                if scope_id == 0 {
                    return Err(Error::corrupt(
                        0,
                        "24-byte location key with scope 0 (scope-0 keys are 16 bytes)",
                    ));
                }
                Ok((LedgerId::new(scope_id, i64_unchecked(key, 8)), i64_unchecked(key, 16)))
            }
            n => Err(Error::corrupt(
                0,
                format!("a location key is 16 or 24 bytes, got {n}"),
            )),
        }
    }
}

fn bad_char(offset: usize, c: u8, expected: &str) -> Error {
    let found = if c.is_ascii() { format!("{:?}", c as char) } else { format!("byte 0x{c:02x}") };
    Error::new(
        ErrorKind::InvalidArgument,
        offset as u64,
        format!("ledger qualified name has {found} at position {offset} where {expected} belongs"),
    )
}

/// Orders by the 128-bit value, the order of qualified names and UUIDs.
impl Ord for LedgerId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value().cmp(&other.value())
    }
}

impl PartialOrd for LedgerId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Displays the qualified name.
impl fmt::Display for LedgerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.value())
    }
}

impl FromStr for LedgerId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        LedgerId::from_qualified_name(s)
    }
}

/// A DbLedgerStorage location key, 16 or 24 bytes, kept inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocationKey {
    bytes: [u8; SCOPED_LOCATION_KEY_LEN],
    len: u8,
}

impl LocationKey {
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl fmt::Debug for LocationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values covering the sign boundaries and every byte pattern.
    fn sample_halves() -> Vec<i64> {
        let mut v = vec![0, 1, -1, 5, 0x1234, 0xABCDEF, i64::MIN, i64::MAX, i64::MIN + 1, 0x8000_0000, -0x1_0000_0000];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x as i64);
        }
        v
    }

    #[test]
    fn value_packs_halves_as_unsigned() {
        assert_eq!(LedgerId::new(0, -1).value(), u64::MAX as u128);
        assert_eq!(LedgerId::new(-1, 0).value(), (u64::MAX as u128) << 64);
        assert_eq!(LedgerId::new(1, 2).value(), (1u128 << 64) | 2);
        for s in sample_halves() {
            for l in sample_halves() {
                let id = LedgerId::new(s, l);
                assert_eq!(LedgerId::from_value(id.value()), id);
                assert_eq!(LedgerId::from_uuid_bytes(id.to_uuid_bytes()), id);
            }
        }
    }

    #[test]
    fn qualified_name_round_trips_in_both_spellings() {
        for s in sample_halves() {
            for l in sample_halves() {
                let id = LedgerId::new(s, l);
                let name = id.qualified_name();
                assert_eq!(name.len(), 32);
                assert!(name.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
                assert_eq!(LedgerId::from_qualified_name(&name).unwrap(), id);
                assert_eq!(LedgerId::from_qualified_name(&name.to_uppercase()).unwrap(), id);
                assert_eq!(LedgerId::from_qualified_name(&id.uuid_string()).unwrap(), id);
                assert_eq!(id.to_string().parse::<LedgerId>().unwrap(), id);
            }
        }
        assert_eq!(LedgerId::new(0, 5).qualified_name(), "00000000000000000000000000000005");
        assert_eq!(LedgerId::new(1, -1).qualified_name(), "0000000000000001ffffffffffffffff");
        assert_eq!(
            LedgerId::new(0x0123_4567_89ab_cdef, -0x0123_4567_89ab_cdf0).uuid_string(),
            "01234567-89ab-cdef-fedc-ba9876543210"
        );
    }

    #[test]
    fn qualified_name_rejects_everything_else_with_offset() {
        let cases = [
            ("", 0),
            ("5", 0),
            ("0x000000000000000000000000000005", 1),
            ("+0000000000000000000000000000005", 0),
            ("0000000000000000000000000000000g", 31),
            (" 0000000000000000000000000000005", 0),
            ("00000000-0000-0000-0000-00000000000", 0),
            ("00000000-0000-0000-0000_000000000005", 23),
            ("000000000-000-0000-0000-000000000005", 8),
            ("{0000000-0000-0000-0000-000000000005", 0),
            ("00000000000000000000000000000000005", 0),
            ("000000000000000000000000000000\u{e9}", 30),
        ];
        for (name, offset) in cases {
            let e = LedgerId::from_qualified_name(name).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "{name:?}");
            assert_eq!(e.offset, offset, "{name:?}: {e}");
        }
    }

    #[test]
    fn uuid_halves_follow_msb_lsb() {
        // A random (version 4, RFC 4122 variant) UUID: the variant bits make the low half negative.
        let id = LedgerId::from_qualified_name("f47ac10b-58cc-4372-a567-0e02b2c3d479").unwrap();
        assert_eq!(id.scope_id, 0xf47ac10b58cc4372u64 as i64);
        assert_eq!(id.ledger_id, 0xa5670e02b2c3d479u64 as i64);
        assert!(id.ledger_id < 0);
    }

    #[test]
    fn index_paths_scope_zero() {
        assert_eq!(LedgerId::unscoped(5).index_path(), "0/5/5.idx");
        assert_eq!(LedgerId::unscoped(0x1234).index_path(), "12/34/1234.idx");
        assert_eq!(LedgerId::unscoped(0xABCDEF).index_path(), "cd/ef/abcdef.idx");
        assert_eq!(LedgerId::unscoped(3).index_path(), "0/3/3.idx");
        assert_eq!(LedgerId::unscoped(2147483655).index_path(), "0/7/80000007.idx");
        assert_eq!(LedgerId::unscoped(0).index_path(), "0/0/0.idx");
        // Negative ids: Long.toHexString is unsigned, the directories take bits 8-15 and 0-7.
        assert_eq!(LedgerId::unscoped(-1).index_path(), "ff/ff/ffffffffffffffff.idx");
        assert_eq!(LedgerId::unscoped(i64::MIN).index_path(), "0/0/8000000000000000.idx");
    }

    #[test]
    fn index_paths_with_scope() {
        assert_eq!(LedgerId::new(1, 5).index_path(), "0/1/0/5/5.idx");
        assert_eq!(
            LedgerId::new(0x0123_4567_89ab_cdef, 0x0000_00ff_0000_0a00).index_path(),
            "1234567/89abcdef/ff/a00/ff00000a00.idx"
        );
        assert_eq!(
            LedgerId::new(-1, -2).index_path(),
            "ffffffff/ffffffff/ffffffff/fffffffe/fffffffffffffffe.idx"
        );
    }

    /// Golden index files sit at the path this computes (the manifest names them).
    #[test]
    #[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
    fn index_paths_match_golden_corpus() {
        let root = std::env::var_os("BKCODEC_GOLDEN").map(std::path::PathBuf::from).unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden")
        });
        let manifest = root.join("index/index.jsonl");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("golden corpus expected at {}: {e}", manifest.display()));
        let mut checked = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let id: i64 = json_field(line, "ledger_id").parse().unwrap();
            let path = json_field(line, "path");
            assert_eq!(format!("ledgers/current/{}", LedgerId::unscoped(id).index_path()), path);
            assert!(root.join("index").join(&path).is_file(), "{path}");
            checked += 1;
        }
        assert!(checked >= 3);
    }

    /// The raw text of a top-level scalar field in a JSON line (enough for ids and paths).
    fn json_field(line: &str, name: &str) -> String {
        let key = format!("\"{name}\":");
        let start = line.find(&key).unwrap() + key.len();
        let rest = line[start..].trim_start();
        if let Some(s) = rest.strip_prefix('"') {
            s[..s.find('"').unwrap()].to_string()
        } else {
            rest[..rest.find([',', '}']).unwrap()].trim().to_string()
        }
    }

    #[test]
    fn location_keys() {
        let k = LedgerId::unscoped(1).location_key(2);
        assert_eq!(k.as_bytes(), &[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]);
        let k = LedgerId::new(-1, 1).location_key(-1);
        assert_eq!(format!("{k:?}"), "ffffffffffffffff0000000000000001ffffffffffffffff");
        for s in sample_halves() {
            for l in sample_halves().into_iter().take(8) {
                let id = LedgerId::new(s, l);
                let key = id.location_key(l ^ 0x55);
                assert_eq!(key.as_bytes().len(), if s == 0 { 16 } else { 24 });
                assert_eq!(LedgerId::parse_location_key(key.as_bytes()).unwrap(), (id, l ^ 0x55));
            }
        }
        for n in [0, 8, 15, 17, 23, 25, 32] {
            let e = LedgerId::parse_location_key(&vec![1u8; n]).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Corrupt, "{n}");
        }
        assert_eq!(LedgerId::parse_location_key(&[0u8; 24]).unwrap_err().kind, ErrorKind::Corrupt);
    }

    #[test]
    fn ordering_is_by_value() {
        let mut ids = [LedgerId::new(-1, 0), LedgerId::new(0, -1), LedgerId::new(0, 1), LedgerId::new(1, i64::MIN)];
        ids.sort();
        let names: Vec<_> = ids.iter().map(|i| i.qualified_name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(ids[0], LedgerId::new(0, 1));
        assert_eq!(ids[3], LedgerId::new(-1, 0));
    }
}
