//! Entries as Pulsar writes them, for tests and the fuzzing corpus: the framing of
//! `Commands.serializeMetadataAndPayload` and `addBrokerEntryMetadata`, batches as
//! `serializeSingleMessageInBatchWithPayload` lays them out.

use prost::Message;

use super::proto::{BrokerEntryMetadata, KeyValue, MessageMetadata, SingleMessageMetadata};
use crate::digest::crc32c;

pub fn metadata(producer: &str, sequence_id: u64, publish_time: u64) -> MessageMetadata {
    MessageMetadata {
        producer_name: Some(producer.as_bytes().to_vec()),
        sequence_id: Some(sequence_id),
        publish_time: Some(publish_time),
        ..Default::default()
    }
}

pub fn property(key: &str, value: &str) -> KeyValue {
    KeyValue { key: Some(key.as_bytes().to_vec()), value: Some(value.as_bytes().to_vec()) }
}

/// `[0x0e01][crc32c]` (when `checksum`), `[u32 size][metadata][payload]`, behind the
/// broker's `[0x0e02][u32 size][BrokerEntryMetadata]` when given.
pub fn entry(md: &MessageMetadata, payload: &[u8], checksum: bool, broker: Option<&BrokerEntryMetadata>) -> Vec<u8> {
    let meta = md.encode_to_vec();
    let mut body = Vec::with_capacity(meta.len() + payload.len() + 4);
    body.extend_from_slice(&(meta.len() as u32).to_be_bytes());
    body.extend_from_slice(&meta);
    body.extend_from_slice(payload);
    let mut out = Vec::new();
    if let Some(b) = broker {
        let bem = b.encode_to_vec();
        out.extend_from_slice(&0x0e02u16.to_be_bytes());
        out.extend_from_slice(&(bem.len() as u32).to_be_bytes());
        out.extend_from_slice(&bem);
    }
    if checksum {
        out.extend_from_slice(&0x0e01u16.to_be_bytes());
        out.extend_from_slice(&crc32c(&body).to_be_bytes());
    }
    out.extend_from_slice(&body);
    out
}

/// A batch payload (uncompressed): each message's size-prefixed metadata, then its
/// payload; `payload_size` is filled in.
pub fn batch(messages: &[(SingleMessageMetadata, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (smm, payload) in messages {
        let smm = SingleMessageMetadata { payload_size: Some(payload.len() as i32), ..smm.clone() };
        let bytes = smm.encode_to_vec();
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(&bytes);
        out.extend_from_slice(payload);
    }
    out
}

pub fn single(sequence_id: u64) -> SingleMessageMetadata {
    SingleMessageMetadata { sequence_id: Some(sequence_id), ..Default::default() }
}

/// A zlib stream as Java's `Deflater` writes it for Pulsar: `SYNC_FLUSH`, no `finish()`.
pub fn java_zlib(data: &[u8]) -> Vec<u8> {
    if data.is_empty() {
        return Vec::new();
    }
    let mut c = flate2::Compress::new(flate2::Compression::default(), true);
    let mut out = Vec::with_capacity(data.len() + data.len() / 8 + 64);
    while (c.total_in() as usize) < data.len() {
        out.reserve(data.len() + 64);
        c.compress_vec(&data[c.total_in() as usize..], &mut out, flate2::FlushCompress::Sync).expect("deflate");
    }
    out
}

/// `data` compressed with the codec numbered as in `CompressionType`.
pub fn compress(codec: i32, data: &[u8]) -> Vec<u8> {
    match codec {
        0 => data.to_vec(),
        1 => lz4::block::compress(data, None, false).expect("lz4"),
        2 => java_zlib(data),
        3 => zstd::bulk::compress(data, 3).expect("zstd"),
        4 => snap::raw::Encoder::new().compress_vec(data).expect("snappy"),
        _ => panic!("codec {codec}"),
    }
}

/// Metadata for a payload compressed with `codec` (fields set only when not NONE, as Java does).
pub fn compressed(mut md: MessageMetadata, codec: i32, uncompressed_size: usize) -> MessageMetadata {
    if codec != 0 {
        md.compression = Some(codec);
        md.uncompressed_size = Some(uncompressed_size as u32);
    }
    md
}
