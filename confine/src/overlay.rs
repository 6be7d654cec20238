//! A writing child's view of the work dir: an overlayfs mounted by the child in a
//! mount namespace of its own, the work dir its lower layer and a [`Layer`] of
//! the host's (outside the work dir, `super::staging`) its upper one. Everything
//! the child writes lands in the upper layer; the host merges it into the work
//! dir once the child's whole tree is dead ([`After::Merge`], `super::merge`),
//! refusing protected paths. A host killed meanwhile merges nothing: no `.git`,
//! hook or `core.fsmonitor` the child made ever reaches the work dir.
//!
//! The child mounts it unprivileged (its own user namespace, `userxattr`), then
//! binds each protected path the walk found over itself on the overlay,
//! read-only (or, for a `.git` under a commit grant, only pinned: its data is
//! written through the overlay and merged too), so that writing one fails at
//! once, as without an overlay. Landlock rules are on inodes, so the child's
//! ruleset gets its work dir rule on the overlay's root, added by the child
//! after the mount (`super::confine`).
//!
//! What a child sees differently: renaming a dir that was in the work dir before
//! it started fails with `EXDEV` (overlayfs without redirects; `mv` copies
//! instead); a file it changes, even only its mode or times, is first copied
//! whole into the upper layer (held to `RLIMIT_FSIZE` like any write); changes
//! others make to the work dir while it runs may or may not show.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::merge;
use super::meter::WriteMeter;
use super::mounts::{MountOp, ProtectBind, c_path};
use super::protect::Protected;
use super::protect_check::describe;
use super::staging::Layer;

/// The steps, in a child, that mount `layer` over the work dir `work` and bind
/// `protect` over themselves on it; every path as seen under `root` (`/` in a
/// shared root, the new root while a child builds its own).
fn mount_ops(
    layer: &Layer,
    work: &Path,
    root: &Path,
    protect: &[ProtectBind],
) -> Result<Vec<MountOp>, String> {
    let at = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
    let mut data = b"lowerdir=".to_vec();
    escape(&mut data, &at(work));
    data.extend_from_slice(b",upperdir=");
    escape(&mut data, &at(&layer.upper));
    data.extend_from_slice(b",workdir=");
    escape(&mut data, &at(&layer.work));
    data.extend_from_slice(b",userxattr");
    let text = |s: &str| c_path(Path::new(s));
    let data = std::ffi::CString::new(data).map_err(|_| "a layer's path holds a NUL byte".to_string())?;
    let mut ops = vec![MountOp::Mount {
        source: Some(text("overlay")?),
        target: c_path(&at(work))?,
        fstype: Some(text("overlay")?),
        flags: libc::MS_NOSUID | libc::MS_NODEV,
        data: Some(data),
    }];
    let mut protect: Vec<&ProtectBind> = protect.iter().collect();
    // A `.git` before the guarded entries inside it.
    protect.sort_by_key(|b| b.path.components().count());
    for b in protect {
        let path = c_path(&at(&b.path))?;
        ops.push(MountOp::Mount {
            source: Some(path.clone()),
            target: path.clone(),
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
        });
        if b.read_only {
            ops.push(MountOp::ReadOnly { target: path, recursive: true });
        }
    }
    Ok(ops)
}

/// A writing child's overlay, as steps for either kind of root, and the work
/// dir its Landlock rule goes on.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// In a shared root (paths as they are).
    pub(super) shared: Vec<MountOp>,
    /// In a root the child builds (paths under `super::mounts::NEW_ROOT`).
    pub(super) own: Vec<MountOp>,
    /// The work dir (the overlay's root, once mounted).
    pub(super) work: std::ffi::CString,
}

/// [`mount_ops`] for both kinds of root.
pub(super) fn plan(layer: &Layer, work: &Path, protect: &[ProtectBind]) -> Result<Plan, String> {
    Ok(Plan {
        shared: mount_ops(layer, work, Path::new("/"), protect)?,
        own: mount_ops(layer, work, Path::new(super::mounts::NEW_ROOT), protect)?,
        work: c_path(work)?,
    })
}

/// `path` into overlayfs's option string, its separators escaped.
fn escape(out: &mut Vec<u8>, path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    for &b in path.as_os_str().as_bytes() {
        if matches!(b, b'\\' | b',' | b':') {
            out.push(b'\\');
        }
        out.push(b);
    }
}

/// Why a merge failed the call: it stopped midway (what was not merged is kept),
/// or it refused protected paths (the message names them).
#[derive(Debug)]
pub(super) enum Unmerged {
    /// It stopped midway.
    Failed(String),
    /// It refused protected paths.
    Protected(String),
}

/// A layer to merge, and what the merge needs.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) layer: Layer,
    pub(super) protected: Arc<Protected>,
    /// Repository data may change (the grant's `commit`).
    pub(super) commit: bool,
    /// Charged with the work dir's growth.
    pub(super) quota: Option<Arc<WriteMeter>>,
    /// One merge at a time on a host.
    pub(super) one: Arc<Mutex<()>>,
}

impl Pending {
    pub(super) fn finish(self) -> Result<(), Unmerged> {
        let _one = self.one.lock().unwrap_or_else(|e| e.into_inner());
        let work = self.protected.work_dir();
        let (merged, failed) = match merge::merge(&self.layer.upper, work, &self.protected, self.commit) {
            Ok(merged) => (merged, None),
            Err((merged, e)) => (merged, Some(e)),
        };
        tracing::debug!(
            changed = merged.changed,
            refused = merged.refused.len(),
            dropped = merged.dropped,
            growth = merged.growth(),
            "a command's overlay merged"
        );
        if let Some(quota) = &self.quota {
            quota.record(merged.growth());
        }
        if let Some(e) = failed {
            let kept = self.layer.keep();
            return Err(Unmerged::Failed(format!(
                "merging the command's changes into the work dir stopped at {e}; {} entries were merged, \
                 and what was not is kept in {}",
                merged.changed,
                kept.display()
            )));
        }
        if merged.refused.is_empty() { Ok(()) } else { Err(Unmerged::Protected(describe(&merged.refused))) }
    }
}

#[cfg(test)]
#[path = "overlay_tests.rs"]
mod tests;
