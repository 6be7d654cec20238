//! Starting programs, the wasm-facing part: `toolhost:plugin/exec` (`host`, the WIT
//! glue: a request checked against the call's capability, turned into a
//! [`SpawnRequest`], the outcome back into WIT records), what a plugin may run
//! ([`ExecGrant`], resolved at load in `grant`), and one call's capability
//! ([`ExecAccess`], `access`).
//!
//! Everything that starts, confines and accounts a child — Landlock, seccomp,
//! namespaces, cgroups, the shared root, the overlay and its merge, the protected-path
//! walk, resident children — is the `confine` crate: the host's only door into them.
//! Its items are re-exported here for the rest of the host (hooks, `run_tests`,
//! `process_list`, upstream MCP servers).

mod access;
mod grant;
mod host;

pub(crate) use access::ExecAccess;
pub use confine::{
    ChildLimits, ExecRuntime, ExecSettings, FeatureCheck, LANDLOCK_ABI_NEEDED, ProcessInfo, ProcessState,
    SYSTEM_PATH, SandboxFeature, SandboxProbe,
};
pub(crate) use confine::{ResidentSpec, SpawnRequest, resolve_cwd};
pub use grant::ExecGrant;
pub(crate) use grant::{ResolvedGrant, find as find_program};
pub(crate) use host::{CAPABILITY, link};
