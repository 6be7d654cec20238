//! Every end-to-end test of toolhost, one module per file, in one test binary:
//! the code the files share (the toolhost library, tokio, rmcp, serde) is
//! compiled and linked once rather than once per file. Run one file's tests
//! with `cargo test --release -p toolhost-tests --test e2e MODULE::`.

mod batch;
mod bounds;
mod builtins;
mod cli;
mod conformance;
mod examples;
mod exec;
mod exec_escape;
mod exec_killed;
mod exec_policy;
mod exec_shared_root;
mod executor;
mod fetch;
mod file_tools;
mod hooks;
mod hostile;
mod journal;
mod js_fetch;
mod mcp;
mod mcp_approvals;
mod mcp_clients;
mod mcp_http;
mod mcp_servers;
mod names;
mod native_limits;
mod new_project;
mod oci;
mod permissions;
mod policy;
mod policy_cli;
mod policy_trust;
mod read_output;
mod redis_store;
mod scale_out;
mod typed_exports;
mod wasi_config;
mod wasi_escape;
mod wasi_http;
mod wasi_http_client;
mod web;
mod write_quota;
