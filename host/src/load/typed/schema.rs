//! JSON Schema 2020-12 (standard keywords only) from component value types: what a
//! typed function's arguments and result look like as JSON.
//!
//! The mapping, shared with [`super::convert`]: `bool` → boolean; integers → integer
//! with the width's `minimum`/`maximum`; `f32`/`f64` → number; `char` → a string of
//! one character; `string` → string; `list<T>` → array; `option<T>` → `T` or `null`
//! (and not required as a record field or parameter); `record` → object, every
//! non-option field required, no other field; `enum` → one of its case names;
//! `variant` → `{"tag": CASE, "value": PAYLOAD}` (no `value` for a case without
//! payload); `result<T, E>` → `{"ok": T}` or `{"err": E}`; `flags` → an array of
//! unique flag names; `tuple` → an array with `prefixItems`; `map<string, V>` →
//! object. Record field and parameter names are snake_case (`max-results` →
//! `max_results`); case, flag and tag names stay as WIT spells them.
//!
//! A type the host cannot pass as JSON (resources, `own`/`borrow` handles,
//! futures, streams, error contexts, maps with non-string keys) makes
//! [`Unsupported`] naming it: the function is skipped, not loaded.

use serde_json::{Map, Value, json};
use wasmtime::component::types::Type;

/// Why a type cannot be a tool's argument or result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub(crate) String);

/// A record field or parameter name as a JSON key: `max-results` → `max_results`.
pub(crate) fn key(name: &str) -> String {
    name.replace('-', "_")
}

/// The schema of a value of type `ty` given as an argument.
pub(crate) fn input(ty: &Type) -> Result<Value, Unsupported> {
    schema(ty, Side::Input)
}

/// The schema of a value of type `ty` returned as a result.
pub(crate) fn output(ty: &Type) -> Result<Value, Unsupported> {
    schema(ty, Side::Output)
}

/// The object schema of a function's parameters: one property per parameter, the
/// ones that are not `option` required.
pub(crate) fn params(params: &[(String, Type)]) -> Result<Value, Unsupported> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        let property =
            input(ty).map_err(|Unsupported(why)| Unsupported(format!("parameter {name}: {why}")))?;
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::String(key(name)));
        }
        properties.insert(key(name), property);
    }
    Ok(json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    }))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Output,
}

fn integer(min: i128, max: i128) -> Value {
    json!({"type": "integer", "minimum": min as i64, "maximum": max_value(max)})
}

fn max_value(max: i128) -> Value {
    match u64::try_from(max) {
        Ok(max) => json!(max),
        Err(_) => json!(i64::MAX),
    }
}

fn schema(ty: &Type, side: Side) -> Result<Value, Unsupported> {
    let number = || match side {
        Side::Input => json!({"type": "number"}),
        // NaN and the infinities have no JSON number: they are written as strings.
        Side::Output => json!({"anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}),
    };
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Type::U8 => integer(0, u8::MAX.into()),
        Type::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Type::U16 => integer(0, u16::MAX.into()),
        Type::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Type::U32 => integer(0, u32::MAX.into()),
        Type::S64 => integer(i64::MIN.into(), i64::MAX.into()),
        Type::U64 => integer(0, u64::MAX.into()),
        Type::Float32 | Type::Float64 => number(),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(list) => json!({"type": "array", "items": schema(&list.ty(), side)?}),
        Type::FixedLengthList(list) => json!({
            "type": "array",
            "items": schema(&list.ty(), side)?,
            "minItems": list.len(),
            "maxItems": list.len(),
        }),
        Type::Map(map) => {
            if map.key() != Type::String {
                return Err(Unsupported("a map whose keys are not strings".into()));
            }
            json!({"type": "object", "additionalProperties": schema(&map.value(), side)?})
        }
        Type::Record(record) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in record.fields() {
                let property = schema(&field.ty, side)
                    .map_err(|Unsupported(why)| Unsupported(format!("field {}: {why}", field.name)))?;
                if !matches!(field.ty, Type::Option(_)) {
                    required.push(Value::String(key(field.name)));
                }
                properties.insert(key(field.name), property);
            }
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            })
        }
        Type::Tuple(tuple) => {
            let items = tuple.types().map(|t| schema(&t, side)).collect::<Result<Vec<_>, _>>()?;
            json!({
                "type": "array",
                "minItems": items.len(),
                "maxItems": items.len(),
                "prefixItems": items,
                "items": false,
            })
        }
        Type::Variant(variant) => {
            let cases = variant
                .cases()
                .map(|case| {
                    let mut properties = Map::new();
                    properties.insert("tag".into(), json!({"const": case.name}));
                    let mut required = vec![json!("tag")];
                    if let Some(ty) = &case.ty {
                        let payload = schema(ty, side)
                            .map_err(|Unsupported(why)| Unsupported(format!("case {}: {why}", case.name)))?;
                        properties.insert("value".into(), payload);
                        required.push(json!("value"));
                    }
                    Ok(json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": false,
                    }))
                })
                .collect::<Result<Vec<_>, Unsupported>>()?;
            json!({"oneOf": cases})
        }
        Type::Enum(en) => json!({"type": "string", "enum": en.names().collect::<Vec<_>>()}),
        Type::Option(option) => json!({"anyOf": [schema(&option.ty(), side)?, {"type": "null"}]}),
        Type::Result(result) => {
            let arm = |name: &str, ty: Option<Type>| -> Result<Value, Unsupported> {
                let payload = match ty {
                    Some(ty) => schema(&ty, side)?,
                    None => json!({"type": "null"}),
                };
                Ok(json!({
                    "type": "object",
                    "properties": {name: payload},
                    "required": [name],
                    "additionalProperties": false,
                }))
            };
            json!({"oneOf": [arm("ok", result.ok())?, arm("err", result.err())?]})
        }
        Type::Flags(flags) => json!({
            "type": "array",
            "items": {"type": "string", "enum": flags.names().collect::<Vec<_>>()},
            "uniqueItems": true,
        }),
        Type::Own(_) | Type::Borrow(_) => {
            return Err(Unsupported("a resource handle (own/borrow) cannot be passed as JSON".into()));
        }
        Type::Future(_) => return Err(Unsupported("a future cannot be passed as JSON".into())),
        Type::Stream(_) => return Err(Unsupported("a stream cannot be passed as JSON".into())),
        Type::ErrorContext => return Err(Unsupported("an error-context cannot be passed as JSON".into())),
    })
}
