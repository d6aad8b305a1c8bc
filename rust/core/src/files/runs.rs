//! Runs of one repeated byte (zeros, 0xF0 padding), found a chunk at a time:
//! damaged or preallocated regions can be gigabytes long and must not be walked
//! byte by byte.

const CHUNK: usize = 64;

/// The first position at or after `from` (and before `limit`) whose byte is not
/// `byte`, or `limit` if the whole span is `byte`.
pub(crate) fn first_not(data: &[u8], from: usize, limit: usize, byte: u8) -> usize {
    let limit = limit.min(data.len());
    let mut i = from;
    if i >= limit {
        return limit;
    }
    // Fixed-size chunks compare as whole vectors; only the chunk that differs is
    // searched byte by byte.
    while i + CHUNK <= limit {
        let chunk: &[u8; CHUNK] = data[i..i + CHUNK].try_into().expect("chunk length");
        let mut diff = 0u8;
        for &b in chunk {
            diff |= b ^ byte;
        }
        if diff != 0 {
            break;
        }
        i += CHUNK;
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
    fn finds_first_differing_byte_in_any_chunk_position() {
        for len in [0usize, 1, 63, 64, 65, 200] {
            for at in 0..=len {
                let mut v = vec![0u8; len];
                if at < len {
                    v[at] = 7;
                }
                assert_eq!(first_not(&v, 0, len, 0), at, "len {len} at {at}");
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
