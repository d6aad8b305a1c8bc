//! Pulsar's message decoder (and metadata-store decoders) on arbitrary entries
//! (first byte: options; then `[u16 length][entry]` pairs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bkcodec_core::fuzzing::pulsar_messages(data);
});
