//! The protobuf messages Pulsar stores in BookKeeper entries (PulsarApi.proto) and
//! in its metadata store (MLDataFormats.proto), proto2, as prost structs.
//!
//! As in [`crate::metadata`], every field is `optional` so that presence is visible
//! (required fields are checked where the message is used, as LightProto's
//! `checkRequiredFields` does), enums are `int32` so that unknown values reach the
//! checks, and strings are read as bytes: Java decodes them with replacement, so bad
//! UTF-8 in a producer name is a replaced character there, not a failed entry.
//! A known field with the wrong wire type is an error here; LightProto would skip it.

use prost::Message;

// ---------------------------------------------------------------- PulsarApi.proto

/// `KeyValue{1 key, 2 value}` (both required strings).
#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub key: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

/// `EncryptionKeys{1 key (name), 2 value (the encrypted data key), 3 metadata}`.
#[derive(Clone, PartialEq, Message)]
pub struct EncryptionKeys {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub key: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<KeyValue>,
}

/// `MarkerType` (PulsarMarkers.proto): the `marker_type` values and their names.
pub const MARKER_TYPES: [(i32, &str); 7] = [
    (10, "REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST"),
    (11, "REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE"),
    (12, "REPLICATED_SUBSCRIPTION_SNAPSHOT"),
    (13, "REPLICATED_SUBSCRIPTION_UPDATE"),
    (20, "TXN_COMMITTING"),
    (21, "TXN_COMMIT"),
    (22, "TXN_ABORT"),
];

/// `MessageMetadata`: what the producer writes before the payload of every entry.
#[derive(Clone, PartialEq, Message)]
pub struct MessageMetadata {
    /// Required.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub producer_name: Option<Vec<u8>>,
    /// Required. For a batch, the first message's.
    #[prost(uint64, optional, tag = "2")]
    pub sequence_id: Option<u64>,
    /// Required; ms since the epoch, from the producer's clock.
    #[prost(uint64, optional, tag = "3")]
    pub publish_time: Option<u64>,
    /// Non-batched messages only; batched ones carry theirs per message.
    #[prost(message, repeated, tag = "4")]
    pub properties: Vec<KeyValue>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub replicated_from: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "6")]
    pub partition_key: Option<Vec<u8>>,
    #[prost(bytes = "vec", repeated, tag = "7")]
    pub replicate_to: Vec<Vec<u8>>,
    /// `CompressionType`: NONE 0, LZ4 1, ZLIB 2, ZSTD 3, SNAPPY 4.
    #[prost(int32, optional, tag = "8")]
    pub compression: Option<i32>,
    #[prost(uint32, optional, tag = "9")]
    pub uncompressed_size: Option<u32>,
    // Field 10 (a checksum) was removed from the protocol and is skipped as unknown.
    /// Its presence, not its value, marks the batch layout.
    #[prost(int32, optional, tag = "11")]
    pub num_messages_in_batch: Option<i32>,
    #[prost(uint64, optional, tag = "12")]
    pub event_time: Option<u64>,
    #[prost(message, repeated, tag = "13")]
    pub encryption_keys: Vec<EncryptionKeys>,
    #[prost(bytes = "vec", optional, tag = "14")]
    pub encryption_algo: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "15")]
    pub encryption_param: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "16")]
    pub schema_version: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "17")]
    pub partition_key_b64_encoded: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "18")]
    pub ordering_key: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "19")]
    pub deliver_at_time: Option<i64>,
    #[prost(int32, optional, tag = "20")]
    pub marker_type: Option<i32>,
    #[prost(uint64, optional, tag = "22")]
    pub txnid_least_bits: Option<u64>,
    #[prost(uint64, optional, tag = "23")]
    pub txnid_most_bits: Option<u64>,
    #[prost(uint64, optional, tag = "24")]
    pub highest_sequence_id: Option<u64>,
    #[prost(bool, optional, tag = "25")]
    pub null_value: Option<bool>,
    /// Chunking (PIP-37): `producerName-sequenceId`, the same in every chunk.
    #[prost(bytes = "vec", optional, tag = "26")]
    pub uuid: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "27")]
    pub num_chunks_from_msg: Option<i32>,
    /// The whole message's size as stored (compressed), over all chunks.
    #[prost(int32, optional, tag = "28")]
    pub total_chunk_msg_size: Option<i32>,
    #[prost(int32, optional, tag = "29")]
    pub chunk_id: Option<i32>,
    #[prost(bool, optional, tag = "30")]
    pub null_partition_key: Option<bool>,
    /// The batch indexes a newer compactor kept; the payload holds only those messages.
    #[prost(int32, repeated, packed = "false", tag = "31")]
    pub compacted_batch_indexes: Vec<i32>,
}

/// `SingleMessageMetadata`: one per message inside a batch payload.
#[derive(Clone, PartialEq, Message)]
pub struct SingleMessageMetadata {
    #[prost(message, repeated, tag = "1")]
    pub properties: Vec<KeyValue>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub partition_key: Option<Vec<u8>>,
    /// Required.
    #[prost(int32, optional, tag = "3")]
    pub payload_size: Option<i32>,
    #[prost(bool, optional, tag = "4")]
    pub compacted_out: Option<bool>,
    #[prost(uint64, optional, tag = "5")]
    pub event_time: Option<u64>,
    #[prost(bool, optional, tag = "6")]
    pub partition_key_b64_encoded: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "7")]
    pub ordering_key: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "8")]
    pub sequence_id: Option<u64>,
    #[prost(bool, optional, tag = "9")]
    pub null_value: Option<bool>,
    #[prost(bool, optional, tag = "10")]
    pub null_partition_key: Option<bool>,
}

/// `BrokerEntryMetadata`, prepended by the broker (PIP-70).
#[derive(Clone, PartialEq, Message)]
pub struct BrokerEntryMetadata {
    #[prost(uint64, optional, tag = "1")]
    pub broker_timestamp: Option<u64>,
    /// The topic-wide offset of the entry's last message.
    #[prost(uint64, optional, tag = "2")]
    pub index: Option<u64>,
}

/// `MessageIdData`, as the compactor stores it before each message it keeps.
#[derive(Clone, PartialEq, Message)]
pub struct MessageIdData {
    #[prost(uint64, optional, tag = "1")]
    pub ledger_id: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub entry_id: Option<u64>,
    #[prost(int32, optional, tag = "3")]
    pub partition: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub batch_index: Option<i32>,
}

// ---------------------------------------------------------------- MLDataFormats.proto

/// `KeyValue` of MLDataFormats (a separate type with the same shape).
pub type MlKeyValue = KeyValue;

#[derive(Clone, PartialEq, Message)]
pub struct OffloadDriverMetadata {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub name: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "2")]
    pub properties: Vec<MlKeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OffloadSegment {
    #[prost(int64, optional, tag = "1")]
    pub uid_msb: Option<i64>,
    #[prost(int64, optional, tag = "2")]
    pub uid_lsb: Option<i64>,
    #[prost(bool, optional, tag = "3")]
    pub complete: Option<bool>,
    #[prost(int64, optional, tag = "4")]
    pub assigned_timestamp: Option<i64>,
    #[prost(int64, optional, tag = "5")]
    pub offloaded_timestamp: Option<i64>,
    #[prost(int64, optional, tag = "6")]
    pub end_entry_id: Option<i64>,
    #[prost(message, optional, tag = "7")]
    pub driver_metadata: Option<OffloadDriverMetadata>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OffloadContext {
    #[prost(int64, optional, tag = "1")]
    pub uid_msb: Option<i64>,
    #[prost(int64, optional, tag = "2")]
    pub uid_lsb: Option<i64>,
    #[prost(bool, optional, tag = "3")]
    pub complete: Option<bool>,
    #[prost(bool, optional, tag = "4")]
    pub bookkeeper_deleted: Option<bool>,
    #[prost(int64, optional, tag = "5")]
    pub timestamp: Option<i64>,
    #[prost(message, optional, tag = "6")]
    pub driver_metadata: Option<OffloadDriverMetadata>,
    #[prost(message, repeated, tag = "7")]
    pub offload_segment: Vec<OffloadSegment>,
}

/// `ManagedLedgerInfo.LedgerInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct LedgerInfo {
    /// Required.
    #[prost(int64, optional, tag = "1")]
    pub ledger_id: Option<i64>,
    #[prost(int64, optional, tag = "2")]
    pub entries: Option<i64>,
    #[prost(int64, optional, tag = "3")]
    pub size: Option<i64>,
    #[prost(int64, optional, tag = "4")]
    pub timestamp: Option<i64>,
    #[prost(message, optional, tag = "5")]
    pub offload_context: Option<OffloadContext>,
    /// Newer upstream copies only.
    #[prost(message, repeated, tag = "6")]
    pub properties: Vec<MlKeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NestedPositionInfo {
    /// Required.
    #[prost(int64, optional, tag = "1")]
    pub ledger_id: Option<i64>,
    /// Required.
    #[prost(int64, optional, tag = "2")]
    pub entry_id: Option<i64>,
}

/// The znode at `/managed-ledgers/<name>`: the topic's ledgers, oldest first.
#[derive(Clone, PartialEq, Message)]
pub struct ManagedLedgerInfo {
    #[prost(message, repeated, tag = "1")]
    pub ledger_info: Vec<LedgerInfo>,
    #[prost(message, optional, tag = "2")]
    pub terminated_position: Option<NestedPositionInfo>,
    #[prost(message, repeated, tag = "3")]
    pub properties: Vec<MlKeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MessageRange {
    #[prost(message, optional, tag = "1")]
    pub lower_endpoint: Option<NestedPositionInfo>,
    #[prost(message, optional, tag = "2")]
    pub upper_endpoint: Option<NestedPositionInfo>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LongProperty {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub name: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "2")]
    pub value: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringProperty {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub name: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BatchedEntryDeletionIndexInfo {
    #[prost(message, optional, tag = "1")]
    pub position: Option<NestedPositionInfo>,
    #[prost(int64, repeated, packed = "false", tag = "2")]
    pub delete_set: Vec<i64>,
}

/// The znode at `/managed-ledgers/<name>/<cursor>`.
#[derive(Clone, PartialEq, Message)]
pub struct ManagedCursorInfo {
    /// Required; -1 when the position is the snapshot below rather than a ledger.
    #[prost(int64, optional, tag = "1")]
    pub cursors_ledger_id: Option<i64>,
    #[prost(int64, optional, tag = "2")]
    pub mark_delete_ledger_id: Option<i64>,
    #[prost(int64, optional, tag = "3")]
    pub mark_delete_entry_id: Option<i64>,
    #[prost(message, repeated, tag = "4")]
    pub individual_deleted_messages: Vec<MessageRange>,
    #[prost(message, repeated, tag = "5")]
    pub properties: Vec<LongProperty>,
    #[prost(int64, optional, tag = "6")]
    pub last_active: Option<i64>,
    #[prost(message, repeated, tag = "7")]
    pub batched_entry_deletion_index_info: Vec<BatchedEntryDeletionIndexInfo>,
    #[prost(message, repeated, tag = "8")]
    pub cursor_properties: Vec<StringProperty>,
}

/// `ManagedLedgerInfoMetadata` / `ManagedCursorInfoMetadata`: the header of a
/// compressed znode value.
#[derive(Clone, PartialEq, Message)]
pub struct ManagedInfoCompression {
    /// Required: `CompressionType` as in PulsarApi.
    #[prost(int32, optional, tag = "1")]
    pub compression_type: Option<i32>,
    /// Required.
    #[prost(int32, optional, tag = "2")]
    pub uncompressed_size: Option<i32>,
}
