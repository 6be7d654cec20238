//! Tools the host implements itself, because they use host state rather than the
//! work dir: `read_output` (the output store), `run_tests` (the policy's test
//! profiles, run through the exec sandbox), `process_list` (the processes this host
//! started) and `env_get` (the variables granted to the builtins).
//!
//! Each tool holds what it needs as values, handed to it when the host is built.

mod env_get;
mod process_list;
mod read_output;
mod run_tests;

pub(crate) use env_get::EnvGet;
pub(crate) use process_list::ProcessList;
pub(crate) use read_output::ReadOutput;
pub(crate) use run_tests::RunTests;

use serde_json::Value;

use crate::error::{CallError, codes};
pub(crate) use crate::load::registry::{NativeCall, NativeOutput, NativeTool};

/// The arguments of a native tool, already validated against its schema, as its
/// `Args` type (`invalid_args` if they still do not fit).
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, CallError> {
    serde_json::from_value(args).map_err(|e| CallError::new(codes::INVALID_ARGS, e.to_string()))
}
