//! Messages of the metadata RPC service from the thin-client proposal
//! (`LedgerMetadataService`): `LedgerMetadataRequest`, `LedgerMetadataResponse`,
//! `GetLedgerRangesRequest`, `GetLedgerRangesResponse` and `StatusCode`. BookKeeper
//! never shipped the service; these follow the proposal's text.
//!
//! Where the proposal is ambiguous, this module decides:
//!
//! * The messages have no field labels, so they are **proto3**: scalars use implicit
//!   presence (a zero is not written and reads back as zero), enums are open (an
//!   unknown status number is kept, not dropped).
//! * Except `LedgerMetadataRequest.ledger_id`, which has **explicit presence**
//!   (`optional int64`): the proposal says an omitted id asks for a new one, and
//!   ledger 0 is a real ledger, so "omitted" and "0" must differ. On the wire this
//!   is compatible with a plain proto3 reader both ways (a written 0 reads as 0,
//!   nothing written reads as 0).
//! * `metadata` is the **binary** `LedgerMetadataFormat` message (what format 3
//!   stores after its header and length varint), nested as a length-delimited
//!   field; its meaning and checks are those of format 3 (ctoken included).
//! * `common.StatusCode` is the `StatusCode` enum listed above the messages; its
//!   listing stops at `BAD_VERSION = 900`, and only those values are named.
//! * `serialized_ranges` is opaque bytes: the proposal does not define its layout.
//! * The proposal's closing braces are missing; each message ends where the next
//!   begins. The `service` block is not a message and is not modelled.

use prost::Message;

use crate::error::{Error, Result};
use crate::metadata::{LedgerMetadata, LedgerMetadataFormat, CURRENT_FORMAT_VERSION};

/// `StatusCode` values named by the proposal.
pub const STATUS_CODES: [(&str, i32); 9] = [
    ("SUCCESS", 0),
    ("BAD_REQUEST", 400),
    ("INTERNAL_SERVER_ERROR", 500),
    ("NOT_IMPLEMENTED", 501),
    ("UNEXPECTED", 600),
    ("LEDGER_METADATA_ERROR", 700),
    ("LEDGER_EXISTS", 701),
    ("LEDGER_NOT_FOUND", 702),
    ("BAD_VERSION", 900),
];

pub fn status_code_name(code: i32) -> Option<&'static str> {
    STATUS_CODES.iter().find(|(_, v)| *v == code).map(|(n, _)| *n)
}

#[derive(Clone, PartialEq, Message)]
struct LedgerMetadataRequestProto {
    #[prost(int64, optional, tag = "1")]
    ledger_id: Option<i64>,
    #[prost(message, optional, tag = "2")]
    metadata: Option<LedgerMetadataFormat>,
    #[prost(int64, tag = "3")]
    expected_version: i64,
}

#[derive(Clone, PartialEq, Message)]
struct LedgerMetadataResponseProto {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(int64, tag = "2")]
    ledger_id: i64,
    #[prost(int64, tag = "3")]
    version: i64,
    #[prost(message, optional, tag = "4")]
    metadata: Option<LedgerMetadataFormat>,
}

#[derive(Clone, PartialEq, Message)]
struct GetLedgerRangesRequestProto {
    #[prost(int32, tag = "1")]
    limit_per_response: i32,
}

#[derive(Clone, PartialEq, Message)]
struct GetLedgerRangesResponseProto {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(int32, tag = "2")]
    count: i32,
    #[prost(bytes = "vec", tag = "3")]
    serialized_ranges: Vec<u8>,
}

fn decode_error(what: &str, e: prost::DecodeError) -> Error {
    Error::corrupt(0, format!("{what} protobuf: {e}"))
}

fn metadata_to_format(md: &Option<LedgerMetadata>) -> Result<Option<LedgerMetadataFormat>> {
    md.as_ref().map(|m| {
        m.validate()?;
        LedgerMetadataFormat::from_metadata(m, true)
    })
    .transpose()
}

fn format_to_metadata(f: Option<LedgerMetadataFormat>, what: &str) -> Result<Option<LedgerMetadata>> {
    f.map(|f| {
        f.to_metadata(CURRENT_FORMAT_VERSION, 0)
            .map_err(|e| {
                let detail = format!("{what}.metadata: {}", e.detail);
                e.with_detail(detail)
            })
    })
    .transpose()
}

/// Create, read, write or remove one ledger's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerMetadataRequest {
    /// `None` asks the service to allocate an id (on create).
    pub ledger_id: Option<i64>,
    pub metadata: Option<LedgerMetadata>,
    pub expected_version: i64,
}

impl LedgerMetadataRequest {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let msg = LedgerMetadataRequestProto {
            ledger_id: self.ledger_id,
            metadata: metadata_to_format(&self.metadata)?,
            expected_version: self.expected_version,
        };
        Ok(msg.encode_to_vec())
    }

    pub fn decode(data: &[u8]) -> Result<Self> {
        let msg = LedgerMetadataRequestProto::decode(data).map_err(|e| decode_error("LedgerMetadataRequest", e))?;
        Ok(LedgerMetadataRequest {
            ledger_id: msg.ledger_id,
            metadata: format_to_metadata(msg.metadata, "LedgerMetadataRequest")?,
            expected_version: msg.expected_version,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerMetadataResponse {
    /// A `StatusCode` number (unknown numbers are kept).
    pub code: i32,
    pub ledger_id: i64,
    /// The metadata version in the store.
    pub version: i64,
    pub metadata: Option<LedgerMetadata>,
}

impl LedgerMetadataResponse {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let msg = LedgerMetadataResponseProto {
            code: self.code,
            ledger_id: self.ledger_id,
            version: self.version,
            metadata: metadata_to_format(&self.metadata)?,
        };
        Ok(msg.encode_to_vec())
    }

    pub fn decode(data: &[u8]) -> Result<Self> {
        let msg = LedgerMetadataResponseProto::decode(data).map_err(|e| decode_error("LedgerMetadataResponse", e))?;
        Ok(LedgerMetadataResponse {
            code: msg.code,
            ledger_id: msg.ledger_id,
            version: msg.version,
            metadata: format_to_metadata(msg.metadata, "LedgerMetadataResponse")?,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GetLedgerRangesRequest {
    pub limit_per_response: i32,
}

impl GetLedgerRangesRequest {
    pub fn encode(&self) -> Vec<u8> {
        GetLedgerRangesRequestProto { limit_per_response: self.limit_per_response }.encode_to_vec()
    }

    pub fn decode(data: &[u8]) -> Result<Self> {
        let msg = GetLedgerRangesRequestProto::decode(data).map_err(|e| decode_error("GetLedgerRangesRequest", e))?;
        Ok(GetLedgerRangesRequest { limit_per_response: msg.limit_per_response })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetLedgerRangesResponse {
    pub code: i32,
    /// The number of ledgers in `serialized_ranges`.
    pub count: i32,
    pub serialized_ranges: Vec<u8>,
}

impl GetLedgerRangesResponse {
    pub fn encode(&self) -> Vec<u8> {
        GetLedgerRangesResponseProto {
            code: self.code,
            count: self.count,
            serialized_ranges: self.serialized_ranges.clone(),
        }
        .encode_to_vec()
    }

    pub fn decode(data: &[u8]) -> Result<Self> {
        let msg = GetLedgerRangesResponseProto::decode(data).map_err(|e| decode_error("GetLedgerRangesResponse", e))?;
        Ok(GetLedgerRangesResponse { code: msg.code, count: msg.count, serialized_ranges: msg.serialized_ranges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookie_id::BookieId;
    use crate::digest::DigestType;
    use crate::metadata::{Ensemble, LedgerState};
    use crate::ErrorKind;

    fn sample() -> LedgerMetadata {
        LedgerMetadata {
            format_version: 3,
            ensemble_size: 2,
            write_quorum_size: 2,
            ack_quorum_size: 1,
            state: LedgerState::Closed,
            last_entry_id: 10,
            length: 100,
            ensembles: vec![Ensemble {
                first_entry_id: 0,
                bookies: vec![BookieId::parse("a:1").unwrap(), BookieId::parse("b:1").unwrap()],
            }],
            digest_type: Some(DigestType::Crc32c),
            password: Some(b"pw".to_vec()),
            ctime: Some(5),
            custom_metadata: vec![("k".into(), b"v".to_vec())],
            ctoken: 3,
        }
    }

    #[test]
    fn request_wire_bytes() {
        // Explicit presence: ledger 0 is written, an absent id is not.
        assert_eq!(LedgerMetadataRequest { ledger_id: Some(0), ..Default::default() }.encode().unwrap(), [0x08, 0x00]);
        assert_eq!(LedgerMetadataRequest::default().encode().unwrap(), Vec::<u8>::new());
        assert_eq!(LedgerMetadataRequest::decode(&[0x08, 0x00]).unwrap().ledger_id, Some(0));
        assert_eq!(LedgerMetadataRequest::decode(&[]).unwrap().ledger_id, None);
        assert_eq!(
            LedgerMetadataRequest { ledger_id: Some(-1), expected_version: 1, ..Default::default() }.encode().unwrap(),
            [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x18, 0x01]
        );
    }

    #[test]
    fn metadata_is_the_binary_format_3_message() {
        let md = sample();
        let req = LedgerMetadataRequest { ledger_id: Some(7), metadata: Some(md.clone()), expected_version: 2 };
        let bytes = req.encode().unwrap();
        let body = LedgerMetadataFormat::from_metadata(&md, true).unwrap().encode_to_vec();
        let mut expected = vec![0x08, 0x07, 0x12, body.len() as u8];
        expected.extend_from_slice(&body);
        expected.extend_from_slice(&[0x18, 0x02]);
        assert_eq!(bytes, expected);
        assert_eq!(LedgerMetadataRequest::decode(&bytes).unwrap(), req);

        let resp = LedgerMetadataResponse { code: 702, ledger_id: 7, version: 9, metadata: Some(md) };
        assert_eq!(LedgerMetadataResponse::decode(&resp.encode().unwrap()).unwrap(), resp);
    }

    #[test]
    fn ranges_and_unknown_codes_round_trip() {
        let r = GetLedgerRangesResponse { code: 12345, count: 3, serialized_ranges: vec![1, 2, 3] };
        assert_eq!(GetLedgerRangesResponse::decode(&r.encode()).unwrap(), r);
        let q = GetLedgerRangesRequest { limit_per_response: 100 };
        assert_eq!(q.encode(), [0x08, 100]);
        assert_eq!(GetLedgerRangesRequest::decode(&q.encode()).unwrap(), q);
        assert_eq!(status_code_name(702), Some("LEDGER_NOT_FOUND"));
        assert_eq!(status_code_name(12345), None);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert_eq!(LedgerMetadataResponse::decode(&[0x22, 0x05, 0x08]).unwrap_err().kind, ErrorKind::Corrupt);
        // A nested metadata message missing its required fields.
        let e = LedgerMetadataResponse::decode(&[0x22, 0x00]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt);
        assert!(e.detail.contains("LedgerMetadataResponse.metadata"), "{e}");
        let mut invalid = sample();
        invalid.ack_quorum_size = 5;
        let e = LedgerMetadataRequest { metadata: Some(invalid), ..Default::default() }.encode().unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
    }
}
