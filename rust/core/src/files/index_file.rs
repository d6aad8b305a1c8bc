//! Ledger index files of InterleavedLedgerStorage / SortedLedgerStorage (docs/formats.md#index-files):
//! a 1024-byte header, then one 8-byte location per entry id.

use std::path::{Path, PathBuf};

use crate::bytes::{i32_at, i64_unchecked, slice_at};
use crate::error::{Error, ErrorKind, Result};
use crate::files::location::Location;

/// `"BKLE"`, read as a signed 32-bit signature.
pub const MAGIC: [u8; 4] = *b"BKLE";
/// Slots start here (`START_OF_DATA`).
pub const HEADER_LEN: u64 = 1024;
/// Index pages are written whole: 8192 bytes, 1024 slots.
pub const PAGE_SIZE: u64 = 8192;
pub const SLOT_LEN: u64 = 8;
/// Bit 0 of the state bits: the ledger is fenced.
pub const STATE_FENCED_BIT: i32 = 1;
/// Shortest explicit-LAC blob a V1 header accepts (`LAC_METADATA_LENGTH`).
pub const MIN_EXPLICIT_LAC_LEN: i32 = 16;
const CURRENT_VERSION: i32 = 1;

/// The header of an index file, borrowing the key and LAC bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHeader<'a> {
    /// 0 or 1 (negative versions are read like 0, as BookKeeper does).
    pub version: i32,
    pub master_key: &'a [u8],
    pub state_bits: i32,
    /// V1 only: the explicit-LAC blob (ledger id, LAC, digest), when one was set.
    pub explicit_lac: Option<&'a [u8]>,
}

impl<'a> IndexHeader<'a> {
    /// Parses the header as `FileInfo.readHeader` does, from at most the first 1024 bytes.
    pub fn parse(data: &'a [u8]) -> Result<IndexHeader<'a>> {
        let head = &data[..data.len().min(HEADER_LEN as usize)];
        let signature = slice_at(head, 0, 4)
            .map_err(|e| e.with_detail(format!("index file of {} bytes has no signature", data.len())))?;
        if signature != MAGIC {
            return Err(crate::files::bad_magic("index signature", signature, &MAGIC));
        }
        let version = i32_at(head, 4).map_err(|e| e.with_detail("index header ends before its version"))?;
        if version > CURRENT_VERSION {
            return Err(Error::new(ErrorKind::UnsupportedVersion, 4,
                format!("index header version {version}; known versions are 0 and 1")));
        }
        let key_len = i32_at(head, 8).map_err(|e| e.with_detail("index header ends before its master key length"))?;
        if key_len < 0 {
            return Err(Error::corrupt(8, format!("master key length {key_len} is negative")));
        }
        let master_key = slice_at(head, 12, key_len as usize).map_err(|e| {
            e.with_detail(format!("master key of {key_len} bytes runs past the {}-byte header", head.len()))
        })?;
        let at = 12 + key_len as usize;
        let state_bits = i32_at(head, at).map_err(|e| e.with_detail("index header ends before its state bits"))?;
        let mut explicit_lac = None;
        if version >= 1 {
            let lac_at = at + 4;
            let lac_len = i32_at(head, lac_at).map_err(|e| e.with_detail("index header ends before its explicit-LAC length"))?;
            if lac_len != 0 {
                if lac_len < MIN_EXPLICIT_LAC_LEN {
                    return Err(Error::corrupt(lac_at as u64, format!(
                        "explicit-LAC length {lac_len} is invalid (0, or at least {MIN_EXPLICIT_LAC_LEN})")));
                }
                explicit_lac = Some(slice_at(head, lac_at + 4, lac_len as usize).map_err(|e| {
                    e.with_detail(format!("explicit LAC of {lac_len} bytes runs past the {}-byte header", head.len()))
                })?);
            }
        }
        Ok(IndexHeader { version, master_key, state_bits, explicit_lac })
    }

    pub fn fenced(&self) -> bool {
        self.state_bits & STATE_FENCED_BIT != 0
    }

    /// The 1024-byte header block `FileInfo.writeHeader` produces.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let lac_len = self.explicit_lac.map_or(0, |l| l.len());
        let used = 16 + self.master_key.len() + if self.version >= 1 { 4 + lac_len } else { 0 };
        if used > HEADER_LEN as usize {
            return Err(Error::invalid_argument(format!("an index header of {used} bytes does not fit in 1024")));
        }
        if self.version < 1 && self.explicit_lac.is_some() {
            return Err(Error::invalid_argument("a version 0 index header cannot hold an explicit LAC"));
        }
        let mut h = Vec::with_capacity(HEADER_LEN as usize);
        h.extend_from_slice(&MAGIC);
        h.extend_from_slice(&self.version.to_be_bytes());
        h.extend_from_slice(&(self.master_key.len() as i32).to_be_bytes());
        h.extend_from_slice(self.master_key);
        h.extend_from_slice(&self.state_bits.to_be_bytes());
        if self.version >= 1 {
            h.extend_from_slice(&(lac_len as i32).to_be_bytes());
            h.extend_from_slice(self.explicit_lac.unwrap_or(&[]));
        }
        h.resize(HEADER_LEN as usize, 0);
        Ok(h)
    }
}

/// An index file: header and slots.
#[derive(Debug, Clone, Copy)]
pub struct IndexFile<'a> {
    data: &'a [u8],
    pub header: IndexHeader<'a>,
}

impl<'a> IndexFile<'a> {
    pub fn parse(data: &'a [u8]) -> Result<IndexFile<'a>> {
        Ok(IndexFile { data, header: IndexHeader::parse(data)? })
    }

    /// Slots the file holds (a trailing partial slot is ignored, as BookKeeper zeroes it).
    pub fn slot_count(&self) -> u64 {
        (self.data.len() as u64).saturating_sub(HEADER_LEN) / SLOT_LEN
    }

    /// Bytes after the header (what BookKeeper's `FileInfo.size()` reports).
    pub fn data_len(&self) -> u64 {
        (self.data.len() as u64).saturating_sub(HEADER_LEN)
    }

    /// The stored value for `entry_id`; 0 when absent or beyond the file.
    pub fn raw_slot(&self, entry_id: u64) -> i64 {
        if entry_id >= self.slot_count() {
            return 0;
        }
        i64_unchecked(self.data, (HEADER_LEN + entry_id * SLOT_LEN) as usize)
    }

    pub fn location(&self, entry_id: u64) -> Option<Location> {
        Location::from_raw(self.raw_slot(entry_id))
    }

    /// Every entry with a location, in entry-id order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, Location)> + 'a {
        let slots = &self.data[(HEADER_LEN as usize).min(self.data.len())..];
        slots.chunks_exact(SLOT_LEN as usize).enumerate().filter_map(|(i, s)| {
            Location::from_raw(i64_unchecked(s, 0)).map(|l| (i as u64, l))
        })
    }

    /// The highest entry id with a location.
    pub fn last_entry(&self) -> Option<u64> {
        (0..self.slot_count()).rev().find(|&e| self.raw_slot(e) != 0)
    }
}

/// The largest index file [`encode_index_file`] builds (in memory): an entry id is a
/// caller's number, and the file's size grows with it.
const MAX_ENCODED_INDEX: usize = 1 << 30;

/// An index file as the bookie writes it: the header, then whole 8192-byte pages up
/// to the one holding the highest entry id.
pub fn encode_index_file(header: &IndexHeader<'_>, entries: &[(u64, Location)]) -> Result<Vec<u8>> {
    let mut out = header.encode()?;
    let Some(max) = entries.iter().map(|&(e, _)| e).max() else { return Ok(out) };
    let slots_per_page = PAGE_SIZE / SLOT_LEN;
    let pages = max / slots_per_page + 1;
    let data_len = pages
        .checked_mul(PAGE_SIZE)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= MAX_ENCODED_INDEX)
        .ok_or_else(|| Error::invalid_argument(format!(
            "entry id {max} would make an index file of {} pages; the writer builds files of up to {} MiB \
             (entry ids below {})",
            pages,
            MAX_ENCODED_INDEX >> 20,
            (MAX_ENCODED_INDEX / PAGE_SIZE as usize) as u64 * (PAGE_SIZE / SLOT_LEN)
        )))?;
    out.resize(HEADER_LEN as usize + data_len, 0);
    for &(entry_id, location) in entries {
        let at = (HEADER_LEN + entry_id * SLOT_LEN) as usize;
        out[at..at + 8].copy_from_slice(&location.to_raw().to_be_bytes());
    }
    Ok(out)
}

/// Path of a ledger's index file below an index directory's `current/`.
/// Scope 0 is BookKeeper's layout (`hex(bits 8-15)/hex(bits 0-7)/hex(id).idx`); a
/// non-zero scope uses the four-level layout of docs/formats.md#index-files.
pub fn index_path(scope_id: i64, ledger_id: i64) -> PathBuf {
    let id = ledger_id as u64;
    let file = format!("{id:x}.idx");
    if scope_id == 0 {
        return [format!("{:x}", (id >> 8) & 0xff), format!("{:x}", id & 0xff), file].iter().collect();
    }
    let scope = scope_id as u64;
    [
        format!("{:x}", scope >> 32),
        format!("{:x}", scope & 0xffff_ffff),
        format!("{:x}", id >> 32),
        format!("{:x}", id & 0xffff_ffff),
        file,
    ]
    .iter()
    .collect()
}

/// The ledger id in an index file's name (`<hex>.idx`), or `None`.
pub fn ledger_id_from_index_path(path: &Path) -> Option<i64> {
    let hex = path.file_name()?.to_str()?.strip_suffix(".idx")?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // Long.toHexString writes negative ids as 16 digits of their two's complement.
    u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(index_path(0, 5), PathBuf::from("0/5/5.idx"));
        assert_eq!(index_path(0, 0x1234), PathBuf::from("12/34/1234.idx"));
        assert_eq!(index_path(0, 0xABCDEF), PathBuf::from("cd/ef/abcdef.idx"));
        assert_eq!(index_path(0, 0x80000007), PathBuf::from("0/7/80000007.idx"));
        assert_eq!(index_path(0, -1), PathBuf::from("ff/ff/ffffffffffffffff.idx"));
        assert_eq!(index_path(0x1_0000_0002, 5), PathBuf::from("1/2/0/5/5.idx"));
        for id in [0i64, 5, 0x1234, i64::MAX, -1, i64::MIN] {
            assert_eq!(ledger_id_from_index_path(&index_path(0, id)), Some(id));
        }
        assert_eq!(ledger_id_from_index_path(Path::new("a/b/ABC.idx")), Some(0xabc));
        for bad in ["x.idx", ".idx", "5.log", "5.idx.rloc", "11111111111111111.idx"] {
            assert_eq!(ledger_id_from_index_path(Path::new(bad)), None, "{bad}");
        }
    }

    fn header_bytes(version: i32, key: &[u8], state: i32, lac: Option<&[u8]>) -> Vec<u8> {
        IndexHeader { version, master_key: key, state_bits: state, explicit_lac: lac }.encode().unwrap()
    }

    #[test]
    fn rejects_what_file_info_rejects() {
        let ok = header_bytes(1, &[7; 20], 1, Some(&[9; 20]));
        let h = IndexHeader::parse(&ok).unwrap();
        assert!(h.fenced());
        assert_eq!(h.explicit_lac, Some(&[9u8; 20][..]));

        let mut bad = ok.clone();
        bad[0] = b'X';
        assert_eq!(IndexHeader::parse(&bad).unwrap_err().kind, ErrorKind::Corrupt);
        let mut v2 = ok.clone();
        v2[7] = 2;
        assert_eq!(IndexHeader::parse(&v2).unwrap_err().kind, ErrorKind::UnsupportedVersion);
        // Negative versions read like version 0: no LAC field.
        let neg = header_bytes(-1, &[1; 20], 0, None);
        assert_eq!(IndexHeader::parse(&neg).unwrap().version, -1);
        for lac_len in [1i32, 15, -1] {
            let mut b = header_bytes(1, &[7; 20], 0, None);
            b[36..40].copy_from_slice(&lac_len.to_be_bytes());
            let e = IndexHeader::parse(&b).unwrap_err();
            assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 36), "{lac_len}");
        }
        let mut long_key = ok.clone();
        long_key[8..12].copy_from_slice(&1013i32.to_be_bytes());
        assert_eq!(IndexHeader::parse(&long_key).unwrap_err().kind, ErrorKind::Truncated);
        let mut neg_key = ok.clone();
        neg_key[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(IndexHeader::parse(&neg_key).unwrap_err().kind, ErrorKind::Corrupt);
        let mut long_lac = ok.clone();
        long_lac[36..40].copy_from_slice(&1000i32.to_be_bytes());
        assert_eq!(IndexHeader::parse(&long_lac).unwrap_err().kind, ErrorKind::Truncated);
        // Short files: every prefix either parses or fails with an error, never panics.
        for n in 0..ok.len() {
            let _ = IndexHeader::parse(&ok[..n]);
        }
        assert_eq!(IndexHeader::parse(&ok[..40]).unwrap_err().kind, ErrorKind::Truncated);
    }

    #[test]
    fn slots_and_partial_trailing_slot() {
        let header = IndexHeader { version: 0, master_key: b"k", state_bits: 0, explicit_lac: None };
        let loc = Location { log_id: 1, offset: 1028 };
        let mut file = encode_index_file(&header, &[(0, loc), (1500, loc)]).unwrap();
        assert_eq!(file.len() as u64, HEADER_LEN + 2 * PAGE_SIZE);
        file.extend_from_slice(&[0xFF; 5]);
        let idx = IndexFile::parse(&file).unwrap();
        assert_eq!(idx.slot_count(), 2048);
        assert_eq!(idx.location(0), Some(loc));
        assert_eq!(idx.location(1), None);
        assert_eq!(idx.location(1500), Some(loc));
        assert_eq!(idx.location(u64::MAX), None);
        assert_eq!(idx.entries().collect::<Vec<_>>(), vec![(0, loc), (1500, loc)]);
        assert_eq!(idx.last_entry(), Some(1500));
    }
}
