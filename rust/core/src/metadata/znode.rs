//! Where a ledger's metadata lives: the ledger id is in the znode path (or etcd
//! key), not in the data (docs/formats.md#ledger-metadata, `StringUtils`, `EtcdUtils`).
//!
//! | layout | path of ledger 1 under `/ledgers` |
//! |---|---|
//! | flat | `/ledgers/L0000000001` (`L%010d`) |
//! | legacy hierarchical | `/ledgers/00/0000/L0001` (10 digits split 2-4-4) |
//! | long hierarchical | `/ledgers/000/0000/0000/0000/L0001` (19 digits split 3-4-4-4-4) |
//! | hierarchical (the default manager) | legacy form below `Integer.MAX_VALUE`, long form from there |
//! | etcd | `<scope>/ledgers/00000000-0000-0000-0000-000000000001` (`UUID(0, ledgerId)`) |

use crate::error::{Error, Result};

/// The ledger-manager layouts, named after the managers that use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZnodeLayout {
    Flat,
    LegacyHierarchical,
    LongHierarchical,
    /// `HierarchicalLedgerManager`: legacy below `Integer.MAX_VALUE`, long from there.
    Hierarchical,
    Etcd,
}

impl ZnodeLayout {
    pub const ALL: [ZnodeLayout; 5] = [
        ZnodeLayout::Flat,
        ZnodeLayout::LegacyHierarchical,
        ZnodeLayout::LongHierarchical,
        ZnodeLayout::Hierarchical,
        ZnodeLayout::Etcd,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            ZnodeLayout::Flat => "flat",
            ZnodeLayout::LegacyHierarchical => "legacy_hierarchical",
            ZnodeLayout::LongHierarchical => "long_hierarchical",
            ZnodeLayout::Hierarchical => "hierarchical",
            ZnodeLayout::Etcd => "etcd",
        }
    }

    pub fn from_name(name: &str) -> Result<ZnodeLayout> {
        ZnodeLayout::ALL.into_iter().find(|l| l.name() == name).ok_or_else(|| {
            Error::invalid_argument(format!(
                "unknown ledger layout {name:?} (expected flat, hierarchical, legacy_hierarchical, long_hierarchical or etcd)"
            ))
        })
    }

    /// The prefix the path goes under when none is given: the ZooKeeper ledgers
    /// root `/ledgers`, or an empty etcd scope.
    pub const fn default_prefix(self) -> &'static str {
        match self {
            ZnodeLayout::Etcd => "",
            _ => "/ledgers",
        }
    }
}

/// The path of a ledger's metadata. `prefix` is the ledgers root path for the
/// ZooKeeper layouts (e.g. `/ledgers`) and the scope for etcd (the key is
/// `<scope>/ledgers/<uuid>`). ZooKeeper layouts need a non-negative id, and the
/// legacy hierarchical one an id below 10^10 (its 10 digits).
pub fn ledger_znode_path(ledger_id: i64, layout: ZnodeLayout, prefix: &str) -> Result<String> {
    if layout != ZnodeLayout::Etcd && ledger_id < 0 {
        return Err(Error::invalid_argument(format!(
            "ledger id {ledger_id} is negative; only the etcd layout can name it"
        )));
    }
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    Ok(match layout {
        ZnodeLayout::Flat => format!("{prefix}/L{ledger_id:010}"),
        ZnodeLayout::LegacyHierarchical => {
            if ledger_id >= 10_000_000_000 {
                return Err(Error::invalid_argument(format!(
                    "ledger id {ledger_id} has more than 10 digits; the legacy hierarchical layout cannot hold it"
                )));
            }
            let d = format!("{ledger_id:010}");
            format!("{prefix}/{}/{}/L{}", &d[0..2], &d[2..6], &d[6..10])
        }
        ZnodeLayout::LongHierarchical => {
            let d = format!("{ledger_id:019}");
            format!("{prefix}/{}/{}/{}/{}/L{}", &d[0..3], &d[3..7], &d[7..11], &d[11..15], &d[15..19])
        }
        ZnodeLayout::Hierarchical => {
            let layout = if ledger_id < i32::MAX as i64 {
                ZnodeLayout::LegacyHierarchical
            } else {
                ZnodeLayout::LongHierarchical
            };
            return ledger_znode_path(ledger_id, layout, prefix);
        }
        ZnodeLayout::Etcd => {
            let l = ledger_id as u64;
            format!("{prefix}/ledgers/00000000-0000-0000-{:04x}-{:012x}", l >> 48, l & 0xffff_ffff_ffff)
        }
    })
}

fn all_digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

/// The ledger id and layout named by a path. Any prefix (the ledgers root, an etcd
/// scope, a dump directory) is allowed before the ledger part; `\` separators are
/// read as `/`. Ambiguity cannot arise: the layouts differ in their last components.
/// Hierarchical paths report the form they have (legacy or long).
pub fn parse_ledger_znode_path(path: &str) -> Result<(i64, ZnodeLayout)> {
    let normalized = path.replace('\\', "/");
    let parts: Vec<&str> = normalized.split('/').filter(|p| !p.is_empty()).collect();
    let not_ledger = || {
        Error::invalid_argument(format!(
            "{path:?} is not a ledger metadata path (flat L%010d, hierarchical 2-4-4 or 3-4-4-4-4, or etcd UUID)"
        ))
    };
    let Some(&last) = parts.last() else { return Err(not_ledger()) };
    let at = |back: usize| parts.len().checked_sub(back + 1).map(|i| parts[i]);
    let number = |digits: String| {
        digits.parse::<i64>().map_err(|_| Error::invalid_argument(format!("{path:?} names a ledger id beyond 2^63-1")))
    };

    if let Some(id) = parse_uuid_ledger(last) {
        return id.map(|id| (id, ZnodeLayout::Etcd)).map_err(|why| {
            Error::invalid_argument(format!("{path:?}: {why}"))
        });
    }
    let Some(leaf) = last.strip_prefix('L') else { return Err(not_ledger()) };
    if all_digits(leaf, 4) {
        let level = |i: usize, n: usize| at(i).filter(|p| all_digits(p, n));
        if let (Some(a), Some(b)) = (level(2, 2), level(1, 4)) {
            return Ok((number(format!("{a}{b}{leaf}"))?, ZnodeLayout::LegacyHierarchical));
        }
        if let (Some(a), Some(b), Some(c), Some(d)) = (level(4, 3), level(3, 4), level(2, 4), level(1, 4)) {
            return Ok((number(format!("{a}{b}{c}{d}{leaf}"))?, ZnodeLayout::LongHierarchical));
        }
        return Err(not_ledger());
    }
    // Flat: at least 10 digits (ids from 10^10 on print longer).
    if leaf.len() >= 10 && leaf.bytes().all(|b| b.is_ascii_digit()) {
        return Ok((number(leaf.to_string())?, ZnodeLayout::Flat));
    }
    Err(not_ledger())
}

/// The `(scope, ledger id)` a path's last component names when it is a UUID whose
/// high half is a BP-35 scope (not 0): `UUID(scope, ledgerId)`, as the etcd layout
/// would key a scoped ledger. `None` for anything else.
pub fn scoped_ledger_from_path(path: &str) -> Option<(i64, i64)> {
    let last = path.rsplit(['/', '\\']).next()?;
    let (msb, lsb) = uuid_halves(last)?;
    (msb != 0).then_some((msb as i64, lsb as i64))
}

fn uuid_halves(s: &str) -> Option<(u64, u64)> {
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if groups.len() != 5
        || groups.iter().zip(lens).any(|(g, n)| g.len() != n || !g.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return None;
    }
    let msb = u64::from_str_radix(&groups[..3].concat(), 16).ok()?;
    let lsb = u64::from_str_radix(&groups[3..].concat(), 16).ok()?;
    Some((msb, lsb))
}

/// A canonical 8-4-4-4-12 UUID (either case) as `Some(Ok(lsb))`, `Some(Err)` when
/// its high half (the BP-35 scope) is not 0, `None` when it is no UUID.
fn parse_uuid_ledger(s: &str) -> Option<std::result::Result<i64, String>> {
    let (msb, lsb) = uuid_halves(s)?;
    if msb != 0 {
        return Some(Err(format!(
            "etcd key has scope {:#x} in its high half; only scope 0 names a 64-bit ledger id",
            msb
        )));
    }
    Some(Ok(lsb as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_every_layout() {
        let p = |id, l| ledger_znode_path(id, l, "/ledgers").unwrap();
        assert_eq!(p(1, ZnodeLayout::Flat), "/ledgers/L0000000001");
        assert_eq!(p(12345678901, ZnodeLayout::Flat), "/ledgers/L12345678901");
        assert_eq!(p(1, ZnodeLayout::LegacyHierarchical), "/ledgers/00/0000/L0001");
        assert_eq!(p(1234567890, ZnodeLayout::LegacyHierarchical), "/ledgers/12/3456/L7890");
        assert_eq!(p(1, ZnodeLayout::LongHierarchical), "/ledgers/000/0000/0000/0000/L0001");
        assert_eq!(p(i64::MAX, ZnodeLayout::LongHierarchical), "/ledgers/922/3372/0368/5477/L5807");
        assert_eq!(p(i32::MAX as i64 - 1, ZnodeLayout::Hierarchical), "/ledgers/21/4748/L3646");
        assert_eq!(p(i32::MAX as i64, ZnodeLayout::Hierarchical), "/ledgers/000/0000/0021/4748/L3647");
        assert_eq!(
            ledger_znode_path(1, ZnodeLayout::Etcd, "").unwrap(),
            "/ledgers/00000000-0000-0000-0000-000000000001"
        );
        assert_eq!(
            ledger_znode_path(-1, ZnodeLayout::Etcd, "/bk").unwrap(),
            "/bk/ledgers/00000000-0000-0000-ffff-ffffffffffff"
        );
        assert_eq!(
            ledger_znode_path(0x0123456789abcdef, ZnodeLayout::Etcd, "s/").unwrap(),
            "s/ledgers/00000000-0000-0000-0123-456789abcdef"
        );
        assert!(ledger_znode_path(-1, ZnodeLayout::Flat, "/ledgers").is_err());
        assert!(ledger_znode_path(10_000_000_000, ZnodeLayout::LegacyHierarchical, "/ledgers").is_err());
    }

    #[test]
    fn parses_back_every_layout() {
        for id in [0, 1, 42, 9_999, 2_147_483_646, 2_147_483_647, 9_999_999_999, 10_000_000_000, i64::MAX] {
            for layout in ZnodeLayout::ALL {
                let Ok(path) = ledger_znode_path(id, layout, layout.default_prefix()) else { continue };
                let (back, seen) = parse_ledger_znode_path(&path).unwrap();
                assert_eq!(back, id, "{path}");
                match layout {
                    ZnodeLayout::Hierarchical => {
                        assert!(matches!(seen, ZnodeLayout::LegacyHierarchical | ZnodeLayout::LongHierarchical))
                    }
                    _ => assert_eq!(seen, layout, "{path}"),
                }
            }
        }
        assert_eq!(parse_ledger_znode_path("dump\\ledgers\\00\\0000\\L0042").unwrap().0, 42);
        assert_eq!(parse_ledger_znode_path("L0000000007").unwrap().0, 7);
        assert_eq!(parse_ledger_znode_path("x/00000000-0000-0000-FFFF-FFFFFFFFFFFF").unwrap().0, -1);
    }

    #[test]
    fn rejects_what_is_not_a_ledger_path() {
        for bad in [
            "", "/", "/ledgers", "/ledgers/LAYOUT", "/ledgers/INSTANCEID", "/ledgers/L0001", "/ledgers/0/0000/L0001",
            "/ledgers/idgen/ID-0000000001", "/ledgers/L123", "/ledgers/00/0000/L00x1",
            "/ledgers/999/9999/9999/9999/L9999", "/ledgers/00000000-0000-0001-0000-000000000001",
            "/ledgers/0000000-00000-0000-0000-000000000001", "/ledgers/L99999999999999999999",
        ] {
            assert!(parse_ledger_znode_path(bad).is_err(), "{bad:?}");
        }
    }
}
