//! Every end-to-end test of toolhost, one module per file, in one test binary:
//! the code the files share (the toolhost library, tokio, rmcp, serde) is
//! compiled and linked once rather than once per file. Run one file's tests
//! with `cargo test --release -p toolhost-tests --test e2e MODULE::`.

mod agents;
mod approvals_shared;
mod batch;
mod bounds;
mod builtins;
mod cli;
mod conformance;
mod doctor;
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
mod http_proxy;
mod http_starve;
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
mod publishing_doc;
mod read_output;
mod redis_store;
mod refusals;
mod scale_out;
mod secrets_outside;
mod server_pins;
mod shape;
mod terminal_ui;
mod typed_exports;
mod walkthrough;
mod wasi_config;
mod wasi_escape;
mod wasi_http;
mod wasi_http_client;
mod web;
mod write_quota;
