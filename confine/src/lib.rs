//! toolhost's child processes: everything that starts, confines and accounts a
//! program the host runs for a tool (the `exec` import, `run_tests`, hooks, upstream
//! MCP servers). The host crate reaches Landlock, seccomp, namespaces and cgroups
//! only through this crate, and holds no `unsafe` code for them: the libc calls are
//! here, in `confine` and `clone`.
//!
//! A spawned process runs natively, outside wasm, so the host confines every child
//! itself rather than trusting the tool that asked:
//!
//! - **What runs**: only the program the caller resolved (the host's grant, resolved
//!   once at load to an absolute path outside the work dir); arguments are a
//!   vector, never a shell line, unless the caller asked for `bash -c`.
//! - **Where it can reach** (`confine`): a mount namespace built once and shared
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
//!   session and process group; a pids cgroup (`cgroup`) caps how many processes
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
//! - **How it ends** (`spawn`): at its deadline or on cancellation every process
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
//! The stages of a child, and where each lives:
//!
//! 1. **once per host** ([`ExecRuntime::new`], built on the first child): what the
//!    machine offers (`probe`, [`SandboxProbe`]), the Landlock rulesets and the seccomp
//!    filter (`landlock`, `seccomp`), the child's root planned in the parent (`mounts`),
//!    the host's pids cgroup (`cgroup`), the staging dir of overlay layers (`staging`).
//! 2. **per request** ([`SpawnRequest`], [`resolve_cwd`]): what to run, from where,
//!    until when; a writing child's protected paths walked (`protect_walk`,
//!    [`Protected`]) and its overlay layer planned (`overlay`).
//! 3. **start** ([`ExecRuntime::run`]): a slot of [`ExecSettings::max_children`]; the
//!    child cloned without `fork` (`clone`, `process`), confined by its own steps before
//!    `exec` (`confine`, `step`), entering a root built once and shared
//!    (`shared_root`) or building its own.
//! 4. **wait** (`spawn`): stdin fed, stdout and stderr kept head and tail (`capture`),
//!    the deadline and cancellation, the whole tree killed and reaped, recorded for
//!    `process_list` ([`ProcessInfo`], `table`).
//! 5. **after**: the overlay merged refusing protected paths (`merge`), or without one
//!    what the child made there undone (`protect_check`); the work dir's growth charged
//!    to the call's [`WriteMeter`] (`growth`).
//!
//! What the host passes in: its [`ExecSettings`] and [`ChildLimits`] (`settings`, from
//! its policy), its [`Protected`] paths, each call's [`CallInfo`] and [`WriteMeter`]
//! (`meter`). What comes back: [`Finished`] (with [`Captured`] output) or a
//! [`SpawnError`] whose code is one of `toolhost-codes`'.
//!
//! A [`Resident`] child ([`ExecRuntime::start_resident`], an MCP server) takes stages 1
//! and 3 and lives across calls. [`hostfs`] is how the host reads and writes a file a
//! tool could have planted (no link followed, no FIFO opened).

mod capture;
mod cgroup;
mod clone;
mod confine;
mod growth;
pub mod hostfs;
mod landlock;
mod merge;
mod meter;
mod mounts;
mod overlay;
mod probe;
mod process;
mod protect;
mod protect_check;
mod protect_walk;
mod request;
mod resident;
mod runtime;
mod seccomp;
mod settings;
mod shared_root;
mod spawn;
mod staging;
mod step;
mod table;

pub use capture::Captured;
pub use meter::WriteMeter;
pub use probe::{FeatureCheck, LANDLOCK_ABI_NEEDED, SandboxProbe};
pub use protect::Protected;
pub use request::{CallInfo, SpawnRequest, resolve_cwd};
pub use resident::{Resident, ResidentSpec};
pub use runtime::ExecRuntime;
pub use settings::{ChildLimits, ExecSettings, MAX_CHILD_TIME, SYSTEM_PATH, SandboxFeature};
pub use spawn::{Finished, SpawnError};
pub use table::{ProcessInfo, ProcessState};
