//! Where BookKeeper stores an entry (`RoundRobinDistributionSchedule`, as its
//! writes use it; ../shared/spec/CLUSTER.md has the source lines).
//!
//! The ensemble in effect for entry `e` is the one with the largest first entry id
//! `<= e`. With ensemble size `E` and write quorum `Qw`, `e` goes to the ensemble
//! positions `(e + w) mod E` for `w = 0 .. Qw-1`, computed in 64 bits as
//! `WriteSetImpl.reset` does (`getWriteSetBookieIndex` casts to `int` first, which
//! differs only past 2^31 and is not what writes use).

use crate::metadata::{Ensemble, LedgerMetadata};

/// A ledger's quorums, as its metadata states them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quorums {
    pub ensemble_size: usize,
    pub write_quorum: usize,
    pub ack_quorum: usize,
}

impl Quorums {
    /// The metadata's sizes; `None` when they are not a usable schedule
    /// (`0 < Qa <= Qw <= E`), which BookKeeper's metadata builder refuses too.
    pub fn of(metadata: &LedgerMetadata) -> Option<Quorums> {
        let (e, w, a) = (metadata.ensemble_size, metadata.write_quorum_size, metadata.ack_quorum_size);
        (a > 0 && a <= w && w <= e).then_some(Quorums {
            ensemble_size: e as usize,
            write_quorum: w as usize,
            ack_quorum: a as usize,
        })
    }
}

/// The ensemble positions that store entry `entry_id`, in write order.
pub fn write_set(entry_id: i64, ensemble_size: usize, write_quorum: usize) -> impl Iterator<Item = usize> {
    debug_assert!(entry_id >= 0 && write_quorum <= ensemble_size && ensemble_size > 0);
    let e = entry_id as u64;
    let size = ensemble_size as u64;
    (0..write_quorum as u64).map(move |w| ((e + w) % size) as usize)
}

/// Whether ensemble position `position` stores `entry_id`: `(i - e) mod E < Qw`
/// (the schedule's `hasEntry`).
pub fn stores(position: usize, entry_id: i64, ensemble_size: usize, write_quorum: usize) -> bool {
    let size = ensemble_size as u64;
    let distance = (position as u64 % size + size - (entry_id as u64 % size)) % size;
    distance < write_quorum as u64
}

/// The index of the ensemble in effect for `entry_id`: the one with the largest
/// first entry id `<= entry_id` (`ensembles.headMap(e + 1).lastKey()`).
pub fn ensemble_index(ensembles: &[Ensemble], entry_id: i64) -> Option<usize> {
    segment_index(ensembles, entry_id, |s| s.first_entry_id)
}

/// [`ensemble_index`] over any list of segments in first-entry order, `first`
/// giving each one's first entry id.
pub fn segment_index<T>(segments: &[T], entry_id: i64, first: impl Fn(&T) -> i64) -> Option<usize> {
    segments.partition_point(|s| first(s) <= entry_id).checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookie_id::BookieId;

    /// BookKeeper's `WriteSetImpl.reset` loop, transcribed.
    fn java_write_set(entry_id: i64, ensemble_size: i32, write_quorum: i32) -> Vec<usize> {
        let mut out = Vec::new();
        for w in 0..write_quorum {
            out.push(((entry_id + w as i64) % ensemble_size as i64) as usize);
        }
        out
    }

    #[test]
    fn write_set_is_the_round_robin_schedule_for_every_size_and_entry() {
        let entries = [0i64, 1, 2, 3, 7, 1000, (1 << 31) - 1, 1 << 31, (1 << 31) + 5, (1 << 40) + 3, (1 << 62) + 3, i64::MAX - 9];
        for e_size in 1..=9 {
            for qw in 1..=e_size {
                for &e in &entries {
                    let got: Vec<usize> = write_set(e, e_size, qw).collect();
                    assert_eq!(got, java_write_set(e, e_size as i32, qw as i32), "E={e_size} Qw={qw} e={e}");
                    for i in 0..e_size {
                        assert_eq!(stores(i, e, e_size, qw), got.contains(&i), "E={e_size} Qw={qw} e={e} i={i}");
                    }
                }
            }
        }
    }

    #[test]
    fn entries_past_two_to_the_31_follow_the_64_bit_modulo_not_the_int_cast() {
        // (int)(e + w) % E goes negative past 2^31; the writes' 64-bit modulo does not.
        let e = (1i64 << 31) + 1;
        let set: Vec<usize> = write_set(e, 5, 3).collect();
        let expected = (e % 5) as usize;
        assert_eq!(set, vec![expected, (expected + 1) % 5, (expected + 2) % 5]);
        assert!((e as i32) < 0, "the int cast would have been negative");
    }

    #[test]
    fn when_ensemble_equals_write_quorum_every_bookie_stores_every_entry() {
        for e in 0..50 {
            let mut set: Vec<usize> = write_set(e, 3, 3).collect();
            set.sort();
            assert_eq!(set, vec![0, 1, 2]);
        }
    }

    #[test]
    fn the_ensemble_in_effect_is_the_last_one_starting_at_or_before_the_entry() {
        let bookie = |s: &str| BookieId::parse(s).unwrap();
        let ensembles = vec![
            Ensemble { first_entry_id: 0, bookies: vec![bookie("a:1")] },
            Ensemble { first_entry_id: 10, bookies: vec![bookie("b:1")] },
            Ensemble { first_entry_id: 10_000_000_000, bookies: vec![bookie("c:1")] },
        ];
        assert_eq!(ensemble_index(&ensembles, 0), Some(0));
        assert_eq!(ensemble_index(&ensembles, 9), Some(0));
        assert_eq!(ensemble_index(&ensembles, 10), Some(1));
        assert_eq!(ensemble_index(&ensembles, 9_999_999_999), Some(1));
        assert_eq!(ensemble_index(&ensembles, 10_000_000_000), Some(2));
        assert_eq!(ensemble_index(&ensembles, -1), None);
        assert_eq!(ensemble_index(&[], 5), None);
    }
}
