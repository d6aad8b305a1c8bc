//! Times the Pulsar message decoder on batch entries in memory: 100-byte messages
//! in batches of 100, uncompressed and LZ4, and prints ns per message.
//!
//!     cargo run --release -p bkcodec-core --example pulsar_messages [entries] [passes] [none|lz4]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use bkcodec_core::pulsar::message_batch::EntryIds;
use bkcodec_core::pulsar::proto::{BrokerEntryMetadata, SingleMessageMetadata};
use bkcodec_core::pulsar::testing::{batch, compress, compressed, entry, metadata};
use bkcodec_core::pulsar::{DecoderOptions, MessageDecoder};

fn entries(count: usize, codec: i32) -> Vec<Vec<u8>> {
    (0..count)
        .map(|e| {
            let messages: Vec<(SingleMessageMetadata, Vec<u8>)> = (0..100)
                .map(|i| {
                    let seq = (e * 100 + i) as u64;
                    let text = format!("{{\"order\":{seq},\"customer\":\"c-{}\",\"amount\":{}}}", seq % 977, seq * 7 % 10_000);
                    let payload: Vec<u8> = text.bytes().cycle().take(100).collect();
                    let smm = SingleMessageMetadata {
                        sequence_id: Some(seq),
                        partition_key: Some(format!("c-{}", seq % 977).into_bytes()),
                        ..Default::default()
                    };
                    (smm, payload)
                })
                .collect();
            let raw = batch(&messages);
            let mut md = compressed(metadata("bench-producer-0", (e * 100) as u64, 1_700_000_000_000), codec, raw.len());
            md.num_messages_in_batch = Some(100);
            let broker = BrokerEntryMetadata { broker_timestamp: Some(1_700_000_000_000), index: Some((e * 100 + 99) as u64) };
            entry(&md, &compress(codec, &raw), true, Some(&broker))
        })
        .collect()
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let only = std::env::args().nth(3);
    for (name, codec) in [("none", 0), ("lz4", 1)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let data = entries(count, codec);
        let mut best = f64::MAX;
        for _ in 0..std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(5) {
            let start = Instant::now();
            let mut d = MessageDecoder::new(DecoderOptions { batch_rows: usize::MAX, batch_bytes: usize::MAX, ..Default::default() }, HashMap::new());
            for (i, e) in data.iter().enumerate() {
                d.push_entry(i as u64, EntryIds::default(), Some(e), None).unwrap();
            }
            let batches = black_box(d.finish_all().unwrap());
            assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), count * 100);
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!("{name}: {:.1} ns per message ({count} entries of 100 messages of 100 bytes)", best / (count * 100) as f64 * 1e9);
    }
}
