//! The registry: tool name → tool, duplicates refused, a stable sorted order
//! (a stable tool list keeps a model provider's prompt cache warm), and an
//! allow-list filter. The tools of MCP servers (`crate::servers`) join it as they
//! are listed: the host keeps the registry of its builtins and plugins, and makes a
//! new one with the servers' tools beside them whenever a server's list changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{CallError, LoadError};
use crate::load::args::ArgsSchema;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::load::plugin::Plugin;
use crate::load::spec::{ToolDefinition, ToolSpec};
use crate::output::Parts;
use crate::policy::Redactor;

/// What runs a tool: a component, or the host itself.
#[derive(Clone)]
pub(crate) enum Runner {
    /// A tool of a WebAssembly plugin, run in a fresh sandbox per call.
    Wasm(Arc<Plugin>),
    /// A tool the host implements (`read_output`): it only reads host state.
    Native(Arc<dyn NativeTool>),
    /// Function number `.1` of a typed-export component, run in a fresh sandbox per call.
    Typed(Arc<Plugin>, usize),
    /// A tool of an MCP server: the call leaves the host (`crate::servers`).
    Server(Arc<dyn ServerTool>),
}

/// One registered tool: its spec, its compiled argument schema, and what
/// runs it.
pub struct Tool {
    spec: ToolSpec,
    args: ArgsSchema,
    runner: Runner,
}

impl Tool {
    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The plugin that provides it, unless the host implements it.
    pub fn plugin(&self) -> Option<&Arc<Plugin>> {
        match &self.runner {
            Runner::Wasm(plugin) | Runner::Typed(plugin, _) => Some(plugin),
            Runner::Native(_) | Runner::Server(_) => None,
        }
    }

    /// Where the tool comes from: the plugin's name, `server:NAME` for an MCP
    /// server's, or `builtin:host`.
    pub fn source(&self) -> &str {
        match &self.runner {
            Runner::Wasm(plugin) | Runner::Typed(plugin, _) => plugin.name(),
            Runner::Native(_) => NATIVE_SOURCE,
            Runner::Server(tool) => tool.source(),
        }
    }

    /// Whether a call may reach the network (a plugin with a network grant, a
    /// server with hosts or a URL).
    pub fn open_world(&self) -> bool {
        match &self.runner {
            Runner::Wasm(plugin) | Runner::Typed(plugin, _) => plugin.network().is_some(),
            Runner::Native(_) => false,
            Runner::Server(tool) => tool.open_world(),
        }
    }

    /// What redacts its results beside the host's own redactor: its plugin's or
    /// server's granted values.
    pub(crate) fn redactor(&self) -> Option<&Redactor> {
        match &self.runner {
            Runner::Wasm(plugin) | Runner::Typed(plugin, _) => Some(plugin.redactor()),
            Runner::Native(_) => None,
            Runner::Server(tool) => Some(tool.redactor()),
        }
    }

    pub(crate) fn runner(&self) -> &Runner {
        &self.runner
    }

    pub(crate) fn args(&self) -> &ArgsSchema {
        &self.args
    }

    /// The schema of its typed result, for a typed-export tool whose result is not
    /// plain text.
    pub fn output_schema(&self) -> Option<&Value> {
        match &self.runner {
            Runner::Typed(plugin, index) => plugin.output_schema(*index),
            _ => None,
        }
    }
}

/// A plugin's name as a tool-name prefix: the file's stem (`weather` for
/// `/tools/weather.wasm`), lower-case, other characters as `_`, starting with a letter.
fn name_prefix(plugin: &str) -> String {
    let stem = std::path::Path::new(plugin).file_stem().and_then(|s| s.to_str()).unwrap_or(plugin);
    let mut prefix: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    if !prefix.starts_with(|c: char| c.is_ascii_lowercase()) {
        prefix.insert(0, 'p');
    }
    prefix
}

/// The source shown for tools the host implements itself.
pub const NATIVE_SOURCE: &str = "builtin:host";

/// Tools by name, in sorted order.
#[derive(Default, Clone)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Tool>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register every tool of `plugin`. Fails without registering any of
    /// them when a name is already taken (`duplicate_tool: NAME`) or a
    /// schema does not compile. Schemas are made standard JSON Schema here
    /// (`load::standard`).
    ///
    /// A typed-export component's tool whose name is taken already is registered
    /// under the plugin's name first (`weather_get_weather`).
    pub fn register(&mut self, plugin: Arc<Plugin>) -> Result<(), LoadError> {
        if !plugin.is_typed() {
            let runner = Runner::Wasm(plugin.clone());
            return self
                .register_all(plugin.tools().iter().map(|spec| (spec.clone(), runner.clone())).collect());
        }
        let prefix = name_prefix(plugin.name());
        let tools = plugin
            .tools()
            .iter()
            .enumerate()
            .map(|(index, spec)| {
                let mut spec = spec.clone();
                if self.tools.contains_key(&spec.name) {
                    let prefixed = format!("{prefix}_{}", spec.name);
                    if crate::load::spec::valid_name(&prefixed) {
                        spec.name = prefixed;
                    }
                }
                (spec, Runner::Typed(plugin.clone(), index))
            })
            .collect();
        self.register_all(tools)
    }

    /// Register a tool the host implements.
    pub(crate) fn register_native(&mut self, tool: Arc<dyn NativeTool>) -> Result<(), LoadError> {
        self.register_all(vec![(tool.spec(), Runner::Native(tool))])
    }

    /// Register the tools of MCP servers, one by one and without changing their
    /// schemas (kept whole, as the server sent them): a tool whose name is taken is
    /// left out and returned with its error (`duplicate_tool`), as is one whose
    /// schema does not compile.
    pub(crate) fn register_servers(
        &mut self,
        tools: Vec<(ToolSpec, Arc<dyn ServerTool>)>,
    ) -> Vec<(String, LoadError)> {
        let mut refused = Vec::new();
        for (spec, tool) in tools {
            if self.tools.contains_key(&spec.name) {
                refused.push((spec.name.clone(), LoadError::DuplicateTool(spec.name)));
                continue;
            }
            match spec.compile_args() {
                Ok(args) => {
                    let tool = Tool { args, spec, runner: Runner::Server(tool) };
                    self.tools.insert(tool.spec.name.clone(), Arc::new(tool));
                }
                Err(e) => refused.push((spec.name, e)),
            }
        }
        refused
    }

    fn register_all(&mut self, tools: Vec<(ToolSpec, Runner)>) -> Result<(), LoadError> {
        let mut staged: Vec<Tool> = Vec::with_capacity(tools.len());
        for (mut spec, runner) in tools {
            super::standard::normalize(&mut spec.parameters);
            if self.tools.contains_key(&spec.name) || staged.iter().any(|t| t.spec.name == spec.name) {
                return Err(LoadError::DuplicateTool(spec.name));
            }
            let mut args = spec.compile_args()?;
            if let Runner::Typed(plugin, index) = &runner
                && let Some(func) = plugin.typed_func(*index)
            {
                args = args.typed(func.params.clone());
            }
            staged.push(Tool { args, spec, runner });
        }
        for tool in staged {
            self.tools.insert(tool.spec.name.clone(), Arc::new(tool));
        }
        Ok(())
    }

    /// Keep only the tools named in `allowed`; names that match nothing are
    /// returned so the caller can report them.
    pub fn retain(&mut self, allowed: &[String]) -> Vec<String> {
        let unknown = allowed.iter().filter(|n| !self.tools.contains_key(*n)).cloned().collect();
        self.tools.retain(|name, _| allowed.contains(name));
        unknown
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    /// All tools, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Name, description and schema of every tool, sorted by name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.iter()
            .map(|t| ToolDefinition {
                name: t.spec.name.clone(),
                description: t.spec.description.clone(),
                parameters: t.spec.parameters.clone(),
            })
            .collect()
    }
}

/// A tool of an MCP server the host runs or reaches (`crate::servers`): its calls
/// leave the host, through the same pipeline as every other tool's.
pub(crate) trait ServerTool: Send + Sync {
    /// `server:NAME`.
    fn source(&self) -> &str;
    /// Redacts what its calls return (the server's granted values, secret shapes).
    fn redactor(&self) -> &Redactor;
    /// Whether it may reach the network.
    fn open_world(&self) -> bool;
    /// Run it with validated arguments; the caller holds the deadline and
    /// cancellation (dropping the future cancels the call upstream).
    fn call<'a>(&'a self, args: Value, call: NativeCall<'a>) -> BoxFuture<'a, Result<Parts, CallError>>;
}

/// What a native tool returns on success.
#[derive(Debug)]
pub(crate) struct NativeOutput {
    pub(crate) content: String,
    pub(crate) metadata: Option<Value>,
}

/// What a native tool knows about the call it runs.
#[derive(Clone, Copy)]
pub(crate) struct NativeCall<'a> {
    /// The call id.
    pub(crate) call_id: &'a str,
    /// The caller's cancellation.
    pub(crate) cancel: &'a CancellationToken,
    /// When the call's deadline passes: the executor stops the call there; a tool
    /// that waits on something (a child) ends it a little before, keeping what it has.
    pub(crate) deadline: std::time::Instant,
}

/// A tool implemented in the host. It runs on the caller's task; one that waits
/// (`run_tests`) must honour the call's cancellation.
pub(crate) trait NativeTool: Send + Sync {
    /// The tool's spec (computed once, at registration).
    fn spec(&self) -> ToolSpec;
    /// Whether its output is redacted like every tool's (granted values, secret
    /// shapes). Only `env_get` says no: showing granted values is what it is for,
    /// and it masks secret-looking ones itself.
    fn redacted(&self) -> bool {
        true
    }
    /// Run it with validated arguments.
    fn call<'a>(
        &'a self,
        args: Value,
        call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>>;
}
