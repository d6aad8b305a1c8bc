//! Metadata format 1 (4.0-4.1): lines of text after the header (docs/formats.md#ledger-metadata).
//!
//! ```text
//! <writeQuorumSize>\n<ensembleSize>\n<length>\n
//! <firstEntryId>\t<bookie>\t<bookie>...\n     one line per ensemble
//! <lastEntryId>\tCLOSED                       closed; -102 means in recovery; absent when open
//! ```
//!
//! Reading follows `parseVersion1Config`: Java's `readLine` (`\n`, `\r` or `\r\n` end
//! a line), `split("\t")`, and the first line whose second field is `CLOSED` ends
//! the data; anything after it is ignored.

use super::{Ensemble, LedgerMetadata, LedgerState};
use crate::bookie_id::BookieId;
use crate::error::{Error, Result};
use crate::java_number::{parse_int, parse_long};

const CLOSED_TAG: &str = "CLOSED";
/// The last-entry id format 1 writes for a ledger in recovery.
const IN_RECOVERY_ENTRY_ID: i64 = -102;

/// Lines with the byte offset where each starts, split like `BufferedReader.readLine`.
fn lines(data: &[u8], start: usize) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    let mut pos = start;
    while pos < data.len() {
        let rest = &data[pos..];
        match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => {
                out.push((pos, &rest[..i]));
                let crlf = rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n');
                pos += i + if crlf { 2 } else { 1 };
            }
            None => {
                out.push((pos, rest));
                pos = data.len();
            }
        }
    }
    out
}

/// `line.split("\t")` with Java's trailing-empty rule, keeping each part's offset.
fn fields(offset: usize, line: &[u8]) -> Vec<(usize, &[u8])> {
    if !line.contains(&b'\t') {
        return vec![(offset, line)];
    }
    let mut out = Vec::new();
    let mut at = offset;
    for part in line.split(|&b| b == b'\t') {
        out.push((at, part));
        at += part.len() + 1;
    }
    while out.last().is_some_and(|(_, p)| p.is_empty()) {
        out.pop();
    }
    out
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

pub(super) fn decode(data: &[u8], body: usize) -> Result<LedgerMetadata> {
    let lines = lines(data, body);
    let mut it = lines.into_iter();
    let mut number_line = |what: &str| -> Result<(usize, String)> {
        match it.next() {
            Some((at, l)) => Ok((at, text(l).into_owned())),
            None => Err(Error::corrupt(data.len() as u64, format!("format 1 metadata ends before the {what} line"))),
        }
    };
    let (at, l) = number_line("write quorum")?;
    let write_quorum_size =
        parse_int(&l).ok_or_else(|| Error::corrupt(at as u64, format!("write quorum {l:?} is not an int")))?;
    let (at, l) = number_line("ensemble size")?;
    let ensemble_size =
        parse_int(&l).ok_or_else(|| Error::corrupt(at as u64, format!("ensemble size {l:?} is not an int")))?;
    let (at, l) = number_line("length")?;
    let closed_length = parse_long(&l).ok_or_else(|| Error::corrupt(at as u64, format!("length {l:?} is not a long")))?;

    let mut ensembles: Vec<Ensemble> = Vec::new();
    let mut state = LedgerState::Open;
    let (mut last_entry_id, mut length) = (-1, 0);
    for (at, line) in it {
        let parts = fields(at, line);
        if parts.len() < 2 {
            return Err(Error::corrupt(at as u64, format!(
                "format 1 line {:?} has no tab-separated second field",
                text(line)
            )));
        }
        let (id_at, id_text) = (parts[0].0, text(parts[0].1));
        if parts[1].1 == CLOSED_TAG.as_bytes() {
            let l = parse_long(&id_text)
                .ok_or_else(|| Error::corrupt(id_at as u64, format!("last entry id {id_text:?} is not a long")))?;
            if l == IN_RECOVERY_ENTRY_ID {
                state = LedgerState::InRecovery;
            } else {
                state = LedgerState::Closed;
                last_entry_id = l;
                length = closed_length;
            }
            break;
        }
        let bookies = parts[1..]
            .iter()
            .map(|&(b_at, b)| BookieId::parse_bytes(b).map_err(|e| Error::corrupt(b_at as u64, e.detail)))
            .collect::<Result<Vec<_>>>()?;
        let first_entry_id = parse_long(&id_text)
            .ok_or_else(|| Error::corrupt(id_at as u64, format!("first entry id {id_text:?} is not a long")))?;
        // The builder's per-ensemble checks, reported at the line that breaks them.
        if bookies.len() as i64 != ensemble_size as i64 {
            return Err(Error::corrupt(at as u64, format!(
                "ensemble at entry {first_entry_id} has {} bookies, the ensemble size is {ensemble_size}",
                bookies.len()
            )));
        }
        if let Some(prev) = ensembles.last() {
            if first_entry_id <= prev.first_entry_id {
                return Err(Error::corrupt(at as u64, format!(
                    "ensemble first entry ids must increase: {first_entry_id} follows {}",
                    prev.first_entry_id
                )));
            }
        }
        ensembles.push(Ensemble { first_entry_id, bookies });
    }
    let md = LedgerMetadata {
        format_version: 1,
        ensemble_size,
        write_quorum_size,
        ack_quorum_size: write_quorum_size,
        state,
        last_entry_id,
        length,
        ensembles,
        digest_type: None,
        password: None,
        ctime: None,
        custom_metadata: Vec::new(),
        ctoken: 0,
    };
    md.check().map_err(|why| Error::corrupt(body as u64, why))?;
    Ok(md)
}

pub(super) fn encode(md: &LedgerMetadata, out: &mut Vec<u8>) -> Result<()> {
    if md.state == LedgerState::Closed && md.last_entry_id == IN_RECOVERY_ENTRY_ID {
        // Java writes it anyway, and reads it back as "in recovery".
        return Err(Error::invalid_argument(
            "format 1 cannot record a closed ledger whose last entry id is -102 (it means in recovery)",
        ));
    }
    let mut s = String::with_capacity(128);
    s.push_str(&format!("{}\n{}\n{}\n", md.write_quorum_size, md.ensemble_size, md.length));
    for e in &md.ensembles {
        s.push_str(&e.first_entry_id.to_string());
        for b in &e.bookies {
            s.push('\t');
            s.push_str(b.as_str());
        }
        s.push('\n');
    }
    match md.state {
        LedgerState::InRecovery => s.push_str(&format!("{IN_RECOVERY_ENTRY_ID}\t{CLOSED_TAG}")),
        LedgerState::Closed => s.push_str(&format!("{}\t{CLOSED_TAG}", md.last_entry_id)),
        LedgerState::Open => {}
    }
    out.extend_from_slice(s.as_bytes());
    Ok(())
}
