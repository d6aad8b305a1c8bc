//! The writers: what they write reads back, and re-writing golden logs gives
//! BookKeeper's bytes where the scenario is reproducible.

mod common;

use std::io::Cursor;

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_lac, encode_entry, EntryHeader};
use bkcodec_core::files::entry_log::{EntryLogItem, LedgerSize, LedgersMapSource};
use bkcodec_core::files::journal::JournalRecordKind;
use bkcodec_core::files::{
    MemorySource, EntryLog, EntryLogLayout, EntryLogWriter, GapKind, Journal, JournalItem, JournalWriter,
};
use bkcodec_core::{DigestPolicy, LedgerDigestSettings};
use common::*;

/// Entries of a few ledgers (V1 and V2, all digest types), with varied payload sizes.
fn sample_entries(rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
    let ledgers: [(i64, i64, DigestType); 5] = [
        (0, 1, DigestType::Crc32c),
        (0, 7, DigestType::Crc32),
        (0, 9, DigestType::Hmac),
        (0, 11, DigestType::Dummy),
        (5, -3, DigestType::Crc32c),
    ];
    let mut next = [0i64; 5];
    let mut length = [0i64; 5];
    (0..count)
        .map(|_| {
            let i = rng.below(5) as usize;
            let (scope, ledger, dt) = ledgers[i];
            let size = [0u64, 1, 31, 100, 1000, 5000][rng.below(6) as usize] as usize;
            let payload = rng.bytes(size);
            length[i] += size as i64;
            let h = EntryHeader::new(scope, ledger, next[i], next[i] - 1, length[i]);
            next[i] += 1;
            encode_entry(&h, &payload, &Digester::new(dt, b"secret")).unwrap()
        })
        .collect()
}

fn options() -> LedgerDigestSettings {
    LedgerDigestSettings::new(DigestPolicy::Auto, b"secret")
}

fn scanned_entries(log: &EntryLog<'_>) -> Vec<(u64, Vec<u8>)> {
    log.scan(&options())
        .filter_map(|it| match it {
            EntryLogItem::Entry(e) => Some((e.offset, e.bytes.to_vec())),
            _ => None,
        })
        .collect()
}

fn expected_sizes(entries: &[Vec<u8>]) -> Vec<LedgerSize> {
    let mut m = std::collections::BTreeMap::new();
    for e in entries {
        let (h, _) = bkcodec_core::entry::parse_header(e).unwrap();
        *m.entry(h.ledger_id).or_insert(0) += e.len() as i64 + 4;
    }
    m.into_iter().map(|(ledger_id, size)| LedgerSize { ledger_id, size }).collect()
}

#[test]
fn legacy_logs_round_trip() {
    let mut rng = Rng(7);
    for rolled in [false, true] {
        let entries = sample_entries(&mut rng, 200);
        let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
        let offsets: Vec<u64> = entries.iter().map(|e| w.add_entry(e).unwrap()).collect();
        let bytes = if rolled { w.finish_rolled() } else { w.finish_open() }.unwrap().into_inner();
        let log = EntryLog::new(&bytes);
        assert_eq!(log.layout(), EntryLogLayout::Legacy);
        let header = log.header().unwrap();
        let found = scanned_entries(&log);
        assert_eq!(found.len(), entries.len());
        for ((off, b), (want, at)) in found.iter().zip(entries.iter().zip(&offsets)) {
            assert_eq!((off + 4, b), (*at, want));
            assert_eq!(log.entry_at(*at).unwrap(), &want[..]);
        }
        let map = log.ledgers_map(&options());
        assert_eq!(map.ledgers, expected_sizes(&entries));
        if rolled {
            assert_eq!(map.source, LedgersMapSource::Trailer);
            assert_eq!(header.ledgers_count, 5);
        } else {
            assert_eq!(map.source, LedgersMapSource::Scan);
            assert_eq!((header.ledgers_map_offset, header.ledgers_count), (0, 0));
        }
        let whole = log_items(&log, &options(), 0, u64::MAX);
        assert_contiguous(&whole, 1024, bytes.len() as u64);
        assert!(whole.iter().all(|(_, _, w)| !w.starts_with("gap")));
    }
}

#[test]
fn empty_logs() {
    let w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    let bytes = w.finish_rolled().unwrap().into_inner();
    let log = EntryLog::new(&bytes);
    let h = log.header().unwrap();
    // No ledgers: no map record, the header points at the end of the data with count 0.
    assert_eq!((h.ledgers_map_offset, h.ledgers_count, bytes.len()), (1024, 0, 1024));
    assert_eq!(log.scan(&options()).count(), 0);
    let map = log.ledgers_map(&options());
    assert_eq!((map.source, map.ledgers.len()), (LedgersMapSource::Scan, 0));
    // A file whose buffered header never reached the disk.
    assert_eq!(EntryLog::new(&[]).scan(&options()).count(), 0);
}

#[test]
fn direct_logs_round_trip_with_buffer_flushes() {
    let mut rng = Rng(11);
    for rolled in [false, true] {
        let entries = sample_entries(&mut rng, 150);
        let mut w = EntryLogWriter::direct(Cursor::new(Vec::new()), 16 * 1024, 1 << 20).unwrap();
        for (i, e) in entries.iter().enumerate() {
            w.add_entry(e).unwrap();
            if i % 37 == 36 {
                w.flush().unwrap();
            }
        }
        let too_big = vec![0u8; 20 * 1024];
        assert!(w.add_entry(&encode_entry(&EntryHeader::new(0, 1, 0, -1, 0), &too_big,
            &Digester::new(DigestType::Dummy, b"")).unwrap()).is_err());
        let bytes = if rolled { w.finish_rolled() } else { w.finish_open() }.unwrap().into_inner();
        assert_eq!(bytes.len(), 1 << 20);
        let log = EntryLog::new(&bytes);
        assert_eq!(log.layout(), EntryLogLayout::Direct);
        let found: Vec<Vec<u8>> = scanned_entries(&log).into_iter().map(|(_, b)| b).collect();
        assert_eq!(found, entries);
        let map = log.ledgers_map(&options());
        assert_eq!(map.ledgers, expected_sizes(&entries));
        assert_eq!(map.source, if rolled { LedgersMapSource::Trailer } else { LedgersMapSource::Scan });
        let whole = log_items(&log, &options(), 0, u64::MAX);
        assert_contiguous(&whole, 4096, bytes.len() as u64);
        assert!(whole.iter().filter(|(_, _, w)| w.starts_with("gap")).all(|(_, _, w)| w == "gap padding" || w == "gap trailing_zeros"));
        let paddings = whole.iter().filter(|(_, _, w)| w == "gap padding").count();
        assert!(paddings > 5, "{paddings} paddings: {whole:?}");
    }
}

/// Legacy golden logs: the record region is exactly what the writer produces.
#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn writer_reproduces_golden_legacy_logs() {
    let dir = golden("entrylogs");
    for f in ["open_log/current/2a.log", "multi_ledger/current/0.log", "many_ledgers/current/10.log"] {
        let src = MemorySource::read(dir.join(f)).unwrap();
        let log = EntryLog::new(src.bytes());
        let golden_header = log.header().unwrap();
        let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
        for (_, e) in scanned_entries(&log) {
            w.add_entry(&e).unwrap();
        }
        let rolled = golden_header.ledgers_map_offset != 0;
        let bytes = if rolled { w.finish_rolled() } else { w.finish_open() }.unwrap().into_inner();
        assert_eq!(bytes.len(), src.bytes().len(), "{f}");
        let rewritten = EntryLog::new(&bytes);
        assert_eq!(rewritten.header().unwrap(), golden_header, "{f}");
        let data_end = if rolled { golden_header.ledgers_map_offset as usize } else { bytes.len() };
        assert!(bytes[..data_end] == src.bytes()[..data_end], "{f}: record region differs");
        // The map holds the same pairs; BookKeeper writes them in hash-map order.
        if rolled {
            assert_eq!(rewritten.read_ledgers_map_trailer().unwrap(), log.read_ledgers_map_trailer().unwrap());
        }
    }
}

/// Direct golden logs: re-writing with a flush wherever the golden log has padding
/// gives the same bytes, map pairs aside.
#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn writer_reproduces_golden_direct_logs() {
    let dir = golden("direct_entrylogs");
    for f in ["direct_open/current/0.log", "direct_rolled/current/0.log"] {
        let src = MemorySource::read(dir.join(f)).unwrap();
        let log = EntryLog::new(src.bytes());
        let golden_header = log.header().unwrap();
        let rolled = golden_header.ledgers_map_offset != 0;
        let mut w = EntryLogWriter::direct(Cursor::new(Vec::new()), 1 << 30, src.bytes().len() as u64).unwrap();
        let items: Vec<EntryLogItem<'_>> = log.scan(&LedgerDigestSettings::default()).collect();
        for (i, it) in items.iter().enumerate() {
            if let EntryLogItem::Entry(e) = it {
                w.add_entry(e.bytes).unwrap();
                let next_is_padding = matches!(items.get(i + 1), Some(EntryLogItem::Gap(g)) if g.kind == GapKind::Padding);
                let next_is_map = matches!(items.get(i + 1), Some(EntryLogItem::LedgersMap(_)));
                if next_is_padding && !next_is_map {
                    w.flush().unwrap();
                }
            }
        }
        let bytes = if rolled { w.finish_rolled() } else { w.finish_open() }.unwrap().into_inner();
        assert_eq!(bytes.len(), src.bytes().len(), "{f}");
        assert_eq!(EntryLog::new(&bytes).header().unwrap(), golden_header, "{f}");
        let data_end = if rolled { golden_header.ledgers_map_offset as usize } else { bytes.len() };
        assert!(bytes[..data_end] == src.bytes()[..data_end], "{f}: record region differs");
        if rolled {
            let map_end = data_end + 24 + 16 * golden_header.ledgers_count as usize;
            assert!(bytes[map_end..] == src.bytes()[map_end..], "{f}: bytes after the map differ");
            assert_eq!(EntryLog::new(&bytes).read_ledgers_map_trailer().unwrap(), log.read_ledgers_map_trailer().unwrap());
        }
    }
}

#[test]
fn journals_round_trip() {
    let mut rng = Rng(3);
    for version in [4, 5, 6] {
        for alignment in [512u64, 4096] {
            for prealloc in [0u64, 64 * 1024] {
                let entries = sample_entries(&mut rng, 60);
                let mut w = JournalWriter::new(Cursor::new(Vec::new()), version, alignment, prealloc).unwrap();
                let mut expect: Vec<(u64, String)> = Vec::new();
                for (i, e) in entries.iter().enumerate() {
                    let (kind, at) = match i % 10 {
                        3 => ("ledger_key", w.add_ledger_key(i as i64, &[i as u8; 20]).unwrap()),
                        5 => ("fence", w.add_fence(i as i64).unwrap()),
                        7 => match w.add_explicit_lac(i as i64, &encode_lac(i as i64, 3, &Digester::new(DigestType::Crc32c, b""))).unwrap() {
                            Some(at) => ("explicit_lac", at),
                            None => {
                                assert!(version < 6);
                                continue;
                            }
                        },
                        _ => ("entry", w.add_entry(e).unwrap()),
                    };
                    expect.push((at, kind.to_string()));
                    if rng.below(3) == 0 {
                        w.flush().unwrap();
                    }
                }
                w.flush().unwrap();
                let end = w.position();
                if version >= 5 {
                    assert_eq!(end % alignment, 0);
                }
                let bytes = w.finish().unwrap().into_inner();
                assert!(bytes.len() as u64 >= end.max(prealloc));
                let j = Journal::new(&bytes).unwrap();
                assert_eq!(j.header().version, version);
                let mut got = Vec::new();
                let mut run_on = false;
                for it in j.scan(&options()) {
                    match it {
                        JournalItem::Record(r) => match r.kind {
                            JournalRecordKind::Padding { pad_len } => {
                                assert!(version >= 5);
                                assert_eq!((r.offset + r.span_len()) % alignment, 0);
                                run_on |= pad_len as u64 > alignment - 8;
                            }
                            k => got.push((r.offset, k.name().to_string())),
                        },
                        JournalItem::Gap(g) => {
                            assert_eq!(g.kind, GapKind::TrailingZeros, "v{version} a{alignment} p{prealloc}");
                            assert_eq!(g.offset, end);
                        }
                    }
                }
                assert_eq!(got, expect, "v{version} a{alignment} p{prealloc}");
                let _ = run_on;
            }
        }
    }
}

/// A flush with fewer than 8 bytes left before the boundary pads to the next one.
#[test]
fn journal_padding_runs_on_when_the_gap_is_short() {
    for gap in 1u64..=9 {
        let mut w = JournalWriter::new(Cursor::new(Vec::new()), 5, 512, 0).unwrap();
        // Header 512, then a record of 4 + n bytes ending `gap` bytes before 1024.
        let n = 512 - 4 - gap as usize;
        let payload = vec![0x41u8; n - 32];
        let e = encode_entry(&EntryHeader::new(0, 1, 0, -1, payload.len() as i64), &payload,
            &Digester::new(DigestType::Dummy, b"")).unwrap();
        w.add_entry(&e).unwrap();
        w.flush().unwrap();
        let end = w.position();
        let expected_end = if gap < 8 { 1536 } else { 1024 };
        assert_eq!(end, expected_end, "gap {gap}");
        let bytes = w.finish().unwrap().into_inner();
        let j = Journal::new(&bytes).unwrap();
        let pads: Vec<u32> = j
            .scan(&LedgerDigestSettings::default())
            .filter_map(|it| match it {
                JournalItem::Record(r) => match r.kind {
                    JournalRecordKind::Padding { pad_len } => Some(pad_len),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let want = if gap < 8 { 512 - (8 - gap) } else { gap - 8 };
        assert_eq!(pads, vec![want as u32], "gap {gap}");
    }
}

#[test]
fn writer_arguments_are_checked() {
    for v in [1, 2, 3, 7] {
        assert!(JournalWriter::new(Cursor::new(Vec::new()), v, 512, 0).is_err());
    }
    for a in [0u64, 100, 513] {
        assert!(JournalWriter::new(Cursor::new(Vec::new()), 6, a, 0).is_err());
    }
    assert!(EntryLogWriter::direct(Cursor::new(Vec::new()), 0, 0).is_err());
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    assert!(w.add_entry(b"too short").is_err());
}
