//! toolhost: run an AI agent's tools as sandboxed WebAssembly components.
//!
//! The stages, and how often each runs:
//!
//! 1. the [`Engine`] — once per host: the wasmtime engine (fuel, epoch
//!    interruption, pooling allocator), its epoch ticker, the compile cache.
//! 2. each [`Plugin`] — once per plugin: hash, compile (or load from the cache),
//!    check imports, prepare an `InstancePre`, list the tools; the [`Registry`]
//!    compiles each tool's argument schema.
//! 3. a fresh store and instance per call, with only the capabilities the call
//!    holds, under memory, fuel, deadline and output limits.
//!
//! [`Host::execute`] is the one entry point for a call (the same pipeline for a
//! component's tool and the host's own); it never fails and never panics.
//! [`HostBuilder`] makes a host; ARCHITECTURE.md maps the modules.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolhost::LoadError> {
//! use toolhost::{Host, ToolCall};
//! let host = Host::builder().work_dir(".").build().await?;
//! let result = host.execute(ToolCall::new("read_file", serde_json::json!({"path": "README.md"}))).await;
//! println!("{}", if result.ok { &result.output } else { "failed" });
//! # Ok(()) }
//! ```

mod bindings;
mod call;
mod dirs;
mod engine;
mod error;
mod hooks;
mod imports;
pub mod journal;
mod limits;
mod load;
mod native;
pub mod oci;
mod output;
pub mod policy;
mod sandbox;
mod serve;
mod servers;
#[cfg(test)]
mod test_support;

// What an embedder uses, by stage: the host and its calls; loading and looking at
// plugins; the grants and limits a plugin gets; the capabilities' settings; the
// policy (its own module: files, rules, trust, approvals); serving over MCP.
pub use call::authorize::PermissionNote;
pub use call::builder::HostBuilder;
pub use call::executor::{ToolCall, ToolResult};
pub use call::host::Host;
pub use confine::hostfs;
pub use dirs::{default_config_dir, default_data_dir, reached_through};
pub use engine::progress::{Progress, ProgressStep};
pub use engine::{CompilerTiers, Engine, EngineSettings, Tier};
pub use error::{CallError, LoadError, PolicyError, codes};
pub use hooks::HookNote;
pub use imports::exec::{
    ChildLimits, ExecGrant, ExecRuntime, ExecSettings, FeatureCheck, LANDLOCK_ABI_NEEDED, ProcessInfo,
    ProcessState, SYSTEM_PATH, SandboxFeature, SandboxProbe,
};
pub use imports::fetch::{
    Connect, Connector, FetchClient, FetchError, FetchLimits, FetchRequest, FetchResponse, HostPattern,
    Lookup, NetGrant, NetworkSettings, Resolver, SystemResolver, TcpConnector,
};
pub use limits::Limits;
pub use load::builtins::builtin_component;
pub use load::capabilities::Requested;
pub use load::inspect::{Inspection, inspect_bytes, inspect_file};
pub use load::plugin::Plugin;
pub use load::registry::{NATIVE_SOURCE, Registry, Tool};
pub use load::spec::{ToolDefinition, ToolSpec};
pub use load::typed::Skipped;
pub use output::shape;
pub use output::{
    CLOCK_SKEW, Claim, DEFAULT_REDIS_EXPIRY, IMAGE_KEY, Image, MAX_IMAGE_BYTES, Omitted, OutputStore, Part,
    READ_OUTPUT, StoreError, Stored,
};
pub use policy::grants::{FsGrant, GrantSource, PluginGrants, Sockets};
pub use policy::{Approval, ApprovalRequest, Approver, Decision, Mode, Policy, Redactor};
pub use serve::approve::{Approvals, DEFAULT_APPROVAL_TIMEOUT};
pub use serve::approve_state::{StateKey, StateKeyError};
pub use serve::http::{BearerToken, HttpError, HttpServer, HttpSettings};
pub use serve::mcp::ToolhostServer;
pub use serve::stdio::serve_stdio;
pub use servers::{Refused, ReportedTool, ServerReport};

/// An MCP server's command as the host resolves it (`toolhost add-server`): the
/// program, the entry file its `sha256` pins, that file's digest.
pub mod server_command {
    pub use crate::servers::pin::{Bounds, Changes, Manifest, Node, Pins};
    pub use crate::servers::{entry_file, find_program, sha256_file};
}
pub use tokio_util::sync::CancellationToken;
