//! How a reader is told the digest type of entries: named for every entry, or
//! inferred (see `digest_check.rs`, which applies the policy).

use crate::digest::DigestType;
use crate::error::Result;

/// How the digest type of an entry is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DigestPolicy {
    /// Every entry uses this type; a V2 entry that declares another one is a
    /// `DigestTypeMismatch`.
    Fixed(DigestType),
    /// V2 entries use the type they declare; V1 entries are inferred per ledger.
    Auto,
}

impl DigestPolicy {
    /// `None` or `"auto"` is [`DigestPolicy::Auto`]; anything else must name a digest type.
    pub fn from_name(name: Option<&str>) -> Result<Self> {
        match name {
            None => Ok(DigestPolicy::Auto),
            Some(n) if n.eq_ignore_ascii_case("auto") => Ok(DigestPolicy::Auto),
            Some(n) => DigestType::from_name(n).map(DigestPolicy::Fixed),
        }
    }

    /// The named type, if the policy names one.
    pub fn fixed(self) -> Option<DigestType> {
        match self {
            DigestPolicy::Fixed(dt) => Some(dt),
            DigestPolicy::Auto => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn policy_names() {
        assert_eq!(DigestPolicy::from_name(None).unwrap(), DigestPolicy::Auto);
        assert_eq!(DigestPolicy::from_name(Some("AUTO")).unwrap(), DigestPolicy::Auto);
        assert_eq!(DigestPolicy::from_name(Some("crc32c")).unwrap(), DigestPolicy::Fixed(DigestType::Crc32c));
        assert_eq!(DigestPolicy::from_name(Some("md5")).unwrap_err().kind, ErrorKind::InvalidArgument);
    }
}
