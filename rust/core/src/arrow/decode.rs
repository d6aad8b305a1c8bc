//! Decoding a column of entries (an Arrow binary array, or any sequence of byte
//! slices) into an [`EntryBatchBuilder`], one row per input value.

use arrow_array::cast::AsArray;
use arrow_array::{Array, GenericBinaryArray, OffsetSizeTrait};
use arrow_schema::DataType;

use super::entries::{numbered, EntryBatchBuilder, StageEnd, StagedGroup};
use crate::digest_policy::{DigestResolver, EntryChecks};
use crate::error::{Error, Result};

/// Appends one row per item: `None` is a null row, anything else a decoded entry
/// (or, under `OnError::Flag`, a flagged row). Items are numbered from `first_index`
/// in error messages, so a caller feeding chunks keeps the numbering of the whole input.
///
/// Runs of entries whose digest type is already known are framed, verified and
/// appended a group at a time (see [`StagedGroup`]); anything else (nulls, entries
/// that fail framing, the first V1 entry of a ledger under inference) goes through
/// [`EntryBatchBuilder::decode_append`] alone, after the group before it, so the
/// resolver sees entries in input order.
pub fn append_entries<'a>(
    builder: &mut EntryBatchBuilder,
    resolver: &mut DigestResolver,
    entries: impl IntoIterator<Item = Option<&'a [u8]>>,
    first_index: usize,
    checks: EntryChecks,
) -> Result<()> {
    let mut items = entries.into_iter();
    let mut group = StagedGroup::new();
    let mut index = first_index;
    loop {
        let end = builder.stage(resolver, &mut items, &mut group, index, checks);
        index += group.len();
        builder.append_staged(resolver, &mut group, checks)?;
        match end {
            StageEnd::Full => {}
            StageEnd::Exhausted => return Ok(()),
            StageEnd::Item(None) => {
                builder.append_null();
                index += 1;
            }
            StageEnd::Item(Some(bytes)) => {
                builder.decode_append(resolver, bytes, checks).map_err(|e| numbered(e, index))?;
                index += 1;
            }
        }
    }
}

/// [`append_entries`] over an Arrow `binary`, `large_binary` or `binary_view`
/// array; its buffers become the view sources, so `binary_view` payloads share them.
pub fn append_entry_array(
    builder: &mut EntryBatchBuilder,
    resolver: &mut DigestResolver,
    array: &dyn Array,
    first_index: usize,
    checks: EntryChecks,
) -> Result<()> {
    match array.data_type() {
        DataType::Binary => append_binary_array(builder, resolver, array.as_binary::<i32>(), first_index, checks),
        DataType::LargeBinary => append_binary_array(builder, resolver, array.as_binary::<i64>(), first_index, checks),
        DataType::BinaryView => {
            let a = array.as_binary_view();
            builder.set_view_sources(a.data_buffers());
            append_entries(builder, resolver, a.iter(), first_index, checks)
        }
        other => Err(Error::invalid_argument(format!(
            "entries must be binary, large_binary or binary_view, not {other}"
        ))),
    }
}

/// The values of a `binary` or `large_binary` array straight from its offsets (the
/// array may be a slice: its offsets are the slice's, its value buffer whole).
fn append_binary_array<O: OffsetSizeTrait>(
    builder: &mut EntryBatchBuilder,
    resolver: &mut DigestResolver,
    array: &GenericBinaryArray<O>,
    first_index: usize,
    checks: EntryChecks,
) -> Result<()> {
    builder.set_view_sources(std::slice::from_ref(array.values()));
    let values = ValueSlices::new(array.value_offsets(), array.values().as_slice());
    match array.nulls().filter(|n| n.null_count() > 0) {
        None => append_entries(builder, resolver, values.map(Some), first_index, checks),
        Some(nulls) => {
            let items = values.zip(nulls.iter()).map(|(value, valid)| valid.then_some(value));
            append_entries(builder, resolver, items, first_index, checks)
        }
    }
}

/// The values of a binary array from its offsets, each offset read once (a value
/// ends where the next starts).
struct ValueSlices<'a, O> {
    ends: std::slice::Iter<'a, O>,
    start: usize,
    values: &'a [u8],
}

impl<'a, O: OffsetSizeTrait> ValueSlices<'a, O> {
    fn new(offsets: &'a [O], values: &'a [u8]) -> Self {
        let (start, ends) = match offsets.split_first() {
            Some((first, ends)) => (first.as_usize(), ends.iter()),
            None => (0, [].iter()),
        };
        ValueSlices { ends, start, values }
    }
}

impl<'a, O: OffsetSizeTrait> Iterator for ValueSlices<'a, O> {
    type Item = &'a [u8];

    #[inline(always)]
    fn next(&mut self) -> Option<&'a [u8]> {
        let end = self.ends.next()?.as_usize();
        let start = std::mem::replace(&mut self.start, end);
        // Offsets out of order or past the buffer (an array that breaks Arrow's
        // rules) read as an empty entry, which is reported as truncated.
        Some(self.values.get(start..end).unwrap_or_default())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

/// Bytes held by the values of a `binary`, `large_binary` or `binary_view` array
/// (only the slice in use, nulls counting nothing): a capacity hint for copied
/// payloads. 0 for other types.
pub fn entry_bytes(array: &dyn Array) -> usize {
    match array.data_type() {
        DataType::Binary => {
            let o = array.as_binary::<i32>().value_offsets();
            (o[o.len() - 1] - o[0]) as usize
        }
        DataType::LargeBinary => {
            let o = array.as_binary::<i64>().value_offsets();
            (o[o.len() - 1] - o[0]) as usize
        }
        // The low 32 bits of a view are the value's length.
        DataType::BinaryView => array.as_binary_view().views().iter().map(|v| *v as u32 as usize).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::{EntryBatchOptions, OnError, PayloadMode};
    use crate::digest::{DigestType, Digester};
    use crate::digest_policy::DigestPolicy;
    use crate::entry::{encode_entry, EntryHeader};
    use crate::error::ErrorKind;
    use arrow_array::types::Int64Type;
    use arrow_array::{BinaryArray, BinaryViewArray, Int32Array, LargeBinaryArray};

    fn entries() -> Vec<Option<Vec<u8>>> {
        let d = Digester::new(DigestType::Crc32, b"");
        let mut v: Vec<Option<Vec<u8>>> = (0..5)
            .map(|i| Some(encode_entry(&EntryHeader::new(0, 2, i, i - 1, 0), &[b'p'; 20], &d).unwrap()))
            .collect();
        v[2] = None;
        v
    }

    fn decode(array: &dyn Array, mode: PayloadMode, on_error: OnError) -> Result<arrow_array::RecordBatch> {
        let mut b = EntryBatchBuilder::new(EntryBatchOptions { payload: mode, on_error }, array.len(), 0);
        let mut r = DigestResolver::new(DigestPolicy::Auto, b"");
        append_entry_array(&mut b, &mut r, array, 0, EntryChecks::DIGEST)?;
        b.finish()
    }

    #[test]
    fn every_binary_type_gives_the_same_rows() {
        let e = entries();
        let refs: Vec<Option<&[u8]>> = e.iter().map(|x| x.as_deref()).collect();
        let arrays: Vec<Box<dyn Array>> = vec![
            Box::new(BinaryArray::from(refs.clone())),
            Box::new(LargeBinaryArray::from(refs.clone())),
            Box::new(BinaryViewArray::from(refs.clone())),
        ];
        let expected = decode(arrays[0].as_ref(), PayloadMode::Binary, OnError::Raise).unwrap();
        for a in &arrays {
            for mode in [PayloadMode::Binary, PayloadMode::BinaryView] {
                let got = decode(a.as_ref(), mode, OnError::Raise).unwrap();
                assert_eq!(got.num_rows(), 5);
                for name in ["ledger_id", "entry_id", "digest_ok"] {
                    assert_eq!(got.column_by_name(name), expected.column_by_name(name));
                }
                let ids = got.column_by_name("entry_id").unwrap().as_primitive::<Int64Type>().clone();
                assert!(ids.is_null(2), "a null input is a null row");
                let p = got.column_by_name("payload").unwrap();
                let values: Vec<Option<&[u8]>> = match mode {
                    PayloadMode::Binary => p.as_binary::<i32>().iter().collect(),
                    _ => p.as_binary_view().iter().collect(),
                };
                assert_eq!(values[0], Some(&[b'p'; 20][..]));
            }
        }
    }

    #[test]
    fn raise_names_the_entry_index_and_keeps_the_offset() {
        let mut e = entries();
        e[3].as_mut().unwrap()[45] ^= 0x10;
        let refs: Vec<Option<&[u8]>> = e.iter().map(|x| x.as_deref()).collect();
        let err = decode(&BinaryArray::from(refs.clone()), PayloadMode::None, OnError::Raise).unwrap_err();
        assert_eq!((err.kind, err.offset), (ErrorKind::DigestMismatch, 32));
        assert!(err.detail.starts_with("entry 3: "), "{}", err.detail);
        let flagged = decode(&BinaryArray::from(refs), PayloadMode::None, OnError::Flag).unwrap();
        assert_eq!(flagged.num_rows(), 5);
        assert_eq!(flagged.column_by_name("error").unwrap().null_count(), 4);
    }

    use crate::test_rng::Rng;

    /// Good, damaged, truncated and garbage entries of V1 ledgers (each with its own
    /// digest type) and V2 entries of any type, interleaved, with nulls.
    fn random_entries(rng: &mut Rng, count: usize) -> Vec<Option<Vec<u8>>> {
        random_entries_of(rng, count, 5)
    }

    /// [`random_entries`] with `large_percent` of the payloads 300 to 2300 bytes long.
    fn random_entries_of(rng: &mut Rng, count: usize, large_percent: usize) -> Vec<Option<Vec<u8>>> {
        let ledger_types = [DigestType::Crc32c, DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac, DigestType::Dummy];
        (0..count)
            .map(|i| {
                if rng.below(30) == 0 {
                    return None;
                }
                let payload_len = match rng.below(100) {
                    p if p < large_percent => 300 + rng.below(2000),
                    p if p < large_percent + 5 => 0,
                    _ => rng.below(130),
                };
                let payload: Vec<u8> = (0..payload_len).map(|_| rng.next() as u8).collect();
                let ledger = rng.below(ledger_types.len()) as i64;
                let (scope, dt) = if rng.below(5) == 0 {
                    (1 + rng.below(3) as i64, DigestType::ALL[rng.below(4)])
                } else {
                    (0, ledger_types[ledger as usize])
                };
                let id = i as i64 % 7;
                let header = EntryHeader::new(scope, ledger, id, id - 1, payload_len as i64);
                let mut bytes = encode_entry(&header, &payload, &Digester::new(dt, b"pw")).unwrap();
                match rng.below(12) {
                    0 => {
                        let at = rng.below(bytes.len());
                        bytes[at] ^= 1 << rng.below(8);
                    }
                    1 => bytes.truncate(rng.below(bytes.len() + 1)),
                    2 => bytes = (0..rng.below(60)).map(|_| rng.next() as u8).collect(),
                    _ => {}
                }
                Some(bytes)
            })
            .collect()
    }

    /// The rows (or the error) of one input, grouped or one entry at a time.
    fn decode_with(
        items: &[Option<&[u8]>],
        policy: DigestPolicy,
        options: EntryBatchOptions,
        checks: EntryChecks,
        grouped: bool,
    ) -> (std::result::Result<(), (ErrorKind, u64, String)>, arrow_array::RecordBatch) {
        let mut b = EntryBatchBuilder::new(options, items.len(), 0);
        let mut r = DigestResolver::new(policy, b"pw");
        let result = if grouped {
            append_entries(&mut b, &mut r, items.iter().copied(), 5, checks)
        } else {
            items.iter().enumerate().try_for_each(|(i, item)| match item {
                None => {
                    b.append_null();
                    Ok(())
                }
                Some(bytes) => b.decode_append(&mut r, bytes, checks).map_err(|e| numbered(e, 5 + i)),
            })
        };
        (result.map_err(|e| (e.kind, e.offset, e.detail)), b.finish().unwrap())
    }

    /// A group verdict that wrongly fails only sends the entry down the slow path,
    /// which re-verifies it; one that wrongly passes changes the rows.
    #[test]
    fn grouped_verdicts_equal_one_at_a_time() {
        let mut rng = Rng(0x5EED_1234_ABCD_0001);
        let policies = [
            DigestPolicy::Auto,
            DigestPolicy::Fixed(DigestType::Crc32c),
            DigestPolicy::Fixed(DigestType::Crc32),
            DigestPolicy::Fixed(DigestType::Hmac),
            DigestPolicy::Fixed(DigestType::Dummy),
        ];
        let all_checks = [
            EntryChecks::DIGEST,
            EntryChecks::default(),
            EntryChecks { digest: true, ledger_id: Some(0), entry_id: None },
            EntryChecks { digest: true, ledger_id: None, entry_id: Some(3) },
        ];
        let mut raised = 0;
        for round in 0..300 {
            let count = rng.below(80);
            let entries = random_entries(&mut rng, count);
            let items: Vec<Option<&[u8]>> = entries.iter().map(|e| e.as_deref()).collect();
            let policy = policies[rng.below(policies.len())];
            let checks = all_checks[rng.below(all_checks.len())];
            let payload = [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None][rng.below(3)];
            for on_error in [OnError::Flag, OnError::Raise] {
                let options = EntryBatchOptions { payload, on_error };
                let grouped = decode_with(&items, policy, options, checks, true);
                let single = decode_with(&items, policy, options, checks, false);
                assert_eq!(grouped.0, single.0, "round {round} {policy:?} {checks:?} {on_error:?}");
                assert_eq!(grouped.1, single.1, "round {round} {policy:?} {checks:?} {on_error:?}");
                raised += usize::from(grouped.0.is_err());
            }
        }
        assert!(raised > 50, "the mixes include bad entries ({raised} raised)");
    }

    /// Batches longer than a group, of mostly large entries (groups end by bytes
    /// then, and are verified an entry at a time), of mostly CRC-32C V1 and V2
    /// entries, some damaged: the same rows as one entry at a time.
    #[test]
    fn grouped_verdicts_equal_one_at_a_time_across_groups() {
        let mut rng = Rng(0x5EED_1234_ABCD_0002);
        let policies = [DigestPolicy::Auto, DigestPolicy::Fixed(DigestType::Crc32c)];
        for round in 0..80 {
            let count = 40 + rng.below(200);
            let large = [0, 20, 60, 100][round % 4];
            let entries = random_entries_of(&mut rng, count, large);
            let items: Vec<Option<&[u8]>> = entries.iter().map(|e| e.as_deref()).collect();
            let policy = policies[rng.below(policies.len())];
            let checks = [EntryChecks::DIGEST, EntryChecks::default()][rng.below(2)];
            let payload = [PayloadMode::Binary, PayloadMode::BinaryView, PayloadMode::None][rng.below(3)];
            for on_error in [OnError::Flag, OnError::Raise] {
                let options = EntryBatchOptions { payload, on_error };
                let grouped = decode_with(&items, policy, options, checks, true);
                let single = decode_with(&items, policy, options, checks, false);
                assert_eq!(grouped.0, single.0, "round {round} {policy:?} {checks:?} {on_error:?}");
                assert_eq!(grouped.1, single.1, "round {round} {policy:?} {checks:?} {on_error:?}");
            }
        }
    }

    /// Good CRC-32C entries only (the fast path all the way), many groups long,
    /// with payloads around the group byte limit and the short-copy lengths.
    #[test]
    fn all_good_batches_equal_one_at_a_time() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut rng = Rng(0x5EED_1234_ABCD_0003);
        for lengths in [&[0usize, 1, 12, 13, 31, 32, 33, 63, 64, 65][..], &[511, 512, 513, 4000, 9000][..]] {
            let entries: Vec<Option<Vec<u8>>> = (0..500)
                .map(|i| {
                    let len = lengths[rng.below(lengths.len())];
                    let payload = rng.bytes(len);
                    let scope = if rng.below(4) == 0 { 9 } else { 0 };
                    Some(encode_entry(&EntryHeader::new(scope, 3, i, i - 1, 0), &payload, &d).unwrap())
                })
                .collect();
            let items: Vec<Option<&[u8]>> = entries.iter().map(|e| e.as_deref()).collect();
            for policy in [DigestPolicy::Auto, DigestPolicy::Fixed(DigestType::Crc32c)] {
                for payload in [PayloadMode::Binary, PayloadMode::BinaryView] {
                    let options = EntryBatchOptions { payload, on_error: OnError::Raise };
                    let grouped = decode_with(&items, policy, options, EntryChecks::DIGEST, true);
                    let single = decode_with(&items, policy, options, EntryChecks::DIGEST, false);
                    assert_eq!(grouped.0, Ok(()));
                    assert_eq!(grouped.1, single.1, "{policy:?} {payload:?}");
                    grouped.1.columns().iter().for_each(|c| c.to_data().validate_full().unwrap());
                }
            }
        }
    }

    /// Under inference, runs of CRC-32C entries and runs of other types (V1 ledgers
    /// and V2 entries), switching loops between them, with a damaged entry and a
    /// null inside the runs: the same rows as one entry at a time.
    #[test]
    fn inferred_runs_of_each_type_equal_one_at_a_time() {
        let entry = |dt, scope, ledger, id: i64| {
            let payload = vec![id as u8; (id % 70) as usize];
            encode_entry(&EntryHeader::new(scope, ledger, id, id - 1, 0), &payload, &Digester::new(dt, b"pw")).unwrap()
        };
        let runs = [
            (DigestType::Crc32c, 0, 1, 100),
            (DigestType::Crc32, 0, 2, 100),
            (DigestType::Crc32c, 0, 1, 100),
            (DigestType::Crc32, 7, 3, 60),
            (DigestType::Hmac, 0, 4, 10),
            (DigestType::Crc32c, 5, 5, 60),
            (DigestType::Crc32c, 0, 6, 60),
        ];
        let mut entries: Vec<Option<Vec<u8>>> = Vec::new();
        for (dt, scope, ledger, count) in runs {
            entries.extend((0..count).map(|id| Some(entry(dt, scope, ledger, id))));
        }
        if let Some(Some(e)) = entries.get_mut(150) {
            e[40] ^= 4;
        }
        entries[320] = None;
        let items: Vec<Option<&[u8]>> = entries.iter().map(|e| e.as_deref()).collect();
        for payload in [PayloadMode::Binary, PayloadMode::BinaryView] {
            let options = EntryBatchOptions { payload, on_error: OnError::Flag };
            let grouped = decode_with(&items, DigestPolicy::Auto, options, EntryChecks::DIGEST, true);
            let single = decode_with(&items, DigestPolicy::Auto, options, EntryChecks::DIGEST, false);
            assert_eq!(grouped.0, Ok(()));
            assert_eq!(grouped.1, single.1, "{payload:?}");
            assert_eq!(grouped.1.column_by_name("error").unwrap().null_count(), entries.len() - 1);
        }
    }

    /// Sliced Arrow inputs (offsets not starting at zero, nulls) decode like their items.
    #[test]
    fn sliced_arrow_inputs_decode_like_their_items() {
        let mut rng = Rng(0x5EED_1234_ABCD_0004);
        let entries = random_entries_of(&mut rng, 300, 10);
        let refs: Vec<Option<&[u8]>> = entries.iter().map(|e| e.as_deref()).collect();
        let arrays: Vec<Box<dyn Array>> = vec![
            Box::new(BinaryArray::from(refs.clone())),
            Box::new(LargeBinaryArray::from(refs.clone())),
            Box::new(BinaryViewArray::from(refs.clone())),
        ];
        for array in &arrays {
            for (offset, len) in [(0, 300), (1, 299), (57, 200), (299, 1), (120, 0)] {
                let slice = array.slice(offset, len);
                for policy in [DigestPolicy::Auto, DigestPolicy::Fixed(DigestType::Crc32c)] {
                    for payload in [PayloadMode::Binary, PayloadMode::BinaryView] {
                        let options = EntryBatchOptions { payload, on_error: OnError::Flag };
                        let mut b = EntryBatchBuilder::new(options, len, 0);
                        let mut r = DigestResolver::new(policy, b"pw");
                        append_entry_array(&mut b, &mut r, slice.as_ref(), 5, EntryChecks::DIGEST).unwrap();
                        let got = b.finish().unwrap();
                        let expected = decode_with(&refs[offset..offset + len], policy, options, EntryChecks::DIGEST, false);
                        assert_eq!(got, expected.1, "{:?} {offset} {len} {policy:?} {payload:?}", array.data_type());
                    }
                }
            }
        }
    }

    /// A batch of nothing but bad entries: every row flagged, none lost.
    #[test]
    fn all_bad_batches_flag_every_row() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let entries: Vec<Vec<u8>> = (0..130)
            .map(|i| {
                let mut e = encode_entry(&EntryHeader::new(0, 3, i, i - 1, 0), &[7u8; 40], &d).unwrap();
                *e.last_mut().unwrap() ^= 1;
                e
            })
            .collect();
        let items: Vec<Option<&[u8]>> = entries.iter().map(|e| Some(&e[..])).collect();
        let options = EntryBatchOptions { payload: PayloadMode::Binary, on_error: OnError::Flag };
        let (result, batch) =
            decode_with(&items, DigestPolicy::Fixed(DigestType::Crc32c), options, EntryChecks::DIGEST, true);
        assert_eq!(result, Ok(()));
        assert_eq!(batch.num_rows(), 130);
        let ok = batch.column_by_name("digest_ok").unwrap();
        assert!(ok.as_boolean().iter().all(|v| v == Some(false)));
        assert_eq!(batch.column_by_name("error").unwrap().null_count(), 0);
        let ids = batch.column_by_name("entry_id").unwrap();
        assert_eq!(ids.as_primitive::<Int64Type>().values().to_vec(), (0..130).collect::<Vec<i64>>());
        let options = EntryBatchOptions { on_error: OnError::Raise, ..options };
        let (result, _) = decode_with(&items, DigestPolicy::Fixed(DigestType::Crc32c), options, EntryChecks::DIGEST, true);
        let (kind, offset, detail) = result.unwrap_err();
        assert_eq!((kind, offset), (ErrorKind::DigestMismatch, 32));
        assert!(detail.starts_with("entry 5: "), "{detail}");
    }

    #[test]
    fn entry_bytes_counts_the_slice_in_use() {
        let values: Vec<&[u8]> = vec![b"abc", b"", b"0123456789abcdef"];
        let binary = BinaryArray::from(values.clone());
        assert_eq!(entry_bytes(&binary), 19);
        assert_eq!(entry_bytes(&binary.slice(1, 2)), 16);
        assert_eq!(entry_bytes(&LargeBinaryArray::from(values.clone()).slice(0, 1)), 3);
        assert_eq!(entry_bytes(&BinaryViewArray::from(values)), 19);
        assert_eq!(entry_bytes(&Int32Array::from(vec![1])), 0);
    }

    #[test]
    fn other_types_are_refused() {
        let err = decode(&Int32Array::from(vec![1]), PayloadMode::Binary, OnError::Raise).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
    }
}
