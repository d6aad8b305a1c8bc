//! Files over 4 GiB: offsets stay 64-bit (a sparse file, so nothing is written in between).

use std::io::{Seek, SeekFrom, Write};

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::{encode_entry, EntryHeader};
use bkcodec_core::files::entry_log::EntryLogItem;
use bkcodec_core::files::{ByteSource, EntryLog, GapKind, ScanOptions};

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
    let src = ByteSource::open(&path).unwrap();
    assert!(src.len() > 1 << 32);
    let log = EntryLog::new(src.bytes());
    let opts = ScanOptions::new();
    // A range starting past 4 GiB finds the entries there.
    let late: Vec<_> = log
        .scan_range(&opts, 4 << 30, u64::MAX)
        .filter_map(|it| match it {
            EntryLogItem::Entry(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(late.iter().map(|e| e.header.entry_id).collect::<Vec<_>>(), vec![3, 4, 5]);
    assert_eq!(late[0].offset, far);
    // A location cannot hold an offset past 4 GiB; reading by offset still works.
    assert!(late[0].location(1).is_none());
    assert_eq!(log.entry_at(far + 4).unwrap(), late[0].bytes);
    // The whole file: the zeros between are one gap, every entry is found.
    let items: Vec<_> = log.scan(&opts).collect();
    let gaps: Vec<_> = items.iter().filter_map(|it| match it {
        EntryLogItem::Gap(g) => Some((g.offset, g.end(), g.kind)),
        _ => None,
    }).collect();
    assert_eq!(items.len(), 7);
    assert_eq!(gaps, vec![(1024 + 3 * 140, far, GapKind::Zeros)]);
    drop(src);
    std::fs::remove_file(&path).unwrap();
}
