//! Digest settings for readers of files that mix ledgers (entry logs, journals).
//!
//! Such files do not record digest types. A reader either infers each ledger's type
//! ([`DigestPolicy::Auto`]) or is told: a default for every ledger, and per-ledger
//! settings from ledger metadata ([`LedgerDigestInfo`]), so that DUMMY ledgers and
//! HMAC ledgers with their own passwords verify instead of being guessed at.

use std::collections::HashMap;

use crate::digest::DigestType;
use crate::digest_policy::{DigestPolicy, DigestResolver};
use crate::entry::parse_header;
use crate::files::ScanOptions;
use crate::metadata::LedgerDigestInfo;

/// A default policy and password, and the settings of the ledgers whose metadata is known.
#[derive(Debug, Clone)]
pub struct LedgerDigests {
    default_policy: DigestPolicy,
    default_password: Vec<u8>,
    ledgers: HashMap<i64, LedgerDigestInfo>,
}

impl Default for LedgerDigests {
    fn default() -> Self {
        LedgerDigests::new(DigestPolicy::Auto, b"")
    }
}

impl LedgerDigests {
    /// Every ledger under `policy`, HMAC keyed with `password`.
    pub fn new(policy: DigestPolicy, password: &[u8]) -> Self {
        LedgerDigests { default_policy: policy, default_password: password.to_vec(), ledgers: HashMap::new() }
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

    pub fn default_policy(&self) -> DigestPolicy {
        self.default_policy
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

    /// The digests a resynchronising scan may use to confirm a record: every type and
    /// password in use, and under `Auto` the types it infers.
    pub fn scan_options(&self) -> ScanOptions {
        let mut settings: Vec<(DigestType, Vec<u8>)> = Vec::new();
        let mut add = |policy: DigestPolicy, password: &[u8]| {
            let types = match policy {
                DigestPolicy::Fixed(dt) => vec![dt],
                DigestPolicy::Auto if password.is_empty() => vec![DigestType::Crc32c, DigestType::Crc32],
                DigestPolicy::Auto => vec![DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac],
            };
            for dt in types {
                let key = if dt == DigestType::Hmac { password.to_vec() } else { Vec::new() };
                if dt != DigestType::Dummy && !settings.contains(&(dt, key.clone())) {
                    settings.push((dt, key));
                }
            }
        };
        add(self.default_policy, &self.default_password);
        let mut ids: Vec<&i64> = self.ledgers.keys().collect();
        ids.sort();
        for id in ids {
            let (policy, password) = self.policy_of(&self.ledgers[id]);
            add(policy, &password);
        }
        settings.into_iter().fold(ScanOptions::new(), |o, (dt, pw)| o.with_digest(dt, &pw))
    }

    /// The per-entry resolver for one pass over a file.
    pub fn resolver(&self) -> LedgerResolver {
        let mut resolvers = vec![DigestResolver::new(self.default_policy, &self.default_password)];
        let mut keys = vec![(self.default_policy, self.default_password.clone())];
        let mut by_ledger = HashMap::with_capacity(self.ledgers.len());
        for (&ledger_id, info) in &self.ledgers {
            let key = self.policy_of(info);
            let index = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    resolvers.push(DigestResolver::new(key.0, &key.1));
                    keys.push(key);
                    resolvers.len() - 1
                }
            };
            by_ledger.insert(ledger_id, index);
        }
        LedgerResolver { resolvers, by_ledger }
    }
}

/// Picks the [`DigestResolver`] for each entry by its ledger id. Ledgers sharing a
/// digest type and password share one resolver (and its keyed digesters).
#[derive(Debug, Clone)]
pub struct LedgerResolver {
    /// The default's resolver first.
    resolvers: Vec<DigestResolver>,
    by_ledger: HashMap<i64, usize>,
}

impl LedgerResolver {
    /// The resolver for the entry in `bytes` (the default's when its ledger has no
    /// settings of its own, or its header cannot be read).
    #[inline]
    pub fn for_entry(&mut self, bytes: &[u8]) -> &mut DigestResolver {
        if self.by_ledger.is_empty() {
            return &mut self.resolvers[0];
        }
        let index = match parse_header(bytes) {
            Ok((h, _)) => self.by_ledger.get(&h.ledger_id).copied().unwrap_or(0),
            Err(_) => 0,
        };
        &mut self.resolvers[index]
    }

    /// The resolver of every entry, when no ledger has settings of its own.
    pub fn sole(&mut self) -> Option<&mut DigestResolver> {
        if self.by_ledger.is_empty() {
            self.resolvers.first_mut()
        } else {
            None
        }
    }

    /// The resolver for a ledger (for records that carry only a ledger id).
    pub fn for_ledger(&mut self, ledger_id: i64) -> &mut DigestResolver {
        let index = self.by_ledger.get(&ledger_id).copied().unwrap_or(0);
        &mut self.resolvers[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digester;
    use crate::entry::{encode_entry, EntryHeader};

    fn entry(dt: DigestType, pw: &[u8], ledger: i64) -> Vec<u8> {
        encode_entry(&EntryHeader::new(0, ledger, 0, -1, 4), b"data", &Digester::new(dt, pw)).unwrap()
    }

    fn info(dt: Option<DigestType>, pw: &[u8]) -> LedgerDigestInfo {
        LedgerDigestInfo { digest_type: dt, password: pw.to_vec() }
    }

    #[test]
    fn each_ledger_verifies_under_its_own_settings() {
        let digests = LedgerDigests::new(DigestPolicy::Auto, b"")
            .with_ledger(1, info(Some(DigestType::Dummy), b""))
            .with_ledger(2, info(Some(DigestType::Hmac), b"two"))
            .with_ledger(3, info(Some(DigestType::Hmac), b"three"))
            .with_ledger(4, info(None, b""));
        let mut r = digests.resolver();
        let cases = [
            (entry(DigestType::Dummy, b"", 1), DigestType::Dummy),
            (entry(DigestType::Hmac, b"two", 2), DigestType::Hmac),
            (entry(DigestType::Hmac, b"three", 3), DigestType::Hmac),
            (entry(DigestType::Crc32, b"", 4), DigestType::Crc32),
            (entry(DigestType::Crc32c, b"", 5), DigestType::Crc32c),
        ];
        for (bytes, dt) in &cases {
            let got = r.for_entry(bytes).resolve(bytes, true).unwrap();
            assert_eq!((got.entry.digest_type, got.digest_ok), (*dt, Some(true)));
        }
        // The wrong password fails as a mismatch, not a guess.
        let wrong = entry(DigestType::Hmac, b"three", 2);
        assert_eq!(r.for_entry(&wrong).resolve(&wrong, true).unwrap().digest_ok, Some(false));
        // Auto alone cannot read the DUMMY or HMAC ledgers.
        let mut auto = LedgerDigests::default().resolver();
        for (bytes, _) in &cases[..3] {
            assert!(auto.for_entry(bytes).resolve(bytes, true).is_err());
        }
    }

    #[test]
    fn scan_options_cover_every_setting_once() {
        let digests = LedgerDigests::new(DigestPolicy::Auto, b"pw")
            .with_ledger(1, info(Some(DigestType::Hmac), b"pw"))
            .with_ledger(2, info(Some(DigestType::Hmac), b"other"))
            .with_ledger(3, info(Some(DigestType::Dummy), b""));
        assert_eq!(
            digests.scan_options().digest_types(),
            [DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac, DigestType::Hmac]
        );
        let fixed = LedgerDigests::new(DigestPolicy::Fixed(DigestType::Crc32), b"");
        assert_eq!(fixed.scan_options().digest_types(), [DigestType::Crc32]);
    }
}
