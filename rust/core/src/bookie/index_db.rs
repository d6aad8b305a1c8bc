//! Keys and values of DbLedgerStorage's RocksDB indexes
//! (docs/formats.md#dbledgerstorage-indexes). Every integer is a big-endian i64.
//!
//! | database | key | value |
//! |---|---|---|
//! | `locations` | ledger ‖ entry (16 bytes) | location |
//! | `ledgers` | ledger (8 bytes) | `LedgerData` (proto2) |
//! | `scoped-locations` | scope ‖ ledger ‖ entry (24 bytes) | location |
//! | `scoped-ledgers` | scope ‖ ledger (16 bytes) | `LedgerData` |
//!
//! The `ledgers` database of the first index directory also holds the storage
//! flags under the ledger id -0xeefd. The scoped databases are bkcodec's
//! convention: BP-35 asks for "a new rocksdb" and names none.
//!
//! Reading the databases themselves (WAL replay, range deletes, compression) is a
//! RocksDB's job; this module only gives their bytes a meaning.

use prost::Message;

use crate::bytes::i64_unchecked;
use crate::error::{Error, Result};
use crate::files::Location;
use crate::ledger_id::{LedgerId, LOCATION_KEY_LEN, SCOPED_LOCATION_KEY_LEN};

/// `LedgerMetadataIndex.STORAGE_FLAGS`, the one special key of a `ledgers` database.
pub const STORAGE_FLAGS_LEDGER_ID: i64 = -0xeefd;
/// Its bytes: `ff ff ff ff ff ff 11 03`.
pub const STORAGE_FLAGS_KEY: [u8; 8] = STORAGE_FLAGS_LEDGER_ID.to_be_bytes();
/// Bit 0 of the storage flags: the bookie must check its entries' integrity on start.
pub const STORAGE_FLAG_NEEDS_INTEGRITY_CHECK: i64 = 1;
/// A ledgers-database key: the ledger id.
pub const LEDGER_KEY_LEN: usize = 8;
/// A scoped ledgers-database key: scope ‖ ledger id.
pub const SCOPED_LEDGER_KEY_LEN: usize = 16;
/// A location value.
pub const LOCATION_VALUE_LEN: usize = 8;

/// What a RocksDB database of a bookie holds, named by its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexDbRole {
    Locations,
    Ledgers,
    ScopedLocations,
    ScopedLedgers,
    /// `PersistentEntryLogMetadataMap` (garbage collection's cache of entry-log
    /// metadata; only with `gcEntryLogMetadataCacheEnabled`).
    MetadataCache,
}

impl IndexDbRole {
    pub const ALL: [IndexDbRole; 5] = [
        IndexDbRole::Locations,
        IndexDbRole::Ledgers,
        IndexDbRole::ScopedLocations,
        IndexDbRole::ScopedLedgers,
        IndexDbRole::MetadataCache,
    ];

    /// The directory name, which is also how the role is spelled in every API.
    pub fn as_str(self) -> &'static str {
        match self {
            IndexDbRole::Locations => "locations",
            IndexDbRole::Ledgers => "ledgers",
            IndexDbRole::ScopedLocations => "scoped-locations",
            IndexDbRole::ScopedLedgers => "scoped-ledgers",
            IndexDbRole::MetadataCache => "metadata-cache",
        }
    }

    pub fn from_name(name: &str) -> Option<IndexDbRole> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }

    pub fn is_scoped(self) -> bool {
        matches!(self, IndexDbRole::ScopedLocations | IndexDbRole::ScopedLedgers)
    }

    pub fn is_location_index(self) -> bool {
        matches!(self, IndexDbRole::Locations | IndexDbRole::ScopedLocations)
    }

    pub fn is_ledger_index(self) -> bool {
        matches!(self, IndexDbRole::Ledgers | IndexDbRole::ScopedLedgers)
    }
}

fn key_error(what: &str, key: &[u8], detail: impl std::fmt::Display) -> Error {
    let hex: String = key.iter().take(32).map(|b| format!("{b:02x}")).collect();
    let more = if key.len() > 32 { "..." } else { "" };
    Error::corrupt(0, format!("{what} {hex}{more}: {detail}"))
}

/// An entry-location key: 16 bytes in `locations`, 24 in `scoped-locations`.
pub fn location_key(id: LedgerId, entry_id: i64) -> Vec<u8> {
    id.location_key(entry_id).as_bytes().to_vec()
}

/// Reads a key of a `locations` (`scoped = false`) or `scoped-locations` database:
/// (ledger id, entry id). Each database has one key length; the other is an error.
pub fn parse_location_key(key: &[u8], scoped: bool) -> Result<(LedgerId, i64)> {
    let want = if scoped { SCOPED_LOCATION_KEY_LEN } else { LOCATION_KEY_LEN };
    if key.len() != want {
        let db = if scoped { "scoped-locations" } else { "locations" };
        return Err(key_error("location key", key, format_args!("a {db} key is {want} bytes, this one {}", key.len())));
    }
    LedgerId::parse_location_key(key).map_err(|e| key_error("location key", key, e.detail))
}

/// Reads a location value: `log_id << 32 | offset of the entry bytes`.
pub fn parse_location_value(value: &[u8]) -> Result<i64> {
    if value.len() != LOCATION_VALUE_LEN {
        return Err(key_error("location value", value, format_args!("a location is 8 bytes, this one {}", value.len())));
    }
    Ok(i64_unchecked(value, 0))
}

/// A ledgers-database key: 8 bytes in `ledgers`, scope ‖ ledger in `scoped-ledgers`.
pub fn ledger_key(id: LedgerId, scoped: bool) -> Vec<u8> {
    let mut key = Vec::with_capacity(SCOPED_LEDGER_KEY_LEN);
    if scoped {
        key.extend_from_slice(&id.scope_id.to_be_bytes());
    }
    key.extend_from_slice(&id.ledger_id.to_be_bytes());
    key
}

pub fn parse_ledger_key(key: &[u8], scoped: bool) -> Result<LedgerId> {
    match (scoped, key.len()) {
        (false, LEDGER_KEY_LEN) => Ok(LedgerId::unscoped(i64_unchecked(key, 0))),
        (true, SCOPED_LEDGER_KEY_LEN) => {
            let id = LedgerId::new(i64_unchecked(key, 0), i64_unchecked(key, 8));
            if id.scope_id == 0 {
                return Err(key_error("ledger key", key, "scope 0 in a scoped-ledgers key (scope-0 ledgers are in ledgers)"));
            }
            Ok(id)
        }
        (_, n) => {
            let (db, want) = if scoped { ("scoped-ledgers", SCOPED_LEDGER_KEY_LEN) } else { ("ledgers", LEDGER_KEY_LEN) };
            Err(key_error("ledger key", key, format_args!("a {db} key is {want} bytes, this one {n}")))
        }
    }
}

/// The storage flags value (an i64).
pub fn parse_storage_flags(value: &[u8]) -> Result<i64> {
    if value.len() != 8 {
        return Err(key_error("storage flags value", value, format_args!("the storage flags are 8 bytes, these {}", value.len())));
    }
    Ok(i64_unchecked(value, 0))
}

/// The entry's location split into the log and the offset of its size field (what
/// `read_entry_log` reports as `offset`); `None` for a location that cannot point
/// at an entry (0, or an offset inside the first 4 bytes).
pub fn location_parts(location: i64) -> Option<(i64, i64)> {
    let l = Location::from_raw(location)?;
    Some((l.log_id as i64, l.size_field_offset()? as i64))
}

/// `LedgerData` (DbLedgerStorageDataFormats.proto). Every field is optional here so
/// that presence is visible; [`LedgerData::decode_checked`] checks the required ones.
#[derive(Clone, PartialEq, Message)]
pub struct LedgerData {
    /// Required.
    #[prost(bool, optional, tag = "1")]
    pub exists: Option<bool>,
    /// Required.
    #[prost(bool, optional, tag = "2")]
    pub fenced: Option<bool>,
    /// Required. All zeros when the entry arrived before the key was known.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub master_key: Option<Vec<u8>>,
    /// The explicit-LAC blob (ledger id, LAC, digest), as the journal carries it.
    #[prost(bytes = "vec", optional, tag = "4")]
    pub explicit_lac: Option<Vec<u8>>,
    /// Set while the ledger's state is unknown after a bookie lost data.
    #[prost(bool, optional, tag = "5")]
    pub limbo: Option<bool>,
}

impl LedgerData {
    /// Decodes a value as `LedgerData.parseFrom` does, required fields included.
    pub fn decode_checked(value: &[u8]) -> Result<LedgerData> {
        let data = LedgerData::decode(value)
            .map_err(|e| key_error("LedgerData value", value, format_args!("not a LedgerData message ({e})")))?;
        for (present, name) in [(data.exists.is_some(), "exists"), (data.fenced.is_some(), "fenced"), (data.master_key.is_some(), "masterKey")] {
            if !present {
                return Err(key_error("LedgerData value", value, format_args!("the required field {name} is missing")));
            }
        }
        Ok(data)
    }

    /// The value's bytes, as protobuf-java writes them (fields in number order).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode_to_vec()
    }

    /// What a bookie writes for a ledger (`setMasterKey`, then `setFenced` ...).
    pub fn new(master_key: &[u8], fenced: bool) -> LedgerData {
        LedgerData { exists: Some(true), fenced: Some(fenced), master_key: Some(master_key.to_vec()), explicit_lac: None, limbo: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn storage_flags_key_bytes() {
        assert_eq!(STORAGE_FLAGS_KEY, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x11, 0x03]);
        assert_eq!(parse_ledger_key(&STORAGE_FLAGS_KEY, false).unwrap().ledger_id, STORAGE_FLAGS_LEDGER_ID);
        assert_eq!(parse_storage_flags(&1i64.to_be_bytes()).unwrap(), STORAGE_FLAG_NEEDS_INTEGRITY_CHECK);
        assert!(parse_storage_flags(&[1, 2]).is_err());
    }

    #[test]
    fn location_keys_per_database() {
        let k = location_key(LedgerId::unscoped(7), 3);
        assert_eq!(k, [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(parse_location_key(&k, false).unwrap(), (LedgerId::unscoped(7), 3));
        assert!(parse_location_key(&k, true).is_err());
        let scoped = LedgerId::new(0x1234, -5);
        let k = location_key(scoped, 9);
        assert_eq!(k.len(), 24);
        assert_eq!(parse_location_key(&k, true).unwrap(), (scoped, 9));
        let e = parse_location_key(&k, false).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt);
        assert!(e.detail.contains("16 bytes, this one 24"), "{}", e.detail);
        // A 24-byte key with scope 0 belongs in the other database.
        assert!(parse_location_key(&[0u8; 24], true).is_err());
        assert_eq!(parse_location_value(&(7i64 << 32 | 1028).to_be_bytes()).unwrap(), 7 << 32 | 1028);
        assert!(parse_location_value(&[0; 7]).is_err());
        assert_eq!(location_parts(7 << 32 | 1028), Some((7, 1024)));
        assert_eq!(location_parts(0), None);
        assert_eq!(location_parts(7 << 32 | 2), None);
    }

    #[test]
    fn ledger_keys_and_data() {
        assert_eq!(parse_ledger_key(&ledger_key(LedgerId::unscoped(5), false), false).unwrap(), LedgerId::unscoped(5));
        let scoped = LedgerId::new(-3, -7);
        assert_eq!(parse_ledger_key(&ledger_key(scoped, true), true).unwrap(), scoped);
        assert!(parse_ledger_key(&ledger_key(LedgerId::unscoped(5), true), true).is_err());
        assert!(parse_ledger_key(&[0; 9], false).is_err());

        let mut data = LedgerData::new(&[7; 20], true);
        data.limbo = Some(true);
        let bytes = data.encode_to_vec();
        // exists=1, fenced=1, masterKey, limbo: what protobuf-java writes for it.
        assert_eq!(&bytes[..6], &[0x08, 1, 0x10, 1, 0x1a, 20]);
        assert_eq!(LedgerData::decode_checked(&bytes).unwrap(), data);
        let e = LedgerData::decode_checked(&[0x08, 1]).unwrap_err();
        assert!(e.detail.contains("fenced"), "{}", e.detail);
        assert!(LedgerData::decode_checked(&[0xff, 0xff]).is_err());
    }
}
