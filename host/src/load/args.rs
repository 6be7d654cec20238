//! Arguments: narrow coercion, then JSON Schema validation, before a guest
//! runs.
//!
//! Models (and some providers) quote scalars: `{"limit": "30"}`. When the
//! schema declares the property a number, integer or boolean (and not a
//! string), a string holding exactly a numeric literal, or exactly `"true"` /
//! `"false"`, becomes that type. Nothing else is guessed: `""` stays a string
//! and fails validation, `"yes"` is not a boolean. Then the arguments are
//! validated against the tool's schema, compiled once when the plugin loads.

use serde_json::{Map, Value};

use crate::error::{CallError, codes};

/// A tool's argument schema, compiled once at load.
pub(crate) struct ArgsSchema {
    schema: Value,
    validator: jsonschema::Validator,
    /// A typed-export function's parameters: the arguments are checked by converting
    /// them to its component values (the schema was derived from the same types;
    /// the conversion's errors name the field and the WIT type).
    typed: Option<Vec<(String, wasmtime::component::types::Type)>>,
}

impl std::fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgsSchema").field("schema", &self.schema).finish_non_exhaustive()
    }
}

impl ArgsSchema {
    /// Compile `schema`, which must be an object schema (`"type": "object"`).
    pub(crate) fn compile(schema: Value) -> Result<Self, String> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("parameters must be a JSON Schema with \"type\": \"object\"".into());
        }
        let validator = jsonschema::validator_for(&schema).map_err(|e| format!("bad JSON Schema: {e}"))?;
        Ok(Self { schema, validator, typed: None })
    }

    /// Check arguments by converting them to `params` rather than with the schema.
    pub(crate) fn typed(mut self, params: Vec<(String, wasmtime::component::types::Type)>) -> Self {
        self.typed = Some(params);
        self
    }

    /// Coerce then validate `args`. Absent arguments (`null`) are `{}`.
    pub(crate) fn prepare(&self, args: Value) -> Result<Value, CallError> {
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        coerce(&self.schema, &self.schema, &mut args);
        if let Some(params) = &self.typed {
            return match super::typed::convert::args(params, &args) {
                Ok(_) => Ok(args),
                Err(why) => Err(CallError::new(codes::INVALID_ARGS, why)),
            };
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(&args)
            .take(3)
            .map(|err| {
                let at = err.instance_path().as_str().trim_start_matches('/').replace('/', ".");
                if at.is_empty() { err.to_string() } else { format!("{at}: {err}") }
            })
            .collect();
        if problems.is_empty() {
            Ok(args)
        } else {
            Err(CallError::new(codes::INVALID_ARGS, problems.join("; ")))
        }
    }
}

/// Walk `value` beside `schema`, converting quoted scalars where the schema
/// declares a non-string scalar type.
fn coerce(root: &Value, schema: &Value, value: &mut Value) {
    let schema = resolve_ref(root, schema);
    match value {
        Value::String(text) => {
            if let Some(converted) = coerce_scalar(&declared_types(root, schema), text) {
                *value = converted;
            }
        }
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if let Some(sub) = sub_schemas(root, schema).find_map(|s| s.get("properties")?.get(key)) {
                    coerce(root, sub, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = sub_schemas(root, schema).find_map(|s| s.get("items")) {
                for item in items {
                    coerce(root, item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn coerce_scalar(types: &[&str], text: &str) -> Option<Value> {
    if types.is_empty() || types.contains(&"string") {
        return None;
    }
    if types.contains(&"integer") && is_integer_literal(text) {
        return serde_json::from_str::<serde_json::Number>(text).ok().map(Value::Number);
    }
    if types.contains(&"number") && is_number_literal(text) {
        return serde_json::from_str::<serde_json::Number>(text).ok().map(Value::Number);
    }
    if types.contains(&"boolean") {
        match text {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    None
}

/// `-?\d+`
fn is_integer_literal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `-?\d+(\.\d+)?`
fn is_number_literal(text: &str) -> bool {
    match text.split_once('.') {
        Some((whole, frac)) => {
            is_integer_literal(whole) && !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit())
        }
        None => is_integer_literal(text),
    }
}

/// The schema and its `anyOf`/`oneOf`/`allOf` members (one level, refs
/// resolved): where `Option<T>` and similar put the real type.
fn sub_schemas<'a>(root: &'a Value, schema: &'a Value) -> impl Iterator<Item = &'a Value> {
    let members = ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .filter_map(move |k| schema.get(k)?.as_array())
        .flatten()
        .map(move |s| resolve_ref(root, s));
    std::iter::once(schema).chain(members)
}

fn declared_types<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a str> {
    sub_schemas(root, schema)
        .flat_map(|s| match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Follow a local `$ref` (`#/$defs/Name`, `#/definitions/Name`).
fn resolve_ref<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> ArgsSchema {
        ArgsSchema::compile(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": ["integer", "null"]},
                "ratio": {"type": "number"},
                "all": {"type": "boolean"},
                "inner": {"$ref": "#/$defs/Inner"},
                "list": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["path"],
            "additionalProperties": false,
            "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}}
        }))
        .unwrap()
    }

    #[test]
    fn quoted_scalars_become_the_declared_type() {
        let args = schema()
            .prepare(json!({"path": "7", "limit": "30", "ratio": "-1.5", "all": "true",
                            "inner": {"n": "4"}, "list": ["1", "2"]}))
            .unwrap();
        assert_eq!(
            args,
            json!({"path": "7", "limit": 30, "ratio": -1.5, "all": true, "inner": {"n": 4}, "list": [1, 2]})
        );
    }

    #[test]
    fn nothing_else_is_guessed() {
        for bad in [
            json!({"path": "a", "limit": ""}),
            json!({"path": "a", "limit": "3.0"}),
            json!({"path": "a", "all": "yes"}),
            json!({"path": "a", "all": "True"}),
            json!({"path": "a", "ratio": "1e3"}),
            json!({"path": "a", "limit": " 3"}),
        ] {
            let err = schema().prepare(bad.clone()).unwrap_err();
            assert_eq!(err.code, codes::INVALID_ARGS, "{bad}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        let err = schema().prepare(json!({"path": "a", "limit": "x"})).unwrap_err();
        assert!(err.message.starts_with("limit: "), "{}", err.message);
        let err = schema().prepare(json!({})).unwrap_err();
        assert!(err.message.contains("\"path\" is a required property"), "{}", err.message);
        let err = schema().prepare(json!({"path": "a", "pth": 1})).unwrap_err();
        assert!(err.message.contains("pth"), "{}", err.message);
        let err = schema().prepare(json!({"path": "a", "inner": {"n": "x"}})).unwrap_err();
        assert!(err.message.starts_with("inner.n: "), "{}", err.message);
    }

    #[test]
    fn null_args_are_an_empty_object() {
        let lax = ArgsSchema::compile(json!({"type": "object"})).unwrap();
        assert_eq!(lax.prepare(Value::Null).unwrap(), json!({}));
    }

    #[test]
    fn non_object_schemas_are_refused() {
        assert!(ArgsSchema::compile(json!({"type": "string"})).is_err());
        assert!(ArgsSchema::compile(json!({"type": "object", "properties": 3})).is_err());
    }
}

#[cfg(test)]
#[path = "args_props.rs"]
mod props;
