//! [`HostBuilder`]: what a host is made of — the work dir, limits, plugins and
//! their grants, the policy, the approver — and [`HostBuilder::build`], which
//! creates the engine and loads every plugin (stages 1 and 2).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use tokio::sync::{Semaphore, watch};

use crate::call::host::Host;
use crate::call::late::{Deferred, Finish, Late};
use crate::engine::{Engine, EngineSettings};
use crate::error::LoadError;
use crate::hooks::Hooks;
use crate::imports::exec::{ExecGrant, ExecRuntime, ExecSettings};
use crate::imports::fetch::NetworkSettings;
use crate::limits::Limits;
use crate::load::builtins;
use crate::load::plugin::Plugin;
use crate::load::registry::Registry;
use crate::output::OutputStore;
use crate::policy::grants::{GrantSource, PluginGrants, Sockets};
use crate::policy::{Approver, EntrySource, Mode, POLICY_FILE, Policy};

/// The policy's file-tool settings as the variables `builtin:fs` reads
/// (`TOOLHOST_FS_REQUIRE_FRESH`, `TOOLHOST_FS_FOLLOW_LINKS`, `1` when on). Set by
/// the host alone: a variable of the same name granted otherwise is dropped first.
fn fs_settings(env: &mut Vec<(String, String)>, policy: &Policy) {
    let settings = [
        (builtins::REQUIRE_FRESH_VAR, policy.require_fresh == Some(true)),
        (builtins::FOLLOW_LINKS_VAR, policy.follow_links == Some(true)),
    ];
    env.retain(|(name, _)| settings.iter().all(|(var, _)| name != var));
    for (var, on) in settings {
        if on {
            env.push((var.to_string(), "1".to_string()));
        }
    }
}

/// Default byte budget of the output store.
pub(crate) const DEFAULT_OUTPUT_STORE_BYTES: usize = 64 << 20;

/// Configures and builds a [`Host`]. Deny by default: without
/// [`HostBuilder::work_dir`] tools get no filesystem at all; without a
/// [`HostBuilder::mode`] or policy, calls that change things need an approver,
/// and without one they are denied.
#[derive(Default)]
pub struct HostBuilder {
    work_dir: Option<PathBuf>,
    limits: Limits,
    no_builtins: bool,
    plugins: Vec<PluginSource>,
    allow: Option<Vec<String>>,
    engine: EngineSettings,
    output_store_bytes: Option<usize>,
    output_store_dir: Option<PathBuf>,
    output_store_redis: Option<String>,
    output_store_expiry: Option<std::time::Duration>,
    network: NetworkSettings,
    env: Vec<(String, String, String)>,
    policy: Option<Policy>,
    mode: Option<Mode>,
    approver: Option<Arc<dyn Approver>>,
    stub_sockets: bool,
    host_env: Option<Vec<(String, String)>>,
    exec: Option<ExecSettings>,
    sandbox_unavailable: Vec<crate::imports::exec::SandboxFeature>,
    progress: Option<Arc<dyn crate::engine::progress::Progress>>,
    builtin_exec: Option<ExecGrant>,
    plugin_exec: ExecGrant,
    data_dir: Option<PathBuf>,
    journal: bool,
    background: bool,
}

enum PluginSource {
    File(PathBuf),
    Bytes(String, Vec<u8>),
}

impl Host {
    /// Start configuring a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }
}

impl HostBuilder {
    /// The directory tools work in: preopened for each call (read-only for
    /// read-only tools). It must exist.
    pub fn work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    /// Per-call limits (defaults: [`Limits::default`]); a policy entry's limits
    /// override them for its plugin.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The host's data dir, where it keeps state outside the work dir (default:
    /// `$TOOLHOST_DATA_DIR`, else `$XDG_DATA_HOME/toolhost`, else
    /// `~/.local/share/toolhost`).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Journal every call that is not read-only in the data dir's effect journal
    /// ([`crate::journal`]; off by default for a library host, on in the `toolhost`
    /// binary). Building fails when it is on and no data dir is known or the journal
    /// can't be opened; a call whose `begin` record can't be written fails
    /// `journal_failed` without running.
    pub fn journal(mut self, on: bool) -> Self {
        self.journal = on;
        self
    }

    /// Leave out the builtin tools.
    pub fn without_builtins(mut self) -> Self {
        self.no_builtins = true;
        self
    }

    /// Load a third-party component from a file, outside the policy: the work dir
    /// read-write, the network hosts of [`NetworkSettings::plugin_hosts`], no env. A
    /// file the policy lists is loaded with the policy's grants instead.
    pub fn plugin_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.plugins.push(PluginSource::File(path.into()));
        self
    }

    /// Load a third-party component from bytes, shown as `name` (grants as
    /// [`Self::plugin_file`]).
    pub fn plugin_bytes(mut self, name: impl Into<String>, bytes: Vec<u8>) -> Self {
        self.plugins.push(PluginSource::Bytes(name.into(), bytes));
        self
    }

    /// Only offer the tools named here (an unknown name is an error).
    pub fn allow_tools(mut self, names: Vec<String>) -> Self {
        self.allow = Some(names);
        self
    }

    /// Engine settings: concurrency and the compile cache directory.
    pub fn engine_settings(mut self, settings: EngineSettings) -> Self {
        self.engine = settings;
        self
    }

    /// Grant the environment variable `key=value` to the plugin named
    /// `plugin` (`builtin:web`, a policy entry's name, or the path given to
    /// `plugin_file`). A plugin sees no variable it is not granted.
    pub fn plugin_env(
        mut self,
        plugin: impl Into<String>,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.env.push((plugin.into(), key.into(), value.into()));
        self
    }

    /// Byte budget of the store of full outputs.
    pub fn output_store_bytes(mut self, bytes: usize) -> Self {
        self.output_store_bytes = Some(bytes);
        self
    }

    /// Keep full outputs in files in `dir`, which other hosts may share (so
    /// `read_output` on one finds what another stored), instead of in memory.
    /// Created 0700 when missing; protected from tools like the data dir.
    pub fn output_store_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_store_dir = Some(dir.into());
        self.output_store_redis = None;
        self
    }

    /// Keep full outputs in the Redis at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`),
    /// which hosts on other machines may share, instead of in memory or a
    /// directory: [`HostBuilder::build`] fails when it does not answer.
    pub fn output_store_redis(mut self, url: impl Into<String>) -> Self {
        self.output_store_redis = Some(url.into());
        self.output_store_dir = None;
        self
    }

    /// How long a store in Redis keeps an output (default 1 hour).
    pub fn output_store_expiry(mut self, expiry: std::time::Duration) -> Self {
        self.output_store_expiry = Some(expiry);
        self
    }

    /// Network settings: which hosts builtin and third-party plugins may fetch
    /// from, the private-target opt-out, and the resolver and connector (see
    /// [`NetworkSettings`]; by default builtins may reach any public host and
    /// third-party plugins none).
    pub fn network(mut self, settings: NetworkSettings) -> Self {
        self.network = settings;
        self
    }

    /// The policy: its plugins are loaded with their grants (and pinned sha256), its
    /// mode and rules decide every call, and "always" answers are saved to its file.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The permission mode, over the policy's.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Who answers calls the permissions leave open. Without one they are denied.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Link `wasi:sockets` imports of components loaded outside the policy with every
    /// operation refused (for runtimes that import sockets without using them).
    pub fn stub_sockets(mut self, stub: bool) -> Self {
        self.stub_sockets = stub;
        self
    }

    /// The environment policy `env` names are taken from (default: the host
    /// process's own).
    pub fn host_env(mut self, env: Vec<(String, String)>) -> Self {
        self.host_env = Some(env);
        self
    }

    /// How children are bounded and where programs are found (over the policy's
    /// `[exec]`).
    pub fn exec(mut self, settings: ExecSettings) -> Self {
        self.exec = Some(settings);
        self
    }

    /// Treat these sandbox features as missing, on top of the exec settings'
    /// [`ExecSettings::unavailable`]: exec then refuses (`sandbox_unavailable`) as on a
    /// machine without them. Only ever takes features away.
    pub fn sandbox_unavailable(
        mut self,
        features: impl IntoIterator<Item = crate::imports::exec::SandboxFeature>,
    ) -> Self {
        self.sandbox_unavailable.extend(features);
        self
    }

    /// Tell `progress` about slow steps: compiling a component the compile cache does
    /// not hold, pulling one from a registry (none by default).
    pub fn progress(mut self, progress: Arc<dyn crate::engine::progress::Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// What the builtin tools (`terminal`, `git`) may run, over the policy's
    /// `[builtins] exec` (default: `git` and the shell profile).
    pub fn builtin_exec(mut self, grant: ExecGrant) -> Self {
        self.builtin_exec = Some(grant);
        self
    }

    /// What components loaded outside the policy may run (default: nothing; a
    /// component importing exec is then refused).
    pub fn plugin_exec(mut self, grant: ExecGrant) -> Self {
        self.plugin_exec = grant;
        self
    }

    /// Compile in the background the components whose code the compile cache does
    /// not hold (`serve` does; default off): [`HostBuilder::build`] returns once the
    /// rest has loaded, after checking every component's pin and imports (a refusal
    /// still fails the build), and their tools join when they are ready
    /// ([`Host::tools_changed`], [`Host::plugins_settled`]). A call naming a tool that
    /// is not there yet waits for them. Ignored with [`HostBuilder::allow_tools`],
    /// whose names are checked against every tool at build.
    pub fn compile_in_background(mut self, on: bool) -> Self {
        self.background = on;
        self
    }

    /// Create the engine, load every plugin, register their tools.
    pub async fn build(mut self) -> Result<Host, LoadError> {
        // The policy's `[network] allow-private = true` is `--allow-private-network`.
        if self.policy.as_ref().is_some_and(|p| p.allow_private_network == Some(true)) {
            self.network.allow_private = true;
        }
        let network = &self.network;
        if network.allow_private {
            tracing::warn!(
                "plugins may fetch private, loopback and link-local addresses (the private-network opt-out is on)"
            );
        }
        let work_dir = self
            .work_dir
            .as_ref()
            .map(|dir| match dir.canonicalize() {
                Ok(dir) if dir.is_dir() => Ok(dir),
                Ok(dir) => Err(LoadError::WorkDir(format!("{} is not a directory", dir.display()))),
                Err(e) => Err(LoadError::WorkDir(format!("{}: {e}", dir.display()))),
            })
            .transpose()?;

        let slots = Semaphore::new(self.engine.max_concurrent_calls.max(1) as usize);
        let mut engine = Engine::new(&self.engine)?;
        if let Some(progress) = &self.progress {
            engine = engine.with_progress(progress.clone());
        }
        let linker = crate::sandbox::linker(engine.wasmtime())?;

        let policy = self.policy.clone().unwrap_or_default();
        let mut settings = self.exec.clone().unwrap_or_else(|| policy.exec.clone());
        settings.unavailable.extend(self.sandbox_unavailable.iter().copied());
        let search = settings.search_path();
        let exec = Arc::new(ExecRuntime::new(settings, work_dir.clone()));

        let store_bytes = self.output_store_bytes.unwrap_or(DEFAULT_OUTPUT_STORE_BYTES);
        let outputs = Arc::new(match (&self.output_store_dir, &self.output_store_redis) {
            (_, Some(url)) => {
                let expiry = self.output_store_expiry.unwrap_or(crate::output::DEFAULT_REDIS_EXPIRY);
                OutputStore::in_redis(url, store_bytes, crate::output::DISK_MAX_FILES, expiry)
                    .await
                    .map_err(|e| LoadError::OutputStore(e.to_string()))?
            }
            (Some(dir), None) => OutputStore::on_disk(dir, store_bytes)
                .map_err(|e| LoadError::OutputStore(format!("{}: {e}", dir.display())))?,
            (None, None) => OutputStore::new(store_bytes),
        });
        let mut registry = Registry::new();
        let mut loaded = Vec::new();
        let mut deferred = Vec::new();
        let background = self.background && self.allow.is_none();
        for Source { name, bytes, grants, builtin, unstored } in self.sources().await? {
            let mut plugin = match builtin {
                Some(builtin) => Plugin::load_builtin(&engine, &linker, builtin, &grants).await?,
                None if background => {
                    let sha256 = Plugin::preflight(&name, &bytes, &grants)?;
                    if !engine.has_cached(&sha256) {
                        deferred.push(Deferred { name, bytes, sha256, grants, unstored });
                        continue;
                    }
                    Plugin::load_checked(&engine, &linker, &name, &bytes, sha256, &grants).await?
                }
                None => Plugin::load(&engine, &linker, &name, &bytes, &grants).await?,
            };
            // A remote component reaches the store only once it loaded: pin and imports checked.
            if let Some(unstored) = unstored {
                unstored.keep_loaded(&name, &bytes)?;
            }
            plugin.resolve_exec(&search, work_dir.as_deref());
            let plugin = Arc::new(plugin);
            registry.register(plugin.clone())?;
            loaded.push(plugin);
        }

        let mut permissions = policy.permissions(work_dir.clone())?;
        if let Some(mode) = self.mode {
            permissions.mode = mode;
        }
        // The work dir's toolhost.toml is protected even when the policy came from
        // elsewhere (or nowhere): it is where a policy is looked for next time. So is
        // the compile cache when it lies inside the work dir: its entries are code the
        // host loads.
        if let Some(dir) = &work_dir {
            permissions.protect_file(&dir.join(POLICY_FILE));
        }
        if let Some(cache) = &self.engine.cache_dir {
            permissions.protect_file(cache);
        }
        let data_dir = self.data_dir.clone().or_else(crate::dirs::default_data_dir);
        if let Some(data) = &data_dir {
            permissions.protect_file(data);
        }
        // Writing children's overlay layers go there (or in the temp dir).
        exec.set_data_dir(data_dir.as_deref());
        if let Some(store) = &self.output_store_dir {
            permissions.protect_file(store);
        }
        // The hooks' programs and components decide calls: no tool may change them.
        let hooks = Hooks::load(&policy.hooks, &engine, &linker, &exec, work_dir.as_deref())?;
        for file in hooks.files() {
            permissions.protect_file(file);
        }
        let protected = permissions.protected().cloned();
        if !self.no_builtins {
            let files = work_dir.as_ref().map(|dir| crate::native::FileStore {
                work_dir: dir.clone(),
                protected: protected.clone(),
                artifacts: data_dir.as_deref().map(crate::native::Artifacts::new),
                require_fresh: policy.require_fresh == Some(true),
            });
            self.register_natives(&mut registry, &policy, &exec, &outputs, files)?;
        }
        if let Some(allow) = &self.allow {
            // A server's tools are known once it runs: their names are checked then.
            let unknown: Vec<String> = registry
                .retain(allow)
                .into_iter()
                .filter(|name| !name.starts_with(crate::servers::TOOL_PREFIX))
                .collect();
            if !unknown.is_empty() {
                return Err(LoadError::UnknownAllowed(unknown.join(", ")));
            }
        }
        // Children's roots bind the protected paths read-only.
        if let Some(protected) = &protected {
            exec.set_protected(protected.clone());
        }
        let open_handles = crate::sandbox::fdlimit::per_call(
            self.limits.open_handles,
            crate::sandbox::fdlimit::raise_nofile(),
            self.engine.max_concurrent_calls,
        );
        let journal = match (self.journal, &data_dir) {
            (false, _) => None,
            (true, None) => {
                return Err(LoadError::Journal("no data dir is known (set TOOLHOST_DATA_DIR)".into()));
            }
            (true, Some(data)) => Some(
                crate::journal::Journal::open(data, work_dir.as_deref())
                    .map_err(|e| LoadError::Journal(format!("{}: {e}", data.display())))?,
            ),
        };
        let fetch = Arc::new(self.network.client());
        // The tool list changes when a late plugin loads or a server's tools change.
        let tools_version =
            (!policy.servers.is_empty() || !deferred.is_empty()).then(|| watch::Sender::new(0u64));
        let servers = tools_version.as_ref().filter(|_| !policy.servers.is_empty()).map(|version| {
            let settings = exec.settings();
            let host = crate::servers::HostSide {
                work_dir: work_dir.clone(),
                search: settings.search_path(),
                path_var: settings.child_path(),
                host_env: self.host_env.clone().unwrap_or_else(|| std::env::vars().collect()),
                child_limits: settings.limits.clone(),
                allow_private: self.network.allow_private,
                pins: data_dir.as_deref().map(crate::servers::pin::Pins::in_data_dir),
            };
            let max_message = self.limits.output_bytes.saturating_mul(2).max(1 << 20);
            crate::servers::Servers::new(
                &policy.servers,
                &host,
                exec.clone(),
                fetch.clone(),
                max_message,
                version.clone(),
            )
        });
        let late = tools_version.as_ref().filter(|_| !deferred.is_empty()).map(|version| {
            let finish =
                Finish { engine: engine.clone(), linker: linker.clone(), search, work_dir: work_dir.clone() };
            Late::start(deferred, finish, version.clone())
        });
        let shown = &policy.builtins.reveal;
        let redacted_env: Vec<(String, String)> =
            self.builtin_env(&policy).into_iter().filter(|(name, _)| !shown.contains(name)).collect();
        let shape_output = policy.shapes_output();
        Ok(Host {
            data_dir,
            journal,
            native_redactor: crate::policy::Redactor::new(&redacted_env),
            hooks,
            protected,
            open_handles,
            engine,
            plugins: loaded,
            base: Arc::new(registry.clone()),
            registry: RwLock::new((0, Arc::new(registry))),
            servers,
            late,
            tools_version,
            allow: self.allow.clone(),
            limits: self.limits,
            work_dir,
            outputs,
            slots,
            fetch,
            network: self.network,
            permissions: RwLock::new(permissions),
            approver: self.approver,
            approval_turn: tokio::sync::Mutex::new(()),
            policy_path: policy.private_path,
            exec,
            shape_output,
        })
    }

    /// The tools the host implements: `read_output`, `process_list`, `env_get`,
    /// `run_tests` when the policy declares test profiles, and `remove_file` and
    /// `restore_file` when tools get a work dir.
    fn register_natives(
        &self,
        registry: &mut Registry,
        policy: &Policy,
        exec: &Arc<ExecRuntime>,
        outputs: &Arc<OutputStore>,
        files: Option<crate::native::FileStore>,
    ) -> Result<(), LoadError> {
        use crate::native::{EnvGet, ProcessList, ReadOutput, RemoveFile, RestoreFile, RunTests};
        if let Some(files) = files {
            registry.register_native(Arc::new(RemoveFile(files.clone())))?;
            registry.register_native(Arc::new(RestoreFile(files)))?;
        }
        let clamp_bytes = self.limits.clamp_bytes;
        registry.register_native(Arc::new(ReadOutput { outputs: outputs.clone(), clamp_bytes }))?;
        registry.register_native(Arc::new(ProcessList { runtime: exec.clone() }))?;
        let vars = self.builtin_env(policy);
        registry.register_native(Arc::new(EnvGet {
            vars: vars.clone(),
            reveal: policy.builtins.reveal.clone(),
        }))?;
        if !policy.tests.is_empty() {
            let tests = RunTests::new(policy.tests.clone(), exec.clone(), vars, policy.shapes_output());
            registry.register_native(Arc::new(tests))?;
        }
        Ok(())
    }

    /// The variables granted to the builtins: the policy's `[builtins] env` names
    /// taken from the host env.
    fn builtin_env(&self, policy: &Policy) -> Vec<(String, String)> {
        let host_env = self.host_env.clone().unwrap_or_else(|| std::env::vars().collect());
        crate::policy::env::select(&policy.builtins.env, host_env)
    }

    /// The component of a policy entry pinned in a registry (`oci://…@sha256:…`) or at
    /// a URL: from the OCI store in the cache dir (hashed, and its signatures verified
    /// against the entry's signers, again), else pulled by its pinned digest — never by
    /// its tag — and what to keep in the store once it has loaded.
    async fn remote_component(
        &self,
        entry: &crate::policy::PluginEntry,
    ) -> Result<(Vec<u8>, Option<crate::oci::pull::Unstored>), LoadError> {
        let refused = |e: crate::oci::OciError| LoadError::Remote {
            plugin: entry.name.clone(),
            code: e.code(),
            message: format!("{}: {}", entry.source, e.message()),
        };
        let root =
            self.engine.cache_dir.as_ref().map(|d| d.join("oci")).or_else(crate::oci::Store::default_root);
        let store = crate::oci::Store::at(root.ok_or_else(|| LoadError::Remote {
            plugin: entry.name.clone(),
            code: crate::error::codes::IO_ERROR,
            message: "no cache dir for the OCI store (set TOOLHOST_CACHE_DIR)".into(),
        })?);
        let settings = crate::oci::RegistrySettings {
            plain_http: entry.plain_http,
            progress: self.progress.clone(),
            ..crate::oci::RegistrySettings::from_env()
        };
        match &entry.source {
            EntrySource::Oci(reference) => {
                let credentials = || match entry.registry_auth {
                    true => crate::oci::Credentials::from_docker_config(&reference.registry(), None),
                    false => Ok(crate::oci::Credentials::Anonymous),
                };
                crate::oci::pull::load_pinned(
                    reference,
                    entry.signers.as_ref(),
                    settings,
                    credentials,
                    &store,
                )
                .await
                .map(|(bytes, unstored)| (bytes, Some(unstored)))
                .map_err(refused)
            }
            EntrySource::Https(url) => {
                crate::oci::pull::fetch_pinned_url(url, &entry.sha256, &settings, &store)
                    .await
                    .map(|(bytes, unstored)| (bytes, Some(unstored)))
                    .map_err(refused)
            }
            EntrySource::File(path) => Ok((crate::load::inspect::read_component(path)?, None)),
        }
    }

    /// Every plugin to load, in order (builtins, the policy's, the ad-hoc ones), with
    /// its bytes and grants.
    async fn sources(&self) -> Result<Vec<Source>, LoadError> {
        let read = |path: &PathBuf| crate::load::inspect::read_component(path);
        let env_for = |name: &str| -> Vec<(String, String)> {
            self.env.iter().filter(|(p, _, _)| p == name).map(|(_, k, v)| (k.clone(), v.clone())).collect()
        };
        let base = |name: &str, source: GrantSource| {
            let mut grants = PluginGrants::new(source, self.limits.clone());
            grants.net = self.network.grant_for(name);
            grants.env = env_for(name);
            grants
        };
        let mut sources = Vec::new();
        if !self.no_builtins {
            let policy = self.policy.clone().unwrap_or_default();
            for builtin in builtins::ALL {
                let name = builtin.name;
                let mut grants = base(name, GrantSource::Builtin);
                if name == builtins::EXEC_PLUGIN {
                    grants.exec = self.builtin_exec.clone().unwrap_or_else(|| policy.builtins.exec.clone());
                    // Granted nothing to run: its tools are left out rather than refused.
                    if grants.exec.is_empty() {
                        continue;
                    }
                    grants.env.extend(self.builtin_env(&policy));
                }
                if name == builtins::FS_PLUGIN {
                    fs_settings(&mut grants.env, &policy);
                }
                sources.push(Source {
                    name: name.into(),
                    bytes: Vec::new(),
                    grants,
                    builtin: Some(builtin),
                    unstored: None,
                });
            }
        }
        let entries = self.policy.as_ref().map(|p| p.plugins.as_slice()).unwrap_or_default();
        let host_env = || self.host_env.clone().unwrap_or_else(|| std::env::vars().collect());
        for entry in entries {
            let mut grants = entry.grants(&self.limits, self.network.allow_private, host_env());
            grants.env.extend(env_for(&entry.name));
            let (bytes, unstored) = match &entry.source {
                EntrySource::File(path) => (read(path)?, None),
                _ => self.remote_component(entry).await?,
            };
            sources.push(Source { unstored, ..Source::file(entry.name.clone(), bytes, grants) });
        }
        let listed = |path: &PathBuf| {
            let canonical = path.canonicalize().ok();
            entries.iter().any(|e| match &e.source {
                EntrySource::File(source) => canonical.is_some() && source.canonicalize().ok() == canonical,
                _ => false,
            })
        };
        for source in &self.plugins {
            let (name, bytes) = match source {
                PluginSource::Bytes(name, bytes) => (name.clone(), bytes.clone()),
                PluginSource::File(path) if listed(path) => continue,
                PluginSource::File(path) => (path.display().to_string(), read(path)?),
            };
            let mut grants = base(&name, GrantSource::AdHoc);
            if self.stub_sockets {
                grants.sockets = Sockets::Stub;
            }
            grants.exec = self.plugin_exec.clone();
            sources.push(Source::file(name, bytes, grants));
        }
        Ok(sources)
    }
}

/// One plugin to load: a builtin the binary carries, or a component's bytes.
struct Source {
    name: String,
    /// The component (empty for a builtin: see `builtin`).
    bytes: Vec<u8>,
    grants: PluginGrants,
    builtin: Option<&'static builtins::Builtin>,
    /// A remote component's store write, made once it has loaded.
    unstored: Option<crate::oci::pull::Unstored>,
}

impl Source {
    fn file(name: String, bytes: Vec<u8>, grants: PluginGrants) -> Self {
        Self { name, bytes, grants, builtin: None, unstored: None }
    }
}
