//! Bookies as a whole: what each file of a bookie is, where its journal, ledger and
//! index directories are, its cookie, and DbLedgerStorage's RocksDB indexes.
//!
//! This is the one place that knows how BookKeeper names and places files; the
//! readers of the files themselves are in [`crate::files`].

pub mod cookie;
pub mod index_batch;
pub mod index_db;
pub mod layout;

pub use cookie::Cookie;
pub use index_db::{IndexDbRole, LedgerData};
pub use layout::{classify, discover, BookieFile, BookieLayout, DirPair, FileKind, IndexDatabase, StorageKind};
