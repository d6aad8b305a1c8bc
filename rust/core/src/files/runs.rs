//! Runs of one repeated byte (zeros, 0xF0 padding), found a block at a time:
//! damaged or preallocated regions can be gigabytes long and must not be walked
//! byte by byte.

use crate::files::window::{Fetch, View};

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

/// [`first_not`] over a scan's view, from `from` to `limit`: where the run of
/// `byte` ends. When the window ends first, the [`Need`](crate::files::window::Need)
/// to fetch, with `reached` set to where the run is known to go on to (so a caller
/// asked again can resume there instead of starting over).
pub(crate) fn first_not_in(v: &View<'_>, from: usize, limit: usize, byte: u8, reached: &mut usize) -> Fetch<usize> {
    let mut at = from;
    while at < limit {
        let run = match v.contiguous_from(at, limit) {
            Ok(run) => run,
            Err(need) => {
                *reached = at;
                return Err(need);
            }
        };
        let k = first_not(run, 0, run.len(), byte);
        if k < run.len() {
            return Ok(at + k);
        }
        at += run.len();
    }
    Ok(limit)
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
