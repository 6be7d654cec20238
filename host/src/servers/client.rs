//! The host as an MCP client of one server instance (rmcp's client role): over
//! the child's stdin and stdout, or over Streamable HTTP through the pinned
//! client (`super::http`). A server's `notifications/tools/list_changed` reaches
//! [`Listener::changed`]; a `tools/call` dropped before its answer (the call's
//! deadline or cancellation) sends `notifications/cancelled` upstream (rmcp's
//! `call_tool_once` does, on drop).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

/// What the host does when a server says its tools changed.
pub(crate) type OnChange = Arc<dyn Fn() + Send + Sync>;

/// The client side of one connection: who to tell about list changes.
#[derive(Clone)]
pub(crate) struct Listener {
    changed: OnChange,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        (self.changed)();
        std::future::ready(())
    }
}

/// An initialized MCP session with one server instance.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Listener>,
}

impl Connection {
    /// Initialize a session over `transport`; `changed` runs on every
    /// `notifications/tools/list_changed`.
    pub(crate) async fn open<T, E, A>(transport: T, changed: OnChange) -> Result<Self, String>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = Listener { changed }.serve(transport).await.map_err(|e| format!("initialize: {e}"))?;
        Ok(Self { service })
    }

    /// Every tool it lists (all pages).
    pub(crate) async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, String> {
        self.service.peer().list_all_tools().await.map_err(|e| format!("tools/list: {e}"))
    }

    /// Call `tool` with `args` (an object). Dropping the future before the answer
    /// cancels the request upstream.
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, CallFailure> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        match self.service.peer().call_tool_once(params).await {
            Ok(CallToolResponse::Complete(result)) => Ok(result),
            Ok(_) => Err(CallFailure::Protocol(
                "the server asked for more input or made a task; toolhost takes only complete results".into(),
            )),
            Err(rmcp::ServiceError::McpError(e)) => {
                Err(CallFailure::Protocol(format!("{} ({})", e.message, e.code.0)))
            }
            Err(rmcp::ServiceError::TransportClosed) | Err(rmcp::ServiceError::TransportSend(_)) => {
                Err(CallFailure::Gone)
            }
            Err(e) => Err(CallFailure::Protocol(e.to_string())),
        }
    }

    /// Whether the session has ended (the stream closed, or it was stopped).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// End the session.
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}

/// Why a call got no result.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The server answered with a JSON-RPC error, or something the host does not take.
    Protocol(String),
    /// The connection ended before the answer (the server exited, or broke its stream).
    Gone,
}
