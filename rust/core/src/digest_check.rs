//! Which digest each entry of a stream is checked under, and how it came out: the
//! one place that decides it, for batches of entries and for the file readers.
//!
//! A V2 entry declares its digest type. A V1 entry does not: the reader's settings
//! name it (for every ledger, or per ledger from ledger metadata), or, under
//! [`DigestPolicy::Auto`], it is inferred per ledger:
//! 1. A ledger whose entries verified under a type before is checked under that
//!    type (a later entry that does not verify is a mismatch, not a new guess).
//! 2. Otherwise the types that can be recognised are tried: CRC-32C, CRC-32, HMAC
//!    with the given password (or the empty one Pulsar uses); the first that
//!    verifies is remembered for the ledger.
//! 3. Otherwise the *length chain* says how long the digest is: BookKeeper's
//!    `length` field is the ledger's running payload length, so for entry 0, or for
//!    an entry whose predecessor in the ledger came just before in the stream,
//!    `record length - header - (length - previous length)` is the digest's length:
//!    0 for DUMMY, 20 for HMAC (4 and 8 would be a CRC that failed to verify). A
//!    DUMMY entry is then verified as DigestManager verifies it (it proves only its
//!    ids), an HMAC entry without its password is *unchecked* (located, never called
//!    damaged), a CRC entry is a mismatch. Entries with no chain of their own take
//!    the last type their ledger's chain gave, unless two chains disagreed or (a
//!    CRC type no digest confirmed) a later link broke.
//! 4. With none of these the entry is unchecked, its type unknown.
//!
//! A DUMMY entry whose own chain gives a digest length other than 0 is flagged: with
//! no digest, the length is all there is to check.
//!
//! Groups of entries whose type is already known are checked together
//! ([`DigestChecker::check_group`]): their CRC-32C digests are computed as
//! interleaved streams. Everything else, and every entry that does not verify, goes
//! through [`DigestChecker::check_one`], which also learns the ledger's type.

use std::borrow::BorrowMut;
use std::collections::HashMap;
use std::sync::Arc;

use crate::digest::{crc32c_concat_many, DigestType, Digester};
use crate::digest_policy::DigestPolicy;
use crate::entry::{decode_entry, Entry, EntryFormat, EntryHeader, HeaderView, V1_HEADER_LEN};
use crate::error::{Error, ErrorKind};
use crate::ledger_digest_settings::LedgerDigestSettings;

/// Entries checked together.
pub const GROUP_LEN: usize = 48;

/// How many entries ahead [`DigestChecker::check_group`] prefetches headers.
#[cfg(target_arch = "x86_64")]
const HEADERS_AHEAD: usize = 8;

/// How an entry's digest came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DigestStatus {
    /// Computed and matching (for DUMMY: its length chain holds).
    Verified,
    /// Computed under the entry's type and not matching.
    Mismatch,
    /// Could not be computed.
    Unchecked(Unchecked),
    /// Not computed: the reader was asked not to verify.
    NotAsked,
}

/// Why a digest could not be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unchecked {
    /// An HMAC entry, and its ledger's password is not known (none was given, or
    /// the one given verifies none of the ledger's entries).
    NoPassword,
    /// A V1 entry of a ledger whose digest type nothing tells.
    UnknownType,
}

impl Unchecked {
    pub const ALL: [Unchecked; 2] = [Unchecked::NoPassword, Unchecked::UnknownType];

    pub const fn as_str(self) -> &'static str {
        match self {
            Unchecked::NoPassword => "no_password",
            Unchecked::UnknownType => "unknown_type",
        }
    }
}

impl DigestStatus {
    /// The `digest_ok` column: `None` when nothing was computed.
    #[inline(always)]
    pub fn digest_ok(self) -> Option<bool> {
        match self {
            DigestStatus::Verified => Some(true),
            DigestStatus::Mismatch => Some(false),
            DigestStatus::Unchecked(_) | DigestStatus::NotAsked => None,
        }
    }

    /// The `digest_unchecked_reason` column: why the digest could not be checked.
    #[inline(always)]
    pub fn unchecked(self) -> Option<Unchecked> {
        match self {
            DigestStatus::Unchecked(u) => Some(u),
            _ => None,
        }
    }
}

/// An entry framed under its digest type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedEntry {
    pub header: EntryHeader,
    /// `None` only for a V1 entry whose type is unknown.
    pub digest_type: Option<DigestType>,
    /// Where the payload starts in the entry; 0 when the type (so the digest's
    /// length) is unknown.
    pub payload_at: u32,
    pub verdict: DigestStatus,
}

/// What [`DigestChecker::check_one`] found.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Framed; the error, when there is one, is what makes the row damaged (a
    /// mismatch, a length chain a DUMMY entry breaks).
    Framed(CheckedEntry, Option<Error>),
    /// Not an entry under the settings: too short, a bad V2 flags byte, a V2
    /// entry declaring another type than the one named.
    Unframed(Error),
}

/// What a V1 ledger's entries further on say of its type, gathered for an entry
/// of it that did not verify (see [`DigestChecker::needs_look_ahead`]): an entry
/// that verifies, consecutive entries whose length chain gives the type, or only
/// entries that do not verify with the password given.
#[derive(Debug, Clone)]
pub struct LookAhead {
    key: LedgerKey,
    last: Option<(i64, i64)>,
    chained: Option<DigestType>,
    verified: Option<DigestType>,
}

impl LookAhead {
    pub fn new(key: LedgerKey) -> LookAhead {
        LookAhead { key, last: None, chained: None, verified: None }
    }

    /// Considers an entry further on; true once the ledger's type is certain (an
    /// entry of it verified), when looking further is pointless.
    pub fn consider(&mut self, checker: &DigestChecker, bytes: &[u8]) -> bool {
        let Some((h, _)) = HeaderView::read(bytes) else { return false };
        if ledger_key(&h) != self.key {
            return false;
        }
        if let Some(dt) = checker.probe(bytes) {
            self.verified = Some(dt);
            return true;
        }
        if h.format() != EntryFormat::V1 {
            return false;
        }
        let found = match (h.entry_id(), self.last) {
            (0, _) => Some(0),
            (e, Some((pe, pl))) if pe == e - 1 => Some(pl),
            _ => None,
        }
        .and_then(|prev| chained_digest_len(&h, bytes.len(), prev))
        .and_then(type_of_digest_len);
        if let Some(dt) = found {
            self.chained.get_or_insert(dt);
        }
        self.last = Some((h.entry_id(), h.length()));
        false
    }

    /// What was found, as a lesson on top of `base` (what the checker knows, or a
    /// lesson not yet learned): the type that verified an entry; else the type the
    /// chains gave, and, as none of the ledger's entries verified (the one looked
    /// ahead for included), that the password given is not its (its entries are
    /// unchecked, not damaged one by one: a ledger of one entry is no exception).
    pub fn lesson(self, checker: &DigestChecker, base: Option<Lesson>) -> Lesson {
        let mut study = Study::new(&checker.ledgers, self.key, base);
        if let Some(dt) = self.verified {
            study.edit().verified = Some(dt);
        } else if study.peek().is_none_or(|s| s.verified.is_none()) {
            let state = study.edit();
            if let Some(dt) = self.chained {
                if state.chained.is_none() {
                    state.chained = Some(dt);
                }
            }
            state.password_fails = true;
        }
        study.lesson()
    }
}

/// What checking an entry (or looking ahead for its ledger) taught of its ledger.
/// The checker answers without learning; it learns a lesson only when told to
/// ([`DigestChecker::learn`]), once the entry is taken as one.
#[derive(Debug, Clone, Copy)]
pub struct Lesson {
    key: LedgerKey,
    /// The ledger's state after the entry; `None` when it taught nothing.
    state: Option<LedgerState>,
    span_unconfirmed: bool,
}

impl Lesson {
    /// Whether the entry came back unchecked with nothing, not even its ledger's
    /// length chain, confirming that its size is its own: an HMAC entry without its
    /// password or a V1 entry of a type nothing tells, first of its ledger here or
    /// after a gap.
    pub fn span_unconfirmed(&self) -> bool {
        self.span_unconfirmed
    }
}

/// A ledger's state while an entry of it is checked: what the checker knows, with
/// the changes kept aside (copied on the first change).
struct Study<'c> {
    known: &'c HashMap<LedgerKey, LedgerState>,
    key: LedgerKey,
    state: Option<LedgerState>,
    span_unconfirmed: bool,
}

impl<'c> Study<'c> {
    fn new(known: &'c HashMap<LedgerKey, LedgerState>, key: LedgerKey, base: Option<Lesson>) -> Self {
        let state = base.filter(|b| b.key == key).and_then(|b| b.state);
        Study { known, key, state, span_unconfirmed: false }
    }

    #[inline(always)]
    fn peek(&self) -> Option<&LedgerState> {
        self.state.as_ref().or_else(|| self.known.get(&self.key))
    }

    fn edit(&mut self) -> &mut LedgerState {
        let (known, key) = (self.known, self.key);
        self.state.get_or_insert_with(|| known.get(&key).copied().unwrap_or_default())
    }

    fn lesson(self) -> Lesson {
        Lesson { key: self.key, state: self.state, span_unconfirmed: self.span_unconfirmed }
    }
}

/// A ledger as the checker keeps what it learns of it: (scope, ledger id). V1
/// entries are scope 0. Ledgers of two scopes are two ledgers, with their own
/// types, passwords and length chains.
pub type LedgerKey = (i64, i64);

fn ledger_key(view: &HeaderView<'_>) -> LedgerKey {
    (view.scope_id(), view.ledger_id())
}

/// One (policy, password) setting and its keyed digesters.
#[derive(Debug, Clone)]
struct Setting {
    policy: DigestPolicy,
    /// By proto number - 1.
    digesters: [Digester; 4],
    /// A password was given (HMAC is checked with it); without one, inference also
    /// tries the empty password, and HMAC entries that fail are unchecked.
    password_given: bool,
}

impl Setting {
    fn new(policy: DigestPolicy, password: &[u8], password_given: bool) -> Self {
        Setting { policy, digesters: DigestType::ALL.map(|dt| Digester::new(dt, password)), password_given }
    }

    #[inline(always)]
    fn digester(&self, dt: DigestType) -> &Digester {
        &self.digesters[dt.proto_value() as usize - 1]
    }
}

/// What a V1 ledger under inference has shown so far.
#[derive(Debug, Clone, Copy, Default)]
struct LedgerState {
    /// The type whose digest verified one of its entries.
    verified: Option<DigestType>,
    /// The last entry seen: id and length field, for the next one's chain.
    last: Option<(i64, i64)>,
    /// Whether `last`'s length field is vouched for: entry 0, or its own chain held.
    last_vouched: bool,
    /// The type the last length chain gave, and whether chains disagreed.
    chained: Option<DigestType>,
    chains_disagree: bool,
    /// HMAC with the empty password failed on an entry its chain shows to be HMAC.
    empty_key_failed: bool,
    /// The password given verifies none of this HMAC ledger's entries: it has
    /// another, and its entries are unchecked rather than damaged.
    password_fails: bool,
}

/// A direct-mapped cache of the verified type of recently seen ledgers: streams
/// interleave a few ledgers, and a hash-map lookup per entry would cost as much as
/// a short CRC.
const RECENT_SLOTS: usize = 256;

#[inline(always)]
fn recent_slot(ledger_id: i64) -> usize {
    ((ledger_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

/// The digest settings of a stream, keyed: which types each ledger's entries may
/// be checked under, and their digesters. The checker checks with them; a file's
/// framing asks them, with no memory, whether a record's digest verifies (so the
/// answer is the same wherever the record is met, as byte ranges need).
#[derive(Debug)]
pub struct DigestKeys {
    /// The default first, then the distinct settings of ledgers with metadata.
    settings: Vec<Setting>,
    by_ledger: HashMap<i64, usize>,
    /// Whether any setting has a computed digest (see [`DigestKeys::computes_any`]).
    computes_any: bool,
}

impl DigestKeys {
    pub fn new(digests: &LedgerDigestSettings) -> Arc<Self> {
        let (default_policy, default_password) = digests.default_setting();
        let mut settings = vec![Setting::new(default_policy, default_password, digests.default_password_given())];
        let mut keys: Vec<(DigestPolicy, Vec<u8>)> = vec![(default_policy, default_password.to_vec())];
        let mut by_ledger = HashMap::new();
        for (ledger_id, policy, password) in digests.ledger_settings() {
            let key = (policy, password.to_vec());
            let index = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    settings.push(Setting::new(policy, &password, !password.is_empty()));
                    keys.push(key);
                    settings.len() - 1
                }
            };
            by_ledger.insert(ledger_id, index);
        }
        let computes_any = settings.iter().any(|s| s.policy != DigestPolicy::Fixed(DigestType::Dummy));
        Arc::new(DigestKeys { settings, by_ledger, computes_any })
    }

    #[inline(always)]
    fn setting_of(&self, ledger_id: i64) -> &Setting {
        if self.by_ledger.is_empty() {
            return &self.settings[0];
        }
        &self.settings[self.by_ledger.get(&ledger_id).copied().unwrap_or(0)]
    }

    /// Whether any ledger's entries may carry a digest that is computed (not all
    /// named DUMMY): else no record's digest can verify.
    pub fn computes_any(&self) -> bool {
        self.computes_any
    }

    /// The type whose computed digest verifies the entry `bytes`, among those its
    /// ledger's may be: the type named for it, the one it declares (V2), or under
    /// `Auto` those inference tries (CRC-32C, CRC-32, HMAC with the password given
    /// or the empty one). Memoryless: what the ledger's other entries showed plays
    /// no part.
    pub fn verifying_type(&self, bytes: &[u8]) -> Option<DigestType> {
        let (view, _) = HeaderView::read(bytes)?;
        let setting = self.setting_of(view.ledger_id());
        let verifies = |dt: DigestType| {
            dt != DigestType::Dummy && Entry::frame(bytes, Some(dt)).is_some_and(|e| e.digest_matches(setting.digester(dt)))
        };
        match (setting.policy, view.declared_digest()) {
            (DigestPolicy::Fixed(named), Some(declared)) if named != declared => None,
            (DigestPolicy::Fixed(dt), _) | (DigestPolicy::Auto, Some(dt)) => verifies(dt).then_some(dt),
            (DigestPolicy::Auto, None) => [DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac].into_iter().find(|&dt| verifies(dt)),
        }
    }
}

/// Checks the entries of one stream (a batch, a file) in order under one set of
/// digest settings, remembering what inference learns per ledger.
#[derive(Debug, Clone)]
pub struct DigestChecker {
    verify: bool,
    /// Whether a DUMMY entry whose length chain breaks is flagged (file scans).
    dummy_chains: bool,
    keys: Arc<DigestKeys>,
    ledgers: HashMap<LedgerKey, LedgerState>,
    recent: Vec<(i64, DigestType)>,
}

/// What an entry's length chain gives: the digest length it leaves, and whether the
/// link it ran from is vouched for (entry 0, or a link whose own chain held).
#[derive(Debug, Clone, Copy)]
struct LengthChain {
    digest_len: Option<i64>,
    from_vouched: bool,
}

impl LengthChain {
    /// What the chain says against an entry that cannot be checked otherwise:
    /// nothing, when it breaks with a link nothing vouches for (the first of its
    /// ledger here: either of the two may be the damaged one).
    fn against_unchecked(self) -> Option<i64> {
        self.digest_len.filter(|&d| self.from_vouched || type_of_digest_len(d).is_some())
    }
}

/// The digest length each type stores, and back.
fn type_of_digest_len(len: i64) -> Option<DigestType> {
    DigestType::ALL.into_iter().find(|dt| dt.len() as i64 == len)
}

/// The digest length an entry of `entry_len` bytes has when the running length
/// before it was `previous_length`: its bytes less its header and the payload its
/// length field adds. (A V2 header keeps the running length as V1 does, after its
/// longer header.)
fn chained_digest_len(view: &HeaderView<'_>, entry_len: usize, previous_length: i64) -> Option<i64> {
    let payload = view.length().checked_sub(previous_length)?;
    (entry_len as i64 - view.len() as i64).checked_sub(payload)
}

/// Whether the entry `next` (`next_len` bytes) follows the entry `entry` in their
/// ledger by the length chain alone: same ledger, the next entry id, and the
/// running length between them leaving `next` a digest some digest type has (a V2
/// entry's: the one it declares). The slices need hold only the headers. No digest
/// is computed, so it holds for entries whose digests cannot be checked; bytes that
/// merely frame like entries (inside a payload) pass it only by an eight-byte
/// coincidence.
pub fn follows_by_length(entry: &[u8], next: &[u8], next_len: usize) -> bool {
    let (Some((a, _)), Some((b, _))) = (HeaderView::read(entry), HeaderView::read(next)) else { return false };
    if ledger_key(&a) != ledger_key(&b) || a.entry_id().checked_add(1) != Some(b.entry_id()) {
        return false;
    }
    match (chained_digest_len(&b, next_len, a.length()), b.declared_digest()) {
        (Some(d), Some(declared)) => d == declared.len() as i64,
        (Some(d), None) => type_of_digest_len(d).is_some(),
        (None, _) => false,
    }
}

impl DigestChecker {
    /// Checks under `digests`; `verify` false computes digests only to infer types.
    pub fn new(digests: &LedgerDigestSettings, verify: bool) -> Self {
        DigestChecker::with_keys(DigestKeys::new(digests), verify)
    }

    /// Checks with `keys` (shared with the framing of the same scan).
    pub fn with_keys(keys: Arc<DigestKeys>, verify: bool) -> Self {
        DigestChecker {
            verify,
            dummy_chains: false,
            keys,
            ledgers: HashMap::new(),
            recent: vec![(-1, DigestType::Dummy); RECENT_SLOTS],
        }
    }

    /// Flags DUMMY entries whose length chain breaks: for file scans, where damage
    /// can frame a phantom entry that a DUMMY digest would never catch.
    pub fn with_dummy_chains(mut self) -> Self {
        self.dummy_chains = true;
        self
    }

    /// Whether digests are checked (else only computed to infer types).
    pub fn verifies(&self) -> bool {
        self.verify
    }

    /// The single policy of every ledger, when no ledger has its own settings.
    pub fn sole_policy(&self) -> Option<DigestPolicy> {
        self.keys.by_ledger.is_empty().then(|| self.keys.settings[0].policy)
    }

    #[inline(always)]
    fn setting_of(&self, ledger_id: i64) -> &Setting {
        self.keys.setting_of(ledger_id)
    }

    /// The type a V1 ledger under inference verified with, through the cache.
    #[inline(always)]
    fn verified_type(&mut self, ledger_id: i64) -> Option<DigestType> {
        let slot = recent_slot(ledger_id);
        match self.recent[slot] {
            (id, dt) if id == ledger_id => Some(dt),
            _ => {
                let dt = self.ledgers.get(&(0, ledger_id))?.verified?;
                self.recent[slot] = (ledger_id, dt);
                Some(dt)
            }
        }
    }

    /// The type a V1 ledger under inference verified with, as `study` has it.
    #[inline(always)]
    fn studied_type(&self, study: &Study<'_>) -> Option<DigestType> {
        if let Some(state) = &study.state {
            return state.verified;
        }
        let ledger_id = study.key.1;
        match self.recent[recent_slot(ledger_id)] {
            (id, dt) if id == ledger_id => Some(dt),
            _ => study.known.get(&study.key)?.verified,
        }
    }

    /// The type an entry is checked under without learning anything: named,
    /// declared, or already verified for its ledger. `None` when the entry needs
    /// [`DigestChecker::check_one`] (a type to infer, or not framable under the
    /// settings).
    #[inline(always)]
    fn known_type(&mut self, view: &HeaderView<'_>) -> Option<DigestType> {
        let setting = self.setting_of(view.ledger_id());
        match (setting.policy, view.declared_digest()) {
            (DigestPolicy::Fixed(named), Some(declared)) => (named == declared).then_some(named),
            (DigestPolicy::Fixed(named), None) => Some(named),
            (DigestPolicy::Auto, Some(declared)) => Some(declared),
            (DigestPolicy::Auto, None) => self.verified_type(view.ledger_id()),
        }
    }

    /// Checks the entries from the first while their digests verify under a type
    /// known without inference (a computed digest: CRC-32C, CRC-32, or HMAC with its
    /// key), writing each into `out`; returns how many. The first entry that is
    /// anything else is left for [`DigestChecker::check_one`]. Learns nothing, so
    /// checking entries again is harmless. `out` may be the callers' own row
    /// records holding a [`CheckedEntry`], which are then written in place.
    ///
    /// A checker that does not verify frames the same entries and computes
    /// nothing: their verdict is [`DigestStatus::NotAsked`], as `check_one` gives them.
    pub fn check_group<C: BorrowMut<CheckedEntry>>(&mut self, entries: &[&[u8]], out: &mut [C]) -> usize {
        let n = entries.len().min(GROUP_LEN).min(out.len());
        let verdict = if self.verify { DigestStatus::Verified } else { DigestStatus::NotAsked };
        let mut heads: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
        let mut tails: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
        let mut stored = [0u32; GROUP_LEN];
        let mut crc_rows = [0u8; GROUP_LEN];
        let mut crcs = 0;
        let mut framed = 0;
        // Frame while the type is known and has a computed digest.
        for (i, &bytes) in entries[..n].iter().enumerate() {
            // The headers of mid-size entries a few entries on are asked for now: a
            // batch larger than the caches is otherwise framed at the latency of
            // each entry's first line.
            #[cfg(target_arch = "x86_64")]
            if let Some(ahead) = entries.get(i + HEADERS_AHEAD) {
                // SAFETY: a prefetch is a hint; it never faults.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ahead.as_ptr().cast()) };
            }
            let Some((view, rest)) = HeaderView::read(bytes) else { break };
            let Some(dt) = self.known_type(&view) else { break };
            if dt == DigestType::Dummy || rest.len() < dt.len() {
                break;
            }
            let (head, digest_and_payload) = bytes.split_at(view.len());
            *out[i].borrow_mut() = CheckedEntry {
                header: view.to_header(),
                digest_type: Some(dt),
                payload_at: (view.len() + dt.len()) as u32,
                verdict,
            };
            if dt == DigestType::Crc32c && self.verify {
                let (digest, payload) = digest_and_payload.split_at(4);
                heads[crcs] = head;
                tails[crcs] = payload;
                stored[crcs] = u32::from_be_bytes(digest.try_into().expect("4 bytes"));
                crc_rows[crcs] = i as u8;
                crcs += 1;
            }
            framed = i + 1;
        }
        if !self.verify {
            return framed;
        }
        let mut ok = [true; GROUP_LEN];
        if crcs > 0 {
            let mut computed = [0u32; GROUP_LEN];
            crc32c_concat_many(&mut computed[..crcs], &heads[..crcs], &tails[..crcs]);
            for k in 0..crcs {
                ok[crc_rows[k] as usize] = computed[k] == stored[k];
            }
        }
        for i in 0..framed {
            let c: &CheckedEntry = out[i].borrow();
            let dt = c.digest_type.expect("framed with a type");
            if dt != DigestType::Crc32c {
                let entry = Entry::frame(entries[i], Some(dt)).expect("framed above");
                ok[i] = entry.digest_matches(self.setting_of(c.header.ledger_id).digester(dt));
            }
            if !ok[i] {
                return i;
            }
        }
        framed
    }

    /// Learns what an entry taught of its ledger (see [`assess`](Self::assess)).
    pub fn learn(&mut self, lesson: Lesson) {
        let Some(state) = lesson.state else { return };
        self.ledgers.insert(lesson.key, state);
        // (The cache serves V1 ledgers, whose scope is 0.)
        if let (Some(dt), 0) = (state.verified, lesson.key.0) {
            self.recent[recent_slot(lesson.key.1)] = (lesson.key.1, dt);
        }
    }

    /// When the entry whose header `head` holds is neither its ledger's entry 0 nor
    /// the one after the last entry of its ledger checked (or in `pending`, an entry
    /// checked but not yet learned): the ledger and entry ids of its previous entry
    /// as they start a header's fields (big-endian).
    pub fn missing_predecessor(&self, head: &[u8], pending: Option<Lesson>) -> Option<[u8; 16]> {
        let (view, _) = HeaderView::read(head)?;
        let id = view.entry_id();
        let study = Study::new(&self.ledgers, ledger_key(&view), pending);
        let seen = study.peek().and_then(|s| s.last).is_some_and(|(last, _)| last.checked_add(1) == Some(id));
        if id <= 0 || seen {
            return None;
        }
        let mut ids = [0u8; 16];
        ids[..8].copy_from_slice(&view.ledger_id().to_be_bytes());
        ids[8..].copy_from_slice(&(id - 1).to_be_bytes());
        Some(ids)
    }

    /// Checks one entry, learning its ledger's type under inference.
    pub fn check_one(&mut self, bytes: &[u8]) -> Outcome {
        let (outcome, lesson) = self.assess(bytes, None);
        if let Some(lesson) = lesson {
            self.learn(lesson);
        }
        outcome
    }

    /// Checks one entry as [`check_one`](Self::check_one) does, learning nothing:
    /// what the entry teaches of its ledger comes back as a lesson, for
    /// [`learn`](Self::learn) once the entry is taken as one. `base`: a lesson not
    /// yet learned that the check builds on (the check of the same entry before a
    /// look-ahead, and what the look-ahead found).
    pub fn assess(&self, bytes: &[u8], base: Option<Lesson>) -> (Outcome, Option<Lesson>) {
        let view = match HeaderView::parse(bytes) {
            Ok((view, _)) => view,
            Err(e) => return (Outcome::Unframed(e), None),
        };
        let mut study = Study::new(&self.ledgers, ledger_key(&view), base);
        let outcome = self.assess_in(bytes, &view, &mut study);
        (outcome, Some(study.lesson()))
    }

    fn assess_in(&self, bytes: &[u8], view: &HeaderView<'_>, study: &mut Study<'_>) -> Outcome {
        let ledger_id = view.ledger_id();
        let policy = self.setting_of(ledger_id).policy;
        let dt = match (policy, view.declared_digest()) {
            (DigestPolicy::Fixed(named), Some(declared)) if named != declared => {
                return Outcome::Unframed(Error::new(ErrorKind::DigestTypeMismatch, 0,
                    format!("entry declares digest type {declared}, the reader was told {named}")));
            }
            (DigestPolicy::Fixed(named), _) => Some(named),
            (DigestPolicy::Auto, Some(declared)) => Some(declared),
            (DigestPolicy::Auto, None) => None,
        };
        let outcome = match dt {
            Some(dt) => self.check_as(bytes, view, dt, false, study),
            None => match self.studied_type(study) {
                Some(dt) => self.check_as(bytes, view, dt, true, study),
                None => self.infer(bytes, view, study),
            },
        };
        if let Outcome::Framed(_, Some(_)) = &outcome {
            // A damaged entry's length field vouches for nothing, though its chain held.
            if study.peek().is_some_and(|s| s.last.is_some_and(|(id, _)| id == view.entry_id())) {
                study.edit().last_vouched = false;
            }
        }
        outcome
    }

    /// Checks `bytes` under `dt`: named, declared, or (`learned`) the type its
    /// ledger's entries verified under before.
    fn check_as(&self, bytes: &[u8], view: &HeaderView<'_>, dt: DigestType, learned: bool, study: &mut Study<'_>) -> Outcome {
        let entry = match decode_entry(bytes, Some(dt)) {
            Ok(e) => e,
            Err(e) => return Outcome::Unframed(e),
        };
        let payload_at = entry.payload_offset() as u32;
        let checked = |verdict| CheckedEntry { header: entry.header, digest_type: Some(dt), payload_at, verdict };
        if dt == DigestType::Dummy {
            // Nothing to compute. In a file, the length chain is what there is to
            // check (a phantom entry framed out of damage proves nothing else); an
            // entry on its own is checked as DigestManager checks DUMMY: not at all.
            return match self.chain_digest_len(view, bytes.len(), study).digest_len {
                _ if !self.verify => Outcome::Framed(checked(DigestStatus::NotAsked), None),
                Some(d) if d != 0 && self.dummy_chains => {
                    Outcome::Framed(checked(DigestStatus::Mismatch), Some(dummy_chain_error(view, d)))
                }
                _ if self.dummy_chains && !writer_ids(view) => {
                    Outcome::Framed(checked(DigestStatus::Mismatch), Some(dummy_ids_error(view)))
                }
                _ => Outcome::Framed(checked(DigestStatus::Verified), None),
            };
        }
        if !self.verify {
            return Outcome::Framed(checked(DigestStatus::NotAsked), None);
        }
        let setting = self.setting_of(view.ledger_id());
        if entry.digest_matches(setting.digester(dt)) {
            return Outcome::Framed(checked(DigestStatus::Verified), None);
        }
        // Inferring, an HMAC digest without a password is tried with the empty one
        // (Pulsar's); when that fails it cannot be checked, unless the ledger's
        // entries verified with it before. (Named HMAC is checked with the password
        // given, empty or not, as BookKeeper checks it.)
        // A V2 HMAC ledger whose entries the password given never verifies has another
        // (see `LookAhead::finish`): unchecked, as for a V1 ledger.
        let no_password = !setting.password_given || study.peek().is_some_and(|s| s.password_fails && s.verified.is_none());
        if dt == DigestType::Hmac && !learned && setting.policy == DigestPolicy::Auto && no_password {
            // Its length chain is what can be checked (as for DUMMY): a size or length
            // field one off is damage, not another password.
            let chain_len = self.chain_digest_len(view, bytes.len(), study).against_unchecked();
            if let Some(d) = chain_len.filter(|&d| self.dummy_chains && d != DigestType::Hmac.len() as i64) {
                return Outcome::Framed(checked(DigestStatus::Mismatch), Some(hmac_chain_error(view, d)));
            }
            study.span_unconfirmed = chain_len.is_none();
            return Outcome::Framed(checked(DigestStatus::Unchecked(Unchecked::NoPassword)), None);
        }
        Outcome::Framed(checked(DigestStatus::Mismatch), Some(entry.digest_mismatch()))
    }

    /// A V1 entry under inference whose ledger has not verified before.
    fn infer(&self, bytes: &[u8], view: &HeaderView<'_>, study: &mut Study<'_>) -> Outcome {
        let ledger_id = view.ledger_id();
        let header = view.to_header();
        let setting = self.setting_of(ledger_id);
        // What the ledger's earlier entries showed, then this entry's own chain.
        let prior = study.peek().copied().unwrap_or_default();
        let chain = self.chain_digest_len(view, bytes.len(), study);
        let (chain_len, against_unchecked) = (chain.digest_len, chain.against_unchecked());
        let chained = chain_len.and_then(type_of_digest_len);
        let prior_chained = if prior.chains_disagree { None } else { prior.chained };
        let believed = chained.or(prior_chained);
        // A ledger its chains show to be DUMMY or HMAC is not tried against the CRCs
        // again (an entry of it that breaks the pattern is damaged, not of another
        // type), and the empty password, once it failed, not again.
        let agrees = chained.is_none() || chained == prior_chained;
        let state_password_fails = prior.password_fails;
        let candidates: &[DigestType] = match prior_chained {
            Some(DigestType::Dummy) if agrees => &[],
            Some(DigestType::Hmac) if agrees && (setting.password_given || !prior.empty_key_failed) => &[DigestType::Hmac],
            Some(DigestType::Hmac) if agrees => &[],
            _ => &[DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac],
        };
        // HMAC with the given password, or with the empty one Pulsar uses.
        for &dt in candidates {
            let Some(entry) = Entry::frame(bytes, Some(dt)) else { continue };
            if entry.digest_matches(setting.digester(dt)) {
                study.edit().verified = Some(dt);
                // Inference computed the digest, so its answer is a verdict either way.
                let verdict = DigestStatus::Verified;
                let payload_at = entry.payload_offset() as u32;
                return Outcome::Framed(CheckedEntry { header, digest_type: Some(dt), payload_at, verdict }, None);
            }
        }
        if !setting.password_given && candidates.contains(&DigestType::Hmac) && believed == Some(DigestType::Hmac) {
            study.edit().empty_key_failed = true;
        }
        let Some(dt) = believed else {
            let unknown = CheckedEntry { header, digest_type: None, payload_at: 0, verdict: DigestStatus::Unchecked(Unchecked::UnknownType) };
            // A chain that leaves room for no digest any type has says the header's
            // length (or the record's size) is wrong: damage, not an unknown type.
            if let Some(d) = against_unchecked {
                if self.verify {
                    return Outcome::Framed(CheckedEntry { verdict: DigestStatus::Mismatch, ..unknown }, Some(chain_error(view, d)));
                }
            }
            study.span_unconfirmed = against_unchecked.is_none();
            return Outcome::Framed(unknown, None);
        };
        let Some(entry) = Entry::frame(bytes, Some(dt)) else {
            study.span_unconfirmed = against_unchecked.is_none();
            return Outcome::Framed(
                CheckedEntry { header, digest_type: None, payload_at: 0, verdict: DigestStatus::Unchecked(Unchecked::UnknownType) },
                None,
            );
        };
        let payload_at = entry.payload_offset() as u32;
        let checked = |verdict| CheckedEntry { header, digest_type: Some(dt), payload_at, verdict };
        match dt {
            DigestType::Dummy if self.verify && self.dummy_chains && !writer_ids(view) => {
                Outcome::Framed(checked(DigestStatus::Mismatch), Some(dummy_ids_error(view)))
            }
            DigestType::Dummy if self.verify => Outcome::Framed(checked(DigestStatus::Verified), None),
            // HMAC by its chain, not verifying with the password given: damaged, unless
            // none of the ledger's entries verify with it (another password: see
            // `password_fails`). Without a password it cannot be checked.
            DigestType::Hmac if self.verify && setting.password_given && !state_password_fails => {
                Outcome::Framed(checked(DigestStatus::Mismatch), Some(entry.digest_mismatch()))
            }
            // Without its password, its length chain is what can be checked (as for
            // DUMMY): a size or length field one off is damage, not another password.
            DigestType::Hmac if self.verify && self.dummy_chains && against_unchecked.is_some_and(|d| d != DigestType::Hmac.len() as i64) => {
                let d = against_unchecked.expect("checked above");
                Outcome::Framed(checked(DigestStatus::Mismatch), Some(hmac_chain_error(view, d)))
            }
            DigestType::Hmac => {
                study.span_unconfirmed = against_unchecked.is_none();
                Outcome::Framed(checked(DigestStatus::Unchecked(Unchecked::NoPassword)), None)
            }
            _ if !self.verify => Outcome::Framed(checked(DigestStatus::NotAsked), None),
            // A CRC that did not verify: its entry is damaged.
            _ => Outcome::Framed(checked(DigestStatus::Mismatch), Some(entry.digest_mismatch())),
        }
    }

    /// What an entry further on says of its V1 ledger's type (the scan looks ahead
    /// when an entry's type is unknown): the type whose digest verifies it, tried as
    /// inference tries them. Learns nothing; see [`DigestChecker::learn`].
    pub fn probe(&self, bytes: &[u8]) -> Option<DigestType> {
        let (view, _) = HeaderView::read(bytes)?;
        // Only what inference learns: a V1 ledger's type, or whether a V2 HMAC
        // ledger's password is the one given.
        let learns = self.setting_of(view.ledger_id()).policy == DigestPolicy::Auto
            && matches!(view.declared_digest(), None | Some(DigestType::Hmac));
        learns.then(|| self.keys.verifying_type(bytes)).flatten()
    }

    /// The keys the checker checks with.
    pub fn keys(&self) -> &Arc<DigestKeys> {
        &self.keys
    }

    /// Whether entries of a V1 ledger under inference verified (so its type is
    /// certain).
    pub fn verified_ledger(&self, key: LedgerKey) -> bool {
        self.ledgers.get(&key).is_some_and(|s| s.verified.is_some())
    }

    /// The ledger whose entries further on should be looked at, after `outcome`:
    /// an entry under inference that did not verify, of a ledger whose entries never
    /// have (once per ledger is enough; the caller keeps track).
    pub fn needs_look_ahead(&self, outcome: &Outcome) -> Option<LedgerKey> {
        let Outcome::Framed(c, _) = outcome else { return None };
        let ledger_id = c.header.ledger_id;
        let key = (c.header.scope_id, ledger_id);
        // A V2 entry declares its type; an HMAC one that failed may have another
        // password than the one given.
        let learns = c.header.format == EntryFormat::V1
            || (c.digest_type == Some(DigestType::Hmac) && c.verdict == DigestStatus::Mismatch);
        (learns
            && c.verdict != DigestStatus::Verified
            && self.setting_of(ledger_id).policy == DigestPolicy::Auto
            && !self.verified_ledger(key))
        .then_some(key)
    }

    /// The digest length this entry's length chain gives (see the module notes),
    /// recording the entry as its ledger's last in `study`.
    fn chain_digest_len(&self, view: &HeaderView<'_>, entry_len: usize, study: &mut Study<'_>) -> LengthChain {
        let (entry_id, length) = (view.entry_id(), view.length());
        let state = study.peek();
        let (previous_length, vouched) = match (entry_id, state.and_then(|s| s.last)) {
            (0, _) => (Some(0), true),
            (e, Some((last_id, last_length))) if last_id == e - 1 => (Some(last_length), state.is_some_and(|s| s.last_vouched)),
            _ => (None, false),
        };
        let d = previous_length.and_then(|prev| chained_digest_len(view, entry_len, prev));
        let state = study.edit();
        let holds = d.is_some_and(|d| type_of_digest_len(d).is_some());
        // An entry whose chain breaks is not the next one's link: its length
        // field may be what is damaged.
        if holds || d.is_none() {
            state.last = Some((entry_id, length));
            state.last_vouched = holds;
        }
        // (What the chain says of the type matters to V1 entries only: V2 ones
        // declare it.) A link that breaks says one of its two length fields is
        // damaged: a CRC type the chain named, that no digest confirmed, may have
        // come from the damaged one, and is withdrawn.
        let is_crc = |dt: DigestType| matches!(dt, DigestType::Crc32 | DigestType::Crc32c);
        if d.is_some() && !holds && state.verified.is_none() && state.chained.is_some_and(is_crc) {
            state.chained = None;
        }
        if let Some(dt) = d.and_then(type_of_digest_len).filter(|_| view.format() == EntryFormat::V1) {
            match state.chained {
                Some(prev) if prev != dt => state.chains_disagree = true,
                _ => state.chained = Some(dt),
            }
        }
        LengthChain { digest_len: d, from_vouched: vouched }
    }
}

/// One entry on its own, as `decode_entry` checks it: framed under `policy` (a V1
/// entry's type inferred as in a stream of one, where its own length chain can
/// still tell a DUMMY or HMAC entry 0), its digest checked when `verify`, then the
/// expected ids, in BookKeeper's order. An entry whose type nothing tells is a
/// `DigestMismatch` error saying so; an HMAC entry whose password is unknown comes
/// back unchecked.
pub fn check_entry<'a>(
    bytes: &'a [u8],
    policy: DigestPolicy,
    password: &[u8],
    verify: bool,
    ledger_id: Option<i64>,
    entry_id: Option<i64>,
) -> crate::error::Result<(Entry<'a>, DigestStatus)> {
    check_entry_with(bytes, &LedgerDigestSettings::new(policy, password), verify, ledger_id, entry_id)
}

/// [`check_entry`] under any digest settings (a password given empty, say).
pub fn check_entry_with<'a>(
    bytes: &'a [u8],
    digests: &LedgerDigestSettings,
    verify: bool,
    ledger_id: Option<i64>,
    entry_id: Option<i64>,
) -> crate::error::Result<(Entry<'a>, DigestStatus)> {
    let password = digests.default_setting().1;
    let mut checker = DigestChecker::new(digests, verify);
    let (checked, error) = match checker.check_one(bytes) {
        Outcome::Framed(c, e) => (c, e),
        Outcome::Unframed(e) => return Err(e),
    };
    let Some(dt) = checked.digest_type else {
        return Err(Error::new(ErrorKind::DigestMismatch, V1_HEADER_LEN as u64, format!(
            "no digest type verifies this V1 entry (tried crc32c, crc32, hmac{}) and its length field does not tell \
             the digest's length; name the digest type",
            if password.is_empty() { " with the empty password; give the password to try it" } else { "" }
        )));
    };
    if let (Some(e), true) = (error, verify) {
        return Err(e);
    }
    let entry = Entry::frame(bytes, Some(dt)).expect("the checker framed it");
    if verify {
        entry.check_ids(ledger_id, entry_id)?;
    }
    Ok((entry, checked.verdict))
}

#[cold]
fn chain_error(view: &HeaderView<'_>, d: i64) -> Error {
    let what = if view.entry_id() == 0 { "the entry's own payload".to_string() } else { format!("ledger {}'s previous entry", view.ledger_id()) };
    Error::new(ErrorKind::Corrupt, 24 + (view.len() - V1_HEADER_LEN) as u64, format!(
        "no digest type verifies this entry, and its length field does not fit {what}: it leaves {d} bytes for a \
         digest, which no digest type has"
    ))
}

/// Whether an entry's ids are ones a writer writes: its LAC below its id (an entry is
/// sent before it can be confirmed), its id below 2^40 (no ledger gets that far).
/// In a file, that is what a DUMMY entry (no digest) can be checked for besides its
/// length chain: a damaged one, or one framed out of damage, rarely passes.
fn writer_ids(view: &HeaderView<'_>) -> bool {
    let (entry_id, lac) = (view.entry_id(), view.last_add_confirmed());
    (0..1 << 40).contains(&entry_id) && (-1..entry_id).contains(&lac)
}

#[cold]
fn dummy_ids_error(view: &HeaderView<'_>) -> Error {
    Error::new(ErrorKind::IdMismatch, 8 + (view.len() - V1_HEADER_LEN) as u64, format!(
        "this DUMMY entry's ids are not ones a writer writes (entry id {}, last add confirmed {}): with no digest, \
         they are what there is to check",
        view.entry_id(),
        view.last_add_confirmed()
    ))
}

#[cold]
fn hmac_chain_error(view: &HeaderView<'_>, d: i64) -> Error {
    Error::new(ErrorKind::Corrupt, 24 + (view.len() - V1_HEADER_LEN) as u64, format!(
        "the length field of this HMAC entry (unchecked: no password verifies it) does not fit ledger {}'s \
         running length: it leaves {d} bytes for the 20-byte HMAC",
        view.ledger_id()
    ))
}

#[cold]
fn dummy_chain_error(view: &HeaderView<'_>, d: i64) -> Error {
    Error::new(ErrorKind::Corrupt, 24 + (view.len() - V1_HEADER_LEN) as u64, format!(
        "the length field of this DUMMY entry does not fit ledger {}'s running length: it leaves {d} bytes that \
         DUMMY has no digest for (a damaged entry, or a ledger of another digest type)",
        view.ledger_id()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::encode_entry;
    use crate::metadata::LedgerDigestInfo;

    /// Entries `0..count` of a ledger as a client writes them: running length, LAC
    /// one behind.
    fn ledger(dt: DigestType, pw: &[u8], ledger_id: i64, count: i64, size: usize) -> Vec<Vec<u8>> {
        let d = Digester::new(dt, pw);
        (0..count)
            .map(|e| {
                let payload = vec![e as u8; size + e as usize];
                let length: i64 = (0..=e).map(|k| (size + k as usize) as i64).sum();
                encode_entry(&EntryHeader::new(0, ledger_id, e, e - 1, length), &payload, &d).unwrap()
            })
            .collect()
    }

    fn verdicts(checker: &mut DigestChecker, entries: &[Vec<u8>]) -> Vec<(Option<DigestType>, DigestStatus, bool)> {
        entries
            .iter()
            .map(|e| match checker.check_one(e) {
                Outcome::Framed(c, err) => (c.digest_type, c.verdict, err.is_some()),
                Outcome::Unframed(err) => panic!("unframed: {err}"),
            })
            .collect()
    }

    #[test]
    fn auto_reads_dummy_and_hmac_ledgers_by_their_length_chain() {
        let mut c = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Auto, b""), true);
        let dummy = ledger(DigestType::Dummy, b"", 7, 5, 10);
        assert!(verdicts(&mut c, &dummy).iter().all(|v| *v == (Some(DigestType::Dummy), DigestStatus::Verified, false)));
        let hmac = ledger(DigestType::Hmac, b"secret", 8, 5, 10);
        let got = verdicts(&mut c, &hmac);
        assert!(got.iter().all(|v| *v == (Some(DigestType::Hmac), DigestStatus::Unchecked(Unchecked::NoPassword), false)), "{got:?}");
        // With the password they verify.
        let mut keyed = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Auto, b"secret"), true);
        assert!(verdicts(&mut keyed, &hmac).iter().all(|v| v.1 == DigestStatus::Verified));
        // An HMAC ledger with the empty password (Pulsar's) verifies without one.
        let pulsar = ledger(DigestType::Hmac, b"", 9, 3, 10);
        assert!(verdicts(&mut c, &pulsar).iter().all(|v| *v == (Some(DigestType::Hmac), DigestStatus::Verified, false)));
    }

    #[test]
    fn assessing_an_entry_learns_nothing_until_its_lesson_is_learned() {
        let mut c = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Auto, b""), true);
        let dummy = ledger(DigestType::Dummy, b"", 7, 3, 10);
        let (first, lesson) = c.assess(&dummy[0], None);
        assert!(matches!(first, Outcome::Framed(CheckedEntry { digest_type: Some(DigestType::Dummy), verdict: DigestStatus::Verified, .. }, None)));
        // Not learned: entry 1 has no predecessor yet, so nothing tells its type...
        let (second, _) = c.assess(&dummy[1], None);
        assert!(matches!(second, Outcome::Framed(CheckedEntry { digest_type: None, verdict: DigestStatus::Unchecked(Unchecked::UnknownType), .. }, None)));
        // ...unless the check builds on entry 0's lesson, or the lesson is learned.
        let (second, _) = c.assess(&dummy[1], lesson);
        assert!(matches!(second, Outcome::Framed(CheckedEntry { digest_type: Some(DigestType::Dummy), verdict: DigestStatus::Verified, .. }, None)));
        c.learn(lesson.unwrap());
        assert_eq!(verdicts(&mut c, &dummy[1..]), vec![(Some(DigestType::Dummy), DigestStatus::Verified, false); 2]);
    }

    #[test]
    fn a_look_ahead_lesson_learned_makes_the_ledger_verify_under_the_type_found() {
        let mut c = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Auto, b""), true);
        let mut crc = ledger(DigestType::Crc32, b"", 4, 3, 20);
        crc[0][40] ^= 1;
        let mut ahead = LookAhead::new((0, 4));
        assert!(ahead.consider(&c, &crc[2]));
        let lesson = ahead.lesson(&c, None);
        assert!(!c.verified_ledger((0, 4)));
        c.learn(lesson);
        assert!(c.verified_ledger((0, 4)));
        assert_eq!(verdicts(&mut c, &crc[..1])[0], (Some(DigestType::Crc32), DigestStatus::Mismatch, true));
    }

    #[test]
    fn a_damaged_crc_entry_is_a_mismatch_and_an_isolated_unknown_one_unchecked() {
        let mut c = DigestChecker::new(&LedgerDigestSettings::default(), true);
        let mut crc = ledger(DigestType::Crc32c, b"", 3, 4, 20);
        crc[2][40] ^= 1;
        let got = verdicts(&mut c, &crc);
        assert_eq!(got[2], (Some(DigestType::Crc32c), DigestStatus::Mismatch, true));
        // The first entry of a ledger damaged: its chain (entry 0) still says CRC-32C.
        let mut first = ledger(DigestType::Crc32c, b"", 4, 2, 20);
        first[0][40] ^= 1;
        assert_eq!(verdicts(&mut c, &first)[0], (Some(DigestType::Crc32c), DigestStatus::Mismatch, true));
        // A lone HMAC entry (not entry 0, no predecessor): nothing tells its type.
        let lone = &ledger(DigestType::Hmac, b"pw", 5, 4, 20)[3];
        assert_eq!(verdicts(&mut c, std::slice::from_ref(lone))[0], (None, DigestStatus::Unchecked(Unchecked::UnknownType), false));
    }

    #[test]
    fn a_crc_type_a_damaged_length_field_suggests_is_withdrawn_when_the_next_link_breaks() {
        let mut c = DigestChecker::new(&LedgerDigestSettings::default(), true).with_dummy_chains();
        let mut entries = ledger(DigestType::Dummy, b"", 6, 4, 10);
        // Entry 0's length 8 short: its chain leaves 8 bytes, a CRC-32 digest's
        // length, and no CRC verifies it. Entry 1's chain then breaks, and entry 2
        // has none of its own.
        let length = i64::from_be_bytes(entries[0][24..32].try_into().unwrap()) - 8;
        entries[0][24..32].copy_from_slice(&length.to_be_bytes());
        let got = verdicts(&mut c, &entries[..1]);
        assert_eq!(got[0], (Some(DigestType::Crc32), DigestStatus::Mismatch, true));
        // Entry 2 is intact: not called a CRC mismatch for what entry 0's damage said.
        let got = verdicts(&mut c, &entries[1..3]);
        assert_eq!(got[1], (None, DigestStatus::Unchecked(Unchecked::UnknownType), false));
        // With no link broken, the type stands: damaged CRC entries of one ledger,
        // one without a chain of its own, are all mismatches.
        let mut c = DigestChecker::new(&LedgerDigestSettings::default(), true);
        let mut crc = ledger(DigestType::Crc32c, b"", 8, 3, 20);
        for e in &mut crc {
            *e.last_mut().unwrap() ^= 1;
        }
        let got = verdicts(&mut c, &[crc[0].clone(), crc[2].clone()]);
        assert!(got.iter().all(|v| *v == (Some(DigestType::Crc32c), DigestStatus::Mismatch, true)), "{got:?}");
    }

    #[test]
    fn a_dummy_entry_its_chain_contradicts_is_flagged() {
        let mut c = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Dummy), b""), true).with_dummy_chains();
        let mut entries = ledger(DigestType::Dummy, b"", 2, 4, 10);
        // Entry 2 claims 4 more payload bytes than it holds.
        let length = i64::from_be_bytes(entries[2][24..32].try_into().unwrap()) + 4;
        entries[2][24..32].copy_from_slice(&length.to_be_bytes());
        let got = verdicts(&mut c, &entries);
        assert_eq!(got[2], (Some(DigestType::Dummy), DigestStatus::Mismatch, true));
        assert_eq!(got[1], (Some(DigestType::Dummy), DigestStatus::Verified, false));
    }

    #[test]
    fn groups_verify_known_types_together_and_stop_at_the_first_other() {
        let digests = LedgerDigestSettings::new(DigestPolicy::Auto, b"")
            .with_ledger(6, LedgerDigestInfo { digest_type: Some(DigestType::Crc32), password: vec![] });
        let mut c = DigestChecker::new(&digests, true);
        let a = ledger(DigestType::Crc32c, b"", 1, 30, 5);
        let b = ledger(DigestType::Crc32, b"", 6, 30, 5);
        let mut mixed: Vec<Vec<u8>> = a.iter().zip(&b).flat_map(|(x, y)| [x.clone(), y.clone()]).collect();
        let refs: Vec<&[u8]> = mixed.iter().map(Vec::as_slice).collect();
        let mut out = [CheckedEntry { header: EntryHeader::new(0, 0, 0, 0, 0), digest_type: None, payload_at: 0, verdict: DigestStatus::NotAsked }; GROUP_LEN];
        // Ledger 1 is not known yet: nothing goes in a group before its first entry is checked.
        assert_eq!(c.check_group(&refs, &mut out), 0);
        assert!(matches!(c.check_one(refs[0]), Outcome::Framed(CheckedEntry { verdict: DigestStatus::Verified, .. }, None)));
        assert_eq!(c.check_group(&refs[1..], &mut out), GROUP_LEN);
        assert!(out.iter().all(|e| e.verdict == DigestStatus::Verified));
        mixed[20][45] ^= 1;
        let refs: Vec<&[u8]> = mixed.iter().map(Vec::as_slice).collect();
        assert_eq!(c.check_group(&refs[1..], &mut out), 19);
    }

    #[test]
    fn groups_not_verified_frame_as_check_one_does_and_compute_nothing() {
        let digests = LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Crc32c), b"");
        let mut damaged = ledger(DigestType::Crc32c, b"", 1, 30, 5);
        damaged[7][45] ^= 1;
        damaged[20].truncate(30);
        let refs: Vec<&[u8]> = damaged.iter().map(Vec::as_slice).collect();
        let mut grouped = DigestChecker::new(&digests, false);
        let mut out = [CheckedEntry { header: EntryHeader::new(0, 0, 0, 0, 0), digest_type: None, payload_at: 0, verdict: DigestStatus::Verified }; GROUP_LEN];
        // Up to the truncated entry, which does not frame; the damaged digest is not looked at.
        assert_eq!(grouped.check_group(&refs, &mut out), 20);
        let mut single = DigestChecker::new(&digests, false);
        for (i, e) in refs[..20].iter().enumerate() {
            assert!(matches!(single.check_one(e), Outcome::Framed(c, None) if c == out[i]), "entry {i}");
            assert_eq!(out[i].verdict, DigestStatus::NotAsked);
        }
        assert!(matches!(single.check_one(refs[20]), Outcome::Unframed(_)));
    }
}
