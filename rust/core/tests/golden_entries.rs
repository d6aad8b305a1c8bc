//! The digest checker and the batch decoder on entries written by BookKeeper's own
//! DigestManager (golden corpus, entries/). Skips when the corpus is absent.

use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use bkcodec_core::arrow::{EntryBatchOptions, EntryDecoder, OnError, PayloadMode};
use bkcodec_core::digest_check::Outcome;
use bkcodec_core::{DigestChecker, DigestPolicy, DigestType, LedgerDigestSettings, Unchecked, DigestStatus};

fn golden_dir() -> PathBuf {
    let dir = std::env::var_os("BKCODEC_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden"));
    assert!(dir.is_dir(), "golden corpus expected at {} (set BKCODEC_GOLDEN)", dir.display());
    dir
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
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn auto_policy_infers_every_checksummed_ledger() {
    let dir = golden_dir();
    for dt in [DigestType::Crc32, DigestType::Crc32c, DigestType::Hmac] {
        let file = std::fs::read(dir.join(format!("entries/{}.entries", dt.name().to_uppercase()))).unwrap();
        let entries = records(&file);
        assert_eq!(entries.len(), 58);
        let mut checker = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Auto, b"secret"), true);
        for (i, bytes) in entries.iter().enumerate() {
            let Outcome::Framed(c, None) = checker.check_one(bytes) else { panic!("{dt} record {i}") };
            assert_eq!((c.digest_type, c.verdict), (Some(dt), DigestStatus::Verified), "{dt} record {i}");
        }
    }
}

/// DUMMY and HMAC ledgers without their settings: the length chain (BookKeeper's
/// running ledger length) tells the digest's length, so DUMMY entries read as
/// DUMMY and HMAC ones without the password as unchecked, never as damaged; an
/// entry with no chain of its own takes its ledger's.
#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn length_chains_tell_dummy_and_hmac_ledgers() {
    let dir = golden_dir();
    for (name, expected) in [
        ("DUMMY", (Some(DigestType::Dummy), DigestStatus::Verified)),
        ("HMAC", (Some(DigestType::Hmac), DigestStatus::Unchecked(Unchecked::NoPassword))),
    ] {
        let file = std::fs::read(dir.join(format!("entries/{name}.entries"))).unwrap();
        let entries = records(&file);
        let mut auto = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Auto, b""), true);
        let mut named = DigestChecker::new(&LedgerDigestSettings::new(DigestPolicy::Fixed(DigestType::from_name(name).unwrap()), b"secret"), true);
        for (i, bytes) in entries.iter().enumerate() {
            let Outcome::Framed(c, None) = auto.check_one(bytes) else { panic!("{name} record {i}") };
            assert_eq!((c.digest_type, c.verdict), expected, "{name} record {i}");
            let Outcome::Framed(c, None) = named.check_one(bytes) else { panic!("{name} record {i}") };
            assert_eq!(c.verdict, DigestStatus::Verified, "{name} record {i}");
        }
    }
}

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn builder_flags_exactly_the_damaged_records() {
    let dir = golden_dir();
    for name in ["CRC32", "CRC32C", "HMAC"] {
        let good = std::fs::read(dir.join(format!("entries/{name}.entries"))).unwrap();
        let bad = std::fs::read(dir.join(format!("entries/{name}.corrupt.entries"))).unwrap();
        let (good, bad) = (records(&good), records(&bad));
        let options = EntryBatchOptions { payload: PayloadMode::BinaryView, on_error: OnError::Flag };
        let policy = DigestPolicy::Fixed(DigestType::from_name(name).unwrap());
        let mut decoder = EntryDecoder::new(options, policy, b"secret", true, good.len() + bad.len(), 0);
        decoder.append(good.iter().chain(&bad).map(|b| Some(*b)), 0).unwrap();
        let batch = decoder.finish().unwrap();
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
