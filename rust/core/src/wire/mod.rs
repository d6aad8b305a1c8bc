//! Bookie wire formats: the framing every message uses (docs/formats.md#v2-wire-frames), the v2
//! binary protocol ([`v2`]) and the metadata RPC messages of the thin-client
//! proposal ([`rpc`]).

pub mod rpc;
pub mod v2;

use crate::bytes::i32_at;
use crate::error::{Error, ErrorKind, Result};

/// Netty's default `nettyMaxFrameSizeBytes`: the largest frame a bookie accepts.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 5 * 1024 * 1024;
/// The `[i32 frameLen]` prefix.
pub const FRAME_LENGTH_LEN: usize = 4;

/// Splits the first frame off `buf`: `[i32 BE frameLen][frameLen bytes]`. Returns
/// the body and the total length consumed. The length is checked against
/// `max_frame_size` and against the bytes present before anything is sliced, so a
/// huge or negative length is an error, never an allocation.
pub fn split_frame(buf: &[u8], max_frame_size: usize) -> Result<(&[u8], usize)> {
    let len = i32_at(buf, 0).map_err(|e| e.with_detail("frame shorter than its 4-byte length"))?;
    if len < 0 {
        return Err(Error::corrupt(0, format!("negative frame length {len}")));
    }
    let len = len as usize;
    if len > max_frame_size {
        return Err(Error::corrupt(0, format!("frame length {len} exceeds the maximum frame size {max_frame_size}")));
    }
    let available = buf.len() - FRAME_LENGTH_LEN;
    if len > available {
        return Err(Error::truncated(FRAME_LENGTH_LEN as u64, len as u64, available as u64)
            .with_detail(format!("frame length says {len} bytes, {available} follow")));
    }
    Ok((&buf[FRAME_LENGTH_LEN..FRAME_LENGTH_LEN + len], FRAME_LENGTH_LEN + len))
}

/// Splits a captured stream into frames (each with its length prefix), in order.
/// Stops with an error at the first frame that does not fit; offsets are from
/// the start of `buf`.
pub fn split_frames(buf: &[u8], max_frame_size: usize) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let (_, used) = split_frame(&buf[pos..], max_frame_size).map_err(|e| e.at_base(pos as u64))?;
        out.push(&buf[pos..pos + used]);
        pos += used;
    }
    Ok(out)
}

/// Splits the whole frames off the front of a stream that may end mid-frame (a
/// capture cut short, or bytes still arriving): the frames, in order, and the
/// offset where the unfinished rest starts (`buf.len()` when nothing is left over).
/// A length no frame can have (negative, over `max_frame_size`) is still an error,
/// at its offset: what follows it cannot be framed.
pub fn split_whole_frames(buf: &[u8], max_frame_size: usize) -> Result<(Vec<&[u8]>, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        match split_frame(&buf[pos..], max_frame_size) {
            Ok((_, used)) => {
                out.push(&buf[pos..pos + used]);
                pos += used;
            }
            Err(e) if e.kind == ErrorKind::Truncated => break,
            Err(e) => return Err(e.at_base(pos as u64)),
        }
    }
    Ok((out, pos))
}

/// Prefixes `body` with its length.
pub(crate) fn frame(body: Vec<u8>) -> Result<Vec<u8>> {
    let len = i32::try_from(body.len())
        .map_err(|_| Error::invalid_argument(format!("frame body of {} bytes does not fit an i32 length", body.len())))?;
    let mut out = Vec::with_capacity(FRAME_LENGTH_LEN + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_errors_name_offsets_and_never_allocate() {
        assert_eq!(split_frame(&[0, 0], 100).unwrap_err().kind, ErrorKind::Truncated);
        let huge = [0x7f, 0xff, 0xff, 0xff, 1, 2];
        let e = split_frame(&huge, usize::MAX).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 4));
        let e = split_frame(&huge, DEFAULT_MAX_FRAME_SIZE).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 0));
        let e = split_frame(&[0xff, 0xff, 0xff, 0xfe], usize::MAX).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt);
        let (body, used) = split_frame(&[0, 0, 0, 2, 9, 8, 7], 100).unwrap();
        assert_eq!((body, used), (&[9u8, 8][..], 6));
    }

    #[test]
    fn split_frames_walks_a_stream() {
        let stream = [0, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 2, 6, 7];
        let frames = split_frames(&stream, 100).unwrap();
        assert_eq!(frames, vec![&stream[0..5], &stream[5..9], &stream[9..15]]);
        // The third frame claims 9 bytes where 1 follows: reported at its body.
        let e = split_frames(&[0, 0, 0, 0, 0, 0, 0, 9, 1], 100).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 8));
    }

    #[test]
    fn whole_frames_of_a_stream_cut_short() {
        let stream = [0, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 2, 6, 7];
        for cut in 0..=stream.len() {
            let (frames, rest) = split_whole_frames(&stream[..cut], 100).unwrap();
            let expected: usize = [5, 9, 15].iter().filter(|&&end| end <= cut).count();
            assert_eq!(frames.len(), expected, "cut at {cut}");
            assert_eq!(rest, [0, 5, 9, 15][expected], "cut at {cut}");
        }
        // A length no frame can have is damage, not an unfinished frame.
        let e = split_whole_frames(&[0, 0, 0, 1, 5, 0xff, 0xff, 0xff, 0xff, 1], 100).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 5));
    }
}
