//! Plausibility of a stored entry's first bytes, shared by the entry-log and journal
//! framings. Lenient tests are what a walk in step needs; strict tests add what a
//! resynchronisation point needs (relations a writer always keeps, that random bytes
//! rarely do).

use zerocopy::FromBytes;

use crate::entry::{HeaderIds, HeaderLayout, HeaderView};

/// Entry ids and ledger lengths at or above these are taken as random bytes when
/// looking for a sync point (real ledgers are rolled long before).
pub(crate) const MAX_SYNC_ENTRY_ID: i64 = 1 << 40;
const MAX_SYNC_LENGTH: i64 = 1 << 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plausibility {
    Plausible,
    Implausible,
    /// Not enough bytes to decide (only at the end of a file).
    Short,
}

/// `head`: the first bytes of an entry of `n` bytes (what the file holds, at least
/// the 41 bytes of the longest header when the entry is complete).
#[inline]
pub(crate) fn entry_plausibility(head: &[u8], n: usize, strict: bool) -> Plausibility {
    let Some(&first) = head.first() else { return Plausibility::Short };
    let layout = HeaderLayout::of(first);
    let digest_len = match layout {
        HeaderLayout::V1 => 0,
        HeaderLayout::V2(dt) => dt.len(),
        HeaderLayout::Invalid => return Plausibility::Implausible,
    };
    if n < layout.header_len() + digest_len {
        return Plausibility::Implausible;
    }
    if !strict {
        // A V1 ledger id is non-negative by construction (bit 7 of its first byte is clear).
        let Some(Ok((ids, _))) = head.get(layout.fields_at()..).map(HeaderIds::ref_from_prefix) else {
            return Plausibility::Short;
        };
        return if ids.entry_id.get() < 0 { Plausibility::Implausible } else { Plausibility::Plausible };
    }
    let Some((h, _)) = HeaderView::read(head) else { return Plausibility::Short };
    let (entry_id, lac, length) = (h.entry_id(), h.last_add_confirmed(), h.length());
    // An entry is sent before it can be confirmed, so its LAC is below its id; the
    // ledger length includes this entry's payload (at least n - header - 20-byte
    // digest); and no ledger reaches 2^40 entries or 2^50 bytes.
    let min_length = n as i64 - layout.header_len() as i64 - 20;
    if entry_id < 0 || lac < -1 || lac >= entry_id || entry_id >= MAX_SYNC_ENTRY_ID || length < min_length || length >= MAX_SYNC_LENGTH {
        return Plausibility::Implausible;
    }
    if layout == HeaderLayout::V1 && entry_id >= 1 << 32 && entry_id & LOW_HALF == 0 && lac & LOW_HALF == 0 {
        // A V1 header seen four bytes on: its entry id and LAC are the real ones'
        // low halves shifted up (and the real ledger id's high half, the size field
        // of that view, is a record size when the ledger id is 2^37 or so).
        return Plausibility::Implausible;
    }
    Plausibility::Plausible
}

const LOW_HALF: i64 = 0xFFFF_FFFF;

/// A record the file ends inside: its ids are reported, so they must be ones a
/// writer could have written (text and noise also pass the lenient test). The length
/// is not judged: nothing after the record confirms it, and writers that do not
/// keep a running length exist.
#[inline]
pub(crate) fn torn_entry_plausibility(head: &[u8], n: usize) -> Plausibility {
    match entry_plausibility(head, n, false) {
        Plausibility::Plausible => {}
        other => return other,
    }
    let Some((h, _)) = HeaderView::read(head) else { return Plausibility::Short };
    let (entry_id, lac) = (h.entry_id(), h.last_add_confirmed());
    if entry_id >= MAX_SYNC_ENTRY_ID || lac < -1 || lac >= entry_id {
        return Plausibility::Implausible;
    }
    Plausibility::Plausible
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
        assert_eq!(entry_plausibility(&e, e.len(), true), Plausibility::Plausible);
        assert_eq!(entry_plausibility(&e[..20], e.len(), false), Plausibility::Plausible);
        assert_eq!(entry_plausibility(&e[..20], e.len(), true), Plausibility::Short);
        assert_eq!(entry_plausibility(&e, 20, false), Plausibility::Implausible);
        // LAC not below the entry id: lenient yes, strict no.
        let odd = encode_entry(&EntryHeader::new(0, 5, 3, 3, 10), b"x", &d).unwrap();
        assert_eq!(entry_plausibility(&odd, odd.len(), false), Plausibility::Plausible);
        assert_eq!(entry_plausibility(&odd, odd.len(), true), Plausibility::Implausible);
        let v2 = encode_entry(&EntryHeader::new(9, -4, 0, -1, 1), b"y", &d).unwrap();
        assert_eq!(entry_plausibility(&v2, v2.len(), true), Plausibility::Plausible);
        assert_eq!(entry_plausibility(&[0xF5; 64], 64, false), Plausibility::Implausible);
        // A V1 header four bytes on (a ledger id of 2^39 or so makes its size field
        // a record size): entry id and LAC multiples of 2^32.
        let e = encode_entry(&EntryHeader::new(0, 920_645_928_748, 2, 1, 90), &[7; 40], &d).unwrap();
        let view = &e[4..];
        assert_eq!(i32::from_be_bytes(e[..4].try_into().unwrap()), 214);
        assert_eq!(entry_plausibility(view, 214, false), Plausibility::Plausible);
        assert_eq!(entry_plausibility(view, 214, true), Plausibility::Implausible);
    }
}
