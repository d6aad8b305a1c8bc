//! Runs of entries accepted on their digests (`next_verified`) against the plain
//! walk (`next_item` alone): on healthy and damaged files, whole or in byte ranges,
//! the two must yield the same items. A verified record skips the look-ahead over
//! the records after it, so damage right behind it must still be found by the next
//! step.

mod common;

use std::io::Cursor;

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_entry, parse_header, EntryHeader};
use bkcodec_core::files::entry_log::{EntryLogCursor, EntryLogItem};
use bkcodec_core::files::journal::{JournalCursor, JournalItem, JournalRecordKind};
use bkcodec_core::files::{EntryLog, EntryLogWriter, GapKind, Journal, JournalWriter, ScanOptions, VerifiedEntry};
use common::*;

use std::cell::Cell;

thread_local! {
    /// Entries the walks of this thread took from runs (so a test can tell runs happened).
    static RUN_ENTRIES: Cell<usize> = const { Cell::new(0) };
}

fn run_entries() -> usize {
    RUN_ENTRIES.with(Cell::get)
}

/// How a walk is driven: runs of at most `max` verified entries within `budget`
/// bytes, or (with `max` 0) `next_item` alone.
#[derive(Debug, Clone, Copy)]
struct Drive {
    max: usize,
    budget: usize,
}

const PLAIN: Drive = Drive { max: 0, budget: 0 };
const DRIVES: [Drive; 4] = [
    Drive { max: 1, budget: usize::MAX },
    Drive { max: 3, budget: 5000 },
    Drive { max: 16, budget: usize::MAX },
    Drive { max: 1000, budget: 1 },
];

fn verified_item(v: &VerifiedEntry<'_>) -> Item {
    let (h, _) = parse_header(v.bytes).expect("a verified entry has a header");
    (v.offset, v.bytes.len() as u64 + 4, format!("entry {}/{}", h.ledger_id, h.entry_id))
}

/// The items of a log scan as `common::log_items` names them, driven as `drive` says.
fn log_walk(log: &EntryLog<'_>, opts: &ScanOptions, start: u64, end: u64, drive: Drive) -> Vec<Item> {
    let data = log.data();
    let mut cursor = EntryLogCursor::new(log, opts, start, end);
    let mut items = Vec::new();
    let mut run = Vec::new();
    loop {
        if drive.max > 0 {
            run.clear();
            cursor.next_verified(data, drive.max, drive.budget, &mut run);
            assert!(run.len() <= drive.max, "a run longer than asked for");
            if !run.is_empty() {
                let bytes: usize = run.iter().map(|v| v.bytes.len()).sum();
                let last = run[run.len() - 1].bytes.len();
                assert!(bytes - last < drive.budget, "a run past its byte budget");
                RUN_ENTRIES.with(|c| c.set(c.get() + run.len()));
                items.extend(run.iter().map(verified_item));
                assert_eq!(cursor.position(), items.last().map(|i| i.0 + i.1).unwrap());
                continue;
            }
        }
        let Some(item) = cursor.next_item(data) else { break };
        items.push(match item {
            EntryLogItem::Entry(e) => (e.offset, e.size() + 4, format!(
                "entry {}/{}{}", e.header.ledger_id, e.header.entry_id, if e.reframed { " reframed" } else { "" })),
            EntryLogItem::LedgersMap(m) => (m.offset, m.bytes.len() as u64 + 4, format!("map {}", m.len())),
            EntryLogItem::Gap(g) => (g.offset, g.len, format!("gap {}", g.kind)),
        });
    }
    items
}

fn journal_walk(j: &Journal<'_>, opts: &ScanOptions, start: u64, end: u64, drive: Drive) -> Vec<Item> {
    let data = j.data();
    let mut cursor = JournalCursor::new(j, opts, start, end);
    let mut items = Vec::new();
    let mut run = Vec::new();
    loop {
        if drive.max > 0 {
            run.clear();
            cursor.next_verified(data, drive.max, drive.budget, &mut run);
            if !run.is_empty() {
                RUN_ENTRIES.with(|c| c.set(c.get() + run.len()));
                items.extend(run.iter().map(verified_item));
                continue;
            }
        }
        let Some(item) = cursor.next_item(data) else { break };
        items.push(match item {
            JournalItem::Record(r) => {
                let what = match r.kind {
                    JournalRecordKind::Entry { header, .. } => format!("entry {}/{}", header.ledger_id, header.entry_id),
                    k => format!("{} {:?}", k.name(), k.ledger_id()),
                };
                (r.offset, r.span_len(), format!("{what}{}", if r.reframed { " reframed" } else { "" }))
            }
            JournalItem::Gap(g) => (g.offset, g.len, format!("gap {}", g.kind)),
        });
    }
    items
}

/// Scan options as readers build them: none, one keyless type, the types `Auto`
/// infers, and a mix with HMAC (which runs never use).
fn option_sets() -> Vec<(&'static str, ScanOptions)> {
    vec![
        ("none", ScanOptions::new()),
        ("crc32c", ScanOptions::new().with_digest(DigestType::Crc32c, b"")),
        ("crc32", ScanOptions::new().with_digest(DigestType::Crc32, b"")),
        ("auto", ScanOptions::new().with_digest(DigestType::Crc32c, b"").with_digest(DigestType::Crc32, b"")),
        (
            "all",
            ScanOptions::new()
                .with_digest(DigestType::Hmac, b"secret")
                .with_digest(DigestType::Crc32, b"")
                .with_digest(DigestType::Crc32c, b""),
        ),
    ]
}

/// Every drive of every option set gives the plain walk's items, whole and in ranges.
fn assert_log_walks_agree(bytes: &[u8], label: &str) {
    let log = EntryLog::new(bytes);
    let len = bytes.len() as u64;
    for (name, opts) in option_sets() {
        let plain = log_walk(&log, &opts, 0, u64::MAX, PLAIN);
        assert_eq!(plain, log_items(&log, &opts, 0, u64::MAX), "{label}: the plain walk is the scanner's");
        for drive in DRIVES {
            let got = log_walk(&log, &opts, 0, u64::MAX, drive);
            assert_same(&got, &plain, &format!("{label} {name} {drive:?}"));
        }
        // Byte ranges: the walk stops at the range end the same way.
        let drive = DRIVES[2];
        for cut in [len / 3, len / 2 + 1, len - len / 5] {
            for (s, e) in [(0, cut), (cut, u64::MAX)] {
                let got = log_walk(&log, &opts, s, e, drive);
                assert_same(&got, &log_walk(&log, &opts, s, e, PLAIN), &format!("{label} {name} [{s}, {e})"));
            }
        }
    }
}

fn assert_journal_walks_agree(bytes: &[u8], label: &str) {
    let j = Journal::new(bytes).unwrap();
    let len = bytes.len() as u64;
    for (name, opts) in option_sets() {
        let plain = journal_walk(&j, &opts, 0, u64::MAX, PLAIN);
        assert_eq!(plain, journal_items(&j, &opts, 0, u64::MAX), "{label}: the plain walk is the scanner's");
        for drive in DRIVES {
            let got = journal_walk(&j, &opts, 0, u64::MAX, drive);
            assert_same(&got, &plain, &format!("{label} {name} {drive:?}"));
        }
        for cut in [len / 3, len / 2 + 1] {
            for (s, e) in [(0, cut), (cut, u64::MAX)] {
                let got = journal_walk(&j, &opts, s, e, DRIVES[2]);
                assert_same(&got, &journal_walk(&j, &opts, s, e, PLAIN), &format!("{label} {name} [{s}, {e})"));
            }
        }
    }
}

const KINDS: [DigestType; 5] = [DigestType::Crc32c, DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac, DigestType::Dummy];

fn entry(rng: &mut Rng, ledger: usize, id: i64, length: &mut i64) -> Vec<u8> {
    let size = [0usize, 3, 12, 40, 200, 700, 3000][rng.below(7) as usize];
    let payload = if rng.below(4) == 0 { vec![0u8; size] } else { rng.bytes(size) };
    *length += size as i64;
    let scope = if rng.below(8) == 0 { 1 + rng.below(3) as i64 } else { 0 };
    let h = EntryHeader::new(scope, 100 + ledger as i64, id, id - 1, *length);
    encode_entry(&h, &payload, &Digester::new(KINDS[ledger], b"secret")).unwrap()
}

/// A legacy or direct log of `count` entries of ledgers of every digest type.
fn sample_log(seed: u64, count: usize, direct: bool) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut next = [0i64; 5];
    let mut length = [0i64; 5];
    let out = Cursor::new(Vec::new());
    let mut w = if direct { EntryLogWriter::direct(out, 8192, 1 << 24) } else { EntryLogWriter::legacy(out) }.unwrap();
    for _ in 0..count {
        // Long stretches of one ledger, as busy ledgers write them.
        let i = if rng.below(3) == 0 { rng.below(5) as usize } else { 0 };
        let e = entry(&mut rng, i, next[i], &mut length[i]);
        next[i] += 1;
        w.add_entry(&e).unwrap();
        if direct && rng.below(10) == 0 {
            w.flush().unwrap();
        }
    }
    if rng.below(2) == 0 { w.finish_rolled() } else { w.finish_open() }.unwrap().into_inner()
}

fn sample_journal(seed: u64, count: usize) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut w = JournalWriter::new(Cursor::new(Vec::new()), 6, 512, 1 << 16).unwrap();
    let mut next = [0i64; 5];
    let mut length = [0i64; 5];
    for k in 0..count {
        match rng.below(20) {
            0 => {
                w.add_ledger_key(100, &[k as u8; 20]).unwrap();
            }
            1 => {
                w.add_fence(101).unwrap();
            }
            _ => {
                let i = if rng.below(3) == 0 { rng.below(5) as usize } else { 0 };
                let e = entry(&mut rng, i, next[i], &mut length[i]);
                next[i] += 1;
                w.add_entry(&e).unwrap();
            }
        }
        if rng.below(8) == 0 {
            w.flush().unwrap();
        }
    }
    w.flush().unwrap();
    w.finish().unwrap().into_inner()
}

/// Damage of every kind the damage tests use, at random places.
fn damage(rng: &mut Rng, bytes: &mut Vec<u8>, from: usize) {
    let len = bytes.len();
    if len <= from + 8 {
        return;
    }
    let at = from + rng.below((len - from - 8) as u64) as usize;
    match rng.below(8) {
        0 => bytes[at] ^= 1 << rng.below(8),
        1 => bytes[at..at + 4].copy_from_slice(&(rng.next() as u32).to_be_bytes()),
        2 => bytes[at..at + 4].copy_from_slice(&(rng.below(5000) as u32).to_be_bytes()),
        3 => {
            let n = (1 + rng.below(300) as usize).min(len - at);
            bytes[at..at + n].fill(0);
        }
        4 => {
            let n = (1 + rng.below(100) as usize).min(len - at);
            bytes[at..at + n].fill(0xF0);
        }
        5 => {
            let n = 1 + rng.below(200) as usize;
            let garbage = rng.bytes(n);
            bytes.splice(at..at, garbage);
        }
        6 => bytes.truncate(at),
        _ => {
            let n = (1 + rng.below(500) as usize).min(len - at);
            bytes.drain(at..at + n);
        }
    }
}

#[test]
fn healthy_files_agree() {
    for (seed, direct) in [(1, false), (2, true), (3, false)] {
        let bytes = sample_log(seed, 300, direct);
        assert_log_walks_agree(&bytes, &format!("log {seed}"));
        // Most entries are CRC entries, and runs take them.
        let before = run_entries();
        let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"").with_digest(DigestType::Crc32, b"");
        log_walk(&EntryLog::new(&bytes), &opts, 0, u64::MAX, DRIVES[2]);
        assert!(run_entries() - before > 150, "runs took {} of 300 entries", run_entries() - before);
    }
    let bytes = sample_journal(4, 300);
    assert_journal_walks_agree(&bytes, "journal");
    let before = run_entries();
    let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"").with_digest(DigestType::Crc32, b"");
    journal_walk(&Journal::new(&bytes).unwrap(), &opts, 0, u64::MAX, DRIVES[2]);
    assert!(run_entries() - before > 150, "runs took {} journal entries", run_entries() - before);
}

#[test]
fn damaged_files_agree() {
    let mut rng = Rng(0x07E5_70FF_11E5);
    for round in 0..60 {
        let direct = round % 3 == 0;
        let mut bytes = sample_log(100 + round, 60, direct);
        for _ in 0..1 + rng.below(4) {
            damage(&mut rng, &mut bytes, 1024);
        }
        assert_log_walks_agree(&bytes, &format!("log round {round}"));
    }
    for round in 0..40 {
        let mut bytes = sample_journal(500 + round, 60);
        for _ in 0..1 + rng.below(4) {
            damage(&mut rng, &mut bytes, 512);
        }
        assert_journal_walks_agree(&bytes, &format!("journal round {round}"));
    }
    assert!(run_entries() > 5000, "runs took {} entries", run_entries());
}

/// The records of a clean log: (offset, record bytes with the size field).
fn records(bytes: &[u8]) -> Vec<(usize, Vec<u8>)> {
    EntryLog::new(bytes)
        .scan(&ScanOptions::new())
        .filter_map(|it| match it {
            EntryLogItem::Entry(e) => Some((e.offset as usize, bytes[e.offset as usize..e.offset as usize + 4 + e.bytes.len()].to_vec())),
            _ => None,
        })
        .collect()
}

fn crc32c_log(count: usize, payload: usize) -> Vec<u8> {
    let d = Digester::new(DigestType::Crc32c, b"");
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    for id in 0..count as i64 {
        let body: Vec<u8> = (0..payload).map(|k| (k as i64 * 31 + id) as u8).collect();
        let h = EntryHeader::new(0, 7, id, id - 1, (id + 1) * payload as i64);
        w.add_entry(&encode_entry(&h, &body, &d).unwrap()).unwrap();
    }
    w.finish_open().unwrap().into_inner()
}

/// Damage starting exactly where a verified record ends: the record is accepted on
/// its digest, and the next step reports the damage from its end.
#[test]
fn damage_right_after_a_verified_record() {
    let clean = crc32c_log(12, 100);
    let recs = records(&clean);
    let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"");
    let next_of = |k: usize| recs[k + 1].0;
    for k in 2..recs.len() - 2 {
        let at = next_of(k);
        let n = recs[k + 1].1.len();
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut garbage_size = clean.clone();
        garbage_size[at..at + 4].copy_from_slice(&0x7A3B_1C0Du32.to_be_bytes());
        cases.push(("garbage size", garbage_size));
        let mut zero_size = clean.clone();
        zero_size[at..at + 4].fill(0);
        cases.push(("zeroed size", zero_size));
        let mut small_size = clean.clone();
        small_size[at..at + 4].copy_from_slice(&7u32.to_be_bytes());
        cases.push(("size below a header", small_size));
        let mut header = clean.clone();
        header[at + 12] ^= 0x80;
        cases.push(("negative entry id", header));
        let mut garbage = clean.clone();
        garbage.splice(at..at, [0x5Au8; 77]);
        cases.push(("garbage inserted", garbage));
        let mut fill = clean.clone();
        fill[at..at + n].fill(0xF0);
        cases.push(("fill over the next record", fill));
        cases.push(("torn right after", clean[..at + 10].to_vec()));
        for (what, bytes) in &cases {
            let label = format!("record {k}: {what}");
            let log = EntryLog::new(bytes);
            let plain = log_walk(&log, &opts, 0, u64::MAX, PLAIN);
            for drive in DRIVES {
                assert_same(&log_walk(&log, &opts, 0, u64::MAX, drive), &plain, &format!("{label} {drive:?}"));
            }
            // The verified record is kept, and the damage after it is reported from its end.
            let verified = log_walk(&log, &opts, 0, u64::MAX, DRIVES[2]);
            let i = verified.iter().position(|it| it.0 == recs[k].0 as u64).expect("the good record is read");
            assert_eq!(verified[i].1, recs[k].1.len() as u64, "{label}");
            let after = &verified[i + 1];
            assert_eq!(after.0, at as u64, "{label}: {after:?}");
            // (A damaged size field in front of an intact entry is reported on the
            // entry, which is recovered as reframed.)
            let reported = after.2.starts_with("gap") || after.2.ends_with(" reframed");
            assert!(reported, "{label}: the damage after the record is reported: {after:?}");
            // (A legacy log is never padded, so a record overwritten with 0xF0 is damage too.)
            assert!(!after.2.contains("trailing_zeros") && !after.2.contains("padding"), "{label}: as damage: {after:?}");
            // Nothing after the damage is lost.
            for (off, rec) in &recs[k + 2..] {
                let moved = if *what == "garbage inserted" { off + 77 } else { *off };
                if moved + rec.len() <= bytes.len() {
                    assert!(verified.iter().any(|it| it.0 == moved as u64 && it.2.starts_with("entry")), "{label}: lost {off}");
                }
            }
        }
    }
}

/// A record whose digest verifies over a span reaching into the next record (a size
/// field that frames too much, with a digest to match): the walk accepts it on its
/// digest, so the rest of the covered record is damage, reported and not skipped.
#[test]
fn verified_record_whose_end_lands_in_another_record() {
    let d = Digester::new(DigestType::Crc32c, b"");
    let clean = crc32c_log(6, 64);
    let recs = records(&clean);
    let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"");
    for cover in [4usize, 20, 41, 60] {
        let (a_off, a) = &recs[2];
        let (b_off, b) = &recs[3];
        // Record A's payload grows by the first `cover` bytes of B; its digest matches.
        let (h, _) = parse_header(&a[4..]).unwrap();
        let mut payload = a[4 + 36..].to_vec();
        payload.extend_from_slice(&b[..cover]);
        let forged = encode_entry(&EntryHeader::new(0, h.ledger_id, h.entry_id, h.last_add_confirmed, h.length + cover as i64), &payload, &d).unwrap();
        let mut bytes = clean[..*a_off].to_vec();
        bytes.extend_from_slice(&(forged.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&forged);
        let forged_end = bytes.len();
        bytes.extend_from_slice(&b[cover..]);
        bytes.extend_from_slice(&clean[b_off + b.len()..]);
        let log = EntryLog::new(&bytes);
        let label = format!("cover {cover}");
        let plain = log_walk(&log, &opts, 0, u64::MAX, PLAIN);
        for drive in DRIVES {
            assert_same(&log_walk(&log, &opts, 0, u64::MAX, drive), &plain, &format!("{label} {drive:?}"));
        }
        let items = log_walk(&log, &opts, 0, u64::MAX, DRIVES[2]);
        let i = items.iter().position(|it| it.0 == *a_off as u64).expect("the forged record is read");
        assert_eq!(items[i].0 + items[i].1, forged_end as u64, "{label}: accepted on its digest");
        let after = &items[i + 1];
        assert_eq!(after.0, forged_end as u64, "{label}");
        assert!(after.2.starts_with("gap") && after.2 != "gap trailing_zeros", "{label}: {after:?}");
        let shift = forged_end - (b_off + cover);
        for (off, _) in &recs[4..] {
            assert!(items.iter().any(|it| it.0 == (off + shift) as u64 && it.2.starts_with("entry")), "{label}: lost {off}");
        }
    }
}

/// Runs stop at what they cannot take (a ledgers map, padding, a range end) and the
/// plain step takes it; the gap kinds are the scanner's.
#[test]
fn runs_stop_at_maps_padding_and_range_ends() {
    let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"");
    let mut w = EntryLogWriter::direct(Cursor::new(Vec::new()), 8192, 1 << 24).unwrap();
    let d = Digester::new(DigestType::Crc32c, b"");
    for id in 0..40 {
        w.add_entry(&encode_entry(&EntryHeader::new(0, 3, id, id - 1, id * 10 + 10), &[id as u8; 10], &d).unwrap()).unwrap();
        if id % 7 == 6 {
            w.flush().unwrap();
        }
    }
    let bytes = w.finish_rolled().unwrap().into_inner();
    let log = EntryLog::new(&bytes);
    let items = log_walk(&log, &opts, 0, u64::MAX, DRIVES[2]);
    assert_eq!(items.iter().filter(|i| i.2.starts_with("entry")).count(), 40);
    assert!(items.iter().any(|i| i.2 == format!("gap {}", GapKind::Padding)));
    assert!(items.iter().any(|i| i.2.starts_with("map")));
    assert_eq!(items, log_items(&log, &opts, 0, u64::MAX));
}

/// An entry whose payload holds records that frame as a sync point: a range ending
/// inside that entry stops at the embedded sync point (where the next range starts),
/// so a run must not take the entry across the range end.
#[test]
fn payload_holding_records_across_a_range_end() {
    let d = Digester::new(DigestType::Crc32c, b"");
    let inner = crc32c_log(4, 30);
    let inner_records: Vec<u8> = records(&inner).into_iter().flat_map(|(_, r)| r).collect();
    let mut payload = vec![7u8; 50];
    payload.extend_from_slice(&inner_records);
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    let mut offsets = Vec::new();
    for id in 0..6i64 {
        let body = if id == 3 { payload.clone() } else { vec![id as u8; 40] };
        offsets.push(w.add_entry(&encode_entry(&EntryHeader::new(0, 9, id, id - 1, 1000 * (id + 1)), &body, &d).unwrap()).unwrap());
    }
    let bytes = w.finish_open().unwrap().into_inner();
    let log = EntryLog::new(&bytes);
    let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"");
    // The entry holding records starts at offsets[3] - 4 (offsets are entry offsets).
    let outer = offsets[3] - 4;
    let embedded = outer + 4 + 36 + 50;
    for cut in [outer + 1, outer + 60, embedded - 1, embedded, embedded + 1, embedded + 50] {
        for (s, e) in [(0, cut), (cut, u64::MAX)] {
            let plain = log_walk(&log, &opts, s, e, PLAIN);
            for drive in DRIVES {
                assert_same(&log_walk(&log, &opts, s, e, drive), &plain, &format!("cut {cut} [{s}, {e}) {drive:?}"));
            }
        }
        // Each byte once (not the whole scan's items: framing alone cannot tell the
        // embedded records from real ones).
        let mut tiled = log_walk(&log, &opts, 0, cut, DRIVES[2]);
        tiled.extend(log_walk(&log, &opts, cut, u64::MAX, DRIVES[2]));
        assert_contiguous(&tiled, 1024, bytes.len() as u64);
    }
    // The range ending inside the entry reports it as a span up to the embedded sync point.
    let first = log_walk(&log, &opts, 0, outer + 60, DRIVES[2]);
    let last = first.last().unwrap();
    assert_eq!((last.0, last.0 + last.1, last.2.as_str()), (outer, embedded, "gap bad_size"));
}

/// A run cut short at an entry whose size field was enlarged over the next two
/// records: the walk does not confirm it (the record after its end is only
/// leniently plausible), finds a sync point inside it and resumes there (the entry
/// reframed), off the records the run had found. The runs that follow must start from the walk, not
/// from what the cut run found.
#[test]
fn walk_leaves_the_records_a_cut_run_found() {
    let d = Digester::new(DigestType::Crc32c, b"");
    let entry = |id: i64, lac: i64| encode_entry(&EntryHeader::new(0, 4, id, lac, 50 * (id + 1)), &[id as u8; 50], &d).unwrap();
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    let mut offsets = Vec::new();
    for id in 0..10i64 {
        // Entry 5 has a LAC equal to its id: plausible in step, not as a sync point.
        let lac = if id == 5 { 5 } else { id - 1 };
        offsets.push(w.add_entry(&entry(id, lac)).unwrap() - 4);
    }
    let mut bytes = w.finish_open().unwrap().into_inner();
    // Entry 2's size field now covers entries 2, 3 and 4, ending at entry 5.
    let (f, x) = (offsets[2] as usize, offsets[5] as usize);
    bytes[f..f + 4].copy_from_slice(&((x - f - 4) as u32).to_be_bytes());
    let log = EntryLog::new(&bytes);
    let opts = ScanOptions::new().with_digest(DigestType::Crc32c, b"");
    let plain = log_walk(&log, &opts, 0, u64::MAX, PLAIN);
    // The walk recovers entry 2 up to entry 3 (its digest verifies there) and reads
    // 3 and 4 again.
    let at = |o: u64| plain.iter().find(|i| i.0 == o).map(|i| i.2.clone());
    assert_eq!(at(offsets[2]).as_deref(), Some("entry 4/2 reframed"), "{plain:?}");
    assert_eq!(at(offsets[3]).as_deref(), Some("entry 4/3"), "{plain:?}");
    assert_eq!(at(offsets[5]).as_deref(), Some("entry 4/5"), "{plain:?}");
    for drive in DRIVES {
        assert_same(&log_walk(&log, &opts, 0, u64::MAX, drive), &plain, &format!("{drive:?}"));
    }
}
