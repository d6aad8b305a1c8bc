//! Small files for the framing's unit tests: entries, logs and journals written
//! as their writers write them, and each file read back as (offset, what).

use std::io::Cursor;

use crate::digest::{DigestType, Digester};
use crate::entry::{encode_entry, EntryHeader};
use crate::files::entry_log::{EntryLog, EntryLogItem, EntryLogWriter};
use crate::files::journal::{Journal, JournalItem, JournalRecordKind};
use crate::ledger_digest_settings::LedgerDigestSettings;

/// Entry `id` of `ledger` (LAC `lac`, ledger length `length`).
pub(crate) fn entry(ledger: i64, id: i64, lac: i64, length: i64, payload: &[u8], dt: DigestType) -> Vec<u8> {
    encode_entry(&EntryHeader::new(0, ledger, id, lac, length), payload, &Digester::new(dt, b"")).unwrap()
}

/// Entries `0..count` of `ledger` as its client writes them: `size`-byte payloads,
/// running length, LAC one behind.
pub(crate) fn ledger_entries(ledger: i64, count: i64, size: usize, dt: DigestType) -> Vec<Vec<u8>> {
    (0..count).map(|i| entry(ledger, i, i - 1, size as i64 * (i + 1), &vec![i as u8 + 1; size], dt)).collect()
}

/// A legacy entry log of `entries`, and each record's offset.
pub(crate) fn legacy_log(entries: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    let offsets = entries.iter().map(|e| w.add_entry(e).unwrap() as usize - 4).collect();
    (w.finish_open().unwrap().into_inner(), offsets)
}

/// (offset, what) of each item of a log: "entry", "reframed", "map", or the gap kind.
pub(crate) fn read(data: &[u8]) -> Vec<(usize, String)> {
    read_range(data, 0, u64::MAX)
}

/// [`read`] of the byte range `[start, end)`.
pub(crate) fn read_range(data: &[u8], start: u64, end: u64) -> Vec<(usize, String)> {
    EntryLog::new(data)
        .scan_range(&LedgerDigestSettings::default(), start, end)
        .map(|item| match item {
            EntryLogItem::Entry(e) => (e.offset as usize, if e.reframed { "reframed" } else { "entry" }.to_string()),
            EntryLogItem::LedgersMap(m) => (m.offset as usize, "map".to_string()),
            EntryLogItem::Gap(g) => (g.offset as usize, g.kind.as_str().to_string()),
        })
        .collect()
}

/// (offset, what) of each item of a journal: the record kind ("reframed" for a
/// reframed entry, "unknown_meta <id>"), or the gap kind.
pub(crate) fn read_journal(data: &[u8]) -> Vec<(usize, String)> {
    Journal::new(data)
        .unwrap()
        .scan(&LedgerDigestSettings::default())
        .map(|item| match item {
            JournalItem::Record(r) if r.reframed => (r.offset as usize, "reframed".to_string()),
            JournalItem::Record(r) => match r.kind {
                JournalRecordKind::UnknownMeta { entry_id, .. } => (r.offset as usize, format!("unknown_meta {entry_id}")),
                k => (r.offset as usize, k.name().to_string()),
            },
            JournalItem::Gap(g) => (g.offset as usize, g.kind.as_str().to_string()),
        })
        .collect()
}

/// Adds `by` to the size field at `at`.
pub(crate) fn bump_size(data: &mut [u8], at: usize, by: i32) {
    let n = i32::from_be_bytes(data[at..at + 4].try_into().unwrap()) + by;
    data[at..at + 4].copy_from_slice(&n.to_be_bytes());
}
