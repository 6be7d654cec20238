//! The host side of each interface a guest imports, one module per interface:
//! [`config`] (`wasi:config/store`, the plugin's policy values), [`log`] (`toolhost:plugin/log`), [`files`] (`toolhost:plugin/files`), [`search`] (`toolhost:plugin/search`, `grep_files` and `find_files` run by the host), [`fetch`]
//! (`toolhost:plugin/fetch`, the pinned HTTP client and its SSRF check), [`exec`]
//! (`toolhost:plugin/exec`, confined child processes), [`http`] (`wasi:http`'s client
//! interfaces, through the same pinned client as fetch) and [`wasi_fs`]
//! (`wasi:filesystem`, wasmtime-wasi's behind the host's checks).
//!
//! Each holds its per-call state as a value, implements its WIT `Host` trait on
//! that state's view, and has its own `add_to_linker`; the sandbox composes them.

pub(crate) mod config;
pub(crate) mod exec;
pub(crate) mod fetch;
pub(crate) mod files;
pub(crate) mod http;
pub(crate) mod log;
pub(crate) mod search;
pub(crate) mod wasi_fs;

use std::path::PathBuf;
use std::sync::Arc;

/// What every import knows of the call it serves (defined with the children, which
/// never outlive it).
pub(crate) use confine::CallInfo;

/// The filesystem one call holds: the work dir (or not), and extra read-only dirs.
/// The default is nothing at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FsAccess {
    /// The work dir (canonical host path; also the guest path), when granted.
    pub work_dir: Option<PathBuf>,
    /// Whether the guest may create, write and delete in the work dir.
    pub writable: bool,
    /// Directories preopened read-only under their own path.
    pub read_dirs: Arc<[PathBuf]>,
}

impl FsAccess {
    /// The guest path of the work dir, if any.
    pub(crate) fn guest_path(&self) -> Option<String> {
        self.work_dir.as_ref().map(|dir| dir.to_string_lossy().into_owned())
    }

    /// The work dir, when the call may write in it.
    pub(crate) fn writable_dir(&self) -> Option<&PathBuf> {
        self.work_dir.as_ref().filter(|_| self.writable)
    }
}
