//! A server's tool as the registry holds it ([`ServerTool`]): a call finds (or
//! starts) the instance it runs in, sends `tools/call` under the server's own
//! name for the tool, and turns the answer into the call's parts
//! (`super::adapt::result`). The executor runs it under the call's deadline and
//! cancellation: dropping the call cancels the request upstream.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::client::CallFailure;
use super::server::Server;
use crate::error::{CallError, codes};
use crate::load::registry::{NativeCall, ServerTool};
use crate::output::Parts;
use crate::policy::Redactor;

/// One tool of one server.
pub(crate) struct RemoteTool {
    pub(crate) server: Arc<Server>,
    /// The server's own name for it.
    pub(crate) remote: String,
    /// Runs in the read-only instance (when the server has one).
    pub(crate) read_only: bool,
    pub(crate) source: String,
    pub(crate) redactor: Arc<Redactor>,
    pub(crate) open_world: bool,
}

impl ServerTool for RemoteTool {
    fn source(&self) -> &str {
        &self.source
    }

    fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn open_world(&self) -> bool {
        self.open_world
    }

    fn call<'a>(&'a self, args: Value, _call: NativeCall<'a>) -> BoxFuture<'a, Result<Parts, CallError>> {
        Box::pin(async move {
            let instance = self.server.instance(self.read_only).await?;
            let args = match args {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            match instance.connection.call(&self.remote, args).await {
                Ok(answer) => super::adapt::result(answer),
                Err(CallFailure::Protocol(why)) => Err(CallError::new(
                    codes::TOOL_ERROR,
                    format!("MCP server `{}` answered with an error: {why}", self.server.name),
                )),
                Err(CallFailure::Gone) => {
                    let why = instance.why_gone().await;
                    Err(self.server.failed(format!(
                        "it stopped during the call: {why}. It is started again on the next call"
                    )))
                }
            }
        })
    }
}
