//! [`Host`]: the engine, the loaded plugins and their tools, the limits and
//! the output store, built once by [`HostBuilder`] and shared by every call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{Semaphore, SemaphorePermit};
use wasmtime::component::Linker;

use crate::bindings::NetworkedPlugin as PluginWorld;
use crate::builtins;
use crate::engine::{Engine, EngineSettings};
use crate::error::LoadError;
use crate::fetch::{FetchClient, NetAccess, NetworkSettings};
use crate::limits::Limits;
use crate::output::OutputStore;
use crate::plugin::Plugin;
use crate::registry::Registry;
use crate::sandbox::CallState;
use crate::spec::ToolDefinition;

/// Default byte budget of the output store.
pub(crate) const DEFAULT_OUTPUT_STORE_BYTES: usize = 64 << 20;

/// A tool host: build it once, then [`Host::execute`] calls concurrently.
pub struct Host {
    engine: Engine,
    plugins: Vec<Arc<Plugin>>,
    registry: Registry,
    limits: Limits,
    work_dir: Option<PathBuf>,
    outputs: OutputStore,
    slots: Semaphore,
    network: NetworkSettings,
    fetch: Arc<FetchClient>,
}

impl Host {
    /// Start configuring a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// What a model is given: every tool's name, description and schema,
    /// sorted by name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry.definitions()
    }

    /// The registered tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
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

    /// Look at a component file the way `toolhost inspect` does: hash,
    /// imports, tools, and why it would be refused, without registering it.
    /// It is judged as a third-party plugin under the default network
    /// settings (no hosts granted).
    pub async fn inspect(engine: &Engine, path: &Path) -> Result<crate::plugin::Inspection, LoadError> {
        let bytes = std::fs::read(path)
            .map_err(|source| LoadError::Read { path: path.display().to_string(), source })?;
        let name = path.display().to_string();
        let net = NetworkSettings::default().grant_for(&name);
        crate::plugin::inspect(engine, &linker(engine.wasmtime())?, &name, &bytes, &net).await
    }

    /// Wait for a free instance slot (bounded by the pooling allocator).
    pub(crate) async fn call_slot(&self) -> Option<SemaphorePermit<'_>> {
        self.slots.acquire().await.ok()
    }
}

/// Configures and builds a [`Host`]. Deny by default: without
/// [`HostBuilder::work_dir`] tools get no filesystem at all.
#[derive(Default)]
pub struct HostBuilder {
    work_dir: Option<PathBuf>,
    limits: Limits,
    no_builtins: bool,
    plugins: Vec<PluginSource>,
    allow: Option<Vec<String>>,
    engine: EngineSettings,
    output_store_bytes: Option<usize>,
    network: NetworkSettings,
    env: Vec<(String, String, String)>,
}

enum PluginSource {
    File(PathBuf),
    Bytes(String, Vec<u8>),
}

impl HostBuilder {
    /// The directory tools work in: preopened for each call (read-only for
    /// read-only tools). It must exist.
    pub fn work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    /// Per-call limits (defaults: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Leave out the builtin tools.
    pub fn without_builtins(mut self) -> Self {
        self.no_builtins = true;
        self
    }

    /// Load a third-party component from a file.
    pub fn plugin_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.plugins.push(PluginSource::File(path.into()));
        self
    }

    /// Load a third-party component from bytes, shown as `name`.
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
    /// `plugin` (`builtin:web`, or the path given to `plugin_file`). A plugin
    /// sees no other variable: nothing is inherited from the host.
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

    /// Network settings: which hosts builtin and third-party plugins may fetch
    /// from, the private-target opt-out, and the resolver and connector (see
    /// [`NetworkSettings`]; by default builtins may reach any public host and
    /// third-party plugins none).
    pub fn network(mut self, settings: NetworkSettings) -> Self {
        self.network = settings;
        self
    }

    /// Create the engine, load every plugin, register their tools.
    pub async fn build(self) -> Result<Host, LoadError> {
        let Self { work_dir, limits, no_builtins, plugins, allow, engine, output_store_bytes, network, env } =
            self;
        if network.allow_private {
            tracing::warn!(
                "plugins may fetch private, loopback and link-local addresses (the private-network opt-out is on)"
            );
        }
        let work_dir = work_dir
            .map(|dir| match dir.canonicalize() {
                Ok(dir) if dir.is_dir() => Ok(dir),
                Ok(dir) => Err(LoadError::WorkDir(format!("{} is not a directory", dir.display()))),
                Err(e) => Err(LoadError::WorkDir(format!("{}: {e}", dir.display()))),
            })
            .transpose()?;

        let slots = Semaphore::new(engine.max_concurrent_calls.max(1) as usize);
        let engine = Engine::new(&engine)?;
        let linker = linker(engine.wasmtime())?;

        let mut sources: Vec<(String, Vec<u8>)> = Vec::new();
        if !no_builtins {
            sources.extend(builtins::ALL.iter().map(|(name, bytes)| (name.to_string(), bytes.to_vec())));
        }
        for source in plugins {
            sources.push(match source {
                PluginSource::Bytes(name, bytes) => (name, bytes),
                PluginSource::File(path) => {
                    let bytes = std::fs::read(&path)
                        .map_err(|source| LoadError::Read { path: path.display().to_string(), source })?;
                    (path.display().to_string(), bytes)
                }
            });
        }

        let mut registry = Registry::new();
        let mut loaded = Vec::with_capacity(sources.len());
        for (name, bytes) in sources {
            let grant = network.grant_for(&name);
            let mut plugin = Plugin::load(&engine, &linker, &name, &bytes, &grant).await?;
            plugin.set_env(
                env.iter().filter(|(p, _, _)| *p == name).map(|(_, k, v)| (k.clone(), v.clone())).collect(),
            );
            let plugin = Arc::new(plugin);
            registry.register(plugin.clone())?;
            loaded.push(plugin);
        }
        if !no_builtins {
            registry.register_native(Arc::new(crate::native::ReadOutput))?;
        }
        if let Some(allow) = allow {
            let unknown = registry.retain(&allow);
            if !unknown.is_empty() {
                return Err(LoadError::UnknownAllowed(unknown.join(", ")));
            }
        }

        Ok(Host {
            engine,
            plugins: loaded,
            registry,
            limits,
            work_dir,
            outputs: OutputStore::new(output_store_bytes.unwrap_or(DEFAULT_OUTPUT_STORE_BYTES)),
            slots,
            fetch: Arc::new(network.client()),
            network,
        })
    }
}

/// The linker every plugin is resolved against: WASI p2 (what a plugin may
/// actually use is narrowed by the import check and the per-call context)
/// and the toolhost imports.
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<CallState>, LoadError> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(LoadError::engine)?;
    PluginWorld::add_to_linker::<_, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)
        .map_err(LoadError::engine)?;
    Ok(linker)
}
