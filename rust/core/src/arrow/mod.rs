//! Arrow output: decoded BookKeeper data as record batches, one file per concept.

pub mod column;
pub mod decode;
pub mod entries;
pub mod payload;

pub use column::PrimitiveColumn;
pub use decode::{append_entries, append_entry_array, entry_bytes};
pub use entries::{EntryBatchBuilder, EntryBatchOptions, OnError};
pub use payload::PayloadMode;
