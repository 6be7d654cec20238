//! [`Protected`] paths: what no tool may change, whichever way it writes — a path
//! argument (the host's permissions), WASI from inside a guest (the host's
//! `wasi_fs`), or a child process (here: read-only bind mounts, the merge's refusals).
//! Defined here, with the children, and passed in by the host.
//!
//! Three kinds, all judged on the *resolved* host path (symlinks followed by the
//! caller):
//! - **git**: a `.git` at any depth of the work dir (a directory, or a `.git` file
//!   pointing elsewhere). Creating, removing or renaming one is always refused, and
//!   so is any change beneath it that could make git run code or read another
//!   repository (hooks, config, info, `commondir`, modules, worktrees, …). Only
//!   repository data (objects, refs, logs, the index, `HEAD`, …) may change, and only
//!   for a call whose grant allows commits.
//! - **host files**: the policy file, and the host's own config, cache and data
//!   dirs when they lie inside the work dir (a cache entry is code the host loads).
//! - **globs**: the policy's `protected` patterns, relative to the work dir.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Entries directly beneath `.git` that a call granted commits may change: the
/// repository's data. Anything else there (hooks, config, info, commondir,
/// modules, worktrees, …) is never written by a tool — nor the state of a rebase or
/// cherry-pick in progress (`rebase-merge`, `rebase-apply`, `sequencer`), whose todo
/// lists can hold `exec` lines that git runs unconfined on `--continue`.
const GIT_DATA: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "index",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "COMMIT_EDITMSG",
    "packed-refs",
    "shallow",
];

/// Where a path sits relative to a `.git`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GitPart {
    /// The `.git` entry itself (creating, removing or renaming it).
    Entry,
    /// Beneath it, where git finds code to run or another repository to trust.
    Guarded,
    /// Repository data beneath it (objects, refs, the index, …).
    Data,
}

/// The protected paths of one host: built once, shared by every call.
#[derive(Debug, Clone)]
pub struct Protected {
    work_dir: PathBuf,
    files: Vec<PathBuf>,
    globs: Option<GlobSet>,
    patterns: Vec<String>,
}

impl Protected {
    /// Protection for the canonical work dir `work_dir`: `.git` at any depth.
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self { work_dir: work_dir.into(), files: Vec::new(), globs: None, patterns: Vec::new() }
    }

    /// Also protect these globs, relative to the work dir (`secrets/` protects what is
    /// beneath it too).
    pub fn with_globs(mut self, patterns: &[String]) -> Result<Self, String> {
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            let base = pattern.trim_end_matches('/');
            for glob in [base.to_string(), format!("{base}/**")] {
                set.add(
                    GlobBuilder::new(&glob)
                        .literal_separator(true)
                        .build()
                        .map_err(|e| format!("protected path `{pattern}`: {e}"))?,
                );
            }
        }
        self.globs = Some(set.build().map_err(|e| e.to_string())?);
        self.patterns = patterns.to_vec();
        Ok(self)
    }

    /// Also protect `path` (absolute; a directory protects what is beneath it). Its
    /// parent is canonicalized when it exists, so the path is the one tools reach.
    pub fn add(&mut self, path: &Path) {
        let path = canonical_parent(path);
        if !self.files.contains(&path) {
            self.files.push(path);
        }
    }

    /// The work dir these paths are judged against.
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// The protected host files and dirs (absolute).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The `protected` globs as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether `rel` (relative to the work dir) matches a `protected` glob.
    pub fn matches_glob(&self, rel: &Path) -> bool {
        self.globs.as_ref().is_some_and(|set| set.is_match(rel))
    }

    /// Why changing the host path `path` (absolute, resolved) is refused, if it is.
    /// `commit`: the call may change repository data beneath a `.git`.
    pub fn check(&self, path: &Path, commit: bool) -> Option<String> {
        if let Some(file) = self.files.iter().find(|f| path.starts_with(f)) {
            return Some(format!("{} is a protected path", shown(file, &self.work_dir)));
        }
        let rel = path.strip_prefix(&self.work_dir).ok()?;
        self.check_rel(rel, commit)
    }

    /// [`Self::check`] for a path relative to the work dir (already normalized and
    /// resolved; no `..`).
    pub fn check_rel(&self, rel: &Path, commit: bool) -> Option<String> {
        match git_part(rel) {
            Some(GitPart::Entry | GitPart::Guarded) => {
                return Some(format!("{} is a protected path (.git)", rel.display()));
            }
            Some(GitPart::Data) if !commit => {
                return Some(format!("{} is a protected path (.git)", rel.display()));
            }
            _ => {}
        }
        if self.matches_glob(rel) {
            return Some(format!("{} is a protected path", rel.display()));
        }
        let abs = self.work_dir.join(rel);
        if let Some(file) = self.files.iter().find(|f| abs.starts_with(f)) {
            return Some(format!("{} is a protected path", shown(file, &self.work_dir)));
        }
        None
    }
}

/// Whether `name` is `.git` (in any case: some filesystems fold it).
pub(crate) fn is_git_name(name: &OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

/// Where `rel` sits relative to the first `.git` in it, if it has one.
pub(crate) fn git_part(rel: &Path) -> Option<GitPart> {
    let mut components = rel.components().skip_while(|c| !is_git_name(c.as_os_str()));
    components.next()?;
    let Some(Component::Normal(next)) = components.next() else { return Some(GitPart::Entry) };
    let next = next.as_encoded_bytes();
    let data = GIT_DATA.iter().any(|d| {
        let d = d.as_bytes();
        next == d || next.strip_suffix(b".lock") == Some(d)
    });
    Some(if data { GitPart::Data } else { GitPart::Guarded })
}

/// `path` with its parent canonicalized (when it exists).
fn canonical_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            parent.canonicalize().map(|p| p.join(name)).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// `path` relative to `work_dir` when inside it, else whole.
fn shown(path: &Path, work_dir: &Path) -> String {
    path.strip_prefix(work_dir).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_parts() {
        let part = |p: &str| git_part(Path::new(p));
        assert_eq!(part("src/main.rs"), None);
        assert_eq!(part(".git"), Some(GitPart::Entry));
        assert_eq!(part("sub/deep/.git"), Some(GitPart::Entry));
        assert_eq!(part(".GIT"), Some(GitPart::Entry));
        for guarded in [
            ".git/hooks/pre-commit",
            ".git/config",
            ".git/info/attributes",
            ".git/commondir",
            ".git/modules/x/hooks/post-checkout",
            ".git/worktrees/w/config.worktree",
            "a/.git/config.lock",
            ".git/rebase-merge/git-rebase-todo",
            ".git/sequencer/todo",
        ] {
            assert_eq!(part(guarded), Some(GitPart::Guarded), "{guarded}");
        }
        for data in
            [".git/objects/ab/cdef", ".git/index", ".git/index.lock", ".git/refs/heads/main", ".git/HEAD"]
        {
            assert_eq!(part(data), Some(GitPart::Data), "{data}");
        }
    }

    #[test]
    fn checks() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        let mut p = Protected::new(&work).with_globs(&["keys/".into(), "*.pem".into()]).unwrap();
        p.add(&work.join("toolhost.toml"));
        p.add(&work.join("cache"));
        let refused = |rel: &str, commit: bool| p.check(&work.join(rel), commit).is_some();
        assert!(refused(".git/hooks/pre-commit", true));
        assert!(refused(".git/objects/x", false));
        assert!(!refused(".git/objects/x", true));
        assert!(refused("toolhost.toml", false));
        assert!(refused("cache/abc.cwasm", false));
        assert!(refused("keys/id", false));
        assert!(refused("keys", false));
        assert!(refused("a.pem", false));
        assert!(!refused("sub/a.pem", false));
        assert!(!refused("src/lib.rs", false));
        assert!(!refused("toolhost.toml.bak", false));
        // Outside the work dir only the host files count.
        assert!(p.check(Path::new("/elsewhere/.git/config"), false).is_none());
    }
}
