//! Pulsar's four payload codecs (docs/pulsar.md#payload-codecs), as Java producers write them.
//!
//! No codec carries its own length: the output size is `uncompressed_size` from the
//! metadata, and the output must be exactly that long. That size comes from the
//! data, so before anything is allocated it is checked against what the compressed
//! bytes could possibly expand to (each codec's worst-case ratio); ZLIB and ZSTD
//! output then grows only as fast as the stream really produces it. Output buffers
//! are grown with `try_reserve`: memory running out is an error, never an abort.
//!
//! - LZ4: a raw block (no frame, no size prefix), the C library's
//!   `LZ4_decompress_safe` through `lz4`.
//! - ZLIB: a zlib stream, inflated by zlib-rs through `flate2`. Java producers drain their `Deflater` with `SYNC_FLUSH`
//!   and never call `finish()`, so their streams have no final block and no Adler-32
//!   trailer; C++ and Go producers write complete streams. Both are accepted; the
//!   Adler-32 is checked when the stream has one.
//! - ZSTD: standard frames, libzstd through `zstd`.
//! - SNAPPY: the raw format (varint length, then tags), not the framing format.
//!
//! Each decoder was chosen by `examples/pulsar_codec_choice.rs` (on an AMD EPYC:
//! C LZ4 1.3 to 1.4 times `lz4_flex`, zlib-rs 1.1 to 1.6 times miniz_oxide, C zstd
//! 3.4 to 5.5 times `ruzstd`).

use flate2::{Decompress, FlushDecompress, Status};
use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective};

/// `CompressionType` of PulsarApi.proto (and of MLDataFormats.proto, same numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Lz4,
    Zlib,
    Zstd,
    Snappy,
}

impl Compression {
    pub const ALL: [Compression; 5] =
        [Compression::None, Compression::Lz4, Compression::Zlib, Compression::Zstd, Compression::Snappy];

    pub fn from_proto(value: i32) -> Option<Compression> {
        Some(match value {
            0 => Compression::None,
            1 => Compression::Lz4,
            2 => Compression::Zlib,
            3 => Compression::Zstd,
            4 => Compression::Snappy,
            _ => return None,
        })
    }

    pub const fn proto_value(self) -> i32 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zlib => 2,
            Compression::Zstd => 3,
            Compression::Snappy => 4,
        }
    }

    /// Lower-case name, as the `compression` column spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zlib => "zlib",
            Compression::Zstd => "zstd",
            Compression::Snappy => "snappy",
        }
    }

    /// The most output `compressed_len` bytes of this codec can describe (each
    /// codec's worst-case expansion, plus room for headers). An `uncompressed_size`
    /// above it cannot be true, whatever the bytes say.
    pub fn max_output(self, compressed_len: usize) -> u64 {
        let n = compressed_len as u64;
        match self {
            Compression::None => n,
            // A match's extra length bytes add 255 bytes of output each.
            Compression::Lz4 => n * 255 + 64,
            // Deflate's limit: 258 bytes per 2 bits, 1032:1.
            Compression::Zlib => n * 1032 + 64,
            // An RLE block: 4 bytes for a whole 128 KiB block.
            Compression::Zstd => n * 32 * 1024 + 64,
            // A 3-byte copy of 64 bytes is the densest tag.
            Compression::Snappy => n * 22 + 64,
        }
    }
}

impl Compression {
    /// Whether `compressed_len` bytes of this codec can hold `uncompressed_size`
    /// bytes at all ([`max_output`](Self::max_output)): a size that fails this is
    /// false whatever the bytes are, and is refused before anything is allocated.
    pub fn check_size(self, compressed_len: usize, uncompressed_size: u64) -> Result<(), CodecError> {
        let limit = self.max_output(compressed_len);
        if uncompressed_size <= limit {
            return Ok(());
        }
        fail(
            self,
            if self == Compression::None {
                format!("uncompressed_size {uncompressed_size} differs from the {compressed_len} bytes stored")
            } else {
                format!(
                    "uncompressed_size {uncompressed_size} is more than {compressed_len} compressed bytes can hold (at most {limit})"
                )
            },
        )
    }
}

/// Why a payload did not decompress. The caller adds the entry and offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail<T>(codec: Compression, detail: impl std::fmt::Display) -> Result<T, CodecError> {
    Err(CodecError(format!("{}: {detail}", codec.name())))
}

/// How a sync flush ends deflate output: an empty stored block.
const SYNC_FLUSH_MARKER: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Output buffers grow by at least this much at a time while streaming.
const GROWTH_STEP: usize = 64 * 1024;

/// Decompresses payloads, reusing its codec contexts between calls.
#[derive(Default)]
pub struct Decompressor {
    zlib: Option<Decompress>,
    zstd: Option<DCtx<'static>>,
}

impl Decompressor {
    pub fn new() -> Self {
        Decompressor::default()
    }

    /// Replaces `out` with `input` decompressed with `codec`, exactly
    /// `uncompressed_size` bytes long (`out` keeps its capacity between calls).
    pub fn decompress(
        &mut self,
        codec: Compression,
        input: &[u8],
        uncompressed_size: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        codec.check_size(input.len(), uncompressed_size)?;
        // At most 2^32 - 1 (a uint32 field) and under the ratio limit: it fits in memory.
        let size = uncompressed_size as usize;
        match codec {
            Compression::None => {
                if size != input.len() {
                    return fail(codec, format!("uncompressed_size {size} differs from the {} bytes stored", input.len()));
                }
                out.clear();
                out.extend_from_slice(input);
            }
            Compression::Lz4 => {
                // The C library counts in ints.
                if size > i32::MAX as usize || input.len() > i32::MAX as usize {
                    return fail(codec, format!("a block of {} bytes for {size} is beyond what LZ4 handles", input.len()));
                }
                // The block overwrites every byte it reports; only new room is zeroed.
                fit(codec, out, size)?;
                // `LZ4_decompress_safe` never writes or reads outside the two buffers.
                match lz4::block::decompress_to_buffer(input, Some(size as i32), out) {
                    Ok(n) if n == size => {}
                    Ok(n) => return fail(codec, format!("block holds {n} bytes, uncompressed_size is {size}")),
                    Err(e) => return fail(codec, format!("bad block: {e}")),
                }
            }
            Compression::Snappy => {
                match snap::raw::decompress_len(input) {
                    Ok(n) if n == size => {}
                    Ok(n) => return fail(codec, format!("block holds {n} bytes, uncompressed_size is {size}")),
                    Err(e) => return fail(codec, format!("bad block: {e}")),
                }
                fit(codec, out, size)?;
                match snap::raw::Decoder::new().decompress(input, out) {
                    Ok(n) if n == size => {}
                    Ok(n) => return fail(codec, format!("block holds {n} bytes, uncompressed_size is {size}")),
                    Err(e) => return fail(codec, format!("bad block: {e}")),
                }
            }
            // Java's encoder writes nothing at all for an empty payload (its deflate
            // loop runs only while the Deflater wants no input).
            Compression::Zlib if input.is_empty() && size == 0 => out.clear(),
            Compression::Zlib => {
                out.clear();
                let inflater = self.zlib.get_or_insert_with(|| Decompress::new(true));
                inflater.reset(true);
                inflate(inflater, input, size, out)?;
            }
            Compression::Zstd => {
                out.clear();
                let dctx = self.zstd.get_or_insert_with(DCtx::create);
                zstd_decompress(dctx, input, size, out)?;
            }
        }
        Ok(())
    }
}

/// Room for `more` bytes past `out`'s length, or an error when memory runs out.
fn reserve(codec: Compression, out: &mut Vec<u8>, more: usize) -> Result<(), CodecError> {
    out.try_reserve_exact(more)
        .or_else(|_| fail(codec, format!("no memory for {} bytes of output", out.len().saturating_add(more))))
}

/// Makes `out` exactly `size` long, zeroing only bytes it did not have.
fn fit(codec: Compression, out: &mut Vec<u8>, size: usize) -> Result<(), CodecError> {
    if out.len() >= size {
        out.truncate(size);
    } else {
        reserve(codec, out, size - out.len())?;
        out.resize(size, 0);
    }
    Ok(())
}

/// Grows `out` for the next streaming step: by what was produced so far (at least
/// [`GROWTH_STEP`]), never past one byte more than `size` (room to see an overrun).
fn grow(codec: Compression, out: &mut Vec<u8>, size: usize) -> Result<(), CodecError> {
    let room = out.capacity() - out.len();
    if room == 0 {
        let step = out.len().max(GROWTH_STEP).min(size + 1 - out.len());
        reserve(codec, out, step)?;
    }
    Ok(())
}

/// A zlib stream, terminated or (as Java writes it) ending at a sync flush.
fn inflate(inflater: &mut Decompress, input: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let codec = Compression::Zlib;
    loop {
        grow(codec, out, size)?;
        let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress_vec(&input[in_before as usize..], out, FlushDecompress::None)
            .or_else(|e| fail(codec, format!("bad stream at compressed byte {}: {e}", inflater.total_in())))?;
        if out.len() > size {
            return fail(codec, format!("stream holds more than uncompressed_size {size} bytes"));
        }
        if status == Status::StreamEnd {
            break;
        }
        if inflater.total_in() == in_before && inflater.total_out() == out_before {
            // No progress although there was room to write: the input is used up or
            // the stream cannot go on. A Java stream ends at its sync flush, an empty
            // stored block (00 00 FF FF); ending anywhere else, it was cut short.
            if in_before as usize == input.len() {
                if !input.ends_with(&SYNC_FLUSH_MARKER) {
                    return fail(codec, format!("stream is cut short after {} bytes of output", out.len()));
                }
                break;
            }
            return fail(codec, format!("bad stream at compressed byte {in_before}"));
        }
    }
    if out.len() != size {
        return fail(codec, format!("stream holds {} bytes, uncompressed_size is {size}", out.len()));
    }
    let used = inflater.total_in() as usize;
    if used != input.len() {
        return fail(codec, format!("{} bytes follow the end of the stream", input.len() - used));
    }
    Ok(())
}

/// One or more zstd frames, streamed into `out`.
fn zstd_decompress(dctx: &mut DCtx<'static>, input: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let codec = Compression::Zstd;
    if dctx.reset(ResetDirective::SessionOnly).is_err() {
        return fail(codec, "could not reset the decoder");
    }
    let mut src = InBuffer::around(input);
    let mut frame_done = false;
    while src.pos() < input.len() || !frame_done {
        grow(codec, out, size)?;
        let pos = out.len();
        let (before_in, hint) = {
            let before_in = src.pos();
            let mut dst = OutBuffer::around_pos(out, pos);
            let hint = dctx
                .decompress_stream(&mut dst, &mut src)
                .or_else(|code| fail(codec, format!("bad frame: {}", zstd::zstd_safe::get_error_name(code))))?;
            (before_in, hint)
        };
        if out.len() > size {
            return fail(codec, format!("frames hold more than uncompressed_size {size} bytes"));
        }
        frame_done = hint == 0;
        if !frame_done && src.pos() == input.len() && src.pos() == before_in && out.len() == pos {
            return fail(codec, format!("frame is cut short after {} bytes of output", out.len()));
        }
    }
    if out.len() != size {
        return fail(codec, format!("frames hold {} bytes, uncompressed_size is {size}", out.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ (i / 1000) as u8).collect()
    }

    /// A zlib stream as `java.util.zip.Deflater` with `SYNC_FLUSH` and no `finish()` writes it.
    fn java_zlib(data: &[u8]) -> Vec<u8> {
        let mut c = flate2::Compress::new(flate2::Compression::default(), true);
        let mut out = Vec::with_capacity(data.len() * 2 + 64);
        c.compress_vec(data, &mut out, flate2::FlushCompress::Sync).unwrap();
        assert_eq!(c.total_in() as usize, data.len());
        out
    }

    fn complete_zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn every_codec_round_trips_at_many_sizes() {
        let mut d = Decompressor::new();
        for n in [0usize, 1, 15, 100, 4096, 70_000, 300_000] {
            let data = sample(n);
            let cases: Vec<(Compression, Vec<u8>)> = vec![
                (Compression::None, data.clone()),
                (Compression::Lz4, lz4::block::compress(&data, None, false).unwrap()),
                (Compression::Zlib, java_zlib(&data)),
                (Compression::Zlib, complete_zlib(&data)),
                (Compression::Zstd, zstd::bulk::compress(&data, 3).unwrap()),
                (Compression::Snappy, snap::raw::Encoder::new().compress_vec(&data).unwrap()),
            ];
            let java_empty = (n == 0).then(|| (Compression::Zlib, Vec::new()));
            for (codec, stored) in cases.into_iter().chain(java_empty) {
                let mut out = Vec::new();
                d.decompress(codec, &stored, n as u64, &mut out).unwrap_or_else(|e| panic!("{codec:?} {n}: {e}"));
                assert_eq!(out, data, "{codec:?} {n}");
            }
        }
    }

    #[test]
    fn a_wrong_size_is_an_error_for_every_codec() {
        let mut d = Decompressor::new();
        let data = sample(5000);
        let cases: Vec<(Compression, Vec<u8>)> = vec![
            (Compression::None, data.clone()),
            (Compression::Lz4, lz4::block::compress(&data, None, false).unwrap()),
            (Compression::Zlib, java_zlib(&data)),
            (Compression::Zlib, complete_zlib(&data)),
            (Compression::Zstd, zstd::bulk::compress(&data, 3).unwrap()),
            (Compression::Snappy, snap::raw::Encoder::new().compress_vec(&data).unwrap()),
        ];
        for (codec, stored) in cases {
            let mut out = Vec::new();
            for size in [4999u64, 5001, 0, 10_000] {
                let err = d.decompress(codec, &stored, size, &mut out).unwrap_err();
                assert!(err.0.starts_with(codec.name()), "{err}");
            }
            // The right size still works after the failures.
            d.decompress(codec, &stored, 5000, &mut out).unwrap();
            assert_eq!(out, data);
        }
    }

    #[test]
    fn sizes_beyond_the_codec_ratio_are_refused_before_allocating() {
        let mut d = Decompressor::new();
        for codec in [Compression::Lz4, Compression::Zlib, Compression::Zstd, Compression::Snappy] {
            let mut out = Vec::new();
            let err = d.decompress(codec, &[0u8; 100], u32::MAX as u64, &mut out).unwrap_err();
            assert!(err.0.contains("is more than 100 compressed bytes can hold"), "{err}");
            assert_eq!(out.capacity(), 0, "{codec:?}");
            // Under the limit but false: ZLIB and ZSTD output grows only with what the stream holds.
            let _ = d.decompress(codec, &[0u8; 100], codec.max_output(100), &mut out);
            assert!(out.capacity() < 1 << 20, "{codec:?} allocated {}", out.capacity());
        }
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_panics() {
        let mut d = Decompressor::new();
        let mut out = Vec::new();
        let data = sample(20_000);
        let streams: Vec<(Compression, Vec<u8>)> = vec![
            (Compression::Lz4, lz4::block::compress(&data, None, false).unwrap()),
            (Compression::Zlib, java_zlib(&data)),
            (Compression::Zlib, complete_zlib(&data)),
            (Compression::Zstd, zstd::bulk::compress(&data, 3).unwrap()),
            (Compression::Snappy, snap::raw::Encoder::new().compress_vec(&data).unwrap()),
        ];
        for (codec, stored) in &streams {
            for cut in [0, 1, 2, stored.len() / 2, stored.len() - 1] {
                assert!(d.decompress(*codec, &stored[..cut], 20_000, &mut out).is_err(), "{codec:?} cut at {cut}");
            }
            let mut flipped = stored.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0x55;
            // A flipped byte may still decode (to other bytes); it must never panic.
            let _ = d.decompress(*codec, &flipped, 20_000, &mut out);
        }
        // Trailing bytes after a complete zlib stream, and a bad Adler-32.
        let mut z = complete_zlib(&data);
        z.push(0);
        assert!(d.decompress(Compression::Zlib, &z, 20_000, &mut out).is_err());
        let mut z = complete_zlib(&data);
        let last = z.len() - 1;
        z[last] ^= 1;
        assert!(d.decompress(Compression::Zlib, &z, 20_000, &mut out).is_err());
    }
}
