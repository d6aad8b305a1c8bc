//! The `bookkeeper-jvm` source's columns and options: the Python `bookkeeper`
//! source's (`bkcodec_spark.datasource.full_schema`), so a read gives the same
//! schema whichever source serves it. `file`, then the core reader's columns (a
//! bookie directory's entry logs and journals merged as `bkcodec.read_bookie`
//! merges them, after `file_kind`), `error` last.

use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bkcodec_core::arrow::{entry_log_schema, index_schema, journal_schema, merged_file_schema, EntryBatchOptions, FileReaderOptions, OnError, PayloadMode};
use bkcodec_core::metadata::znode_dump::read_znode_dir;
use bkcodec_core::arrow::RowFilter;
use bkcodec_core::files::entry_log::log_id_from_path;
use bkcodec_core::files::index_file::ledger_id_from_index_path;
use bkcodec_core::files::journal::journal_id_from_path;
use bkcodec_core::plan::{admits, intersect, parse_id_ranges, ReadKind};
use bkcodec_core::{DigestPolicy, Error, LedgerDigestSettings, Result};

/// The options a read takes (what the Python source's `ReadOptions` holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOptions {
    pub digest_type: String,
    pub password: String,
    pub verify: bool,
    pub payload: String,
    pub ledger_metadata: Option<String>,
    /// The row filters: the `ledgerId`, `entryId`, `scopeId` and `offset` options, each
    /// with the filters Spark pushed on its column (`pushed.<column>`, set by the Java
    /// scan, never by users), which rows must pass as well.
    pub rows: RowFilter,
    /// The `logId` and `journalId` options (and pushed filters on `log_id` and
    /// `journal_id`): files whose name id they do not admit give no row (a journal has
    /// no log id, an entry log no journal id).
    pub log_ids: Option<Vec<(i64, i64)>>,
    pub journal_ids: Option<Vec<(i64, i64)>>,
}

/// `lo:hi,lo:hi` (inclusive; empty: no value passes).
fn parse_ranges(name: &str, text: &str) -> Result<Vec<(i64, i64)>> {
    let bad = || Error::invalid_argument(format!("{name} is lo:hi pairs, not {text:?}"));
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (lo, hi) = pair.split_once(':').ok_or_else(bad)?;
            Ok((lo.trim().parse().map_err(|_| bad())?, hi.trim().parse().map_err(|_| bad())?))
        })
        .collect()
}

impl SourceOptions {
    /// From `(name, value)` pairs, names in any case (Spark lower-cases them); options
    /// this module does not read are the Java side's (`path`, `splitSize`, ...).
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<SourceOptions> {
        let get = |name: &str| pairs.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
        // An option's ranges, met with those Spark pushed on its column.
        let ranges = |name: &str, column: &str| -> Result<Option<Vec<(i64, i64)>>> {
            let option = get(name).map(|t| parse_id_ranges(name, &t)).transpose()?;
            let pushed_name = format!("pushed.{column}");
            let pushed = get(&pushed_name).map(|t| parse_ranges(&pushed_name, &t)).transpose()?;
            Ok(match (option, pushed) {
                (option, None) => option,
                (None, pushed) => pushed,
                (Some(option), Some(pushed)) => Some(intersect(&option, &pushed)),
            })
        };
        let digest_type = get("digestType").unwrap_or_else(|| "auto".into()).to_ascii_lowercase();
        DigestPolicy::from_name(Some(&digest_type))
            .map_err(|_| Error::invalid_argument(format!("digestType must be auto or a digest type name, not {digest_type:?}")))?;
        let payload = get("payload").unwrap_or_else(|| "binary".into()).to_ascii_lowercase();
        if !PayloadMode::ROW_MODES.iter().any(|m| m.name() == payload) {
            let names: Vec<&str> = PayloadMode::ROW_MODES.iter().map(|m| m.name()).collect();
            return Err(Error::invalid_argument(format!("payload must be one of {}, not {payload:?}", names.join(", "))));
        }
        let verify = match get("verify").map(|v| v.trim().to_ascii_lowercase()) {
            None => true,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => return Err(Error::invalid_argument(format!("verify must be true or false, not {v:?}"))),
        };
        Ok(SourceOptions {
            digest_type,
            password: get("password").unwrap_or_default(),
            verify,
            payload,
            ledger_metadata: get("ledgerMetadata").filter(|v| !v.is_empty()),
            rows: RowFilter {
                ledger_id: ranges("ledgerId", "ledger_id")?,
                entry_id: ranges("entryId", "entry_id")?,
                scope_id: ranges("scopeId", "scope_id")?,
                offset: ranges("offset", "offset")?,
            },
            log_ids: ranges("logId", "log_id")?,
            journal_ids: ranges("journalId", "journal_id")?,
        })
    }

    /// Whether rows of the file at `path`, of `kind`, can pass the name-id filters.
    pub fn admits_file(&self, path: &Path, kind: ReadKind) -> bool {
        if kind == ReadKind::Index {
            // One ledger's entries, named by its id. (Its rows' log ids are their
            // locations': a logId filter tests them row by row.)
            return match (&self.rows.ledger_id, name_id(path, kind)) {
                (Some(r), Some(id)) => admits(r, id),
                _ => true,
            };
        }
        let test = |ranges: &Option<Vec<(i64, i64)>>, own: ReadKind| match ranges {
            None => true,
            Some(r) => kind == own && name_id(path, kind).is_some_and(|id| admits(r, id)),
        };
        test(&self.log_ids, ReadKind::EntryLog) && test(&self.journal_ids, ReadKind::Journal)
    }

    /// Refuses, as the Python source does, a row-filter option on a column that rows
    /// of `schema` lack.
    pub fn check_filters(&self, schema: &Schema, kind: ReadKind) -> Result<()> {
        let filters = [
            ("ledgerId", "ledger_id", self.rows.ledger_id.is_some()),
            ("entryId", "entry_id", self.rows.entry_id.is_some()),
            ("scopeId", "scope_id", self.rows.scope_id.is_some()),
            ("logId", "log_id", self.log_ids.is_some()),
            ("journalId", "journal_id", self.journal_ids.is_some()),
            ("offset", "offset", self.rows.offset.is_some()),
        ];
        for (name, column, given) in filters {
            if given && schema.field_with_name(column).is_err() {
                return Err(Error::invalid_argument(format!("option {name} filters {column}, which {} rows do not have", kind.name())));
            }
        }
        Ok(())
    }

    fn payload_mode(&self, columns: Option<&[String]>) -> PayloadMode {
        // No payload decoded unless asked for; binary rather than views (Spark's Arrow
        // vectors have no view type).
        match columns {
            Some(cols) if !cols.iter().any(|c| c == "payload") => PayloadMode::None,
            _ if self.payload == "none" => PayloadMode::None,
            _ => PayloadMode::Binary,
        }
    }

    /// The core reader's options for rows of `columns` (all columns: None).
    pub fn scan_options(&self, columns: Option<&[String]>) -> Result<FileReaderOptions> {
        let entries = EntryBatchOptions { payload: self.payload_mode(columns), on_error: OnError::Flag };
        let policy = DigestPolicy::from_name(Some(&self.digest_type))?;
        let mut digests = LedgerDigestSettings::new(policy, self.password.as_bytes());
        if let Some(dir) = &self.ledger_metadata {
            for record in read_znode_dir(Path::new(dir))? {
                let (Some(id), metadata) = (record.ledger_id, record.metadata) else { continue };
                digests.insert(id, metadata?.digest_info());
            }
        }
        Ok(FileReaderOptions::new(entries, digests))
    }

    /// The options a schema is worked out with (no metadata read).
    fn schema_options(&self) -> FileReaderOptions {
        let payload = if self.payload == "none" { PayloadMode::None } else { PayloadMode::Binary };
        let entries = EntryBatchOptions { payload, on_error: OnError::Flag };
        FileReaderOptions::new(entries, LedgerDigestSettings::new(DigestPolicy::Auto, b""))
    }
}

/// The core kind name each read kind's rows carry in `file_kind`.
pub fn core_kind_name(kind: ReadKind) -> &'static str {
    kind.file_kind().unwrap_or("entry_log")
}

/// The column a kind's reader fills from the hex id in the file name.
pub fn name_id_column(kind: ReadKind) -> &'static str {
    kind.name_id_column().unwrap_or("log_id")
}

/// The hex id in the name of a file of `kind` (what [`name_id_column`] holds).
pub fn name_id(path: &Path, kind: ReadKind) -> Option<i64> {
    match kind {
        ReadKind::Journal => journal_id_from_path(path),
        ReadKind::Index => ledger_id_from_index_path(path),
        _ => log_id_from_path(path),
    }
}

/// Every column a read of `kind` gives, as Spark is told them.
pub fn full_schema(kind: ReadKind, options: &SourceOptions) -> Result<SchemaRef> {
    let scan = options.schema_options();
    let reader: Vec<Field> = match kind {
        ReadKind::EntryLog => entry_log_schema(&scan).fields().iter().map(|f| f.as_ref().clone()).collect(),
        ReadKind::Journal => journal_schema(&scan).fields().iter().map(|f| f.as_ref().clone()).collect(),
        // `bkcodec.read_bookie`'s columns; `file` is added below.
        ReadKind::Bookie => merged_file_schema(&[entry_log_schema(&scan), journal_schema(&scan)])
            .fields()
            .iter()
            .filter(|f| f.name() != "file")
            .map(|f| f.as_ref().clone())
            .collect(),
        // Nullable: the row of an index file that cannot be read has no entry id.
        ReadKind::Index => index_schema().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect(),
        ReadKind::Auto => return Err(Error::invalid_argument("internal: a read's kind is resolved before its schema")),
    };
    let mut fields = vec![Field::new("file", DataType::Utf8, false)];
    fields.extend(reader.into_iter().map(spark_safe));
    if !fields.iter().any(|f| f.name() == "error") {
        fields.push(Field::new("error", DataType::Utf8, true));
    }
    let schema = Schema::new(fields);
    options.check_filters(&schema, kind)?;
    Ok(Arc::new(schema))
}

/// Binary views as binary, string views as strings (what Spark's vectors hold).
fn spark_safe(field: Field) -> Field {
    match field.data_type() {
        DataType::BinaryView => field.with_data_type(DataType::Binary),
        DataType::Utf8View => field.with_data_type(DataType::Utf8),
        _ => field,
    }
}

/// A Spark type name for each Arrow type the source gives.
pub fn spark_type(t: &DataType) -> Result<&'static str> {
    Ok(match t {
        DataType::Int8 => "byte",
        DataType::Int16 => "short",
        DataType::Int32 => "integer",
        DataType::Int64 => "long",
        DataType::Boolean => "boolean",
        DataType::Utf8 => "string",
        DataType::Binary => "binary",
        DataType::Float64 => "double",
        other => return Err(Error::invalid_argument(format!("no Spark type for the Arrow type {other}"))),
    })
}

/// `name<TAB>type<TAB>nullable` lines, what the Java side builds its StructType from.
pub fn describe(schema: &Schema) -> Result<String> {
    let mut out = String::new();
    for f in schema.fields() {
        out.push_str(&format!("{}\t{}\t{}\n", f.name(), spark_type(f.data_type())?, f.is_nullable()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(kind: ReadKind) -> Vec<String> {
        let options = SourceOptions::from_pairs(&[]).unwrap();
        full_schema(kind, &options).unwrap().fields().iter().map(|f| f.name().clone()).collect()
    }

    #[test]
    fn bookie_columns_are_merged_with_position_first_and_error_last() {
        let cols = names(ReadKind::Bookie);
        assert_eq!(&cols[..8], ["file", "file_kind", "log_id", "journal_id", "offset", "location", "record_size", "record_type"]);
        assert_eq!(cols.last().map(String::as_str), Some("error"));
        assert!(cols.contains(&"master_key".to_string()));
    }

    #[test]
    fn entry_log_columns_start_with_file() {
        let cols = names(ReadKind::EntryLog);
        assert_eq!(&cols[..3], ["file", "log_id", "offset"]);
        assert!(cols.contains(&"payload".to_string()));
    }

    #[test]
    fn options_are_checked() {
        let pair = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert!(SourceOptions::from_pairs(&pair("digesttype", "crc33")).is_err());
        assert!(SourceOptions::from_pairs(&pair("verify", "yes")).is_err());
        assert!(SourceOptions::from_pairs(&pair("payload", "text")).is_err());
        let o = SourceOptions::from_pairs(&pair("DIGESTTYPE", "CRC32C")).unwrap();
        assert_eq!(o.digest_type, "crc32c");
        assert_eq!(o.rows, RowFilter::default());
        let o = SourceOptions::from_pairs(&pair("pushed.ledger_id", "1:1,5:9")).unwrap();
        assert_eq!(o.rows.ledger_id, Some(vec![(1, 1), (5, 9)]));
        assert!(SourceOptions::from_pairs(&pair("pushed.ledger_id", "1-2")).is_err());
        // Pushed filters on every row-filter column, an empty list admitting nothing.
        let o = SourceOptions::from_pairs(&pair("pushed.offset", "100:199")).unwrap();
        assert_eq!(o.rows.offset, Some(vec![(100, 199)]));
        let o = SourceOptions::from_pairs(&pair("pushed.log_id", "")).unwrap();
        assert_eq!(o.log_ids, Some(vec![]));
        assert!(!o.admits_file(Path::new("/b/current/1a.log"), ReadKind::EntryLog));
        let o = SourceOptions::from_pairs(&pair("LEDGERID", "3,10:20")).unwrap();
        assert_eq!(o.rows.ledger_id, Some(vec![(3, 3), (10, 19)]));
        let both = [("ledgerId".to_string(), "3,10:20".to_string()), ("pushed.ledger_id".to_string(), "15:30".to_string())];
        assert_eq!(SourceOptions::from_pairs(&both).unwrap().rows.ledger_id, Some(vec![(15, 19)]));
        let o = SourceOptions::from_pairs(&pair("logId", "0x1a")).unwrap();
        assert!(o.admits_file(Path::new("/b/current/1a.log"), ReadKind::EntryLog));
        assert!(!o.admits_file(Path::new("/b/current/1b.log"), ReadKind::EntryLog));
        assert!(!o.admits_file(Path::new("/b/journal/1a.txn"), ReadKind::Journal));
        let o = SourceOptions::from_pairs(&pair("entryId", "5:")).unwrap();
        assert_eq!(o.rows.entry_id, Some(vec![(5, i64::MAX)]));
        assert!(o.admits_file(Path::new("/b/journal/1a.txn"), ReadKind::Journal));
        assert!(SourceOptions::from_pairs(&pair("ledgerId", "20:10")).is_err());
    }
}
