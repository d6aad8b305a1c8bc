//! Runs of one repeated byte (zeros, 0xF0 padding), found a block at a time:
//! damaged or preallocated regions can be gigabytes long and must not be walked
//! byte by byte.

const BLOCK: usize = 4096;
static ZEROS: [u8; BLOCK] = [0; BLOCK];
static PADDING: [u8; BLOCK] = [0xF0; BLOCK];
static ONES: [u8; BLOCK] = [0xFF; BLOCK];

/// The first position at or after `from` (and before `limit`) whose byte is not
/// `byte`, or `limit` if the whole span is `byte`.
pub(crate) fn first_not(data: &[u8], from: usize, limit: usize, byte: u8) -> usize {
    let limit = limit.min(data.len());
    let mut i = from;
    if i >= limit {
        return limit;
    }
    // Whole blocks compare with `memcmp` against a block of the byte.
    let block: Option<&[u8; BLOCK]> = match byte {
        0x00 => Some(&ZEROS),
        0xF0 => Some(&PADDING),
        0xFF => Some(&ONES),
        _ => None,
    };
    if let Some(block) = block {
        while i + BLOCK <= limit && data[i..i + BLOCK] == block[..] {
            i += BLOCK;
        }
    }
    while i < limit && data[i] == byte {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_first_differing_byte_in_any_block_position() {
        for byte in [0u8, 0xF0, 0xFF, 7] {
            for len in [0usize, 1, 63, 4095, 4096, 4097, 9000] {
                for at in [0, 1, len / 2, len.saturating_sub(1), len] {
                    let mut v = vec![byte; len];
                    if at < len {
                        v[at] = byte ^ 1;
                    }
                    assert_eq!(first_not(&v, 0, len, byte), at.min(len), "byte {byte} len {len} at {at}");
                }
            }
        }
    }

    #[test]
    fn respects_from_and_limit() {
        let v = [0xF0u8, 0xF0, 1, 0xF0, 0xF0, 0xF0];
        assert_eq!(first_not(&v, 0, 6, 0xF0), 2);
        assert_eq!(first_not(&v, 3, 6, 0xF0), 6);
        assert_eq!(first_not(&v, 3, 5, 0xF0), 5);
        assert_eq!(first_not(&v, 9, 12, 0xF0), 6);
    }
}
