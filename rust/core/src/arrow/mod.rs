//! Arrow output: decoded BookKeeper data as record batches, one file per concept.

pub mod decode;
pub mod entries;
pub mod payload;

pub use decode::{append_entries, append_entry_array};
pub use entries::{EntryBatchBuilder, EntryBatchOptions, OnError};
pub use payload::PayloadMode;
