//! Ledger index files written by the real FileInfo / LedgerCacheImpl (golden README §4).

mod common;

use std::path::Path;

use bkcodec_core::digest::{master_key, DigestType, Digester};
use bkcodec_core::entry::decode_lac;
use bkcodec_core::files::index_file::{encode_index_file, index_path, ledger_id_from_index_path, IndexHeader};
use bkcodec_core::files::{MemorySource, IndexFile, Location};
use common::*;

#[test]
#[cfg_attr(not(golden_corpus), ignore = "needs the golden corpus: ../shared/golden beside the repository, or BKCODEC_GOLDEN")]
fn index_files_read_back_as_written() {
    let dir = golden("index");
    let rows = manifest(&dir.join("index.jsonl"));
    assert_eq!(rows.len(), 3);
    for row in &rows {
        let ledger_id = i64_of(&row["ledger_id"]);
        let rel = row["path"].as_str().unwrap();
        // ledgers/current/<layout>
        assert_eq!(Path::new(rel).strip_prefix("ledgers/current").unwrap(), index_path(0, ledger_id));
        let path = dir.join(rel);
        assert_eq!(ledger_id_from_index_path(&path), Some(ledger_id));
        let src = MemorySource::read(&path).unwrap();
        assert_eq!(src.bytes().len() as u64, u64_of(&row["file_size"]));
        let idx = IndexFile::parse(src.bytes()).unwrap();
        let h = &row["header"];
        assert_eq!(idx.header.version as i64, i64_of(&h["version"]));
        assert_eq!(hex(idx.header.master_key), h["master_key_hex"].as_str().unwrap());
        assert_eq!(hex(idx.header.master_key), row["master_key_hex_expected"].as_str().unwrap());
        assert_eq!(hex(idx.header.master_key), hex(&master_key(row["password_utf8"].as_str().unwrap().as_bytes())));
        assert_eq!(hex(idx.header.master_key), row["read_master_key_hex"].as_str().unwrap());
        assert_eq!(idx.header.state_bits as i64, i64_of(&h["state_bits"]));
        assert_eq!(idx.header.fenced(), row["read_fenced"].as_bool().unwrap());
        assert_eq!(idx.header.fenced(), row["fenced_set"].as_bool().unwrap());
        match row["read_explicit_lac_hex"].as_str() {
            Some(lac_hex) => {
                let blob = idx.header.explicit_lac.unwrap();
                assert_eq!(hex(blob), lac_hex);
                assert_eq!(hex(blob), h["explicit_lac_hex"].as_str().unwrap());
                let dt = DigestType::from_name(row["explicit_lac_digest"].as_str().unwrap()).unwrap();
                let lac = decode_lac(blob, dt).unwrap();
                lac.verify(&Digester::new(dt, b""), Some(ledger_id)).unwrap();
                assert_eq!(lac.lac, i64_of(&h["explicit_lac_value"]));
                assert_eq!(lac.lac, i64_of(&row["explicit_lac_set"]));
            }
            None => assert_eq!(idx.header.explicit_lac, None),
        }
        assert_eq!(idx.data_len(), u64_of(&row["read_size"]));
        assert_eq!(idx.last_entry(), Some(u64_of(&row["read_last_entry"])));
        for e in row["entries_read_back"].as_array().unwrap() {
            let id = u64_of(&e["entry_id"]);
            assert_eq!(idx.raw_slot(id), i64_of(&e["offset"]), "ledger {ledger_id} entry {id}");
            assert_eq!(idx.location(id).is_none(), e.get("never_written").is_some());
        }
        let written: Vec<(u64, Location)> = row["entries_written"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (u64_of(&e["entry_id"]), Location::from_raw(i64_of(&e["offset"])).unwrap()))
            .collect();
        assert_eq!(idx.entries().collect::<Vec<_>>(), written);
        for e in row["entries_written"].as_array().unwrap() {
            assert_eq!(1024 + 8 * u64_of(&e["entry_id"]), u64_of(&e["file_position"]));
        }

        // Writing the same header and slots gives the same file.
        let header = IndexHeader {
            version: idx.header.version,
            master_key: idx.header.master_key,
            state_bits: idx.header.state_bits,
            explicit_lac: idx.header.explicit_lac,
        };
        assert!(encode_index_file(&header, &written).unwrap() == src.bytes(), "ledger {ledger_id}");
    }
}
