//! Writing entry logs byte-compatible with BookKeeper's two entry loggers, for tests
//! and sample bookie directories.

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};

use crate::entry::parse_header;
use crate::error::{Error, ErrorKind, Result};
use crate::files::entry_log::{
    EntryLogLayout, DIRECT_DUMMY_RECORD_SIZE, LEDGERS_MAP_MAX_BATCH, LEGACY_HEADER_LEN, MAGIC,
};
use crate::files::framing::PADDING_BLOCK;

const HEADER_VERSION: i32 = 1;
pub(crate) const PADDING_BYTE: u8 = 0xF0;

fn io_error(offset: u64, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, offset, e.to_string())
}

/// Appends entries to a new entry log and, when the log is rolled, its ledgers map.
///
/// Legacy layout (`DefaultEntryLogger`): a 1024-byte header, records packed from
/// 1024; rolling appends the map and patches the header's map offset and count.
/// Direct layout (`DirectEntryLogger`): a 4096-byte header block with the dummy
/// record, records from 4096 written through a buffer of `buffer_size` bytes that is
/// padded with 0xF0 to a 4 KiB boundary whenever it is flushed, and zeros up to
/// `max_file_size` (the preallocation).
///
/// The map lists ledgers in ascending id order; BookKeeper writes hash-map order.
#[derive(Debug)]
pub struct EntryLogWriter<W: Write + Seek> {
    out: W,
    layout: EntryLogLayout,
    pos: u64,
    sizes: BTreeMap<i64, i64>,
    buffer_size: u64,
    buffer_start: u64,
    max_file_size: u64,
}

impl<W: Write + Seek> EntryLogWriter<W> {
    /// A legacy log: writes the 1024-byte header (`BKLO`, version 1, zeros).
    pub fn legacy(out: W) -> Result<Self> {
        let mut w = EntryLogWriter {
            out,
            layout: EntryLogLayout::Legacy,
            pos: 0,
            sizes: BTreeMap::new(),
            buffer_size: u64::MAX,
            buffer_start: 0,
            max_file_size: 0,
        };
        let header = w.header_block(0, 0);
        w.write(&header)?;
        Ok(w)
    }

    /// A direct-I/O log. `buffer_size` is rounded up to 4 KiB, as the logger does.
    pub fn direct(out: W, buffer_size: u64, max_file_size: u64) -> Result<Self> {
        if buffer_size == 0 {
            return Err(Error::invalid_argument("a direct entry log needs a write buffer of at least one byte"));
        }
        let block = PADDING_BLOCK as u64;
        // Whole 4 KiB blocks; a size that cannot be rounded up is refused, not wrapped to 0.
        let buffer_size = buffer_size.checked_next_multiple_of(block).ok_or_else(|| {
            Error::invalid_argument(format!("a write buffer of {buffer_size} bytes cannot be rounded up to whole 4 KiB blocks"))
        })?;
        let mut w = EntryLogWriter {
            out,
            layout: EntryLogLayout::Direct,
            pos: 0,
            sizes: BTreeMap::new(),
            buffer_size,
            buffer_start: EntryLogLayout::Direct.data_start(),
            max_file_size,
        };
        let header = w.header_block(0, 0);
        w.write(&header)?;
        Ok(w)
    }

    pub fn layout(&self) -> EntryLogLayout {
        self.layout
    }

    /// Offset the next record's size field will have.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn header_block(&self, map_offset: i64, count: i32) -> Vec<u8> {
        let mut h = vec![0u8; self.layout.data_start() as usize];
        h[..4].copy_from_slice(&MAGIC);
        h[4..8].copy_from_slice(&HEADER_VERSION.to_be_bytes());
        h[8..16].copy_from_slice(&map_offset.to_be_bytes());
        h[16..20].copy_from_slice(&count.to_be_bytes());
        if self.layout == EntryLogLayout::Direct {
            let at = LEGACY_HEADER_LEN as usize;
            h[at..at + 4].copy_from_slice(&DIRECT_DUMMY_RECORD_SIZE.to_be_bytes());
            h[at + 4..at + 12].copy_from_slice(&(-1i64).to_be_bytes());
        }
        h
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| io_error(self.pos, e))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Writes one `[size][bytes]` record, flushing a direct log's buffer first when
    /// the record would not fit in what is left of it.
    fn write_record(&mut self, body: &[&[u8]]) -> Result<u64> {
        let n: usize = body.iter().map(|b| b.len()).sum();
        let size = i32::try_from(n).map_err(|_| Error::invalid_argument(format!("a record of {n} bytes exceeds the 2 GiB size field")))?;
        let total = n as u64 + 4;
        if self.layout == EntryLogLayout::Direct {
            if total > self.buffer_size {
                return Err(Error::invalid_argument(format!(
                    "write too large: a {total}-byte record does not fit the {}-byte write buffer", self.buffer_size)));
            }
            if self.pos - self.buffer_start + total > self.buffer_size {
                self.flush()?;
            }
        }
        self.write(&size.to_be_bytes())?;
        let entry_offset = self.pos;
        for b in body {
            self.write(b)?;
        }
        Ok(entry_offset)
    }

    /// Appends an entry (exactly as a client packaged it) and returns the offset of its
    /// bytes, the offset half of its location.
    pub fn add_entry(&mut self, entry: &[u8]) -> Result<u64> {
        let (header, _) = parse_header(entry)?;
        let offset = self.write_record(&[entry])?;
        *self.sizes.entry(header.ledger_id).or_insert(0) += entry.len() as i64 + 4;
        Ok(offset)
    }

    /// Ends a direct log's write buffer: pads with 0xF0 to the next 4 KiB boundary.
    /// A legacy log has no padding; this only flushes the output.
    pub fn flush(&mut self) -> Result<()> {
        if self.layout == EntryLogLayout::Direct {
            let rem = self.pos % PADDING_BLOCK as u64;
            if rem != 0 {
                let pad = vec![PADDING_BYTE; PADDING_BLOCK - rem as usize];
                self.write(&pad)?;
            }
            self.buffer_start = self.pos;
        }
        self.out.flush().map_err(|e| io_error(self.pos, e))
    }

    /// Leaves the log as an open (never rolled) log: no map, header map offset 0.
    pub fn finish_open(mut self) -> Result<W> {
        self.flush()?;
        self.preallocate()?;
        Ok(self.out)
    }

    /// Rolls the log: appends the ledgers map in records of at most 10000 pairs and
    /// patches the header with its offset and the number of ledgers.
    pub fn finish_rolled(mut self) -> Result<W> {
        if self.layout == EntryLogLayout::Direct {
            self.flush()?;
        }
        let map_offset = self.pos;
        let pairs: Vec<(i64, i64)> = self.sizes.iter().map(|(&l, &s)| (l, s)).collect();
        for batch in pairs.chunks(LEDGERS_MAP_MAX_BATCH) {
            let mut body = Vec::with_capacity(20 + 16 * batch.len());
            body.extend_from_slice(&(-1i64).to_be_bytes());
            body.extend_from_slice(&(-2i64).to_be_bytes());
            body.extend_from_slice(&(batch.len() as i32).to_be_bytes());
            for (ledger, size) in batch {
                body.extend_from_slice(&ledger.to_be_bytes());
                body.extend_from_slice(&size.to_be_bytes());
            }
            self.write_record(&[&body])?;
        }
        self.flush()?;
        let count = i32::try_from(pairs.len())
            .map_err(|_| Error::invalid_argument("more ledgers than a map header can count"))?;
        let header = self.header_block(map_offset as i64, count);
        // The legacy logger patches the 12 field bytes; the direct one rewrites the block.
        let patch: &[u8] = match self.layout {
            EntryLogLayout::Legacy => &header[..20],
            EntryLogLayout::Direct => &header,
        };
        self.out.seek(SeekFrom::Start(0)).map_err(|e| io_error(0, e))?;
        self.out.write_all(patch).map_err(|e| io_error(0, e))?;
        self.out.seek(SeekFrom::Start(self.pos)).map_err(|e| io_error(self.pos, e))?;
        self.preallocate()?;
        Ok(self.out)
    }

    /// Extends a direct log with zeros to its maximum size, as `fallocate` does.
    fn preallocate(&mut self) -> Result<()> {
        if self.layout == EntryLogLayout::Direct && self.max_file_size > self.pos {
            self.out.seek(SeekFrom::Start(self.max_file_size - 1)).map_err(|e| io_error(self.pos, e))?;
            self.out.write_all(&[0]).map_err(|e| io_error(self.max_file_size - 1, e))?;
        }
        self.out.flush().map_err(|e| io_error(self.pos, e))
    }
}
