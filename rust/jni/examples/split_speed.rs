//! Time the JNI reader over entry logs (no JVM): what a Spark task's scan costs per
//! entry, for a few column choices and a one-ledger filter (`BKCODEC_LEDGER`, 1 unless
//! set). `cargo run --release -p bkcodec-jni --example split_speed -- LOG...`
use std::time::Instant;

use bkcodec_core::plan::ReadKind;
use bkcodec_jni::columns::{full_schema, SourceOptions};
use bkcodec_jni::reader::{Split, SplitReader};

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    let full = full_schema(ReadKind::EntryLog, &SourceOptions::from_pairs(&[]).unwrap()).unwrap();
    let ledger = std::env::var("BKCODEC_LEDGER").unwrap_or_else(|_| "1".into());
    let one_ledger = format!("{ledger}:{ledger}");
    for (label, cols, verify, ledgers) in [
        ("ledger_id,length", vec!["ledger_id", "length"], "true", ""),
        ("ledger_id,length verify=false", vec!["ledger_id", "length"], "false", ""),
        ("every column", full.fields().iter().map(|f| f.name().as_str()).collect(), "true", ""),
        ("entry_id,length of one ledger", vec!["entry_id", "length"], "true", one_ledger.as_str()),
    ] {
        let mut pairs = vec![("verify".to_string(), verify.to_string())];
        if !ledgers.is_empty() {
            pairs.push(("pushed.ledger_id".into(), ledgers.into()));
        }
        let options = SourceOptions::from_pairs(&pairs).unwrap();
        let fields: Vec<_> = cols.iter().map(|c| full.field_with_name(c).unwrap().clone()).collect();
        let schema = std::sync::Arc::new(arrow_schema::Schema::new(fields));
        let mut best = f64::MAX;
        let mut rows = 0;
        for _ in 0..3 {
            let started = Instant::now();
            rows = 0;
            for p in &paths {
                let split = Split { path: p.into(), kind: ReadKind::EntryLog, start: None, end: None };
                let mut r = SplitReader::new(split, schema.clone(), options.clone());
                while let Some(b) = r.next_batch().unwrap() {
                    rows += b.num_rows();
                }
            }
            best = best.min(started.elapsed().as_secs_f64());
        }
        println!("{label:<32} {rows} rows {:.1} ns/entry", best / rows as f64 * 1e9);
    }
}
