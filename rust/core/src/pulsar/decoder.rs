//! Entries in, message rows out: the decoder behind `decode_messages`,
//! `read_messages` and the Spark function.
//!
//! A [`MessageDecoder`] is fed entries (one at a time, or as Arrow batches of the
//! file readers' shape) and keeps what spans entries: chunks waiting for the rest of
//! their message, the entries already read (an entry found in an entry log and again
//! in the journal gives its messages once) and the rows of the batch being built.
//!
//! Bad data is never guessed at. Under [`OnError::Flag`] an entry that cannot be
//! read is one row with its `error` and its bytes as `payload`; messages read
//! before the damage inside a batch keep their rows. Under [`OnError::Raise`] the
//! first problem is returned, naming the entry and the byte offset in it.
//!
//! Memory is bounded by the batch, whatever sizes the data declares: a payload is
//! decompressed only when its declared size is at most
//! [`max_message_bytes`](DecoderOptions::max_message_bytes) (else its row is flagged
//! with the size, and holds the bytes as stored), a batch is finished as soon as the
//! bytes it holds reach [`batch_bytes`](DecoderOptions::batch_bytes), and a caller
//! that reads with [`MessageDecoder::push_record_batch_from`] takes each batch
//! before the next entry is decompressed. Without a payload column, a message that
//! is not a batch is not decompressed at all: its metadata is its row.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::chunks::{ChunkOutcome, ChunkTable, StoredChunk};
use super::codec::{Compression, Decompressor};
use super::entry_set::EntrySet;
use super::frame::{checksum_of, decode_proto, parse_entry, EntryFrame};
use super::message_batch::{kind, EntryIds, EntryRow, MessageBatchBuilder, MessageBatchOptions, MessageRow, PlainMessages};
use super::proto::{MessageIdData, MessageMetadata};
use super::single_message::{self, Property, SingleMessage};
use crate::arrow::{OnError, PayloadMode};
use crate::error::{Error, ErrorKind, Result};

/// How many of a batch's messages are parsed before they are appended, column by
/// column (see `MessageBatchBuilder::push_messages`).
const MESSAGE_CHUNK: usize = 1024;

/// What a ledger holds, from the topic metadata or the ledger's own custom metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerOwner {
    /// `messages` (a topic's data), `compacted` (a compacted topic's ledger), or a
    /// kind that holds no messages (`cursor`, `schema`, `transaction_log`, ...).
    pub kind: String,
    /// The topic (`persistent://tenant/ns/name`) or other owner, when known.
    pub topic: Option<Arc<str>>,
}

impl LedgerOwner {
    pub fn holds_messages(&self) -> bool {
        matches!(self.kind.as_str(), "messages" | "compacted")
    }
}

/// How the decoder reads and what it outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderOptions {
    pub payload: PayloadMode,
    pub on_error: OnError,
    /// Put chunked messages back together (else each chunk is its own row).
    pub reassemble_chunks: bool,
    /// Give the messages of an entry seen twice (same ledger and entry id) once.
    pub skip_duplicate_entries: bool,
    /// Rows per output batch, at most.
    pub batch_rows: usize,
    /// Variable-length bytes (payloads and metadata) per output batch, about.
    pub batch_bytes: usize,
    /// Chunks of incomplete messages kept in memory, at most.
    pub max_pending_chunk_bytes: usize,
    /// The most bytes one payload (a message, a batch, a chunked message put back
    /// together) is decompressed to: a larger `uncompressed_size` is a flagged row.
    pub max_message_bytes: usize,
    /// Every row goes into one batch: input that needs a second one is refused as
    /// soon as the first is full (rather than after decoding all of it).
    pub single_batch: bool,
    /// The stored payload bytes and the entries of the whole input, when the
    /// caller knows them: the first batch makes room for what they will decode to
    /// (estimated from the first entry) instead of growing as it fills.
    pub expected_input: Option<(usize, usize)>,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            payload: PayloadMode::Binary,
            on_error: OnError::Flag,
            reassemble_chunks: true,
            skip_duplicate_entries: true,
            batch_rows: 64 * 1024,
            batch_bytes: 64 << 20,
            max_pending_chunk_bytes: 1 << 30,
            max_message_bytes: MAX_MESSAGE_BYTES,
            single_batch: false,
            expected_input: None,
        }
    }
}

/// Largest value an Arrow `binary` column can hold in one batch.
const MAX_ARROW_VALUES: usize = i32::MAX as usize;

/// Default [`DecoderOptions::max_message_bytes`]: four default batches. Pulsar's
/// own limit is on the stored bytes (5 MiB by default); only chunked messages and
/// the rare batch of highly compressible data come near this.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// The decompression buffer is kept for the next entry up to this size; a larger
/// one (a rare huge message) is given back rather than held for the decoder's life.
const KEEP_SCRATCH: usize = 64 << 20;

/// Counts of what was read, for summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderCounts {
    pub entries: u64,
    pub duplicate_entries: u64,
    pub rows: u64,
    pub error_rows: u64,
}

/// Entry-level context shared by the rows of one entry.
struct EntryContext<'a> {
    index: u64,
    ids: EntryIds,
    topic: Option<&'a str>,
    /// What was wrong before the messages were read (reader's error, checksum).
    prior_error: Option<String>,
}

impl EntryContext<'_> {
    /// Prefixes a message-level error with what was already wrong.
    fn error_text(&self, error: Option<&Error>) -> Option<String> {
        let own = error.map(|e| format!("{} at byte {} of the entry", e.message(), e.offset));
        match (&self.prior_error, own) {
            (Some(p), Some(o)) => Some(format!("{p}; {o}")),
            (Some(p), None) => Some(p.clone()),
            (None, o) => o,
        }
    }

    fn numbered(&self, e: Error) -> Error {
        let at = match (self.ids.ledger_id, self.ids.entry_id) {
            (Some(l), Some(en)) => format!(" (ledger {l} entry {en})"),
            _ => String::new(),
        };
        let detail = format!("entry {}{at}: {}", self.index, e.detail);
        e.with_detail(detail)
    }
}

pub struct MessageDecoder {
    options: DecoderOptions,
    owners: HashMap<i64, LedgerOwner>,
    builder: MessageBatchBuilder,
    ready: VecDeque<RecordBatch>,
    decompressor: Decompressor,
    /// Decompressed payloads, reused from entry to entry.
    scratch: Vec<u8>,
    /// A batch's plain messages, reused from entry to entry.
    plain: PlainMessages,
    chunks: ChunkTable,
    seen: EntrySet,
    /// Variable-length bytes in the batch being built.
    batch_bytes: usize,
    counts: DecoderCounts,
}

impl MessageDecoder {
    pub fn new(options: DecoderOptions, owners: HashMap<i64, LedgerOwner>) -> Self {
        let batch = MessageBatchOptions { payload: options.payload, flag_errors: options.on_error == OnError::Flag };
        MessageDecoder {
            builder: MessageBatchBuilder::new(batch, options.batch_rows.min(8192), 0),
            options,
            owners,
            ready: VecDeque::new(),
            decompressor: Decompressor::new(),
            scratch: Vec::new(),
            plain: PlainMessages::default(),
            chunks: ChunkTable::new(options.max_pending_chunk_bytes),
            seen: EntrySet::new(),
            batch_bytes: 0,
            counts: DecoderCounts::default(),
        }
    }

    pub fn schema(&self) -> SchemaRef {
        self.builder.schema()
    }

    pub fn counts(&self) -> DecoderCounts {
        self.counts
    }

    /// The next finished batch, if any.
    pub fn pop_batch(&mut self) -> Option<RecordBatch> {
        self.ready.pop_front()
    }

    /// Ends the input: chunks still waiting become flagged rows (or, under
    /// `Raise`, an error) and the last rows are finished into a batch.
    pub fn finish(&mut self) -> Result<()> {
        for chunks in self.chunks.drain() {
            self.give_up_chunks(chunks)?;
        }
        self.flush()
    }

    /// Every batch finished so far, and then the rest of the input ended: all rows.
    pub fn finish_all(&mut self) -> Result<Vec<RecordBatch>> {
        self.finish()?;
        Ok(self.ready.drain(..).collect())
    }

    /// Ends the batch being built because it is full: finished, or refused when every
    /// row must go into one batch.
    fn batch_full(&mut self) -> Result<()> {
        if self.options.single_batch {
            return Err(Error::invalid_argument(
                "the messages hold more payload bytes than one record batch can (2 GiB): read them as a stream of batches",
            ));
        }
        self.flush()
    }

    /// After an entry's rows: a batch holding its bytes' worth is finished now, so a
    /// caller taking batches as they come has it before the next entry is decompressed.
    fn end_full_batch(&mut self) -> Result<()> {
        if !self.options.single_batch && self.batch_bytes >= self.options.batch_bytes && !self.builder.is_empty() {
            return self.flush();
        }
        Ok(())
    }

    /// Finishes the rows so far into a batch (for a caller that stops early).
    pub fn flush(&mut self) -> Result<()> {
        if !self.builder.is_empty() {
            let batch = self.builder.finish()?;
            self.ready.push_back(batch);
        }
        self.batch_bytes = 0;
        Ok(())
    }

    /// How many of the next rows fit the batch being built (at least one: a batch is
    /// never empty), and the batch's variable-length bytes with them. `sizes` gives
    /// each row's payload bytes and its other variable-length bytes.
    #[inline(always)]
    fn rows_that_fit(&self, sizes: impl Iterator<Item = (usize, usize)>) -> (usize, usize) {
        let (mut rows, mut batch_bytes, mut payload_bytes) = (self.builder.len(), self.batch_bytes, self.builder.payload_bytes());
        let mut fit = 0;
        for (payload, other) in sizes {
            let bytes = payload + other;
            if rows != 0
                && (rows >= self.options.batch_rows
                    || batch_bytes + bytes > self.options.batch_bytes
                    || payload_bytes + payload > MAX_ARROW_VALUES)
            {
                break;
            }
            (rows, batch_bytes, payload_bytes) = (rows + 1, batch_bytes + bytes, payload_bytes + payload);
            fit += 1;
        }
        (fit, batch_bytes)
    }

    /// Appends the rows of one entry, finishing the batch first whenever it is full
    /// (an entry's rows may straddle batches). `meta_bytes` is the entry's metadata
    /// size, repeated in some columns of each row.
    fn push_rows(
        &mut self,
        entry: &EntryRow<'_>,
        messages: &[MessageRow<'_>],
        properties: &[Property<'_>],
        meta_bytes: usize,
    ) -> Result<()> {
        let mut rest = messages;
        loop {
            let sizes = rest.iter().map(|m| (m.payload.map_or(0, <[u8]>::len), m.metadata_bytes + meta_bytes + m.error.map_or(0, str::len)));
            let (fit, batch_bytes) = self.rows_that_fit(sizes);
            let (now, later) = rest.split_at(fit);
            self.builder.push_messages(entry, now, properties);
            self.builder.push_entry_columns(entry, now.len());
            self.batch_bytes = batch_bytes;
            self.counts.rows += now.len() as u64;
            self.counts.error_rows += now.iter().filter(|m| m.error.or(entry.error).is_some()).count() as u64;
            if later.is_empty() {
                return self.end_full_batch();
            }
            self.batch_full()?;
            rest = later;
        }
    }

    /// Appends a batch's plain messages, as [`push_rows`](Self::push_rows) does rows.
    fn push_plain(&mut self, entry: &EntryRow<'_>, plain: &PlainMessages, batch: &[u8], first_index: Option<i64>, meta_bytes: usize) -> Result<()> {
        let mut from = 0;
        loop {
            let sizes = plain.payload[from..].iter().zip(&plain.metadata_bytes[from..]);
            let (fit, batch_bytes) = self.rows_that_fit(sizes.map(|(&(_, payload), &metadata)| (payload as usize, metadata as usize + meta_bytes)));
            let to = from + fit;
            self.builder.push_plain(entry, plain, from..to, batch, first_index);
            self.builder.push_entry_columns(entry, to - from);
            self.batch_bytes = batch_bytes;
            self.counts.rows += (to - from) as u64;
            if entry.error.is_some() {
                self.counts.error_rows += (to - from) as u64;
            }
            if to == plain.len() {
                return self.end_full_batch();
            }
            self.batch_full()?;
            from = to;
        }
    }

    /// One row for something that could not be read as messages, or the error.
    /// `properties` holds the row's property range, if it has one.
    fn flag(
        &mut self,
        ctx: &EntryContext<'_>,
        entry: EntryRow<'_>,
        row: MessageRow<'_>,
        properties: &[Property<'_>],
        error: Error,
    ) -> Result<()> {
        if self.options.on_error == OnError::Raise {
            return Err(ctx.numbered(error));
        }
        let text = ctx.error_text(Some(&error));
        let row = MessageRow { error: text.as_deref(), ..row };
        self.push_rows(&entry, &[row], properties, 0)
    }

    /// One row of bytes that are not messages (an owner's other ledger, an entry
    /// that does not parse), flagged.
    fn flag_bytes(&mut self, ctx: &EntryContext<'_>, kind: Option<&str>, checksum_ok: Option<bool>, data: &[u8], e: Error) -> Result<()> {
        let entry = EntryRow { ids: ctx.ids, topic: ctx.topic, kind, checksum_ok, ..Default::default() };
        self.flag(ctx, entry, MessageRow { payload: Some(data), ..Default::default() }, &[], e)
    }

    /// Reads one entry's payload (the bytes after the BookKeeper header and digest).
    /// `entry_error` is what the file reader found wrong with the entry; with no
    /// payload the entry is one flagged row.
    pub fn push_entry(&mut self, index: u64, ids: EntryIds, payload: Option<&[u8]>, entry_error: Option<&str>) -> Result<()> {
        self.counts.entries += 1;
        if let (true, Some(l), Some(e)) = (self.options.skip_duplicate_entries, ids.ledger_id, ids.entry_id) {
            if self.seen.contains(l, e) {
                self.counts.duplicate_entries += 1;
                return Ok(());
            }
        }
        let owner = ids.ledger_id.and_then(|l| self.owners.get(&l)).cloned();
        let topic = owner.as_ref().and_then(|o| o.topic.clone());
        let mut ctx = EntryContext {
            index,
            ids,
            topic: topic.as_deref(),
            prior_error: entry_error.map(|e| format!("entry: {e}")),
        };
        let Some(data) = payload else {
            if entry_error.is_none() {
                return Ok(());
            }
            if self.options.on_error == OnError::Raise {
                return Err(ctx.numbered(Error::corrupt(0, format!("unreadable entry: {}", entry_error.unwrap_or("")))));
            }
            let entry = EntryRow { ids, topic: ctx.topic, error: ctx.prior_error.as_deref(), ..Default::default() };
            return self.push_rows(&entry, &[MessageRow::default()], &[], 0);
        };
        if let Some(owner) = owner.as_ref().filter(|o| !o.holds_messages()) {
            let what = match &owner.topic {
                Some(t) => format!("a {} ledger of {t}", owner.kind),
                None => format!("a {} ledger", owner.kind),
            };
            let e = Error::new(ErrorKind::InvalidArgument, 0, format!("not a topic message: the entry is in {what}"));
            return self.flag_bytes(&ctx, Some(&owner.kind), None, data, e);
        }
        // A compacted topic's ledger stores [u32 idSize][MessageIdData][u32 size][entry].
        let (data, base) = match owner.as_ref().map(|o| o.kind.as_str()) {
            Some("compacted") => match compacted_entry(data) {
                Ok(inner) => inner,
                Err(e) => return self.flag_bytes(&ctx, None, None, data, e),
            },
            _ => (data, 0),
        };
        let frame = match parse_entry(data) {
            Ok(f) => f,
            Err(e) => {
                let checksum_ok = checksum_of(data).map(|c| c.ok());
                return self.flag_bytes(&ctx, None, checksum_ok, data, e.at_base(base as u64));
            }
        };
        let checksum_ok = frame.checksum.map(|c| c.ok());
        if let Some(c) = frame.checksum.filter(|c| !c.ok()) {
            let mismatch = c.mismatch().at_base(base as u64);
            if self.options.on_error == OnError::Raise {
                return Err(ctx.numbered(mismatch));
            }
            let text = format!("{} at byte {} of the entry", mismatch.message(), mismatch.offset);
            ctx.prior_error = Some(match ctx.prior_error.take() {
                Some(p) => format!("{p}; {text}"),
                None => text,
            });
        }
        if let (Some(l), Some(e), None) = (ids.ledger_id, ids.entry_id, &ctx.prior_error) {
            if self.options.skip_duplicate_entries {
                self.seen.insert(l, e);
            }
        }
        self.messages(&ctx, &frame, checksum_ok, base)
    }

    /// The rows of a parsed entry.
    fn messages(&mut self, ctx: &EntryContext<'_>, frame: &EntryFrame<'_>, checksum_ok: Option<bool>, base: usize) -> Result<()> {
        let md = &frame.metadata;
        let meta_bytes = frame.payload_offset - frame.metadata_offset;
        let batch_size = md.num_messages_in_batch;
        let entry = EntryRow {
            ids: ctx.ids,
            batch_size,
            topic: ctx.topic,
            metadata: Some(md),
            broker: frame.broker.as_ref(),
            checksum_ok,
            error: ctx.prior_error.as_deref(),
            ..Default::default()
        };
        let payload_at = (base + frame.payload_offset) as u64;
        let entry_index = frame.broker.as_ref().and_then(|b| b.index).map(|i| i as i64);
        // A message that is not a batch keeps its own fields in the entry's metadata.
        let mut properties = Vec::new();
        let own = batch_size.is_none().then(|| SingleMessage::of_entry(md, &mut properties));
        let raw = MessageRow {
            message: own,
            message_index: if batch_size.is_none() { entry_index } else { None },
            payload: Some(frame.payload),
            ..Default::default()
        };
        // Kafka-on-Pulsar entries: Kafka record batches behind a Pulsar header.
        if md.properties.iter().any(|p| p.key.as_deref() == Some(b"entry.format") && p.value.as_deref() == Some(b"kafka")) {
            let entry = EntryRow { kind: Some(kind::KAFKA), ..entry };
            return self.push_rows(&entry, &[MessageRow { message_index: None, ..raw }], &properties, meta_bytes);
        }
        let chunked = batch_size.is_none() && md.num_chunks_from_msg.is_some_and(|n| n > 1);
        // Encrypted: the payload is ciphertext (of the compressed batch or chunk); nothing more can be read.
        if !md.encryption_keys.is_empty() {
            let entry = EntryRow { kind: Some(if chunked { kind::CHUNK } else { kind::MESSAGE }), ..entry };
            return self.push_rows(&entry, &[raw], &properties, meta_bytes);
        }
        if chunked {
            return self.chunk(ctx, entry, raw, frame, &properties, payload_at);
        }
        let entry = EntryRow { kind: Some(if md.marker_type.is_some() { kind::MARKER } else { kind::MESSAGE }), ..entry };
        if batch_size.is_none() && self.options.payload == PayloadMode::None {
            // The row is the metadata's: nothing to decompress, only sizes to check.
            return match self.check_stored(md, frame.payload, payload_at) {
                Err(e) => self.flag(ctx, entry, raw, &properties, e),
                Ok(()) => self.push_rows(&entry, &[raw], &properties, meta_bytes),
            };
        }
        // Views of decompressed payloads point into a buffer of the entry's own,
        // which the batch keeps; copies come from a scratch buffer reused.
        let views = self.options.payload == PayloadMode::BinaryView;
        let mut scratch = if views { Vec::new() } else { std::mem::take(&mut self.scratch) };
        let result = match self.uncompressed(md, frame.payload, payload_at, &mut scratch) {
            Err(e) => self.flag(ctx, entry, raw, &properties, e),
            Ok(in_scratch) => {
                let decompressed;
                let payload = match (in_scratch, views) {
                    (false, _) => frame.payload,
                    (true, false) => &scratch[..],
                    (true, true) => {
                        decompressed = arrow_buffer::Buffer::from_vec(std::mem::take(&mut scratch));
                        self.builder.view_entry_buffer(&decompressed);
                        &decompressed[..]
                    }
                };
                if let Some((stored, entries)) = self.options.expected_input.take() {
                    // The first entry tells what the rest probably expands to.
                    // (At most 8 times the stored bytes: a first entry that compresses
                    // unusually well must not reserve far more than the rest needs.)
                    let ratio = (payload.len() as f64 / frame.payload.len().max(1) as f64).min(8.0);
                    let rows = entries.saturating_mul(batch_size.unwrap_or(1).max(1) as usize);
                    let bytes = (stored as f64 * ratio) as usize;
                    self.builder.reserve(rows.min(self.options.batch_rows), bytes.min(MAX_ARROW_VALUES));
                }
                match batch_size {
                    None => self.push_rows(&entry, &[MessageRow { payload: Some(payload), ..raw }], &properties, meta_bytes),
                    Some(n) => self.batch(ctx, &entry, n, payload, payload_at, meta_bytes),
                }
            }
        };
        if !views {
            self.keep_scratch(scratch);
        }
        result
    }

    /// Keeps the decompression buffer for the next entry, unless it grew huge.
    fn keep_scratch(&mut self, mut scratch: Vec<u8>) {
        if scratch.capacity() > KEEP_SCRATCH {
            scratch = Vec::new();
        }
        self.scratch = scratch;
    }

    /// The payload's codec (none: stored as is) and the size it declares.
    fn codec_of(md: &MessageMetadata, at: u64) -> Result<(Compression, u64)> {
        let codec = md
            .compression
            .map_or(Some(Compression::None), Compression::from_proto)
            .ok_or_else(|| Error::corrupt(at, format!("unknown compression type {}", md.compression.unwrap_or(0))))?;
        Ok((codec, md.uncompressed_size.unwrap_or(0) as u64))
    }

    /// What can be checked of a stored payload without decompressing it: a known
    /// codec, and a declared size the stored bytes can hold.
    fn check_stored(&self, md: &MessageMetadata, stored: &[u8], at: u64) -> Result<()> {
        let (codec, size) = Self::codec_of(md, at)?;
        if codec == Compression::None {
            return Ok(());
        }
        codec.check_size(stored.len(), size).map_err(|e| Error::corrupt(at, e.0))
    }

    /// Decompresses a payload into `out` (true), or leaves it as stored (false: no codec).
    fn uncompressed(&mut self, md: &MessageMetadata, stored: &[u8], at: u64, out: &mut Vec<u8>) -> Result<bool> {
        let (codec, size) = Self::codec_of(md, at)?;
        if codec == Compression::None {
            // Java's codec for NONE returns the bytes as they are, whatever uncompressed_size says.
            return Ok(false);
        }
        codec.check_size(stored.len(), size).map_err(|e| Error::corrupt(at, e.0))?;
        let max = self.options.max_message_bytes;
        if size > max as u64 {
            // Perhaps true (a bomb is honest about its size), but more than a batch may hold.
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                at,
                format!(
                    "{}: uncompressed_size {size} is more than the {max} bytes a message may decompress to (max_message_bytes): not decompressed",
                    codec.name()
                ),
            ));
        }
        self.decompressor.decompress(codec, stored, size, out).map_err(|e| Error::corrupt(at, e.0))?;
        Ok(true)
    }

    /// The messages of a batch: `[u32 size][SingleMessageMetadata][payload]` each,
    /// appended as they are read.
    fn batch(
        &mut self,
        ctx: &EntryContext<'_>,
        entry: &EntryRow<'_>,
        batch_size: i32,
        batch: &[u8],
        payload_at: u64,
        meta_bytes: usize,
    ) -> Result<()> {
        let md = entry.metadata.unwrap_or_else(|| unreachable!("batches come with metadata"));
        let kept = &md.compacted_batch_indexes;
        // A newer compactor keeps only some messages and lists their indexes.
        let count = if kept.is_empty() { batch_size.max(0) as usize } else { kept.len() };
        let last_index = entry.broker.and_then(|b| b.index).map(|i| i as i64);
        let first_index = last_index.map(|last| last - (batch_size as i64 - 1));
        let mut properties = Vec::new();
        // Appended MESSAGE_CHUNK messages at a time: the lists stay small whatever the
        // count says or the batch holds. Plain messages (most) gather column by
        // column; the others as rows, in order: each list is appended before the
        // other gets a message.
        let mut plain = std::mem::take(&mut self.plain);
        plain.clear();
        let plain_fits = batch.len() <= u32::MAX as usize;
        let mut rows = Vec::new();
        let mut problem: Option<(Error, usize, i32)> = None;
        let mut pos = 0usize;
        for i in 0..count {
            let batch_index = kept.get(i).copied().unwrap_or(i as i32);
            let rest = &batch[pos..];
            let bad = |detail: String| {
                Error::corrupt(payload_at, format!("message {i} of a batch of {count}: {detail} at byte {pos} of the uncompressed batch"))
            };
            if rest.len() < 4 {
                problem = Some((bad(format!("the batch ends ({} bytes left) before the message's size field", rest.len())), pos, batch_index));
                break;
            }
            let size = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if size > rest.len() - 4 {
                problem = Some((bad(format!("SingleMessageMetadata size {size} is more than the {} bytes left", rest.len() - 4)), pos, batch_index));
                break;
            }
            let message = match single_message::parse(&rest[4..4 + size], &mut properties) {
                Ok(m) => m,
                Err(why) => {
                    problem = Some((bad(format!("SingleMessageMetadata does not decode: {why}")), pos, batch_index));
                    break;
                }
            };
            let after = 4 + size;
            let payload_size = match message.payload_size {
                Some(n) if n >= 0 && n as usize <= rest.len() - after => n as usize,
                Some(n) => {
                    problem = Some((bad(format!("payload_size {n} is more than the {} bytes left", rest.len() - after)), pos, batch_index));
                    break;
                }
                None => {
                    problem = Some((bad("SingleMessageMetadata lacks its required field payload_size".into()), pos, batch_index));
                    break;
                }
            };
            let payload_start = pos + after;
            if plain_fits && !message.sets_rare_fields {
                if !rows.is_empty() {
                    self.push_rows(entry, &rows, &properties, meta_bytes)?;
                    rows.clear();
                    properties.clear();
                }
                // Within the batch, which is at most 4 GiB: the casts keep every value.
                let key = message.partition_key.map(|k| ((k.as_ptr() as usize - batch.as_ptr() as usize) as u32, k.len() as u32));
                plain.push(batch_index, message.sequence_id, key, (payload_start as u32, payload_size as u32), size as u32);
                if plain.len() == MESSAGE_CHUNK {
                    self.push_plain(entry, &plain, batch, first_index, meta_bytes)?;
                    plain.clear();
                }
            } else {
                if !plain.is_empty() {
                    self.push_plain(entry, &plain, batch, first_index, meta_bytes)?;
                    plain.clear();
                }
                rows.push(MessageRow {
                    batch_index: Some(batch_index),
                    message: Some(message),
                    message_index: first_index.map(|first| first + batch_index as i64),
                    payload: Some(&rest[after..after + payload_size]),
                    error: None,
                    metadata_bytes: size,
                });
                if rows.len() == MESSAGE_CHUNK {
                    self.push_rows(entry, &rows, &properties, meta_bytes)?;
                    rows.clear();
                    properties.clear();
                }
            }
            pos = payload_start + payload_size;
        }
        // The messages read before any damage keep their rows.
        if !plain.is_empty() {
            self.push_plain(entry, &plain, batch, first_index, meta_bytes)?;
        }
        self.plain = plain;
        if !rows.is_empty() {
            self.push_rows(entry, &rows, &properties, meta_bytes)?;
        }
        if problem.is_none() && pos < batch.len() {
            let e = Error::corrupt(
                payload_at,
                format!("{} bytes follow the last of the batch's {count} messages, at byte {pos} of the uncompressed batch", batch.len() - pos),
            );
            problem = Some((e, pos, -1));
        }
        match problem {
            None => Ok(()),
            Some((e, at, batch_index)) => {
                let row = MessageRow {
                    batch_index: (batch_index >= 0).then_some(batch_index),
                    payload: Some(&batch[at..]),
                    ..Default::default()
                };
                self.flag(ctx, *entry, row, &[], e)
            }
        }
    }

    /// One chunk of a chunked message: kept until its message is complete.
    fn chunk(
        &mut self,
        ctx: &EntryContext<'_>,
        entry: EntryRow<'_>,
        raw: MessageRow<'_>,
        frame: &EntryFrame<'_>,
        properties: &[Property<'_>],
        payload_at: u64,
    ) -> Result<()> {
        let md = &frame.metadata;
        let num_chunks = md.num_chunks_from_msg.unwrap_or(0);
        let entry = EntryRow { kind: Some(kind::CHUNK), ..entry };
        let (Some(uuid), Some(chunk_id)) = (md.uuid.as_deref(), md.chunk_id) else {
            return self.flag(ctx, entry, raw, properties, Error::corrupt(payload_at, "a chunk without its uuid or chunk_id"));
        };
        if !(0..num_chunks).contains(&chunk_id) {
            let e = Error::corrupt(payload_at, format!("chunk_id {chunk_id} is outside the message's {num_chunks} chunks"));
            return self.flag(ctx, entry, raw, properties, e);
        }
        if !self.options.reassemble_chunks {
            return self.push_rows(&entry, &[raw], properties, frame.payload_offset - frame.metadata_offset);
        }
        let stored = StoredChunk {
            ids: ctx.ids,
            chunk_id,
            metadata: md.clone(),
            broker: frame.broker.clone(),
            checksum_ok: entry.checksum_ok,
            topic: ctx.topic.map(Arc::from),
            data: frame.payload.to_vec(),
            error: ctx.prior_error.clone(),
        };
        let mut given_up = Vec::new();
        let outcome = self.chunks.add(uuid, num_chunks, stored, &mut given_up);
        for chunks in given_up {
            self.give_up_chunks(chunks)?;
        }
        match outcome {
            ChunkOutcome::Waiting => Ok(()),
            ChunkOutcome::Complete(chunks) => self.reassembled(ctx.index, chunks),
            ChunkOutcome::Duplicate(chunk, first) => {
                let at = match (first.ledger_id, first.entry_id) {
                    (Some(l), Some(e)) => format!(" (first at ledger {l} entry {e})"),
                    _ => String::new(),
                };
                let e = Error::corrupt(
                    payload_at,
                    format!("chunk {chunk_id} of message {} is there twice{at}", String::from_utf8_lossy(uuid)),
                );
                self.flag(ctx, entry, MessageRow { payload: Some(&chunk.data), ..raw }, properties, e)
            }
        }
    }

    /// The row of a chunked message whose chunks are all there.
    fn reassembled(&mut self, index: u64, chunks: Vec<StoredChunk>) -> Result<()> {
        let (first, last) = (&chunks[0], &chunks[chunks.len() - 1]);
        let ctx = EntryContext {
            index,
            ids: last.ids,
            topic: last.topic.as_deref(),
            prior_error: {
                let errors: Vec<&str> = chunks.iter().filter_map(|c| c.error.as_deref()).collect();
                (!errors.is_empty()).then(|| errors.join("; "))
            },
        };
        let checksum_ok = chunks.iter().try_fold(true, |all, c| c.checksum_ok.map(|ok| all && ok));
        let md = &last.metadata;
        let entry = EntryRow {
            ids: last.ids,
            topic: ctx.topic,
            kind: Some(kind::MESSAGE),
            metadata: Some(md),
            broker: last.broker.as_ref(),
            checksum_ok,
            first_chunk: Some(first.ids),
            error: ctx.prior_error.as_deref(),
            ..Default::default()
        };
        let mut properties = Vec::new();
        let row = MessageRow {
            message: Some(SingleMessage::of_entry(md, &mut properties)),
            message_index: last.broker.as_ref().and_then(|b| b.index).map(|i| i as i64),
            ..Default::default()
        };
        // The chunks were held in memory already (within max_pending_chunk_bytes).
        let total: usize = chunks.iter().map(|c| c.data.len()).sum();
        let mut stored = Vec::new();
        if stored.try_reserve_exact(total).is_err() {
            let e = Error::invalid_argument(format!("no memory to put the {total} bytes of a chunked message together"));
            return self.flag(&ctx, entry, row, &properties, e);
        }
        for c in &chunks {
            stored.extend_from_slice(&c.data);
        }
        if let Some(total) = md.total_chunk_msg_size.filter(|&t| t as i64 != stored.len() as i64) {
            let e = Error::corrupt(0, format!("chunks hold {} bytes, total_chunk_msg_size is {total}", stored.len()));
            return self.flag(&ctx, entry, MessageRow { payload: Some(&stored), ..row }, &properties, e);
        }
        if self.options.payload == PayloadMode::None {
            return match self.check_stored(md, &stored, 0) {
                Err(e) => self.flag(&ctx, entry, MessageRow { payload: Some(&stored), ..row }, &properties, e),
                Ok(()) => self.push_rows(&entry, &[MessageRow { payload: Some(&stored), ..row }], &properties, 0),
            };
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = match self.uncompressed(md, &stored, 0, &mut scratch) {
            Err(e) => self.flag(&ctx, entry, MessageRow { payload: Some(&stored), ..row }, &properties, e),
            Ok(in_scratch) => {
                let payload = if in_scratch { &scratch[..] } else { &stored[..] };
                self.push_rows(&entry, &[MessageRow { payload: Some(payload), ..row }], &properties, 0)
            }
        };
        self.keep_scratch(scratch);
        result
    }

    /// Chunks whose message will not be completed: a flagged row each.
    fn give_up_chunks(&mut self, chunks: Vec<StoredChunk>) -> Result<()> {
        let Some(first) = chunks.first() else { return Ok(()) };
        let num = first.metadata.num_chunks_from_msg.unwrap_or(0);
        let uuid = String::from_utf8_lossy(first.metadata.uuid.as_deref().unwrap_or_default()).into_owned();
        let have: Vec<String> = chunks.iter().map(|c| c.chunk_id.to_string()).collect();
        for c in &chunks {
            let ctx = EntryContext { index: 0, ids: c.ids, topic: c.topic.as_deref(), prior_error: c.error.clone() };
            let e = Error::new(
                ErrorKind::Truncated,
                0,
                format!("incomplete chunked message {uuid}: chunks {} of {num} found", have.join(",")),
            );
            let mut properties = Vec::new();
            let entry = EntryRow {
                ids: c.ids,
                topic: ctx.topic,
                kind: Some(kind::CHUNK),
                metadata: Some(&c.metadata),
                broker: c.broker.as_ref(),
                checksum_ok: c.checksum_ok,
                ..Default::default()
            };
            let row = MessageRow {
                message: Some(SingleMessage::of_entry(&c.metadata, &mut properties)),
                payload: Some(&c.data),
                ..Default::default()
            };
            if self.options.on_error == OnError::Raise {
                return Err(ctx.numbered(e));
            }
            let text = ctx.error_text(Some(&e));
            self.push_rows(&entry, &[MessageRow { error: text.as_deref(), ..row }], &properties, 0)?;
        }
        Ok(())
    }
}

/// The entry inside a compacted ledger's record: `[u32 idSize][MessageIdData][u32 size][entry]`,
/// and where it starts.
fn compacted_entry(data: &[u8]) -> Result<(&[u8], usize)> {
    let id_size = crate::bytes::i32_at(data, 0)? as u32 as usize;
    let id = crate::bytes::slice_at(data, 4, id_size)?;
    decode_proto::<MessageIdData>(id, 4, "MessageIdData")?;
    let at = 4 + id_size;
    let size = crate::bytes::i32_at(data, at)? as u32 as usize;
    let entry = crate::bytes::slice_at(data, at + 4, size)?;
    Ok((entry, at + 4))
}

// ---------------------------------------------------------------- Arrow input

/// A binary column of any of Arrow's three layouts.
enum BinaryColumn<'a> {
    Binary(&'a arrow_array::BinaryArray),
    Large(&'a arrow_array::LargeBinaryArray),
    View(&'a arrow_array::BinaryViewArray),
}

impl<'a> BinaryColumn<'a> {
    /// The buffers its values live in (for views of them).
    fn buffers(&self) -> Vec<arrow_buffer::Buffer> {
        match self {
            BinaryColumn::Binary(a) => vec![a.values().clone()],
            BinaryColumn::Large(a) => vec![a.values().clone()],
            BinaryColumn::View(a) => a.data_buffers().to_vec(),
        }
    }

    fn new(array: &'a dyn Array, name: &str) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Binary => BinaryColumn::Binary(array.as_binary::<i32>()),
            DataType::LargeBinary => BinaryColumn::Large(array.as_binary::<i64>()),
            DataType::BinaryView => BinaryColumn::View(array.as_binary_view()),
            other => {
                return Err(Error::invalid_argument(format!(
                    "{name} must be an Arrow binary, large_binary or binary_view column, not {other}"
                )))
            }
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            BinaryColumn::Binary(a) => a.is_valid(i).then(|| a.value(i)),
            BinaryColumn::Large(a) => a.is_valid(i).then(|| a.value(i)),
            BinaryColumn::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// An integer id column (the readers' int64, or any other integer type).
enum IdColumn<'a> {
    I64(&'a arrow_array::Int64Array),
    I32(&'a arrow_array::Int32Array),
    U64(&'a arrow_array::UInt64Array),
    U32(&'a arrow_array::UInt32Array),
}

impl<'a> IdColumn<'a> {
    fn new(array: &'a dyn Array, name: &str) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Int64 => IdColumn::I64(array.as_primitive::<Int64Type>()),
            DataType::Int32 => IdColumn::I32(array.as_primitive::<Int32Type>()),
            DataType::UInt64 => IdColumn::U64(array.as_primitive::<UInt64Type>()),
            DataType::UInt32 => IdColumn::U32(array.as_primitive::<UInt32Type>()),
            other => return Err(Error::invalid_argument(format!("{name} must be an integer column, not {other}"))),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<i64> {
        match self {
            IdColumn::I64(a) => a.is_valid(i).then(|| a.value(i)),
            IdColumn::I32(a) => a.is_valid(i).then(|| a.value(i) as i64),
            IdColumn::U64(a) => a.is_valid(i).then(|| a.value(i) as i64),
            IdColumn::U32(a) => a.is_valid(i).then(|| a.value(i) as i64),
        }
    }
}

enum TextColumn<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

impl<'a> TextColumn<'a> {
    fn new(array: &'a dyn Array, name: &str) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Utf8 => TextColumn::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => TextColumn::Large(array.as_string::<i64>()),
            DataType::Utf8View => TextColumn::View(array.as_string_view()),
            other => return Err(Error::invalid_argument(format!("{name} must be a string column, not {other}"))),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            TextColumn::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            TextColumn::Large(a) => a.is_valid(i).then(|| a.value(i)),
            TextColumn::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// The entry columns the decoder reads, by name (the file readers' names and types):
/// `payload` is required, the others are read where present.
pub fn input_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("scope_id", DataType::Int64, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("payload", DataType::Binary, true),
        Field::new("error", DataType::Utf8, true),
        Field::new("record_type", DataType::Utf8, true),
    ]))
}

impl MessageDecoder {
    /// Reads a batch of entries: the file readers' rows, or any batch with a `payload`
    /// column and, ideally, `ledger_id` and `entry_id` (also read: `scope_id`, the
    /// reader's `error`, and a journal's `record_type`, whose non-entry records are
    /// skipped). Columns are found by name; others are ignored. Rows are numbered
    /// from `first_index` in errors.
    pub fn push_record_batch(&mut self, batch: &RecordBatch, first_index: u64) -> Result<()> {
        self.push_entry_rows(batch, first_index, 0, false).map(drop)
    }

    /// [`push_record_batch`](Self::push_record_batch) from row `from` on, stopping
    /// after the entry that finished a batch of messages: a caller that takes each
    /// batch ([`pop_batch`](Self::pop_batch)) before going on holds one at a time,
    /// however much the entries decompress to. Returns the row to go on from (the
    /// batch's row count once every row is read).
    pub fn push_record_batch_from(&mut self, batch: &RecordBatch, first_index: u64, from: usize) -> Result<usize> {
        self.push_entry_rows(batch, first_index, from, true)
    }

    fn push_entry_rows(&mut self, batch: &RecordBatch, first_index: u64, from: usize, stop_at_batch: bool) -> Result<usize> {
        let column = |name: &str| batch.column_by_name(name).map(|c| c.as_ref());
        let payload = column("payload").ok_or_else(|| {
            Error::invalid_argument(
                "the entries have no payload column (read them with payload=\"binary\" or \"binary_view\")",
            )
        })?;
        let payload = BinaryColumn::new(payload, "payload")?;
        self.builder.set_view_sources(&payload.buffers());
        let ledger_id = column("ledger_id").map(|c| IdColumn::new(c, "ledger_id")).transpose()?;
        let entry_id = column("entry_id").map(|c| IdColumn::new(c, "entry_id")).transpose()?;
        let scope_id = column("scope_id").map(|c| IdColumn::new(c, "scope_id")).transpose()?;
        let error = column("error").map(|c| TextColumn::new(c, "error")).transpose()?;
        let record_type = column("record_type").map(|c| TextColumn::new(c, "record_type")).transpose()?;
        let ready = self.ready.len();
        for i in from..batch.num_rows() {
            // Journal records other than entries (keys, fences, LACs, padding) are not messages.
            if let Some(t) = record_type.as_ref().and_then(|c| c.get(i)) {
                if t != "entry" && t != "damage" {
                    continue;
                }
            }
            let ids = EntryIds {
                scope_id: scope_id.as_ref().and_then(|c| c.get(i)),
                ledger_id: ledger_id.as_ref().and_then(|c| c.get(i)),
                entry_id: entry_id.as_ref().and_then(|c| c.get(i)),
            };
            let entry_error = error.as_ref().and_then(|c| c.get(i));
            self.push_entry(first_index + i as u64, ids, payload.get(i), entry_error)?;
            if stop_at_batch && self.ready.len() > ready {
                return Ok(i + 1);
            }
        }
        Ok(batch.num_rows())
    }

    /// Reads an array of entry payloads (no ids); nulls are skipped.
    pub fn push_payload_array(&mut self, array: &dyn Array, first_index: u64) -> Result<()> {
        let payload = BinaryColumn::new(array, "entries")?;
        self.builder.set_view_sources(&payload.buffers());
        for i in 0..array.len() {
            if let Some(p) = payload.get(i) {
                self.push_entry(first_index + i as u64, EntryIds::default(), Some(p), None)?;
            }
        }
        Ok(())
    }
}
