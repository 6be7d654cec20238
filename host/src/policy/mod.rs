//! The policy: which third-party plugins run, with what, and which calls need asking.
//!
//! Two files may apply (see `sources`): the project's `toolhost.toml` in the work
//! dir (or a file given with `--policy`), believed only when the user trusted its
//! bytes or when it only narrows, and the user's private policy outside the work dir
//! (see `trust`), where "always" answers go. Without either the defaults apply
//! (builtins only, `default` mode, no rules). Only the user changes them — by editing,
//! with `toolhost add` or `toolhost trust`, or by answering "always" to the
//! [`Approver`]. No tool, plugin or MCP request can: the files are protected paths
//! at every layer that writes (the protected paths), and the host reads them once, at
//! start.
//!
//! ```toml
//! [permissions]
//! mode = "default"                       # default | plan | accept-edits | yolo
//! safe-commands = false                  # default true: `ls`, `git status`, … run unasked
//! require-fresh = true                   # changes to existing files need expected_sha256
//! follow-links = true                    # write through symlinks inside the work dir
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
//! limits = { memory-mib = 64, fuel = 1_000_000_000, timeout-ms = 5000, output-bytes = 1_000_000, write-mib = 64 }
//! exec = { programs = ["git"], shell = false }   # only if it imports exec; commit = true
//!                                                # lets its children write .git data
//! read-only = ["get_weather"]              # typed-export tools that change nothing
//! ```
//!
//! A `source` may also be `oci://HOST/REPO:TAG@sha256:…` (a registry artifact, pinned
//! and signed: `keys`, `identities`, `[trust]`) or `https://…` (pinned by `sha256`):
//! see `remote` ([`EntrySource`]).
//!
//! The builtins' variables and programs, child limits and test profiles are in
//! `exec` (`[builtins]`, `[exec]`, `[tests.NAME]`); pre- and post-tool-use hooks
//! in `hooks` (`[[hooks]]`); MCP servers in `servers` (`[servers.NAME]`).
//!
//! Modules: `file` (parsing), `sources` (which files, trust, merging), `trust`
//! (the config dir: private policies and trust records), `rules`, `shell`
//! (command lines for rules and the safe list), `derive` (the rule "always" saves,
//! every value in it literal), `shown` (text from calls as questions and reasons
//! show it: quoted, escaped, bounded), `servers`, `permissions`, `approver`, `env`,
//! `redact`, `grants`, `limits` (the overrides of a plugin entry and the CLI's flags:
//! [`LimitOverrides`]), `edit` (writing entries and rules back, comments kept).
//!
//! # Why a public module
//!
//! The policy is an API of its own beside the host: a front end reads, trusts and edits
//! policy files (`toolhost add`, `trust`, `add-server` do) and shows approval questions
//! safely. Its items are re-exported here, flat; its files are private.

mod approver;
pub(crate) mod derive;
mod edit;
pub(crate) mod env;
pub(crate) mod exec;
mod file;
pub(crate) mod grants;
pub(crate) mod hooks;
#[cfg(test)]
pub(crate) mod hostile_text;
mod limits;
pub(crate) mod permissions;
pub(crate) mod redact;
mod remote;
pub(crate) mod rules;
mod server_pin;
pub(crate) mod servers;
pub(crate) mod shell;
pub(crate) mod shown;
pub(crate) mod sources;
pub(crate) mod trust;

use std::path::{Path, PathBuf};

pub use crate::error::PolicyError;
pub use crate::imports::config::{ConfigSource, ConfigValue};
pub use approver::{Approval, ApprovalRequest, Approver};
pub use edit::{
    PluginEntryDraft, RemoteDraft, ServerEntryDraft, add_allow_rule, plugin_entry_toml, remove_plugin_entry,
    server_entry_toml, set_plugin_source, write_plugin_entry, write_server_entry,
};
pub use exec::{BuiltinsPolicy, TestProfile};
pub use hooks::{HookAction, HookEntry, HookEvent};
pub use limits::{LimitError, LimitKey, LimitOverrides};
pub use permissions::{Decision, HookSays, Mode, Permissions};
pub use redact::Redactor;
pub use remote::EntrySource;
pub use rules::Rule;
pub use server_pin::{ServerPinDraft, set_server_pin, with_server_pin};
pub use servers::ServerTransport;
pub use shown::{ShownRequest, unredacted};
pub use sources::inside;
pub use trust::{ConfigDir, sha256_hex};

use crate::imports::fetch::{HostPattern, NetGrant};
use crate::limits::Limits;
use crate::policy::grants::{FsGrant, GrantSource, PluginGrants, Sockets};

/// The policy file's name in the work dir.
pub const POLICY_FILE: &str = "toolhost.toml";

/// Largest policy file read.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

/// One `[plugins.NAME]` entry.
#[derive(Debug, Clone)]
pub struct PluginEntry {
    /// The entry's name; the plugin is shown under it.
    pub name: String,
    /// Where the component comes from.
    pub source: EntrySource,
    /// Who must have signed an `oci://` source (`None`: no signature is required).
    pub signers: Option<crate::oci::TrustSet>,
    /// Speak plain HTTP to its registry (a loopback one only).
    pub plain_http: bool,
    /// Pull with the registry's own entry in the user's docker config (`registry-auth =
    /// true`, written by `toolhost add … --registry-auth`): sent to that registry only.
    pub registry_auth: bool,
    /// The sha256 its bytes must have.
    pub sha256: String,
    /// Work dir access (default `none`).
    pub filesystem: FsGrant,
    /// Extra read-only dirs.
    pub read_dirs: Vec<PathBuf>,
    /// Hosts its fetch may reach.
    pub network: Vec<HostPattern>,
    /// Environment variable names (or globs) it may see.
    pub env: Vec<env::EnvName>,
    /// What its `wasi:sockets` imports get.
    pub sockets: Sockets,
    /// The programs it may start.
    pub exec: crate::imports::exec::ExecGrant,
    /// Its limits.
    pub limits: LimitOverrides,
    /// What `wasi:config/store` gives it (`config = { KEY = "value" | { env = "NAME" } }`).
    pub config: Vec<(String, ConfigSource)>,
    /// The tools of a typed-export component that are read-only (`read-only = ["tool", …]`).
    pub read_only: Vec<String>,
}

impl PluginEntry {
    /// Whether `name` may name an entry: ASCII letters, digits, `-` and `_`, at least
    /// one. The error quotes the name with its control characters escaped.
    pub fn check_name(name: &str) -> Result<(), String> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("plugin name {name:?}: use letters, digits, `-` and `_`"));
        }
        Ok(())
    }

    /// The grants of this entry on a host with `limits` as base, the private-network
    /// opt-out `allow_private`, and the environment `host_env`.
    pub fn grants(
        &self,
        limits: &Limits,
        allow_private: bool,
        host_env: impl IntoIterator<Item = (String, String)>,
    ) -> PluginGrants {
        let host_env: Vec<(String, String)> = host_env.into_iter().collect();
        PluginGrants {
            fs: self.filesystem,
            read_dirs: self.read_dirs.clone(),
            net: NetGrant { hosts: self.network.clone(), allow_private },
            config: crate::imports::config::resolve(&self.config, &host_env),
            env: env::select(&self.env, host_env),
            sockets: self.sockets,
            exec: self.exec.clone(),
            limits: self.limits.apply(limits),
            sha256: Some(self.sha256.clone()),
            read_only: self.read_only.clone(),
            source: GrantSource::Policy { name: self.name.clone() },
        }
    }
}

/// Which optional parts a policy file sets (an unset part takes the default, or the
/// other file's when two are merged).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sections {
    pub(crate) mode: bool,
    pub(crate) builtins: bool,
    pub(crate) exec: bool,
}

/// The parsed policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The project policy file (whether or not it exists): a protected path.
    pub path: Option<PathBuf>,
    /// The user's private policy, outside the work dir: where "always" answers are
    /// saved (`None`: they last for the session only).
    pub private_path: Option<PathBuf>,
    /// Every file this policy was read from.
    pub files: Vec<PathBuf>,
    /// The user's config dir (trust records, private policies): a protected path when
    /// it lies inside the work dir.
    pub config_dir: Option<PathBuf>,
    pub(crate) sections: Sections,
    /// The permission mode.
    pub mode: Mode,
    /// `safe-commands`, when the file sets it (unset: on).
    pub safe_commands: Option<bool>,
    /// `require-fresh`, when the file sets it (unset: off): the file tools need
    /// `expected_sha256` for every change to an existing file.
    pub require_fresh: Option<bool>,
    /// `follow-links`, when the file sets it (unset: off): the file tools write
    /// through symlinks that stay inside the work dir instead of refusing them.
    pub follow_links: Option<bool>,
    /// `[network] allow-private`, when the file sets it (unset: off): tools may reach
    /// private, loopback and link-local addresses, as with `--allow-private-network`.
    pub allow_private_network: Option<bool>,
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
    pub exec: crate::imports::exec::ExecSettings,
    /// What `run_tests` may run.
    pub tests: Vec<TestProfile>,
    /// What runs before and after calls, in file order (project first).
    pub hooks: Vec<HookEntry>,
    /// MCP servers whose tools join the registry (`[servers.NAME]`).
    pub servers: Vec<servers::ServerEntry>,
    /// `[output] shape`, when the file sets it (unset: on): logs are shaped by
    /// what they are for the tools that opt in.
    pub shape_output: Option<bool>,
}

impl Policy {
    /// Whether tool outputs are shaped by what they are (`[output] shape`, default on).
    pub fn shapes_output(&self) -> bool {
        self.shape_output != Some(false)
    }

    /// Parse `text` as the policy file at `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, PolicyError> {
        file::parse(text, path)
    }

    /// Read and parse the file at `path`, as the caller vouches for it (no trust
    /// check: see [`Self::discover`] for that). A symlink, FIFO, device or a file over
    /// [`MAX_POLICY_BYTES`] is refused.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let read = |source| PolicyError::Read { path: path.display().to_string(), source };
        let text = confine::hostfs::read_text(path, MAX_POLICY_BYTES)
            .map_err(read)?
            .ok_or_else(|| read(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")))?;
        Self::parse(&text, path)
    }

    /// The permissions this policy sets, judged against `work_dir`.
    pub fn permissions(&self, work_dir: Option<PathBuf>) -> Result<Permissions, PolicyError> {
        let mut permissions = Permissions::new(self.mode).with_work_dir(work_dir);
        permissions.allow = self.allow.clone();
        permissions.deny = self.deny.clone();
        permissions.safe_commands = self.safe_commands.unwrap_or(true);
        permissions =
            permissions.with_protected(&self.protected).map_err(|message| PolicyError::Invalid {
                path: self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                line: 0,
                message,
            })?;
        for path in self.path.iter().chain(&self.private_path).chain(&self.files).chain(&self.config_dir) {
            permissions.protect_file(path);
        }
        Ok(permissions)
    }
}
