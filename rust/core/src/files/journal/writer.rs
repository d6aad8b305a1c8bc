//! Writing journals byte-compatible with BookKeeper's `Journal` thread (versions 4 to
//! 6, the ones it can write), for tests and sample bookie directories.

use std::io::Write;

use crate::error::{Error, ErrorKind, Result};
use crate::files::journal::{
    MAGIC, METAENTRY_ID_FENCE_KEY, METAENTRY_ID_LEDGER_EXPLICITLAC, METAENTRY_ID_LEDGER_KEY, PADDING_MASK,
    SECTOR_SIZE, VERSION_HEADER_LEN,
};

static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// The largest preallocation step taken: 64 times BookKeeper's default (16 MiB).
/// The zeros are written for real, so a step of a terabyte would fill the disk.
pub const MAX_PREALLOC_SIZE: u64 = 1 << 30;
/// The largest alignment taken: BookKeeper's journals use 512 or 4096 bytes, and
/// each flush writes up to an alignment's worth of padding.
pub const MAX_ALIGNMENT: u64 = 1 << 20;

/// Appends records to a new journal file.
///
/// `flush` marks where the journal thread would flush a batch: from version 5 it
/// pads the file position to the alignment with a padding record (docs/formats.md#journals).
/// Preallocation follows `JournalChannel`: the file is extended with zeros in steps
/// of the preallocation size (rounded down to the alignment) whenever a write would
/// cross the current end; [`JournalWriter::finish`] writes those zeros.
#[derive(Debug)]
pub struct JournalWriter<W: Write> {
    out: W,
    version: i32,
    alignment: u64,
    pos: u64,
    prealloc: u64,
    next_prealloc: u64,
}

fn io_error(offset: u64, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, offset, e.to_string())
}

impl<W: Write> JournalWriter<W> {
    /// Refuses what [`JournalWriter::new`] would, before anything is created.
    pub fn check_options(version: i32, alignment: u64, prealloc_size: u64) -> Result<()> {
        if !(4..=6).contains(&version) {
            return Err(Error::invalid_argument(format!("BookKeeper writes journal versions 4 to 6, not {version}")));
        }
        if alignment == 0 || alignment & (SECTOR_SIZE - 1) != 0 || alignment > MAX_ALIGNMENT {
            return Err(Error::invalid_argument(format!(
                "alignment {alignment} is not a positive multiple of 512 of at most {MAX_ALIGNMENT} bytes"
            )));
        }
        if prealloc_size > MAX_PREALLOC_SIZE {
            return Err(Error::invalid_argument(format!(
                "prealloc_size {prealloc_size} is more than {MAX_PREALLOC_SIZE} bytes (BookKeeper's default is 16 MiB)"
            )));
        }
        Ok(())
    }

    /// `version` 4, 5 or 6; `alignment` a positive multiple of 512 (512 is BookKeeper's
    /// default) up to [`MAX_ALIGNMENT`]; `prealloc_size` 0 for no preallocation, at
    /// most [`MAX_PREALLOC_SIZE`] (BookKeeper's default is 16 MiB).
    pub fn new(out: W, version: i32, alignment: u64, prealloc_size: u64) -> Result<Self> {
        Self::check_options(version, alignment, prealloc_size)?;
        let prealloc = prealloc_size - prealloc_size % alignment;
        let mut w = JournalWriter { out, version, alignment, pos: 0, prealloc, next_prealloc: prealloc };
        let mut header = vec![0u8; if version >= 5 { SECTOR_SIZE } else { VERSION_HEADER_LEN } as usize];
        header[..4].copy_from_slice(&MAGIC);
        header[4..8].copy_from_slice(&version.to_be_bytes());
        w.write(&header)?;
        Ok(w)
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    /// Offset the next record's length field will have.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| io_error(self.pos, e))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn prealloc_if_needed(&mut self, size: u64) {
        if self.prealloc > 0 && self.pos + size > self.next_prealloc {
            self.next_prealloc += self.prealloc;
        }
    }

    fn record(&mut self, parts: &[&[u8]]) -> Result<u64> {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        let len = i32::try_from(n)
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| Error::invalid_argument(format!("a journal record of {n} bytes cannot be framed")))?;
        self.prealloc_if_needed(4 + n as u64);
        let offset = self.pos;
        self.write(&len.to_be_bytes())?;
        for p in parts {
            self.write(p)?;
        }
        Ok(offset)
    }

    /// Journals an entry exactly as the client packaged it; returns its record offset.
    pub fn add_entry(&mut self, entry: &[u8]) -> Result<u64> {
        crate::entry::parse_header(entry)?;
        self.record(&[entry])
    }

    /// The record `BookieImpl.createMasterKeyEntry` builds.
    pub fn add_ledger_key(&mut self, ledger_id: i64, master_key: &[u8]) -> Result<u64> {
        // A master key is a SHA-1 (`BookieProtocol.MASTER_KEY_LENGTH`); readers
        // take no other length for one.
        if master_key.len() != 20 {
            return Err(Error::invalid_argument(format!(
                "a master key is 20 bytes (a SHA-1 of the ledger's password), not {}", master_key.len())));
        }
        let key_len = master_key.len() as i32;
        self.record(&[&ledger_id.to_be_bytes(), &METAENTRY_ID_LEDGER_KEY.to_be_bytes(), &key_len.to_be_bytes(), master_key])
    }

    /// The record `LedgerDescriptor.createLedgerFenceEntry` builds.
    pub fn add_fence(&mut self, ledger_id: i64) -> Result<u64> {
        self.record(&[&ledger_id.to_be_bytes(), &METAENTRY_ID_FENCE_KEY.to_be_bytes()])
    }

    /// The record `BookieImpl.createExplicitLACEntry` builds. Like BookKeeper, a
    /// writer below version 6 drops it and returns `None`.
    pub fn add_explicit_lac(&mut self, ledger_id: i64, lac_blob: &[u8]) -> Result<Option<u64>> {
        if self.version < 6 {
            return Ok(None);
        }
        let len = i32::try_from(lac_blob.len()).map_err(|_| Error::invalid_argument("LAC blob too long"))?;
        let parts: [&[u8]; 4] =
            [&ledger_id.to_be_bytes(), &METAENTRY_ID_LEDGER_EXPLICITLAC.to_be_bytes(), &len.to_be_bytes(), lac_blob];
        self.record(&parts).map(Some)
    }

    /// Ends a batch: from version 5, pads to the alignment (a padding record whose
    /// length runs on to the next boundary when fewer than 8 bytes are left).
    pub fn flush(&mut self) -> Result<()> {
        if self.version >= 5 {
            let rem = self.pos % self.alignment;
            if rem != 0 {
                let gap = self.alignment - rem;
                let pad_len = if gap < 8 { self.alignment - (8 - gap) } else { gap - 8 };
                self.prealloc_if_needed(8 + pad_len);
                let pad_len_i32 = i32::try_from(pad_len).map_err(|_| Error::invalid_argument("alignment too large"))?;
                self.write(&PADDING_MASK.to_be_bytes())?;
                self.write(&pad_len_i32.to_be_bytes())?;
                self.write_zeros(pad_len)?;
            }
        }
        self.out.flush().map_err(|e| io_error(self.pos, e))
    }

    fn write_zeros(&mut self, mut n: u64) -> Result<()> {
        while n > 0 {
            let chunk = n.min(ZEROS.len() as u64) as usize;
            self.write(&ZEROS[..chunk])?;
            n -= chunk as u64;
        }
        Ok(())
    }

    /// Writes the preallocated zeros and returns the output. Call `flush` first to
    /// end the last batch as the journal thread does.
    pub fn finish(mut self) -> Result<W> {
        if self.next_prealloc > self.pos {
            self.write_zeros(self.next_prealloc - self.pos)?;
        }
        self.out.flush().map_err(|e| io_error(self.pos, e))?;
        Ok(self.out)
    }
}
