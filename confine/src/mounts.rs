//! The child's own filesystem view: a mount namespace whose root holds only what a
//! child may reach, so that nothing else — a container runtime's or a desktop
//! session's unix socket, the host's `/tmp` and `/run` — even has a name there.
//! Landlock does not stop `connect()` to a named unix socket; a path that does not
//! exist does.
//!
//! The root is a fresh tmpfs, made read-only once built, holding:
//! - bind mounts (read-only) of the system dirs, the exec `path` and `read-dirs`, the
//!   allowed `/etc` entries, `/proc` (names only: Landlock refuses opening anything
//!   there, as before), and a minimal `/dev` (`null`, `zero`, `full`, `random`,
//!   `urandom`, `tty`: binds of the host's nodes, no others);
//! - the work dir, bound read-write for a call that may write and read-only
//!   otherwise, and read-only binds over its protected paths (see `protect_walk`);
//! - empty, private `/tmp`, `/run` and `/var/run` (children put temporary files in
//!   `TMPDIR`, the work dir);
//! - the symlinks met on the way to each of these (`/bin -> usr/bin`), recreated.
//!
//! Building it is bubblewrap's dance: a tmpfs over `/tmp`, `pivot_root` into it
//! (the host's root moves to `/oldroot`), a second tmpfs at `/newroot` filled with
//! binds from `/oldroot`, the old root detached, then `pivot_root(".", ".")` and a
//! detach make `/newroot` the root. Bind mounts keep inode identity, so the Landlock
//! rules the host built on its own paths still apply inside.
//!
//! Everything is planned here, in the parent: [`Layout`] is built once per host and
//! [`Layout::script`] turns it, per child, into [`MountOp`]s holding C strings that
//! the child runs with raw system calls only (`super::confine`).

use std::collections::HashSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Where the staging tmpfs goes before the first `pivot_root` (hidden from the host:
/// it is mounted in the child's own namespace).
const STAGE: &str = "/tmp";
/// Where the child's root is built, once the staging tmpfs is the root.
pub(super) const NEW_ROOT: &str = "/newroot";
/// Where the host's root sits meanwhile.
const OLD_ROOT: &str = "/oldroot";
/// How many symlinks a path may pass through before it is left out.
const MAX_LINKS: u32 = 40;

/// One step of building a child's root, run in the child with raw system calls.
#[derive(Debug, Clone)]
pub(crate) enum MountOp {
    /// `mount(2)`.
    Mount {
        /// Source (a path, or the filesystem's name).
        source: Option<CString>,
        /// Mount point.
        target: CString,
        /// Filesystem type.
        fstype: Option<CString>,
        /// `MS_*` flags.
        flags: libc::c_ulong,
        /// Filesystem options.
        data: Option<CString>,
    },
    /// Make the mount at `target` read-only (`mount_setattr`), with those beneath
    /// it when `recursive`.
    ReadOnly {
        /// The mount point.
        target: CString,
        /// Also every mount beneath it.
        recursive: bool,
    },
    /// Create a directory (an existing one is fine).
    Mkdir(CString),
    /// Create an empty file to bind a file onto (an existing one is fine).
    Touch(CString),
    /// Create the symlink `at` pointing to `target`.
    Symlink {
        /// What it points to.
        target: CString,
        /// Where it is made.
        at: CString,
    },
    /// `pivot_root(2)`.
    PivotRoot {
        /// The new root.
        new_root: CString,
        /// Where the old root goes.
        put_old: CString,
    },
    /// Detach the mount at this path (`umount2(MNT_DETACH)`).
    Detach(CString),
    /// `chdir(2)`.
    Chdir(CString),
    /// Fail unless `path` (not followed) is the inode `(dev, ino)`: after a bind of
    /// a protected path, the mount is what the host's walk found, not whatever a
    /// symlink swapped in above it meanwhile points to.
    Expect {
        /// The path to check.
        path: CString,
        /// `st_dev` the walk saw.
        dev: u64,
        /// `st_ino` the walk saw.
        ino: u64,
        /// Also fail unless `path` is the root of a mount (in a shared root: the
        /// bind is still there, not detached since by the host removing its source).
        mount_root: bool,
    },
}

/// A read-only (or, for a `.git` under a commit grant, read-write) bind of a path
/// inside the work dir over itself, with the inode it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ProtectBind {
    /// The host path (absolute, inside the work dir).
    pub(super) path: PathBuf,
    /// Read-only (else only pinned: a mount point cannot be removed or renamed).
    pub(super) read_only: bool,
    /// `st_dev` of the path when it was found.
    pub(super) dev: u64,
    /// `st_ino` of the path when it was found.
    pub(super) ino: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir(PathBuf),
    File(PathBuf),
    Symlink(PathBuf, PathBuf),
    Bind(PathBuf),
}

/// What a child's root holds besides the work dir: planned once per host from the
/// host's own filesystem (which paths exist, which are symlinks).
#[derive(Debug, Clone, Default)]
pub(super) struct Layout {
    nodes: Vec<Node>,
    planned: HashSet<PathBuf>,
    bound: Vec<PathBuf>,
    /// The work dir and whether it is already visible through another bind.
    work_dir: Option<PathBuf>,
    /// The host's dir of overlay layers (`super::staging`), bound read-write:
    /// Landlock gives no child a right in it; a writing child's overlay reaches
    /// its own layer there.
    staging: Option<PathBuf>,
}

impl Layout {
    /// A layout with `read_only` paths (system dirs, `/etc` entries, read dirs),
    /// `devices` (bound as they are) and the empty `private` dirs, around `work_dir`.
    /// Paths that do not exist on this host are left out.
    pub(super) fn new(
        read_only: &[PathBuf],
        devices: &[PathBuf],
        private: &[PathBuf],
        work_dir: Option<&Path>,
    ) -> Self {
        let mut layout = Self::default();
        let mut sorted: Vec<&PathBuf> = read_only.iter().collect();
        // Parents first, so that a dir inside another bind is not planned again.
        sorted.sort_by_key(|p| p.components().count());
        for path in sorted {
            layout.expose(&normalize(path), 0);
        }
        for dev in devices {
            layout.expose(&normalize(dev), 0);
        }
        for dir in private {
            layout.private(&normalize(dir));
        }
        if let Some(dir) = work_dir {
            let dir = normalize(dir);
            layout.parents(&dir);
            layout.work_dir = Some(dir);
        }
        layout
    }

    /// The same layout, with the host's dir of overlay layers `staging` bound.
    pub(super) fn with_staging(mut self, staging: Option<&Path>) -> Self {
        if let Some(dir) = staging {
            let dir = normalize(dir);
            self.parents(&dir);
            self.staging = Some(dir);
        }
        self
    }

    /// Every host path bound into the root, in order.
    #[cfg(test)]
    fn bound(&self) -> &[PathBuf] {
        &self.bound
    }

    /// Make `path` visible at the same place: its parents as dirs on the tmpfs, the
    /// symlinks on the way recreated (and followed), the path itself bound.
    fn expose(&mut self, path: &Path, links: u32) {
        if links > MAX_LINKS {
            return;
        }
        let parts: Vec<Component> = path.components().skip(1).collect();
        let mut cur = PathBuf::from("/");
        for (i, part) in parts.iter().enumerate() {
            let next = cur.join(part);
            if self.covered(&next) {
                return;
            }
            let Ok(meta) = std::fs::symlink_metadata(&next) else { return };
            let kind = meta.file_type();
            if kind.is_symlink() {
                let Ok(target) = std::fs::read_link(&next) else { return };
                self.plan(Node::Symlink(next, target.clone()));
                let rest: PathBuf = parts[i + 1..].iter().collect();
                return self.expose(&normalize(&cur.join(target).join(rest)), links + 1);
            }
            if i + 1 == parts.len() {
                use std::os::unix::fs::FileTypeExt;
                if kind.is_dir() {
                    self.plan(Node::Dir(next.clone()));
                } else if kind.is_file() || kind.is_char_device() {
                    self.plan(Node::File(next.clone()));
                } else {
                    // Sockets, FIFOs and block devices are never bound.
                    return;
                }
                self.bound.push(next.clone());
                self.nodes.push(Node::Bind(next));
                return;
            }
            if !kind.is_dir() {
                return;
            }
            self.plan(Node::Dir(next.clone()));
            cur = next;
        }
    }

    /// An empty dir at `path` (or the host's symlink there, recreated).
    fn private(&mut self, path: &Path) {
        self.parents(path);
        if self.covered(path) {
            return;
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    self.plan(Node::Symlink(path.to_path_buf(), target));
                }
            }
            _ => self.plan(Node::Dir(path.to_path_buf())),
        }
    }

    /// Dirs on the tmpfs for the parents of `path` not already visible.
    fn parents(&mut self, path: &Path) {
        let mut cur = PathBuf::from("/");
        let parts: Vec<Component> = path.components().skip(1).collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            cur.push(part);
            if self.covered(&cur) {
                return;
            }
            self.plan(Node::Dir(cur.clone()));
        }
    }

    fn covered(&self, path: &Path) -> bool {
        self.bound.iter().any(|b| path.starts_with(b))
    }

    fn plan(&mut self, node: Node) {
        let path = match &node {
            Node::Dir(p) | Node::File(p) | Node::Symlink(p, _) | Node::Bind(p) => p.clone(),
        };
        if self.planned.insert(path) {
            self.nodes.push(node);
        }
    }

    /// The steps that build one child's root: the work dir read-write when
    /// `writable`, the `protect` binds over it, the `extra` steps (a writing
    /// child's overlay, its paths under [`NEW_ROOT`]), then `cwd` as the working
    /// directory.
    pub(super) fn script(
        &self,
        writable: bool,
        protect: &[ProtectBind],
        cwd: &Path,
        extra: Vec<MountOp>,
    ) -> Result<Vec<MountOp>, String> {
        let new = |p: &Path| c_path(&Path::new(NEW_ROOT).join(p.strip_prefix("/").unwrap_or(p)));
        let old = |p: &Path| c_path(&Path::new(OLD_ROOT).join(p.strip_prefix("/").unwrap_or(p)));
        let lit = |s: &str| c_path(Path::new(s));
        let tmpfs = |target: CString, size: &str| -> Result<MountOp, String> {
            Ok(MountOp::Mount {
                source: Some(lit("tmpfs")?),
                target,
                fstype: Some(lit("tmpfs")?),
                flags: libc::MS_NOSUID | libc::MS_NODEV,
                data: Some(lit(&format!("mode=0755,size={size}"))?),
            })
        };
        let bind = |ops: &mut Vec<MountOp>, path: &Path, read_only: bool| -> Result<(), String> {
            ops.push(MountOp::Mount {
                source: Some(old(path)?),
                target: new(path)?,
                fstype: None,
                flags: libc::MS_BIND | libc::MS_REC,
                data: None,
            });
            if read_only {
                ops.push(MountOp::ReadOnly { target: new(path)?, recursive: true });
            }
            Ok(())
        };
        let stage = Path::new(STAGE);
        let mut ops = vec![
            MountOp::Mount {
                source: None,
                target: lit("/")?,
                fstype: None,
                flags: libc::MS_REC | libc::MS_PRIVATE,
                data: None,
            },
            tmpfs(lit(STAGE)?, "64k")?,
            MountOp::Mkdir(c_path(&stage.join("newroot"))?),
            MountOp::Mkdir(c_path(&stage.join("oldroot"))?),
            MountOp::PivotRoot { new_root: lit(STAGE)?, put_old: c_path(&stage.join("oldroot"))? },
            MountOp::Chdir(lit("/")?),
            tmpfs(lit(NEW_ROOT)?, "1m")?,
        ];
        for node in &self.nodes {
            match node {
                Node::Dir(p) => ops.push(MountOp::Mkdir(new(p)?)),
                Node::File(p) => ops.push(MountOp::Touch(new(p)?)),
                Node::Symlink(p, target) => {
                    ops.push(MountOp::Symlink { target: c_path(target)?, at: new(p)? })
                }
                // Devices keep their own mount's flags: a read-only mount would not
                // stop writes to a device anyway, and Landlock decides which are
                // writable.
                Node::Bind(p) => bind(&mut ops, p, !p.starts_with("/dev"))?,
            }
        }
        if let Some(work) = &self.work_dir {
            if !self.covered(work) {
                ops.push(MountOp::Mkdir(new(work)?));
            }
            bind(&mut ops, work, !writable)?;
        }
        if let Some(staging) = &self.staging {
            if !self.covered(staging) {
                ops.push(MountOp::Mkdir(new(staging)?));
            }
            bind(&mut ops, staging, false)?;
        }
        let mut protect: Vec<&ProtectBind> = protect.iter().collect();
        // A `.git` before the guarded entries inside it.
        protect.sort_by_key(|b| b.path.components().count());
        for b in protect {
            bind(&mut ops, &b.path, b.read_only)?;
            ops.push(MountOp::Expect { path: new(&b.path)?, dev: b.dev, ino: b.ino, mount_root: false });
        }
        ops.extend(extra);
        ops.extend([
            MountOp::ReadOnly { target: lit(NEW_ROOT)?, recursive: false },
            MountOp::Detach(lit(OLD_ROOT)?),
            MountOp::Chdir(lit(NEW_ROOT)?),
            MountOp::PivotRoot { new_root: lit(".")?, put_old: lit(".")? },
            MountOp::Detach(lit(".")?),
            MountOp::Chdir(c_path(cwd)?),
        ]);
        Ok(ops)
    }

    /// The steps that build a root to share (`super::shared_root`): [`Self::script`]
    /// ending at `/`, with the root's tmpfs itself made read-only (not only its
    /// mount), so that no mount of it anywhere can write to it.
    pub(super) fn shared_script(
        &self,
        writable: bool,
        protect: &[ProtectBind],
    ) -> Result<Vec<MountOp>, String> {
        let mut ops = self.script(writable, protect, Path::new("/"), Vec::new())?;
        ops.insert(
            ops.len() - 1,
            MountOp::Mount {
                source: None,
                target: c_path(Path::new("/"))?,
                fstype: None,
                flags: libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
                data: None,
            },
        );
        Ok(ops)
    }

    /// What a child that enters a shared root built by [`Self::shared_script`]
    /// checks there before anything else: the work dir is still the inode the
    /// host's work dir is now, and a mount, each protected path still the inode the walk
    /// found and a mount; then the `extra` steps (a writing child's overlay, in a
    /// mount namespace of its own), then `cwd`. A failed check means the shared
    /// root went stale (the host removed or replaced what a bind was made of).
    pub(super) fn checks(
        &self,
        protect: &[ProtectBind],
        cwd: &Path,
        extra: Vec<MountOp>,
    ) -> Result<Vec<MountOp>, String> {
        use std::os::unix::fs::MetadataExt;
        let mut ops = Vec::with_capacity(protect.len() + 2);
        if let Some(dir) = &self.work_dir {
            let meta =
                std::fs::symlink_metadata(dir).map_err(|e| format!("the work dir {}: {e}", dir.display()))?;
            ops.push(MountOp::Expect {
                path: c_path(dir)?,
                dev: meta.dev(),
                ino: meta.ino(),
                mount_root: true,
            });
        }
        for b in protect {
            ops.push(MountOp::Expect { path: c_path(&b.path)?, dev: b.dev, ino: b.ino, mount_root: true });
        }
        ops.extend(extra);
        ops.push(MountOp::Chdir(c_path(cwd)?));
        Ok(ops)
    }
}

/// Whether the host has what building a child's root needs.
pub(super) fn check_host() -> Result<(), String> {
    match std::fs::metadata(STAGE) {
        Ok(meta) if meta.is_dir() => Ok(()),
        _ => Err(format!("there is no {STAGE} directory to build a child's root on")),
    }
}

/// `path` without `.` and with `..` applied, lexically (configured paths only).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// `path` as a C string (an error for a NUL byte).
pub(super) fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} contains a NUL byte", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(layout: &Layout) -> Vec<String> {
        layout
            .nodes
            .iter()
            .map(|n| match n {
                Node::Dir(p) => format!("dir {}", p.display()),
                Node::File(p) => format!("file {}", p.display()),
                Node::Symlink(p, t) => format!("link {} -> {}", p.display(), t.display()),
                Node::Bind(p) => format!("bind {}", p.display()),
            })
            .collect()
    }

    #[test]
    fn symlinks_on_the_way_are_recreated_and_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/bin")).unwrap();
        std::fs::write(root.join("real/bin/tool"), "").unwrap();
        std::os::unix::fs::symlink("real", root.join("alias")).unwrap();
        std::fs::create_dir(root.join("sock")).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(root.join("sock/s")).unwrap();
        let layout = Layout::new(
            &[root.join("alias/bin"), root.join("real/bin/tool"), root.join("sock/s"), root.join("missing")],
            &[],
            &[],
            None,
        );
        let nodes = names(&layout);
        let link = format!("link {} -> real", root.join("alias").display());
        let bind = format!("bind {}", root.join("real/bin").display());
        assert!(nodes.contains(&link), "{nodes:?}");
        assert!(nodes.contains(&bind), "{nodes:?}");
        // Inside a bind already: not planned again. A socket is never bound.
        assert_eq!(layout.bound(), &[root.join("real/bin")], "{nodes:?}");
        assert!(!nodes.iter().any(|n| n.contains("missing")), "{nodes:?}");
    }

    #[test]
    fn the_script_binds_the_work_dir_then_the_protected_paths_and_ends_in_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::create_dir(work.join(".git")).unwrap();
        let layout = Layout::new(
            &[PathBuf::from("/usr")],
            &[PathBuf::from("/dev/null")],
            &[PathBuf::from("/tmp")],
            Some(&work),
        );
        let protect = [ProtectBind { path: work.join(".git"), read_only: true, dev: 1, ino: 2 }];
        let ops = layout.script(false, &protect, &work, Vec::new()).unwrap();
        let text = format!("{ops:?}");
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} in {text}"));
        let work_bind = at(&format!("\"/newroot{}\"", work.display()));
        assert!(at("\"/newroot/usr\"") < work_bind);
        assert!(work_bind < at(&format!("\"/newroot{}/.git\"", work.display())));
        assert!(matches!(ops.last(), Some(MountOp::Chdir(c)) if c.as_bytes() == work.as_os_str().as_bytes()));
        // Read-only call: the work dir bind is made read-only too.
        let ro = ops.iter().filter(|op| matches!(op, MountOp::ReadOnly { .. })).count();
        let rw = layout.script(true, &protect, &work, Vec::new()).unwrap();
        let ro_writable = rw.iter().filter(|op| matches!(op, MountOp::ReadOnly { .. })).count();
        assert_eq!(ro, ro_writable + 1);
        assert!(layout.script(true, &[], Path::new("/a\0b"), Vec::new()).is_err());
    }
}
