//! A server's tools and results in the host's terms.
//!
//! **Tools** ([`tools`]): names made `mcp__SERVER__TOOL` (`super::names`); the
//! list held to the same bounds as a plugin's (`load::spec::from_listing`: count,
//! sizes, nesting, checked before anything is parsed further); each schema kept
//! whole — `$ref`, `$defs`, `allOf`/`oneOf`/`anyOf` — and compiled with the
//! jsonschema crate, so arguments are validated before a call leaves the host; a
//! `$ref` that is not local (`#…`) is refused, as is a schema that does not
//! compile or is not an object schema: that tool is left out, named in
//! [`Listing::refused`]. `readOnlyHint: true` makes a tool read-only; anything
//! else is not read-only and destructive (an absent annotation says nothing).
//!
//! **Results** ([`result`]): `content[]` flattened to text (text as it is,
//! embedded text resources by their text, links, audio and blobs as one line
//! each); the first image kept as the result's image, later ones named;
//! `structuredContent` kept as the metadata's `structured_content`; `isError`
//! is a failed call (`tool_error`). Everything is then bounded, stored and cut by
//! the call pipeline like any tool's output.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

use crate::bindings::toolhost::plugin::types as wit;
use crate::error::{CallError, LoadError, codes};
use crate::load::spec::ToolSpec;
use crate::output::{IMAGE_KEY, Metadata, Parts};

/// One server tool: the host's spec and the server's own name for it.
#[derive(Debug, Clone)]
pub(crate) struct Adapted {
    /// As the registry and the model see it.
    pub(crate) spec: ToolSpec,
    /// The name the server knows it by.
    pub(crate) remote: String,
}

/// A tool left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refused {
    /// The server's name for it.
    pub tool: String,
    /// Why it is not offered.
    pub why: String,
}

/// A server's tools as the host offers them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    /// The tools offered.
    pub(crate) tools: Vec<Adapted>,
    /// The tools left out.
    pub(crate) refused: Vec<Refused>,
}

/// The tools `listed` by the server `server`, as the host offers them (see the
/// module docs). Fails as a whole only when the list passes a bound.
pub(crate) fn tools(server: &str, listed: Vec<rmcp::model::Tool>) -> Result<Listing, LoadError> {
    let mut remote = Vec::with_capacity(listed.len());
    let mut specs = Vec::with_capacity(listed.len());
    for tool in listed {
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
        specs.push(wit::ToolSpec {
            name: super::names::tool_name(server, &tool.name),
            description: tool.description.as_deref().unwrap_or_default().to_string(),
            parameters: Value::Object((*tool.input_schema).clone()).to_string(),
            read_only,
            destructive: !read_only,
            timeout_ms: None,
        });
        remote.push(tool.name.into_owned());
    }
    let specs = crate::load::spec::from_listing(&format!("server:{server}"), specs)?;
    let mut listing = Listing::default();
    for (spec, remote) in specs.into_iter().zip(remote) {
        let refuse = |why: String| Refused { tool: remote.clone(), why };
        if listing.tools.iter().any(|t| t.spec.name == spec.name) {
            listing.refused.push(refuse(format!(
                "{}: its name is {} here, as another tool's is",
                codes::DUPLICATE_TOOL,
                spec.name
            )));
            continue;
        }
        if let Some(target) = remote_ref(&spec.parameters) {
            listing.refused.push(refuse(format!(
                "its input schema refers to {target:?}, outside the schema (only local `#…` references are \
                 followed; nothing is fetched)"
            )));
            continue;
        }
        if let Err(e) = spec.compile_args() {
            listing.refused.push(refuse(e.to_string()));
            continue;
        }
        listing.tools.push(Adapted { spec, remote });
    }
    Ok(listing)
}

/// The first `$ref` or `$dynamicRef` in `schema` that is not a local reference.
fn remote_ref(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(map) => {
            for key in ["$ref", "$dynamicRef"] {
                if let Some(target) = map.get(key).and_then(Value::as_str)
                    && !target.starts_with('#')
                {
                    return Some(target.to_string());
                }
            }
            map.values().find_map(remote_ref)
        }
        Value::Array(items) => items.iter().find_map(remote_ref),
        _ => None,
    }
}

/// The server's answer as a call's parts (see the module docs); `isError` is a
/// failed call whose message is the flattened text.
pub(crate) fn result(answer: CallToolResult) -> Result<Parts, CallError> {
    let mut text = String::new();
    let mut image: Option<(String, String)> = None;
    let mut push = |line: &str| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(line);
    };
    for block in answer.content {
        match block {
            ContentBlock::Text(t) => push(&t.text),
            ContentBlock::Image(i) if image.is_none() => image = Some((i.mime_type, i.data)),
            ContentBlock::Image(i) => {
                push(&format!("[image: {}, {} bytes of base64, not shown]", i.mime_type, i.data.len()))
            }
            ContentBlock::Audio(a) => {
                push(&format!("[audio: {}, {} bytes of base64, not shown]", a.mime_type, a.data.len()))
            }
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { uri, text: body, .. } => {
                    push(&format!("[resource {uri}]"));
                    push(&body);
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => push(&format!(
                    "[resource {uri}: {}, {} bytes of base64, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )),
                _ => push("[resource of an unknown kind, not shown]"),
            },
            ContentBlock::ResourceLink(link) => push(&format!("[resource link {}: {}]", link.uri, link.name)),
            _ => push("[content of an unknown kind, not shown]"),
        }
    }
    let structured = answer.structured_content;
    if answer.is_error == Some(true) {
        if text.is_empty()
            && let Some(value) = &structured
        {
            text = value.to_string();
        }
        return Err(CallError::new(codes::TOOL_ERROR, text));
    }
    if text.is_empty()
        && let Some(value) = &structured
    {
        text = value.to_string();
    }
    let mut metadata = serde_json::Map::new();
    if let Some(value) = structured {
        metadata.insert("structured_content".into(), value);
    }
    if let Some((mime_type, data)) = image {
        metadata.insert(IMAGE_KEY.into(), json!({"mime_type": mime_type, "data": data}));
    }
    // As text: the pipeline bounds it before anything parses it again.
    let metadata = (!metadata.is_empty()).then(|| Metadata::Text(Value::Object(metadata).to_string()));
    Ok(Parts { content: text, display: None, metadata })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{Tool, ToolAnnotations};
    use std::sync::Arc;

    fn tool(name: &str, schema: Value, read_only: Option<bool>) -> Tool {
        let Value::Object(schema) = schema else { panic!() };
        let mut t = Tool::new(name.to_string(), "does it", Arc::new(schema));
        if let Some(ro) = read_only {
            t = t.with_annotations(ToolAnnotations::new().read_only(ro));
        }
        t
    }

    #[test]
    fn hints_names_and_schemas() {
        let listing = tools(
            "up",
            vec![
                tool("look", json!({"type": "object"}), Some(true)),
                tool("poke", json!({"type": "object"}), Some(false)),
                tool("bare", json!({"type": "object"}), None),
                tool(
                    "refs",
                    json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                           "$defs": {"A": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}),
                    None,
                ),
                tool(
                    "far",
                    json!({"type": "object", "properties": {"a": {"$ref": "https://x/s.json"}}}),
                    None,
                ),
                tool("notobj", json!({"type": "string"}), None),
                tool("Look", json!({"type": "object"}), None),
            ],
        )
        .unwrap();
        let names: Vec<(&str, bool, bool)> = listing
            .tools
            .iter()
            .map(|t| (t.spec.name.as_str(), t.spec.read_only, t.spec.destructive))
            .collect();
        assert_eq!(
            names,
            [
                ("mcp__up__look", true, false),
                ("mcp__up__poke", false, true),
                ("mcp__up__bare", false, true),
                ("mcp__up__refs", false, true)
            ]
        );
        // The schema is kept whole.
        assert_eq!(listing.tools[3].spec.parameters["$defs"]["A"]["oneOf"][1], json!({"type": "string"}));
        let refused: Vec<&str> = listing.refused.iter().map(|r| r.tool.as_str()).collect();
        assert_eq!(refused, ["far", "notobj", "Look"]);
        assert!(listing.refused[0].why.contains("https://x/s.json"), "{:?}", listing.refused);
        assert!(listing.refused[2].why.starts_with("duplicate_tool"), "{:?}", listing.refused);
    }

    #[test]
    fn a_list_past_the_bounds_is_refused_whole() {
        let many = (0..1001).map(|i| tool(&format!("t{i}"), json!({"type": "object"}), None)).collect();
        let err = tools("up", many).unwrap_err().to_string();
        assert!(err.starts_with("tool_list_too_large: server:up"), "{err}");
    }

    #[test]
    fn results_flatten_keep_images_and_structure() {
        let png = base64_png();
        let mut answer = CallToolResult::success(vec![
            ContentBlock::text("one"),
            ContentBlock::image(png.clone(), "image/png"),
            ContentBlock::text("two"),
            ContentBlock::image("AAAA", "image/gif"),
        ]);
        answer.structured_content = Some(json!({"n": 2}));
        let parts = result(answer).unwrap();
        assert_eq!(parts.content, "one\ntwo\n[image: image/gif, 4 bytes of base64, not shown]");
        let Some(Metadata::Text(meta)) = parts.metadata else { panic!() };
        let meta: Value = serde_json::from_str(&meta).unwrap();
        assert_eq!(meta["structured_content"], json!({"n": 2}));
        assert_eq!(meta[IMAGE_KEY]["data"], json!(png));

        let mut only_structure = CallToolResult::success(vec![]);
        only_structure.structured_content = Some(json!([1]));
        assert_eq!(result(only_structure).unwrap().content, "[1]");

        let Err(failed) = result(CallToolResult::error(vec![ContentBlock::text("no such entity")])) else {
            panic!("an error result succeeded")
        };
        assert_eq!((failed.code.as_str(), failed.message.as_str()), (codes::TOOL_ERROR, "no such entity"));
    }

    fn base64_png() -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR")
    }
}
