//! The bookie-file batch readers: rows and columns, batch limits, raise and flag
//! modes, payload views into the file, journals' meta columns, index slots.

use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use std::sync::Arc;

use arrow_buffer::Buffer;
use bkcodec_core::arrow::{
    ArrowBatchReader, BatchStream, EntryBatchOptions, EntryLogBatchReader, FileReaderOptions, IndexBatchReader, JournalBatchReader,
    OnError, PayloadMode, RowFilter,
};
use bkcodec_core::files::{MemorySource, ReadAt};
use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_entry, encode_lac, EntryHeader};
use bkcodec_core::files::index_file::encode_index_file;
use bkcodec_core::files::{EntryLogWriter, IndexHeader, JournalWriter, Location};
use bkcodec_core::{DigestPolicy, ErrorKind, LedgerDigestInfo, LedgerDigestSettings};

fn entry(ledger: i64, id: i64, dt: DigestType, pw: &[u8], payload: &[u8]) -> Vec<u8> {
    encode_entry(&EntryHeader::new(0, ledger, id, id - 1, payload.len() as i64), payload, &Digester::new(dt, pw)).unwrap()
}

/// A rolled legacy log of `n` entries of two ledgers; the entries' offsets.
fn sample_log(n: i64) -> (Vec<u8>, Vec<u64>) {
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    let mut offsets = Vec::new();
    for i in 0..n {
        let dt = if i % 2 == 0 { DigestType::Crc32c } else { DigestType::Crc32 };
        let payload = vec![(i % 200) as u8; (i % 50) as usize * 20];
        offsets.push(w.add_entry(&entry(i % 2, i / 2, dt, b"", &payload)).unwrap() - 4);
    }
    (w.finish_rolled().unwrap().into_inner(), offsets)
}

fn options(payload: PayloadMode, on_error: OnError) -> FileReaderOptions {
    FileReaderOptions::new(EntryBatchOptions { payload, on_error }, LedgerDigestSettings::default())
}

fn file(bytes: Vec<u8>) -> Arc<dyn ReadAt> {
    Arc::new(MemorySource::from_vec(bytes))
}

fn i64s(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    batch.column_by_name(name).unwrap().as_primitive::<Int64Type>().iter().collect()
}

fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    batch.column_by_name(name).unwrap().as_string::<i32>().iter().map(|s| s.map(str::to_string)).collect()
}

#[test]
fn entry_log_rows_in_batches() {
    let (bytes, offsets) = sample_log(100);
    let mut opts = options(PayloadMode::Binary, OnError::Flag);
    opts.batch_rows = 30;
    let reader = EntryLogBatchReader::new(file(bytes), Some(9), opts).unwrap();
    let schema = BatchStream::schema(&reader);
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [30, 30, 30, 10]);
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(&names[..4], ["log_id", "offset", "location", "record_size"]);
    assert_eq!(names[names.len() - 2..], ["error", "error_kind"]);
    let got: Vec<i64> = batches.iter().flat_map(|b| i64s(b, "offset")).map(Option::unwrap).collect();
    assert_eq!(got, offsets.iter().map(|&o| o as i64).collect::<Vec<_>>());
    let first = &batches[0];
    assert_eq!(i64s(first, "log_id")[0], Some(9));
    assert_eq!(i64s(first, "location")[1], Some(Location::new(9, offsets[1] + 4).unwrap().to_raw()));
    assert_eq!(first.column_by_name("error").unwrap().null_count(), 30);
    assert!(first.column_by_name("digest_ok").unwrap().as_boolean().iter().all(|v| v == Some(true)));
}

#[test]
fn a_column_projection_builds_only_those_columns_with_the_same_rows() {
    let (mut bytes, _) = sample_log(100);
    // A flipped payload byte: the projected read flags the same row.
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    let all: Vec<RecordBatch> =
        EntryLogBatchReader::new(file(bytes.clone()), Some(9), options(PayloadMode::Binary, OnError::Flag)).unwrap().map(|b| b.unwrap()).collect();
    let mut opts = options(PayloadMode::Binary, OnError::Flag);
    opts.columns = Some(vec!["error".into(), "ledger_id".into(), "offset".into()]);
    let reader = EntryLogBatchReader::new(file(bytes), Some(9), opts).unwrap();
    let names: Vec<String> = BatchStream::schema(&reader).fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["offset", "ledger_id", "error"]); // the reader's order
    let some: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    for name in ["offset", "ledger_id"] {
        let full: Vec<Option<i64>> = all.iter().flat_map(|b| i64s(b, name)).collect();
        let projected: Vec<Option<i64>> = some.iter().flat_map(|b| i64s(b, name)).collect();
        assert_eq!(full, projected);
    }
    let full: Vec<Option<String>> = all.iter().flat_map(|b| strings(b, "error")).collect();
    let projected: Vec<Option<String>> = some.iter().flat_map(|b| strings(b, "error")).collect();
    assert_eq!(full, projected);
    assert!(projected.iter().any(Option::is_some));
}

#[test]
fn batches_end_at_the_byte_budget() {
    let (bytes, _) = sample_log(100);
    let mut opts = options(PayloadMode::None, OnError::Raise);
    opts.batch_bytes = 5000;
    let sizes: Vec<usize> =
        EntryLogBatchReader::new(file(bytes), None, opts).unwrap().map(|b| b.unwrap().num_rows()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 100);
    assert!(sizes.len() > 5, "{sizes:?}");
}

#[test]
fn raise_delivers_the_good_rows_then_the_error() {
    let (mut bytes, offsets) = sample_log(20);
    // Flip a payload byte of entry 12 (which has a payload).
    let at = offsets[12] as usize + 4 + 40;
    bytes[at] ^= 1;
    let mut reader = EntryLogBatchReader::new(file(bytes.clone()), Some(1), options(PayloadMode::Binary, OnError::Raise)).unwrap();
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 12);
    let err = reader.next().unwrap().unwrap_err();
    assert_eq!(err.kind, ErrorKind::DigestMismatch);
    assert_eq!(err.offset, offsets[12] + 4 + 32, "the entry's digest, as a file offset");
    assert!(reader.next().is_none());

    let flagged = EntryLogBatchReader::new(file(bytes), Some(1), options(PayloadMode::Binary, OnError::Flag))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(flagged.num_rows(), 20);
    let errors = strings(&flagged, "error");
    assert!(errors[12].as_deref().unwrap().starts_with("digest mismatch"));
    assert_eq!(errors.iter().filter(|e| e.is_some()).count(), 1);
}

#[test]
fn damage_rows_and_arrow_errors() {
    let (bytes, offsets) = sample_log(10);
    let cut = offsets[9] as usize + 30;
    let torn = bytes[..cut].to_vec();
    let batch = EntryLogBatchReader::new(file(torn.clone()), None, options(PayloadMode::None, OnError::Flag))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    // The torn record, then (the log was rolled, its header places the map past the
    // cut) the missing tail.
    assert_eq!(batch.num_rows(), 11);
    assert_eq!(i64s(&batch, "offset")[9], Some(offsets[9] as i64));
    assert_eq!(i64s(&batch, "record_size")[9], Some((cut - offsets[9] as usize) as i64));
    assert_eq!(i64s(&batch, "location")[9], None);
    assert!(strings(&batch, "error")[9].as_deref().unwrap().starts_with("torn_record:"));
    assert_eq!(i64s(&batch, "offset")[10], Some(cut as i64));
    let truncated = strings(&batch, "error")[10].clone().unwrap();
    assert!(truncated.starts_with("truncated: the header places the ledgers map at byte"), "{truncated}");
    assert!(truncated.ends_with(&format!("the file ends at byte {cut}")), "{truncated}");
    // Through arrow-rs's reader trait the error is an external error holding ours.
    let reader = EntryLogBatchReader::new(file(torn), None, options(PayloadMode::None, OnError::Raise)).unwrap();
    let mut arrow = ArrowBatchReader(Box::new(reader));
    assert_eq!(arrow.schema().field(0).name(), "log_id");
    assert_eq!(arrow.next().unwrap().unwrap().num_rows(), 9);
    let err = arrow.next().unwrap().unwrap_err();
    assert!(err.to_string().contains(&format!("at byte {}", offsets[9])), "{err}");
}

/// A record of a legacy log overwritten with 0xF0, size field included: a flagged
/// row at its offset (a legacy log has no padding), and every other entry read.
#[test]
fn legacy_record_overwritten_with_fill_bytes_is_flagged() {
    let (mut bytes, offsets) = sample_log(20);
    let (at, end) = (offsets[7] as usize, offsets[8] as usize);
    bytes[at..end].fill(0xF0);
    let batch = EntryLogBatchReader::new(file(bytes.clone()), Some(3), options(PayloadMode::Binary, OnError::Flag))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(batch.num_rows(), 20);
    assert_eq!(i64s(&batch, "offset"), offsets.iter().map(|&o| Some(o as i64)).collect::<Vec<_>>());
    assert_eq!(i64s(&batch, "record_size")[7], Some((end - at) as i64));
    assert_eq!(i64s(&batch, "location")[7], None);
    let errors = strings(&batch, "error");
    assert!(errors[7].as_deref().unwrap().starts_with("bad_size:"), "{:?}", errors[7]);
    assert_eq!(errors.iter().filter(|e| e.is_some()).count(), 1);

    let mut reader = EntryLogBatchReader::new(file(bytes), Some(3), options(PayloadMode::Binary, OnError::Raise)).unwrap();
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 7);
    let err = reader.next().unwrap().unwrap_err();
    assert_eq!(err.offset, at as u64);
    assert!(err.to_string().contains(&format!("at byte {at}")), "{err}");
}

/// A damaged header is the first row, and the entries after it are read; under
/// `raise` it is the error. An empty file is a torn header.
#[test]
fn damaged_header_is_a_row_and_the_log_is_read_on() {
    let mut bytes = sample_log(3).0;
    bytes[0] = b'X';
    let batch = EntryLogBatchReader::new(file(bytes.clone()), None, options(PayloadMode::None, OnError::Flag))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(strings(&batch, "error_kind"), [Some("bad_header".to_string()), None, None, None]);
    assert_eq!(i64s(&batch, "record_size")[0], Some(1024));
    let mut raising = EntryLogBatchReader::new(file(bytes), None, options(PayloadMode::None, OnError::Raise)).unwrap();
    let err = raising.next().unwrap().unwrap_err();
    assert_eq!((err.kind, err.offset), (ErrorKind::Corrupt, 0));
    assert!(err.detail.starts_with("bad_header"), "{err}");
    let empty: Vec<RecordBatch> = EntryLogBatchReader::new(file(Vec::new()), None, options(PayloadMode::None, OnError::Flag))
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(strings(&empty[0], "error_kind"), [Some("torn_header".to_string())]);
    let err = EntryLogBatchReader::new(file(sample_log(1).0), Some(1 << 32), options(PayloadMode::None, OnError::Flag))
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
}

#[test]
fn payload_views_point_into_the_file() {
    let (bytes, _) = sample_log(40);
    let source = Buffer::from_vec(bytes);
    let ptr = source.as_ptr() as usize..source.as_ptr() as usize + source.len();
    let batch = EntryLogBatchReader::new(Arc::new(MemorySource::new(source.clone())), None, options(PayloadMode::BinaryView, OnError::Flag))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let view = batch.column_by_name("payload").unwrap().as_binary_view();
    assert_eq!(view.data_buffers().len(), 1);
    assert!(ptr.contains(&(view.data_buffers()[0].as_ptr() as usize)));
    assert_eq!(view.value(39), vec![39u8; 39 * 20].as_slice());
}

#[test]
fn ledgers_settings_verify_dummy_and_hmac() {
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    w.add_entry(&entry(1, 0, DigestType::Dummy, b"", b"dummy payload")).unwrap();
    w.add_entry(&entry(2, 0, DigestType::Hmac, b"pw", b"hmac payload")).unwrap();
    let bytes = w.finish_rolled().unwrap().into_inner();
    let read = |digests: LedgerDigestSettings| {
        let opts = FileReaderOptions::new(EntryBatchOptions { payload: PayloadMode::None, on_error: OnError::Flag }, digests);
        EntryLogBatchReader::new(file(bytes.clone()), None, opts).unwrap().next().unwrap().unwrap()
    };
    // Without settings, each ledger's length chain tells its type: DUMMY verifies
    // as DigestManager's DUMMY does, HMAC without its password is unchecked.
    let auto = read(LedgerDigestSettings::default());
    assert_eq!(auto.column_by_name("error").unwrap().null_count(), 2);
    assert_eq!(strings(&auto, "digest_type"), [Some("dummy".to_string()), Some("hmac".to_string())]);
    let ok = auto.column_by_name("digest_ok").unwrap().as_boolean();
    assert!(ok.value(0) && ok.is_null(1));
    let told = read(
        LedgerDigestSettings::new(DigestPolicy::Auto, b"")
            .with_ledger(1, LedgerDigestInfo { digest_type: Some(DigestType::Dummy), password: Vec::new() })
            .with_ledger(2, LedgerDigestInfo { digest_type: Some(DigestType::Hmac), password: b"pw".to_vec() }),
    );
    assert_eq!(told.column_by_name("error").unwrap().null_count(), 2);
    assert_eq!(strings(&told, "digest_type"), [Some("dummy".to_string()), Some("hmac".to_string())]);
}

#[test]
fn journal_rows_with_meta_columns() {
    let mut w = JournalWriter::new(Cursor::new(Vec::new()), 6, 512, 0).unwrap();
    w.add_ledger_key(4, &[7u8; 20]).unwrap();
    w.add_entry(&entry(4, 0, DigestType::Crc32c, b"", b"payload")).unwrap();
    w.flush().unwrap();
    let lac = encode_lac(4, 0, &Digester::new(DigestType::Crc32c, b""));
    w.add_explicit_lac(4, &lac).unwrap();
    w.add_fence(4).unwrap();
    w.flush().unwrap();
    let mut bytes = w.finish().unwrap().into_inner();
    let read = |bytes: Vec<u8>, padding: bool| {
        let mut reader = JournalBatchReader::new(file(bytes), Some(77), padding, None, options(PayloadMode::Binary, OnError::Flag)).unwrap();
        let batch = reader.next().unwrap().unwrap();
        assert!(reader.next().is_none(), "one batch");
        batch
    };
    let batch = read(bytes.clone(), false);
    assert_eq!(
        strings(&batch, "record_type"),
        ["ledger_key", "entry", "explicit_lac", "fence"].map(|s| Some(s.to_string()))
    );
    assert_eq!(i64s(&batch, "entry_id"), [Some(-4096), Some(0), Some(-32768), Some(-8192)]);
    assert_eq!(i64s(&batch, "journal_id"), [Some(77); 4]);
    assert_eq!(i64s(&batch, "explicit_lac"), [None, None, Some(0), None]);
    let keys = batch.column_by_name("master_key").unwrap().as_binary::<i32>();
    assert_eq!(keys.value(0), &[7u8; 20]);
    assert!(keys.is_null(1));
    let blobs = batch.column_by_name("explicit_lac_blob").unwrap().as_binary::<i32>();
    assert_eq!(blobs.value(2), lac.as_slice());
    let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names[names.len() - 2..], ["error", "error_kind"]);
    assert_eq!(names[names.len() - 5..names.len() - 2], ["master_key", "explicit_lac", "explicit_lac_blob"]);
    let with_padding = read(bytes.clone(), true);
    assert_eq!(strings(&with_padding, "record_type").iter().filter(|t| t.as_deref() == Some("padding")).count(), 2);
    // Torn inside the fence record: a damage row.
    let fence = i64s(&batch, "offset")[3].unwrap() as usize;
    bytes.truncate(fence + 10);
    let torn = read(bytes, false);
    assert_eq!(strings(&torn, "record_type").last().unwrap().as_deref(), Some("damage"));
}

#[test]
fn index_rows_present_and_absent() {
    let header = IndexHeader { version: 1, master_key: b"k", state_bits: 0, explicit_lac: None };
    let a = Location::new(1, 1028).unwrap();
    let b = Location::new(2, 4100).unwrap();
    let bytes = encode_index_file(&header, &[(0, a), (5, b)]).unwrap();
    let present: Vec<RecordBatch> =
        IndexBatchReader::new(file(bytes.clone()), Some(3), false, 1).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(present.len(), 2);
    assert_eq!(i64s(&present[1], "entry_id"), [Some(5)]);
    assert_eq!(i64s(&present[1], "log_id"), [Some(2)]);
    // The size field's offset, as the entry-log reader reports it: 4 bytes before
    // the entry the location points at.
    assert_eq!(i64s(&present[1], "offset"), [Some(4096)]);
    assert_eq!(i64s(&present[1], "location"), [Some(b.to_raw())]);
    let all: Vec<RecordBatch> = IndexBatchReader::new(file(bytes), None, true, 5000).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all[0].num_rows(), 1024);
    assert_eq!(i64s(&all[0], "location")[..3], [Some(a.to_raw()), None, None]);
    assert_eq!(all[0].column_by_name("ledger_id").unwrap().null_count(), 1024);
    assert!(IndexBatchReader::new(file(b"BKLX".to_vec()), None, false, 10).is_err());
}

/// The rows of `batches` whose ledger id `keep` admits, one `(column, row)` slice each.
fn rows_where(batches: &[RecordBatch], keep: impl Fn(Option<i64>) -> bool) -> Vec<Vec<arrow_data::ArrayData>> {
    let mut rows = Vec::new();
    for b in batches {
        for (i, id) in i64s(b, "ledger_id").into_iter().enumerate() {
            if keep(id) {
                rows.push(b.columns().iter().map(|c| c.slice(i, 1).to_data()).collect());
            }
        }
    }
    rows
}

#[test]
fn a_row_filter_builds_exactly_the_rows_a_filter_after_the_read_keeps() {
    // Ledger 3's entries, then a long stretch of ledgers 4 and 5 only (whole batches
    // with no row of ledger 3), then ledger 3 again; a damaged entry of each, and a
    // damaged size field (a row with no ledger id).
    let mut w = EntryLogWriter::legacy(Cursor::new(Vec::new())).unwrap();
    let mut offsets = Vec::new();
    for i in 0..300i64 {
        let ledger = if (60..240).contains(&i) { 4 + i % 2 } else { 3 };
        offsets.push(w.add_entry(&entry(ledger, i, DigestType::Crc32c, b"", &[i as u8; 40])).unwrap() - 4);
    }
    let mut bytes = w.finish_rolled().unwrap().into_inner();
    for i in [10usize, 100] {
        bytes[offsets[i] as usize + 4 + 32 + 4 + 7] ^= 1; // a payload byte
    }
    bytes[offsets[150] as usize] = 0x7f; // a size field
    for payload in [PayloadMode::Binary, PayloadMode::BinaryView] {
        let read_with = |rows: RowFilter| -> Vec<RecordBatch> {
            let mut opts = options(payload, OnError::Flag);
            (opts.batch_rows, opts.batch_bytes) = (16, 2000);
            opts.rows = rows;
            EntryLogBatchReader::new(file(bytes.clone()), Some(2), opts).unwrap().map(|b| b.unwrap()).collect()
        };
        let read = |ledgers: Option<Vec<(i64, i64)>>| read_with(RowFilter { ledger_id: ledgers, ..RowFilter::default() });
        let all = read(None);
        let errors: Vec<Option<String>> = all.iter().flat_map(|b| strings(b, "error")).flatten().map(Some).collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
        let filtered = read(Some(vec![(3, 3)]));
        assert!(filtered.iter().all(|b| b.num_rows() > 0));
        let want = rows_where(&all, |id| id == Some(3));
        assert_eq!(want.len(), 120);
        assert_eq!(rows_where(&filtered, |_| true), want, "{payload:?}");
        // Two ranges; no row of a ledger no range admits, nor of damage.
        let two = read(Some(vec![(0, 3), (5, 9)]));
        assert_eq!(rows_where(&two, |_| true), rows_where(&all, |id| matches!(id, Some(3) | Some(5))));
        assert!(read(Some(vec![(7, 9)])).is_empty());
        // Entry ids and offsets, with a ledger: every test must pass.
        let cut = offsets[200] as i64;
        let rows = RowFilter { ledger_id: Some(vec![(3, 4)]), entry_id: Some(vec![(50, 250)]), offset: Some(vec![(0, cut)]), ..RowFilter::default() };
        let want = rows_where(&all, |_| true).into_iter().zip(all.iter().flat_map(|b| {
            let (l, e, o) = (i64s(b, "ledger_id"), i64s(b, "entry_id"), i64s(b, "offset"));
            (0..b.num_rows()).map(move |i| (l[i], e[i], o[i]))
        }));
        let want: Vec<_> = want
            .filter(|(_, (l, e, o))| l.is_some_and(|l| (3..=4).contains(&l)) && e.is_some_and(|e| (50..=250).contains(&e)) && o.is_some_and(|o| o <= cut))
            .map(|(row, _)| row)
            .collect();
        assert!(!want.is_empty());
        assert_eq!(rows_where(&read_with(rows), |_| true), want, "{payload:?}");
    }
}
