//! Plugins compiled in the background (`HostBuilder::compile_in_background`, what
//! `toolhost serve` does without `--eager`): a component the compile cache lacks
//! is checked at once, compiled while the host serves the rest, and its tools join
//! with `notifications/tools/list_changed`; a call to one of them waits; a plugin
//! that fails to load is named, and everything else keeps serving.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use toolhost::{EngineSettings, Host, ToolCall};
use toolhost_tests::{HOSTILE_WASM, SOCKETS_WASM, toolhost_bin};

const PATIENCE: Duration = Duration::from_secs(60);

/// Tells the test when the server's tool list changed.
#[derive(Clone)]
struct Watcher(Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.notify_one();
    }
}

/// `toolhost serve` over `work` with its own (empty) compile cache `cache`.
fn serve(work: &Path, cache: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(work).args(["--mode", "yolo"]).args(extra);
    cmd.env("TOOLHOST_CACHE_DIR", cache)
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env_remove("TOOLHOST_LOG")
        .kill_on_drop(true);
    cmd
}

async fn connect(
    cmd: tokio::process::Command,
) -> (rmcp::service::RunningService<rmcp::RoleClient, Watcher>, Arc<tokio::sync::Notify>) {
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn toolhost serve");
    let changed = Arc::new(tokio::sync::Notify::new());
    let client = Watcher(changed.clone()).serve(transport).await.expect("initialize");
    (client, changed)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_the_cache_lacks_is_listed_once_compiled() {
    let (work, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (client, changed) = connect(serve(work.path(), cache.path(), &["--plugin", HOSTILE_WASM])).await;
    let caps = client.peer_info().expect("server info").capabilities.tools.clone().expect("tools");
    assert_eq!(caps.list_changed, Some(true), "the list may change while a plugin compiles");
    let first = client.list_all_tools().await.unwrap();
    assert!(first.iter().any(|t| t.name == "read_file"), "the builtins are there at once: {first:?}");
    let end = Instant::now() + PATIENCE;
    loop {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "noop") {
            break;
        }
        // Not listed yet: a notification comes when it is.
        let left = end.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, changed.notified()).await.expect("tools/list_changed once compiled");
    }
    let result = client.call_tool(CallToolRequestParams::new("noop")).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // Meanwhile the optimising compiler works on it in the background.
    let compiled = wait_for_optimised(cache.path(), HOSTILE_WASM).await;
    assert!(compiled, "the background compile left optimised code in the cache");
    client.cancel().await.unwrap();

    // The next start finds the optimised code cached: nothing is pending and the
    // list never changes.
    let (client, _) = connect(serve(work.path(), cache.path(), &["--plugin", HOSTILE_WASM])).await;
    let caps = client.peer_info().unwrap().capabilities.tools.clone().unwrap();
    assert_eq!(caps.list_changed, None, "nothing left to compile");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "noop"), "listed at once from the cache");
    client.cancel().await.unwrap();
}

/// Whether optimised code for `wasm` appears in `cache` within the patience: its
/// `SHA256.cwasm` in two salt directories, the baseline's and the optimising
/// compiler's.
async fn wait_for_optimised(cache: &Path, wasm: &str) -> bool {
    let name = format!("{}.cwasm", sha256_of(wasm));
    let end = Instant::now() + PATIENCE;
    while Instant::now() < end {
        let dirs = std::fs::read_dir(cache).into_iter().flatten().flatten();
        if dirs.filter(|d| d.path().join(&name).is_file()).count() >= 2 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

fn sha256_of(wasm: &str) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(wasm).unwrap()))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_to_a_tool_still_compiling_waits_for_it() {
    let (work, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (client, _) = connect(serve(work.path(), cache.path(), &["--plugin", HOSTILE_WASM])).await;
    let params = CallToolRequestParams::new("echo")
        .with_arguments(json!({"count": 7, "label": "waited"}).as_object().cloned().unwrap());
    let result = tokio::time::timeout(PATIENCE, client.call_tool(params)).await.unwrap().unwrap();
    assert_ne!(result.is_error, Some(true), "not unknown_tool while it compiles: {result:?}");
    let text = &result.content[0].as_text().unwrap().text;
    assert!(text.contains("waited"), "{text}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_fails_to_load_late_is_named_and_the_rest_serve() {
    // The same component twice: the second one's tools clash with the first's.
    let (work, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let extra = ["--plugin", HOSTILE_WASM, "--plugin", HOSTILE_WASM];
    let (client, _) = connect(serve(work.path(), cache.path(), &extra)).await;
    let unknown = client.call_tool(CallToolRequestParams::new("no_such_tool")).await.unwrap();
    assert_eq!(unknown.is_error, Some(true));
    let text = &unknown.content[0].as_text().unwrap().text;
    assert!(text.starts_with("unknown_tool"), "{text}");
    assert!(text.contains("plugins that failed to load") && text.contains("hostile"), "{text}");
    // The first copy, the builtins: serving.
    let noop = client.call_tool(CallToolRequestParams::new("noop")).await.unwrap();
    assert_ne!(noop.is_error, Some(true), "{noop:?}");
    std::fs::write(work.path().join("a.txt"), "still here\n").unwrap();
    let params = CallToolRequestParams::new("read_file")
        .with_arguments(json!({"path": "a.txt"}).as_object().cloned().unwrap());
    let read = client.call_tool(params).await.unwrap();
    assert_ne!(read.is_error, Some(true), "{read:?}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_plugin_still_stops_serve_before_it_answers() {
    // wasi:sockets without the grant: refused from its bytes, not compiled later.
    let (work, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = serve(work.path(), cache.path(), &["--plugin", SOCKETS_WASM])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("capability_denied"), "{stderr}");
    let name = format!("{}.cwasm", sha256_of(SOCKETS_WASM));
    let found = walk(cache.path()).into_iter().filter(|p| p.ends_with(&name)).count();
    assert_eq!(found, 0, "nothing compiled for a refused component");
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|e| if e.path().is_dir() { walk(&e.path()) } else { vec![e.path()] })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_says_when_the_late_plugins_settled() {
    let (work, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(EngineSettings {
            cache_dir: Some(cache.path().to_path_buf()),
            ..EngineSettings::default()
        })
        .mode(toolhost::Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .compile_in_background(true)
        .build()
        .await
        .unwrap();
    let changes = host.tools_changed().expect("the list may change");
    assert!(host.plugins().iter().all(|p| !p.name().contains("hostile")), "not loaded in the build");
    assert!(host.plugins_settled().await.is_empty(), "it loaded");
    assert!(host.registry().get("noop").is_some());
    assert_eq!(*changes.borrow(), 1, "the version moved once");
    assert!(host.execute(ToolCall::new("noop", json!({}))).await.ok);

    // Without background compiling (or with an allow-list) the build loads it.
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(EngineSettings {
            cache_dir: Some(cache.path().to_path_buf()),
            ..EngineSettings::default()
        })
        .plugin_file(HOSTILE_WASM)
        .allow_tools(vec!["noop".into()])
        .compile_in_background(true)
        .build()
        .await
        .unwrap();
    assert!(host.tools_changed().is_none() && host.registry().get("noop").is_some());
}
