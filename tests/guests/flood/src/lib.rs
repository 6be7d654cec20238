//! Test-only plugin that lists whatever tool list `FLOOD_LISTING` (an env
//! variable the host grants it) asks for, to attack the host's bounds on tool
//! lists. It implements the WIT export directly: the SDK's `export_tools!`
//! only lists tools with static names and derived schemas.
//!
//! `FLOOD_LISTING` values (sizes in bytes):
//! - unset: the tools `flood_noop` and `raw_metadata` (a normal listing;
//!   `raw_metadata` returns metadata text the SDK could not build);
//! - `tools:N`: N small tools;
//! - `name:BYTES`, `description:BYTES`, `schema:BYTES`: one tool with a name,
//!   description or (valid JSON) schema of that size;
//! - `values:BYTES`: one tool whose schema is an `enum` of small values filling
//!   that size;
//! - `deep:N`: one tool whose schema nests arrays N deep;
//! - `total:N:BYTES`: N tools, each with a description of that size;
//! - `spin`, `panic`, `hog`: loop, panic or allocate without end while listing.

use std::hint::black_box;

use bindings::exports::toolhost::plugin::tools::Guest;
use bindings::toolhost::plugin::types::{CallContext, ToolError, ToolOutput, ToolSpec};

mod bindings {
    #![allow(missing_docs, unreachable_pub, unsafe_code)]
    use super::Flood;
    wit_bindgen::generate!({ path: "../../../wit", world: "plugin" });
    export!(Flood);
}

/// The schema of every tool that does not say otherwise.
const OBJECT: &str = r#"{"type": "object", "properties": {}, "additionalProperties": false}"#;

/// `raw_metadata`: `array` is `[0,0,…]` of `n` elements, `deep` is arrays nested
/// `n` deep, `invalid` is `n` bytes that are not JSON; `image`, `image_not_base64`
/// and `image_lying` carry an `n`-byte image under the reserved key (good, not
/// base64, not the type it claims). The SDK's `Output` holds
/// metadata as a parsed value, which could not hold 50 M elements in a guest.
const RAW_METADATA: &str = r#"{"type": "object", "properties": {
    "shape": {"type": "string", "enum": ["array", "deep", "invalid", "image", "image_not_base64", "image_lying"]},
    "n": {"type": "integer", "minimum": 1}
}, "required": ["shape", "n"], "additionalProperties": false}"#;

struct Flood;

fn spec(name: String, description: String, parameters: String) -> ToolSpec {
    ToolSpec { name, description, parameters, read_only: true, destructive: false, timeout_ms: None }
}

fn number(text: &str) -> usize {
    text.parse().unwrap_or_else(|_| panic!("FLOOD_LISTING: {text:?} is not a number"))
}

fn listing(mode: &str) -> Vec<ToolSpec> {
    let (kind, arg) = mode.split_once(':').unwrap_or((mode, ""));
    let one = |name: &str, description: String, parameters: String| {
        vec![spec(name.into(), description, parameters)]
    };
    match kind {
        "" => vec![
            spec("flood_noop".into(), "Does nothing.".into(), OBJECT.into()),
            spec(
                "raw_metadata".into(),
                "Returns metadata text as given by `shape` and `n`.".into(),
                RAW_METADATA.into(),
            ),
        ],
        "tools" => (0..number(arg)).map(|i| spec(format!("t{i}"), "A tool.".into(), OBJECT.into())).collect(),
        "name" => vec![spec("n".repeat(number(arg)), "A long name.".into(), OBJECT.into())],
        "description" => one("big_description", "d".repeat(number(arg)), OBJECT.into()),
        "schema" => {
            let head = r#"{"type": "object", "description": ""#;
            let filler = "s".repeat(number(arg).saturating_sub(head.len() + 2));
            one("big_schema", "A large schema.".into(), format!("{head}{filler}\"}}"))
        }
        "values" => {
            let head = r#"{"type": "object", "enum": [0"#;
            let count = number(arg).saturating_sub(head.len() + 2) / 2;
            one("many_values", "A schema of small values.".into(), format!("{head}{}]}}", ",0".repeat(count)))
        }
        "deep" => {
            let n = number(arg);
            let schema = format!(r#"{{"type": "object", "x": {}{}}}"#, "[".repeat(n), "]".repeat(n));
            one("deep_schema", "A deeply nested schema.".into(), schema)
        }
        "total" => {
            let (count, bytes) = arg.split_once(':').expect("FLOOD_LISTING=total:N:BYTES");
            let description = "d".repeat(number(bytes));
            (0..number(count)).map(|i| spec(format!("t{i}"), description.clone(), OBJECT.into())).collect()
        }
        "spin" => {
            let mut x: u64 = 0;
            loop {
                x = black_box(x.wrapping_add(1));
            }
        }
        "panic" => panic!("flood panicked while listing its tools"),
        "hog" => {
            let mut chunks: Vec<Vec<u8>> = Vec::new();
            loop {
                chunks.push(vec![1u8; 1 << 20]);
                black_box(&chunks);
            }
        }
        other => panic!("FLOOD_LISTING: unknown mode {other:?}"),
    }
}

impl Guest for Flood {
    fn list_tools() -> Vec<ToolSpec> {
        listing(&std::env::var("FLOOD_LISTING").unwrap_or_default())
    }

    fn call(name: String, args_json: String, _context: CallContext) -> Result<ToolOutput, ToolError> {
        if name != "raw_metadata" {
            return Ok(ToolOutput { content: format!("{name} ran"), display: None, metadata: None });
        }
        let bad = |why: String| ToolError { code: "invalid_args".into(), message: why };
        let args: serde_json::Value = serde_json::from_str(&args_json).map_err(|e| bad(e.to_string()))?;
        let n = args["n"].as_u64().ok_or_else(|| bad("n: not a number".into()))? as usize;
        let metadata = match args["shape"].as_str() {
            Some("array") => format!("[0{}]", ",0".repeat(n - 1)),
            Some("deep") => format!("{}{}", "[".repeat(n), "]".repeat(n)),
            Some("invalid") => format!("{{{}", "x".repeat(n - 1)),
            // An image under the reserved key: a PNG signature then zeros, `n` bytes in all;
            // or one that is not base64, or one whose bytes are not the type it claims.
            Some("image") => image("image/png", &png(n)),
            Some("image_not_base64") => {
                serde_json::json!({"toolhost/image": {"mime_type": "image/png", "data": "%".repeat(n)}})
                    .to_string()
            }
            Some("image_lying") => image("image/gif", &png(n)),
            other => return Err(bad(format!("shape: {other:?}"))),
        };
        Ok(ToolOutput {
            content: format!("{} bytes of metadata", metadata.len()),
            display: None,
            metadata: Some(metadata),
        })
    }
}

/// `n` bytes starting with a PNG signature.
fn png(n: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(n.max(8), 0);
    bytes
}

/// Metadata carrying `bytes` as an image of type `mime`, beside a small note.
fn image(mime: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    serde_json::json!({"note": "beside the image", "toolhost/image": {"mime_type": mime, "data": data}})
        .to_string()
}
