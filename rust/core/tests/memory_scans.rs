//! The in-memory scans (`EntryLog::scan`, `Journal::scan`, `EntryLog::ledgers_map`)
//! frame a damaged file exactly as the readers do: on randomly damaged logs and
//! journals, every record and damaged span one reports the other reports too, and a
//! log's ledgers map comes out the same from bytes in memory as from a source.
//! Among the damage: size fields made to cover whole records, which only the digest
//! checker tells apart from one long entry (a walk without it keeps the long entry).

mod common;

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use bkcodec_core::arrow::{EntryBatchOptions, EntryLogBatchReader, FileReaderOptions, JournalBatchReader, OnError, PayloadMode};
use bkcodec_core::files::entry_log::{ledgers_map_of, EntryLogItem};
use bkcodec_core::files::{EntryLog, EntryLogWriter, Journal, JournalItem, JournalWriter, MemorySource, ReadAt};
use bkcodec_core::{DigestPolicy, LedgerDigestSettings};
use common::{mixed_ledger_entries, Rng};

/// A row as both sides report it: offset, what (`entry`, a record type or a damage
/// kind, with ` reframed` for a reframed entry), size (an entry's or record's bytes
/// after its size field, a damaged span's length).
type Row = (u64, String, u64);

const PASSWORD: &[u8] = b"secret";

fn digests() -> LedgerDigestSettings {
    LedgerDigestSettings::new(DigestPolicy::Auto, PASSWORD)
}

/// One of the damage shapes the campaigns use, somewhere in `bytes` past `from`.
fn damage(rng: &mut Rng, bytes: &mut Vec<u8>, from: usize) {
    let len = bytes.len();
    if len <= from + 8 {
        return;
    }
    let at = from + rng.below((len - from - 8) as u64) as usize;
    match rng.below(6) {
        // A size field (or any 4 bytes) one off, or a random value.
        0 => {
            let n = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
            let v = if rng.below(2) == 0 { n.wrapping_add(1) } else { n.wrapping_sub(1) };
            bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
        1 => bytes[at] ^= 1 << rng.below(8),
        2 => {
            let n = (rng.below(600) as usize).min(len - at);
            bytes[at..at + n].fill(0);
        }
        3 => {
            let n = (rng.below(300) as usize).min(len - at);
            let noise = rng.bytes(n);
            bytes[at..at + n].copy_from_slice(&noise);
        }
        4 => bytes.truncate(at),
        _ => {
            let n = 1 + rng.below(100) as usize;
            let noise = rng.bytes(n);
            bytes.splice(at..at, noise);
        }
    }
}

/// A size field made to cover the records after its own up to a record boundary:
/// the entry it frames fails its digest (or length chain), and holds whole records.
fn cover(rng: &mut Rng, bytes: &mut [u8], records: &[usize]) {
    if records.len() < 3 {
        return;
    }
    let i = rng.below(records.len() as u64 - 2) as usize;
    let j = (i + 2 + rng.below(3) as usize).min(records.len() - 1);
    let size = (records[j] - records[i] - 4) as i32;
    bytes[records[i]..records[i] + 4].copy_from_slice(&size.to_be_bytes());
}

fn reader_options() -> FileReaderOptions {
    let entries = EntryBatchOptions { payload: PayloadMode::None, on_error: OnError::Flag };
    let mut options = FileReaderOptions::new(entries, digests());
    options.batch_rows = 97;
    options
}

/// The rows of a reader's batches that are spans of the file (a row past its end says
/// what the file lacks: the in-memory scans list spans only).
fn reader_rows(batches: impl Iterator<Item = bkcodec_core::Result<arrow_array::RecordBatch>>, len: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    for batch in batches {
        let batch = batch.unwrap();
        let int = |name: &str| batch.column_by_name(name).unwrap().as_primitive::<Int64Type>().clone();
        let text = |name: &str| batch.column_by_name(name).unwrap().as_string::<i32>().clone();
        let (offset, size, what, kind) = (int("offset"), int("record_size"), text("record_type"), text("error_kind"));
        for i in 0..batch.num_rows() {
            let at = offset.value(i) as u64;
            let what = match (what.value(i), kind.is_valid(i).then(|| kind.value(i))) {
                ("damage", Some(kind)) => kind.to_string(),
                ("entry", Some("reframed")) => "entry reframed".to_string(),
                (what, _) => what.to_string(),
            };
            if at < len {
                rows.push((at, what, size.value(i) as u64));
            }
        }
    }
    rows
}

fn log_scan_rows(bytes: &[u8]) -> Vec<Row> {
    EntryLog::new(bytes)
        .scan(&digests())
        .filter_map(|item| match item {
            EntryLogItem::Entry(e) => Some((e.offset, if e.reframed { "entry reframed" } else { "entry" }.to_string(), e.size())),
            // Neither map records nor padding give a reader row.
            EntryLogItem::LedgersMap(_) => None,
            EntryLogItem::Gap(g) => g.kind.is_damage().then(|| (g.offset, g.kind.as_str().to_string(), g.len)),
        })
        .collect()
}

fn journal_scan_rows(bytes: &[u8]) -> Vec<Row> {
    Journal::new(bytes)
        .unwrap()
        .scan(&digests())
        .filter_map(|item| match item {
            JournalItem::Record(r) => {
                let what = if r.reframed { "entry reframed" } else { r.kind.name() };
                Some((r.offset, what.to_string(), r.span_len() - 4))
            }
            JournalItem::Gap(g) => g.kind.is_damage().then(|| (g.offset, g.kind.as_str().to_string(), g.len)),
        })
        .collect()
}

fn source(bytes: &[u8]) -> Arc<dyn ReadAt> {
    Arc::new(MemorySource::from_vec(bytes.to_vec()))
}

#[test]
fn a_damaged_entry_log_scans_in_memory_as_the_reader_reads_it() {
    let mut damaged_rows = 0;
    for seed in 1..=120u64 {
        let mut rng = Rng(seed * 0x9E37_79B9_7F4A_7C15);
        let mut w = if seed % 2 == 0 {
            EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap()
        } else {
            EntryLogWriter::direct(Cursor::new(Vec::new()), 16 * 1024, 1 << 20).unwrap()
        };
        let records: Vec<usize> = mixed_ledger_entries(&mut rng, 60).iter().map(|e| w.add_entry(e).unwrap() as usize - 4).collect();
        let mut bytes = if seed % 3 == 0 { w.finish_open() } else { w.finish_rolled() }.unwrap().into_inner();
        if seed % 2 == 1 {
            cover(&mut rng, &mut bytes, &records);
        }
        for _ in 0..rng.below(3) {
            damage(&mut rng, &mut bytes, 1024);
        }
        let len = bytes.len() as u64;
        let read = reader_rows(EntryLogBatchReader::new(source(&bytes), None, reader_options()).unwrap(), len);
        let scanned = log_scan_rows(&bytes);
        assert_eq!(scanned, read, "seed {seed}");
        damaged_rows += read.iter().filter(|r| !r.1.starts_with("entry")).count();
    }
    // The damage made the framing work: the two agree on damaged spans, not just on clean logs.
    assert!(damaged_rows > 50, "only {damaged_rows} damaged spans");
}

#[test]
fn a_damaged_journal_scans_in_memory_as_the_reader_reads_it() {
    let mut damaged_rows = 0;
    for seed in 1..=120u64 {
        let mut rng = Rng(seed * 0xD1B5_4A32_D192_ED03);
        let version = [4, 5, 6][seed as usize % 3];
        let mut w = JournalWriter::new(Cursor::new(Vec::new()), version, 512, 0).unwrap();
        let mut records = Vec::new();
        for (i, e) in mixed_ledger_entries(&mut rng, 60).iter().enumerate() {
            records.push(w.add_entry(e).unwrap() as usize);
            if i % 17 == 5 {
                w.add_fence(100 + (i % 4) as i64).unwrap();
            }
        }
        let mut bytes = w.finish().unwrap().into_inner();
        if seed % 2 == 1 {
            cover(&mut rng, &mut bytes, &records);
        }
        for _ in 0..rng.below(3) {
            damage(&mut rng, &mut bytes, 512);
        }
        let len = bytes.len() as u64;
        let reader = JournalBatchReader::new(source(&bytes), None, true, None, reader_options()).unwrap();
        let read = reader_rows(reader, len);
        let scanned = journal_scan_rows(&bytes);
        assert_eq!(scanned, read, "seed {seed} (version {version})");
        damaged_rows += read.iter().filter(|r| !matches!(r.1.as_str(), "entry" | "entry reframed" | "fence" | "padding")).count();
    }
    assert!(damaged_rows > 50, "only {damaged_rows} damaged spans");
}

#[test]
fn a_damaged_entry_log_counts_its_ledgers_alike_in_memory_and_from_a_source() {
    let mut by_scan = 0;
    for seed in 1..=80u64 {
        let mut rng = Rng(seed * 0xA076_1D64_78BD_642F);
        let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
        let records: Vec<usize> = mixed_ledger_entries(&mut rng, 50).iter().map(|e| w.add_entry(e).unwrap() as usize - 4).collect();
        // An open log has no trailer: its map comes from a scan, as does a rolled
        // one whose trailer the damage reached.
        let mut bytes = if seed % 2 == 0 { w.finish_open() } else { w.finish_rolled() }.unwrap().into_inner();
        if seed % 4 < 2 {
            cover(&mut rng, &mut bytes, &records);
        }
        for _ in 0..rng.below(3) {
            damage(&mut rng, &mut bytes, 1024);
        }
        let in_memory = EntryLog::new(&bytes).ledgers_map(&digests());
        let of_source = ledgers_map_of(source(&bytes), PASSWORD).unwrap();
        assert_eq!((in_memory.source, &in_memory.ledgers), (of_source.source, &of_source.ledgers), "seed {seed}");
        by_scan += usize::from(in_memory.source == bkcodec_core::files::entry_log::LedgersMapSource::Scan);
    }
    assert!(by_scan > 40, "only {by_scan} maps came from a scan");
}
