//! The output store on disk: one file per (call id, part) in a directory
//! several host processes share, so a `read_output` answered by one instance
//! finds what another stored (`serve --http` behind a load balancer).
//!
//! - Names are the sha256 of the call id (a model-supplied id such as `../x`
//!   names a file inside the directory, never a path) and the part.
//! - A file is written to a random `O_EXCL` temp name (0600) and renamed into
//!   place, so a reader in another process sees all of it or nothing.
//! - Reads go through [`hostfs::read_text`]: a symlink, FIFO or device planted
//!   at a name is refused (never followed, never blocks); so is a file larger
//!   than the budget.
//! - Bounded: the oldest files go until the directory holds at most
//!   `max_bytes` and `max_files`; anything that is not a regular file is
//!   removed then too (unlinking a symlink leaves its target alone). Listing
//!   the directory costs a `stat` per file, so a process does it after every
//!   1/64 of either budget it writes (and on its first write): each instance
//!   may overshoot by that much before its next pass.
//! - One-time claims (`super::claims`) live in its `claims/` subdirectory,
//!   at most `max_files` of them.

use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::Part;
use super::claims::{Claim, ClaimDir};
use super::stored::Stored;
use confine::hostfs;

/// The prefix of temp files being written.
const TEMP_PREFIX: &str = ".tmp-";

/// Full outputs as files in a shared directory.
pub(crate) struct DiskStore {
    dir: PathBuf,
    max_bytes: usize,
    max_files: usize,
    /// Files and bytes this process wrote since its last eviction pass
    /// (files starts at the threshold: the first write makes a pass).
    written_files: AtomicUsize,
    written_bytes: AtomicUsize,
    claims: ClaimDir,
}

impl DiskStore {
    /// A store in `dir`, created private (0700) when missing; refused when
    /// `dir` is a symlink or not a directory.
    pub(crate) fn open(dir: &Path, max_bytes: usize, max_files: usize) -> io::Result<Self> {
        hostfs::create_private_dir(dir)?;
        let meta = std::fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory (a symlink is not followed)",
                dir.display()
            )));
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} may be written by others (mode {:o}); it must be private to this user",
                dir.display(),
                meta.permissions().mode() & 0o777
            )));
        }
        let max_files = max_files.max(1);
        Ok(Self {
            dir: dir.to_path_buf(),
            max_bytes,
            max_files,
            written_files: AtomicUsize::new(max_files),
            written_bytes: AtomicUsize::new(0),
            claims: ClaimDir::new(dir.join("claims"), max_files),
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Claim `name` until `until`, once among the processes sharing the directory.
    pub(crate) fn claim(&self, name: &str, until: SystemTime) -> io::Result<Claim> {
        self.claims.claim(name, until)
    }

    fn path(&self, call_id: &str, part: Part) -> PathBuf {
        let digest = hex::encode(Sha256::digest(call_id.as_bytes()));
        self.dir.join(format!("{}.{}", &digest[..40], part.as_str()))
    }

    /// Keep `text` as `part` of `call_id`; nothing is kept when it is larger
    /// than the budget or cannot be written.
    pub(crate) fn put(&self, call_id: &str, part: Part, text: &str) -> Stored {
        if text.len() > self.max_bytes {
            return Stored::TooLarge;
        }
        let written = (|| {
            let mut tmp = tempfile::Builder::new().prefix(TEMP_PREFIX).tempfile_in(&self.dir)?;
            tmp.write_all(text.as_bytes())?;
            tmp.persist(self.path(call_id, part)).map_err(|e| e.error)?;
            io::Result::Ok(())
        })();
        if let Err(error) = written {
            tracing::warn!(%error, dir = %self.dir.display(), "could not store an output");
            return Stored::Failed(format!("{}: {error}", self.dir.display()));
        }
        let files = self.written_files.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = self.written_bytes.fetch_add(text.len(), Ordering::Relaxed) + text.len();
        if files >= (self.max_files / 64).max(1) || bytes >= (self.max_bytes / 64).max(1) {
            self.written_files.store(0, Ordering::Relaxed);
            self.written_bytes.store(0, Ordering::Relaxed);
            self.evict();
        }
        Stored::Kept
    }

    /// The text of `part` of `call_id`, if kept; a file that is not a regular
    /// file of at most the budget is refused (and logged).
    pub(crate) fn get(&self, call_id: &str, part: Part) -> Option<Arc<str>> {
        let path = self.path(call_id, part);
        match hostfs::read_text(&path, self.max_bytes as u64) {
            Ok(text) => text.map(Arc::from),
            Err(error) => {
                tracing::warn!(%error, path = %path.display(), "refused a stored output");
                None
            }
        }
    }

    /// Bytes of the regular files kept.
    pub(crate) fn bytes(&self) -> usize {
        self.entries().iter().map(|e| e.1).sum()
    }

    /// Regular stored files: (modified, bytes, path). Anything else at a
    /// stored name is removed.
    fn entries(&self) -> Vec<(SystemTime, usize, PathBuf)> {
        let Ok(listing) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out = Vec::new();
        for entry in listing.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(TEMP_PREFIX) {
                continue;
            }
            // `DirEntry::metadata` does not follow symlinks.
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                if !meta.is_dir() {
                    let _ = std::fs::remove_file(entry.path());
                }
                continue;
            }
            out.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len() as usize, entry.path()));
        }
        out
    }

    /// Remove the oldest files until the budget holds.
    fn evict(&self) {
        let mut entries = self.entries();
        let mut bytes: usize = entries.iter().map(|e| e.1).sum();
        if bytes <= self.max_bytes && entries.len() <= self.max_files {
            return;
        }
        entries.sort();
        let mut count = entries.len();
        for (_, len, path) in entries {
            if bytes <= self.max_bytes && count <= self.max_files {
                break;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                // Another instance evicted it first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(_) => continue,
            }
            bytes -= len;
            count -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_stores_on_one_directory_share_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let a = DiskStore::open(&dir.path().join("outputs"), 1000, 100).unwrap();
        let b = DiskStore::open(&dir.path().join("outputs"), 1000, 100).unwrap();
        assert!(a.put("call-1", Part::Content, "alpha").is_kept());
        assert_eq!(b.get("call-1", Part::Content).as_deref(), Some("alpha"));
        assert_eq!(b.get("call-1", Part::Error), None);
        let path = a.path("call-1", Part::Content);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(a.dir()).unwrap().permissions().mode() & 0o777, 0o700);
        // A model-supplied id names a file inside the directory.
        assert!(a.path("../../etc/passwd", Part::Content).starts_with(a.dir()));
    }

    #[test]
    fn the_oldest_go_first_within_bytes_and_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskStore::open(dir.path(), 10, 3).unwrap();
        for (id, text) in [("a", "aaaa"), ("b", "bbbb"), ("c", "cccc")] {
            assert!(store.put(id, Part::Content, text).is_kept());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(store.get("a", Part::Content), None, "a was the oldest");
        assert_eq!(store.bytes(), 8);
        assert_eq!(store.put("huge", Part::Content, &"x".repeat(11)), Stored::TooLarge);
        for id in ["d", "e"] {
            assert!(store.put(id, Part::Content, "d").is_kept());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let kept = ["b", "c", "d", "e"].iter().filter(|id| store.get(id, Part::Content).is_some()).count();
        assert_eq!(kept, 3, "at most 3 files");
    }

    #[test]
    fn eviction_passes_are_amortized_within_a_64th_of_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskStore::open(dir.path(), 1 << 20, 640).unwrap();
        for i in 0..1000 {
            assert!(store.put(&format!("c{i}"), Part::Content, "x").is_kept());
        }
        let files = store.entries().len();
        assert!((630..=650).contains(&files), "{files} files for a bound of 640 (a pass every 10)");
    }

    #[test]
    fn planted_links_and_fifos_are_refused_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskStore::open(&dir.path().join("s"), 1000, 100).unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "the secret").unwrap();
        std::os::unix::fs::symlink(&secret, store.path("linked", Part::Content)).unwrap();
        assert_eq!(store.get("linked", Part::Content), None);
        let fifo = store.path("fifo", Part::Content);
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert_eq!(store.get("fifo", Part::Content), None, "a FIFO never blocks a read");
        // The next write clears them; the secret stays.
        assert!(store.put("x", Part::Content, "x").is_kept());
        assert!(std::fs::symlink_metadata(store.path("linked", Part::Content)).is_err());
        assert!(std::fs::symlink_metadata(&fifo).is_err());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the secret");
        // A store refuses a directory others may write, or a symlink.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(DiskStore::open(&open, 10, 10).is_err());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("s"), &link).unwrap();
        assert!(DiskStore::open(&link, 10, 10).is_err());
    }
}
