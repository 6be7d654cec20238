//! Tool definitions and the dispatch behind [`crate::export_tools!`].

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::context::Context;
use crate::error::{ToolError, codes};

/// A successful result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// What the model reads.
    pub content: String,
    /// Richer text for a UI (a diff, say).
    pub display: Option<String>,
    /// Structured facts about the result (a JSON object).
    pub metadata: Option<serde_json::Value>,
}

impl Output {
    /// Plain text for the model.
    pub fn text(content: impl Into<String>) -> Self {
        Self { content: content.into(), ..Self::default() }
    }

    /// Add text meant for a UI rather than the model.
    pub fn with_display(mut self, display: impl Into<String>) -> Self {
        self.display = Some(display.into());
        self
    }

    /// Add structured metadata (should be a JSON object).
    pub fn with_metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = Some(metadata);
        self
    }
}

type Handler = Box<dyn Fn(&str, &Context) -> Result<Output, ToolError>>;

/// One tool: its spec and the function that runs it. Build it with [`tool`].
pub struct Tool {
    name: &'static str,
    description: &'static str,
    schema: fn() -> schemars::Schema,
    read_only: bool,
    destructive: bool,
    timeout_ms: Option<u32>,
    run: Handler,
}

/// Define a tool named `name` whose arguments are `A` (deserialized from the
/// call's JSON; its JSON Schema, doc comments included, is what the model
/// sees) and whose body is `run`. By default a tool may change things and is
/// not destructive; say otherwise with [`Tool::read_only`] and
/// [`Tool::destructive`].
pub fn tool<A, F>(name: &'static str, description: &'static str, run: F) -> Tool
where
    A: DeserializeOwned + JsonSchema,
    F: Fn(A, &Context) -> Result<Output, ToolError> + 'static,
{
    Tool {
        name,
        description,
        schema: || schemars::schema_for!(A),
        read_only: false,
        destructive: false,
        timeout_ms: None,
        run: Box::new(move |json, ctx| {
            let args: A =
                serde_json::from_str(json).map_err(|e| ToolError::invalid_args(format!("arguments: {e}")))?;
            run(args, ctx)
        }),
    }
}

impl Tool {
    /// The tool changes nothing: it may run in parallel and in plan mode, and
    /// it gets a read-only view of the work dir.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The tool's effects cannot be undone or safely repeated.
    pub fn destructive(mut self) -> Self {
        self.destructive = true;
        self
    }

    /// Ask for a per-call time limit (the host clamps it).
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.timeout_ms = Some(ms);
        self
    }
}

/// Check an argument schema the way the host and a model rely on it: an
/// object schema that refuses unknown fields, and every property with one
/// plain `type` (the host coerces quoted scalars by it) and a one-line
/// description (the model reads it). For tool authors' unit tests:
/// `check_schema("my_tool", &schemars::schema_for!(Args).to_value())`.
pub fn check_schema(tool: &str, schema: &serde_json::Value) -> Result<(), String> {
    if schema["type"] != "object" {
        return Err(format!("{tool}: the schema is not an object schema"));
    }
    if schema["additionalProperties"] != false {
        return Err(format!("{tool}: unknown fields are not refused (add #[serde(deny_unknown_fields)])"));
    }
    let props = schema["properties"].as_object().ok_or_else(|| format!("{tool}: no properties"))?;
    for (name, prop) in props {
        if !prop["type"].is_string() {
            return Err(format!("{tool}.{name}: no single plain `type`: {prop}"));
        }
        let description = prop["description"].as_str().unwrap_or("");
        if description.len() <= 10 || description.contains('\n') {
            return Err(format!("{tool}.{name}: needs a one-line description (a doc comment): {prop}"));
        }
    }
    Ok(())
}

/// Glue between the WIT exports and [`Tool`]s. Used by the export macro.
#[doc(hidden)]
pub mod __dispatch {
    use super::*;
    use crate::bindings::toolhost::plugin::types as wit;

    /// The specs of `tools`, schemas rendered as JSON text.
    pub fn list(tools: &[Tool]) -> Vec<wit::ToolSpec> {
        tools
            .iter()
            .map(|t| {
                let mut schema = (t.schema)().to_value();
                if let Some(obj) = schema.as_object_mut() {
                    // The model sees the tool's own name and description.
                    obj.remove("$schema");
                    obj.remove("title");
                }
                wit::ToolSpec {
                    name: t.name.to_string(),
                    description: t.description.to_string(),
                    parameters: schema.to_string(),
                    read_only: t.read_only,
                    destructive: t.destructive,
                    timeout_ms: t.timeout_ms,
                }
            })
            .collect()
    }

    /// Run the tool called `name`.
    pub fn call(
        tools: &[Tool],
        name: &str,
        args_json: &str,
        context: wit::CallContext,
    ) -> Result<wit::ToolOutput, wit::ToolError> {
        let ctx = Context::new(context.call_id, context.work_dir.map(Into::into));
        let result = match tools.iter().find(|t| t.name == name) {
            Some(t) => (t.run)(args_json, &ctx),
            None => Err(ToolError::new(codes::UNKNOWN_TOOL, name)),
        };
        result
            .map(|out| wit::ToolOutput {
                content: out.content,
                display: out.display,
                // Straight into bytes: `Value`'s `Display` goes through the
                // formatting machinery, several times slower in wasm.
                metadata: out.metadata.map(|m| serde_json::to_string(&m).unwrap_or_else(|_| m.to_string())),
            })
            .map_err(|e| wit::ToolError { code: e.code, message: e.message })
    }
}

#[cfg(test)]
mod tests {
    use super::check_schema;
    use serde_json::json;

    #[test]
    fn check_schema_names_what_is_missing() {
        let good = json!({"type": "object", "additionalProperties": false,
                          "properties": {"path": {"type": "string", "description": "The file to read."}}});
        assert_eq!(check_schema("t", &good), Ok(()));
        let open = json!({"type": "object", "properties": {}});
        assert!(check_schema("t", &open).unwrap_err().contains("deny_unknown_fields"));
        let untyped = json!({"type": "object", "additionalProperties": false,
                             "properties": {"n": {"type": ["integer", "null"], "description": "A number of things."}}});
        assert!(check_schema("t", &untyped).unwrap_err().starts_with("t.n: no single plain `type`"));
        let undocumented = json!({"type": "object", "additionalProperties": false,
                                  "properties": {"n": {"type": "integer"}}});
        assert!(check_schema("t", &undocumented).unwrap_err().contains("description"));
    }
}
