//! Digest settings for readers of files that mix ledgers (entry logs, journals).
//!
//! Such files do not record digest types. A reader either infers each ledger's type
//! ([`DigestPolicy::Auto`]) or is told: a default for every ledger, and per-ledger
//! settings from ledger metadata ([`LedgerDigestInfo`]), so that DUMMY ledgers and
//! HMAC ledgers with their own passwords verify instead of being guessed at.

use std::collections::HashMap;

use crate::digest_policy::DigestPolicy;
use crate::metadata::LedgerDigestInfo;

/// A default policy and password, and the settings of the ledgers whose metadata is known.
#[derive(Debug, Clone)]
pub struct LedgerDigestSettings {
    default_policy: DigestPolicy,
    default_password: Vec<u8>,
    /// Whether the default password was given, even empty (the empty password is a
    /// real BookKeeper password: HMAC is then checked with it), or is only absent.
    default_password_given: bool,
    ledgers: HashMap<i64, LedgerDigestInfo>,
}

impl Default for LedgerDigestSettings {
    fn default() -> Self {
        LedgerDigestSettings::new(DigestPolicy::Auto, b"")
    }
}

impl LedgerDigestSettings {
    /// Every ledger under `policy`, HMAC keyed with `password`.
    pub fn new(policy: DigestPolicy, password: &[u8]) -> Self {
        LedgerDigestSettings {
            default_policy: policy,
            default_password: password.to_vec(),
            default_password_given: !password.is_empty(),
            ledgers: HashMap::new(),
        }
    }

    /// Sets one ledger's digest type and password (from its metadata). Metadata that
    /// records no digest type (format 1) leaves the ledger under the default policy,
    /// keyed with its password when it has one.
    pub fn insert(&mut self, ledger_id: i64, info: LedgerDigestInfo) {
        self.ledgers.insert(ledger_id, info);
    }

    pub fn with_ledger(mut self, ledger_id: i64, info: LedgerDigestInfo) -> Self {
        self.insert(ledger_id, info);
        self
    }

    /// Says whether the default password was given by the caller, even empty (then
    /// HMAC entries are checked with it), or is absent (HMAC entries that it does not
    /// verify are unchecked). [`LedgerDigestSettings::new`] takes an empty one as absent.
    pub fn with_password_given(mut self, given: bool) -> Self {
        self.default_password_given = given || !self.default_password.is_empty();
        self
    }

    /// Whether the default password was given (see [`Self::with_password_given`]).
    pub fn default_password_given(&self) -> bool {
        self.default_password_given
    }

    pub fn default_policy(&self) -> DigestPolicy {
        self.default_policy
    }

    /// The policy and password of ledgers without settings of their own.
    pub fn default_setting(&self) -> (DigestPolicy, &[u8]) {
        (self.default_policy, &self.default_password)
    }

    /// Each ledger with settings of its own: its id, policy and password.
    pub fn ledger_settings(&self) -> Vec<(i64, DigestPolicy, Vec<u8>)> {
        let mut out: Vec<(i64, DigestPolicy, Vec<u8>)> =
            self.ledgers.iter().map(|(&id, info)| {
                let (policy, password) = self.policy_of(info);
                (id, policy, password)
            }).collect();
        out.sort_by_key(|s| s.0);
        out
    }

    /// Number of ledgers with their own settings.
    pub fn ledger_count(&self) -> usize {
        self.ledgers.len()
    }

    fn policy_of(&self, info: &LedgerDigestInfo) -> (DigestPolicy, Vec<u8>) {
        let password = if info.password.is_empty() { &self.default_password } else { &info.password };
        let policy = info.digest_type.map_or(self.default_policy, DigestPolicy::Fixed);
        (policy, password.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{DigestType, Digester};
    use crate::digest_check::{DigestChecker, DigestKeys, Outcome, DigestStatus};
    use crate::entry::{encode_entry, EntryHeader};

    fn entry(dt: DigestType, pw: &[u8], ledger: i64) -> Vec<u8> {
        // Entry 3, so no length chain tells its type: only settings and digests do.
        encode_entry(&EntryHeader::new(0, ledger, 3, 2, 40), b"data", &Digester::new(dt, pw)).unwrap()
    }

    fn info(dt: Option<DigestType>, pw: &[u8]) -> LedgerDigestInfo {
        LedgerDigestInfo { digest_type: dt, password: pw.to_vec() }
    }

    fn verdict(c: &mut DigestChecker, bytes: &[u8]) -> (Option<DigestType>, DigestStatus) {
        match c.check_one(bytes) {
            Outcome::Framed(e, _) => (e.digest_type, e.verdict),
            Outcome::Unframed(e) => panic!("{e}"),
        }
    }

    #[test]
    fn each_ledger_verifies_under_its_own_settings() {
        let digests = LedgerDigestSettings::new(DigestPolicy::Auto, b"")
            .with_ledger(1, info(Some(DigestType::Dummy), b""))
            .with_ledger(2, info(Some(DigestType::Hmac), b"two"))
            .with_ledger(3, info(Some(DigestType::Hmac), b"three"))
            .with_ledger(4, info(None, b""));
        let mut c = DigestChecker::new(&digests, true);
        let cases = [
            (entry(DigestType::Dummy, b"", 1), DigestType::Dummy),
            (entry(DigestType::Hmac, b"two", 2), DigestType::Hmac),
            (entry(DigestType::Hmac, b"three", 3), DigestType::Hmac),
            (entry(DigestType::Crc32, b"", 4), DigestType::Crc32),
            (entry(DigestType::Crc32c, b"", 5), DigestType::Crc32c),
        ];
        for (bytes, dt) in &cases {
            assert_eq!(verdict(&mut c, bytes), (Some(*dt), DigestStatus::Verified));
        }
        // The wrong password fails as a mismatch, not a guess.
        let wrong = entry(DigestType::Hmac, b"three", 2);
        assert_eq!(verdict(&mut c, &wrong), (Some(DigestType::Hmac), DigestStatus::Mismatch));
        // Without the metadata, nothing tells these DUMMY and HMAC entries' types.
        let mut auto = DigestChecker::new(&LedgerDigestSettings::default(), true);
        for (bytes, _) in &cases[..3] {
            assert_eq!(verdict(&mut auto, bytes).1, DigestStatus::Unchecked(crate::digest_check::Unchecked::UnknownType));
        }
    }

    #[test]
    fn framing_asks_each_ledgers_own_digest_setting_without_memory() {
        let digests = LedgerDigestSettings::new(DigestPolicy::Auto, b"pw")
            .with_ledger(1, info(Some(DigestType::Hmac), b"pw"))
            .with_ledger(2, info(Some(DigestType::Hmac), b"other"))
            .with_ledger(3, info(Some(DigestType::Dummy), b""));
        let keys = DigestKeys::new(&digests);
        assert!(keys.computes_any());
        assert_eq!(keys.verifying_type(&entry(DigestType::Hmac, b"pw", 1)), Some(DigestType::Hmac));
        assert_eq!(keys.verifying_type(&entry(DigestType::Hmac, b"other", 2)), Some(DigestType::Hmac));
        // Another ledger's password, or a type its metadata does not name: no.
        assert_eq!(keys.verifying_type(&entry(DigestType::Hmac, b"pw", 2)), None);
        assert_eq!(keys.verifying_type(&entry(DigestType::Crc32, b"", 1)), None);
        // DUMMY computes nothing to verify.
        assert_eq!(keys.verifying_type(&entry(DigestType::Dummy, b"", 3)), None);
        // A ledger without metadata: the types inference tries, HMAC keyed with the
        // password given.
        assert_eq!(keys.verifying_type(&entry(DigestType::Crc32, b"", 9)), Some(DigestType::Crc32));
        assert_eq!(keys.verifying_type(&entry(DigestType::Hmac, b"pw", 9)), Some(DigestType::Hmac));
        // Without a password, the empty one (Pulsar's).
        let auto = DigestKeys::new(&LedgerDigestSettings::default());
        assert_eq!(auto.verifying_type(&entry(DigestType::Hmac, b"", 9)), Some(DigestType::Hmac));
        let fixed = DigestKeys::new(&LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Crc32), b""));
        assert_eq!(fixed.verifying_type(&entry(DigestType::Crc32c, b"", 9)), None);
        let dummy = DigestKeys::new(&LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Dummy), b""));
        assert!(!dummy.computes_any());
    }
}
