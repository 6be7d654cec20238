//! A child's root built once and entered by many children, instead of built by
//! each (see BENCHMARKS.md: building it took a millisecond, and tearing down each
//! child's mount namespace as it exited slowed the next child's mounts far more).
//!
//! A [`SharedRoot`] is a user namespace and a mount namespace, kept by descriptor
//! only (no process lives in them): a helper (`super::clone::build_shared_root`)
//! made both and ran the same script a child runs (`super::mounts`), the root's
//! tmpfs then made read-only as a filesystem. A child enters the user namespace
//! (the host's uid owns it, so the child has every capability there), then the
//! mount namespace, then makes its own user and network namespaces inside: from
//! there it has no capability over the shared root, and cannot change a mount in it
//! even before it drops its capabilities and applies Landlock. Children see the
//! same paths, with the same binds, as in a root of their own; none can write to
//! the root's tmpfs (`/tmp`, `/run` are read-only empty dirs there, as before).
//!
//! A root holds the work dir's binds, so it is made per (read-only or writing call,
//! protected binds found by that call's walk): a new `.git` gives a new set of
//! binds, so a new root. A child checks before anything else that each bind is
//! still there and still the inode the host saw just now (`Layout::checks`): the
//! host removing a `.git` detaches its bind in the shared root (the kernel does so
//! for mounts in other namespaces), and a new `.git` may get the old inode number.
//! A child whose check fails is not run; the root is dropped, and the spawn tried
//! once more with a fresh one ([`SharedRoots::forget`]).
//!
//! A child also gets a network namespace of its own made ahead of time, off the
//! call's path (making one took most of what was left of a confined start; see
//! BENCHMARKS.md): a helper enters the root's user namespace and makes a few
//! ([`SharedRoots::net`]), each handed to one child, which enters it before making
//! its own user namespace (so it has no capability over it, as over the mounts).
//! A child that finds none left makes its own, as before.
//!
//! The descriptors are close-on-exec: a child holds them only until its `exec`.
//! A root the host no longer keeps goes when the last child in it has exited.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::clone::ChildFailed;
use super::confine::{IdMaps, SharedRoot};
use super::mounts::{Layout, ProtectBind};

/// How many roots a host keeps (one per set of binds; read-only calls share one).
const KEEP: usize = 4;

/// How many network namespaces made ahead of time a root keeps.
const NETS: usize = 4;

/// What a root is built for: a writing call or not, and the protected binds.
type Key = (bool, Vec<ProtectBind>);

/// The roots of one host, most recently used first.
#[derive(Debug, Default)]
pub(super) struct SharedRoots {
    built: Mutex<Vec<(Key, Arc<SharedRoot>)>>,
}

impl SharedRoots {
    /// The root for a `writable` call with `protect` bound over its work dir, built
    /// from `layout` if there is none yet.
    pub(super) fn get(
        &self,
        layout: &Layout,
        ids: &IdMaps,
        writable: bool,
        protect: &[ProtectBind],
    ) -> Result<Arc<SharedRoot>, String> {
        let mut binds = protect.to_vec();
        binds.sort_by(|a, b| a.path.cmp(&b.path));
        let key = (writable, binds);
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = built.iter().position(|(k, _)| *k == key) {
            let entry = built.remove(at);
            let root = entry.1.clone();
            built.insert(0, entry);
            return Ok(root);
        }
        let ops = layout.shared_script(writable, protect)?;
        let (userns, mntns) = super::clone::build_shared_root(ids, &ops).map_err(|e| match e {
            super::clone::StartFailed::Host(e) => format!("starting the helper: {e}"),
            super::clone::StartFailed::Child(ChildFailed::Setup(s)) => {
                format!("{}: {}", s.step.describe(), std::io::Error::from_raw_os_error(s.errno))
            }
            super::clone::StartFailed::Child(other) => format!("{other:?}"),
        })?;
        let root = Arc::new(SharedRoot::new(userns, mntns));
        built.insert(0, (key, root.clone()));
        let keep = KEEP.min(built.len());
        let old: Vec<_> = built.drain(keep..).collect();
        drop(built);
        release(old);
        Ok(root)
    }

    /// Stop keeping `root` (a child found it stale).
    pub(super) fn forget(&self, root: &Arc<SharedRoot>) {
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<_> = built.extract_if(.., |(_, r)| Arc::ptr_eq(r, root)).collect();
        drop(built);
        release(gone);
    }

    /// A network namespace of `root`'s for one child, if one is left; a helper
    /// then makes more, off the caller's path.
    pub(super) fn net(&self, root: &Arc<SharedRoot>) -> Option<OwnedFd> {
        let (net, left) = root.take_net();
        if left < NETS && !root.refilling.swap(true, Ordering::AcqRel) {
            let root = root.clone();
            let refill = move || {
                match super::clone::make_nets(root.userns(), NETS - left) {
                    Ok(made) => root.add_nets(made),
                    Err(e) => tracing::debug!(error = ?e, "no network namespaces made ahead of time"),
                }
                root.refilling.store(false, Ordering::Release);
            };
            off_path(refill);
        }
        net
    }

    /// How many roots are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.built.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Drop roots off the caller's path where there is a runtime: the last reference
/// to a mount namespace unmounts everything in it.
fn release<T: Send + 'static>(old: Vec<T>) {
    if !old.is_empty() {
        off_path(move || drop(old));
    }
}

/// Run `work` on a blocking thread of the runtime, or where there is none, now.
fn off_path(work: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(work)),
        Err(_) => work(),
    }
}

#[cfg(test)]
#[path = "shared_root_tests.rs"]
mod tests;
