//! Where a guest's `(directory, path)` lands on the host, decided before anything
//! is opened or changed.
//!
//! The path is split into its parent and its final name. The parent is opened with
//! cap-std relative to the guest's directory handle (so, exactly as wasmtime-wasi
//! would, it can't leave the preopen), and its real host path is read back from the
//! kernel (`/proc/self/fd`). When the final name is a symlink the call would follow,
//! it is followed here, hop by hop, through the same resolution. The operation then
//! runs on the opened parent with the final name and no further symlink following,
//! so what was checked is what is changed: a symlink swapped in afterwards makes the
//! operation fail, never land elsewhere.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

use cap_primitives::fs::{FileType, FileTypeExt, FollowSymlinks};
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

/// Symlinks followed at most while resolving one path (as Linux: 40).
const MAX_HOPS: u32 = 40;

/// The place a path names: its parent directory and the final name.
pub(super) struct Target {
    /// The parent, opened; `None` when it is the guest's handle itself (a path
    /// with no parent part: the common case costs no extra descriptor).
    parent: Option<File>,
    /// The final component; `None` when the path names a directory itself (`.`,
    /// `..`, or empty after the parent).
    pub(super) name: Option<OsString>,
}

impl Target {
    /// The parent directory: the one opened, or `handle`.
    pub(super) fn dir<'a>(&'a self, handle: &'a File) -> &'a File {
        self.parent.as_ref().unwrap_or(handle)
    }

    /// The parent, when it had to be opened (else the handle is the parent).
    pub(super) fn into_parent(self) -> Option<File> {
        self.parent
    }

    /// The final component as the guest string the delegate takes (`.` when the
    /// path names the parent itself).
    pub(super) fn name_str(&self) -> String {
        self.name.as_ref().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| ".".into())
    }

    /// The real host path of what the path names (the parent's path from the
    /// kernel, joined with the name).
    pub(super) fn real_path(&self, handle: &File) -> Result<PathBuf, ErrorCode> {
        let parent = real_path(self.dir(handle))?;
        Ok(match &self.name {
            Some(name) => parent.join(name),
            None => parent,
        })
    }

    /// The type of the final entry without following it, if it exists.
    pub(super) fn entry_type(&self, handle: &File) -> Option<FileType> {
        let name = self.name.as_ref()?;
        let meta = cap_primitives::fs::stat(self.dir(handle), Path::new(name), FollowSymlinks::No).ok()?;
        Some(meta.file_type())
    }

    /// The real name behind a lossily listed one: when the final name holds U+FFFD
    /// and is not there, the one entry of the parent whose name is not UTF-8 and
    /// shows as this name.
    pub(super) fn lossy_original(&self, handle: &File) -> Option<OsString> {
        let name = self.name.as_ref()?;
        if self.entry_type(handle).is_some() {
            return None;
        }
        lossy_entry(self.dir(handle), name)
    }

    /// Open the entry `real` of the parent for reading (a regular file or a
    /// directory only).
    pub(super) fn open_read(&self, handle: &File, real: &OsStr) -> Option<File> {
        let dir = self.dir(handle);
        let meta = cap_primitives::fs::stat(dir, Path::new(real), FollowSymlinks::No).ok()?;
        if meta.is_dir() {
            return cap_primitives::fs::open_dir(dir, Path::new(real)).ok();
        }
        if !meta.is_file() {
            return None;
        }
        cap_primitives::fs::open(dir, Path::new(real), cap_primitives::fs::OpenOptions::new().read(true)).ok()
    }
}

/// Resolve `path` relative to the directory handle `handle`: its parent opened (when
/// it has one) and the final name, with a final symlink followed when `follow`.
pub(super) fn resolve(handle: &File, path: &str, follow: bool) -> Result<Target, ErrorCode> {
    resolve_in(handle, Path::new(path), follow, 0)
}

fn resolve_in(handle: &File, path: &Path, follow: bool, hops: u32) -> Result<Target, ErrorCode> {
    if path.as_os_str().is_empty() {
        return Err(ErrorCode::NoEntry);
    }
    if path.is_absolute() {
        return Err(ErrorCode::NotPermitted);
    }
    let (parent_rel, name) = split(path);
    let parent = if parent_rel.as_os_str().is_empty() { None } else { Some(open_dir(handle, &parent_rel)?) };
    let target = Target { parent, name };
    if follow
        && let Some(name) = &target.name
        && target.entry_type(handle).is_some_and(|t| t.is_symlink())
    {
        if hops >= MAX_HOPS {
            return Err(ErrorCode::Loop);
        }
        // A symlink's text is relative to the directory holding it: resolve it from
        // the handle through that directory, as the kernel would.
        let link = cap_primitives::fs::read_link(target.dir(handle), Path::new(name)).map_err(io)?;
        if link.is_absolute() {
            return Err(ErrorCode::NotPermitted);
        }
        return resolve_in(handle, &parent_rel.join(link), true, hops + 1);
    }
    Ok(target)
}

/// Open the directory `rel` beneath `handle`; a component that holds U+FFFD and is
/// not there is taken as the lossily listed name of the one entry it stands for.
fn open_dir(handle: &File, rel: &Path) -> Result<File, ErrorCode> {
    match cap_primitives::fs::open_dir(handle, rel) {
        Ok(dir) => return Ok(dir),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound || !rel.to_string_lossy().contains('\u{fffd}') => {
            return Err(io(e));
        }
        Err(_) => {}
    }
    let mut dir: Option<File> = None;
    for component in rel.components() {
        let at = dir.as_ref().unwrap_or(handle);
        let next = match cap_primitives::fs::open_dir(at, Path::new(component.as_os_str())) {
            Ok(next) => next,
            Err(e) => match lossy_entry(at, component.as_os_str()) {
                Some(real) => cap_primitives::fs::open_dir(at, Path::new(&real)).map_err(io)?,
                None => return Err(io(e)),
            },
        };
        dir = Some(next);
    }
    dir.ok_or(ErrorCode::NoEntry)
}

/// The one entry of `dir` whose name is not UTF-8 and shows lossily as `shown`.
fn lossy_entry(dir: &File, shown: &OsStr) -> Option<OsString> {
    let shown = shown.to_str()?;
    if !shown.contains('\u{fffd}') {
        return None;
    }
    let mut found = None;
    for entry in cap_primitives::fs::read_base_dir(dir).ok()?.flatten() {
        let real = entry.file_name();
        if real.to_str().is_none() && real.to_string_lossy() == shown {
            if found.is_some() {
                // Two names show the same: neither is meant.
                return None;
            }
            found = Some(real);
        }
    }
    found
}

/// `path` as (parent, final name); the name is `None` when the last component is
/// not a plain name.
fn split(path: &Path) -> (PathBuf, Option<OsString>) {
    let mut components: Vec<Component<'_>> = path.components().collect();
    match components.last() {
        Some(Component::Normal(name)) => {
            let name = name.to_os_string();
            components.pop();
            (components.iter().collect(), Some(name))
        }
        _ => (path.to_path_buf(), None),
    }
}

/// The host path of an open file or directory, from the kernel.
pub(super) fn real_path(file: &File) -> Result<PathBuf, ErrorCode> {
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|_| ErrorCode::Access)
}

fn io(e: std::io::Error) -> ErrorCode {
    ErrorCode::from(e)
}

/// Whether a file type is one the sandbox never opens: FIFOs (an open blocks until
/// a writer comes), devices and sockets.
pub(super) fn is_special(t: &FileType) -> bool {
    t.is_fifo() || t.is_char_device() || t.is_block_device() || t.is_socket()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits() {
        let s = |p: &str| split(Path::new(p));
        assert_eq!(s("a/b/c"), (PathBuf::from("a/b"), Some("c".into())));
        assert_eq!(s("c"), (PathBuf::new(), Some("c".into())));
        assert_eq!(s("a/b/"), (PathBuf::from("a"), Some("b".into())));
        assert_eq!(s("a/.."), (PathBuf::from("a/.."), None));
        assert_eq!(s("."), (PathBuf::from("."), None));
    }

    #[test]
    fn final_links_are_followed_inside_and_refused_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::os::unix::fs::symlink("real/sub", root.join("link")).unwrap();
        std::os::unix::fs::symlink("../x", root.join("real/up")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let handle = std::fs::File::open(&root).unwrap();
        let t = resolve(&handle, "link", true).unwrap();
        assert_eq!(t.real_path(&handle).unwrap(), root.join("real/sub"));
        let t = resolve(&handle, "link", false).unwrap();
        assert_eq!(t.real_path(&handle).unwrap(), root.join("link"));
        assert!(t.into_parent().is_none(), "a name with no parent costs no descriptor");
        let t = resolve(&handle, "real/up", true).unwrap();
        assert_eq!(t.real_path(&handle).unwrap(), root.join("x"));
        assert_eq!(t.name_str(), "x");
        assert!(matches!(resolve(&handle, "abs", true), Err(ErrorCode::NotPermitted)));
        assert!(matches!(resolve(&handle, "loop", true), Err(ErrorCode::Loop)));
        assert!(resolve(&handle, "../outside", false).is_err());
        assert!(resolve(&handle, "link/../../..", false).is_err());
    }
}
