//! `find_files`' entry filters: `type` (file, dir or symlink) and
//! `modified_since` (unix seconds), validated without I/O before the walk.

use std::fs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use toolhost_guest::ToolError;

use crate::walk::{Entry, Kind};

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

    /// Does `entry` pass the kind filter (no I/O)?
    pub fn kind_matches(&self, entry: &Entry) -> bool {
        match self.kind {
            None => matches!(entry.kind, Kind::File | Kind::Symlink),
            Some(kind) => entry.kind == kind,
        }
    }

    /// Does `entry` pass the time filter? Stats the entry (not following a
    /// symlink) only when there is one; an entry that cannot be stated does
    /// not pass.
    pub fn time_matches(&self, entry: &Entry) -> bool {
        let Some(since) = self.since else { return true };
        fs::symlink_metadata(&entry.path).and_then(|m| m.modified()).is_ok_and(|t| t >= since)
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

    #[test]
    fn times_compare_with_the_entry_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "").unwrap();
        let entry = Entry { path, depth: 1, kind: Kind::File };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let now = i64::try_from(now).unwrap();
        assert!(Filters::new("", now - 3600).unwrap().time_matches(&entry));
        assert!(!Filters::new("", now + 3600).unwrap().time_matches(&entry));
        let gone = Entry { path: dir.path().join("gone"), depth: 1, kind: Kind::File };
        assert!(!Filters::new("", 1).unwrap().time_matches(&gone));
        assert!(Filters::new("", 0).unwrap().time_matches(&gone), "no stat without a filter");
    }
}
