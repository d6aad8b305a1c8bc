//! Choosing the digest type of each entry, for single entries and for the
//! readers that walk many (batches, entry logs, journals).
//!
//! A V2 entry names its digest type in its flags byte. A V1 entry does not: the
//! ledger's metadata does, and a reader without the metadata has to infer it. Under
//! [`DigestPolicy::Auto`] the first V1 entry of each ledger is tried against the
//! algorithms that can be recognised (CRC32C, CRC32, and HMAC when a password is
//! given); the type that verifies is remembered for the ledger, so later entries of
//! that ledger are checked against it and a damaged one is reported as a digest
//! mismatch rather than guessed again.
//!
//! DUMMY stores no digest, so a DUMMY ledger can be named ([`DigestPolicy::Fixed`])
//! but never inferred: under `Auto` its V1 entries are reported as "no digest type
//! verifies". Neither can an HMAC ledger whose password is empty, since an empty
//! password means "no password given".

use std::collections::HashMap;

use crate::digest::{DigestType, Digester};
use crate::entry::{decode_entry, parse_header, Entry, EntryFormat, V1_HEADER_LEN};
use crate::error::{Error, ErrorKind, Result};

/// How the digest type of an entry is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DigestPolicy {
    /// Every entry uses this type; a V2 entry that declares another one is a
    /// `DigestTypeMismatch`.
    Fixed(DigestType),
    /// V2 entries use the type they declare; V1 entries are inferred per ledger.
    Auto,
}

impl DigestPolicy {
    /// `None` or `"auto"` is [`DigestPolicy::Auto`]; anything else must name a digest type.
    pub fn from_name(name: Option<&str>) -> Result<Self> {
        match name {
            None => Ok(DigestPolicy::Auto),
            Some(n) if n.eq_ignore_ascii_case("auto") => Ok(DigestPolicy::Auto),
            Some(n) => DigestType::from_name(n).map(DigestPolicy::Fixed),
        }
    }

    /// The named type, if the policy names one.
    pub fn fixed(self) -> Option<DigestType> {
        match self {
            DigestPolicy::Fixed(dt) => Some(dt),
            DigestPolicy::Auto => None,
        }
    }
}

/// What to check once an entry is framed. The default checks nothing; ids are
/// checked whenever they are given, after the digest (BookKeeper's order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryChecks {
    pub digest: bool,
    pub ledger_id: Option<i64>,
    pub entry_id: Option<i64>,
}

impl EntryChecks {
    /// Check the digest only (no expected ids).
    pub const DIGEST: EntryChecks = EntryChecks { digest: true, ledger_id: None, entry_id: None };
}

/// An entry framed under its digest type, with the digest verdict when one was computed.
#[derive(Debug, Clone, Copy)]
pub struct ResolvedEntry<'a> {
    pub entry: Entry<'a>,
    /// `Some(ok)` when the digest was computed (asked for, or needed to infer the
    /// type); `None` when it was not checked.
    pub digest_ok: Option<bool>,
}

impl ResolvedEntry<'_> {
    /// Whether [`check`](Self::check) would pass, without building an error.
    #[inline(always)]
    pub fn passes(&self, checks: EntryChecks) -> bool {
        let h = &self.entry.header;
        self.digest_ok != Some(false)
            && checks.ledger_id.is_none_or(|l| l == h.ledger_id)
            && checks.entry_id.is_none_or(|e| e == h.entry_id)
    }

    /// The rest of BookKeeper's verification once framing (the length check) has
    /// passed: digest, then ledger id, then entry id, ids checked only when given.
    #[inline]
    pub fn check(&self, ledger_id: Option<i64>, entry_id: Option<i64>) -> Result<()> {
        if self.digest_ok == Some(false) {
            return Err(self.entry.digest_mismatch());
        }
        self.entry.check_ids(ledger_id, entry_id)
    }
}

/// Chooses and checks digest types entry by entry, under one policy and password.
///
/// Keeps one keyed [`Digester`] per type and, under `Auto`, the type found for each
/// V1 ledger. A V1 ledger id is never negative and has no scope, so the 64-bit id
/// is the whole key.
#[derive(Debug, Clone)]
pub struct DigestResolver {
    policy: DigestPolicy,
    /// Indexed by proto number - 1.
    digesters: [Digester; 4],
    /// HMAC is a candidate for inference only when a password was given.
    infer_hmac: bool,
    inferred: HashMap<i64, DigestType>,
    /// A direct-mapped cache in front of `inferred` (entry logs interleave a few
    /// ledgers; hashing each lookup with SipHash would cost as much as the CRC).
    /// Empty until the first inference; a slot with a negative id is vacant, since
    /// V1 ledger ids never are.
    recent: Vec<(i64, DigestType)>,
}

const RECENT_SLOTS: usize = 256;

/// Fibonacci hashing of the ledger id onto a cache slot.
#[inline(always)]
fn recent_slot(ledger_id: i64) -> usize {
    ((ledger_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

impl DigestResolver {
    /// `password` keys HMAC; an empty one also keeps HMAC out of inference.
    pub fn new(policy: DigestPolicy, password: &[u8]) -> Self {
        DigestResolver {
            policy,
            digesters: DigestType::ALL.map(|dt| Digester::new(dt, password)),
            infer_hmac: !password.is_empty(),
            inferred: HashMap::new(),
            recent: Vec::new(),
        }
    }

    pub fn policy(&self) -> DigestPolicy {
        self.policy
    }

    /// The keyed digester for a type.
    #[inline]
    pub fn digester(&self, digest_type: DigestType) -> &Digester {
        &self.digesters[digest_type.proto_value() as usize - 1]
    }

    /// The type inferred so far for a V1 ledger, if any.
    pub fn inferred_type(&self, ledger_id: i64) -> Option<DigestType> {
        self.inferred.get(&ledger_id).copied()
    }

    /// Frames `bytes` under the digest type the policy picks, and computes its digest
    /// when `verify` is set. A digest that does not match is not an error here
    /// (`digest_ok` is `Some(false)`, so a row can still show the entry); framing
    /// failures are, and so is a V1 entry under `Auto` for which no type verifies
    /// (`DigestMismatch`, at the offset where its digest starts).
    #[inline]
    pub fn resolve<'a>(&mut self, bytes: &'a [u8], verify: bool) -> Result<ResolvedEntry<'a>> {
        let digest_type = match self.policy {
            DigestPolicy::Fixed(dt) => Some(dt),
            DigestPolicy::Auto => match v1_ledger_id(bytes) {
                Some(ledger_id) => match self.remembered(ledger_id) {
                    Some(dt) => Some(dt),
                    None => return self.infer(bytes),
                },
                // V2 names its own type; anything else is for framing to report.
                None => None,
            },
        };
        let entry = Entry::frame(bytes, digest_type).ok_or_else(|| framing_error(bytes, digest_type))?;
        let digest_ok = verify.then(|| entry.digest_matches(self.digester(entry.digest_type)));
        Ok(ResolvedEntry { entry, digest_ok })
    }

    /// [`resolve`](Self::resolve) for the common case, building no error: `None`
    /// when framing fails or the entry's ledger still needs its type inferred, and
    /// `resolve` then does the work and says why.
    #[inline(always)]
    pub fn try_resolve<'a>(&mut self, bytes: &'a [u8], verify: bool) -> Option<ResolvedEntry<'a>> {
        let digest_type = match self.policy {
            DigestPolicy::Fixed(dt) => Some(dt),
            DigestPolicy::Auto => match v1_ledger_id(bytes) {
                Some(ledger_id) => Some(self.remembered(ledger_id)?),
                None => None,
            },
        };
        let entry = Entry::frame(bytes, digest_type)?;
        let digest_ok = verify.then(|| entry.digest_matches(self.digester(entry.digest_type)));
        Some(ResolvedEntry { entry, digest_ok })
    }

    /// The type found so far for a V1 ledger under `Auto`, through the cache in
    /// front of the map (for loops that frame entries themselves).
    #[inline]
    pub(crate) fn remembered_v1_type(&mut self, ledger_id: i64) -> Option<DigestType> {
        self.remembered(ledger_id)
    }

    #[inline]
    fn remembered(&mut self, ledger_id: i64) -> Option<DigestType> {
        match self.recent.get(recent_slot(ledger_id)) {
            Some(&(lid, dt)) if lid == ledger_id => Some(dt),
            _ => {
                let dt = self.inferred.get(&ledger_id).copied()?;
                self.recent[recent_slot(ledger_id)] = (ledger_id, dt);
                Some(dt)
            }
        }
    }

    fn remember(&mut self, ledger_id: i64, dt: DigestType) {
        self.inferred.insert(ledger_id, dt);
        if self.recent.is_empty() {
            self.recent = vec![(-1, DigestType::Dummy); RECENT_SLOTS];
        }
        self.recent[recent_slot(ledger_id)] = (ledger_id, dt);
    }

    /// First V1 entry of a ledger under `Auto`: the first candidate that verifies wins
    /// and is remembered.
    fn infer<'a>(&mut self, bytes: &'a [u8]) -> Result<ResolvedEntry<'a>> {
        // Shorter than the header is truncation whatever the type.
        parse_header(bytes)?;
        let candidates: &[DigestType] = if self.infer_hmac {
            &[DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac]
        } else {
            &[DigestType::Crc32c, DigestType::Crc32]
        };
        for &dt in candidates {
            // Too short for this type's digest: not this type.
            if let Ok(entry) = decode_entry(bytes, Some(dt)) {
                if entry.digest_matches(self.digester(dt)) {
                    debug_assert_eq!(entry.header.format, EntryFormat::V1);
                    self.remember(entry.header.ledger_id, dt);
                    return Ok(ResolvedEntry { entry, digest_ok: Some(true) });
                }
            }
        }
        let tried = candidates.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        Err(Error::new(
            ErrorKind::DigestMismatch,
            V1_HEADER_LEN as u64,
            format!(
                "no digest type verifies this V1 entry (tried {tried}{}); name the digest type to read a DUMMY ledger",
                if self.infer_hmac { "" } else { "; give the password to try hmac" }
            ),
        ))
    }
}

/// The ledger id of a V1 entry, when its first 8 bytes are there.
#[inline(always)]
fn v1_ledger_id(bytes: &[u8]) -> Option<i64> {
    let head: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    (EntryFormat::detect(head[0]) == EntryFormat::V1).then(|| i64::from_be_bytes(head))
}

/// Why [`Entry::frame`] refused `bytes`, from the erroring decoder (cold path).
#[cold]
#[inline(never)]
fn framing_error(bytes: &[u8], digest_type: Option<DigestType>) -> Error {
    match decode_entry(bytes, digest_type) {
        Err(e) => e,
        Ok(_) => Error::corrupt(0, "entry refused by the fast framing path only"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{encode_entry, EntryHeader};

    fn entry(dt: DigestType, pw: &[u8], ledger: i64, id: i64, payload: &[u8]) -> Vec<u8> {
        encode_entry(&EntryHeader::new(0, ledger, id, id - 1, 0), payload, &Digester::new(dt, pw)).unwrap()
    }

    #[test]
    fn policy_names() {
        assert_eq!(DigestPolicy::from_name(None).unwrap(), DigestPolicy::Auto);
        assert_eq!(DigestPolicy::from_name(Some("AUTO")).unwrap(), DigestPolicy::Auto);
        assert_eq!(DigestPolicy::from_name(Some("crc32c")).unwrap(), DigestPolicy::Fixed(DigestType::Crc32c));
        assert_eq!(DigestPolicy::from_name(Some("md5")).unwrap_err().kind, ErrorKind::InvalidArgument);
    }

    #[test]
    fn auto_infers_each_v1_type_and_remembers_it_per_ledger() {
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"secret");
        for (ledger, dt) in [(1, DigestType::Crc32c), (2, DigestType::Crc32), (3, DigestType::Hmac)] {
            let bytes = entry(dt, b"secret", ledger, 0, b"payload");
            let got = r.resolve(&bytes, false).unwrap();
            assert_eq!(got.entry.digest_type, dt);
            assert_eq!(got.digest_ok, Some(true), "inference computes the digest");
            assert_eq!(r.inferred_type(ledger), Some(dt));
        }
        // A later entry of ledger 2 is framed as CRC32 without guessing, and checked when asked.
        let good = entry(DigestType::Crc32, b"", 2, 1, b"more");
        assert_eq!(r.resolve(&good, false).unwrap().digest_ok, None);
        assert_eq!(r.resolve(&good, true).unwrap().digest_ok, Some(true));
    }

    #[test]
    fn a_damaged_entry_of_a_known_ledger_is_a_mismatch_not_a_new_guess() {
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        r.resolve(&entry(DigestType::Crc32c, b"", 5, 0, b"a"), true).unwrap();
        // A CRC32 entry claiming ledger 5 would verify as CRC32 if guessed afresh.
        let other = entry(DigestType::Crc32, b"", 5, 1, b"b");
        let got = r.resolve(&other, true).unwrap();
        assert_eq!(got.entry.digest_type, DigestType::Crc32c);
        assert_eq!(got.digest_ok, Some(false));
        let err = got.check(None, None).unwrap_err();
        assert_eq!((err.kind, err.offset), (ErrorKind::DigestMismatch, 32));
        assert_eq!(r.inferred_type(5), Some(DigestType::Crc32c));
    }

    #[test]
    fn nothing_verifies_for_dummy_or_damage_and_nothing_is_remembered() {
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        let dummy = entry(DigestType::Dummy, b"", 9, 0, b"payload bytes");
        let err = r.resolve(&dummy, false).unwrap_err();
        assert_eq!((err.kind, err.offset), (ErrorKind::DigestMismatch, 32));
        assert!(err.detail.contains("no digest type verifies"), "{}", err.detail);
        assert!(err.detail.contains("password"), "{}", err.detail);
        assert_eq!(r.inferred_type(9), None);
        // Named, DUMMY reads fine.
        let mut fixed = DigestResolver::new(DigestPolicy::Fixed(DigestType::Dummy), b"");
        let got = fixed.resolve(&dummy, true).unwrap();
        assert_eq!((got.entry.payload(), got.digest_ok), (&b"payload bytes"[..], Some(true)));
    }

    #[test]
    fn hmac_is_inferred_only_with_a_password() {
        let bytes = entry(DigestType::Hmac, b"", 4, 0, b"x");
        assert!(DigestResolver::new(DigestPolicy::Auto, b"").resolve(&bytes, true).is_err());
        let wrong = DigestResolver::new(DigestPolicy::Auto, b"other").resolve(&bytes, true).unwrap_err();
        assert_eq!(wrong.kind, ErrorKind::DigestMismatch);
        let named = DigestResolver::new(DigestPolicy::Fixed(DigestType::Hmac), b"").resolve(&bytes, true).unwrap();
        assert_eq!(named.digest_ok, Some(true));
    }

    #[test]
    fn v2_entries_use_their_flags_and_a_fixed_type_must_agree() {
        let d = Digester::new(DigestType::Crc32, b"");
        let bytes = encode_entry(&EntryHeader::new(3, -7, 1, 0, 2), b"hi", &d).unwrap();
        let mut auto = DigestResolver::new(DigestPolicy::Auto, b"");
        let got = auto.resolve(&bytes, true).unwrap();
        assert_eq!((got.entry.digest_type, got.digest_ok), (DigestType::Crc32, Some(true)));
        assert_eq!(auto.inferred_type(-7), None, "V2 types are declared, not inferred");
        let mut fixed = DigestResolver::new(DigestPolicy::Fixed(DigestType::Crc32c), b"");
        assert_eq!(fixed.resolve(&bytes, true).unwrap_err().kind, ErrorKind::DigestTypeMismatch);
    }

    #[test]
    fn many_interleaved_ledgers_are_remembered_past_the_cache() {
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        let types = [DigestType::Crc32c, DigestType::Crc32];
        // More ledgers than cache slots, so some lookups go to the map.
        for round in 0..2 {
            for ledger in 0..600i64 {
                let dt = types[(ledger % 2) as usize];
                let bytes = entry(dt, b"", ledger, round, b"x");
                let got = r.resolve(&bytes, true).unwrap();
                assert_eq!((got.entry.digest_type, got.digest_ok), (dt, Some(true)), "ledger {ledger}");
            }
        }
        // A later CRC32 entry of a CRC32C ledger is checked as CRC32C whichever path found it.
        for ledger in (0..600i64).step_by(2) {
            let bytes = entry(DigestType::Crc32, b"", ledger, 9, b"y");
            let got = r.resolve(&bytes, true).unwrap();
            assert_eq!((got.entry.digest_type, got.digest_ok), (DigestType::Crc32c, Some(false)));
        }
    }

    #[test]
    fn check_follows_bookkeeper_order() {
        let bytes = entry(DigestType::Crc32c, b"", 1, 2, b"p");
        let mut r = DigestResolver::new(DigestPolicy::Fixed(DigestType::Crc32c), b"");
        let got = r.resolve(&bytes, true).unwrap();
        got.check(Some(1), Some(2)).unwrap();
        let e = got.check(Some(8), Some(9)).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::IdMismatch, 0));
        let e = got.check(Some(1), Some(9)).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::IdMismatch, 8));
        let mut bad = bytes.clone();
        bad[36] ^= 1;
        let got = r.resolve(&bad, true).unwrap();
        assert_eq!(got.check(Some(8), None).unwrap_err().kind, ErrorKind::DigestMismatch);
    }

    #[test]
    fn framing_errors_pass_through() {
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        for (bytes, kind) in [
            (vec![], ErrorKind::Truncated),
            (vec![0u8; 7], ErrorKind::Truncated),
            (vec![0u8; 31], ErrorKind::Truncated),
            (vec![0x90u8; 60], ErrorKind::UnsupportedVersion),
            (vec![0xA7u8; 60], ErrorKind::Corrupt),
        ] {
            assert_eq!(r.resolve(&bytes, true).unwrap_err().kind, kind, "{bytes:?}");
        }
    }
}
