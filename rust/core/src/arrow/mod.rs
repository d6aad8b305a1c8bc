//! Arrow output: decoded BookKeeper data as record batches, one file per concept.

pub mod column;
pub mod decode;
pub mod entries;
pub mod payload;

// Bookie files as streams of batches.
pub mod entry_log;
pub mod file_scan;
pub mod index_file;
pub mod journal;
pub mod mapped_file;

pub use column::PrimitiveColumn;
pub use decode::{append_entries, append_entry_array, entry_bytes};
pub use entries::{EntryBatchBuilder, EntryBatchOptions, OnError};
pub use payload::PayloadMode;
pub use entry_log::EntryLogBatchReader;
pub use file_scan::{ArrowBatchReader, BatchStream, FileScanOptions};
pub use index_file::IndexBatchReader;
pub use journal::JournalBatchReader;
pub use mapped_file::MappedFile;
