//! The digest resolver and the batch builder on entries written by BookKeeper's own
//! DigestManager (golden corpus, entries/). Skips when the corpus is absent.

use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use bkcodec_core::arrow::{append_entries, EntryBatchBuilder, EntryBatchOptions, OnError, PayloadMode};
use bkcodec_core::{DigestPolicy, DigestResolver, DigestType, EntryChecks, ErrorKind};

fn golden_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("BKCODEC_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: golden corpus not found at {} (set BKCODEC_GOLDEN)", dir.display());
        None
    }
}

/// The container's records: `[4-byte big-endian length][entry]`.
fn records(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let n = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        out.push(&bytes[pos + 4..pos + 4 + n]);
        pos += 4 + n;
    }
    out
}

#[test]
fn auto_policy_infers_every_checksummed_ledger() {
    let Some(dir) = golden_dir() else { return };
    for dt in [DigestType::Crc32, DigestType::Crc32c, DigestType::Hmac] {
        let file = std::fs::read(dir.join(format!("entries/{}.entries", dt.name().to_uppercase()))).unwrap();
        let entries = records(&file);
        assert_eq!(entries.len(), 58);
        let mut resolver = DigestResolver::new(DigestPolicy::Auto, b"secret");
        for (i, bytes) in entries.iter().enumerate() {
            let r = resolver.resolve(bytes, true).unwrap_or_else(|e| panic!("{dt} record {i}: {e}"));
            assert_eq!((r.entry.digest_type, r.digest_ok), (dt, Some(true)), "{dt} record {i}");
            assert_eq!(resolver.inferred_type(r.entry.header.ledger_id), Some(dt));
        }
    }
}

#[test]
fn dummy_ledgers_must_be_named() {
    let Some(dir) = golden_dir() else { return };
    let file = std::fs::read(dir.join("entries/DUMMY.entries")).unwrap();
    let entries = records(&file);
    let mut auto = DigestResolver::new(DigestPolicy::Auto, b"secret");
    let mut named = DigestResolver::new(DigestPolicy::Fixed(DigestType::Dummy), b"");
    for bytes in &entries {
        let e = auto.resolve(bytes, true).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::DigestMismatch, 32));
        assert_eq!(named.resolve(bytes, true).unwrap().digest_ok, Some(true));
    }
}

#[test]
fn builder_flags_exactly_the_damaged_records() {
    let Some(dir) = golden_dir() else { return };
    for name in ["CRC32", "CRC32C", "HMAC"] {
        let good = std::fs::read(dir.join(format!("entries/{name}.entries"))).unwrap();
        let bad = std::fs::read(dir.join(format!("entries/{name}.corrupt.entries"))).unwrap();
        let (good, bad) = (records(&good), records(&bad));
        let options = EntryBatchOptions { payload: PayloadMode::BinaryView, on_error: OnError::Flag };
        let mut builder = EntryBatchBuilder::new(options, good.len() + bad.len(), 0);
        let mut resolver = DigestResolver::new(DigestPolicy::Fixed(DigestType::from_name(name).unwrap()), b"secret");
        let all = good.iter().chain(&bad).map(|b| Some(*b));
        append_entries(&mut builder, &mut resolver, all, 0, EntryChecks::DIGEST).unwrap();
        let batch = builder.finish().unwrap();
        let errors = batch.column_by_name("error").unwrap().as_string::<i32>().clone();
        assert_eq!(errors.len(), good.len() + bad.len());
        assert!((0..good.len()).all(|i| errors.is_null(i)), "{name}: good records are clean");
        // Every damaged record is flagged; the intact ones (kept for a wrong-id check)
        // are clean, as this batch checks no ids.
        let flagged = (good.len()..errors.len()).filter(|&i| !errors.is_null(i)).count();
        let intact = bad.iter().filter(|b| good.contains(b)).count();
        assert_eq!(flagged, bad.len() - intact, "{name}");
    }
}
