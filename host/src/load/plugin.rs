//! Stage 2, once per plugin: bytes → sha256 → imports checked → compiled
//! component (cached; a new one by the baseline tier first, see `engine/tier.rs`)
//! → imports checked again → `PluginPre` → tool specs.
//!
//! Everything that can be done before a call is done here, once: compiling,
//! resolving imports against the linker, listing the tools and compiling
//! their argument schemas. A call then only instantiates and runs.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::Linker;

use super::capabilities::{check_identity, check_imports, imports_of};
use crate::engine::{Engine, Tier, Tiered};
use crate::error::LoadError;
use crate::imports::exec::ResolvedGrant;
use crate::imports::fetch::NetGrant;
use crate::imports::{FsAccess, config, exec, fetch, http};
use crate::limits::Limits;
use crate::load::link::{self, Link, Slot, TypedPrepared, linker_for};
use crate::load::preflight::check_declared_imports;
use crate::load::spec::ToolSpec;
use crate::load::typed::{self, Skipped, TypedExports, TypedFunc};
use crate::policy::Redactor;
use crate::policy::grants::{FsGrant, PluginGrants};
use crate::sandbox::{CallState, Prepared};

/// What a component exports, prepared to instantiate (in the best compiler tier
/// there is so far).
pub(crate) enum Exports {
    /// `toolhost:plugin/tools`: the tools it lists.
    Tools(Arc<Tiered<Prepared>>),
    /// Typed functions, one tool each.
    Typed(Arc<Tiered<TypedPrepared>>, TypedExports),
}

/// A loaded plugin: a compiled component ready to instantiate per call, and
/// the tools it declared.
pub struct Plugin {
    name: Arc<str>,
    sha256: String,
    imports: Vec<String>,
    from_cache: bool,
    exports: Exports,
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
    /// granted (`capability_denied`), judged from its bytes before it is compiled and
    /// again from the compiled component, before any of its code runs.
    pub(crate) async fn load(
        engine: &Engine,
        linker: &Linker<CallState>,
        name: &str,
        bytes: &[u8],
        grants: &PluginGrants,
    ) -> Result<Self, LoadError> {
        let sha256 = Self::preflight(name, bytes, grants)?;
        Self::load_checked(engine, linker, name, bytes, sha256, grants).await
    }

    /// [`Plugin::load`] after [`Plugin::preflight`] passed and gave `sha256`.
    pub(crate) async fn load_checked(
        engine: &Engine,
        linker: &Linker<CallState>,
        name: &str,
        bytes: &[u8],
        sha256: String,
        grants: &PluginGrants,
    ) -> Result<Self, LoadError> {
        let loaded = engine.component_tiered(name, bytes, &sha256)?;
        Self::from_component(engine, linker, name, bytes, sha256, loaded, grants).await
    }

    /// What [`Plugin::load`] checks before compiling: the sha256 of `bytes` (which
    /// it returns) against the pin, the imports the bytes declare against `grants`.
    pub(crate) fn preflight(name: &str, bytes: &[u8], grants: &PluginGrants) -> Result<String, LoadError> {
        let sha256 = hex::encode(Sha256::digest(bytes));
        check_identity(name, &sha256, grants)?;
        check_declared_imports(bytes, grants)?;
        Ok(sha256)
    }

    /// Load a builtin plugin the binary carries: its sha256 was taken and its code
    /// compiled at build time (used when it fits the engine).
    pub(crate) async fn load_builtin(
        engine: &Engine,
        linker: &Linker<CallState>,
        builtin: &crate::load::builtins::Builtin,
        grants: &PluginGrants,
    ) -> Result<Self, LoadError> {
        let sha256 = builtin.sha256.to_string();
        check_identity(builtin.name, &sha256, grants)?;
        let loaded = engine.embedded(builtin.precompiled, builtin.bytes, &sha256)?;
        Self::from_component(engine, linker, builtin.name, builtin.bytes, sha256, loaded, grants).await
    }

    /// The rest of [`Plugin::load`], for a component already hashed, checked against
    /// its pin and compiled: imports checked, linked, its tools listed.
    pub(crate) async fn from_component(
        engine: &Engine,
        linker: &Linker<CallState>,
        name: &str,
        bytes: &[u8],
        sha256: String,
        loaded: crate::engine::LoadedComponent,
        grants: &PluginGrants,
    ) -> Result<Self, LoadError> {
        let wasm = &loaded.engine;
        let component = &loaded.component;
        let imports = imports_of(wasm, component);
        check_imports(&imports, grants)?;
        let net = (fetch::CAPABILITY.imported_by(&imports) || http::CAPABILITY.imported_by(&imports))
            .then(|| Arc::new(grants.net.clone()));

        let config = match config::CAPABILITY.imported_by(&imports) {
            true => grants.config.iter().map(|c| (c.key.clone(), c.value.clone())).collect(),
            false => Vec::new().into(),
        };
        let link = Link { name: name.into(), env: grants.env.clone().into(), config };
        let tier_linker = linker_for(&loaded, linker)?;
        let (exports, tools) = if typed::exports_tools(wasm, component) {
            if let Some(tool) = grants.read_only.first() {
                return Err(LoadError::BadPlugin(format!(
                    "{name}: read-only names {tool:?}, but the component exports toolhost:plugin/tools, \
                     whose tools declare for themselves whether they are read-only"
                )));
            }
            let prepared = link.tools(&tier_linker, wasm, component)?;
            let tools = crate::sandbox::list_tools(&prepared, &grants.limits)
                .await
                .map_err(|e| LoadError::BadPlugin(format!("{name}: listing its tools failed: {e}")))?;
            let tools = crate::load::spec::from_listing(&prepared.name, tools)?;
            (Exports::Tools(Tiered::new(loaded.tier, prepared)), tools)
        } else {
            let typed = typed::derive(wasm, component, bytes);
            let tools = typed_specs(name, &typed, grants)?;
            let prepared = link.typed(&tier_linker, wasm, component, &typed)?;
            (Exports::Typed(Tiered::new(loaded.tier, prepared), typed), tools)
        };
        if loaded.tier == Tier::Baseline {
            let slot = match &exports {
                Exports::Tools(slot) => Slot::Tools(slot),
                Exports::Typed(slot, _) => Slot::Typed(slot),
            };
            link::optimize_later(engine, linker, link, bytes, &sha256, slot);
        }
        Ok(Self {
            name: name.into(),
            sha256,
            imports,
            from_cache: loaded.from_cache,
            exports,
            tools,
            net,
            exec: None,
            read_dirs: grants.read_dirs.clone().into(),
            redactor: Redactor::new(&secrets(grants)),
            grants: grants.clone(),
        })
    }

    /// The plugin's display name (`builtin:fs`, or the file it came from).
    pub fn name(&self) -> &str {
        &self.name
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

    /// Which compiler made the code its calls run now: [`Tier::Baseline`] until
    /// the background compile of a newly added component has replaced it.
    pub fn tier(&self) -> Tier {
        match &self.exports {
            Exports::Tools(slot) => slot.tier(),
            Exports::Typed(slot, _) => slot.tier(),
        }
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

    /// The filesystem a call to one of its tools holds (`writes`: the tool does not
    /// declare read-only) in `work_dir`.
    pub(crate) fn fs_access(&self, work_dir: Option<&std::path::Path>, writes: bool) -> FsAccess {
        let work_dir = match self.grants.fs {
            FsGrant::None => None,
            FsGrant::Read | FsGrant::ReadWrite => work_dir.map(std::path::Path::to_path_buf),
        };
        FsAccess {
            writable: work_dir.is_some() && writes && self.grants.fs == FsGrant::ReadWrite,
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
        exec::CAPABILITY.imported_by(&self.imports)
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

    /// What it exports, prepared to instantiate.
    pub(crate) fn exports(&self) -> &Exports {
        &self.exports
    }

    /// The typed function behind tool number `index` of a typed-export component.
    pub(crate) fn typed_func(&self, index: usize) -> Option<&TypedFunc> {
        match &self.exports {
            Exports::Typed(_, typed) => typed.funcs.get(index),
            Exports::Tools(_) => None,
        }
    }

    /// Whether it is a typed-export component (no `toolhost:plugin/tools`).
    pub fn is_typed(&self) -> bool {
        matches!(self.exports, Exports::Typed(..))
    }

    /// The exported functions of a typed-export component that are not tools, and why.
    pub fn skipped(&self) -> &[Skipped] {
        match &self.exports {
            Exports::Typed(_, typed) => &typed.skipped,
            Exports::Tools(_) => &[],
        }
    }

    /// The schema of tool `index`'s typed result (`None`: plain text, or not a
    /// typed-export tool).
    pub fn output_schema(&self, index: usize) -> Option<&serde_json::Value> {
        self.typed_func(index)?.output.as_ref()
    }
}

/// The tool specs of a typed-export component, checked against the same bounds as
/// a listed tool list: not read-only and not destructive, unless its grants name it
/// read-only (a name that is none of its tools is refused).
fn typed_specs(name: &str, typed: &TypedExports, grants: &PluginGrants) -> Result<Vec<ToolSpec>, LoadError> {
    if typed.funcs.is_empty() {
        let skipped: Vec<String> =
            typed.skipped.iter().map(|s| format!("{} ({})", s.function, s.why)).collect();
        return Err(LoadError::BadPlugin(format!(
            "{name}: it exports neither the toolhost:plugin/tools interface nor any function that can be a tool{}",
            if skipped.is_empty() { String::new() } else { format!("; skipped: {}", skipped.join("; ")) }
        )));
    }
    if let Some(unknown) = grants.read_only.iter().find(|t| typed.funcs.iter().all(|f| f.tool != **t)) {
        let tools: Vec<&str> = typed.funcs.iter().map(|f| f.tool.as_str()).collect();
        return Err(LoadError::BadPlugin(format!(
            "{name}: read-only names {unknown:?}, which is not one of its tools ({})",
            tools.join(", ")
        )));
    }
    let listing = typed
        .funcs
        .iter()
        .map(|f| {
            let end = f.description.floor_char_boundary(crate::load::spec::MAX_DESCRIPTION_BYTES);
            crate::bindings::toolhost::plugin::types::ToolSpec {
                name: f.tool.clone(),
                description: f.description[..end].to_string(),
                parameters: f.parameters.to_string(),
                read_only: grants.read_only.contains(&f.tool),
                destructive: false,
                timeout_ms: None,
            }
        })
        .collect();
    crate::load::spec::from_listing(name, listing)
}

/// What the plugin's redactor removes: its granted env values, and the config values
/// taken from the host environment.
fn secrets(grants: &PluginGrants) -> Vec<(String, String)> {
    let from_env = grants.config.iter().filter_map(|c| Some((c.from_env.clone()?, c.value.clone())));
    grants.env.iter().cloned().chain(from_env).collect()
}
