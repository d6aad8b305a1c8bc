//! Ledger metadata dumped from a metadata store to files: one file per znode, laid
//! out as the znode paths (any [`ZnodeLayout`](super::znode::ZnodeLayout)) or named
//! by the decimal ledger id (`123`, `123.bin`).
//!
//! Each file becomes a [`ZnodeRecord`]; a file that fails to read or decode becomes
//! a record carrying the error, so one bad znode never hides the others. Files whose
//! path names no ledger (`LAYOUT`, `INSTANCEID`, cookies, ...) are not ledger
//! metadata and are skipped.

use std::fs;
use std::path::{Path, PathBuf};

use super::znode::parse_ledger_znode_path;
use super::{decode_ledger_metadata, LedgerMetadata};
use crate::error::{Error, Result};

/// ZooKeeper refuses znodes above about 1 MiB (`jute.maxbuffer`); a file far larger
/// than that is not a znode, and is reported rather than read.
pub const MAX_ZNODE_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// One znode: where it came from and what it decoded to.
#[derive(Debug, Clone)]
pub struct ZnodeRecord {
    /// The znode path or file path, when known.
    pub path: Option<String>,
    /// From the path (or given by the caller); `None` when the path names no ledger.
    pub ledger_id: Option<i64>,
    pub metadata: Result<LedgerMetadata>,
}

/// The ledger id a path stands for: a znode path in any layout, or a final
/// component whose name before the first `.` is a decimal id.
pub fn ledger_id_from_path(path: &str) -> Result<i64> {
    match parse_ledger_znode_path(path) {
        Ok((id, _)) => Ok(id),
        Err(e) => {
            let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
            let stem = name.split('.').next().unwrap_or(name);
            if !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()) {
                stem.parse::<i64>()
                    .map_err(|_| Error::invalid_argument(format!("{path:?} names a ledger id beyond 2^63-1")))
            } else {
                Err(e)
            }
        }
    }
}

/// Decodes one znode whose path (or ledger id) the caller supplies.
pub fn decode_znode(path: Option<&str>, ledger_id: Option<i64>, data: &[u8]) -> ZnodeRecord {
    let id = match (ledger_id, path) {
        (Some(id), _) => Ok(id),
        (None, Some(p)) => ledger_id_from_path(p),
        (None, None) => Err(Error::invalid_argument("neither a znode path nor a ledger id was given")),
    };
    let (ledger_id, metadata) = match id {
        Ok(id) => (Some(id), decode_ledger_metadata(data)),
        Err(e) => (None, Err(e)),
    };
    ZnodeRecord { path: path.map(str::to_string), ledger_id, metadata }
}

/// A file of a dump directory that was not read as ledger metadata, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// Why a file whose path names no ledger is skipped.
pub const NOT_A_LEDGER_PATH: &str =
    "its name is neither a decimal ledger id (123, 123.bin) nor a ledger znode path (flat L%010d, hierarchical 2-4-4 or 3-4-4-4-4, etcd UUID)";

/// Every ledger metadata file under `root`, in path order. Symbolic links to
/// directories are not followed (a link cycle cannot hang the walk). Only failing
/// to list `root` itself is an error.
pub fn read_znode_dir(root: &Path) -> Result<Vec<ZnodeRecord>> {
    scan_znode_dir(root).map(|(records, _)| records)
}

/// [`read_znode_dir`], and the files it skipped, with the reason for each.
pub fn scan_znode_dir(root: &Path) -> Result<(Vec<ZnodeRecord>, Vec<SkippedFile>)> {
    let mut files = Vec::new();
    collect_files(root, &mut files).map_err(|e| Error::io(root, 0, &e))?;
    files.sort();
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for file in files {
        let display = file.to_string_lossy().into_owned();
        let ledger_id = match ledger_id_from_path(&display) {
            Ok(id) => id,
            Err(e) => {
                let named_by_digits = e.detail.contains("beyond 2^63-1");
                let reason = if named_by_digits { e.detail } else { NOT_A_LEDGER_PATH.to_string() };
                skipped.push(SkippedFile { path: display, reason });
                continue;
            }
        };
        let metadata = read_file(&file).and_then(|data| decode_ledger_metadata(&data).map_err(|e| e.in_file(&file)));
        out.push(ZnodeRecord { path: Some(display), ledger_id: Some(ledger_id), metadata });
    }
    Ok((out, skipped))
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            // A subdirectory that cannot be listed is skipped rather than failing
            // the whole dump; its files simply do not appear.
            let _ = collect_files(&path, out);
        } else if !kind.is_symlink() || path.metadata().is_ok_and(|m| !m.is_dir()) {
            // Regular files, and FIFOs, devices and sockets too: those are listed so
            // that reading refuses them by name (a dangling link is not a znode).
            out.push(path);
        }
    }
    Ok(())
}

/// A znode's bytes: a regular file of at most [`MAX_ZNODE_FILE_SIZE`] bytes.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    crate::files::source::read_small_file(path, MAX_ZNODE_FILE_SIZE, "znode file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_ids_from_paths() {
        assert_eq!(ledger_id_from_path("/ledgers/00/0000/L0042").unwrap(), 42);
        assert_eq!(ledger_id_from_path("dump/123").unwrap(), 123);
        assert_eq!(ledger_id_from_path("dump\\123.bin").unwrap(), 123);
        assert!(ledger_id_from_path("/ledgers/LAYOUT").is_err());
        assert!(ledger_id_from_path("dump/.bin").is_err());
        assert!(ledger_id_from_path("dump/99999999999999999999").is_err());
    }
}

#[cfg(test)]
mod dir_tests {
    use super::*;

    /// A scratch directory removed on drop.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const V1: &[u8] = b"BookieMetadataFormatVersion\t1\n1\n1\n0\n0\ta:1\n";

    #[test]
    fn reads_a_dump_in_path_order_and_keeps_bad_files_as_errors() {
        let root = std::env::temp_dir().join(format!("bkcodec-znode-dump-{}", std::process::id()));
        let _cleanup = Scratch(root.clone());
        let put = |rel: &str, data: &[u8]| {
            let p = root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, data).unwrap();
        };
        put("ledgers/00/0000/L0002", V1);
        put("ledgers/L0000000001", V1);
        put("ledgers/LAYOUT", b"1\nHierarchicalLedgerManagerFactory:2");
        put("ledgers/idgen/ID-0000000003", b"");
        put("ledgers/000/0000/0000/0000/L0004", b"not metadata");
        put("by-id/5.bin", V1);
        let records = read_znode_dir(&root).unwrap();
        let seen: Vec<(Option<i64>, bool)> = records.iter().map(|r| (r.ledger_id, r.metadata.is_ok())).collect();
        assert_eq!(seen, [(Some(5), true), (Some(2), true), (Some(4), false), (Some(1), true)]);
        let bad = records[2].metadata.as_ref().unwrap_err();
        assert!(bad.path.as_ref().unwrap().ends_with("L0004"));
        assert!(read_znode_dir(&root.join("missing")).is_err());
        let (_, skipped) = scan_znode_dir(&root).unwrap();
        let names: Vec<&str> = skipped.iter().map(|f| f.path.rsplit('/').next().unwrap()).collect();
        assert_eq!(names, ["LAYOUT", "ID-0000000003"]);
        assert!(skipped.iter().all(|f| f.reason == NOT_A_LEDGER_PATH));
    }
}
