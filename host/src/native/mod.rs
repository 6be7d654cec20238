//! Tools the host implements itself, because they use host state rather than the
//! work dir: `read_output` (the output store), `run_tests` (the policy's test
//! profiles, run through the exec sandbox), `process_list` (the processes this host
//! started), `env_get` (the variables granted to the builtins), and `remove_file` /
//! `restore_file` (the removed files' artifacts, kept in the host's data dir).
//!
//! Each tool holds what it needs as values, handed to it when the host is built.

mod artifacts;
mod env_get;
mod process_list;
mod read_output;
mod remove_file;
mod run_tests;
mod workfile;

pub(crate) use artifacts::Artifacts;
pub(crate) use env_get::EnvGet;
pub(crate) use process_list::ProcessList;
pub(crate) use read_output::ReadOutput;
pub(crate) use remove_file::{FileStore, RemoveFile, RestoreFile};
pub(crate) use run_tests::RunTests;

use schemars::JsonSchema;
use serde_json::Value;

use crate::error::{CallError, codes};
pub(crate) use crate::load::registry::{NativeCall, NativeOutput, NativeTool};

/// The argument schema of a native tool, derived from its `Args` type as the guests'
/// are (`schemars`; doc comments are the descriptions), without `$schema` and `title`.
/// An `Option` field is an argument that may be left out: its property has the inner
/// type alone, so `null` is refused as before and the host coerces by one plain type.
pub(crate) fn args_schema<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Some(Value::Array(types)) = property.get("type") {
                let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                if let [only] = types[..] {
                    property["type"] = only.clone();
                }
            }
        }
    }
    schema
}

/// The arguments of a native tool, already validated against its schema, as its
/// `Args` type (`invalid_args` if they still do not fit).
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, CallError> {
    serde_json::from_value(args).map_err(|e| CallError::new(codes::INVALID_ARGS, e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::load::args::ArgsSchema;

    fn tools() -> Vec<Box<dyn NativeTool>> {
        let runtime = Arc::new(crate::imports::exec::ExecRuntime::new(Default::default(), None));
        let profile = crate::policy::TestProfile {
            name: "unit".into(),
            command: "true".into(),
            args: Vec::new(),
            cwd: ".".into(),
            timeout: std::time::Duration::from_secs(5),
            filter: true,
        };
        let outputs = Arc::new(crate::output::OutputStore::new(1000));
        vec![
            Box::new(EnvGet { vars: Vec::new(), reveal: Vec::new() }),
            Box::new(ProcessList { runtime: runtime.clone() }),
            Box::new(ReadOutput { outputs, clamp_bytes: 1000 }),
            Box::new(RunTests::new(vec![profile], runtime, Vec::new(), true)),
        ]
    }

    /// Every property has one plain `type` (the host coerces by it) and a description,
    /// and unknown arguments are refused.
    #[test]
    fn derived_schemas_type_and_describe_every_property() {
        for tool in tools() {
            let spec = tool.spec();
            let schema = &spec.parameters;
            assert_eq!((&schema["type"], &schema["additionalProperties"]), (&json!("object"), &json!(false)));
            assert!(schema.get("$schema").is_none() && schema.get("title").is_none(), "{}", spec.name);
            for (name, property) in schema["properties"].as_object().unwrap() {
                assert!(property["type"].is_string(), "{}.{name}: {property}", spec.name);
                assert!(
                    property["description"].as_str().is_some_and(|d| d.len() > 10),
                    "{}.{name}",
                    spec.name
                );
            }
        }
    }

    /// The derived schemas take and refuse the arguments the hand-written ones did.
    #[test]
    fn derived_schemas_hold_the_arguments_as_before() {
        let cases = [
            ("env_get", json!({"names": ["LANG"], "prefix": "LC_"}), true),
            ("env_get", json!({"names": null}), false),
            ("env_get", json!({"prefix": ["LC_"]}), false),
            ("env_get", json!({"name": "LANG"}), false),
            ("process_list", json!({"running_only": "true", "filter": "cargo"}), true),
            ("process_list", json!({"filter": null}), false),
            ("read_output", json!({"call_id": "c"}), true),
            (
                "read_output",
                json!({"call_id": "c", "part": "error", "offset": "3", "column": 0, "limit": 2000}),
                true,
            ),
            ("read_output", json!({"call_id": "c", "pattern": "^fn "}), true),
            ("read_output", json!({"part": "content"}), false),
            ("read_output", json!({"call_id": "c", "part": "body"}), false),
            ("read_output", json!({"call_id": "c", "offset": 0}), false),
            ("read_output", json!({"call_id": "c", "column": -1}), false),
            ("read_output", json!({"call_id": "c", "limit": 2001}), false),
            ("read_output", json!({"call_id": "c", "pattern": null}), false),
            ("run_tests", json!({}), true),
            ("run_tests", json!({"profile": "unit", "filter": "smoke"}), true),
            ("run_tests", json!({"profile": "other"}), false),
            ("run_tests", json!({"profile": "unit", "extra": true}), false),
        ];
        let tools = tools();
        for (name, args, valid) in cases {
            let spec = tools.iter().map(|t| t.spec()).find(|s| s.name == name).unwrap();
            let schema = ArgsSchema::compile(spec.parameters).unwrap();
            assert_eq!(schema.prepare(args.clone()).is_ok(), valid, "{name} {args}");
        }
    }
}
