//! [`ToolSpec`]: a tool as the host, the registry and the model see it.

use serde::Serialize;
use serde_json::Value;

use crate::args::ArgsSchema;
use crate::bindings::toolhost::plugin::types as wit;
use crate::error::LoadError;

/// A tool's declared identity and behaviour.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    /// Unique `snake_case` name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Changes nothing (runs in parallel, read-only work dir).
    pub read_only: bool,
    /// Effects cannot be undone or safely repeated.
    pub destructive: bool,
    /// Requested per-call deadline in milliseconds.
    pub timeout_ms: Option<u32>,
}

impl ToolSpec {
    pub(crate) fn from_wit(spec: wit::ToolSpec) -> Result<Self, LoadError> {
        let bad = |why: String| LoadError::BadSpec { tool: spec.name.clone(), why };
        if !valid_name(&spec.name) {
            return Err(bad("names are 1-64 characters of [a-z0-9_], starting with a letter".into()));
        }
        let parameters: Value = serde_json::from_str(&spec.parameters)
            .map_err(|e| bad(format!("parameters are not JSON: {e}")))?;
        Ok(Self {
            name: spec.name,
            description: spec.description,
            parameters,
            read_only: spec.read_only,
            destructive: spec.destructive,
            timeout_ms: spec.timeout_ms,
        })
    }

    /// Compile the argument schema (done once, at registration).
    pub(crate) fn compile_args(&self) -> Result<ArgsSchema, LoadError> {
        ArgsSchema::compile(self.parameters.clone())
            .map_err(|why| LoadError::BadSpec { tool: self.name.clone(), why })
    }
}

/// `[a-z][a-z0-9_]{0,63}`
fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=64).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// What a model is given for one tool: name, description, parameter schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// Tool description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn names() {
        for ok in ["a", "read_file", "x9", &"a".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "9a", "_a", "Read", "read-file", "a b", "é", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
