//! Apache Pulsar data in BookKeeper entries (docs/pulsar.md): the messages of
//! a topic's entries, and which topic owns which ledgers.
//!
//! - [`frame`]: one stored entry's framing (broker metadata, checksum, metadata).
//! - [`codec`]: the four payload codecs, with sizes from the data checked first.
//! - [`decoder`]: entries to message rows ([`MessageDecoder`]), batches expanded,
//!   chunks reassembled, duplicates skipped; [`message_batch`] holds the columns.

pub mod chunks;
pub mod codec;
pub mod columns;
pub mod decoder;
pub mod entry_set;
pub mod frame;
pub mod managed_ledger;
pub mod message_batch;
pub mod proto;
pub mod single_message;
pub mod stream;
pub mod topics;
pub mod value;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;

pub use codec::Compression;
pub use decoder::{DecoderCounts, DecoderOptions, LedgerOwner, MessageDecoder};
pub use stream::MessageStream;
pub use message_batch::{EntryIds, MessageBatchOptions};
