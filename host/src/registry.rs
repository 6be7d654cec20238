//! The registry: tool name → tool, duplicates refused, a stable sorted order
//! (a stable tool list keeps a model provider's prompt cache warm), and an
//! allow-list filter.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::args::ArgsSchema;
use crate::error::LoadError;
use crate::plugin::Plugin;
use crate::spec::{ToolDefinition, ToolSpec};

/// One registered tool: its spec, its compiled argument schema, and the
/// plugin that runs it.
pub struct Tool {
    spec: ToolSpec,
    args: ArgsSchema,
    plugin: Arc<Plugin>,
}

impl Tool {
    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The plugin that provides it.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }

    pub(crate) fn args(&self) -> &ArgsSchema {
        &self.args
    }
}

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
        let mut staged = Vec::with_capacity(plugin.tools().len());
        for spec in plugin.tools() {
            if self.tools.contains_key(&spec.name) || staged.iter().any(|t: &Tool| t.spec.name == spec.name) {
                return Err(LoadError::DuplicateTool(spec.name.clone()));
            }
            staged.push(Tool { spec: spec.clone(), args: spec.compile_args()?, plugin: plugin.clone() });
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
