//! Journals of every version, and damaged journals: a garbage length in the middle
//! must not end the read when good records follow.

mod common;

use std::io::Cursor;

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_entry, encode_lac, EntryHeader};
use bkcodec_core::error::ErrorKind;
use bkcodec_core::files::journal::{JournalHeader, JournalRecordKind};
use bkcodec_core::files::{GapKind, Journal, JournalItem, JournalWriter};
use bkcodec_core::{DigestPolicy, LedgerDigestSettings};
use common::*;

#[derive(Debug, Clone)]
struct Rec {
    offset: u64,
    bytes: Vec<u8>,
    kind: &'static str,
    verifiable: bool,
}

impl Rec {
    fn end(&self) -> u64 {
        self.offset + self.bytes.len() as u64
    }
}

fn digests() -> LedgerDigestSettings {
    LedgerDigestSettings::new(DigestPolicy::Auto, b"secret")
}

/// A journal with entries of three digest types, meta records and flushes.
fn sample_journal(seed: u64, version: i32, alignment: u64, prealloc: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut w = JournalWriter::new(Cursor::new(Vec::new()), version, alignment, prealloc).unwrap();
    let kinds = [DigestType::Crc32c, DigestType::Hmac, DigestType::Dummy];
    let mut next = [0i64; 3];
    let mut length = [0i64; 3];
    for i in 0..50 {
        match i % 9 {
            2 => {
                w.add_ledger_key(40 + (i % 3) as i64, &[i as u8; 20]).unwrap();
            }
            5 => {
                w.add_fence(41).unwrap();
            }
            7 => {
                let blob = encode_lac(40, next[0] - 1, &Digester::new(DigestType::Crc32c, b""));
                w.add_explicit_lac(40, &blob).unwrap();
            }
            _ => {
                let k = rng.below(3) as usize;
                let size = [0usize, 5, 100, 600, 2500][rng.below(5) as usize];
                let payload = if rng.below(3) == 0 { vec![0u8; size] } else { rng.bytes(size) };
                length[k] += size as i64;
                let h = EntryHeader::new(0, 40 + k as i64, next[k], next[k] - 1, length[k]);
                next[k] += 1;
                w.add_entry(&encode_entry(&h, &payload, &Digester::new(kinds[k], b"secret")).unwrap()).unwrap();
            }
        }
        if rng.below(3) == 0 {
            w.flush().unwrap();
        }
    }
    w.flush().unwrap();
    w.finish().unwrap().into_inner()
}

fn records_of(bytes: &[u8]) -> Vec<Rec> {
    let j = Journal::new(bytes).unwrap();
    j.scan(&LedgerDigestSettings::default())
        .filter_map(|it| match it {
            JournalItem::Record(r) => Some(Rec {
                offset: r.offset,
                bytes: bytes[r.offset as usize..(r.offset + r.span_len()) as usize].to_vec(),
                kind: r.kind.name(),
                verifiable: matches!(r.kind, JournalRecordKind::Entry { .. })
                    && bkcodec_core::entry::infer_digest_type(r.payload, Some(&Digester::new(DigestType::Hmac, b"secret"))).is_some(),
            }),
            JournalItem::Gap(g) => {
                assert_eq!(g.kind, GapKind::TrailingZeros);
                None
            }
        })
        .collect()
}

struct Found {
    records: Vec<(u64, Vec<u8>, bool, &'static str)>,
    gaps: Vec<bkcodec_core::files::Gap>,
}

impl Found {
    fn has(&self, r: &Rec) -> bool {
        self.records.iter().any(|(o, b, _, _)| *o == r.offset && *b == r.bytes)
    }
}

fn scan(bytes: &[u8], opts: &LedgerDigestSettings) -> Found {
    let j = Journal::new(bytes).unwrap();
    let items = journal_items(&j, opts, 0, u64::MAX);
    let from = if items.first().is_some_and(|i| i.0 == 0) { 0 } else { j.header().data_start().min(bytes.len() as u64) };
    assert_contiguous(&items, from, bytes.len() as u64);
    let mut f = Found { records: Vec::new(), gaps: Vec::new() };
    for it in j.scan(opts) {
        match it {
            JournalItem::Record(r) => f.records.push((
                r.offset,
                bytes[r.offset as usize..(r.offset + r.span_len()) as usize].to_vec(),
                r.reframed,
                r.kind.name(),
            )),
            JournalItem::Gap(g) => f.gaps.push(g),
        }
    }
    f
}

fn tile_check(bytes: &[u8], opts: &LedgerDigestSettings, around: &[u64], label: &str) {
    let j = Journal::new(bytes).unwrap();
    let whole = journal_items(&j, opts, 0, u64::MAX);
    let len = bytes.len() as u64;
    let mut cuts = cut_points(&whole, len, 1013, 3);
    for &a in around {
        cuts.extend(a.saturating_sub(80)..(a + 80).min(len));
    }
    cuts.sort_unstable();
    cuts.dedup();
    assert_tilings(|s, e| journal_items(&j, opts, s, e), len, &cuts, label);
}

#[test]
fn every_version_reads_back() {
    for version in [4, 5, 6] {
        let bytes = sample_journal(1, version, 512, 32 * 1024);
        let recs = records_of(&bytes);
        assert!(recs.iter().any(|r| r.kind == "fence") && recs.iter().any(|r| r.kind == "ledger_key"));
        assert_eq!(recs.iter().any(|r| r.kind == "explicit_lac"), version >= 6);
        assert_eq!(recs.iter().any(|r| r.kind == "padding"), version >= 5);
        if version == 4 {
            // Versions 1 to 3 share the record layout; 2 and 3 the 8-byte header.
            for older in [2i32, 3] {
                let mut b = bytes.clone();
                b[4..8].copy_from_slice(&older.to_be_bytes());
                let j = Journal::new(&b).unwrap();
                assert_eq!((j.header().version, j.header().data_start()), (older, 8));
                assert_eq!(records_of(&b).len(), recs.len());
            }
            // Version 1: no header at all.
            let v1 = bytes[8..].to_vec();
            let j = Journal::new(&v1).unwrap();
            assert_eq!((j.header().version, j.header().has_magic, j.header().data_start()), (1, false, 0));
            let v1_recs = records_of(&v1);
            assert_eq!(v1_recs.len(), recs.len());
            assert!(v1_recs.iter().zip(&recs).all(|(a, b)| a.offset + 8 == b.offset && a.bytes == b.bytes));
        }
    }
}

#[test]
fn headers() {
    assert_eq!(JournalHeader::parse(b"").unwrap().version, 1);
    assert_eq!(JournalHeader::parse(b"BKLG\0\0\0").unwrap().version, 1);
    for bad in [0i32, 7, -1, 1 << 20] {
        let mut h = b"BKLG".to_vec();
        h.extend_from_slice(&bad.to_be_bytes());
        let e = Journal::new(&h).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::UnsupportedVersion, 4), "{bad}");
    }
    // A V5 header cut short: the rest of the file is the torn header.
    let bytes = sample_journal(2, 5, 512, 0);
    let f = scan(&bytes[..100], &LedgerDigestSettings::default());
    assert!(f.records.is_empty());
    assert_eq!((f.gaps[0].offset, f.gaps[0].len, f.gaps[0].kind), (0, 100, GapKind::TornHeader));
}

#[test]
fn torn_journals_keep_every_complete_record() {
    let bytes = sample_journal(3, 6, 512, 0);
    let recs = records_of(&bytes);
    let mut cuts = Vec::new();
    for r in &recs {
        let n = r.bytes.len() as u64;
        for d in [0u64, 1, 3, 4, 6, 8, 13, 20, 24, 40, n / 2, n - 1] {
            if d < n {
                cuts.push(r.offset + d);
            }
        }
    }
    for &cut in &cuts {
        let torn = &bytes[..cut as usize];
        let f = scan(torn, &LedgerDigestSettings::default());
        let complete: Vec<&Rec> = recs.iter().filter(|r| r.end() <= cut).collect();
        assert_eq!(f.records.len(), complete.len(), "cut {cut}");
        assert!(complete.iter().all(|r| f.has(r)), "cut {cut}");
        let tail = complete.last().map_or(512, |r| r.end());
        let gaps: Vec<(u64, u64)> = f.gaps.iter().map(|g| (g.offset, g.len)).collect();
        assert_eq!(gaps, if cut > tail { vec![(tail, cut - tail)] } else { vec![] }, "cut {cut}: {:?}", f.gaps);
        assert!(f.gaps.iter().all(|g| matches!(g.kind, GapKind::TornRecord | GapKind::TrailingZeros)), "cut {cut}: {:?}", f.gaps);
    }
    for &cut in cuts.iter().step_by(11) {
        tile_check(&bytes[..cut as usize], &LedgerDigestSettings::default(), &[cut], &format!("cut {cut}"));
    }
}

/// A torn write into preallocated space: the length made it, part of the payload did
/// not (zeros). BookKeeper replays it as is; so does this scan (its digest fails).
#[test]
fn torn_write_into_preallocated_zeros() {
    let bytes = sample_journal(4, 6, 512, 64 * 1024);
    let recs = records_of(&bytes);
    let last = recs.iter().rev().find(|r| r.kind == "entry" && r.bytes.len() > 200).unwrap();
    let mut damaged = bytes.clone();
    let from = last.offset as usize + 100;
    damaged[from..last.end() as usize].fill(0);
    // Drop the padding records after it, as if the flush never happened.
    damaged[last.end() as usize..].fill(0);
    let f = scan(&damaged, &digests());
    for r in recs.iter().filter(|r| r.offset < last.offset) {
        assert!(f.has(r), "lost record at {}", r.offset);
    }
    assert!(f.records.iter().any(|(o, b, _, _)| *o == last.offset && b.len() == last.bytes.len()));
    assert_eq!(f.gaps.len(), 1);
    assert_eq!((f.gaps[0].offset, f.gaps[0].kind), (last.end(), GapKind::TrailingZeros));
}

fn with_len(bytes: &[u8], at: u64, v: u32) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at as usize..at as usize + 4].copy_from_slice(&v.to_be_bytes());
    b
}

#[test]
fn garbage_lengths_do_not_end_the_read() {
    let bytes = sample_journal(5, 6, 512, 16 * 1024);
    let recs = records_of(&bytes);
    let len = bytes.len() as u64;
    for (k, r) in recs.iter().enumerate() {
        let n = (r.bytes.len() - 4) as u32;
        let next_len = recs.get(k + 1).map_or(16, |x| x.bytes.len() as u32);
        for v in [0x7FFF_FFFF, (-5i32) as u32, 0xFFFF_FF00, 0, 3, 15, n.wrapping_sub(1), n + 1, n + 4 + next_len / 2,
            (len - r.offset) as u32] {
            let damaged = with_len(&bytes, r.offset, v);
            let label = format!("{} at {} len {n} -> {v}", r.kind, r.offset);
            for with_digests in [false, true] {
                let opts = if with_digests { digests() } else { LedgerDigestSettings::default() };
                let f = scan(&damaged, &opts);
                for o in recs.iter().filter(|o| o.offset != r.offset) {
                    assert!(f.has(o), "{label}: lost {} at {}", o.kind, o.offset);
                }
                let next = recs.get(k + 1).map_or(len, |x| x.offset);
                for g in f.gaps.iter().filter(|g| g.kind.is_damage()) {
                    assert!(g.offset >= r.offset && g.end() <= next, "{label}: {g:?}");
                }
                if with_digests && r.verifiable && r.kind == "entry" {
                    assert!(f.records.iter().any(|(o, b, re, _)| *o == r.offset && b[4..] == r.bytes[4..] && *re),
                        "{label}: not reframed");
                }
            }
            if k % 4 == 0 {
                tile_check(&damaged, &LedgerDigestSettings::default(), &[r.offset], &label);
            }
        }
    }
}

#[test]
fn damaged_padding_records() {
    let bytes = sample_journal(6, 5, 512, 8192);
    let recs = records_of(&bytes);
    for (k, r) in recs.iter().enumerate().filter(|(_, r)| r.kind == "padding" && r.bytes.len() > 8) {
        for (at, v) in [(r.offset + 4, u32::MAX), (r.offset + 4, 1 << 30), (r.offset + 4, 3), (r.offset, 0xFFFF_FF01)] {
            let damaged = with_len(&bytes, at, v);
            let f = scan(&damaged, &LedgerDigestSettings::default());
            for o in recs.iter().filter(|o| o.offset != r.offset) {
                assert!(f.has(o), "padding at {} ({at} -> {v:#x}): lost {} at {}", r.offset, o.kind, o.offset);
            }
            let next = recs.get(k + 1).map_or(bytes.len() as u64, |x| x.offset);
            let damage: Vec<_> = f.gaps.iter().filter(|g| g.kind.is_damage()).collect();
            // A shortened last padding record leaves zeros that run to the end of the file.
            assert!(!damage.is_empty() || k + 1 == recs.len(), "padding at {} ({at} -> {v:#x})", r.offset);
            assert!(damage.iter().all(|g| g.offset >= r.offset && g.end() <= next), "{damage:?}");
        }
    }
}

#[test]
fn zeros_and_unknown_meta_records_in_the_middle() {
    let bytes = sample_journal(7, 6, 512, 0);
    let recs = records_of(&bytes);
    // A record zeroed out: BookKeeper stops at the zero length; this scan goes on.
    let victim = &recs[recs.len() / 2];
    let mut zeroed = bytes.clone();
    zeroed[victim.offset as usize..victim.end() as usize].fill(0);
    let f = scan(&zeroed, &LedgerDigestSettings::default());
    for o in recs.iter().filter(|o| o.offset != victim.offset) {
        assert!(f.has(o), "lost {} at {}", o.kind, o.offset);
    }
    assert_eq!(f.gaps.len(), 1);
    assert_eq!((f.gaps[0].offset, f.gaps[0].end(), f.gaps[0].kind), (victim.offset, victim.end(), GapKind::Zeros));

    // A negative entry id that is no meta record's (an entry id with its sign bit
    // flipped, say) is damage: that record is one bad_record span, the rest intact.
    for forged in [-12345i64, i64::MIN | 3] {
        let entry = recs.iter().find(|r| r.kind == "entry").unwrap();
        let mut unknown = bytes.clone();
        let at = entry.offset as usize + 4 + 8;
        unknown[at..at + 8].copy_from_slice(&forged.to_be_bytes());
        let f = scan(&unknown, &LedgerDigestSettings::default());
        for o in recs.iter().filter(|o| o.offset != entry.offset) {
            assert!(f.has(o), "lost {} at {}", o.kind, o.offset);
        }
        assert_eq!(f.gaps.len(), 1, "{forged}");
        assert_eq!((f.gaps[0].offset, f.gaps[0].end(), f.gaps[0].kind), (entry.offset, entry.end(), GapKind::BadRecord));
    }
}

/// An explicit-LAC record in a version 5 journal (BookKeeper's replay would fail):
/// reported as what it is.
#[test]
fn meta_records_newer_than_the_version_are_reported() {
    let v6 = sample_journal(8, 6, 512, 0);
    let mut v5 = v6.clone();
    v5[4..8].copy_from_slice(&5i32.to_be_bytes());
    let kinds: Vec<&str> = records_of(&v5).iter().map(|r| r.kind).collect();
    assert!(kinds.contains(&"explicit_lac"));
    assert_eq!(kinds, records_of(&v6).iter().map(|r| r.kind).collect::<Vec<_>>());
}

#[test]
fn random_damage_keeps_every_framable_record() {
    let base = sample_journal(9, 6, 512, 16 * 1024);
    let recs = records_of(&base);
    let mut rng = Rng(0xfeed);
    for round in 0..200 {
        let mut bytes = base.clone();
        let mut touched = Vec::new();
        for _ in 0..1 + rng.below(3) {
            if bytes.len() <= 512 + 4 {
                break;
            }
            let at = 512 + rng.below(bytes.len() as u64 - 512);
            match rng.below(4) {
                0 => {
                    bytes[at as usize] ^= 1 << rng.below(8);
                    touched.push((at, at + 1));
                }
                1 => {
                    let n = (1 + rng.below(40)).min(bytes.len() as u64 - at);
                    for b in &mut bytes[at as usize..(at + n) as usize] {
                        *b = rng.next() as u8;
                    }
                    touched.push((at, at + n));
                }
                2 => {
                    let n = (1 + rng.below(3000)).min(bytes.len() as u64 - at);
                    bytes[at as usize..(at + n) as usize].fill(0);
                    touched.push((at, at + n));
                }
                _ => {
                    bytes.truncate(at as usize);
                    touched.push((at, u64::MAX));
                }
            }
        }
        let len = bytes.len() as u64;
        let hit = |r: &Rec| touched.iter().any(|&(a, b)| a < r.end() && r.offset < b) || r.end() > len;
        for opts in [LedgerDigestSettings::default(), digests()] {
            let f = scan(&bytes, &opts);
            for (i, r) in recs.iter().enumerate() {
                if i + 3 <= recs.len() && recs[i..i + 3].iter().all(|x| !hit(x)) {
                    assert!(f.has(r), "round {round}: lost {} {i} at {}; damage {touched:?}", r.kind, r.offset);
                }
            }
        }
        if round % 25 == 0 {
            let around: Vec<u64> = touched.iter().map(|t| t.0).collect();
            tile_check(&bytes, &digests(), &around, &format!("round {round}"));
        }
    }
}
