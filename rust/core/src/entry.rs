//! Ledger entries: Entry Format V1 (what BookKeeper writes) and the BP-35 Entry Format
//! V2 as this project fixes it (docs/formats.md#ledger-entries), plus explicit-LAC blobs
//! (docs/formats.md#lac-entries).
//!
//! Decoding borrows: an [`Entry`] is the parsed header plus slices of the caller's
//! bytes, so the payload is never copied.

use std::mem::size_of;

use zerocopy::byteorder::big_endian::I64;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use crate::bytes::{i64_at, slice_at, u8_at};
use crate::digest::{DigestType, Digester};
use crate::error::{Error, ErrorKind, Result};

/// Header length of a V1 entry: ledgerId, entryId, lastAddConfirmed, length.
pub const V1_HEADER_LEN: usize = size_of::<HeaderFields>();
/// Header length of a V2 entry: flags byte, scopeId, then the V1 fields.
pub const V2_HEADER_LEN: usize = size_of::<V2Prefix>() + size_of::<HeaderFields>();
/// Header length of an explicit-LAC blob: ledgerId, lac.
pub const LAC_HEADER_LEN: usize = 16;

/// Bit 7 of the first byte marks a versioned (V2+) entry.
const VERSIONED_BIT: u8 = 0x80;
const FORMAT_V2: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryFormat {
    V1 = 1,
    V2 = 2,
}

impl EntryFormat {
    /// Detect the format from the first byte (docs/formats.md#ledger-entries): bit 7 clear is V1.
    #[inline]
    pub fn detect(first_byte: u8) -> EntryFormat {
        if first_byte & VERSIONED_BIT == 0 {
            EntryFormat::V1
        } else {
            EntryFormat::V2
        }
    }

    #[inline]
    pub const fn header_len(self) -> usize {
        match self {
            EntryFormat::V1 => V1_HEADER_LEN,
            EntryFormat::V2 => V2_HEADER_LEN,
        }
    }

    /// The version number as reported to users (1 or 2).
    #[inline]
    pub const fn number(self) -> u8 {
        self as u8
    }
}

/// The V2 flags byte for a digest type: `0x80 | 2 << 4 | proto number`.
#[inline]
pub const fn v2_flags(digest_type: DigestType) -> u8 {
    VERSIONED_BIT | (FORMAT_V2 << 4) | digest_type.proto_value()
}

/// Reads a V2 flags byte: the digest type it declares, or why it is not valid.
pub fn parse_v2_flags(flags: u8) -> Result<DigestType> {
    let version = (flags >> 4) & 0x7;
    if flags & VERSIONED_BIT == 0 || version != FORMAT_V2 {
        return Err(Error::new(
            ErrorKind::UnsupportedVersion,
            0,
            format!("entry flags byte 0x{flags:02x} names format version {version}; only 2 is known"),
        ));
    }
    DigestType::from_proto_value((flags & 0x0f) as i64).ok_or_else(|| {
        Error::corrupt(0, format!("entry flags byte 0x{flags:02x} names digest type {} (valid: 1-4)", flags & 0x0f))
    })
}

/// The fixed fields of an entry header, whichever format carried them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    pub format: EntryFormat,
    /// Most significant half of a 128-bit ledger id; always 0 in V1.
    pub scope_id: i64,
    pub ledger_id: i64,
    pub entry_id: i64,
    pub last_add_confirmed: i64,
    /// Cumulative payload length of the ledger up to and including this entry.
    pub length: i64,
}

impl EntryHeader {
    /// A header for a new entry; the format follows docs/formats.md#ledger-entries (V2 iff scope != 0).
    pub fn new(scope_id: i64, ledger_id: i64, entry_id: i64, last_add_confirmed: i64, length: i64) -> Self {
        let format = if scope_id == 0 { EntryFormat::V1 } else { EntryFormat::V2 };
        EntryHeader { format, scope_id, ledger_id, entry_id, last_add_confirmed, length }
    }
}

/// The four fields both formats end their header with, as stored (big-endian).
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct HeaderFields {
    pub ledger_id: I64,
    pub entry_id: I64,
    pub last_add_confirmed: I64,
    pub length: I64,
}

/// What a V2 header puts before those fields.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct V2Prefix {
    pub flags: u8,
    pub scope_id: I64,
}

/// The ledger and entry ids at the start of [`HeaderFields`]: all a scanner needs to
/// judge a record whose header is not complete yet.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct HeaderIds {
    pub ledger_id: I64,
    pub entry_id: I64,
}

/// An entry header read in place: the one reader of the V1/V2 header layout
/// (docs/formats.md#ledger-entries). Every parser of entries (the decoders, the file scans,
/// the batch builders) goes through it.
#[derive(Clone, Copy)]
pub struct HeaderView<'a> {
    prefix: Option<&'a V2Prefix>,
    fields: &'a HeaderFields,
}

impl std::fmt::Debug for HeaderView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_header().fmt(f)
    }
}

/// The layout a first byte announces: where the header's fields start, how long it
/// is, and for V2 the digest type its flags declare (or why they are not valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderLayout {
    V1,
    V2(DigestType),
    /// Bit 7 set but not a valid V2 flags byte.
    Invalid,
}

impl HeaderLayout {
    #[inline(always)]
    pub fn of(first_byte: u8) -> HeaderLayout {
        if first_byte & VERSIONED_BIT == 0 {
            return HeaderLayout::V1;
        }
        if (first_byte >> 4) & 0x7 != FORMAT_V2 {
            return HeaderLayout::Invalid;
        }
        match DigestType::from_proto_value((first_byte & 0x0f) as i64) {
            Some(dt) => HeaderLayout::V2(dt),
            None => HeaderLayout::Invalid,
        }
    }

    /// Offset of [`HeaderFields`] in the header.
    #[inline(always)]
    pub const fn fields_at(self) -> usize {
        match self {
            HeaderLayout::V2(_) => size_of::<V2Prefix>(),
            _ => 0,
        }
    }

    #[inline(always)]
    pub const fn header_len(self) -> usize {
        self.fields_at() + size_of::<HeaderFields>()
    }
}

impl<'a> HeaderView<'a> {
    /// The header at the start of `bytes` and the bytes after it, or `None` when
    /// the bytes are too short or the first byte is not a valid V1/V2 start. For hot
    /// loops; [`HeaderView::parse`] says what is wrong.
    #[inline(always)]
    pub fn read(bytes: &'a [u8]) -> Option<(HeaderView<'a>, &'a [u8])> {
        match HeaderLayout::of(*bytes.first()?) {
            HeaderLayout::V1 => {
                let (fields, rest) = HeaderFields::ref_from_prefix(bytes).ok()?;
                Some((HeaderView { prefix: None, fields }, rest))
            }
            HeaderLayout::V2(_) => {
                let (prefix, rest) = V2Prefix::ref_from_prefix(bytes).ok()?;
                let (fields, rest) = HeaderFields::ref_from_prefix(rest).ok()?;
                Some((HeaderView { prefix: Some(prefix), fields }, rest))
            }
            HeaderLayout::Invalid => None,
        }
    }

    /// [`HeaderView::read`] with the reason when it fails: `Truncated` (too short
    /// for the header its first byte announces), `UnsupportedVersion` (a format
    /// version other than 2) or `Corrupt` (a digest nibble outside 1-4).
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<(HeaderView<'a>, &'a [u8])> {
        if let Some(found) = HeaderView::read(bytes) {
            return Ok(found);
        }
        let first = u8_at(bytes, 0)?;
        if first & VERSIONED_BIT != 0 {
            parse_v2_flags(first)?;
        }
        let layout = HeaderLayout::of(first);
        let name = if layout == HeaderLayout::V1 { "V1" } else { "V2" };
        Err(Error::truncated(0, layout.header_len() as u64, bytes.len() as u64)
            .with_detail(format!("entry shorter than the {}-byte {name} header", layout.header_len())))
    }

    #[inline(always)]
    pub fn format(&self) -> EntryFormat {
        if self.prefix.is_some() { EntryFormat::V2 } else { EntryFormat::V1 }
    }

    /// Header length in bytes (32 or 41).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.format().header_len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The digest type a V2 header declares; V1 headers do not say.
    #[inline(always)]
    pub fn declared_digest(&self) -> Option<DigestType> {
        self.prefix.and_then(|p| match HeaderLayout::of(p.flags) {
            HeaderLayout::V2(dt) => Some(dt),
            _ => None,
        })
    }

    #[inline(always)]
    pub fn scope_id(&self) -> i64 {
        self.prefix.map_or(0, |p| p.scope_id.get())
    }

    #[inline(always)]
    pub fn ledger_id(&self) -> i64 {
        self.fields.ledger_id.get()
    }

    #[inline(always)]
    pub fn entry_id(&self) -> i64 {
        self.fields.entry_id.get()
    }

    #[inline(always)]
    pub fn last_add_confirmed(&self) -> i64 {
        self.fields.last_add_confirmed.get()
    }

    #[inline(always)]
    pub fn length(&self) -> i64 {
        self.fields.length.get()
    }

    #[inline(always)]
    pub fn to_header(&self) -> EntryHeader {
        EntryHeader {
            format: self.format(),
            scope_id: self.scope_id(),
            ledger_id: self.ledger_id(),
            entry_id: self.entry_id(),
            last_add_confirmed: self.last_add_confirmed(),
            length: self.length(),
        }
    }
}

/// A decoded entry borrowing the bytes it was parsed from.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub header: EntryHeader,
    pub digest_type: DigestType,
    raw: &'a [u8],
}

impl<'a> Entry<'a> {
    /// The whole entry as it was given.
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// The header bytes the digest covers.
    #[inline]
    pub fn header_bytes(&self) -> &'a [u8] {
        &self.raw[..self.header.format.header_len()]
    }

    #[inline]
    pub fn digest(&self) -> &'a [u8] {
        let h = self.header.format.header_len();
        &self.raw[h..h + self.digest_type.len()]
    }

    /// Offset of the payload within the entry.
    #[inline]
    pub fn payload_offset(&self) -> usize {
        self.header.format.header_len() + self.digest_type.len()
    }

    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.raw[self.payload_offset()..]
    }

    /// Frames an entry like [`decode_entry`] but builds no error: `None` exactly
    /// when `decode_entry` would fail. For hot loops, which ask `decode_entry` for
    /// the error only on the rare bad entry.
    #[inline(always)]
    pub fn frame(bytes: &'a [u8], digest_type: Option<DigestType>) -> Option<Entry<'a>> {
        let (view, rest) = HeaderView::read(bytes)?;
        let digest_type = match (view.declared_digest(), digest_type) {
            (Some(declared), Some(asked)) if declared != asked => return None,
            (Some(declared), _) => declared,
            (None, asked) => asked?,
        };
        if rest.len() < digest_type.len() {
            return None;
        }
        Some(Entry { header: view.to_header(), digest_type, raw: bytes })
    }

    /// Whether the stored digest matches. DUMMY always matches.
    #[inline]
    pub fn digest_matches(&self, digester: &Digester) -> bool {
        debug_assert_eq!(digester.digest_type(), self.digest_type);
        let computed = digester.compute(&[self.header_bytes(), self.payload()]);
        same_digest(computed.as_bytes(), self.digest())
    }

    /// BookKeeper's verification (docs/formats.md#ledger-entries): digest, then ledger id, then entry id,
    /// each id checked only when the caller gives one.
    pub fn verify(&self, digester: &Digester, ledger_id: Option<i64>, entry_id: Option<i64>) -> Result<()> {
        if digester.digest_type() != self.digest_type {
            return Err(Error::new(
                ErrorKind::DigestTypeMismatch,
                0,
                format!("entry was parsed as {}, digester is {}", self.digest_type, digester.digest_type()),
            ));
        }
        if !self.digest_matches(digester) {
            return Err(self.digest_mismatch());
        }
        self.check_ids(ledger_id, entry_id)
    }

    /// The error for a stored digest that does not match; the offset is the digest's.
    #[cold]
    pub fn digest_mismatch(&self) -> Error {
        Error::new(
            ErrorKind::DigestMismatch,
            self.header.format.header_len() as u64,
            format!("stored {} digest does not match the entry", self.digest_type),
        )
    }

    /// The id half of BookKeeper's verification: ledger id, then entry id, each
    /// checked only when the caller gives one.
    #[inline]
    pub fn check_ids(&self, ledger_id: Option<i64>, entry_id: Option<i64>) -> Result<()> {
        match (ledger_id, entry_id) {
            (Some(l), _) if l != self.header.ledger_id => Err(self.id_mismatch(0, "ledger", self.header.ledger_id, l)),
            (_, Some(e)) if e != self.header.entry_id => Err(self.id_mismatch(8, "entry", self.header.entry_id, e)),
            _ => Ok(()),
        }
    }

    #[cold]
    fn id_mismatch(&self, field_offset: u64, what: &str, found: i64, expected: i64) -> Error {
        let id_offset = (self.header.format.header_len() - V1_HEADER_LEN) as u64;
        Error::new(
            ErrorKind::IdMismatch,
            id_offset + field_offset,
            format!("{what} id {found} where {expected} was expected"),
        )
    }
}

/// Byte equality of two digests, without a `memcmp` call for the common widths
/// (a call costs more than the compare for 4 or 8 bytes).
#[inline(always)]
fn same_digest(a: &[u8], b: &[u8]) -> bool {
    if let (Ok(x), Ok(y)) = (<[u8; 4]>::try_from(a), <[u8; 4]>::try_from(b)) {
        return x == y;
    }
    if let (Ok(x), Ok(y)) = (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        return x == y;
    }
    a == b
}

/// Reads the header fields only (no digest type needed). For V2, also returns the
/// digest type the flags byte declares.
#[inline(always)]
pub fn parse_header(bytes: &[u8]) -> Result<(EntryHeader, Option<DigestType>)> {
    let (view, _) = HeaderView::parse(bytes)?;
    Ok((view.to_header(), view.declared_digest()))
}

/// Frames an entry: header, digest and payload boundaries. Does not verify.
///
/// `digest_type` is required for V1 (the entry does not say); for V2 it may be
/// omitted, and if given must equal the one the flags byte declares.
#[inline]
pub fn decode_entry(bytes: &[u8], digest_type: Option<DigestType>) -> Result<Entry<'_>> {
    let (header, declared) = parse_header(bytes)?;
    let digest_type = match (declared, digest_type) {
        (Some(d), Some(asked)) if d != asked => {
            return Err(Error::new(
                ErrorKind::DigestTypeMismatch,
                0,
                format!("entry declares digest type {d}, caller asked for {asked}"),
            ))
        }
        (Some(d), _) => d,
        (None, Some(asked)) => asked,
        (None, None) => {
            return Err(Error::invalid_argument(
                "a V1 entry does not record its digest type: name one, or infer it",
            ))
        }
    };
    let needed = header.format.header_len() + digest_type.len();
    if bytes.len() < needed {
        return Err(Error::truncated(header.format.header_len() as u64, digest_type.len() as u64,
            (bytes.len() - header.format.header_len()) as u64)
            .with_detail(format!("entry of {} bytes is shorter than its header and {} digest ({needed} bytes)", bytes.len(), digest_type)));
    }
    Ok(Entry { header, digest_type, raw: bytes })
}

/// Finds the digest type under which a V1 entry verifies, trying CRC32C, CRC32 and,
/// when a password is given, HMAC. V2 entries name theirs. Returns `None` when no
/// checksum verifies (the entry is damaged, or its ledger uses DUMMY).
pub fn infer_digest_type(bytes: &[u8], hmac: Option<&Digester>) -> Option<DigestType> {
    if let Ok((_, Some(declared))) = parse_header(bytes) {
        return Some(declared);
    }
    for dt in [DigestType::Crc32c, DigestType::Crc32] {
        if let Ok(e) = decode_entry(bytes, Some(dt)) {
            if e.digest_matches(&Digester::new(dt, b"")) {
                return Some(dt);
            }
        }
    }
    if let Some(d) = hmac {
        if let Ok(e) = decode_entry(bytes, Some(DigestType::Hmac)) {
            if e.digest_matches(d) {
                return Some(DigestType::Hmac);
            }
        }
    }
    None
}

/// Appends an encoded entry to `out`. The format is the header's; V1 with a
/// non-zero scope or a negative ledger id is refused, since V1 cannot carry them.
pub fn encode_entry_into(out: &mut Vec<u8>, header: &EntryHeader, payload: &[u8], digester: &Digester) -> Result<()> {
    let start = out.len();
    match header.format {
        EntryFormat::V1 => {
            if header.scope_id != 0 {
                return Err(Error::invalid_argument("a V1 entry cannot carry a non-zero scope id"));
            }
            if header.ledger_id < 0 {
                return Err(Error::invalid_argument(
                    "a V1 entry cannot carry a negative ledger id (its first byte would read as a V2 flags byte)",
                ));
            }
        }
        EntryFormat::V2 => out.push(v2_flags(digester.digest_type())),
    }
    if header.format == EntryFormat::V2 {
        out.extend_from_slice(&header.scope_id.to_be_bytes());
    }
    for v in [header.ledger_id, header.entry_id, header.last_add_confirmed, header.length] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    let digest = digester.compute(&[&out[start..], payload]);
    out.extend_from_slice(digest.as_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

pub fn encode_entry(header: &EntryHeader, payload: &[u8], digester: &Digester) -> Result<Vec<u8>> {
    let mut out =
        Vec::with_capacity(header.format.header_len() + digester.digest_type().len() + payload.len());
    encode_entry_into(&mut out, header, payload, digester)?;
    Ok(out)
}

/// An explicit-LAC blob (docs/formats.md#lac-entries): ledger id, last-add-confirmed, digest over those 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LacBlob<'a> {
    pub ledger_id: i64,
    pub lac: i64,
    pub digest_type: DigestType,
    raw: &'a [u8],
}

impl<'a> LacBlob<'a> {
    pub fn digest(&self) -> &'a [u8] {
        &self.raw[LAC_HEADER_LEN..LAC_HEADER_LEN + self.digest_type.len()]
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// `verifyDigestAndReturnLac`: digest over the first 16 bytes, then the ledger id.
    pub fn verify(&self, digester: &Digester, ledger_id: Option<i64>) -> Result<()> {
        if !digester.verify(&[&self.raw[..LAC_HEADER_LEN]], self.digest()) {
            return Err(Error::new(ErrorKind::DigestMismatch, LAC_HEADER_LEN as u64,
                format!("stored {} digest does not match the LAC blob", self.digest_type)));
        }
        if let Some(expected) = ledger_id {
            if expected != self.ledger_id {
                return Err(Error::new(ErrorKind::IdMismatch, 0,
                    format!("ledger id {} where {} was expected", self.ledger_id, expected)));
            }
        }
        Ok(())
    }
}

pub fn decode_lac(bytes: &[u8], digest_type: DigestType) -> Result<LacBlob<'_>> {
    let needed = LAC_HEADER_LEN + digest_type.len();
    slice_at(bytes, 0, needed).map_err(|e| e.with_detail(format!(
        "LAC blob of {} bytes is shorter than 16 bytes and its {} digest", bytes.len(), digest_type)))?;
    Ok(LacBlob { ledger_id: i64_at(bytes, 0)?, lac: i64_at(bytes, 8)?, digest_type, raw: bytes })
}

pub fn encode_lac(ledger_id: i64, lac: i64, digester: &Digester) -> Vec<u8> {
    let mut out = Vec::with_capacity(LAC_HEADER_LEN + digester.digest_type().len());
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&lac.to_be_bytes());
    let d = digester.compute(&[&out]);
    out.extend_from_slice(d.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    const HEADER: &str = "0000000000000001 0000000000000000 ffffffffffffffff 0000000000000005";

    #[test]
    fn spec_vectors_encode_byte_identical() {
        let h = EntryHeader::new(0, 1, 0, -1, 5);
        let cases = [
            (DigestType::Crc32, &b""[..], "0000000030a56872"),
            (DigestType::Crc32c, b"", "e3a5f74d"),
            (DigestType::Hmac, b"secret", "985ff33d73766e6ab95e91f14097a562ffc64ae8"),
            (DigestType::Hmac, b"", "00107b7f219e26462e04e16e6e7a7f41e046e090"),
            (DigestType::Dummy, b"", ""),
        ];
        for (dt, pw, digest) in cases {
            let got = encode_entry(&h, b"hello", &Digester::new(dt, pw)).unwrap();
            assert_eq!(got, unhex(&format!("{HEADER}{digest}68656c6c6f")), "{dt}");
        }
    }

    #[test]
    fn v2_round_trip_and_flags() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let h = EntryHeader::new(7, -3, 2, 1, 99);
        let bytes = encode_entry(&h, b"payload", &d).unwrap();
        assert_eq!(bytes[0], 0xA3);
        let e = decode_entry(&bytes, None).unwrap();
        assert_eq!(e.header, h);
        assert_eq!(e.payload(), b"payload");
        e.verify(&d, Some(-3), Some(2)).unwrap();
        let err = decode_entry(&bytes, Some(DigestType::Crc32)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::DigestTypeMismatch);
    }

    #[test]
    fn detection_by_bit_seven() {
        assert_eq!(EntryFormat::detect(0x7f), EntryFormat::V1);
        assert_eq!(EntryFormat::detect(0x80), EntryFormat::V2);
        let mut b = vec![0x80u8; 50];
        assert_eq!(decode_entry(&b, None).unwrap_err().kind, ErrorKind::UnsupportedVersion);
        b[0] = 0xA0;
        assert_eq!(decode_entry(&b, None).unwrap_err().kind, ErrorKind::Corrupt);
        b[0] = 0xA5;
        assert_eq!(decode_entry(&b, None).unwrap_err().kind, ErrorKind::Corrupt);
    }

    #[test]
    fn short_entries_are_truncated() {
        for n in [0usize, 1, 31, 35] {
            let b = vec![0u8; n];
            let e = decode_entry(&b, Some(DigestType::Crc32c)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Truncated, "{n}");
        }
    }

    /// `Entry::frame` is `decode_entry` without the error: same answer on any bytes.
    #[test]
    fn frame_agrees_with_decode_entry() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let types = [None, Some(DigestType::Crc32), Some(DigestType::Hmac), Some(DigestType::Crc32c), Some(DigestType::Dummy)];
        for first in 0..=255u8 {
            for len in [0usize, 1, 8, 31, 32, 35, 36, 40, 41, 44, 45, 49, 52, 60, 61, 70] {
                let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if let Some(b) = bytes.first_mut() {
                    *b = first;
                }
                for dt in types {
                    let framed = Entry::frame(&bytes, dt);
                    match decode_entry(&bytes, dt) {
                        Ok(e) => {
                            let f = framed.expect("frame refused what decode_entry accepts");
                            assert_eq!((f.header, f.digest_type, f.payload()), (e.header, e.digest_type, e.payload()));
                        }
                        Err(_) => assert!(framed.is_none(), "first {first:#x} len {len} {dt:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn lac_vectors() {
        let cases = [
            (DigestType::Crc32c, &b""[..], "b64e4ca2"),
            (DigestType::Crc32, b"", "00000000fbc05f16"),
            (DigestType::Hmac, b"secret", "cf212213f695a43077f9fe40f50e4d562960b577"),
        ];
        for (dt, pw, digest) in cases {
            let d = Digester::new(dt, pw);
            let blob = encode_lac(1, 0, &d);
            assert_eq!(blob, unhex(&format!("0000000000000001 0000000000000000 {digest}")));
            let l = decode_lac(&blob, dt).unwrap();
            assert_eq!((l.ledger_id, l.lac), (1, 0));
            l.verify(&d, Some(1)).unwrap();
        }
    }
}
