//! CRC-32C of many mid-size messages (entry header and payload, as a batch of
//! BookKeeper entries has them): `crc32c_concat_many` and `crc32c_append_many`
//! against one message at a time, side by side in one process.
//!
//!     cargo run --release -p bkcodec-core --example crc_many
//!
//! Prints, per payload size, ns per message and the ratio of the one-at-a-time
//! loop's time to the many-message call's (above 1: the call is faster).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bkcodec_core::digest;

/// Bytes of payload each timed pass touches (fits in L2, like a batch of entries).
const WORKING_SET: usize = 512 * 1024;
const MIN_PASS: Duration = Duration::from_millis(30);
const PASSES: usize = 7;
/// A V2 entry header: the bytes before the stored digest.
const HEADER: usize = 41;

/// Best seconds per call of `f` over several passes.
fn best(mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut rounds = 0u64;
        while start.elapsed() < MIN_PASS || rounds == 0 {
            f();
            rounds += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / rounds as f64);
    }
    best
}

fn main() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut random = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let data: Vec<u8> = (0..2 * WORKING_SET + (1 << 16)).map(|_| random() as u8).collect();

    let sizes: [(&str, Option<usize>); 8] = [
        ("256 B", Some(256)),
        ("512 B", Some(512)),
        ("768 B", Some(768)),
        ("1 KiB", Some(1024)),
        ("2 KiB", Some(2048)),
        ("4 KiB", Some(4096)),
        ("mixed 256 B..4 KiB", None),
        ("mixed 0..1.5 KiB", Some(0)),
    ];
    println!("{:>20} {:>24} {:>24}", "payload", "concat_many ns (ratio)", "append_many ns (ratio)");
    for (name, size) in sizes {
        let mut lengths = Vec::new();
        let mut total = 0;
        while total < WORKING_SET {
            let len = match size {
                Some(0) => (random() % 1536) as usize,
                Some(n) => n,
                None => 256 + (random() % (4096 - 256 + 1)) as usize,
            };
            lengths.push(len);
            total += len + HEADER;
        }
        let mut heads = Vec::new();
        let mut tails = Vec::new();
        let mut whole = Vec::new();
        let mut at = 0;
        for &len in &lengths {
            heads.push(&data[at..at + HEADER]);
            tails.push(&data[at + HEADER..at + HEADER + len]);
            whole.push(&data[at..at + HEADER + len]);
            // Entries one after another, as in a buffer of frames (4-byte length, digest).
            at += HEADER + len + 12;
        }
        let n = lengths.len();
        let mut out = vec![0u32; n];
        digest::crc32c_concat_many(&mut out, &heads, &tails);
        assert!(out.iter().zip(&whole).all(|(c, w)| *c == digest::crc32c(w)), "{name}: concat_many disagrees");

        let loop_concat = best(|| {
            for ((o, h), t) in out.iter_mut().zip(&heads).zip(&tails) {
                *o = digest::crc32c_append(digest::crc32c(black_box(h)), black_box(t));
            }
            black_box(&out);
        });
        let many_concat = best(|| {
            digest::crc32c_concat_many(&mut out, black_box(&heads), black_box(&tails));
            black_box(&out);
        });
        let loop_append = best(|| {
            for (o, w) in out.iter_mut().zip(&whole) {
                *o = digest::crc32c_append(0, black_box(w));
            }
            black_box(&out);
        });
        let many_append = best(|| {
            out.fill(0);
            digest::crc32c_append_many(&mut out, black_box(&whole));
            black_box(&out);
        });
        let ns = |s: f64| s * 1e9 / n as f64;
        println!(
            "{:>20} {:>8.2} vs {:>6.2} ({:>4.2}x) {:>8.2} vs {:>6.2} ({:>4.2}x)",
            name,
            ns(many_concat),
            ns(loop_concat),
            loop_concat / many_concat,
            ns(many_append),
            ns(loop_append),
            loop_append / many_append
        );
    }
}
