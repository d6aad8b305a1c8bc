//! The cluster: every copy of every entry across many bookies, held against where
//! BookKeeper placed it (../shared/spec/CLUSTER.md).
//!
//! - [`placement`]: which bookies store an entry (the round-robin schedule).
//! - [`inventory`]: one bookie's copies, one small row each, streamed from its files.
//! - [`audit`]: the inventories of many bookies against the ledgers' metadata, an
//!   entry-by-entry status, as runs of findings and a summary per ledger.

pub mod audit;
pub mod inventory;
pub mod placement;

use std::collections::HashMap;
use std::path::Path;

pub use audit::{findings_schema, ledgers_schema, Audit, AuditReport, Status};
pub use inventory::{
    copies_of_batch, inventory_schema, ledger_flags_from_batches, CopySource, InventoryContext, InventoryFile, InventoryReader,
    LedgerFlags, LocationIndex, CopyVerdict, BOOKIE_ID_METADATA_KEY,
};
pub use placement::{ensemble_index, stores, write_set, Quorums};

use crate::error::{Error, Result};
use crate::metadata::znode::scoped_ledger_from_path;
use crate::metadata::znode_dump::{scan_znode_dir, MAX_ZNODE_FILE_SIZE};
use crate::metadata::{decode_ledger_metadata, LedgerMetadata};

/// Ledger metadata by `(scope, ledger id)`.
pub type ClusterMetadata = HashMap<(i64, i64), LedgerMetadata>;

/// A metadata dump's ledgers by `(scope, ledger id)`: the znodes
/// [`scan_znode_dir`] reads (scope 0), and files named by a UUID whose high half is
/// a BP-35 scope. Files that do not decode are returned beside, with why: an audit
/// must not take a ledger whose metadata is unreadable for one without metadata.
pub fn load_metadata(root: &Path) -> Result<(ClusterMetadata, Vec<Error>)> {
    let (records, skipped) = scan_znode_dir(root)?;
    let mut ledgers = HashMap::new();
    let mut problems = Vec::new();
    for record in records {
        match (record.ledger_id, record.metadata) {
            (Some(id), Ok(md)) => {
                ledgers.insert((0, id), md);
            }
            (_, Err(e)) => problems.push(e),
            (None, Ok(_)) => {}
        }
    }
    for file in skipped {
        let Some(key) = scoped_ledger_from_path(&file.path) else { continue };
        let path = Path::new(&file.path);
        let data = std::fs::metadata(path)
            .and_then(|m| {
                if m.len() > MAX_ZNODE_FILE_SIZE {
                    Err(std::io::Error::other(format!("{} bytes is far larger than any znode", m.len())))
                } else {
                    std::fs::read(path)
                }
            })
            .map_err(|e| Error::io(path, 0, &e));
        match data.and_then(|d| decode_ledger_metadata(&d).map_err(|e| e.in_file(path))) {
            Ok(md) => {
                ledgers.insert(key, md);
            }
            Err(e) => problems.push(e),
        }
    }
    Ok((ledgers, problems))
}
