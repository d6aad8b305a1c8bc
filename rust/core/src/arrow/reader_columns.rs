//! The columns of the readers' batches: one type per kind of column, and a reader
//! is a list of them (`entry_columns` here, the file readers' lists in
//! `file_reader.rs`). Adding a column is one entry in a list.
//!
//! Rows arrive in two shapes: runs of clean entries ([`CleanEntries`], appended a column at
//! a time, the hot path), and single rows of any other kind ([`SingleRowValues`]: a flagged
//! or unframed entry, a journal record, a damaged span, a null input).

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder};
use arrow_array::types::{Int64Type, Int8Type, UInt8Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, Int64Array, StringArray};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef};

use super::primitive_column::PrimitiveColumn;
use super::payload::{PayloadColumnBuilder, PayloadMode};
use crate::digest::DigestType;
use crate::digest_check::{CheckedEntry, Unchecked};
use crate::entry::{EntryHeader, HeaderLayout, HeaderView};
use crate::error::{Error, Result};
use crate::files::scan::ScannedEntry;
use crate::files::window::Frozen;
use crate::files::Location;

/// Clean entries in file (or input) order, and each one's bytes.
pub(crate) struct CleanEntries<'a> {
    pub entries: &'a [ScannedEntry],
    pub raw: &'a [&'a [u8]],
}

/// The entry columns' values of a row that is not a clean entry: all of them for
/// a framed entry, what its bytes hold for one that did not frame, the ids of a
/// journal record or a torn entry, nothing for a damaged span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub format: Option<i8>,
    pub scope_id: Option<i64>,
    pub ledger_id: Option<i64>,
    pub entry_id: Option<i64>,
    pub last_add_confirmed: Option<i64>,
    pub length: Option<i64>,
}

impl Fields {
    pub fn of(h: &EntryHeader) -> Fields {
        Fields {
            format: Some(h.format.number() as i8),
            scope_id: Some(h.scope_id),
            ledger_id: Some(h.ledger_id),
            entry_id: Some(h.entry_id),
            last_add_confirmed: Some(h.last_add_confirmed),
            length: Some(h.length),
        }
    }

    pub fn ids(ledger_id: Option<i64>, entry_id: Option<i64>) -> Fields {
        Fields { ledger_id, entry_id, ..Fields::default() }
    }

    /// What the bytes of an entry that did not frame hold: every field whose bytes
    /// are there, when the first byte announces a layout.
    pub fn partial(bytes: &[u8]) -> Fields {
        let Some(&first) = bytes.first() else { return Fields::default() };
        if let Some((h, _)) = HeaderView::read(bytes) {
            return Fields::of(&h.to_header());
        }
        let layout = HeaderLayout::of(first);
        let (format, at) = match layout {
            HeaderLayout::V1 => (1, 0),
            HeaderLayout::V2(_) => (2, layout.fields_at()),
            HeaderLayout::Invalid => return Fields::default(),
        };
        let field = |i: usize| bytes.get(at + 8 * i..at + 8 * i + 8).map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes")));
        Fields {
            format: Some(format),
            scope_id: if format == 1 { Some(0) } else { bytes.get(1..9).map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes"))) },
            ledger_id: field(0),
            entry_id: field(1),
            last_add_confirmed: field(2),
            length: field(3),
        }
    }
}

/// The values of a single row (not part of a run of clean entries), as the columns read them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SingleRowValues<'a> {
    /// Offset of the record or span in its file (or the input index).
    pub offset: u64,
    /// `record_size`: the record's bytes after its size field, or the span's length.
    pub size: u64,
    /// `record_type`.
    pub record_type: &'static str,
    pub fields: Fields,
    pub digest_type: Option<DigestType>,
    pub digest_ok: Option<bool>,
    /// Why the digest could not be checked, when it could not.
    pub unchecked: Option<Unchecked>,
    /// The payload and its offset in the file, when located.
    pub payload: Option<(&'a [u8], usize)>,
    /// Whether the row has a location (an entry of a log).
    pub located: bool,
    pub error: Option<String>,
    pub error_kind: Option<&'static str>,
    pub master_key: Option<&'a [u8]>,
    pub lac_blob: Option<&'a [u8]>,
}

impl<'a> SingleRowValues<'a> {
    /// The row of a framed entry (`entry` bytes from the file) with what is wrong.
    pub fn entry(e: &ScannedEntry, bytes: &'a [u8], error: Option<(String, &'static str)>) -> SingleRowValues<'a> {
        let c = &e.checked;
        let skip = c.payload_at as usize;
        SingleRowValues {
            offset: e.offset,
            size: e.len as u64,
            record_type: "entry",
            fields: Fields::of(&c.header),
            digest_type: c.digest_type,
            digest_ok: c.verdict.digest_ok(),
            unchecked: c.verdict.unchecked(),
            payload: (skip > 0).then(|| (&bytes[skip..], e.at + skip)),
            located: true,
            error: error.as_ref().map(|(m, _)| m.clone()),
            error_kind: error.map(|(_, k)| k),
            ..SingleRowValues::default()
        }
    }
}

/// One column of a reader's batches.
pub(crate) trait Column: Send {
    fn field(&self) -> FieldRef;
    /// Appends a run of clean entries.
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>);
    /// Appends one row of any other kind.
    fn push_row(&mut self, row: &SingleRowValues<'_>);
    /// For payload views: the caller's buffers the next rows' bytes live in.
    fn set_view_sources(&mut self, _buffers: &[Buffer]) {}
    /// The column so far; it starts over empty. `views`: the bytes the batch's
    /// payload views point into, for a column that deferred them.
    fn finish(&mut self, views: Option<&Frozen>) -> Result<ArrayRef>;
}

/// An integer column filled from an entry's header, or from a row's [`Fields`].
/// Generic over its accessors (each column its own type), so a run's loop has
/// them inlined rather than calling through a pointer per row.
struct HeaderField<T: ArrowPrimitiveType, E, F> {
    name: &'static str,
    values: PrimitiveColumn<T>,
    of_entry: E,
    of_fields: F,
}

impl<T, E, F> Column for HeaderField<T, E, F>
where
    T: ArrowPrimitiveType,
    E: Fn(&CheckedEntry) -> T::Native + Send,
    F: Fn(&Fields) -> Option<T::Native> + Send,
{
    fn field(&self) -> FieldRef {
        Arc::new(Field::new(self.name, T::DATA_TYPE, true))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        let f = &self.of_entry;
        self.values.extend(run.entries.iter().map(|e| f(&e.checked)));
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.values.push_option((self.of_fields)(&row.fields));
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        Ok(Arc::new(self.values.finish()))
    }
}

fn header_field<T: ArrowPrimitiveType>(
    name: &'static str,
    rows: usize,
    of_entry: impl Fn(&CheckedEntry) -> T::Native + Send + 'static,
    of_fields: impl Fn(&Fields) -> Option<T::Native> + Send + 'static,
) -> Box<dyn Column> {
    Box::new(HeaderField::<T, _, _> { name, values: PrimitiveColumn::with_capacity(rows), of_entry, of_fields })
}

/// Longest digest type name ("crc32c").
const DIGEST_NAME_MAX: usize = 6;

/// `digest_type`: one byte per row (the proto number, 0 for null), spelled out
/// when the batch is finished.
struct DigestTypeColumn {
    codes: PrimitiveColumn<UInt8Type>,
}

impl Column for DigestTypeColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new("digest_type", DataType::Utf8, true))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        self.codes.extend(run.entries.iter().map(|e| e.checked.digest_type.map_or(0, DigestType::proto_value)));
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.codes.push(row.digest_type.map_or(0, DigestType::proto_value));
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        let codes = self.codes.finish();
        let codes = codes.values();
        let rows = codes.len();
        if rows.saturating_mul(DIGEST_NAME_MAX) > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("{rows} rows are too many for one batch's digest_type column")));
        }
        let name = |code: u8| DigestType::from_proto_value(code as i64).map_or("", |d| d.name());
        let (offsets, values, nulls) = match codes.first() {
            // One type throughout (the common case): the name repeated, no nulls.
            Some(&code) if code != 0 && codes.iter().all(|&c| c == code) => {
                let n = name(code);
                let offsets: Vec<i32> = (0..=rows).map(|i| (i * n.len()) as i32).collect();
                (offsets, n.as_bytes().repeat(rows), None)
            }
            _ => {
                let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
                let mut values: Vec<u8> = Vec::with_capacity(rows * DIGEST_NAME_MAX);
                let mut nulls = NullBufferBuilder::new(rows);
                offsets.push(0);
                for &code in codes {
                    values.extend_from_slice(name(code).as_bytes());
                    nulls.append(code != 0);
                    offsets.push(values.len() as i32);
                }
                (offsets, values, nulls.finish())
            }
        };
        // SAFETY: the offsets start at 0 and grow by each row's name length, ending at
        // the values' length (checked above to fit i32); the values are ASCII names.
        Ok(Arc::new(unsafe {
            StringArray::new_unchecked(OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)), Buffer::from_vec(values), nulls)
        }))
    }
}

/// `digest_ok`: true, false, or null when nothing was computed.
struct DigestOkColumn {
    values: BooleanBuilder,
}

impl Column for DigestOkColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new("digest_ok", DataType::Boolean, true))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        // Runs of one verdict (the common case) go in at once.
        let mut rest = run.entries;
        while let Some(first) = rest.first() {
            let ok = first.checked.verdict.digest_ok();
            let n = rest.iter().take_while(|e| e.checked.verdict.digest_ok() == ok).count();
            match ok {
                Some(v) => self.values.append_n(n, v),
                None => self.values.append_nulls(n),
            }
            rest = &rest[n..];
        }
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.values.append_option(row.digest_ok);
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        Ok(Arc::new(self.values.finish()))
    }
}

/// `digest_unchecked_reason`: why an entry's digest could not be checked
/// (`no_password`, `unknown_type`); null where it was checked, where the reader was
/// asked not to verify, and on rows that are not entries. One byte per row, spelled
/// out when the batch is finished.
struct UncheckedReasonColumn {
    codes: PrimitiveColumn<UInt8Type>,
}

impl UncheckedReasonColumn {
    /// 0 for none, else 1 + the reason's place in [`Unchecked::ALL`].
    #[inline(always)]
    fn code(u: Option<Unchecked>) -> u8 {
        u.map_or(0, |u| 1 + Unchecked::ALL.iter().position(|&a| a == u).unwrap_or(0) as u8)
    }
}

impl Column for UncheckedReasonColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new("digest_unchecked_reason", DataType::Utf8, true))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        self.codes.extend(run.entries.iter().map(|e| Self::code(e.checked.verdict.unchecked())));
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.codes.push(Self::code(row.unchecked));
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        let codes = self.codes.finish();
        if codes.values().iter().all(|&c| c == 0) {
            return Ok(Arc::new(StringArray::new_null(codes.len())));
        }
        Ok(Arc::new(codes.values().iter().map(|&c| c.checked_sub(1).map(|i| Unchecked::ALL[i as usize].as_str())).collect::<StringArray>()))
    }
}

/// `payload`: copied (`binary`) or views (`binary_view`). Views into a file's
/// window are made when the batch is finished, from the bytes frozen for it
/// (`deferred`); views into the caller's buffers are placed as rows come.
struct PayloadColumn {
    mode: PayloadMode,
    builder: PayloadColumnBuilder,
    /// `(file offset, length)` of each row's payload, for views made at finish.
    deferred: Option<Vec<Option<(usize, usize)>>>,
    rows: usize,
    /// Error for a payload column that filled up, raised at finish.
    overflow: Option<Error>,
}

impl PayloadColumn {
    fn push(&mut self, payload: Option<(&[u8], usize)>) {
        if let Some(d) = &mut self.deferred {
            d.push(payload.map(|(p, at)| (at, p.len())));
            return;
        }
        match payload {
            Some((p, _)) => {
                if let Err(e) = self.builder.append(p) {
                    self.overflow.get_or_insert(e);
                    self.builder.append_null();
                }
            }
            None => self.builder.append_null(),
        }
    }
}

impl Column for PayloadColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new("payload", self.mode.data_type().expect("a payload column has a type"), true))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        if let Some(d) = &mut self.deferred {
            d.extend(run.entries.iter().map(|e| e.payload()));
            return;
        }
        let mut payloads: [&[u8]; crate::digest_check::GROUP_LEN] = [&[]; crate::digest_check::GROUP_LEN];
        for chunk in run.entries.chunks(crate::digest_check::GROUP_LEN).zip(run.raw.chunks(crate::digest_check::GROUP_LEN)) {
            let (entries, raw) = chunk;
            if entries.iter().any(|e| e.checked.payload_at == 0) {
                for (e, r) in entries.iter().zip(raw) {
                    let skip = e.checked.payload_at as usize;
                    self.push((skip > 0).then(|| (&r[skip..], e.at + skip)));
                }
                continue;
            }
            let mut bytes = 0;
            for ((p, e), r) in payloads.iter_mut().zip(entries).zip(raw) {
                *p = &r[e.checked.payload_at as usize..];
                bytes += p.len();
            }
            // Appends all or none: without memory for them, one at a time records why.
            if !(self.builder.has_room(bytes) && self.builder.append_all(payloads[..entries.len()].iter().copied()).is_ok()) {
                for (e, r) in entries.iter().zip(raw) {
                    let skip = e.checked.payload_at as usize;
                    self.push(Some((&r[skip..], e.at + skip)));
                }
            }
        }
        self.rows += run.entries.len();
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.push(row.payload);
        self.rows += 1;
    }

    fn set_view_sources(&mut self, buffers: &[Buffer]) {
        self.builder.set_view_sources(buffers);
    }

    fn finish(&mut self, views: Option<&Frozen>) -> Result<ArrayRef> {
        if let Some(e) = self.overflow.take() {
            self.builder = PayloadColumnBuilder::new(self.mode, 0, 0);
            return Err(e);
        }
        if let Some(spans) = &mut self.deferred {
            let frozen = views.expect("deferred payload views need the frozen window");
            let mut builder = PayloadColumnBuilder::new(PayloadMode::BinaryView, spans.len(), 0);
            builder.set_view_sources(std::slice::from_ref(&frozen.buffer));
            let bytes = frozen.buffer.as_slice();
            // Drained, not taken: the next batch fills the same allocation instead of
            // growing a new one from nothing.
            for span in spans.drain(..) {
                match span {
                    Some((at, len)) => builder.append(&bytes[at - frozen.base..at - frozen.base + len])?,
                    None => builder.append_null(),
                }
            }
            self.rows = 0;
            return Ok(builder.finish()?.expect("a view column"));
        }
        self.rows = 0;
        Ok(self.builder.finish()?.expect("a payload column"))
    }
}

/// A column that is null but on a few rows (`error`, `error_kind`), kept as those
/// rows and spelled out when the batch is finished.
struct SparseText {
    name: &'static str,
    rows: usize,
    texts: Vec<(usize, String)>,
    of_row: fn(&SingleRowValues<'_>) -> Option<String>,
}

impl Column for SparseText {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new(self.name, DataType::Utf8, true))
    }

    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        self.rows += run.entries.len();
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        if let Some(t) = (self.of_row)(row) {
            self.texts.push((self.rows, t));
        }
        self.rows += 1;
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        let rows = std::mem::take(&mut self.rows);
        let texts = std::mem::take(&mut self.texts);
        if texts.is_empty() {
            return Ok(Arc::new(StringArray::new_null(rows)));
        }
        let bytes: usize = texts.iter().map(|(_, m)| m.len()).sum();
        if bytes > i32::MAX as usize {
            return Err(Error::invalid_argument(format!(
                "{} texts of {} rows add up to {bytes} bytes, more than one batch's column holds; use smaller batches",
                self.name,
                texts.len()
            )));
        }
        let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
        let mut values: Vec<u8> = Vec::with_capacity(bytes);
        let mut valid = BooleanBufferBuilder::new(rows);
        valid.append_n(rows, false);
        offsets.push(0);
        for (row, text) in &texts {
            offsets.resize(row + 1, values.len() as i32);
            values.extend_from_slice(text.as_bytes());
            offsets.push(values.len() as i32);
            valid.set_bit(*row, true);
        }
        offsets.resize(rows + 1, values.len() as i32);
        // SAFETY: the offsets start at 0 and never decrease, ending at the values'
        // length (checked above to fit i32); the values are whole UTF-8 strings.
        Ok(Arc::new(unsafe {
            StringArray::new_unchecked(
                OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                Some(NullBuffer::new(valid.finish())),
            )
        }))
    }
}

/// The entry columns, in order: `format_version` int8, `scope_id`, `ledger_id`,
/// `entry_id`, `last_add_confirmed`, `length` int64, `digest_type`, `digest_ok`,
/// `digest_unchecked_reason`, and `payload` unless its mode is none. `deferred_views`: views into a file
/// window, made when the batch is finished.
pub(crate) fn entry_columns(payload: PayloadMode, rows: usize, payload_bytes: usize, deferred_views: bool) -> Vec<Box<dyn Column>> {
    let mut columns: Vec<Box<dyn Column>> = vec![
        header_field::<Int8Type>("format_version", rows, |c| c.header.format.number() as i8, |f| f.format),
        header_field::<Int64Type>("scope_id", rows, |c| c.header.scope_id, |f| f.scope_id),
        header_field::<Int64Type>("ledger_id", rows, |c| c.header.ledger_id, |f| f.ledger_id),
        header_field::<Int64Type>("entry_id", rows, |c| c.header.entry_id, |f| f.entry_id),
        header_field::<Int64Type>("last_add_confirmed", rows, |c| c.header.last_add_confirmed, |f| f.last_add_confirmed),
        header_field::<Int64Type>("length", rows, |c| c.header.length, |f| f.length),
        Box::new(DigestTypeColumn { codes: PrimitiveColumn::with_capacity(rows) }),
        Box::new(DigestOkColumn { values: BooleanBuilder::with_capacity(rows) }),
        Box::new(UncheckedReasonColumn { codes: PrimitiveColumn::with_capacity(rows) }),
    ];
    if payload == PayloadMode::Hash {
        columns.push(Box::new(PayloadHashColumn {
            sizes: PrimitiveColumn::with_capacity(rows),
            hashes: PrimitiveColumn::with_capacity(0),
            size_column: true,
        }));
        columns.push(Box::new(PayloadHashColumn {
            sizes: PrimitiveColumn::with_capacity(0),
            hashes: PrimitiveColumn::with_capacity(rows),
            size_column: false,
        }));
    } else if payload != PayloadMode::None {
        let deferred = (deferred_views && payload == PayloadMode::BinaryView).then(|| Vec::with_capacity(rows));
        columns.push(Box::new(PayloadColumn {
            mode: payload,
            builder: PayloadColumnBuilder::new(payload, rows, payload_bytes),
            deferred,
            rows: 0,
            overflow: None,
        }));
    }
    columns
}

/// `payload_size` or `payload_hash` (XXH3-64 as a signed bit pattern, the
/// `twox-hash` build choosing AVX2 at run time) of each row's payload, read where
/// it lies: what an inventory keeps of a payload. The two columns are two instances
/// (each hashing would be twice the work: the size instance only counts).
struct PayloadHashColumn {
    sizes: PrimitiveColumn<Int64Type>,
    hashes: PrimitiveColumn<Int64Type>,
    size_column: bool,
}

impl PayloadHashColumn {
    #[inline]
    fn push(&mut self, payload: Option<&[u8]>) {
        if self.size_column {
            self.sizes.push_option(payload.map(|p| p.len() as i64));
        } else {
            self.hashes.push_option(payload.map(|p| twox_hash::XxHash3_64::oneshot(p) as i64));
        }
    }
}

impl Column for PayloadHashColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new(if self.size_column { "payload_size" } else { "payload_hash" }, DataType::Int64, true))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        for (e, r) in run.entries.iter().zip(run.raw) {
            let at = e.checked.payload_at as usize;
            self.push((at > 0).then(|| &r[at..]));
        }
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.push(row.payload.map(|(p, _)| p));
    }

    fn finish(&mut self, _views: Option<&Frozen>) -> Result<ArrayRef> {
        Ok(Arc::new(if self.size_column { self.sizes.finish() } else { self.hashes.finish() }))
    }
}

/// `error` (what is wrong with the row) and `error_kind` (a stable name for it).
pub(crate) fn error_columns() -> Vec<Box<dyn Column>> {
    vec![
        Box::new(SparseText { name: "error", rows: 0, texts: Vec::new(), of_row: |r| r.error.clone() }),
        Box::new(SparseText { name: "error_kind", rows: 0, texts: Vec::new(), of_row: |r| r.error_kind.map(str::to_owned) }),
    ]
}

/// A column of the file readers, from closures over runs and rows (inlined into
/// the run's loop, as [`HeaderField`]'s).
struct FileColumn<T: ArrowPrimitiveType, E, R> {
    field: FieldRef,
    values: PrimitiveColumn<T>,
    of_entry: E,
    of_row: R,
}

impl<T, E, R> Column for FileColumn<T, E, R>
where
    T: ArrowPrimitiveType,
    E: Fn(&ScannedEntry) -> Option<T::Native> + Send,
    R: Fn(&SingleRowValues<'_>) -> Option<T::Native> + Send,
{
    fn field(&self) -> FieldRef {
        self.field.clone()
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        for e in run.entries {
            self.values.push_option((self.of_entry)(e));
        }
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.values.push_option((self.of_row)(row));
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        Ok(Arc::new(self.values.finish()))
    }
}

/// `offset`: of the record's size field (or of a damaged span).
pub(crate) fn offset_column(rows: usize) -> Box<dyn Column> {
    Box::new(OffsetColumn { values: PrimitiveColumn::with_capacity(rows), sizes: false })
}

/// `record_size`: the record's bytes after its size field, or a span's length.
pub(crate) fn record_size_column(rows: usize) -> Box<dyn Column> {
    Box::new(OffsetColumn { values: PrimitiveColumn::with_capacity(rows), sizes: true })
}

/// `offset` or `record_size` (never null), extended a run at a time.
struct OffsetColumn {
    values: PrimitiveColumn<Int64Type>,
    sizes: bool,
}

impl Column for OffsetColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new(if self.sizes { "record_size" } else { "offset" }, DataType::Int64, false))
    }

    #[inline]
    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        if self.sizes {
            self.values.extend(run.entries.iter().map(|e| e.len as i64));
        } else {
            self.values.extend(run.entries.iter().map(|e| e.offset as i64));
        }
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.values.push(if self.sizes { row.size } else { row.offset } as i64);
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        Ok(Arc::new(self.values.finish()))
    }
}

/// A column holding one value on every row (a file's id), or nulls.
pub(crate) fn constant_column(name: &'static str, value: Option<i64>) -> Box<dyn Column> {
    Box::new(Constant { name, value, rows: 0 })
}

struct Constant {
    name: &'static str,
    value: Option<i64>,
    rows: usize,
}

impl Column for Constant {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new(self.name, DataType::Int64, true))
    }

    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        self.rows += run.entries.len();
    }

    fn push_row(&mut self, _: &SingleRowValues<'_>) {
        self.rows += 1;
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        let rows = std::mem::take(&mut self.rows);
        Ok(Arc::new(match self.value {
            Some(v) => Int64Array::from_value(v, rows),
            None => Int64Array::new_null(rows),
        }))
    }
}

/// `location`: `log_id << 32 | offset of the entry bytes`, what indexes store;
/// null without a log id, off entries, and past the 32 bits a location has.
pub(crate) fn location_column(log_id: Option<u32>, rows: usize) -> Box<dyn Column> {
    let Some(log_id) = log_id else {
        // Null on every row: kept as a count, not a null pushed per row.
        return constant_column("location", None);
    };
    let location = move |offset: u64| Location::new(log_id, offset + 4).ok().map(Location::to_raw);
    Box::new(FileColumn::<Int64Type, _, _> {
        field: Arc::new(Field::new("location", DataType::Int64, true)),
        values: PrimitiveColumn::with_capacity(rows),
        of_entry: move |e: &ScannedEntry| location(e.offset),
        of_row: move |r: &SingleRowValues<'_>| if r.located { location(r.offset) } else { None },
    })
}

/// `record_type`: `entry` and `damage` (entry logs and journals); in journals also
/// `ledger_key`, `fence`, `explicit_lac`, `unknown_meta`, `padding`. Kept as runs of
/// one name.
pub(crate) fn record_type_column() -> Box<dyn Column> {
    Box::new(RecordTypeColumn { runs: Vec::new() })
}

struct RecordTypeColumn {
    runs: Vec<(&'static str, usize)>,
}

impl RecordTypeColumn {
    fn push_n(&mut self, name: &'static str, n: usize) {
        match self.runs.last_mut() {
            Some((last, count)) if *last == name => *count += n,
            _ => self.runs.push((name, n)),
        }
    }
}

impl Column for RecordTypeColumn {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new("record_type", DataType::Utf8, false))
    }

    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        self.push_n("entry", run.entries.len());
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        self.push_n(row.record_type, 1);
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        let rows: usize = self.runs.iter().map(|r| r.1).sum();
        let bytes: usize = self.runs.iter().map(|(name, n)| name.len() * n).sum();
        if bytes > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("{rows} rows are too many for one batch's record_type column")));
        }
        let mut values: Vec<u8> = Vec::with_capacity(bytes);
        let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
        offsets.push(0);
        for (name, n) in self.runs.drain(..) {
            for _ in 0..n {
                values.extend_from_slice(name.as_bytes());
                offsets.push(values.len() as i32);
            }
        }
        Ok(Arc::new(StringArray::new(OffsetBuffer::new(offsets.into()), values.into(), None)))
    }
}

/// A binary column null but on a few journal records (`master_key`,
/// `explicit_lac_blob`).
pub(crate) fn record_bytes_column(name: &'static str, of_row: for<'a> fn(&SingleRowValues<'a>) -> Option<&'a [u8]>) -> Box<dyn Column> {
    Box::new(RecordBytes { name, values: BinaryBuilder::new(), nulls_owed: 0, of_row })
}

struct RecordBytes {
    name: &'static str,
    values: BinaryBuilder,
    nulls_owed: usize,
    of_row: for<'a> fn(&SingleRowValues<'a>) -> Option<&'a [u8]>,
}

impl Column for RecordBytes {
    fn field(&self) -> FieldRef {
        Arc::new(Field::new(self.name, DataType::Binary, true))
    }

    fn push_clean_entries(&mut self, run: &CleanEntries<'_>) {
        self.nulls_owed += run.entries.len();
    }

    fn push_row(&mut self, row: &SingleRowValues<'_>) {
        match (self.of_row)(row) {
            Some(b) => {
                self.values.append_nulls(std::mem::take(&mut self.nulls_owed));
                self.values.append_value(b);
            }
            None => self.nulls_owed += 1,
        }
    }

    fn finish(&mut self, _: Option<&Frozen>) -> Result<ArrayRef> {
        self.values.append_nulls(std::mem::take(&mut self.nulls_owed));
        Ok(Arc::new(self.values.finish()))
    }
}

/// `explicit_lac` (journals): the LAC an explicit-LAC record carries.
pub(crate) fn explicit_lac_column(rows: usize) -> Box<dyn Column> {
    Box::new(FileColumn::<Int64Type, _, _> {
        field: Arc::new(Field::new("explicit_lac", DataType::Int64, true)),
        values: PrimitiveColumn::with_capacity(rows),
        of_entry: |_: &ScannedEntry| None,
        // The LAC value sits before the digest, whatever the digest type.
        of_row: |r: &SingleRowValues<'_>| r.lac_blob.and_then(|b| crate::entry::decode_lac(b, DigestType::Dummy).ok()).map(|l| l.lac),
    })
}
