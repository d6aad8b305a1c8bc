//! What a bookie's files are, from their names and places, and the layout of a
//! whole bookie directory tree (docs/formats.md#bookie-directories; each file's name and
//! place in its own section there).
//!
//! The rules:
//! - A file inside a RocksDB directory (one holding `CURRENT`, `IDENTITY` or a
//!   `MANIFEST-*`) belongs to that database, whatever its name: RocksDB's
//!   write-ahead log `000004.log` is not an entry log.
//! - Entry logs, journals and index files are `<hex>.log`, `<hex>.txn` and
//!   `<hex>.idx`, so log4j's `bookkeeper-server.log` is none of them. One whose
//!   first bytes are text is not taken for one either (a log file with a hex
//!   name); a binary one with a wrong magic is, and its reader reports the damage.
//! - `lastMark[.<n>]`, `lastId`, `BOOKIE_STATUS` and the cookie (`VERSION`) by name,
//!   the cookie only inside a `current/` directory.
//! - A bookie directory (journal, ledger or index directory) is the parent of the
//!   `current/` its files are in.
//! - Links to directories are followed inside the tree walked (each real directory
//!   once); one leading out of it only to a bookie directory (one holding `current/`,
//!   or a `current/`: a ledger directory on another disk), never to a directory
//!   holding the tree, and the others are noted, not followed (a link to `/` or
//!   `/proc/self` would walk the whole filesystem). Links to files are followed; one
//!   leading out of the trees walked is noted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::cookie::{Cookie, COOKIE_FILE_NAME};
use super::index_db::IndexDbRole;
use crate::error::{Error, Result};
use crate::files::entry_log::log_id_from_path;
use crate::files::source::{read_vec_at, FileSource};
use crate::files::index_file::ledger_id_from_index_path;
use crate::files::journal::journal_id_from_path;
use crate::path_text::escape_path;

pub const BOOKIE_STATUS_FILE_NAME: &str = "BOOKIE_STATUS";
pub const LAST_ID_FILE_NAME: &str = "lastId";
const CURRENT_DIR: &str = "current";
/// How many bytes are read to tell text from a binary file.
const SNIFF_LEN: usize = 64;

const ENTRY_LOG_MAGIC: &[u8; 4] = b"BKLO";
const JOURNAL_MAGIC: &[u8; 4] = b"BKLG";
const INDEX_MAGIC: &[u8; 4] = b"BKLE";

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `log_id` from the `<hex>.log` name (none for a file found by its magic).
    EntryLog { log_id: Option<i64> },
    Journal { journal_id: Option<i64> },
    /// An InterleavedLedgerStorage index file; the scope from its place
    /// (docs/formats.md#index-files), 0 when the place says nothing.
    Index { scope_id: i64, ledger_id: Option<i64> },
    LastMark,
    LastId,
    Cookie,
    BookieStatus,
    /// A RocksDB database directory; the role from its name.
    RocksDb { role: Option<IndexDbRole> },
    /// A file inside a RocksDB database directory.
    RocksDbFile { role: Option<IndexDbRole> },
    /// Any other directory.
    Directory,
    Other,
}

impl FileKind {
    /// The kind's name in every API: `entry_log`, `journal`, `index`, `last_mark`,
    /// `last_id`, `cookie`, `bookie_status`, `rocksdb`, `rocksdb_file`, `directory`,
    /// `other`.
    pub fn name(&self) -> &'static str {
        match self {
            FileKind::EntryLog { .. } => "entry_log",
            FileKind::Journal { .. } => "journal",
            FileKind::Index { .. } => "index",
            FileKind::LastMark => "last_mark",
            FileKind::LastId => "last_id",
            FileKind::Cookie => "cookie",
            FileKind::BookieStatus => "bookie_status",
            FileKind::RocksDb { .. } => "rocksdb",
            FileKind::RocksDbFile { .. } => "rocksdb_file",
            FileKind::Directory => "directory",
            FileKind::Other => "other",
        }
    }

    pub const NAMES: [&'static str; 11] = [
        "entry_log", "journal", "index", "last_mark", "last_id", "cookie", "bookie_status", "rocksdb", "rocksdb_file",
        "directory", "other",
    ];

    /// The magic a file of this kind starts with.
    fn magic(&self) -> Option<&'static [u8; 4]> {
        match self {
            FileKind::EntryLog { .. } => Some(ENTRY_LOG_MAGIC),
            FileKind::Journal { .. } => Some(JOURNAL_MAGIC),
            FileKind::Index { .. } => Some(INDEX_MAGIC),
            _ => None,
        }
    }

    /// The database role of a RocksDB directory or file.
    pub fn role(&self) -> Option<IndexDbRole> {
        match self {
            FileKind::RocksDb { role } | FileKind::RocksDbFile { role } => *role,
            _ => None,
        }
    }
}

/// A path and what it is; `note` says why a file named like a bookie file is not
/// taken for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookieFile {
    pub path: PathBuf,
    pub kind: FileKind,
    pub note: Option<String>,
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name()?.to_str()
}

fn parent_name(path: &Path) -> Option<&str> {
    path.parent().and_then(file_name)
}

/// A directory RocksDB owns: it holds `CURRENT`, `IDENTITY` or a `MANIFEST-*` file.
pub fn is_rocksdb_dir(dir: &Path) -> bool {
    if dir.join("CURRENT").is_file() || dir.join("IDENTITY").is_file() {
        return true;
    }
    fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("MANIFEST-")))
    })
}

fn is_last_mark_name(name: &str) -> bool {
    match name.strip_prefix("lastMark") {
        Some("") => true,
        Some(rest) => rest.strip_prefix('.').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// The normal components of `path` from the file upwards, names only.
fn ancestors_names(path: &Path) -> Vec<&str> {
    path.components()
        .rev()
        .skip(1)
        .map_while(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

/// A path component as Java's `toHexString` of a 32-bit half writes it.
fn hex32_component(s: &str) -> Option<u64> {
    (!s.is_empty() && s.len() <= 8 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

/// An index file's scope from its place: `.../<scope hi>/<scope lo>/<id hi>/<id lo>/<id>.idx`
/// for scope != 0 (docs/formats.md#index-files), else 0. A scope-0 file's place never matches:
/// two levels up from it is `current`, which is not hex.
fn index_scope(path: &Path, ledger_id: i64) -> i64 {
    let up = ancestors_names(path);
    let id = ledger_id as u64;
    if up.len() >= 4 && up[0] == format!("{:x}", id & 0xffff_ffff) && up[1] == format!("{:x}", id >> 32) {
        if let (Some(hi), Some(lo)) = (hex32_component(up[3]), hex32_component(up[2])) {
            if (hi | lo) != 0 {
                return ((hi << 32) | lo) as i64;
            }
        }
    }
    0
}

/// A file's kind from its name and parent directory alone (no I/O): what a walk
/// and a single-file classification share.
pub fn kind_from_name(path: &Path) -> FileKind {
    let Some(name) = file_name(path) else { return FileKind::Other };
    if let Some(log_id) = log_id_from_path(path) {
        return FileKind::EntryLog { log_id: Some(log_id) };
    }
    if let Some(journal_id) = journal_id_from_path(path) {
        return FileKind::Journal { journal_id: Some(journal_id) };
    }
    if let Some(ledger_id) = ledger_id_from_index_path(path) {
        return FileKind::Index { scope_id: index_scope(path, ledger_id), ledger_id: Some(ledger_id) };
    }
    if is_last_mark_name(name) {
        return FileKind::LastMark;
    }
    if name == LAST_ID_FILE_NAME {
        return FileKind::LastId;
    }
    if parent_name(path) == Some(CURRENT_DIR) {
        if name == COOKIE_FILE_NAME {
            return FileKind::Cookie;
        }
        if name == BOOKIE_STATUS_FILE_NAME {
            return FileKind::BookieStatus;
        }
    }
    FileKind::Other
}

/// The first bytes of a regular file. Through the readers' own source, whose open
/// never blocks (a FIFO put in place after the listing is refused, not waited on).
fn read_head(path: &Path) -> Result<Vec<u8>> {
    read_vec_at(&FileSource::open(path)?, 0, SNIFF_LEN)
}

/// A FIFO, device or socket in a bookie's directories: listed as `Other` with a
/// note, never opened (opening a FIFO to sniff it would wait for a writer).
fn special_file(path: &Path, meta: &fs::Metadata) -> Option<BookieFile> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let what = if t.is_file() || t.is_dir() {
        return None;
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    let note = format!("{what}, not a regular file: not read");
    Some(BookieFile { path: path.to_path_buf(), kind: FileKind::Other, note: Some(note) })
}

fn is_text(head: &[u8]) -> bool {
    !head.is_empty() && head.iter().all(|&b| (0x20..0x7f).contains(&b) || matches!(b, b'\t' | b'\n' | b'\r'))
}

fn kind_words(kind: &FileKind) -> &'static str {
    match kind {
        FileKind::EntryLog { .. } => "an entry log",
        FileKind::Journal { .. } => "a journal",
        FileKind::Index { .. } => "an index file",
        _ => "a bookie file",
    }
}

/// Text where a binary kind's magic should be: not that kind, whatever its name.
fn text_instead_of(kind: &FileKind, head: &[u8]) -> Option<String> {
    let magic = kind.magic()?;
    (!head.starts_with(magic) && is_text(head)).then(|| {
        format!("named like {} but holds text (no {} magic)", kind_words(kind), String::from_utf8_lossy(magic))
    })
}

/// Refines a name-based kind with the file's first bytes: text named like a binary
/// bookie file is `Other` (with a note).
fn check_content(path: &Path, kind: FileKind) -> BookieFile {
    if kind.magic().is_some() {
        if let Ok(head) = read_head(path) {
            if let Some(note) = text_instead_of(&kind, &head) {
                return BookieFile { path: path.to_path_buf(), kind: FileKind::Other, note: Some(note) };
            }
        }
    }
    BookieFile { path: path.to_path_buf(), kind, note: None }
}

/// What one path is: a directory (a RocksDB database or not), a file inside a
/// RocksDB database, a bookie file by name and place, or, for a file whose name
/// says nothing, a bookie file by its magic (`BKLO`, `BKLG`, `BKLE`).
pub fn classify(path: &Path) -> Result<BookieFile> {
    let meta = fs::metadata(path).map_err(|e| Error::io(path, 0, &e))?;
    let found = |kind| Ok(BookieFile { path: path.to_path_buf(), kind, note: None });
    if meta.is_dir() {
        return found(if is_rocksdb_dir(path) {
            FileKind::RocksDb { role: file_name(path).and_then(IndexDbRole::from_name) }
        } else {
            FileKind::Directory
        });
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if is_rocksdb_dir(parent) {
            return found(FileKind::RocksDbFile { role: file_name(parent).and_then(IndexDbRole::from_name) });
        }
    }
    if let Some(special) = special_file(path, &meta) {
        return Ok(special);
    }
    let kind = kind_from_name(path);
    if kind != FileKind::Other {
        return Ok(check_content(path, kind));
    }
    let head = read_head(path)?;
    let by_magic = match head.get(..4) {
        Some(m) if m == ENTRY_LOG_MAGIC => FileKind::EntryLog { log_id: None },
        Some(m) if m == JOURNAL_MAGIC => FileKind::Journal { journal_id: None },
        Some(m) if m == INDEX_MAGIC => FileKind::Index { scope_id: 0, ledger_id: None },
        _ => FileKind::Other,
    };
    found(by_magic)
}

/// Which storage a bookie runs, from what its index directories hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageKind {
    /// `locations/` and `ledgers/` RocksDB databases.
    DbLedgerStorage,
    /// `.idx` files (also SortedLedgerStorage, which keeps the same index).
    InterleavedLedgerStorage,
}

impl StorageKind {
    pub fn name(self) -> &'static str {
        match self {
            StorageKind::DbLedgerStorage => "DbLedgerStorage",
            StorageKind::InterleavedLedgerStorage => "InterleavedLedgerStorage",
        }
    }
}

/// A RocksDB database of a bookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDatabase {
    pub path: PathBuf,
    /// From the directory name; `None` for a database bkcodec does not know.
    pub role: Option<IndexDbRole>,
    /// The bookie directory it is in (the parent of its `current/`).
    pub dir: PathBuf,
}

/// A cookie file and what it says (or why it could not be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieFile {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub cookie: std::result::Result<Cookie, Error>,
}

/// A ledger directory and the index directory that holds its indexes (the same
/// directory unless the bookie has `indexDirs`). Either may be missing from the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirPair {
    pub ledger_dir: Option<PathBuf>,
    pub index_dir: Option<PathBuf>,
}

/// Everything found below a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookieLayout {
    pub root: PathBuf,
    /// Every file, sorted by path (files inside RocksDB databases included, as
    /// `rocksdb_file`); directories are not listed, databases are in `databases`.
    pub files: Vec<BookieFile>,
    pub databases: Vec<IndexDatabase>,
    pub cookies: Vec<CookieFile>,
    pub journal_dirs: Vec<PathBuf>,
    /// In the cookie's order when a cookie names them (BookKeeper places ledger
    /// `L` in directory `signSafeMod(L, n)` of that order), else by path.
    pub ledger_dirs: Vec<PathBuf>,
    pub index_dirs: Vec<PathBuf>,
    /// Ledger directories with their index directories, in `ledger_dirs` order.
    pub dir_pairs: Vec<DirPair>,
    pub storage: Option<StorageKind>,
    /// Findings about the tree itself: unreadable directories, cookie mismatches,
    /// files that are not what their names say, links not followed.
    pub notes: Vec<String>,
    /// Paths the walk could not list or look at (a directory it may not read),
    /// with the reason: what is below them is not in `files`.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// The bookie directory a path belongs to: the parent of the nearest `current`
/// above it (within `levels`), else its own parent.
fn bookie_dir(path: &Path, levels: usize) -> PathBuf {
    let mut p = path.parent();
    for _ in 0..levels {
        let Some(dir) = p else { break };
        if file_name(dir) == Some(CURRENT_DIR) {
            return dir.parent().map_or_else(|| dir.to_path_buf(), Path::to_path_buf);
        }
        p = dir.parent();
    }
    path.parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

/// The bookie directory (journal, ledger or index directory) a file belongs to.
pub fn bookie_dir_of(file: &BookieFile) -> PathBuf {
    let levels = match file.kind {
        FileKind::Index { scope_id: 0, .. } => 3,
        FileKind::Index { .. } => 5,
        FileKind::RocksDb { .. } => 1,
        FileKind::RocksDbFile { .. } => 2,
        _ => 1,
    };
    bookie_dir(&file.path, levels)
}

/// How many trailing path components `found` shares with `named` (a path as the
/// cookie spells it, on the machine that wrote it).
fn suffix_match(found: &Path, named: &str) -> usize {
    let a: Vec<_> = found.components().rev().collect();
    let b: Vec<_> = Path::new(named).components().rev().collect();
    a.iter().zip(&b).take_while(|(x, y)| x == y && matches!(x, Component::Normal(_))).count()
}

/// The position in `named` that `found` is, when one entry matches it best.
fn position_in(found: &Path, named: &[String]) -> Option<usize> {
    let scores: Vec<usize> = named.iter().map(|n| suffix_match(found, n)).collect();
    let best = *scores.iter().max()?;
    (best > 0 && scores.iter().filter(|&&s| s == best).count() == 1).then(|| scores.iter().position(|&s| s == best))?
}

struct Walk {
    files: Vec<BookieFile>,
    databases: Vec<IndexDatabase>,
    notes: Vec<String>,
    unreadable: Vec<(PathBuf, String)>,
    visited: BTreeSet<PathBuf>,
    /// The real paths of the trees walked: the root's, and those of the bookie
    /// directories links lead to.
    trees: Vec<PathBuf>,
}

/// An I/O error's reason as the operating system words it, without Rust's
/// "(os error N)".
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_string(),
        None => text,
    }
}

/// A journal, ledger or index directory (it holds `current/`), or a `current/` itself.
fn is_bookie_dir(dir: &Path) -> bool {
    file_name(dir) == Some(CURRENT_DIR) || dir.join(CURRENT_DIR).is_dir()
}

impl Walk {
    fn new(root: &Path) -> Walk {
        let tree = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Walk {
            files: Vec::new(),
            databases: Vec::new(),
            notes: Vec::new(),
            unreadable: Vec::new(),
            visited: BTreeSet::new(),
            trees: vec![tree],
        }
    }

    fn inside(&self, real: &Path) -> bool {
        self.trees.iter().any(|t| real.starts_with(t))
    }

    /// Whether the walk enters the directory `link` leads to. Inside the trees
    /// walked, yes. Outside, only a bookie directory (a ledger or journal directory
    /// on another disk): a link to `/`, `/proc/self` or any other place would
    /// take the walk through the whole filesystem and other processes' trees.
    fn follows_dir_link(&mut self, link: &Path) -> bool {
        let Ok(target) = fs::canonicalize(link) else { return true };
        if self.inside(&target) {
            return true;
        }
        let why = if self.trees.iter().any(|t| t.starts_with(&target)) {
            "which holds the tree walked"
        } else if is_bookie_dir(&target) {
            self.trees.push(target);
            return true;
        } else {
            "outside the tree and not a bookie directory"
        };
        self.notes.push(format!(
            "{}: a link to the directory {}, {why}: not followed",
            escape_path(link),
            escape_path(&target)
        ));
        false
    }

    /// A note for a file link that leads out of the trees: the file is read (an
    /// operator may keep a file on another disk) and the note says where it is.
    fn note_file_link(&mut self, link: &Path) {
        if let Ok(target) = fs::canonicalize(link) {
            if !self.inside(&target) {
                self.notes.push(format!("{}: a link to {}, outside the tree", escape_path(link), escape_path(&target)));
            }
        }
    }

    fn not_read(&mut self, path: &Path, e: &std::io::Error) {
        self.notes.push(format!("{}: not read ({})", escape_path(path), io_reason(e)));
        // A dangling link is a note; a path the walk may not enter or list hides
        // what is below it.
        if e.kind() != std::io::ErrorKind::NotFound {
            self.unreadable.push((path.to_path_buf(), io_reason(e)));
        }
    }

    fn dir(&mut self, dir: &Path, in_db: Option<Option<IndexDbRole>>) {
        // Each real directory once: links within the tree may form loops.
        if let Ok(real) = fs::canonicalize(dir) {
            if !self.visited.insert(real) {
                return;
            }
        }
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                self.not_read(dir, &e);
                return;
            }
        };
        let mut names: Vec<_> =
            entries.flatten().map(|e| (e.file_name(), e.file_type().is_ok_and(|t| t.is_symlink()))).collect();
        names.sort();
        let in_db = in_db.or_else(|| {
            is_rocksdb_dir(dir).then(|| {
                let role = file_name(dir).and_then(IndexDbRole::from_name);
                self.databases.push(IndexDatabase { path: dir.to_path_buf(), role, dir: bookie_dir(dir, 1) });
                role
            })
        });
        for (name, is_link) in names {
            let path = dir.join(&name);
            match fs::metadata(&path) {
                Ok(m) if m.is_dir() => {
                    if !is_link || self.follows_dir_link(&path) {
                        self.dir(&path, in_db)
                    }
                }
                Ok(m) => {
                    if is_link {
                        self.note_file_link(&path);
                    }
                    let file = match (in_db, special_file(&path, &m)) {
                        (_, Some(special)) => special,
                        (Some(role), None) => BookieFile { path, kind: FileKind::RocksDbFile { role }, note: None },
                        (None, None) => check_content(&path, kind_from_name(&path)),
                    };
                    self.files.push(file);
                }
                // A dangling link, a file gone since the listing, or one in a
                // directory that may be listed but not entered.
                Err(e) => self.not_read(&path, &e),
            }
        }
    }
}

/// The layout of the tree at `root`: a bookie root, a journal, ledger or index
/// directory, a `current/`, a RocksDB database, any tree holding bookie files, or
/// one file.
pub fn discover(root: &Path) -> Result<BookieLayout> {
    let meta = fs::metadata(root).map_err(|e| Error::io(root, 0, &e))?;
    let mut walk = Walk::new(root);
    if meta.is_dir() {
        fs::read_dir(root).map_err(|e| Error::io(root, 0, &e))?;
        // A database named directly keeps its role, though its parent is not walked.
        walk.dir(root, None);
    } else {
        walk.files.push(classify(root)?);
    }
    walk.files.sort_by(|a, b| a.path.cmp(&b.path));
    walk.databases.sort_by(|a, b| a.path.cmp(&b.path));
    let Walk { files, databases, mut notes, unreadable, .. } = walk;
    for f in &files {
        if let Some(n) = &f.note {
            notes.push(format!("{}: {n}", escape_path(&f.path)));
        }
    }

    let mut cookies = Vec::new();
    let mut journal_dirs = BTreeSet::new();
    let mut ledger_dirs = BTreeSet::new();
    let mut weak_ledger_dirs = BTreeSet::new();
    let mut index_dirs = BTreeSet::new();
    let mut idx_files = 0usize;
    for f in &files {
        match f.kind {
            FileKind::Journal { .. } => {
                journal_dirs.insert(bookie_dir_of(f));
            }
            FileKind::EntryLog { .. } | FileKind::LastId => {
                ledger_dirs.insert(bookie_dir_of(f));
            }
            FileKind::LastMark | FileKind::BookieStatus => {
                weak_ledger_dirs.insert(bookie_dir_of(f));
            }
            FileKind::Index { .. } => {
                idx_files += 1;
                index_dirs.insert(bookie_dir_of(f));
            }
            FileKind::Cookie => {
                let cookie = super::cookie::read_cookie_file(&f.path);
                if let Err(e) = &cookie {
                    notes.push(format!("{}: cookie not read ({e})", f.path.display()));
                }
                cookies.push(CookieFile { path: f.path.clone(), dir: bookie_dir_of(f), cookie });
            }
            _ => {}
        }
    }
    let mut has_db_index = false;
    for db in &databases {
        if db.role.is_some_and(|r| r.is_location_index() || r.is_ledger_index()) {
            has_db_index = true;
            index_dirs.insert(db.dir.clone());
        }
    }
    for d in weak_ledger_dirs {
        if !index_dirs.contains(&d) || ledger_dirs.is_empty() {
            ledger_dirs.insert(d);
        }
    }
    let storage = if has_db_index {
        if idx_files > 0 {
            notes.push(format!("also holds {idx_files} index files (.idx) of InterleavedLedgerStorage"));
        }
        Some(StorageKind::DbLedgerStorage)
    } else if idx_files > 0 {
        Some(StorageKind::InterleavedLedgerStorage)
    } else {
        None
    };

    // The cookie names the directories as the bookie's configuration spelled them;
    // every cookie of one bookie is the same, so the first that reads is used.
    let reference = cookies.iter().find_map(|c| c.cookie.as_ref().ok());
    if let Some(cookie) = reference {
        // A directory holding nothing but its cookie still is what the cookie says.
        let named_ledgers = cookie.ledger_dir_list();
        let named_indexes = cookie.index_dir_list();
        for c in &cookies {
            let known = journal_dirs.contains(&c.dir) || ledger_dirs.contains(&c.dir) || index_dirs.contains(&c.dir);
            if known {
                continue;
            }
            if position_in(&c.dir, &named_ledgers).is_some() {
                ledger_dirs.insert(c.dir.clone());
            }
            if named_indexes.as_ref().is_some_and(|n| position_in(&c.dir, n).is_some()) {
                index_dirs.insert(c.dir.clone());
            }
            if position_in(&c.dir, &cookie.journal_dir_list()).is_some() {
                journal_dirs.insert(c.dir.clone());
            }
        }
        let mismatched: Vec<&Path> = cookies
            .iter()
            .filter(|c| c.cookie.as_ref().is_ok_and(|other| other != cookie))
            .map(|c| c.path.as_path())
            .collect();
        if !mismatched.is_empty() {
            notes.push(format!(
                "cookies differ: {} disagree with {}",
                mismatched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                cookies.iter().find(|c| c.cookie.is_ok()).map_or(String::new(), |c| c.path.display().to_string()),
            ));
        }
    }

    let (ledger_dirs, dir_pairs) = pair_dirs(&ledger_dirs, &index_dirs, reference, &mut notes);
    Ok(BookieLayout {
        root: root.to_path_buf(),
        files,
        databases,
        cookies,
        journal_dirs: journal_dirs.into_iter().collect(),
        index_dirs: dir_pairs.iter().filter_map(|p| p.index_dir.clone()).collect(),
        ledger_dirs,
        dir_pairs,
        storage,
        notes,
        unreadable,
    })
}

/// Orders the ledger directories and pairs each with its index directory: by the
/// cookie's lists when it names them (ledger dir i with index dir i), else a
/// directory is its own index directory, else (as many of each, no cookie) in
/// path order.
fn pair_dirs(
    ledger_dirs: &BTreeSet<PathBuf>,
    index_dirs: &BTreeSet<PathBuf>,
    cookie: Option<&Cookie>,
    notes: &mut Vec<String>,
) -> (Vec<PathBuf>, Vec<DirPair>) {
    let mut pairs: Vec<DirPair> = Vec::new();
    let mut placed_ledgers = BTreeSet::new();
    let mut placed_indexes = BTreeSet::new();
    if let Some(cookie) = cookie {
        let named_ledgers = cookie.ledger_dir_list();
        let named_indexes = cookie.index_dir_list();
        let mut by_position: BTreeMap<usize, DirPair> = BTreeMap::new();
        for l in ledger_dirs {
            if let Some(i) = position_in(l, &named_ledgers) {
                by_position.entry(i).or_insert(DirPair { ledger_dir: None, index_dir: None }).ledger_dir = Some(l.clone());
                placed_ledgers.insert(l.clone());
            }
        }
        for x in index_dirs {
            let position = match &named_indexes {
                Some(named) => position_in(x, named),
                None => ledger_dirs.contains(x).then(|| position_in(x, &named_ledgers)).flatten(),
            };
            if let Some(i) = position {
                by_position.entry(i).or_insert(DirPair { ledger_dir: None, index_dir: None }).index_dir = Some(x.clone());
                placed_indexes.insert(x.clone());
            }
        }
        let found = by_position.values().filter(|p| p.ledger_dir.is_some()).count();
        if found < named_ledgers.len() && !ledger_dirs.is_empty() {
            notes.push(format!(
                "the cookie names {} ledger directories; {} of them found: {}",
                named_ledgers.len(),
                found,
                named_ledgers.join(", ")
            ));
        }
        pairs.extend(by_position.into_values());
    }
    let ledgers_left: Vec<&PathBuf> = ledger_dirs.iter().filter(|l| !placed_ledgers.contains(*l)).collect();
    let mut indexes_left: Vec<&PathBuf> = index_dirs.iter().filter(|x| !placed_indexes.contains(*x)).collect();
    let by_path_order = !ledgers_left.is_empty()
        && ledgers_left.len() == indexes_left.len()
        && ledgers_left.iter().all(|l| !indexes_left.contains(l));
    if by_path_order {
        notes.push("ledger and index directories paired in path order (no cookie names their order)".to_string());
        for (l, x) in ledgers_left.iter().zip(&indexes_left) {
            pairs.push(DirPair { ledger_dir: Some((*l).clone()), index_dir: Some((*x).clone()) });
        }
        indexes_left.clear();
    } else {
        for l in ledgers_left {
            let own = indexes_left.iter().position(|x| *x == l).map(|i| indexes_left.remove(i).clone());
            pairs.push(DirPair { ledger_dir: Some(l.clone()), index_dir: own });
        }
    }
    for x in indexes_left {
        pairs.push(DirPair { ledger_dir: None, index_dir: Some(x.clone()) });
    }
    let ordered = pairs.iter().filter_map(|p| p.ledger_dir.clone()).collect();
    (ordered, pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookie::cookie::encode_dir_list;

    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> TempDir {
            let p = std::env::temp_dir().join(format!("bkcodec-layout-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
        fn file(&self, rel: &str, bytes: &[u8]) -> PathBuf {
            let p = self.0.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, bytes).unwrap();
            p
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn rocksdb(t: &TempDir, rel: &str) {
        t.file(&format!("{rel}/CURRENT"), b"MANIFEST-000005\n");
        t.file(&format!("{rel}/MANIFEST-000005"), b"\x00");
        t.file(&format!("{rel}/000004.log"), b"\x00\x01");
        t.file(&format!("{rel}/000009.sst"), b"\x00");
        t.file(&format!("{rel}/LOG"), b"2024/01/01 RocksDB version: 9.9.3\n");
    }

    fn kinds(layout: &BookieLayout, root: &Path) -> Vec<(String, &'static str)> {
        layout
            .files
            .iter()
            .map(|f| (f.path.strip_prefix(root).unwrap().display().to_string(), f.kind.name()))
            .collect()
    }

    #[test]
    fn names_and_places() {
        let k = |p: &str| kind_from_name(Path::new(p));
        assert_eq!(k("current/1a.log"), FileKind::EntryLog { log_id: Some(0x1a) });
        assert_eq!(k("current/bookkeeper-server.log"), FileKind::Other);
        assert_eq!(k("j/current/18bcfe56800.txn"), FileKind::Journal { journal_id: Some(0x18bcfe56800) });
        assert_eq!(k("l/current/12/34/1234.idx"), FileKind::Index { scope_id: 0, ledger_id: Some(0x1234) });
        assert_eq!(k("l/current/0/5/5.idx"), FileKind::Index { scope_id: 0, ledger_id: Some(5) });
        assert_eq!(k("l/current/0/5/0/7/7.idx"), FileKind::Index { scope_id: 5, ledger_id: Some(7) });
        assert_eq!(k("0/5/0/7/7.idx"), FileKind::Index { scope_id: 5, ledger_id: Some(7) });
        assert_eq!(
            k("l/current/1/2/ffffffff/fffffffe/fffffffffffffffe.idx"),
            FileKind::Index { scope_id: 0x1_0000_0002, ledger_id: Some(-2) }
        );
        assert_eq!(k("7.idx"), FileKind::Index { scope_id: 0, ledger_id: Some(7) });
        assert_eq!(k("current/lastMark"), FileKind::LastMark);
        assert_eq!(k("current/lastMark.1"), FileKind::LastMark);
        assert_eq!(k("current/lastMark.x"), FileKind::Other);
        assert_eq!(k("current/lastId"), FileKind::LastId);
        assert_eq!(k("current/VERSION"), FileKind::Cookie);
        assert_eq!(k("docs/VERSION"), FileKind::Other);
        assert_eq!(k("current/BOOKIE_STATUS"), FileKind::BookieStatus);
    }

    #[test]
    fn classify_one_path() {
        let t = TempDir::new("classify");
        rocksdb(&t, "bk/ledgers/current/locations");
        let wal = t.0.join("bk/ledgers/current/locations/000004.log");
        assert_eq!(classify(&wal).unwrap().kind, FileKind::RocksDbFile { role: Some(IndexDbRole::Locations) });
        let db = classify(&t.0.join("bk/ledgers/current/locations")).unwrap();
        assert_eq!(db.kind, FileKind::RocksDb { role: Some(IndexDbRole::Locations) });
        assert_eq!(classify(&t.0.join("bk")).unwrap().kind, FileKind::Directory);
        let text = t.file("x/0.log", b"2024-01-01 INFO bookie started\n");
        let c = classify(&text).unwrap();
        assert_eq!(c.kind, FileKind::Other);
        assert!(c.note.unwrap().contains("BKLO"));
        let wrecked = t.file("x/6.log", &[0u8, 1, 2, 0xfe]);
        assert_eq!(classify(&wrecked).unwrap().kind, FileKind::EntryLog { log_id: Some(6) });
        let loose = t.file("x/copy.bin", b"BKLG\x00\x00\x00\x06");
        assert_eq!(classify(&loose).unwrap().kind, FileKind::Journal { journal_id: None });
        assert_eq!(classify(&t.file("x/notes.bin", b"hello")).unwrap().kind, FileKind::Other);
        assert!(classify(&t.0.join("x/none")).is_err());
    }

    /// A FIFO named like an entry log is listed, never opened: opening it to sniff
    /// its magic would wait forever for a writer.
    #[test]
    fn fifos_are_listed_not_opened() {
        let t = TempDir::new("fifo");
        t.file("bk/current/0.log", b"BKLO");
        let fifo = t.0.join("bk/current/3.log");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let f = classify(&fifo).unwrap();
        assert_eq!(f.kind, FileKind::Other);
        assert!(f.note.unwrap().contains("FIFO"));
        let layout = discover(&t.0.join("bk")).unwrap();
        let logs: Vec<_> = layout.files.iter().filter(|f| matches!(f.kind, FileKind::EntryLog { .. })).collect();
        assert_eq!(logs.len(), 1, "{:?}", layout.files);
        assert!(layout.notes.iter().any(|n| n.contains("3.log") && n.contains("FIFO")), "{:?}", layout.notes);
    }

    #[test]
    fn db_ledger_storage_bookie() {
        let t = TempDir::new("dbls");
        let cookie = Cookie {
            layout_version: 5,
            bookie_id: "bk1:3181".into(),
            journal_dirs: "/srv/bk/journal".into(),
            ledger_dirs: encode_dir_list(&["/srv/bk/ledgers0", "/srv/bk/ledgers1"]),
            instance_id: Some("i".into()),
            index_dirs: Some(encode_dir_list(&["/srv/bk/index0", "/srv/bk/index1"])),
        };
        let text = cookie.encode();
        for d in ["journal", "ledgers0", "ledgers1", "index0", "index1"] {
            t.file(&format!("bk/{d}/current/VERSION"), text.as_bytes());
        }
        t.file("bk/journal/current/1.txn", b"BKLG");
        t.file("bk/ledgers1/current/0.log", b"BKLO");
        t.file("bk/ledgers1/current/lastId", b"0\n");
        t.file("bk/ledgers0/current/lastMark", &[0; 16]);
        t.file("bk/ledgers0/current/bookkeeper-server.log", b"INFO\n");
        rocksdb(&t, "bk/index1/current/locations");
        rocksdb(&t, "bk/index1/current/ledgers");
        rocksdb(&t, "bk/index0/current/scoped-locations");
        rocksdb(&t, "bk/index0/current/mystery");
        let root = t.0.join("bk");
        let layout = discover(&root).unwrap();
        assert_eq!(layout.storage, Some(StorageKind::DbLedgerStorage));
        let rel = |p: &Path| p.strip_prefix(&root).unwrap().display().to_string();
        assert_eq!(layout.journal_dirs.iter().map(|p| rel(p)).collect::<Vec<_>>(), ["journal"]);
        assert_eq!(layout.ledger_dirs.iter().map(|p| rel(p)).collect::<Vec<_>>(), ["ledgers0", "ledgers1"]);
        assert_eq!(layout.index_dirs.iter().map(|p| rel(p)).collect::<Vec<_>>(), ["index0", "index1"]);
        let dbs: Vec<_> = layout.databases.iter().map(|d| (rel(&d.path), d.role.map(|r| r.as_str()), rel(&d.dir))).collect();
        assert_eq!(
            dbs,
            [
                ("index0/current/mystery".to_string(), None, "index0".to_string()),
                ("index0/current/scoped-locations".into(), Some("scoped-locations"), "index0".into()),
                ("index1/current/ledgers".into(), Some("ledgers"), "index1".into()),
                ("index1/current/locations".into(), Some("locations"), "index1".into()),
            ]
        );
        let files = kinds(&layout, &root);
        assert!(files.contains(&("index1/current/locations/000004.log".into(), "rocksdb_file")));
        assert!(files.contains(&("ledgers1/current/0.log".into(), "entry_log")));
        assert!(files.contains(&("ledgers0/current/bookkeeper-server.log".into(), "other")));
        assert_eq!(files.iter().filter(|f| f.1 == "entry_log").count(), 1);
        assert_eq!(layout.cookies.len(), 5);
        assert!(layout.notes.is_empty(), "{:?}", layout.notes);
        // The sorted listing is the listing.
        let mut sorted = layout.files.clone();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(sorted, layout.files);
    }

    #[test]
    fn interleaved_bookie_without_cookie_and_other_roots() {
        let t = TempDir::new("interleaved");
        t.file("b/journal/current/1.txn", b"BKLG");
        t.file("b/ledgers/current/0.log", b"BKLO");
        t.file("b/ledgers/current/0/3/3.idx", b"BKLE");
        t.file("b/ledgers/current/a.log", b"INFO a log4j file with a hex name\n");
        let layout = discover(&t.0.join("b")).unwrap();
        assert_eq!(layout.storage, Some(StorageKind::InterleavedLedgerStorage));
        assert_eq!(layout.dir_pairs, [DirPair { ledger_dir: Some(t.0.join("b/ledgers")), index_dir: Some(t.0.join("b/ledgers")) }]);
        assert_eq!(layout.notes.len(), 1);
        assert!(layout.notes[0].contains("a.log") && layout.notes[0].contains("text"));
        // current/ itself, and one file.
        let current = discover(&t.0.join("b/ledgers/current")).unwrap();
        assert_eq!(current.ledger_dirs, [t.0.join("b/ledgers")]);
        let one = discover(&t.0.join("b/ledgers/current/0.log")).unwrap();
        assert_eq!(one.files.len(), 1);
        assert!(discover(&t.0.join("nothing")).is_err());
    }

    /// A link to a directory holding the tree, or to a directory outside it that is
    /// no bookie directory, is not walked: its files are not this bookie's.
    #[test]
    fn directory_links_out_of_the_tree_are_noted_not_followed() {
        let t = TempDir::new("links-out");
        t.file("bk/ledgers/current/0.log", b"BKLO");
        t.file("elsewhere/logs/5.log", b"BKLO");
        let bk = t.0.join("bk");
        std::os::unix::fs::symlink(&t.0, bk.join("ledgers/current/up")).unwrap();
        std::os::unix::fs::symlink(t.0.join("elsewhere"), bk.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(t.0.join("bk/ledgers"), bk.join("loop")).unwrap();
        let layout = discover(&bk).unwrap();
        assert_eq!(kinds(&layout, &bk), [("ledgers/current/0.log".to_string(), "entry_log")]);
        let real = fs::canonicalize(&t.0).unwrap();
        for (link, target) in [("ledgers/current/up", real.clone()), ("elsewhere", real.join("elsewhere"))] {
            let named = format!("{}: a link to the directory {}", bk.join(link).display(), target.display());
            assert!(layout.notes.iter().any(|n| n.starts_with(&named) && n.ends_with("not followed")), "{named} {:?}", layout.notes);
        }
        // A link inside the tree is no finding (its directory is walked once).
        assert_eq!(layout.notes.len(), 2, "{:?}", layout.notes);
        assert!(layout.unreadable.is_empty());
    }

    /// A ledger directory on another disk, linked from the bookie root, and a link
    /// given as the root: both walked as before. A file linked from elsewhere is read
    /// and noted.
    #[test]
    fn links_to_bookie_directories_elsewhere_are_followed() {
        let t = TempDir::new("links-bookie");
        t.file("bk/journal/current/1.txn", b"BKLG");
        t.file("disk2/ledgers/current/0.log", b"BKLO");
        t.file("disk2/ledgers/current/0/3/3.idx", b"BKLE");
        t.file("disk3/current/lastId", b"0\n");
        t.file("disk4/7.log", b"BKLO");
        let bk = t.0.join("bk");
        std::os::unix::fs::symlink(t.0.join("disk2/ledgers"), bk.join("ledgers")).unwrap();
        fs::create_dir_all(bk.join("index")).unwrap();
        std::os::unix::fs::symlink(t.0.join("disk3/current"), bk.join("index/current")).unwrap();
        std::os::unix::fs::symlink(t.0.join("disk4/7.log"), bk.join("ledgers/current/7.log")).unwrap();
        let layout = discover(&bk).unwrap();
        let found = kinds(&layout, &bk);
        assert_eq!(
            found,
            [
                ("index/current/lastId".to_string(), "last_id"),
                ("journal/current/1.txn".into(), "journal"),
                ("ledgers/current/0/3/3.idx".into(), "index"),
                ("ledgers/current/0.log".into(), "entry_log"),
                ("ledgers/current/7.log".into(), "entry_log"),
            ]
        );
        assert_eq!(layout.storage, Some(StorageKind::InterleavedLedgerStorage));
        let disk4 = fs::canonicalize(t.0.join("disk4/7.log")).unwrap();
        assert_eq!(layout.notes, [format!("{}: a link to {}, outside the tree", bk.join("ledgers/current/7.log").display(), disk4.display())]);
        let link = t.0.join("bk-link");
        std::os::unix::fs::symlink(&bk, &link).unwrap();
        let through = discover(&link).unwrap();
        assert_eq!(kinds(&through, &link), found);
        assert_eq!(through.notes, layout.notes.iter().map(|n| n.replacen("/bk/", "/bk-link/", 1)).collect::<Vec<_>>());
    }

    /// Names are bytes: a tree under a directory whose name is not UTF-8 is walked,
    /// and notes spell such a path escaped.
    #[test]
    fn paths_that_are_not_utf8_are_walked_and_escaped_in_notes() {
        use std::os::unix::ffi::OsStrExt;
        let t = TempDir::new("non-utf8");
        let odd = t.0.join(std::ffi::OsStr::from_bytes(b"bk-\xff"));
        fs::create_dir_all(odd.join("ledgers/current")).unwrap();
        fs::write(odd.join("ledgers/current/0.log"), b"BKLO").unwrap();
        fs::write(odd.join("ledgers/current/a.log"), b"INFO text\n").unwrap();
        let layout = discover(&odd).unwrap();
        assert_eq!(layout.files.len(), 2);
        assert_eq!(layout.files[0].path, odd.join("ledgers/current/0.log"));
        assert_eq!(layout.ledger_dirs, [odd.join("ledgers")]);
        let escaped = format!("{}/bk-\\xff/ledgers/current/a.log", t.0.display());
        assert!(layout.notes.iter().any(|n| n.starts_with(&escaped)), "{:?}", layout.notes);
    }

    #[test]
    fn cookie_suffix_matching() {
        assert_eq!(position_in(Path::new("/mnt/copy/data1/bk/ledgers"), &["/data1/bk/ledgers".into(), "/data2/bk/ledgers".into()]), Some(0));
        assert_eq!(position_in(Path::new("/x/ledgers"), &["/data1/ledgers".into(), "/data2/ledgers".into()]), None);
        assert_eq!(position_in(Path::new("/x/other"), &["/data1/ledgers".into()]), None);
    }
}
