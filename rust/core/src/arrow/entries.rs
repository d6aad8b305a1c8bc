//! Decoded entries as Arrow rows.
//!
//! [`EntryBatchBuilder`] owns the entry columns, in this order: `format_version`
//! int8, `scope_id`, `ledger_id`, `entry_id`, `last_add_confirmed`, `length` int64,
//! `digest_type` string, `digest_ok` bool, `payload` (binary, binary_view or absent)
//! and, when bad entries are flagged rather than raised, `error` string. File
//! readers put their own columns (`log_id`, `offset`, ...) before or after these:
//! they build those arrays row for row alongside and hand them to
//! [`EntryBatchBuilder::finish_with`].
//!
//! Appending a good entry allocates nothing beyond the columns' amortised growth;
//! only bad rows format an error string. Runs of entries are appended a group at a
//! time ([`StagedGroup`]): framing writes each header field straight into its
//! column, past the column's end, and the group is appended once its digests check.

use std::sync::Arc;

use arrow_array::builder::BooleanBuilder;
use arrow_array::types::{Int64Type, Int8Type, UInt8Type};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use super::column::PrimitiveColumn;
use super::payload::{PayloadColumnBuilder, PayloadMode};
use crate::bytes::i64_at;
use crate::digest::{crc32c_concat_many, DigestType};
use crate::digest_policy::{DigestPolicy, DigestResolver, EntryChecks, ResolvedEntry};
use crate::entry::{be_i64, parse_v2_flags, v2_flags, Entry, EntryFormat, V1_HEADER_LEN, V2_HEADER_LEN};
use crate::error::{Error, ErrorKind, Result};

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
    /// `Flag` adds the `error` column.
    pub on_error: OnError,
}

impl EntryBatchOptions {
    /// The entry fields in column order.
    pub fn fields(&self) -> Vec<FieldRef> {
        let mut fields = vec![
            Field::new("format_version", DataType::Int8, true),
            Field::new("scope_id", DataType::Int64, true),
            Field::new("ledger_id", DataType::Int64, true),
            Field::new("entry_id", DataType::Int64, true),
            Field::new("last_add_confirmed", DataType::Int64, true),
            Field::new("length", DataType::Int64, true),
            Field::new("digest_type", DataType::Utf8, true),
            Field::new("digest_ok", DataType::Boolean, true),
        ];
        if let Some(dt) = self.payload.data_type() {
            fields.push(Field::new("payload", dt, true));
        }
        if self.on_error == OnError::Flag {
            fields.push(Field::new("error", DataType::Utf8, true));
        }
        fields.into_iter().map(Arc::new).collect()
    }

    /// The schema of a batch with `leading` fields, the entry fields, then `trailing` ones.
    pub fn schema_with(&self, leading: &[FieldRef], trailing: &[FieldRef]) -> SchemaRef {
        let fields: Vec<FieldRef> =
            leading.iter().cloned().chain(self.fields()).chain(trailing.iter().cloned()).collect();
        Arc::new(Schema::new(fields))
    }
}

/// Accumulates decoded entries (and error rows) into Arrow columns.
pub struct EntryBatchBuilder {
    options: EntryBatchOptions,
    format_version: PrimitiveColumn<Int8Type>,
    scope_id: PrimitiveColumn<Int64Type>,
    ledger_id: PrimitiveColumn<Int64Type>,
    entry_id: PrimitiveColumn<Int64Type>,
    last_add_confirmed: PrimitiveColumn<Int64Type>,
    length: PrimitiveColumn<Int64Type>,
    digest_type: DigestTypeColumn,
    digest_ok: BooleanBuilder,
    payload: PayloadColumnBuilder,
    error: Option<ErrorColumn>,
    rows: usize,
    /// Under digest type inference, whether groups take the CRC-32C loop (see
    /// [`stage`](Self::stage)).
    crc32c_runs: bool,
}

/// Longest digest type name ("crc32c").
const DIGEST_NAME_MAX: usize = 6;

/// Each digest type's name padded to 8 bytes, by proto number, and its length.
const DIGEST_NAMES: [([u8; 8], usize); 5] = {
    let mut names = [([0u8; 8], 0); 5];
    let mut i = 0;
    while i < DigestType::ALL.len() {
        let dt = DigestType::ALL[i];
        let name = dt.name().as_bytes();
        let mut j = 0;
        while j < name.len() {
            names[dt.proto_value() as usize].0[j] = name[j];
            j += 1;
        }
        names[dt.proto_value() as usize].1 = name.len();
        i += 1;
    }
    names
};

/// The `digest_type` column as one byte per row (the proto number, 0 for null),
/// spelled out when the batch is finished: appending a short string per row costs
/// a `memcpy` call and a validity update.
struct DigestTypeColumn {
    codes: PrimitiveColumn<UInt8Type>,
}

impl DigestTypeColumn {
    fn with_capacity(rows: usize) -> Self {
        DigestTypeColumn { codes: PrimitiveColumn::with_capacity(rows) }
    }

    #[inline]
    fn push(&mut self, digest_type: Option<DigestType>) {
        self.codes.push(digest_type.map_or(0, DigestType::proto_value));
    }

    /// The names so far; the column is left empty.
    fn finish(&mut self) -> Result<StringArray> {
        let codes = self.codes.finish();
        let codes = codes.values();
        let rows = codes.len();
        if rows.saturating_mul(DIGEST_NAME_MAX) > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("{rows} rows are too many for one batch's digest_type column")));
        }
        let (offsets, values, nulls) = match codes.first() {
            // One type throughout (the common case): the name repeated, no nulls.
            Some(&code) if code != 0 && codes.chunks(64).all(|run| run.iter().fold(true, |same, &c| same & (c == code))) => {
                let (name, len) = DIGEST_NAMES[code as usize];
                let offsets: Vec<i32> = (0..=rows).map(|i| (i * len) as i32).collect();
                (offsets, name[..len].repeat(rows), None)
            }
            _ => {
                let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
                let mut values: Vec<u8> = Vec::with_capacity(rows * DIGEST_NAME_MAX + 8);
                let mut nulls = NullBufferBuilder::new(rows);
                offsets.push(0);
                for &code in codes {
                    let (name, len) = DIGEST_NAMES[code as usize];
                    let end = values.len() + len;
                    values.extend_from_slice(&name);
                    values.truncate(end);
                    nulls.append(code != 0);
                    offsets.push(end as i32);
                }
                (offsets, values, nulls.finish())
            }
        };
        // SAFETY: the offsets start at 0 and grow by each row's name length, ending at
        // the values' length (checked above to fit i32); the values are ASCII names.
        Ok(unsafe {
            StringArray::new_unchecked(
                OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                nulls,
            )
        })
    }
}

/// The `error` column, kept as the few rows that have one and spelled out when the
/// batch is finished (every other row is null).
struct ErrorColumn {
    /// Row index and message, rows increasing.
    messages: Vec<(usize, String)>,
}

impl ErrorColumn {
    fn finish(&mut self, rows: usize) -> Result<StringArray> {
        let messages = std::mem::take(&mut self.messages);
        if messages.is_empty() {
            return Ok(StringArray::new_null(rows));
        }
        let bytes: usize = messages.iter().map(|(_, m)| m.len()).sum();
        if bytes > i32::MAX as usize {
            return Err(Error::invalid_argument(format!(
                "error messages of {} rows add up to {bytes} bytes, more than one batch's error column holds; \
                 use smaller batches",
                messages.len()
            )));
        }
        let mut offsets: Vec<i32> = Vec::with_capacity(rows + 1);
        let mut values: Vec<u8> = Vec::with_capacity(bytes);
        let mut valid = BooleanBufferBuilder::new(rows);
        valid.append_n(rows, false);
        offsets.push(0);
        for (row, message) in &messages {
            offsets.resize(row + 1, values.len() as i32);
            values.extend_from_slice(message.as_bytes());
            offsets.push(values.len() as i32);
            valid.set_bit(*row, true);
        }
        offsets.resize(rows + 1, values.len() as i32);
        // SAFETY: the offsets start at 0 and never decrease, ending at the values'
        // length (checked above to fit i32); the values are whole UTF-8 strings.
        Ok(unsafe {
            StringArray::new_unchecked(
                OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                Some(NullBuffer::new(valid.finish())),
            )
        })
    }
}

/// Entries per group: enough to keep several CRC streams going and to spread each
/// column's capacity check and validity update over many rows.
pub(crate) const GROUP_LEN: usize = 48;

/// A group ends once its payloads reach this many bytes (so large entries come a
/// few at a time): within [`PREFETCH_AHEAD`], so verifying a group has requested
/// the next one's headers before it is framed.
const GROUP_BYTES: usize = 8 * 1024;

/// Groups whose payloads average more than this are verified an entry at a time
/// (the CRC runs such messages one at a time anyway).
const LONG_MESSAGE: usize = 512;

/// Consecutive framed entries not yet appended. Their header fields are already in
/// the slots past the columns' ends; the rest waits here for the digest verdicts.
pub(crate) struct StagedGroup<'a> {
    len: usize,
    /// Input index of the first entry, for error messages.
    first_index: usize,
    raws: [&'a [u8]; GROUP_LEN],
    /// Each entry's digested header and its payload (the rest of the digested bytes).
    heads: [&'a [u8]; GROUP_LEN],
    payloads: [&'a [u8]; GROUP_LEN],
    payload_bytes: usize,
    /// Each CRC-32C entry's stored digest.
    stored_crcs: [u32; GROUP_LEN],
    /// Whether every entry is CRC-32C (the common case: the group's CRCs are then
    /// computed together as interleaved streams).
    all_crc32c: bool,
    /// Digest type of each entry, to verify the others and to re-frame on the slow
    /// path, when `codes_staged`.
    digest_types: [DigestType; GROUP_LEN],
    /// Whether the `digest_type` codes are in their column's slots and
    /// `digest_types` (else every entry is CRC-32C, and appending the group writes
    /// the codes).
    codes_staged: bool,
}

/// Why [`EntryBatchBuilder::stage`] stopped.
pub(crate) enum StageEnd<'a> {
    /// The group is full (of entries or of bytes, or took the rows the columns had
    /// room for); more items may follow.
    Full,
    /// The items ran out.
    Exhausted,
    /// This item did not frame on the fast path (or was null): it goes next, alone.
    Item(Option<&'a [u8]>),
}

impl<'a> StagedGroup<'a> {
    pub(crate) fn new() -> Self {
        StagedGroup {
            len: 0,
            first_index: 0,
            raws: [&[]; GROUP_LEN],
            heads: [&[]; GROUP_LEN],
            payloads: [&[]; GROUP_LEN],
            payload_bytes: 0,
            stored_crcs: [0; GROUP_LEN],
            all_crc32c: true,
            digest_types: [DigestType::Dummy; GROUP_LEN],
            codes_staged: true,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The digest type entry `k` was framed under.
    #[inline]
    fn digest_type(&self, k: usize) -> DigestType {
        if self.codes_staged {
            self.digest_types[k]
        } else {
            DigestType::Crc32c
        }
    }

    /// Whether each entry's digest matches, into `ok`; whether all do. Long
    /// messages go one call each, after requesting the input a little ahead (see
    /// [`PREFETCH_AHEAD`]), so the requests spread evenly over the work; short ones
    /// go in one call (six interleaved streams), their near-sequential reading left
    /// to the hardware.
    #[inline]
    fn verify(&self, resolver: &DigestResolver, ok: &mut [bool; GROUP_LEN]) -> bool {
        let n = self.len;
        if self.all_crc32c {
            self.verify_crc32c(ok, false)
        } else {
            let long = self.payload_bytes > n * LONG_MESSAGE;
            for (k, (ok, &raw)) in ok.iter_mut().zip(&self.raws).take(n).enumerate() {
                if long {
                    prefetch_ahead(raw);
                }
                *ok = verify_one(resolver, raw, self.digest_type(k));
            }
            ok[..n].iter().all(|&x| x)
        }
    }
}

impl StagedGroup<'_> {
    /// [`verify`](Self::verify) for a group of CRC-32C entries. `prefetched`: the
    /// caller has requested the input already (a scan that framed it).
    #[inline]
    fn verify_crc32c(&self, ok: &mut [bool; GROUP_LEN], prefetched: bool) -> bool {
        debug_assert!(self.all_crc32c);
        let n = self.len;
        let mut computed = [0u32; GROUP_LEN];
        if prefetched || self.payload_bytes <= n * LONG_MESSAGE {
            crc32c_concat_many(&mut computed[..n], &self.heads[..n], &self.payloads[..n]);
        } else {
            for k in 0..n {
                prefetch_ahead(self.raws[k]);
                crc32c_concat_many(&mut computed[k..k + 1], &self.heads[k..k + 1], &self.payloads[k..k + 1]);
            }
        }
        let mut all = true;
        for k in 0..n {
            ok[k] = computed[k] == self.stored_crcs[k];
            all &= ok[k];
        }
        all
    }
}

impl EntryBatchBuilder {
    /// `rows` and `payload_bytes` are capacity hints (for `binary` payloads, the
    /// bytes to reserve); both should come from input sizes, never from fields
    /// read out of the entries.
    pub fn new(options: EntryBatchOptions, rows: usize, payload_bytes: usize) -> Self {
        EntryBatchBuilder {
            options,
            format_version: PrimitiveColumn::with_capacity(rows),
            scope_id: PrimitiveColumn::with_capacity(rows),
            ledger_id: PrimitiveColumn::with_capacity(rows),
            entry_id: PrimitiveColumn::with_capacity(rows),
            last_add_confirmed: PrimitiveColumn::with_capacity(rows),
            length: PrimitiveColumn::with_capacity(rows),
            digest_type: DigestTypeColumn::with_capacity(rows),
            digest_ok: BooleanBuilder::with_capacity(rows),
            payload: PayloadColumnBuilder::new(options.payload, rows, payload_bytes),
            error: (options.on_error == OnError::Flag).then(|| ErrorColumn { messages: Vec::new() }),
            rows: 0,
            crc32c_runs: true,
        }
    }

    pub fn options(&self) -> EntryBatchOptions {
        self.options
    }

    /// Appends the first `n` slots of the header-field columns, and of the
    /// `digest_type` column too when `codes` (else the caller appends the codes).
    ///
    /// # Safety
    /// Those slots were written, and nothing has been appended to those columns
    /// since.
    #[inline(always)]
    unsafe fn append_header_slots(&mut self, n: usize, codes: bool) {
        // SAFETY: as the caller guarantees.
        unsafe {
            self.format_version.append_slots(n);
            self.scope_id.append_slots(n);
            self.ledger_id.append_slots(n);
            self.entry_id.append_slots(n);
            self.last_add_confirmed.append_slots(n);
            self.length.append_slots(n);
            if codes {
                self.digest_type.codes.append_slots(n);
            }
        }
    }

    /// Starts staging a group: resets it, and returns the rows it may take (the
    /// columns are never grown by a group, so a batch sized to its rows is never
    /// reallocated), or, when the columns are full, the end to report: the next
    /// item, to go alone (its row grows them).
    #[inline(always)]
    fn start_group<'a>(
        &self,
        items: &mut impl Iterator<Item = Option<&'a [u8]>>,
        group: &mut StagedGroup<'a>,
        first_index: usize,
        codes_staged: bool,
    ) -> std::result::Result<usize, StageEnd<'a>> {
        debug_assert_eq!(group.len, 0);
        group.first_index = first_index;
        group.payload_bytes = 0;
        group.all_crc32c = true;
        group.codes_staged = codes_staged;
        match self.row_room().min(GROUP_LEN) {
            0 => Err(match items.next() {
                None => StageEnd::Exhausted,
                Some(item) => StageEnd::Item(item),
            }),
            n => Ok(n),
        }
    }

    /// Rows appended since the last finish.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// For `binary_view` payloads: the buffers the next entries' bytes live in, so
    /// their payloads become views into them instead of copies. Entries found
    /// elsewhere are still copied, so setting none is correct, only slower.
    pub fn set_view_sources(&mut self, buffers: &[Buffer]) {
        self.payload.set_view_sources(buffers);
    }

    /// Frames one entry with `resolver`, runs `checks`, and appends its row. A bad
    /// entry is returned as the error under [`OnError::Raise`] (nothing is appended)
    /// and appended as a flagged row under [`OnError::Flag`]. The only error under
    /// `Flag` is a full `binary` payload column.
    #[inline]
    pub fn decode_append(&mut self, resolver: &mut DigestResolver, bytes: &[u8], checks: EntryChecks) -> Result<()> {
        // The common case builds no error and keeps the entry in registers.
        if let Some(resolved) = resolver.try_resolve(bytes, checks.digest) {
            if resolved.passes(checks) {
                return self.append_entry(&resolved, None);
            }
        }
        self.decode_append_bad(resolver, bytes, checks)
    }

    /// The slow path of [`decode_append`](Self::decode_append): entries that fail,
    /// or that need their ledger's digest type inferred first.
    #[inline(never)]
    pub(crate) fn decode_append_bad(&mut self, resolver: &mut DigestResolver, bytes: &[u8], checks: EntryChecks) -> Result<()> {
        match resolver.resolve(bytes, checks.digest) {
            Ok(resolved) => match resolved.check(checks.ledger_id, checks.entry_id) {
                Ok(()) => self.append_entry(&resolved, None),
                Err(e) if self.options.on_error == OnError::Flag => self.append_entry(&resolved, Some(&e)),
                Err(e) => Err(e),
            },
            Err(e) if self.options.on_error == OnError::Flag => {
                self.append_unframed(bytes, &e, resolver.policy().fixed());
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Appends a framed entry; `error` (written only when the error column exists)
    /// says why it is bad when it passed framing but failed a check.
    #[inline]
    pub fn append_entry(&mut self, resolved: &ResolvedEntry<'_>, error: Option<&Error>) -> Result<()> {
        self.push_entry_fields(resolved)?;
        self.append_error_text(error);
        self.rows += 1;
        Ok(())
    }

    /// The entry columns of a framed entry (all but `error`).
    #[inline(always)]
    fn push_entry_fields(&mut self, resolved: &ResolvedEntry<'_>) -> Result<()> {
        let entry = &resolved.entry;
        self.payload.append(entry.payload())?;
        let h = &entry.header;
        self.format_version.push(h.format.number() as i8);
        self.scope_id.push(h.scope_id);
        self.ledger_id.push(h.ledger_id);
        self.entry_id.push(h.entry_id);
        self.last_add_confirmed.push(h.last_add_confirmed);
        self.length.push(h.length);
        self.digest_type.push(Some(entry.digest_type));
        self.digest_ok.append_option(resolved.digest_ok);
        Ok(())
    }

    /// Appends framed entries that passed every check, a column at a time, all with
    /// the same `digest_ok` (for callers that verified them already). Appends
    /// nothing and returns false when their payloads would overflow the payload
    /// column (the caller then appends row by row, which reports the row that
    /// overflows).
    pub fn append_passed(&mut self, entries: &[Entry<'_>], digest_ok: Option<bool>) -> bool {
        if !self.payload.has_room(entries.iter().map(|e| e.payload().len()).sum()) {
            return false;
        }
        for chunk in entries.chunks(GROUP_LEN) {
            let mut payloads: [&[u8]; GROUP_LEN] = [&[]; GROUP_LEN];
            for (p, e) in payloads.iter_mut().zip(chunk) {
                *p = e.payload();
            }
            self.payload.append_all(&payloads[..chunk.len()]);
        }
        let n = entries.len();
        // One pass over the entries, each field written into its column's slots.
        let format_version = self.format_version.slots(n);
        let scope_id = self.scope_id.slots(n);
        let ledger_id = self.ledger_id.slots(n);
        let entry_id = self.entry_id.slots(n);
        let last_add_confirmed = self.last_add_confirmed.slots(n);
        let length = self.length.slots(n);
        let codes = self.digest_type.codes.slots(n);
        for (k, e) in entries.iter().enumerate() {
            let h = &e.header;
            format_version[k].write(h.format.number() as i8);
            scope_id[k].write(h.scope_id);
            ledger_id[k].write(h.ledger_id);
            entry_id[k].write(h.entry_id);
            last_add_confirmed[k].write(h.last_add_confirmed);
            length[k].write(h.length);
            codes[k].write(e.digest_type.proto_value());
        }
        // SAFETY: the first `n` slots of each column were just written.
        unsafe { self.append_header_slots(n, true) };
        match digest_ok {
            Some(ok) => self.digest_ok.append_n(n, ok),
            None => self.digest_ok.append_nulls(n),
        }
        self.rows += n;
        true
    }

    /// For file readers: frames `raws` (entries a scan framed, in file order) as
    /// CRC-32C entries, V1 ones only where `v1_crc32c` says their ledger is CRC-32C,
    /// computes their digests together and appends the longest run from the first
    /// whose digests match, as verified rows. Returns its length; an entry that does
    /// not frame so, or whose digest does not match, ends it. Appends nothing
    /// (returns 0) when the payload column could not take the run: the caller's
    /// row-at-a-time path then reports the overflow. `group` is scratch space.
    pub(crate) fn append_crc32c_prefix<'a>(
        &mut self,
        raws: &[&'a [u8]],
        group: &mut StagedGroup<'a>,
        v1_crc32c: impl FnMut(i64) -> bool,
    ) -> usize {
        let mut items = raws.iter().map(|&raw| Some(raw));
        self.stage_crc32c(&mut items, group, 0, v1_crc32c);
        let n = group.len;
        let mut ok = [false; GROUP_LEN];
        group.verify_crc32c(&mut ok, true);
        group.len = 0;
        let k = ok[..n].iter().take_while(|&&ok| ok).count();
        if k == 0 || !self.payload.has_room(group.payloads[..k].iter().map(|p| p.len()).sum()) {
            return 0;
        }
        // SAFETY: `stage_crc32c` staged `n >= k` entries, and nothing was appended since.
        unsafe { self.append_staged_rows(group, k, Some(true)) };
        k
    }

    /// Appends the first `k` staged entries of `group`, each with `digest_ok`.
    ///
    /// # Safety
    /// The group was staged with at least `k` entries, nothing has been appended
    /// since (so the columns' slots still hold them), and the payload column has
    /// room for their payloads.
    unsafe fn append_staged_rows(&mut self, group: &StagedGroup<'_>, k: usize, digest_ok: Option<bool>) {
        self.payload.append_all(&group.payloads[..k]);
        // SAFETY: the caller staged these slots (the payload column is not among them).
        unsafe { self.append_header_slots(k, group.codes_staged) };
        if !group.codes_staged {
            self.digest_type.codes.extend(std::iter::repeat_n(DigestType::Crc32c.proto_value(), k));
        }
        match digest_ok {
            Some(ok) => self.digest_ok.append_n(k, ok),
            None => self.digest_ok.append_nulls(k),
        }
        self.rows += k;
    }

    /// Frames entries from `items` into `group` (which must be empty) until it is
    /// full, the items run out, or an item does not frame without help (a null, a
    /// bad entry, the first V1 entry of a ledger under inference): that item is
    /// returned, for the caller to append alone once the group is appended.
    /// `first_index` is the input index of the first item taken.
    ///
    /// Each entry's header fields go straight into the slots past the columns'
    /// ends; [`append_staged`](Self::append_staged) appends them or leaves them to
    /// be overwritten. Nothing else may be appended in between.
    #[inline]
    pub(crate) fn stage<'a>(
        &mut self,
        resolver: &mut DigestResolver,
        items: &mut impl Iterator<Item = Option<&'a [u8]>>,
        group: &mut StagedGroup<'a>,
        first_index: usize,
        checks: EntryChecks,
    ) -> StageEnd<'a> {
        // One loop per policy, so a fixed type's lengths are constants in it.
        macro_rules! stage_with {
            ($frame:expr) => {
                if checks.digest {
                    self.stage_framed::<true>(items, group, first_index, $frame)
                } else {
                    self.stage_framed::<false>(items, group, first_index, $frame)
                }
            };
        }
        match resolver.policy() {
            DigestPolicy::Fixed(DigestType::Crc32c) if checks.digest => {
                self.stage_crc32c(items, group, first_index, |_| true)
            }
            DigestPolicy::Fixed(dt) => stage_with!(|b| Entry::frame(b, Some(dt))),
            // Under inference, CRC-32C (the usual type) takes its own loop while its
            // entries come in runs; a good entry of another type ending such a group
            // sends the next groups to the general loop until one is all CRC-32C.
            DigestPolicy::Auto if checks.digest && self.crc32c_runs => {
                let crc32c = |ledger_id| resolver.remembered_v1_type(ledger_id) == Some(DigestType::Crc32c);
                let end = self.stage_crc32c(items, group, first_index, crc32c);
                if let StageEnd::Item(Some(bytes)) = end {
                    self.crc32c_runs = resolver.try_resolve(bytes, false).is_none();
                }
                end
            }
            DigestPolicy::Auto => {
                let end = stage_with!(|b| resolver.try_resolve(b, false).map(|r| r.entry));
                self.crc32c_runs = group.all_crc32c && matches!(end, StageEnd::Full);
                end
            }
        }
    }

    /// [`stage`](Self::stage) with `frame` framing an entry as the resolver would;
    /// `VERIFY` is `checks.digest`.
    #[inline(always)]
    fn stage_framed<'a, const VERIFY: bool>(
        &mut self,
        items: &mut impl Iterator<Item = Option<&'a [u8]>>,
        group: &mut StagedGroup<'a>,
        first_index: usize,
        mut frame: impl FnMut(&'a [u8]) -> Option<Entry<'a>>,
    ) -> StageEnd<'a> {
        let n = match self.start_group(items, group, first_index, true) {
            Ok(n) => n,
            Err(end) => return end,
        };
        let format_version = self.format_version.slots(n);
        let scope_id = self.scope_id.slots(n);
        let ledger_id = self.ledger_id.slots(n);
        let entry_id = self.entry_id.slots(n);
        let last_add_confirmed = self.last_add_confirmed.slots(n);
        let length = self.length.slots(n);
        let digest_code = self.digest_type.codes.slots(n);
        for k in 0..n {
            let Some(item) = items.next() else {
                group.len = k;
                return StageEnd::Exhausted;
            };
            // Framing alone: the digests are computed for the whole group at once.
            let framed = item.and_then(&mut frame).and_then(|entry| {
                let raw = entry.as_bytes();
                let (head, rest) = raw.split_at_checked(entry.header.format.header_len())?;
                let (digest, payload) = rest.split_at_checked(entry.digest_type.len())?;
                Some((entry.header, entry.digest_type, raw, head, digest, payload))
            });
            let Some((h, digest_type, raw, head, digest, payload)) = framed else {
                group.len = k;
                return StageEnd::Item(item);
            };
            format_version[k].write(h.format.number() as i8);
            scope_id[k].write(h.scope_id);
            ledger_id[k].write(h.ledger_id);
            entry_id[k].write(h.entry_id);
            last_add_confirmed[k].write(h.last_add_confirmed);
            length[k].write(h.length);
            digest_code[k].write(digest_type.proto_value());
            group.raws[k] = raw;
            group.payloads[k] = payload;
            group.payload_bytes += payload.len();
            group.digest_types[k] = digest_type;
            if VERIFY {
                match digest.first_chunk::<4>() {
                    Some(&stored) if digest_type == DigestType::Crc32c => {
                        group.heads[k] = head;
                        group.stored_crcs[k] = u32::from_be_bytes(stored);
                    }
                    _ => group.all_crc32c = false,
                }
            }
            if group.payload_bytes >= GROUP_BYTES {
                group.len = k + 1;
                return StageEnd::Full;
            }
        }
        group.len = n;
        StageEnd::Full
    }

    /// [`stage`](Self::stage) for CRC-32C entries, verified: [`Entry::frame`]
    /// written out for that type, so every length is a constant, and the
    /// `digest_type` codes left to [`append_staged`](Self::append_staged) (all
    /// CRC-32C). `v1_crc32c` says whether a V1 entry of a ledger is CRC-32C; an
    /// entry that is not ends the group, returned for the caller to append alone.
    #[inline(always)]
    fn stage_crc32c<'a>(
        &mut self,
        items: &mut impl Iterator<Item = Option<&'a [u8]>>,
        group: &mut StagedGroup<'a>,
        first_index: usize,
        mut v1_crc32c: impl FnMut(i64) -> bool,
    ) -> StageEnd<'a> {
        const CRC_LEN: usize = DigestType::Crc32c.len();
        const V2_CRC32C_FLAGS: u8 = v2_flags(DigestType::Crc32c);
        let n = match self.start_group(items, group, first_index, false) {
            Ok(n) => n,
            Err(end) => return end,
        };
        let format_version = self.format_version.slots(n);
        let scope_id = self.scope_id.slots(n);
        let ledger_id = self.ledger_id.slots(n);
        let entry_id = self.entry_id.slots(n);
        let last_add_confirmed = self.last_add_confirmed.slots(n);
        let length = self.length.slots(n);
        for k in 0..n {
            let Some(item) = items.next() else {
                group.len = k;
                return StageEnd::Exhausted;
            };
            let framed = item.and_then(|raw| {
                // A V1 entry, or a V2 entry whose flags name CRC-32C (anything else
                // fails `Entry::frame` under this type).
                let (format, header_len) = match *raw.first()? {
                    b if EntryFormat::detect(b) == EntryFormat::V1 => (EntryFormat::V1, V1_HEADER_LEN),
                    V2_CRC32C_FLAGS => (EntryFormat::V2, V2_HEADER_LEN),
                    _ => return None,
                };
                let (head, rest) = raw.split_at_checked(header_len)?;
                let (stored, payload) = rest.split_first_chunk::<CRC_LEN>()?;
                Some((format, head, *stored, payload))
            });
            let Some((format, head, stored, payload)) = framed else {
                group.len = k;
                return StageEnd::Item(item);
            };
            // The V1 fields end the header in both formats; a V2 scope precedes them.
            let Some(fields) = head.last_chunk::<V1_HEADER_LEN>() else {
                group.len = k;
                return StageEnd::Item(item);
            };
            let ledger = be_i64(fields, 0);
            let scope = match format {
                EntryFormat::V1 if v1_crc32c(ledger) => 0,
                EntryFormat::V1 => {
                    group.len = k;
                    return StageEnd::Item(item);
                }
                EntryFormat::V2 => head.first_chunk::<9>().map_or(0, |h| be_i64(h, 1)),
            };
            format_version[k].write(format.number() as i8);
            scope_id[k].write(scope);
            ledger_id[k].write(ledger);
            entry_id[k].write(be_i64(fields, 8));
            last_add_confirmed[k].write(be_i64(fields, 16));
            length[k].write(be_i64(fields, 24));
            group.raws[k] = item.unwrap_or_default();
            group.heads[k] = head;
            group.payloads[k] = payload;
            group.payload_bytes += payload.len();
            group.stored_crcs[k] = u32::from_be_bytes(stored);
            if group.payload_bytes >= GROUP_BYTES {
                group.len = k + 1;
                return StageEnd::Full;
            }
        }
        group.len = n;
        StageEnd::Full
    }

    /// Rows the staged columns take before one of them has to grow.
    #[inline]
    fn row_room(&self) -> usize {
        self.format_version
            .room()
            .min(self.scope_id.room())
            .min(self.ledger_id.room())
            .min(self.entry_id.room())
            .min(self.last_add_confirmed.room())
            .min(self.length.room())
            .min(self.digest_type.codes.room())
    }

    /// Verifies a staged group and appends it, then empties the group. When every
    /// entry passes, the slots become rows and the payloads are appended at once;
    /// otherwise the entries are appended one by one, a bad one taking the path
    /// that says why (under `Raise`, the rows before it are appended and its error,
    /// numbered with its input index, returned).
    #[inline]
    pub(crate) fn append_staged(&mut self, resolver: &mut DigestResolver, group: &mut StagedGroup<'_>, checks: EntryChecks) -> Result<()> {
        let n = group.len;
        if n == 0 {
            return Ok(());
        }
        let mut ok = [true; GROUP_LEN];
        let all_ok = !checks.digest || group.verify(resolver, &mut ok);
        group.len = 0;
        // Expected ids are checked on the row-at-a-time path (no batch decoder asks for them).
        let ids_unchecked = checks.ledger_id.is_none() && checks.entry_id.is_none();
        if ids_unchecked && all_ok && self.payload.has_room(group.payload_bytes) {
            // SAFETY: `stage` staged these `n` entries, and nothing was appended since.
            unsafe { self.append_staged_rows(group, n, checks.digest.then_some(true)) };
            return Ok(());
        }
        self.append_staged_one_by_one(resolver, group, n, &ok, checks)
    }

    /// The slow path of [`append_staged`](Self::append_staged): a row at a time.
    #[inline(never)]
    fn append_staged_one_by_one(
        &mut self,
        resolver: &mut DigestResolver,
        group: &StagedGroup<'_>,
        n: usize,
        ok: &[bool; GROUP_LEN],
        checks: EntryChecks,
    ) -> Result<()> {
        let verdict = checks.digest.then_some(true);
        for (k, (&raw, &ok)) in group.raws.iter().zip(ok).take(n).enumerate() {
            let result = match Entry::frame(raw, Some(group.digest_type(k))) {
                Some(entry) if ok && entry.check_ids(checks.ledger_id, checks.entry_id).is_ok() => {
                    self.append_entry(&ResolvedEntry { entry, digest_ok: verdict }, None)
                }
                _ => self.decode_append_bad(resolver, raw, checks),
            };
            result.map_err(|e| numbered(e, group.first_index + k))?;
        }
        Ok(())
    }

    /// Appends a row for an entry that could not be framed: whatever header fields
    /// its bytes hold are filled in, the rest (and the payload) are null.
    /// `digest_type` is the caller's type for V1 entries, when it named one;
    /// `digest_ok` is false when the error is a digest mismatch, else null.
    pub fn append_unframed(&mut self, bytes: &[u8], error: &Error, digest_type: Option<DigestType>) {
        let (format, field_start, declared) = match bytes.first() {
            None => (None, 0, None),
            Some(&b) => match EntryFormat::detect(b) {
                EntryFormat::V1 => (Some(EntryFormat::V1), 0, None),
                EntryFormat::V2 => match parse_v2_flags(b) {
                    Ok(dt) => (Some(EntryFormat::V2), 1, Some(dt)),
                    Err(_) => (None, 0, None),
                },
            },
        };
        let field = |i: usize| format.and_then(|_| i64_at(bytes, field_start + 8 * i).ok());
        self.format_version.push_option(format.map(|f| f.number() as i8));
        self.scope_id.push_option(match format {
            Some(EntryFormat::V1) => Some(0),
            Some(EntryFormat::V2) => i64_at(bytes, 1).ok(),
            None => None,
        });
        let base = usize::from(format == Some(EntryFormat::V2));
        self.ledger_id.push_option(field(base));
        self.entry_id.push_option(field(base + 1));
        self.last_add_confirmed.push_option(field(base + 2));
        self.length.push_option(field(base + 3));
        let digest_type = declared.or(if format == Some(EntryFormat::V1) { digest_type } else { None });
        self.digest_type.push(digest_type);
        self.digest_ok.append_option((error.kind == ErrorKind::DigestMismatch).then_some(false));
        self.payload.append_null();
        self.append_error_text(Some(error));
        self.rows += 1;
    }

    /// Appends a framed entry whose row carries `error` (written only when the error
    /// column exists) though the entry itself passed its checks: a file reader found
    /// it only by repairing damaged framing around it.
    pub fn append_entry_with_error(&mut self, resolved: &ResolvedEntry<'_>, error: &str) -> Result<()> {
        self.push_entry_fields(resolved)?;
        if let Some(col) = &mut self.error {
            col.messages.push((self.rows, error.to_owned()));
        }
        self.rows += 1;
        Ok(())
    }

    /// Appends a row for something in a file that is not an entry (a journal meta
    /// record, a damaged span): the ids given, every other entry column null, and
    /// `error` (written only when the error column exists).
    pub fn append_without_entry(&mut self, ledger_id: Option<i64>, entry_id: Option<i64>, error: Option<&str>) {
        self.format_version.push_null();
        self.scope_id.push_null();
        self.ledger_id.push_option(ledger_id);
        self.entry_id.push_option(entry_id);
        self.last_add_confirmed.push_null();
        self.length.push_null();
        self.digest_type.push(None);
        self.digest_ok.append_null();
        self.payload.append_null();
        if let (Some(col), Some(error)) = (&mut self.error, error) {
            col.messages.push((self.rows, error.to_owned()));
        }
        self.rows += 1;
    }

    /// Appends a row of nulls (a null in the input, say); its error is null too.
    pub fn append_null(&mut self) {
        self.format_version.push_null();
        self.scope_id.push_null();
        self.ledger_id.push_null();
        self.entry_id.push_null();
        self.last_add_confirmed.push_null();
        self.length.push_null();
        self.digest_type.push(None);
        self.digest_ok.append_null();
        self.payload.append_null();
        self.rows += 1;
    }

    #[inline]
    fn append_error_text(&mut self, error: Option<&Error>) {
        if let (Some(col), Some(e)) = (&mut self.error, error) {
            col.messages.push((self.rows, format!("{} at byte {} of the entry", e.message(), e.offset)));
        }
    }

    /// The entry columns built so far, with their fields; the builder is left empty
    /// (and keeps its view sources) for the next batch.
    pub fn finish_columns(&mut self) -> Result<Vec<(FieldRef, ArrayRef)>> {
        let rows = self.rows;
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(self.format_version.finish()),
            Arc::new(self.scope_id.finish()),
            Arc::new(self.ledger_id.finish()),
            Arc::new(self.entry_id.finish()),
            Arc::new(self.last_add_confirmed.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.digest_type.finish()?),
            Arc::new(self.digest_ok.finish()),
        ];
        if let Some(p) = self.payload.finish()? {
            arrays.push(p);
        }
        if let Some(e) = &mut self.error {
            arrays.push(Arc::new(e.finish(rows)?));
        }
        self.rows = 0;
        Ok(self.options.fields().into_iter().zip(arrays).collect())
    }

    /// A batch of the entry columns alone.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        self.finish_with(Vec::new(), Vec::new())
    }

    /// A batch of `leading` columns, the entry columns, then `trailing` columns.
    /// Every extra column must have one value per row appended here.
    pub fn finish_with(
        &mut self,
        leading: Vec<(FieldRef, ArrayRef)>,
        trailing: Vec<(FieldRef, ArrayRef)>,
    ) -> Result<RecordBatch> {
        let rows = self.rows;
        let (fields, arrays): (Vec<FieldRef>, Vec<ArrayRef>) =
            leading.into_iter().chain(self.finish_columns()?).chain(trailing).unzip();
        if let Some((f, a)) = fields.iter().zip(&arrays).find(|(_, a)| a.len() != rows) {
            return Err(Error::invalid_argument(format!(
                "column {:?} has {} rows, the entry columns {rows}",
                f.name(),
                a.len()
            )));
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| Error::invalid_argument(format!("assembling the entry batch: {e}")))
    }
}

/// How far past an entry being verified the input is requested from memory: about
/// a memory latency's worth of reading, so the bytes arrive just before the digest
/// reaches them. Measured on 1 KiB entries streamed from memory: 8 to 16 KiB runs
/// at the memory's speed, 2 KiB or 64 KiB well below it.
const PREFETCH_AHEAD: usize = 12 * 1024;

/// Requests the bytes `PREFETCH_AHEAD` past each byte of `raw` (at most that
/// many): the entries that follow it, when the input is one buffer, as an Arrow
/// column or a file is. Elsewhere it only costs the instructions.
#[inline(always)]
fn prefetch_ahead(raw: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = raw.as_ptr().wrapping_add(PREFETCH_AHEAD);
        for offset in (0..raw.len().min(PREFETCH_AHEAD)).step_by(64) {
            // SAFETY: a prefetch is a hint: it never faults, whatever the address.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset).cast())
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = raw;
}

/// Whether an entry carries the right digest, on its own.
fn verify_one(resolver: &DigestResolver, raw: &[u8], digest_type: DigestType) -> bool {
    Entry::frame(raw, Some(digest_type)).is_some_and(|e| e.digest_matches(resolver.digester(digest_type)))
}

/// Names the input item an error came from, keeping its kind and offset.
pub(crate) fn numbered(e: Error, index: usize) -> Error {
    let detail = format!("entry {index}: {}", e.detail);
    e.with_detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digester;
    use crate::digest_policy::DigestPolicy;
    use crate::entry::{encode_entry, EntryHeader};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, Int8Type};
    use arrow_array::{Array, UInt64Array};

    fn crc32c_entry(scope: i64, ledger: i64, id: i64, payload: &[u8]) -> Vec<u8> {
        encode_entry(&EntryHeader::new(scope, ledger, id, id - 1, payload.len() as i64), payload,
            &Digester::new(DigestType::Crc32c, b"")).unwrap()
    }

    fn flag(payload: PayloadMode) -> EntryBatchOptions {
        EntryBatchOptions { payload, on_error: OnError::Flag }
    }

    #[test]
    fn columns_in_order_with_good_and_bad_rows() {
        let good = crc32c_entry(0, 3, 0, b"first payload, long enough");
        let v2 = crc32c_entry(-2, -5, 1, b"v2");
        let mut flipped = crc32c_entry(0, 3, 1, b"second");
        *flipped.last_mut().unwrap() ^= 1;
        let short = good[..12].to_vec();
        let mut b = EntryBatchBuilder::new(flag(PayloadMode::Binary), 4, 64);
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        for e in [&good, &v2, &flipped, &short] {
            b.decode_append(&mut r, e, EntryChecks::DIGEST).unwrap();
        }
        b.append_null();
        let batch = b.finish().unwrap();
        let names: Vec<_> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["format_version", "scope_id", "ledger_id", "entry_id", "last_add_confirmed",
            "length", "digest_type", "digest_ok", "payload", "error"]);
        let col = |n: &str| batch.column_by_name(n).unwrap().clone();
        let fv = col("format_version");
        assert_eq!(fv.as_primitive::<Int8Type>().iter().collect::<Vec<_>>(), [Some(1), Some(2), Some(1), Some(1), None]);
        let lid = col("ledger_id");
        assert_eq!(lid.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), [Some(3), Some(-5), Some(3), Some(3), None]);
        let eid = col("entry_id");
        assert_eq!(eid.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), [Some(0), Some(1), Some(1), None, None],
            "a 12-byte entry has a ledger id but no whole entry id");
        let scope = col("scope_id");
        assert_eq!(scope.as_primitive::<Int64Type>().value(1), -2);
        let ok = col("digest_ok");
        assert_eq!(ok.as_boolean().iter().collect::<Vec<_>>(), [Some(true), Some(true), Some(false), None, None]);
        let dt = col("digest_type");
        assert_eq!(dt.as_string::<i32>().iter().collect::<Vec<_>>(), [Some("crc32c"), Some("crc32c"), Some("crc32c"), None, None]);
        let payload = col("payload");
        let payload = payload.as_binary::<i32>();
        assert_eq!(payload.value(0), b"first payload, long enough");
        assert_eq!(payload.value(2), b"second"[..5].iter().copied().chain([b'd' ^ 1]).collect::<Vec<_>>().as_slice());
        assert!(payload.is_null(3));
        let err = col("error");
        let err = err.as_string::<i32>();
        assert!(err.is_null(0) && err.is_null(1) && err.is_null(4));
        assert!(err.value(2).starts_with("digest mismatch:") && err.value(2).ends_with("at byte 32 of the entry"), "{}", err.value(2));
        assert!(err.value(3).starts_with("truncated:"), "{}", err.value(3));
    }

    #[test]
    fn raise_mode_returns_the_error_and_appends_nothing() {
        let opts = EntryBatchOptions { payload: PayloadMode::None, on_error: OnError::Raise };
        let mut b = EntryBatchBuilder::new(opts, 1, 0);
        let mut r = DigestResolver::new(DigestPolicy::Fixed(DigestType::Crc32c), b"");
        let e = b.decode_append(&mut r, &[0u8; 10], EntryChecks::DIGEST).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated);
        let ids = EntryChecks { digest: true, ledger_id: Some(4), entry_id: None };
        let e = b.decode_append(&mut r, &crc32c_entry(0, 3, 0, b""), ids).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IdMismatch);
        assert!(b.is_empty());
        let batch = b.finish().unwrap();
        assert_eq!(batch.num_rows(), 0);
        assert_eq!(batch.num_columns(), 8, "no payload, no error column");
    }

    #[test]
    fn unframed_rows_keep_what_the_bytes_hold() {
        let mut b = EntryBatchBuilder::new(flag(PayloadMode::None), 4, 0);
        let err = Error::corrupt(0, "test");
        let mut v2 = crc32c_entry(9, 8, 7, b"");
        v2.truncate(30);
        b.append_unframed(&v2, &err, Some(DigestType::Crc32));
        b.append_unframed(&[0x90; 50], &err, Some(DigestType::Crc32));
        b.append_unframed(&[0; 40], &Error::new(ErrorKind::DigestMismatch, 32, "x"), Some(DigestType::Crc32));
        b.append_unframed(&[], &err, None);
        let batch = b.finish().unwrap();
        let i64col = |n: &str| batch.column_by_name(n).unwrap().as_primitive::<Int64Type>().iter().collect::<Vec<_>>();
        assert_eq!(i64col("scope_id"), [Some(9), None, Some(0), None]);
        assert_eq!(i64col("ledger_id"), [Some(8), None, Some(0), None]);
        assert_eq!(i64col("entry_id"), [Some(7), None, Some(0), None]);
        assert_eq!(i64col("last_add_confirmed"), [None, None, Some(0), None]);
        let dt = batch.column_by_name("digest_type").unwrap();
        assert_eq!(dt.as_string::<i32>().iter().collect::<Vec<_>>(), [Some("crc32c"), None, Some("crc32"), None],
            "a V2 entry's own type wins over the caller's");
        let ok = batch.column_by_name("digest_ok").unwrap();
        assert_eq!(ok.as_boolean().iter().collect::<Vec<_>>(), [None, None, Some(false), None]);
    }

    #[test]
    fn binary_view_payloads_equal_binary_payloads_and_share_the_input() {
        let entries: Vec<Vec<u8>> = (0..50).map(|i| crc32c_entry(0, 1, i, &vec![i as u8; i as usize])).collect();
        let mut joined = Vec::new();
        let mut bounds = Vec::new();
        for e in &entries {
            bounds.push((joined.len(), e.len()));
            joined.extend_from_slice(e);
        }
        let input = Buffer::from_vec(joined);
        let decode = |mode| {
            let mut b = EntryBatchBuilder::new(flag(mode), 50, input.len());
            b.set_view_sources(std::slice::from_ref(&input));
            let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
            for &(start, len) in &bounds {
                b.decode_append(&mut r, &input.as_slice()[start..start + len], EntryChecks::DIGEST).unwrap();
            }
            b.finish().unwrap()
        };
        let binary = decode(PayloadMode::Binary);
        let view = decode(PayloadMode::BinaryView);
        let bp = binary.column_by_name("payload").unwrap();
        let vp = view.column_by_name("payload").unwrap();
        let vp = vp.as_binary_view();
        assert!(bp.as_binary::<i32>().iter().eq(vp.iter()));
        assert_eq!(vp.data_buffers().len(), 1);
        assert_eq!(vp.data_buffers()[0].as_ptr(), input.as_ptr(), "views point into the input");
    }

    /// Entries appended together equal the same entries appended one at a time.
    #[test]
    fn passed_entries_equal_single_appends() {
        let entries: Vec<Vec<u8>> = (0..110).map(|i| crc32c_entry(i % 3, 4, i, &vec![i as u8; (i * 7 % 90) as usize])).collect();
        let framed: Vec<Entry<'_>> = entries.iter().map(|e| Entry::frame(e, Some(DigestType::Crc32c)).unwrap()).collect();
        for payload in [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None] {
            for digest_ok in [Some(true), None] {
                let mut together = EntryBatchBuilder::new(flag(payload), 0, 0);
                let mut single = EntryBatchBuilder::new(flag(payload), 0, 0);
                together.append_null();
                single.append_null();
                assert!(together.append_passed(&framed[..50], digest_ok));
                assert!(together.append_passed(&framed[50..], digest_ok));
                for entry in &framed {
                    single.append_entry(&ResolvedEntry { entry: *entry, digest_ok }, None).unwrap();
                }
                assert_eq!(together.len(), 111);
                assert_eq!(together.finish().unwrap(), single.finish().unwrap(), "{payload:?} {digest_ok:?}");
            }
        }
    }

    #[test]
    fn extra_columns_before_and_after() {
        let mut b = EntryBatchBuilder::new(flag(PayloadMode::None), 2, 0);
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        b.decode_append(&mut r, &crc32c_entry(0, 1, 0, b"x"), EntryChecks::DIGEST).unwrap();
        b.decode_append(&mut r, &crc32c_entry(0, 1, 1, b"y"), EntryChecks::DIGEST).unwrap();
        let offset: FieldRef = Arc::new(Field::new("offset", DataType::UInt64, false));
        let size: FieldRef = Arc::new(Field::new("record_size", DataType::UInt64, false));
        let batch = b
            .finish_with(
                vec![(offset.clone(), Arc::new(UInt64Array::from(vec![0u64, 40])))],
                vec![(size.clone(), Arc::new(UInt64Array::from(vec![37u64, 37])))],
            )
            .unwrap();
        let opts = b.options();
        assert_eq!(batch.schema(), opts.schema_with(std::slice::from_ref(&offset), std::slice::from_ref(&size)));
        assert_eq!(batch.schema().field(0).name(), "offset");
        assert_eq!(batch.schema().fields().last().unwrap().name(), "record_size");
        // A column of the wrong length is refused, not a panic.
        b.decode_append(&mut r, &crc32c_entry(0, 1, 2, b"z"), EntryChecks::DIGEST).unwrap();
        let e = b.finish_with(vec![(offset, Arc::new(UInt64Array::from(vec![0u64, 1])))], vec![]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
    }
}
