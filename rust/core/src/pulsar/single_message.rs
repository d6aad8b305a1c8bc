//! `SingleMessageMetadata`, the header of each message in a batch, read in place.
//!
//! This is the one protobuf read once per message rather than once per entry, so
//! it is read without allocating: fields are slices of the batch, properties go to
//! a list the caller reuses. (prost's derived reader allocates a `Vec` per string
//! field and a `Vec` of properties per message, which measured at most of the time
//! of a batch of small messages.) The rules are LightProto's: unknown fields, and
//! known field numbers with another wire type, are skipped; a bool is a varint
//! equal to 1.

/// One message's metadata, borrowing from the batch it was read from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SingleMessage<'a> {
    pub partition_key: Option<&'a [u8]>,
    pub partition_key_b64_encoded: Option<bool>,
    pub ordering_key: Option<&'a [u8]>,
    /// Where this message's properties are in the caller's list: `start..end`.
    pub properties: (usize, usize),
    pub payload_size: Option<i32>,
    pub compacted_out: Option<bool>,
    pub event_time: Option<u64>,
    pub sequence_id: Option<u64>,
    pub null_value: Option<bool>,
    pub null_partition_key: Option<bool>,
    /// Whether it sets any field most messages leave out: properties, event time,
    /// ordering key, or one of the flags (so a batch of messages that set none fills
    /// those columns as one run each).
    pub sets_rare_fields: bool,
}

/// A property's key and value (value `None` when the pair lacks it).
pub type Property<'a> = (&'a [u8], Option<&'a [u8]>);

#[inline(always)]
fn varint(b: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos).ok_or("a varint runs past the end")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
        shift += 7;
        if shift >= 70 {
            return Err("a varint is longer than 10 bytes");
        }
    }
}

#[inline(always)]
fn bytes<'a>(b: &'a [u8], pos: &mut usize) -> Result<&'a [u8], &'static str> {
    let len = varint(b, pos)?;
    let end = pos.checked_add(len as usize).filter(|&e| len <= b.len() as u64 && e <= b.len()).ok_or("a length runs past the end")?;
    let s = &b[*pos..end];
    *pos = end;
    Ok(s)
}

fn skip(b: &[u8], pos: &mut usize, wire_type: u64) -> Result<(), &'static str> {
    match wire_type {
        0 => varint(b, pos).map(|_| ()),
        1 | 5 => {
            let n = if wire_type == 1 { 8 } else { 4 };
            *pos = pos.checked_add(n).filter(|&e| e <= b.len()).ok_or("a fixed-size field runs past the end")?;
            Ok(())
        }
        2 => bytes(b, pos).map(|_| ()),
        _ => Err("a group or an unknown wire type"),
    }
}

/// `KeyValue{1 key, 2 value}`.
fn property(b: &[u8]) -> Result<Property<'_>, &'static str> {
    let (mut key, mut value, mut pos) = (None, None, 0);
    while pos < b.len() {
        let tag = varint(b, &mut pos)?;
        match tag {
            0x0a => key = Some(bytes(b, &mut pos)?),
            0x12 => value = Some(bytes(b, &mut pos)?),
            _ => skip(b, &mut pos, tag & 7)?,
        }
    }
    Ok((key.unwrap_or_default(), value))
}

/// Reads one `SingleMessageMetadata`; its properties are appended to `properties`.
#[inline(always)]
pub fn parse<'a>(b: &'a [u8], properties: &mut Vec<Property<'a>>) -> Result<SingleMessage<'a>, &'static str> {
    let mut m = SingleMessage { properties: (properties.len(), properties.len()), ..Default::default() };
    let mut pos = 0;
    // Writers put fields in field-number order, so a plain message is key, payload
    // size, sequence id: read in that order without the general loop's dispatch,
    // which then reads whatever follows.
    if b.first() == Some(&0x12) {
        pos = 1;
        m.partition_key = Some(bytes(b, &mut pos)?);
    }
    if b.get(pos) == Some(&0x18) {
        pos += 1;
        m.payload_size = Some(varint(b, &mut pos)? as i32);
    }
    if b.get(pos) == Some(&0x40) {
        pos += 1;
        m.sequence_id = Some(varint(b, &mut pos)?);
    }
    while pos < b.len() {
        let tag = varint(b, &mut pos)?;
        match tag {
            0x12 => m.partition_key = Some(bytes(b, &mut pos)?),
            0x18 => m.payload_size = Some(varint(b, &mut pos)? as i32),
            0x40 => m.sequence_id = Some(varint(b, &mut pos)?),
            _ => {
                m.sets_rare_fields = true;
                match tag {
                    0x0a => properties.push(property(bytes(b, &mut pos)?)?),
                    0x20 => m.compacted_out = Some(varint(b, &mut pos)? == 1),
                    0x28 => m.event_time = Some(varint(b, &mut pos)?),
                    0x30 => m.partition_key_b64_encoded = Some(varint(b, &mut pos)? == 1),
                    0x3a => m.ordering_key = Some(bytes(b, &mut pos)?),
                    0x48 => m.null_value = Some(varint(b, &mut pos)? == 1),
                    0x50 => m.null_partition_key = Some(varint(b, &mut pos)? == 1),
                    _ => skip(b, &mut pos, tag & 7)?,
                }
            }
        }
    }
    m.properties.1 = properties.len();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::proto::{KeyValue, SingleMessageMetadata};
    use prost::Message;

    #[test]
    fn reads_what_prost_writes() {
        let smm = SingleMessageMetadata {
            properties: vec![
                KeyValue { key: Some(b"a".to_vec()), value: Some(b"1".to_vec()) },
                KeyValue { key: Some(b"b".to_vec()), value: None },
            ],
            partition_key: Some(b"key".to_vec()),
            payload_size: Some(300),
            compacted_out: Some(true),
            event_time: Some(1 << 40),
            partition_key_b64_encoded: Some(false),
            ordering_key: Some(vec![0, 1]),
            sequence_id: Some(u64::MAX),
            null_value: Some(true),
            null_partition_key: Some(false),
        };
        let mut bytes = smm.encode_to_vec();
        // Unknown fields of every wire type are skipped.
        bytes.extend_from_slice(&[0x58, 0x01, 0x61, 1, 2, 3, 4, 5, 6, 7, 8, 0x6a, 0x02, 9, 9, 0x75, 1, 2, 3, 4]);
        let mut props = vec![(&b"x"[..], None)];
        let m = parse(&bytes, &mut props).unwrap();
        assert_eq!(m.properties, (1, 3));
        assert_eq!(props[1..], [(&b"a"[..], Some(&b"1"[..])), (&b"b"[..], None)]);
        assert_eq!(m.partition_key, Some(&b"key"[..]));
        assert_eq!((m.payload_size, m.compacted_out, m.event_time), (Some(300), Some(true), Some(1 << 40)));
        assert_eq!((m.ordering_key, m.sequence_id), (Some(&[0u8, 1][..]), Some(u64::MAX)));
        assert_eq!((m.null_value, m.null_partition_key, m.partition_key_b64_encoded), (Some(true), Some(false), Some(false)));
        // A negative payload size (a 10-byte varint) comes back negative.
        let neg = SingleMessageMetadata { payload_size: Some(-1), ..Default::default() }.encode_to_vec();
        assert_eq!(parse(&neg, &mut Vec::new()).unwrap().payload_size, Some(-1));
    }

    #[test]
    fn rare_fields_are_noticed() {
        let plain = SingleMessageMetadata { partition_key: Some(b"k".to_vec()), payload_size: Some(3), sequence_id: Some(9), ..Default::default() };
        assert!(!parse(&plain.encode_to_vec(), &mut Vec::new()).unwrap().sets_rare_fields);
        let rare = [
            SingleMessageMetadata { properties: vec![KeyValue { key: Some(b"a".to_vec()), value: None }], ..plain.clone() },
            SingleMessageMetadata { compacted_out: Some(false), ..plain.clone() },
            SingleMessageMetadata { event_time: Some(1), ..plain.clone() },
            SingleMessageMetadata { partition_key_b64_encoded: Some(false), ..plain.clone() },
            SingleMessageMetadata { ordering_key: Some(vec![]), ..plain.clone() },
            SingleMessageMetadata { null_value: Some(false), ..plain.clone() },
            SingleMessageMetadata { null_partition_key: Some(false), ..plain.clone() },
        ];
        for smm in rare {
            assert!(parse(&smm.encode_to_vec(), &mut Vec::new()).unwrap().sets_rare_fields, "{smm:?}");
        }
    }

    #[test]
    fn cut_and_damaged_bytes_are_errors() {
        let smm = SingleMessageMetadata { partition_key: Some(b"key".to_vec()), payload_size: Some(3), ..Default::default() };
        let bytes = smm.encode_to_vec();
        for cut in 1..bytes.len() {
            let r = parse(&bytes[..cut], &mut Vec::new());
            assert!(r.is_err() || r.unwrap().payload_size.is_none(), "cut at {cut}");
        }
        assert!(parse(&[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f], &mut Vec::new()).is_err());
        assert!(parse(&[0x0b], &mut Vec::new()).is_err(), "a group");
        assert!(parse(&[0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut Vec::new()).is_err());
    }
}
