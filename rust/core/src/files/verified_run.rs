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

/// A file scan whose entry records can be taken a run at a time: framed ahead of
/// accepting them on digests the caller checks (the file readers' CRC-32C lane),
/// or accepted on keyless digests the scan checks (verified runs).
pub(crate) trait RunCursor {
    /// The records from the scan's position that frame as entries without looking
    /// ahead, `(offset of the size field, end)`: at most `max`, while their entry
    /// bytes add up to less than `budget`; none when the scan is not in step. They
    /// are the next items the scan yields if a digest verifies each of them.
    fn frame_run(&mut self, data: &[u8], max: usize, budget: usize, out: &mut Vec<(usize, usize)>);

    /// Moves past `[offset, end)`, the first records of a `frame_run` from here,
    /// each of which a configured digest verified.
    fn accept(&mut self, offset: usize, end: usize);

    /// The cursor's verified runs (its `next_verified`).
    fn next_verified<'a>(&mut self, data: &'a [u8], max: usize, budget: usize, out: &mut Vec<VerifiedEntry<'a>>);
}

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

/// What the last entries of a V1 ledger showed: the keyless type that verified
/// the last one, or how many in a row none did. (A V1 ledger has one digest type;
/// entries of HMAC or DUMMY ledgers never verify here, and computing CRCs for them
/// would be wasted.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LedgerHint {
    Unknown,
    Verified(DigestType),
    Unverified(u8),
}

/// Entries of a ledger none of whose last two entries verified are not digested
/// here, but for one in this many (their ledger may have been damaged, not of
/// another type).
const RETRY_EVERY: u8 = 16;
/// Ledgers remembered (direct-mapped by ledger id).
const HINT_SLOTS: usize = 256;

#[inline]
fn hint_slot(ledger_id: i64) -> usize {
    ((ledger_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

/// Checks entries against the keyless digest types of a scan's options. Which
/// types are tried for an entry (and whether any is) only decides how much is
/// computed: a verdict is always a digest that was computed and matched.
#[derive(Debug, Clone)]
struct KeylessVerifier {
    /// In the order the options name them.
    types: Vec<DigestType>,
    hints: Vec<(i64, LedgerHint)>,
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
        KeylessVerifier { types, hints: vec![(-1, LedgerHint::Unknown); HINT_SLOTS], crc32: Digester::new(DigestType::Crc32, b"") }
    }

    /// `verdicts[i]`: the keyless type whose digest matches `entries[i]` (as
    /// `plausible::entry_verifies` decides it for that type), or `None` (no type
    /// matches, or none was tried).
    fn verify(&mut self, entries: &[&[u8]], verdicts: &mut [Option<DigestType>]) {
        debug_assert!(entries.len() <= GROUP_LEN && verdicts.len() == entries.len());
        verdicts.fill(None);
        match self.types[..] {
            [] => {}
            [DigestType::Crc32c] => self.verify_crc32c_only(entries, verdicts),
            _ => self.verify_any(entries, verdicts),
        }
    }

    /// [`verify`](Self::verify) when CRC-32C is the only keyless type (the usual
    /// case): the same tries and hints as [`verify_any`](Self::verify_any), the
    /// entries framed once.
    fn verify_crc32c_only(&mut self, entries: &[&[u8]], verdicts: &mut [Option<DigestType>]) {
        let mut want = [false; GROUP_LEN];
        let mut ledgers = [-1i64; GROUP_LEN];
        for (i, bytes) in entries.iter().enumerate() {
            want[i] = match bytes.first() {
                Some(&CRC32C_V2_FLAGS) => true,
                Some(&first) if first & 0x80 == 0 => {
                    let Some(head) = bytes.first_chunk::<8>() else { continue };
                    let ledger = i64::from_be_bytes(*head);
                    ledgers[i] = ledger;
                    let slot = &mut self.hints[hint_slot(ledger)];
                    match (slot.0 == ledger, slot.1) {
                        (true, LedgerHint::Unverified(count)) => {
                            *slot = (ledger, LedgerHint::Unverified(count.wrapping_add(1)));
                            count < 2 || count % RETRY_EVERY == 0
                        }
                        _ => true,
                    }
                }
                _ => false,
            };
        }
        verify_crc32c(entries, &want, verdicts);
        self.update_hints(&ledgers[..entries.len()], verdicts);
    }

    /// [`verify`](Self::verify) for any set of keyless types.
    fn verify_any(&mut self, entries: &[&[u8]], verdicts: &mut [Option<DigestType>]) {
        // The types each entry may still be tried with, first choice first.
        let mut tries: [[Option<DigestType>; 2]; GROUP_LEN] = [[None; 2]; GROUP_LEN];
        let mut ledgers = [-1i64; GROUP_LEN];
        for (i, bytes) in entries.iter().enumerate() {
            tries[i] = match bytes.first() {
                None => [None; 2],
                // A V2 entry verifies only under the type it declares.
                Some(&CRC32C_V2_FLAGS) if self.types.contains(&DigestType::Crc32c) => [Some(DigestType::Crc32c), None],
                Some(&CRC32_V2_FLAGS) if self.types.contains(&DigestType::Crc32) => [Some(DigestType::Crc32), None],
                Some(&first) if first & 0x80 != 0 => [None; 2],
                Some(_) => {
                    let Some(head) = bytes.get(..8) else { continue };
                    let ledger = i64::from_be_bytes(head.try_into().expect("8 bytes"));
                    ledgers[i] = ledger;
                    let slot = &mut self.hints[hint_slot(ledger)];
                    let hint = if slot.0 == ledger { slot.1 } else { LedgerHint::Unknown };
                    let mut order = [self.types.first().copied(), self.types.get(1).copied()];
                    match hint {
                        LedgerHint::Verified(t) if order[1] == Some(t) => order.swap(0, 1),
                        LedgerHint::Unverified(n) => {
                            if n >= 2 && n % RETRY_EVERY != 0 {
                                order = [None; 2];
                            }
                            // Counted now, so one entry in RETRY_EVERY is tried
                            // however the entries fall into groups.
                            *slot = (ledger, LedgerHint::Unverified(n.wrapping_add(1)));
                        }
                        _ => {}
                    }
                    order
                }
            };
        }
        for round in 0..2 {
            for dt in [DigestType::Crc32c, DigestType::Crc32] {
                let mut want = [false; GROUP_LEN];
                for (w, (t, v)) in want.iter_mut().zip(tries.iter().zip(verdicts.iter())) {
                    *w = v.is_none() && t[round] == Some(dt);
                }
                if want.iter().any(|&w| w) {
                    self.verify_as(dt, entries, &want, verdicts);
                }
            }
        }
        self.update_hints(&ledgers[..entries.len()], verdicts);
    }

    /// Records what the entries of V1 ledgers (`ledgers[i] >= 0`) showed.
    fn update_hints(&mut self, ledgers: &[i64], verdicts: &[Option<DigestType>]) {
        for (i, &ledger) in ledgers.iter().enumerate() {
            if ledger < 0 {
                continue;
            }
            let slot = &mut self.hints[hint_slot(ledger)];
            let known = if slot.0 == ledger { slot.1 } else { LedgerHint::Unknown };
            let next = match (verdicts[i], known) {
                (Some(t), _) => LedgerHint::Verified(t),
                // (Already counted when the entry's tries were chosen.)
                (None, LedgerHint::Unverified(n)) => LedgerHint::Unverified(n),
                (None, _) => LedgerHint::Unverified(1),
            };
            *slot = (ledger, next);
        }
    }

    /// Sets `verdicts[i] = Some(dt)` for each entry `i` in `want` that `dt` verifies.
    fn verify_as(&self, dt: DigestType, entries: &[&[u8]], want: &[bool; GROUP_LEN], verdicts: &mut [Option<DigestType>]) {
        match dt {
            DigestType::Crc32c => verify_crc32c(entries, want, verdicts),
            DigestType::Crc32 => {
                for ((bytes, v), &w) in entries.iter().zip(verdicts.iter_mut()).zip(want) {
                    if w && Entry::frame(bytes, Some(dt)).is_some_and(|e| e.digest_matches(&self.crc32)) {
                        *v = Some(dt);
                    }
                }
            }
            DigestType::Hmac | DigestType::Dummy => unreachable!("only keyless types with a digest are kept"),
        }
    }
}

/// The flags bytes of V2 entries that declare CRC-32C and CRC-32.
const CRC32C_V2_FLAGS: u8 = v2_flags(DigestType::Crc32c);
const CRC32_V2_FLAGS: u8 = v2_flags(DigestType::Crc32);

/// [`KeylessVerifier::verify_as`] for CRC-32C: the entries are framed as
/// `Entry::frame(bytes, Some(Crc32c))` frames them (a V1 entry, or a V2 entry whose
/// flags declare CRC-32C, at least a header and a digest long), and their digests
/// computed together.
fn verify_crc32c(entries: &[&[u8]], want: &[bool; GROUP_LEN], verdicts: &mut [Option<DigestType>]) {
    let mut heads: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
    let mut tails: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
    let mut stored = [0u32; GROUP_LEN];
    let mut rows = [0usize; GROUP_LEN];
    let mut n = 0;
    for (i, (bytes, &w)) in entries.iter().zip(want).enumerate() {
        let header_len = match bytes.first() {
            Some(&first) if first & 0x80 == 0 => V1_HEADER_LEN,
            Some(&CRC32C_V2_FLAGS) => V2_HEADER_LEN,
            _ => continue,
        };
        if !w || bytes.len() < header_len + 4 {
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
    /// Records a run found that the walk has not reached yet, with their verdicts:
    /// `(offset, end, verdict)`, in file order, so a run cut short by an entry that
    /// does not verify is neither framed nor digested again.
    known: Vec<(usize, usize, Option<DigestType>)>,
}

impl VerifiedRuns {
    pub(crate) fn new(options: &ScanOptions) -> Self {
        VerifiedRuns {
            verifier: KeylessVerifier::new(options),
            records: Vec::with_capacity(GROUP_LEN),
            known: Vec::with_capacity(GROUP_LEN),
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
        let pos = chain.position();
        self.known.retain(|k| k.0 >= pos);
        let max = max.min(GROUP_LEN);
        self.records.clear();
        let mut verdicts = [None; GROUP_LEN];
        if self.known.first().is_some_and(|k| k.0 == pos) && chain.in_step() {
            // The walk is back where a run was cut short: the records from here are
            // the ones that run found (framing depends only on positions and bytes),
            // and their verdicts are known.
            let mut bytes = 0;
            for (k, v) in self.known.iter().zip(verdicts.iter_mut()) {
                if self.records.len() == max || bytes >= budget {
                    break;
                }
                self.records.push((k.0, k.1));
                *v = k.2;
                bytes += k.1 - k.0 - 4;
            }
            self.known.drain(..self.records.len());
        } else {
            self.known.clear();
            chain.entry_run(f, data, max, budget, &mut self.records);
            let n = self.records.len();
            let mut entries: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
            for (e, &(offset, end)) in entries.iter_mut().zip(&self.records) {
                *e = &data[offset + 4..end];
            }
            self.verifier.verify(&entries[..n], &mut verdicts[..n]);
        }
        let n = self.records.len();
        if n == 0 {
            return;
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
        // The records not accepted come before any still known.
        self.known.splice(0..0, self.records[accepted..].iter().zip(&verdicts[accepted..n]).map(|(&(o, e), &v)| (o, e, v)));
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

    /// A verdict is exactly what `entry_verifies` says for the keyless types alone
    /// when the verifier knows nothing of the ledgers yet, whatever the order the
    /// types are tried in and however the group is cut; later, hints may only skip
    /// entries (no verdict), never give one that does not hold.
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
        let (mut verified, mut skipped) = (0, 0);
        for options in &option_sets {
            let keyless: Vec<DigestType> =
                options.digest_types().into_iter().filter(|t| matches!(t, DigestType::Crc32c | DigestType::Crc32)).collect();
            let mut lasting = KeylessVerifier::new(options);
            for _ in 0..200 {
                let count = 1 + rng.below(GROUP_LEN);
                let group = entries(&mut rng, count);
                let refs: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
                let mut fresh = vec![Some(DigestType::Hmac); refs.len()];
                KeylessVerifier::new(options).verify(&refs, &mut fresh);
                let mut hinted = vec![Some(DigestType::Hmac); refs.len()];
                lasting.verify(&refs, &mut hinted);
                for ((e, v), h) in refs.iter().zip(&fresh).zip(&hinted) {
                    let expected = keyless.iter().any(|&t| entry_verifies(&ScanOptions::new().with_digest(t, b""), e));
                    assert_eq!(v.is_some(), expected, "{v:?} for {e:02x?}");
                    for t in [v, h].into_iter().flatten() {
                        assert!(entry_verifies(&ScanOptions::new().with_digest(*t, b""), e), "{t:?}");
                    }
                    verified += usize::from(v.is_some());
                    skipped += usize::from(v.is_some() && h.is_none());
                }
            }
        }
        assert!(verified > 500, "{verified} entries verified");
        // The shared ledger (5) mixes every type, so hints skip some.
        assert!(skipped > 0, "no entry was skipped");
    }

    /// The CRC-32C-only path gives the verdicts and leaves the hints the general
    /// one does, group after group (hints carry over between groups).
    #[test]
    fn crc32c_only_path_equals_the_general_one() {
        let options = ScanOptions::new().with_digest(DigestType::Crc32c, b"");
        let (mut fast, mut general) = (KeylessVerifier::new(&options), KeylessVerifier::new(&options));
        let mut rng = Rng(0x5EED_F00D_C0DE);
        let mut verified = 0;
        for _ in 0..400 {
            let count = 1 + rng.below(GROUP_LEN);
            // Few ledgers of mixed types, some entries damaged, so hints build up,
            // skip entries and are retried.
            let group: Vec<Vec<u8>> = (0..count)
                .map(|i| {
                    let ledger = rng.below(3) as i64;
                    let dt = if ledger == 0 { DigestType::Crc32c } else { DigestType::ALL[rng.below(4)] };
                    let scope = if rng.below(5) == 0 { 1 } else { 0 };
                    let h = EntryHeader::new(scope, ledger, i as i64, i as i64 - 1, 10);
                    let mut e = encode_entry(&h, &[7; 10], &Digester::new(dt, b"pw")).unwrap();
                    if rng.below(6) == 0 {
                        let at = rng.below(e.len());
                        e[at] ^= 1;
                    }
                    e
                })
                .collect();
            let refs: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
            let (mut a, mut b) = (vec![None; count], vec![None; count]);
            fast.verify(&refs, &mut a);
            general.verify_any(&refs, &mut b);
            assert_eq!(a, b);
            assert_eq!(fast.hints, general.hints);
            verified += a.iter().flatten().count();
        }
        assert!(verified > 100, "{verified} entries verified");
    }

    fn ledger_entry(ledger: i64, id: i64, dt: DigestType) -> Vec<u8> {
        encode_entry(&EntryHeader::new(0, ledger, id, id - 1, 100 * (id + 1)), &[id as u8; 100], &Digester::new(dt, b"pw")).unwrap()
    }

    /// Entries of a ledger no keyless type verifies stop being digested (but for a
    /// retry now and then); the ledgers around them, and a CRC ledger after a
    /// damaged entry, keep verifying.
    #[test]
    fn hints_skip_ledgers_of_other_types() {
        let options = ScanOptions::new().with_digest(DigestType::Crc32c, b"").with_digest(DigestType::Crc32, b"");
        let mut v = KeylessVerifier::new(&options);
        let mut tried_hmac = 0;
        for id in 0..200i64 {
            let mut crc = ledger_entry(1, id, DigestType::Crc32c);
            if id % 50 == 7 {
                crc[40] ^= 1;
            }
            let group = [crc, ledger_entry(2, id, DigestType::Hmac), ledger_entry(3, id, DigestType::Crc32)];
            let refs: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
            let hmac_hint_before = v.hints[hint_slot(2)];
            let mut verdicts = [None; 3];
            v.verify(&refs, &mut verdicts);
            let expected_crc = if id % 50 == 7 { None } else { Some(DigestType::Crc32c) };
            assert_eq!(verdicts, [expected_crc, None, Some(DigestType::Crc32)], "entry {id}");
            let skip = matches!(hmac_hint_before, (2, LedgerHint::Unverified(n)) if n >= 2 && n % RETRY_EVERY != 0);
            tried_hmac += usize::from(!skip);
        }
        assert!((10..=20).contains(&tried_hmac), "HMAC entries digested {tried_hmac} times of 200");
    }
}
