//! The policy: which third-party plugins run, with what, and which calls need asking.
//!
//! It lives in `toolhost.toml` in the work dir (or a file given with `--policy`);
//! without one the defaults apply (builtins only, `default` mode, no rules). Only the
//! user changes it — by editing it, with `toolhost add`, or by answering "always" to
//! the [`Approver`]. No tool, plugin or MCP request can: the file is a protected path,
//! and the host reads it once, at start.
//!
//! ```toml
//! [permissions]
//! mode = "default"                       # default | plan | accept-edits | yolo
//! allow = ["write_file(path=docs/**)"]
//! deny = ["write_file(path=.env)", "fetch_url(url=http://*)"]
//! protected = ["secrets/"]               # beyond .git/ and this file
//!
//! [plugins.wordcount]
//! source = "tools/wordcount.wasm"         # relative to this file
//! sha256 = "…"                            # the bytes that were approved
//! filesystem = "read"                     # none | read | read-write
//! read-dirs = ["/usr/share/dict"]         # extra read-only dirs
//! network = ["docs.rs", "*.github.com"]   # hosts its fetch may reach
//! env = ["LANG", "LC_*"]                  # globs never pass secret-looking names
//! sockets = "refuse"                      # or "stub": linked, every operation refused
//! limits = { memory-mib = 64, fuel = 1_000_000_000, timeout-ms = 5000, output-bytes = 1_000_000 }
//! exec = { programs = ["git"], shell = false }   # only if it imports exec
//! ```
//!
//! The builtins' variables and programs, child limits and test profiles are in
//! [`exec`] (`[builtins]`, `[exec]`, `[tests.NAME]`).
//!
//! Modules: `file` (parsing), [`rules`], [`permissions`], [`approver`], [`env`],
//! [`redact`], `edit` (writing entries and rules back, comments kept).

mod approver;
mod edit;
pub mod env;
pub mod exec;
mod file;
mod guard;
pub mod permissions;
pub mod redact;
pub mod rules;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use approver::{Approval, ApprovalRequest, Approver};
pub use edit::{PluginEntryDraft, add_allow_rule, write_plugin_entry};
pub use exec::{BuiltinsPolicy, TestProfile};
pub use guard::PolicyGuard;
pub use permissions::{Decision, Mode, Permissions};
pub use redact::Redactor;
pub use rules::Rule;

use crate::fetch::{HostPattern, NetGrant};
use crate::grants::{FsAccess, GrantSource, PluginGrants, Sockets};
use crate::limits::Limits;

/// The policy file's name in the work dir.
pub const POLICY_FILE: &str = "toolhost.toml";

/// Why the policy could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file could not be read.
    #[error("policy {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is malformed: an unknown key, a bad value or pattern.
    #[error("policy {path}, line {line}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line of the offending key or value.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file could not be written.
    #[error("policy {path}: cannot save: {message}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}

/// Per-plugin limit overrides (unset: the host's limits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Memory cap in MiB.
    pub memory_mib: Option<usize>,
    /// Fuel per call.
    pub fuel: Option<u64>,
    /// Default deadline in milliseconds (also raises the maximum if needed).
    pub timeout_ms: Option<u64>,
    /// Largest output in bytes.
    pub output_bytes: Option<usize>,
}

impl LimitOverrides {
    /// `base` with these overrides applied.
    pub fn apply(&self, base: &Limits) -> Limits {
        let mut limits = base.clone();
        if let Some(mib) = self.memory_mib {
            limits.memory_bytes = mib << 20;
        }
        if let Some(fuel) = self.fuel {
            limits.fuel = fuel;
        }
        if let Some(ms) = self.timeout_ms {
            limits.timeout = Duration::from_millis(ms);
            limits.max_timeout = limits.max_timeout.max(limits.timeout);
        }
        if let Some(bytes) = self.output_bytes {
            limits.output_bytes = bytes;
        }
        limits
    }
}

/// One `[plugins.NAME]` entry.
#[derive(Debug, Clone)]
pub struct PluginEntry {
    /// The entry's name; the plugin is shown under it.
    pub name: String,
    /// The component file.
    pub source: PathBuf,
    /// The sha256 its bytes must have.
    pub sha256: String,
    /// Work dir access (default `none`).
    pub filesystem: FsAccess,
    /// Extra read-only dirs.
    pub read_dirs: Vec<PathBuf>,
    /// Hosts its fetch may reach.
    pub network: Vec<HostPattern>,
    /// Environment variable names (or globs) it may see.
    pub env: Vec<env::EnvName>,
    /// What its `wasi:sockets` imports get.
    pub sockets: Sockets,
    /// The programs it may start.
    pub exec: crate::exec::ExecGrant,
    /// Its limits.
    pub limits: LimitOverrides,
}

impl PluginEntry {
    /// The grants of this entry on a host with `limits` as base, the private-network
    /// opt-out `allow_private`, and the environment `host_env`.
    pub fn grants(
        &self,
        limits: &Limits,
        allow_private: bool,
        host_env: impl IntoIterator<Item = (String, String)>,
    ) -> PluginGrants {
        PluginGrants {
            fs: self.filesystem,
            read_dirs: self.read_dirs.clone(),
            net: NetGrant { hosts: self.network.clone(), allow_private },
            env: env::select(&self.env, host_env),
            sockets: self.sockets,
            exec: self.exec.clone(),
            limits: self.limits.apply(limits),
            sha256: Some(self.sha256.clone()),
            source: GrantSource::Policy { name: self.name.clone() },
        }
    }
}

/// The parsed policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The file it came from (or where "always" answers are saved).
    pub path: Option<PathBuf>,
    /// The permission mode.
    pub mode: Mode,
    /// Allow rules.
    pub allow: Vec<Rule>,
    /// Deny rules.
    pub deny: Vec<Rule>,
    /// Protected path globs, relative to the work dir.
    pub protected: Vec<String>,
    /// Third-party plugins.
    pub plugins: Vec<PluginEntry>,
    /// What the builtin tools see and may run.
    pub builtins: BuiltinsPolicy,
    /// How children are bounded.
    pub exec: crate::exec::ExecSettings,
    /// What `run_tests` may run.
    pub tests: Vec<TestProfile>,
}

impl Policy {
    /// Parse `text` as the policy file at `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, PolicyError> {
        file::parse(text, path)
    }

    /// Read and parse the file at `path`.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| PolicyError::Read { path: path.display().to_string(), source })?;
        Self::parse(&text, path)
    }

    /// The policy for a host in `work_dir`: `explicit` (which must exist) if given,
    /// else `work_dir/toolhost.toml` if it exists, else the defaults (with "always"
    /// answers saved to `work_dir/toolhost.toml`).
    pub fn discover(explicit: Option<&Path>, work_dir: &Path) -> Result<Self, PolicyError> {
        if let Some(path) = explicit {
            return Self::load(path);
        }
        let path = work_dir.join(POLICY_FILE);
        if path.exists() {
            return Self::load(&path);
        }
        Ok(Self { path: Some(path), ..Self::default() })
    }

    /// The permissions this policy sets, judged against `work_dir`.
    pub fn permissions(&self, work_dir: Option<PathBuf>) -> Result<Permissions, PolicyError> {
        let mut permissions = Permissions::new(self.mode).with_work_dir(work_dir);
        permissions.allow = self.allow.clone();
        permissions.deny = self.deny.clone();
        permissions =
            permissions.with_protected(&self.protected).map_err(|message| PolicyError::Invalid {
                path: self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                line: 0,
                message,
            })?;
        if let Some(path) = &self.path {
            let canonical = path
                .parent()
                .and_then(|dir| dir.canonicalize().ok())
                .and_then(|dir| path.file_name().map(|name| dir.join(name)));
            permissions.protect_file(canonical.as_deref().unwrap_or(path));
        }
        Ok(permissions)
    }
}
