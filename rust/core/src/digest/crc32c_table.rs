//! CRC-32C without any instruction beyond the baseline: eight tables, eight
//! bytes a step ("slicing by eight"). The `portable` path, on every CPU.

/// The reflected Castagnoli polynomial (x^32 implied).
const POLY: u32 = 0x82F6_3B78;

/// `TABLES[0][b]`: the register after byte `b` from zero; `TABLES[k][b]`: the
/// same byte followed by `k` zero bytes.
static TABLES: [[u32; 256]; 8] = {
    let mut t = [[0u32; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut c = b as u32;
        let mut i = 0;
        while i < 8 {
            c = (c >> 1) ^ if c & 1 != 0 { POLY } else { 0 };
            i += 1;
        }
        t[0][b] = c;
        b += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            b += 1;
        }
        k += 1;
    }
    t
};

/// Runs the CRC-32C register `crc` over `data`.
pub(crate) fn crc32c_register_table(mut crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let words = data.chunks_exact(8);
    let tail = words.remainder();
    for w in words {
        let v = u64::from_le_bytes(w.try_into().unwrap()) ^ u64::from(crc);
        let b = |i: u32| ((v >> (8 * i)) & 0xFF) as usize;
        crc = t[7][b(0)] ^ t[6][b(1)] ^ t[5][b(2)] ^ t[4][b(3)] ^ t[3][b(4)] ^ t[2][b(5)] ^ t[1][b(6)] ^ t[0][b(7)];
    }
    for &b in tail {
        crc = (crc >> 8) ^ t[0][((crc ^ u32::from(b)) & 0xFF) as usize];
    }
    crc
}
