//! Stage 2, once per plugin: bytes → sha256 → compiled component (cached) →
//! imports checked → [`PluginPre`] → tool specs.
//!
//! Everything that can be done before a call is done here, once: compiling,
//! resolving imports against the linker, listing the tools and compiling
//! their argument schemas. A call then only instantiates and runs.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::Store;
use wasmtime::component::Linker;

use crate::bindings::NetworkedPluginPre as PluginPre;
use crate::engine::Engine;
use crate::error::LoadError;
use crate::fetch::NetGrant;
use crate::limits::Limits;
use crate::pipe::CappedPipe;
use crate::sandbox::{CallState, FsGrant};
use crate::spec::ToolSpec;

/// Import prefixes a plugin may have. Anything else is refused at load,
/// before any of its code runs.
const GRANTED_IMPORTS: &[(&str, &str)] = &[
    ("toolhost:plugin/", "the toolhost contract"),
    ("wasi:cli/", "args, env and stdio (all empty or captured)"),
    ("wasi:io/", "streams"),
    ("wasi:clocks/", "clocks"),
    ("wasi:random/", "random numbers"),
    ("wasi:filesystem/", "the work dir preopen, when the call grants it"),
];

/// The pinned-fetch interface: granted only to a plugin whose [`NetGrant`] lists hosts.
const FETCH_INTERFACE: &str = "toolhost:plugin/fetch";

/// A loaded plugin: a compiled component ready to instantiate per call, and
/// the tools it declared.
pub struct Plugin {
    name: Arc<str>,
    sha256: String,
    imports: Vec<String>,
    from_cache: bool,
    engine: wasmtime::Engine,
    pre: PluginPre<CallState>,
    tools: Vec<ToolSpec>,
    /// `Some` only when the component imports fetch (and its grant lists hosts).
    net: Option<Arc<NetGrant>>,
    env: Vec<(String, String)>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Load the component `bytes` under the display name `name`, with the network grant
    /// `net` (used only if the component imports fetch; refused then if it lists no host).
    pub async fn load(
        engine: &Engine,
        linker: &Linker<CallState>,
        name: &str,
        bytes: &[u8],
        net: &NetGrant,
    ) -> Result<Self, LoadError> {
        let sha256 = hex::encode(Sha256::digest(bytes));
        let loaded = engine.component(bytes, &sha256)?;
        let component = loaded.component;

        let imports = imports_of(engine.wasmtime(), &component);
        check_imports(&imports, net)?;
        let net = imports.iter().any(|i| is_fetch(i)).then(|| Arc::new(net.clone()));

        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::BadPlugin(format!("{name}: cannot link the component: {:#}", e)))?;
        let pre = PluginPre::new(instance_pre).map_err(|e| {
            LoadError::BadPlugin(format!(
                "{name}: it does not export the toolhost:plugin/tools interface (0.1.0): {e:#}"
            ))
        })?;

        let name: Arc<str> = name.into();
        let tools = list_tools(engine.wasmtime(), &pre, &name).await?;
        Ok(Self {
            name,
            sha256,
            imports,
            from_cache: loaded.from_cache,
            engine: engine.wasmtime().clone(),
            pre,
            tools,
            net,
            env: Vec::new(),
        })
    }

    /// The plugin's display name (`builtin:fs`, or the file it came from).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// Hex sha256 of the component bytes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The interfaces the component imports (versioned names).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// Whether the compiled code came from the on-disk cache.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// The tools the plugin declared, in its own order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Environment variables granted to the plugin (each call sees exactly these).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Grant environment variables to the plugin (before it is shared).
    pub(crate) fn set_env(&mut self, env: Vec<(String, String)>) {
        self.env = env;
    }

    /// The network grant of this plugin: `None` when it does not import fetch (it has no
    /// network at all).
    pub fn network(&self) -> Option<&Arc<NetGrant>> {
        self.net.as_ref()
    }

    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        &self.engine
    }

    pub(crate) fn pre(&self) -> &PluginPre<CallState> {
        &self.pre
    }
}

/// The import names of `component`, sorted.
pub fn imports_of(engine: &wasmtime::Engine, component: &wasmtime::component::Component) -> Vec<String> {
    let mut names: Vec<String> =
        component.component_type().imports(engine).map(|(name, _)| name.to_string()).collect();
    names.sort();
    names
}

fn is_fetch(import: &str) -> bool {
    import.strip_prefix(FETCH_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
}

/// Refuse any import outside [`GRANTED_IMPORTS`], naming it and saying why; refuse
/// `toolhost:plugin/fetch` when `net` grants no host.
pub fn check_imports(imports: &[String], net: &NetGrant) -> Result<(), LoadError> {
    for import in imports {
        if is_fetch(import) && net.is_empty() {
            return Err(LoadError::CapabilityDenied {
                interface: import.clone(),
                why: "no network hosts are granted to this plugin (grant some with --allow-host PATTERN)"
                    .into(),
            });
        }
        if GRANTED_IMPORTS.iter().any(|(prefix, _)| import.starts_with(prefix)) {
            continue;
        }
        let why = if import.starts_with("wasi:sockets/") || import.starts_with("wasi:http/") {
            "plugins get no sockets or raw HTTP; network access is only through the host's pinned fetch"
        } else {
            "the host does not provide this interface to plugins"
        };
        return Err(LoadError::CapabilityDenied { interface: import.clone(), why: why.into() });
    }
    Ok(())
}

/// Instantiate once, with default limits and no filesystem, to ask the
/// component for its tools; validate each spec.
async fn list_tools(
    engine: &wasmtime::Engine,
    pre: &PluginPre<CallState>,
    name: &Arc<str>,
) -> Result<Vec<ToolSpec>, LoadError> {
    let limits = Limits::default();
    let state = CallState::new(
        name.clone(),
        "load",
        &FsGrant::None,
        &[],
        &limits,
        CappedPipe::new(limits.stdio_bytes),
        CappedPipe::new(limits.stdio_bytes),
    )
    .map_err(|e| LoadError::BadPlugin(e.to_string()))?;
    let mut store = Store::new(engine, state);
    let bad = |e: wasmtime::Error| LoadError::BadPlugin(format!("{name}: listing its tools failed: {e:#}"));
    store.set_fuel(limits.fuel).map_err(bad)?;
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    let listing = async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.toolhost_plugin_tools().call_list_tools(&mut store).await
    };
    let raw = tokio::time::timeout(limits.timeout, listing)
        .await
        .map_err(|_| {
            LoadError::BadPlugin(format!("{name}: listing its tools took longer than {:?}", limits.timeout))
        })?
        .map_err(bad)?;
    raw.into_iter().map(ToolSpec::from_wit).collect()
}

/// What `toolhost inspect` shows about a component without registering it.
#[derive(Debug)]
pub struct Inspection {
    /// Hex sha256 of the bytes.
    pub sha256: String,
    /// Size of the component in bytes.
    pub size: usize,
    /// The imports, sorted.
    pub imports: Vec<String>,
    /// The tools, when the component loads.
    pub tools: Vec<ToolSpec>,
    /// Why the host would refuse it, when it would.
    pub refused: Option<LoadError>,
}

/// Look at a component: hash, imports, and (if it would load with the network grant
/// `net`) its tools. Fails only when the bytes are not a component at all.
pub async fn inspect(
    engine: &Engine,
    linker: &Linker<CallState>,
    name: &str,
    bytes: &[u8],
    net: &NetGrant,
) -> Result<Inspection, LoadError> {
    let sha256 = hex::encode(Sha256::digest(bytes));
    let component = engine.component(bytes, &sha256)?.component;
    let imports = imports_of(engine.wasmtime(), &component);
    let (tools, refused) = match Plugin::load(engine, linker, name, bytes, net).await {
        Ok(plugin) => (plugin.tools, None),
        Err(err) => (Vec::new(), Some(err)),
    };
    Ok(Inspection { sha256, size: bytes.len(), imports, tools, refused })
}
