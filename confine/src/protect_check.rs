//! What bind mounts cannot stop: *creating* a protected path — a new `.git` (a
//! directory, a `.git` file pointing at a repository made elsewhere, a symlink), a
//! missing guarded entry like `.git/hooks` under a commit grant, a new match of a
//! `protected` glob, a missing host file — and moving one by renaming a directory
//! above it. [`Watch`] remembers the walk made before a writing child started and,
//! once the child's whole process tree is dead, walks again and compares:
//!
//! - an entry that is new is removed (never following a symlink, parents opened one
//!   by one without following links either) and reported — only the entry named
//!   `.git` (or matching a glob, or a guarded name), never the directory a new
//!   `.git` file or symlink points to, which may be anything;
//! - a protected symlink that was removed or replaced is put back;
//! - an entry that moved (same inode, another path) is reported, not undone: its
//!   contents are intact, and moving it back could clobber what is there now.
//!
//! Any of these fails the call with `permission_denied`, naming the paths.
//!
//! Not covered: the window between the child's end and this check (a host that
//! crashes there leaves what was created), and bare repositories (a directory that
//! is a repository without being named `.git`: git runs its hooks when a user works
//! inside it). Calls that write run one at a time in a batch; two calls started in
//! parallel each check against their own walk, so a creation is always undone but
//! may be reported by the other call.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt as _};

use super::protect::Protected;
use super::protect_walk::{Found, Kind, Listing, Snapshot, shown, walk};

/// Problems named in one error message; the rest are counted.
const MAX_NAMED: usize = 8;

/// The listing the last walk left, for the next one (one per host).
pub(super) type ListingCache = Arc<Mutex<Option<Listing>>>;

/// The protected paths of the work dir when a writing child started.
#[derive(Debug)]
pub(super) struct Watch {
    protected: Arc<Protected>,
    commit: bool,
    before: Snapshot,
    listing: Option<Listing>,
    cache: ListingCache,
}

impl Watch {
    /// Walk the work dir of `protected` now, listing only what changed since the
    /// listing in `cache`.
    pub(super) fn start(
        protected: Arc<Protected>,
        commit: bool,
        cache: ListingCache,
    ) -> Result<Self, String> {
        let previous = cache.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (before, listing) = walk(protected.work_dir(), &protected, commit, previous)?;
        Ok(Self { protected, commit, before, listing: Some(listing), cache })
    }

    /// What the child's root binds over.
    pub(super) fn binds(&self) -> Vec<super::mounts::ProtectBind> {
        self.before.binds(self.protected.work_dir(), self.commit)
    }

    /// Directories the walk visited, and how many of them it listed.
    pub(super) fn dirs(&self) -> (usize, usize) {
        (self.before.dirs, self.before.listed)
    }

    /// Compare with the work dir now (the child's tree is dead), undo what can be
    /// undone, and say what was changed.
    pub(super) fn check(mut self) -> Result<(), String> {
        let work = self.protected.work_dir();
        let (after, listing) = walk(work, &self.protected, self.commit, self.listing.take())
            .map_err(|e| format!("the work dir could not be checked for changed protected paths: {e}"))?;
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(listing);
        let problems = compare(work, &self.before, &after);
        if problems.is_empty() {
            return Ok(());
        }
        Err(describe(&problems))
    }

    /// Give the walk's listing back for the next walk, without a check (the child
    /// wrote through an overlay, whose merge refuses protected paths itself); the
    /// binds.
    pub(super) fn into_binds(mut self) -> Vec<super::mounts::ProtectBind> {
        let binds = self.binds();
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = self.listing.take();
        binds
    }
}

/// What a child changed among the protected paths, as one message (the first
/// [`MAX_NAMED`] named, the rest counted).
pub(super) fn describe(problems: &[String]) -> String {
    let more = problems.len().saturating_sub(MAX_NAMED);
    let mut text = format!(
        "a command changed protected paths: {}",
        problems[..problems.len().min(MAX_NAMED)].join("; ")
    );
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

/// What changed between `before` and `after`, undoing what can be undone.
fn compare(work: &Path, before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let id = Found::identity;
    // What a link or a `.git` file points to is protected by binds, never judged
    // here: a child may point one at any directory.
    let before: Vec<&Found> = before.found.iter().filter(|f| !f.via).collect();
    let after: Vec<&Found> = after.found.iter().filter(|f| !f.via).collect();
    let by_rel: HashMap<&Path, &Found> = before.iter().map(|f| (f.rel.as_path(), *f)).collect();
    let by_id: HashMap<_, &Found> = before.iter().map(|f| (id(f), *f)).collect();
    let now_rel: HashMap<&Path, &Found> = after.iter().map(|f| (f.rel.as_path(), *f)).collect();
    let now_id: HashMap<_, &Found> = after.iter().map(|f| (id(f), *f)).collect();
    let mut problems = Vec::new();
    let mut removed: Vec<&Path> = Vec::new();
    let mut fresh = after.clone();
    // Parents first: removing a new `.git` removes what was found beneath it.
    fresh.sort_by_key(|f| f.rel.components().count());
    for f in fresh {
        if by_rel.get(f.rel.as_path()).is_some_and(|b| id(b) == id(f)) {
            continue;
        }
        if let Some(b) = by_id.get(&id(f)) {
            problems.push(format!("{} was moved to {}", shown(&b.rel), shown(&f.rel)));
            continue;
        }
        if removed.iter().any(|r| f.rel.starts_with(r)) {
            continue;
        }
        problems.push(match remove_beneath(work, &f.rel) {
            Ok(()) => format!("{} was created (removed)", shown(&f.rel)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => format!("{} was created (gone)", shown(&f.rel)),
            Err(e) => format!("{} was created, and removing it failed: {e}", shown(&f.rel)),
        });
        removed.push(&f.rel);
    }
    for b in before {
        if now_rel.get(b.rel.as_path()).is_some_and(|f| id(f) == id(b)) || now_id.contains_key(&id(b)) {
            continue;
        }
        // Still there, only no longer reached through the link that led to it.
        if std::fs::symlink_metadata(work.join(&b.rel))
            .is_ok_and(|m| (m.dev(), m.ino(), m.created().ok()) == (b.dev, b.ino, b.born))
        {
            continue;
        }
        let (Kind::Symlink, Some(target)) = (b.kind, &b.link) else {
            problems.push(format!("{} was removed", shown(&b.rel)));
            continue;
        };
        problems.push(match restore_link(work, &b.rel, target) {
            Ok(()) => format!("{} was removed or replaced (the symlink was put back)", shown(&b.rel)),
            Err(e) => format!("{} was removed or replaced, and putting it back failed: {e}", shown(&b.rel)),
        });
    }
    problems
}

/// Remove `rel` beneath `work` (a whole tree for a dir), following no symlink on
/// the way or at the end.
fn remove_beneath(work: &Path, rel: &Path) -> io::Result<()> {
    let (parent, name) = parent_dir(work, rel)?;
    if parent.symlink_metadata(&name)?.is_dir() {
        parent.remove_dir_all(&name)
    } else {
        parent.remove_file(&name)
    }
}

/// Make the symlink `rel -> target` again (removing what took its place).
fn restore_link(work: &Path, rel: &Path, target: &Path) -> io::Result<()> {
    let (parent, name) = parent_dir(work, rel)?;
    match parent.symlink_metadata(&name) {
        Ok(meta) if meta.is_dir() => parent.remove_dir_all(&name)?,
        Ok(_) => parent.remove_file(&name)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    parent.symlink(target, &name)
}

/// The directory holding `rel`, opened component by component without following a
/// symlink, and the final name.
fn parent_dir(work: &Path, rel: &Path) -> io::Result<(Dir, PathBuf)> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for part in rel.components() {
        match part {
            Component::Normal(p) => parts.push(p),
            _ => return Err(io::Error::other(format!("{} is not a plain relative path", rel.display()))),
        }
    }
    let Some(name) = parts.pop() else { return Err(io::Error::other("the work dir itself")) };
    let mut dir = Dir::open_ambient_dir(work, ambient_authority())?;
    for part in parts {
        let seen = dir.symlink_metadata(part)?;
        if !seen.is_dir() {
            return Err(io::Error::other(format!("{} is no longer a directory", Path::new(part).display())));
        }
        let next = dir.open_dir(part)?;
        let opened = next.dir_metadata()?;
        // A symlink swapped in between the look and the open leads elsewhere.
        if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
            return Err(io::Error::other(format!(
                "{} changed while it was opened",
                Path::new(part).display()
            )));
        }
        dir = next;
    }
    Ok((dir, PathBuf::from(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn watch(work: &Path, commit: bool) -> Watch {
        let mut protected = Protected::new(work).with_globs(&["*.pem".into()]).unwrap();
        protected.add(&work.join("toolhost.toml"));
        Watch::start(Arc::new(protected), commit, ListingCache::default()).unwrap()
    }

    #[test]
    fn creations_are_removed_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        fs::create_dir_all(work.join("repo/.git/objects")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep"), "x").unwrap();
        let w = watch(&work, true);
        assert!(w.dirs().0 >= 2);
        fs::create_dir_all(work.join("a/b/.git/hooks")).unwrap();
        fs::write(work.join("sub.git.txt"), "").unwrap();
        fs::write(work.join("toolhost.toml"), "").unwrap();
        fs::write(work.join("new.pem"), "").unwrap();
        fs::create_dir(work.join("repo/.git/hooks")).unwrap();
        std::os::unix::fs::symlink(outside.path(), work.join(".git")).unwrap();
        // A .git file pointing at an existing directory: the file goes, the dir stays.
        fs::create_dir_all(work.join("src/hooks")).unwrap();
        fs::write(work.join("src/.git"), "gitdir: .\n").unwrap();
        let err = w.check().unwrap_err();
        for named in ["a/b/.git", "toolhost.toml", "new.pem", "repo/.git/hooks", ".git was created"] {
            assert!(err.contains(named), "{named}: {err}");
        }
        for gone in ["a/b/.git", "toolhost.toml", "new.pem", "repo/.git/hooks", ".git", "src/.git"] {
            assert!(fs::symlink_metadata(work.join(gone)).is_err(), "{gone} is still there");
        }
        // The symlink was removed, not what it pointed to; data stays.
        assert!(outside.path().join("keep").exists());
        assert!(work.join("repo/.git/objects").is_dir() && work.join("sub.git.txt").exists());
        assert!(work.join("src/hooks").is_dir());
        assert!(watch(&work, true).check().is_ok());
    }

    #[test]
    fn moves_are_named_and_removed_links_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        fs::create_dir_all(work.join("sub/deep/.git")).unwrap();
        fs::create_dir_all(work.join("store")).unwrap();
        std::os::unix::fs::symlink("store", work.join("x.pem")).unwrap();
        let w = watch(&work, false);
        fs::rename(work.join("sub"), work.join("other")).unwrap();
        fs::remove_file(work.join("x.pem")).unwrap();
        fs::write(work.join("x.pem"), "replaced").unwrap();
        let err = w.check().unwrap_err();
        assert!(err.contains("sub/deep/.git was moved to other/deep/.git"), "{err}");
        assert!(err.contains("x.pem was removed or replaced (the symlink was put back)"), "{err}");
        // The moved repository is left alone.
        assert!(work.join("other/deep/.git").is_dir());
        assert_eq!(fs::read_link(work.join("x.pem")).unwrap(), Path::new("store"));
        assert!(!err.contains("store was removed"), "{err}");
    }

    #[test]
    fn removal_never_follows_a_symlinked_parent() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(outside.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(outside.path(), work.join("link")).unwrap();
        let err = remove_beneath(&work, Path::new("link/.git")).unwrap_err();
        assert!(err.to_string().contains("no longer a directory"), "{err}");
        assert!(outside.path().join(".git").is_dir());
        assert!(remove_beneath(&work, Path::new("../x")).is_err());
    }
}
