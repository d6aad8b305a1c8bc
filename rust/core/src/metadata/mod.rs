//! Ledger metadata as BookKeeper stores it in ZooKeeper or etcd (docs/formats.md#ledger-metadata):
//! a text header line naming the format version, then format 1 (tab/newline text),
//! 2 (protobuf text format) or 3 (varint-delimited binary protobuf).
//!
//! [`decode_ledger_metadata`] applies the rules of BookKeeper's `LedgerMetadataSerDe`
//! and `LedgerMetadataBuilder`, so data Java refuses is refused here too, with the
//! byte offset. [`encode_ledger_metadata`] writes byte for byte what Java writes.
//! The ledger id is not in the data: it is in the znode path ([`znode`]).

mod proto;
pub mod table;
pub(crate) mod text_format;
mod v1;
pub mod znode;
pub mod znode_dump;

use crate::bookie_id::BookieId;
use crate::digest::{DigestType, Digester};
use crate::error::{Error, ErrorKind, Result};
use crate::java_number::parse_int;

pub use proto::{CustomMetadataEntry, LedgerMetadataFormat, Segment};

/// The three metadata formats: 1 (4.0-4.1), 2 (4.2-4.8), 3 (4.9 and later).
pub const FORMAT_VERSIONS: [u8; 3] = [1, 2, 3];
/// The format BookKeeper writes today.
pub const CURRENT_FORMAT_VERSION: u8 = 3;

const HEADER_KEY: &[u8] = b"BookieMetadataFormatVersion\t";
/// `LedgerMetadataSerDe.MAX_VERSION_DIGITS`. Its loop stores at most this many bytes
/// and gives up before reading the newline after the tenth, so only 9 version bytes
/// can actually be followed by a newline.
const MAX_VERSION_DIGITS: usize = 10;

/// `LedgerMetadata.State`, with the proto numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedgerState {
    Open = 1,
    InRecovery = 2,
    Closed = 3,
}

impl LedgerState {
    pub const fn name(self) -> &'static str {
        match self {
            LedgerState::Open => "OPEN",
            LedgerState::InRecovery => "IN_RECOVERY",
            LedgerState::Closed => "CLOSED",
        }
    }

    pub fn from_name(name: &str) -> Option<LedgerState> {
        match name {
            "OPEN" => Some(LedgerState::Open),
            "IN_RECOVERY" => Some(LedgerState::InRecovery),
            "CLOSED" => Some(LedgerState::Closed),
            _ => None,
        }
    }

    pub const fn from_proto_value(v: i64) -> Option<LedgerState> {
        match v {
            1 => Some(LedgerState::Open),
            2 => Some(LedgerState::InRecovery),
            3 => Some(LedgerState::Closed),
            _ => None,
        }
    }
}

/// The bookies that store entries from `first_entry_id` until the next ensemble's first entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ensemble {
    pub first_entry_id: i64,
    pub bookies: Vec<BookieId>,
}

/// Decoded ledger metadata, with the meaning BookKeeper gives each field (docs/formats.md#ledger-metadata).
///
/// The model is canonical: fields BookKeeper ignores are normalised the way it
/// normalises them, so `decode(encode(m)) == m` for every valid `m`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerMetadata {
    /// 1, 2 or 3: the format the data was read from (or is meant for).
    pub format_version: u8,
    pub ensemble_size: i32,
    /// Stored as `quorumSize`.
    pub write_quorum_size: i32,
    /// Defaults to the write quorum when absent (always, in format 1).
    pub ack_quorum_size: i32,
    pub state: LedgerState,
    /// -1 unless the ledger is closed.
    pub last_entry_id: i64,
    /// 0 unless the ledger is closed.
    pub length: i64,
    /// In strictly ascending `first_entry_id` order, each with `ensemble_size` bookies.
    pub ensembles: Vec<Ensemble>,
    /// Present exactly when `password` is: BookKeeper ignores a stored digest type
    /// without a password (and format 1 stores neither).
    pub digest_type: Option<DigestType>,
    /// The ledger password in clear text.
    pub password: Option<Vec<u8>>,
    /// Creation time in ms, when the metadata stores one.
    pub ctime: Option<i64>,
    /// In stored order, keys unique (a repeated key keeps its first position and last value, like Java's map).
    pub custom_metadata: Vec<(String, Vec<u8>)>,
    /// Creator token (format 3 only); 0 when absent.
    pub ctoken: i64,
}

/// What an entry reader needs from a ledger's metadata to verify its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerDigestInfo {
    /// `None` for format-1 metadata, which does not record it.
    pub digest_type: Option<DigestType>,
    /// Empty when the metadata has no password.
    pub password: Vec<u8>,
}

impl LedgerDigestInfo {
    /// A digester for this ledger's entries, when the digest type is known.
    pub fn digester(&self) -> Option<Digester> {
        self.digest_type.map(|dt| Digester::new(dt, &self.password))
    }
}

impl LedgerMetadata {
    /// The rules `LedgerMetadataBuilder` and `LedgerMetadataImpl` enforce, plus the
    /// invariants of this model. Returns what is wrong, for the caller to wrap.
    pub fn check(&self) -> std::result::Result<(), String> {
        if !FORMAT_VERSIONS.contains(&self.format_version) {
            return Err(format!("format version {} is not 1, 2 or 3", self.format_version));
        }
        if self.ensemble_size < self.write_quorum_size {
            return Err(format!(
                "write quorum {} is larger than the ensemble size {}",
                self.write_quorum_size, self.ensemble_size
            ));
        }
        if self.write_quorum_size < self.ack_quorum_size {
            return Err(format!(
                "ack quorum {} is larger than the write quorum {}",
                self.ack_quorum_size, self.write_quorum_size
            ));
        }
        if self.ensembles.is_empty() {
            return Err("there must be at least one ensemble".into());
        }
        for (i, e) in self.ensembles.iter().enumerate() {
            if e.bookies.len() != self.ensemble_size as usize || self.ensemble_size < 0 {
                return Err(format!(
                    "ensemble at entry {} has {} bookies, the ensemble size is {}",
                    e.first_entry_id,
                    e.bookies.len(),
                    self.ensemble_size
                ));
            }
            if i > 0 && e.first_entry_id <= self.ensembles[i - 1].first_entry_id {
                return Err(format!(
                    "ensemble first entry ids must increase: {} follows {}",
                    e.first_entry_id,
                    self.ensembles[i - 1].first_entry_id
                ));
            }
        }
        if self.state != LedgerState::Closed && (self.last_entry_id != -1 || self.length != 0) {
            return Err(format!(
                "a {} ledger has last entry id -1 and length 0 (got {} and {})",
                self.state.name(),
                self.last_entry_id,
                self.length
            ));
        }
        if self.digest_type.is_some() != self.password.is_some() {
            return Err("digest type and password go together: BookKeeper ignores a digest type stored without a password".into());
        }
        for (i, (k, _)) in self.custom_metadata.iter().enumerate() {
            if self.custom_metadata[..i].iter().any(|(prev, _)| prev == k) {
                return Err(format!("custom metadata key {k:?} appears twice"));
            }
        }
        Ok(())
    }

    /// [`check`](Self::check) as an invalid-argument error, for values built by callers.
    pub fn validate(&self) -> Result<()> {
        self.check().map_err(Error::invalid_argument)
    }

    pub fn is_closed(&self) -> bool {
        self.state == LedgerState::Closed
    }

    /// The ensemble that stores `entry_id` (`getEnsembleAt`): the last one whose first
    /// entry is at or below it. `None` below the first ensemble.
    pub fn ensemble_at(&self, entry_id: i64) -> Option<&Ensemble> {
        let idx = self.ensembles.partition_point(|e| e.first_entry_id <= entry_id);
        idx.checked_sub(1).map(|i| &self.ensembles[i])
    }

    pub fn digest_info(&self) -> LedgerDigestInfo {
        LedgerDigestInfo {
            digest_type: self.digest_type,
            password: self.password.clone().unwrap_or_default(),
        }
    }
}

impl From<&LedgerMetadata> for LedgerDigestInfo {
    fn from(md: &LedgerMetadata) -> Self {
        md.digest_info()
    }
}

/// Reads the header line: the format version and where the body starts.
pub fn parse_header(data: &[u8]) -> Result<(i32, usize)> {
    for (i, &expected) in HEADER_KEY.iter().enumerate() {
        match data.get(i) {
            None => {
                return Err(Error::truncated(i as u64, (HEADER_KEY.len() - i) as u64, 0).with_detail(
                    "ledger metadata header cut short (expected \"BookieMetadataFormatVersion\\t\")",
                ))
            }
            Some(&b) if b != expected => {
                return Err(Error::corrupt(
                    i as u64,
                    "ledger metadata header corrupt (expected \"BookieMetadataFormatVersion\\t\")",
                ))
            }
            Some(_) => {}
        }
    }
    let start = HEADER_KEY.len();
    let mut i = 0;
    while i < MAX_VERSION_DIGITS {
        match data.get(start + i) {
            Some(b'\n') => {
                let digits = &data[start..start + i];
                let version = std::str::from_utf8(digits).ok().and_then(parse_int).ok_or_else(|| {
                    Error::corrupt(start as u64, format!(
                        "cannot parse a version number from {:?}",
                        String::from_utf8_lossy(digits)
                    ))
                })?;
                return Ok((version, start + i + 1));
            }
            Some(_) => i += 1,
            None => break,
        }
    }
    Err(Error::corrupt(
        start as u64,
        "no newline within 10 bytes after the metadata header key: version number missing or too long",
    ))
}

fn write_header(out: &mut Vec<u8>, version: u8) {
    out.extend_from_slice(HEADER_KEY);
    out.extend_from_slice(version.to_string().as_bytes());
    out.push(b'\n');
}

/// Decodes the data of a ledger metadata znode.
pub fn decode_ledger_metadata(data: &[u8]) -> Result<LedgerMetadata> {
    let (version, body) = parse_header(data)?;
    match version {
        1 => v1::decode(data, body),
        2 => {
            let fmt = text_format::parse(data, body)?;
            fmt.to_metadata(2, body as u64)
        }
        3 => {
            let (fmt, at) = proto::decode_delimited(data, body)?;
            fmt.to_metadata(3, at as u64)
        }
        v => Err(Error::new(
            ErrorKind::UnsupportedVersion,
            HEADER_KEY.len() as u64,
            format!("metadata format version {v}; expected between 1 and 3"),
        )),
    }
}

/// Encodes metadata as `format_version` (1, 2 or 3), as `LedgerMetadataSerDe.serialize`
/// does. Format 1 drops what it cannot hold (digest type, password, ack quorum, ctime,
/// custom metadata, ctoken), as Java does; formats 2 and 3 need a digest type.
pub fn encode_ledger_metadata(md: &LedgerMetadata, format_version: u8) -> Result<Vec<u8>> {
    md.validate()?;
    let mut out = Vec::with_capacity(256);
    match format_version {
        1 => {
            write_header(&mut out, 1);
            v1::encode(md, &mut out)?;
        }
        2 => {
            write_header(&mut out, 2);
            text_format::print(&LedgerMetadataFormat::from_metadata(md, false)?, &mut out);
        }
        3 => {
            write_header(&mut out, 3);
            proto::encode_delimited(&LedgerMetadataFormat::from_metadata(md, true)?, &mut out);
        }
        v => return Err(Error::invalid_argument(format!("metadata format version {v}; expected 1, 2 or 3"))),
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
