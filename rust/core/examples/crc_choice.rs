//! Measures the CRC-32C and CRC-32 implementations `digest.rs` could use, at the
//! sizes BookKeeper data has, and prints GB/s and ratios from one run.
//!
//!     cargo run --release -p bkcodec-core --example crc_choice
//!
//! Sizes: 64 B, 96 B (a 32-byte header and a 64-byte payload), 1 KiB, 16 KiB,
//! 64 MiB. Small inputs are timed over many distinct buffers, as a batch reader
//! sees them, so the figure is throughput, not the latency of a single call.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bkcodec_core::digest;

const SIZES: [usize; 5] = [64, 96, 1024, 16 * 1024, 64 * 1024 * 1024];
/// Bytes each timed pass touches for small sizes (fits in L2, like a batch of entries).
const SMALL_WORKING_SET: usize = 256 * 1024;
const MIN_PASS: Duration = Duration::from_millis(40);
const PASSES: usize = 5;

type CrcFn = fn(&[u8]) -> u32;

fn crc32c_crate(d: &[u8]) -> u32 {
    crc32c::crc32c_append(0, d)
}
fn crc32c_crc_fast(d: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(d)
}
fn crc32c_crc_fast_resume(d: &[u8]) -> u32 {
    // The resumable form digest.rs needs (state = complement of the finalized value).
    let mut h = crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, !0u32 as u64);
    h.update(d);
    h.finalize() as u32
}
const CRC32C_TABLE: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);
fn crc32c_table(d: &[u8]) -> u32 {
    CRC32C_TABLE.checksum(d)
}

fn crc32_crc32fast(d: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(0);
    h.update(d);
    h.finalize()
}
fn crc32_crc_fast(d: &[u8]) -> u32 {
    crc_fast::crc32_iso_hdlc(d)
}
fn crc32_crc_fast_resume(d: &[u8]) -> u32 {
    let mut h = crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32IsoHdlc, !0u32 as u64);
    h.update(d);
    h.finalize() as u32
}
const CRC32_TABLE: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);
fn crc32_table(d: &[u8]) -> u32 {
    CRC32_TABLE.checksum(d)
}

/// Best GB/s over several passes of `f` across `bufs`.
fn measure(bufs: &[&[u8]], f: CrcFn) -> f64 {
    let bytes_per_round: usize = bufs.iter().map(|b| b.len()).sum();
    let mut best = f64::MAX;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut rounds = 0u64;
        let mut acc = 0u32;
        while start.elapsed() < MIN_PASS || rounds == 0 {
            for b in bufs {
                acc ^= f(black_box(b));
            }
            rounds += 1;
        }
        black_box(acc);
        best = best.min(start.elapsed().as_secs_f64() / rounds as f64);
    }
    bytes_per_round as f64 / best / 1e9
}

fn measure_many(bufs: &[&[u8]]) -> f64 {
    let bytes_per_round: usize = bufs.iter().map(|b| b.len()).sum();
    let mut values = vec![0u32; bufs.len()];
    let mut best = f64::MAX;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut rounds = 0u64;
        while start.elapsed() < MIN_PASS || rounds == 0 {
            values.fill(0);
            digest::crc32c_append_many(&mut values, black_box(bufs));
            black_box(&values);
            rounds += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / rounds as f64);
    }
    bytes_per_round as f64 / best / 1e9
}

fn size_name(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

fn table(title: &str, candidates: &[(&str, CrcFn)], data: &[u8]) {
    println!("\n{title}: GB/s (ratio to the first column)");
    print!("{:>8}", "size");
    for (name, _) in candidates {
        print!(" {name:>22}");
    }
    println!();
    for size in SIZES {
        let count = (SMALL_WORKING_SET / size).max(1);
        let bufs: Vec<&[u8]> = (0..count).map(|i| &data[i * size..(i + 1) * size]).collect();
        let expected = candidates[0].1(bufs[0]);
        let rates: Vec<f64> = candidates
            .iter()
            .map(|(name, f)| {
                assert_eq!(f(bufs[0]), expected, "{name} disagrees at {size} bytes");
                measure(&bufs, *f)
            })
            .collect();
        print!("{:>8}", size_name(size));
        for r in &rates {
            print!(" {:>12.2} ({:>5.2}x)", r, r / rates[0]);
        }
        println!();
    }
}

fn main() {
    let len = SIZES.iter().copied().max().unwrap().max(SMALL_WORKING_SET);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();

    table(
        "CRC-32C",
        &[
            ("crc32c 0.6", crc32c_crate),
            ("crc-fast", crc32c_crc_fast),
            ("crc-fast resume", crc32c_crc_fast_resume),
            ("crc table16", crc32c_table),
            ("digest::crc32c", digest::crc32c),
        ],
        &data,
    );
    table(
        "CRC-32",
        &[
            ("crc32fast", crc32_crc32fast),
            ("crc-fast", crc32_crc_fast),
            ("crc-fast resume", crc32_crc_fast_resume),
            ("crc table16", crc32_table),
            ("digest::crc32", digest::crc32),
        ],
        &data,
    );

    memory_reference(&data);
    entry_digests(&data);

    println!("\nCRC-32C of many independent messages: GB/s (ratio to the loop)");
    for size in [32, 64, 96, 256, 512, 1024, 4096] {
        let count = SMALL_WORKING_SET / size;
        let bufs: Vec<&[u8]> = (0..count).map(|i| &data[i * size..(i + 1) * size]).collect();
        let mut values = vec![0u32; count];
        digest::crc32c_append_many(&mut values, &bufs);
        assert!(values.iter().zip(&bufs).all(|(v, b)| *v == digest::crc32c(b)));
        let one_at_a_time = measure(&bufs, digest::crc32c);
        let crate_loop = measure(&bufs, crc32c_crate);
        let many = measure_many(&bufs);
        println!(
            "{:>8}  digest::crc32c loop {:>6.2}  crc32c crate loop {:>6.2}  crc32c_append_many {:>6.2} ({:.2}x)",
            size_name(size),
            one_at_a_time,
            crate_loop,
            many,
            many / one_at_a_time
        );
    }
}

/// Reading 64 MiB without computing anything: the ceiling for the largest size.
fn memory_reference(data: &[u8]) {
    let big = &data[..64 * 1024 * 1024];
    let sum = |d: &[u8]| -> u32 {
        let mut acc = [0u64; 8];
        for chunk in d.chunks_exact(64) {
            for (a, w) in acc.iter_mut().zip(chunk.chunks_exact(8)) {
                *a ^= u64::from_le_bytes(w.try_into().unwrap());
            }
        }
        acc.iter().fold(0, |x, y| x ^ y) as u32
    };
    let read = measure(&[big], sum);
    let crc32c = measure(&[big], digest::crc32c);
    let crc32 = measure(&[big], digest::crc32);
    println!(
        "\n64 MiB memory read (xor of words) {read:.2} GB/s; digest::crc32c at {:.2}x of it, digest::crc32 at {:.2}x",
        crc32c / read,
        crc32 / read
    );
}

/// `Digester::compute` on 96-byte entries (32-byte header part, 64-byte payload part),
/// against resuming with the `crc32c` crate.
fn entry_digests(data: &[u8]) {
    let count = SMALL_WORKING_SET / 96;
    let entries: Vec<&[u8]> = (0..count).map(|i| &data[i * 96..(i + 1) * 96]).collect();
    let digester = digest::Digester::new(digest::DigestType::Crc32c, b"");
    let ours = |e: &[u8]| -> u32 {
        let d = digester.compute(&[&e[..32], &e[32..]]);
        u32::from_be_bytes(d.as_bytes().try_into().unwrap())
    };
    fn two_parts_crc32c_crate(e: &[u8]) -> u32 {
        crc32c::crc32c_append(crc32c::crc32c_append(0, &e[..32]), &e[32..])
    }
    assert_eq!(ours(entries[0]), two_parts_crc32c_crate(entries[0]));
    let bytes: usize = entries.len() * 96;
    let mut best = f64::MAX;
    for _ in 0..PASSES {
        let start = Instant::now();
        let mut rounds = 0u64;
        let mut acc = 0;
        while start.elapsed() < MIN_PASS || rounds == 0 {
            for e in &entries {
                acc ^= ours(black_box(e));
            }
            rounds += 1;
        }
        black_box(acc);
        best = best.min(start.elapsed().as_secs_f64() / rounds as f64);
    }
    let ours_rate = bytes as f64 / best / 1e9;
    let theirs = measure(&entries, two_parts_crc32c_crate);
    println!(
        "CRC-32C digest of a 96-byte entry in two parts: Digester {ours_rate:.2} GB/s, crc32c crate {theirs:.2} GB/s ({:.2}x)",
        ours_rate / theirs
    );
}
