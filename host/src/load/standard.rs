//! Argument schemas as standard JSON Schema 2020-12, done once at registration.
//!
//! `schemars` (which the guests and the native tools derive their schemas with)
//! writes `format` values no standard defines for Rust's number types: `uint`,
//! `uint32`, `int64`, `double`… Validators ignore unknown formats, and strict
//! clients (MCP checkers) flag them. [`normalize`] removes each such `format`
//! and states the type's range with `minimum`/`maximum` instead, keeping any
//! bound the schema already has when it is tighter. Standard formats
//! (`date-time`, `uri`, …) are left alone.

use serde_json::{Number, Value};

/// The range of each non-standard integer format; float formats have none.
fn range(format: &str) -> Option<Option<(Number, Number)>> {
    let pair = |lo: i64, hi: u64| Some((Number::from(lo), Number::from(hi)));
    Some(match format {
        "int8" => pair(i8::MIN.into(), i8::MAX as u64),
        "int16" => pair(i16::MIN.into(), i16::MAX as u64),
        "int32" | "int" => pair(i32::MIN.into(), i32::MAX as u64),
        "int64" => pair(i64::MIN, i64::MAX as u64),
        "uint8" => pair(0, u8::MAX.into()),
        "uint16" => pair(0, u16::MAX.into()),
        "uint32" => pair(0, u32::MAX.into()),
        "uint64" | "uint" => pair(0, u64::MAX),
        "float" | "double" => None,
        _ => return None,
    })
}

/// Rewrite `schema` (and every schema inside it) to standard keywords.
pub(crate) fn normalize(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format")
                && let Some(bounds) = range(format)
            {
                map.remove("format");
                if let Some((lo, hi)) = bounds {
                    tighten(map, "minimum", lo, |new, old| new > old);
                    tighten(map, "maximum", hi, |new, old| new < old);
                }
            }
            map.values_mut().for_each(normalize);
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// Set `key` to `bound` unless the schema's own value is at least as tight.
fn tighten(
    map: &mut serde_json::Map<String, Value>,
    key: &str,
    bound: Number,
    tighter: fn(f64, f64) -> bool,
) {
    let new = bound.as_f64().unwrap_or(0.0);
    match map.get(key).and_then(Value::as_f64) {
        Some(old) if !tighter(new, old) => {}
        _ => {
            map.insert(key.into(), Value::Number(bound));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rust_number_formats_become_ranges() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "format": "uint32", "minimum": 0},
                "offset": {"type": ["integer", "null"], "format": "uint", "minimum": 1},
                "delta": {"type": "integer", "format": "int8"},
                "ratio": {"type": "number", "format": "double"},
                "items": {"type": "array", "items": {"type": "integer", "format": "uint16", "maximum": 10}},
                "when": {"type": "string", "format": "date-time"}
            },
            "$defs": {"N": {"anyOf": [{"type": "integer", "format": "int64"}]}}
        });
        normalize(&mut schema);
        let p = &schema["properties"];
        assert_eq!(p["limit"], json!({"type": "integer", "minimum": 0, "maximum": 4294967295u64}));
        assert_eq!(p["offset"], json!({"type": ["integer", "null"], "minimum": 1, "maximum": u64::MAX}));
        assert_eq!(p["delta"], json!({"type": "integer", "minimum": -128, "maximum": 127}));
        assert_eq!(p["ratio"], json!({"type": "number"}));
        assert_eq!(p["items"]["items"], json!({"type": "integer", "minimum": 0, "maximum": 10}));
        assert_eq!(p["when"]["format"], "date-time");
        assert_eq!(
            schema["$defs"]["N"]["anyOf"][0],
            json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
        );
    }
}
