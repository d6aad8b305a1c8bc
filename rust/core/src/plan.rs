//! Which bookie files a read covers and how they are cut into byte ranges and packed
//! into partitions: the planning a parallel reader (the JVM Spark source) does before
//! any task starts. The rules are the Python data source's (`bkcodec_spark.files` and
//! `bkcodec_spark.planning`): the same files, kinds, ranges and partitions.
//!
//! - Kinds come from names (`<hex>.log`, `.txn`, `.idx`); with [`ReadKind::Auto`] the
//!   one kind present is read, entry logs and journals together are a bookie
//!   ([`ReadKind::Bookie`], read merged), index files only when nothing else is
//!   there. Files named like entry logs or journals that are not (text, a RocksDB
//!   write-ahead log) are skipped with a note, as the bookie layout tells them.
//! - Entry logs and journals larger than the target are read in byte ranges `[start,
//!   end)` that tile the file (a record belongs to the range its size field starts
//!   in); index files are read whole.
//! - Splits are packed, in path order, into partitions of about the target size,
//!   each split also counting an `open_cost` in bytes; the target is `split_size`,
//!   lowered so that at least `min_partitions` partitions keep every core busy.

use std::path::{Path, PathBuf};

use crate::bookie::layout::{classify, kind_from_name, FileKind};
use crate::error::{Error, Result};
use crate::files::scan::OFFSET_LOOKUP_LEAD;

/// What opening one more file costs, in bytes read.
pub const DEFAULT_OPEN_COST: u64 = 1 << 20;
/// Byte ranges one file is cut into at most, whatever `split_size` says: more gives
/// no cluster more parallelism, each range walks up to `WARM_UP_BYTES` before its
/// start, and a tiny `split_size` (`splitSize=1`) must not plan a split per byte.
pub const MAX_RANGES_PER_FILE: u64 = 4096;

/// A kind of bookie file a read takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadKind {
    Auto,
    EntryLog,
    Journal,
    Index,
    /// Entry logs and journals read together, each row with its file's kind.
    Bookie,
}

impl ReadKind {
    /// The kinds of one file each.
    pub const FILE_KINDS: [ReadKind; 3] = [ReadKind::EntryLog, ReadKind::Journal, ReadKind::Index];

    /// The name `bookie_layout` and `file_kind` give the files this kind reads (what
    /// a row's `file_kind` says), or `None` for `auto` and `bookie`.
    pub fn file_kind(self) -> Option<&'static str> {
        match self {
            ReadKind::EntryLog => Some("entry_log"),
            ReadKind::Journal => Some("journal"),
            ReadKind::Index => Some("index"),
            ReadKind::Auto | ReadKind::Bookie => None,
        }
    }

    /// The column this kind's reader fills from the hex id in a file's name.
    pub fn name_id_column(self) -> Option<&'static str> {
        match self {
            ReadKind::EntryLog => Some("log_id"),
            ReadKind::Journal => Some("journal_id"),
            ReadKind::Index => Some("ledger_id"),
            ReadKind::Auto | ReadKind::Bookie => None,
        }
    }

    /// The data source's names: `auto`, `entrylog`, `journal`, `index`, `bookie`.
    pub fn from_name(name: &str) -> Result<ReadKind> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "auto" => ReadKind::Auto,
            "entrylog" => ReadKind::EntryLog,
            "journal" => ReadKind::Journal,
            "index" => ReadKind::Index,
            "bookie" => ReadKind::Bookie,
            other => {
                return Err(Error::invalid_argument(format!(
                    "kind must be auto or one of entrylog, journal, index, not {other:?}"
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ReadKind::Auto => "auto",
            ReadKind::EntryLog => "entrylog",
            ReadKind::Journal => "journal",
            ReadKind::Index => "index",
            ReadKind::Bookie => "bookie",
        }
    }

    /// The kind a file's name gives it (entry log, journal or index), if any.
    pub fn of_name(path: &Path) -> Option<ReadKind> {
        match kind_from_name(path) {
            FileKind::EntryLog { .. } => Some(ReadKind::EntryLog),
            FileKind::Journal { .. } => Some(ReadKind::Journal),
            FileKind::Index { .. } => Some(ReadKind::Index),
            _ => None,
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            ReadKind::EntryLog => ".log",
            ReadKind::Journal => ".txn",
            ReadKind::Index => ".idx",
            ReadKind::Bookie | ReadKind::Auto => ".log, *.txn",
        }
    }
}

/// A file of a listing; `size` is None for a file named explicitly that is gone (its
/// read gives one flagged row), `kind` the file's own kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    pub path: PathBuf,
    pub size: Option<u64>,
    pub kind: ReadKind,
}

/// The files of one kind a read covers, in the order given (sorted by path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub kind: ReadKind,
    pub files: Vec<ListedFile>,
    /// Why the listing is empty, when it is.
    pub note: Option<String>,
    /// Files named like bookie files left out, each with why.
    pub skipped: Vec<(PathBuf, String)>,
}

fn file_size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Of `paths` (files, sorted, as a listing of the user's paths gives them), those of
/// `kind`; with `Auto`, the kind the names show. Files named like entry logs or
/// journals whose content says otherwise are skipped (with `Auto` and `Bookie`).
pub fn select_files(paths: &[PathBuf], kind: ReadKind) -> Result<Listing> {
    let mut skipped = Vec::new();
    let mut kept = Vec::new();
    for path in paths {
        let Some(named) = ReadKind::of_name(path) else {
            kept.push((path.clone(), None));
            continue;
        };
        if matches!(kind, ReadKind::Auto | ReadKind::Bookie) && path.exists() {
            if let Ok(found) = classify(path) {
                if !matches!(found.kind, FileKind::EntryLog { .. } | FileKind::Journal { .. } | FileKind::Index { .. }) {
                    let note = found
                        .note
                        .unwrap_or_else(|| format!("a {}, not a bookie file", found.kind.name().replace('_', " ")));
                    skipped.push((path.clone(), note));
                    continue;
                }
            }
        }
        kept.push((path.clone(), Some(named)));
    }
    let of = |k: ReadKind| kept.iter().filter(move |(_, n)| *n == Some(k)).map(|(p, _)| p.clone());
    let has = |k: ReadKind| kept.iter().any(|(_, n)| *n == Some(k));
    let (chosen, selected): (ReadKind, Vec<PathBuf>) = match kind {
        ReadKind::Auto | ReadKind::Bookie if kind == ReadKind::Bookie || (has(ReadKind::EntryLog) && has(ReadKind::Journal)) => {
            let mut both: Vec<PathBuf> = of(ReadKind::EntryLog).chain(of(ReadKind::Journal)).collect();
            both.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
            (ReadKind::Bookie, both)
        }
        ReadKind::Auto => {
            let found = [ReadKind::EntryLog, ReadKind::Journal, ReadKind::Index].into_iter().find(|k| has(*k));
            match found {
                Some(k) => (k, of(k).collect()),
                None => {
                    return Err(Error::invalid_argument(format!(
                        "no bookie files among {} files; set .option('kind', ...) to one of entrylog, journal, index \
                         to read a file of another name",
                        paths.len()
                    )))
                }
            }
        }
        named if paths.len() == 1 && ReadKind::of_name(&paths[0]).is_none() => (named, paths.to_vec()),
        named => (named, of(named).collect()),
    };
    let files: Vec<ListedFile> = selected
        .into_iter()
        .map(|path| {
            let own = match chosen {
                ReadKind::Bookie => ReadKind::of_name(&path).unwrap_or(ReadKind::EntryLog),
                k => k,
            };
            ListedFile { size: file_size(&path), kind: own, path }
        })
        .collect();
    let note = files.is_empty().then(|| format!("no {} files (*{}): the result is empty", chosen.name(), chosen.suffix()));
    Ok(Listing { kind: chosen, files, note, skipped })
}

/// A file, or the byte range `[start, end)` of one; `size` is the file's size when it
/// was listed (None if it could not be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSplit {
    pub path: PathBuf,
    pub kind: ReadKind,
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub size: Option<u64>,
}

impl FileSplit {
    /// Bytes this split covers (0 for a file that could not be sized).
    pub fn length(&self) -> u64 {
        match (self.start, self.end) {
            (Some(s), Some(e)) => e.saturating_sub(s),
            _ => self.size.unwrap_or(0),
        }
    }
}

/// The part of `split` a read needs for rows whose `offset` lies in `[low, high)`
/// (None: unbounded): a ranged read gives exactly the records whose size field
/// starts in its range, so the range is the filter's, clipped to the file, from
/// [`OFFSET_LOOKUP_LEAD`] before its start (a range starts where its walk can
/// resume, which a damaged span never is; the row filter keeps the rest). None when
/// no row of the file can pass; a zero-length file is kept whole while its flagged
/// row, at offset 0, can. Index files (whose `offset` is a position in an entry
/// log) and files of unknown size are kept whole.
pub fn narrow_to_offsets(split: &FileSplit, low: Option<i64>, high: Option<i64>) -> Option<FileSplit> {
    let Some(size) = split.size else { return Some(split.clone()) };
    if split.kind == ReadKind::Index || (low.is_none() && high.is_none()) {
        return Some(split.clone());
    }
    let start = low.unwrap_or(0).max(0) as u64;
    let end = high.map_or(size, |h| h.max(0) as u64).min(size);
    if start < end {
        return Some(FileSplit { start: Some(start.saturating_sub(OFFSET_LOOKUP_LEAD)), end: Some(end), ..split.clone() });
    }
    (size == 0 && start == 0 && high.is_none_or(|h| h > 0)).then(|| split.clone())
}

/// `split` cut into byte ranges of at most `split_size` (entry logs and journals;
/// index files are small and read whole), and into [`MAX_RANGES_PER_FILE`] at most.
pub fn split_file(split: &FileSplit, split_size: u64) -> Vec<FileSplit> {
    let Some(size) = split.size else { return vec![split.clone()] };
    if split.kind == ReadKind::Index || split_size == 0 {
        return vec![split.clone()];
    }
    let start = split.start.unwrap_or(0);
    let end = split.end.unwrap_or(size);
    let split_size = split_size.max(end.saturating_sub(start).div_ceil(MAX_RANGES_PER_FILE));
    if end.saturating_sub(start) <= split_size {
        return vec![split.clone()];
    }
    let mut out = Vec::new();
    let mut s = start;
    while s < end {
        let e = s.saturating_add(split_size).min(end);
        out.push(FileSplit { start: Some(s), end: Some(e), ..split.clone() });
        s = e;
    }
    out
}

/// Bytes per partition: `split_size`, or less so that there are at least
/// `min_partitions` (Spark's rule for its file sources).
pub fn target_size(splits: &[FileSplit], split_size: u64, min_partitions: u64, open_cost: u64) -> u64 {
    let total: u64 = splits.iter().map(|s| s.length().saturating_add(open_cost)).fold(0, u64::saturating_add);
    let per = total.div_ceil(min_partitions.max(1));
    split_size.min(open_cost.max(per)).max(1)
}

/// Consecutive splits grouped into partitions of about `target` bytes each
/// (counting `open_cost` per split), balanced, in the order given.
pub fn pack(splits: &[FileSplit], target: u64, open_cost: u64) -> Vec<Vec<FileSplit>> {
    if splits.is_empty() {
        return Vec::new();
    }
    let target = target.max(1);
    let costs: Vec<u64> = splits.iter().map(|s| s.length().saturating_add(open_cost)).collect();
    let total: u64 = costs.iter().copied().fold(0, u64::saturating_add);
    let share = total as f64 / (total.div_ceil(target).max(1)) as f64;
    let mut groups: Vec<Vec<FileSplit>> = vec![Vec::new()];
    let (mut group_cost, mut done) = (0u64, 0u64);
    for (split, &cost) in splits.iter().zip(&costs) {
        let last = groups.last().map_or(0, Vec::len);
        if last > 0 && (done as f64 >= share * groups.len() as f64 || group_cost.saturating_add(cost) > target) {
            groups.push(Vec::new());
            group_cost = 0;
        }
        if let Some(g) = groups.last_mut() {
            g.push(split.clone());
        }
        group_cost = group_cost.saturating_add(cost);
        done = done.saturating_add(cost);
    }
    groups
}

/// Inclusive ranges of ledger ids a read keeps (a row filter on `ledger_id`; a null
/// ledger id, as damage has, never passes).
pub type LedgerRanges = [(i64, i64)];

pub fn admits(ranges: &LedgerRanges, ledger_id: i64) -> bool {
    ranges.iter().any(|&(lo, hi)| lo <= ledger_id && ledger_id <= hi)
}

/// The ids both range lists admit.
pub fn intersect(a: &LedgerRanges, b: &LedgerRanges) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for &(a_lo, a_hi) in a {
        for &(b_lo, b_hi) in b {
            let (lo, hi) = (a_lo.max(b_lo), a_hi.min(b_hi));
            if lo <= hi {
                out.push((lo, hi));
            }
        }
    }
    out
}

/// The `bkcodec` command line's range syntax, as the sources' row-filter options
/// (`ledgerId`, ...) take it: `7`, `10:20` (20 excluded), `:20`, `100:`, comma lists;
/// numbers as Python's `int(text, 0)` reads them (`0x1f`, `1_000`, a sign). Gives
/// inclusive ranges; `name` says which option a refusal is about (empty: the caller
/// names it, as a command line's argument parser does).
pub fn parse_id_ranges(name: &str, text: &str) -> Result<Vec<(i64, i64)>> {
    let bad = |why: String| Error::invalid_argument(if name.is_empty() { why } else { format!("{name}: {why}") });
    let number = |part: &str, what: &str| -> Result<i128> {
        python_int(part).ok_or_else(|| bad(format!("{what}: not an integer: {:?}", part.trim())))
    };
    let in_range = |v: i128, what: &str, upper: i128| -> Result<i128> {
        if (i64::MIN as i128..=upper).contains(&v) {
            Ok(v)
        } else {
            Err(bad(format!("{what}: {v} is out of range (ids and offsets are signed 64-bit)")))
        }
    };
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(bad(format!("empty range in {text:?}")));
        }
        let (lo, hi) = match part.split_once(':') {
            Some((lo, hi)) => {
                let lo = if lo.trim().is_empty() { i64::MIN as i128 } else { in_range(number(lo, "range start")?, "range start", i64::MAX as i128)? };
                // The end is excluded: up to 2^63, which bounds nothing.
                let hi = if hi.trim().is_empty() { i64::MAX as i128 + 1 } else { in_range(number(hi, "range end")?, "range end", i64::MAX as i128 + 1)? };
                if hi <= lo {
                    return Err(bad(format!("empty range {part:?}: the end is excluded and must be above the start")));
                }
                (lo, hi - 1)
            }
            None => {
                let v = in_range(number(part, "value")?, "value", i64::MAX as i128)?;
                (v, v)
            }
        };
        ranges.push((lo as i64, hi as i64));
    }
    Ok(ranges)
}

/// An integer literal as Python's `int(text, 0)` reads one (surrounding space, a sign,
/// a `0x`/`0o`/`0b` prefix, `_` between digits, no leading zeros in decimal), when it
/// fits in 127 bits.
fn python_int(text: &str) -> Option<i128> {
    let t = text.trim();
    let (negative, t) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = t.to_ascii_lowercase();
    let (radix, digits) = match lower.get(..2) {
        Some("0x") => (16, &lower[2..]),
        Some("0o") => (8, &lower[2..]),
        Some("0b") => (2, &lower[2..]),
        _ => (10, lower.as_str()),
    };
    // Underscores only between digits (after a prefix, also right after it).
    let body = if radix != 10 { digits.strip_prefix('_').unwrap_or(digits) } else { digits };
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    let clean: String = body.chars().filter(|&c| c != '_').collect();
    if radix == 10 && clean.len() > 1 && clean.starts_with('0') && clean.bytes().any(|b| b != b'0') {
        return None;
    }
    let magnitude = i128::from_str_radix(&clean, radix).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

/// The ledgers a rolled entry log's map lists, or None when the map cannot be
/// trusted to list every entry (an open log, no map, or one the core found
/// inconsistent) or the file cannot be read (its read gives the flagged row).
pub fn ledgers_in_map(path: &Path, password: &[u8]) -> Option<Vec<i64>> {
    ledgers_in_map_of(std::sync::Arc::new(crate::files::source::FileSource::open(path).ok()?), password)
}

/// [`ledgers_in_map`] of an entry log read through `source` (a remote file, say).
pub fn ledgers_in_map_of(source: std::sync::Arc<dyn crate::files::source::ReadAt>, password: &[u8]) -> Option<Vec<i64>> {
    use crate::files::entry_log::{ledgers_map_of, read_header, LedgersMapSource};
    if !read_header(&*source).ok()?.has_ledgers_map() {
        return None;
    }
    let map = ledgers_map_of(source, password).ok()?;
    (map.source == LedgersMapSource::Trailer).then(|| map.ledgers.iter().map(|l| l.ledger_id).collect())
}

/// `listing` without the entry logs whose ledgers map shows they hold no ledger in
/// `ranges` (journals have no map and are kept, as are logs without a usable one).
pub fn prune_by_ledgers(listing: &Listing, ranges: &LedgerRanges, password: &[u8]) -> Listing {
    let mut out = listing.clone();
    out.files.retain(|f| {
        if f.kind != ReadKind::EntryLog {
            return true;
        }
        match ledgers_in_map(&f.path, password) {
            Some(ledgers) => ledgers.iter().any(|&l| admits(ranges, l)),
            None => true,
        }
    });
    out
}

/// The partitions of a read: each file narrowed to the bytes an `offset` filter
/// (inclusive ranges; None: no filter) lets rows start in, large files cut into
/// ranges, small ones packed.
pub fn plan_partitions(
    listing: &Listing,
    offsets: Option<&[(i64, i64)]>,
    split_size: u64,
    min_partitions: u64,
    open_cost: u64,
) -> Result<Vec<Vec<FileSplit>>> {
    if split_size == 0 {
        return Err(Error::invalid_argument("splitSize must be positive"));
    }
    // The hull of the ranges: the reader's filter keeps the rows between them.
    let (low, high) = match offsets {
        None => (None, None),
        Some([]) => (Some(0), Some(0)),
        Some(r) => {
            let hi = r.iter().map(|&(_, hi)| hi).max().expect("not empty");
            (Some(r.iter().map(|&(lo, _)| lo).min().expect("not empty")), hi.checked_add(1))
        }
    };
    let kept: Vec<FileSplit> = listing
        .files
        .iter()
        .map(|f| FileSplit { path: f.path.clone(), kind: f.kind, start: None, end: None, size: f.size })
        .filter_map(|s| narrow_to_offsets(&s, low, high))
        .collect();
    pack_splits(&kept, split_size, min_partitions, open_cost)
}

/// The partitions of the splits a read keeps (whole files, or ranges a filter left):
/// the target size worked out, large splits cut into ranges of it, all packed. What
/// both Spark sources plan with (the Python one after its own pruning).
pub fn pack_splits(kept: &[FileSplit], split_size: u64, min_partitions: u64, open_cost: u64) -> Result<Vec<Vec<FileSplit>>> {
    if split_size == 0 {
        return Err(Error::invalid_argument("splitSize must be positive"));
    }
    let target = target_size(kept, split_size, min_partitions, open_cost);
    let ranges: Vec<FileSplit> = kept.iter().flat_map(|s| split_file(s, target)).collect();
    Ok(pack(&ranges, target, open_cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_ranges_read_as_the_command_line_reads_them() {
        let r = |t: &str| parse_id_ranges("ledgerId", t);
        assert_eq!(r("7").unwrap(), [(7, 7)]);
        assert_eq!(r(" 3, 10:20 ,40:").unwrap(), [(3, 3), (10, 19), (40, i64::MAX)]);
        assert_eq!(r(":20").unwrap(), [(i64::MIN, 19)]);
        assert_eq!(r("0x1f,0o17,0b101,1_000,-5,+6,00").unwrap(), [(31, 31), (15, 15), (5, 5), (1000, 1000), (-5, -5), (6, 6), (0, 0)]);
        // An end of 2^63 is excluded, so it bounds nothing.
        assert_eq!(r("5:9223372036854775808").unwrap(), [(5, i64::MAX)]);
        for bad in ["", "3,", "x", "010", "1__0", "_1", "1_", "20:10", "5:5", "9223372036854775808", ":9223372036854775809", "0x"] {
            let e = r(bad).unwrap_err();
            assert!(e.to_string().contains("ledgerId"), "{bad:?}: {e}");
        }
        let unnamed = parse_id_ranges("", "20:10").unwrap_err().detail;
        assert!(unnamed.contains("empty range \"20:10\"") && unnamed.starts_with("empty"), "{unnamed}");
    }

    #[test]
    fn an_offset_filter_narrows_a_file_to_the_bytes_its_rows_start_in() {
        let size = 64 << 20;
        let log = split("0.log", size);
        let lead = OFFSET_LOOKUP_LEAD as i64;
        let at = |low, high| narrow_to_offsets(&log, low, high).map(|s| (s.start, s.end));
        assert_eq!(at(None, None), Some((None, None)));
        assert_eq!(at(Some(lead + 600), Some(lead + 700)), Some((Some(600), Some(lead as u64 + 700))));
        assert_eq!(at(Some(10), None), Some((Some(0), Some(size))));
        assert_eq!(at(None, Some(5000)), Some((Some(0), Some(5000))));
        assert_eq!(at(Some(-5), Some(1 << 40)), Some((Some(0), Some(size))));
        // No byte of the file in range: nothing to read.
        assert_eq!(at(Some(size as i64), None), None);
        assert_eq!(at(Some(7), Some(7)), None);
        assert_eq!(at(None, Some(0)), None);
        // A zero-length file's flagged row stands at offset 0.
        let empty = split("1.log", 0);
        assert!(narrow_to_offsets(&empty, Some(0), Some(1)).is_some());
        assert!(narrow_to_offsets(&empty, Some(1), None).is_none());
        assert!(narrow_to_offsets(&empty, None, Some(0)).is_none());
        let mut index = split("2.idx", 1 << 20);
        index.kind = ReadKind::Index;
        assert_eq!(narrow_to_offsets(&index, Some(5), Some(6)), Some(index));
    }

    #[test]
    fn range_lists_intersect() {
        assert_eq!(intersect(&[(1, 10), (20, 30)], &[(5, 25)]), [(5, 10), (20, 25)]);
        assert!(intersect(&[(1, 2)], &[(3, 4)]).is_empty());
    }

    fn split(name: &str, size: u64) -> FileSplit {
        FileSplit { path: PathBuf::from(name), kind: ReadKind::EntryLog, start: None, end: None, size: Some(size) }
    }

    #[test]
    fn ranges_tile_the_file() {
        let parts = split_file(&split("0.log", 1000), 300);
        let bounds: Vec<(u64, u64)> = parts.iter().map(|p| (p.start.unwrap(), p.end.unwrap())).collect();
        assert_eq!(bounds, vec![(0, 300), (300, 600), (600, 900), (900, 1000)]);
        assert_eq!(split_file(&split("0.log", 300), 300).len(), 1);
        let mut index = split("1.idx", 1000);
        index.kind = ReadKind::Index;
        assert_eq!(split_file(&index, 10).len(), 1);
    }

    #[test]
    fn a_tiny_split_size_cuts_a_file_into_a_bounded_number_of_ranges() {
        let parts = split_file(&split("0.log", 1 << 30), 1);
        assert_eq!(parts.len() as u64, MAX_RANGES_PER_FILE);
        assert_eq!((parts[0].start, parts.last().unwrap().end), (Some(0), Some(1 << 30)));
        assert!(parts.windows(2).all(|w| w[0].end == w[1].start), "the ranges tile the file");
    }

    #[test]
    fn target_is_lowered_for_min_partitions_but_not_below_open_cost() {
        let splits = vec![split("0.log", 10 << 20), split("1.log", 10 << 20)];
        // 22 MiB over 4 partitions: 5.5 MiB each.
        assert_eq!(target_size(&splits, 512 << 20, 4, 1 << 20), (22u64 << 20).div_ceil(4));
        assert_eq!(target_size(&splits, 512 << 20, 1000, 1 << 20), 1 << 20);
        assert_eq!(target_size(&splits, 3 << 20, 1, 1 << 20), 3 << 20);
    }

    #[test]
    fn small_files_are_packed_in_order_and_balanced() {
        let splits: Vec<FileSplit> = (0..6).map(|i| split(&format!("{i}.log"), 100)).collect();
        // Each costs 110 with an open cost of 10: 660 over a target of 220 is 3 groups of 2.
        let groups = pack(&splits, 220, 10);
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 2, 2]);
        let order: Vec<&FileSplit> = groups.iter().flatten().collect();
        assert!(order.iter().zip(&splits).all(|(a, b)| *a == b));
        assert!(pack(&[], 10, 1).is_empty());
    }

    #[test]
    fn partitions_cover_every_byte_once() {
        let listing = Listing {
            kind: ReadKind::EntryLog,
            files: vec![
                ListedFile { path: "0.log".into(), size: Some(5000), kind: ReadKind::EntryLog },
                ListedFile { path: "1.log".into(), size: Some(70), kind: ReadKind::EntryLog },
                ListedFile { path: "2.log".into(), size: None, kind: ReadKind::EntryLog },
            ],
            note: None,
            skipped: vec![],
        };
        let parts = plan_partitions(&listing, None, 1024, 2, 16).unwrap();
        let mut covered = 0;
        for s in parts.iter().flatten().filter(|s| s.path == Path::new("0.log")) {
            assert_eq!(s.start.unwrap(), covered);
            covered = s.end.unwrap();
        }
        assert_eq!(covered, 5000);
        assert_eq!(parts.iter().flatten().filter(|s| s.path != Path::new("0.log")).count(), 2);
        assert!(plan_partitions(&listing, None, 0, 2, 16).is_err());
    }

    #[test]
    fn logs_whose_map_lacks_the_ledgers_are_pruned() {
        use crate::files::EntryLogWriter;
        use crate::digest::{DigestType, Digester};
        use crate::entry::{encode_entry, EntryHeader};
        let dir = std::env::temp_dir().join(format!("bkcodec-prune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, ledger: i64, roll: bool| {
            let mut w = EntryLogWriter::legacy(std::io::Cursor::new(Vec::new())).unwrap();
            let raw = encode_entry(&EntryHeader::new(0, ledger, 0, -1, 3), b"abc", &Digester::new(DigestType::Crc32c, b"")).unwrap();
            w.add_entry(&raw).unwrap();
            let bytes = if roll { w.finish_rolled() } else { w.finish_open() }.unwrap().into_inner();
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            ListedFile { size: Some(0), kind: ReadKind::EntryLog, path }
        };
        let listing = Listing {
            kind: ReadKind::EntryLog,
            files: vec![write("1.log", 1, true), write("2.log", 2, true), write("3.log", 2, false)],
            note: None,
            skipped: vec![],
        };
        let kept = prune_by_ledgers(&listing, &[(1, 1)], b"");
        let names: Vec<_> = kept.files.iter().map(|f| f.path.file_name().unwrap().to_owned()).collect();
        // 2.log's map says ledger 2 only; 3.log is open (no map), so it is read.
        assert_eq!(names, ["1.log", "3.log"]);
        assert!(admits(&[(1, 3), (10, 10)], 10) && !admits(&[(1, 3)], 4));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn auto_picks_the_kind_the_names_show() {
        let dir = std::env::temp_dir().join(format!("bkcodec-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("1.log");
        let txn = dir.join("2.txn");
        let text = dir.join("3.log");
        std::fs::write(&log, b"BKLO\0\0\0\x01").unwrap();
        std::fs::write(&txn, b"BKLG\0\0\0\x06").unwrap();
        std::fs::write(&text, b"2024-01-01 INFO a log4j line\n").unwrap();
        let paths = vec![log.clone(), txn.clone(), text.clone()];
        let listing = select_files(&paths, ReadKind::Auto).unwrap();
        assert_eq!(listing.kind, ReadKind::Bookie);
        assert_eq!(listing.files.iter().map(|f| (f.path.clone(), f.kind)).collect::<Vec<_>>(), vec![
            (log.clone(), ReadKind::EntryLog),
            (txn.clone(), ReadKind::Journal)
        ]);
        assert_eq!(listing.skipped.len(), 1);
        let only_logs = select_files(std::slice::from_ref(&log), ReadKind::Auto).unwrap();
        assert_eq!(only_logs.kind, ReadKind::EntryLog);
        let none = select_files(std::slice::from_ref(&log), ReadKind::Journal).unwrap();
        assert!(none.files.is_empty() && none.note.is_some());
        assert!(select_files(&[dir.join("notes.txt")], ReadKind::Auto).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
