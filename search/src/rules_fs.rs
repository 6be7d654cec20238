//! The ignore files as the host's search reads them ([`crate::rules`]): each
//! through its directory's handle, a regular file only, never through a
//! symlink, at most [`MAX_IGNORE_FILE`] bytes.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

use crate::fsops;
use crate::rules::{EXCLUDE_FILE, IGNORE_FILES, MAX_IGNORE_FILE, Rules, with_files};

/// The rules in force in the directory `dir` (host path `dir_path`): `parent`'s
/// plus those of the ignore files named in `present`.
pub(crate) fn enter(
    dir_path: &Path,
    dir: BorrowedFd<'_>,
    parent: Option<Arc<Rules>>,
    present: &[&str],
) -> Option<Arc<Rules>> {
    let files: Vec<_> = IGNORE_FILES
        .iter()
        .filter(|n| present.contains(n))
        .filter_map(|name| {
            Some((dir_path.join(name), fsops::read_small(dir, OsStr::new(name), MAX_IGNORE_FILE)?))
        })
        .collect();
    with_files(dir_path, parent, &files)
}

/// The rules of the work dir's `.git/info/exclude`, when `.git` and `info` are
/// real directories and the file a regular one.
fn exclude(top_path: &Path, top: BorrowedFd<'_>) -> Option<Arc<Rules>> {
    let info = fsops::open_dir(top, Path::new(".git/info")).ok()?;
    let bytes = fsops::read_small(info.as_fd(), OsStr::new("exclude"), MAX_IGNORE_FILE)?;
    with_files(top_path, None, &[(top_path.join(EXCLUDE_FILE), bytes)])
}

/// The rules in force in the walked root `rel` (relative to the work dir
/// `top`, host path `top_path`) before its own files: its ancestors' files over
/// the exclude file.
pub(crate) fn above(top_path: &Path, top: &cap_std::fs::Dir, rel: &Path) -> Option<Arc<Rules>> {
    let mut rules = exclude(top_path, top.as_fd());
    let mut dir_path = top_path.to_path_buf();
    let mut here: Option<cap_std::fs::Dir> = None;
    for part in rel.components() {
        let handle = here.as_ref().map_or(top.as_fd(), AsFd::as_fd);
        rules = enter(&dir_path, handle, rules, &IGNORE_FILES);
        dir_path.push(part);
        let next = match &here {
            None => top.open_dir(part),
            Some(dir) => dir.open_dir(part),
        };
        here = Some(next.ok()?);
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::is_ignored;

    #[test]
    fn the_exclude_file_is_read_only_through_real_directories() {
        let (top, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir_all(top.path().join(".git/info")).unwrap();
        std::fs::write(top.path().join(".git/info/exclude"), "*.local\n").unwrap();
        std::fs::create_dir(top.path().join("sub")).unwrap();
        std::fs::write(top.path().join(".gitignore"), "*.tmp\n").unwrap();
        let dir = cap_std::fs::Dir::open_ambient_dir(top.path(), cap_std::ambient_authority()).unwrap();
        let rules = above(top.path(), &dir, Path::new("sub"));
        assert!(is_ignored(rules.as_deref(), &top.path().join("sub/a.local"), false));
        assert!(is_ignored(rules.as_deref(), &top.path().join("sub/a.tmp"), false));
        assert!(!is_ignored(rules.as_deref(), &top.path().join("sub/a.rs"), false));
        std::os::unix::fs::symlink(top.path().join(".git"), other.path().join(".git")).unwrap();
        let linked = cap_std::fs::Dir::open_ambient_dir(other.path(), cap_std::ambient_authority()).unwrap();
        assert!(above(other.path(), &linked, Path::new("")).is_none(), "a symlinked .git is not read");
    }
}
