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

use crate::bindings::HostPluginPre as PluginPre;
use crate::engine::Engine;
use crate::error::LoadError;
use crate::exec::ResolvedGrant;
use crate::fetch::NetGrant;
use crate::grants::{FsAccess, PluginGrants, Sockets};
use crate::limits::Limits;
use crate::pipe::CappedPipe;
use crate::policy::Redactor;
use crate::sandbox::{CallState, FsGrant, classify_trap};
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

/// The pinned-fetch interface: granted only to a plugin whose network grant lists hosts.
const FETCH_INTERFACE: &str = "toolhost:plugin/fetch";

/// The exec interface: granted only to a plugin whose grant lists programs or the shell.
const EXEC_INTERFACE: &str = "toolhost:plugin/exec";

/// Socket interfaces: linked only when the grants stub them (every operation refused).
const SOCKETS_PREFIX: &str = "wasi:sockets/";

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
    /// `Some` only when the component imports exec: its grant, resolved by the host.
    exec: Option<Arc<ResolvedGrant>>,
    grants: PluginGrants,
    read_dirs: Arc<[std::path::PathBuf]>,
    redactor: Redactor,
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
    /// Load the component `bytes` under the display name `name` with `grants`: its
    /// sha256 must match the pinned one (`identity_mismatch`), and every import must be
    /// granted (`capability_denied`) before any of its code runs.
    pub async fn load(
        engine: &Engine,
        linker: &Linker<CallState>,
        name: &str,
        bytes: &[u8],
        grants: &PluginGrants,
    ) -> Result<Self, LoadError> {
        let sha256 = hex::encode(Sha256::digest(bytes));
        check_identity(name, &sha256, grants)?;
        let loaded = engine.component(bytes, &sha256)?;
        let component = loaded.component;

        let imports = imports_of(engine.wasmtime(), &component);
        check_imports(&imports, grants)?;
        let net = imports.iter().any(|i| is_fetch(i)).then(|| Arc::new(grants.net.clone()));

        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::BadPlugin(format!("{name}: cannot link the component: {:#}", e)))?;
        let pre = PluginPre::new(instance_pre).map_err(|e| {
            LoadError::BadPlugin(format!(
                "{name}: it does not export the toolhost:plugin/tools interface (0.1.0): {e:#}"
            ))
        })?;

        let name: Arc<str> = name.into();
        let tools = list_tools(engine.wasmtime(), &pre, &name, grants).await?;
        Ok(Self {
            name,
            sha256,
            imports,
            from_cache: loaded.from_cache,
            engine: engine.wasmtime().clone(),
            pre,
            tools,
            net,
            exec: None,
            read_dirs: grants.read_dirs.clone().into(),
            redactor: Redactor::new(&grants.env),
            grants: grants.clone(),
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
        &self.grants.env
    }

    /// Everything the plugin is granted.
    pub fn grants(&self) -> &PluginGrants {
        &self.grants
    }

    /// Redacts its output (its granted env values, secret-shaped text).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The limits of its calls.
    pub fn limits(&self) -> &Limits {
        &self.grants.limits
    }

    /// The filesystem capability of a call to one of its tools (`writes`: the tool
    /// does not declare read-only) in `work_dir`.
    pub(crate) fn fs_grant(&self, work_dir: Option<&std::path::Path>, writes: bool) -> FsGrant {
        let work_dir = match self.grants.fs {
            FsAccess::None => None,
            FsAccess::Read | FsAccess::ReadWrite => work_dir.map(std::path::Path::to_path_buf),
        };
        FsGrant {
            writable: work_dir.is_some() && writes && self.grants.fs == FsAccess::ReadWrite,
            work_dir,
            read_dirs: self.read_dirs.clone(),
        }
    }

    /// The network grant of this plugin: `None` when it does not import fetch (it has no
    /// network at all).
    pub fn network(&self) -> Option<&Arc<NetGrant>> {
        self.net.as_ref()
    }

    /// Whether the component imports exec.
    pub fn imports_exec(&self) -> bool {
        self.imports.iter().any(|i| is_exec(i))
    }

    /// Resolve its exec grant's programs (through `search`, never inside `work_dir`), if
    /// it imports exec. Done once, at load.
    pub(crate) fn resolve_exec(&mut self, search: &[std::path::PathBuf], work_dir: Option<&std::path::Path>) {
        if self.imports_exec() {
            self.exec = Some(Arc::new(self.grants.exec.resolve(search, work_dir)));
        }
    }

    /// What it may run: `None` when it does not import exec (it starts no process).
    pub fn exec(&self) -> Option<&Arc<ResolvedGrant>> {
        self.exec.as_ref()
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

fn is_exec(import: &str) -> bool {
    import.strip_prefix(EXEC_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
}

/// Refuse bytes whose `sha256` is not the one `grants` pins (`identity_mismatch`).
fn check_identity(name: &str, sha256: &str, grants: &PluginGrants) -> Result<(), LoadError> {
    match &grants.sha256 {
        Some(expected) if !expected.eq_ignore_ascii_case(sha256) => Err(LoadError::IdentityMismatch {
            plugin: name.to_string(),
            expected: expected.clone(),
            actual: sha256.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Refuse any import `grants` does not cover, naming it and the grant that would
/// cover it: `toolhost:plugin/fetch` needs network hosts, `wasi:sockets` the stub,
/// anything outside [`GRANTED_IMPORTS`] is never provided.
pub fn check_imports(imports: &[String], grants: &PluginGrants) -> Result<(), LoadError> {
    for import in imports {
        let denied = |why: String| LoadError::CapabilityDenied { interface: import.clone(), why };
        if is_fetch(import) {
            if grants.net.is_empty() {
                let how = grants.source.how_to_grant("network", "[\"HOST\", …]", "--allow-host PATTERN");
                return Err(denied(format!(
                    "no network hosts are granted to this plugin (grant some with {how})"
                )));
            }
            continue;
        }
        if is_exec(import) {
            if grants.exec.is_empty() {
                let how = grants.source.how_to_grant(
                    "exec",
                    "{ programs = [\"NAME\", …] }",
                    "--allow-program NAME",
                );
                return Err(denied(format!(
                    "no programs are granted to this plugin (grant some with {how})"
                )));
            }
            continue;
        }
        if import.starts_with(SOCKETS_PREFIX) {
            if grants.sockets == Sockets::Stub {
                continue;
            }
            let how = grants.source.how_to_grant("sockets", "\"stub\"", "--stub-sockets");
            return Err(denied(format!(
                "plugins get no sockets; network access is only through the host's pinned fetch. \
                 A runtime that imports sockets without using them can be linked with every socket \
                 operation refused: {how}"
            )));
        }
        if GRANTED_IMPORTS.iter().any(|(prefix, _)| import.starts_with(prefix)) {
            continue;
        }
        let why = if import.starts_with("wasi:http/") {
            "plugins get no raw HTTP; network access is only through the host's pinned fetch"
        } else {
            "the host does not provide this interface to plugins"
        };
        return Err(denied(why.into()));
    }
    Ok(())
}

/// Instantiate once to ask the component for its tools, under the plugin's own
/// limits (memory cap, fuel, deadline) with its granted env and no filesystem;
/// then check the list against the bounds of [`crate::spec`] before converting it.
/// A trap, a loop or a refused allocation while listing is a clean load error.
async fn list_tools(
    engine: &wasmtime::Engine,
    pre: &PluginPre<CallState>,
    name: &Arc<str>,
    grants: &PluginGrants,
) -> Result<Vec<ToolSpec>, LoadError> {
    let limits = &grants.limits;
    let stderr = CappedPipe::new(limits.stdio_bytes);
    let state = CallState::new(
        name.clone(),
        "load",
        &FsGrant::default(),
        &grants.env,
        limits,
        CappedPipe::new(limits.stdio_bytes),
        stderr.clone(),
    )
    .map_err(|e| LoadError::BadPlugin(e.to_string()))?;
    let mut store = Store::new(engine, state);
    store.limiter(|state| state.memory_limiter());
    let failed = |why: String| LoadError::BadPlugin(format!("{name}: listing its tools failed: {why}"));
    store.set_fuel(limits.fuel).map_err(|e| failed(format!("{e:#}")))?;
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    let listing = async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.toolhost_plugin_tools().call_list_tools(&mut store).await
    };
    let deadline = limits.timeout.min(limits.max_timeout);
    let raw = match tokio::time::timeout(deadline, listing).await {
        Err(_) => return Err(failed(format!("timeout: it took longer than {} ms", deadline.as_millis()))),
        Ok(Err(trap)) => return Err(failed(classify_trap(&trap, store.data(), limits, &stderr).to_string())),
        Ok(Ok(raw)) => raw,
    };
    drop(store);
    crate::spec::from_listing(name, raw)
}

/// What a component asks for, read from its imports.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Requested {
    /// It imports `wasi:filesystem` (it can use a preopen if it is granted one).
    pub filesystem: bool,
    /// It imports `toolhost:plugin/fetch` (it needs network hosts).
    pub fetch: bool,
    /// It imports `wasi:sockets` (only ever stubbed).
    pub sockets: bool,
    /// It imports `toolhost:plugin/exec` (it needs an exec grant).
    pub exec: bool,
    /// It imports `wasi:cli/environment` (it can read granted env variables).
    pub env: bool,
    /// Imports the host never provides.
    pub unknown: Vec<String>,
}

impl Requested {
    /// Read the requests off `imports`.
    pub fn from_imports(imports: &[String]) -> Self {
        let mut requested = Requested::default();
        for import in imports {
            if is_fetch(import) {
                requested.fetch = true;
            } else if is_exec(import) {
                requested.exec = true;
            } else if import.starts_with(SOCKETS_PREFIX) {
                requested.sockets = true;
            } else if import.starts_with("wasi:filesystem/") {
                requested.filesystem = true;
            } else if import.starts_with("wasi:cli/environment") {
                requested.env = true;
            } else if !GRANTED_IMPORTS.iter().any(|(prefix, _)| import.starts_with(prefix)) {
                requested.unknown.push(import.clone());
            }
        }
        requested
    }
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
    /// What the imports ask for.
    pub requested: Requested,
    /// The tools (listed with every stubbable import linked and no capability granted).
    pub tools: Vec<ToolSpec>,
    /// Why the host would refuse it under the grants it was judged against.
    pub refused: Option<LoadError>,
}

/// Look at a component: hash, imports, what they ask for, its tools, and whether
/// `grants` would let it load. Fails only when the bytes are not a component at all.
pub async fn inspect(
    engine: &Engine,
    linker: &Linker<CallState>,
    name: &str,
    bytes: &[u8],
    grants: &PluginGrants,
) -> Result<Inspection, LoadError> {
    let sha256 = hex::encode(Sha256::digest(bytes));
    let component = engine.component(bytes, &sha256)?.component;
    let imports = imports_of(engine.wasmtime(), &component);
    let requested = Requested::from_imports(&imports);
    // Listing tools runs no call: no preopen, no env, no network client. Link what can
    // be linked so a component that needs grants still shows its tools.
    let mut listing = grants.clone();
    listing.sha256 = None;
    listing.sockets = Sockets::Stub;
    if listing.exec.is_empty() {
        listing.exec.shell = true;
    }
    if listing.net.is_empty() {
        listing.net.hosts = vec![crate::fetch::HostPattern::any()];
    }
    let refused = check_identity(name, &sha256, grants).and_then(|()| check_imports(&imports, grants)).err();
    let (tools, refused) = match Plugin::load(engine, linker, name, bytes, &listing).await {
        Ok(plugin) => (plugin.tools, refused),
        Err(err) => (Vec::new(), refused.or(Some(err))),
    };
    Ok(Inspection { sha256, size: bytes.len(), imports, requested, tools, refused })
}
