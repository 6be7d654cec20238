//! The host's own access to one file of the work dir, for `remove_file` and
//! `restore_file`: confined with cap-std (no `..`, no absolute path, no symlink
//! out of the work dir), the final name never followed, protected paths judged
//! on the real path the kernel reports for the opened parent.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

use cap_primitives::fs::{FollowSymlinks, OpenOptions, OpenOptionsExt, PermissionsExt};

use crate::error::{CallError, codes};
use confine::Protected;

/// One file of the work dir: its parent opened, and its final name.
pub(crate) struct WorkFile {
    parent: File,
    name: PathBuf,
    /// The path relative to the work dir, as the model gave it (normalized).
    pub(crate) rel: PathBuf,
}

/// What is at a [`WorkFile`]'s name (never followed).
pub(crate) enum Entry {
    /// Nothing.
    Missing,
    /// A regular file with these permission bits.
    File { mode: u32 },
}

impl WorkFile {
    /// Open the parent of `path` (relative to the work dir, or absolute inside it)
    /// beneath `work_dir`, creating it when `create`. `path_escape` when it leaves
    /// the work dir; `permission_denied` when its real path is protected.
    pub(crate) fn open(
        work_dir: &Path,
        path: &str,
        protected: Option<&Protected>,
        create: bool,
    ) -> Result<Self, CallError> {
        let rel = crate::policy::rules::normalize(path, Some(work_dir));
        let escape = || CallError::new(codes::PATH_ESCAPE, format!("{path} is outside the work directory"));
        if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(escape());
        }
        let (Some(name), parent_rel) = (rel.file_name(), rel.parent().unwrap_or(Path::new(""))) else {
            return Err(escape());
        };
        let root = File::open(work_dir).map_err(|e| io_error(path, &e))?;
        let parent = if parent_rel.as_os_str().is_empty() {
            root
        } else {
            let dir = cap_std::fs::Dir::from_std_file(root);
            if create {
                dir.create_dir_all(parent_rel).map_err(|e| io_error(path, &e))?;
            }
            dir.open_dir(parent_rel).map_err(|e| io_error(path, &e))?.into_std_file()
        };
        let real = std::fs::read_link(format!("/proc/self/fd/{}", parent.as_raw_fd()))
            .map_err(|e| io_error(path, &e))?
            .join(name);
        if !real.starts_with(work_dir) {
            return Err(escape());
        }
        if let Some(why) = protected.and_then(|p| p.check(&real, false)) {
            return Err(CallError::new(codes::PERMISSION_DENIED, why));
        }
        Ok(Self { parent, name: PathBuf::from(name), rel })
    }

    /// What is at the name: nothing, or a regular file; `is_symlink`, `is_directory`
    /// or `invalid_args` for anything else.
    pub(crate) fn entry(&self) -> Result<Entry, CallError> {
        let meta = match cap_primitives::fs::stat(&self.parent, &self.name, FollowSymlinks::No) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Entry::Missing),
            Err(e) => return Err(self.io(&e)),
        };
        let shown = self.rel.display();
        let t = meta.file_type();
        if t.is_symlink() {
            return Err(CallError::new(
                codes::IS_SYMLINK,
                format!("{shown} is a symlink; name the file it points to"),
            ));
        }
        if t.is_dir() {
            return Err(CallError::new(codes::IS_DIRECTORY, format!("{shown} is a directory, not a file")));
        }
        if !t.is_file() {
            return Err(CallError::new(codes::INVALID_ARGS, format!("{shown} is not a regular file")));
        }
        Ok(Entry::File { mode: PermissionsExt::mode(&meta.permissions()) & 0o7777 })
    }

    /// The bytes of the regular file at the name (not followed, not blocking), at
    /// most `max` of them (`too_large` past it).
    pub(crate) fn read(&self, max: u64) -> Result<Vec<u8>, CallError> {
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = cap_primitives::fs::open(&self.parent, &self.name, &options).map_err(|e| self.io(&e))?;
        let meta = file.metadata().map_err(|e| self.io(&e))?;
        if !meta.is_file() {
            return Err(CallError::new(
                codes::INVALID_ARGS,
                format!("{} is not a regular file", self.rel.display()),
            ));
        }
        let mut bytes = Vec::new();
        file.take(max + 1).read_to_end(&mut bytes).map_err(|e| self.io(&e))?;
        if bytes.len() as u64 > max {
            return Err(CallError::new(
                codes::TOO_LARGE,
                format!(
                    "{} is larger than {max} bytes, more than the artifact store keeps; nothing was removed",
                    self.rel.display()
                ),
            ));
        }
        Ok(bytes)
    }

    /// Unlink the name.
    pub(crate) fn remove(&self) -> Result<(), CallError> {
        cap_primitives::fs::remove_file(&self.parent, &self.name).map_err(|e| self.io(&e))
    }

    /// Create a new file at the name with `bytes` and `mode`: `already_exists` when
    /// anything is there (a symlink included: never followed).
    pub(crate) fn create_new(&self, bytes: &[u8], mode: u32) -> Result<(), CallError> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).custom_flags(libc::O_NOFOLLOW);
        cap_primitives::fs::OpenOptionsExt::mode(&mut options, mode & 0o777);
        let mut file = match cap_primitives::fs::open(&self.parent, &self.name, &options) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(CallError::new(
                    codes::ALREADY_EXISTS,
                    format!(
                        "{} already exists; restore_file never overwrites: pass another path",
                        self.rel.display()
                    ),
                ));
            }
            Err(e) => return Err(self.io(&e)),
        };
        if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
            let _ = cap_primitives::fs::remove_file(&self.parent, &self.name);
            return Err(self.io(&e));
        }
        Ok(())
    }

    fn io(&self, e: &std::io::Error) -> CallError {
        io_error(&self.rel.display().to_string(), e)
    }
}

fn io_error(path: &str, e: &std::io::Error) -> CallError {
    // cap-std's refusal of a symlink or `..` out of the work dir.
    if e.to_string().contains("outside of the filesystem") {
        return CallError::new(codes::PATH_ESCAPE, format!("{path} leads outside the work directory"));
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => CallError::new(codes::NOT_FOUND, format!("{path} does not exist")),
        std::io::ErrorKind::PermissionDenied => CallError::new(codes::ACCESS_DENIED, format!("{path}: {e}")),
        _ => CallError::new(codes::IO_ERROR, format!("{path}: {e}")),
    }
}
