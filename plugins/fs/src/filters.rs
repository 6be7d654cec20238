//! `find_files`' entry filters: `type` (file, dir or symlink) and
//! `modified_since` (unix seconds), validated before the search, which applies
//! them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use toolhost_guest::ToolError;
use toolhost_guest::search::EntryKind;

use crate::walk::Kind;

/// The values `type` accepts.
pub const TYPES: [&str; 3] = ["file", "dir", "symlink"];

/// Which entries `find_files` keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filters {
    /// The one kind kept, or `None`: files and symlinks (the default).
    kind: Option<Kind>,
    /// Kept only when modified at or after this time.
    since: Option<SystemTime>,
}

impl Filters {
    /// Check `type` (empty: files and symlinks) and `modified_since` (unix
    /// seconds, 0 for any time; `invalid_args` when it is not a plausible
    /// time).
    pub fn new(kind: &str, modified_since: i64) -> Result<Self, ToolError> {
        let kind = match kind.trim() {
            "" => None,
            "file" => Some(Kind::File),
            "dir" => Some(Kind::Dir),
            "symlink" => Some(Kind::Symlink),
            other => {
                return Err(ToolError::invalid_args(format!(
                    "type must be one of {} (got `{other}`)",
                    TYPES.join(", ")
                )));
            }
        };
        let since = match modified_since {
            0 => None,
            secs => {
                // Up to year 9999: anything later is a unit mistake (milliseconds?).
                let secs = u64::try_from(secs).ok().filter(|&s| s <= 253_402_300_799).ok_or_else(|| {
                    ToolError::invalid_args(format!(
                        "modified_since must be unix seconds between 0 and 253402300799 (got {secs}; \
                         milliseconds are too large)"
                    ))
                })?;
                Some(UNIX_EPOCH + Duration::from_secs(secs))
            }
        };
        Ok(Self { kind, since })
    }

    /// The one kind kept, as the search takes it (`None`: files and symlinks).
    pub fn kind(&self) -> Option<EntryKind> {
        self.kind.map(|kind| match kind {
            Kind::Dir => EntryKind::Dir,
            Kind::Symlink => EntryKind::Symlink,
            Kind::File | Kind::Other => EntryKind::File,
        })
    }

    /// The earliest modification time kept, in unix seconds.
    pub fn since(&self) -> Option<u64> {
        self.since.and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_guest::codes;

    #[test]
    fn types_and_times_are_validated() {
        assert_eq!(Filters::new("", 0).unwrap(), Filters { kind: None, since: None });
        assert_eq!(Filters::new(" dir ", 0).unwrap().kind, Some(Kind::Dir));
        let err = Filters::new("directory", 0).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.contains("file, dir, symlink"), "{}", err.message);
        assert_eq!(Filters::new("", -1).unwrap_err().code, codes::INVALID_ARGS);
        let err = Filters::new("", 1_700_000_000_000).unwrap_err();
        assert!(err.message.contains("milliseconds"), "{}", err.message);
        assert_eq!(Filters::new("", 1).unwrap().since, Some(UNIX_EPOCH + Duration::from_secs(1)));
    }
}
