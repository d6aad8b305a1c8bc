//! The index-file reader on arbitrary bytes (first byte: options).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bkcodec_core::fuzzing::index_files(data);
});
