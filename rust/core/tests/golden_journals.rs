//! Journals written by the real Journal thread, and their lastMark files, read back
//! against their manifests (golden README §3); the writer reproduces them byte for byte.

mod common;

use std::io::Cursor;
use std::path::Path;

use bkcodec_core::digest::{DigestType, Digester};
use bkcodec_core::entry::decode_lac;
use bkcodec_core::files::journal::{self, JournalRecord, JournalRecordKind};
use bkcodec_core::files::{MemorySource, GapKind, Journal, JournalItem, JournalWriter, LastMark};
use bkcodec_core::{DigestPolicy, LedgerDigestSettings};
use common::*;
use serde_json::Value;

const SCENARIOS: [&str; 2] = ["v5", "v6"];

fn options() -> LedgerDigestSettings {
    LedgerDigestSettings::new(DigestPolicy::Auto, b"secret")
}

fn load(dir: &Path, scenario: &str) -> (Vec<Value>, MemorySource) {
    let rows = manifest(&dir.join(format!("{scenario}.jsonl")));
    let file = records(&rows, "file")[0];
    let path = dir.join(file["path"].as_str().unwrap());
    assert_eq!(journal::journal_id_from_path(&path), Some(i64_of(&file["journal_id"])));
    assert_eq!(journal::file_name(i64_of(&file["journal_id"])), path.file_name().unwrap().to_str().unwrap());
    let src = MemorySource::read(&path).unwrap();
    assert_eq!(src.len(), u64_of(&file["file_size"]));
    (rows, src)
}

fn all_records<'a>(j: &Journal<'a>) -> Vec<JournalRecord<'a>> {
    j.scan(&options())
        .filter_map(|it| match it {
            JournalItem::Record(r) => Some(r),
            JournalItem::Gap(_) => None,
        })
        .collect()
}

/// Which digest (of the ones the generator used) verifies an entry.
fn verifying_digest(bytes: &[u8]) -> Option<DigestType> {
    [(DigestType::Crc32c, &b""[..]), (DigestType::Hmac, b"secret"), (DigestType::Hmac, b"")]
        .into_iter()
        .find(|(dt, pw)| {
            bkcodec_core::entry::decode_entry(bytes, Some(*dt)).is_ok_and(|e| e.digest_matches(&Digester::new(*dt, pw)))
        })
        .map(|(dt, _)| dt)
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn journals_replay_as_bookkeeper_did() {
    let dir = golden("journals");
    for scenario in SCENARIOS {
        let (rows, src) = load(&dir, scenario);
        let file = records(&rows, "file")[0];
        let j = Journal::new(src.bytes()).unwrap();
        let header = j.header();
        assert!(header.has_magic);
        assert_eq!(header.version as i64, i64_of(&file["header_version"]));
        assert_eq!(header.data_start(), u64_of(&file["first_record_offset"]));

        let recs = all_records(&j);
        let data: Vec<&JournalRecord<'_>> =
            recs.iter().filter(|r| !matches!(r.kind, JournalRecordKind::Padding { .. })).collect();
        let replay = records(&rows, "replay");
        assert_eq!(data.len(), replay.len(), "{scenario}");
        for (r, want) in data.iter().zip(&replay) {
            let what = format!("{scenario} {want}");
            assert_eq!(r.offset, u64_of(&want["offset"]), "{what}");
            assert_eq!(r.payload.len() as u64, u64_of(&want["len"]), "{what}");
            assert_eq!(r.payload_offset(), u64_of(&want["payload_offset"]), "{what}");
            assert_eq!(r.kind.ledger_id(), Some(i64_of(&want["ledger_id"])), "{what}");
            assert_eq!(r.entry_id(), Some(i64_of(&want["entry_id"])), "{what}");
            assert_eq!(sha256_hex(r.payload), want["sha256"].as_str().unwrap(), "{what}");
            let kind = match want["kind"].as_str().unwrap() {
                "master_key" => "ledger_key",
                k => k,
            };
            assert_eq!(r.kind.name(), kind, "{what}");
            assert!(!r.reframed);
            match r.kind {
                JournalRecordKind::LedgerKey { master_key, .. } => {
                    assert_eq!(master_key.len() as u64, u64_of(&want["master_key_len"]));
                    assert_eq!(hex(master_key), want["master_key_hex"].as_str().unwrap());
                }
                JournalRecordKind::ExplicitLac { ledger_id, lac_blob } => {
                    assert_eq!(lac_blob.len() as u64, u64_of(&want["explicit_lac_len"]));
                    assert_eq!(hex(lac_blob), want["explicit_lac_hex"].as_str().unwrap());
                    let lac = decode_lac(lac_blob, DigestType::Crc32c).unwrap();
                    lac.verify(&Digester::new(DigestType::Crc32c, b""), Some(ledger_id)).unwrap();
                    assert_eq!(lac.ledger_id, i64_of(&want["explicit_lac_ledger_id"]));
                    assert_eq!(lac.lac, i64_of(&want["explicit_lac_value"]));
                }
                JournalRecordKind::Entry { header, .. } => {
                    let dt = verifying_digest(r.payload).expect("journaled entries verify");
                    let e = r.decode_entry(Some(dt)).unwrap();
                    assert_eq!((e.header.ledger_id, e.header.entry_id), (header.ledger_id, header.entry_id));
                }
                JournalRecordKind::Fence { .. } => {}
                other => panic!("unexpected record {other:?}"),
            }
        }
        // The generator's framing: every record and padding record, then zeros.
        let framing = records(&rows, "framing");
        assert_eq!(recs.len(), framing.len(), "{scenario}");
        for (r, f) in recs.iter().zip(&framing) {
            assert_eq!(r.offset, u64_of(&f["offset"]));
            match r.kind {
                JournalRecordKind::Padding { pad_len } => {
                    assert_eq!(f["type"], "padding");
                    assert_eq!(pad_len as u64, u64_of(&f["padding_len"]));
                    assert_eq!(r.span_len(), u64_of(&f["total_len"]));
                    assert!(r.payload.iter().all(|&b| b == 0));
                }
                _ => {
                    assert_eq!(f["type"], "record");
                    assert_eq!(r.payload.len() as u64, u64_of(&f["len"]));
                }
            }
        }
        let end = u64_of(&records(&rows, "framing_end")[0]["offset"]);
        let gaps: Vec<_> = j
            .scan(&options())
            .filter_map(|it| match it {
                JournalItem::Gap(g) => Some((g.offset, g.len, g.kind)),
                _ => None,
            })
            .collect();
        assert_eq!(gaps, vec![(end, src.len() - end, GapKind::TrailingZeros)], "{scenario}");

        // lastMark: the bytes, and a replay from it finds nothing more.
        let lm = records(&rows, "last_mark")[0];
        let lm_bytes = std::fs::read(dir.join(lm["path"].as_str().unwrap())).unwrap();
        assert_eq!(hex(&lm_bytes), lm["hex"].as_str().unwrap());
        let mark = LastMark::parse(&lm_bytes).unwrap();
        assert_eq!(mark, LastMark { journal_id: i64_of(&lm["log_file_id"]), offset: i64_of(&lm["log_file_offset"]) });
        assert_eq!(mark.encode().to_vec(), lm_bytes);
        let from_mark = records(&rows, "replay_from_last_mark")[0];
        let replayed = j
            .scan_from(&options(), mark.offset as u64)
            .filter(|it| matches!(it, JournalItem::Record(r) if !matches!(r.kind, JournalRecordKind::Padding { .. })))
            .count();
        assert_eq!(replayed as u64, u64_of(&from_mark["records"]));
        // Replaying from the start with the mark's journal: everything.
        assert_eq!(
            j.scan_from(&options(), 0).filter(|it| matches!(it, JournalItem::Record(_))).count(),
            recs.len()
        );
    }
}

/// What was submitted reaches the file, except what BookKeeper drops: force-ledger
/// requests always, explicit LACs below version 6.
#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn submitted_records_reach_the_file() {
    let dir = golden("journals");
    for scenario in SCENARIOS {
        let (rows, src) = load(&dir, scenario);
        let version = i64_of(&records(&rows, "file")[0]["header_version"]);
        let j = Journal::new(src.bytes()).unwrap();
        let written: Vec<String> = all_records(&j)
            .iter()
            .filter(|r| !matches!(r.kind, JournalRecordKind::Padding { .. }))
            .map(|r| sha256_hex(r.payload))
            .collect();
        let expected: Vec<String> = records(&rows, "submitted")
            .into_iter()
            .filter(|s| s["kind"] != "force_ledger" && !(s["kind"] == "explicit_lac" && version < 6))
            .map(|s| s["sha256"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(written, expected, "{scenario}");
    }
}

/// Re-writing the replayed records with the same flush points gives the same file.
#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn writer_reproduces_golden_journals() {
    let dir = golden("journals");
    for scenario in SCENARIOS {
        let (rows, src) = load(&dir, scenario);
        let file = records(&rows, "file")[0];
        let j = Journal::new(src.bytes()).unwrap();
        let mut w = JournalWriter::new(
            Cursor::new(Vec::new()),
            j.header().version,
            u64_of(&file["alignment_size"]),
            u64_of(&file["prealloc_size"]),
        )
        .unwrap();
        let recs = all_records(&j);
        for (i, r) in recs.iter().enumerate() {
            let at = match r.kind {
                JournalRecordKind::Padding { .. } => continue,
                JournalRecordKind::Entry { .. } => w.add_entry(r.payload).unwrap(),
                JournalRecordKind::LedgerKey { ledger_id, master_key } => w.add_ledger_key(ledger_id, master_key).unwrap(),
                JournalRecordKind::Fence { ledger_id } => w.add_fence(ledger_id).unwrap(),
                JournalRecordKind::ExplicitLac { ledger_id, lac_blob } => {
                    w.add_explicit_lac(ledger_id, lac_blob).unwrap().unwrap()
                }
                JournalRecordKind::UnknownMeta { .. } => panic!("BookKeeper writes only meta records it knows"),
            };
            assert_eq!(at, r.offset);
            if matches!(recs.get(i + 1).map(|n| n.kind), Some(JournalRecordKind::Padding { .. })) {
                w.flush().unwrap();
            }
        }
        let mark = w.position();
        let out = w.finish().unwrap().into_inner();
        assert_eq!(mark as i64, LastMark::parse(&std::fs::read(
            dir.join(records(&rows, "last_mark")[0]["path"].as_str().unwrap())).unwrap()).unwrap().offset);
        assert_eq!(out.len(), src.bytes().len(), "{scenario}");
        assert!(out == src.bytes(), "{scenario}: rewritten journal differs");
    }
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn golden_journals_tile_exactly() {
    let dir = golden("journals");
    for scenario in SCENARIOS {
        let (_, src) = load(&dir, scenario);
        let j = Journal::new(src.bytes()).unwrap();
        for opts in [LedgerDigestSettings::default(), options()] {
            let whole = journal_items(&j, &opts, 0, u64::MAX);
            assert_contiguous(&whole, j.header().data_start(), src.len());
            // Every offset of the data, and a coarser grid over the preallocated zeros.
            let data_end = whole.last().unwrap().0;
            let mut cuts: Vec<u64> = (0..data_end + 600).collect();
            cuts.extend((data_end..src.len()).step_by(4093));
            cuts.push(src.len());
            cuts.sort_unstable();
            cuts.dedup();
            assert_tilings(|s, e| journal_items(&j, &opts, s, e), src.len(), &cuts, scenario);
        }
    }
}
