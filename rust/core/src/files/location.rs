//! Entry locations as indexes store them: `(entryLogId << 32) | offset`, where the
//! offset is that of the entry bytes, just after the record's size field (docs/formats.md#locations).

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    pub log_id: u32,
    pub offset: u32,
}

impl Location {
    /// A location; the offset must fit the 32 bits the encoding gives it.
    pub fn new(log_id: u32, offset: u64) -> Result<Location> {
        let offset = u32::try_from(offset)
            .map_err(|_| Error::invalid_argument(format!("entry offset {offset} does not fit the 32 bits of a location")))?;
        Ok(Location { log_id, offset })
    }

    /// Splits a stored location; 0 means "no entry" and gives `None`.
    pub fn from_raw(raw: i64) -> Option<Location> {
        (raw != 0).then(|| {
            let raw = raw as u64;
            Location { log_id: (raw >> 32) as u32, offset: raw as u32 }
        })
    }

    pub fn to_raw(self) -> i64 {
        (((self.log_id as u64) << 32) | self.offset as u64) as i64
    }

    /// Offset of the record's size field in the entry log.
    pub fn size_field_offset(self) -> Option<u64> {
        (self.offset as u64).checked_sub(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_golden_locations() {
        // From the golden open_log (log 0x2a) and index (log 7) manifests.
        let l = Location::from_raw(180388627460).unwrap();
        assert_eq!((l.log_id, l.offset), (42, 1028));
        assert_eq!(l.to_raw(), 180388627460);
        assert_eq!(Location::from_raw(30064772096).unwrap(), Location { log_id: 7, offset: 1024 });
        assert_eq!(Location::from_raw(0), None);
        let high = Location { log_id: u32::MAX, offset: u32::MAX };
        assert_eq!(Location::from_raw(high.to_raw()), Some(high));
        assert!(Location::new(1, 1 << 32).is_err());
        assert_eq!(Location::new(1, 4100).unwrap().size_field_offset(), Some(4096));
    }
}
