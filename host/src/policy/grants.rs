//! What one plugin is granted: the capabilities handed to each of its calls,
//! as values. Each grant's type lives with its capability (`imports/<cap>`);
//! this gathers them per plugin. The policy file ([`crate::policy`]), the CLI
//! flags and the library builder all end up here; loading a plugin checks a
//! component's imports against it ([`PluginGrants::holds`] answers for each
//! capability's need), and the sandbox builds each call's WASI context from it.

use std::path::PathBuf;

use crate::imports::exec::ExecGrant;
use crate::imports::fetch::NetGrant;
pub use crate::imports::sockets::Sockets;
pub use crate::imports::wasi_fs::FsGrant;
use crate::limits::Limits;

/// Where a plugin's grants come from: how a refusal tells the user to change them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantSource {
    /// A builtin plugin: grants come from the host's settings.
    Builtin,
    /// A component given on the command line or to the builder, not in the policy.
    AdHoc,
    /// An entry of the policy file: `plugins.<name>` in `path`.
    Policy {
        /// The entry's name (`plugins.<name>`).
        name: String,
    },
}

impl GrantSource {
    /// How to grant `key` (`network`, `sockets`, …) to a plugin from this source, in
    /// words for the user (never shown to a model).
    pub fn how_to_grant(&self, key: &str, example: &str, flag: &str) -> String {
        match self {
            GrantSource::Policy { name } => format!("policy key plugins.{name}.{key} = {example}"),
            GrantSource::AdHoc => format!("{flag}, or the policy key plugins.<name>.{key} = {example}"),
            GrantSource::Builtin => format!("the host's settings ({flag})"),
        }
    }
}

/// Everything one plugin is granted.
#[derive(Debug, Clone)]
pub struct PluginGrants {
    /// The work dir: none, read-only, or read-write.
    pub fs: FsGrant,
    /// Extra directories preopened read-only (under their own host path).
    pub read_dirs: Vec<PathBuf>,
    /// The hosts its fetch may reach (used only if it imports fetch).
    pub net: NetGrant,
    /// The environment each call sees: exactly these variables.
    pub env: Vec<(String, String)>,
    /// What `wasi:config/store` answers (used only if it imports the interface).
    pub config: Vec<crate::imports::config::ConfigValue>,
    /// What to do with `wasi:sockets` imports.
    pub sockets: Sockets,
    /// The programs it may start (used only if it imports exec).
    pub exec: ExecGrant,
    /// The limits of its calls.
    pub limits: Limits,
    /// The sha256 the component must have (policy entries), checked at load.
    pub sha256: Option<String>,
    /// The tools of a typed-export component that are read-only (such a component
    /// cannot say so itself; every other tool of it is not read-only).
    pub read_only: Vec<String>,
    /// Where the grants come from.
    pub source: GrantSource,
}

impl PluginGrants {
    /// Whether they hold the grant under policy key `key` (a capability's
    /// [`Need`](crate::imports::capability::Need)): network hosts, config values,
    /// programs, the work dir, stubbed sockets. An unknown key is not held.
    pub(crate) fn holds(&self, key: &str) -> bool {
        match key {
            "network" => !self.net.is_empty(),
            "config" => !self.config.is_empty(),
            "exec" => !self.exec.is_empty(),
            "filesystem" => self.fs != FsGrant::None,
            "sockets" => self.sockets == Sockets::Stub,
            _ => false,
        }
    }

    /// Grants with the work dir read-write, no network, no env, and `limits`.
    pub fn new(source: GrantSource, limits: Limits) -> Self {
        Self {
            fs: FsGrant::ReadWrite,
            read_dirs: Vec::new(),
            net: NetGrant::default(),
            env: Vec::new(),
            config: Vec::new(),
            sockets: Sockets::Refuse,
            exec: ExecGrant::default(),
            limits,
            sha256: None,
            read_only: Vec::new(),
            source,
        }
    }
}
