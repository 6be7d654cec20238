//! The policy file's guard. The permissions keep tools' path arguments off the
//! policy file, but a plugin granted a writable work dir could still write it through
//! WASI directly. So when the file is inside the work dir, the host remembers its
//! bytes, and after every call that could write checks them: a change is undone
//! (the old bytes restored, or the new file removed) and the call fails
//! `permission_denied`. The host's own writes ("always" answers) update the snapshot.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Watches one file.
#[derive(Debug)]
pub struct PolicyGuard {
    path: PathBuf,
    snapshot: Mutex<Option<Vec<u8>>>,
}

impl PolicyGuard {
    /// Guard `path`, remembering what it holds now (or that it does not exist).
    pub fn new(path: &Path) -> Self {
        Self { path: path.to_path_buf(), snapshot: Mutex::new(std::fs::read(path).ok()) }
    }

    /// The guarded file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file still holds what it did; if not, put it back and say what
    /// happened.
    pub fn check(&self) -> Result<(), String> {
        let snapshot = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::fs::read(&self.path).ok();
        if now == *snapshot {
            return Ok(());
        }
        let restored = match &*snapshot {
            Some(bytes) => std::fs::write(&self.path, bytes),
            None => std::fs::remove_file(&self.path),
        };
        Err(match restored {
            Ok(()) => "the tool changed the policy file, a protected path; the change was undone".to_string(),
            Err(e) => {
                format!("the tool changed the policy file, a protected path, and undoing it failed: {e}")
            }
        })
    }

    /// Run the host's own change `write` to the file and remember its result.
    pub fn host_write<T>(&self, write: impl FnOnce() -> T) -> T {
        let mut snapshot = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        let out = write();
        *snapshot = std::fs::read(&self.path).ok();
        out
    }
}
