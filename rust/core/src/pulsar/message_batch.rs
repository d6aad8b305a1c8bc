//! Pulsar messages as Arrow rows: the columns of `decode_messages` / `read_messages`.
//!
//! One row per message: a batch entry becomes one row per message in it. Where a
//! batched message and its entry both carry a field, the row takes what Pulsar's
//! consumer (`MessageImpl`) gives the application: properties, keys, null flags and
//! the `compacted_out` mark from the message's `SingleMessageMetadata`, its event
//! time and sequence id when it has them (else the entry's), everything else from
//! the entry's `MessageMetadata`.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, MapBuilder, MapFieldNames, StringBuilder};
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use super::proto::{BrokerEntryMetadata, KeyValue, MessageMetadata, SingleMessageMetadata};
use super::codec::Compression;
use crate::arrow::PrimitiveColumn;
use crate::error::{Error, Result};

/// What the `kind` column says a row is.
pub mod kind {
    /// An application message (batched or not, encrypted or not).
    pub const MESSAGE: &str = "message";
    /// A broker marker (`marker_type` set): replicated-subscription and transaction markers.
    pub const MARKER: &str = "marker";
    /// An entry written by Kafka-on-Pulsar (`entry.format=kafka`): Kafka record batches.
    pub const KAFKA: &str = "kafka";
    /// One chunk of a chunked message, not reassembled.
    pub const CHUNK: &str = "chunk";
}

fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

fn map_type(value: DataType) -> DataType {
    // The names MapBuilder gives its children by default.
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![Field::new("keys", DataType::Utf8, false), Field::new("values", value, true)])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// Shape of the message columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageBatchOptions {
    /// Include the `payload` column.
    pub payload: bool,
    /// Include the `error` column (bad data becomes flagged rows rather than errors).
    pub flag_errors: bool,
}

impl MessageBatchOptions {
    pub fn schema(&self) -> SchemaRef {
        let ts = timestamp_type;
        let mut fields = vec![
            Field::new("scope_id", DataType::Int64, true),
            Field::new("ledger_id", DataType::Int64, true),
            Field::new("entry_id", DataType::Int64, true),
            Field::new("batch_index", DataType::Int32, true),
            Field::new("batch_size", DataType::Int32, true),
            Field::new("kind", DataType::Utf8, true),
            Field::new("topic", DataType::Utf8, true),
            Field::new("producer_name", DataType::Utf8, true),
            Field::new("sequence_id", DataType::Int64, true),
            Field::new("publish_time", ts(), true),
            Field::new("event_time", ts(), true),
            Field::new("partition_key", DataType::Utf8, true),
            Field::new("partition_key_b64_encoded", DataType::Boolean, true),
            Field::new("ordering_key", DataType::Binary, true),
            Field::new("properties", map_type(DataType::Utf8), true),
            Field::new("compression", DataType::Utf8, true),
            Field::new("uncompressed_size", DataType::Int64, true),
            Field::new("schema_version", DataType::Binary, true),
            Field::new("replicated_from", DataType::Utf8, true),
            Field::new("txnid_most_bits", DataType::Int64, true),
            Field::new("txnid_least_bits", DataType::Int64, true),
            Field::new("marker_type", DataType::Int32, true),
            Field::new("deliver_at_time", ts(), true),
            Field::new("chunk_uuid", DataType::Utf8, true),
            Field::new("chunk_id", DataType::Int32, true),
            Field::new("num_chunks", DataType::Int32, true),
            Field::new("total_chunk_size", DataType::Int32, true),
            Field::new("first_chunk_ledger_id", DataType::Int64, true),
            Field::new("first_chunk_entry_id", DataType::Int64, true),
            Field::new("encrypted", DataType::Boolean, true),
            Field::new("encryption_algo", DataType::Utf8, true),
            Field::new("encryption_param", DataType::Binary, true),
            Field::new("encryption_keys", map_type(DataType::Binary), true),
            Field::new("null_value", DataType::Boolean, true),
            Field::new("null_partition_key", DataType::Boolean, true),
            Field::new("compacted_out", DataType::Boolean, true),
            Field::new("broker_timestamp", ts(), true),
            Field::new("broker_index", DataType::Int64, true),
            Field::new("message_index", DataType::Int64, true),
            Field::new("checksum_ok", DataType::Boolean, true),
        ];
        if self.payload {
            fields.push(Field::new("payload", DataType::Binary, true));
        }
        if self.flag_errors {
            fields.push(Field::new("error", DataType::Utf8, true));
        }
        Arc::new(Schema::new(fields))
    }
}

/// Where a row came from: the entry's ids and what the file reader said of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryIds {
    pub scope_id: Option<i64>,
    pub ledger_id: Option<i64>,
    pub entry_id: Option<i64>,
}

/// Everything one row is made of; `None` fields are null.
#[derive(Default, Clone, Copy)]
pub struct MessageRow<'a> {
    pub ids: EntryIds,
    pub batch_index: Option<i32>,
    pub batch_size: Option<i32>,
    pub kind: Option<&'a str>,
    pub topic: Option<&'a str>,
    /// The entry's metadata (for a batch, the fields its messages share).
    pub metadata: Option<&'a MessageMetadata>,
    /// A batched message's own metadata.
    pub single: Option<&'a SingleMessageMetadata>,
    pub broker: Option<&'a BrokerEntryMetadata>,
    pub message_index: Option<i64>,
    pub checksum_ok: Option<bool>,
    /// For a reassembled chunked message: where its first chunk is.
    pub first_chunk: Option<EntryIds>,
    pub payload: Option<&'a [u8]>,
    pub error: Option<&'a str>,
}

fn utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Appends an optional string given as bytes (replacing bad UTF-8, as Java does).
#[inline]
fn push_str(b: &mut StringBuilder, v: Option<&[u8]>) {
    match v {
        Some(s) => match std::str::from_utf8(s) {
            Ok(s) => b.append_value(s),
            Err(_) => b.append_value(utf8(s)),
        },
        None => b.append_null(),
    }
}

fn push_properties(b: &mut MapBuilder<StringBuilder, StringBuilder>, props: Option<&[KeyValue]>) {
    if let Some(props) = props {
        for kv in props {
            push_str(b.keys(), Some(kv.key.as_deref().unwrap_or_default()));
            push_str(b.values(), kv.value.as_deref());
        }
    }
    // Appending a map entry cannot fail for keys and values appended in pairs.
    let _ = b.append(props.is_some());
}

/// Accumulates message rows into Arrow columns.
pub struct MessageBatchBuilder {
    options: MessageBatchOptions,
    schema: SchemaRef,
    rows: usize,
    payload_bytes: usize,
    scope_id: PrimitiveColumn<Int64Type>,
    ledger_id: PrimitiveColumn<Int64Type>,
    entry_id: PrimitiveColumn<Int64Type>,
    batch_index: PrimitiveColumn<Int32Type>,
    batch_size: PrimitiveColumn<Int32Type>,
    kind: StringBuilder,
    topic: StringBuilder,
    producer_name: StringBuilder,
    sequence_id: PrimitiveColumn<Int64Type>,
    publish_time: PrimitiveColumn<TimestampMillisecondType>,
    event_time: PrimitiveColumn<TimestampMillisecondType>,
    partition_key: StringBuilder,
    partition_key_b64: BooleanBuilder,
    ordering_key: BinaryBuilder,
    properties: MapBuilder<StringBuilder, StringBuilder>,
    compression: StringBuilder,
    uncompressed_size: PrimitiveColumn<Int64Type>,
    schema_version: BinaryBuilder,
    replicated_from: StringBuilder,
    txnid_most_bits: PrimitiveColumn<Int64Type>,
    txnid_least_bits: PrimitiveColumn<Int64Type>,
    marker_type: PrimitiveColumn<Int32Type>,
    deliver_at_time: PrimitiveColumn<TimestampMillisecondType>,
    chunk_uuid: StringBuilder,
    chunk_id: PrimitiveColumn<Int32Type>,
    num_chunks: PrimitiveColumn<Int32Type>,
    total_chunk_size: PrimitiveColumn<Int32Type>,
    first_chunk_ledger_id: PrimitiveColumn<Int64Type>,
    first_chunk_entry_id: PrimitiveColumn<Int64Type>,
    encrypted: BooleanBuilder,
    encryption_algo: StringBuilder,
    encryption_param: BinaryBuilder,
    encryption_keys: MapBuilder<StringBuilder, BinaryBuilder>,
    null_value: BooleanBuilder,
    null_partition_key: BooleanBuilder,
    compacted_out: BooleanBuilder,
    broker_timestamp: PrimitiveColumn<TimestampMillisecondType>,
    broker_index: PrimitiveColumn<Int64Type>,
    message_index: PrimitiveColumn<Int64Type>,
    checksum_ok: BooleanBuilder,
    payload: BinaryBuilder,
    error: StringBuilder,
}

fn map_names() -> MapFieldNames {
    MapFieldNames { entry: "entries".into(), key: "keys".into(), value: "values".into() }
}

impl MessageBatchBuilder {
    pub fn new(options: MessageBatchOptions, rows: usize) -> Self {
        MessageBatchBuilder {
            options,
            schema: options.schema(),
            rows: 0,
            payload_bytes: 0,
            scope_id: PrimitiveColumn::with_capacity(rows),
            ledger_id: PrimitiveColumn::with_capacity(rows),
            entry_id: PrimitiveColumn::with_capacity(rows),
            batch_index: PrimitiveColumn::with_capacity(rows),
            batch_size: PrimitiveColumn::with_capacity(rows),
            kind: StringBuilder::new(),
            topic: StringBuilder::new(),
            producer_name: StringBuilder::new(),
            sequence_id: PrimitiveColumn::with_capacity(rows),
            publish_time: PrimitiveColumn::with_capacity(rows),
            event_time: PrimitiveColumn::with_capacity(rows),
            partition_key: StringBuilder::new(),
            partition_key_b64: BooleanBuilder::new(),
            ordering_key: BinaryBuilder::new(),
            properties: MapBuilder::new(Some(map_names()), StringBuilder::new(), StringBuilder::new()),
            compression: StringBuilder::new(),
            uncompressed_size: PrimitiveColumn::with_capacity(rows),
            schema_version: BinaryBuilder::new(),
            replicated_from: StringBuilder::new(),
            txnid_most_bits: PrimitiveColumn::with_capacity(rows),
            txnid_least_bits: PrimitiveColumn::with_capacity(rows),
            marker_type: PrimitiveColumn::with_capacity(rows),
            deliver_at_time: PrimitiveColumn::with_capacity(rows),
            chunk_uuid: StringBuilder::new(),
            chunk_id: PrimitiveColumn::with_capacity(rows),
            num_chunks: PrimitiveColumn::with_capacity(rows),
            total_chunk_size: PrimitiveColumn::with_capacity(rows),
            first_chunk_ledger_id: PrimitiveColumn::with_capacity(rows),
            first_chunk_entry_id: PrimitiveColumn::with_capacity(rows),
            encrypted: BooleanBuilder::new(),
            encryption_algo: StringBuilder::new(),
            encryption_param: BinaryBuilder::new(),
            encryption_keys: MapBuilder::new(Some(map_names()), StringBuilder::new(), BinaryBuilder::new()),
            null_value: BooleanBuilder::new(),
            null_partition_key: BooleanBuilder::new(),
            compacted_out: BooleanBuilder::new(),
            broker_timestamp: PrimitiveColumn::with_capacity(rows),
            broker_index: PrimitiveColumn::with_capacity(rows),
            message_index: PrimitiveColumn::with_capacity(rows),
            checksum_ok: BooleanBuilder::new(),
            payload: BinaryBuilder::new(),
            error: StringBuilder::new(),
        }
    }

    pub fn options(&self) -> MessageBatchOptions {
        self.options
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Payload bytes appended since the last finish.
    pub fn payload_bytes(&self) -> usize {
        self.payload_bytes
    }

    /// Appends one row.
    pub fn push(&mut self, row: &MessageRow<'_>) {
        let md = row.metadata;
        let single = row.single;
        self.rows += 1;
        self.scope_id.push_option(row.ids.scope_id);
        self.ledger_id.push_option(row.ids.ledger_id);
        self.entry_id.push_option(row.ids.entry_id);
        self.batch_index.push_option(row.batch_index);
        self.batch_size.push_option(row.batch_size);
        self.kind.append_option(row.kind);
        self.topic.append_option(row.topic);
        push_str(&mut self.producer_name, md.and_then(|m| m.producer_name.as_deref()));
        let sequence_id = single.and_then(|s| s.sequence_id).or(md.and_then(|m| m.sequence_id));
        self.sequence_id.push_option(sequence_id.map(|v| v as i64));
        self.publish_time.push_option(md.and_then(|m| m.publish_time).map(|v| v as i64));
        let event_time = single.and_then(|s| s.event_time).or(md.and_then(|m| m.event_time));
        self.event_time.push_option(event_time.map(|v| v as i64));
        // A batched message has its own key fields or none: the batch's are not inherited.
        let (key, b64, ordering, properties, null_value, null_key) = match (single, md) {
            (Some(s), _) => (
                s.partition_key.as_deref(),
                s.partition_key_b64_encoded,
                s.ordering_key.as_deref(),
                Some(&s.properties[..]),
                s.null_value,
                s.null_partition_key,
            ),
            (None, Some(m)) => (
                m.partition_key.as_deref(),
                m.partition_key_b64_encoded,
                m.ordering_key.as_deref(),
                Some(&m.properties[..]),
                m.null_value,
                m.null_partition_key,
            ),
            (None, None) => (None, None, None, None, None, None),
        };
        push_str(&mut self.partition_key, key);
        self.partition_key_b64.append_option(key.map(|_| b64.unwrap_or(false)));
        self.ordering_key.append_option(ordering);
        push_properties(&mut self.properties, properties);
        let has_md = md.is_some();
        self.compression.append_option(md.map(|m| match m.compression.and_then(Compression::from_proto) {
            Some(c) => c.name(),
            None if m.compression.is_none() => Compression::None.name(),
            None => "unknown",
        }));
        self.uncompressed_size.push_option(md.and_then(|m| m.uncompressed_size).map(i64::from));
        self.schema_version.append_option(md.and_then(|m| m.schema_version.as_deref()));
        push_str(&mut self.replicated_from, md.and_then(|m| m.replicated_from.as_deref()));
        self.txnid_most_bits.push_option(md.and_then(|m| m.txnid_most_bits).map(|v| v as i64));
        self.txnid_least_bits.push_option(md.and_then(|m| m.txnid_least_bits).map(|v| v as i64));
        self.marker_type.push_option(md.and_then(|m| m.marker_type));
        self.deliver_at_time.push_option(md.and_then(|m| m.deliver_at_time));
        push_str(&mut self.chunk_uuid, md.and_then(|m| m.uuid.as_deref()));
        // A reassembled message is the whole thing, not one of its chunks.
        self.chunk_id.push_option(if row.first_chunk.is_some() { None } else { md.and_then(|m| m.chunk_id) });
        self.num_chunks.push_option(md.and_then(|m| m.num_chunks_from_msg));
        self.total_chunk_size.push_option(md.and_then(|m| m.total_chunk_msg_size));
        self.first_chunk_ledger_id.push_option(row.first_chunk.and_then(|f| f.ledger_id));
        self.first_chunk_entry_id.push_option(row.first_chunk.and_then(|f| f.entry_id));
        let keys = md.map(|m| &m.encryption_keys[..]).unwrap_or_default();
        self.encrypted.append_option(has_md.then_some(!keys.is_empty()));
        push_str(&mut self.encryption_algo, md.and_then(|m| m.encryption_algo.as_deref()));
        self.encryption_param.append_option(md.and_then(|m| m.encryption_param.as_deref()));
        for k in keys {
            push_str(self.encryption_keys.keys(), Some(k.key.as_deref().unwrap_or_default()));
            self.encryption_keys.values().append_option(k.value.as_deref());
        }
        let _ = self.encryption_keys.append(!keys.is_empty());
        self.null_value.append_option(has_md.then(|| null_value.unwrap_or(false)));
        self.null_partition_key.append_option(has_md.then(|| null_key.unwrap_or(false)));
        self.compacted_out.append_option(single.map(|s| s.compacted_out.unwrap_or(false)));
        self.broker_timestamp.push_option(row.broker.and_then(|b| b.broker_timestamp).map(|v| v as i64));
        self.broker_index.push_option(row.broker.and_then(|b| b.index).map(|v| v as i64));
        self.message_index.push_option(row.message_index);
        self.checksum_ok.append_option(row.checksum_ok);
        if self.options.payload {
            if let Some(p) = row.payload {
                self.payload_bytes += p.len();
            }
            self.payload.append_option(row.payload);
        }
        if self.options.flag_errors {
            self.error.append_option(row.error);
        }
    }

    /// The rows so far as a record batch; the builder starts again empty.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let utc = |a: arrow_array::PrimitiveArray<TimestampMillisecondType>| Arc::new(a.with_timezone("UTC")) as ArrayRef;
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.scope_id.finish()),
            Arc::new(self.ledger_id.finish()),
            Arc::new(self.entry_id.finish()),
            Arc::new(self.batch_index.finish()),
            Arc::new(self.batch_size.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.topic.finish()),
            Arc::new(self.producer_name.finish()),
            Arc::new(self.sequence_id.finish()),
            utc(self.publish_time.finish()),
            utc(self.event_time.finish()),
            Arc::new(self.partition_key.finish()),
            Arc::new(self.partition_key_b64.finish()),
            Arc::new(self.ordering_key.finish()),
            Arc::new(self.properties.finish()),
            Arc::new(self.compression.finish()),
            Arc::new(self.uncompressed_size.finish()),
            Arc::new(self.schema_version.finish()),
            Arc::new(self.replicated_from.finish()),
            Arc::new(self.txnid_most_bits.finish()),
            Arc::new(self.txnid_least_bits.finish()),
            Arc::new(self.marker_type.finish()),
            utc(self.deliver_at_time.finish()),
            Arc::new(self.chunk_uuid.finish()),
            Arc::new(self.chunk_id.finish()),
            Arc::new(self.num_chunks.finish()),
            Arc::new(self.total_chunk_size.finish()),
            Arc::new(self.first_chunk_ledger_id.finish()),
            Arc::new(self.first_chunk_entry_id.finish()),
            Arc::new(self.encrypted.finish()),
            Arc::new(self.encryption_algo.finish()),
            Arc::new(self.encryption_param.finish()),
            Arc::new(self.encryption_keys.finish()),
            Arc::new(self.null_value.finish()),
            Arc::new(self.null_partition_key.finish()),
            Arc::new(self.compacted_out.finish()),
            utc(self.broker_timestamp.finish()),
            Arc::new(self.broker_index.finish()),
            Arc::new(self.message_index.finish()),
            Arc::new(self.checksum_ok.finish()),
        ];
        if self.options.payload {
            columns.push(Arc::new(self.payload.finish()));
        }
        if self.options.flag_errors {
            columns.push(Arc::new(self.error.finish()));
        }
        self.rows = 0;
        self.payload_bytes = 0;
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::invalid_argument(format!("message batch: {e}")))
    }
}
