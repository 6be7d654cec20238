//! `.gitignore` and `.ignore` files, as the guest walk reads them: a
//! directory's rules apply to everything below it, a nested file's over its
//! parents', `.ignore` over `.gitignore` in one directory; the ignore files of
//! the root's ancestors up to the work dir apply too, and under them all the
//! work dir's `.git/info/exclude`. Git's syntax by the `ignore` crate's
//! [`Gitignore`]. Each file is read through its directory's handle (a regular
//! file only, never through a symlink), at most [`MAX_IGNORE_FILE`] bytes; a
//! line that is not a valid glob is left out.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::fsops;

/// The ignore files read in each directory, the later one winning.
pub(crate) const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];
/// Bytes read of one ignore file at most.
pub(crate) const MAX_IGNORE_FILE: u64 = 256 * 1024;

/// The rules in force in one directory: its own and its parents'.
#[derive(Debug)]
pub(crate) struct Rules {
    here: Gitignore,
    parent: Option<Arc<Rules>>,
}

/// The rules in force in the directory `dir` (host path `dir_path`): `parent`'s
/// plus those of the ignore files named in `present`.
pub(crate) fn enter(
    dir_path: &Path,
    dir: BorrowedFd<'_>,
    parent: Option<Arc<Rules>>,
    present: &[&str],
) -> Option<Arc<Rules>> {
    if present.is_empty() {
        return parent;
    }
    let mut builder = GitignoreBuilder::new(dir_path);
    for name in IGNORE_FILES.iter().filter(|n| present.contains(n)) {
        if let Some(bytes) = fsops::read_small(dir, OsStr::new(name), MAX_IGNORE_FILE) {
            add_lines(&mut builder, &dir_path.join(name), &bytes);
        }
    }
    build(builder, parent)
}

fn add_lines(builder: &mut GitignoreBuilder, path: &Path, bytes: &[u8]) {
    for line in String::from_utf8_lossy(bytes).lines() {
        let _ = builder.add_line(Some(path.to_path_buf()), line);
    }
}

fn build(builder: GitignoreBuilder, parent: Option<Arc<Rules>>) -> Option<Arc<Rules>> {
    match builder.build() {
        Ok(here) if !here.is_empty() => Some(Arc::new(Rules { here, parent })),
        _ => parent,
    }
}

/// The rules of the work dir's `.git/info/exclude`, when `.git` and `info` are
/// real directories and the file a regular one.
fn exclude(top_path: &Path, top: BorrowedFd<'_>) -> Option<Arc<Rules>> {
    let info = fsops::open_dir(top, Path::new(".git/info")).ok()?;
    let bytes = fsops::read_small(info.as_fd(), OsStr::new("exclude"), MAX_IGNORE_FILE)?;
    let mut builder = GitignoreBuilder::new(top_path);
    add_lines(&mut builder, &top_path.join(".git/info/exclude"), &bytes);
    build(builder, None)
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

/// Is `path` (a directory when `is_dir`) ignored? The innermost directory with
/// a rule for it decides.
pub(crate) fn is_ignored(rules: Option<&Rules>, path: &Path, is_dir: bool) -> bool {
    let mut at = rules;
    while let Some(rules) = at {
        let m = rules.here.matched(path, is_dir);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
        at = rules.parent.as_deref();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

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
