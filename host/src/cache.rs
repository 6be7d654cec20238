//! The on-disk compile cache: compiled components keyed by the engine's
//! compatibility salt (wasmtime version + settings) and the component's sha256.
//!
//! Compiling takes 30 ms to seconds per component; loading a cached artifact
//! takes well under a millisecond. Only files this host wrote are loaded: the
//! cache directory is created with mode 0700 and artifacts are written
//! atomically (temp file + rename).

use std::fs;
use std::io::Write;
use std::path::PathBuf;

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

    /// The cached artifact for `sha256`, if there is one that loads.
    pub(crate) fn load(&self, engine: &wasmtime::Engine, sha256: &str) -> Option<Component> {
        let path = self.path(sha256);
        if !path.is_file() {
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

    /// Save `component` for `sha256`. A failure only costs a recompile next
    /// time, so it is logged, not returned.
    pub(crate) fn store(&self, sha256: &str, component: &Component) {
        if let Err(err) = self.try_store(sha256, component) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
        }
    }

    fn try_store(&self, sha256: &str, component: &Component) -> anyhow::Result<()> {
        create_private_dir(&self.dir)?;
        let bytes = component.serialize()?;
        let mut tmp = tempfile_in(&self.dir)?;
        tmp.1.write_all(&bytes)?;
        tmp.1.sync_all()?;
        fs::rename(&tmp.0, self.path(sha256))?;
        Ok(())
    }
}

fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn tempfile_in(dir: &std::path::Path) -> std::io::Result<(PathBuf, fs::File)> {
    let path = dir.join(format!(".tmp-{}-{}", std::process::id(), crate::ids::next_id()));
    let file = fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
    Ok((path, file))
}
