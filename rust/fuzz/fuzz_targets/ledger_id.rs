//! Ledger qualified names, UUID spellings and location keys on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bkcodec_core::fuzzing::ledger_id_parsers(data));
