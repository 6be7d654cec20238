//! Protected paths at the sandbox: a walk of the work dir, before a writing child
//! starts, finds what it must not change ([`Snapshot`]) — every `.git` at any depth,
//! the git dirs `.git` files (and `commondir`) point to inside the work dir, the
//! host files ([`Protected::files`]) and the matches of the `protected` globs — and
//! [`Snapshot::binds`] turns that into read-only bind mounts over each in the
//! child's root (`super::mounts`).
//!
//! With a commit grant a `.git` is bound over itself read-write (pinned: a mount
//! point cannot be removed or renamed) and only its `Guarded` entries (hooks,
//! config, info, …) read-only, so that repository data can change.
//!
//! The walk never follows a symlink and never descends into a `.git`, a glob match
//! or a host dir (their binds cover everything beneath). Listing a directory is
//! most of its cost (about 9 µs each here, as for `find`), so a walk lists only the
//! directories whose (device, inode, ctime) changed since the previous walk
//! ([`Listing`]); the others cost one `lstat`. A symlink among the
//! protected paths cannot be bound over; what it points to inside the work dir is
//! protected in its place, and the link itself is checked afterwards
//! (`super::protect_check`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::mounts::ProtectBind;
use super::protect::{GitPart, Protected, git_part, is_git_name};

/// Directories a walk visits at most: a bound on the host's time per child.
pub(super) const MAX_DIRS: usize = 250_000;
/// Largest `.git` or `commondir` file read for the git dir it names.
const MAX_POINTER_BYTES: u64 = 4096;

/// What a protected entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Dir,
    File,
    Symlink,
}

/// Why an entry is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// A `.git`, or a git dir one points to.
    Git,
    /// An entry beneath a git dir that stays read-only under a commit grant.
    Guarded,
    /// A match of a `protected` glob.
    Glob,
    /// A host file or dir (the policy file, the host's own dirs).
    Host,
}

/// One protected entry as the walk found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    /// Relative to the work dir.
    pub(super) rel: PathBuf,
    pub(super) kind: Kind,
    pub(super) role: Role,
    pub(super) dev: u64,
    pub(super) ino: u64,
    /// Where a symlink points (as written).
    pub(super) link: Option<PathBuf>,
    /// When it was made, where the filesystem says: a freed inode number is soon
    /// reused, so the number alone does not tell a new entry from the old one.
    pub(super) born: Option<std::time::SystemTime>,
    /// Reached through a `.git` file, `commondir` or a symlink (or beneath such a
    /// git dir) rather than by its own name: bound over, never removed, since what
    /// a child points a link at may be any directory.
    pub(super) via: bool,
}

impl Found {
    /// What tells this entry from another one, wherever it is.
    pub(super) fn identity(&self) -> (u64, u64, Kind, Option<&Path>, Option<std::time::SystemTime>) {
        (self.dev, self.ino, self.kind, self.link.as_deref(), self.born)
    }
}

/// Every protected entry of the work dir at one moment.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot {
    pub(super) found: Vec<Found>,
    /// Directories visited.
    pub(super) dirs: usize,
    /// Directories listed (the others were unchanged since the previous walk).
    pub(super) listed: usize,
}

/// What tells whether a directory's entries changed since it was listed: adding,
/// removing or renaming an entry updates the directory's ctime, which no process
/// can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
}

/// One directory as last listed.
#[derive(Debug, Clone)]
struct Dir {
    stamp: Stamp,
    subdirs: Vec<std::ffi::OsString>,
    /// The `.git` entries and glob matches directly in it.
    found: Vec<Found>,
}

/// Every directory of the work dir as one walk listed it, for the next walk to
/// list only those that changed.
#[derive(Debug, Default)]
pub(super) struct Listing {
    dirs: HashMap<PathBuf, Dir>,
    /// When that walk started.
    started: Option<SystemTime>,
}

/// A directory is listed again unless its stamp is unchanged and older than the
/// previous walk by this much: timestamps are coarse (a clock tick; whole seconds
/// on some filesystems), and a change in the same tick as the look would keep the
/// stamp it had.
const SETTLED: Duration = Duration::from_secs(3);

/// Walk `work` (canonical) for what `protected` covers; `commit` also lists the
/// guarded entries of each git dir. Directories unchanged since `previous` are
/// not listed again (it is consumed; the new listing is returned with the
/// snapshot).
pub(super) fn walk(
    work: &Path,
    protected: &Protected,
    commit: bool,
    previous: Option<Listing>,
) -> Result<(Snapshot, Listing), String> {
    walk_bounded(work, protected, commit, previous, MAX_DIRS, SETTLED)
}

fn walk_bounded(
    work: &Path,
    protected: &Protected,
    commit: bool,
    previous: Option<Listing>,
    max_dirs: usize,
    settle: Duration,
) -> Result<(Snapshot, Listing), String> {
    let mut previous = previous.unwrap_or_default();
    let settled = previous.started.and_then(|t| t.checked_sub(settle));
    let mut listing = Listing { dirs: HashMap::new(), started: Some(SystemTime::now()) };
    let mut snap = Snapshot::default();
    let mut skip: HashSet<PathBuf> = HashSet::new();
    for file in protected.files() {
        if let Ok(rel) = file.strip_prefix(work)
            && !rel.as_os_str().is_empty()
            && let Some(found) = lstat(work, rel, Role::Host)
        {
            skip.insert(rel.to_path_buf());
            snap.push_with_target(work, found);
        }
    }
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        snap.dirs += 1;
        if snap.dirs > max_dirs {
            return Err(format!(
                "the work dir has more than {max_dirs} directories to search for .git and other protected paths"
            ));
        }
        let meta = match fs::symlink_metadata(work.join(&rel)) {
            Ok(meta) if meta.is_dir() => meta,
            // Gone or replaced since its parent was listed (another call's child).
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", shown(&rel))),
        };
        let stamp = Stamp { dev: meta.dev(), ino: meta.ino(), ctime: (meta.ctime(), meta.ctime_nsec()) };
        let unchanged = previous.dirs.remove(&rel).filter(|old| {
            let old_enough = settled.is_some_and(|t| {
                let t = t.duration_since(UNIX_EPOCH).unwrap_or_default();
                (old.stamp.ctime.0, old.stamp.ctime.1) < (t.as_secs() as i64, i64::from(t.subsec_nanos()))
            });
            old.stamp == stamp && old_enough
        });
        let dir = match unchanged {
            Some(dir) => dir,
            None => {
                snap.listed += 1;
                list(work, &rel, stamp, protected, &skip)?
            }
        };
        stack.extend(dir.subdirs.iter().map(|name| rel.join(name)));
        for found in &dir.found {
            snap.push_with_target(work, found.clone());
        }
        listing.dirs.insert(rel, dir);
    }
    snap.add_git_pointers(work);
    if commit {
        snap.add_guarded(work);
    }
    Ok((snap, listing))
}

/// List the directory `rel`: its subdirectories to walk, and the `.git` entries
/// and glob matches in it (never descended into).
fn list(
    work: &Path,
    rel: &Path,
    stamp: Stamp,
    protected: &Protected,
    skip: &HashSet<PathBuf>,
) -> Result<Dir, String> {
    let mut dir = Dir { stamp, subdirs: Vec::new(), found: Vec::new() };
    let entries = match fs::read_dir(work.join(rel)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(dir),
        Err(e) => return Err(format!("{}: {e}", shown(rel))),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", shown(rel)))?;
        let name = entry.file_name();
        let path = rel.join(&name);
        let role = if is_git_name(&name) {
            Role::Git
        } else if protected.matches_glob(&path) {
            Role::Glob
        } else {
            if !skip.contains(&path) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                dir.subdirs.push(name);
            }
            continue;
        };
        if let Some(found) = lstat(work, &path, role) {
            dir.found.push(found);
        }
    }
    Ok(dir)
}

impl Snapshot {
    /// The bind mounts that make these entries read-only in a child's root
    /// (`commit`: git dirs pinned read-write instead).
    pub(super) fn binds(&self, work: &Path, commit: bool) -> Vec<ProtectBind> {
        self.found
            .iter()
            .filter(|f| f.kind != Kind::Symlink)
            .map(|f| ProtectBind {
                path: work.join(&f.rel),
                read_only: !(commit && f.role == Role::Git && f.kind == Kind::Dir),
                dev: f.dev,
                ino: f.ino,
            })
            .collect()
    }

    fn contains(&self, rel: &Path) -> bool {
        self.found.iter().any(|f| f.rel == rel)
    }

    /// Add `found`, and for a symlink what it points to inside the work dir (with
    /// the same role), since a child writes through the link.
    fn push_with_target(&mut self, work: &Path, found: Found) {
        if found.kind == Kind::Symlink
            && let Some(target) = inside(work, &work.join(&found.rel))
            && !self.contains(&target)
            && let Some(target) = lstat(work, &target, found.role)
        {
            self.found.push(Found { via: true, ..target });
        }
        if !self.contains(&found.rel) {
            self.found.push(found);
        }
    }

    /// The git dirs that `.git` files and `commondir` files point to, inside the
    /// work dir and not already beneath a `.git`.
    fn add_git_pointers(&mut self, work: &Path) {
        let mut i = 0;
        while i < self.found.len() {
            let f = self.found[i].clone();
            i += 1;
            if f.role != Role::Git {
                continue;
            }
            let (pointer, prefix, base) = match f.kind {
                Kind::File => (work.join(&f.rel), Some("gitdir:"), f.rel.parent().map(Path::to_path_buf)),
                Kind::Dir => (work.join(&f.rel).join("commondir"), None, Some(f.rel.clone())),
                Kind::Symlink => continue,
            };
            let Ok(Some(text)) = super::hostfs::read_text(&pointer, MAX_POINTER_BYTES) else {
                continue;
            };
            let line = text.lines().next().unwrap_or_default();
            let named = prefix.map_or(Some(line), |p| line.strip_prefix(p)).map(str::trim);
            let Some(named) = named.filter(|n| !n.is_empty()) else { continue };
            let path = work.join(base.unwrap_or_default()).join(named);
            if let Some(rel) = inside(work, &path)
                && git_part(&rel).is_none()
                && !self.contains(&rel)
                && let Some(found) = lstat(work, &rel, Role::Git)
            {
                self.found.push(Found { via: true, ..found });
            }
        }
    }

    /// The guarded entries directly beneath every git dir found.
    fn add_guarded(&mut self, work: &Path) {
        let dirs: Vec<(PathBuf, bool)> = self
            .found
            .iter()
            .filter(|f| f.role == Role::Git && f.kind == Kind::Dir)
            .map(|f| (f.rel.clone(), f.via))
            .collect();
        for (dir, via) in dirs {
            let Ok(entries) = fs::read_dir(work.join(&dir)) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                if git_part(&Path::new(".git").join(&name)) != Some(GitPart::Guarded) {
                    continue;
                }
                if let Some(found) = lstat(work, &dir.join(&name), Role::Guarded) {
                    self.push_with_target(work, Found { via, ..found });
                }
            }
        }
    }
}

/// The entry at `rel`, not followed; `None` when it is gone.
fn lstat(work: &Path, rel: &Path, role: Role) -> Option<Found> {
    let path = work.join(rel);
    let meta = fs::symlink_metadata(&path).ok()?;
    let kind = if meta.file_type().is_symlink() {
        Kind::Symlink
    } else if meta.is_dir() {
        Kind::Dir
    } else {
        Kind::File
    };
    let link = (kind == Kind::Symlink).then(|| fs::read_link(&path).ok()).flatten();
    let born = meta.created().ok();
    Some(Found {
        rel: rel.to_path_buf(),
        kind,
        role,
        dev: meta.dev(),
        ino: meta.ino(),
        link,
        born,
        via: false,
    })
}

/// `path` resolved, relative to the work dir, when it stays inside it.
fn inside(work: &Path, path: &Path) -> Option<PathBuf> {
    let real = path.canonicalize().ok()?;
    let rel = real.strip_prefix(work).ok()?;
    (!rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
}

/// A relative path for messages (`.` for the work dir itself).
pub(super) fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() { ".".into() } else { rel.display().to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rels(snap: &Snapshot, role: Role) -> Vec<String> {
        let mut out: Vec<String> =
            snap.found.iter().filter(|f| f.role == role).map(|f| f.rel.display().to_string()).collect();
        out.sort();
        out
    }

    #[test]
    fn finds_every_git_the_pointers_globs_and_host_files() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        for d in [".git/hooks", "sub/deep/.git/info", "vendor/x/.git", "keys/a", "real/hooks", "wt"] {
            fs::create_dir_all(work.join(d)).unwrap();
        }
        fs::write(work.join(".git/config"), "").unwrap();
        fs::write(work.join("wt/.git"), "gitdir: ../real\n").unwrap();
        fs::write(work.join("toolhost.toml"), "").unwrap();
        fs::write(work.join("a.pem"), "").unwrap();
        // Not followed: a symlink to a dir with a .git in it (found once, where it is).
        fs::create_dir_all(work.join("elsewhere/.git")).unwrap();
        std::os::unix::fs::symlink(work.join("elsewhere"), work.join("link")).unwrap();
        let mut protected = Protected::new(&work).with_globs(&["keys/".into(), "*.pem".into()]).unwrap();
        protected.add(&work.join("toolhost.toml"));

        let (snap, _) = walk(&work, &protected, false, None).unwrap();
        assert_eq!(
            rels(&snap, Role::Git),
            [".git", "elsewhere/.git", "real", "sub/deep/.git", "vendor/x/.git", "wt/.git"]
        );
        assert_eq!(rels(&snap, Role::Glob), ["a.pem", "keys"]);
        assert_eq!(rels(&snap, Role::Host), ["toolhost.toml"]);
        assert!(rels(&snap, Role::Guarded).is_empty());
        assert!(snap.binds(&work, false).iter().all(|b| b.read_only));

        let (snap, _) = walk(&work, &protected, true, None).unwrap();
        assert_eq!(
            rels(&snap, Role::Guarded),
            [".git/config", ".git/hooks", "real/hooks", "sub/deep/.git/info"]
        );
        let binds = snap.binds(&work, true);
        let pinned: Vec<_> = binds.iter().filter(|b| !b.read_only).map(|b| b.path.clone()).collect();
        assert!(pinned.contains(&work.join(".git")) && !pinned.contains(&work.join(".git/hooks")));
    }

    #[test]
    fn a_symlinked_git_protects_its_target_and_too_many_dirs_fail_closed() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        fs::create_dir_all(work.join("store/repo")).unwrap();
        std::os::unix::fs::symlink("store/repo", work.join(".git")).unwrap();
        let (snap, _) = walk(&work, &Protected::new(&work), false, None).unwrap();
        assert_eq!(rels(&snap, Role::Git), [".git", "store/repo"]);
        // The link itself is not bound over (it cannot be), its target is.
        let binds = snap.binds(&work, false);
        assert_eq!(binds.iter().map(|b| b.path.clone()).collect::<Vec<_>>(), [work.join("store/repo")]);

        for i in 0..5 {
            fs::create_dir_all(work.join(format!("d{i}"))).unwrap();
        }
        let err = walk_bounded(&work, &Protected::new(&work), false, None, 4, SETTLED).unwrap_err();
        assert!(err.contains("more than 4 directories"), "{err}");
        assert!(walk_bounded(&work, &Protected::new(&work), false, None, 10, SETTLED).is_ok());
    }

    #[test]
    fn only_changed_directories_are_listed_again() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        for d in ["a/x", "a/y", "b/z", "c"] {
            fs::create_dir_all(work.join(d)).unwrap();
        }
        let protected = Protected::new(&work);
        let walk_settled =
            |previous, settle| walk_bounded(&work, &protected, false, previous, MAX_DIRS, settle).unwrap();
        let (first, listing) = walk_settled(None, SETTLED);
        assert_eq!((first.dirs, first.listed), (7, 7));
        // Changed moments ago: listed again, a stamp that young proves nothing.
        let (again, listing) = walk_settled(Some(listing), SETTLED);
        assert_eq!(again.listed, 7);
        // Settled (here: at once): only what changed is listed.
        let (quiet, listing) = walk_settled(Some(listing), Duration::ZERO);
        assert_eq!((quiet.dirs, quiet.listed), (7, 0));
        fs::create_dir_all(work.join("a/y/new/.git")).unwrap();
        let (changed, listing) = walk_settled(Some(listing), Duration::ZERO);
        // a/y (an entry added) and the new dir; a/y/new/.git is found in it.
        assert_eq!((changed.dirs, changed.listed), (8, 2));
        assert_eq!(rels(&changed, Role::Git), ["a/y/new/.git"]);
        // Unchanged since: what was found is carried over without listing.
        let (carried, _) = walk_settled(Some(listing), Duration::ZERO);
        assert_eq!((carried.listed, rels(&carried, Role::Git)), (0, vec!["a/y/new/.git".to_string()]));
    }
}
