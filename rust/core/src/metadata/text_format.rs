//! Metadata format 2: `LedgerMetadataFormat` in protobuf text format (docs/formats.md#ledger-metadata).
//!
//! The printer writes what protobuf-java's `TextFormat` prints: set fields in
//! field-number order, `name: value` lines, nested messages as `name {` ... `}` with
//! two-space indentation, enums by name, strings and bytes quoted with its escaping
//! (`\n \r \t \a \b \f \v \\ \' \"`, other bytes outside 0x20..=0x7E as 3-digit octal).
//!
//! The parser accepts what `TextFormat.merge` accepts for this message: whitespace
//! and `#` comments anywhere, `:` optional before a message and required before a
//! scalar, `{}` or `<>` around messages, `[a, b]` lists for repeated fields, `;` or
//! `,` after a field, adjacent quoted strings concatenated, both quote characters,
//! C escapes including octal, `\x`, `\u` and `\U`, integers in decimal, hex (`0x`)
//! or octal (leading `0`), enums by name or number. An unknown field name or enum
//! value is an error, as in Java; a repeated singular field keeps the last value.

use super::proto::{CustomMetadataEntry, LedgerMetadataFormat, Segment};
use crate::error::{Error, Result};
use crate::java_number::parse_radix;

const STATE_NAMES: [(&str, i32); 3] = [("OPEN", 1), ("IN_RECOVERY", 2), ("CLOSED", 3)];
const DIGEST_NAMES: [(&str, i32); 4] = [("CRC32", 1), ("HMAC", 2), ("CRC32C", 3), ("DUMMY", 4)];

// ---------------------------------------------------------------- printing

/// `TextFormat.escapeBytes`.
pub(crate) fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x0b => out.extend_from_slice(b"\\v"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\'' => out.extend_from_slice(b"\\'"),
            b'"' => out.extend_from_slice(b"\\\""),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(&[b'\\', b'0' + (b >> 6), b'0' + ((b >> 3) & 7), b'0' + (b & 7)]),
        }
    }
    out.push(b'"');
}

fn enum_name(names: &[(&'static str, i32)], v: i32) -> String {
    names.iter().find(|(_, n)| *n == v).map(|(s, _)| s.to_string()).unwrap_or_else(|| v.to_string())
}

struct Printer<'a> {
    out: &'a mut Vec<u8>,
    indent: usize,
}

impl Printer<'_> {
    fn start(&mut self, name: &str) {
        self.out.extend(std::iter::repeat_n(b' ', self.indent));
        self.out.extend_from_slice(name.as_bytes());
    }
    fn scalar(&mut self, name: &str, value: impl std::fmt::Display) {
        self.start(name);
        self.out.extend_from_slice(format!(": {value}\n").as_bytes());
    }
    fn bytes(&mut self, name: &str, value: &[u8]) {
        self.start(name);
        self.out.extend_from_slice(b": ");
        escape_into(self.out, value);
        self.out.push(b'\n');
    }
    fn open(&mut self, name: &str) {
        self.start(name);
        self.out.extend_from_slice(b" {\n");
        self.indent += 2;
    }
    fn close(&mut self) {
        self.indent -= 2;
        self.start("}");
        self.out.push(b'\n');
    }
}

/// Prints the message as protobuf-java's `TextFormat.printToString` does.
pub(super) fn print(fmt: &LedgerMetadataFormat, out: &mut Vec<u8>) {
    let mut p = Printer { out, indent: 0 };
    if let Some(v) = fmt.quorum_size {
        p.scalar("quorumSize", v);
    }
    if let Some(v) = fmt.ensemble_size {
        p.scalar("ensembleSize", v);
    }
    if let Some(v) = fmt.length {
        p.scalar("length", v);
    }
    if let Some(v) = fmt.last_entry_id {
        p.scalar("lastEntryId", v);
    }
    if let Some(v) = fmt.state {
        p.scalar("state", enum_name(&STATE_NAMES, v));
    }
    for seg in &fmt.segment {
        p.open("segment");
        for m in &seg.ensemble_member {
            p.bytes("ensembleMember", m);
        }
        if let Some(v) = seg.first_entry_id {
            p.scalar("firstEntryId", v);
        }
        p.close();
    }
    if let Some(v) = fmt.digest_type {
        p.scalar("digestType", enum_name(&DIGEST_NAMES, v));
    }
    if let Some(v) = &fmt.password {
        p.bytes("password", v);
    }
    if let Some(v) = fmt.ack_quorum_size {
        p.scalar("ackQuorumSize", v);
    }
    if let Some(v) = fmt.ctime {
        p.scalar("ctime", v);
    }
    for e in &fmt.custom_metadata {
        p.open("customMetadata");
        if let Some(k) = &e.key {
            p.bytes("key", k);
        }
        if let Some(v) = &e.value {
            p.bytes("value", v);
        }
        p.close();
    }
    if let Some(v) = fmt.c_token {
        p.scalar("cToken", v);
    }
}

// ---------------------------------------------------------------- parsing

/// Tokens over the text, with `TextFormat.Tokenizer`'s rules. Offsets are absolute
/// (the text starts at `base` in the znode data). Shared with other protobuf text
/// readers in the crate, whose errors name their format through `label`.
pub(crate) struct Tokenizer<'a> {
    text: &'a [u8],
    base: usize,
    /// What the text is, for error messages.
    label: &'static str,
    pos: usize,
    /// The current token: `text[tok_start..tok_end]`, empty at the end.
    tok_start: usize,
    tok_end: usize,
}

#[inline]
fn is_java_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

#[inline]
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-')
}

impl<'a> Tokenizer<'a> {
    fn new(text: &'a [u8], base: usize) -> Self {
        Self::with_label(text, base, "format 2 text")
    }

    pub(crate) fn with_label(text: &'a [u8], base: usize, label: &'static str) -> Self {
        let mut t = Tokenizer { text, base, label, pos: 0, tok_start: 0, tok_end: 0 };
        t.advance();
        t
    }

    pub(crate) fn err(&self, detail: impl Into<String>) -> Error {
        Error::corrupt((self.base + self.tok_start) as u64, format!("{}: {}", self.label, detail.into()))
    }

    pub(crate) fn token(&self) -> &'a [u8] {
        &self.text[self.tok_start..self.tok_end]
    }

    pub(crate) fn token_text(&self) -> String {
        String::from_utf8_lossy(self.token()).into_owned()
    }

    pub(crate) fn at_end(&self) -> bool {
        self.tok_start == self.tok_end
    }

    /// Moves to the next token, skipping whitespace and comments.
    pub(crate) fn advance(&mut self) {
        let t = self.text;
        let mut p = self.pos;
        loop {
            while p < t.len() && is_java_space(t[p]) {
                p += 1;
            }
            if p < t.len() && t[p] == b'#' {
                while p < t.len() && t[p] != b'\n' {
                    p += 1;
                }
                continue;
            }
            break;
        }
        self.tok_start = p;
        if p >= t.len() {
            self.tok_end = p;
            self.pos = p;
            return;
        }
        let c = t[p];
        let mut e = p + 1;
        if c.is_ascii_alphabetic() || c == b'_' {
            // identifier: [a-zA-Z_][0-9a-zA-Z_+-]*
            while e < t.len() && is_word(t[e]) {
                e += 1;
            }
        } else if c.is_ascii_digit() || c == b'+' || c == b'-' || (c == b'.' && t.get(p + 1).is_some_and(|d| d.is_ascii_digit() || matches!(d, b'+' | b'-'))) {
            // number: [.]?[0-9+-][0-9a-zA-Z_.+-]*
            while e < t.len() && (is_word(t[e]) || t[e] == b'.') {
                e += 1;
            }
        } else if c == b'"' || c == b'\'' {
            // quoted string, ending at the matching quote or (unterminated) at the line end
            loop {
                match t.get(e) {
                    None | Some(b'\n') => break,
                    Some(&q) if q == c => {
                        e += 1;
                        break;
                    }
                    Some(b'\\') => {
                        if t.get(e + 1).is_none_or(|&n| n == b'\n') {
                            e += 1;
                            break;
                        }
                        e += 2;
                    }
                    Some(_) => e += 1,
                }
            }
        }
        self.tok_end = e;
        self.pos = e;
    }

    fn looking_at(&self, s: &str) -> bool {
        self.token() == s.as_bytes()
    }

    pub(crate) fn try_consume(&mut self, s: &str) -> Result<bool> {
        if self.looking_at(s) {
            self.advance();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(crate) fn consume(&mut self, s: &str) -> Result<()> {
        if self.try_consume(s)? {
            Ok(())
        } else {
            Err(self.err(format!("expected \"{s}\", found {:?}", self.token_text())))
        }
    }

    /// A field name and its offset.
    pub(crate) fn consume_identifier(&mut self) -> Result<(String, usize)> {
        let at = self.tok_start;
        let tok = self.token();
        if tok.is_empty() || !tok.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') {
            return Err(self.err(format!("expected a field name, found {:?}", self.token_text())));
        }
        let s = self.token_text();
        self.advance();
        Ok((s, at))
    }

    /// `TextFormat.parseInteger`: `-`, then `0x` hex, leading-`0` octal or decimal,
    /// the rest parsed like `Long.parseLong` (so it may carry its own sign), then a
    /// range check for the field's type.
    pub(crate) fn consume_integer(&mut self, min: i128, max: i128) -> Result<i128> {
        let tok = self.token_text();
        let (negative, rest) = match tok.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, tok.as_str()),
        };
        let (radix, digits) = if let Some(h) = rest.strip_prefix("0x") {
            (16, h)
        } else if rest.starts_with('0') {
            (8, rest)
        } else {
            (10, rest)
        };
        let value = parse_radix(digits, radix)
            .map(|v| if negative { -v } else { v })
            .ok_or_else(|| self.err(format!("expected an integer, found {tok:?}")))?;
        if value < min || value > max {
            return Err(self.err(format!("number {tok} is out of range for the field")));
        }
        self.advance();
        Ok(value)
    }

    pub(crate) fn consume_i32(&mut self) -> Result<i32> {
        Ok(self.consume_integer(i32::MIN as i128, i32::MAX as i128)? as i32)
    }

    pub(crate) fn consume_i64(&mut self) -> Result<i64> {
        Ok(self.consume_integer(i64::MIN as i128, i64::MAX as i128)? as i64)
    }

    pub(crate) fn consume_enum(&mut self, type_name: &str, names: &[(&str, i32)]) -> Result<i32> {
        let tok = self.token();
        if tok.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
            let name = self.token_text();
            let v = names
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| self.err(format!("enum {type_name} has no value named {name:?}")))?;
            self.advance();
            Ok(v)
        } else {
            let at = self.tok_start;
            let v = self.consume_i32()?;
            if names.iter().any(|(_, n)| *n == v) {
                Ok(v)
            } else {
                Err(Error::corrupt((self.base + at) as u64, format!("{}: enum {type_name} has no value with number {v}", self.label)))
            }
        }
    }

    /// One or more adjacent quoted strings, unescaped and concatenated.
    pub(crate) fn consume_bytes(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.consume_one_string(&mut out)?;
        while matches!(self.token().first(), Some(b'"') | Some(b'\'')) {
            self.consume_one_string(&mut out)?;
        }
        Ok(out)
    }

    fn consume_one_string(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let tok = self.token();
        let quote = match tok.first() {
            Some(&q @ (b'"' | b'\'')) => q,
            _ => return Err(self.err(format!("expected a string, found {:?}", self.token_text()))),
        };
        // An escaped final quote (`"a\"` at a line end) passes here as in Java and
        // fails in unescaping, as a backslash at the end of the string.
        if tok.len() < 2 || tok[tok.len() - 1] != quote {
            return Err(self.err("string missing its closing quote"));
        }
        let inner = &tok[1..tok.len() - 1];
        unescape_into(inner, out).map_err(|(i, why)| {
            Error::corrupt((self.base + self.tok_start + 1 + i) as u64, format!("{}: {why}", self.label))
        })?;
        self.advance();
        Ok(())
    }
}

fn hex_value(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

/// `TextFormat.unescapeBytes`. Errors carry the offset within `s`.
fn unescape_into(s: &[u8], out: &mut Vec<u8>) -> std::result::Result<(), (usize, String)> {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let at = i;
        i += 1;
        let Some(&e) = s.get(i) else {
            return Err((at, "invalid escape sequence: '\\' at the end of a string".into()));
        };
        i += 1;
        match e {
            b'0'..=b'7' => {
                let mut code = (e - b'0') as u32;
                for _ in 0..2 {
                    match s.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            code = code * 8 + (d - b'0') as u32;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                // Java keeps the low byte of \400..\777.
                out.push(code as u8);
            }
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => out.push(e),
            b'x' => {
                let mut code = match s.get(i).and_then(|&d| hex_value(d)) {
                    Some(v) => v,
                    None => return Err((at, "invalid escape sequence: '\\x' with no digits".into())),
                };
                i += 1;
                if let Some(v) = s.get(i).and_then(|&d| hex_value(d)) {
                    code = code * 16 + v;
                    i += 1;
                }
                out.push(code as u8);
            }
            b'u' | b'U' => {
                let n = if e == b'u' { 4 } else { 8 };
                let digits = s.get(i..i + n).filter(|d| d.iter().all(|&b| hex_value(b).is_some()));
                let Some(digits) = digits else {
                    return Err((at, format!("invalid escape sequence: '\\{}' with too few hex chars", e as char)));
                };
                let code = digits.iter().fold(0u32, |acc, &b| acc * 16 + hex_value(b).unwrap_or(0));
                let ch = char::from_u32(code).ok_or_else(|| {
                    (at, format!("invalid escape sequence: '\\{}' names no Unicode scalar value (0x{code:x})", e as char))
                })?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += n;
            }
            other => {
                return Err((at, format!("invalid escape sequence: '\\{}'", other as char)));
            }
        }
    }
    Ok(())
}

/// Parses a field value, or a `[a, b]` list of them when the field is repeated.
pub(crate) fn repeated<T>(t: &mut Tokenizer<'_>, mut one: impl FnMut(&mut Tokenizer<'_>) -> Result<T>) -> Result<Vec<T>> {
    let mut out = Vec::new();
    if t.try_consume("[")? {
        if !t.try_consume("]")? {
            loop {
                out.push(one(t)?);
                if t.try_consume("]")? {
                    break;
                }
                t.consume(",")?;
            }
        }
    } else {
        out.push(one(t)?);
    }
    Ok(out)
}

/// Parses `{ fields }` or `< fields >` into `merge_field` calls.
pub(crate) fn message(t: &mut Tokenizer<'_>, mut merge_field: impl FnMut(&mut Tokenizer<'_>, &str, usize) -> Result<()>) -> Result<()> {
    let end = if t.try_consume("<")? {
        ">"
    } else {
        t.consume("{")?;
        "}"
    };
    while !t.try_consume(end)? {
        if t.at_end() {
            return Err(t.err(format!("expected \"{end}\" before the end of the text")));
        }
        let (name, at) = t.consume_identifier()?;
        merge_field(t, &name, at)?;
        if !t.try_consume(";")? {
            t.try_consume(",")?;
        }
    }
    Ok(())
}

pub(crate) fn unknown_field(t: &Tokenizer<'_>, at: usize, message: &str, name: &str) -> Error {
    Error::corrupt((t.base + at) as u64, format!("{}: message type {message} has no field named {name:?}", t.label))
}

fn segment(t: &mut Tokenizer<'_>) -> Result<Segment> {
    let mut seg = Segment::default();
    message(t, |t, name, at| {
        match name {
            "ensembleMember" => {
                t.consume(":")?;
                let members = repeated(t, |t| t.consume_bytes())?;
                seg.ensemble_member.extend(members);
            }
            "firstEntryId" => {
                t.consume(":")?;
                seg.first_entry_id = Some(t.consume_i64()?);
            }
            _ => return Err(unknown_field(t, at, "LedgerMetadataFormat.Segment", name)),
        }
        Ok(())
    })?;
    Ok(seg)
}

fn custom_entry(t: &mut Tokenizer<'_>) -> Result<CustomMetadataEntry> {
    let mut entry = CustomMetadataEntry::default();
    message(t, |t, name, at| {
        match name {
            // A string field: bad UTF-8 is replaced later, as Java's toStringUtf8 does.
            "key" => {
                t.consume(":")?;
                entry.key = Some(t.consume_bytes()?);
            }
            "value" => {
                t.consume(":")?;
                entry.value = Some(t.consume_bytes()?);
            }
            _ => return Err(unknown_field(t, at, "LedgerMetadataFormat.cMetadataMapEntry", name)),
        }
        Ok(())
    })?;
    Ok(entry)
}

/// Parses the text after the header (from `start`) into a message; required
/// fields are checked later, by the conversion to metadata.
pub(super) fn parse(data: &[u8], start: usize) -> Result<LedgerMetadataFormat> {
    // Java decodes the bytes as UTF-8 with replacement first. Valid text (the
    // normal case) is borrowed, so offsets stay exact.
    let text = String::from_utf8_lossy(&data[start..]);
    let mut t = Tokenizer::new(text.as_bytes(), start);
    let mut f = LedgerMetadataFormat::default();
    while !t.at_end() {
        let (name, at) = t.consume_identifier()?;
        match name.as_str() {
            "segment" | "customMetadata" => {
                t.try_consume(":")?;
                if name == "segment" {
                    f.segment.extend(repeated(&mut t, segment)?);
                } else {
                    f.custom_metadata.extend(repeated(&mut t, custom_entry)?);
                }
            }
            _ => {
                t.consume(":")?;
                match name.as_str() {
                    "quorumSize" => f.quorum_size = Some(t.consume_i32()?),
                    "ensembleSize" => f.ensemble_size = Some(t.consume_i32()?),
                    "length" => f.length = Some(t.consume_i64()?),
                    "lastEntryId" => f.last_entry_id = Some(t.consume_i64()?),
                    "state" => f.state = Some(t.consume_enum("LedgerMetadataFormat.State", &STATE_NAMES)?),
                    "digestType" => f.digest_type = Some(t.consume_enum("LedgerMetadataFormat.DigestType", &DIGEST_NAMES)?),
                    "password" => f.password = Some(t.consume_bytes()?),
                    "ackQuorumSize" => f.ack_quorum_size = Some(t.consume_i32()?),
                    "ctime" => f.ctime = Some(t.consume_i64()?),
                    "cToken" => f.c_token = Some(t.consume_i64()?),
                    _ => return Err(unknown_field(&t, at, "LedgerMetadataFormat", &name)),
                }
            }
        }
        if !t.try_consume(";")? {
            t.try_consume(",")?;
        }
    }
    Ok(f)
}

/// Parses a flat message of string fields (`name: "value"`), as `TextFormat.merge`
/// reads one, for the other text-format files BookKeeper writes (the bookie cookie).
/// Returns each field's name, unescaped value and the offset of its name; `label`
/// names the text in errors. Field names are the caller's to check.
pub(crate) fn parse_string_fields(data: &[u8], start: usize, label: &'static str) -> Result<Vec<(String, Vec<u8>, usize)>> {
    let text = String::from_utf8_lossy(&data[start..]);
    let mut t = Tokenizer::with_label(text.as_bytes(), start, label);
    let mut fields = Vec::new();
    while !t.at_end() {
        let (name, at) = t.consume_identifier()?;
        t.consume(":")?;
        fields.push((name, t.consume_bytes()?, start + at));
        if !t.try_consume(";")? {
            t.try_consume(",")?;
        }
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<LedgerMetadataFormat> {
        parse(s.as_bytes(), 0)
    }

    #[test]
    fn escaping_matches_protobuf_java() {
        let mut out = Vec::new();
        escape_into(&mut out, b"\x00\x80\xff\n\r\t\x07\x08\x0c\x0b\\'\"a?~\x7f");
        assert_eq!(out, br#""\000\200\377\n\r\t\a\b\f\v\\\'\"a?~\177""#.to_vec());
    }

    #[test]
    fn unescape_inverts_escape_for_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        let mut quoted = Vec::new();
        escape_into(&mut quoted, &all);
        let mut back = Vec::new();
        unescape_into(&quoted[1..quoted.len() - 1], &mut back).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn unescape_forms() {
        let u = |s: &str| {
            let mut o = Vec::new();
            unescape_into(s.as_bytes(), &mut o).map(|_| o)
        };
        assert_eq!(u(r"\x41\x4").unwrap(), b"A\x04");
        assert_eq!(u(r"\101\7\18").unwrap(), b"A\x07\x018");
        assert_eq!(u(r"\777").unwrap(), b"\xff");
        assert_eq!(u(r"\u00e9\U0001F600").unwrap(), "é😀".as_bytes());
        assert_eq!(u(r"\?").unwrap(), b"?");
        for bad in [r"\x", r"\q", r"\u12", r"\ud800", r"\U00110000", "\\"] {
            assert!(u(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn accepts_the_syntax_java_accepts() {
        let f = parse_str(
            "# comment\nquorumSize: 0x2, ensembleSize: 03; length: -0\nlastEntryId: -9223372036854775808\n\
             state: 3 segment < ensembleMember: ['a:1', \"b\" 'x', \"c\"] firstEntryId: 5 >\n\
             segment: { ensembleMember: \"d\" firstEntryId: 6 }\n\
             digestType: HMAC password: \"p\\167\" 'w' customMetadata: [{key: \"k\" value: \"\\x00\"}, {}]\n\
             cToken: +7 quorumSize: 2",
        )
        .unwrap();
        assert_eq!(f.quorum_size, Some(2), "the last value of a repeated singular field wins");
        assert_eq!(f.ensemble_size, Some(3));
        assert_eq!(f.length, Some(0));
        assert_eq!(f.last_entry_id, Some(i64::MIN));
        assert_eq!(f.state, Some(3));
        assert_eq!(f.segment.len(), 2);
        assert_eq!(f.segment[0].ensemble_member, vec![b"a:1".to_vec(), b"bx".to_vec(), b"c".to_vec()]);
        assert_eq!(f.segment[1].first_entry_id, Some(6));
        assert_eq!(f.digest_type, Some(2));
        assert_eq!(f.password.as_deref(), Some(&b"pww"[..]));
        assert_eq!(f.custom_metadata.len(), 2);
        assert_eq!(f.custom_metadata[0].value.as_deref(), Some(&b"\x00"[..]));
        assert_eq!(f.c_token, Some(7));
    }

    #[test]
    fn rejects_with_offsets() {
        let cases: &[(&str, u64)] = &[
            ("quorumSize 2", 11),
            ("quorumSize: 2147483648", 12),
            ("quorumSize: x", 12),
            ("nosuch: 1", 0),
            ("state: BROKEN", 7),
            ("digestType: 9", 12),
            ("segment { ensembleMember: \"a }", 26),
            ("segment { firstEntryId: 1 ", 26),
            ("segment { bogus: 1 }", 10),
            ("password: \"\\q\"", 11),
            ("length: 08", 8),
            ("quorumSize: 1.5", 12),
            ("segment: 5", 9),
            ("é: 1", 0),
        ];
        for (text, offset) in cases {
            let e = parse_str(text).unwrap_err();
            assert_eq!(e.offset, *offset, "{text:?}: {e}");
        }
    }

    #[test]
    fn print_then_parse_round_trips() {
        let f = LedgerMetadataFormat {
            quorum_size: Some(2),
            ensemble_size: Some(3),
            length: Some(-5),
            last_entry_id: Some(i64::MAX),
            state: Some(2),
            segment: vec![Segment { ensemble_member: vec![b"a\\b".to_vec(), b"x'y\"".to_vec()], first_entry_id: Some(0) }],
            digest_type: Some(4),
            password: Some((0..=255).collect()),
            ack_quorum_size: Some(1),
            ctime: Some(-1),
            custom_metadata: vec![CustomMetadataEntry { key: Some("ké".as_bytes().to_vec()), value: Some(vec![]) }],
            c_token: Some(9),
        };
        let mut out = Vec::new();
        print(&f, &mut out);
        assert_eq!(parse(&out, 0).unwrap(), f);
    }
}
