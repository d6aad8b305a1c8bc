//! The decoder on entries built as Pulsar builds them (see `testing`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType};
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::decoder::{DecoderOptions, LedgerOwner, MessageDecoder};
use super::message_batch::EntryIds;
use super::proto::{BrokerEntryMetadata, EncryptionKeys, MessageIdData, SingleMessageMetadata};
use super::testing::*;
use crate::arrow::OnError;
use crate::error::ErrorKind;

fn ids(ledger: i64, entry: i64) -> EntryIds {
    EntryIds { scope_id: None, ledger_id: Some(ledger), entry_id: Some(entry) }
}

fn decoder(on_error: OnError) -> MessageDecoder {
    MessageDecoder::new(DecoderOptions { on_error, ..Default::default() }, HashMap::new())
}

/// Decodes entries (ledger 1, entry ids in order) under `Flag` into one batch.
fn decode(entries: &[Vec<u8>]) -> RecordBatch {
    decode_with(decoder(OnError::Flag), entries)
}

fn decode_with(mut d: MessageDecoder, entries: &[Vec<u8>]) -> RecordBatch {
    for (i, e) in entries.iter().enumerate() {
        d.push_entry(i as u64, ids(1, i as i64), Some(e), None).unwrap();
    }
    let batches = d.finish_all().unwrap();
    concat(&d.schema(), &batches)
}

/// `concat_batches` without the arrow-select crate.
fn concat(schema: &arrow_schema::SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    if batches.len() == 1 {
        return batches[0].clone();
    }
    let columns = (0..schema.fields().len())
        .map(|c| {
            let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            concat_arrays(&arrays)
        })
        .collect();
    RecordBatch::try_new(schema.clone(), columns).unwrap()
}

fn concat_arrays(arrays: &[&dyn Array]) -> arrow_array::ArrayRef {
    let data: Vec<arrow_data::ArrayData> = arrays.iter().map(|a| a.to_data()).collect();
    let refs: Vec<&arrow_data::ArrayData> = data.iter().collect();
    let capacity = arrays.iter().map(|a| a.len()).sum();
    let mut m = arrow_data::transform::MutableArrayData::new(refs, true, capacity);
    for (i, a) in arrays.iter().enumerate() {
        m.try_extend(i, 0, a.len()).unwrap();
    }
    arrow_array::make_array(m.freeze())
}

fn strs(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    b.column_by_name(name).unwrap().as_string::<i32>().iter().map(|v| v.map(str::to_string)).collect()
}

fn i64s(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = b.column_by_name(name).unwrap();
    match c.data_type() {
        DataType::Int64 => c.as_primitive::<Int64Type>().iter().collect(),
        DataType::Int32 => c.as_primitive::<Int32Type>().iter().map(|v| v.map(i64::from)).collect(),
        DataType::Timestamp(..) => c.as_primitive::<TimestampMillisecondType>().iter().collect(),
        other => panic!("{name} is {other}"),
    }
}

fn bools(b: &RecordBatch, name: &str) -> Vec<Option<bool>> {
    b.column_by_name(name).unwrap().as_boolean().iter().collect()
}

fn payloads(b: &RecordBatch) -> Vec<Option<Vec<u8>>> {
    b.column_by_name("payload").unwrap().as_binary::<i32>().iter().map(|v| v.map(<[u8]>::to_vec)).collect()
}

fn errors(b: &RecordBatch) -> Vec<Option<String>> {
    strs(b, "error")
}

fn no_errors(b: &RecordBatch) {
    assert!(errors(b).iter().all(Option::is_none), "{:?}", errors(b));
}

#[test]
fn a_plain_message_is_one_row_with_its_fields() {
    let mut md = metadata("prod-1", 42, 1_700_000_000_000);
    md.properties = vec![property("a", "1"), property("b", "2")];
    md.partition_key = Some(b"key".to_vec());
    md.event_time = Some(1_600_000_000_000);
    md.schema_version = Some(vec![0, 0, 0, 0, 0, 0, 0, 3]);
    md.replicated_from = Some(b"east".to_vec());
    let b = decode(&[entry(&md, b"hello", true, None)]);
    assert_eq!(b.num_rows(), 1);
    no_errors(&b);
    assert_eq!(strs(&b, "kind"), [Some("message".into())]);
    assert_eq!(strs(&b, "producer_name"), [Some("prod-1".into())]);
    assert_eq!(i64s(&b, "sequence_id"), [Some(42)]);
    assert_eq!(i64s(&b, "publish_time"), [Some(1_700_000_000_000)]);
    assert_eq!(i64s(&b, "event_time"), [Some(1_600_000_000_000)]);
    assert_eq!(i64s(&b, "batch_index"), [None]);
    assert_eq!(i64s(&b, "batch_size"), [None]);
    assert_eq!(strs(&b, "partition_key"), [Some("key".into())]);
    assert_eq!(strs(&b, "compression"), [Some("none".into())]);
    assert_eq!(strs(&b, "replicated_from"), [Some("east".into())]);
    assert_eq!(bools(&b, "checksum_ok"), [Some(true)]);
    assert_eq!(bools(&b, "encrypted"), [Some(false)]);
    assert_eq!(payloads(&b), [Some(b"hello".to_vec())]);
    let props = b.column_by_name("properties").unwrap().as_map();
    assert_eq!(props.value_length(0), 2);
    let keys = props.keys().as_string::<i32>();
    assert_eq!((keys.value(0), keys.value(1)), ("a", "b"));
    assert_eq!(i64s(&b, "ledger_id"), [Some(1)]);
    let ts = b.schema().field_with_name("publish_time").unwrap().data_type().clone();
    assert_eq!(ts, DataType::Timestamp(arrow_schema::TimeUnit::Millisecond, Some("UTC".into())));
}

#[test]
fn batches_expand_with_each_message_s_own_metadata() {
    let mut md = metadata("p", 10, 1000);
    md.num_messages_in_batch = Some(3);
    // The batch's key is not inherited by messages without one (as Pulsar's consumer).
    md.partition_key = Some(b"batch-key".to_vec());
    let mut first = single(10);
    first.properties = vec![property("k", "v")];
    first.partition_key = Some(b"k0".to_vec());
    first.event_time = Some(5);
    let mut third = SingleMessageMetadata { compacted_out: Some(true), null_value: Some(true), ..Default::default() };
    third.ordering_key = Some(vec![9]);
    third.properties = vec![property("t", "3"), property("u", "4")];
    let payload = batch(&[(first, b"a".to_vec()), (single(11), b"bb".to_vec()), (third, Vec::new())]);
    let broker = BrokerEntryMetadata { broker_timestamp: Some(2000), index: Some(102) };
    let b = decode(&[entry(&md, &payload, true, Some(&broker))]);
    no_errors(&b);
    assert_eq!(b.num_rows(), 3);
    assert_eq!(i64s(&b, "batch_index"), [Some(0), Some(1), Some(2)]);
    assert_eq!(i64s(&b, "batch_size"), [Some(3); 3]);
    // Sequence ids: the message's own, else the batch's.
    assert_eq!(i64s(&b, "sequence_id"), [Some(10), Some(11), Some(10)]);
    assert_eq!(strs(&b, "partition_key"), [Some("k0".into()), None, None]);
    assert_eq!(i64s(&b, "event_time"), [Some(5), None, None]);
    assert_eq!(bools(&b, "compacted_out"), [Some(false), Some(false), Some(true)]);
    assert_eq!(bools(&b, "null_value"), [Some(false), Some(false), Some(true)]);
    assert_eq!(payloads(&b), [Some(b"a".to_vec()), Some(b"bb".to_vec()), Some(vec![])]);
    // The broker's index is the last message's offset.
    assert_eq!(i64s(&b, "message_index"), [Some(100), Some(101), Some(102)]);
    assert_eq!(i64s(&b, "broker_index"), [Some(102); 3]);
    assert_eq!(i64s(&b, "broker_timestamp"), [Some(2000); 3]);
    let props = b.column_by_name("properties").unwrap().as_map();
    assert_eq!((props.value_length(0), props.value_length(1), props.value_length(2)), (1, 0, 2));
    let keys: Vec<_> = props.keys().as_string::<i32>().iter().flatten().collect();
    assert_eq!(keys, ["k", "t", "u"]);
    let ordering = b.column_by_name("ordering_key").unwrap();
    assert_eq!((0..3).map(|i| ordering.is_valid(i)).collect::<Vec<_>>(), [false, false, true]);
}

#[test]
fn batches_of_plain_messages_give_what_each_message_would() {
    // Messages that set none of the rare fields are filled as runs; each column must
    // hold what a message of its own gives, with keys on all, none or some of them.
    let mut md = metadata("p", 10, 1000);
    md.num_messages_in_batch = Some(3);
    md.event_time = Some(7);
    let keyed = |i: u64, key: Option<&str>| {
        let mut m = single(i);
        m.partition_key = key.map(|k| k.as_bytes().to_vec());
        (m, vec![i as u8])
    };
    for keys in [[Some("a"), Some("b"), Some("c")], [None, None, None], [Some("a"), None, Some("c")]] {
        let messages: Vec<_> = keys.iter().enumerate().map(|(i, k)| keyed(i as u64, *k)).collect();
        let b = decode(&[entry(&md, &batch(&messages), true, None)]);
        no_errors(&b);
        assert_eq!(i64s(&b, "event_time"), [Some(7); 3], "the batch's event time");
        assert_eq!(strs(&b, "partition_key"), keys.map(|k| k.map(str::to_string)));
        assert_eq!(bools(&b, "partition_key_b64_encoded"), keys.map(|k| k.map(|_| false)));
        for flag in ["null_value", "null_partition_key", "compacted_out"] {
            assert_eq!(bools(&b, flag), [Some(false); 3], "{flag}");
        }
        assert_eq!(b.column_by_name("ordering_key").unwrap().null_count(), 3);
        let props = b.column_by_name("properties").unwrap().as_map();
        assert_eq!((props.null_count(), props.value_length(0), props.value_length(2)), (0, 0, 0));
    }
}

#[test]
fn batches_longer_than_one_chunk_of_rows() {
    // A batch's messages are appended 1,024 at a time; properties and fields must
    // stay with their own message across the chunks.
    let n = 2100;
    let mut md = metadata("p", 0, 1);
    md.num_messages_in_batch = Some(n);
    let messages: Vec<_> = (0..n as u64)
        .map(|i| {
            let mut m = single(i);
            if i % 700 == 3 {
                m.properties = vec![property("i", &i.to_string())];
            }
            (m, i.to_le_bytes().to_vec())
        })
        .collect();
    let b = decode(&[entry(&md, &batch(&messages), true, None)]);
    no_errors(&b);
    assert_eq!(b.num_rows(), n as usize);
    assert_eq!(i64s(&b, "sequence_id"), (0..n as i64).map(Some).collect::<Vec<_>>());
    assert_eq!(payloads(&b), (0..n as u64).map(|i| Some(i.to_le_bytes().to_vec())).collect::<Vec<_>>());
    let props = b.column_by_name("properties").unwrap().as_map();
    let with: Vec<usize> = (0..n as usize).filter(|&i| props.value_length(i) == 1).collect();
    assert_eq!(with, [3, 703, 1403]);
    let values: Vec<_> = props.values().as_string::<i32>().iter().flatten().collect();
    assert_eq!(values, ["3", "703", "1403"]);
}

#[test]
fn plain_and_other_messages_mixed_in_a_batch_keep_their_own_fields() {
    // A batch's plain messages (key, payload size and sequence id at most) are
    // gathered column by column, the others as rows. In any mix, and split across
    // output batches, each row must hold what its message gives alone (a batch of
    // one), with its own batch index and topic offset.
    let mut rng = crate::test_rng::Rng(0x9A11_7E57);
    let mut md = metadata("p", 10, 1000);
    md.event_time = Some(7);
    let mut messages = Vec::new();
    while messages.len() < 300 {
        // Runs of one kind of message, of every length from 1 to past a chunk.
        let (kind, run) = (rng.below(10), [1, 2, 5, 40, 1100][rng.below(5)]);
        for _ in 0..run {
            let i = messages.len() as u64;
            let mut m = single(i);
            match kind {
                0 => m.partition_key = Some(format!("key-{i}").into_bytes()),
                1 => m.sequence_id = None,
                2 => m.properties = vec![property("k", &i.to_string())],
                3 => m.event_time = Some(i),
                4 => m.ordering_key = Some(vec![i as u8]),
                5 => m.null_value = Some(true),
                6 => (m.partition_key, m.partition_key_b64_encoded) = (Some(b"a2V5".to_vec()), Some(true)),
                7 => m.compacted_out = Some(false),
                _ => {}
            }
            let len = rng.below(150);
            messages.push((m, rng.bytes(len)));
        }
    }
    let n = messages.len();
    md.num_messages_in_batch = Some(n as i32);
    let broker = BrokerEntryMetadata { broker_timestamp: Some(2000), index: Some(5000) };
    let whole = decode(&[entry(&md, &batch(&messages), true, Some(&broker))]);
    no_errors(&whole);
    assert_eq!(i64s(&whole, "batch_index"), (0..n as i64).map(Some).collect::<Vec<_>>());
    assert_eq!(i64s(&whole, "message_index"), (0..n as i64).map(|i| Some(5000 - (n as i64 - 1) + i)).collect::<Vec<_>>());
    let own = [
        "sequence_id", "event_time", "partition_key", "partition_key_b64_encoded", "ordering_key", "properties",
        "null_value", "null_partition_key", "compacted_out", "payload", "producer_name", "publish_time", "error",
    ];
    let mut one_md = md.clone();
    one_md.num_messages_in_batch = Some(1);
    for (i, m) in messages.iter().enumerate() {
        let alone = decode(&[entry(&one_md, &batch(std::slice::from_ref(m)), true, None)]);
        for column in own {
            let got = whole.column_by_name(column).unwrap().slice(i, 1);
            assert_eq!(got.to_data(), alone.column_by_name(column).unwrap().to_data(), "message {i} ({:?}), {column}", m.0);
        }
    }
    // Output batches full at any row give the same rows.
    for rows in [1, 3, 1000] {
        let mut d = MessageDecoder::new(DecoderOptions { batch_rows: rows, ..Default::default() }, HashMap::new());
        d.push_entry(0, ids(1, 0), Some(&entry(&md, &batch(&messages), true, Some(&broker))), None).unwrap();
        let batches = d.finish_all().unwrap();
        assert!(batches.iter().all(|b| b.num_rows() <= rows));
        assert_eq!(concat(&d.schema(), &batches), whole, "{rows} rows a batch");
    }
}

#[test]
fn a_batch_of_one_uses_the_batch_layout() {
    let mut md = metadata("p", 0, 1);
    md.num_messages_in_batch = Some(1);
    let b = decode(&[entry(&md, &batch(&[(single(0), b"x".to_vec())]), false, None)]);
    no_errors(&b);
    assert_eq!(i64s(&b, "batch_index"), [Some(0)]);
    assert_eq!(payloads(&b), [Some(b"x".to_vec())]);
    assert_eq!(bools(&b, "checksum_ok"), [None]);
}

#[test]
fn every_codec_and_batch_size() {
    for codec in 0..=4 {
        for n in [1usize, 2, 100, 1000] {
            let messages: Vec<(SingleMessageMetadata, Vec<u8>)> =
                (0..n).map(|i| (single(i as u64), format!("message {i} {}", "x".repeat(i % 50)).into_bytes())).collect();
            let raw = batch(&messages);
            let mut md = compressed(metadata("p", 0, 1), codec, raw.len());
            md.num_messages_in_batch = Some(n as i32);
            let b = decode(&[entry(&md, &compress(codec, &raw), true, None)]);
            no_errors(&b);
            assert_eq!(b.num_rows(), n, "codec {codec} n {n}");
            let want: Vec<Option<Vec<u8>>> = messages.into_iter().map(|(_, p)| Some(p)).collect();
            assert_eq!(payloads(&b), want, "codec {codec} n {n}");
            let name = ["none", "lz4", "zlib", "zstd", "snappy"][codec as usize];
            assert!(strs(&b, "compression").iter().all(|c| c.as_deref() == Some(name)));
        }
    }
}

#[test]
fn checksum_mismatch_is_flagged_or_raised() {
    let md = metadata("p", 0, 1);
    let mut e = entry(&md, b"payload", true, None);
    let last = e.len() - 1;
    e[last] ^= 0x20;
    let b = decode(std::slice::from_ref(&e));
    assert_eq!(bools(&b, "checksum_ok"), [Some(false)]);
    let err = errors(&b)[0].clone().unwrap();
    assert!(err.starts_with("digest mismatch: Pulsar checksum mismatch"), "{err}");
    // The payload is still there, flagged.
    assert_eq!(payloads(&b), [Some(b"payloaD".to_vec())]);
    let mut d = decoder(OnError::Raise);
    let err = d.push_entry(7, ids(3, 4), Some(&e), None).unwrap_err();
    assert_eq!((err.kind, err.offset), (ErrorKind::DigestMismatch, 2));
    assert!(err.detail.starts_with("entry 7 (ledger 3 entry 4): "), "{err}");
}

#[test]
fn damaged_entries_keep_their_bytes_and_say_where() {
    let md = metadata("p", 0, 1);
    let good = entry(&md, b"hello", true, None);
    let cut = good[..12].to_vec();
    let b = decode(&[cut.clone(), good.clone()]);
    assert_eq!(b.num_rows(), 2);
    let err = errors(&b)[0].clone().unwrap();
    assert!(err.starts_with("truncated: MessageMetadata size"), "{err}");
    assert!(err.ends_with("at byte 6 of the entry"), "{err}");
    assert_eq!(payloads(&b)[0], Some(cut.clone()));
    assert_eq!(bools(&b, "checksum_ok")[0], Some(false));
    assert_eq!(errors(&b)[1], None);
    let mut d = decoder(OnError::Raise);
    let err = d.push_entry(0, ids(1, 0), Some(&cut), None).unwrap_err();
    assert_eq!((err.kind, err.offset), (ErrorKind::Truncated, 6));
}

#[test]
fn wrong_and_impossible_uncompressed_sizes() {
    let raw = b"some payload that compresses, some payload that compresses".to_vec();
    let stored = compress(1, &raw);
    let md = compressed(metadata("p", 0, 1), 1, raw.len() + 1);
    let b = decode(&[entry(&md, &stored, true, None)]);
    let err = errors(&b)[0].clone().unwrap();
    assert!(err.starts_with("corrupt: lz4: "), "{err}");
    assert_eq!(payloads(&b), [Some(stored.clone())], "the stored bytes are kept");
    // 4 GB claimed by a 100-byte entry: refused before any allocation.
    for codec in 1..=4 {
        let md = compressed(metadata("p", 0, 1), codec, u32::MAX as usize);
        let b = decode(&[entry(&md, &[7u8; 60], true, None)]);
        let err = errors(&b)[0].clone().unwrap();
        assert!(err.contains("is more than 60 compressed bytes can hold"), "{err}");
    }
    let mut md = metadata("p", 0, 1);
    md.compression = Some(9);
    let err = errors(&decode(&[entry(&md, b"x", true, None)]))[0].clone().unwrap();
    assert!(err.contains("unknown compression type 9"), "{err}");
}

#[test]
fn a_flagged_message_keeps_its_own_metadata() {
    // A non-batched message whose payload does not decompress: flagged, with its
    // properties and key (found by fuzzing: the row once lost its property list).
    let mut md = compressed(metadata("p", 0, 1), 1, 999);
    md.properties = vec![property("k", "v")];
    md.partition_key = Some(b"key".to_vec());
    let b = decode(&[entry(&md, b"\x00\x01", true, None)]);
    assert!(errors(&b)[0].is_some());
    assert_eq!(strs(&b, "partition_key"), [Some("key".into())]);
    let props = b.column_by_name("properties").unwrap().as_map();
    assert_eq!(props.value_length(0), 1);
}

#[test]
fn damage_inside_a_batch_keeps_the_messages_before_it() {
    let mut md = metadata("p", 0, 1);
    md.num_messages_in_batch = Some(4);
    let mut raw = batch(&[(single(0), b"one".to_vec()), (single(1), b"two".to_vec()), (single(2), b"three".to_vec())]);
    // The fourth message is missing; the third's size field is damaged.
    let third = raw.len() - (4 + 4 + 5);
    raw[third] = 0x7f;
    let b = decode(&[entry(&md, &raw, false, None)]);
    assert_eq!(b.num_rows(), 3);
    assert_eq!(&payloads(&b)[..2], [Some(b"one".to_vec()), Some(b"two".to_vec())]);
    assert_eq!(errors(&b)[..2], [None, None]);
    let err = errors(&b)[2].clone().unwrap();
    assert!(err.contains("message 2 of a batch of 4"), "{err}");
    assert_eq!(i64s(&b, "batch_index")[2], Some(2));
    // Trailing bytes after the last message are reported, not dropped.
    md.num_messages_in_batch = Some(1);
    let raw = batch(&[(single(0), b"one".to_vec()), (single(1), b"two".to_vec())]);
    let b = decode(&[entry(&md, &raw, false, None)]);
    assert_eq!(b.num_rows(), 2);
    assert!(errors(&b)[1].clone().unwrap().contains("bytes follow the last of the batch's 1 messages"));
}

#[test]
fn compacted_batch_indexes_name_the_kept_messages() {
    let mut md = metadata("p", 0, 1);
    md.num_messages_in_batch = Some(4);
    md.compacted_batch_indexes = vec![0, 2];
    let raw = batch(&[(single(0), b"k0".to_vec()), (single(2), b"k2".to_vec())]);
    let b = decode(&[entry(&md, &raw, true, None)]);
    no_errors(&b);
    assert_eq!(i64s(&b, "batch_index"), [Some(0), Some(2)]);
    assert_eq!(i64s(&b, "batch_size"), [Some(4), Some(4)]);
}

fn chunk_entry(uuid: &str, id: i32, of: i32, total: usize, codec: i32, size: usize, part: &[u8]) -> Vec<u8> {
    let mut md = compressed(metadata("p", 5, 1), codec, size);
    md.uuid = Some(uuid.as_bytes().to_vec());
    md.chunk_id = Some(id);
    md.num_chunks_from_msg = Some(of);
    md.total_chunk_msg_size = Some(total as i32);
    entry(&md, part, true, None)
}

#[test]
fn chunks_are_reassembled_across_entries_in_any_order() {
    let message: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 97).to_be_bytes()).collect();
    let stored = compress(3, &message);
    let parts: Vec<&[u8]> = stored.chunks(stored.len() / 3 + 1).collect();
    assert_eq!(parts.len(), 3);
    let e = |id: usize| chunk_entry("p-5", id as i32, 3, stored.len(), 3, message.len(), parts[id]);
    let other = entry(&metadata("q", 0, 1), b"between", true, None);
    let mut d = decoder(OnError::Flag);
    // Chunk 2 arrives first (another file), with another message in between.
    d.push_entry(0, ids(9, 2), Some(&e(2)), None).unwrap();
    d.push_entry(1, ids(8, 0), Some(&e(0)), None).unwrap();
    d.push_entry(2, ids(8, 1), Some(&other), None).unwrap();
    d.push_entry(3, ids(9, 1), Some(&e(1)), None).unwrap();
    let b = concat(&d.schema(), &d.finish_all().unwrap());
    no_errors(&b);
    assert_eq!(b.num_rows(), 2);
    assert_eq!(payloads(&b), [Some(b"between".to_vec()), Some(message)]);
    assert_eq!(strs(&b, "chunk_uuid")[1].as_deref(), Some("p-5"));
    assert_eq!(i64s(&b, "num_chunks")[1], Some(3));
    assert_eq!(i64s(&b, "chunk_id")[1], None, "a whole message");
    // The message id is the last chunk's (Pulsar's ChunkMessageIdImpl), the first chunk is named.
    assert_eq!((i64s(&b, "ledger_id")[1], i64s(&b, "entry_id")[1]), (Some(9), Some(2)));
    assert_eq!((i64s(&b, "first_chunk_ledger_id")[1], i64s(&b, "first_chunk_entry_id")[1]), (Some(8), Some(0)));
}

#[test]
fn incomplete_and_unassembled_chunks() {
    let e0 = chunk_entry("u", 0, 3, 6, 0, 6, b"ab");
    let e1 = chunk_entry("u", 1, 3, 6, 0, 6, b"cd");
    let b = decode(&[e0.clone(), e1.clone()]);
    assert_eq!(b.num_rows(), 2);
    assert_eq!(strs(&b, "kind"), [Some("chunk".into()), Some("chunk".into())]);
    assert_eq!(payloads(&b), [Some(b"ab".to_vec()), Some(b"cd".to_vec())]);
    for err in errors(&b) {
        assert!(err.unwrap().starts_with("truncated: incomplete chunked message u: chunks 0,1 of 3 found"));
    }
    let mut d = decoder(OnError::Raise);
    d.push_entry(0, ids(1, 0), Some(&e0), None).unwrap();
    assert_eq!(d.finish().unwrap_err().kind, ErrorKind::Truncated);
    // Without reassembly every chunk is a row of its own, with no error.
    let options = DecoderOptions { reassemble_chunks: false, ..Default::default() };
    let b = decode_with(MessageDecoder::new(options, HashMap::new()), &[e0, e1]);
    no_errors(&b);
    assert_eq!(i64s(&b, "chunk_id"), [Some(0), Some(1)]);
}

#[test]
fn encrypted_markers_and_kafka_entries_say_what_they_are() {
    let mut md = compressed(metadata("p", 0, 1), 1, 500);
    md.num_messages_in_batch = Some(5);
    md.encryption_keys =
        vec![EncryptionKeys { key: Some(b"mykey".to_vec()), value: Some(vec![1, 2, 3]), metadata: vec![] }];
    md.encryption_algo = Some(b"AES".to_vec());
    md.encryption_param = Some(vec![0; 12]);
    let cipher = vec![0xAB; 64];
    let mut marker = metadata("broker", 0, 1);
    marker.marker_type = Some(21);
    let mut kafka = metadata("", 0, 0);
    kafka.properties = vec![property("entry.format", "kafka")];
    kafka.num_messages_in_batch = Some(7);
    let b = decode(&[entry(&md, &cipher, true, None), entry(&marker, b"\x08\x01", true, None), entry(&kafka, b"kafka records", false, None)]);
    no_errors(&b);
    assert_eq!(strs(&b, "kind"), [Some("message".into()), Some("marker".into()), Some("kafka".into())]);
    assert_eq!(bools(&b, "encrypted"), [Some(true), Some(false), Some(false)]);
    assert_eq!(payloads(&b)[0], Some(cipher));
    assert_eq!(i64s(&b, "batch_size"), [Some(5), None, Some(7)]);
    assert_eq!(strs(&b, "encryption_algo")[0].as_deref(), Some("AES"));
    let keys = b.column_by_name("encryption_keys").unwrap().as_map();
    assert_eq!(keys.keys().as_string::<i32>().value(0), "mykey");
    assert_eq!(i64s(&b, "marker_type"), [None, Some(21), None]);
    assert_eq!(payloads(&b)[2], Some(b"kafka records".to_vec()));
}

#[test]
fn entries_seen_twice_give_their_messages_once() {
    let e = entry(&metadata("p", 0, 1), b"once", true, None);
    let mut damaged = e.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let mut d = decoder(OnError::Flag);
    // A damaged copy first: flagged, and the intact copy after it still counts.
    d.push_entry(0, ids(1, 0), Some(&damaged), None).unwrap();
    d.push_entry(1, ids(1, 0), Some(&e), None).unwrap();
    d.push_entry(2, ids(1, 0), Some(&e), None).unwrap();
    d.push_entry(3, ids(1, 0), Some(&damaged), None).unwrap();
    let b = concat(&d.schema(), &d.finish_all().unwrap());
    assert_eq!(b.num_rows(), 2);
    assert!(errors(&b)[0].is_some() && errors(&b)[1].is_none());
    assert_eq!(d.counts().duplicate_entries, 2);
}

#[test]
fn the_ledger_owner_decides_what_an_entry_is() {
    let owners = HashMap::from([
        (5, LedgerOwner { kind: "cursor".into(), topic: Some(Arc::from("persistent://t/n/x")) }),
        (6, LedgerOwner { kind: "compacted".into(), topic: Some(Arc::from("persistent://t/n/x")) }),
        (7, LedgerOwner { kind: "messages".into(), topic: Some(Arc::from("persistent://t/n/x")) }),
    ]);
    let mut d = MessageDecoder::new(DecoderOptions::default(), owners.clone());
    let message = entry(&metadata("p", 0, 1), b"m", true, None);
    // A compacted ledger's record: [u32 idSize][MessageIdData][u32 size][entry].
    let id = prost::Message::encode_to_vec(&MessageIdData { ledger_id: Some(7), entry_id: Some(3), ..Default::default() });
    let mut record = (id.len() as u32).to_be_bytes().to_vec();
    record.extend_from_slice(&id);
    record.extend_from_slice(&(message.len() as u32).to_be_bytes());
    record.extend_from_slice(&message);
    d.push_entry(0, ids(5, 0), Some(b"\x08\x07\x10\x01"), None).unwrap();
    d.push_entry(1, ids(6, 0), Some(&record), None).unwrap();
    d.push_entry(2, ids(7, 0), Some(&message), None).unwrap();
    let b = concat(&d.schema(), &d.finish_all().unwrap());
    assert_eq!(strs(&b, "kind"), [Some("cursor".into()), Some("message".into()), Some("message".into())]);
    assert!(errors(&b)[0].clone().unwrap().contains("not a topic message: the entry is in a cursor ledger of persistent://t/n/x"));
    assert_eq!(&errors(&b)[1..], [None, None]);
    assert_eq!(payloads(&b)[1], Some(b"m".to_vec()));
    assert!(strs(&b, "topic").iter().all(|t| t.as_deref() == Some("persistent://t/n/x")));
    let mut d = MessageDecoder::new(DecoderOptions { on_error: OnError::Raise, ..Default::default() }, owners);
    assert_eq!(d.push_entry(0, ids(5, 0), Some(b"x"), None).unwrap_err().kind, ErrorKind::InvalidArgument);
}

#[test]
fn reader_rows_are_read_by_column_name() {
    let good = entry(&metadata("p", 0, 1), b"hi", true, None);
    let schema = Arc::new(Schema::new(vec![
        Field::new("offset", DataType::Int64, true),
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("payload", DataType::Binary, true),
        Field::new("record_type", DataType::Utf8, true),
        Field::new("error", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![0, 10, 20, 30])),
            Arc::new(Int64Array::from(vec![Some(3), Some(3), Some(3), None])),
            Arc::new(Int64Array::from(vec![Some(0), Some(-0x1000), Some(1), None])),
            Arc::new(BinaryArray::from(vec![Some(&good[..]), Some(&b"key"[..]), Some(&good[..]), None])),
            Arc::new(StringArray::from(vec!["entry", "ledger_key", "entry", "damage"])),
            Arc::new(StringArray::from(vec![None, None, Some("digest mismatch: bad"), Some("torn_record: cut")])),
        ],
    )
    .unwrap();
    let mut d = decoder(OnError::Flag);
    d.push_record_batch(&batch, 0).unwrap();
    let b = concat(&d.schema(), &d.finish_all().unwrap());
    assert_eq!(b.num_rows(), 3, "the ledger key record is not a message");
    assert_eq!(i64s(&b, "entry_id"), [Some(0), Some(1), None]);
    assert_eq!(errors(&b), [None, Some("entry: digest mismatch: bad".into()), Some("entry: torn_record: cut".into())]);
    assert_eq!(payloads(&b), [Some(b"hi".to_vec()), Some(b"hi".to_vec()), None]);
    // Without a payload column there is nothing to read.
    let no_payload = batch.project(&[0, 1, 2]).unwrap();
    assert_eq!(d.push_record_batch(&no_payload, 0).unwrap_err().kind, ErrorKind::InvalidArgument);
}

#[test]
fn output_batches_split_by_rows_and_bytes_without_losing_rows() {
    let mut md = metadata("p", 0, 1);
    md.num_messages_in_batch = Some(10);
    let raw = batch(&(0..10).map(|i| (single(i), vec![i as u8; 100])).collect::<Vec<_>>());
    let entries: Vec<Vec<u8>> = (0..7).map(|_| entry(&md, &raw, true, None)).collect();
    let whole = decode(&entries);
    for (rows, bytes) in [(3, usize::MAX), (1000, 250), (1, 1)] {
        let options = DecoderOptions { batch_rows: rows, batch_bytes: bytes, ..Default::default() };
        let mut d = MessageDecoder::new(options, HashMap::new());
        for (i, e) in entries.iter().enumerate() {
            d.push_entry(i as u64, ids(1, i as i64), Some(e), None).unwrap();
        }
        let batches = d.finish_all().unwrap();
        assert!(batches.len() > 1);
        assert!(batches.iter().all(|b| b.num_rows() <= rows));
        assert_eq!(concat(&d.schema(), &batches), whole);
    }
}

/// A non-batched zstd message of `n` zeros, as stored, and its entry.
fn zstd_zeros(n: usize) -> (Vec<u8>, Vec<u8>) {
    let stored = compress(3, &vec![0u8; n]);
    let md = compressed(metadata("p", 0, 1), 3, n);
    let e = entry(&md, &stored, true, None);
    (stored, e)
}

#[test]
fn a_declared_size_above_max_message_bytes_is_flagged_with_it_not_decompressed() {
    let (stored, e) = zstd_zeros(50_000);
    let options = DecoderOptions { max_message_bytes: 10_000, ..Default::default() };
    let b = decode_with(MessageDecoder::new(options, HashMap::new()), std::slice::from_ref(&e));
    let error = errors(&b)[0].clone().expect("flagged");
    assert!(error.contains("uncompressed_size 50000") && error.contains("max_message_bytes"), "{error}");
    assert_eq!(payloads(&b), [Some(stored.clone())], "the row keeps the bytes as stored");
    assert_eq!(i64s(&b, "uncompressed_size"), [Some(50_000)]);
    // A batch entry is refused the same way; a declared size within the bound is read.
    let mut md = compressed(metadata("p", 0, 1), 3, 50_000);
    md.num_messages_in_batch = Some(1);
    let raw = batch(&[(single(0), vec![0u8; 50_000 - 8])]);
    let mut md_raw = md.clone();
    md_raw.uncompressed_size = Some(raw.len() as u32);
    let batched = entry(&md_raw, &compress(3, &raw), true, None);
    let b = decode_with(MessageDecoder::new(options, HashMap::new()), &[batched]);
    assert!(errors(&b)[0].as_deref().is_some_and(|e| e.contains("max_message_bytes")));
    let b = decode_with(MessageDecoder::new(DecoderOptions { max_message_bytes: 50_000, ..options }, HashMap::new()), std::slice::from_ref(&e));
    assert_eq!((errors(&b), payloads(&b)), (vec![None], vec![Some(vec![0u8; 50_000])]));
    // Under Raise: the error names the entry, the offset of the payload and the size.
    let mut d = MessageDecoder::new(DecoderOptions { on_error: OnError::Raise, ..options }, HashMap::new());
    let err = d.push_entry(0, ids(1, 0), Some(&e), None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.detail.contains("entry 0 (ledger 1 entry 0)") && err.detail.contains("50000"), "{err}");
    assert_eq!(err.offset as usize, e.len() - stored.len());
}

#[test]
fn without_a_payload_column_a_message_that_is_not_a_batch_is_not_decompressed() {
    let (_, e) = zstd_zeros(50_000);
    // Garbage that declares a size its bytes could hold: only decompressing would tell.
    let garbage = entry(&compressed(metadata("p", 1, 1), 3, 1000), &[0xAB; 40], true, None);
    // A size no 40 bytes of zstd can hold is known false from the metadata alone.
    let impossible = entry(&compressed(metadata("p", 2, 1), 3, u32::MAX as usize), &[0xAB; 40], true, None);
    let options = DecoderOptions { payload: crate::arrow::PayloadMode::None, max_message_bytes: 10_000, ..Default::default() };
    let b = decode_with(MessageDecoder::new(options, HashMap::new()), &[e, garbage, impossible]);
    assert!(b.column_by_name("payload").is_none());
    assert_eq!(i64s(&b, "sequence_id"), [Some(0), Some(1), Some(2)]);
    let errors = errors(&b);
    assert_eq!(errors[..2], [None, None]);
    assert!(errors[2].as_deref().is_some_and(|e| e.contains("compressed bytes can hold")), "{errors:?}");
}

#[test]
fn a_batch_is_finished_once_its_bytes_reach_batch_bytes_not_at_the_next_entry() {
    let (_, e) = zstd_zeros(5000);
    let mut d = MessageDecoder::new(DecoderOptions { batch_bytes: 4000, ..Default::default() }, HashMap::new());
    d.push_entry(0, ids(1, 0), Some(&e), None).unwrap();
    let full = d.pop_batch().expect("a full batch waits for no further entry");
    assert_eq!(full.num_rows(), 1);
    // Rows that do not fill it leave the batch open.
    let (_, small) = zstd_zeros(100);
    d.push_entry(1, ids(1, 1), Some(&small), None).unwrap();
    assert!(d.pop_batch().is_none());
}

#[test]
fn a_single_batch_decoder_refuses_the_entry_that_needs_a_second_batch() {
    let good = entry(&metadata("p", 0, 1), b"ok", true, None);
    let options = DecoderOptions { batch_rows: 2, single_batch: true, ..Default::default() };
    let mut d = MessageDecoder::new(options, HashMap::new());
    d.push_entry(0, ids(1, 0), Some(&good), None).unwrap();
    d.push_entry(1, ids(1, 1), Some(&good), None).unwrap();
    let err = d.push_entry(2, ids(1, 2), Some(&good), None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.detail.contains("one record batch"), "{err}");
    assert!(d.pop_batch().is_none());
}
