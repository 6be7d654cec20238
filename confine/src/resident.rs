//! A resident child: a program confined exactly like a call's child (its own
//! root, Landlock, user and network namespaces, seccomp, rlimits, a pids cgroup)
//! that lives across calls instead of ending with one — an MCP server
//! (the host's `servers`). Its stdin, stdout and stderr are pipes to the host; it
//! takes no slot of [`ExecSettings::max_children`](super::settings::ExecSettings::max_children) and has no deadline of
//! its own: the host stops it ([`Resident::kill`], or dropping it).
//!
//! What differs from a call's child, and why:
//! - its rulesets and root are built for it (its own `read-dirs`, the work dir
//!   read-write, read-only or absent), not the host's shared ones;
//! - a writing resident gets the protected paths that exist when it starts bound
//!   read-only, but what it creates there is not undone (it never ends within a
//!   call to check after);
//! - with a network grant its namespace gets a loopback and a listener on it for
//!   the host ([`super::confine::Loopback`]); without one it has no network at all.
//!
//! The host must start it from a thread that outlives it (a runtime worker, never
//! a `spawn_blocking` thread): `PR_SET_PDEATHSIG` kills it when that thread ends.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitStatus;

use tokio::net::unix::pipe::{Receiver, Sender};

use super::cgroup::ChildCgroup;
use super::confine::{self, ChildSetup, Loopback, is_root};
use super::landlock::{Confiner, child_root};
use super::process::{self, Output, Process, Spawn, Spawned};
use super::protect_check::Watch;
use super::runtime::ExecRuntime;
use super::settings::ChildLimits;
use super::spawn::SpawnError;

/// What to start, resolved by the caller.
#[derive(Debug, Clone)]
pub struct ResidentSpec {
    /// The program (an absolute path the child's root holds).
    pub program: PathBuf,
    /// What it sees as its name (`argv[0]`).
    pub arg0: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (inside its root).
    pub cwd: PathBuf,
    /// Its whole environment (nothing of the host's is added).
    pub env: Vec<(String, String)>,
    /// The work dir its root holds (`None`: none).
    pub work_dir: Option<PathBuf>,
    /// Whether it may write the work dir.
    pub writable: bool,
    /// What it may read besides the system dirs and the exec `path`.
    pub read_dirs: Vec<PathBuf>,
    /// Its limits (CPU seconds over its whole life).
    pub limits: ChildLimits,
    /// A port inside its namespace the host listens on for it (its proxy).
    pub loopback_port: Option<u16>,
}

/// A running resident child and everything needed to stop it.
#[derive(Debug)]
pub struct Resident {
    process: Process,
    pid: u32,
    /// Its user namespace, to find its tree by when there is no cgroup.
    userns: Option<OsString>,
    cgroup: Option<ChildCgroup>,
    /// Its stdin (the host writes requests).
    pub stdin: Option<Sender>,
    /// Its stdout (the host reads answers).
    pub stdout: Option<Receiver>,
    /// Its stderr (the host logs it).
    pub stderr: Option<Receiver>,
    /// The listener inside its namespace, when it was asked for.
    pub listener: Option<std::net::TcpListener>,
}

impl ExecRuntime {
    /// Start `spec` confined (see the module docs). Fails `sandbox_unavailable`
    /// where children cannot be confined (a resident is never unconfined).
    pub async fn start_resident(&self, spec: ResidentSpec) -> Result<Resident, SpawnError> {
        let shared = self.shared().map_err(SpawnError::Unavailable)?;
        let settings = self.settings();
        let work = spec.work_dir.as_deref();
        let confiner =
            Confiner::new(work, &settings.path, &spec.read_dirs).map_err(SpawnError::Unavailable)?;
        let layout = child_root(work, &settings.path, &spec.read_dirs, None);
        let binds = match self.protected_paths().filter(|_| spec.writable && work.is_some()) {
            Some((protected, cache)) => {
                let watch = tokio::task::spawn_blocking(move || Watch::start(protected, false, cache))
                    .await
                    .map_err(|e| SpawnError::Failed(format!("searching the work dir: {e}")))?
                    .map_err(|e| {
                        SpawnError::Failed(format!("could not search the work dir for protected paths: {e}"))
                    })?;
                watch.binds()
            }
            None => Vec::new(),
        };
        let mut setup = ChildSetup::new(&spec.limits);
        setup.ruleset = Some(confiner.ruleset(spec.writable));
        setup.seccomp = Some(confiner.seccomp(spec.writable));
        setup.namespaces = true;
        setup.ids = Some(shared.ids.clone());
        setup.mounts =
            layout.script(spec.writable, &binds, &spec.cwd, Vec::new()).map_err(SpawnError::Unavailable)?;
        setup.drop_caps = Some(shared.last_cap);
        let cgroup = shared.cgroup.and_then(|root| root.child(spec.limits.processes));
        match &cgroup {
            Some(c) => setup.cgroup_procs = Some(c.procs_fd()),
            None if is_root() => {
                return Err(SpawnError::Unavailable("could not create the server's pids cgroup".into()));
            }
            None => setup.nproc = Some(spec.limits.processes),
        }
        let channel = match spec.loopback_port {
            Some(port) => {
                let (host_end, child_end) =
                    UnixStream::pair().map_err(|e| SpawnError::Failed(format!("socket pair: {e}")))?;
                use std::os::fd::AsRawFd;
                setup.loopback = Some(Loopback { port, channel: child_end.as_raw_fd() });
                Some((host_end, child_end))
            }
            None => None,
        };
        let spawned = process::spawn(
            &Spawn {
                program: &spec.program,
                arg0: &spec.arg0,
                args: &spec.args,
                env: spec.env.iter().map(|(k, v)| (OsStr::new(k), OsStr::new(v))).collect(),
                cwd: &spec.cwd,
                stdin: true,
                output: Output::Pipes,
            },
            &setup,
        );
        // The rulesets and filter were read by the child before `exec`; the socket
        // pair's child end goes now, so a dead child is seen as one.
        drop(confiner);
        let listener = match channel {
            Some((host_end, child_end)) => {
                drop(child_end);
                if spawned.is_ok() {
                    let fd = confine::receive_fd(&host_end).map_err(|e| {
                        SpawnError::Failed(format!("the server's loopback listener did not arrive: {e}"))
                    })?;
                    Some(std::net::TcpListener::from(fd))
                } else {
                    None
                }
            }
            None => None,
        };
        let Spawned { process, stdin, stdout, stderr } =
            spawned.map_err(|e| SpawnError::Failed(e.to_string()))?;
        let pid = process.id();
        let userns = if cgroup.is_none() { confine::user_namespace(pid) } else { None };
        let pipe = |e: std::io::Error| SpawnError::Failed(format!("pipe: {e}"));
        let receiver = |fd: Option<OwnedFd>| fd.map(Receiver::from_owned_fd).transpose().map_err(pipe);
        Ok(Resident {
            stdin: stdin.map(Sender::from_owned_fd).transpose().map_err(pipe)?,
            stdout: receiver(stdout)?,
            stderr: receiver(stderr)?,
            process,
            pid,
            userns,
            cgroup,
            listener,
        })
    }
}

impl Resident {
    /// Kill the whole tree: the process group, and every process of its cgroup (or,
    /// without one, of its user namespace), `setsid` or not.
    pub fn kill(&self) {
        if self.pid > 0 {
            confine::kill_group(self.pid, libc::SIGKILL);
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
        if let Some(ns) = &self.userns {
            confine::kill_namespace(ns);
        }
    }

    /// Wait for the leader to end.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.process.wait().await
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        // The leader itself is killed and reaped when `process` drops.
        self.kill();
        // Removing the cgroup waits for the killed processes to leave it: off the
        // caller's task when there is a runtime to do it on.
        if let Some(cgroup) = self.cgroup.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn_blocking(move || cgroup.remove())),
                Err(_) => cgroup.remove(),
            }
        }
    }
}
