//! Accepting runs of entries on their digests.
//!
//! The walk confirms a record it is in step at by the records after it framing
//! (`chain_ok`) or by a configured digest verifying it (see `framing.rs`); either
//! is enough. A reader that verifies digests anyway can ask the digest first: it
//! then skips the look-ahead, and, since the digests of several entries are computed
//! together (interleaved CRC streams), the scan's verdict is handed to the reader so
//! it does not compute it again. Records whose digest does not verify take the
//! ordinary step, so every decision stays exactly what the walk alone would make.
//!
//! Only keyless digests (CRC-32C, CRC-32) are used here: their verdict does not
//! depend on a password, so it is the reader's verdict too. Entries of other types
//! (HMAC, DUMMY) take the ordinary step.

use crate::digest::{crc32c_concat_many, DigestType, Digester};
use crate::entry::{v2_flags, Entry, V1_HEADER_LEN, V2_HEADER_LEN};
use crate::files::framing::{Chain, Framing, ScanOptions};

/// Entries verified together: a multiple of the interleaved CRC streams (three or
/// six), enough to spread a run's fixed costs.
pub(crate) const GROUP_LEN: usize = 12;
/// Longest pause, in steps, after a run whose first entry no keyless digest verifies.
const MAX_BACKOFF: u32 = 256;

/// An entry the scan accepted because a keyless digest verified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedEntry<'a> {
    /// Offset of the record's size field.
    pub offset: u64,
    /// The entry exactly as stored (after the size field).
    pub bytes: &'a [u8],
    /// The digest type whose digest matches (CRC-32C or CRC-32).
    pub digest_type: DigestType,
}

impl VerifiedEntry<'_> {
    /// Offset of the entry bytes, just after the size field.
    pub fn entry_offset(&self) -> u64 {
        self.offset + 4
    }
}

/// Checks entries against the keyless digest types of a scan's options.
#[derive(Debug, Clone)]
struct KeylessVerifier {
    /// In the order the options name them.
    types: Vec<DigestType>,
    /// Index of the type tried first: the one that verified the last entry.
    preferred: usize,
    crc32: Digester,
}

impl KeylessVerifier {
    fn new(options: &ScanOptions) -> Self {
        let mut types = Vec::new();
        for d in &options.digesters {
            let dt = d.digest_type();
            if matches!(dt, DigestType::Crc32c | DigestType::Crc32) && !types.contains(&dt) {
                types.push(dt);
            }
        }
        KeylessVerifier { types, preferred: 0, crc32: Digester::new(DigestType::Crc32, b"") }
    }

    /// `verdicts[i]`: the keyless type whose digest matches `entries[i]` (as
    /// `plausible::entry_verifies` decides it for that type), or `None`.
    fn verify(&mut self, entries: &[&[u8]], verdicts: &mut [Option<DigestType>]) {
        debug_assert!(entries.len() <= GROUP_LEN && verdicts.len() == entries.len());
        verdicts.fill(None);
        let Some(&first) = self.types.get(self.preferred) else { return };
        self.verify_as(first, entries, verdicts);
        for (index, &dt) in self.types.iter().enumerate() {
            if dt == first || verdicts.iter().all(Option::is_some) {
                continue;
            }
            let missing_before = verdicts.iter().filter(|v| v.is_none()).count();
            self.verify_as(dt, entries, verdicts);
            // Logs hold few ledgers: the type that verifies most is tried first next time.
            let found = missing_before - verdicts.iter().filter(|v| v.is_none()).count();
            if found * 2 > entries.len() {
                self.preferred = index;
            }
        }
    }

    /// Sets `verdicts[i] = Some(dt)` for each entry not yet verified that `dt` verifies.
    fn verify_as(&self, dt: DigestType, entries: &[&[u8]], verdicts: &mut [Option<DigestType>]) {
        match dt {
            DigestType::Crc32c => verify_crc32c(entries, verdicts),
            DigestType::Crc32 => {
                for (bytes, v) in entries.iter().zip(verdicts.iter_mut()) {
                    if v.is_none() && Entry::frame(bytes, Some(dt)).is_some_and(|e| e.digest_matches(&self.crc32)) {
                        *v = Some(dt);
                    }
                }
            }
            DigestType::Hmac | DigestType::Dummy => unreachable!("only keyless types with a digest are kept"),
        }
    }
}

/// The flags byte of a V2 entry that declares CRC-32C.
const CRC32C_V2_FLAGS: u8 = v2_flags(DigestType::Crc32c);

/// [`KeylessVerifier::verify_as`] for CRC-32C: the entries are framed as
/// `Entry::frame(bytes, Some(Crc32c))` frames them (a V1 entry, or a V2 entry whose
/// flags declare CRC-32C, at least a header and a digest long), and their digests
/// computed together.
fn verify_crc32c(entries: &[&[u8]], verdicts: &mut [Option<DigestType>]) {
    let mut heads: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
    let mut tails: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
    let mut stored = [0u32; GROUP_LEN];
    let mut rows = [0usize; GROUP_LEN];
    let mut n = 0;
    for (i, (bytes, v)) in entries.iter().zip(verdicts.iter()).enumerate() {
        let header_len = match bytes.first() {
            Some(&first) if first & 0x80 == 0 => V1_HEADER_LEN,
            Some(&CRC32C_V2_FLAGS) => V2_HEADER_LEN,
            _ => continue,
        };
        if v.is_some() || bytes.len() < header_len + 4 {
            continue;
        }
        let (head, rest) = bytes.split_at(header_len);
        let (digest, payload) = rest.split_at(4);
        heads[n] = head;
        tails[n] = payload;
        stored[n] = u32::from_be_bytes(digest.try_into().expect("4 bytes"));
        rows[n] = i;
        n += 1;
    }
    let mut crcs = [0u32; GROUP_LEN];
    crc32c_concat_many(&mut crcs[..n], &heads[..n], &tails[..n]);
    for k in 0..n {
        if crcs[k] == stored[k] {
            verdicts[rows[k]] = Some(DigestType::Crc32c);
        }
    }
}

/// The state a cursor keeps to accept runs of verified entries.
#[derive(Debug, Clone)]
pub(crate) struct VerifiedRuns {
    verifier: KeylessVerifier,
    /// The records of the current run.
    records: Vec<(usize, usize)>,
    /// Verdicts computed for records the walk has not reached yet: `(offset, end,
    /// verdict)`, in file order, so a run cut short by an entry that does not verify
    /// is not digested twice.
    known: Vec<(usize, usize, Option<DigestType>)>,
    /// Steps to let pass before trying again, after a run whose first entry did not verify.
    cooldown: u32,
    backoff: u32,
}

impl VerifiedRuns {
    pub(crate) fn new(options: &ScanOptions) -> Self {
        VerifiedRuns {
            verifier: KeylessVerifier::new(options),
            records: Vec::with_capacity(GROUP_LEN),
            known: Vec::with_capacity(GROUP_LEN),
            cooldown: 0,
            backoff: 1,
        }
    }

    /// Accepts the entries from the walk's position that a keyless digest verifies,
    /// at most `max` of them and while their lengths add up to less than `budget`,
    /// appending them to `out`. Appends nothing when the next record is not such an
    /// entry; the caller then takes an ordinary step.
    pub(crate) fn next<'a, F: Framing>(
        &mut self,
        chain: &mut Chain,
        f: &F,
        data: &'a [u8],
        max: usize,
        budget: usize,
        out: &mut Vec<VerifiedEntry<'a>>,
    ) {
        if self.verifier.types.is_empty() {
            return;
        }
        if self.cooldown > 0 {
            self.cooldown -= 1;
            return;
        }
        self.records.clear();
        chain.entry_run(f, data, max.min(GROUP_LEN), budget, &mut self.records);
        let n = self.records.len();
        if n == 0 {
            return;
        }
        let mut verdicts = [None; GROUP_LEN];
        let mut reused = 0;
        if !self.known.is_empty() {
            let start = self.records[0].0;
            self.known.retain(|k| k.0 >= start);
            for (v, (k, r)) in verdicts.iter_mut().zip(self.known.iter().zip(&self.records)) {
                if (k.0, k.1) != *r {
                    break;
                }
                *v = k.2;
                reused += 1;
            }
        }
        if reused < n {
            let mut entries: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
            for (e, &(offset, end)) in entries.iter_mut().zip(&self.records[reused..]) {
                *e = &data[offset + 4..end];
            }
            self.verifier.verify(&entries[..n - reused], &mut verdicts[reused..n]);
        }
        let accepted = verdicts[..n].iter().take_while(|v| v.is_some()).count();
        if let (Some(&(first, _)), Some(&(_, end))) = (self.records.first(), self.records[..accepted].last()) {
            chain.accept_verified(first, end);
        }
        out.extend(self.records[..accepted].iter().zip(&verdicts).map(|(&(offset, end), v)| VerifiedEntry {
            offset: offset as u64,
            bytes: &data[offset + 4..end],
            digest_type: v.expect("accepted records verified"),
        }));
        self.known.clear();
        if accepted < n {
            self.known.extend(self.records[accepted..].iter().zip(&verdicts[accepted..n]).map(|(&(o, e), &v)| (o, e, v)));
        }
        if accepted == 0 {
            self.cooldown = self.backoff;
            self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        } else {
            self.backoff = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{encode_entry, EntryHeader};
    use crate::files::plausible::entry_verifies;
    use crate::test_rng::Rng;

    /// Entries of every type and format, some damaged, truncated or garbage.
    fn entries(rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| {
                let dt = DigestType::ALL[rng.below(4)];
                let payload: Vec<u8> = (0..[0, 5, 100, 300, 1500][rng.below(5)]).map(|_| rng.next() as u8).collect();
                let scope = if rng.below(4) == 0 { 1 + rng.below(3) as i64 } else { 0 };
                let h = EntryHeader::new(scope, 5, i as i64, i as i64 - 1, payload.len() as i64);
                let mut e = encode_entry(&h, &payload, &Digester::new(dt, b"pw")).unwrap();
                match rng.below(8) {
                    0 => {
                        let at = rng.below(e.len());
                        e[at] ^= 1 << rng.below(8);
                    }
                    1 => e.truncate(rng.below(e.len() + 1)),
                    2 => e = (0..rng.below(60)).map(|_| rng.next() as u8).collect(),
                    _ => {}
                }
                e
            })
            .collect()
    }

    /// A verdict is exactly what `entry_verifies` says for the keyless types alone,
    /// whatever the order the types are tried in and however the group is cut.
    #[test]
    fn verdicts_equal_one_entry_at_a_time() {
        let mut rng = Rng(0xC0FF_EE00_1234_5678);
        let option_sets = [
            ScanOptions::new().with_digest(DigestType::Crc32c, b""),
            ScanOptions::new().with_digest(DigestType::Crc32, b""),
            ScanOptions::new().with_digest(DigestType::Crc32c, b"").with_digest(DigestType::Crc32, b""),
            ScanOptions::new().with_digest(DigestType::Hmac, b"pw").with_digest(DigestType::Crc32, b"").with_digest(DigestType::Crc32c, b""),
            ScanOptions::new().with_digest(DigestType::Hmac, b"pw").with_digest(DigestType::Dummy, b""),
        ];
        let mut verified = 0;
        for options in &option_sets {
            let keyless: Vec<DigestType> =
                options.digest_types().into_iter().filter(|t| matches!(t, DigestType::Crc32c | DigestType::Crc32)).collect();
            let mut verifier = KeylessVerifier::new(options);
            for _ in 0..200 {
                let count = 1 + rng.below(GROUP_LEN);
                let group = entries(&mut rng, count);
                let refs: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
                let mut verdicts = vec![Some(DigestType::Hmac); refs.len()];
                verifier.verify(&refs, &mut verdicts);
                for (e, v) in refs.iter().zip(&verdicts) {
                    let expected = keyless.iter().any(|&t| entry_verifies(&ScanOptions::new().with_digest(t, b""), e));
                    assert_eq!(v.is_some(), expected, "{v:?} for {e:02x?}");
                    if let Some(t) = v {
                        assert!(entry_verifies(&ScanOptions::new().with_digest(*t, b""), e), "{t:?}");
                        verified += 1;
                    }
                }
            }
        }
        assert!(verified > 500, "{verified} entries verified");
    }
}
