//! The registry: tool name → tool, duplicates refused, a stable sorted order
//! (a stable tool list keeps a model provider's prompt cache warm), and an
//! allow-list filter.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::args::ArgsSchema;
use crate::error::LoadError;
use crate::native::NativeTool;
use crate::plugin::Plugin;
use crate::spec::{ToolDefinition, ToolSpec};

/// What runs a tool: a component, or the host itself.
#[derive(Clone)]
pub(crate) enum Runner {
    /// A tool of a WebAssembly plugin, run in a fresh sandbox per call.
    Wasm(Arc<Plugin>),
    /// A tool the host implements (`read_output`): it only reads host state.
    Native(Arc<dyn NativeTool>),
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
            Runner::Wasm(plugin) => Some(plugin),
            Runner::Native(_) => None,
        }
    }

    /// Where the tool comes from: the plugin's name, or `builtin:host`.
    pub fn source(&self) -> &str {
        match &self.runner {
            Runner::Wasm(plugin) => plugin.name(),
            Runner::Native(_) => NATIVE_SOURCE,
        }
    }

    pub(crate) fn runner(&self) -> &Runner {
        &self.runner
    }

    pub(crate) fn args(&self) -> &ArgsSchema {
        &self.args
    }
}

/// The source shown for tools the host implements itself.
pub const NATIVE_SOURCE: &str = "builtin:host";

/// Tools by name, in sorted order.
#[derive(Default)]
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
    /// schema does not compile.
    pub fn register(&mut self, plugin: Arc<Plugin>) -> Result<(), LoadError> {
        let runner = Runner::Wasm(plugin.clone());
        self.register_all(plugin.tools().iter().map(|spec| (spec.clone(), runner.clone())).collect())
    }

    /// Register a tool the host implements.
    pub(crate) fn register_native(&mut self, tool: Arc<dyn NativeTool>) -> Result<(), LoadError> {
        self.register_all(vec![(tool.spec(), Runner::Native(tool))])
    }

    fn register_all(&mut self, tools: Vec<(ToolSpec, Runner)>) -> Result<(), LoadError> {
        let mut staged: Vec<Tool> = Vec::with_capacity(tools.len());
        for (spec, runner) in tools {
            if self.tools.contains_key(&spec.name) || staged.iter().any(|t| t.spec.name == spec.name) {
                return Err(LoadError::DuplicateTool(spec.name));
            }
            staged.push(Tool { args: spec.compile_args()?, spec, runner });
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
