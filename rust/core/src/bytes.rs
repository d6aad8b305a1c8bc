//! Bounds-checked big-endian reads. Every BookKeeper integer is big-endian and
//! every read of untrusted bytes goes through here, so a short buffer is always a
//! `Truncated` error naming the offset, never a panic.

use crate::error::{Error, Result};

/// `len` bytes at `offset`, or a `Truncated` error.
#[inline]
pub fn slice_at(buf: &[u8], offset: usize, len: usize) -> Result<&[u8]> {
    match offset.checked_add(len) {
        Some(end) if end <= buf.len() => Ok(&buf[offset..end]),
        _ => Err(Error::truncated(
            offset as u64,
            len as u64,
            buf.len().saturating_sub(offset) as u64,
        )),
    }
}

#[inline]
pub fn array_at<const N: usize>(buf: &[u8], offset: usize) -> Result<[u8; N]> {
    let s = slice_at(buf, offset, N)?;
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    Ok(out)
}

#[inline]
pub fn i64_at(buf: &[u8], offset: usize) -> Result<i64> {
    Ok(i64::from_be_bytes(array_at(buf, offset)?))
}

#[inline]
pub fn i32_at(buf: &[u8], offset: usize) -> Result<i32> {
    Ok(i32::from_be_bytes(array_at(buf, offset)?))
}

#[inline]
pub fn u8_at(buf: &[u8], offset: usize) -> Result<u8> {
    buf.get(offset).copied().ok_or_else(|| Error::truncated(offset as u64, 1, 0))
}

/// Reads an i64 from a slice already known to hold 8 bytes at `offset`.
/// For hot paths that checked the length once up front.
#[inline(always)]
pub(crate) fn i64_unchecked(buf: &[u8], offset: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[offset..offset + 8]);
    i64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn reads_big_endian() {
        let b = [0, 0, 0, 0, 0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe];
        assert_eq!(i64_at(&b, 0).unwrap(), 0x0102);
        assert_eq!(i32_at(&b, 8).unwrap(), -2);
    }

    #[test]
    fn short_reads_are_truncated_errors_with_offset() {
        let b = [0u8; 10];
        let e = i64_at(&b, 5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated);
        assert_eq!(e.offset, 5);
        // offset + len overflowing usize is a truncation, not a panic
        assert!(slice_at(&b, usize::MAX, 2).is_err());
    }
}
