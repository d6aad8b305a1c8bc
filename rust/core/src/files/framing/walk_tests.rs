//! The walk's own terms (what the segmentation does not decide): an entry taken
//! that gives back the records it swallowed, a real header against a view of it a
//! few bytes off, padding as a direct log's writer leaves it, and the clean end
//! that preallocated journal space gives.

use std::io::Cursor;

use crate::digest::{DigestType, Digester};
use crate::entry::{encode_entry, EntryHeader};
use crate::files::entry_log::EntryLogWriter;
use crate::files::framing::test_files::{entry, ledger_entries, legacy_log, read, read_journal, read_range};
use crate::files::framing::PADDING_BLOCK;
use crate::files::journal::JournalWriter;

/// Sets the size field at `at` to run to `end`, over the records between.
fn size_to(data: &mut [u8], at: usize, end: usize) {
    data[at..at + 4].copy_from_slice(&((end - at - 4) as i32).to_be_bytes());
}

fn items(offsets: &[usize], what: &[&str]) -> Vec<(usize, String)> {
    offsets.iter().zip(what).map(|(&o, w)| (o, w.to_string())).collect()
}

/// A log of ledger 7's entries 0 (300 bytes of payload) to 3 (60 each), with as
/// many bytes cut from inside entry 0 as entry 1's record holds: entry 0's size
/// field, intact, now runs over entry 1 to entry 2. The records' offsets after.
fn cut_inside_first(digester: &Digester) -> (Vec<u8>, Vec<usize>) {
    let entry = |id: i64, length: i64, payload: &[u8]| encode_entry(&EntryHeader::new(0, 7, id, id - 1, length), payload, digester).unwrap();
    let mut es = vec![entry(0, 300, &[1; 300])];
    es.extend((1..4).map(|i| entry(i, 300 + 60 * i, &[i as u8 + 1; 60])));
    let (mut data, at) = legacy_log(&es);
    let k = at[2] - at[1];
    data.drain(at[0] + 100..at[0] + 100 + k);
    (data, vec![at[0], at[1] - k, at[2] - k, at[3] - k])
}

#[test]
fn an_entry_whose_digest_fails_gives_back_the_records_inside_it() {
    // Entry 0, taken whole, passes every framing test; its digest fails, and
    // entry 1 inside it frames to its end: the span splits there.
    let (data, at) = cut_inside_first(&Digester::new(DigestType::Crc32c, b""));
    assert_eq!(read(&data), items(&at, &["bad_size", "entry", "entry", "entry"]));
}

#[test]
fn an_unchecked_entry_gives_back_only_a_record_the_next_one_follows_by_length() {
    // HMAC entries read without their password: entry 0's length chain holds, and
    // its digest cannot be checked. But entry 2 after it misses its predecessor,
    // which entry 1 inside is by the length chain: entry 0 gives it back.
    let (data, at) = cut_inside_first(&Digester::new(DigestType::Hmac, b"unknown"));
    assert_eq!(read(&data), items(&at, &["bad_size", "entry", "entry", "entry"]));
    // Entries 5 and 6 (no entry of the ledger before them, so no length chain
    // either), then another ledger's entry 0: nothing says entry 5 is not one long
    // entry whose payload happens to frame like a record. It stays whole.
    let mut es = ledger_entries(7, 7, 60, DigestType::Dummy).split_off(5);
    es.push(entry(8, 0, -1, 60, &[9; 60], DigestType::Dummy));
    let (mut data, at) = legacy_log(&es);
    size_to(&mut data, at[0], at[2]);
    assert_eq!(read(&data), vec![(at[0], "entry".to_string()), (at[2], "entry".to_string())]);
}

/// A direct log of two flushes of three entries each, and the entries' offsets.
fn direct_log() -> (Vec<u8>, Vec<usize>) {
    let mut w = EntryLogWriter::direct(Cursor::new(Vec::new()), 64 * 1024, 1 << 20).unwrap();
    let mut at = vec![];
    for (i, e) in ledger_entries(9, 6, 300, DigestType::Crc32c).iter().enumerate() {
        at.push(w.add_entry(e).unwrap() as usize - 4);
        if i == 2 {
            w.flush().unwrap();
        }
    }
    (w.finish_open().unwrap().into_inner(), at)
}

#[test]
fn fill_is_padding_from_a_record_end_exactly_to_the_next_4kib_boundary() {
    let (data, at) = direct_log();
    let got = read(&data);
    let pad = at[2] + 340;
    assert_eq!(at[3], 2 * PADDING_BLOCK);
    assert_eq!(got[3], (pad, "padding".to_string()), "{got:?}");
    assert_eq!(got[4], (at[3], "entry".to_string()), "{got:?}");
    // Fill that runs on past the boundary (over the next size field) is damage,
    // not padding; the entries after it are kept.
    let mut damaged = data.clone();
    damaged[at[3]..at[3] + 4].fill(0xF0);
    let got = read(&damaged);
    assert!(!got.contains(&(pad, "padding".to_string())), "{got:?}");
    assert!(got.iter().any(|(o, k)| *o >= pad && *o <= at[3] && k != "entry" && k != "padding"), "{got:?}");
    assert!(got.contains(&(at[4], "entry".to_string())) && got.contains(&(at[5], "entry".to_string())), "{got:?}");
}

#[test]
fn preallocated_zeros_with_a_flawed_byte_per_block_end_the_chain_cleanly() {
    // A journal's last entry, after damage, is found again only if what follows it
    // ends the chain: zeros to the end do, and so do zeros where bits rotted, one
    // flawed byte in a 4 KiB block.
    let mut w = JournalWriter::new(Cursor::new(Vec::new()), 5, 512, 64 * 1024).unwrap();
    let at: Vec<usize> = ledger_entries(11, 5, 200, DigestType::Dummy).iter().map(|e| w.add_entry(e).unwrap() as usize).collect();
    let mut data = w.finish().unwrap().into_inner();
    data[at[3]..at[3] + 4].copy_from_slice(&0x7F00_0000i32.to_be_bytes());
    let tail = at[4] + 236;
    for block in (tail + 100..data.len()).step_by(PADDING_BLOCK) {
        data[block] = 0x40;
    }
    let got = read_journal(&data);
    assert!(got.contains(&(at[4], "entry".to_string())), "{got:?}");
    // Every flawed byte is reported, not read as zeros.
    let after: Vec<_> = got.iter().filter(|(o, _)| *o >= tail).collect();
    assert!(!after.is_empty() && after.iter().all(|(_, k)| k != "entry"), "{got:?}");
}

#[test]
fn an_entry_is_not_lost_to_a_view_inside_its_header() {
    // Bytes inside a header (the high half of a V1 ledger id; a V2 scope id and the
    // ledger id's zero high byte) read as a size that frames a record ending exactly
    // where the entry ends. With no digest to tell them apart (DUMMY), the entry
    // wins: ranges starting anywhere around it read as the whole file does, and
    // after a damaged size field the walk resynchronises on the entry, not the view.
    for (scope, ledger, size) in [(0, (0x58 << 32) | 1, 60usize), (3, 1, 10 + 256 * 3 - 41)] {
        let es: Vec<Vec<u8>> = (0..6)
            .map(|i| encode_entry(&EntryHeader::new(scope, ledger, i, i - 1, size as i64 * (i + 1)), &vec![0; size], &Digester::new(DigestType::Dummy, b"")).unwrap())
            .collect();
        let (mut data, at) = legacy_log(&es);
        let whole = read(&data);
        assert_eq!(whole, items(&at, &["entry"; 6]), "scope {scope}");
        for start in at[2] as u64 - 8..at[2] as u64 + 5 {
            let mut tiled = read_range(&data, 0, start);
            tiled.extend(read_range(&data, start, u64::MAX));
            assert_eq!(tiled, whole, "scope {scope}, ranges split at {start}");
        }
        data[at[1]..at[1] + 4].copy_from_slice(&(es[1].len() as i32 + 1).to_be_bytes());
        let got = read(&data);
        assert!(at[2..].iter().all(|&a| got.contains(&(a, "entry".to_string()))), "scope {scope}: {got:?}");
    }
}

#[test]
fn a_v2_entry_is_not_lost_to_a_v1_view_just_before_it() {
    // A journal whose magic is damaged reads from byte 0: a V1 view three bytes
    // before its first record (V2, small ids) looks plausible, and the V2 flags
    // byte is the stronger evidence.
    let mut w = JournalWriter::new(Cursor::new(Vec::new()), 4, 512, 0).unwrap();
    let at: Vec<usize> = (0..4)
        .map(|i| {
            let e = encode_entry(&EntryHeader::new(3, 1, i, i - 1, 700 * (i + 1)), &[0; 700], &Digester::new(DigestType::Dummy, b"")).unwrap();
            w.add_entry(&e).unwrap() as usize
        })
        .collect();
    let mut data = w.finish().unwrap().into_inner();
    data[..4].copy_from_slice(b"\x7c\xf8\xaa\xad");
    let got = read_journal(&data);
    assert!(matches!(got[0].1.as_str(), "bad_header" | "bad_size"), "{got:?}");
    let entries: Vec<usize> = got[1..].iter().filter(|(_, k)| k == "entry").map(|(o, _)| *o).collect();
    assert_eq!(entries, at, "{got:?}");
}
