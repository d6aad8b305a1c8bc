//! Which topic owns which ledgers, offline (docs/pulsar.md#ledger-owners): from the topics'
//! `/managed-ledgers` znodes (the ledger lists of `ManagedLedgerInfo`, the cursor
//! ledgers of `ManagedCursorInfo`) and from the custom metadata Pulsar writes into
//! every ledger's own metadata (`application`, `component`, `pulsar/managed-ledger`,
//! `pulsar/cursor`, `pulsar/compactedTopic`, `pulsar/schemaId`), which survives the
//! loss of the metadata store.
//!
//! A dump of a metadata store is a directory with one file per znode, laid out as
//! the znode paths. A znode that has children (a topic with cursors) is a directory
//! there, and its own value is the file `_data` (or `.data`) inside it.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder, TimestampMillisecondBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::decoder::LedgerOwner;
use super::managed_ledger::{decode_managed_cursor_info, decode_managed_ledger_info};
use crate::error::{Error, Result};
use crate::metadata::znode_dump::{ledger_id_from_path, MAX_ZNODE_FILE_SIZE};
use crate::metadata::{decode_ledger_metadata, LedgerMetadata, LedgerState};

/// Where Pulsar keeps its managed ledgers in the metadata store.
pub const MANAGED_LEDGERS_ROOT: &str = "managed-ledgers";
/// Names a directory's own znode value in a dump.
pub const NODE_DATA_FILES: [&str; 2] = ["_data", ".data"];

/// What a ledger holds, as the `kind` column names it.
pub mod ledger_kind {
    pub const MESSAGES: &str = "messages";
    pub const CURSOR: &str = "cursor";
    pub const COMPACTED: &str = "compacted";
    pub const SCHEMA: &str = "schema";
    pub const TRANSACTION_LOG: &str = "transaction_log";
    pub const PENDING_ACK: &str = "pending_ack";
}

/// `java.net.URLDecoder.decode(s, UTF-8)`, as Pulsar's `Codec.decode`: `+` is a
/// space, `%XX` a byte; malformed escapes are kept as they are.
pub fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The position of the domain (`persistent`) in a managed-ledger name's parts:
/// `tenant/namespace/persistent/topic` (2) or `property/cluster/namespace/persistent/topic` (3).
fn domain_index(parts: &[&str]) -> Option<usize> {
    if parts.len() >= 4 && parts[2] == "persistent" {
        Some(2)
    } else if parts.len() >= 5 && parts[3] == "persistent" {
        Some(3)
    } else {
        None
    }
}

/// `persistent://tenant/ns/topic` for a managed-ledger name (`TopicName.getPersistenceNamingEncoding`
/// reversed: the topic part URL-decoded), or `None` for a name of another shape.
pub fn topic_of_managed_ledger(name: &str) -> Option<String> {
    let parts: Vec<&str> = name.split('/').collect();
    let d = domain_index(&parts)?;
    if parts.len() != d + 2 {
        return None;
    }
    let namespace = parts[..d].join("/");
    Some(format!("persistent://{namespace}/{}", url_decode(parts[d + 1])))
}

/// The full name of a topic as a user may give it: a full name (`persistent://...`)
/// as it is, a bare `topic` in `public/default`, `tenant/ns/topic`, or a
/// managed-ledger name (`tenant/ns/persistent/topic`, its topic part URL-decoded).
pub fn topic_url(name: &str) -> String {
    if name.contains("://") {
        return name.to_owned();
    }
    if !name.contains('/') {
        return format!("persistent://public/default/{name}");
    }
    topic_of_managed_ledger(name).unwrap_or_else(|| format!("persistent://{name}"))
}

/// `TopicName.getPartitionedTopicName`: a partition's topic (`x-partition-3` is a
/// partition of `x`); any other name as it is.
pub fn partitioned_topic_name(name: &str) -> &str {
    match name.rfind("-partition-") {
        Some(at) if name.len() > at + 11 && name[at + 11..].bytes().all(|b| b.is_ascii_digit()) => &name[..at],
        _ => name,
    }
}

/// The kind of a managed ledger, from its name: the transaction coordinator's log
/// and pending-ack stores are managed ledgers that hold no messages.
pub fn managed_ledger_kind(name: &str) -> &'static str {
    let local = name.rsplit('/').next().unwrap_or(name);
    if local.starts_with("__transaction_log_") || local.starts_with("transaction-log-") {
        ledger_kind::TRANSACTION_LOG
    } else if local.ends_with("__transaction_pending_ack") || local.ends_with("-transaction-pendingack") {
        ledger_kind::PENDING_ACK
    } else {
        ledger_kind::MESSAGES
    }
}

/// What a ledger's custom metadata says owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomMetadataOwner {
    pub kind: String,
    /// The managed-ledger name, compacted topic or schema id, as stored.
    pub name: Option<String>,
    pub topic: Option<String>,
    pub cursor: Option<String>,
}

/// Reads Pulsar's keys from a ledger's custom metadata (`LedgerMetadataUtils`);
/// `None` for a ledger Pulsar did not create.
pub fn owner_from_custom_metadata(custom: &[(String, Vec<u8>)]) -> Option<CustomMetadataOwner> {
    let get = |key: &str| custom.iter().find(|(k, _)| k == key).map(|(_, v)| String::from_utf8_lossy(v).into_owned());
    if get("application").as_deref() != Some("pulsar") {
        return None;
    }
    let component = get("component").unwrap_or_default();
    Some(match component.as_str() {
        "managed-ledger" => {
            let name = get("pulsar/managed-ledger");
            let cursor = get("pulsar/cursor");
            let kind = match (&cursor, &name) {
                (Some(_), _) => ledger_kind::CURSOR,
                (None, Some(n)) => managed_ledger_kind(n),
                (None, None) => ledger_kind::MESSAGES,
            };
            CustomMetadataOwner {
                kind: kind.into(),
                topic: name.as_deref().and_then(topic_of_managed_ledger),
                name,
                cursor: cursor.map(|c| url_decode(&c)),
            }
        }
        // The code writes compacted-ledger; Pulsar's documentation says compacted-topic.
        "compacted-ledger" | "compacted-topic" => {
            let topic = get("pulsar/compactedTopic");
            CustomMetadataOwner { kind: ledger_kind::COMPACTED.into(), name: topic.clone(), topic, cursor: None }
        }
        "schema" => CustomMetadataOwner { kind: ledger_kind::SCHEMA.into(), name: get("pulsar/schemaId"), topic: None, cursor: None },
        other => CustomMetadataOwner { kind: other.to_string(), name: None, topic: None, cursor: None },
    })
}

/// What a znode path is, for this table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Znode {
    ManagedLedger { name: String },
    Cursor { managed_ledger: String, cursor: String },
    Ledger { ledger_id: i64 },
    Other,
}

/// Classifies a znode path (`/managed-ledgers/t/ns/persistent/x`, `.../x/sub`,
/// `/ledgers/00/0000/L0001`, ...).
pub fn classify_znode(path: &str) -> Znode {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if let Some(at) = parts.iter().position(|p| *p == MANAGED_LEDGERS_ROOT) {
        let rest = &parts[at + 1..];
        let Some(d) = domain_index(rest) else { return Znode::Other };
        return match rest.len() - (d + 2) {
            0 => Znode::ManagedLedger { name: rest.join("/") },
            1 => Znode::Cursor { managed_ledger: rest[..d + 2].join("/"), cursor: url_decode(rest[d + 2]) },
            _ => Znode::Other,
        };
    }
    if parts.contains(&"ledgers") {
        if let Ok(ledger_id) = ledger_id_from_path(path) {
            return Znode::Ledger { ledger_id };
        }
    }
    Znode::Other
}

/// One row of the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerRow {
    pub topic: Option<String>,
    pub managed_ledger: Option<String>,
    pub ledger_id: Option<i64>,
    pub kind: Option<String>,
    pub cursor: Option<String>,
    pub entries: Option<i64>,
    pub size: Option<i64>,
    /// ms since the epoch.
    pub timestamp: Option<i64>,
    pub offloaded: Option<bool>,
    pub state: Option<String>,
    pub in_topic_metadata: bool,
    pub in_ledger_metadata: bool,
    pub path: Option<String>,
    pub error: Option<String>,
    /// Entries and size from the ledger's metadata, when it is closed.
    pub closed: Option<(i64, i64)>,
}

impl LedgerRow {
    /// A topic lists its open ledger with no entries until it closes it; the
    /// ledger's own metadata may know better.
    fn fill_from_closed(&mut self) {
        if let Some((entries, size)) = self.closed {
            if self.entries.unwrap_or(0) == 0 && self.size.unwrap_or(0) == 0 {
                self.entries = Some(entries);
                self.size = Some(size);
            }
        }
    }
}

/// The ledgers of every topic, built from znodes in any order.
#[derive(Debug, Default)]
pub struct TopicLedgers {
    rows: Vec<LedgerRow>,
    by_ledger: HashMap<i64, usize>,
}

impl TopicLedgers {
    pub fn new() -> Self {
        TopicLedgers::default()
    }

    pub fn rows(&self) -> &[LedgerRow] {
        &self.rows
    }

    /// The row for a ledger, merged with what is known already.
    fn row_for(&mut self, ledger_id: i64) -> &mut LedgerRow {
        let next = self.rows.len();
        let i = *self.by_ledger.entry(ledger_id).or_insert(next);
        if i == next {
            self.rows.push(LedgerRow { ledger_id: Some(ledger_id), ..Default::default() });
        }
        &mut self.rows[i]
    }

    fn error_row(&mut self, path: &str, managed_ledger: Option<&str>, error: &Error) {
        self.rows.push(LedgerRow {
            topic: managed_ledger.and_then(topic_of_managed_ledger),
            managed_ledger: managed_ledger.map(str::to_string),
            path: Some(path.to_string()),
            error: Some(error.to_string()),
            ..Default::default()
        });
    }

    /// Adds a znode by its path; znodes of other kinds are ignored.
    pub fn add_znode(&mut self, path: &str, data: Result<&[u8]>) {
        match classify_znode(path) {
            Znode::ManagedLedger { name } => self.add_managed_ledger(path, &name, data),
            Znode::Cursor { managed_ledger, cursor } => self.add_cursor(path, &managed_ledger, &cursor, data),
            Znode::Ledger { ledger_id } => match data.and_then(decode_ledger_metadata) {
                Ok(md) => self.add_ledger_metadata(Some(path), ledger_id, &md),
                Err(e) => {
                    let row = self.row_for(ledger_id);
                    row.path.get_or_insert_with(|| path.to_string());
                    row.error = Some(e.to_string());
                }
            },
            Znode::Other => {}
        }
    }

    /// `/managed-ledgers/<name>`: the topic's ledgers, oldest first.
    pub fn add_managed_ledger(&mut self, path: &str, name: &str, data: Result<&[u8]>) {
        let info = match data.and_then(decode_managed_ledger_info) {
            Ok((info, _)) => info,
            Err(e) => return self.error_row(path, Some(name), &e),
        };
        let topic = topic_of_managed_ledger(name);
        let kind = managed_ledger_kind(name);
        for l in &info.ledger_info {
            let Some(ledger_id) = l.ledger_id else { continue };
            let row = self.row_for(ledger_id);
            row.topic = topic.clone();
            row.managed_ledger = Some(name.to_string());
            row.kind = Some(kind.to_string());
            row.entries = l.entries;
            row.size = l.size;
            // Pulsar reads a missing or 0 timestamp as "unknown" (and then fills in the time of reading).
            row.timestamp = l.timestamp.filter(|&t| t != 0).or(row.timestamp);
            row.offloaded = Some(l.offload_context.as_ref().and_then(|o| o.complete).unwrap_or(false));
            row.in_topic_metadata = true;
            row.path = Some(path.to_string());
            row.fill_from_closed();
        }
    }

    /// `/managed-ledgers/<name>/<cursor>`: the cursor's own ledger, when it has one.
    pub fn add_cursor(&mut self, path: &str, managed_ledger: &str, cursor: &str, data: Result<&[u8]>) {
        let info = match data.and_then(decode_managed_cursor_info) {
            Ok((info, _)) => info,
            Err(e) => return self.error_row(path, Some(managed_ledger), &e),
        };
        // -1: the position is kept in the znode, not in a ledger.
        let Some(ledger_id) = info.cursors_ledger_id.filter(|&l| l >= 0) else { return };
        let row = self.row_for(ledger_id);
        row.topic = topic_of_managed_ledger(managed_ledger);
        row.managed_ledger = Some(managed_ledger.to_string());
        row.kind = Some(ledger_kind::CURSOR.into());
        row.cursor = Some(cursor.to_string());
        row.in_topic_metadata = true;
        row.path = Some(path.to_string());
    }

    /// A ledger's own metadata: its state, and its owner when no topic listed it.
    pub fn add_ledger_metadata(&mut self, path: Option<&str>, ledger_id: i64, md: &LedgerMetadata) {
        let owner = owner_from_custom_metadata(&md.custom_metadata);
        let row = self.row_for(ledger_id);
        row.in_ledger_metadata = true;
        row.state = Some(md.state.name().to_string());
        if md.state == LedgerState::Closed {
            row.closed = Some((md.last_entry_id + 1, md.length));
        }
        if !row.in_topic_metadata {
            if let Some(o) = owner {
                row.kind = Some(o.kind);
                row.topic = o.topic;
                row.managed_ledger = o.name;
                row.cursor = o.cursor;
            }
            if let Some(p) = path {
                row.path = Some(p.to_string());
            }
        }
        row.fill_from_closed();
        if row.timestamp.is_none() {
            row.timestamp = md.ctime;
        }
    }

    /// Ledger id to owner, for the message decoder.
    pub fn owners(&self) -> HashMap<i64, LedgerOwner> {
        self.rows
            .iter()
            .filter_map(|r| {
                let (ledger_id, kind) = (r.ledger_id?, r.kind.clone()?);
                let topic = r.topic.clone().or_else(|| r.managed_ledger.clone()).map(Arc::<str>::from);
                Some((ledger_id, LedgerOwner { kind, topic }))
            })
            .collect()
    }

    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new("managed_ledger", DataType::Utf8, true),
            Field::new("ledger_id", DataType::Int64, true),
            Field::new("kind", DataType::Utf8, true),
            Field::new("cursor", DataType::Utf8, true),
            Field::new("entries", DataType::Int64, true),
            Field::new("size", DataType::Int64, true),
            Field::new("timestamp", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), true),
            Field::new("offloaded", DataType::Boolean, true),
            Field::new("state", DataType::Utf8, true),
            Field::new("in_topic_metadata", DataType::Boolean, false),
            Field::new("in_ledger_metadata", DataType::Boolean, false),
            Field::new("path", DataType::Utf8, true),
            Field::new("error", DataType::Utf8, true),
        ]))
    }

    /// The table, one row per ledger (and per unreadable znode).
    pub fn to_batch(&self) -> Result<RecordBatch> {
        let n = self.rows.len();
        let mut topic = StringBuilder::new();
        let mut managed_ledger = StringBuilder::new();
        let mut ledger_id = Int64Builder::with_capacity(n);
        let mut kind = StringBuilder::new();
        let mut cursor = StringBuilder::new();
        let mut entries = Int64Builder::with_capacity(n);
        let mut size = Int64Builder::with_capacity(n);
        let mut timestamp = TimestampMillisecondBuilder::with_capacity(n).with_timezone("UTC");
        let mut offloaded = BooleanBuilder::with_capacity(n);
        let mut state = StringBuilder::new();
        let mut in_topic = BooleanBuilder::with_capacity(n);
        let mut in_ledger = BooleanBuilder::with_capacity(n);
        let mut path = StringBuilder::new();
        let mut error = StringBuilder::new();
        for r in &self.rows {
            topic.append_option(r.topic.as_deref());
            managed_ledger.append_option(r.managed_ledger.as_deref());
            ledger_id.append_option(r.ledger_id);
            kind.append_option(r.kind.as_deref());
            cursor.append_option(r.cursor.as_deref());
            entries.append_option(r.entries);
            size.append_option(r.size);
            timestamp.append_option(r.timestamp);
            offloaded.append_option(r.offloaded);
            state.append_option(r.state.as_deref());
            in_topic.append_value(r.in_topic_metadata);
            in_ledger.append_value(r.in_ledger_metadata);
            path.append_option(r.path.as_deref());
            error.append_option(r.error.as_deref());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(topic.finish()),
            Arc::new(managed_ledger.finish()),
            Arc::new(ledger_id.finish()),
            Arc::new(kind.finish()),
            Arc::new(cursor.finish()),
            Arc::new(entries.finish()),
            Arc::new(size.finish()),
            Arc::new(timestamp.finish()),
            Arc::new(offloaded.finish()),
            Arc::new(state.finish()),
            Arc::new(in_topic.finish()),
            Arc::new(in_ledger.finish()),
            Arc::new(path.finish()),
            Arc::new(error.finish()),
        ];
        RecordBatch::try_new(Self::schema(), columns).map_err(|e| Error::invalid_argument(format!("topic ledgers: {e}")))
    }
}

/// Ledger id to owner from a batch with the table's `ledger_id`, `kind` and
/// `topic` columns (and optionally `managed_ledger`), for the message decoder.
pub fn owners_from_batch(batch: &RecordBatch, owners: &mut HashMap<i64, LedgerOwner>) -> Result<()> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    let column = |name: &str, dt: &DataType| -> Result<Option<ArrayRef>> {
        match batch.column_by_name(name) {
            Some(c) if c.data_type() == dt => Ok(Some(c.clone())),
            Some(c) => Err(Error::invalid_argument(format!("ledger owners: {name} is {}, not {dt}", c.data_type()))),
            None => Ok(None),
        }
    };
    let missing = |name: &str| Error::invalid_argument(format!("ledger owners: no {name} column"));
    let ledger_id = column("ledger_id", &DataType::Int64)?.ok_or_else(|| missing("ledger_id"))?;
    let kind = column("kind", &DataType::Utf8)?.ok_or_else(|| missing("kind"))?;
    let topic = column("topic", &DataType::Utf8)?;
    let managed_ledger = column("managed_ledger", &DataType::Utf8)?;
    let (ledger_id, kind) = (ledger_id.as_primitive::<Int64Type>(), kind.as_string::<i32>());
    let text = |c: &Option<ArrayRef>, i: usize| -> Option<String> {
        let c = c.as_ref()?.as_string::<i32>();
        c.is_valid(i).then(|| c.value(i).to_string())
    };
    for i in 0..batch.num_rows() {
        if ledger_id.is_null(i) || kind.is_null(i) {
            continue;
        }
        let topic = text(&topic, i).or_else(|| text(&managed_ledger, i)).map(Arc::<str>::from);
        owners.insert(ledger_id.value(i), LedgerOwner { kind: kind.value(i).to_string(), topic });
    }
    Ok(())
}

/// Reads a dump directory: every file below `root` as a znode whose path is the
/// file's path from `root` (the root's own name kept when it is `managed-ledgers`
/// or `ledgers`, so either directory can be given alone).
pub fn read_dump_dir(root: &Path) -> Result<TopicLedgers> {
    let mut files = Vec::new();
    collect_files(root, &mut files).map_err(|e| Error::io(root, 0, &e))?;
    files.sort();
    let prefix = match root.file_name().and_then(|n| n.to_str()) {
        Some(n @ (MANAGED_LEDGERS_ROOT | "ledgers")) => format!("/{n}"),
        _ => String::new(),
    };
    let mut table = TopicLedgers::new();
    for file in files {
        let Ok(rel) = file.strip_prefix(root) else { continue };
        let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|n| NODE_DATA_FILES.contains(&n.as_str())) {
            parts.pop();
        }
        let znode = format!("{prefix}/{}", parts.join("/"));
        if classify_znode(&znode) == Znode::Other {
            continue;
        }
        let data = read_file(&file);
        table.add_znode(&znode, data.as_deref().map_err(Clone::clone));
    }
    Ok(table)
}

/// A znode's bytes: a regular file of at most [`MAX_ZNODE_FILE_SIZE`] bytes.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    crate::files::source::read_small_file(path, MAX_ZNODE_FILE_SIZE, "znode file")
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            // Unreadable subdirectories are skipped, not fatal: the rest of the dump still counts.
            let _ = collect_files(&entry.path(), out);
        } else if !kind.is_symlink() {
            // FIFOs, devices and sockets too: reading refuses them by name.
            out.push(entry.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::proto::{LedgerInfo, ManagedCursorInfo, ManagedLedgerInfo};
    use prost::Message;

    #[test]
    fn names() {
        assert_eq!(topic_of_managed_ledger("public/default/persistent/my-topic").as_deref(), Some("persistent://public/default/my-topic"));
        assert_eq!(topic_of_managed_ledger("p/c/ns/persistent/a%2Fb+c").as_deref(), Some("persistent://p/c/ns/a/b c"));
        assert_eq!(topic_of_managed_ledger("public/default/non-persistent/x"), None);
        assert_eq!(topic_of_managed_ledger("transaction/log/0"), None);
        assert_eq!(url_decode("100%"), "100%");
        assert_eq!(url_decode("%zz%41"), "%zzA");
        assert_eq!(managed_ledger_kind("pulsar/system/persistent/__transaction_log_3"), "transaction_log");
        assert_eq!(managed_ledger_kind("t/n/persistent/x-sub__transaction_pending_ack"), "pending_ack");
        assert_eq!(managed_ledger_kind("t/n/persistent/x"), "messages");
        assert_eq!(classify_znode("/managed-ledgers/t/n/persistent/x"), Znode::ManagedLedger { name: "t/n/persistent/x".into() });
        assert_eq!(
            classify_znode("/managed-ledgers/t/n/persistent/x/my%20sub"),
            Znode::Cursor { managed_ledger: "t/n/persistent/x".into(), cursor: "my sub".into() }
        );
        assert_eq!(classify_znode("/managed-ledgers/t/n"), Znode::Other);
        assert_eq!(classify_znode("/ledgers/00/0000/L0001"), Znode::Ledger { ledger_id: 1 });
        assert_eq!(classify_znode("/ledgers/LAYOUT"), Znode::Other);
        assert_eq!(classify_znode("/admin/policies/t"), Znode::Other);
    }

    fn custom(pairs: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn owners_from_custom_metadata() {
        let base = [("application", "pulsar"), ("component", "managed-ledger"), ("pulsar/managed-ledger", "t/n/persistent/x")];
        let o = owner_from_custom_metadata(&custom(&base)).unwrap();
        assert_eq!((o.kind.as_str(), o.topic.as_deref()), ("messages", Some("persistent://t/n/x")));
        let mut with_cursor = base.to_vec();
        with_cursor.push(("pulsar/cursor", "sub%201"));
        let o = owner_from_custom_metadata(&custom(&with_cursor)).unwrap();
        assert_eq!((o.kind.as_str(), o.cursor.as_deref()), ("cursor", Some("sub 1")));
        for component in ["compacted-ledger", "compacted-topic"] {
            let o = owner_from_custom_metadata(&custom(&[
                ("application", "pulsar"),
                ("component", component),
                ("pulsar/compactedTopic", "persistent://t/n/x"),
            ]))
            .unwrap();
            assert_eq!((o.kind.as_str(), o.topic.as_deref()), ("compacted", Some("persistent://t/n/x")));
        }
        let o = owner_from_custom_metadata(&custom(&[("application", "pulsar"), ("component", "schema"), ("pulsar/schemaId", "t/n/x")]))
            .unwrap();
        assert_eq!((o.kind.as_str(), o.name.as_deref()), ("schema", Some("t/n/x")));
        assert_eq!(owner_from_custom_metadata(&custom(&[("application", "other")])), None);
    }

    #[test]
    fn a_dump_directory_merges_topics_cursors_and_ledger_metadata() {
        let dir = std::env::temp_dir().join(format!("bkcodec-topics-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let topic_dir = dir.join("managed-ledgers/t/n/persistent/x");
        fs::create_dir_all(&topic_dir).unwrap();
        let info = ManagedLedgerInfo {
            ledger_info: vec![
                LedgerInfo { ledger_id: Some(3), entries: Some(10), size: Some(100), timestamp: Some(5), ..Default::default() },
                LedgerInfo { ledger_id: Some(4), entries: Some(0), size: Some(0), ..Default::default() },
            ],
            ..Default::default()
        };
        fs::write(topic_dir.join("_data"), info.encode_to_vec()).unwrap();
        let cursor = ManagedCursorInfo { cursors_ledger_id: Some(9), ..Default::default() };
        fs::write(topic_dir.join("sub"), cursor.encode_to_vec()).unwrap();
        fs::write(dir.join("managed-ledgers/t/n/persistent/broken"), b"\x0a\xff").unwrap();
        // Ledger metadata: 4 closed (fills in the open ledger's size), 20 an orphan of topic y.
        let ledgers = dir.join("ledgers/00/0000");
        fs::create_dir_all(&ledgers).unwrap();
        let md = |state: LedgerState, custom_md: Vec<(String, Vec<u8>)>| {
            let closed = state == LedgerState::Closed;
            let m = LedgerMetadata {
                format_version: 3,
                ensemble_size: 1,
                write_quorum_size: 1,
                ack_quorum_size: 1,
                state,
                last_entry_id: if closed { 6 } else { -1 },
                length: if closed { 70 } else { 0 },
                ensembles: vec![crate::metadata::Ensemble { first_entry_id: 0, bookies: vec![crate::BookieId::parse("b:1").unwrap()] }],
                digest_type: Some(crate::DigestType::Crc32c),
                password: Some(Vec::new()),
                ctime: Some(123),
                custom_metadata: custom_md,
                ctoken: 0,
            };
            crate::metadata::encode_ledger_metadata(&m, 3).unwrap()
        };
        let orphan = custom(&[("application", "pulsar"), ("component", "managed-ledger"), ("pulsar/managed-ledger", "t/n/persistent/y")]);
        fs::write(ledgers.join("L0004"), md(LedgerState::Closed, vec![])).unwrap();
        fs::write(ledgers.join("L0020"), md(LedgerState::Open, orphan)).unwrap();
        let table = read_dump_dir(&dir).unwrap();
        let rows = table.rows();
        let by_id = |id: i64| rows.iter().find(|r| r.ledger_id == Some(id)).unwrap().clone();
        assert_eq!(by_id(3).topic.as_deref(), Some("persistent://t/n/x"));
        assert_eq!((by_id(3).entries, by_id(3).size, by_id(3).in_ledger_metadata), (Some(10), Some(100), false));
        assert_eq!((by_id(4).entries, by_id(4).size, by_id(4).state.as_deref()), (Some(7), Some(70), Some("CLOSED")));
        assert_eq!((by_id(9).kind.as_deref(), by_id(9).cursor.as_deref()), (Some("cursor"), Some("sub")));
        let orphan = by_id(20);
        assert_eq!((orphan.topic.as_deref(), orphan.in_topic_metadata, orphan.in_ledger_metadata), (Some("persistent://t/n/y"), false, true));
        assert!(rows.iter().any(|r| r.error.is_some() && r.managed_ledger.as_deref() == Some("t/n/persistent/broken")));
        let owners = table.owners();
        assert_eq!(owners[&9].kind, "cursor");
        assert_eq!(owners[&3].topic.as_deref(), Some("persistent://t/n/x"));
        let batch = table.to_batch().unwrap();
        assert_eq!(batch.num_rows(), rows.len());
        let mut from_batch = HashMap::new();
        owners_from_batch(&batch, &mut from_batch).unwrap();
        assert_eq!(from_batch, owners);
        // The managed-ledgers directory alone works too.
        let alone = read_dump_dir(&dir.join("managed-ledgers")).unwrap();
        assert_eq!(alone.rows().iter().filter(|r| r.ledger_id.is_some()).count(), 3);
        fs::remove_dir_all(&dir).unwrap();
    }
}
