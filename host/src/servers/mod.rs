//! MCP servers as tool sources: the `[servers.NAME]` entries of the policy, their
//! tools offered as `mcp__NAME__TOOL` beside the builtins and plugins, every call
//! through the same pipeline (arguments, hooks, permissions, deadline and
//! cancellation, redaction, the output bounds and store, the clamp).
//!
//! A stdio server is an untrusted program, so it runs **through the exec
//! confinement** `terminal`'s children get (`confine`, as a resident child):
//! its own root holding the system dirs, its `read-dirs` and the work dir as its
//! entry grants it (none, read-only, read-write), Landlock, new user and network
//! namespaces (no network at all unless its entry lists hosts; then only through
//! its proxy, `proxy`, which vets every target like the pinned fetch), seccomp,
//! rlimits, a pids cgroup, and an environment holding only what its entry grants.
//! An HTTP server is reached only through the pinned client (`http`).
//!
//! Stages: entries are resolved once, at host build ([`Servers::new`]: nothing
//! starts); a server starts when its tools are first needed, or eagerly
//! ([`Servers::start_all`]); restarts follow failures with a back-off; everything
//! stops when the host is dropped.
//!
//! Modules: `names` (tool names), `adapt` (tools and results in the host's terms),
//! `launch` (a stdio entry resolved, and each start's identity check), `pin` (its
//! package walked and hashed whole, the kept file lists), `streams`
//! (stdout bounded, stderr to the log), `proxy`, `client` (the MCP session),
//! `http` (Streamable HTTP over the pinned client), `instance` (one running
//! instance), `server` (instances, restarts, the tool list), `tool` (what the
//! registry runs).

mod adapt;
mod client;
mod http;
mod instance;
mod launch;
mod names;
pub(crate) mod pin;
mod proxy;
mod server;
mod streams;
mod tool;

use std::sync::Arc;

pub use adapt::Refused;
pub(crate) use launch::HostSide;
pub use launch::{entry_file, find_program, sha256_file};
pub(crate) use names::PREFIX as TOOL_PREFIX;

use crate::error::CallError;
use crate::imports::exec::ExecRuntime;
use crate::imports::fetch::FetchClient;
use crate::load::registry::ServerTool;
use crate::load::spec::ToolSpec;
use crate::policy::Redactor;
use crate::policy::servers::{ServerEntry, ServerTransport};
use server::Server;

/// How a server is reached, resolved.
pub(crate) enum Kind {
    /// A confined child over stdio.
    Stdio(Box<launch::Launch>),
    /// Streamable HTTP through the pinned client.
    Http(http::Remote),
    /// An entry that cannot start here (its program is missing, say): why.
    Broken(String),
}

/// What every server of a host shares.
pub(crate) struct Context {
    pub(crate) exec: Arc<ExecRuntime>,
    pub(crate) fetch: Arc<FetchClient>,
    /// The longest message a server may send (its stdout line, its HTTP body).
    pub(crate) max_message: usize,
    /// Bumped whenever a server's tool list changes.
    pub(crate) version: tokio::sync::watch::Sender<u64>,
}

/// What `toolhost inspect --server` shows of one server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerReport {
    /// Its name.
    pub name: String,
    /// `stdio: COMMAND` or `http: URL`.
    pub transport: String,
    /// What confines it, in words.
    pub sandbox: Vec<String>,
    /// Its tools (host names, with the server's own).
    pub tools: Vec<ReportedTool>,
    /// The tools left out, and why.
    pub refused: Vec<Refused>,
    /// Why it could not be started, if it could not.
    pub error: Option<String>,
}

/// One tool in a [`ServerReport`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReportedTool {
    /// The host's spec.
    pub spec: ToolSpec,
    /// The server's own name for it.
    pub remote: String,
    /// Which instance runs it: `main`, or `read-only` (a writing server's twin).
    pub instance: &'static str,
}

/// One server with what its tools share.
struct Entry {
    server: Arc<Server>,
    /// Removes the values its entry grants from its results.
    redactor: Arc<Redactor>,
    /// Whether it may reach a network (its tools are open-world).
    open_world: bool,
    /// The default deadline of its calls (`limits.timeout-ms`).
    timeout_ms: Option<u32>,
}

/// The servers of one host.
pub(crate) struct Servers {
    servers: Vec<Entry>,
}

impl Servers {
    /// Resolve `entries` (nothing starts). An entry that cannot be resolved here is
    /// kept: its calls fail `server_failed` saying why. `version` is the host's tool
    /// version, moved on with every change of a server's list.
    pub(crate) fn new(
        entries: &[ServerEntry],
        host: &HostSide,
        exec: Arc<ExecRuntime>,
        fetch: Arc<FetchClient>,
        max_message: usize,
        version: tokio::sync::watch::Sender<u64>,
    ) -> Self {
        let context = Arc::new(Context { exec, fetch, max_message, version });
        let servers = entries
            .iter()
            .map(|entry| {
                let (kind, granted, open_world) = match &entry.transport {
                    ServerTransport::Stdio(stdio) => match launch::Launch::new(entry, stdio, host) {
                        Ok(launch) => {
                            let granted = granted_values(&launch, host);
                            let net = launch.network.is_some();
                            (Kind::Stdio(Box::new(launch)), granted, net)
                        }
                        Err(why) => (Kind::Broken(why), Vec::new(), false),
                    },
                    ServerTransport::Http(remote) => match http::Remote::new(entry, remote, host) {
                        Ok(remote) => {
                            let granted = remote.granted().to_vec();
                            (Kind::Http(remote), granted, true)
                        }
                        Err(why) => (Kind::Broken(why), Vec::new(), true),
                    },
                };
                let server = Server::new(entry.name.clone(), kind, context.clone());
                // Past u32::MAX ms (49 days) is as good as no deadline of its own.
                let timeout_ms = entry.limits.timeout_ms.map(|ms| u32::try_from(ms).unwrap_or(u32::MAX));
                Entry { server, redactor: Arc::new(Redactor::new(&granted)), open_world, timeout_ms }
            })
            .collect();
        Self { servers }
    }

    /// Whether the host has no servers.
    pub(crate) fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The servers whose tools could be named `name` and whose list is not known
    /// yet (`mcp__SERVER__…`).
    pub(crate) fn unlisted_for(&self, name: &str) -> Vec<String> {
        self.servers
            .iter()
            .map(|e| &e.server)
            .filter(|s| name.starts_with(&names::tool_prefix(&s.name)) && s.listing().is_none())
            .map(|s| s.name.clone())
            .collect()
    }

    fn find(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().map(|e| &e.server).find(|s| s.name == name)
    }

    /// Start the server `name` (its main instance) unless it runs, so that its tools
    /// are listed.
    pub(crate) async fn start(&self, name: &str) -> Result<(), CallError> {
        let Some(server) = self.find(name) else {
            return Err(CallError::new(crate::error::codes::UNKNOWN_TOOL, format!("no MCP server `{name}`")));
        };
        server.instance(false).await.map(|_| ())
    }

    /// Start every server not started yet, at once; the ones that failed, and why.
    pub(crate) async fn start_all(&self) -> Vec<(String, CallError)> {
        let starts = self
            .servers
            .iter()
            .map(|e| &e.server)
            .map(|s| async move { (s.name.clone(), s.instance(false).await) });
        futures_util::future::join_all(starts)
            .await
            .into_iter()
            .filter_map(|(name, outcome)| outcome.err().map(|e| (name, e)))
            .collect()
    }

    /// Every listed tool, with what runs it.
    pub(crate) fn tools(&self) -> Vec<(ToolSpec, Arc<dyn ServerTool>)> {
        let mut out = Vec::new();
        for Entry { server, redactor, open_world, timeout_ms } in &self.servers {
            let Some(listing) = server.listing() else { continue };
            for adapted in &listing.tools {
                let mut spec = adapted.spec.clone();
                spec.timeout_ms = *timeout_ms;
                let tool = tool::RemoteTool {
                    server: server.clone(),
                    remote: adapted.remote.clone(),
                    read_only: adapted.spec.read_only,
                    source: format!("server:{}", server.name),
                    redactor: redactor.clone(),
                    open_world: *open_world,
                };
                out.push((spec, Arc::new(tool) as Arc<dyn ServerTool>));
            }
        }
        out
    }

    /// What `inspect` shows of the server `name`, after trying to start it.
    pub(crate) async fn report(&self, name: &str) -> Option<ServerReport> {
        let server = self.find(name)?;
        let error = server.instance(false).await.err().map(|e| e.to_string());
        let (tools, refused) = match server.listing() {
            Some(listing) => {
                let twin = server.has_twin();
                let tools = listing
                    .tools
                    .iter()
                    .map(|t| ReportedTool {
                        spec: t.spec.clone(),
                        remote: t.remote.clone(),
                        instance: if twin && t.spec.read_only { "read-only" } else { "main" },
                    })
                    .collect();
                (tools, listing.refused.clone())
            }
            None => (Vec::new(), Vec::new()),
        };
        let (transport, sandbox) = describe(&server.kind);
        Some(ServerReport { name: server.name.clone(), transport, sandbox, tools, refused, error })
    }
}

/// The values its redactor removes: the variables its entry grants (not the fixed
/// ones every child gets).
fn granted_values(launch: &launch::Launch, host: &HostSide) -> Vec<(String, String)> {
    launch
        .env()
        .iter()
        .filter(|(k, v)| host.host_env.iter().any(|(hk, hv)| hk == k && hv == v))
        .cloned()
        .collect()
}

/// How a server is reached and confined, in words.
fn describe(kind: &Kind) -> (String, Vec<String>) {
    match kind {
        Kind::Stdio(launch) => (format!("stdio: {}", launch.command_line()), launch.describe()),
        Kind::Http(remote) => (
            format!("http: {}", remote.url()),
            vec!["reached only through the pinned client: the URL's host, vetted addresses".into()],
        ),
        Kind::Broken(why) => ("unusable".into(), vec![why.clone()]),
    }
}
