//! Entry logs written by the real DefaultEntryLogger and DirectEntryLogger, read back
//! against their manifests (golden README §2 and §6).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::infer_digest_type;
use bkcodec_core::files::entry_log::{self, EntryLogItem, LedgerSize, LedgersMapSource, LogEntry};
use bkcodec_core::files::{MemorySource, EntryLog, EntryLogHeader, EntryLogLayout, GapKind};
use bkcodec_core::LedgerDigestSettings;
use common::*;
use serde_json::Value;

fn options() -> LedgerDigestSettings {
    LedgerDigestSettings::default()
}

fn entries<'a>(log: &EntryLog<'a>) -> Vec<LogEntry<'a>> {
    log.scan(&options())
        .filter_map(|it| match it {
            EntryLogItem::Entry(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn check_header(log: &EntryLog<'_>, rows: &[Value], layout: EntryLogLayout) {
    let h = records(rows, "header")[0];
    let parsed = EntryLogHeader::parse(log.data()).unwrap();
    assert_eq!(parsed.version, h["version"].as_i64().unwrap() as i32);
    assert_eq!(parsed.ledgers_map_offset, i64_of(&h["ledgers_map_offset"]));
    assert_eq!(parsed.ledgers_count as i64, i64_of(&h["ledgers_count"]));
    assert_eq!(parsed.layout, layout);
    assert_eq!(log.layout(), layout);
    assert_eq!(log.layout().data_start(), u64_of(&h["header_size"]));
}

/// One entry against its manifest row: position, ids, location, hashes, digest verdict.
fn check_entry(e: &LogEntry<'_>, row: &Value, log_id: u32, digest: Option<DigestType>) {
    let what = format!("entry {row}");
    assert_eq!(e.entry_offset(), u64_of(&row["entry_pos"]), "{what}");
    assert_eq!(e.size(), u64_of(&row["entry_size"]), "{what}");
    assert_eq!(e.header.ledger_id, i64_of(&row["ledger_id"]), "{what}");
    assert_eq!(e.header.entry_id, i64_of(&row["entry_id"]), "{what}");
    assert_eq!(e.location(log_id).unwrap().to_raw(), i64_of(&row["location"]), "{what}");
    assert!(!e.reframed);
    if let Some(sha) = row.get("entry_sha256") {
        assert_eq!(sha256_hex(e.bytes), sha.as_str().unwrap(), "{what}");
    }
    let dt = digest.or_else(|| infer_digest_type(e.bytes, None)).expect("entry digest verifies under CRC32C or CRC32");
    let decoded = e.decode(Some(dt)).unwrap();
    assert!(decoded.digest_matches(&Digester::new(dt, b"")), "{what}: digest");
    decoded.verify(&Digester::new(dt, b""), Some(e.header.ledger_id), Some(e.header.entry_id)).unwrap();
    if let Some(sha) = row.get("payload_sha256") {
        assert_eq!(decoded.payload().len() as u64, u64_of(&row["payload_len"]), "{what}");
        assert_eq!(sha256_hex(decoded.payload()), sha.as_str().unwrap(), "{what}");
    }
}

fn expected_map(rows: &[Value], source: &str) -> Vec<LedgerSize> {
    let mut v: Vec<LedgerSize> = rows
        .iter()
        .filter(|r| r["record"] == "ledgers_map_entry" && (r["source"] == source || r["reader"] == source))
        .map(|r| LedgerSize { ledger_id: i64_of(&r["ledger_id"]), size: i64_of(&r["size"]) })
        .collect();
    for c in records(rows, "ledgers_map_compact") {
        let ids = c["ledger_ids"].as_array().unwrap();
        let sizes = c["sizes"].as_array().unwrap();
        v.extend(ids.iter().zip(sizes).map(|(l, s)| LedgerSize { ledger_id: i64_of(l), size: i64_of(s) }));
    }
    v.sort();
    v
}

/// Per-ledger sizes computed from a scan (entry length + 4), for comparing with maps.
fn scanned_sizes(log: &EntryLog<'_>) -> Vec<LedgerSize> {
    let mut m = BTreeMap::new();
    for e in entries(log) {
        *m.entry(e.header.ledger_id).or_insert(0) += e.size() as i64 + 4;
    }
    m.into_iter().map(|(ledger_id, size)| LedgerSize { ledger_id, size }).collect()
}

fn open(dir: &Path, rows: &[Value]) -> (MemorySource, u32) {
    let file = records(rows, "file")[0];
    let path = dir.join(file["path"].as_str().unwrap());
    let src = MemorySource::read(&path).unwrap();
    assert_eq!(src.len(), u64_of(&file["file_size"]));
    let log_id = entry_log::log_id_from_path(&path).unwrap();
    assert_eq!(log_id, i64_of(&file["entry_log_id"]));
    (src, log_id as u32)
}

fn gaps(log: &EntryLog<'_>) -> Vec<(u64, u64, GapKind)> {
    log.scan(&options())
        .filter_map(|it| match it {
            EntryLogItem::Gap(g) => Some((g.offset, g.len, g.kind)),
            _ => None,
        })
        .collect()
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn legacy_logs_read_back_as_written() {
    let dir = golden("entrylogs");
    for scenario in ["open_log", "multi_ledger", "torn_mid_entry_body"] {
        let rows = manifest(&dir.join(format!("{scenario}.jsonl")));
        let (src, log_id) = open(&dir, &rows);
        let log = EntryLog::new(src.bytes());
        check_header(&log, &rows, EntryLogLayout::Legacy);

        let found = entries(&log);
        let written: Vec<&Value> = records(&rows, "entry")
            .into_iter()
            .filter(|r| r.get("complete_in_file").is_none_or(|c| c.as_bool().unwrap()))
            .collect();
        assert_eq!(found.len(), written.len(), "{scenario}");
        for (e, row) in found.iter().zip(&written) {
            let dt = DigestType::from_name(row.get("digest_type").and_then(|d| d.as_str()).unwrap_or("crc32c")).ok();
            check_entry(e, row, log_id, if row.get("digest_type").is_some() { dt } else { None });
        }
        // What BookKeeper's scanner reported: size-field offsets, ids, sizes, hashes.
        let scan = records(&rows, "scan");
        assert_eq!(scan.len(), found.len(), "{scenario}");
        for (e, s) in found.iter().zip(&scan) {
            assert_eq!(e.offset, u64_of(&s["offset"]));
            assert_eq!(e.header.ledger_id, i64_of(&s["ledger_id"]));
            assert_eq!(e.header.entry_id, i64_of(&s["entry_id_in_entry"]));
            assert_eq!(e.size(), u64_of(&s["entry_size"]));
            assert_eq!(sha256_hex(e.bytes), s["entry_sha256"].as_str().unwrap());
        }

        let from_index = records(&rows, "ledgers_map_from_index")[0];
        let map = log.ledgers_map(&options());
        if from_index["ok"].as_bool().unwrap() {
            assert_eq!(map.source, LedgersMapSource::Trailer, "{scenario}");
            assert_eq!(map.ledgers, expected_map(&rows, "index"), "{scenario}");
            assert_eq!(map.total_size(), i64_of(&from_index["total_size"]));
        } else {
            assert!(log.read_ledgers_map_trailer().is_err(), "{scenario}");
            assert_eq!(map.source, LedgersMapSource::Scan, "{scenario}");
            assert!(map.fallback_reason.is_some());
        }
        let meta = records(&rows, "entry_log_metadata")[0];
        assert_eq!(map.ledgers, expected_map(&rows, "getEntryLogMetadata"), "{scenario}");
        assert_eq!(map.ledgers.len() as i64, i64_of(&meta["ledgers_count"]));
        assert_eq!(map.total_size(), i64_of(&meta["total_size"]));
        // The scan gives the same sizes as the map, whichever the map came from.
        assert_eq!(scanned_sizes(&log), map.ledgers, "{scenario}");

        let g = gaps(&log);
        if scenario.starts_with("torn") {
            let first_missing = records(&rows, "entry")
                .into_iter()
                .find(|r| !r["complete_in_file"].as_bool().unwrap())
                .unwrap();
            let at = u64_of(&first_missing["entry_pos"]) - 4;
            assert_eq!(g, vec![(at, src.len() - at, GapKind::TornRecord)]);
        } else {
            assert!(g.is_empty(), "{scenario}: {g:?}");
        }
        // Reading by location finds the same bytes.
        for e in &found {
            assert_eq!(log.entry_at(e.entry_offset()).unwrap(), e.bytes);
        }
    }
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn rolled_log_map_records_are_scanned_in_place() {
    let dir = golden("entrylogs");
    let rows = manifest(&dir.join("multi_ledger.jsonl"));
    let (src, _) = open(&dir, &rows);
    let log = EntryLog::new(src.bytes());
    let header = log.header().unwrap();
    let maps: Vec<_> = log
        .scan(&options())
        .filter_map(|it| match it {
            EntryLogItem::LedgersMap(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].offset as i64, header.ledgers_map_offset);
    let mut pairs: Vec<LedgerSize> = maps[0].pairs().map(|(ledger_id, size)| LedgerSize { ledger_id, size }).collect();
    pairs.sort();
    assert_eq!(pairs, expected_map(&rows, "index"));
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn many_ledgers_map_spans_two_batches() {
    let dir = golden("entrylogs");
    let rows = manifest(&dir.join("many_ledgers.jsonl"));
    let (src, log_id) = open(&dir, &rows);
    let log = EntryLog::new(src.bytes());
    check_header(&log, &rows, EntryLogLayout::Legacy);
    let compact = records(&rows, "entries_compact")[0];
    let found = entries(&log);
    let col = |k: &str| compact[k].as_array().unwrap().iter().map(i64_of).collect::<Vec<_>>();
    assert_eq!(found.iter().map(|e| e.header.ledger_id).collect::<Vec<_>>(), col("ledger_ids"));
    assert_eq!(found.iter().map(|e| e.header.entry_id).collect::<Vec<_>>(), col("entry_ids"));
    assert_eq!(found.iter().map(|e| e.location(log_id).unwrap().to_raw()).collect::<Vec<_>>(), col("locations"));
    assert_eq!(found.iter().map(|e| e.size() as i64).collect::<Vec<_>>(), col("entry_sizes"));
    let dummy = Digester::new(DigestType::Dummy, b"");
    for e in &found {
        e.decode(Some(DigestType::Dummy)).unwrap().verify(&dummy, Some(e.header.ledger_id), Some(0)).unwrap();
    }
    let map_records: Vec<usize> = log
        .scan(&options())
        .filter_map(|it| match it {
            EntryLogItem::LedgersMap(m) => Some(m.len()),
            _ => None,
        })
        .collect();
    assert_eq!(map_records.iter().sum::<usize>(), 10001);
    assert_eq!(map_records.iter().max(), Some(&10000));
    let map = log.ledgers_map(&options());
    assert_eq!(map.source, LedgersMapSource::Trailer);
    assert_eq!(map.ledgers, expected_map(&rows, "index"));
    assert_eq!(scanned_sizes(&log), map.ledgers);
    assert!(gaps(&log).is_empty());
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn direct_logs_read_back_as_written() {
    let dir = golden("direct_entrylogs");
    for scenario in ["direct_open", "direct_rolled"] {
        let rows = manifest(&dir.join(format!("{scenario}.jsonl")));
        let (src, log_id) = open(&dir, &rows);
        let log = EntryLog::new(src.bytes());
        check_header(&log, &rows, EntryLogLayout::Direct);
        let found = entries(&log);
        let written = records(&rows, "entry");
        assert_eq!(found.len(), written.len(), "{scenario}");
        for (e, row) in found.iter().zip(&written) {
            check_entry(e, row, log_id, None);
        }
        for reader in ["DirectEntryLogger", "DefaultEntryLogger"] {
            let scan: Vec<&Value> = records(&rows, "scan").into_iter().filter(|s| s["reader"] == reader).collect();
            assert_eq!(scan.len(), found.len());
            for (e, s) in found.iter().zip(&scan) {
                assert_eq!((e.offset, e.header.ledger_id, e.size()),
                    (u64_of(&s["offset"]), i64_of(&s["ledger_id"]), u64_of(&s["entry_size"])));
                assert_eq!(sha256_hex(e.bytes), s["entry_sha256"].as_str().unwrap());
            }
            assert_eq!(log.ledgers_map(&options()).ledgers, expected_map(&rows, reader), "{scenario} {reader}");
        }
        let map = log.ledgers_map(&options());
        let expected_source = if scenario == "direct_rolled" { LedgersMapSource::Trailer } else { LedgersMapSource::Scan };
        assert_eq!(map.source, expected_source, "{scenario}");
        assert_eq!(scanned_sizes(&log), map.ledgers);
        // Only what a healthy direct log holds between records: padding and preallocated zeros.
        let g = gaps(&log);
        assert!(g.iter().all(|&(_, _, k)| !k.is_damage()), "{scenario}: {g:?}");
        assert!(g.iter().all(|&(off, len, k)| k != GapKind::Padding || (off + len) % 4096 == 0));
        let last = g.last().unwrap();
        assert_eq!((last.0 + last.1, last.2), (src.len(), GapKind::TrailingZeros));
        assert!(g.iter().any(|&(_, _, k)| k == GapKind::Padding));
    }
}

/// Ranges that tile a golden log give the whole-file scan, item for item.
#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn golden_logs_tile_exactly() {
    let mut files = Vec::new();
    let dir = golden("entrylogs");
    for f in ["open_log/current/2a.log", "multi_ledger/current/0.log", "torn_mid_entry_body/current/0.log",
        "many_ledgers/current/10.log"] {
        files.push(dir.join(f));
    }
    let dir = golden("direct_entrylogs");
    files.push(dir.join("direct_open/current/0.log"));
    files.push(dir.join("direct_rolled/current/0.log"));
    for path in files {
        let src = MemorySource::read(&path).unwrap();
        let log = EntryLog::new(src.bytes());
        let opts = options();
        let whole = log_items(&log, &opts, 0, u64::MAX);
        assert_contiguous(&whole, log.layout().data_start(), src.len());
        let step = if src.len() > 100_000 { 997 } else { 1 };
        // A range warms up from as far back as the whole file here, so each costs a
        // whole-file scan: a sample of the cuts (of every kind) keeps this quick.
        let cuts = cut_points(&whole, src.len(), step, 5);
        let cuts: Vec<u64> = cuts.iter().copied().step_by(cuts.len().div_ceil(600)).collect();
        assert_tilings(|s, e| log_items(&log, &opts, s, e), src.len(), &cuts, &path.display().to_string());
    }
}
