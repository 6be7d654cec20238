//! The executor: the one entry point for a call. It never fails and never
//! panics; every outcome is a [`ToolResult`].
//!
//! Order of a call: look the tool up (`unknown_tool`) → already cancelled?
//! (`cancelled`, nothing runs) → coerce and validate the arguments
//! (`invalid_args`) → pre-tool-use hooks (their deny is `permission_denied`; see
//! [`crate::hooks`]) → authorize (`permission_denied`, nothing runs; see
//! [`crate::call::authorize`]) → run in a fresh sandbox with the plugin's grants and
//! limits, under the merged deadline and cancellation → redact secrets → bound
//! the output (`output_limit`) → keep the full text of each part by call id →
//! shape a log by what it is, when the tool and the call allow it (see
//! [`crate::output::shape`]) → cut what the caller sees, head + tail (see
//! [`crate::output`]) → post-tool-use hooks (their context appended, bounded). A
//! failed result's message is kept and cut the same way, wherever it was made.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::authorize::PermissionNote;
use crate::call::host::Host;
use crate::error::{CallError, codes};
use crate::hooks::{HookCall, Outcome, Pre};
use crate::imports::Handed;
use crate::limits::{Deadline, Limits, WriteMeter};
use crate::load::plugin::Plugin;
use crate::load::registry::{NativeCall, Runner, Tool};
use crate::load::spec::ToolSpec;
use crate::output::{Image, Metadata, Omitted, Parts, ShapeCall, bound_error};
use crate::policy::{Approver, HookSays, Redactor};
use crate::sandbox::{self, StoreSpec};

/// A request to run one tool.
#[derive(Clone)]
pub struct ToolCall {
    /// The call id; a fresh one is made when `None`.
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments (a JSON object; `null` means none).
    pub args: Value,
    /// Cancels the call when triggered.
    pub cancel: CancellationToken,
    /// Answers this call's question when the permissions ask, instead of the
    /// host's approver (`None`: the host's).
    pub approver: Option<Arc<dyn Approver>>,
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("args", &self.args)
            .field("cancel", &self.cancel)
            .field("approver", &self.approver.as_ref().map(|_| "its own"))
            .finish()
    }
}

impl ToolCall {
    /// A call to `name` with `args`, a fresh id, no cancellation and the host's approver.
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        Self { id: None, name: name.into(), args, cancel: CancellationToken::new(), approver: None }
    }

    /// Ask `approver` when the permissions ask about this call (an MCP client's
    /// user, say), instead of the host's approver.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
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
    /// An image the tool returned (checked and bounded; serialized without its data).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    /// What the clamp cut from the middle of `output`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// A hook asked for the turn to stop here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub halt: bool,
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
    /// A failed result: `error`'s message kept in `host`'s output store and cut
    /// to `limits` (the one way a failed result is made).
    async fn failed(
        host: &Host,
        call_id: String,
        error: CallError,
        limits: &Limits,
        started: Instant,
    ) -> Self {
        Self::failed_shaped(host, call_id, error, limits, started, None).await
    }

    /// [`Self::failed`] for a call that ran: its message shaped when `shape`
    /// allows, what shaping did in the metadata.
    async fn failed_shaped(
        host: &Host,
        call_id: String,
        error: CallError,
        limits: &Limits,
        started: Instant,
        shape: Option<&ShapeCall>,
    ) -> Self {
        let (error, report) = bound_error(host.outputs(), &call_id, error, limits, shape).await;
        Self {
            call_id,
            ok: false,
            output: String::new(),
            error: Some(error),
            display: None,
            metadata: report.and_then(|r| r.annotate(None)),
            permission: None,
            image: None,
            omitted: None,
            halt: false,
            duration: started.elapsed(),
        }
    }

    fn with_permission(mut self, note: PermissionNote) -> Self {
        self.permission = Some(note);
        self
    }

    /// Append the hooks' `context` (each bounded already) to what the model reads,
    /// redacted like the host's own output.
    fn append_context(&mut self, context: &[String], redactor: &Redactor) {
        for text in context {
            self.output.push_str(if self.output.is_empty() { "[hook] " } else { "\n\n[hook] " });
            self.output.push_str(&redactor.redact(text));
        }
    }

    /// The error code, when the call failed.
    pub fn code(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.code.as_str())
    }
}

/// A call that passed lookup, validation, the pre-tool-use hooks and the
/// permissions: ready to run ([`Host::admit`], then [`Host::run_admitted`]).
pub(crate) struct Admitted<'h> {
    call_id: String,
    tool: Arc<Tool>,
    host: std::marker::PhantomData<&'h Host>,
    args: Value,
    cancel: CancellationToken,
    permission: PermissionNote,
    context: Vec<String>,
    started: Instant,
}

impl Host {
    /// Run one call. Never fails: unknown tools, bad arguments, traps, limits
    /// and cancellation all come back as a failed [`ToolResult`].
    pub async fn execute(&self, call: ToolCall) -> ToolResult {
        match self.admit(call).await {
            Ok(admitted) => self.run_admitted(admitted).await,
            Err(refused) => refused,
        }
    }

    /// The stages before a call runs: lookup → cancelled? → arguments → pre-tool-use
    /// hooks → authorize. `Err` is the refused call's result.
    pub(crate) async fn admit(&self, call: ToolCall) -> Result<Admitted<'_>, ToolResult> {
        let started = Instant::now();
        let call_id = call.id.unwrap_or_else(crate::call::ids::new_call_id);
        let host_limits = self.limits();
        let fail =
            |call_id: String, err: CallError| ToolResult::failed(self, call_id, err, host_limits, started);
        let tool = match self.lookup(&call.name).await {
            Ok(tool) => tool,
            Err(err) => return Err(fail(call_id, err).await),
        };
        if call.cancel.is_cancelled() {
            return Err(fail(call_id, CallError::new(codes::CANCELLED, "")).await);
        }
        let mut args = match tool.args().prepare(call.args) {
            Ok(args) => args,
            Err(err) => return Err(fail(call_id, err).await),
        };
        let mut pre = Pre::default();
        if !self.hooks.is_empty() {
            let hook_call = self.hook_call(&tool, &args, &call_id, &call.cancel);
            pre = self.hooks.pre(hook_call, &|updated| tool.args().prepare(updated)).await;
            if let Some(updated) = pre.updated.take() {
                args = updated;
            }
        }
        if let Some(reason) = pre.deny.take() {
            let mut note = PermissionNote::deny(reason.clone());
            note.hooks = pre.notes;
            let mut result =
                fail(call_id, CallError::new(codes::PERMISSION_DENIED, reason)).await.with_permission(note);
            result.halt = pre.halt;
            result.append_context(&pre.context, &self.native_redactor);
            return Err(result);
        }
        let says = pre.says.take().unwrap_or(HookSays::Nothing);
        let approver = call.approver.as_ref();
        let permission = match self.authorize(&call_id, &tool, &args, &says, approver, &call.cancel).await {
            Ok(mut note) => {
                note.hooks = pre.notes;
                note
            }
            Err((mut note, err)) => {
                note.hooks = pre.notes;
                return Err(fail(call_id, err).await.with_permission(note));
            }
        };
        Ok(Admitted {
            call_id,
            tool,
            host: std::marker::PhantomData,
            args,
            cancel: call.cancel,
            permission,
            context: pre.context,
            started,
        })
    }

    fn hook_call<'a>(
        &'a self,
        tool: &'a Tool,
        args: &'a Value,
        call_id: &'a str,
        cancel: &'a CancellationToken,
    ) -> HookCall<'a> {
        let mode = self.permissions.read().unwrap_or_else(|e| e.into_inner()).mode;
        HookCall { tool: &tool.spec().name, args, call_id, mode, cancel }
    }

    /// The stages after: run under the deadline and cancellation → redact → bound →
    /// store → clamp → post-tool-use hooks.
    pub(crate) async fn run_admitted(&self, admitted: Admitted<'_>) -> ToolResult {
        let Admitted { call_id, tool, args, cancel, permission, context, started, .. } = admitted;
        let tool = &*tool;
        let ticket = match self.journal_begin(&call_id, tool, &args) {
            Ok(ticket) => ticket,
            Err(err) => {
                let mut result = ToolResult::failed(self, call_id, err, self.limits(), started)
                    .await
                    .with_permission(permission);
                result.append_context(&context, &self.native_redactor);
                return result;
            }
        };
        let (mut result, written) = self.run(&call_id, tool, &args, &cancel, permission, started).await;
        if let (Some(journal), Some(ticket)) = (&self.journal, ticket)
            && let Err(e) = journal.settle(ticket, result.code(), written)
        {
            // The call ran; only its settle is missing, so it reads as indeterminate.
            tracing::warn!("effect journal: the settle of {call_id} was not written: {e}");
        }
        let mut context = context;
        if !self.hooks.is_empty() {
            let outcome = Outcome { ok: result.ok, output: &result.output, error: result.error.as_ref() };
            let post = self.hooks.post(self.hook_call(tool, &args, &call_id, &cancel), outcome).await;
            context.extend(post.context);
            result.halt |= post.halt;
            if let Some(note) = &mut result.permission {
                note.hooks.extend(post.notes);
            }
        }
        result.append_context(&context, &self.native_redactor);
        result.duration = started.elapsed();
        result
    }

    /// Write the `begin` record of a call that may change something, durably,
    /// before it runs (`None`: read-only, or no journal).
    fn journal_begin(
        &self,
        call_id: &str,
        tool: &Tool,
        args: &Value,
    ) -> Result<Option<crate::journal::Ticket>, CallError> {
        let Some(journal) = &self.journal else { return Ok(None) };
        if tool.spec().read_only {
            return Ok(None);
        }
        let text = args.to_string();
        let redactor = tool.redactor().unwrap_or(&self.native_redactor);
        let preview = self.native_redactor.redact(&redactor.redact(&text)).into_owned();
        journal.begin(call_id, &tool.spec().name, &text, args, &preview).map(Some).map_err(|e| {
            CallError::new(
                codes::JOURNAL_FAILED,
                format!("the call was not run: its record could not be written: {e}"),
            )
        })
    }

    async fn run(
        &self,
        call_id: &str,
        tool: &Tool,
        args: &Value,
        cancel: &CancellationToken,
        permission: PermissionNote,
        started: Instant,
    ) -> (ToolResult, Option<u64>) {
        let call_id = call_id.to_string();
        // What a component's call wrote to files (a native tool's is not counted).
        let mut written = None;
        let host_limits = self.limits();
        let (run, limits, redactor): (_, _, Option<&Redactor>) = match tool.runner() {
            Runner::Native(native) => {
                // The same deadline and cancellation as a component's call.
                let deadline = Deadline::after(host_limits.deadline_for(tool.spec().timeout_ms));
                let ctx = NativeCall { call_id: &call_id, cancel, deadline: deadline.at };
                let out = within(cancel, &deadline, native.call(args.clone(), ctx)).await;
                let parts = out.map(|out| Parts {
                    content: out.content,
                    display: None,
                    metadata: out.metadata.map(Metadata::Value),
                });
                let redactor = native.redacted().then_some(&self.native_redactor);
                let parts = match redactor {
                    Some(r) => parts.map_err(|e| redact_error(r, e)).map(|out| redact(r, out)),
                    None => parts,
                };
                (parts, host_limits, redactor)
            }
            Runner::Server(server) => {
                // Like a native tool's: the caller's task, the same deadline and
                // cancellation; dropping the call cancels it upstream.
                let deadline = Deadline::after(host_limits.deadline_for(tool.spec().timeout_ms));
                let ctx = NativeCall { call_id: &call_id, cancel, deadline: deadline.at };
                let out = within(cancel, &deadline, server.call(args.clone(), ctx)).await;
                let redactor = server.redactor();
                let parts = out.map_err(|e| redact_error(redactor, e)).map(|out| redact(redactor, out));
                (parts, host_limits, Some(redactor))
            }
            Runner::Wasm(plugin) | Runner::Typed(plugin, _) => {
                let quota = Arc::new(WriteMeter::new(plugin.limits().write_bytes));
                let out = match tool.runner() {
                    Runner::Typed(_, index) => {
                        self.run_typed((plugin, *index), tool.spec(), args, &call_id, cancel, &quota).await
                    }
                    _ => self.run_wasm(plugin, tool.spec(), args, &call_id, cancel, &quota).await,
                };
                written = Some(quota.used());
                let redactor = plugin.redactor();
                let parts = out.map_err(|e| redact_error(redactor, e)).map(|out| redact(redactor, out));
                (parts, plugin.limits(), Some(redactor))
            }
        };
        let shape = ShapeCall::for_call(self.shape_output, &tool.spec().parameters, args);
        let shape = shape.as_ref();
        let bounded = match run {
            Ok(parts) if parts.size() > limits.output_bytes => Err(CallError::new(
                codes::OUTPUT_LIMIT,
                format!(
                    "the tool returned {} bytes; the limit is {} bytes",
                    parts.size(),
                    limits.output_bytes
                ),
            )),
            Ok(parts) => parts.bound(self.outputs(), &call_id, limits, redactor, shape).await,
            Err(err) => Err(err),
        };
        let result = match bounded {
            Ok(out) => ToolResult {
                call_id,
                ok: true,
                output: out.output,
                error: None,
                display: out.display,
                metadata: out.metadata,
                permission: Some(permission),
                image: out.image,
                omitted: out.omitted,
                halt: false,
                duration: started.elapsed(),
            },
            Err(err) => ToolResult::failed_shaped(self, call_id, err, limits, started, shape)
                .await
                .with_permission(permission),
        };
        (result, written)
    }

    /// Run function `index` of the typed-export component `plugin` in a fresh sandbox, as
    /// [`Self::run_wasm`] runs a listed tool: the arguments converted to its values
    /// (`invalid_args`), the result rendered (a `result`'s error is `tool_error`), a
    /// typed value kept as the metadata's `result`.
    async fn run_typed(
        &self,
        (plugin, index): (&Plugin, usize),
        tool: &ToolSpec,
        args: &Value,
        call_id: &str,
        cancel: &CancellationToken,
        quota: &Arc<WriteMeter>,
    ) -> Result<Parts, CallError> {
        let (Some(func), crate::load::plugin::Exports::Typed(slot, _)) =
            (plugin.typed_func(index), plugin.exports())
        else {
            return Err(CallError::new(codes::HOST_ERROR, "not a typed-export tool"));
        };
        let params = crate::load::typed::convert::args(&func.params, args)
            .map_err(|why| CallError::new(codes::INVALID_ARGS, why))?;
        let returns = func.result.is_some();
        let result = self
            .in_sandbox(plugin, tool, call_id, cancel, quota, |spec| async move {
                let typed = slot.current();
                let Some(export) = typed.exports.get(index) else {
                    return Err(CallError::new(codes::HOST_ERROR, "not a typed-export tool"));
                };
                sandbox::run_typed(&typed.prepared, spec, export, &params, returns, cancel).await
            })
            .await?;
        let rendered = crate::load::typed::render(result)?;
        let metadata =
            rendered.value.map(|value| Metadata::Text(serde_json::json!({ "result": value }).to_string()));
        Ok(Parts { content: rendered.text, display: None, metadata })
    }

    /// Run a component's tool in a fresh sandbox: the work dir (read-only
    /// for read-only tools), the limits, the merged deadline and cancellation.
    async fn run_wasm(
        &self,
        plugin: &Plugin,
        tool: &ToolSpec,
        args: &Value,
        call_id: &str,
        cancel: &CancellationToken,
        quota: &Arc<WriteMeter>,
    ) -> Result<Parts, CallError> {
        let crate::load::plugin::Exports::Tools(slot) = plugin.exports() else {
            return Err(CallError::new(codes::HOST_ERROR, "not a toolhost:plugin tool"));
        };
        let args_json = args.to_string();
        let output = self
            .in_sandbox(plugin, tool, call_id, cancel, quota, |spec| async move {
                sandbox::run(&slot.current(), spec, &tool.name, &args_json, cancel).await
            })
            .await?;
        // The metadata stays text here: it is bounded before anything parses it.
        let metadata = output.metadata.map(Metadata::Text);
        Ok(Parts { content: output.content, display: output.display, metadata })
    }

    /// What every component call shares: wait for an instance slot (cancellation
    /// ends the wait too), build the call's [`StoreSpec`] (the work dir, read-only for
    /// read-only tools; the plugin's network and exec access; its limits and the
    /// tool's deadline), `run` with it, then answer for what happened around the
    /// guest before its own result: a protected path a child changed (undone where
    /// it could be: `permission_denied`), a write the quota stopped (`write_quota`,
    /// whatever the guest made of the error).
    async fn in_sandbox<'a, T, F>(
        &'a self,
        plugin: &'a Plugin,
        tool: &ToolSpec,
        call_id: &'a str,
        cancel: &CancellationToken,
        quota: &Arc<WriteMeter>,
        run: impl FnOnce(StoreSpec<'a>) -> F,
    ) -> Result<T, CallError>
    where
        F: std::future::Future<Output = Result<T, CallError>>,
    {
        let limits = plugin.limits();
        let _slot = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(CallError::new(codes::CANCELLED, "")),
            slot = self.call_slot() => slot,
        };
        let exec = self.exec_access(plugin, cancel, quota);
        let tampering = exec.as_ref().map(crate::imports::exec::ExecAccess::tampering);
        let handed = Handed {
            fs: plugin.fs_access(self.work_dir(), !tool.read_only),
            net: self.net_access(plugin),
            exec,
            fs_guard: self.fs_guard(quota),
        };
        let spec = StoreSpec {
            call_id,
            handed,
            limits,
            deadline: Deadline::after(limits.deadline_for(tool.timeout_ms)),
        };
        let result = run(spec).await;
        if let Some(why) = tampering.and_then(|t| t.take()) {
            return Err(CallError::new(codes::PERMISSION_DENIED, why));
        }
        if quota.tripped() {
            return Err(crate::limits::quota_exceeded(quota));
        }
        result
    }
}

/// The `unknown_tool` error for `name`: named whole when it could be a tool's name,
/// else by its length and start.
pub(crate) fn unknown_tool(name: &str) -> CallError {
    const SHOWN: usize = crate::load::spec::MAX_NAME_BYTES;
    if name.len() <= SHOWN {
        return CallError::new(codes::UNKNOWN_TOOL, name);
    }
    let end = name.floor_char_boundary(SHOWN);
    CallError::new(
        codes::UNKNOWN_TOOL,
        format!(
            "no tool has a {}-byte name (names are at most {SHOWN} bytes); it starts {:?}",
            name.len(),
            &name[..end]
        ),
    )
}

/// `output`'s content and display with the plugin's secrets redacted (its
/// metadata is redacted when it is bounded).
fn redact(redactor: &Redactor, mut output: Parts) -> Parts {
    if let std::borrow::Cow::Owned(text) = redactor.redact(&output.content) {
        output.content = text;
    }
    if let Some(display) = &mut output.display
        && let std::borrow::Cow::Owned(text) = redactor.redact(display)
    {
        *display = text;
    }
    output
}

fn redact_error(redactor: &Redactor, mut err: CallError) -> CallError {
    if let std::borrow::Cow::Owned(text) = redactor.redact(&err.message) {
        err.message = text;
    }
    err
}

/// `call` bounded as every call is: it ends `cancelled` when `cancel` fires and
/// `timeout` at `deadline`, whichever comes first (a native or server tool runs on
/// the caller's task; a component's call has its own epoch deadline as well).
async fn within<T>(
    cancel: &CancellationToken,
    deadline: &Deadline,
    call: impl std::future::Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    // The call before the timer, as in `sandbox::bounded`: one that ends in its
    // first poll never registers the timer.
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(CallError::new(codes::CANCELLED, "")),
        out = call => out,
        _ = tokio::time::sleep_until(deadline.at.into()) => Err(deadline.exceeded()),
    }
}
