//! How much a call's writing children grew the work dir: the bytes of its regular
//! files summed before the first child starts and after it is reaped, the growth
//! charged to the call's write quota. `RLIMIT_FSIZE` holds each file a child writes
//! to what is left of the quota; this catches many files that each stay under it.
//!
//! The walk never follows a symlink and stops at [`MAX_ENTRIES`] entries: past that
//! the work dir is not measured (the per-file limit still holds) rather than a call
//! paying for a walk of a huge tree twice.

use std::path::Path;

/// The most entries one measure of the work dir visits.
pub(super) const MAX_ENTRIES: usize = 200_000;

/// The bytes of the regular files beneath `root`, or `None` past `max_entries`
/// entries. What cannot be read (a directory removed meanwhile, one the host may
/// not list) counts as empty.
pub(super) fn tree_bytes(root: &Path, max_entries: usize) -> Option<u64> {
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return None;
            }
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file() {
                // `DirEntry::metadata` does not follow symlinks.
                total = total.saturating_add(entry.metadata().map_or(0, |m| m.len()));
            }
        }
    }
    Some(total)
}

/// [`tree_bytes`] up to [`MAX_ENTRIES`], off the async threads.
pub(super) async fn measure(root: &Path) -> Option<u64> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || tree_bytes(&root, MAX_ENTRIES)).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_summed_and_symlinks_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![0u8; 1000]).unwrap();
        std::fs::create_dir_all(dir.path().join("d/e")).unwrap();
        std::fs::write(dir.path().join("d/e/b"), vec![0u8; 24]).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![0u8; 5000]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("big"), dir.path().join("flink")).unwrap();
        assert_eq!(tree_bytes(dir.path(), MAX_ENTRIES), Some(1024));
    }

    #[test]
    fn a_tree_past_the_bound_is_not_measured() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::write(dir.path().join(i.to_string()), b"x").unwrap();
        }
        assert_eq!(tree_bytes(dir.path(), 10), Some(10));
        assert_eq!(tree_bytes(dir.path(), 9), None);
    }
}
