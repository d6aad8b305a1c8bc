//! Entry and LAC decoding on arbitrary bytes (first byte: digest type and password).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| bkcodec_core::fuzzing::entry_decoders(data));
