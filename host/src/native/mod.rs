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
pub use read_output::READ_OUTPUT;
pub(crate) use read_output::ReadOutput;
pub(crate) use run_tests::RunTests;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::{CallError, codes};
use crate::host::Host;
use crate::spec::ToolSpec;

/// What a native tool returns on success.
pub(crate) struct NativeOutput {
    pub(crate) content: String,
    pub(crate) metadata: Option<Value>,
}

/// What a native tool knows about the call it runs.
#[derive(Clone, Copy)]
pub(crate) struct NativeCall<'a> {
    /// The call id.
    pub(crate) call_id: &'a str,
    /// The caller's cancellation.
    pub(crate) cancel: &'a CancellationToken,
    /// When the call's deadline passes: the executor stops the call there; a tool
    /// that waits on something (a child) ends it a little before, keeping what it has.
    pub(crate) deadline: std::time::Instant,
}

/// A tool implemented in the host. It runs on the caller's task; one that waits
/// (`run_tests`) must honour the call's cancellation.
pub(crate) trait NativeTool: Send + Sync {
    /// The tool's spec (computed once, at registration).
    fn spec(&self) -> ToolSpec;
    /// Whether its output is redacted like every tool's (granted values, secret
    /// shapes). Only `env_get` says no: showing granted values is what it is for,
    /// and it masks secret-looking ones itself.
    fn redacted(&self) -> bool {
        true
    }
    /// Run it with validated arguments.
    fn call<'a>(
        &'a self,
        host: &'a Host,
        args: Value,
        call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>>;
}

/// The arguments of a native tool, already validated against its schema, as its
/// `Args` type (`invalid_args` if they still do not fit).
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, CallError> {
    serde_json::from_value(args).map_err(|e| CallError::new(codes::INVALID_ARGS, e.to_string()))
}
