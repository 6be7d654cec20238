//! The tools that join after the build, as seen from the calls: the MCP servers'
//! (`crate::servers`) as they are listed, a call naming an unlisted server's tool
//! starting that server first, and the plugins compiled in the background
//! (`super::late`), a call naming a tool nobody has yet waiting for them. Whoever
//! serves the tools learns when they change.

use std::sync::Arc;

use crate::call::host::Host;
use crate::error::CallError;
use crate::load::registry::{Registry, Tool};
use crate::servers::ServerReport;

impl Host {
    /// The registry with the late plugins and the servers' tools as they are now;
    /// rebuilt from the base registry when either changed since.
    pub(crate) fn current_registry(&self) -> Arc<Registry> {
        let (made_at, registry) = self.registry.read().unwrap_or_else(|e| e.into_inner()).clone();
        // Moved on after each change is in place (a plugin loaded, a server's list).
        let version = self.tools_version.as_ref().map_or(0, |v| *v.borrow());
        if version == made_at {
            return registry;
        }
        let mut fresh = (*self.base).clone();
        if let Some(late) = &self.late {
            late.register_into(&mut fresh);
        }
        if let Some(servers) = &self.servers {
            let mut tools = servers.tools();
            if let Some(allow) = &self.allow {
                tools.retain(|(spec, _)| allow.contains(&spec.name));
            }
            for (name, why) in fresh.register_servers(tools) {
                tracing::warn!(tool = %name, "an MCP server's tool is left out: {why}");
            }
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
        let Some(servers) = &self.servers else { return self.unknown_after_loads(name).await };
        for server in servers.unlisted_for(name) {
            servers.start(&server).await?;
            if let Some(tool) = self.registry().get(name) {
                return Ok(tool.clone());
            }
        }
        self.unknown_after_loads(name).await
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

    /// A receiver that changes whenever the tool list may have changed: a plugin
    /// compiled in the background loaded, an MCP server's tool list changed (`serve`
    /// sends `notifications/tools/list_changed`); `None` when the list never changes.
    pub fn tools_changed(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.tools_version.as_ref().map(|v| v.subscribe())
    }
}

impl Host {
    /// Wait until every plugin compiling in the background has loaded or failed;
    /// the ones that failed, and why (empty when nothing was loading).
    pub async fn plugins_settled(&self) -> Vec<(String, String)> {
        match &self.late {
            Some(late) => {
                late.settled().await;
                late.failures()
            }
            None => Vec::new(),
        }
    }

    /// `unknown_tool` for `name`, after the plugins still loading have settled (the
    /// tool may be theirs); it names the plugins that failed to load.
    pub(crate) async fn unknown_after_loads(&self, name: &str) -> Result<Arc<Tool>, CallError> {
        let Some(late) = &self.late else { return Err(crate::call::executor::unknown_tool(name)) };
        if late.settled().await
            && let Some(tool) = self.registry().get(name)
        {
            return Ok(tool.clone());
        }
        let mut err = crate::call::executor::unknown_tool(name);
        let failures = late.failures();
        if !failures.is_empty() {
            let names: Vec<&str> = failures.iter().map(|(plugin, _)| plugin.as_str()).collect();
            err.message.push_str(&format!(
                " (plugins that failed to load: {}; see the host's log)",
                names.join(", ")
            ));
        }
        Err(err)
    }
}
