//! A call's outcome as an MCP `CallToolResult`, and the `outputSchema` every
//! tool declares for it.
//!
//! The text block carries what the model reads; `structuredContent` carries
//! the same text as `output`, so a client that shows the model only
//! `structuredContent` still shows it the file, the listing or the error, plus
//! the tool's `metadata` (sizes, hashes, counts), the `error` code of a failed
//! call and `halt` when a hook asked the turn to stop. [`OUTPUT_SCHEMA`] says so.
//! What the permissions and hooks decided is in `_meta["toolhost/permission"]`.
//! An image the tool returned (`ToolResult::image`) follows the text as an MCP
//! `image` content item.

use std::sync::{Arc, LazyLock};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject};
use serde_json::{Value, json};

use crate::call::executor::ToolResult;

/// The line added when a hook halted the turn.
const HALT_LINE: &str = "[a hook asked for the turn to stop here]";

/// The `outputSchema` of every tool: the shape of its `structuredContent`.
pub(crate) static OUTPUT_SCHEMA: LazyLock<Arc<JsonObject>> = LazyLock::new(|| {
    let schema = json!({
        "type": "object",
        "properties": {
            "output": {
                "type": "string",
                "description": "What the model reads: the tool's output (head and tail when long), or for a failure \
                    `code: message` then any output."
            },
            "metadata": {"type": "object", "description": "Structured facts from the tool (sizes, hashes, counts)."},
            "error": {"type": "string", "description": "The error code of a failed call (such as path_escape)."},
            "halt": {"type": "boolean", "description": "A hook asked for the turn to stop after this call."}
        },
        "required": ["output"]
    });
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("a JSON object literal"),
    }
});

/// The `outputSchema` of a typed-export tool whose result is not plain text:
/// [`OUTPUT_SCHEMA`] with the typed value, of schema `result`, as `metadata.result`.
pub(crate) fn typed_output_schema(result: &Value) -> JsonObject {
    let mut schema = (**OUTPUT_SCHEMA).clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "metadata".into(),
            json!({
                "type": "object",
                "description": "The function's result, typed as its WIT result type says.",
                "properties": {"result": result},
                "required": ["result"]
            }),
        );
    }
    schema
}

/// Success: the output as text. Failure: `code: message`, then any output
/// after a blank line, with `isError: true`. Both mirrored in
/// `structuredContent` per [`OUTPUT_SCHEMA`].
pub(crate) fn call_tool_result(result: ToolResult) -> CallToolResult {
    let mut meta = JsonObject::new();
    if let Some(note) = &result.permission
        && let Ok(value) = serde_json::to_value(note)
    {
        meta.insert("toolhost/permission".into(), value);
    }
    let mut structured = JsonObject::new();
    if result.halt {
        meta.insert("toolhost/halt".into(), Value::Bool(true));
        structured.insert("halt".into(), Value::Bool(true));
    }
    let halt = result.halt;
    let image = result.image.filter(|_| result.ok);
    let (text, ok) = if result.ok {
        if let Some(metadata) = result.metadata.filter(Value::is_object) {
            structured.insert("metadata".into(), metadata);
        }
        (result.output, true)
    } else {
        let mut text = match &result.error {
            Some(error) => {
                structured.insert("error".into(), Value::String(error.code.clone()));
                error.to_string()
            }
            None => crate::error::codes::HOST_ERROR.to_string(),
        };
        if !result.output.is_empty() {
            text.push_str("\n\n");
            text.push_str(&result.output);
        }
        (text, false)
    };
    let mut content = vec![ContentBlock::text(text.clone())];
    if let Some(image) = image {
        content.push(ContentBlock::image(image.data, image.mime_type));
    }
    let mut output = text;
    if halt {
        content.push(ContentBlock::text(HALT_LINE));
        output.push_str("\n\n");
        output.push_str(HALT_LINE);
    }
    structured.insert("output".into(), Value::String(output));
    let mut out = if ok { CallToolResult::success(content) } else { CallToolResult::error(content) };
    out.structured_content = Some(Value::Object(structured));
    if !meta.is_empty() {
        out.meta = Some(MetaObject(meta));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CallError;

    fn result(ok: bool) -> ToolResult {
        ToolResult {
            call_id: "c1".into(),
            ok,
            output: "alpha\n".into(),
            error: (!ok).then(|| CallError::new("path_escape", "no")),
            display: None,
            metadata: Some(json!({"bytes": 6})),
            permission: None,
            image: None,
            omitted: None,
            halt: false,
            duration: Default::default(),
        }
    }

    #[test]
    fn an_image_follows_the_text_as_image_content() {
        let mut with_image = result(true);
        with_image.image =
            Some(crate::output::Image { mime_type: "image/png".into(), data: "iVBO".into(), bytes: 3 });
        let out = call_tool_result(with_image.clone());
        assert_eq!(out.content.len(), 2);
        assert_eq!(out.content[0].as_text().map(|t| t.text.as_str()), Some("alpha\n"));
        let image = out.content[1].as_image().expect("image content");
        assert_eq!((image.data.as_str(), image.mime_type.as_str()), ("iVBO", "image/png"));
        let wire = serde_json::to_value(&out.content[1]).unwrap();
        assert_eq!(wire, json!({"type": "image", "data": "iVBO", "mimeType": "image/png"}));
        // A failed call never carries one.
        with_image.ok = false;
        assert_eq!(call_tool_result(with_image).content.len(), 1);
    }

    /// A client reading only `structuredContent` gets the text the model needs,
    /// and the structure fits the declared schema.
    #[test]
    fn structured_content_carries_the_output_and_fits_the_schema() {
        let schema = jsonschema::validator_for(&Value::Object((**OUTPUT_SCHEMA).clone())).unwrap();
        let ok = call_tool_result(result(true));
        let structured = ok.structured_content.clone().unwrap();
        assert_eq!(structured["output"], "alpha\n");
        assert_eq!(structured["metadata"]["bytes"], 6);
        assert!(schema.is_valid(&structured), "{structured}");

        let mut halted = result(false);
        halted.halt = true;
        let failed = call_tool_result(halted);
        let structured = failed.structured_content.clone().unwrap();
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(structured["error"], "path_escape");
        assert_eq!(structured["halt"], true);
        let output = structured["output"].as_str().unwrap();
        assert!(output.starts_with("path_escape: no\n\nalpha") && output.ends_with(HALT_LINE), "{output}");
        assert!(structured.get("metadata").is_none());
        assert!(schema.is_valid(&structured), "{structured}");
    }
}
