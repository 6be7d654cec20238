//! The on-disk compile cache: compiled components keyed by the engine's
//! compatibility salt (wasmtime version + settings) and the component's sha256.
//!
//! Compiling takes 30 ms to seconds per component; loading a cached artifact
//! takes well under a millisecond. Only files this host wrote are loaded: the
//! cache directory is created with mode 0700, artifacts are written atomically
//! ([`confine::hostfs::write_atomic`]: random `O_EXCL` temp name, then rename), and a
//! file is loaded only when it and its directory belong to this user, nobody else
//! may write them, and it is a regular file (not a planted symlink). When the cache
//! lies inside the work dir it is also a protected path: no tool can write it.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use wasmtime::component::Component;

/// A directory of compiled artifacts for one engine configuration.
#[derive(Debug, Clone)]
pub(crate) struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    /// `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else
    /// `$HOME/.cache/toolhost`.
    pub(crate) fn default_dir() -> Option<PathBuf> {
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        env("TOOLHOST_CACHE_DIR")
            .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("toolhost")))
            .or_else(|| env("HOME").map(|d| d.join(".cache").join("toolhost")))
    }

    /// A cache under `root` for artifacts of the engine described by `salt`.
    pub(crate) fn new(root: PathBuf, salt: String) -> Self {
        Self { dir: root.join(salt) }
    }

    fn path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.cwasm"))
    }

    /// Whether an artifact for `sha256` is there (it may still fail to load).
    pub(crate) fn has(&self, sha256: &str) -> bool {
        self.path(sha256).is_file()
    }

    /// The cached artifact for `sha256`, if there is one that loads.
    pub(crate) fn load(&self, engine: &wasmtime::Engine, sha256: &str) -> Option<Component> {
        let path = self.path(sha256);
        if !path.is_file() {
            return None;
        }
        if let Err(why) = owned_by_us(&self.dir).and_then(|()| owned_by_us(&path)) {
            tracing::warn!(path = %path.display(), "ignoring a cached artifact this host may not have written: {why}");
            return None;
        }
        // SAFETY: the file was written by `store` below (for this salt, so for
        // an engine with the same version and settings) into a directory only
        // this user can write; wasmtime still checks its header and version.
        #[allow(unsafe_code)]
        let loaded = unsafe { Component::deserialize_file(engine, &path) };
        match loaded {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring unusable cached artifact: {err:#}");
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// The cached artifact for `sha256`; when there is none, `artifact` (code
    /// the binary carries, compiled for this engine's settings) is written
    /// first and loaded from the file. `None` when it cannot be written or
    /// does not load (then no file is left behind).
    pub(crate) fn load_or_keep(
        &self,
        engine: &wasmtime::Engine,
        sha256: &str,
        artifact: &[u8],
    ) -> Option<Component> {
        if let Some(component) = self.load(engine, sha256) {
            return Some(component);
        }
        if let Err(err) = self.write(sha256, artifact) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
            return None;
        }
        self.load(engine, sha256)
    }

    /// Save `component` for `sha256`. A failure only costs a recompile next
    /// time, so it is logged, not returned.
    pub(crate) fn store(&self, sha256: &str, component: &Component) {
        if let Err(err) = self.try_store(sha256, component) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
        }
    }

    fn try_store(&self, sha256: &str, component: &Component) -> anyhow::Result<()> {
        self.write(sha256, &component.serialize()?)
    }

    /// Write `artifact` for `sha256` atomically into the private directory.
    fn write(&self, sha256: &str, artifact: &[u8]) -> anyhow::Result<()> {
        confine::hostfs::create_private_dir(&self.dir)?;
        owned_by_us(&self.dir).map_err(anyhow::Error::msg)?;
        confine::hostfs::write_atomic(&self.path(sha256), artifact, Some(0o600))?;
        Ok(())
    }
}

/// Whether `path` (not followed if a symlink) belongs to this user and nobody else
/// may write it.
fn owned_by_us(path: &Path) -> Result<(), String> {
    let meta = fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let uid = unsafe { libc::geteuid() };
    if meta.file_type().is_symlink() {
        return Err("it is a symlink".into());
    }
    if meta.uid() != uid {
        return Err(format!("it belongs to uid {}, not {uid}", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("others may write it (mode {:o})", meta.mode() & 0o777));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::owned_by_us;

    #[test]
    fn only_private_files_and_dirs_of_this_user_are_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let set =
            |p: &std::path::Path, mode| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
        set(dir.path(), 0o700).unwrap();
        assert!(owned_by_us(dir.path()).is_ok());
        let file = dir.path().join("a.cwasm");
        std::fs::write(&file, b"x").unwrap();
        set(&file, 0o600).unwrap();
        assert!(owned_by_us(&file).is_ok());
        set(&file, 0o666).unwrap();
        assert!(owned_by_us(&file).unwrap_err().contains("others may write"));
        let link = dir.path().join("b.cwasm");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(owned_by_us(&link).unwrap_err().contains("symlink"));
        set(dir.path(), 0o777).unwrap();
        assert!(owned_by_us(dir.path()).is_err());
    }
}
