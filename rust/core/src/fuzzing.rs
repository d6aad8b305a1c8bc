//! Drivers that feed untrusted bytes to the decoders, shared by the fuzz targets
//! in `rust/fuzz` and by the no-panic test below, which runs on every build.
//!
//! Each driver calls every decoder of a family on the same input and checks that
//! their answers agree (a digest that matches re-encodes to the same bytes, a
//! parsed name prints back as itself). A panic anywhere is the failure they find.

use crate::digest::{DigestType, Digester};
use crate::entry::{decode_entry, decode_lac, encode_entry, encode_lac, infer_digest_type, parse_header, EntryFormat};
use crate::error::{ErrorKind, Result};
use crate::ledger_id::LedgerId;

/// Entry and LAC decoding. The first input byte picks the options: bits 0-2 the
/// digest type the caller names (1-4, anything else names none), bit 3 the HMAC
/// password. The rest is the entry.
pub fn entry_decoders(input: &[u8]) {
    let Some((&selector, bytes)) = input.split_first() else {
        return;
    };
    let requested = DigestType::from_proto_value(i64::from(selector & 7));
    let password: &[u8] = if selector & 8 != 0 { b"secret" } else { b"" };

    let header = parse_header(bytes);
    check_offset(&header, bytes);

    let decoded = decode_entry(bytes, requested);
    check_offset(&decoded, bytes);
    if let Ok(entry) = decoded {
        let h = entry.header;
        let dt = entry.digest_type;
        assert_eq!(header.as_ref().ok().map(|(h, _)| *h), Some(h));
        assert_eq!(entry.header_bytes().len(), h.format.header_len());
        assert_eq!(entry.digest().len(), dt.len());
        assert_eq!(entry.payload_offset() + entry.payload().len(), bytes.len());
        if let Some(asked) = requested {
            assert_eq!(dt, asked);
        }

        let digester = Digester::new(dt, password);
        let matches = entry.digest_matches(&digester);
        assert_eq!(entry.verify(&digester, Some(h.ledger_id), Some(h.entry_id)).is_ok(), matches);
        let other_entry = entry.verify(&digester, None, Some(h.entry_id.wrapping_add(1)));
        let expected_kind = if matches { ErrorKind::IdMismatch } else { ErrorKind::DigestMismatch };
        assert_eq!(other_entry.unwrap_err().kind, expected_kind);
        for other in DigestType::ALL.into_iter().filter(|&o| o != dt) {
            let e = entry.verify(&Digester::new(other, password), None, None).unwrap_err();
            assert_eq!(e.kind, ErrorKind::DigestTypeMismatch);
        }

        // Encoding the decoded fields gives back the input exactly when the digest matches.
        let reencoded = encode_entry(&h, entry.payload(), &digester).expect("decoded headers re-encode");
        assert_eq!(reencoded == bytes, matches);
    }

    let hmac = Digester::new(DigestType::Hmac, password);
    if let Some(inferred) = infer_digest_type(bytes, Some(&hmac)) {
        match &header {
            // A V1 entry has no declared type: the inferred one must verify.
            Ok((h, None)) if h.format == EntryFormat::V1 => {
                let entry = decode_entry(bytes, Some(inferred)).expect("an inferred digest type decodes");
                assert!(entry.digest_matches(&Digester::new(inferred, password)));
            }
            // A V2 entry's answer is what its flags byte declares, checked or not.
            Ok((_, declared)) => assert_eq!(*declared, Some(inferred)),
            Err(e) => panic!("inferred {inferred} for an entry whose header does not parse: {e}"),
        }
    }
    let _ = infer_digest_type(bytes, None);

    for dt in DigestType::ALL {
        let lac = decode_lac(bytes, dt);
        check_offset(&lac, bytes);
        if let Ok(lac) = lac {
            let digester = Digester::new(dt, password);
            let verified = lac.verify(&digester, Some(lac.ledger_id)).is_ok();
            let reencoded = encode_lac(lac.ledger_id, lac.lac, &digester);
            assert_eq!(bytes.get(..reencoded.len()) == Some(&reencoded[..]), verified);
        }
    }
}

/// Ledger id parsing: qualified names and UUID spellings (the input as text) and
/// location keys (the input as bytes).
pub fn ledger_id_parsers(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    match LedgerId::from_qualified_name(&text) {
        Ok(id) => {
            let canonical = if text.len() == 32 { id.qualified_name() } else { id.uuid_string() };
            assert_eq!(canonical, text.to_ascii_lowercase());
            assert_eq!(LedgerId::from_qualified_name(&id.qualified_name()), Ok(id));
            assert_eq!(id.to_string().parse::<LedgerId>(), Ok(id));
        }
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            assert!(e.offset as usize <= text.len(), "{e}");
        }
    }

    match LedgerId::parse_location_key(input) {
        Ok((id, entry_id)) => assert_eq!(id.location_key(entry_id).as_bytes(), input),
        Err(e) => assert_eq!(e.kind, ErrorKind::Corrupt),
    }

    if let Some(value) = input.get(..16) {
        let id = LedgerId::from_uuid_bytes(value.try_into().expect("16 bytes"));
        assert_eq!(LedgerId::from_value(id.value()), id);
        let path = id.index_path();
        assert!(path.ends_with(".idx") && path.split('/').count() == if id.scope_id == 0 { 3 } else { 5 });
    }
}

/// The entry-log and journal readers on arbitrary file bodies. The first input
/// byte picks the options: bit 0 the file kind (entry log or journal), bit 1 the
/// entry-log layout (legacy or direct), bits 2-3 the digest setting (CRC-32C,
/// inferred, CRC-32, HMAC), bit 4 verification, bit 5 small batches, bits 6-7 the
/// payload mode and error handling. A valid header goes in front of the rest, so
/// the scan reaches it. Every row must lie inside the file, in file order, and an
/// error must name an offset inside it. Returns the rows read.
pub fn file_readers(input: &[u8]) -> usize {
    use crate::arrow::{EntryBatchOptions, EntryLogBatchReader, FileReaderOptions, JournalBatchReader, OnError, PayloadMode};
    use crate::files::source::{MemorySource, ReadAt};
    use std::sync::Arc;
    use crate::digest_policy::DigestPolicy;
    use crate::files::{EntryLogWriter, JournalWriter};
    use crate::LedgerDigestSettings;
    use std::io::Cursor;

    let Some((&selector, body)) = input.split_first() else {
        return 0;
    };
    let journal = selector & 1 != 0;
    let mut file = if journal {
        JournalWriter::new(Cursor::new(Vec::new()), 6, 512, 1 << 14).and_then(|w| w.finish()).expect("an empty journal").into_inner()
    } else if selector & 2 != 0 {
        EntryLogWriter::direct(Cursor::new(Vec::new()), 1 << 16, 4096).and_then(|w| w.finish_open()).expect("an empty log").into_inner()
    } else {
        EntryLogWriter::legacy(Cursor::new(Vec::new())).and_then(|w| w.finish_open()).expect("an empty log").into_inner()
    };
    file.extend_from_slice(body);
    let policy = match (selector >> 2) & 3 {
        0 => DigestPolicy::Fixed(DigestType::Crc32c),
        1 => DigestPolicy::Auto,
        2 => DigestPolicy::Fixed(DigestType::Crc32),
        _ => DigestPolicy::Fixed(DigestType::Hmac),
    };
    let entries = EntryBatchOptions {
        payload: if selector & 0x40 != 0 { PayloadMode::BinaryView } else { PayloadMode::Binary },
        on_error: if selector & 0x80 != 0 { OnError::Raise } else { OnError::Flag },
    };
    let mut options = FileReaderOptions::new(entries, LedgerDigestSettings::new(policy, b"secret"));
    options.verify = selector & 0x10 == 0;
    if selector & 0x20 != 0 {
        options.batch_rows = 3;
        options.batch_bytes = 300;
    }
    let len = file.len() as u64;
    // Bytes in memory are scanned in place; other sources through the window, which
    // every other input exercises.
    let source: Arc<dyn ReadAt> = if input.len().is_multiple_of(2) {
        Arc::new(MemorySource::from_vec(file))
    } else {
        Arc::new(Copying(file))
    };
    let batches: Box<dyn Iterator<Item = Result<arrow_array::RecordBatch>>> = if journal {
        match JournalBatchReader::new(source, Some(1), true, None, options) {
            Ok(r) => Box::new(r),
            Err(e) => {
                assert!(e.offset <= len, "{e}");
                return 0;
            }
        }
    } else {
        match EntryLogBatchReader::new(source, Some(1), options) {
            Ok(r) => Box::new(r),
            Err(e) => {
                assert!(e.offset <= len, "{e}");
                return 0;
            }
        }
    };
    let rows = row_spans(batches, len);
    let mut next_offset = 0;
    for &Row { offset, size, .. } in &rows {
        assert!(offset as u64 >= next_offset && size >= 0, "row at {offset} ({size} bytes) after {next_offset}");
        next_offset = offset as u64 + 1;
        assert!(offset as u64 + size as u64 <= len, "row at {offset} of {size} bytes past the end ({len})");
    }
    rows.len()
}

/// The index-file reader (what `read_index` and the JVM source's index reads use) on
/// arbitrary bytes. The first input byte picks the options: bit 0 a valid header in
/// front of the rest (else the rest is the whole file), bit 1 its version, bit 2
/// absent slots included, bit 3 small batches, bit 4 the ledger id given. Rows come
/// in entry order, one per slot at most, each location split as `Location` splits it,
/// and an error names an offset inside the file. Returns the rows read.
pub fn index_files(input: &[u8]) -> usize {
    use crate::arrow::IndexBatchReader;
    use crate::files::index_file::{IndexHeader, HEADER_LEN, SLOT_LEN};
    use crate::files::source::{MemorySource, ReadAt};
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use std::sync::Arc;

    let Some((&selector, body)) = input.split_first() else {
        return 0;
    };
    let mut file = Vec::new();
    if selector & 1 != 0 {
        let header = IndexHeader { version: i32::from(selector >> 1 & 1), master_key: b"key", state_bits: 0, explicit_lac: None };
        file = header.encode().expect("a header of a short key");
    }
    file.extend_from_slice(body);
    let len = file.len() as u64;
    let source: Arc<dyn ReadAt> =
        if input.len().is_multiple_of(2) { Arc::new(MemorySource::from_vec(file)) } else { Arc::new(Copying(file)) };
    let ledger_id = (selector & 0x10 != 0).then_some(7);
    let batch_rows = if selector & 8 != 0 { 3 } else { 8192 };
    let reader = match IndexBatchReader::new(source, ledger_id, selector & 4 != 0, batch_rows) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.offset <= len, "{e}");
            return 0;
        }
    };
    let slots = len.saturating_sub(HEADER_LEN) / SLOT_LEN;
    let mut next_entry = 0i64;
    let mut rows = 0;
    for batch in batches_before_error(reader, len) {
        let column = |name: &str| batch.column_by_name(name).expect("an index column").as_primitive::<Int64Type>().clone();
        let (ledgers, entries, locations, logs, offsets) =
            (column("ledger_id"), column("entry_id"), column("location"), column("log_id"), column("offset"));
        for i in 0..batch.num_rows() {
            let entry = entries.value(i);
            assert!(entry >= next_entry && (entry as u64) < slots, "entry {entry} after {next_entry} of {slots} slots");
            next_entry = entry + 1;
            assert_eq!(ledgers.is_valid(i).then(|| ledgers.value(i)), ledger_id);
            let location = locations.is_valid(i).then(|| crate::files::Location::from_raw(locations.value(i))).flatten();
            let parts = location.and_then(|l| Some((i64::from(l.log_id), l.size_field_offset()? as i64)));
            assert_eq!(logs.is_valid(i).then(|| logs.value(i)), parts.map(|p| p.0));
            assert_eq!(offsets.is_valid(i).then(|| offsets.value(i)), parts.map(|p| p.1));
            rows += 1;
        }
    }
    rows
}

/// The batches of `batches` up to the first error, which must name an offset inside
/// the file of `len` bytes.
fn batches_before_error(
    batches: impl Iterator<Item = Result<arrow_array::RecordBatch>>,
    len: u64,
) -> impl Iterator<Item = arrow_array::RecordBatch> {
    batches.map_while(move |batch| match batch {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(e.offset <= len, "{e} (file of {len} bytes)");
            None
        }
    })
}

/// A row as the fuzz drivers compare rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    offset: i64,
    size: i64,
    ledger_id: Option<i64>,
    entry_id: Option<i64>,
}

/// The `(offset, record_size, ledger_id, entry_id)` of every row `batches` give, up
/// to the first error, which must name an offset inside the file of `len` bytes.
fn row_spans(batches: impl Iterator<Item = Result<arrow_array::RecordBatch>>, len: u64) -> Vec<Row> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    let mut rows = Vec::new();
    for batch in batches_before_error(batches, len) {
        let offsets = batch.column_by_name("offset").expect("an offset column").as_primitive::<Int64Type>();
        let sizes = batch.column_by_name("record_size").expect("a record_size column").as_primitive::<Int64Type>();
        let ledgers = batch.column_by_name("ledger_id").expect("a ledger_id column").as_primitive::<Int64Type>();
        let entries = batch.column_by_name("entry_id").expect("an entry_id column").as_primitive::<Int64Type>();
        rows.extend((0..batch.num_rows()).map(|i| Row {
            offset: offsets.value(i),
            size: sizes.value(i),
            ledger_id: ledgers.is_valid(i).then(|| ledgers.value(i)),
            entry_id: entries.is_valid(i).then(|| entries.value(i)),
        }));
    }
    rows
}

/// The entry-log and journal readers as the JVM Spark source drives them: byte
/// ranges of the file and a column projection. The first byte picks the options (bit
/// 0 the kind, bit 1 verification, bit 2 two columns rather than all, bit 3 small
/// batches, bit 4 a row filter), the next where the file is cut in two (in 1/255ths
/// of it). The two ranges read exactly the rows the whole file gives, each once (what
/// lets a Spark read split a file anywhere), a row filter builds exactly the rows it
/// admits, and errors name offsets inside the file. Returns the rows read.
pub fn ranged_readers(input: &[u8]) -> usize {
    use crate::arrow::{BatchStream, EntryBatchOptions, EntryLogBatchReader, FileReaderOptions, JournalBatchReader, OnError, PayloadMode, RowFilter};
    use crate::digest_policy::DigestPolicy;
    use crate::files::{EntryLogWriter, JournalWriter};
    use crate::LedgerDigestSettings;
    use std::io::Cursor;
    use std::sync::Arc;

    let [selector, cut, body @ ..] = input else {
        return 0;
    };
    let journal = selector & 1 != 0;
    let mut file = if journal {
        JournalWriter::new(Cursor::new(Vec::new()), 6, 512, 1 << 14).and_then(|w| w.finish()).expect("an empty journal").into_inner()
    } else {
        EntryLogWriter::legacy(Cursor::new(Vec::new())).and_then(|w| w.finish_open()).expect("an empty log").into_inner()
    };
    file.extend_from_slice(body);
    let len = file.len() as u64;
    let cut = len * u64::from(*cut) / 255;
    let file: Arc<dyn crate::files::source::ReadAt> = Arc::new(Copying(file));
    // The rows of [start, end), or None when the reader refuses.
    let read_as = |start: u64, end: u64, filter: RowFilter| -> Option<Vec<Row>> {
        let mut options = FileReaderOptions::new(
            EntryBatchOptions { payload: PayloadMode::Binary, on_error: OnError::Flag },
            LedgerDigestSettings::new(DigestPolicy::Auto, b"secret"),
        );
        options.verify = selector & 2 == 0;
        options.start = start;
        options.end = end;
        if selector & 4 != 0 {
            options.columns = Some(vec!["record_size".into(), "ledger_id".into(), "entry_id".into(), "offset".into()]);
        }
        if selector & 8 != 0 {
            options.batch_rows = 3;
            options.batch_bytes = 300;
        }
        options.rows = filter;
        let reader: Result<Box<dyn BatchStream>> = if journal {
            JournalBatchReader::new(file.clone(), Some(1), false, None, options).map(|r| Box::new(r) as Box<dyn BatchStream>)
        } else {
            EntryLogBatchReader::new(file.clone(), Some(1), options).map(|r| Box::new(r) as Box<dyn BatchStream>)
        };
        let reader = match reader {
            Ok(r) => r,
            Err(e) => {
                assert!(e.offset <= len, "{e}");
                return None;
            }
        };
        Some(row_spans(reader, len))
    };
    let read = |start: u64, end: u64| read_as(start, end, RowFilter::default());
    let Some(whole) = read(0, u64::MAX) else { return 0 };
    if selector & 16 != 0 {
        let ledgers = RowFilter { ledger_id: Some(vec![(1, 1), (5, i64::MAX)]), ..RowFilter::default() };
        let admitted: Vec<_> = whole.iter().copied().filter(|r| r.ledger_id.is_some_and(|id| id == 1 || id >= 5)).collect();
        assert_eq!(read_as(0, u64::MAX, ledgers), Some(admitted), "a ledger filter on a file of {len} bytes");
        // Entry ids and offsets (half the file) on the rows of a cut.
        let half = (len / 2) as i64;
        let rows = RowFilter { entry_id: Some(vec![(0, 2)]), offset: Some(vec![(0, half)]), ..RowFilter::default() };
        let admitted: Vec<_> = whole.iter().copied().filter(|r| r.entry_id.is_some_and(|id| (0..=2).contains(&id)) && r.offset <= half).collect();
        assert_eq!(read_as(0, u64::MAX, rows), Some(admitted), "an entry and offset filter on a file of {len} bytes");
    }
    if let (Some(mut first), Some(second)) = (read(0, cut), read(cut, u64::MAX)) {
        first.extend(second);
        assert_eq!(first, whole, "the ranges ..{cut} and {cut}.. of a file of {len} bytes");
    }
    whole.len()
}

/// Bytes served by copying, as a file is: scans read them through their window.
pub struct Copying(pub Vec<u8>);

impl crate::files::source::ReadAt for Copying {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

/// The Pulsar message decoder on arbitrary entries, and the metadata-store
/// decoders on the same bytes. The first byte picks the options: bit 0 reassembles
/// chunks, bits 1-2 what ledger 1 holds (unknown, messages, a compacted topic, a
/// cursor), bit 3 payload views, bit 4 small output batches. The rest is entries of
/// ledger 1, each `[u16 length][bytes]` (the last takes what is left). Under `Raise`
/// the decoder either reads everything (and then `Flag` gives the same rows, none
/// flagged) or names an error inside an entry (and `Flag` flags a row).
pub fn pulsar_messages(input: &[u8]) -> usize {
    use crate::arrow::{OnError, PayloadMode};
    use crate::pulsar::managed_ledger::{
        decode_managed_cursor_info, decode_managed_ledger_info, managed_cursor_info_value, managed_ledger_info_value,
    };
    use crate::pulsar::{DecoderOptions, EntryIds, LedgerOwner, MessageDecoder};
    use std::collections::HashMap;

    let Some((&selector, body)) = input.split_first() else {
        return 0;
    };
    if let Ok((info, enc)) = decode_managed_ledger_info(body) {
        managed_ledger_info_value(&info, enc);
    }
    if let Ok((info, enc)) = decode_managed_cursor_info(body) {
        managed_cursor_info_value(&info, enc);
    }
    crate::pulsar::topics::classify_znode(&String::from_utf8_lossy(body));

    let mut entries = Vec::new();
    let mut rest = body;
    while rest.len() >= 2 {
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        let end = (2 + len).min(rest.len());
        entries.push(&rest[2..end]);
        rest = &rest[end..];
    }
    let owner = match (selector >> 1) & 3 {
        0 => None,
        1 => Some("messages"),
        2 => Some("compacted"),
        _ => Some("cursor"),
    };
    let owners: HashMap<i64, LedgerOwner> =
        owner.map(|k| (1, LedgerOwner { kind: k.into(), topic: Some("persistent://t/n/x".into()) })).into_iter().collect();
    let options = |on_error| DecoderOptions {
        on_error,
        reassemble_chunks: selector & 1 != 0,
        payload: if selector & 8 != 0 { PayloadMode::BinaryView } else { PayloadMode::Binary },
        batch_rows: if selector & 16 != 0 { 3 } else { 1 << 16 },
        ..DecoderOptions::default()
    };
    let run = |on_error| -> Result<(usize, usize)> {
        let mut d = MessageDecoder::new(options(on_error), owners.clone());
        for (i, e) in entries.iter().enumerate() {
            let ids = EntryIds { scope_id: Some(0), ledger_id: Some(1), entry_id: Some(i as i64) };
            d.push_entry(i as u64, ids, Some(e), None)?;
        }
        let batches = d.finish_all()?;
        let rows = batches.iter().map(|b| b.num_rows()).sum();
        let flagged = batches
            .iter()
            .map(|b| b.column_by_name("error").map_or(0, |c| c.len() - c.null_count()))
            .sum();
        for b in &batches {
            b.column_by_name("ledger_id").expect("ids");
        }
        Ok((rows, flagged))
    };
    let (rows, flagged) = run(OnError::Flag).expect("flagging never fails");
    let longest = entries.iter().map(|e| e.len()).max().unwrap_or(0);
    match run(OnError::Raise) {
        Ok((raised_rows, _)) => {
            assert_eq!(flagged, 0, "Raise read everything, yet Flag flagged {flagged} rows");
            assert_eq!(raised_rows, rows);
        }
        Err(e) => {
            assert!(flagged > 0, "Raise failed ({e}) where Flag flagged nothing");
            assert!(e.offset as usize <= longest, "{e} (entries of at most {longest} bytes)");
        }
    }
    if !entries.is_empty() && owner != Some("cursor") {
        assert!(rows > 0 || selector & 1 != 0, "{} entries gave no row", entries.len());
    }
    rows
}

/// An error names an offset inside (or at the end of) the bytes it was given.
fn check_offset<T>(result: &Result<T>, bytes: &[u8]) {
    if let Err(e) = result {
        assert!(e.offset as usize <= bytes.len(), "{e} (input of {} bytes)", bytes.len());
    }
}

#[cfg(test)]
mod tests {
    //! The no-panic property on a deterministic corpus: random bytes, valid
    //! entries and LAC blobs of every digest type and format, and mutations of
    //! those. Cheap enough for every CI run; `rust/fuzz` searches further.

    use super::*;
    use crate::entry::EntryHeader;

    use crate::test_rng::Rng;

    /// Selector byte for [`entry_decoders`].
    fn selector(dt: Option<DigestType>, password: &[u8]) -> u8 {
        dt.map_or(0, |d| d.proto_value()) | if password.is_empty() { 0 } else { 8 }
    }

    /// Flip, truncate, extend, overwrite or splice: the damage real files show.
    fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..1 + rng.below(3) {
            match rng.below(6) {
                0 if !out.is_empty() => {
                    let i = rng.below(out.len());
                    out[i] ^= 1 << rng.below(8);
                }
                1 => out.truncate(rng.below(out.len() + 1)),
                2 => {
                    let n = rng.below(40);
                    let extra = rng.bytes(n);
                    out.extend_from_slice(&extra);
                }
                3 if !out.is_empty() => {
                    let i = rng.below(out.len());
                    out[i] = [0x00, 0x7f, 0x80, 0xa1, 0xa3, 0xff][rng.below(6)];
                }
                4 if out.len() > 8 => {
                    // An id field set to a boundary value.
                    let at = rng.below(out.len() - 8);
                    let v = [0i64, -1, i64::MIN, i64::MAX][rng.below(4)];
                    out[at..at + 8].copy_from_slice(&v.to_be_bytes());
                }
                _ => {
                    let at = rng.below(out.len() + 1);
                    let removed = rng.below(out.len() - at + 1);
                    out.drain(at..at + removed);
                }
            }
        }
        out
    }

    fn valid_entries(rng: &mut Rng) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for dt in DigestType::ALL {
            for password in [&b""[..], b"secret"] {
                let digester = Digester::new(dt, password);
                for (scope, ledger) in [(0, 0), (0, 1), (0, i64::MAX), (7, -3), (-1, -1), (i64::MIN, 5)] {
                    for payload_len in [0, 1, 7, 64, 300] {
                        let payload = rng.bytes(payload_len);
                        let header = EntryHeader::new(scope, ledger, rng.below(100) as i64 - 1, -1, payload_len as i64);
                        let mut entry = vec![selector(Some(dt), password)];
                        entry.extend(encode_entry(&header, &payload, &digester).unwrap());
                        out.push(entry);
                    }
                }
                let mut lac = vec![selector(Some(dt), password)];
                lac.extend(encode_lac(rng.next() as i64, rng.next() as i64, &digester));
                out.push(lac);
            }
        }
        out
    }

    #[test]
    fn entry_decoders_never_panic() {
        let mut rng = Rng(0x5EED_0001);
        let valid = valid_entries(&mut rng);
        for input in &valid {
            entry_decoders(input);
            // The same bytes under every other option as well.
            for sel in 0..16u8 {
                let mut other = input.clone();
                other[0] = sel;
                entry_decoders(&other);
            }
        }
        for _ in 0..150 {
            for input in &valid {
                entry_decoders(&mutate(&mut rng, input));
            }
        }
        for _ in 0..20_000 {
            let len = rng.below(120);
            let mut input = rng.bytes(len);
            if len > 1 && rng.below(2) == 0 {
                // Plausible first bytes: V1 (bit 7 clear) or V2 flags.
                input[1] = [0x00, 0xa1, 0xa2, 0xa3, 0xa4, 0x80, 0xff][rng.below(7)];
            }
            entry_decoders(&input);
        }
    }

    #[test]
    fn entry_oracle_holds_on_valid_input() {
        // The driver's agreement checks must not be vacuous: valid entries verify
        // and re-encode; the checks above would fail on a mismatch.
        let digester = Digester::new(DigestType::Crc32c, b"");
        let bytes = encode_entry(&EntryHeader::new(0, 1, 0, -1, 5), b"hello", &digester).unwrap();
        let e = decode_entry(&bytes, Some(DigestType::Crc32c)).unwrap();
        assert!(e.digest_matches(&digester));
        assert_eq!(encode_entry(&e.header, e.payload(), &digester).unwrap(), bytes);
        assert_eq!(infer_digest_type(&bytes, None), Some(DigestType::Crc32c));
    }

    /// Entry logs and journals of valid entries (every digest type, some damaged),
    /// as file bodies for [`file_readers`].
    fn valid_file_bodies(rng: &mut Rng) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for _ in 0..12 {
            let mut body = Vec::new();
            for i in 0..rng.below(30) as i64 {
                let dt = [DigestType::Crc32c, DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac][rng.below(4)];
                let size = [0, 5, 64, 700][rng.below(4)];
                let payload = rng.bytes(size);
                let header = EntryHeader::new(0, 1 + rng.below(3) as i64, i, i - 1, payload.len() as i64);
                let entry = encode_entry(&header, &payload, &Digester::new(dt, b"secret")).unwrap();
                body.extend_from_slice(&(entry.len() as i32).to_be_bytes());
                body.extend_from_slice(&entry);
            }
            out.push(body);
        }
        out
    }

    #[test]
    fn index_readers_never_panic() {
        use crate::files::index_file::{encode_index_file, IndexHeader};
        use crate::files::Location;
        let mut rng = Rng(0x5EED_0007);
        let header = IndexHeader { version: 1, master_key: b"key", state_bits: 1, explicit_lac: None };
        let mut files = Vec::new();
        for _ in 0..8 {
            let mut entries = Vec::new();
            for e in 0..rng.below(2000) as u64 {
                if rng.below(3) != 0 {
                    entries.push((e, Location::new(1 + rng.below(5) as u32, 1024 + 4 + rng.below(1 << 20) as u64).unwrap()));
                }
            }
            files.push(encode_index_file(&header, &entries).unwrap());
        }
        let mut rows = 0;
        for file in &files {
            for selector in (0..32u8).filter(|s| s & 1 == 0) {
                let mut input = vec![selector];
                input.extend_from_slice(file);
                rows += index_files(&input);
                input[0] = rng.next() as u8 & !1;
                input.splice(1.., mutate(&mut rng, file));
                index_files(&input);
            }
        }
        assert!(rows > 10_000, "{rows} rows: the reader must reach the slots");
        for _ in 0..2000 {
            let len = rng.below(2100);
            index_files(&rng.bytes(len));
        }
    }

    #[test]
    fn file_readers_never_panic() {
        let mut rng = Rng(0x5EED_0003);
        let bodies = valid_file_bodies(&mut rng);
        let mut rows = 0;
        for body in &bodies {
            for selector in 0..=255u8 {
                let mut input = vec![selector];
                input.extend_from_slice(body);
                rows += file_readers(&input);
            }
        }
        assert!(rows > 20_000, "{rows} rows: the readers must reach the bodies");
        for _ in 0..40 {
            for body in &bodies {
                let mut input = vec![rng.next() as u8];
                input.extend(mutate(&mut rng, body));
                file_readers(&input);
            }
        }
        for _ in 0..2000 {
            let len = rng.below(300);
            file_readers(&rng.bytes(len));
        }
    }

    #[test]
    fn ranges_of_a_file_tile_its_rows() {
        let mut rng = Rng(0x5EED_0029);
        let bodies = valid_file_bodies(&mut rng);
        let mut rows = 0;
        for body in &bodies {
            for selector in 0..32u8 {
                for cut in [0u8, 1, 37, 100, 180, 254, 255] {
                    let mut input = vec![selector, cut];
                    input.extend_from_slice(body);
                    rows += ranged_readers(&input);
                }
            }
        }
        assert!(rows > 5_000, "{rows} rows: the readers must reach the bodies");
        for _ in 0..40 {
            for body in &bodies {
                let mut input = vec![rng.next() as u8, rng.next() as u8];
                input.extend(mutate(&mut rng, body));
                ranged_readers(&input);
            }
        }
    }

    /// Pulsar entries of every shape (see `pulsar::testing`), as [`pulsar_messages`] inputs.
    fn pulsar_corpus(rng: &mut Rng) -> Vec<Vec<u8>> {
        use crate::pulsar::proto::{BrokerEntryMetadata, EncryptionKeys};
        use crate::pulsar::testing::{batch, compress, compressed, entry, metadata, property, single};
        let mut entries: Vec<Vec<u8>> = Vec::new();
        for codec in 0..=4 {
            for n in [1usize, 3, 20] {
                let messages: Vec<_> = (0..n)
                    .map(|i| {
                        let len = rng.below(60);
                        (single(i as u64), rng.bytes(len))
                    })
                    .collect();
                let raw = batch(&messages);
                let mut md = compressed(metadata("p", 0, 1), codec, raw.len());
                md.num_messages_in_batch = Some(n as i32);
                let broker = BrokerEntryMetadata { broker_timestamp: Some(5), index: Some(100) };
                entries.push(entry(&md, &compress(codec, &raw), rng.below(2) == 0, (n > 1).then_some(&broker)));
            }
            let mut md = compressed(metadata("p", 0, 1), codec, 50);
            md.properties = vec![property("k", "v")];
            entries.push(entry(&md, &compress(codec, &rng.bytes(50)), true, None));
        }
        let mut enc = metadata("p", 0, 1);
        enc.encryption_keys = vec![EncryptionKeys { key: Some(b"k".to_vec()), value: Some(vec![1]), metadata: vec![] }];
        entries.push(entry(&enc, &rng.bytes(40), true, None));
        for id in 0..3 {
            let mut md = metadata("p", 9, 1);
            md.uuid = Some(b"p-9".to_vec());
            md.chunk_id = Some(id);
            md.num_chunks_from_msg = Some(3);
            md.total_chunk_msg_size = Some(30);
            entries.push(entry(&md, &rng.bytes(10), true, None));
        }
        // Inputs of one to four entries each, some as a compacted ledger's records.
        let mut out = Vec::new();
        for _ in 0..60 {
            let mut input = vec![rng.next() as u8];
            for _ in 0..1 + rng.below(4) {
                let mut e = entries[rng.below(entries.len())].clone();
                if input[0] & 6 == 4 {
                    let id = [0x08, 0x01, 0x10, 0x02];
                    let mut record = (id.len() as u32).to_be_bytes().to_vec();
                    record.extend_from_slice(&id);
                    record.extend_from_slice(&(e.len() as u32).to_be_bytes());
                    record.extend_from_slice(&e);
                    e = record;
                }
                input.extend_from_slice(&(e.len() as u16).to_be_bytes());
                input.extend_from_slice(&e);
            }
            out.push(input);
        }
        out
    }

    #[test]
    fn pulsar_messages_never_panic() {
        let mut rng = Rng(0x5EED_0004);
        let corpus = pulsar_corpus(&mut rng);
        let rows: usize = corpus.iter().map(|input| pulsar_messages(input)).sum();
        assert!(rows > 300, "{rows} rows: the decoder must reach the entries");
        for _ in 0..60 {
            for input in &corpus {
                pulsar_messages(&mutate(&mut rng, input));
            }
        }
        for _ in 0..3000 {
            let len = rng.below(200);
            pulsar_messages(&rng.bytes(len));
        }
    }

    #[test]
    fn ledger_id_parsers_never_panic() {
        let mut rng = Rng(0x5EED_0002);
        let mut seeds: Vec<Vec<u8>> = Vec::new();
        for _ in 0..50 {
            let id = LedgerId::new(rng.next() as i64, rng.next() as i64);
            seeds.push(id.qualified_name().into_bytes());
            seeds.push(id.qualified_name().to_uppercase().into_bytes());
            seeds.push(id.uuid_string().into_bytes());
            seeds.push(id.location_key(rng.next() as i64).as_bytes().to_vec());
            seeds.push(LedgerId::unscoped(rng.next() as i64).location_key(1).as_bytes().to_vec());
        }
        seeds.push("é".repeat(16).into_bytes());
        seeds.push(vec![0xff; 32]);
        for seed in &seeds {
            ledger_id_parsers(seed);
            for _ in 0..20 {
                ledger_id_parsers(&mutate(&mut rng, seed));
            }
        }
        for _ in 0..3000 {
            let len = [rng.below(40), 16, 24, 32, 36][rng.below(5)];
            ledger_id_parsers(&rng.bytes(len));
        }
    }
}
