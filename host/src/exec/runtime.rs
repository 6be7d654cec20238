//! [`ExecRuntime`]: the host's one place that starts processes. It holds the
//! sandbox (built on first use and probed once), the limit on children at once, and
//! the process table. [`ExecAccess`] is one call's capability to use it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::cgroup::{CgroupRoot, ChildCgroup};
use super::confine::{ChildSetup, Confiner, is_root};
use super::grant::ResolvedGrant;
use super::spawn::{self, Finished, SpawnError, SpawnRequest};
use super::table::{ProcessInfo, ProcessTable};
use super::{ChildLimits, ExecSettings};

/// What confines children on this host, built on first use.
struct Sandbox {
    confiner: Confiner,
    cgroup: Option<CgroupRoot>,
}

impl Sandbox {
    /// The confined set-up of one child (and its cgroup): the ruleset and filter for
    /// a call that may or may not write, namespaces, and the process cap — the pids
    /// cgroup, or `RLIMIT_NPROC` when there is none and the host is not root.
    fn setup(
        &self,
        limits: &ChildLimits,
        writable: bool,
    ) -> Result<(ChildSetup, Option<ChildCgroup>), String> {
        let mut setup = ChildSetup::new(limits);
        setup.ruleset = Some(self.confiner.ruleset(writable));
        setup.seccomp = Some(self.confiner.seccomp(writable));
        setup.namespaces = true;
        let cgroup = self.cgroup.as_ref().and_then(|root| root.child(limits.processes));
        match &cgroup {
            Some(c) => setup.cgroup_procs = Some(c.procs_fd()),
            None if is_root() => return Err("could not create the child's pids cgroup".into()),
            None => setup.nproc = Some(limits.processes),
        }
        Ok((setup, cgroup))
    }
}

/// Starts, confines, bounds and tracks every child of one host.
pub struct ExecRuntime {
    settings: ExecSettings,
    /// The `PATH` children see (from the settings, once).
    path_var: String,
    work_dir: Option<PathBuf>,
    sandbox: OnceLock<Result<Sandbox, String>>,
    slots: Semaphore,
    table: ProcessTable,
}

impl std::fmt::Debug for ExecRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecRuntime").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// One call's capability to start processes: the plugin's resolved grant, the
/// variables it is granted, and the host's runtime.
#[derive(Clone)]
pub struct ExecAccess {
    /// The host's runtime.
    pub runtime: Arc<ExecRuntime>,
    /// What the plugin may run.
    pub grant: Arc<ResolvedGrant>,
    /// The variables granted to the plugin (passed to every child).
    pub env: Arc<[(String, String)]>,
    /// The call's cancellation.
    pub cancel: CancellationToken,
}

impl ExecRuntime {
    /// A runtime for a host working in `work_dir`. Nothing is probed until the first
    /// child.
    pub fn new(settings: ExecSettings, work_dir: Option<PathBuf>) -> Self {
        let slots = Semaphore::new(settings.max_children.max(1));
        let path_var = settings.child_path();
        Self { settings, path_var, work_dir, sandbox: OnceLock::new(), slots, table: ProcessTable::default() }
    }

    /// The settings.
    pub fn settings(&self) -> &ExecSettings {
        &self.settings
    }

    /// The processes started by this host: running ones, then recently ended ones.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.table.snapshot()
    }

    /// Whether children can be confined here, and if not, why.
    pub fn availability(&self) -> Result<(), String> {
        self.sandbox().map(|_| ()).map_err(str::to_owned)
    }

    /// The host's pids cgroup directory, once a child has been started in one.
    pub fn cgroup_dir(&self) -> Option<&Path> {
        self.sandbox.get()?.as_ref().ok()?.cgroup.as_ref().map(CgroupRoot::dir)
    }

    fn sandbox(&self) -> Result<&Sandbox, &str> {
        self.sandbox.get_or_init(|| self.build_sandbox()).as_ref().map_err(String::as_str)
    }

    fn build_sandbox(&self) -> Result<Sandbox, String> {
        let confiner =
            Confiner::new(self.work_dir.as_deref(), &self.settings.path, &self.settings.read_dirs)?;
        let cgroup = CgroupRoot::create(self.settings.cgroup_parent.as_deref());
        if cgroup.is_none() && is_root() {
            return Err(
                "the host runs as root, which RLIMIT_NPROC does not bound, and no pids cgroup can be \
                        created to cap a child's processes"
                    .into(),
            );
        }
        let sandbox = Sandbox { confiner, cgroup };
        probe(&sandbox, &self.settings)?;
        Ok(sandbox)
    }

    /// Start `req`, wait for it under its deadline and `cancel`, and clean up after
    /// it. `exec_busy` when [`ExecSettings::max_children`] are running.
    pub async fn run(&self, req: SpawnRequest, cancel: &CancellationToken) -> Result<Finished, SpawnError> {
        let _slot = self.slots.try_acquire().map_err(|_| {
            SpawnError::Busy(format!(
                "{} processes started by tools are already running on this host (the most at once); \
                 try again when one has ended",
                self.settings.max_children
            ))
        })?;
        let (setup, cgroup) = if req.unconfined {
            (ChildSetup::new(&self.settings.limits), None)
        } else {
            let sandbox = self.sandbox().map_err(|e| SpawnError::Unavailable(e.to_string()))?;
            sandbox.setup(&self.settings.limits, req.writable).map_err(SpawnError::Unavailable)?
        };
        spawn::run(req, setup, cgroup, &self.path_var, &self.table, cancel).await
    }

    /// The work dir children run in.
    pub fn work_dir(&self) -> Option<&Path> {
        self.work_dir.as_deref()
    }
}

/// Start `true` fully confined once: a kernel without user namespaces (or one that
/// refuses a step) fails here, before any tool relies on it.
fn probe(sandbox: &Sandbox, settings: &ExecSettings) -> Result<(), String> {
    let program = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("no `true` to probe with")?;
    let (setup, cgroup) = sandbox.setup(&settings.limits, false)?;
    let mut cmd = std::process::Command::new(program);
    cmd.env_clear().stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    setup.install(&mut cmd);
    let outcome = cmd.status();
    if let Some(c) = cgroup {
        c.remove();
    }
    match outcome {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a confined probe process failed ({status})")),
        Err(e) => Err(format!(
            "a confined process cannot be started here (user and network namespaces, Landlock): {e}"
        )),
    }
}
