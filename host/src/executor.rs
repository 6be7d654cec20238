//! The executor: the one entry point for a call. It never fails and never
//! panics; every outcome is a [`ToolResult`].
//!
//! Order of a call: look the tool up (`unknown_tool`) → already cancelled?
//! (`cancelled`, nothing runs) → coerce and validate the arguments
//! (`invalid_args`) → authorize (`permission_denied`, nothing runs; see
//! [`crate::authorize`]) → run in a fresh sandbox with the plugin's grants and
//! limits, under the merged deadline and cancellation → redact secrets → bound
//! the output (`output_limit`) → keep the full output by call id → clamp what
//! the model reads, head + tail.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::authorize::PermissionNote;
use crate::error::{CallError, codes};
use crate::host::Host;
use crate::output::{Omitted, clamp};
use crate::plugin::Plugin;
use crate::registry::Runner;
use crate::sandbox::{self, CallSpec};
use crate::spec::ToolSpec;

/// A request to run one tool.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The call id; a fresh one is made when `None`.
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments (a JSON object; `null` means none).
    pub args: Value,
    /// Cancels the call when triggered.
    pub cancel: CancellationToken,
}

impl ToolCall {
    /// A call to `name` with `args`, a fresh id and no cancellation.
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        Self { id: None, name: name.into(), args, cancel: CancellationToken::new() }
    }

    /// Use `id` as the call id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Cancel the call through `token`.
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }
}

/// The outcome of one call.
#[derive(Debug, Clone, Serialize)]
pub struct ToolResult {
    /// The call id (the full output is kept under it).
    pub call_id: String,
    /// True when the tool succeeded.
    pub ok: bool,
    /// What the model reads (clamped head + tail when long).
    pub output: String,
    /// Why it failed, when it did.
    #[serde(serialize_with = "error_text")]
    pub error: Option<CallError>,
    /// Richer text for a UI.
    pub display: Option<String>,
    /// Structured facts from the tool.
    pub metadata: Option<Value>,
    /// What the permissions decided, and why (absent when the call failed before).
    pub permission: Option<PermissionNote>,
    /// What the clamp cut from the middle of `output`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// Wall time of the call.
    #[serde(skip)]
    pub duration: Duration,
}

fn error_text<S: serde::Serializer>(error: &Option<CallError>, s: S) -> Result<S::Ok, S::Error> {
    match error {
        Some(e) => s.serialize_str(&e.to_string()),
        None => s.serialize_none(),
    }
}

impl ToolResult {
    fn failed(call_id: String, error: CallError, started: Instant) -> Self {
        Self {
            call_id,
            ok: false,
            output: String::new(),
            error: Some(error),
            display: None,
            metadata: None,
            permission: None,
            omitted: None,
            duration: started.elapsed(),
        }
    }

    fn with_permission(mut self, note: PermissionNote) -> Self {
        self.permission = Some(note);
        self
    }

    /// The error code, when the call failed.
    pub fn code(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.code.as_str())
    }
}

/// A successful run, before the output budgets apply.
struct RawOutput {
    content: String,
    display: Option<String>,
    metadata: Option<Value>,
}

impl Host {
    /// Run one call. Never fails: unknown tools, bad arguments, traps, limits
    /// and cancellation all come back as a failed [`ToolResult`].
    pub async fn execute(&self, call: ToolCall) -> ToolResult {
        let started = Instant::now();
        let call_id = call.id.unwrap_or_else(crate::ids::new_call_id);
        let Some(tool) = self.registry().get(&call.name) else {
            return ToolResult::failed(call_id, CallError::new(codes::UNKNOWN_TOOL, call.name), started);
        };
        if call.cancel.is_cancelled() {
            return ToolResult::failed(call_id, CallError::new(codes::CANCELLED, ""), started);
        }
        let args = match tool.args().prepare(call.args) {
            Ok(args) => args,
            Err(err) => return ToolResult::failed(call_id, err, started),
        };
        let permission = match self.authorize(&call_id, tool, &args, &call.cancel).await {
            Ok(note) => note,
            Err((note, err)) => return ToolResult::failed(call_id, err, started).with_permission(note),
        };
        let (run, limits) = match tool.runner() {
            Runner::Native(native) => {
                let ctx = crate::native::NativeCall { call_id: &call_id, cancel: &call.cancel };
                let out = native.call(self, args, ctx).await;
                (
                    out.map(|out| RawOutput { content: out.content, display: None, metadata: out.metadata }),
                    self.limits(),
                )
            }
            Runner::Wasm(plugin) => {
                let out = self.run_wasm(plugin, tool.spec(), &args, &call_id, &call.cancel).await;
                (out.map_err(|e| redact_error(plugin, e)).map(|out| redact(plugin, out)), plugin.limits())
            }
        };
        let output = match run {
            Ok(output) => output,
            Err(err) => return ToolResult::failed(call_id, err, started).with_permission(permission),
        };

        let size = output.content.len() + output.display.as_ref().map_or(0, String::len);
        if size > limits.output_bytes {
            let err = CallError::new(
                codes::OUTPUT_LIMIT,
                format!("the tool returned {size} bytes; the limit is {} bytes", limits.output_bytes),
            );
            return ToolResult::failed(call_id, err, started).with_permission(permission);
        }
        let (text, omitted) = clamp(&output.content, limits.clamp_bytes, &call_id);
        self.outputs().put(&call_id, Arc::from(output.content));
        ToolResult {
            call_id,
            ok: true,
            output: text,
            error: None,
            display: output.display,
            metadata: output.metadata,
            permission: Some(permission),
            omitted,
            duration: started.elapsed(),
        }
    }

    /// Run a component's tool in a fresh sandbox: the work dir (read-only
    /// for read-only tools), the limits, the merged deadline and cancellation.
    async fn run_wasm(
        &self,
        plugin: &Plugin,
        spec: &ToolSpec,
        args: &Value,
        call_id: &str,
        cancel: &CancellationToken,
    ) -> Result<RawOutput, CallError> {
        let limits = plugin.limits();
        let fs = plugin.fs_grant(self.work_dir(), !spec.read_only);
        let args_json = args.to_string();
        // Waiting for a free instance slot is part of the call: cancellation
        // ends the wait too.
        let _slot = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(CallError::new(codes::CANCELLED, "")),
            slot = self.call_slot() => slot,
        };
        let exec = self.exec_access(plugin, cancel);
        let tampering = exec.as_ref().map(crate::exec::ExecAccess::tampering);
        let output = sandbox::run(
            plugin,
            CallSpec {
                tool: &spec.name,
                args_json: &args_json,
                call_id,
                fs: &fs,
                limits,
                deadline: limits.deadline_for(spec.timeout_ms),
                cancel,
                net: self.net_access(plugin),
                exec,
            },
        )
        .await;
        // A plugin that could write the work dir may have written the policy file.
        if fs.writable
            && let Some(guard) = &self.policy_guard
            && let Err(why) = guard.check()
        {
            return Err(CallError::new(codes::PERMISSION_DENIED, why));
        }
        // A child changed a protected path (undone where it could be).
        if let Some(why) = tampering.and_then(|t| t.take()) {
            return Err(CallError::new(codes::PERMISSION_DENIED, why));
        }
        let output = output?;
        let metadata = match output.metadata.as_deref().map(serde_json::from_str::<Value>) {
            None => None,
            Some(Ok(value)) => Some(value),
            Some(Err(e)) => {
                return Err(CallError::new(
                    codes::BAD_OUTPUT,
                    format!("the tool's metadata is not JSON: {e}"),
                ));
            }
        };
        Ok(RawOutput { content: output.content, display: output.display, metadata })
    }
}

/// `output` with the plugin's secrets redacted.
fn redact(plugin: &Plugin, mut output: RawOutput) -> RawOutput {
    let redactor = plugin.redactor();
    if let std::borrow::Cow::Owned(text) = redactor.redact(&output.content) {
        output.content = text;
    }
    if let Some(display) = &mut output.display
        && let std::borrow::Cow::Owned(text) = redactor.redact(display)
    {
        *display = text;
    }
    if let Some(metadata) = &mut output.metadata {
        redactor.redact_json(metadata);
    }
    output
}

fn redact_error(plugin: &Plugin, mut err: CallError) -> CallError {
    if let std::borrow::Cow::Owned(text) = plugin.redactor().redact(&err.message) {
        err.message = text;
    }
    err
}
