//! [`ExecRuntime`]: the host's one place that starts processes. It holds the
//! confinement (built on first use and probed once), the limit on children at once, the
//! process table and the host's protected paths.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::cgroup::{CgroupRoot, ChildCgroup};
use super::confine::{ChildSetup, IdMaps, WorkRule, is_root, last_capability};
use super::landlock::{Confiner, child_root};
use super::mounts::{Layout, ProtectBind};
use super::overlay::{Pending, Plan};
use super::protect::Protected;
use super::protect_check::{ListingCache, Watch};
use super::request::SpawnRequest;
use super::settings::{ChildLimits, ExecSettings};
use super::shared_root::SharedRoots;
use super::spawn::After;
use super::spawn::{self, Finished, SpawnError};
use super::staging::Staging;
use super::table::{ProcessInfo, ProcessTable};

/// What confines children on this host, built on first use.
pub(super) struct Confinement {
    confiner: Confiner,
    cgroup: Option<CgroupRoot>,
    /// What a child's root holds besides the work dir.
    pub(super) layout: Layout,
    ids: IdMaps,
    last_cap: u32,
    /// Roots built once and entered by the children (`super::shared_root`).
    pub(super) roots: SharedRoots,
    /// Whether children enter a shared root (else each builds its own: where the
    /// probe found shared roots do not work here).
    pub(super) reuse: bool,
    /// Whether writing children write through an overlay (`super::overlay`): the
    /// host has a dir for the layers and the probe mounted one.
    pub(super) overlay: bool,
}

impl Confinement {
    /// The confined set-up of one child (and its cgroup): the ruleset and filter for
    /// a call that may or may not write, namespaces, its root (with `protect` bound
    /// over the work dir, or over the `overlay` the child mounts there, ending in
    /// `cwd`), no capabilities, and the process cap — the pids cgroup, or
    /// `RLIMIT_NPROC` when there is none and the host is not root.
    pub(super) fn setup(
        &self,
        limits: &ChildLimits,
        writable: bool,
        cwd: &Path,
        protect: &[ProtectBind],
        overlay: Option<&Plan>,
    ) -> Result<(ChildSetup, Option<ChildCgroup>), String> {
        let mut setup = ChildSetup::new(limits);
        match overlay {
            Some(plan) => {
                let ruleset = self.confiner.overlay_ruleset()?;
                setup.ruleset = Some(std::os::fd::AsRawFd::as_raw_fd(&ruleset));
                setup.own_ruleset = Some(ruleset);
                setup.work_rule = Some(WorkRule { path: plan.work.clone(), access: Confiner::work_access() });
            }
            None => setup.ruleset = Some(self.confiner.ruleset(writable)),
        }
        setup.seccomp = Some(self.confiner.seccomp(writable));
        setup.namespaces = true;
        setup.ids = Some(self.ids.clone());
        self.root(&mut setup, writable, protect, cwd, overlay)?;
        setup.drop_caps = Some(self.last_cap);
        let cgroup = self.cgroup.as_ref().and_then(|root| root.child(limits.processes));
        match &cgroup {
            Some(c) => setup.cgroup_procs = Some(c.procs_fd()),
            None if is_root() => return Err("could not create the child's pids cgroup".into()),
            None => setup.nproc = Some(limits.processes),
        }
        Ok((setup, cgroup))
    }

    /// The child's root: a shared one to enter, with the checks it makes there, or
    /// (no reuse here, or the shared root could not be built) the steps to build its
    /// own. A child with an `overlay` gets the read-only root, and mounts its
    /// overlay (and the binds of `protect` on it) itself.
    fn root(
        &self,
        setup: &mut ChildSetup,
        writable: bool,
        protect: &[ProtectBind],
        cwd: &Path,
        overlay: Option<&Plan>,
    ) -> Result<(), String> {
        let (writable, protect) = if overlay.is_some() { (false, &[][..]) } else { (writable, protect) };
        setup.private_mounts = false;
        if self.reuse {
            match self.roots.get(&self.layout, &self.ids, writable, protect) {
                Ok(root) => {
                    let extra = overlay.map(|o| o.shared.clone()).unwrap_or_default();
                    setup.mounts = self.layout.checks(protect, cwd, extra)?;
                    setup.private_mounts = overlay.is_some();
                    setup.net = self.roots.net(&root);
                    setup.root = Some(root);
                    return Ok(());
                }
                // A protected path changed since the walk (the child's own build then
                // fails as it should), or the helper failed: this child builds its own.
                Err(why) => tracing::debug!(%why, "no shared root; the child builds its own"),
            }
        }
        setup.root = None;
        setup.net = None;
        let extra = overlay.map(|o| o.own.clone()).unwrap_or_default();
        setup.mounts = self.layout.script(writable, protect, cwd, extra)?;
        Ok(())
    }

    /// After a child found its shared root stale: drop that root, and give `setup` a
    /// fresh one (or the steps to build its own).
    fn refresh(
        &self,
        setup: &mut ChildSetup,
        writable: bool,
        protect: &[ProtectBind],
        cwd: &Path,
        overlay: Option<&Plan>,
    ) -> Result<(), String> {
        if let Some(root) = setup.root.take() {
            self.roots.forget(&root);
        }
        self.root(setup, writable, protect, cwd, overlay)
    }
}

/// Starts, confines, bounds and tracks every child of one host.
pub struct ExecRuntime {
    settings: ExecSettings,
    /// The `PATH` children see (from the settings, once).
    path_var: String,
    work_dir: Option<PathBuf>,
    confinement: OnceLock<Result<Confinement, String>>,
    slots: Semaphore,
    table: ProcessTable,
    /// What no child may change (default: `.git` at any depth of the work dir).
    protected: OnceLock<Arc<Protected>>,
    /// The work dir as the last walk for protected paths listed it.
    listing: ListingCache,
    /// Where writing children's overlay layers go (`super::staging`).
    staging: OnceLock<Option<Arc<Staging>>>,
    /// One merge of a layer at a time.
    merges: Arc<Mutex<()>>,
    /// Writing children write to the work dir itself (for comparison only).
    in_place: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for ExecRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecRuntime").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl ExecRuntime {
    /// A runtime for a host working in `work_dir`. Nothing is probed until the first
    /// child.
    pub fn new(settings: ExecSettings, work_dir: Option<PathBuf>) -> Self {
        let slots = Semaphore::new(settings.max_children.max(1));
        let path_var = settings.child_path();
        Self {
            settings,
            path_var,
            work_dir,
            confinement: OnceLock::new(),
            slots,
            table: ProcessTable::default(),
            protected: OnceLock::new(),
            listing: ListingCache::default(),
            staging: OnceLock::new(),
            merges: Arc::default(),
            in_place: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// From now on, writing children write to the work dir itself, not through an
    /// overlay: what a host killed meanwhile leaves there stays. Only to measure
    /// what the overlay costs (`cargo bench -p toolhost-tests -- exec`).
    #[doc(hidden)]
    pub fn write_in_place_for_comparison(&self) {
        self.in_place.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Where writing children's overlay layers go: a dir under `data_dir`, or one in
    /// the temp dir (the first that is private to this user and outside the work
    /// dir, one on the work dir's filesystem first). What hosts that died left
    /// there is removed now. Set once, before the first child; without it (or where
    /// no overlay can be mounted) a writing child writes to the work dir itself.
    pub fn set_data_dir(&self, data_dir: Option<&Path>) {
        let Some(work) = &self.work_dir else { return };
        let uid = super::confine::euid();
        let candidates: Vec<PathBuf> = data_dir
            .map(|d| d.join("exec-staging"))
            .into_iter()
            .chain([std::env::temp_dir().join(format!("toolhost-exec-staging-{uid}"))])
            .collect();
        let staging = match Staging::open(work, &candidates) {
            Ok(staging) => Some(Arc::new(staging)),
            Err(why) => {
                tracing::warn!(%why, "commands write to the work dir itself, not through an overlay");
                None
            }
        };
        let _ = self.staging.set(staging);
    }

    fn staging(&self) -> Option<&Arc<Staging>> {
        self.staging.get().and_then(Option::as_ref)
    }

    /// What no child may change: read-only binds over it in every writing child's
    /// root, and creations undone after it. Set once, before the first child (later
    /// calls change nothing); without it, `.git` at any depth of the work dir.
    pub fn set_protected(&self, protected: Arc<Protected>) {
        let _ = self.protected.set(protected);
    }

    fn protected(&self) -> Option<Arc<Protected>> {
        let work = self.work_dir.as_ref()?;
        Some(self.protected.get_or_init(|| Arc::new(Protected::new(work))).clone())
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
        self.confinement().map(|_| ()).map_err(str::to_owned)
    }

    /// The host's pids cgroup directory, once a child has been started in one.
    pub fn cgroup_dir(&self) -> Option<&Path> {
        self.confinement.get()?.as_ref().ok()?.cgroup.as_ref().map(CgroupRoot::dir)
    }

    fn confinement(&self) -> Result<&Confinement, &str> {
        let build = || super::probe::gate(&self.settings).and_then(|()| self.build_confinement());
        let explained = || build().map_err(|why| super::probe::explain(&self.settings, why));
        self.confinement.get_or_init(explained).as_ref().map_err(String::as_str)
    }

    fn build_confinement(&self) -> Result<Confinement, String> {
        let confiner =
            Confiner::new(self.work_dir.as_deref(), &self.settings.path, &self.settings.read_dirs)?;
        super::mounts::check_host()?;
        // No staging dir set by now: none for this host's life.
        let staging = self.staging.get_or_init(|| None).clone();
        let layout = child_root(
            self.work_dir.as_deref(),
            &self.settings.path,
            &self.settings.read_dirs,
            staging.as_deref().map(Staging::dir),
        );
        let cgroup = super::probe::host_cgroup(&self.settings);
        if cgroup.is_none() && is_root() {
            return Err(
                "the host runs as root, which RLIMIT_NPROC does not bound, and no pids cgroup can be \
                        created to cap a child's processes"
                    .into(),
            );
        }
        let mut confinement = Confinement {
            confiner,
            cgroup,
            layout,
            ids: IdMaps::own(),
            last_cap: last_capability(),
            roots: SharedRoots::default(),
            reuse: true,
            overlay: false,
        };
        let cwd = self.work_dir.clone().unwrap_or_else(|| PathBuf::from("/"));
        if let Err(why) = probe(&confinement, &self.settings, &cwd, None) {
            confinement.reuse = false;
            probe(&confinement, &self.settings, &cwd, None)?;
            tracing::warn!(%why, "children cannot share a root here; each builds its own");
        }
        if let (Some(staging), Some(work)) = (&staging, &self.work_dir) {
            let probed = staging.layer(work).map_err(|e| format!("a layer: {e}")).and_then(|layer| {
                let plan = super::overlay::plan(&layer, work, &[])?;
                probe(&confinement, &self.settings, &cwd, Some(&plan))
            });
            match probed {
                Ok(()) => confinement.overlay = true,
                Err(why) => tracing::warn!(
                    %why,
                    "no overlay can be mounted for a writing child here; commands write to the work dir \
                     itself, and what a host killed meanwhile leaves stays"
                ),
            }
        }
        Ok(confinement)
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
        // A writing child's growth of the work dir is charged to the call's quota: by
        // the merge of its overlay, or measured around it.
        let quota = req.quota.clone().filter(|_| !self.overlaid(&req));
        let measured = match (&quota, &self.work_dir) {
            (Some(_), Some(work)) => super::growth::measure(work).await.map(|before| (work, before)),
            _ => None,
        };
        let finished = self.run_in_slot(req, cancel).await;
        if let (Some(quota), Some((work, before))) = (&quota, measured)
            && let Some(after) = super::growth::measure(work).await
        {
            quota.record(after.saturating_sub(before));
        }
        finished
    }

    /// Whether `req` writes through an overlay.
    fn overlaid(&self, req: &SpawnRequest) -> bool {
        req.writable
            && !req.unconfined
            && !self.in_place.load(std::sync::atomic::Ordering::Relaxed)
            && self.protected().is_some()
            && self.confinement().is_ok_and(|c| c.overlay)
            && self.staging().is_some()
    }

    /// [`Self::run`] once a slot is held.
    async fn run_in_slot(
        &self,
        req: SpawnRequest,
        cancel: &CancellationToken,
    ) -> Result<Finished, SpawnError> {
        // Each file it writes is held to what is left of the call's quota.
        let file_size = |limits: &ChildLimits| {
            let left = req.quota.as_ref().map_or(u64::MAX, |q| q.remaining());
            limits.file_size_bytes.min(left)
        };
        if req.unconfined {
            let mut setup = ChildSetup::new(&self.settings.limits);
            setup.file_size_bytes = file_size(&self.settings.limits);
            return spawn::run(req, setup, None, None, &self.path_var, &self.table, cancel, None).await;
        }
        let confinement = self.confinement().map_err(|e| SpawnError::Unavailable(e.to_string()))?;
        // A read-only child cannot change the work dir at all; a writing one gets
        // the protected paths bound read-only, and writes through an overlay whose
        // merge refuses what it created there (or, without one, has it undone).
        let protected = self.protected().filter(|_| req.writable);
        let watch = match protected.clone() {
            Some(protected) => {
                let (commit, cache) = (req.commit, self.listing.clone());
                let started = tokio::task::spawn_blocking(move || Watch::start(protected, commit, cache))
                    .await
                    .map_err(|e| SpawnError::Failed(format!("searching the work dir: {e}")))?;
                let watch = started.map_err(|e| {
                    SpawnError::Failed(format!("could not search the work dir for protected paths: {e}"))
                })?;
                let (dirs, listed) = watch.dirs();
                tracing::debug!(dirs, listed, binds = watch.binds().len(), "protected paths found");
                Some(watch)
            }
            None => None,
        };
        let layer = match (&watch, self.staging(), &self.work_dir) {
            (Some(_), Some(staging), Some(work)) if self.overlaid(&req) => {
                Some(staging.layer(work).map_err(|e| {
                    SpawnError::Failed(format!("could not make the command's overlay layer: {e}"))
                })?)
            }
            _ => None,
        };
        let (binds, plan, after) = match (watch, layer, protected) {
            (Some(watch), Some(layer), Some(protected)) => {
                let binds = watch.into_binds();
                let work = protected.work_dir().to_path_buf();
                let plan = super::overlay::plan(&layer, &work, &binds).map_err(SpawnError::Unavailable)?;
                let pending = Pending {
                    layer,
                    protected,
                    commit: req.commit,
                    quota: req.quota.clone(),
                    one: self.merges.clone(),
                };
                (binds, Some(plan), Some(After::Merge(pending)))
            }
            (Some(watch), _, _) => (watch.binds(), None, Some(After::Check(watch))),
            (None, _, _) => (Vec::new(), None, None),
        };
        let (mut setup, cgroup) = confinement
            .setup(&self.settings.limits, req.writable, &req.cwd, &binds, plan.as_ref())
            .map_err(SpawnError::Unavailable)?;
        setup.file_size_bytes = file_size(&self.settings.limits);
        let (writable, cwd) = (req.writable, req.cwd.clone());
        let refresh =
            move |setup: &mut ChildSetup| confinement.refresh(setup, writable, &binds, &cwd, plan.as_ref());
        spawn::run(req, setup, cgroup, after, &self.path_var, &self.table, cancel, Some(&refresh)).await
    }

    /// The confinement and the limits, for the shared root's tests.
    #[cfg(test)]
    pub(super) fn confinement_for_tests(&self) -> (&Confinement, &ChildLimits) {
        let confinement = self.confinement().unwrap_or_else(|e| panic!("no sandbox here: {e}"));
        (confinement, &self.settings.limits)
    }

    /// Build the confinement, then have children build their own roots.
    #[cfg(test)]
    pub(super) fn own_roots_for_tests(&mut self) {
        let _ = self.confinement_for_tests();
        if let Some(Ok(confinement)) = self.confinement.get_mut() {
            confinement.reuse = false;
        }
    }

    /// The work dir children run in.
    pub fn work_dir(&self) -> Option<&Path> {
        self.work_dir.as_deref()
    }

    /// What a resident child shares with the calls' children (`super::resident`):
    /// the host's cgroup, its user namespace maps, the highest capability. Probes
    /// the confinement on first use.
    pub(super) fn shared(&self) -> Result<Shared<'_>, String> {
        let confinement = self.confinement().map_err(str::to_owned)?;
        Ok(Shared {
            cgroup: confinement.cgroup.as_ref(),
            ids: &confinement.ids,
            last_cap: confinement.last_cap,
        })
    }

    /// The protected paths and the listing cache a walk for them uses.
    pub(super) fn protected_paths(&self) -> Option<(Arc<Protected>, ListingCache)> {
        self.protected().map(|p| (p, self.listing.clone()))
    }
}

/// What a resident child shares with the calls' children.
pub(super) struct Shared<'a> {
    /// The host's pids cgroup.
    pub(super) cgroup: Option<&'a CgroupRoot>,
    /// The user namespace maps.
    pub(super) ids: &'a IdMaps,
    /// The highest capability number.
    pub(super) last_cap: u32,
}

/// Start `true` fully confined once: a kernel without user namespaces (or one that
/// refuses a step) fails here, before any tool relies on it.
fn probe(
    confinement: &Confinement,
    settings: &ExecSettings,
    cwd: &Path,
    overlay: Option<&Plan>,
) -> Result<(), String> {
    let program = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("no `true` to probe with")?;
    let (setup, cgroup) = confinement.setup(&settings.limits, overlay.is_some(), cwd, &[], overlay)?;
    let outcome = super::process::spawn(&probe_spawn(Path::new(program), cwd), &setup)
        .map_err(|e| e.to_string())
        .and_then(|mut spawned| spawned.process.wait_blocking().map_err(|e| e.to_string()));
    if let Some(c) = cgroup {
        c.remove();
    }
    match outcome {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a confined probe process failed ({status})")),
        Err(e) => Err(format!(
            "a confined process cannot be started here (user, network and mount namespaces, Landlock): {e}"
        )),
    }
}

/// `program` with no argument, environment or input, in `cwd`.
fn probe_spawn<'a>(program: &'a Path, cwd: &'a Path) -> super::process::Spawn<'a> {
    super::process::Spawn {
        program,
        arg0: "true",
        args: &[],
        env: Vec::new(),
        cwd,
        stdin: false,
        output: super::process::Output::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clone::ChildFailed;
    use crate::confine::{SetupFailed, Step};
    use crate::process::Failed;
    use std::os::unix::fs::MetadataExt;

    /// A protected path swapped for another between the walk and the child's bind
    /// (a symlink put above it by another call's child, say) stops the child.
    #[test]
    fn a_child_whose_protected_bind_is_not_what_the_walk_saw_does_not_start() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::create_dir(work.join(".git")).unwrap();
        let runtime = ExecRuntime::new(ExecSettings::default(), Some(work.clone()));
        let confinement = runtime.confinement().unwrap_or_else(|e| panic!("no sandbox here: {e}"));
        let meta = std::fs::symlink_metadata(work.join(".git")).unwrap();
        let run = |ino: u64| {
            let bind = ProtectBind { path: work.join(".git"), read_only: true, dev: meta.dev(), ino };
            let (setup, cgroup) =
                confinement.setup(&runtime.settings.limits, true, &work, &[bind], None).unwrap();
            let spawned =
                super::super::process::spawn(&probe_spawn(Path::new("/usr/bin/true"), &work), &setup);
            let status = spawned.map(|mut s| s.process.wait_blocking().unwrap());
            drop(cgroup);
            status
        };
        assert!(run(meta.ino()).unwrap().success());
        let err = run(meta.ino() + 1).expect_err("the child started");
        let expected = SetupFailed { step: Step::Root, errno: libc::ESTALE };
        assert!(matches!(err.failed, Failed::Child(ChildFailed::Setup(f)) if f == expected), "{err}");
        assert!(err.to_string().contains("building its own root: Stale file handle"), "{err}");
    }
}
