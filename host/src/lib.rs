//! toolhost: run an AI agent's tools as sandboxed WebAssembly components.
//!
//! The stages, and how often each runs:
//!
//! 1. [`engine`] — once per host: the wasmtime engine (fuel, epoch
//!    interruption, pooling allocator), its epoch ticker, the compile cache.
//! 2. [`plugin`] — once per plugin: hash, compile (or load from the cache),
//!    check imports, prepare an `InstancePre`, list the tools; [`registry`]
//!    compiles each tool's argument schema.
//! 3. [`sandbox`] — once per call: a fresh store and instance with only the
//!    granted capabilities, under memory, fuel, deadline and output limits.
//!
//! [`Host::execute`] ([`executor`]) is the one entry point for a call; it
//! never fails and never panics.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolhost::LoadError> {
//! use toolhost::{Host, ToolCall};
//! let host = Host::builder().work_dir(".").build().await?;
//! let result = host.execute(ToolCall::new("read_file", serde_json::json!({"path": "README.md"}))).await;
//! println!("{}", if result.ok { &result.output } else { "failed" });
//! # Ok(()) }
//! ```

pub mod args;
mod authorize;
pub mod batch;
mod bindings;
mod builder;
mod builtins;
mod cache;
pub mod engine;
pub mod error;
pub mod exec;
pub mod executor;
mod fdlimit;
pub mod fetch;
mod files;
pub mod grants;
mod host;
pub mod hostfs;
mod ids;
pub mod limits;
pub mod mcp;
mod native;
pub mod output;
mod pipe;
pub mod plugin;
pub mod policy;
pub mod protect;
pub mod registry;
pub mod sandbox;
pub mod spec;
pub mod wasi_fs;

pub use authorize::PermissionNote;
pub use engine::{Engine, EngineSettings};
pub use error::{CallError, LoadError, codes};
pub use executor::{ToolCall, ToolResult};
pub use fetch::{HostPattern, NetGrant, NetworkSettings};
pub use grants::{FsAccess, PluginGrants, Sockets};
pub use host::{Host, HostBuilder};
pub use limits::Limits;
pub use mcp::{ToolhostServer, serve_stdio};
pub use native::READ_OUTPUT;
pub use policy::{Approval, ApprovalRequest, Approver, Decision, Mode, Policy, PolicyError};
pub use spec::{ToolDefinition, ToolSpec};
pub use tokio_util::sync::CancellationToken;
