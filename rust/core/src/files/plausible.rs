//! Plausibility of a stored entry's first bytes, shared by the entry-log and journal
//! framings. Lenient tests are what a walk in step needs; strict tests add what a
//! resynchronisation point needs (relations a writer always keeps, that random bytes
//! rarely do).

use crate::entry::{decode_entry, parse_header, parse_v2_flags, EntryFormat, V1_HEADER_LEN, V2_HEADER_LEN};
use crate::files::framing::ScanOptions;

/// Entry ids and ledger lengths at or above these are taken as random bytes when
/// looking for a sync point (real ledgers are rolled long before).
const MAX_SYNC_ENTRY_ID: i64 = 1 << 40;
const MAX_SYNC_LENGTH: i64 = 1 << 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Plausible,
    Implausible,
    /// Not enough bytes to decide (only at the end of a file).
    Short,
}

#[inline]
fn i64_at(b: &[u8], p: usize) -> i64 {
    i64::from_be_bytes(b[p..p + 8].try_into().expect("8 bytes"))
}

/// `head`: the first bytes of an entry of `n` bytes (what the file holds, at least
/// the 41 bytes of the longest header when the entry is complete).
#[inline]
pub(crate) fn entry_verdict(head: &[u8], n: usize, strict: bool) -> Verdict {
    let Some(&first) = head.first() else { return Verdict::Short };
    let (ids_at, header_len, digest_len) = match EntryFormat::detect(first) {
        EntryFormat::V1 => (0, V1_HEADER_LEN, 0),
        EntryFormat::V2 => match parse_v2_flags(first) {
            Ok(dt) => (V2_HEADER_LEN - V1_HEADER_LEN, V2_HEADER_LEN, dt.len()),
            Err(_) => return Verdict::Implausible,
        },
    };
    if n < header_len + digest_len {
        return Verdict::Implausible;
    }
    let needed = if strict { header_len } else { ids_at + 16 };
    if head.len() < needed {
        return Verdict::Short;
    }
    // A V1 ledger id is non-negative by construction (bit 7 of its first byte is clear).
    let entry_id = i64_at(head, ids_at + 8);
    if entry_id < 0 {
        return Verdict::Implausible;
    }
    if strict {
        let lac = i64_at(head, ids_at + 16);
        let length = i64_at(head, ids_at + 24);
        // An entry is sent before it can be confirmed, so its LAC is below its id; the
        // ledger length includes this entry's payload (at least n - header - 20-byte
        // digest); and no ledger reaches 2^40 entries or 2^50 bytes.
        let min_length = n as i64 - header_len as i64 - 20;
        if lac < -1 || lac >= entry_id || entry_id >= MAX_SYNC_ENTRY_ID || length < min_length || length >= MAX_SYNC_LENGTH {
            return Verdict::Implausible;
        }
    }
    Verdict::Plausible
}

/// Whether one of the configured digests verifies the entry (a V2 entry only under
/// the digest type it declares).
pub(crate) fn entry_verifies(options: &ScanOptions, bytes: &[u8]) -> bool {
    let Ok((_, declared)) = parse_header(bytes) else { return false };
    options.digesters.iter().any(|d| {
        let dt = d.digest_type();
        declared.is_none_or(|x| x == dt)
            && decode_entry(bytes, Some(dt)).is_ok_and(|e| e.digest_matches(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{DigestType, Digester};
    use crate::entry::{encode_entry, EntryHeader};

    #[test]
    fn verdicts() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let e = encode_entry(&EntryHeader::new(0, 5, 3, 2, 10), b"0123456789", &d).unwrap();
        assert_eq!(entry_verdict(&e, e.len(), true), Verdict::Plausible);
        assert_eq!(entry_verdict(&e[..20], e.len(), false), Verdict::Plausible);
        assert_eq!(entry_verdict(&e[..20], e.len(), true), Verdict::Short);
        assert_eq!(entry_verdict(&e, 20, false), Verdict::Implausible);
        // LAC not below the entry id: lenient yes, strict no.
        let odd = encode_entry(&EntryHeader::new(0, 5, 3, 3, 10), b"x", &d).unwrap();
        assert_eq!(entry_verdict(&odd, odd.len(), false), Verdict::Plausible);
        assert_eq!(entry_verdict(&odd, odd.len(), true), Verdict::Implausible);
        let v2 = encode_entry(&EntryHeader::new(9, -4, 0, -1, 1), b"y", &d).unwrap();
        assert_eq!(entry_verdict(&v2, v2.len(), true), Verdict::Plausible);
        assert_eq!(entry_verdict(&[0xF5; 64], 64, false), Verdict::Implausible);
    }
}
