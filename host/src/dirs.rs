//! Where the host keeps its own state outside any work dir: the data dir
//! (`$TOOLHOST_DATA_DIR`, else `$XDG_DATA_HOME/toolhost`, else
//! `$HOME/.local/share/toolhost`) and the config dir (`$TOOLHOST_CONFIG_DIR`,
//! else `$XDG_CONFIG_HOME/toolhost`, else `$HOME/.config/toolhost`: trust
//! records, private policies). Tools never see them: they are not preopened,
//! and the `toolhost` binary refuses to start when one of them, or a secret
//! it is given (a token or key file, the output store), is reached through the
//! work dir ([`reached_through`]), where any tool that reads could read it.
//!
//! Each kind of state has its own subdirectory, created 0700 on first use with
//! `confine::hostfs::create_private_dir`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed at most while resolving a path (as the kernel's `ELOOP`).
const MAX_LINKS: usize = 40;

/// The host's data dir by default, or `None` when no variable names one (the
/// `toolhost` binary's; a library host uses it when [`crate::HostBuilder::data_dir`] is not set).
pub fn default_data_dir() -> Option<PathBuf> {
    from_env("TOOLHOST_DATA_DIR", "XDG_DATA_HOME", &[".local", "share"])
}

/// The user's config dir as the environment names it (not resolved), or
/// `None` when no variable names one.
pub fn default_config_dir() -> Option<PathBuf> {
    from_env("TOOLHOST_CONFIG_DIR", "XDG_CONFIG_HOME", &[".config"])
}

/// `$OWN`, else `$XDG/toolhost`, else `$HOME/<under>/toolhost`.
fn from_env(own: &str, xdg: &str, under: &[&str]) -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env(own).or_else(|| env(xdg).map(|d| d.join("toolhost"))).or_else(|| {
        env("HOME").map(|home| under.iter().fold(home, |path, part| path.join(part)).join("toolhost"))
    })
}

/// One step of a path being resolved.
enum Step {
    Root,
    Up,
    Name(OsString),
}

fn steps(path: &Path) -> impl Iterator<Item = Step> + '_ {
    path.components().filter_map(|c| match c {
        Component::RootDir | Component::Prefix(_) => Some(Step::Root),
        Component::CurDir => None,
        Component::ParentDir => Some(Step::Up),
        Component::Normal(name) => Some(Step::Name(name.to_os_string())),
    })
}

/// Where resolving `path` (relative: to the current dir) passes through the
/// work dir `work_dir`, if it does: a name inside the work dir on the way (a
/// tool can put a symlink or directory there, so what `path` names is the
/// tool's to choose), or the end (`path` is the work dir or inside it). Symlinks
/// are followed as the kernel does, `..` after a link included; names that do
/// not exist yet resolve as written. `Ok(None)`: it stays outside.
pub fn reached_through(work_dir: &Path, path: &Path) -> io::Result<Option<PathBuf>> {
    let work = work_dir.canonicalize()?;
    let inside = |p: &Path| p.starts_with(&work) && p != work;
    let mut resolved =
        if path.is_absolute() { PathBuf::from("/") } else { std::env::current_dir()?.canonicalize()? };
    let mut pending: VecDeque<Step> = steps(path).collect();
    let mut links = 0;
    while let Some(step) = pending.pop_front() {
        let name = match step {
            Step::Root => {
                resolved = PathBuf::from("/");
                continue;
            }
            Step::Up => {
                resolved.pop();
                continue;
            }
            Step::Name(name) => name,
        };
        let next = resolved.join(&name);
        if inside(&next) {
            return Ok(Some(next));
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::other(format!("{}: too many symlinks", path.display())));
                }
                let target = std::fs::read_link(&next)?;
                // Relative targets resolve from the link's directory (`resolved`).
                for step in steps(&target).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(step);
                }
            }
            _ => resolved = next,
        }
    }
    Ok((resolved.starts_with(&work)).then_some(resolved))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn paths_reached_through_the_work_dir_are_found_however_they_are_named() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let (work, outside) = (root.join("work"), root.join("outside"));
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("tok"), "t").unwrap();
        std::fs::write(work.join("tok"), "t").unwrap();
        symlink(&work, outside.join("into")).unwrap();
        symlink(outside.join("tok"), work.join("to-outside")).unwrap();
        symlink(&outside, work.join("out-dir")).unwrap();
        symlink("../work/tok", outside.join("relative")).unwrap();
        symlink(work.join("sub"), outside.join("sub-link")).unwrap();
        let found = |p: PathBuf| reached_through(&work, &p).unwrap();
        // Outside, however it is named.
        assert_eq!(found(outside.join("tok")), None);
        assert_eq!(found(work.join("..").join("outside").join("tok")), None);
        assert_eq!(found(outside.join("not-yet").join("data")), None);
        // Inside, plainly, through `..`, through a link into the work dir, a
        // relative link, `..` after a link, or not existing yet.
        assert_eq!(found(work.join("tok")), Some(work.join("tok")));
        assert_eq!(found(work.clone()), Some(work.clone()));
        assert_eq!(found(work.join("sub").join("..").join("tok")), Some(work.join("sub")));
        assert_eq!(found(outside.join("into").join("tok")), Some(work.join("tok")));
        assert_eq!(found(outside.join("relative")), Some(work.join("tok")));
        assert_eq!(found(outside.join("sub-link").join("..").join("tok")), Some(work.join("sub")));
        assert_eq!(found(work.join("data").join("new")), Some(work.join("data")));
        // Through a link inside the work dir to the outside: a tool could
        // change where it leads.
        assert_eq!(found(work.join("to-outside")), Some(work.join("to-outside")));
        assert_eq!(found(work.join("out-dir").join("tok")), Some(work.join("out-dir")));
        // The work dir named through a link is the same work dir.
        assert_eq!(
            reached_through(&outside.join("into"), &work.join("tok")).unwrap(),
            Some(work.join("tok"))
        );
        // A loop is an error, not a hang.
        symlink(outside.join("loop"), outside.join("loop")).unwrap();
        assert!(reached_through(&work, &outside.join("loop")).unwrap_err().to_string().contains("too many"));
    }

    #[test]
    fn the_config_dir_comes_from_the_environment_like_the_data_dir() {
        let under = from_env("TOOLHOST_TEST_UNSET_VAR", "TOOLHOST_TEST_UNSET_XDG", &[".config"]);
        let home = std::env::var_os("HOME").filter(|v| !v.is_empty()).map(PathBuf::from);
        assert_eq!(under, home.map(|h| h.join(".config").join("toolhost")));
    }
}
