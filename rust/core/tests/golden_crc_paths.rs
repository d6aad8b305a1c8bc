//! Every CRC path this CPU runs, forced one at a time, on entries written by
//! BookKeeper's own DigestManager (golden corpus, entries/): the digests it
//! stored are found again, and the corrupted records' are not where BookKeeper
//! refused them. Skips (reported as ignored) when the corpus is absent.

use std::path::{Path, PathBuf};

use bkcodec_core::digest::{self, CrcPath};

fn golden_dir() -> PathBuf {
    let dir = std::env::var_os("BKCODEC_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden"));
    assert!(dir.is_dir(), "golden corpus expected at {} (set BKCODEC_GOLDEN)", dir.display());
    dir
}

/// The container's records: `[4-byte big-endian length][entry]`, with the
/// manifest's `verify_ok` for each.
fn records(dir: &Path, stem: &str) -> Vec<(Vec<u8>, bool)> {
    let bytes = std::fs::read(dir.join(format!("entries/{stem}.entries"))).unwrap();
    let manifest = std::fs::read_to_string(dir.join(format!("entries/{stem}.jsonl"))).unwrap();
    let verdicts: Vec<bool> = manifest
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["verify_ok"].as_bool().unwrap())
        .collect();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let n = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        out.push(bytes[pos + 4..pos + 4 + n].to_vec());
        pos += 4 + n;
    }
    assert_eq!(out.len(), verdicts.len(), "{stem}: one manifest line per record");
    out.into_iter().zip(verdicts).collect()
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn every_crc32c_path_finds_bookkeepers_digests() {
    let dir = golden_dir();
    let paths: Vec<CrcPath> = CrcPath::ALL.into_iter().filter(|p| p.available()).collect();
    let kernels = digest::crc32c_kernels();
    let (mut matched, mut refused) = (0, 0);
    for stem in ["CRC32C", "CRC32C.corrupt"] {
        for (i, (entry, verify_ok)) in records(&dir, stem).iter().enumerate() {
            if entry.len() < 36 {
                assert!(!verify_ok, "{stem} record {i}: too short to hold a digest");
                continue;
            }
            let stored = u32::from_be_bytes(entry[32..36].try_into().unwrap());
            let (header, payload) = (&entry[..32], &entry[36..]);
            let want = digest::crc32c_append_on(CrcPath::Portable, digest::crc32c_append_on(CrcPath::Portable, 0, header).unwrap(), payload).unwrap();
            for &p in &paths {
                // Header then payload, resumed, as BookKeeper computes it; and in one piece.
                let resumed = digest::crc32c_append_on(p, digest::crc32c_append_on(p, 0, header).unwrap(), payload).unwrap();
                assert_eq!(resumed, want, "{p}: {stem} record {i}");
                let whole = [header, payload].concat();
                assert_eq!(digest::crc32c_append_on(p, 0, &whole), Some(want), "{p}: {stem} record {i} in one piece");
            }
            for (name, k) in &kernels {
                assert_eq!(k(k(0, header), payload), want, "kernel {name}: {stem} record {i}");
            }
            if *verify_ok {
                assert_eq!(want, stored, "{stem} record {i}: BookKeeper accepted it");
                matched += 1;
            } else if want != stored {
                refused += 1;
            }
        }
    }
    assert_eq!(matched, 58, "every good CRC32C entry matched");
    assert!(refused > 0, "some corrupted entries fail on their digest");
    eprintln!("paths checked: {paths:?}; {matched} digests found, {refused} corrupted ones refused");
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn crc32_digests_with_the_table_and_the_instructions() {
    let dir = golden_dir();
    let mut matched = 0;
    for (i, (entry, verify_ok)) in records(&dir, "CRC32").iter().enumerate() {
        let stored = u64::from_be_bytes(entry[32..40].try_into().unwrap());
        let parts = [&entry[..32], &entry[40..]];
        let mut table = crc32fast::Hasher::internal_new_baseline(0, 0);
        parts.iter().for_each(|p| table.update(p));
        let table = table.finalize();
        if let Some(mut h) = crc32fast::Hasher::internal_new_specialized(0, 0) {
            parts.iter().for_each(|p| h.update(p));
            assert_eq!(h.finalize(), table, "CRC32 record {i}");
        }
        assert_eq!(digest::crc32_append(digest::crc32(parts[0]), parts[1]), table, "CRC32 record {i}");
        assert!(verify_ok);
        assert_eq!(u64::from(table), stored, "CRC32 record {i}");
        matched += 1;
    }
    assert_eq!(matched, 58);
}
