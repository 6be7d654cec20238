//! `.gitignore` and `.ignore` rules, as both walks apply them (the host's
//! search and the fs builtin's own walk): a directory's rules apply to
//! everything below it, a nested file's over its parents', `.ignore` over
//! `.gitignore` in one directory; the ignore files of the root's ancestors up
//! to the work dir apply too, and under them all the work dir's
//! `.git/info/exclude`. Git's syntax by the `ignore` crate's [`Gitignore`];
//! a line that is not a valid glob is left out. Each side reads the files its
//! own way (the host through directory handles, never through a symlink), at
//! most [`MAX_IGNORE_FILE`] bytes each.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore files read in each directory, the later one winning.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];
/// The repository's private ignore file, read at the work directory (the
/// weakest rules: any `.gitignore` or `.ignore` decides over it).
pub const EXCLUDE_FILE: &str = ".git/info/exclude";
/// Bytes read of one ignore file at most.
pub const MAX_IGNORE_FILE: u64 = 256 * 1024;

/// The rules in force in one directory: its own and its parents'.
#[derive(Debug)]
pub struct Rules {
    here: Gitignore,
    parent: Option<Arc<Rules>>,
}

/// The rules in force in the directory `dir`: `parent`'s, plus the lines of
/// its ignore files `files` (each path with the bytes read of it, the later
/// winning).
pub fn with_files(
    dir: &Path,
    parent: Option<Arc<Rules>>,
    files: &[(PathBuf, Vec<u8>)],
) -> Option<Arc<Rules>> {
    if files.is_empty() {
        return parent;
    }
    let mut builder = GitignoreBuilder::new(dir);
    for (path, bytes) in files {
        for line in String::from_utf8_lossy(bytes).lines() {
            let _ = builder.add_line(Some(path.clone()), line);
        }
    }
    match builder.build() {
        Ok(here) if !here.is_empty() => Some(Arc::new(Rules { here, parent })),
        _ => parent,
    }
}

/// Is `path` (a directory when `is_dir`) ignored? The innermost directory with
/// a rule for it decides.
pub fn is_ignored(rules: Option<&Rules>, path: &Path, is_dir: bool) -> bool {
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
