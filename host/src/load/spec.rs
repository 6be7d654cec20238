//! [`ToolSpec`]: a tool as the host, the registry and the model see it, and the
//! bounds on what a plugin may list at load.
//!
//! A plugin's tool list is untrusted input the host keeps for as long as it
//! runs and hands to every model. [`from_listing`] checks it against the bounds
//! below before converting anything: the number of tools first, then the size
//! of the whole list, then each tool's name, description and schema length and
//! its schema's nesting depth (a cheap scan), and only then parses a schema. A
//! refusal is a [`LoadError::ToolListTooLarge`] naming the bound and the tool.

use serde::Serialize;
use serde_json::Value;

use crate::bindings::toolhost::plugin::types as wit;
use crate::error::LoadError;
use crate::limits::json_nesting_exceeds;
use crate::load::args::ArgsSchema;

/// Most tools one plugin may list. Large MCP servers list around a hundred;
/// every tool is sent to the model with each request.
pub(crate) const MAX_TOOLS: usize = 1000;
/// Longest tool name, in bytes (names are `[a-z][a-z0-9_]*`).
pub(crate) const MAX_NAME_BYTES: usize = 64;
/// Longest tool description, in bytes. Real descriptions are a few KiB.
pub(crate) const MAX_DESCRIPTION_BYTES: usize = 32 << 10;
/// Longest argument schema (JSON text), in bytes. Real schemas are tens of KiB.
pub(crate) const MAX_SCHEMA_BYTES: usize = 256 << 10;
/// Deepest nesting of arrays and objects in an argument schema.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;
/// Most bytes of names, descriptions and schemas in one plugin's whole list.
pub(crate) const MAX_LISTING_BYTES: usize = 4 << 20;

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

/// Check the tool list `listing` of the plugin `plugin` against the bounds
/// ([`MAX_TOOLS`], [`MAX_LISTING_BYTES`], [`MAX_NAME_BYTES`],
/// [`MAX_DESCRIPTION_BYTES`], [`MAX_SCHEMA_BYTES`], [`MAX_SCHEMA_DEPTH`]), each
/// before anything it guards is converted or parsed, then convert and validate
/// each spec.
pub(crate) fn from_listing(plugin: &str, listing: Vec<wit::ToolSpec>) -> Result<Vec<ToolSpec>, LoadError> {
    let refuse = |why: String| LoadError::ToolListTooLarge { plugin: plugin.to_string(), why };
    if listing.len() > MAX_TOOLS {
        return Err(refuse(format!(
            "it lists {} tools; a plugin may list at most {MAX_TOOLS}",
            listing.len()
        )));
    }
    let total: usize = listing.iter().map(|s| s.name.len() + s.description.len() + s.parameters.len()).sum();
    for spec in &listing {
        let tool = shown_name(&spec.name);
        let too_long = |what: &str, len: usize, max: usize| {
            refuse(format!("tool {tool}: its {what} is {len} bytes; the bound is {max} bytes"))
        };
        if spec.name.len() > MAX_NAME_BYTES {
            return Err(too_long("name", spec.name.len(), MAX_NAME_BYTES));
        }
        if spec.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(too_long("description", spec.description.len(), MAX_DESCRIPTION_BYTES));
        }
        if spec.parameters.len() > MAX_SCHEMA_BYTES {
            return Err(too_long("parameter schema", spec.parameters.len(), MAX_SCHEMA_BYTES));
        }
    }
    if total > MAX_LISTING_BYTES {
        return Err(refuse(format!(
            "its {} tools are {total} bytes of names, descriptions and schemas in all; the bound is \
             {MAX_LISTING_BYTES} bytes",
            listing.len()
        )));
    }
    for spec in &listing {
        if json_nesting_exceeds(&spec.parameters, MAX_SCHEMA_DEPTH) {
            return Err(refuse(format!(
                "tool {}: its parameter schema nests arrays and objects deeper than {MAX_SCHEMA_DEPTH} levels",
                shown_name(&spec.name)
            )));
        }
    }
    listing.into_iter().map(ToolSpec::from_wit).collect()
}

/// A tool name as an error shows it: quoted, escaped, and cut to the first
/// [`MAX_NAME_BYTES`] bytes when longer (with its length).
fn shown_name(name: &str) -> String {
    if name.len() <= MAX_NAME_BYTES {
        return format!("{name:?}");
    }
    let end = name.floor_char_boundary(MAX_NAME_BYTES);
    format!("{:?}… ({} bytes)", &name[..end], name.len())
}

/// `[a-z][a-z0-9_]{0,63}`
pub(crate) fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=MAX_NAME_BYTES).contains(&bytes.len())
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
    use super::*;

    fn spec(name: &str, description: &str, parameters: &str) -> wit::ToolSpec {
        wit::ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: parameters.into(),
            read_only: true,
            destructive: false,
            timeout_ms: None,
        }
    }

    const OBJECT: &str = r#"{"type": "object"}"#;

    fn refusal(listing: Vec<wit::ToolSpec>) -> String {
        match from_listing("p", listing) {
            Err(err @ LoadError::ToolListTooLarge { .. }) => err.to_string(),
            other => panic!("expected a bound to refuse the listing, got {other:?}"),
        }
    }

    #[test]
    fn names() {
        for ok in ["a", "read_file", "x9", &"a".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "9a", "_a", "Read", "read-file", "a b", "é", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_listing_within_the_bounds_converts() {
        let tools = from_listing("p", vec![spec("a", "does a", OBJECT), spec("b", "", OBJECT)]).unwrap();
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        let at_bounds = vec![spec(
            &"n".repeat(MAX_NAME_BYTES),
            &"d".repeat(MAX_DESCRIPTION_BYTES),
            &format!(r#"{{"type": "object", "description": "{}"}}"#, "s".repeat(MAX_SCHEMA_BYTES - 40)),
        )];
        assert!(from_listing("p", at_bounds).is_ok());
    }

    #[test]
    fn each_bound_is_named() {
        let many = (0..=MAX_TOOLS).map(|i| spec(&format!("t{i}"), "", OBJECT)).collect();
        assert!(refusal(many).contains("lists 1001 tools; a plugin may list at most 1000"));
        let long_name = "n".repeat(1 << 20);
        let msg = refusal(vec![spec(&long_name, "", OBJECT)]);
        assert!(msg.contains("its name is 1048576 bytes; the bound is 64 bytes"), "{msg}");
        assert!(msg.len() < 300, "the name is shown cut: {msg}");
        let msg = refusal(vec![spec("d", &"x".repeat(MAX_DESCRIPTION_BYTES + 1), OBJECT)]);
        assert!(msg.contains("tool \"d\": its description is 32769 bytes; the bound is 32768"), "{msg}");
        let msg = refusal(vec![spec("s", "", &" ".repeat(MAX_SCHEMA_BYTES + 1))]);
        assert!(msg.contains("tool \"s\": its parameter schema is 262145 bytes"), "{msg}");
        let deep = format!(r#"{{"type": "object", "x": {}{}}}"#, "[".repeat(64), "]".repeat(64));
        let msg = refusal(vec![spec("deep", "", &deep)]);
        assert!(
            msg.contains("tool \"deep\": its parameter schema nests") && msg.contains("64 levels"),
            "{msg}"
        );
        let wide: Vec<_> =
            (0..200).map(|i| spec(&format!("t{i}"), &"x".repeat(MAX_DESCRIPTION_BYTES), OBJECT)).collect();
        let msg = refusal(wide);
        assert!(msg.contains("in all; the bound is 4194304 bytes"), "{msg}");
        assert!(msg.starts_with("tool_list_too_large: p: "), "{msg}");
    }
}
