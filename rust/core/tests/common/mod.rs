//! Shared helpers for the integration tests: the golden corpus, manifests, hashes,
//! and checks that scans of byte ranges agree with whole-file scans.
#![allow(dead_code)]

use std::path::PathBuf;

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_entry, EntryHeader};
use bkcodec_core::files::entry_log::EntryLogItem;
use bkcodec_core::files::journal::{JournalItem, JournalRecordKind};
use bkcodec_core::files::{EntryLog, Journal};
use bkcodec_core::LedgerDigestSettings;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The golden corpus, from `BKCODEC_GOLDEN` or `<repo>/../shared/golden`. Tests that
/// call this carry `#[cfg_attr(not(golden_corpus), ignore = ...)]` (see build.rs), so
/// they run only where the corpus is (or is required): a missing part is a failure.
pub fn golden(sub: &str) -> PathBuf {
    let root = std::env::var_os("BKCODEC_GOLDEN").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden")
    });
    let p = root.join(sub);
    assert!(p.exists(), "golden corpus expected at {} (set BKCODEC_GOLDEN)", p.display());
    p
}

pub fn manifest(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("manifest line is JSON"))
        .collect()
}

pub fn records<'a>(rows: &'a [Value], kind: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["record"] == kind).collect()
}

pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

pub fn i64_of(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not a 64-bit integer: {v}"))
}

pub fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned 64-bit integer: {v}"))
}

/// A comparable summary of a scan item: (offset, span length, description).
pub type Item = (u64, u64, String);

pub fn log_items(log: &EntryLog<'_>, opts: &LedgerDigestSettings, start: u64, end: u64) -> Vec<Item> {
    log.scan_range(opts, start, end)
        .map(|it| match it {
            EntryLogItem::Entry(e) => (e.offset, e.size() + 4, format!(
                "entry {}/{}{}", e.header.ledger_id, e.header.entry_id, if e.reframed { " reframed" } else { "" })),
            EntryLogItem::LedgersMap(m) => (m.offset, m.bytes.len() as u64 + 4, format!("map {}", m.len())),
            EntryLogItem::Gap(g) => (g.offset, g.len, format!("gap {}", g.kind)),
        })
        .collect()
}

pub fn journal_items(j: &Journal<'_>, opts: &LedgerDigestSettings, start: u64, end: u64) -> Vec<Item> {
    j.scan_range(opts, start, end)
        .map(|it| match it {
            JournalItem::Record(r) => {
                let what = match r.kind {
                    JournalRecordKind::Entry { header, .. } => format!("entry {}/{}", header.ledger_id, header.entry_id),
                    k => format!("{} {:?}", k.name(), k.ledger_id()),
                };
                (r.offset, r.span_len(), format!("{what}{}", if r.reframed { " reframed" } else { "" }))
            }
            JournalItem::Gap(g) => (g.offset, g.len, format!("gap {}", g.kind)),
        })
        .collect()
}

/// Items must tile the file from `from` on: each starts where the previous ended.
pub fn assert_contiguous(items: &[Item], from: u64, len: u64) {
    let mut at = from;
    for (off, n, what) in items {
        assert_eq!(*off, at, "item {what} at {off} does not start where the previous ended ({at})");
        assert!(*n > 0, "empty item {what} at {off}");
        at = off + n;
    }
    if !items.is_empty() {
        assert_eq!(at, len, "items end at {at}, the file at {len}");
    }
}

/// Cut points for tilings: every `step`-th offset, plus offsets around each item start.
pub fn cut_points(items: &[Item], len: u64, step: u64, around: u64) -> Vec<u64> {
    let mut cuts: Vec<u64> = (0..=len).step_by(step.max(1) as usize).collect();
    for (off, _, _) in items {
        for d in 0..=2 * around {
            let c = (off + d).saturating_sub(around);
            if c <= len {
                cuts.push(c);
            }
        }
    }
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// Scanning `[0, len)` as consecutive ranges split at `cuts` gives the whole-file
/// scan, item for item; and so do two-range splits at (up to 400 of) the cuts.
pub fn assert_tilings<F: Fn(u64, u64) -> Vec<Item>>(scan: F, len: u64, cuts: &[u64], label: &str) {
    let whole = scan(0, u64::MAX);
    let mut tiled = Vec::new();
    let mut prev = 0;
    for &c in cuts.iter().chain(std::iter::once(&u64::MAX)) {
        if c < prev {
            continue;
        }
        tiled.extend(scan(prev, c));
        prev = c;
    }
    assert_same(&tiled, &whole, &format!("{label}: tiling at {} cuts", cuts.len()));
    let stride = cuts.len().div_ceil(400).max(1);
    for &c in cuts.iter().step_by(stride) {
        let mut two = scan(0, c);
        two.extend(scan(c, len));
        assert_same(&two, &whole, &format!("{label}: split at {c}"));
    }
}

/// Equal item lists, or a panic showing where they first differ.
pub fn assert_same(got: &[Item], want: &[Item], label: &str) {
    if got == want {
        return;
    }
    let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
    let lo = i.saturating_sub(2);
    panic!(
        "{label}: differs from the whole scan at item {i} ({} vs {} items)\n got: {:?}\nwant: {:?}",
        got.len(),
        want.len(),
        &got[lo..(i + 3).min(got.len())],
        &want[lo..(i + 3).min(want.len())]
    );
}

/// A deterministic pseudo-random generator for test inputs (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// `count` entries of four ledgers (100 to 103) of the four digest types (HMAC keyed
/// `secret`), as their clients write them (running length, LAC one behind); a third
/// of the payloads all zeros, the hard case for resynchronisation.
pub fn mixed_ledger_entries(rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
    let kinds = [DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac, DigestType::Dummy];
    let (mut next, mut length) = ([0i64; 4], [0i64; 4]);
    (0..count)
        .map(|_| {
            let i = rng.below(4) as usize;
            let size = [0usize, 3, 40, 200, 700, 3000][rng.below(6) as usize];
            let payload = if rng.below(3) == 0 { vec![0u8; size] } else { rng.bytes(size) };
            length[i] += size as i64;
            let h = EntryHeader::new(0, 100 + i as i64, next[i], next[i] - 1, length[i]);
            next[i] += 1;
            encode_entry(&h, &payload, &Digester::new(kinds[i], b"secret")).unwrap()
        })
        .collect()
}
