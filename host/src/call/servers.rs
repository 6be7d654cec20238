//! The host's MCP servers (`crate::servers`) as seen from the calls: their tools
//! join the registry as they are listed, a call naming an unlisted server's tool
//! starts that server first, and whoever serves the tools learns when they change.

use std::sync::Arc;

use crate::call::host::Host;
use crate::error::CallError;
use crate::load::registry::{Registry, Tool};
use crate::servers::ServerReport;

impl Host {
    /// The registry with the servers' tools as listed now; rebuilt from the base
    /// registry when a server's list changed since.
    pub(crate) fn current_registry(&self) -> Arc<Registry> {
        let (made_at, registry) = self.registry.read().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(servers) = &self.servers else { return registry };
        let version = servers.version();
        if version == made_at {
            return registry;
        }
        let mut fresh = (*self.base).clone();
        let mut tools = servers.tools();
        if let Some(allow) = &self.allow {
            tools.retain(|(spec, _)| allow.contains(&spec.name));
        }
        for (name, why) in fresh.register_servers(tools) {
            tracing::warn!(tool = %name, "an MCP server's tool is left out: {why}");
        }
        let fresh = Arc::new(fresh);
        let mut slot = self.registry.write().unwrap_or_else(|e| e.into_inner());
        // Another call may have rebuilt it meanwhile, at the same or a later version.
        if slot.0 < version || slot.0 == made_at {
            *slot = (version, fresh.clone());
        }
        slot.1.clone()
    }

    /// The tool called `name`; for `mcp__SERVER__…` of a server not started yet,
    /// after starting it (its start's failure is the call's: `server_failed`).
    pub(crate) async fn lookup(&self, name: &str) -> Result<Arc<Tool>, CallError> {
        if let Some(tool) = self.registry().get(name) {
            return Ok(tool.clone());
        }
        let Some(servers) = &self.servers else { return Err(unknown(name)) };
        for server in servers.unlisted_for(name) {
            servers.start(&server).await?;
            if let Some(tool) = self.registry().get(name) {
                return Ok(tool.clone());
            }
        }
        Err(unknown(name))
    }

    /// Start every MCP server that is not running yet (what `serve --eager` does
    /// first, and what a listing of every tool needs): the servers that could not
    /// be started, with why. Their tools are in the registry afterwards.
    pub async fn start_servers(&self) -> Vec<(String, CallError)> {
        match &self.servers {
            Some(servers) => servers.start_all().await,
            None => Vec::new(),
        }
    }

    /// Whether the policy names MCP servers.
    pub fn has_servers(&self) -> bool {
        self.servers.as_ref().is_some_and(|s| !s.is_empty())
    }

    /// What the MCP server `name` offers and how it is confined, after trying to
    /// start it (`None`: the policy names no such server).
    pub async fn server_report(&self, name: &str) -> Option<ServerReport> {
        self.servers.as_ref()?.report(name).await
    }

    /// A receiver that changes whenever an MCP server's tool list changes (`serve`
    /// sends `notifications/tools/list_changed`); `None` without servers.
    pub fn tools_changed(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.servers.as_ref().map(|s| s.subscribe())
    }
}

/// The `unknown_tool` error for `name`.
fn unknown(name: &str) -> CallError {
    crate::call::executor::unknown_tool(name)
}
