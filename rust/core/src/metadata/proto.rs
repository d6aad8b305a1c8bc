//! `LedgerMetadataFormat` (DataFormats.proto, proto2) and its conversion to and from
//! [`LedgerMetadata`], shared by formats 2 and 3 and by the metadata RPC messages.
//!
//! Every field is `optional` here so that presence is visible: proto2 `required`
//! fields are checked in [`LedgerMetadataFormat::to_metadata`]. Enums are `int32`
//! on the wire (a varint either way) so that unknown values reach the checks instead
//! of vanishing. Strings that BookKeeper validates itself (bookie ids, custom
//! metadata keys) are read as bytes, so that bad UTF-8 gets BookKeeper's treatment
//! (a rejected bookie id, a replaced character) rather than a protobuf decode error.
//! One difference remains: a known field number with the wrong wire type is an error
//! here, where protobuf-java would file it as an unknown field and carry on.

use prost::Message;

use super::{Ensemble, LedgerMetadata, LedgerState};
use crate::bookie_id::BookieId;
use crate::digest::DigestType;
use crate::error::{Error, Result};

#[derive(Clone, PartialEq, Message)]
pub struct LedgerMetadataFormat {
    /// The write quorum (required).
    #[prost(int32, optional, tag = "1")]
    pub quorum_size: Option<i32>,
    /// Required.
    #[prost(int32, optional, tag = "2")]
    pub ensemble_size: Option<i32>,
    /// Required.
    #[prost(int64, optional, tag = "3")]
    pub length: Option<i64>,
    #[prost(int64, optional, tag = "4")]
    pub last_entry_id: Option<i64>,
    /// `State` enum (required): OPEN = 1, IN_RECOVERY = 2, CLOSED = 3.
    #[prost(int32, optional, tag = "5")]
    pub state: Option<i32>,
    #[prost(message, repeated, tag = "6")]
    pub segment: Vec<Segment>,
    /// `DigestType` enum: CRC32 = 1, HMAC = 2, CRC32C = 3, DUMMY = 4.
    #[prost(int32, optional, tag = "7")]
    pub digest_type: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "8")]
    pub password: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "9")]
    pub ack_quorum_size: Option<i32>,
    #[prost(int64, optional, tag = "10")]
    pub ctime: Option<i64>,
    #[prost(message, repeated, tag = "11")]
    pub custom_metadata: Vec<CustomMetadataEntry>,
    #[prost(int64, optional, tag = "12")]
    pub c_token: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Segment {
    /// `repeated string`: bookie ids.
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub ensemble_member: Vec<Vec<u8>>,
    /// Required.
    #[prost(int64, optional, tag = "2")]
    pub first_entry_id: Option<i64>,
}

/// `cMetadataMapEntry`.
#[derive(Clone, PartialEq, Message)]
pub struct CustomMetadataEntry {
    /// `optional string`.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub key: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

fn missing(offset: u64, field: &str) -> Error {
    Error::corrupt(offset, format!("LedgerMetadataFormat is missing required field {field}"))
}

impl LedgerMetadataFormat {
    /// Applies `LedgerMetadataSerDe.decodeFormat` and the builder's checks. Errors
    /// name `offset`, where the message (or its text) starts.
    pub fn to_metadata(&self, format_version: u8, offset: u64) -> Result<LedgerMetadata> {
        let write_quorum_size = self.quorum_size.ok_or_else(|| missing(offset, "quorumSize"))?;
        let ensemble_size = self.ensemble_size.ok_or_else(|| missing(offset, "ensembleSize"))?;
        let length = self.length.ok_or_else(|| missing(offset, "length"))?;
        let state_value = self.state.ok_or_else(|| missing(offset, "state"))?;
        let state = LedgerState::from_proto_value(state_value as i64)
            .ok_or_else(|| Error::corrupt(offset, format!("unknown ledger state value {state_value}")))?;
        let (last_entry_id, length) = match state {
            LedgerState::Closed => (self.last_entry_id.unwrap_or(0), length),
            _ => (-1, 0),
        };
        // A digest type counts only with a password. Absent, proto2 reads the
        // default, CRC32. An unknown number is refused rather than guessed:
        // protobuf-java would also fall back to CRC32 (it files the number as an
        // unknown field), which can only make every entry fail verification.
        let (digest_type, password) = match &self.password {
            None => (None, None),
            Some(pw) => {
                let dt = match self.digest_type {
                    None => DigestType::Crc32,
                    Some(v) => DigestType::from_proto_value(v as i64).ok_or_else(|| {
                        Error::corrupt(offset, format!("unknown digest type value {v} (known: 1 CRC32, 2 HMAC, 3 CRC32C, 4 DUMMY)"))
                    })?,
                };
                (Some(dt), Some(pw.clone()))
            }
        };
        let mut ensembles = Vec::with_capacity(self.segment.len());
        for seg in &self.segment {
            let first_entry_id = seg.first_entry_id.ok_or_else(|| missing(offset, "segment.firstEntryId"))?;
            let bookies = seg
                .ensemble_member
                .iter()
                .map(|m| BookieId::parse_bytes(m).map_err(|e| Error::corrupt(offset, e.detail)))
                .collect::<Result<Vec<_>>>()?;
            ensembles.push(Ensemble { first_entry_id, bookies });
        }
        let mut custom_metadata: Vec<(String, Vec<u8>)> = Vec::with_capacity(self.custom_metadata.len());
        for entry in &self.custom_metadata {
            let key = String::from_utf8_lossy(entry.key.as_deref().unwrap_or_default()).into_owned();
            let value = entry.value.clone().unwrap_or_default();
            match custom_metadata.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => custom_metadata.push((key, value)),
            }
        }
        let md = LedgerMetadata {
            format_version,
            ensemble_size,
            write_quorum_size,
            ack_quorum_size: self.ack_quorum_size.unwrap_or(write_quorum_size),
            state,
            last_entry_id,
            length,
            ensembles,
            digest_type,
            password,
            ctime: self.ctime,
            custom_metadata,
            ctoken: self.c_token.unwrap_or(0),
        };
        md.check().map_err(|why| Error::corrupt(offset, why))?;
        Ok(md)
    }

    /// `LedgerMetadataSerDe.buildLedgerMetadataFormat`: what Java sets, in its order
    /// (the encoders write by field number regardless). `include_ctoken` is true for
    /// format 3 only.
    pub fn from_metadata(md: &LedgerMetadata, include_ctoken: bool) -> Result<LedgerMetadataFormat> {
        let digest_type = md.digest_type.ok_or_else(|| {
            Error::invalid_argument(
                "formats 2 and 3 store a digest type and password, and this metadata has neither (format 1 records none)",
            )
        })?;
        Ok(LedgerMetadataFormat {
            quorum_size: Some(md.write_quorum_size),
            ensemble_size: Some(md.ensemble_size),
            length: Some(md.length),
            last_entry_id: Some(md.last_entry_id),
            state: Some(md.state as i32),
            segment: md
                .ensembles
                .iter()
                .map(|e| Segment {
                    ensemble_member: e.bookies.iter().map(|b| b.as_str().as_bytes().to_vec()).collect(),
                    first_entry_id: Some(e.first_entry_id),
                })
                .collect(),
            digest_type: Some(digest_type.proto_value() as i32),
            password: Some(md.password.clone().unwrap_or_default()),
            ack_quorum_size: Some(md.ack_quorum_size),
            ctime: md.ctime,
            custom_metadata: md
                .custom_metadata
                .iter()
                .map(|(k, v)| CustomMetadataEntry { key: Some(k.as_bytes().to_vec()), value: Some(v.clone()) })
                .collect(),
            c_token: include_ctoken.then_some(md.ctoken),
        })
    }
}

/// `readDelimited`: Java's `readRawVarint32` length (at most 5 bytes, bits past 32
/// dropped, negative refused), then that many bytes of message. Bytes after the
/// message are ignored, as Java ignores them. Returns the message and its offset.
pub fn decode_delimited(data: &[u8], start: usize) -> Result<(LedgerMetadataFormat, usize)> {
    let mut size: u32 = 0;
    let mut pos = start;
    let mut shift = 0;
    loop {
        if shift >= 32 {
            return Err(Error::corrupt(start as u64, "malformed varint32 message length (more than 5 bytes)"));
        }
        let b = *data
            .get(pos)
            .ok_or_else(|| Error::truncated(pos as u64, 1, 0).with_detail("metadata ends inside the message length varint"))?;
        pos += 1;
        size |= ((b & 0x7f) as u32).wrapping_shl(shift);
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    if size as i32 <= -1 {
        return Err(Error::corrupt(start as u64, format!("negative message length {}", size as i32)));
    }
    let size = size as usize;
    let available = data.len() - pos;
    if size > available {
        return Err(Error::truncated(pos as u64, size as u64, available as u64)
            .with_detail(format!("message length says {size} bytes, {available} follow")));
    }
    let fmt = LedgerMetadataFormat::decode(&data[pos..pos + size])
        .map_err(|e| Error::corrupt(pos as u64, format!("LedgerMetadataFormat protobuf: {e}")))?;
    Ok((fmt, pos))
}

/// `writeDelimited`: varint32 length, then the message.
pub fn encode_delimited(fmt: &LedgerMetadataFormat, out: &mut Vec<u8>) {
    // Encoding into a Vec only fails for lack of capacity, and a Vec grows.
    fmt.encode_length_delimited(out).expect("a Vec grows as needed");
}
