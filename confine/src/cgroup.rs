//! A pids cgroup per child: it caps how many processes the child's tree may have at
//! once (`pids.max`; `RLIMIT_NPROC` does not apply to root), and it lists every one
//! of them, including those that left the process group with `setsid`, so that all
//! can be killed.
//!
//! The host makes `toolhost-<pid>-<n>` under its own pids cgroup (v1's `pids`
//! hierarchy, or v2 when the controller is delegated) and one `call-<n>` inside it
//! per child. When neither works the host has no cgroup; see
//! [`ExecRuntime`](crate::ExecRuntime) for what that means.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The host's own pids cgroup directory, under which each child gets one.
#[derive(Debug)]
pub(crate) struct CgroupRoot {
    dir: PathBuf,
    next: AtomicU64,
}

/// One child's cgroup; removed (after killing what is left in it) when dropped.
#[derive(Debug)]
pub(crate) struct ChildCgroup {
    dir: PathBuf,
    procs: File,
}

impl CgroupRoot {
    /// Find a pids cgroup this process may create children in (`parent`, or its own
    /// pids cgroup), and make the host's directory there. `None` when there is none.
    pub(crate) fn create(parent: Option<&Path>) -> Option<Self> {
        let found = match parent {
            Some(dir) => vec![dir.to_path_buf()],
            None => candidates(&fs::read_to_string("/proc/self/cgroup").ok()?),
        };
        // One directory per host: several hosts may live in one process.
        static HOSTS: AtomicU64 = AtomicU64::new(0);
        let host = HOSTS.fetch_add(1, Ordering::Relaxed);
        for candidate in found {
            let dir = candidate.join(format!("toolhost-{}-{host}", std::process::id()));
            if fs::create_dir(&dir).is_err() {
                continue;
            }
            // v2: children get pids.max only when the controller is enabled below.
            if !dir.join("pids.max").exists() {
                let _ = fs::write(dir.join("cgroup.subtree_control"), "+pids");
            }
            let root = Self { dir, next: AtomicU64::new(1) };
            match root.child(1) {
                Some(probe) => {
                    probe.remove();
                    cleanup_stale(&candidate);
                    return Some(root);
                }
                None => {
                    let _ = fs::remove_dir(&root.dir);
                }
            }
        }
        None
    }

    /// A new cgroup for one child, allowing at most `max_pids` processes.
    pub(crate) fn child(&self, max_pids: u64) -> Option<ChildCgroup> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(format!("call-{n}"));
        fs::create_dir(&dir).ok()?;
        let made = (|| {
            fs::write(dir.join("pids.max"), max_pids.to_string()).ok()?;
            OpenOptions::new().write(true).open(dir.join("cgroup.procs")).ok()
        })();
        match made {
            Some(procs) => Some(ChildCgroup { dir, procs }),
            None => {
                let _ = fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The host's directory (for diagnostics).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let _ = fs::remove_dir(entry.path());
            }
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

impl ChildCgroup {
    /// The open `cgroup.procs` the child writes itself into.
    pub(crate) fn procs_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.procs.as_raw_fd()
    }

    /// The pids in the cgroup now.
    pub(crate) fn pids(&self) -> Vec<u32> {
        read_pids(&self.dir)
    }

    /// SIGKILL every process in the cgroup until it is empty (new forks are bounded
    /// by `pids.max`, and a killed process forks no more). Returns the pids killed.
    pub(crate) fn kill_all(&self) -> Vec<u32> {
        let mut killed = Vec::new();
        for _ in 0..1000 {
            let pids = self.pids();
            if pids.is_empty() {
                break;
            }
            for &pid in &pids {
                super::confine::kill_pid(pid, libc::SIGKILL);
            }
            killed.extend(pids);
            std::thread::sleep(Duration::from_micros(200));
        }
        killed
    }

    /// Kill what is left and remove the directory (retrying briefly while the
    /// killed processes exit). Dropping it does the same.
    pub(crate) fn remove(self) {
        drop(self);
    }
}

impl Drop for ChildCgroup {
    fn drop(&mut self) {
        for pid in self.kill_all() {
            super::confine::reap(pid);
        }
        for _ in 0..100 {
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::warn!(dir = %self.dir.display(), "could not remove a child's cgroup");
    }
}

fn read_pids(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Where this process's pids cgroup may be: v1's `pids` hierarchy, then v2.
fn candidates(own: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            out.push(Path::new("/sys/fs/cgroup/pids").join(rel));
        } else if controllers.is_empty() {
            out.push(Path::new("/sys/fs/cgroup").join(rel));
            out.push(Path::new("/sys/fs/cgroup/unified").join(rel));
        }
    }
    out
}

/// Remove empty `toolhost-<pid>-<n>` directories left by hosts that are gone.
fn cleanup_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid =
            name.to_str().and_then(|n| n.strip_prefix("toolhost-")).and_then(|rest| rest.split('-').next());
        let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            if let Ok(children) = fs::read_dir(entry.path()) {
                for child in children.flatten() {
                    let _ = fs::remove_dir(child.path());
                }
            }
            let _ = fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_cover_v1_and_v2() {
        let own = "9:name=systemd:/\n8:pids:/a/b\n0::/c\n";
        let c = candidates(own);
        assert_eq!(c[0], PathBuf::from("/sys/fs/cgroup/pids/a/b"));
        assert!(c.contains(&PathBuf::from("/sys/fs/cgroup/c")));
    }
}
