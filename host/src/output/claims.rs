//! Names claimed once by whichever of the processes sharing a store asks
//! first: an answered approval is spent this way (`serve::approve_spent`), so
//! the same answer replayed to another instance behind a load balancer, or
//! sent to two at once, runs one call.
//!
//! - A claim is named by the sha256 of its name (any bytes name one file or
//!   key of ours, never a path or a pattern).
//! - It is kept until the moment given plus [`CLOCK_SKEW`] (instances' clocks
//!   differ), then forgotten: by then nothing it guards could be accepted.
//! - In a directory ([`ClaimDir`], the `claims/` of a store on disk): an empty
//!   file created `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, its modification
//!   time the expiry; the kernel lets one process create it. The directory is
//!   0700, never a symlink; expired files, and anything that is not a regular
//!   file, are removed at most once a minute, or when the directory is full.
//!   At most `max` claims are outstanding: past that, a claim is refused.
//! - In Redis: one Lua script (`super::redis`), the same rules.

use std::io;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use confine::hostfs;

/// How long past its expiry a claim is kept.
pub const CLOCK_SKEW: Duration = Duration::from_secs(120);

/// How often a directory of claims is swept for expired ones.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Whether a name was free when it was claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// It was free: claimed now, by this call.
    First,
    /// Someone claimed it before.
    Again,
}

/// The file or key name of the claim `name`.
pub(crate) fn digest(name: &str) -> String {
    hex::encode(Sha256::digest(name.as_bytes()))
}

/// How long from `now` a claim guarding something that expires at `until` is
/// kept (zero when that is past already).
pub(crate) fn keep_for(until: SystemTime, now: SystemTime) -> Duration {
    (until + CLOCK_SKEW).duration_since(now).unwrap_or_default()
}

/// Claims as files in one directory.
pub(crate) struct ClaimDir {
    dir: PathBuf,
    max: usize,
    /// When this process last swept (unix seconds).
    swept: AtomicU64,
    /// Claims outstanding at the last sweep, plus those this process made since.
    count: AtomicUsize,
}

impl ClaimDir {
    /// Claims in `dir` (created 0700 at the first claim), at most `max` outstanding.
    pub(crate) fn new(dir: PathBuf, max: usize) -> Self {
        Self { dir, max: max.max(1), swept: AtomicU64::new(0), count: AtomicUsize::new(0) }
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Claim `name` until `until` (plus [`CLOCK_SKEW`]). An error (the
    /// directory is unfit, full or failing) means the claim was not made.
    pub(crate) fn claim(&self, name: &str, until: SystemTime) -> io::Result<Claim> {
        self.check_dir()?;
        let now = SystemTime::now();
        let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let last = self.swept.load(Ordering::Relaxed);
        let due = secs >= last + SWEEP_EVERY.as_secs()
            && self.swept.compare_exchange(last, secs, Ordering::Relaxed, Ordering::Relaxed).is_ok();
        if due || self.count.load(Ordering::Relaxed) >= self.max {
            self.sweep(now)?;
        }
        if self.count.load(Ordering::Relaxed) >= self.max {
            return Err(io::Error::other(format!(
                "{} holds {} claims that have not expired (at most {}): refused until some expire",
                self.dir.display(),
                self.count.load(Ordering::Relaxed),
                self.max
            )));
        }
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.dir.join(digest(name)));
        match created {
            Ok(file) => {
                self.count.fetch_add(1, Ordering::Relaxed);
                // The expiry, for the sweep: a claim whose time cannot be set
                // would be swept too early, so it is an error (the claim stays).
                file.set_modified(now + keep_for(until, now))?;
                Ok(Claim::First)
            }
            // Whatever is there (a planted link included) counts as claimed.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Claim::Again),
            Err(e) => Err(e),
        }
    }

    /// Create the directory when missing; refuse a symlink, a file, or a
    /// directory others may write.
    fn check_dir(&self) -> io::Result<()> {
        if std::fs::symlink_metadata(&self.dir).is_err() {
            hostfs::create_private_dir(&self.dir)?;
        }
        let meta = std::fs::symlink_metadata(&self.dir)?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory (a symlink is not followed)",
                self.dir.display()
            )));
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} may be written by others (mode {:o}); it must be private to this user",
                self.dir.display(),
                meta.permissions().mode() & 0o777
            )));
        }
        Ok(())
    }

    /// Remove the expired claims and anything that is not a regular file;
    /// count the rest.
    fn sweep(&self, now: SystemTime) -> io::Result<()> {
        let mut kept = 0;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            // `DirEntry::metadata` does not follow symlinks: unlinking a planted
            // link leaves its target alone.
            let Ok(meta) = entry.metadata() else { continue };
            let expired = !meta.modified().is_ok_and(|expiry| expiry > now);
            if !meta.is_file() || expired {
                match std::fs::remove_file(entry.path()) {
                    Ok(()) => continue,
                    // Another process swept it first.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(_) => {}
                }
            }
            kept += 1;
        }
        self.count.store(kept, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(60)
    }

    #[test]
    fn a_name_is_claimed_once_across_processes_sharing_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let a = ClaimDir::new(root.path().join("claims"), 100);
        let b = ClaimDir::new(root.path().join("claims"), 100);
        assert_eq!(a.claim("approval:1", later()).unwrap(), Claim::First);
        assert_eq!(b.claim("approval:1", later()).unwrap(), Claim::Again);
        assert_eq!(a.claim("approval:1", later()).unwrap(), Claim::Again);
        assert_eq!(b.claim("approval:2", later()).unwrap(), Claim::First);
        // Names are digests: any bytes name a file inside the directory.
        assert_eq!(a.claim("../../etc/passwd", later()).unwrap(), Claim::First);
        let file = root.path().join("claims").join(digest("approval:1"));
        let meta = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(a.dir()).unwrap().mode() & 0o777, 0o700);
        // Kept until the expiry plus the clock allowance.
        let expiry = meta.modified().unwrap();
        assert!(expiry > later() + CLOCK_SKEW - Duration::from_secs(5), "{expiry:?}");
    }

    #[test]
    fn racing_threads_make_one_claim() {
        let root = tempfile::tempdir().unwrap();
        let dir = std::sync::Arc::new(ClaimDir::new(root.path().join("claims"), 1000));
        for round in 0..50 {
            let name = format!("race:{round}");
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (dir, name) = (dir.clone(), name.clone());
                    std::thread::spawn(move || dir.claim(&name, later()).unwrap())
                })
                .collect();
            let claims: Vec<Claim> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            let firsts = claims.iter().filter(|c| **c == Claim::First).count();
            assert_eq!(firsts, 1, "round {round}: {claims:?}");
        }
    }

    #[test]
    fn expired_claims_are_swept_and_the_directory_is_bounded() {
        let root = tempfile::tempdir().unwrap();
        let dir = ClaimDir::new(root.path().join("claims"), 3);
        let past = SystemTime::now() - CLOCK_SKEW - Duration::from_secs(5);
        assert_eq!(dir.claim("old", past).unwrap(), Claim::First);
        for name in ["a", "b"] {
            assert_eq!(dir.claim(name, later()).unwrap(), Claim::First);
        }
        // Full: the sweep takes the expired one out, and there is room for one.
        assert_eq!(dir.claim("c", later()).unwrap(), Claim::First);
        let count = || std::fs::read_dir(dir.dir()).unwrap().count();
        assert_eq!(count(), 3, "the expired claim went");
        let error = dir.claim("d", later()).unwrap_err().to_string();
        assert!(error.contains("holds 3 claims") && error.contains("at most 3"), "{error}");
        assert_eq!(count(), 3);
        // What is refused is not recorded: it is free once there is room.
        assert_eq!(ClaimDir::new(dir.dir().to_path_buf(), 10).claim("d", later()).unwrap(), Claim::First);
    }

    #[test]
    fn planted_links_are_claims_never_followed_and_swept() {
        let root = tempfile::tempdir().unwrap();
        let dir = ClaimDir::new(root.path().join("claims"), 10);
        assert_eq!(dir.claim("x", later()).unwrap(), Claim::First);
        let target = root.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.dir().join(digest("planted"))).unwrap();
        assert_eq!(dir.claim("planted", later()).unwrap(), Claim::Again, "never written through");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        dir.sweep(SystemTime::now()).unwrap();
        assert!(std::fs::symlink_metadata(dir.dir().join(digest("planted"))).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        // The directory itself: never a symlink, never writable by others.
        let link = root.path().join("link");
        std::os::unix::fs::symlink(dir.dir(), &link).unwrap();
        let error = ClaimDir::new(link, 10).claim("y", later()).unwrap_err().to_string();
        assert!(error.contains("not a directory"), "{error}");
        std::fs::set_permissions(dir.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = dir.claim("y", later()).unwrap_err().to_string();
        assert!(error.contains("written by others"), "{error}");
    }
}
