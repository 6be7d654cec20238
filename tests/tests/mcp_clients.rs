//! `toolhost serve` driven by MCP clients this project did not write: the
//! official Python SDK (`mcp` 2.x: `mode="auto"`, which negotiates 2026-07-28
//! through `server/discover`, and the legacy `initialize` handshake) and the
//! official TypeScript SDK (`@modelcontextprotocol/client` 2.x, both modes;
//! `@modelcontextprotocol/sdk` 1.x, the 2025 line), each over stdio and
//! Streamable HTTP on 127.0.0.1. Each client lists the tools, reads a file,
//! reads a failure, and cancels a call that would spin forever
//! (`tests/clients/`); over HTTP the server must then be idle, so the cancel
//! reached the guest.
//!
//! The clients are installed, pinned, by `scripts/mcp-clients` (`./scripts/test`
//! runs it); a missing one fails the test with that instruction.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use toolhost_tests::servers::{Instance, MODERN};
use toolhost_tests::{HOSTILE_WASM, toolhost_bin, workspace_root};

/// Fuel that never runs out: only the deadline or cancellation stops `spin`.
const NO_FUEL_LIMIT: &str = "18446744073709551615";
const LEGACY: &str = "2025-11-25";
const GREETING: &str = "hello from the test\n";

/// A file under `target/toolchains/mcp/`, or a panic naming the installer.
fn mcp_toolchain(relative: &str) -> PathBuf {
    let path = workspace_root().join("target/toolchains/mcp").join(relative);
    assert!(
        path.exists(),
        "{} is missing: install the pinned MCP clients with ./scripts/mcp-clients (./scripts/test does)",
        path.display()
    );
    path
}

/// The work dir every client reads: one file, `hello.txt`.
fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("hello.txt"), GREETING).expect("writing hello.txt");
    dir
}

/// The stdio server's command line, as the client script takes it (JSON).
fn stdio_target(work: &Path) -> String {
    let command = [
        toolhost_bin().to_str().unwrap(),
        "serve",
        "--work-dir",
        work.to_str().unwrap(),
        "--plugin",
        HOSTILE_WASM,
        "--eager",
        "--fuel",
        NO_FUEL_LIMIT,
        "--timeout-ms",
        "60000",
    ];
    serde_json::to_string(&command).unwrap()
}

enum Sdk {
    Python,
    TsV2,
    TsV1,
}

/// Run one client against `target` (a URL or a stdio command line) and
/// return what it printed, or fail with its output.
async fn run_client(sdk: Sdk, mode: &str, target: &str) -> Value {
    let mut copied = None;
    let mut cmd = match sdk {
        Sdk::Python => {
            let mut cmd = tokio::process::Command::new(mcp_toolchain("venv/bin/python"));
            cmd.arg(workspace_root().join("tests/clients/python_client.py")).args([mode, target]);
            cmd
        }
        Sdk::TsV2 | Sdk::TsV1 => {
            // ESM resolves packages from the script's own directory: run a copy
            // beside the pinned node_modules (one per run: tests run at once).
            static RUNS: AtomicUsize = AtomicUsize::new(0);
            let name =
                format!("ts_client-{}-{}.mjs", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed));
            let script = mcp_toolchain("node_modules").parent().unwrap().join(name);
            std::fs::copy(workspace_root().join("tests/clients/ts_client.mjs"), &script).expect("copying");
            let mut cmd = tokio::process::Command::new(mcp_toolchain("node"));
            let line = if matches!(sdk, Sdk::TsV2) { "v2" } else { "v1" };
            cmd.arg(&script).args([line, mode, target]);
            copied = Some(script);
            cmd
        }
    };
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"))
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("TOOLHOST_LOG")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the client finished in time")
        .expect("running the client");
    if let Some(script) = copied {
        let _ = std::fs::remove_file(script);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client failed ({}):\n{stdout}\n{stderr}", out.status);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: the client printed {stdout}\n{stderr}"))
}

/// What every client must have seen, whatever the SDK and transport.
fn check(seen: &Value, protocol: Option<&str>) {
    if let Some(protocol) = protocol {
        assert_eq!(seen["protocol"], protocol, "{seen}");
    }
    assert_eq!(seen["server"], "toolhost", "{seen}");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for name in ["read_file", "read_output", "noop", "spin", "write_file"] {
        assert!(tools.contains(&name), "{name} is not listed: {seen}");
    }
    assert_eq!(seen["read"]["is_error"], false, "{seen}");
    assert!(seen["read"]["text"].as_str().unwrap().contains(GREETING.trim()), "{seen}");
    // A client that prefers structuredContent still gets the file.
    assert!(seen["read"]["structured"].to_string().contains(GREETING.trim()), "{seen}");
    assert_eq!(seen["failure"]["is_error"], true, "{seen}");
    assert!(seen["failure"]["text"].as_str().unwrap().starts_with("not_found"), "{seen}");
    assert_eq!(seen["cancelled"], true, "{seen}");
    assert!(seen["cancelled_after_s"].as_f64().unwrap() < 10.0, "{seen}");
    assert_eq!(seen["after_cancel"]["is_error"], false, "{seen}");
}

/// A client over HTTP against a fresh server; afterwards the server must be
/// idle (the cancelled `spin` no longer runs).
async fn over_http(sdk: Sdk, mode: &str, protocol: Option<&str>) {
    let work = work_dir();
    let server =
        Instance::start("server", work.path(), &["--fuel", NO_FUEL_LIMIT, "--timeout-ms", "60000"]).await;
    let seen = run_client(sdk, mode, &server.url()).await;
    check(&seen, protocol);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cpu = server.cpu_time();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let busy = server.cpu_time() - cpu;
    assert!(
        busy < Duration::from_millis(400),
        "the server used {busy:?} of CPU in 1 s after the cancel: {seen}"
    );
}

async fn over_stdio(sdk: Sdk, mode: &str, protocol: Option<&str>) {
    let work = work_dir();
    let seen = run_client(sdk, mode, &stdio_target(work.path())).await;
    check(&seen, protocol);
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_auto_over_http_speaks_2026() {
    over_http(Sdk::Python, "auto", Some(MODERN)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_auto_over_stdio_speaks_2026() {
    over_stdio(Sdk::Python, "auto", Some(MODERN)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_legacy_over_http() {
    over_http(Sdk::Python, "legacy", Some(LEGACY)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_legacy_over_stdio() {
    over_stdio(Sdk::Python, "legacy", Some(LEGACY)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_auto_over_http_speaks_2026() {
    over_http(Sdk::TsV2, "auto", Some(MODERN)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_auto_over_stdio_speaks_2026() {
    over_stdio(Sdk::TsV2, "auto", Some(MODERN)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_legacy_over_http() {
    over_http(Sdk::TsV2, "legacy", Some(LEGACY)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_legacy_over_stdio() {
    over_stdio(Sdk::TsV2, "legacy", Some(LEGACY)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_1x_over_http() {
    over_http(Sdk::TsV1, "legacy", None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_1x_over_stdio() {
    over_stdio(Sdk::TsV1, "legacy", None).await;
}
