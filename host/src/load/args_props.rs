//! Properties of coercion and validation over generated arguments: preparing never
//! panics and fails only with `invalid_args`; a quoted scalar becomes a number or a
//! boolean only when it is exactly that literal (`""` never 0, `"false"` never
//! true, a string field never touched); every error names the field.
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib args::props` runs a longer one.

use proptest::prelude::*;

use crate::test_support::proptest_config as config;
use serde_json::{Value, json};

use super::ArgsSchema;
use crate::error::codes;

fn schema() -> ArgsSchema {
    ArgsSchema::compile(json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": ["integer", "null"]},
            "ratio": {"type": "number"},
            "all": {"type": "boolean"},
            "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
            "inner": {"$ref": "#/$defs/Inner"},
            "list": {"type": "array", "items": {"type": "integer"}}
        },
        "required": ["path"],
        "additionalProperties": false,
        "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    }))
    .unwrap()
}

/// Any JSON value, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(vec!["", "0", "-0", "1", "true", "false", "null", "1.5", "1e3", " 3", "0x10"])
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "path", "limit", "ratio", "all", "maybe", "inner", "list", "n", "x"
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// Short strings, often near a literal.
fn near_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+ .0-9eE]{0,6}",
        "-?[0-9]{1,4}(\\.[0-9]{0,3})?",
        "(true|false|TRUE|False|yes|no|1|0)( ?)",
        ".{0,8}",
    ]
}

/// `-?(0|[1-9][0-9]*)`: a JSON integer (`"00"` and `"+1"` are not).
fn is_integer_literal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let no_leading_zero = digits == "0" || !digits.starts_with('0');
    !digits.is_empty() && no_leading_zero && digits.bytes().all(|b| b.is_ascii_digit())
}

fn is_number_literal(s: &str) -> bool {
    match s.split_once('.') {
        Some((w, f)) => is_integer_literal(w) && !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()),
        None => is_integer_literal(s),
    }
}

proptest! {
    #![proptest_config(config(4096))]

    /// Whatever the arguments, preparing ends in the arguments or `invalid_args`.
    #[test]
    fn preparing_never_panics(args in any_json()) {
        if let Err(err) = schema().prepare(args) {
            prop_assert_eq!(err.code.as_str(), codes::INVALID_ARGS);
            prop_assert!(!err.message.is_empty());
        }
    }

    /// A quoted scalar becomes the declared type only when it is exactly its literal,
    /// and then to the value it spells; anything else fails, naming the field.
    #[test]
    fn quoted_scalars_are_coerced_exactly_or_refused(text in near_literal(), field in 0usize..4) {
        let name = ["limit", "ratio", "all", "maybe"][field];
        let prepared = schema().prepare(json!({"path": "p", name: text}));
        let literal = match name {
            "limit" => is_integer_literal(&text) && text.parse::<i64>().is_ok(),
            "ratio" => is_number_literal(&text),
            _ => text == "true" || text == "false",
        };
        match prepared {
            Ok(args) => {
                prop_assert!(literal, "{name}: {text:?} became {}", args[name]);
                match name {
                    "limit" | "ratio" => prop_assert_eq!(args[name].as_f64(), text.parse::<f64>().ok()),
                    _ => prop_assert_eq!(args[name].as_bool(), Some(text == "true")),
                }
            }
            Err(err) => {
                prop_assert!(!literal, "{name}: the literal {text:?} was refused: {err}");
                prop_assert!(err.message.starts_with(&format!("{name}: ")), "{}", err.message);
            }
        }
    }

    /// A string field keeps its string exactly, whatever it spells.
    #[test]
    fn a_string_field_is_never_coerced(text in near_literal()) {
        let args = schema().prepare(json!({"path": text.clone()})).unwrap();
        prop_assert_eq!(&args["path"], &Value::String(text));
    }

    /// A value of the wrong type, at any field (nested ones by their dotted path),
    /// is refused naming that field.
    #[test]
    fn errors_name_the_field(bad in prop_oneof![
        Just(json!({})), Just(json!([])), Just(json!("x")), Just(json!(1.5)), Just(json!(true))
    ], at in 0usize..5) {
        let (args, field) = match at {
            0 => (json!({"path": "p", "limit": bad}), "limit"),
            1 => (json!({"path": "p", "ratio": bad}), "ratio"),
            2 => (json!({"path": "p", "all": bad}), "all"),
            3 => (json!({"path": "p", "inner": {"n": bad}}), "inner.n"),
            _ => (json!({"path": "p", "list": [1, bad]}), "list.1"),
        };
        let wrong = match field {
            "limit" | "inner.n" | "list.1" => !bad.is_i64(),
            "ratio" => !bad.is_number(),
            _ => !bad.is_boolean(),
        };
        match schema().prepare(args) {
            Ok(_) => prop_assert!(!wrong, "{field} = {bad} was accepted"),
            Err(err) => {
                prop_assert!(wrong);
                prop_assert!(err.message.starts_with(&format!("{field}: ")), "{}", err.message);
            }
        }
    }
}
