//! Many entries as Arrow rows (`decode_entries`): one row per input value, with the
//! entry columns of `reader_columns.rs` and the digest checks of `digest_check.rs`, the
//! same as the file readers'.
//!
//! Runs of entries whose digest type is known are checked together (their CRC-32C
//! digests as interleaved streams) and appended a column at a time; nulls, entries
//! that need their ledger's type inferred, and entries that fail go one at a time,
//! in input order, so inference sees entries in the order given.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericBinaryArray, OffsetSizeTrait, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, FieldRef, Schema, SchemaRef};

use super::reader_columns::{entry_columns, error_columns, Column, Fields, SingleRowValues, CleanEntries};
use super::payload::PayloadMode;
use crate::digest_check::{CheckedEntry, DigestChecker, LookAhead, Outcome, DigestStatus, GROUP_LEN};
use crate::digest_policy::DigestPolicy;
use crate::entry::{EntryHeader, HeaderLayout};
use crate::error::{Error, ErrorKind, Result};
use crate::files::scan::{entry_error_kind, entry_message, ScannedEntry};
use crate::ledger_digest_settings::LedgerDigestSettings;

/// What happens to an entry that cannot be decoded or fails its checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OnError {
    /// Stop at the first bad entry and return its error.
    Raise,
    /// Keep going: the bad entry becomes a row with an `error` message.
    Flag,
}

impl OnError {
    /// `"raise"` or `"flag"`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "raise" => Ok(OnError::Raise),
            "flag" => Ok(OnError::Flag),
            _ => Err(Error::invalid_argument(format!("unknown on_error {name:?} (expected \"raise\" or \"flag\")"))),
        }
    }
}

/// The shape of the entry columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryBatchOptions {
    pub payload: PayloadMode,
    /// `Flag` adds the `error` and `error_kind` columns.
    pub on_error: OnError,
}

impl EntryBatchOptions {
    /// The entry fields in column order (with the error columns under `Flag`).
    pub fn fields(&self) -> Vec<FieldRef> {
        let mut columns = entry_columns(self.payload, 0, 0, false);
        if self.on_error == OnError::Flag {
            columns.extend(error_columns());
        }
        columns.iter().map(|c| c.field()).collect()
    }

    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.fields()))
    }
}

/// Decodes entries into one batch.
pub struct EntryDecoder {
    options: EntryBatchOptions,
    checker: DigestChecker,
    columns: Vec<Box<dyn Column>>,
    rows: usize,
    /// The type V1 entries are read as when one is named (for the rows of entries
    /// that do not frame).
    fixed: Option<crate::digest::DigestType>,
    /// A group's rows, checked in place.
    run: Vec<ScannedEntry>,
    /// Ledgers whose type was looked for in later entries (once each).
    looked_ahead: std::collections::HashSet<crate::digest_check::LedgerKey>,
}

/// How many entries after an entry of an unknown ledger are looked at for its type.
const LOOK_AHEAD_ENTRIES: usize = 4096;

impl EntryDecoder {
    /// `rows` and `payload_bytes` are capacity hints (for `binary` payloads, the
    /// bytes to reserve); both should come from input sizes, never from fields read
    /// out of the entries.
    pub fn new(options: EntryBatchOptions, policy: DigestPolicy, password: &[u8], verify: bool, rows: usize, payload_bytes: usize) -> Self {
        Self::with_digests(options, LedgerDigestSettings::new(policy, password), verify, rows, payload_bytes)
    }

    /// [`EntryDecoder::new`] under any digest settings (a password given empty, say).
    pub fn with_digests(options: EntryBatchOptions, digests: LedgerDigestSettings, verify: bool, rows: usize, payload_bytes: usize) -> Self {
        let policy = digests.default_policy();
        let mut columns = entry_columns(options.payload, rows, payload_bytes, false);
        if options.on_error == OnError::Flag {
            columns.extend(error_columns());
        }
        let empty = CheckedEntry {
            header: EntryHeader::new(0, 0, 0, 0, 0),
            digest_type: None,
            payload_at: 0,
            verdict: DigestStatus::NotAsked,
        };
        EntryDecoder {
            options,
            checker: DigestChecker::new(&digests, verify),
            columns,
            rows: 0,
            fixed: policy.fixed(),
            run: vec![ScannedEntry { offset: 0, at: 0, len: 0, checked: empty }; GROUP_LEN],
            looked_ahead: std::collections::HashSet::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// For `binary_view` payloads: the buffers the next entries' bytes live in, so
    /// their payloads become views into them instead of copies.
    pub fn set_view_sources(&mut self, buffers: &[Buffer]) {
        for c in &mut self.columns {
            c.set_view_sources(buffers);
        }
    }

    /// Appends one row per item: `None` is a null row, anything else a decoded entry
    /// (or, under `OnError::Flag`, a flagged row). Items are numbered from
    /// `first_index` in error messages.
    pub fn append<'a>(&mut self, items: impl IntoIterator<Item = Option<&'a [u8]>>, first_index: usize) -> Result<()> {
        let items: Vec<Option<&[u8]>> = items.into_iter().collect();
        self.append_indexed(items.len(), |i| items[i], first_index)
    }

    /// [`append`](Self::append) over `n` items read by index (so an entry whose
    /// ledger's type is unknown can look at the ledger's entries after it).
    fn append_indexed<'a>(&mut self, n: usize, item: impl Fn(usize) -> Option<&'a [u8]>, first_index: usize) -> Result<()> {
        let mut i = 0;
        let mut raw: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
        while i < n {
            let Some(bytes) = item(i) else {
                self.push_row(&SingleRowValues::default());
                i += 1;
                continue;
            };
            // The non-null entries from here, checked together while they verify.
            let mut k = 0;
            while k < GROUP_LEN && i + k < n {
                let Some(b) = item(i + k) else { break };
                raw[k] = b;
                k += 1;
            }
            let run = &mut self.run[..k];
            for (j, (e, r)) in run.iter_mut().zip(&raw[..k]).enumerate() {
                (e.offset, e.len) = ((first_index + i + j) as u64, r.len());
            }
            let verified = self.checker.check_group(&raw[..k], run);
            if verified > 0 {
                let run = CleanEntries { entries: &self.run[..verified], raw: &raw[..verified] };
                for c in &mut self.columns {
                    c.push_clean_entries(&run);
                }
                self.rows += verified;
                i += verified;
                continue;
            }
            self.append_one(bytes, first_index + i, (i + 1..n.min(i + 1 + LOOK_AHEAD_ENTRIES)).filter_map(&item))?;
            i += 1;
        }
        Ok(())
    }

    /// One entry through the checker's general path. `later`: the entries after it
    /// (for a ledger whose type this entry does not tell, see [`LookAhead`]).
    fn append_one<'a>(&mut self, bytes: &[u8], index: usize, later: impl Iterator<Item = &'a [u8]>) -> Result<()> {
        let raise = self.options.on_error == OnError::Raise;
        let mut outcome = self.checker.check_one(bytes);
        if let Some(ledger_id) = self.checker.needs_look_ahead(&outcome) {
            if self.looked_ahead.insert(ledger_id) {
                let mut learned = LookAhead::new(ledger_id);
                let _certain = later.into_iter().any(|b| learned.consider(&self.checker, b));
                let lesson = learned.lesson(&self.checker, None);
                self.checker.learn(lesson);
                outcome = self.checker.check_one(bytes);
            }
        }
        match outcome {
            Outcome::Framed(checked, None) => {
                let entry = ScannedEntry { offset: index as u64, at: 0, len: bytes.len(), checked };
                let raw = [bytes];
                let run = CleanEntries { entries: std::slice::from_ref(&entry), raw: &raw };
                for c in &mut self.columns {
                    c.push_clean_entries(&run);
                }
                self.rows += 1;
            }
            Outcome::Framed(checked, Some(error)) => {
                if raise {
                    return Err(numbered(error, index));
                }
                let kind = if error.kind == ErrorKind::DigestMismatch { "digest_mismatch" } else { "length_mismatch" };
                let entry = ScannedEntry { offset: index as u64, at: 0, len: bytes.len(), checked };
                let row = SingleRowValues::entry(&entry, bytes, Some((entry_message(&error), kind)));
                self.push_row(&row);
            }
            Outcome::Unframed(error) => {
                if raise {
                    return Err(numbered(error, index));
                }
                let declared = bytes.first().and_then(|&b| match HeaderLayout::of(b) {
                    HeaderLayout::V2(dt) => Some(dt),
                    HeaderLayout::V1 => self.fixed,
                    HeaderLayout::Invalid => None,
                });
                let row = SingleRowValues {
                    fields: Fields::partial(bytes),
                    digest_type: declared,
                    error: Some(entry_message(&error)),
                    error_kind: Some(entry_error_kind(DigestStatus::NotAsked, Some(error.kind))),
                    ..SingleRowValues::default()
                };
                self.push_row(&row);
            }
        }
        Ok(())
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        for c in &mut self.columns {
            c.push_row(row);
        }
        self.rows += 1;
    }

    /// [`append_array`](Self::append_array) over the chunks of one column, as one
    /// sequence (an entry can look at its ledger's entries in later chunks).
    pub fn append_arrays(&mut self, arrays: &[ArrayRef], first_index: usize) -> Result<()> {
        if arrays.len() == 1 {
            return self.append_array(arrays[0].as_ref(), first_index);
        }
        let mut buffers = Vec::new();
        let mut items: Vec<Option<&[u8]>> = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
        for array in arrays {
            match array.data_type() {
                DataType::Binary => {
                    let a = array.as_binary::<i32>();
                    buffers.push(a.values().clone());
                    items.extend(a.iter());
                }
                DataType::LargeBinary => {
                    let a = array.as_binary::<i64>();
                    buffers.push(a.values().clone());
                    items.extend(a.iter());
                }
                DataType::BinaryView => {
                    let a = array.as_binary_view();
                    buffers.extend(a.data_buffers().iter().cloned());
                    items.extend(a.iter());
                }
                other => {
                    return Err(Error::invalid_argument(format!(
                        "entries must be binary, large_binary or binary_view, not {other}"
                    )))
                }
            }
        }
        self.set_view_sources(&buffers);
        self.append_indexed(items.len(), |i| items[i], first_index)
    }

    /// [`append`](Self::append) over an Arrow `binary`, `large_binary` or
    /// `binary_view` array; its buffers become the view sources, so `binary_view`
    /// payloads share them.
    pub fn append_array(&mut self, array: &dyn Array, first_index: usize) -> Result<()> {
        match array.data_type() {
            DataType::Binary => self.append_binary_array(array.as_binary::<i32>(), first_index),
            DataType::LargeBinary => self.append_binary_array(array.as_binary::<i64>(), first_index),
            DataType::BinaryView => {
                let a = array.as_binary_view();
                self.set_view_sources(a.data_buffers());
                self.append_indexed(a.len(), |i| a.is_valid(i).then(|| a.value(i)), first_index)
            }
            other => Err(Error::invalid_argument(format!("entries must be binary, large_binary or binary_view, not {other}"))),
        }
    }

    /// The values of a `binary` or `large_binary` array straight from its offsets
    /// (the array may be a slice: its offsets are the slice's, its value buffer whole).
    fn append_binary_array<O: OffsetSizeTrait>(&mut self, array: &GenericBinaryArray<O>, first_index: usize) -> Result<()> {
        self.set_view_sources(std::slice::from_ref(array.values()));
        let offsets = array.value_offsets();
        let values = array.values().as_slice();
        let nulls = array.nulls().filter(|n| n.null_count() > 0);
        let item = |i: usize| {
            if nulls.is_some_and(|n| n.is_null(i)) {
                return None;
            }
            // Offsets out of order or past the buffer (an array that breaks Arrow's
            // rules) read as an empty entry, which is reported as truncated.
            Some(values.get(offsets[i].as_usize()..offsets[i + 1].as_usize()).unwrap_or_default())
        };
        self.append_indexed(array.len(), item, first_index)
    }

    /// The batch of the rows so far; the decoder starts over empty.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let fields: Vec<FieldRef> = self.columns.iter().map(|c| c.field()).collect();
        let arrays = self.columns.iter_mut().map(|c| c.finish(None)).collect::<Result<Vec<ArrayRef>>>()?;
        self.rows = 0;
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| Error::invalid_argument(format!("assembling the entry batch: {e}")))
    }
}

/// Bytes held by the values of a `binary`, `large_binary` or `binary_view` array
/// (only the slice in use, nulls counting nothing): a capacity hint for copied
/// payloads. 0 for other types.
pub fn entry_bytes(array: &dyn Array) -> usize {
    match array.data_type() {
        DataType::Binary => {
            let o = array.as_binary::<i32>().value_offsets();
            (o[o.len() - 1] - o[0]) as usize
        }
        DataType::LargeBinary => {
            let o = array.as_binary::<i64>().value_offsets();
            (o[o.len() - 1] - o[0]) as usize
        }
        // The low 32 bits of a view are the value's length.
        DataType::BinaryView => array.as_binary_view().views().iter().map(|v| *v as u32 as usize).sum(),
        _ => 0,
    }
}

/// An entry's error numbered with its input index.
pub(crate) fn numbered(e: Error, index: usize) -> Error {
    let detail = format!("entry {index}: {}", e.detail);
    e.with_detail(detail)
}
