//! The ledgers-map trailer (docs/formats.md#entry-logs): which ledgers a log holds and how
//! many bytes of records each has, with BookKeeper's fallback to a scan.
//!
//! BookKeeper's garbage collector trusts the map it reads; a reader of damaged logs
//! cannot. Besides BookKeeper's own checks (markers, pair counts, the header's ledger
//! count), the map must be possible for the file it is in: every ledger's size at
//! least one record, none larger than the records before the map, and together
//! exactly the records before the map in a legacy log (which packs its records with
//! nothing between them) or at most that in a direct log (which pads). Anything else
//! falls back to a scan, and says why. (A flipped ledger id keeps every size right;
//! only comparing with a scan finds it, which `bkcodec verify` does.)

use std::collections::BTreeMap;

use crate::bytes::i64_unchecked;
use crate::error::{Error, Result};
use crate::files::entry_log::{EntryLogHeader, EntryLogLayout};
use crate::files::source::{read_exact_at, read_vec_at, ReadAt};

/// Stands in for the ledger id in a map record (`INVALID_LID`).
pub(crate) const MAP_LEDGER_ID: i64 = -1;
/// Stands in for the entry id in a map record (`LEDGERS_MAP_ENTRY_ID`).
pub(crate) const MAP_ENTRY_ID: i64 = -2;
/// Pairs per map record (`LEDGERS_MAP_MAX_BATCH_SIZE`).
pub const LEDGERS_MAP_MAX_BATCH: usize = 10_000;
/// The largest map record, size field excluded.
const MAX_MAP_RECORD: usize = 20 + 16 * LEDGERS_MAP_MAX_BATCH;
/// The smallest record an entry makes: size field and a 32-byte header.
const MIN_RECORD_SPAN: i64 = 36;

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

    /// A map computed by a scan, `sizes` by ledger id; `reason` says why the trailer was not used.
    pub fn from_scan(sizes: BTreeMap<i64, i64>, reason: Error) -> LedgersMap {
        LedgersMap { source: LedgersMapSource::Scan, ledgers: sorted(sizes), fallback_reason: Some(reason) }
    }
}

pub(crate) fn map_record_pairs(body: &[u8]) -> impl Iterator<Item = (i64, i64)> + '_ {
    body.get(20..).unwrap_or(&[]).chunks_exact(16).map(|p| (i64_unchecked(p, 0), i64_unchecked(p, 8)))
}

fn sorted(sizes: BTreeMap<i64, i64>) -> Vec<LedgerSize> {
    sizes.into_iter().map(|(ledger_id, size)| LedgerSize { ledger_id, size }).collect()
}

/// The header's map offset as a position in a `len`-byte file: `Ok(None)` when the
/// header points at no map, an error when it points past the end of the file (a
/// rolled log cut short).
pub(crate) fn map_offset(header: &EntryLogHeader, layout: EntryLogLayout, len: u64) -> Result<Option<u64>> {
    if !header.has_ledgers_map() {
        return Ok(None);
    }
    let start = header.ledgers_map_offset;
    if start < layout.data_start() as i64 {
        return Err(Error::corrupt(8, format!("ledgers map offset {start} is inside the {}-byte header", layout.data_start())));
    }
    // A log rolled with no ledgers points its map at the end of its records.
    let empty = start as u64 == len && header.ledgers_count == 0;
    if start as u64 > len || (start as u64 == len && !empty) {
        return Err(Error::truncated(len, (start as u64 - len).max(1), 0).with_detail(format!(
            "the header places the ledgers map at byte {start}, the file ends at byte {len}")));
    }
    Ok((!empty).then_some(start as u64))
}

/// Reads the trailer as `extractEntryLogMetadataFromIndex` does (records from the
/// header's offset until a size field <= 0, 0xF0 padding between records of a direct
/// log stepped over, each with the -1/-2 markers and exactly its pairs, as many
/// distinct ledgers as the header counts, a count of 0 meaning no map), and checks
/// that the map is possible for the file (see the module notes).
pub(crate) fn read_trailer(source: &dyn ReadAt, header: &EntryLogHeader, layout: EntryLogLayout) -> Result<Vec<LedgerSize>> {
    let len = source.len();
    let Some(start) = map_offset(header, layout, len)? else {
        return Err(Error::corrupt(8, format!(
            "no ledgers map: header version {} with map offset {}", header.version, header.ledgers_map_offset)));
    };
    if header.ledgers_count == 0 {
        return Err(Error::corrupt(16, "header counts 0 ledgers, which BookKeeper treats as no map"));
    }
    let records_bytes = start as i64 - layout.data_start() as i64;
    let mut sizes = BTreeMap::new();
    let mut pairs = 0usize;
    let mut pos = start;
    while pos < len {
        let mut first = [0u8; 1];
        read_exact_at(source, pos, &mut first)?;
        if first[0] == 0xF0 && layout == EntryLogLayout::Direct {
            pos = skip_fill(source, pos)?;
            continue;
        }
        if len - pos < 4 {
            let tail = read_vec_at(source, pos, 4)?;
            if tail.iter().all(|&b| b == 0) {
                break;
            }
            return Err(Error::truncated(pos, 4, len - pos).with_detail("ledgers map ends inside a size field"));
        }
        let mut size = [0u8; 4];
        read_exact_at(source, pos, &mut size)?;
        let n = i32::from_be_bytes(size);
        if n <= 0 {
            break;
        }
        let n = n as usize;
        if n > MAX_MAP_RECORD {
            return Err(Error::corrupt(pos, format!("ledgers map record of {n} bytes is larger than any map record ({MAX_MAP_RECORD})")));
        }
        if pos + 4 + n as u64 > len {
            return Err(Error::truncated(pos + 4, n as u64, len - pos - 4)
                .with_detail(format!("ledgers map record of {n} bytes runs past the end of the log")));
        }
        let body = read_vec_at(source, pos + 4, n)?;
        if n < 20 || i64_unchecked(&body, 0) != MAP_LEDGER_ID || i64_unchecked(&body, 8) != MAP_ENTRY_ID {
            return Err(Error::corrupt(pos, "record in the ledgers map lacks the -1/-2 map markers"));
        }
        let k = i32::from_be_bytes(body[16..20].try_into().expect("4 bytes"));
        if k < 0 || n as i64 != 20 + 16 * k as i64 {
            return Err(Error::corrupt(pos + 20, format!("ledgers map record of {n} bytes says it holds {k} pairs")));
        }
        for (i, (ledger, size)) in map_record_pairs(&body).enumerate() {
            let at = pos + 24 + 16 * i as u64;
            if !(MIN_RECORD_SPAN..=records_bytes).contains(&size) {
                return Err(Error::corrupt(at + 8, format!(
                    "ledgers map gives ledger {ledger} {size} bytes, impossible before a map at byte {start} \
                     ({records_bytes} bytes of records)")));
            }
            if sizes.insert(ledger, size).is_some() {
                return Err(Error::corrupt(at, format!("ledgers map lists ledger {ledger} twice")));
            }
            pairs += 1;
        }
        pos += 4 + n as u64;
    }
    if sizes.len() as i64 != header.ledgers_count as i64 {
        return Err(Error::corrupt(16, format!(
            "ledgers map lists {} ledgers, the header counts {}", sizes.len(), header.ledgers_count)));
    }
    debug_assert_eq!(pairs, sizes.len());
    let total: i64 = sizes.values().sum();
    let possible = match layout {
        EntryLogLayout::Legacy => total == records_bytes,
        EntryLogLayout::Direct => total <= records_bytes,
    };
    if !possible {
        return Err(Error::corrupt(start, format!(
            "ledgers map sizes add up to {total} bytes, but {records_bytes} bytes of records come before it{}",
            if layout == EntryLogLayout::Legacy { " (a legacy log holds nothing else there)" } else { "" })));
    }
    Ok(sorted(sizes))
}

/// Where the run of 0xF0 at `pos` ends (read a block at a time).
fn skip_fill(source: &dyn ReadAt, mut pos: u64) -> Result<u64> {
    loop {
        let block = read_vec_at(source, pos, 4096)?;
        if block.is_empty() {
            return Ok(pos);
        }
        match block.iter().position(|&b| b != 0xF0) {
            Some(i) => return Ok(pos + i as u64),
            None => pos += block.len() as u64,
        }
    }
}

/// `[start, end)` of the map records (and, in the direct layout, the 0xF0 padding
/// between them) from the header's map offset, when at least one frames there,
/// and how many ledgers those records list.
pub(crate) fn map_region(source: &dyn ReadAt, header: &EntryLogHeader, layout: EntryLogLayout, fill: Option<u8>) -> Option<(usize, usize, i64)> {
    let start = map_offset(header, layout, source.len()).ok()??;
    let len = source.len();
    let mut end = start;
    let mut pos = start;
    let mut ledgers = 0i64;
    while pos + 4 <= len {
        let mut head = [0u8; 24];
        let got = source.read_at(pos, &mut head).ok()?;
        if fill.is_some_and(|f| head[0] == f) {
            pos = skip_fill(source, pos).ok()?;
            continue;
        }
        if got < 24 {
            break;
        }
        let n = i32::from_be_bytes(head[..4].try_into().expect("4 bytes"));
        let k = i32::from_be_bytes(head[20..24].try_into().expect("4 bytes"));
        let framed = n >= 20
            && i64_unchecked(&head, 4) == MAP_LEDGER_ID
            && i64_unchecked(&head, 12) == MAP_ENTRY_ID
            && (1..=LEDGERS_MAP_MAX_BATCH as i32).contains(&k)
            && n as i64 == 20 + 16 * k as i64
            && pos + 4 + n as u64 <= len;
        if !framed {
            break;
        }
        pos += 4 + n as u64;
        end = pos;
        ledgers += i64::from(k);
    }
    (end > start).then_some((start as usize, end as usize, ledgers))
}

/// The trailer if it is usable, else the sizes `scan` computes, with the reason.
pub(crate) fn ledgers_map(
    source: &dyn ReadAt,
    header: Result<EntryLogHeader>,
    layout: EntryLogLayout,
    scan: impl FnOnce() -> Result<BTreeMap<i64, i64>>,
) -> Result<LedgersMap> {
    match header.and_then(|h| read_trailer(source, &h, layout)) {
        Ok(ledgers) => Ok(LedgersMap { source: LedgersMapSource::Trailer, ledgers, fallback_reason: None }),
        Err(reason) => Ok(LedgersMap::from_scan(scan()?, reason)),
    }
}
