//! Java's `Integer.parseInt`, `Long.parseLong` and `String.split` rules, which the
//! BookKeeper text formats inherit (metadata format 1, the metadata header, and
//! `BookieSocketAddress`). Matching them means accepting what BookKeeper accepts:
//! a leading `+`, leading zeros, `-0`.
//!
//! One deliberate difference: Java also takes non-ASCII decimal digits (`Character.digit`);
//! these reject them. BookKeeper never writes them, and every caller validates the
//! surrounding text as ASCII or rejects it anyway.

/// `Integer.parseInt(s)`: optional sign, at least one ASCII digit, within i32.
pub fn parse_int(s: &str) -> Option<i32> {
    parse_long(s).and_then(|v| i32::try_from(v).ok())
}

/// `Long.parseLong(s)`: optional sign, at least one ASCII digit, within i64.
pub fn parse_long(s: &str) -> Option<i64> {
    parse_radix(s, 10).and_then(|v| i64::try_from(v).ok())
}

/// Sign and digits in `radix` as an i128, or `None` for an empty, malformed or
/// absurdly long number. Java range checks are left to the caller.
pub fn parse_radix(s: &str, radix: u32) -> Option<i128> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i128 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix)?;
        value = value.checked_mul(radix as i128)?.checked_add(d as i128)?;
    }
    Some(if negative { -value } else { value })
}

/// `s.split(sep)` for a single-character separator: empty leading parts are
/// kept, trailing empty parts are dropped (so `"a:"` gives `["a"]` and `"::"` gives `[]`),
/// and a string without the separator is returned whole (so `""` gives `[""]`).
pub fn split_dropping_trailing_empty(s: &str, sep: char) -> Vec<&str> {
    if !s.contains(sep) {
        return vec![s];
    }
    let mut parts: Vec<&str> = s.split(sep).collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_int_follows_java() {
        assert_eq!(parse_int("3181"), Some(3181));
        assert_eq!(parse_int("+3181"), Some(3181));
        assert_eq!(parse_int("-1"), Some(-1));
        assert_eq!(parse_int("007"), Some(7));
        assert_eq!(parse_int("2147483647"), Some(i32::MAX));
        assert_eq!(parse_int("-2147483648"), Some(i32::MIN));
        for bad in ["", "+", "-", "2147483648", "1 ", " 1", "0x10", "1.0", "١"] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parse_long_range() {
        assert_eq!(parse_long("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_long("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_long("9223372036854775808"), None);
        assert_eq!(parse_long("99999999999999999999999999999999999999999999"), None);
    }

    #[test]
    fn split_drops_only_trailing_empties() {
        assert_eq!(split_dropping_trailing_empty("a:b", ':'), ["a", "b"]);
        assert_eq!(split_dropping_trailing_empty("a:", ':'), ["a"]);
        assert_eq!(split_dropping_trailing_empty(":1", ':'), ["", "1"]);
        assert_eq!(split_dropping_trailing_empty("a::b", ':'), ["a", "", "b"]);
        assert!(split_dropping_trailing_empty("::::", ':').is_empty());
        assert_eq!(split_dropping_trailing_empty("", ':'), [""]);
    }
}
