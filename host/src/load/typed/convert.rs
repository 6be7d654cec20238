//! JSON ↔ component values, along the mapping [`super::schema`] describes.
//!
//! [`args`] turns a call's arguments into the function's parameters. Every mismatch
//! is an error naming where it is (`location.lat: expected f64, got string`,
//! `count: 300 is out of range for u8 (0 to 255)`, `units: unknown case "kelvin"`,
//! `location: missing field "lat"`, `location: unknown field "alt"`), never a
//! trap or a panic: the guest sees only well-typed values. [`to_json`] turns a
//! result back into JSON.

use serde_json::{Map, Number, Value};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use super::schema::key;

/// A JSON name as an error shows it: quoted, cut to 64 bytes.
fn shown(name: &str) -> String {
    let end = name.floor_char_boundary(64);
    if end < name.len() { format!("{:?}…", &name[..end]) } else { format!("{name:?}") }
}

/// The kind of a JSON value, for "got …".
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The WIT name of a type, for "expected …".
fn wit_name(ty: &Type) -> &'static str {
    match ty {
        Type::Bool => "bool",
        Type::S8 => "s8",
        Type::U8 => "u8",
        Type::S16 => "s16",
        Type::U16 => "u16",
        Type::S32 => "s32",
        Type::U32 => "u32",
        Type::S64 => "s64",
        Type::U64 => "u64",
        Type::Float32 => "f32",
        Type::Float64 => "f64",
        Type::Char => "char",
        Type::String => "string",
        Type::List(_) | Type::FixedLengthList(_) => "list (an array)",
        Type::Map(_) => "map (an object)",
        Type::Record(_) => "record (an object)",
        Type::Tuple(_) => "tuple (an array)",
        Type::Variant(_) => "variant (an object with a tag)",
        Type::Enum(_) => "enum (a string)",
        Type::Option(_) => "option",
        Type::Result(_) => "result (an object with ok or err)",
        Type::Flags(_) => "flags (an array of names)",
        Type::Own(_) | Type::Borrow(_) => "resource",
        Type::Future(_) => "future",
        Type::Stream(_) => "stream",
        Type::ErrorContext => "error-context",
    }
}

/// The parameters of a function taking `params`, from the arguments object `args`.
pub(crate) fn args(params: &[(String, Type)], args: &Value) -> Result<Vec<Val>, String> {
    let empty = Map::new();
    let object = match args {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => return Err(format!("the arguments must be an object, got {}", kind(other))),
    };
    if let Some(unknown) = object.keys().find(|k| params.iter().all(|(name, _)| key(name) != **k)) {
        let names: Vec<String> = params.iter().map(|(n, _)| key(n)).collect();
        return Err(format!("unknown argument {}; the arguments are {}", shown(unknown), names.join(", ")));
    }
    params
        .iter()
        .map(|(name, ty)| {
            let name = key(name);
            match (object.get(&name), ty) {
                (Some(value), ty) => from_json(ty, value, &name),
                (None, Type::Option(_)) => Ok(Val::Option(None)),
                (None, _) => Err(format!("missing argument {}", shown(&name))),
            }
        })
        .collect()
}

fn mismatch(path: &str, ty: &Type, value: &Value) -> String {
    format!("{path}: expected {}, got {}", wit_name(ty), kind(value))
}

fn int(path: &str, ty: &Type, value: &Value, min: i128, max: i128) -> Result<i128, String> {
    let Value::Number(n) = value else { return Err(mismatch(path, ty, value)) };
    let whole = n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match whole {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(v) => Err(format!("{path}: {v} is out of range for {} ({min} to {max})", wit_name(ty))),
        None => Err(format!("{path}: expected {}, got {n} (not a whole number in range)", wit_name(ty))),
    }
}

/// `value` as a value of type `ty`, at `path` for errors.
pub(crate) fn from_json(ty: &Type, value: &Value, path: &str) -> Result<Val, String> {
    let bad = || mismatch(path, ty, value);
    let int = |min: i128, max: i128| int(path, ty, value, min, max);
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(bad)?),
        // The ranges checked above make each conversion exact.
        Type::S8 => Val::S8(int(i8::MIN.into(), i8::MAX.into())? as i8),
        Type::U8 => Val::U8(int(0, u8::MAX.into())? as u8),
        Type::S16 => Val::S16(int(i16::MIN.into(), i16::MAX.into())? as i16),
        Type::U16 => Val::U16(int(0, u16::MAX.into())? as u16),
        Type::S32 => Val::S32(int(i32::MIN.into(), i32::MAX.into())? as i32),
        Type::U32 => Val::U32(int(0, u32::MAX.into())? as u32),
        Type::S64 => Val::S64(int(i64::MIN.into(), i64::MAX.into())? as i64),
        Type::U64 => Val::U64(int(0, u64::MAX.into())? as u64),
        Type::Float32 => {
            let f = value.as_f64().ok_or_else(bad)?;
            if f.abs() > f64::from(f32::MAX) {
                return Err(format!("{path}: {value} is out of range for f32"));
            }
            Val::Float32(f as f32)
        }
        Type::Float64 => Val::Float64(value.as_f64().ok_or_else(bad)?),
        Type::Char => {
            let text = value.as_str().ok_or_else(bad)?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => {
                    return Err(format!(
                        "{path}: expected char (one character), got a {}-character string",
                        text.chars().count()
                    ));
                }
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(bad)?.to_string()),
        Type::List(list) => {
            let items = value.as_array().ok_or_else(bad)?;
            let item = list.ty();
            Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| from_json(&item, v, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::FixedLengthList(list) => {
            let items = value.as_array().ok_or_else(bad)?;
            if items.len() != list.len() as usize {
                return Err(format!("{path}: expected {} items, got {}", list.len(), items.len()));
            }
            let item = list.ty();
            Val::FixedLengthList(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| from_json(&item, v, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(map) => {
            let object = value.as_object().ok_or_else(bad)?;
            let value_ty = map.value();
            Val::Map(
                object
                    .iter()
                    .map(|(k, v)| {
                        Ok((Val::String(k.clone()), from_json(&value_ty, v, &format!("{path}.{k}"))?))
                    })
                    .collect::<Result<_, String>>()?,
            )
        }
        Type::Record(record) => {
            let object = value.as_object().ok_or_else(bad)?;
            if let Some(unknown) = object.keys().find(|k| record.fields().all(|f| key(f.name) != **k)) {
                let names: Vec<String> = record.fields().map(|f| key(f.name)).collect();
                return Err(format!(
                    "{path}: unknown field {}; the fields are {}",
                    shown(unknown),
                    names.join(", ")
                ));
            }
            let mut fields = Vec::with_capacity(record.fields().len());
            for field in record.fields() {
                let name = key(field.name);
                let val = match (object.get(&name), &field.ty) {
                    (Some(v), ty) => from_json(ty, v, &format!("{path}.{name}"))?,
                    (None, Type::Option(_)) => Val::Option(None),
                    (None, _) => return Err(format!("{path}: missing field {}", shown(&name))),
                };
                fields.push((field.name.to_string(), val));
            }
            Val::Record(fields)
        }
        Type::Tuple(tuple) => {
            let items = value.as_array().ok_or_else(bad)?;
            if items.len() != tuple.types().len() {
                return Err(format!("{path}: expected {} items, got {}", tuple.types().len(), items.len()));
            }
            Val::Tuple(
                tuple
                    .types()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (t, v))| from_json(&t, v, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Variant(variant) => {
            let object = value.as_object().ok_or_else(bad)?;
            let tag = object
                .get("tag")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{path}: expected an object with a string \"tag\""))?;
            let Some(case) = variant.cases().find(|c| c.name == tag) else {
                let names: Vec<&str> = variant.cases().map(|c| c.name).collect();
                return Err(format!(
                    "{path}: unknown case {}; the cases are {}",
                    shown(tag),
                    names.join(", ")
                ));
            };
            if let Some(extra) = object.keys().find(|k| *k != "tag" && (*k != "value" || case.ty.is_none())) {
                return Err(format!("{path}: unknown field {} for case {tag}", shown(extra)));
            }
            let payload = match (&case.ty, object.get("value")) {
                (Some(ty), Some(v)) => Some(Box::new(from_json(ty, v, &format!("{path}.value"))?)),
                (Some(_), None) => return Err(format!("{path}: case {tag} needs a \"value\"")),
                (None, _) => None,
            };
            Val::Variant(tag.to_string(), payload)
        }
        Type::Enum(en) => {
            let name = value.as_str().ok_or_else(bad)?;
            if !en.names().any(|n| n == name) {
                let names: Vec<&str> = en.names().collect();
                return Err(format!(
                    "{path}: unknown case {}; the cases are {}",
                    shown(name),
                    names.join(", ")
                ));
            }
            Val::Enum(name.to_string())
        }
        Type::Option(option) => match value {
            Value::Null => Val::Option(None),
            v => Val::Option(Some(Box::new(from_json(&option.ty(), v, path)?))),
        },
        Type::Result(result) => {
            let object = value.as_object().filter(|o| o.len() == 1).ok_or_else(|| {
                format!("{path}: expected an object with one key, ok or err, got {}", kind(value))
            })?;
            let (arm, v) = object.iter().next().ok_or_else(bad)?;
            let payload = |ty: Option<Type>, at: &str| -> Result<Option<Box<Val>>, String> {
                match ty {
                    Some(ty) => Ok(Some(Box::new(from_json(&ty, v, &format!("{path}.{at}"))?))),
                    None if v.is_null() => Ok(None),
                    None => Err(format!("{path}.{at}: expected null, got {}", kind(v))),
                }
            };
            match arm.as_str() {
                "ok" => Val::Result(Ok(payload(result.ok(), "ok")?)),
                "err" => Val::Result(Err(payload(result.err(), "err")?)),
                other => return Err(format!("{path}: unknown key {}; expected ok or err", shown(other))),
            }
        }
        Type::Flags(flags) => {
            let items = value.as_array().ok_or_else(bad)?;
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let name = item
                    .as_str()
                    .ok_or_else(|| format!("{path}[{i}]: expected a flag name, got {}", kind(item)))?;
                if !flags.names().any(|n| n == name) {
                    let names: Vec<&str> = flags.names().collect();
                    return Err(format!(
                        "{path}[{i}]: unknown flag {}; the flags are {}",
                        shown(name),
                        names.join(", ")
                    ));
                }
                if set.iter().any(|s| s == name) {
                    return Err(format!("{path}[{i}]: flag {name} is given twice"));
                }
                set.push(name.to_string());
            }
            Val::Flags(set)
        }
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            // Functions with these are skipped at load; never reached.
            return Err(format!("{path}: a {} cannot be passed as JSON", wit_name(ty)));
        }
    })
}

fn float(f: f64) -> Value {
    match Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::from("NaN"),
        None if f > 0.0 => Value::from("Infinity"),
        None => Value::from("-Infinity"),
    }
}

/// A result value as JSON.
pub(crate) fn to_json(val: &Val) -> Value {
    match val {
        Val::Bool(b) => Value::Bool(*b),
        Val::S8(n) => (*n).into(),
        Val::U8(n) => (*n).into(),
        Val::S16(n) => (*n).into(),
        Val::U16(n) => (*n).into(),
        Val::S32(n) => (*n).into(),
        Val::U32(n) => (*n).into(),
        Val::S64(n) => (*n).into(),
        Val::U64(n) => (*n).into(),
        // Through its shortest decimal form: 51.8f32 is 51.8, not 51.79999923706055.
        Val::Float32(f) => float(f.to_string().parse().unwrap_or(f64::from(*f))),
        Val::Float64(f) => float(*f),
        Val::Char(c) => Value::String(c.to_string()),
        Val::String(s) => Value::String(s.clone()),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Map(pairs) => Value::Object(
            pairs
                .iter()
                .map(|(k, v)| {
                    let k = match k {
                        Val::String(s) => s.clone(),
                        other => to_json(other).to_string(),
                    };
                    (k, to_json(v))
                })
                .collect(),
        ),
        Val::Record(fields) => Value::Object(fields.iter().map(|(k, v)| (key(k), to_json(v))).collect()),
        Val::Variant(tag, payload) => {
            let mut object = Map::new();
            object.insert("tag".into(), Value::String(tag.clone()));
            if let Some(payload) = payload {
                object.insert("value".into(), to_json(payload));
            }
            Value::Object(object)
        }
        Val::Enum(name) => Value::String(name.clone()),
        Val::Option(inner) => inner.as_deref().map(to_json).unwrap_or(Value::Null),
        Val::Result(result) => {
            let (arm, payload) = match result {
                Ok(v) => ("ok", v),
                Err(v) => ("err", v),
            };
            let mut object = Map::new();
            object.insert(arm.into(), payload.as_deref().map(to_json).unwrap_or(Value::Null));
            Value::Object(object)
        }
        Val::Flags(names) => Value::Array(names.iter().cloned().map(Value::String).collect()),
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => Value::Null,
    }
}
