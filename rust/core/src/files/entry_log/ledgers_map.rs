//! The ledgers-map trailer (FORMATS.md §3.4, §4.4): which ledgers a log holds and how
//! many bytes of records each has, with BookKeeper's fallback to a scan.

use std::collections::BTreeMap;

use crate::bytes::{i32_at, i64_at, i64_unchecked, slice_at};
use crate::error::{Error, Result};
use crate::files::entry_log::{EntryLog, EntryLogHeader, EntryLogItem};
use crate::files::framing::ScanOptions;
use crate::files::runs::first_not;

/// Stands in for the ledger id in a map record (`INVALID_LID`).
pub(crate) const MAP_LEDGER_ID: i64 = -1;
/// Stands in for the entry id in a map record (`LEDGERS_MAP_ENTRY_ID`).
pub(crate) const MAP_ENTRY_ID: i64 = -2;
/// Pairs per map record (`LEDGERS_MAP_MAX_BATCH_SIZE`).
pub const LEDGERS_MAP_MAX_BATCH: usize = 10_000;

/// Total bytes of one ledger's records in a log: the sum of entry length + 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LedgerSize {
    pub ledger_id: i64,
    pub size: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedgersMapSource {
    /// Read from the trailer the logger appended when it rolled the log.
    Trailer,
    /// Computed by scanning the records (no usable trailer).
    Scan,
}

impl LedgersMapSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            LedgersMapSource::Trailer => "trailer",
            LedgersMapSource::Scan => "scan",
        }
    }
}

/// A log's ledgers, sorted by ledger id, and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgersMap {
    pub source: LedgersMapSource,
    pub ledgers: Vec<LedgerSize>,
    /// Why the trailer was not used, when it was not.
    pub fallback_reason: Option<Error>,
}

impl LedgersMap {
    pub fn total_size(&self) -> i64 {
        self.ledgers.iter().map(|l| l.size).sum()
    }

    pub fn size_of(&self, ledger_id: i64) -> Option<i64> {
        self.ledgers.binary_search_by_key(&ledger_id, |l| l.ledger_id).ok().map(|i| self.ledgers[i].size)
    }
}

pub(crate) fn map_record_pairs(body: &[u8]) -> impl Iterator<Item = (i64, i64)> + '_ {
    body.get(20..).unwrap_or(&[]).chunks_exact(16).map(|p| (i64_unchecked(p, 0), i64_unchecked(p, 8)))
}

fn sorted(sizes: BTreeMap<i64, i64>) -> Vec<LedgerSize> {
    sizes.into_iter().map(|(ledger_id, size)| LedgerSize { ledger_id, size }).collect()
}

/// Reads the trailer as `extractEntryLogMetadataFromIndex` does: from the header's
/// offset, records until a size field <= 0 (0xF0 padding between records of a direct
/// log is stepped over), each with the -1/-2 markers and exactly its pairs; the
/// number of distinct ledgers must equal the header's count, and a count of 0 means
/// no map.
pub(crate) fn read_trailer(log: &EntryLog<'_>) -> Result<Vec<LedgerSize>> {
    let data = log.data();
    let header = EntryLogHeader::parse(data)?;
    if !header.has_ledgers_map() {
        return Err(Error::corrupt(8, format!(
            "no ledgers map: header version {} with map offset {}", header.version, header.ledgers_map_offset)));
    }
    if header.ledgers_count == 0 {
        return Err(Error::corrupt(16, "header counts 0 ledgers, which BookKeeper treats as no map"));
    }
    let start = header.ledgers_map_offset;
    if start < log.layout().data_start() as i64 || start as u64 >= log.len() {
        return Err(Error::corrupt(8, format!(
            "ledgers map offset {start} is outside the records of this {}-byte log", data.len())));
    }
    let mut sizes = BTreeMap::new();
    let mut pos = start as usize;
    while pos < data.len() {
        if data[pos] == 0xF0 {
            pos = first_not(data, pos, data.len(), 0xF0);
            continue;
        }
        if data.len() - pos < 4 {
            if data[pos..].iter().all(|&b| b == 0) {
                break;
            }
            return Err(Error::truncated(pos as u64, 4, (data.len() - pos) as u64)
                .with_detail("ledgers map ends inside a size field"));
        }
        let n = i32_at(data, pos)?;
        if n <= 0 {
            break;
        }
        let body = slice_at(data, pos + 4, n as usize)
            .map_err(|e| e.with_detail(format!("ledgers map record of {n} bytes runs past the end of the log")))?;
        if n < 20 || i64_at(body, 0)? != MAP_LEDGER_ID || i64_at(body, 8)? != MAP_ENTRY_ID {
            return Err(Error::corrupt(pos as u64, "record in the ledgers map lacks the -1/-2 map markers"));
        }
        let k = i32_at(body, 16)?;
        if k < 0 || n as i64 != 20 + 16 * k as i64 {
            return Err(Error::corrupt(pos as u64 + 20, format!(
                "ledgers map record of {n} bytes says it holds {k} pairs")));
        }
        for (ledger, size) in map_record_pairs(body) {
            *sizes.entry(ledger).or_insert(0i64) += size;
        }
        pos += 4 + n as usize;
    }
    if sizes.len() as i64 != header.ledgers_count as i64 {
        return Err(Error::corrupt(16, format!(
            "ledgers map lists {} ledgers, the header counts {}", sizes.len(), header.ledgers_count)));
    }
    Ok(sorted(sizes))
}

pub(crate) fn ledgers_map(log: &EntryLog<'_>, options: &ScanOptions) -> LedgersMap {
    match read_trailer(log) {
        Ok(ledgers) => LedgersMap { source: LedgersMapSource::Trailer, ledgers, fallback_reason: None },
        Err(reason) => {
            let mut sizes = BTreeMap::new();
            for item in log.scan(options) {
                if let EntryLogItem::Entry(e) = item {
                    *sizes.entry(e.header.ledger_id).or_insert(0i64) += e.size() as i64 + 4;
                }
            }
            LedgersMap { source: LedgersMapSource::Scan, ledgers: sorted(sizes), fallback_reason: Some(reason) }
        }
    }
}
