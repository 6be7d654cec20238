//! An MCP server over the host's tools, built on the official Rust SDK
//! (`rmcp`): `toolhost serve` runs it on stdio so any MCP client can call
//! every loaded tool.
//!
//! - `tools/list`: every registered tool, sorted by name, with its argument
//!   schema as `inputSchema`, the shared `outputSchema` and hints from its
//!   spec. The list is built from the host's registry and rebuilt when that
//!   changes: the policy's MCP servers are started at the first `tools/list`
//!   (or before, with `serve --eager`), and when one's tools change every
//!   client that finished `initialize` gets `notifications/tools/list_changed`.
//!   On a 2026-07-28 request a client opens `subscriptions/listen` with
//!   `toolsListChanged` instead and gets the same notifications on that stream.
//!   Plugins whose code the compile cache lacks are compiled in the background
//!   (`crate::call::late`): `initialize` is answered at once and their tools
//!   are listed, with the same notification, when they are ready.
//!   `tools.listChanged` is advertised only when servers are configured or
//!   plugins are compiling: otherwise the list never changes.
//! - `tools/call`: one [`Host::execute`]. A tool's failure (unknown tool, bad
//!   arguments, limits, cancellation) is a result with `isError: true` whose
//!   text starts with the error code, never a JSON-RPC error: the model reads
//!   it and can correct itself. `structuredContent` repeats the text
//!   (`super::result`).
//! - `notifications/cancelled` cancels the request's token, which stops the
//!   guest; the call ends `cancelled` (and rmcp drops the response).
//! - A request with a progress token gets `notifications/progress` every
//!   second while its call runs.
//! - A call the permissions answer with *ask* is asked of the client's user
//!   (`super::approve`): an `elicitation/create` on a 2025-11-25 session, an
//!   `InputRequiredResult` on 2026-07-28; a client that can't be asked gets a
//!   denial saying so.
//!
//! Each request runs in its own task and the [`Host`] is shared through an
//! [`Arc`], so calls run concurrently (bounded only by the host's slots).
//! stdout carries the protocol and nothing else: logs go to stderr.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig,
    ServerNotification, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::approve::Approvals;
use crate::call::executor::ToolCall;
use crate::call::host::Host;
use crate::load::spec::ToolSpec;

/// How often a running call reports progress (to requests that asked for it).
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// The one-sentence instructions sent with `initialize`.
const INSTRUCTIONS: &str = "Each tool runs in a fresh WebAssembly sandbox that sees only the work directory; \
a failed call's text starts with an error code (such as path_escape or timeout) that says what to fix.";

/// An [`rmcp::ServerHandler`] over a [`Host`]: serve it over any rmcp
/// transport (`ToolhostServer::new(host).serve(transport)` with
/// [`rmcp::ServiceExt`]), or use [`serve_stdio`](super::stdio::serve_stdio).
#[derive(Clone)]
pub struct ToolhostServer {
    host: Arc<Host>,
    tools: Arc<std::sync::Mutex<Listed>>,
    approvals: Approvals,
}

/// The MCP tool list, and the registry it was made from.
struct Listed {
    registry: Arc<crate::load::registry::Registry>,
    tools: Arc<[Tool]>,
}

/// The MCP tools of `registry`, sorted by name. A tool may reach outside the work
/// directory (`openWorldHint`) when its plugin holds a network grant (`wasi:sockets`
/// is refused at load, so fetch is the only way out) or its server may reach one.
fn listed(registry: Arc<crate::load::registry::Registry>) -> Listed {
    let tools =
        registry.iter().map(|tool| mcp_tool(tool.spec(), tool.open_world(), tool.output_schema())).collect();
    Listed { registry, tools }
}

impl ToolhostServer {
    /// A server for `host`'s tools, asking clients with
    /// [`Approvals::for_host`] (a key of this process's own).
    pub fn new(host: Arc<Host>) -> Self {
        let tools = Arc::new(std::sync::Mutex::new(listed(host.registry())));
        let approvals = Approvals::for_host(&host);
        Self { host, tools, approvals }
    }

    /// Ask clients' users as `approvals` says (a key shared by instances, a timeout).
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = approvals;
        self
    }

    /// The host the calls run on.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// The tools as MCP clients see them now, sorted by name.
    pub fn tools(&self) -> Arc<[Tool]> {
        let registry = self.host.registry();
        let mut cached = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        if !Arc::ptr_eq(&cached.registry, &registry) {
            *cached = listed(registry);
        }
        cached.tools.clone()
    }

    /// Run one call and turn its outcome into an MCP result; while it runs,
    /// report progress to `progress` when the request asked for it.
    async fn run(
        &self,
        call: ToolCall,
        progress: Option<(Peer<RoleServer>, ProgressToken)>,
    ) -> CallToolResult {
        let ticker = progress
            .map(|(peer, token)| AbortOnDrop(tokio::spawn(report_progress(peer, token, call.name.clone()))));
        let result = self.host.execute(call).await;
        drop(ticker);
        super::result::call_tool_result(result)
    }
}

/// The MCP view of one tool: name, description, `inputSchema`, the shared
/// `outputSchema` (for a typed-export tool, with its typed `metadata.result`:
/// `result`), and hints derived from its spec: read-only tools are
/// idempotent and not destructive; a tool that may overwrite or remove
/// (`write_file`, `edit_file`, `terminal`, `http_request`) is destructive, one
/// that only adds is not; network tools are open-world.
pub(crate) fn mcp_tool(spec: &ToolSpec, open_world: bool, result: Option<&Value>) -> Tool {
    let schema = match &spec.parameters {
        Value::Object(schema) => schema.clone(),
        // Specs are validated as object schemas at load; keep the protocol's
        // shape even so.
        _ => JsonObject::from_iter([("type".to_string(), Value::from("object"))]),
    };
    let annotations = ToolAnnotations::new()
        .read_only(spec.read_only)
        .destructive(spec.destructive && !spec.read_only)
        .idempotent(spec.read_only)
        .open_world(open_world);
    let mut tool = Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(schema))
        .with_annotations(annotations);
    tool.output_schema = Some(match result {
        Some(result) => Arc::new(super::result::typed_output_schema(result)),
        None => super::result::OUTPUT_SCHEMA.clone(),
    });
    tool
}

/// Send `notifications/progress` every [`PROGRESS_INTERVAL`] until aborted:
/// progress = whole seconds elapsed, message `running NAME (Ns)`.
async fn report_progress(peer: Peer<RoleServer>, token: ProgressToken, name: String) {
    let started = Instant::now();
    let mut ticks = tokio::time::interval_at((started + PROGRESS_INTERVAL).into(), PROGRESS_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticks.tick().await;
        let secs = started.elapsed().as_secs();
        let param = ProgressNotificationParam::new(token.clone(), secs as f64)
            .with_message(format!("running {name} ({secs}s)"));
        if let Err(error) = peer.notify_progress(param).await {
            tracing::debug!(%error, tool = %name, "could not send a progress notification");
            return;
        }
    }
}

/// Aborts a spawned task when dropped (the call ended, or was dropped).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl ServerHandler for ToolhostServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools();
        // Only the MCP servers' tools and the plugins compiling in the background
        // ever change the list.
        let capabilities = if self.host.tools_changed().is_some() {
            capabilities.enable_tool_list_changed().build()
        } else {
            capabilities.build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Forward the tool list's changes to this client until it is gone.
        let Some(mut changes) = self.host.tools_changed() else { return };
        let peer = context.peer;
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%error, "tools/list_changed not sent; the client is gone");
                    return;
                }
            }
        });
    }

    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // rmcp narrows this to what was requested and advertised.
        self.host.tools_changed().map(|_| SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // The servers' tool list changes reach a stream that asked for them until the
        // client cancels it; any other stream only waits for its end.
        let asked = subscription.accepted().tools_list_changed == Some(true);
        let Some(mut changes) = self.host.tools_changed().filter(|_| asked) else {
            subscription.cancelled().await;
            return Ok(());
        };
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        subscription.cancelled().await;
                        return Ok(());
                    }
                    let notification = ServerNotification::ToolListChangedNotification(Default::default());
                    if let Err(error) = subscription.sink().send(notification).await {
                        tracing::debug!(%error, "tools/list_changed not sent on a listen stream");
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The servers' tools are known once they run: start the ones not running.
        for (server, error) in self.host.start_servers().await {
            tracing::warn!(server, "MCP server not started: {error}");
        }
        Ok(ListToolsResult::with_all_items(self.tools().to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tools = self.tools();
        let index = tools.binary_search_by(|tool| tool.name.as_ref().cmp(name)).ok()?;
        Some(tools[index].clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let asking = self.approvals.asking(&self.host, &request, &context)?;
        let args = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(request.name.into_owned(), args)
            .with_cancel(context.ct.clone())
            .with_approver(asking.approver());
        let progress = context.meta.get_progress_token().map(|token| (context.peer.clone(), token));
        let result = self.run(call, progress).await;
        self.approvals.finish(&self.host, asking, result)
    }
}
