//! The framing of one stored Pulsar entry (docs/pulsar.md#pulsar-entries), read as
//! `Commands.parseMessageMetadata` reads it:
//!
//! ```text
//! [0x0e02][u32 N][BrokerEntryMetadata]   optional, added by the broker
//! [0x0e01][u32 CRC-32C]                  optional, added by the producer
//! [u32 M][MessageMetadata]
//! [payload]                              the rest: compressed, maybe encrypted, maybe a batch
//! ```
//!
//! Each prefix is recognised by peeking two bytes, as Pulsar does. The CRC-32C
//! covers everything after it (metadata size, metadata, payload); the broker's
//! prefix comes later and is not covered.

use prost::Message;

use super::proto::{BrokerEntryMetadata, MessageMetadata};
use crate::bytes::slice_at;
use crate::digest::crc32c;
use crate::error::{Error, ErrorKind, Result};

pub const MAGIC_BROKER_ENTRY_METADATA: u16 = 0x0e02;
pub const MAGIC_CRC32C: u16 = 0x0e01;

/// The producer's checksum and whether the bytes still match it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checksum {
    pub stored: u32,
    pub computed: u32,
    /// Where the 4 checksum bytes are.
    pub offset: usize,
}

impl Checksum {
    pub fn ok(&self) -> bool {
        self.stored == self.computed
    }

    pub fn mismatch(&self) -> Error {
        Error::new(
            ErrorKind::DigestMismatch,
            self.offset as u64,
            format!("Pulsar checksum mismatch: stored crc32c {:08x}, computed {:08x}", self.stored, self.computed),
        )
    }
}

/// One entry's parts. Offsets are from the start of the entry payload.
#[derive(Debug, Clone)]
pub struct EntryFrame<'a> {
    pub broker: Option<BrokerEntryMetadata>,
    pub checksum: Option<Checksum>,
    pub metadata: MessageMetadata,
    pub metadata_offset: usize,
    pub payload: &'a [u8],
    pub payload_offset: usize,
}

#[inline]
fn peek_u16(data: &[u8], at: usize) -> Option<u16> {
    data.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

fn u32_at(data: &[u8], at: usize, what: &str) -> Result<u32> {
    let b = slice_at(data, at, 4).map_err(|e| {
        let detail = format!("{what} cut short: {}", e.detail);
        e.with_detail(detail)
    })?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// `len` bytes at `at` for a section whose size field said `len`.
fn section<'a>(data: &'a [u8], at: usize, len: u32, what: &str) -> Result<&'a [u8]> {
    let left = data.len().saturating_sub(at);
    if len as usize > left {
        return Err(Error::new(
            ErrorKind::Truncated,
            at.saturating_sub(4) as u64,
            format!("{what} size {len} is more than the {left} bytes left in the entry"),
        ));
    }
    Ok(&data[at..at + len as usize])
}

/// Decodes a protobuf, naming the message and the offset where it starts.
pub(crate) fn decode_proto<M: Message + Default>(bytes: &[u8], at: usize, what: &str) -> Result<M> {
    M::decode(bytes).map_err(|e| Error::corrupt(at as u64, format!("{what} does not decode: {e}")))
}

/// The broker's prefix, when the entry starts with one: the metadata and where the rest begins.
pub fn broker_entry_metadata(data: &[u8]) -> Result<(Option<BrokerEntryMetadata>, usize)> {
    if peek_u16(data, 0) != Some(MAGIC_BROKER_ENTRY_METADATA) {
        return Ok((None, 0));
    }
    let size = u32_at(data, 2, "broker entry metadata")?;
    let bytes = section(data, 6, size, "broker entry metadata")?;
    let bem = decode_proto::<BrokerEntryMetadata>(bytes, 6, "BrokerEntryMetadata")?;
    Ok((Some(bem), 6 + size as usize))
}

/// Splits an entry into its parts and checks the producer's checksum.
///
/// A checksum that does not match is reported in [`EntryFrame::checksum`], not
/// as an error: the caller decides (the metadata may still be readable).
pub fn parse_entry(data: &[u8]) -> Result<EntryFrame<'_>> {
    let (broker, mut at) = broker_entry_metadata(data)?;
    let mut checksum = None;
    if peek_u16(data, at) == Some(MAGIC_CRC32C) {
        let stored = u32_at(data, at + 2, "checksum")?;
        checksum = Some(Checksum { stored, computed: crc32c(&data[at + 6..]), offset: at + 2 });
        at += 6;
    }
    let size = u32_at(data, at, "metadata size")?;
    let metadata_offset = at + 4;
    let bytes = section(data, metadata_offset, size, "MessageMetadata")?;
    let metadata = decode_proto::<MessageMetadata>(bytes, metadata_offset, "MessageMetadata")?;
    for (present, field) in [
        (metadata.producer_name.is_some(), "producer_name"),
        (metadata.sequence_id.is_some(), "sequence_id"),
        (metadata.publish_time.is_some(), "publish_time"),
    ] {
        if !present {
            return Err(Error::corrupt(
                metadata_offset as u64,
                format!("MessageMetadata lacks its required field {field}"),
            ));
        }
    }
    let payload_offset = metadata_offset + size as usize;
    Ok(EntryFrame { broker, checksum, metadata, metadata_offset, payload: &data[payload_offset..], payload_offset })
}

/// The producer's checksum alone, when the entry has one (for a frame that fails to parse).
pub fn checksum_of(data: &[u8]) -> Option<Checksum> {
    let at = match broker_entry_metadata(data) {
        Ok((_, at)) => at,
        Err(_) => return None,
    };
    if peek_u16(data, at) != Some(MAGIC_CRC32C) {
        return None;
    }
    let stored = u32_at(data, at + 2, "checksum").ok()?;
    Some(Checksum { stored, computed: crc32c(&data[at + 6..]), offset: at + 2 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// docs/pulsar.md#test-vectors: checksum, 12-byte metadata, payload `hello`.
    const PLAIN: &str = "0e01 cf85822f 0000000c 0a0170 1000 1880d095ffbc31 68656c6c6f";

    #[test]
    fn the_spec_vector_parses_and_its_checksum_matches() {
        let data = hex(PLAIN);
        let f = parse_entry(&data).unwrap();
        assert!(f.broker.is_none());
        let c = f.checksum.unwrap();
        assert!(c.ok(), "{c:?}");
        assert_eq!(c.stored, 0xcf85822f);
        assert_eq!(f.metadata.producer_name.as_deref(), Some(&b"p"[..]));
        assert_eq!(f.metadata.sequence_id, Some(0));
        assert_eq!(f.metadata.publish_time, Some(1_700_000_000_000));
        assert_eq!(f.payload, b"hello");
        assert_eq!(f.payload_offset, 22);
    }

    #[test]
    fn broker_entry_metadata_is_peeled_off_and_not_checksummed() {
        let data = hex(&format!("0e02 00000009 08fbd095ffbc31 1000 {PLAIN}"));
        let f = parse_entry(&data).unwrap();
        let b = f.broker.unwrap();
        assert_eq!(b.broker_timestamp, Some(1_700_000_000_123));
        assert_eq!(b.index, Some(0));
        assert!(f.checksum.unwrap().ok());
        assert_eq!(f.payload, b"hello");
    }

    #[test]
    fn without_a_checksum_the_metadata_size_comes_first() {
        let data = hex("0000000c 0a0170 1000 1880d095ffbc31 68656c6c6f");
        let f = parse_entry(&data).unwrap();
        assert!(f.checksum.is_none());
        assert_eq!(f.payload, b"hello");
    }

    #[test]
    fn a_flipped_payload_byte_is_a_checksum_mismatch_not_an_error() {
        let mut data = hex(PLAIN);
        let last = data.len() - 1;
        data[last] ^= 1;
        let f = parse_entry(&data).unwrap();
        let c = f.checksum.unwrap();
        assert!(!c.ok());
        assert_eq!(c.mismatch().kind, ErrorKind::DigestMismatch);
        assert_eq!(checksum_of(&data), Some(c));
    }

    #[test]
    fn damage_is_an_error_with_its_offset() {
        let data = hex(PLAIN);
        // Cut inside the metadata: its size says more than is left.
        let e = parse_entry(&data[..15]).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 6));
        // Cut inside the checksum and the size fields.
        assert_eq!(parse_entry(&data[..4]).unwrap_err().kind, ErrorKind::Truncated);
        assert_eq!(parse_entry(&data[..8]).unwrap_err().kind, ErrorKind::Truncated);
        assert_eq!(parse_entry(&[]).unwrap_err().kind, ErrorKind::Truncated);
        // A huge metadata size.
        let e = parse_entry(&hex("7fffffff 00")).unwrap_err();
        assert!(e.detail.contains("2147483647"), "{e}");
        // Metadata missing a required field (no publish_time).
        let e = parse_entry(&hex("00000005 0a0170 1000 ff")).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 4));
        assert!(e.detail.contains("publish_time"), "{e}");
        // Bytes that are not a protobuf.
        let e = parse_entry(&hex("00000002 ffff")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt);
        // A broker prefix whose size runs past the end.
        let e = parse_entry(&hex("0e02 00001000 08")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated);
    }
}
