//! Files over 4 GiB: offsets stay 64-bit, and a sparse hole of gigabytes is crossed
//! without reading it or holding it in memory.

use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use bkcodec_core::arrow::{EntryBatchOptions, EntryLogBatchReader, FileReaderOptions, OnError, PayloadMode};
use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_entry, EntryHeader};
use bkcodec_core::files::entry_log::read_entry_at;
use bkcodec_core::files::{FileSource, ReadAt};
use bkcodec_core::{DigestPolicy, LedgerDigestSettings};

fn options(start: u64) -> FileReaderOptions {
    let entries = EntryBatchOptions { payload: PayloadMode::BinaryView, on_error: OnError::Flag };
    let mut o = FileReaderOptions::new(entries, LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::Crc32c), b""));
    o.start = start;
    o
}

/// `(offset, entry id or None, error kind)` of every row.
fn rows(reader: EntryLogBatchReader) -> Vec<(u64, Option<i64>, Option<String>)> {
    let mut out = Vec::new();
    for batch in reader {
        let b = batch.unwrap();
        let offsets = b.column_by_name("offset").unwrap().as_primitive::<Int64Type>();
        let ids = b.column_by_name("entry_id").unwrap().as_primitive::<Int64Type>();
        let kinds = b.column_by_name("error_kind").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((
                offsets.value(i) as u64,
                ids.is_valid(i).then(|| ids.value(i)),
                kinds.is_valid(i).then(|| kinds.value(i).to_string()),
            ));
        }
    }
    out
}

#[test]
fn entries_past_four_gib_are_found_with_64_bit_offsets() {
    let path = std::env::temp_dir().join(format!("bkcodec-large-{}.log", std::process::id()));
    let d = Digester::new(DigestType::Crc32c, b"");
    let record = |e: i64| {
        let entry = encode_entry(&EntryHeader::new(0, 9, e, e - 1, 100 * (e + 1)), &[7u8; 100], &d).unwrap();
        let mut r = (entry.len() as i32).to_be_bytes().to_vec();
        r.extend_from_slice(&entry);
        r
    };
    let far = (4u64 << 30) + 12_345;
    {
        let mut f = std::fs::File::create(&path).unwrap();
        let mut header = vec![0u8; 1024];
        header[..4].copy_from_slice(b"BKLO");
        header[7] = 1;
        f.write_all(&header).unwrap();
        for e in 0..3 {
            f.write_all(&record(e)).unwrap();
        }
        f.seek(SeekFrom::Start(far)).unwrap();
        for e in 3..6 {
            f.write_all(&record(e)).unwrap();
        }
    }
    let source: Arc<dyn ReadAt> = Arc::new(FileSource::open(&path).unwrap());
    assert!(source.len() > 1 << 32);
    // A range starting past 4 GiB finds the entries there.
    let late = rows(EntryLogBatchReader::new(source.clone(), Some(1), options(4 << 30)).unwrap());
    assert_eq!(late.iter().map(|r| r.1.unwrap()).collect::<Vec<_>>(), vec![3, 4, 5]);
    assert_eq!(late[0].0, far);
    // Reading by offset works past 4 GiB (a location cannot hold such an offset).
    assert_eq!(read_entry_at(&*source, far + 4).unwrap(), record(3)[4..]);
    // The whole file: the zeros between are one damaged span, every entry is found,
    // and the window never held the hole.
    let mut reader = EntryLogBatchReader::new(source, Some(1), options(0)).unwrap();
    let mut all = Vec::new();
    let mut held = 0;
    while let Some(b) = reader.next() {
        held = held.max(reader.held());
        let b = b.unwrap();
        let offsets = b.column_by_name("offset").unwrap().as_primitive::<Int64Type>();
        let kinds = b.column_by_name("error_kind").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            all.push((offsets.value(i) as u64, kinds.is_valid(i).then(|| kinds.value(i).to_string())));
        }
    }
    let gaps: Vec<_> = all.iter().filter(|r| r.1.is_some()).collect();
    assert_eq!(all.len(), 7);
    assert_eq!(gaps, vec![&(1024 + 3 * 140, Some("zeros".to_string()))]);
    assert!(held < 200 << 20, "held {held} bytes");
    std::fs::remove_file(&path).unwrap();
}
