//! Ledger metadata: golden agreement, the spec's vectors, edge cases, round trips
//! and no-panic checks over mutated inputs.

use std::path::PathBuf;

use super::*;
use crate::error::ErrorKind;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn ids(names: &[&str]) -> Vec<BookieId> {
    names.iter().map(|n| BookieId::parse(n).unwrap()).collect()
}

/// The corpus directory; its tests are ignored without it (see build.rs).
fn golden_dir() -> PathBuf {
    let dir = std::env::var_os("BKCODEC_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden"));
    assert!(dir.join("metadata").is_dir(), "golden corpus expected at {} (set BKCODEC_GOLDEN)", dir.display());
    dir
}

/// The format 3 vector (docs/formats.md#test-vectors), as `TestLedgerMetadataSerDe` has it.
fn spec_v3_vector() -> Vec<u8> {
    let mut v = b"BookieMetadataFormatVersion\t3\n".to_vec();
    v.extend(hex("60 0802 1003 1800 20ffffffffffffffffff01 2801 3232"));
    for b in ["192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181"] {
        v.extend([0x0a, 0x0e]);
        v.extend_from_slice(b.as_bytes());
    }
    v.extend(hex("1000 3803 4206"));
    v.extend_from_slice(b"foobar");
    v.extend(hex("4801 50ffffffffffffffffff01 6000"));
    v
}

fn spec_v3_metadata() -> LedgerMetadata {
    LedgerMetadata {
        format_version: 3,
        ensemble_size: 3,
        write_quorum_size: 2,
        ack_quorum_size: 1,
        state: LedgerState::Open,
        last_entry_id: -1,
        length: 0,
        ensembles: vec![Ensemble {
            first_entry_id: 0,
            bookies: ids(&["192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181"]),
        }],
        digest_type: Some(DigestType::Crc32c),
        password: Some(b"foobar".to_vec()),
        ctime: Some(-1),
        custom_metadata: vec![],
        ctoken: 0,
    }
}

#[test]
fn spec_format_3_vector_decodes_and_encodes_byte_for_byte() {
    let bytes = spec_v3_vector();
    assert_eq!(bytes.len(), 30 + 1 + 0x60);
    assert_eq!(decode_ledger_metadata(&bytes).unwrap(), spec_v3_metadata());
    assert_eq!(encode_ledger_metadata(&spec_v3_metadata(), 3).unwrap(), bytes);
}

const SPEC_V2_TEXT: &str = "BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\nlength: 0\nlastEntryId: -1\n\
state: IN_RECOVERY\nsegment {\n  ensembleMember: \"192.0.2.1:1234\"\n  ensembleMember: \"192.0.2.2:1234\"\n  \
ensembleMember: \"192.0.2.3:1234\"\n  firstEntryId: 0\n}\ndigestType: CRC32\npassword: \"passwd\"\n\
ackQuorumSize: 2\nctime: 1544002383075\n";

#[test]
fn spec_format_2_vector_round_trips() {
    let md = decode_ledger_metadata(SPEC_V2_TEXT.as_bytes()).unwrap();
    assert_eq!(md.format_version, 2);
    assert_eq!(md.state, LedgerState::InRecovery);
    assert_eq!((md.write_quorum_size, md.ack_quorum_size, md.ensemble_size), (2, 2, 3));
    assert_eq!(md.digest_type, Some(DigestType::Crc32));
    assert_eq!(md.password.as_deref(), Some(&b"passwd"[..]));
    assert_eq!(md.ctime, Some(1544002383075));
    assert_eq!(md.ensembles[0].bookies[2].as_str(), "192.0.2.3:1234");
    assert_eq!(encode_ledger_metadata(&md, 2).unwrap(), SPEC_V2_TEXT.as_bytes());
}

// ---------------------------------------------------------------- golden corpus

fn json_i64(v: &serde_json::Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an i64: {v}"))
}

fn unhex(s: &str) -> Vec<u8> {
    hex(s)
}

fn check_parsed(md: &LedgerMetadata, p: &serde_json::Value, name: &str) {
    assert_eq!(md.format_version as i64, json_i64(&p["metadata_format_version"]), "{name}");
    assert_eq!(md.ensemble_size as i64, json_i64(&p["ensemble_size"]), "{name}");
    assert_eq!(md.write_quorum_size as i64, json_i64(&p["write_quorum_size"]), "{name}");
    assert_eq!(md.ack_quorum_size as i64, json_i64(&p["ack_quorum_size"]), "{name}");
    assert_eq!(md.state.name(), p["state"].as_str().unwrap(), "{name}");
    assert_eq!(md.last_entry_id, json_i64(&p["last_entry_id"]), "{name}");
    assert_eq!(md.length, json_i64(&p["length"]), "{name}");
    // The corpus spells HMAC as the Java API does, "MAC".
    let dt = md.digest_type.map(|d| if d == DigestType::Hmac { "MAC".to_string() } else { d.name().to_uppercase() });
    assert_eq!(dt.as_deref(), p["digest_type"].as_str(), "{name}");
    assert_eq!(md.password.is_some(), p["has_password"].as_bool().unwrap(), "{name}");
    assert_eq!(md.password.clone().unwrap_or_default(), unhex(p["password_hex"].as_str().unwrap()), "{name}");
    // Parsed without a store ctime: -1 when the data has none.
    assert_eq!(md.ctime.unwrap_or(-1), json_i64(&p["ctime"]), "{name}");
    assert_eq!(md.ctoken, json_i64(&p["ctoken"]), "{name}");
    let custom = p["custom_metadata_hex"].as_object().unwrap();
    assert_eq!(md.custom_metadata.len(), custom.len(), "{name}");
    for (k, v) in &md.custom_metadata {
        assert_eq!(*v, unhex(custom[k].as_str().unwrap()), "{name} {k}");
    }
    let ens = p["ensembles"].as_array().unwrap();
    assert_eq!(md.ensembles.len(), ens.len(), "{name}");
    for (e, j) in md.ensembles.iter().zip(ens) {
        assert_eq!(e.first_entry_id, json_i64(&j["first_entry_id"]), "{name}");
        let bookies: Vec<&str> = j["bookies"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
        assert_eq!(e.bookies.iter().map(|b| b.as_str()).collect::<Vec<_>>(), bookies, "{name}");
    }
}

fn golden_rows(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("metadata/metadata.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn golden_metadata_agrees_field_by_field_and_byte_for_byte() {
    let dir = golden_dir();
    let rows = golden_rows(&dir);
    let mut checked = (0, 0, 0);
    for row in &rows {
        let name = row["name"].as_str().unwrap();
        let data = std::fs::read(dir.join("metadata").join(row["file"].as_str().unwrap())).unwrap();
        if row.get("parse_error").is_some() {
            let e = decode_ledger_metadata(&data).unwrap_err();
            let java = row["parse_error"].as_str().unwrap();
            match name {
                "bad_version_4" => assert_eq!(e.kind, ErrorKind::UnsupportedVersion, "{java}"),
                _ => {
                    assert!(matches!(e.kind, ErrorKind::Corrupt | ErrorKind::Truncated), "{name}: {e}");
                    assert_eq!(e.offset, 0, "{name}: Java says {java}");
                }
            }
            checked.2 += 1;
            continue;
        }
        let md = decode_ledger_metadata(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_parsed(&md, &row["parsed"], name);
        checked.0 += 1;
        if row["reserialize_identical"].as_bool() == Some(true) {
            let again = encode_ledger_metadata(&md, md.format_version).unwrap();
            assert_eq!(again, data, "{name}: re-encoding differs");
            checked.1 += 1;
        }
    }
    assert_eq!(checked, (15, 15, 3));
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn golden_inputs_encode_like_java() {
    // The `input` of each row, built here and serialized, gives the golden bytes
    // (Java's serializer drops what the format cannot hold, as ours does).
    let dir = golden_dir();
    for row in golden_rows(&dir).iter().filter(|r| r.get("input").is_some()) {
        let name = row["name"].as_str().unwrap();
        let i = &row["input"];
        let version = json_i64(&i["metadata_format_version"]) as u8;
        let state = LedgerState::from_name(i["state"].as_str().unwrap()).unwrap();
        let md = LedgerMetadata {
            format_version: version,
            ensemble_size: json_i64(&i["ensemble_size"]) as i32,
            write_quorum_size: json_i64(&i["write_quorum_size"]) as i32,
            ack_quorum_size: json_i64(&i["ack_quorum_size"]) as i32,
            state,
            last_entry_id: if state == LedgerState::Closed { json_i64(&i["last_entry_id"]) } else { -1 },
            length: if state == LedgerState::Closed { json_i64(&i["length"]) } else { 0 },
            ensembles: i["ensembles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| Ensemble {
                    first_entry_id: json_i64(&e["first_entry_id"]),
                    bookies: e["bookies"].as_array().unwrap().iter().map(|b| BookieId::parse(b.as_str().unwrap()).unwrap()).collect(),
                })
                .collect(),
            digest_type: Some(DigestType::from_name(i["digest_type"].as_str().unwrap()).unwrap()),
            password: Some(unhex(i["password_hex"].as_str().unwrap())),
            ctime: Some(json_i64(&i["ctime"])).filter(|&c| c != -1),
            custom_metadata: {
                // Java iterates its map; for these two keys that is alphabetical.
                let mut kv: Vec<(String, Vec<u8>)> = i["custom_metadata_hex"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), unhex(v.as_str().unwrap())))
                    .collect();
                kv.sort();
                kv
            },
            ctoken: json_i64(&i["ctoken"]),
        };
        let data = std::fs::read(dir.join("metadata").join(row["file"].as_str().unwrap())).unwrap();
        assert_eq!(encode_ledger_metadata(&md, version).unwrap(), data, "{name}");
    }
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn mutated_golden_inputs_never_panic() {
    let dir = golden_dir();
    let mut inputs = vec![spec_v3_vector(), SPEC_V2_TEXT.as_bytes().to_vec()];
    for row in golden_rows(&dir) {
        inputs.push(std::fs::read(dir.join("metadata").join(row["file"].as_str().unwrap())).unwrap());
    }
    let mut rng = XorShift(0x9e3779b97f4a7c15);
    let mut outcomes = [0usize; 2];
    for input in &inputs {
        for cut in 0..input.len() {
            outcomes[decode_ledger_metadata(&input[..cut]).is_ok() as usize] += 1;
        }
        for pos in 0..input.len() {
            for value in [0x00, 0xff, 0x80, b'\n', b'\t', b'"', b'\\', b'{', b'}', b'-', b'9', rng.byte(), rng.byte()] {
                let mut m = input.clone();
                m[pos] = value;
                outcomes[decode_ledger_metadata(&m).is_ok() as usize] += 1;
            }
        }
        for _ in 0..200 {
            let mut m = input.clone();
            for _ in 0..1 + rng.below(4) {
                match rng.below(3) {
                    0 if !m.is_empty() => {
                        let i = rng.below(m.len());
                        m.remove(i);
                    }
                    1 => {
                        let i = rng.below(m.len() + 1);
                        m.insert(i, rng.byte());
                    }
                    _ if !m.is_empty() => {
                        let i = rng.below(m.len());
                        m[i] ^= 1 << rng.below(8);
                    }
                    _ => {}
                }
            }
            outcomes[decode_ledger_metadata(&m).is_ok() as usize] += 1;
        }
    }
    // Both outcomes occur: the mutations reach past the header.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

// ---------------------------------------------------------------- header

#[test]
fn header_edge_cases() {
    let with = |version: &str| {
        let mut v = format!("BookieMetadataFormatVersion\t{version}\n").into_bytes();
        v.extend_from_slice(&spec_v3_vector()[30..]);
        decode_ledger_metadata(&v)
    };
    assert!(with("3").is_ok());
    assert!(with("+3").is_ok(), "Integer.parseInt takes a plus sign");
    // Nine version bytes still fit; with ten, Java's loop stops before the newline.
    assert!(with("000000003").is_ok());
    let e = with("0000000003").unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 28));
    assert_eq!(with("00000000003").unwrap_err().kind, ErrorKind::Corrupt);
    for v in ["4", "0", "-1", "999999999"] {
        let e = with(v).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::UnsupportedVersion, 28), "{v}");
    }
    for v in ["", "x", "3 ", "99999999999"] {
        assert_eq!(with(v).unwrap_err().kind, ErrorKind::Corrupt, "{v:?}");
    }
    let e = decode_ledger_metadata(b"BookieMetadataFormatVersion 3\n").unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 27));
    let e = decode_ledger_metadata(b"BookieMeta").unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 10));
    let e = decode_ledger_metadata(b"BookieMetadataFormatVersion\t3").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Corrupt);
}

// ---------------------------------------------------------------- format 3 semantics

fn v3(fmt: &LedgerMetadataFormat) -> Vec<u8> {
    let mut out = b"BookieMetadataFormatVersion\t3\n".to_vec();
    proto::encode_delimited(fmt, &mut out);
    out
}

fn base_format() -> LedgerMetadataFormat {
    LedgerMetadataFormat::from_metadata(&spec_v3_metadata(), true).unwrap()
}

#[test]
fn semantics_of_optional_fields() {
    // ackQuorum defaults to the write quorum.
    let mut f = base_format();
    f.ack_quorum_size = None;
    assert_eq!(decode_ledger_metadata(&v3(&f)).unwrap().ack_quorum_size, 2);
    // A digest type without a password is ignored.
    let mut f = base_format();
    f.password = None;
    let md = decode_ledger_metadata(&v3(&f)).unwrap();
    assert_eq!((md.digest_type, md.password), (None, None));
    // ... even an unknown one.
    f.digest_type = Some(9);
    assert_eq!(decode_ledger_metadata(&v3(&f)).unwrap().digest_type, None);
    // A password without a digest type reads proto2's default, CRC32.
    let mut f = base_format();
    f.digest_type = None;
    assert_eq!(decode_ledger_metadata(&v3(&f)).unwrap().digest_type, Some(DigestType::Crc32));
    // An unknown digest type with a password is refused, at the message.
    f.digest_type = Some(7);
    let e = decode_ledger_metadata(&v3(&f)).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 31));
    assert!(e.detail.contains("digest type value 7"), "{e}");
    // length and lastEntryId count only when closed.
    let mut f = base_format();
    f.length = Some(77);
    f.last_entry_id = Some(5);
    let md = decode_ledger_metadata(&v3(&f)).unwrap();
    assert_eq!((md.last_entry_id, md.length), (-1, 0));
    f.state = Some(3);
    let md = decode_ledger_metadata(&v3(&f)).unwrap();
    assert_eq!((md.state, md.last_entry_id, md.length), (LedgerState::Closed, 5, 77));
    f.last_entry_id = None;
    assert_eq!(decode_ledger_metadata(&v3(&f)).unwrap().last_entry_id, 0);
    // ctime absent, cToken absent.
    let mut f = base_format();
    f.ctime = None;
    f.c_token = None;
    let md = decode_ledger_metadata(&v3(&f)).unwrap();
    assert_eq!((md.ctime, md.ctoken), (None, 0));
    // A repeated custom key keeps its first place and its last value.
    let mut f = base_format();
    for (k, v) in [("a", "1"), ("b", "2"), ("a", "3")] {
        f.custom_metadata.push(CustomMetadataEntry { key: Some(k.into()), value: Some(v.into()) });
    }
    f.custom_metadata.push(CustomMetadataEntry { key: None, value: None });
    let md = decode_ledger_metadata(&v3(&f)).unwrap();
    assert_eq!(
        md.custom_metadata,
        vec![("a".into(), b"3".to_vec()), ("b".into(), b"2".to_vec()), (String::new(), vec![])]
    );
}

#[test]
fn format_3_rejects_what_java_rejects() {
    type Edit = fn(&mut LedgerMetadataFormat);
    let cases: &[(&str, Edit)] = &[
        ("quorumSize", |f| f.quorum_size = None),
        ("ensembleSize", |f| f.ensemble_size = None),
        ("length", |f| f.length = None),
        ("state", |f| f.state = None),
        ("unknown ledger state", |f| f.state = Some(4)),
        ("firstEntryId", |f| f.segment[0].first_entry_id = None),
        ("at least one ensemble", |f| f.segment.clear()),
        ("has 2 bookies", |f| {
            f.segment[0].ensemble_member.pop();
        }),
        ("must increase", |f| {
            let s = f.segment[0].clone();
            f.segment.push(s);
        }),
        ("write quorum 4", |f| f.quorum_size = Some(4)),
        ("ack quorum 3", |f| f.ack_quorum_size = Some(3)),
        ("outside", |f| f.segment[0].ensemble_member[1] = b"bad id".to_vec()),
        ("reserved", |f| f.segment[0].ensemble_member[1] = b"ReadOnly".to_vec()),
        ("outside", |f| f.segment[0].ensemble_member[1] = vec![b'a', 0xff]),
    ];
    for (needle, edit) in cases {
        let mut f = base_format();
        edit(&mut f);
        let e = decode_ledger_metadata(&v3(&f)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt, "{needle}");
        assert!(e.detail.contains(needle), "{needle}: {e}");
    }
}

#[test]
fn format_3_length_prefix() {
    let v = spec_v3_vector();
    // Trailing bytes after the message are ignored, as Java ignores them.
    let mut extra = v.clone();
    extra.extend_from_slice(b"junk");
    assert!(decode_ledger_metadata(&extra).is_ok());
    // Length beyond the data.
    let e = decode_ledger_metadata(&v[..v.len() - 1]).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 31));
    // A huge length is checked against the data, never allocated.
    let mut huge = v[..30].to_vec();
    huge.extend(hex("ffffffff07"));
    assert_eq!(decode_ledger_metadata(&huge).unwrap_err().kind, ErrorKind::Truncated);
    // Negative (bit 31 set) and over-long varints.
    let mut neg = v[..30].to_vec();
    neg.extend(hex("ffffffff0f"));
    assert_eq!(decode_ledger_metadata(&neg).unwrap_err().kind, ErrorKind::Corrupt);
    let mut long = v[..30].to_vec();
    long.extend(hex("8080808080"));
    assert_eq!(decode_ledger_metadata(&long).unwrap_err().kind, ErrorKind::Corrupt);
    // A padded varint (more bytes than needed) still reads its value.
    let mut padded = v[..30].to_vec();
    padded.extend(hex("e000"));
    padded.extend_from_slice(&v[31..]);
    assert_eq!(decode_ledger_metadata(&padded).unwrap(), spec_v3_metadata());
    // Damaged protobuf inside the message.
    let mut bad = v.clone();
    bad[31] = 0xff;
    let e = decode_ledger_metadata(&bad).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 31));
}

// ---------------------------------------------------------------- format 1

#[test]
fn format_1_reading_rules() {
    let base = "BookieMetadataFormatVersion\t1\n3\n3\n56789\n0\ta:1\tb:1\tc:1\n100\td:1\te:1\tf:1\n";
    let md = decode_ledger_metadata(format!("{base}1234\tCLOSED").as_bytes()).unwrap();
    assert_eq!((md.state, md.last_entry_id, md.length), (LedgerState::Closed, 1234, 56789));
    let md = decode_ledger_metadata(format!("{base}-102\tCLOSED").as_bytes()).unwrap();
    assert_eq!((md.state, md.last_entry_id, md.length), (LedgerState::InRecovery, -1, 0));
    let md = decode_ledger_metadata(base.as_bytes()).unwrap();
    assert_eq!((md.state, md.length, md.ack_quorum_size), (LedgerState::Open, 0, 3));
    // readLine takes \r\n and \r; anything after the CLOSED line is ignored.
    let crlf = base.replace('\n', "\r\n").replacen("\r\n", "\n", 1);
    assert_eq!(decode_ledger_metadata(crlf.as_bytes()).unwrap().ensembles.len(), 2);
    let cr = base.replace('\n', "\r").replacen('\r', "\n", 1);
    assert_eq!(decode_ledger_metadata(cr.as_bytes()).unwrap().ensembles.len(), 2);
    let tail = decode_ledger_metadata(format!("{base}7\tCLOSED\nanything\tat all").as_bytes()).unwrap();
    assert_eq!(tail.last_entry_id, 7);
    // Trailing tabs are dropped by split.
    assert!(decode_ledger_metadata(format!("{base}7\tCLOSED\t\t").as_bytes()).is_ok());

    let err = |text: String| decode_ledger_metadata(text.as_bytes()).unwrap_err();
    let e = err(format!("{base}\n"));
    assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, base.len() as u64));
    let e = err(format!("{base}200\tg:1\tbad id\th:1\n"));
    assert_eq!(e.offset, (base.len() + 8) as u64);
    let e = err(format!("{base}50\tg:1\th:1\ti:1\n"));
    assert!(e.detail.contains("must increase"), "{e}");
    let e = err(format!("{base}200\tg:1\th:1\n"));
    assert!(e.detail.contains("2 bookies"), "{e}");
    let e = err(format!("{base}x\tCLOSED"));
    assert_eq!(e.offset, base.len() as u64);
    assert!(err("BookieMetadataFormatVersion\t1\n3\n3\n".into()).detail.contains("length"));
    assert!(err("BookieMetadataFormatVersion\t1\n3\n3\n0\n".into()).detail.contains("at least one ensemble"));
    assert!(err("BookieMetadataFormatVersion\t1\nthree\n3\n0\n".into()).detail.contains("write quorum"));
}

#[test]
fn format_1_drops_what_it_cannot_hold() {
    let md = spec_v3_metadata();
    let bytes = encode_ledger_metadata(&md, 1).unwrap();
    assert_eq!(
        bytes,
        b"BookieMetadataFormatVersion\t1\n2\n3\n0\n0\t192.0.2.1:3181\t192.0.2.2:3181\t192.0.2.3:3181\n"
    );
    let back = decode_ledger_metadata(&bytes).unwrap();
    assert_eq!((back.digest_type, back.password, back.ctime, back.ack_quorum_size), (None, None, None, 2));
    let mut closed = md.clone();
    closed.state = LedgerState::Closed;
    closed.last_entry_id = -102;
    assert_eq!(encode_ledger_metadata(&closed, 1).unwrap_err().kind, ErrorKind::InvalidArgument);
    // Formats 2 and 3 need a digest type.
    let v1 = decode_ledger_metadata(&bytes).unwrap();
    for v in [2, 3] {
        assert_eq!(encode_ledger_metadata(&v1, v).unwrap_err().kind, ErrorKind::InvalidArgument);
    }
    assert_eq!(encode_ledger_metadata(&md, 4).unwrap_err().kind, ErrorKind::InvalidArgument);
}

// ---------------------------------------------------------------- model

#[test]
fn ensemble_lookup_and_digest_info() {
    let mut md = spec_v3_metadata();
    md.ensembles.push(Ensemble { first_entry_id: 10, bookies: ids(&["x", "y", "z"]) });
    assert_eq!(md.ensemble_at(0).unwrap().first_entry_id, 0);
    assert_eq!(md.ensemble_at(9).unwrap().first_entry_id, 0);
    assert_eq!(md.ensemble_at(10).unwrap().first_entry_id, 10);
    assert_eq!(md.ensemble_at(i64::MAX).unwrap().first_entry_id, 10);
    assert!(md.ensemble_at(-1).is_none());
    let info = LedgerDigestInfo::from(&md);
    assert_eq!(info, LedgerDigestInfo { digest_type: Some(DigestType::Crc32c), password: b"foobar".to_vec() });
    assert_eq!(info.digester().unwrap().digest_type(), DigestType::Crc32c);
    assert!(LedgerDigestInfo { digest_type: None, password: vec![] }.digester().is_none());
}

#[test]
fn validation_of_built_values() {
    let ok = spec_v3_metadata();
    assert!(ok.validate().is_ok());
    type Edit = fn(&mut LedgerMetadata);
    let edits: &[Edit] = &[
        |m| m.format_version = 4,
        |m| m.last_entry_id = 3,
        |m| m.length = 3,
        |m| m.password = None,
        |m| m.digest_type = None,
        |m| m.custom_metadata = vec![("a".into(), vec![]), ("a".into(), vec![1])],
        |m| m.ensemble_size = -1,
        |m| m.ensembles[0].bookies.truncate(1),
    ];
    for edit in edits {
        let mut m = ok.clone();
        edit(&mut m);
        assert_eq!(m.validate().unwrap_err().kind, ErrorKind::InvalidArgument, "{m:?}");
        for v in 1..=3 {
            assert!(encode_ledger_metadata(&m, v).is_err());
        }
    }
}

// ---------------------------------------------------------------- round trips

use crate::test_rng::Rng as XorShift;

impl XorShift {
    fn i64(&mut self) -> i64 {
        match self.below(4) {
            0 => self.next() as i64,
            1 => -(self.below(1000) as i64),
            _ => self.below(100_000) as i64,
        }
    }
}

fn random_metadata(rng: &mut XorShift) -> LedgerMetadata {
    let ensemble_size = 1 + rng.below(5) as i32;
    let write_quorum_size = 1 + rng.below(ensemble_size as usize) as i32;
    let ack_quorum_size = 1 + rng.below(write_quorum_size as usize) as i32;
    let state = [LedgerState::Open, LedgerState::InRecovery, LedgerState::Closed][rng.below(3)];
    let mut first = rng.below(3) as i64 - 1;
    let ensembles = (0..1 + rng.below(4))
        .map(|_| {
            let e = Ensemble {
                first_entry_id: first,
                bookies: (0..ensemble_size)
                    .map(|_| {
                        let alphabet = b"-.0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_abcdefghijklmnopqrstuvwxyz";
                        let s: String = (0..1 + rng.below(20)).map(|_| alphabet[rng.below(alphabet.len())] as char).collect();
                        BookieId::parse(&s).unwrap_or_else(|_| BookieId::parse("fallback:1").unwrap())
                    })
                    .collect(),
            };
            first += 1 + rng.below(1000) as i64;
            e
        })
        .collect();
    let closed = state == LedgerState::Closed;
    let digest_type = DigestType::ALL[rng.below(4)];
    LedgerMetadata {
        format_version: 3,
        ensemble_size,
        write_quorum_size,
        ack_quorum_size,
        state,
        last_entry_id: if closed { rng.i64() } else { -1 },
        length: if closed { rng.i64() } else { 0 },
        ensembles,
        digest_type: Some(digest_type),
        password: Some((0..rng.below(12)).map(|_| rng.byte()).collect()),
        ctime: if rng.below(2) == 0 { None } else { Some(rng.i64()) },
        custom_metadata: (0..rng.below(4))
            .map(|i| {
                let key: String = format!("k{i}") + &"é\u{7f}\"\\\n".chars().take(rng.below(6)).collect::<String>();
                (key, (0..rng.below(8)).map(|_| rng.byte()).collect())
            })
            .collect(),
        ctoken: rng.i64(),
    }
}

#[test]
fn random_metadata_round_trips_in_every_format() {
    let mut rng = XorShift(42);
    for _ in 0..500 {
        let mut md = random_metadata(&mut rng);
        let v3 = encode_ledger_metadata(&md, 3).unwrap();
        assert_eq!(decode_ledger_metadata(&v3).unwrap(), md);

        let mut v2md = md.clone();
        v2md.format_version = 2;
        v2md.ctoken = 0;
        let v2 = encode_ledger_metadata(&md, 2).unwrap();
        assert_eq!(decode_ledger_metadata(&v2).unwrap(), v2md);

        md.format_version = 1;
        md.ack_quorum_size = md.write_quorum_size;
        md.digest_type = None;
        md.password = None;
        md.ctime = None;
        md.custom_metadata.clear();
        md.ctoken = 0;
        if md.is_closed() && md.last_entry_id == -102 {
            continue;
        }
        let v1 = encode_ledger_metadata(&md, 1).unwrap();
        assert_eq!(decode_ledger_metadata(&v1).unwrap(), md);
    }
}
