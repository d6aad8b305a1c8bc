//! The entry-log and journal readers on arbitrary file bodies (first byte: options).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bkcodec_core::fuzzing::file_readers(data);
});
