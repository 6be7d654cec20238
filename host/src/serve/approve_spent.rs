//! Answers already used: a 2026-07-28 approval is good for one call, so the
//! retry that carried it is recorded, and the same `requestState` coming back
//! (replayed, or retried twice) is refused.
//!
//! The record is the question's 128-bit nonce (from inside the sealed state,
//! so a client cannot choose it), kept until the question would have expired
//! anyway:
//! - on disk (`DIR/<nonce>`, an empty file created `O_EXCL` with mode 0600, its
//!   modification time set to the expiry), so every instance that shares `DIR`
//!   (the data dir's `approvals/`) refuses an answer another one used; creating
//!   the file is the atomic "first use wins" across processes;
//! - in memory when the server has no data dir (then only this process knows).
//!
//! Expired records are removed as new ones are written (the directory at most
//! once a minute). Only an answer to a question this server sealed makes a
//! record, so there are at most as many as questions answered within one
//! answer window (`serve --approval-timeout`).

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::protect::hostfs;

/// How often the directory is swept for expired records.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Whether a nonce was fresh.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// First use: recorded now.
    First,
    /// Used before.
    Again,
}

/// The record of used answers.
pub(crate) struct Spent {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<String, SystemTime>>,
    /// When the directory was last swept (unix seconds).
    swept: AtomicU64,
}

impl Spent {
    /// Records in `dir` (created private when first needed), or in this
    /// process's memory when `None`.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        Self { dir, memory: Mutex::new(HashMap::new()), swept: AtomicU64::new(0) }
    }

    /// Record `nonce` (hex) as used until `until`; whether it was used before.
    /// An error (the record could not be kept) must refuse the answer.
    pub(crate) fn spend(&self, nonce: &str, until: SystemTime) -> io::Result<Use> {
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a 128-bit hex nonce"));
        }
        let now = SystemTime::now();
        match &self.dir {
            None => {
                let mut used = self.memory.lock().unwrap_or_else(|e| e.into_inner());
                used.retain(|_, expiry| *expiry > now);
                if used.contains_key(nonce) {
                    return Ok(Use::Again);
                }
                used.insert(nonce.to_string(), until);
                Ok(Use::First)
            }
            Some(dir) => {
                hostfs::create_private_dir(dir)?;
                self.sweep(dir, now);
                let created = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(dir.join(nonce.to_ascii_lowercase()));
                match created {
                    Ok(file) => {
                        // The expiry, for the sweep (a failure only keeps it longer).
                        let _ = file.set_modified(until);
                        Ok(Use::First)
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Use::Again),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Remove the records in `dir` that expired, when the last sweep is more
    /// than [`SWEEP_EVERY`] ago (one process at a time does it).
    fn sweep(&self, dir: &std::path::Path, now: SystemTime) {
        let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let last = self.swept.load(Ordering::Relaxed);
        if secs < last + SWEEP_EVERY.as_secs()
            || self.swept.compare_exchange(last, secs, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            // Not followed: a planted link's own time is read, and unlinking it
            // leaves its target alone.
            let expired = entry.metadata().and_then(|meta| meta.modified()).is_ok_and(|expiry| expiry <= now);
            if expired {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "00112233445566778899aabbccddeeff";

    #[test]
    fn a_nonce_is_used_once_on_disk_and_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let later = SystemTime::now() + Duration::from_secs(60);
        for spent in [Spent::new(Some(dir.path().join("approvals"))), Spent::new(None)] {
            assert_eq!(spent.spend(NONCE, later).unwrap(), Use::First);
            assert_eq!(spent.spend(NONCE, later).unwrap(), Use::Again);
            assert_eq!(spent.spend(&NONCE.replace('0', "1"), later).unwrap(), Use::First);
            for bad in ["", "../../etc/passwd", "0011", &"g".repeat(32)] {
                assert!(spent.spend(bad, later).is_err(), "{bad:?}");
            }
        }
        // Another process sharing the directory sees the record.
        let other = Spent::new(Some(dir.path().join("approvals")));
        assert_eq!(other.spend(NONCE, later).unwrap(), Use::Again);
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(dir.path().join("approvals").join(NONCE)).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
    }

    #[test]
    fn expired_records_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let spent = Spent::new(Some(dir.path().to_path_buf()));
        let past = SystemTime::now() - Duration::from_secs(1);
        assert_eq!(spent.spend(NONCE, past).unwrap(), Use::First);
        let count = || std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(count(), 1);
        // The next write sweeps (the last sweep was long ago).
        spent.swept.store(0, Ordering::Relaxed);
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(spent.spend(&NONCE.replace('0', "2"), later).unwrap(), Use::First);
        assert_eq!(count(), 1, "the expired record went");
        // In memory too.
        let memory = Spent::new(None);
        assert_eq!(memory.spend(NONCE, past).unwrap(), Use::First);
        assert_eq!(memory.spend(NONCE, later).unwrap(), Use::First, "an expired record is gone");
    }
}
