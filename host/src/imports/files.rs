//! Host side of `toolhost:plugin/files`: filesystem operations WASI 0.2
//! lacks, confined to the call's work dir with cap-std (the same confinement
//! the WASI preopen uses: no `..`, no absolute paths, no symlinks out).

use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use wasmtime::component::{HasData, Linker};

use super::capability::Capability;
use super::{CallStore, FsAccess};
use crate::bindings::toolhost::plugin::files;

/// Needs no grant of its own: a call without a writable work dir is refused each operation.
pub(crate) const CAPABILITY: Capability =
    Capability { name: "files", interfaces: &["toolhost:plugin/files"], needs: None };

/// What the files import works on: the call's filesystem.
pub(crate) struct FilesView<'a> {
    /// The call's filesystem.
    pub fs: &'a FsAccess,
}

struct HasFiles;

impl HasData for HasFiles {
    type Data<'a> = FilesView<'a>;
}

/// Link `toolhost:plugin/files` over each store's filesystem.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    files::add_to_linker::<T, HasFiles>(linker, |store| FilesView { fs: &store.parts().access.fs })
}

impl files::Host for FilesView<'_> {
    async fn copy_permissions(&mut self, from: String, to: String) -> Result<(), String> {
        let Some(dir) = self.fs.writable_dir() else {
            return Err("this call may not change files".into());
        };
        let root = Dir::open_ambient_dir(dir, ambient_authority()).map_err(|e| e.to_string())?;
        let (from, to) = (inside(dir, &from)?, inside(dir, &to)?);
        let perms = root.metadata(&from).map_err(|e| format!("{}: {e}", from.display()))?.permissions();
        root.set_permissions(&to, perms).map_err(|e| format!("{}: {e}", to.display()))
    }
}

/// `guest_path` relative to the work dir (guest paths of the work dir are
/// its host paths), or an error when it is not inside it.
fn inside(work_dir: &Path, guest_path: &str) -> Result<PathBuf, String> {
    Path::new(guest_path)
        .strip_prefix(work_dir)
        .map(Path::to_path_buf)
        .map_err(|_| format!("{guest_path} is outside the work directory"))
}

#[cfg(test)]
mod tests {
    use super::inside;
    use std::path::Path;

    #[test]
    fn paths_must_be_inside_the_work_dir() {
        let root = Path::new("/w/proj");
        assert_eq!(inside(root, "/w/proj/a/b").unwrap(), Path::new("a/b"));
        assert!(inside(root, "/w/projx/a").is_err());
        assert!(inside(root, "/etc/passwd").is_err());
        assert!(inside(root, "a").is_err());
    }
}
