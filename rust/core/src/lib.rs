//! bkcodec-core: readers and writers for Apache BookKeeper's byte formats.
//!
//! This crate knows BookKeeper and nothing about Python. Every parser borrows the
//! caller's bytes, checks every bound, and reports damage as an [`Error`] that names
//! its kind and byte offset.

pub mod arrow;
pub mod bytes;
pub mod digest;
pub mod digest_check;
pub mod digest_policy;
pub mod entry;
pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(test)]
mod test_rng;
pub mod ledger_id;
pub mod path_text;
pub mod plan;

// Ledger metadata, bookie ids and the wire protocol.
pub mod bookie_id;
pub(crate) mod java_number;
pub mod metadata;
pub mod wire;
pub mod files;
pub mod bookie;
// Many bookies at once: placement, inventories, the audit.
pub mod cluster;
pub mod ledger_digest_settings;
// Apache Pulsar's messages and topic metadata.
pub mod pulsar;

pub use digest::{DigestType, Digester};
pub use digest_check::{check_entry, check_entry_with, CheckedEntry, DigestChecker, Unchecked, DigestStatus};
pub use digest_policy::DigestPolicy;
pub use entry::{Entry, EntryFormat, EntryHeader};
pub use error::{Error, ErrorKind, Result};
pub use ledger_id::LedgerId;
pub use bookie_id::BookieId;
pub use metadata::{LedgerDigestInfo, LedgerMetadata};
pub use ledger_digest_settings::LedgerDigestSettings;
