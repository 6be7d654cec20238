//! Starting programs: the host side of `toolhost:plugin/exec`, and of the native
//! `run_tests` and `process_list` tools.
//!
//! A spawned process runs natively, outside wasm, so the host confines every child
//! itself rather than trusting the tool that asked:
//!
//! - **What runs**: only programs on the grant's allow-list, resolved once, at load,
//!   to absolute paths outside the work dir ([`ExecGrant::resolve`]); arguments are a
//!   vector, never a shell line, unless the grant has the shell profile (`bash -c`).
//! - **Where it can reach** ([`confine`]): a mount namespace built once and shared
//!   by the children it fits (`shared_root`; none of them can change it), whose
//!   root holds only the work dir, the system dirs, the exec `path` and `read-dirs`, a
//!   few `/etc` entries, `/proc` (names only) and a minimal `/dev`, with empty
//!   private `/tmp` and `/run` (`mounts`): the host's unix sockets have no name
//!   there. Landlock limits it further (the work dir read-write only when the call
//!   may write; signals and abstract unix sockets scoped to its own domain); a new
//!   user and network namespace leaves it no network and no capability (uid and gid
//!   map to the host's own, so files keep their owner; the network namespace, made
//!   ahead of time for it alone, is one it has no capability over); seccomp refuses set-uid
//!   bits and `mknod`; every descriptor the host holds is closed at `exec`; rlimits
//!   bound CPU time, file size, address space and core dumps; it leads its own
//!   session and process group; a pids cgroup ([`cgroup`]) caps how many processes
//!   it can start and finds every one of them to kill. A host that is not root and
//!   has no cgroup caps processes with `RLIMIT_NPROC` inside the child's user
//!   namespace and finds them by that namespace instead.
//! - **What it may not change**: a writing child writes through an overlay over
//!   the work dir (`overlay`), its upper layer in the host's staging dir outside
//!   the work dir (`staging`); once its whole tree is dead the host merges it
//!   (`merge`), refusing every protected path — a `.git` at any depth, the host's
//!   files there (the policy file), the `protected` globs' matches; repository
//!   data only under the grant's `commit = true` — and the call fails
//!   `permission_denied` naming them. A host killed meanwhile merges nothing; the
//!   next one removes the layer. The protected paths a walk finds (and the git dirs
//!   `.git` files point to) are also bound read-only over the overlay
//!   (`protect_walk`), so that writing one fails at once; under a commit grant a
//!   `.git` is only pinned, its hooks, config and other guarded entries read-only.
//!   Where no overlay can be mounted, the child writes to the work dir itself and
//!   what it created there is removed after it (`protect_check`).
//! - **How much it writes**: a writing child's `RLIMIT_FSIZE` is the least of the
//!   `file-size-mib` limit and what is left of the call's write quota, with
//!   `SIGXFSZ` ignored so a write past it fails with `EFBIG` instead of killing the
//!   program; the work dir's growth over the call's children is charged to the
//!   quota after (by the merge, or `growth` without an overlay), and a call whose
//!   children reached it fails `write_quota`.
//! - **What it knows**: an empty environment plus a fixed `PATH`, `HOME` and
//!   `TMPDIR` (the work dir), `LANG`, and the granted variables.
//! - **How it ends** ([`spawn`]): at its deadline or on cancellation every process
//!   it started is killed and reaped; output before that is kept (head and tail).
//!   At most [`ExecSettings::max_children`] run at once on a host (`exec_busy`).
//!
//! When the kernel cannot confine a child (no Landlock, no user or mount
//! namespaces, no way to cap processes), exec fails closed with
//! `sandbox_unavailable` unless the grant says `unconfined = true` (then none of
//! the above applies but the rlimits, the empty environment, the closed
//! descriptors, the process group and the deadline).
//!
//! Not covered: a host killed during a merge leaves what was merged so far
//! (never a protected path); bare repositories (a directory that is a repository without being
//! named `.git`) are not guarded (rebase and sequencer state stays read-only even
//! under a commit grant: its todo lists hold `exec` lines); a read-only
//! call needs no walk (its work dir is read-only as a whole). The walk costs one
//! `lstat` per directory of the work dir, and a listing for each directory that
//! changed since the previous walk (see BENCHMARKS.md); past
//! 250,000 directories it refuses to start a writing child.
//!
//! Modules: [`confine`] (the child's steps before `exec`) and `clone` (starting
//! it without `fork`), the only `unsafe` code; `process` (what to run, prepared
//! for `clone`, and waiting on the child's pidfd), `step` (which step failed),
//! `landlock` (the rulesets, and what a child may reach at all), `seccomp`,
//! `mounts` (the child's root, planned in the parent), `probe` (what this machine offers, feature by feature; the refusal naming what it lacks), `shared_root` (a root built
//! once and entered by the children it fits), `protect_walk` and
//! `protect_check` (protected paths before and after), `overlay`, `staging` and
//! `merge` (a writing child's overlay, its layers, merging them), [`cgroup`], `capture`
//! (head + tail of a stream), `request` (what to run, and the cwd check), [`spawn`] (one child, start to reaped), [`table`]
//! (what `process_list` shows), `host` (the WIT glue), `resident` (a child that lives across calls: an MCP server).

mod capture;
pub(crate) mod cgroup;
mod clone;
pub(crate) mod confine;
mod grant;
mod growth;
pub(crate) mod host;
mod landlock;
mod merge;
mod mounts;
mod overlay;
mod probe;
mod process;
mod protect_check;
mod protect_walk;
mod request;
mod resident;
mod runtime;
mod seccomp;
mod shared_root;
pub(crate) mod spawn;
mod staging;
mod step;
pub(crate) mod table;

pub use grant::ExecGrant;
pub(crate) use grant::{ResolvedGrant, find as find_program};
pub use probe::{FeatureCheck, LANDLOCK_ABI_NEEDED, SandboxFeature, SandboxProbe};
pub(crate) use request::{SpawnRequest, resolve_cwd};
pub(crate) use resident::ResidentSpec;
pub(crate) use runtime::ExecAccess;
pub use runtime::ExecRuntime;
pub use table::{ProcessInfo, ProcessState};

use std::path::PathBuf;
use std::time::Duration;

/// Directories searched for allow-listed program names, before [`ExecSettings::path`].
pub const SYSTEM_PATH: &[&str] =
    &["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// Resource limits of one child (and everything it starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildLimits {
    /// CPU seconds per process (`RLIMIT_CPU`; SIGXCPU, then SIGKILL a second later).
    pub cpu_seconds: u64,
    /// Address space per process in bytes (`RLIMIT_AS`): allocation fails beyond it.
    pub memory_bytes: u64,
    /// Largest file a process may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Processes (and threads) at once in the child's tree: the pids cgroup's
    /// `pids.max`, and `RLIMIT_NPROC` where that applies (not for root).
    pub processes: u64,
    /// Default and most bytes kept of each of stdout and stderr (4 MiB: a long failing
    /// build log reaches the output store whole, before anything is cut).
    pub output_bytes: u64,
}

impl Default for ChildLimits {
    fn default() -> Self {
        Self {
            cpu_seconds: 600,
            memory_bytes: 4 << 30,
            file_size_bytes: 1 << 30,
            processes: 256,
            output_bytes: 4 << 20,
        }
    }
}

/// Host-wide settings of exec: how many children at once, where programs are found
/// and what they may read, and their limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSettings {
    /// Children running at once on this host; one more gets `exec_busy`.
    pub max_children: usize,
    /// Extra directories searched for program names (after [`SYSTEM_PATH`]); children
    /// may read and execute in them.
    pub path: Vec<PathBuf>,
    /// Extra directories children may read, and run programs from (a toolchain's
    /// files, say), never write.
    pub read_dirs: Vec<PathBuf>,
    /// Limits of every child.
    pub limits: ChildLimits,
    /// The pids cgroup directory the host makes its own in (default: its own pids
    /// cgroup, found in `/proc/self/cgroup`).
    pub cgroup_parent: Option<PathBuf>,
    /// Features to treat as missing whatever the machine has (`probe`): exec then
    /// refuses as it would on a machine without them. Empty by default.
    pub unavailable: Vec<SandboxFeature>,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            max_children: 4,
            path: Vec::new(),
            read_dirs: Vec::new(),
            limits: ChildLimits::default(),
            cgroup_parent: None,
            unavailable: Vec::new(),
        }
    }
}

impl ExecSettings {
    /// The directories searched for program names, in order.
    pub fn search_path(&self) -> Vec<PathBuf> {
        SYSTEM_PATH.iter().map(PathBuf::from).chain(self.path.iter().cloned()).collect()
    }

    /// The `PATH` a child sees.
    pub fn child_path(&self) -> String {
        let dirs: Vec<String> = self.search_path().iter().map(|p| p.display().to_string()).collect();
        dirs.join(":")
    }
}

/// The longest a child may take when neither the request nor the call says less.
pub(crate) const MAX_CHILD_TIME: Duration = Duration::from_secs(3600);
