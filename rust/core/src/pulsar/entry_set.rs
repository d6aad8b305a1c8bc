//! Which (ledger, entry) pairs were already read, so that an entry found twice in a
//! bookie (in an entry log and again in the journal) gives its messages once.
//!
//! Entry ids of a ledger mostly arrive in runs, so each ledger keeps a set of
//! disjoint ranges: memory follows the number of gaps, not of entries.

use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Default, Clone)]
pub struct EntrySet {
    /// Per ledger: range start -> last id (inclusive), disjoint and not touching.
    ledgers: HashMap<i64, BTreeMap<i64, i64>>,
}

impl EntrySet {
    pub fn new() -> Self {
        EntrySet::default()
    }

    pub fn contains(&self, ledger_id: i64, entry_id: i64) -> bool {
        self.ledgers
            .get(&ledger_id)
            .and_then(|ranges| ranges.range(..=entry_id).next_back())
            .is_some_and(|(_, &last)| entry_id <= last)
    }

    /// Adds the pair; false if it was already there.
    pub fn insert(&mut self, ledger_id: i64, entry_id: i64) -> bool {
        if self.contains(ledger_id, entry_id) {
            return false;
        }
        let ranges = self.ledgers.entry(ledger_id).or_default();
        let (mut start, mut last) = (entry_id, entry_id);
        // Join the range ending right before, and the one starting right after.
        if let Some(before) = entry_id.checked_sub(1) {
            if let Some((&s, &l)) = ranges.range(..entry_id).next_back() {
                if l == before {
                    start = s;
                    ranges.remove(&s);
                }
            }
        }
        if let Some(after) = entry_id.checked_add(1) {
            if let Some(l) = ranges.remove(&after) {
                last = l;
            }
        }
        ranges.insert(start, last);
        true
    }

    /// Ranges held (for tests and memory checks).
    pub fn range_count(&self) -> usize {
        self.ledgers.values().map(BTreeMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_and_membership_is_exact() {
        let mut s = EntrySet::new();
        for e in [0, 1, 2, 5, 4, 3, 10, 8, 9] {
            assert!(s.insert(7, e), "{e}");
        }
        assert_eq!(s.range_count(), 2);
        for e in 0..12 {
            assert_eq!(s.contains(7, e), e <= 5 || (8..=10).contains(&e), "{e}");
        }
        assert!(!s.insert(7, 4));
        assert!(!s.contains(8, 4));
        assert!(s.insert(7, 6) && s.insert(7, 7));
        assert_eq!(s.range_count(), 1);
        assert!(s.insert(-3, -1) && s.contains(-3, -1) && !s.contains(-3, 0));
        assert!(s.insert(1, i64::MAX) && s.insert(1, i64::MIN) && s.insert(1, i64::MAX - 1));
        assert!(!s.insert(1, i64::MAX) && s.contains(1, i64::MIN) && !s.contains(1, 0));
    }
}
