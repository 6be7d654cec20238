//! Where writing children's overlay layers live: a private dir outside the work
//! dir (the data dir's `exec-staging`, else one in the temp dir), preferably on
//! the work dir's filesystem, so that merging moves files by `rename`.
//!
//! Each host holds a dir of its own there, `<id>/`, beside a lock file
//! `<id>.lock` it keeps `flock`ed for as long as it runs; each writing child gets
//! `<id>/<n>/{upper,work}` ([`Layer`]). A host that dies (SIGKILL, power loss)
//! merges nothing: its layers stay here, out of the work dir, and the next host
//! to start removes every `<id>/` whose lock nobody holds ([`clean`]). A layer
//! whose merge failed is moved to `kept-<id>-<n>/`, which is never removed: the
//! error names it.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{FlockOperation, flock};

/// This host's layers, under a base dir shared with other hosts.
#[derive(Debug)]
pub(crate) struct Staging {
    base: PathBuf,
    /// `<base>/<id>`.
    dir: PathBuf,
    id: String,
    /// `<base>/<id>.lock`, held while the host runs.
    lock: PathBuf,
    _held: File,
    next: AtomicU64,
}

/// One writing child's upper and work dirs.
#[derive(Debug)]
pub(super) struct Layer {
    dir: PathBuf,
    kept: PathBuf,
    /// Where the child's changes land.
    pub(super) upper: PathBuf,
    /// overlayfs's own scratch dir.
    pub(super) work: PathBuf,
}

impl Staging {
    /// The first of `candidates` that can hold layers for the work dir `work`
    /// (outside it, a private dir of this user), one on the work dir's
    /// filesystem first; leftovers of hosts that died are removed there.
    pub(crate) fn open(work: &Path, candidates: &[PathBuf]) -> Result<Self, String> {
        let work_dev = fs::metadata(work).map_err(|e| format!("{}: {e}", work.display()))?.dev();
        let mut usable = Vec::new();
        let mut why = Vec::new();
        for base in candidates {
            match private_dir(base, work) {
                Ok(dev) => usable.push((dev == work_dev, base)),
                Err(e) => why.push(format!("{}: {e}", base.display())),
            }
        }
        usable.sort_by_key(|(same, _)| !same);
        let Some((_, base)) = usable.first() else {
            return Err(format!("no dir for the commands' overlay layers ({})", why.join("; ")));
        };
        clean(base);
        Self::claim(base).map_err(|e| format!("{}: {e}", base.display()))
    }

    /// A dir of this host's own under `base`, and its lock, held.
    fn claim(base: &Path) -> io::Result<Self> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        let id = hex::encode(bytes);
        let (tmp, lock) = (base.join(format!("{id}.lock.tmp")), base.join(format!("{id}.lock")));
        let held = File::options().write(true).create_new(true).mode(0o600).open(&tmp)?;
        flock(&held, FlockOperation::NonBlockingLockExclusive)?;
        // Renamed only once locked: a cleaner never takes an unlocked `.lock` for a dead host's.
        fs::rename(&tmp, &lock)?;
        let dir = base.join(&id);
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Self { base: base.to_path_buf(), dir, id, lock, _held: held, next: AtomicU64::new(0) })
    }

    /// The dir a child's root must hold for its overlay (this host's layers).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// New, empty layers for one child over the work dir `work` (the upper dir
    /// gets the work dir's mode: it is the overlay's root).
    pub(super) fn layer(&self, work: &Path) -> io::Result<Layer> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(n.to_string());
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let layer = Layer {
            kept: self.base.join(format!("kept-{}-{n}", self.id)),
            upper: dir.join("upper"),
            work: dir.join("work"),
            dir,
        };
        fs::DirBuilder::new().mode(0o700).create(&layer.upper)?;
        fs::DirBuilder::new().mode(0o700).create(&layer.work)?;
        let mode = fs::metadata(work)?.permissions().mode() & 0o7777;
        fs::set_permissions(&layer.upper, fs::Permissions::from_mode(mode))?;
        Ok(layer)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = remove_tree(&self.dir);
        let _ = fs::remove_file(&self.lock);
    }
}

impl Layer {
    /// Keep what is left of the layer where no host removes it (or, should that
    /// move fail, where it is, until this host's next start); where that is.
    pub(super) fn keep(mut self) -> PathBuf {
        let dir = std::mem::take(&mut self.dir);
        match fs::rename(&dir, &self.kept) {
            Ok(()) => std::mem::take(&mut self.kept).join("upper"),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "a command's overlay layer could not be kept aside");
                dir.join("upper")
            }
        }
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        if !self.dir.as_os_str().is_empty()
            && let Err(e) = remove_tree(&self.dir)
        {
            tracing::warn!(dir = %self.dir.display(), error = %e, "a command's overlay layer was not removed");
        }
    }
}

/// Create `base` (0700) unless it exists, and check it is a dir of this user's
/// that nobody else may enter, outside the work dir `work`. Its device.
fn private_dir(base: &Path, work: &Path) -> io::Result<u64> {
    super::hostfs::create_private_dir(base)?;
    let real = base.canonicalize()?;
    if real.starts_with(work) || work.starts_with(&real) {
        return Err(io::Error::other("it overlaps the work dir"));
    }
    let meta = fs::symlink_metadata(base)?;
    if !meta.is_dir() || meta.uid() != super::confine::euid() || meta.mode() & 0o077 != 0 {
        return Err(io::Error::other("not a dir private to this user"));
    }
    Ok(meta.dev())
}

/// Remove what hosts that are gone left under `base`: every `<id>/` whose
/// `<id>.lock` nobody holds (or that has none), and such locks.
pub(crate) fn clean(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else { return };
    let mut names: Vec<String> = entries.flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
    names.sort();
    for name in names {
        if name.starts_with("kept-") {
            continue;
        }
        let path = base.join(&name);
        let lock = name.strip_suffix(".lock").or_else(|| name.strip_suffix(".lock.tmp"));
        let result = match lock {
            Some(id) => match File::open(&path) {
                Ok(file) if flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() => {
                    let dir = base.join(id);
                    remove_tree(&dir).and_then(|()| fs::remove_file(&path))
                }
                _ => Ok(()),
            },
            None if base.join(format!("{name}.lock")).exists() => Ok(()),
            None => remove_tree(&path),
        };
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "a dead host's overlay layers were not removed");
        }
    }
}

/// Remove `path` and everything beneath it (a missing one is fine), making dirs
/// enterable first (overlayfs leaves its scratch dir mode 000).
fn remove_tree(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::other("not a path to remove"));
    };
    let dir = match rustix::fs::open(
        parent,
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(dir) => dir,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let name =
        std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name)).map_err(io::Error::other)?;
    match super::merge::remove_all(&dir, &name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_hosts_layers_go_and_a_live_ones_stay() {
        let base = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let base_dir = base.path().join("staging");
        let live = Staging::open(work.path(), std::slice::from_ref(&base_dir)).unwrap();
        let layer = live.layer(work.path()).unwrap();
        fs::write(layer.upper.join("f"), "x").unwrap();
        // What a host that died leaves: its lock, held by nobody, and its dir.
        let (dead_dir, lock) = (base_dir.join("0123"), base_dir.join("0123.lock"));
        fs::create_dir_all(dead_dir.join("0/upper/.git")).unwrap();
        fs::create_dir_all(dead_dir.join("0/work/work")).unwrap();
        fs::set_permissions(dead_dir.join("0/work/work"), fs::Permissions::from_mode(0o0)).unwrap();
        fs::write(&lock, "").unwrap();
        fs::create_dir(base_dir.join("orphan")).unwrap();
        fs::create_dir(base_dir.join("kept-a-1")).unwrap();

        let next = Staging::open(work.path(), std::slice::from_ref(&base_dir)).unwrap();
        assert!(!dead_dir.exists() && !lock.exists() && !base_dir.join("orphan").exists());
        assert!(layer.upper.join("f").exists(), "a live host's layer was removed");
        assert!(base_dir.join("kept-a-1").exists());
        drop((layer, live, next));
        let left: Vec<_> = fs::read_dir(&base_dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("kept-a-1")]);
    }

    #[test]
    fn a_base_inside_the_work_dir_or_shared_with_others_is_not_used() {
        let work = tempfile::tempdir().unwrap();
        let work_path = work.path().canonicalize().unwrap();
        let err = Staging::open(&work_path, &[work_path.join("inside")]).unwrap_err();
        assert!(err.contains("overlaps the work dir"), "{err}");
        let open = tempfile::tempdir().unwrap();
        fs::set_permissions(open.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let err = Staging::open(&work_path, &[open.path().to_path_buf()]).unwrap_err();
        assert!(err.contains("not a dir private to this user"), "{err}");
        // The next candidate is used.
        let good = tempfile::tempdir().unwrap();
        let staging = Staging::open(&work_path, &[open.path().to_path_buf(), good.path().join("s")]).unwrap();
        assert!(staging.dir().starts_with(good.path()));
    }
}
