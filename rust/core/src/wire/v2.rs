//! The v2 binary bookie protocol (`BookieProtocol`, `BookieProtoEncoding`;
//! docs/formats.md#v2-wire-frames): the packet header, ADD, READ, BATCH_READ and AUTH requests and
//! responses, and the return codes with their v3 equivalents.
//!
//! A frame does not say whether it is a request or a response (an ADD request and
//! an ADD response share their header), so decoding takes the direction.
//! Encoders produce whole frames, length prefix included; decoders take whole
//! frames and report offsets from the frame's first byte.

use prost::Message;

use super::{frame, split_frame, FRAME_LENGTH_LEN};
use crate::bytes::{i32_at, i64_at, slice_at};
use crate::entry::EntryFormat;
use crate::error::{Error, ErrorKind, Result};

/// `CURRENT_PROTOCOL_VERSION`: what clients send.
pub const CURRENT_PROTOCOL_VERSION: i8 = 2;
/// `LOWEST_COMPAT_PROTOCOL_VERSION`.
pub const LOWEST_COMPAT_PROTOCOL_VERSION: i8 = 0;
/// `MASTER_KEY_LENGTH`.
pub const MASTER_KEY_LENGTH: usize = 20;

/// Header flags (the low 16 bits).
pub mod flags {
    pub const NONE: u16 = 0x0;
    /// READ and BATCH_READ: fence the ledger (the request then carries the master key).
    pub const DO_FENCING: u16 = 0x1;
    /// ADD: a recovery add, allowed on a fenced ledger.
    pub const RECOVERY_ADD: u16 = 0x2;
    pub const HIGH_PRIORITY: u16 = 0x4;

    /// (name, bit), for callers that build their own flag type.
    pub const ALL: [(&str, u16); 4] =
        [("NONE", NONE), ("DO_FENCING", DO_FENCING), ("RECOVERY_ADD", RECOVERY_ADD), ("HIGH_PRIORITY", HIGH_PRIORITY)];
}

/// v2 opcodes. Only ADD, READ, AUTH and BATCH_READ have v2 framing; the others are
/// constants that map to v3 operations, and a v2 bookie closes the connection on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpCode {
    AddEntry = 1,
    ReadEntry = 2,
    Auth = 3,
    ReadLac = 4,
    WriteLac = 5,
    GetBookieInfo = 6,
    BatchReadEntry = 7,
}

impl OpCode {
    pub const ALL: [OpCode; 7] = [
        OpCode::AddEntry,
        OpCode::ReadEntry,
        OpCode::Auth,
        OpCode::ReadLac,
        OpCode::WriteLac,
        OpCode::GetBookieInfo,
        OpCode::BatchReadEntry,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            OpCode::AddEntry => "ADDENTRY",
            OpCode::ReadEntry => "READENTRY",
            OpCode::Auth => "AUTH",
            OpCode::ReadLac => "READ_LAC",
            OpCode::WriteLac => "WRITE_LAC",
            OpCode::GetBookieInfo => "GET_BOOKIE_INFO",
            OpCode::BatchReadEntry => "BATCH_READ_ENTRY",
        }
    }

    /// The opcodes a v2 frame may carry.
    fn framed(op: i8) -> Option<OpCode> {
        match op {
            1 => Some(OpCode::AddEntry),
            2 => Some(OpCode::ReadEntry),
            3 => Some(OpCode::Auth),
            7 => Some(OpCode::BatchReadEntry),
            _ => None,
        }
    }
}

/// The first i32 of a v2 frame body: version (bits 31..24), opcode (23..16), flags (15..0).
/// Version 0 is the legacy form, where the whole int is the opcode and flags are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    pub version: i8,
    /// As a signed byte, like Java's `getOpCode`.
    pub op_code: i8,
    pub flags: u16,
}

impl PacketHeader {
    /// `PacketHeader.toInt`.
    pub const fn to_int(self) -> i32 {
        if self.version == 0 {
            self.op_code as i32
        } else {
            ((self.version as i32) << 24) | (((self.op_code as u8) as i32) << 16) | self.flags as i32
        }
    }

    /// `getVersion`, `getOpCode`, `getFlags`.
    pub const fn from_int(h: i32) -> PacketHeader {
        let version = (h >> 24) as i8;
        if version == 0 {
            PacketHeader { version, op_code: h as i8, flags: 0 }
        } else {
            PacketHeader { version, op_code: (h >> 16) as i8, flags: h as u16 }
        }
    }
}

/// The v2 return codes (`BookieProtocol.E*`).
pub mod rc {
    pub const EOK: i32 = 0;
    pub const ENOLEDGER: i32 = 1;
    pub const ENOENTRY: i32 = 2;
    pub const EBADREQ: i32 = 100;
    pub const EIO: i32 = 101;
    /// Unauthorized, e.g. a wrong master key.
    pub const EUA: i32 = 102;
    pub const EBADVERSION: i32 = 103;
    pub const EFENCED: i32 = 104;
    pub const EREADONLY: i32 = 105;
    pub const ETOOMANYREQUESTS: i32 = 106;
    pub const EUNKNOWNLEDGERSTATE: i32 = 107;
}

/// (name, v2 value, v3 `StatusCode` value), docs/formats.md#v2-wire-frames.
pub const RETURN_CODES: [(&str, i32, i32); 11] = [
    ("EOK", rc::EOK, 0),
    ("ENOLEDGER", rc::ENOLEDGER, 402),
    ("ENOENTRY", rc::ENOENTRY, 403),
    ("EBADREQ", rc::EBADREQ, 404),
    ("EIO", rc::EIO, 501),
    ("EUA", rc::EUA, 502),
    ("EBADVERSION", rc::EBADVERSION, 503),
    ("EFENCED", rc::EFENCED, 504),
    ("EREADONLY", rc::EREADONLY, 505),
    ("ETOOMANYREQUESTS", rc::ETOOMANYREQUESTS, 506),
    ("EUNKNOWNLEDGERSTATE", rc::EUNKNOWNLEDGERSTATE, 507),
];

/// The v3 `StatusCode` of a v2 return code.
pub fn v2_to_v3_status(rc: i32) -> Option<i32> {
    RETURN_CODES.iter().find(|(_, v2, _)| *v2 == rc).map(|(_, _, v3)| *v3)
}

/// The v2 return code of a v3 `StatusCode`.
pub fn v3_to_v2_status(status: i32) -> Option<i32> {
    RETURN_CODES.iter().find(|(_, _, v3)| *v3 == status).map(|(_, v2, _)| *v2)
}

/// The name of a v2 return code.
pub fn return_code_name(rc: i32) -> Option<&'static str> {
    RETURN_CODES.iter().find(|(_, v2, _)| *v2 == rc).map(|(n, _, _)| *n)
}

/// ADD request: master key, then the entry. The bookie reads ledger and entry id
/// from the entry's first 16 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddRequest<'a> {
    pub version: i8,
    pub flags: u16,
    pub master_key: [u8; MASTER_KEY_LENGTH],
    pub entry: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddResponse {
    pub version: i8,
    pub flags: u16,
    pub rc: i32,
    pub ledger_id: i64,
    pub entry_id: i64,
}

/// READ request; `entry_id` -1 reads the last add confirmed. The master key is on
/// the wire exactly when fencing with version 2 or later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub version: i8,
    pub flags: u16,
    pub ledger_id: i64,
    pub entry_id: i64,
    pub master_key: Option<[u8; MASTER_KEY_LENGTH]>,
}

/// READ response: the stored entry when `rc` is EOK, empty otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResponse<'a> {
    pub version: i8,
    pub flags: u16,
    pub rc: i32,
    pub ledger_id: i64,
    pub entry_id: i64,
    pub data: &'a [u8],
}

/// BATCH_READ request (since 4.17, BP-62).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReadRequest {
    pub version: i8,
    pub flags: u16,
    pub ledger_id: i64,
    pub start_entry_id: i64,
    pub request_id: i64,
    pub max_count: i32,
    pub max_size: i64,
    pub master_key: Option<[u8; MASTER_KEY_LENGTH]>,
}

/// BATCH_READ response: `[i32 len][entry]` items until the frame ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReadResponse<'a> {
    pub version: i8,
    pub flags: u16,
    pub rc: i32,
    pub ledger_id: i64,
    pub start_entry_id: i64,
    pub request_id: i64,
    pub entries: Vec<&'a [u8]>,
}

/// AUTH, either direction: a protobuf `AuthMessage {1 authPluginName, 2 payload}`
/// (both required) right after the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMessage {
    pub version: i8,
    pub flags: u16,
    pub auth_plugin_name: String,
    pub payload: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
struct AuthMessageProto {
    #[prost(string, optional, tag = "1")]
    auth_plugin_name: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    payload: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    Add(AddRequest<'a>),
    Read(ReadRequest),
    BatchRead(BatchReadRequest),
    Auth(AuthMessage),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response<'a> {
    Add(AddResponse),
    Read(ReadResponse<'a>),
    BatchRead(BatchReadResponse<'a>),
    Auth(AuthMessage),
}

// ---------------------------------------------------------------- encoding

fn check_header(version: i8, flags: u16) -> Result<()> {
    if !(LOWEST_COMPAT_PROTOCOL_VERSION..=CURRENT_PROTOCOL_VERSION).contains(&version) {
        return Err(Error::invalid_argument(format!(
            "protocol version {version} is outside [0, 2]; a bookie would answer EBADVERSION (103)"
        )));
    }
    if version == 0 && flags != 0 {
        return Err(Error::invalid_argument("the version-0 header has no room for flags"));
    }
    Ok(())
}

fn start(version: i8, op: OpCode, flags: u16, capacity: usize) -> Result<Vec<u8>> {
    check_header(version, flags)?;
    let mut body = Vec::with_capacity(capacity);
    body.extend_from_slice(&PacketHeader { version, op_code: op as i8, flags }.to_int().to_be_bytes());
    Ok(body)
}

/// Whether a READ or BATCH_READ with these header fields carries the master key.
pub const fn carries_master_key(version: i8, flags: u16) -> bool {
    flags & flags::DO_FENCING != 0 && version >= 2
}

fn push_key(body: &mut Vec<u8>, version: i8, flags: u16, key: Option<&[u8; MASTER_KEY_LENGTH]>) -> Result<()> {
    match (carries_master_key(version, flags), key) {
        (true, Some(k)) => {
            body.extend_from_slice(k);
            Ok(())
        }
        (false, None) => Ok(()),
        (true, None) => Err(Error::invalid_argument("a fencing read at version 2 must carry the master key")),
        (false, Some(_)) => Err(Error::invalid_argument(
            "the master key is sent only with the fencing flag at version 2; this read has no room for it",
        )),
    }
}

impl AddRequest<'_> {
    /// The ledger id the bookie reads from the entry.
    pub fn ledger_id(&self) -> i64 {
        i64_at(self.entry, 0).unwrap_or(-1)
    }

    pub fn entry_id(&self) -> i64 {
        i64_at(self.entry, 8).unwrap_or(-1)
    }

    /// Refuses entries the v2 protocol cannot carry (docs/formats.md#v2-wire-frames): a BP-35
    /// versioned entry (first byte with bit 7 set, which every entry with a
    /// non-zero scope has) would be read as a ledger id by the bookie.
    pub fn encode(&self) -> Result<Vec<u8>> {
        check_entry(self.entry).map_err(|e| Error::invalid_argument(e.detail))?;
        let mut body = start(self.version, OpCode::AddEntry, self.flags, 24 + self.entry.len())?;
        body.extend_from_slice(&self.master_key);
        body.extend_from_slice(self.entry);
        frame(body)
    }
}

/// The ADD body checks: room for the ids the bookie reads, and a V1 entry.
fn check_entry(entry: &[u8]) -> Result<()> {
    if entry.len() < 16 {
        return Err(Error::truncated(0, 16, entry.len() as u64)
            .with_detail(format!("an ADD entry needs at least its 16-byte ledger and entry ids, got {} bytes", entry.len())));
    }
    if EntryFormat::detect(entry[0]) != EntryFormat::V1 {
        return Err(Error::corrupt(0, format!(
            "entry starts with 0x{:02x} (bit 7 set: a BP-35 versioned entry, scope {}); the v2 protocol carries only V1 entries: EBADREQ (100)",
            entry[0],
            if entry.len() >= 9 { i64_at(entry, 1).map(|s| s.to_string()).unwrap_or_default() } else { "unknown".into() }
        )));
    }
    Ok(())
}

impl AddResponse {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut body = start(self.version, OpCode::AddEntry, self.flags, 24)?;
        body.extend_from_slice(&self.rc.to_be_bytes());
        body.extend_from_slice(&self.ledger_id.to_be_bytes());
        body.extend_from_slice(&self.entry_id.to_be_bytes());
        frame(body)
    }
}

impl ReadRequest {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut body = start(self.version, OpCode::ReadEntry, self.flags, 40)?;
        body.extend_from_slice(&self.ledger_id.to_be_bytes());
        body.extend_from_slice(&self.entry_id.to_be_bytes());
        push_key(&mut body, self.version, self.flags, self.master_key.as_ref())?;
        frame(body)
    }
}

impl ReadResponse<'_> {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut body = start(self.version, OpCode::ReadEntry, self.flags, 24 + self.data.len())?;
        body.extend_from_slice(&self.rc.to_be_bytes());
        body.extend_from_slice(&self.ledger_id.to_be_bytes());
        body.extend_from_slice(&self.entry_id.to_be_bytes());
        body.extend_from_slice(self.data);
        frame(body)
    }
}

impl BatchReadRequest {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut body = start(self.version, OpCode::BatchReadEntry, self.flags, 60)?;
        body.extend_from_slice(&self.ledger_id.to_be_bytes());
        body.extend_from_slice(&self.start_entry_id.to_be_bytes());
        body.extend_from_slice(&self.request_id.to_be_bytes());
        body.extend_from_slice(&self.max_count.to_be_bytes());
        body.extend_from_slice(&self.max_size.to_be_bytes());
        push_key(&mut body, self.version, self.flags, self.master_key.as_ref())?;
        frame(body)
    }
}

impl BatchReadResponse<'_> {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let size = 32 + self.entries.iter().map(|e| 4 + e.len()).sum::<usize>();
        let mut body = start(self.version, OpCode::BatchReadEntry, self.flags, size)?;
        body.extend_from_slice(&self.rc.to_be_bytes());
        body.extend_from_slice(&self.ledger_id.to_be_bytes());
        body.extend_from_slice(&self.start_entry_id.to_be_bytes());
        body.extend_from_slice(&self.request_id.to_be_bytes());
        for e in &self.entries {
            let len = i32::try_from(e.len())
                .map_err(|_| Error::invalid_argument(format!("entry of {} bytes does not fit an i32 length", e.len())))?;
            body.extend_from_slice(&len.to_be_bytes());
            body.extend_from_slice(e);
        }
        frame(body)
    }
}

impl AuthMessage {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let msg = AuthMessageProto {
            auth_plugin_name: Some(self.auth_plugin_name.clone()),
            payload: Some(self.payload.clone()),
        };
        let mut body = start(self.version, OpCode::Auth, self.flags, 4 + msg.encoded_len())?;
        msg.encode(&mut body).expect("a Vec grows as needed");
        frame(body)
    }
}

impl Request<'_> {
    pub fn encode(&self) -> Result<Vec<u8>> {
        match self {
            Request::Add(m) => m.encode(),
            Request::Read(m) => m.encode(),
            Request::BatchRead(m) => m.encode(),
            Request::Auth(m) => m.encode(),
        }
    }

    pub fn op(&self) -> OpCode {
        match self {
            Request::Add(_) => OpCode::AddEntry,
            Request::Read(_) => OpCode::ReadEntry,
            Request::BatchRead(_) => OpCode::BatchReadEntry,
            Request::Auth(_) => OpCode::Auth,
        }
    }
}

impl Response<'_> {
    pub fn encode(&self) -> Result<Vec<u8>> {
        match self {
            Response::Add(m) => m.encode(),
            Response::Read(m) => m.encode(),
            Response::BatchRead(m) => m.encode(),
            Response::Auth(m) => m.encode(),
        }
    }

    pub fn op(&self) -> OpCode {
        match self {
            Response::Add(_) => OpCode::AddEntry,
            Response::Read(_) => OpCode::ReadEntry,
            Response::BatchRead(_) => OpCode::BatchReadEntry,
            Response::Auth(_) => OpCode::Auth,
        }
    }
}

// ---------------------------------------------------------------- decoding

/// The frame's body and its header, with the checks every v2 frame gets: the
/// whole input is one frame, the version is one a bookie serves, the opcode has
/// v2 framing. Offsets in later errors are body-relative; callers add 4.
fn open_frame(data: &[u8], max_frame_size: usize) -> Result<(&[u8], PacketHeader, OpCode)> {
    let (body, used) = split_frame(data, max_frame_size)?;
    if used != data.len() {
        return Err(Error::corrupt(used as u64, format!(
            "{} bytes follow the {used}-byte frame (use split_frames for a stream)",
            data.len() - used
        )));
    }
    let header = PacketHeader::from_int(
        i32_at(body, 0).map_err(|e| e.at_base(FRAME_LENGTH_LEN as u64).with_detail("frame body shorter than its 4-byte packet header"))?,
    );
    if !(LOWEST_COMPAT_PROTOCOL_VERSION..=CURRENT_PROTOCOL_VERSION).contains(&header.version) {
        return Err(Error::new(
            ErrorKind::UnsupportedVersion,
            FRAME_LENGTH_LEN as u64,
            format!("protocol version {} is outside [0, 2]: a bookie answers EBADVERSION (103)", header.version),
        ));
    }
    let op = OpCode::framed(header.op_code).ok_or_else(|| {
        Error::corrupt(FRAME_LENGTH_LEN as u64, format!(
            "opcode {} has no v2 framing (a bookie closes the connection)",
            header.op_code
        ))
    })?;
    Ok((body, header, op))
}

fn unframed(op: OpCode) -> Error {
    Error::corrupt(0, format!("opcode {} ({}) has no v2 framing", op as u8, op.name()))
}

fn key_at(body: &[u8], at: usize) -> Result<[u8; MASTER_KEY_LENGTH]> {
    let mut k = [0u8; MASTER_KEY_LENGTH];
    k.copy_from_slice(slice_at(body, at, MASTER_KEY_LENGTH)?);
    Ok(k)
}

/// Requires the body to end at `end`: Java leaves extra bytes unread, but in a
/// fixed-size message they mean the frame is not what its header says.
fn no_trailing(body: &[u8], end: usize, what: &str) -> Result<()> {
    if body.len() > end {
        return Err(Error::corrupt(end as u64, format!("{} bytes after the end of a {what}", body.len() - end)));
    }
    Ok(())
}

fn decode_auth(body: &[u8], header: PacketHeader) -> Result<AuthMessage> {
    let msg = AuthMessageProto::decode(&body[4..]).map_err(|e| Error::corrupt(4, format!("AuthMessage protobuf: {e}")))?;
    let (Some(auth_plugin_name), Some(payload)) = (msg.auth_plugin_name, msg.payload) else {
        return Err(Error::corrupt(4, "AuthMessage is missing a required field (authPluginName, payload)"));
    };
    Ok(AuthMessage { version: header.version, flags: header.flags, auth_plugin_name, payload })
}

/// Decodes one whole request frame (`[i32 len][body]`).
pub fn decode_request(data: &[u8], max_frame_size: usize) -> Result<Request<'_>> {
    let (body, h, op) = open_frame(data, max_frame_size)?;
    decode_request_body(body, h, op).map_err(|e| e.at_base(FRAME_LENGTH_LEN as u64))
}

fn decode_request_body(body: &[u8], h: PacketHeader, op: OpCode) -> Result<Request<'_>> {
    Ok(match op {
        OpCode::AddEntry => {
            let master_key = key_at(body, 4)?;
            let entry = &body[24..];
            check_entry(entry).map_err(|e| e.at_base(24))?;
            Request::Add(AddRequest { version: h.version, flags: h.flags, master_key, entry })
        }
        OpCode::ReadEntry => {
            let ledger_id = i64_at(body, 4)?;
            let entry_id = i64_at(body, 12)?;
            let (master_key, end) = if carries_master_key(h.version, h.flags) {
                (Some(key_at(body, 20)?), 40)
            } else {
                (None, 20)
            };
            no_trailing(body, end, "READ request")?;
            Request::Read(ReadRequest { version: h.version, flags: h.flags, ledger_id, entry_id, master_key })
        }
        OpCode::BatchReadEntry => {
            let ledger_id = i64_at(body, 4)?;
            let start_entry_id = i64_at(body, 12)?;
            let request_id = i64_at(body, 20)?;
            let max_count = i32_at(body, 28)?;
            let max_size = i64_at(body, 32)?;
            let (master_key, end) = if carries_master_key(h.version, h.flags) {
                (Some(key_at(body, 40)?), 60)
            } else {
                (None, 40)
            };
            no_trailing(body, end, "BATCH_READ request")?;
            Request::BatchRead(BatchReadRequest {
                version: h.version,
                flags: h.flags,
                ledger_id,
                start_entry_id,
                request_id,
                max_count,
                max_size,
                master_key,
            })
        }
        OpCode::Auth => Request::Auth(decode_auth(body, h)?),
        OpCode::ReadLac | OpCode::WriteLac | OpCode::GetBookieInfo => return Err(unframed(op)),
    })
}

/// Decodes one whole response frame (`[i32 len][body]`).
pub fn decode_response(data: &[u8], max_frame_size: usize) -> Result<Response<'_>> {
    let (body, h, op) = open_frame(data, max_frame_size)?;
    decode_response_body(body, h, op).map_err(|e| e.at_base(FRAME_LENGTH_LEN as u64))
}

fn decode_response_body(body: &[u8], h: PacketHeader, op: OpCode) -> Result<Response<'_>> {
    Ok(match op {
        OpCode::AddEntry => {
            let rc = i32_at(body, 4)?;
            let ledger_id = i64_at(body, 8)?;
            let entry_id = i64_at(body, 16)?;
            no_trailing(body, 24, "ADD response")?;
            Response::Add(AddResponse { version: h.version, flags: h.flags, rc, ledger_id, entry_id })
        }
        OpCode::ReadEntry => {
            let rc = i32_at(body, 4)?;
            let ledger_id = i64_at(body, 8)?;
            let entry_id = i64_at(body, 16)?;
            Response::Read(ReadResponse { version: h.version, flags: h.flags, rc, ledger_id, entry_id, data: &body[24..] })
        }
        OpCode::BatchReadEntry => {
            let rc = i32_at(body, 4)?;
            let ledger_id = i64_at(body, 8)?;
            let start_entry_id = i64_at(body, 16)?;
            let request_id = i64_at(body, 24)?;
            let mut entries = Vec::new();
            let mut pos = 32;
            while pos < body.len() {
                let len = i32_at(body, pos).map_err(|e| e.with_detail("batch item shorter than its 4-byte length"))?;
                if len < 0 {
                    return Err(Error::corrupt(pos as u64, format!("negative batch item length {len}")));
                }
                let item = slice_at(body, pos + 4, len as usize)
                    .map_err(|e| e.with_detail(format!("batch item of {len} bytes runs past the frame end")))?;
                entries.push(item);
                pos += 4 + len as usize;
            }
            Response::BatchRead(BatchReadResponse {
                version: h.version,
                flags: h.flags,
                rc,
                ledger_id,
                start_entry_id,
                request_id,
                entries,
            })
        }
        OpCode::Auth => Response::Auth(decode_auth(body, h)?),
        OpCode::ReadLac | OpCode::WriteLac | OpCode::GetBookieInfo => return Err(unframed(op)),
    })
}

#[cfg(test)]
mod tests;
