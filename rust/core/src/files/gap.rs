//! Byte spans between records that hold no record: padding and preallocated zeros
//! (normal), or damage (torn tails, bad size fields, garbage). Scanners report every
//! such span with its absolute offset and keep going.

/// Why a span of a bookie file holds no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GapKind {
    /// 0xF0 bytes a direct-I/O entry logger writes up to the next 4 KiB boundary at each flush.
    Padding,
    /// Zeros running to the end of the file: preallocated space after the last record.
    TrailingZeros,
    /// Zeros where a record was expected, with more data after them.
    Zeros,
    /// The file is shorter than its header.
    TornHeader,
    /// The header's magic or version is not one this format uses.
    BadHeader,
    /// The last record runs past the end of the file.
    TornRecord,
    /// A size field that cannot be right: negative, too small, past the end of the
    /// file while records follow, or disagreeing with where the next record starts.
    BadSize,
    /// The size field frames, but what it frames is not a record (implausible ids,
    /// inconsistent lengths in a map, padding or meta record).
    BadRecord,
    /// Bytes that are none of the above, between the end of a damaged span and the next record.
    Garbage,
    /// The file ends before what its header says it holds (a rolled log cut short
    /// before its ledgers map).
    Truncated,
    /// The file shrank while it was being read: the bytes from here vanished.
    Shrank,
    /// The operating system could not read these bytes.
    Unreadable,
    /// A record inside a log's ledgers map that is not a map record.
    InsideMap,
    /// A journal's records end before the position `lastMark` says was written.
    BeforeLastMark,
}

impl GapKind {
    /// Stable snake_case name, used in Arrow columns.
    pub const fn as_str(self) -> &'static str {
        match self {
            GapKind::Padding => "padding",
            GapKind::TrailingZeros => "trailing_zeros",
            GapKind::Zeros => "zeros",
            GapKind::TornHeader => "torn_header",
            GapKind::BadHeader => "bad_header",
            GapKind::TornRecord => "torn_record",
            GapKind::BadSize => "bad_size",
            GapKind::BadRecord => "bad_record",
            GapKind::Garbage => "garbage",
            GapKind::Truncated => "truncated",
            GapKind::Shrank => "file_shrank",
            GapKind::Unreadable => "unreadable",
            GapKind::InsideMap => "inside_map",
            GapKind::BeforeLastMark => "before_last_mark",
        }
    }

    /// Every kind, for listing their names.
    pub const ALL: [GapKind; 14] = [
        GapKind::Padding,
        GapKind::TrailingZeros,
        GapKind::Zeros,
        GapKind::TornHeader,
        GapKind::BadHeader,
        GapKind::TornRecord,
        GapKind::BadSize,
        GapKind::BadRecord,
        GapKind::Garbage,
        GapKind::Truncated,
        GapKind::Shrank,
        GapKind::Unreadable,
        GapKind::InsideMap,
        GapKind::BeforeLastMark,
    ];

    /// Whether the span means data was damaged or lost. Padding and trailing zeros
    /// are what the writers leave behind in healthy files.
    pub const fn is_damage(self) -> bool {
        !matches!(self, GapKind::Padding | GapKind::TrailingZeros)
    }

    /// One sentence for error messages and reports.
    pub const fn describe(self) -> &'static str {
        match self {
            GapKind::Padding => "0xF0 padding up to a 4 KiB boundary",
            GapKind::TrailingZeros => "zeros to the end of the file (preallocated space)",
            GapKind::Zeros => "zeros where a record was expected, followed by more data",
            GapKind::TornHeader => "file shorter than its header",
            GapKind::BadHeader => "header magic or version is not valid",
            GapKind::TornRecord => "record runs past the end of the file",
            GapKind::BadSize => "size field is wrong (negative, too small, past the end, or overlapping the next record)",
            GapKind::BadRecord => "size field frames bytes that are not a valid record",
            GapKind::Garbage => "unrecognised bytes before the next record",
            GapKind::Truncated => "the file ends before what its header says it holds",
            GapKind::Shrank => "the file shrank while being read",
            GapKind::Unreadable => "the operating system could not read these bytes",
            GapKind::InsideMap => "a record inside the ledgers map that is not a map record",
            GapKind::BeforeLastMark => "the journal's records end before the position lastMark says was written",
        }
    }
}

impl std::fmt::Display for GapKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A span `[offset, offset + len)` of a file that holds no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gap {
    pub offset: u64,
    pub len: u64,
    pub kind: GapKind,
}

impl Gap {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}
