//! v2 protocol: the vectors of docs/formats.md#test-vectors, header forms, error mapping, malformed
//! frames, round trips and no-panic checks over mutated frames.

use super::*;
use crate::digest::{master_key, DigestType, Digester};
use crate::entry::{encode_entry, EntryHeader};
use crate::wire::{split_frames, DEFAULT_MAX_FRAME_SIZE};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Ledger 1, entry 0, LAC -1, length 5, "hello", CRC32C (docs/formats.md#test-vectors).
fn hello_entry() -> Vec<u8> {
    hex("0000000000000001 0000000000000000 ffffffffffffffff 0000000000000005 e3a5f74d 68656c6c6f")
}

const KEY: [u8; 20] = [0x11; 20];
const MAX: usize = DEFAULT_MAX_FRAME_SIZE;

#[test]
fn the_69_byte_add_frame() {
    let entry = hello_entry();
    let built = encode_entry(&EntryHeader::new(0, 1, 0, -1, 5), b"hello", &Digester::new(DigestType::Crc32c, b"")).unwrap();
    assert_eq!(built, entry);
    let key = master_key(b"secret");
    assert_eq!(key.to_vec(), hex("e793cbc379107648537183605cd361d3bb789a39"));
    let frame = AddRequest { version: 2, flags: 0, master_key: key, entry: &entry }.encode().unwrap();
    let mut expected = hex("00000041 02010000 e793cbc379107648537183605cd361d3bb789a39");
    expected.extend_from_slice(&entry);
    assert_eq!(frame.len(), 69);
    assert_eq!(frame, expected);
    let Request::Add(add) = decode_request(&frame, MAX).unwrap() else { panic!("not an ADD") };
    assert_eq!((add.version, add.flags, add.master_key, add.entry), (2, 0, key, &entry[..]));
    assert_eq!((add.ledger_id(), add.entry_id()), (1, 0));
}

#[test]
fn packet_headers() {
    let h = |v, op, fl| PacketHeader { version: v, op_code: op, flags: fl }.to_int().to_be_bytes();
    assert_eq!(h(2, 1, 0), [0x02, 0x01, 0x00, 0x00]);
    assert_eq!(h(2, 2, flags::DO_FENCING), [0x02, 0x02, 0x00, 0x01]);
    assert_eq!(h(2, 1, flags::RECOVERY_ADD | flags::HIGH_PRIORITY), [0x02, 0x01, 0x00, 0x06]);
    // Version 0: the int is the opcode alone, flags dropped.
    assert_eq!(h(0, 2, 0), [0, 0, 0, 2]);
    assert_eq!(PacketHeader::from_int(2), PacketHeader { version: 0, op_code: 2, flags: 0 });
    assert_eq!(PacketHeader::from_int(0x0001_0005), PacketHeader { version: 0, op_code: 5, flags: 0 });
    assert_eq!(
        PacketHeader::from_int(i32::from_be_bytes([0x80, 0x02, 0xff, 0xff])),
        PacketHeader { version: -128, op_code: 2, flags: 0xffff }
    );
    for v in [1i8, 2, 3, 127, -1, -128] {
        for op in [1i8, 7, -1] {
            for fl in [0u16, 1, 0xffff] {
                let p = PacketHeader { version: v, op_code: op, flags: fl };
                assert_eq!(PacketHeader::from_int(p.to_int()), p);
            }
        }
    }
}

#[test]
fn version_0_legacy_frames_decode() {
    let frame = hex("00000014 00000002 0000000000000007 ffffffffffffffff");
    let Request::Read(r) = decode_request(&frame, MAX).unwrap() else { panic!() };
    assert_eq!((r.version, r.flags, r.ledger_id, r.entry_id, r.master_key), (0, 0, 7, -1, None));
    assert_eq!(r.encode().unwrap(), frame);
    // Version 0 and 1 never carry the key, even when fencing (version 1 can flag it).
    let v1 = ReadRequest { version: 1, flags: flags::DO_FENCING, ledger_id: 7, entry_id: 0, master_key: None };
    assert_eq!(v1.encode().unwrap().len(), 24);
    assert_eq!(decode_request(&v1.encode().unwrap(), MAX).unwrap(), Request::Read(v1));
    let e = ReadRequest { version: 0, flags: 1, ledger_id: 7, entry_id: 0, master_key: None }.encode().unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
}

#[test]
fn bad_versions_are_ebadversion() {
    for version_byte in [0x03u8, 0x7f, 0x80, 0xff] {
        let mut frame = hex("00000014 02020000 0000000000000007 0000000000000000");
        frame[4] = version_byte;
        for e in [decode_request(&frame, MAX).unwrap_err(), decode_response(&frame, MAX).unwrap_err()] {
            assert_eq!((e.kind, e.offset), (ErrorKind::UnsupportedVersion, 4));
            assert!(e.detail.contains("EBADVERSION (103)"), "{e}");
        }
    }
    let r = ReadRequest { version: 3, flags: 0, ledger_id: 0, entry_id: 0, master_key: None };
    assert_eq!(r.encode().unwrap_err().kind, ErrorKind::InvalidArgument);
}

#[test]
fn fencing_reads_carry_the_master_key() {
    let plain = ReadRequest { version: 2, flags: 0, ledger_id: 5, entry_id: 9, master_key: None };
    let frame = plain.encode().unwrap();
    assert_eq!(frame, hex("00000014 02020000 0000000000000005 0000000000000009"));
    let fenced = ReadRequest { version: 2, flags: flags::DO_FENCING, ledger_id: 5, entry_id: 9, master_key: Some(KEY) };
    let frame = fenced.encode().unwrap();
    assert_eq!(&frame[..8], hex("00000028 02020001"));
    assert_eq!(frame.len(), 44);
    assert_eq!(decode_request(&frame, MAX).unwrap(), Request::Read(fenced.clone()));
    // A fencing read without room for its key, and a plain one with extra bytes.
    let e = decode_request(&hex("00000014 02020001 0000000000000005 0000000000000009"), MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 24));
    let mut long = plain.encode().unwrap();
    long[3] = 0x28;
    long.extend_from_slice(&KEY);
    let e = decode_request(&long, MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 24));
    // Encoding checks the key matches the flag.
    assert!(ReadRequest { master_key: None, ..fenced.clone() }.encode().is_err());
    assert!(ReadRequest { master_key: Some(KEY), ..plain }.encode().is_err());
}

#[test]
fn batch_read_layouts() {
    let req = BatchReadRequest {
        version: 2,
        flags: 0,
        ledger_id: 1,
        start_entry_id: 2,
        request_id: 3,
        max_count: 4,
        max_size: 5,
        master_key: None,
    };
    let frame = req.encode().unwrap();
    assert_eq!(
        frame,
        hex("00000028 02070000 0000000000000001 0000000000000002 0000000000000003 00000004 0000000000000005")
    );
    assert_eq!(decode_request(&frame, MAX).unwrap(), Request::BatchRead(req.clone()));
    let fenced = BatchReadRequest { flags: flags::DO_FENCING, master_key: Some(KEY), ..req };
    let frame = fenced.encode().unwrap();
    assert_eq!(frame.len(), 64);
    assert_eq!(decode_request(&frame, MAX).unwrap(), Request::BatchRead(fenced));

    let a = hello_entry();
    let resp = BatchReadResponse {
        version: 2,
        flags: 0,
        rc: rc::EOK,
        ledger_id: 1,
        start_entry_id: 0,
        request_id: 3,
        entries: vec![&a, &[], &a[..32]],
    };
    let frame = resp.encode().unwrap();
    assert_eq!(frame.len(), 4 + 32 + (4 + 41) + 4 + (4 + 32));
    assert_eq!(&frame[..8], hex("00000075 02070000"));
    assert_eq!(decode_response(&frame, MAX).unwrap(), Response::BatchRead(resp));

    // An item running past the frame, a negative one, a stray 2 bytes.
    let head = hex("02070000 00000000 0000000000000001 0000000000000000 0000000000000003");
    let with = |tail: &str| {
        let mut body = head.clone();
        body.extend(hex(tail));
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend(body);
        decode_response(&f, MAX).unwrap_err()
    };
    let e = with("00000005 0102");
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 40));
    let e = with("ffffffff");
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 36));
    let e = with("00000000 0102");
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 40));
}

#[test]
fn add_and_read_responses() {
    let add = AddResponse { version: 2, flags: 0, rc: rc::EFENCED, ledger_id: 1, entry_id: 2 };
    let frame = add.encode().unwrap();
    assert_eq!(frame, hex("00000018 02010000 00000068 0000000000000001 0000000000000002"));
    assert_eq!(decode_response(&frame, MAX).unwrap(), Response::Add(add));
    let entry = hello_entry();
    let read = ReadResponse { version: 2, flags: 0, rc: rc::EOK, ledger_id: 1, entry_id: -1, data: &entry };
    let frame = read.encode().unwrap();
    assert_eq!(frame.len(), 4 + 24 + 41);
    assert_eq!(decode_response(&frame, MAX).unwrap(), Response::Read(read));
    let err = ReadResponse { version: 2, flags: 0, rc: rc::ENOENTRY, ledger_id: 1, entry_id: 3, data: &[] };
    assert_eq!(err.encode().unwrap().len(), 28);
}

#[test]
fn auth_messages() {
    let auth = AuthMessage { version: 2, flags: 0, auth_plugin_name: "AuthDisabledPlugin".into(), payload: vec![] };
    let frame = auth.encode().unwrap();
    assert_eq!(&frame[4..8], hex("02030000"));
    assert_eq!(&frame[8..10], [0x0a, 18]);
    assert_eq!(decode_request(&frame, MAX).unwrap(), Request::Auth(auth.clone()));
    assert_eq!(decode_response(&frame, MAX).unwrap(), Response::Auth(auth));
    let e = decode_request(&hex("00000006 02030000 0a00"), MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 8));
}

#[test]
fn unknown_opcodes_and_short_frames() {
    for op in [0u8, 4, 5, 6, 8, 0x80, 0xff] {
        let frame = [0, 0, 0, 4, 2, op, 0, 0];
        for e in [decode_request(&frame, MAX).unwrap_err(), decode_response(&frame, MAX).unwrap_err()] {
            assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 4), "op {op}");
        }
    }
    let e = decode_request(&[0, 0, 0, 2, 2, 1], MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 4));
    let e = decode_request(&[0, 0, 0], MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 0));
    let e = decode_request(&hex("7fffffff 02010000"), MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 0));
    let e = decode_request(&hex("7fffffff 02010000"), usize::MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 4));
    let e = decode_request(&hex("00000004 02010000 00"), MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 8));
    // An ADD whose entry is too short for the ids the bookie reads.
    let mut short = hex("0000001c 02010000");
    short.extend_from_slice(&KEY);
    short.extend_from_slice(&[0; 4]);
    let e = decode_request(&short, MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 28));
}

#[test]
fn bp35_entries_are_refused_with_ebadreq() {
    let mut v2_entry = vec![0xa3];
    v2_entry.extend_from_slice(&7i64.to_be_bytes());
    v2_entry.extend_from_slice(&hello_entry());
    let e = AddRequest { version: 2, flags: 0, master_key: KEY, entry: &v2_entry }.encode().unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.detail.contains("EBADREQ (100)") && e.detail.contains("scope 7"), "{e}");
    let mut ok = hello_entry();
    ok[0] = 0x80;
    assert!(AddRequest { version: 2, flags: 0, master_key: KEY, entry: &ok }.encode().is_err());
    // The same bytes on the wire: decoding names the entry's first byte.
    let mut frame = ((24 + v2_entry.len()) as i32).to_be_bytes().to_vec();
    frame.extend(hex("02010000"));
    frame.extend_from_slice(&KEY);
    frame.extend_from_slice(&v2_entry);
    let e = decode_request(&frame, MAX).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 28));
    assert!(e.detail.contains("EBADREQ"), "{e}");
}

#[test]
fn return_code_mapping() {
    let pairs = [(0, 0), (1, 402), (2, 403), (100, 404), (101, 501), (102, 502), (103, 503), (104, 504), (105, 505), (106, 506), (107, 507)];
    for (v2, v3) in pairs {
        assert_eq!(v2_to_v3_status(v2), Some(v3));
        assert_eq!(v3_to_v2_status(v3), Some(v2));
    }
    assert_eq!(v2_to_v3_status(3), None);
    assert_eq!(v3_to_v2_status(404 + 1), None);
    assert_eq!(return_code_name(rc::EUA), Some("EUA"));
    assert_eq!(return_code_name(-100), None, "IllegalOpException never goes on the wire");
}

use crate::test_rng::Rng as XorShift;

fn sample_frames(rng: &mut XorShift) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let entry: Vec<u8> = {
        let mut e = hello_entry();
        e.truncate(16 + rng.below(26));
        e
    };
    let version = [0i8, 1, 2][rng.below(3)];
    let flags = if version == 0 { 0 } else { rng.below(8) as u16 };
    let key = (version == 2 && flags & flags::DO_FENCING != 0).then_some(KEY);
    let id = |r: &mut XorShift| r.next() as i64;
    let requests = vec![
        Request::Add(AddRequest { version, flags, master_key: KEY, entry: &entry }),
        Request::Read(ReadRequest { version, flags, ledger_id: id(rng), entry_id: id(rng), master_key: key }),
        Request::BatchRead(BatchReadRequest {
            version,
            flags,
            ledger_id: id(rng),
            start_entry_id: id(rng),
            request_id: id(rng),
            max_count: id(rng) as i32,
            max_size: id(rng),
            master_key: key,
        }),
        Request::Auth(AuthMessage { version, flags, auth_plugin_name: "p".into(), payload: vec![1, 2] }),
    ];
    let items: Vec<Vec<u8>> = (0..rng.below(4)).map(|i| vec![i as u8; rng.below(50)]).collect();
    let responses = vec![
        Response::Add(AddResponse { version, flags, rc: id(rng) as i32, ledger_id: id(rng), entry_id: id(rng) }),
        Response::Read(ReadResponse { version, flags, rc: 0, ledger_id: id(rng), entry_id: id(rng), data: &entry }),
        Response::BatchRead(BatchReadResponse {
            version,
            flags,
            rc: 0,
            ledger_id: id(rng),
            start_entry_id: id(rng),
            request_id: id(rng),
            entries: items.iter().map(|v| &v[..]).collect(),
        }),
    ];
    for r in &requests {
        assert_eq!(decode_request(&r.encode().unwrap(), MAX).unwrap(), *r);
    }
    for r in &responses {
        assert_eq!(decode_response(&r.encode().unwrap(), MAX).unwrap(), *r);
    }
    (
        requests.iter().map(|r| r.encode().unwrap()).collect(),
        responses.iter().map(|r| r.encode().unwrap()).collect(),
    )
}

#[test]
fn random_frames_round_trip_and_mutations_never_panic() {
    let mut rng = XorShift(7);
    let mut outcomes = [0usize; 2];
    for _ in 0..200 {
        let (requests, responses) = sample_frames(&mut rng);
        let stream: Vec<u8> = requests.concat();
        assert_eq!(split_frames(&stream, MAX).unwrap(), requests.iter().map(|f| &f[..]).collect::<Vec<_>>());
        for frame in requests.iter().chain(&responses) {
            for _ in 0..20 {
                let mut m = frame.clone();
                let i = rng.below(m.len());
                m[i] = rng.next() as u8;
                if rng.below(4) == 0 {
                    m.truncate(rng.below(m.len() + 1));
                }
                outcomes[decode_request(&m, MAX).is_ok() as usize] += 1;
                outcomes[decode_response(&m, MAX).is_ok() as usize] += 1;
                let _ = split_frames(&m, MAX);
            }
        }
    }
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
