//! [`Host`]: the engine, the loaded plugins and their tools, the limits and
//! the output store, built once by [`HostBuilder`] and shared by every call.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::hooks::Hooks;
use crate::imports::exec::{ExecAccess, ExecRuntime};
use crate::imports::fetch::{FetchClient, NetAccess, NetworkSettings};
use crate::limits::{Limits, WriteMeter};
use crate::load::plugin::Plugin;
use crate::load::registry::Registry;
use crate::load::spec::ToolDefinition;
use crate::output::OutputStore;
use crate::policy::{Approver, Decision, HookSays, Permissions, PolicyError, Rule};

/// A tool host: build it once, then [`Host::execute`] calls concurrently.
pub struct Host {
    pub(crate) engine: Engine,
    pub(crate) plugins: Vec<Arc<Plugin>>,
    /// The tools of the builtins, the plugins and the host itself.
    pub(crate) base: Arc<Registry>,
    /// `base` with the listed servers' tools, and the servers' tool version it was
    /// made at (`call::servers`).
    pub(crate) registry: RwLock<(u64, Arc<Registry>)>,
    /// The policy's MCP servers (`None`: it names none).
    pub(crate) servers: Option<crate::servers::Servers>,
    /// The plugins compiling in the background (`crate::call::late`; `None`: every
    /// plugin loaded in the build).
    pub(crate) late: Option<Arc<crate::call::late::Late>>,
    /// Moves whenever the tool list may have changed: a late plugin loaded, a
    /// server's tools changed (`None`: the list never changes).
    pub(crate) tools_version: Option<tokio::sync::watch::Sender<u64>>,
    /// The allow-list of tool names, when one was given (servers' tools too).
    pub(crate) allow: Option<Vec<String>>,
    pub(crate) limits: Limits,
    pub(crate) work_dir: Option<PathBuf>,
    pub(crate) outputs: Arc<OutputStore>,
    pub(crate) slots: Semaphore,
    pub(crate) network: NetworkSettings,
    pub(crate) fetch: Arc<FetchClient>,
    pub(crate) permissions: RwLock<Permissions>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) approval_turn: tokio::sync::Mutex<()>,
    /// Where "always" answers are saved: the user's private policy, outside the
    /// work dir (`None`: they last for the session).
    pub(crate) policy_path: Option<PathBuf>,
    /// Starts, confines and tracks every child process.
    pub(crate) exec: Arc<ExecRuntime>,
    /// What no tool may change, at every layer that writes.
    pub(crate) protected: Option<Arc<confine::Protected>>,
    /// Descriptors and directory streams one call may hold open at once.
    pub(crate) open_handles: usize,
    /// Redacts what the host's own tools return: the builtins' granted values
    /// (less the ones `reveal` shows on purpose) and secret shapes.
    pub(crate) native_redactor: crate::policy::Redactor,
    /// The policy's pre- and post-tool-use hooks, loaded.
    pub(crate) hooks: Hooks,
    /// The host's own state outside the work dir (`None`: no data dir is known).
    pub(crate) data_dir: Option<PathBuf>,
    /// Where calls that may change something are recorded before they run
    /// (`None`: not journaled; see [`crate::HostBuilder::journal`]).
    pub(crate) journal: Option<crate::journal::Journal>,
    /// Whether logs are shaped by what they are for tools that opt in (the
    /// policy's `[output] shape`, default on; see [`crate::output::shape`]).
    pub(crate) shape_output: bool,
}

impl Host {
    /// What a model is given: every tool's name, description and schema,
    /// sorted by name (an MCP server's tools once it was started:
    /// [`Host::start_servers`]).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry().definitions()
    }

    /// The registered tools, as they are now: the builtins', the plugins', the
    /// host's own, and those of the MCP servers listed so far.
    pub fn registry(&self) -> Arc<Registry> {
        self.current_registry()
    }

    /// The loaded plugins (builtins first, in load order).
    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// The per-call limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The canonical work dir, when tools get one.
    pub fn work_dir(&self) -> Option<&Path> {
        self.work_dir.as_deref()
    }

    /// Full outputs by call id.
    pub fn outputs(&self) -> &OutputStore {
        &self.outputs
    }

    /// The host's data dir, when one is known.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    /// The effect journal, when calls are journaled.
    pub fn journal(&self) -> Option<&crate::journal::Journal> {
        self.journal.as_ref()
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The network settings the host was built with (who may reach what).
    pub fn network(&self) -> &NetworkSettings {
        &self.network
    }

    /// The network capability of a call to `plugin`: `None` unless it imports fetch.
    pub(crate) fn net_access(&self, plugin: &Plugin) -> Option<NetAccess> {
        plugin.network().map(|grant| NetAccess { grant: grant.clone(), client: self.fetch.clone() })
    }

    /// The exec capability of a call to `plugin`: `None` unless it imports exec.
    pub(crate) fn exec_access(
        &self,
        plugin: &Plugin,
        cancel: &CancellationToken,
        quota: &Arc<WriteMeter>,
    ) -> Option<ExecAccess> {
        plugin.exec().map(|grant| {
            let env = plugin.env().into();
            ExecAccess::new(self.exec.clone(), grant.clone(), env, cancel.clone(), quota.clone())
        })
    }

    /// The runtime that starts child processes (settings, process table).
    pub fn exec_runtime(&self) -> &ExecRuntime {
        &self.exec
    }

    /// The permission mode, rules and protected paths in force.
    pub fn permissions(&self) -> Permissions {
        self.permissions.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What the permissions say about a call to `tool` with `args`, without asking
    /// anyone.
    pub fn decide(&self, tool: &str, read_only: bool, args: &serde_json::Value) -> Decision {
        self.decide_hooked(tool, read_only, args, &HookSays::Nothing)
    }

    /// [`Host::decide`] with what the pre-tool-use hooks said.
    pub(crate) fn decide_hooked(
        &self,
        tool: &str,
        read_only: bool,
        args: &serde_json::Value,
        hook: &HookSays,
    ) -> Decision {
        self.permissions.read().unwrap_or_else(|e| e.into_inner()).decide_hooked(tool, read_only, args, hook)
    }

    pub(crate) fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.approver.as_ref()
    }

    pub(crate) async fn approval_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.approval_turn.lock().await
    }

    /// Add the allow rule `rule` for the rest of the session and save it to the
    /// policy file (the in-memory rule stays even if saving fails).
    pub(crate) fn allow_always(&self, rule: &str) -> Result<(), PolicyError> {
        let parsed = Rule::parse(rule).map_err(|message| PolicyError::Write {
            path: String::new(),
            message: format!("the suggested rule is not valid: {message}"),
        })?;
        {
            let mut permissions = self.permissions.write().unwrap_or_else(|e| e.into_inner());
            if !permissions.allow.contains(&parsed) {
                permissions.allow.push(parsed);
            }
        }
        let Some(path) = &self.policy_path else { return Ok(()) };
        crate::policy::add_allow_rule(path, rule)
    }

    /// Put the file `remove_file` kept as artifact `id` back in the work dir, at
    /// `path` or where it was, never over an existing file (what `toolhost restore`
    /// runs: the user's own command, so no permission is asked; protected paths
    /// still refuse). The message says what was restored.
    pub fn restore_artifact(&self, id: &str, path: Option<&str>) -> Result<String, crate::error::CallError> {
        let Some(work_dir) = &self.work_dir else {
            return Err(crate::error::CallError::new(crate::error::codes::NO_FILESYSTEM, "no work dir"));
        };
        let tool = crate::native::RestoreFile(crate::native::FileStore {
            work_dir: work_dir.clone(),
            protected: self.protected.clone(),
            artifacts: self.data_dir.as_deref().map(crate::native::Artifacts::new),
            require_fresh: false,
        });
        tool.run(id, path).map(|out| out.content)
    }

    /// The filesystem guard of one call, charging its writes to `quota`.
    pub(crate) fn fs_guard(&self, quota: &Arc<WriteMeter>) -> crate::imports::wasi_fs::FsGuard {
        crate::imports::wasi_fs::FsGuard::new(self.protected.clone(), self.open_handles, quota.clone())
    }

    /// Wait for a free instance slot (bounded by the pooling allocator).
    pub(crate) async fn call_slot(&self) -> Option<SemaphorePermit<'_>> {
        self.slots.acquire().await.ok()
    }
}
