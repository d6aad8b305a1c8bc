//! The entry-log and journal readers over a byte range and a column projection, as
//! the JVM Spark source drives them (first bytes: options and the range).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bkcodec_core::fuzzing::ranged_readers(data);
});
