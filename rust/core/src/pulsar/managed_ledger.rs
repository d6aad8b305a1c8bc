//! The metadata-store values that map a topic to its ledgers (docs/pulsar.md#managed-ledger-metadata):
//! `ManagedLedgerInfo` at `/managed-ledgers/<name>` and `ManagedCursorInfo` at
//! `/managed-ledgers/<name>/<cursor>`, in the three encodings Pulsar has written:
//!
//! 1. binary protobuf (today's default);
//! 2. protobuf text format (`toString()` of the message, by old `MetaStoreImplZookeeper`
//!    in its `Text` mode; Pulsar reads it with `TextFormat.merge`);
//! 3. the compressed envelope `[u16 0x4778][u32 N][ManagedLedgerInfoMetadata or
//!    ManagedCursorInfoMetadata][codec bytes]`, written when a codec is configured.
//!
//! The envelope's magic cannot start a binary protobuf (0x47 is field 8 with wire
//! type 7, which does not exist), and text is recognised by being text: binary
//! protobuf of these messages always holds bytes below 0x20 other than whitespace.

use prost::Message;

use super::codec::{Compression, Decompressor};
use super::frame::decode_proto;
use super::proto::{ManagedCursorInfo, ManagedInfoCompression, ManagedLedgerInfo, NestedPositionInfo};
use super::value::Value;
use crate::error::{Error, Result};
use crate::metadata::text_format::{message, repeated, unknown_field, Tokenizer};

pub const MAGIC_COMPRESSED_INFO: u16 = 0x4778;

/// How a value was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoEncoding {
    Binary,
    Text,
    /// The compressed envelope, with its codec.
    Compressed(Compression),
}

impl InfoEncoding {
    pub fn name(self) -> &'static str {
        match self {
            InfoEncoding::Binary => "binary",
            InfoEncoding::Text => "text",
            InfoEncoding::Compressed(c) => c.name(),
        }
    }
}

/// Decodes `/managed-ledgers/<name>`.
pub fn decode_managed_ledger_info(data: &[u8]) -> Result<(ManagedLedgerInfo, InfoEncoding)> {
    let (info, encoding) = decode_info::<ManagedLedgerInfo>(data, &MANAGED_LEDGER_INFO, "ManagedLedgerInfo")?;
    for (i, l) in info.ledger_info.iter().enumerate() {
        if l.ledger_id.is_none() {
            return Err(Error::corrupt(0, format!("ManagedLedgerInfo: ledger {i} lacks its required field ledgerId")));
        }
    }
    Ok((info, encoding))
}

/// Decodes `/managed-ledgers/<name>/<cursor>`.
pub fn decode_managed_cursor_info(data: &[u8]) -> Result<(ManagedCursorInfo, InfoEncoding)> {
    let (info, encoding) = decode_info::<ManagedCursorInfo>(data, &MANAGED_CURSOR_INFO, "ManagedCursorInfo")?;
    if info.cursors_ledger_id.is_none() {
        return Err(Error::corrupt(0, "ManagedCursorInfo lacks its required field cursorsLedgerId"));
    }
    Ok((info, encoding))
}

fn decode_info<M: Message + Default>(data: &[u8], desc: &MessageDesc, what: &str) -> Result<(M, InfoEncoding)> {
    if data.len() >= 2 && u16::from_be_bytes([data[0], data[1]]) == MAGIC_COMPRESSED_INFO {
        let (codec, bytes) = uncompress_envelope(data, what)?;
        return Ok((decode_proto::<M>(&bytes, 0, what)?, InfoEncoding::Compressed(codec)));
    }
    if looks_like_text(data) {
        let binary = text_to_binary(data, desc)?;
        return Ok((decode_proto::<M>(&binary, 0, what)?, InfoEncoding::Text));
    }
    Ok((decode_proto::<M>(data, 0, what)?, InfoEncoding::Binary))
}

/// The envelope's codec and the uncompressed message.
fn uncompress_envelope(data: &[u8], what: &str) -> Result<(Compression, Vec<u8>)> {
    let size = crate::bytes::i32_at(data, 2)?;
    if size < 0 || size as usize > data.len() - 6 {
        return Err(Error::corrupt(2, format!("{what}: compression metadata size {size} does not fit in {} bytes", data.len())));
    }
    let header: ManagedInfoCompression = decode_proto(&data[6..6 + size as usize], 6, "compression metadata")?;
    let (Some(code), Some(uncompressed_size)) = (header.compression_type, header.uncompressed_size) else {
        return Err(Error::corrupt(6, "compression metadata lacks compressionType or uncompressedSize"));
    };
    let codec = Compression::from_proto(code)
        .ok_or_else(|| Error::corrupt(6, format!("{what}: unknown compression type {code}")))?;
    let body = &data[6 + size as usize..];
    let body_at = 6 + size as u64;
    if uncompressed_size < 0 {
        return Err(Error::corrupt(6, format!("{what}: uncompressedSize {uncompressed_size}")));
    }
    if codec == Compression::None {
        return Ok((codec, body.to_vec()));
    }
    let mut out = Vec::new();
    Decompressor::new()
        .decompress(codec, body, uncompressed_size as u64, &mut out)
        .map_err(|e| Error::corrupt(body_at, format!("{what}: {}", e.0)))?;
    Ok((codec, out))
}

/// Text: UTF-8 (or Latin-1 bytes above 0x7F) with no control bytes but whitespace.
fn looks_like_text(data: &[u8]) -> bool {
    !data.is_empty() && data.iter().all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

// ---------------------------------------------------------------- text format

/// What the text parser needs of a field: its name, number and wire form.
#[derive(Clone, Copy)]
enum FieldKind {
    Int,
    Bool,
    Text,
    Message(&'static MessageDesc),
}

struct FieldDesc {
    name: &'static str,
    number: u32,
    kind: FieldKind,
}

pub(crate) struct MessageDesc {
    name: &'static str,
    fields: &'static [FieldDesc],
}

macro_rules! fields {
    ($($name:literal = $num:literal : $kind:expr),* $(,)?) => {
        &[$(FieldDesc { name: $name, number: $num, kind: $kind }),*]
    };
}

use FieldKind::{Bool, Int, Message as Msg, Text};

static KEY_VALUE: MessageDesc = MessageDesc { name: "KeyValue", fields: fields!["key" = 1: Text, "value" = 2: Text] };
static DRIVER_METADATA: MessageDesc = MessageDesc {
    name: "OffloadDriverMetadata",
    fields: fields!["name" = 1: Text, "properties" = 2: Msg(&KEY_VALUE)],
};
static OFFLOAD_SEGMENT: MessageDesc = MessageDesc {
    name: "OffloadSegment",
    fields: fields![
        "uidMsb" = 1: Int, "uidLsb" = 2: Int, "complete" = 3: Bool, "assignedTimestamp" = 4: Int,
        "offloadedTimestamp" = 5: Int, "endEntryId" = 6: Int, "driverMetadata" = 7: Msg(&DRIVER_METADATA),
    ],
};
static OFFLOAD_CONTEXT: MessageDesc = MessageDesc {
    name: "OffloadContext",
    fields: fields![
        "uidMsb" = 1: Int, "uidLsb" = 2: Int, "complete" = 3: Bool, "bookkeeperDeleted" = 4: Bool,
        "timestamp" = 5: Int, "driverMetadata" = 6: Msg(&DRIVER_METADATA), "offloadSegment" = 7: Msg(&OFFLOAD_SEGMENT),
    ],
};
static LEDGER_INFO: MessageDesc = MessageDesc {
    name: "ManagedLedgerInfo.LedgerInfo",
    fields: fields![
        "ledgerId" = 1: Int, "entries" = 2: Int, "size" = 3: Int, "timestamp" = 4: Int,
        "offloadContext" = 5: Msg(&OFFLOAD_CONTEXT), "properties" = 6: Msg(&KEY_VALUE),
    ],
};
static POSITION: MessageDesc =
    MessageDesc { name: "NestedPositionInfo", fields: fields!["ledgerId" = 1: Int, "entryId" = 2: Int] };
pub(crate) static MANAGED_LEDGER_INFO: MessageDesc = MessageDesc {
    name: "ManagedLedgerInfo",
    fields: fields!["ledgerInfo" = 1: Msg(&LEDGER_INFO), "terminatedPosition" = 2: Msg(&POSITION), "properties" = 3: Msg(&KEY_VALUE)],
};
static MESSAGE_RANGE: MessageDesc = MessageDesc {
    name: "MessageRange",
    fields: fields!["lowerEndpoint" = 1: Msg(&POSITION), "upperEndpoint" = 2: Msg(&POSITION)],
};
static LONG_PROPERTY: MessageDesc = MessageDesc { name: "LongProperty", fields: fields!["name" = 1: Text, "value" = 2: Int] };
static STRING_PROPERTY: MessageDesc =
    MessageDesc { name: "StringProperty", fields: fields!["name" = 1: Text, "value" = 2: Text] };
static DELETION_INDEX: MessageDesc = MessageDesc {
    name: "BatchedEntryDeletionIndexInfo",
    fields: fields!["position" = 1: Msg(&POSITION), "deleteSet" = 2: Int],
};
pub(crate) static MANAGED_CURSOR_INFO: MessageDesc = MessageDesc {
    name: "ManagedCursorInfo",
    fields: fields![
        "cursorsLedgerId" = 1: Int, "markDeleteLedgerId" = 2: Int, "markDeleteEntryId" = 3: Int,
        "individualDeletedMessages" = 4: Msg(&MESSAGE_RANGE), "properties" = 5: Msg(&LONG_PROPERTY),
        "lastActive" = 6: Int, "batchedEntryDeletionIndexInfo" = 7: Msg(&DELETION_INDEX),
        "cursorProperties" = 8: Msg(&STRING_PROPERTY),
    ],
};
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

fn put_len(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `TextFormat.merge` into the message's binary form (then decoded as binary, so
/// the two encodings share every later check).
fn text_to_binary(data: &[u8], desc: &MessageDesc) -> Result<Vec<u8>> {
    // Java decodes the bytes as UTF-8 with replacement first.
    let text = String::from_utf8_lossy(data);
    let mut t = Tokenizer::with_label(text.as_bytes(), 0, "text format");
    let mut out = Vec::new();
    while !t.at_end() {
        let (name, at) = t.consume_identifier()?;
        field(&mut t, desc, &name, at, &mut out)?;
        if !t.try_consume(";")? {
            t.try_consume(",")?;
        }
    }
    Ok(out)
}

fn field(t: &mut Tokenizer<'_>, desc: &MessageDesc, name: &str, at: usize, out: &mut Vec<u8>) -> Result<()> {
    let f = desc.fields.iter().find(|f| f.name == name).ok_or_else(|| unknown_field(t, at, desc.name, name))?;
    match f.kind {
        Msg(inner) => {
            t.try_consume(":")?;
            for bytes in repeated(t, |t| {
                let mut body = Vec::new();
                message(t, |t, name, at| field(t, inner, name, at, &mut body))?;
                Ok(body)
            })? {
                put_len(out, f.number, &bytes);
            }
        }
        kind => {
            t.consume(":")?;
            for value in repeated(t, |t| scalar(t, kind))? {
                match value {
                    Scalar::Int(v) => {
                        put_key(out, f.number, 0);
                        put_varint(out, v as u64);
                    }
                    Scalar::Bytes(b) => put_len(out, f.number, &b),
                }
            }
        }
    }
    Ok(())
}

enum Scalar {
    Int(i64),
    Bytes(Vec<u8>),
}

fn scalar(t: &mut Tokenizer<'_>, kind: FieldKind) -> Result<Scalar> {
    Ok(match kind {
        Int => Scalar::Int(t.consume_i64()?),
        Text => Scalar::Bytes(t.consume_bytes()?),
        Bool => {
            // TextFormat.consumeBoolean: true/t/1, false/f/0.
            let v = match t.token() {
                b"true" | b"t" | b"1" => true,
                b"false" | b"f" | b"0" => false,
                other => return Err(t.err(format!("expected \"true\" or \"false\", found {:?}", String::from_utf8_lossy(other)))),
            };
            t.advance();
            Scalar::Int(i64::from(v))
        }
        Msg(_) => unreachable!("messages are parsed by field()"),
    })
}

// ---------------------------------------------------------------- as values

fn position(p: &Option<NestedPositionInfo>) -> Value {
    match p {
        Some(p) => Value::Tuple(vec![Value::opt_int(p.ledger_id), Value::opt_int(p.entry_id)]),
        None => Value::None,
    }
}

fn text(b: &Option<Vec<u8>>) -> Value {
    b.as_deref().map_or(Value::None, |b| Value::Text(String::from_utf8_lossy(b).into_owned()))
}

fn string_map<'a>(pairs: impl Iterator<Item = (&'a Option<Vec<u8>>, Value)>) -> Value {
    Value::Map(
        pairs
            .map(|(k, v)| (String::from_utf8_lossy(k.as_deref().unwrap_or_default()).into_owned(), v))
            .collect(),
    )
}

/// `ManagedLedgerInfo` as plain values, with snake_case names.
pub fn managed_ledger_info_value(info: &ManagedLedgerInfo, encoding: InfoEncoding) -> Value {
    let ledgers = info
        .ledger_info
        .iter()
        .map(|l| {
            let offload = l.offload_context.as_ref();
            Value::record([
                ("ledger_id", Value::opt_int(l.ledger_id)),
                ("entries", Value::opt_int(l.entries)),
                ("size", Value::opt_int(l.size)),
                ("timestamp", Value::opt_int(l.timestamp)),
                ("offloaded", Value::Bool(offload.and_then(|o| o.complete).unwrap_or(false))),
                (
                    "offload",
                    offload.map_or(Value::None, |o| {
                        Value::record([
                            ("uid_msb", Value::opt_int(o.uid_msb)),
                            ("uid_lsb", Value::opt_int(o.uid_lsb)),
                            ("complete", Value::opt_bool(o.complete)),
                            ("bookkeeper_deleted", Value::opt_bool(o.bookkeeper_deleted)),
                            ("timestamp", Value::opt_int(o.timestamp)),
                            ("driver", o.driver_metadata.as_ref().map_or(Value::None, |d| text(&d.name))),
                            (
                                "driver_properties",
                                o.driver_metadata.as_ref().map_or(Value::None, |d| {
                                    string_map(d.properties.iter().map(|kv| (&kv.key, text(&kv.value))))
                                }),
                            ),
                            ("segments", Value::Int(o.offload_segment.len() as i64)),
                        ])
                    }),
                ),
                ("properties", string_map(l.properties.iter().map(|kv| (&kv.key, text(&kv.value))))),
            ])
        })
        .collect();
    Value::record([
        ("ledgers", Value::List(ledgers)),
        ("terminated_position", position(&info.terminated_position)),
        ("properties", string_map(info.properties.iter().map(|kv| (&kv.key, text(&kv.value))))),
        ("encoding", Value::Text(encoding.name().into())),
    ])
}

/// `ManagedCursorInfo` as plain values, with snake_case names.
pub fn managed_cursor_info_value(info: &ManagedCursorInfo, encoding: InfoEncoding) -> Value {
    let mark = match (info.mark_delete_ledger_id, info.mark_delete_entry_id) {
        (None, None) => Value::None,
        (l, e) => Value::Tuple(vec![Value::opt_int(l), Value::opt_int(e)]),
    };
    let ranges = info
        .individual_deleted_messages
        .iter()
        .map(|r| Value::Tuple(vec![position(&r.lower_endpoint), position(&r.upper_endpoint)]))
        .collect();
    let batch_deletes = info
        .batched_entry_deletion_index_info
        .iter()
        .map(|d| {
            Value::record([
                ("position", position(&d.position)),
                ("delete_set", Value::List(d.delete_set.iter().map(|&w| Value::Int(w)).collect())),
            ])
        })
        .collect();
    Value::record([
        ("cursors_ledger_id", Value::opt_int(info.cursors_ledger_id)),
        ("mark_delete_position", mark),
        ("individual_deleted_messages", Value::List(ranges)),
        ("properties", string_map(info.properties.iter().map(|p| (&p.name, Value::opt_int(p.value))))),
        ("cursor_properties", string_map(info.cursor_properties.iter().map(|p| (&p.name, text(&p.value))))),
        ("last_active", Value::opt_int(info.last_active)),
        ("batched_entry_deletion_index_info", Value::List(batch_deletes)),
        ("encoding", Value::Text(encoding.name().into())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::proto::{LedgerInfo, MessageRange, OffloadContext, StringProperty};
    use crate::pulsar::testing::compress;

    fn sample_info() -> ManagedLedgerInfo {
        ManagedLedgerInfo {
            ledger_info: vec![
                LedgerInfo { ledger_id: Some(3), entries: Some(10), size: Some(1234), timestamp: Some(1_600_000_000_000), ..Default::default() },
                LedgerInfo {
                    ledger_id: Some(7),
                    entries: Some(0),
                    size: Some(0),
                    timestamp: Some(0),
                    offload_context: Some(OffloadContext { complete: Some(true), uid_msb: Some(-5), ..Default::default() }),
                    ..Default::default()
                },
            ],
            terminated_position: Some(NestedPositionInfo { ledger_id: Some(7), entry_id: Some(-1) }),
            properties: vec![],
        }
    }

    fn envelope(codec: i32, message: &[u8]) -> Vec<u8> {
        let header = ManagedInfoCompression { compression_type: Some(codec), uncompressed_size: Some(message.len() as i32) }.encode_to_vec();
        let mut out = MAGIC_COMPRESSED_INFO.to_be_bytes().to_vec();
        out.extend_from_slice(&(header.len() as u32).to_be_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&compress(codec, message));
        out
    }

    #[test]
    fn binary_text_and_every_envelope_codec() {
        let info = sample_info();
        let binary = info.encode_to_vec();
        assert_eq!(decode_managed_ledger_info(&binary).unwrap(), (info.clone(), InfoEncoding::Binary));
        // As protobuf-java's toString() prints it.
        let text = "ledgerInfo {\n  ledgerId: 3\n  entries: 10\n  size: 1234\n  timestamp: 1600000000000\n}\n\
                    ledgerInfo {\n  ledgerId: 7\n  entries: 0\n  size: 0\n  timestamp: 0\n  offloadContext {\n    uidMsb: -5\n    complete: true\n  }\n}\n\
                    terminatedPosition {\n  ledgerId: 7\n  entryId: -1\n}\n";
        assert_eq!(decode_managed_ledger_info(text.as_bytes()).unwrap(), (info.clone(), InfoEncoding::Text));
        for codec in 1..=4 {
            let data = envelope(codec, &binary);
            let (decoded, enc) = decode_managed_ledger_info(&data).unwrap();
            assert_eq!(decoded, info);
            assert_eq!(enc, InfoEncoding::Compressed(Compression::from_proto(codec).unwrap()));
        }
        // An empty value is an empty managed ledger (binary).
        assert_eq!(decode_managed_ledger_info(b"").unwrap().0.ledger_info.len(), 0);
    }

    #[test]
    fn cursor_info_in_each_encoding() {
        let info = ManagedCursorInfo {
            cursors_ledger_id: Some(12),
            mark_delete_ledger_id: Some(3),
            mark_delete_entry_id: Some(9),
            individual_deleted_messages: vec![MessageRange {
                lower_endpoint: Some(NestedPositionInfo { ledger_id: Some(3), entry_id: Some(10) }),
                upper_endpoint: Some(NestedPositionInfo { ledger_id: Some(3), entry_id: Some(12) }),
            }],
            cursor_properties: vec![StringProperty { name: Some(b"a".to_vec()), value: Some(b"b c".to_vec()) }],
            ..Default::default()
        };
        let binary = info.encode_to_vec();
        assert_eq!(decode_managed_cursor_info(&binary).unwrap().0, info);
        let text = "cursorsLedgerId: 12\nmarkDeleteLedgerId: 3\nmarkDeleteEntryId: 9\n\
                    individualDeletedMessages {\n  lowerEndpoint {\n    ledgerId: 3\n    entryId: 10\n  }\n  upperEndpoint {\n    ledgerId: 3\n    entryId: 12\n  }\n}\n\
                    cursorProperties {\n  name: \"a\"\n  value: \"b c\"\n}\n";
        assert_eq!(decode_managed_cursor_info(text.as_bytes()).unwrap(), (info.clone(), InfoEncoding::Text));
        assert_eq!(decode_managed_cursor_info(&envelope(3, &binary)).unwrap().0, info);
        let v = managed_cursor_info_value(&info, InfoEncoding::Binary);
        assert!(format!("{v:?}").contains("mark_delete_position"));
    }

    #[test]
    fn bad_values_are_errors_with_offsets() {
        // Unknown field in text, with its offset.
        let e = decode_managed_ledger_info(b"ledgerInfo {\n  ledgerID: 3\n}\n").unwrap_err();
        assert_eq!(e.offset, 15);
        assert!(e.detail.contains("has no field named \"ledgerID\""), "{e}");
        // Missing required fields.
        assert!(decode_managed_ledger_info(b"ledgerInfo { entries: 3 }").unwrap_err().detail.contains("ledgerId"));
        assert!(decode_managed_cursor_info(b"markDeleteLedgerId: 3").unwrap_err().detail.contains("cursorsLedgerId"));
        // A broken envelope: the size claims more than there is; a size larger than the data can hold.
        let mut data = envelope(1, &sample_info().encode_to_vec());
        assert!(decode_managed_ledger_info(&data[..5]).is_err());
        data[5] = 0xff;
        assert!(decode_managed_ledger_info(&data).is_err());
        let huge = {
            let header = ManagedInfoCompression { compression_type: Some(2), uncompressed_size: Some(i32::MAX) }.encode_to_vec();
            let mut out = MAGIC_COMPRESSED_INFO.to_be_bytes().to_vec();
            out.extend_from_slice(&(header.len() as u32).to_be_bytes());
            out.extend_from_slice(&header);
            out.extend_from_slice(&[0x78, 0x9c, 0, 0]);
            out
        };
        assert!(decode_managed_ledger_info(&huge).unwrap_err().detail.contains("more than 4 compressed bytes"));
        // Garbage binary.
        assert!(decode_managed_ledger_info(&[0x0a, 0xff, 0x01]).is_err());
    }
}
