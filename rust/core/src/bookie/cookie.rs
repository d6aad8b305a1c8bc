//! The bookie cookie: `current/VERSION` in every journal, ledger and index directory
//! (`Cookie.java`, docs/formats.md#cookies).
//!
//! The first line is the layout version. Version 3 follows with three plain lines
//! (bookie host, journal dirs, ledger dirs); versions 4 and 5 with the protobuf text
//! format of `CookieFormat {1 bookieHost, 2 journalDir, 3 ledgerDirs, 4 instanceId,
//! 5 indexDirs}` (5 only in layout version 5). Journal dirs are joined with `,`;
//! ledger and index dirs are `"<count>\t<dir>\t<dir>..."`. The instance id lives here
//! (there is no separate instance id file).

use crate::error::{Error, ErrorKind, Result};
use crate::metadata::text_format;

/// The cookie's file name inside a directory's `current/`.
pub const COOKIE_FILE_NAME: &str = "VERSION";
/// The layout version BookKeeper writes today (with index dirs).
pub const CURRENT_LAYOUT_VERSION: i32 = 5;
/// A cookie is a few lines (a bookie id and directory lists); a file larger than
/// this is not one, and is refused rather than read.
pub const MAX_COOKIE_FILE_SIZE: u64 = 1 << 20;

/// Reads and parses a cookie file (a regular file of at most [`MAX_COOKIE_FILE_SIZE`] bytes).
pub fn read_cookie_file(path: &std::path::Path) -> Result<Cookie> {
    let data = crate::files::source::read_small_file(path, MAX_COOKIE_FILE_SIZE, "cookie")?;
    Cookie::parse(&data).map_err(|e| e.in_file(path))
}

/// A parsed cookie. Directory fields keep BookKeeper's encoding; the `*_list`
/// methods split them as BookKeeper does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    pub layout_version: i32,
    /// The `bookieHost` field: the bookie id (`host:port` or a custom id).
    pub bookie_id: String,
    /// Journal directories joined with `,`.
    pub journal_dirs: String,
    /// `"<count>\t<dir>\t<dir>..."`.
    pub ledger_dirs: String,
    pub instance_id: Option<String>,
    /// As `ledger_dirs`; absent when the index dirs are the ledger dirs.
    pub index_dirs: Option<String>,
}

/// Splits a line off `data` at `\n`, `\r` or `\r\n` (`BufferedReader.readLine`);
/// `None` at the end of the data.
fn read_line(data: &[u8], at: &mut usize) -> Option<(usize, String)> {
    if *at >= data.len() {
        return None;
    }
    let start = *at;
    let end = data[start..].iter().position(|&b| b == b'\n' || b == b'\r').map_or(data.len(), |i| start + i);
    *at = match data.get(end) {
        Some(b'\r') if data.get(end + 1) == Some(&b'\n') => end + 2,
        Some(_) => end + 1,
        None => end,
    };
    Some((start, String::from_utf8_lossy(&data[start..end]).into_owned()))
}

/// `decodeDirPathFromCookie`: what follows the first tab, split at tabs (Java's
/// `split` drops trailing empty strings). The count is not checked, as in Java.
fn decode_dir_list(s: &str) -> Vec<String> {
    let rest = s.split_once('\t').map_or(s, |(_, r)| r);
    let mut dirs: Vec<String> = rest.split('\t').map(str::to_string).collect();
    while dirs.last().is_some_and(String::is_empty) {
        dirs.pop();
    }
    dirs
}

/// `encodeDirPaths`.
pub fn encode_dir_list(dirs: &[&str]) -> String {
    let mut s = dirs.len().to_string();
    for d in dirs {
        s.push('\t');
        s.push_str(d);
    }
    s
}

impl Cookie {
    /// Parses a cookie as `Cookie.parse` does. Errors name the byte offset: a first
    /// line that is not a number, a layout version below 3 (those cookies carry no
    /// directories), missing lines or required fields, an unknown field name.
    pub fn parse(data: &[u8]) -> Result<Cookie> {
        let mut at = 0;
        let (_, first) = read_line(data, &mut at).ok_or_else(|| Error::truncated(0, 1, 0).with_detail("empty cookie"))?;
        let layout_version: i32 = first
            .trim()
            .parse()
            .map_err(|_| Error::corrupt(0, format!("cookie layout version {:?} is not a number", first.trim())))?;
        if layout_version < 3 {
            return Err(Error::new(
                ErrorKind::UnsupportedVersion,
                0,
                format!("cookie layout version {layout_version}; versions 3 to 5 are known"),
            ));
        }
        if layout_version == 3 {
            let mut lines = Vec::with_capacity(3);
            for what in ["bookie host", "journal dirs", "ledger dirs"] {
                let (_, line) = read_line(data, &mut at).ok_or_else(|| {
                    Error::truncated(data.len() as u64, 1, 0)
                        .with_detail(format!("layout version 3 cookie ends before its {what} line"))
                })?;
                lines.push(line);
            }
            let [bookie_id, journal_dirs, ledger_dirs]: [String; 3] = lines.try_into().expect("three lines");
            return Ok(Cookie { layout_version, bookie_id, journal_dirs, ledger_dirs, instance_id: None, index_dirs: None });
        }
        let fields = text_format::parse_string_fields(data, at, "cookie text")?;
        let (mut bookie_id, mut journal_dirs, mut ledger_dirs, mut instance_id, mut index_dirs) = (None, None, None, None, None);
        for (name, value, offset) in fields {
            // Java decodes string fields as UTF-8 with replacement.
            let value = String::from_utf8_lossy(&value).into_owned();
            match name.as_str() {
                "bookieHost" => bookie_id = Some(value),
                "journalDir" => journal_dirs = Some(value),
                "ledgerDirs" => ledger_dirs = Some(value),
                "instanceId" => instance_id = Some(value),
                "indexDirs" => index_dirs = Some(value),
                _ => {
                    return Err(Error::corrupt(
                        offset as u64,
                        format!("cookie text: message type CookieFormat has no field named {name:?}"),
                    ))
                }
            }
        }
        let required = |v: Option<String>, name: &str| {
            v.ok_or_else(|| Error::corrupt(at as u64, format!("cookie text lacks the required field {name}")))
        };
        Ok(Cookie {
            layout_version,
            bookie_id: required(bookie_id, "bookieHost")?,
            journal_dirs: required(journal_dirs, "journalDir")?,
            ledger_dirs: required(ledger_dirs, "ledgerDirs")?,
            // Empty optional strings read as absent, as in Java.
            instance_id: instance_id.filter(|s| !s.is_empty()),
            index_dirs: index_dirs.filter(|s| !s.is_empty()),
        })
    }

    /// The text `Cookie.toString` writes (and `writeToDirectory` stores).
    pub fn encode(&self) -> String {
        if self.layout_version <= 3 {
            // Java writes the current version number over a version 3 body.
            return format!("{CURRENT_LAYOUT_VERSION}\n{}\n{}\n{}\n", self.bookie_id, self.journal_dirs, self.ledger_dirs);
        }
        let mut out = format!("{}\n", self.layout_version).into_bytes();
        let mut field = |name: &str, value: &str| {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            text_format::escape_into(&mut out, value.as_bytes());
            out.push(b'\n');
        };
        field("bookieHost", &self.bookie_id);
        field("journalDir", &self.journal_dirs);
        field("ledgerDirs", &self.ledger_dirs);
        if let Some(v) = &self.instance_id {
            field("instanceId", v);
        }
        if let Some(v) = &self.index_dirs {
            field("indexDirs", v);
        }
        String::from_utf8(out).expect("escaped text is ASCII")
    }

    pub fn journal_dir_list(&self) -> Vec<String> {
        self.journal_dirs.split(',').filter(|d| !d.is_empty()).map(str::to_string).collect()
    }

    pub fn ledger_dir_list(&self) -> Vec<String> {
        decode_dir_list(&self.ledger_dirs)
    }

    /// The index dirs, or `None` when the bookie keeps its indexes in its ledger dirs.
    pub fn index_dir_list(&self) -> Option<Vec<String>> {
        self.index_dirs.as_deref().map(decode_dir_list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V5: &str = "5\nbookieHost: \"10.0.0.7:3181\"\njournalDir: \"/data/bk/journal\"\nledgerDirs: \"2\\t/data1/bk/ledgers\\t/data2/bk/ledgers\"\ninstanceId: \"8f0b4c2e-6b5a-4d7e-9a38-0d6a1e2f3b4c\"\nindexDirs: \"2\\t/ssd1/bk/index\\t/ssd2/bk/index\"\n";

    #[test]
    fn layout_5_round_trips() {
        let c = Cookie::parse(V5.as_bytes()).unwrap();
        assert_eq!(c.layout_version, 5);
        assert_eq!(c.bookie_id, "10.0.0.7:3181");
        assert_eq!(c.journal_dir_list(), ["/data/bk/journal"]);
        assert_eq!(c.ledger_dir_list(), ["/data1/bk/ledgers", "/data2/bk/ledgers"]);
        assert_eq!(c.index_dir_list().unwrap(), ["/ssd1/bk/index", "/ssd2/bk/index"]);
        assert_eq!(c.instance_id.as_deref(), Some("8f0b4c2e-6b5a-4d7e-9a38-0d6a1e2f3b4c"));
        assert_eq!(c.encode(), V5);
        assert_eq!(c.ledger_dirs, encode_dir_list(&["/data1/bk/ledgers", "/data2/bk/ledgers"]));
    }

    #[test]
    fn layout_4_and_3() {
        let v4 = "4\nbookieHost: \"bk1:3181\"\njournalDir: \"/j1,/j2\"\nledgerDirs: \"1\\t/l\"\n";
        let c = Cookie::parse(v4.as_bytes()).unwrap();
        assert_eq!((c.layout_version, c.instance_id.clone(), c.index_dir_list()), (4, None, None));
        assert_eq!(c.journal_dir_list(), ["/j1", "/j2"]);
        assert_eq!(c.encode(), v4);
        // TextFormat accepts what it accepts elsewhere: other spacing, ';', single quotes.
        let loose = Cookie::parse(b"4\r\n  bookieHost : 'bk1:3181'; journalDir: \"/j\" ledgerDirs:\"1\\t/l\"\n").unwrap();
        assert_eq!((loose.bookie_id.as_str(), loose.ledger_dir_list()), ("bk1:3181", vec!["/l".to_string()]));
        let v3 = Cookie::parse(b" 3 \nbk1:3181\n/j\n1\t/l1\t/l2\n").unwrap();
        assert_eq!(v3.layout_version, 3);
        assert_eq!((v3.bookie_id.as_str(), v3.ledger_dir_list()), ("bk1:3181", vec!["/l1".to_string(), "/l2".to_string()]));
        // Empty optional fields read as absent.
        let c = Cookie::parse(b"5\nbookieHost: \"b:1\"\njournalDir: \"/j\"\nledgerDirs: \"1\\t/l\"\nindexDirs: \"\"\n").unwrap();
        assert_eq!(c.index_dirs, None);
    }

    #[test]
    fn damaged_cookies_name_the_offset() {
        let e = Cookie::parse(b"").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated);
        let e = Cookie::parse(b"five\n").unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 0));
        assert_eq!(Cookie::parse(b"2\nbk1:3181\n").unwrap_err().kind, ErrorKind::UnsupportedVersion);
        assert_eq!(Cookie::parse(b"3\nbk1:3181\n/j\n").unwrap_err().kind, ErrorKind::Truncated);
        let e = Cookie::parse(b"5\nbookieHost: \"b:1\"\nshoeSize: \"9\"\n").unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::Corrupt, 20));
        assert!(e.detail.contains("shoeSize"), "{}", e.detail);
        let e = Cookie::parse(b"5\nbookieHost: \"b:1\"\n").unwrap_err();
        assert!(e.detail.contains("journalDir"), "{}", e.detail);
        let e = Cookie::parse(b"5\nbookieHost: \"b:1\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt);
        // Every prefix of a good cookie parses or fails cleanly.
        for n in 0..V5.len() {
            let _ = Cookie::parse(&V5.as_bytes()[..n]);
        }
    }

    #[test]
    fn dir_lists_split_as_java_does() {
        assert_eq!(decode_dir_list("1\t/a"), ["/a"]);
        assert_eq!(decode_dir_list("/a"), ["/a"]);
        assert_eq!(decode_dir_list("2\t/a\t/b\t\t"), ["/a", "/b"]);
        // No tab: Java keeps the whole string, count included.
        assert_eq!(decode_dir_list("0"), ["0"]);
    }
}
