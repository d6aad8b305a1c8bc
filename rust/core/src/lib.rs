//! bkcodec-core: readers and writers for Apache BookKeeper's byte formats.
//!
//! This crate knows BookKeeper and nothing about Python. Every parser borrows the
//! caller's bytes, checks every bound, and reports damage as an [`Error`] that names
//! its kind and byte offset.

pub mod bytes;
pub mod digest;
pub mod entry;
pub mod error;
pub mod files;

pub use digest::{DigestType, Digester};
pub use entry::{Entry, EntryFormat, EntryHeader};
pub use error::{Error, ErrorKind, Result};
