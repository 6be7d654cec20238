//! `process_list`: the processes this host started for tools — running ones, then
//! the last ones that ended — never anything else on the machine.

use std::fmt::Write as _;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NativeCall, NativeOutput, NativeTool};
use crate::error::CallError;
use crate::imports::exec::{ExecRuntime, ProcessState};
use crate::load::spec::ToolSpec;

/// The tool; it reads the runtime's process table.
pub(crate) struct ProcessList {
    pub(crate) runtime: Arc<ExecRuntime>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only the ones still running.
    #[serde(default)]
    running_only: bool,
    /// Only commands containing this text.
    filter: Option<String>,
}

impl NativeTool for ProcessList {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "process_list".into(),
            description: "List the processes that tools of this session started (through terminal, git, \
                run_tests or a plugin): pid, command, state (running, exited N, signaled N, timed_out, \
                cancelled) and how long each ran. Running ones first, then the last 50 that ended. Other \
                processes on the machine are never listed."
                .into(),
            parameters: super::args_schema::<Args>(),
            read_only: true,
            destructive: false,
            timeout_ms: None,
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(async move {
            let args: Args = super::parse_args(args)?;
            let procs: Vec<_> = self
                .runtime
                .processes()
                .into_iter()
                .filter(|p| !args.running_only || p.state == ProcessState::Running)
                .filter(|p| args.filter.as_deref().is_none_or(|f| p.command.contains(f)))
                .collect();
            let mut out = String::new();
            if procs.is_empty() {
                out.push_str("no processes started by tools match\n");
            }
            for p in &procs {
                let state = match &p.state {
                    ProcessState::Running => "running".to_string(),
                    ProcessState::Exited(code) => format!("exited {code}"),
                    ProcessState::Signaled(sig) => format!("signaled {sig}"),
                    ProcessState::TimedOut => "timed_out".into(),
                    ProcessState::Cancelled => "cancelled".into(),
                };
                let _ = writeln!(
                    out,
                    "{:>7}  {:<11} {:>8} ms  {}",
                    p.pid,
                    state,
                    p.runtime.as_millis(),
                    p.command
                );
            }
            let metadata = json!({"processes": procs});
            Ok(NativeOutput { content: out, metadata: Some(metadata) })
        })
    }
}
