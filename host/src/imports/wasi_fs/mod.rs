//! `wasi:filesystem` as guests get it: wasmtime-wasi's implementation, with the
//! host's own checks in front of every call that opens or changes something.
//!
//! wasmtime-wasi already keeps a guest inside its preopens (cap-std). What it can't
//! know is what the host protects inside them, what would hang a call, or how many
//! handles one call may hold. So [`GuardedFs`] wraps its view and, per call:
//!
//! - refuses every change beneath a protected path ([`confine::Protected`]: `.git` at any
//!   depth including its creation, the policy file, the host's own dirs, the
//!   `protected` globs) with `read-only`, judged on the *resolved* host path
//!   ([`resolve`]: the parent opened and its real path read back from the kernel,
//!   final symlinks followed here, the operation then run on that parent with the
//!   final name), so a symlink, a `..` or a descriptor opened inside `.git` leads
//!   nowhere protected; a file or directory opened beneath a protected path is handed
//!   out read-only;
//! - refuses to open FIFOs, devices and sockets (`unsupported`): an open of a FIFO
//!   blocks until a writer comes, and no deadline can end a blocked thread;
//! - caps the descriptors and directory streams one call holds open at once
//!   (`insufficient-memory` past it), so one call can't starve the host of file
//!   descriptors or memory;
//! - holds every write to the call's write quota ([`quota`]: `quota` past it, and
//!   the call fails `write_quota`): bytes through a file's streams and positional
//!   writes, holes past a file's end, and a `set-size` that grows it;
//! - lists directories itself, so a name that is not UTF-8 arrives lossily
//!   (U+FFFD for the bad bytes) instead of failing the whole listing.
//!
//! Everything else is wasmtime-wasi's, unchanged. [`link`] links this over its
//! `wasi:filesystem/types` and `wasi:filesystem/preopens`; [`preopen`] gives a
//! call's WASI context the directories its [`FsAccess`] holds.

mod host;
mod quota;
mod resolve;

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::filesystem::types::DirectoryEntry;

use super::capability::Capability;
use super::{CallStore, FsAccess, StoreParts};
use crate::error::{CallError, codes};
use crate::limits::WriteMeter;
use confine::Protected;

/// Filesystem access to the work dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsGrant {
    /// No preopen at all: the component sees no filesystem.
    None,
    /// The work dir, read-only for every tool.
    Read,
    /// The work dir, writable for tools that do not declare `read-only`.
    #[default]
    ReadWrite,
}

impl FsGrant {
    /// The spelling used in the policy file.
    pub fn as_str(self) -> &'static str {
        match self {
            FsGrant::None => "none",
            FsGrant::Read => "read",
            FsGrant::ReadWrite => "read-write",
        }
    }
}

/// Needs no grant of its own: a call sees the preopens its [`FsAccess`] holds, or none.
pub(crate) const CAPABILITY: Capability =
    Capability { name: "filesystem", interfaces: &["wasi:filesystem/"], needs: None };

/// Preopen, in `wasi`, the work dir (read-write only when `fs` may write) and the
/// read-only dirs, each under its own host path.
pub(crate) fn preopen(wasi: &mut wasmtime_wasi::WasiCtxBuilder, fs: &FsAccess) -> Result<(), CallError> {
    use wasmtime_wasi::FsPerms;
    let host_err = |what: &str, dir: &std::path::Path, e: wasmtime::Error| {
        CallError::new(codes::HOST_ERROR, format!("cannot open {what} {}: {e}", dir.display()))
    };
    if let Some(dir) = &fs.work_dir {
        let perms = if fs.writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
        wasi.preopened_dir(dir, dir.to_string_lossy(), perms).map_err(|e| host_err("work dir", dir, e))?;
    }
    for dir in fs.read_dirs.iter() {
        wasi.preopened_dir(dir, dir.to_string_lossy(), FsPerms::ReadOnly)
            .map_err(|e| host_err("read-only dir", dir, e))?;
    }
    Ok(())
}

/// What one call's filesystem is held to, beyond its preopens.
#[derive(Debug)]
pub(crate) struct FsGuard {
    protected: Option<Arc<Protected>>,
    max_handles: usize,
    handles: usize,
    /// The most handles the call held at once.
    peak: usize,
    /// Whether the cap refused an open.
    capped: bool,
    /// Directory listings, by the stream resource they were handed out under.
    streams: HashMap<u32, std::vec::IntoIter<DirectoryEntry>>,
    /// The call's write quota.
    quota: Arc<WriteMeter>,
}

impl FsGuard {
    /// A guard that protects `protected` (none: nothing beyond the preopens), lets
    /// the call hold `max_handles` descriptors and streams at once and charges its
    /// writes to `quota`.
    pub(crate) fn new(protected: Option<Arc<Protected>>, max_handles: usize, quota: Arc<WriteMeter>) -> Self {
        Self { protected, max_handles, handles: 0, peak: 0, capped: false, streams: HashMap::new(), quota }
    }

    /// When the cap refused an open: the cap, for the call's error message.
    pub(crate) fn cap_tripped(&self) -> Option<usize> {
        self.capped.then_some(self.max_handles)
    }

    /// Take one handle, or refuse past the cap.
    fn take_handle(&mut self) -> bool {
        if self.handles >= self.max_handles {
            self.capped = true;
            return false;
        }
        self.handles += 1;
        self.peak = self.peak.max(self.handles);
        true
    }

    fn release_handle(&mut self) {
        self.handles = self.handles.saturating_sub(1);
    }
}

/// wasmtime-wasi's filesystem view with the call's [`FsGuard`].
pub(crate) struct GuardedFs<'a> {
    view: WasiFilesystemCtxView<'a>,
    guard: &'a mut FsGuard,
}

impl<'a> GuardedFs<'a> {
    /// The guarded view over `view`.
    pub(crate) fn new(view: WasiFilesystemCtxView<'a>, guard: &'a mut FsGuard) -> Self {
        Self { view, guard }
    }
}

struct GuardedFsData;

impl HasData for GuardedFsData {
    type Data<'a> = GuardedFs<'a>;
}

/// Link the guarded `wasi:filesystem/types` and `wasi:filesystem/preopens` over the
/// ones `wasmtime_wasi::p2::add_to_linker_async` added, over each store's WASI
/// context and [`FsGuard`].
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};
    fn view<T: CallStore>(store: &mut T) -> GuardedFs<'_> {
        let StoreParts { wasi, table, access } = store.parts();
        GuardedFs::new(WasiFilesystemCtxView { ctx: wasi.filesystem(), table }, &mut access.fs_guard)
    }
    let view: fn(&mut T) -> GuardedFs<'_> = view::<T>;
    linker.allow_shadowing(true);
    types::add_to_linker::<T, GuardedFsData>(linker, view)?;
    preopens::add_to_linker::<T, GuardedFsData>(linker, view)?;
    linker.allow_shadowing(false);
    Ok(())
}
