//! `toolhost serve` end to end: the built binary as an MCP server on stdio,
//! driven by the official Rust SDK's client (`rmcp`) and, where exact wire
//! order matters (cancellation, progress, malformed input), by hand-written
//! JSON-RPC lines.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use toolhost_tests::{FS_TOOLS, HOSTILE_WASM, toolhost_bin, workspace_root};

/// Fuel that never runs out: only the deadline or cancellation stops `spin`.
const NO_FUEL_LIMIT: &str = "18446744073709551615";

/// How long any single wait on the server may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// `toolhost serve --work-dir WORK --plugin HOSTILE EXTRA…`, sharing the
/// tests' compile cache; stderr is kept for failures.
fn serve_command(work: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(work).args(["--plugin", HOSTILE_WASM, "--eager"]).args(extra);
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"));
    cmd.env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    cmd
}

type Client = RunningService<RoleClient, ()>;

/// An rmcp client connected to a fresh `toolhost serve` over `work`.
async fn client(work: &Path, extra: &[&str]) -> Client {
    let (transport, _stderr) = TokioChildProcess::builder(serve_command(work, extra))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning toolhost serve");
    ().serve(transport).await.expect("MCP handshake with toolhost serve")
}

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(args(arguments));
    tokio::time::timeout(PATIENCE, client.call_tool(params))
        .await
        .expect("tools/call answered in time")
        .expect("tools/call succeeded at the protocol level")
}

/// The single text block of a result.
fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    &result.content[0].as_text().expect("a text block").text
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_every_tool_sorted_with_schemas_and_hints() {
    let work = tempfile::tempdir().unwrap();
    let client = client(work.path(), &[]).await;
    let info = client.peer_info().expect("server info after initialize");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("toolhost"));
    assert_eq!(info.server_info.as_ref().map(|i| i.version.as_str()), Some(env!("CARGO_PKG_VERSION")));
    assert!(info.capabilities.tools.is_some(), "tools capability: {info:?}");

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools come sorted by name");
    for expected in FS_TOOLS.iter().chain(&["noop", "spin", "slow", "echo"]) {
        assert!(names.contains(expected), "{expected} missing from {names:?}");
    }
    for tool in &tools {
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{} inputSchema", tool.name);
        let hints = tool.annotations.as_ref().unwrap_or_else(|| panic!("{} has no annotations", tool.name));
        // Only the network tools (builtin:web imports fetch) reach the open world.
        let network = ["fetch_url", "http_request", "web_search"].contains(&tool.name.as_ref());
        assert_eq!(hints.open_world_hint, Some(network), "{}", tool.name);
        assert!(
            hints.read_only_hint.is_some() && hints.destructive_hint.is_some(),
            "{}: {hints:?}",
            tool.name
        );
    }
    let hints = |name: &str| tools.iter().find(|t| t.name == name).unwrap().annotations.clone().unwrap();
    let read = hints("read_file");
    assert_eq!(
        (read.read_only_hint, read.destructive_hint, read.idempotent_hint),
        (Some(true), Some(false), Some(true))
    );
    let write = hints("write_file");
    assert_eq!(
        (write.read_only_hint, write.destructive_hint, write.idempotent_hint),
        (Some(false), Some(true), Some(false))
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_returns_text_and_structured_metadata() {
    let work = tempfile::tempdir().unwrap();
    let content = "alpha\nbeta\n";
    std::fs::write(work.path().join("notes.txt"), content).unwrap();
    let client = client(work.path(), &[]).await;
    let result = call(&client, "read_file", json!({"path": "notes.txt"})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let body = text(&result);
    assert!(body.contains("alpha") && body.contains("beta"), "{body:?}");
    let structured = result.structured_content.as_ref().expect("structuredContent");
    assert_eq!(structured["metadata"]["sha256"], json!(hex::encode(Sha256::digest(content))));
    client.cancel().await.unwrap();
}

/// A client that shows the model only `structuredContent` still shows it the
/// file (and a failure's code), and every tool declares the schema it fits.
/// `read_file` on an image (known by its bytes, whatever its name) gives a text line
/// and an MCP `image` content item carrying the file, base64; the metadata does not
/// carry the data again.
#[tokio::test(flavor = "multi_thread")]
async fn an_image_is_sent_as_image_content() {
    use base64::Engine as _;
    let work = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\x01\x00\0\0\0\x20\x08\x06\0\0\0".to_vec();
    png.extend((0..100_000u32).map(|i| (i % 251) as u8));
    std::fs::write(work.path().join("shot.bin"), &png).unwrap();
    let client = client(work.path(), &[]).await;
    let result = call(&client, "read_file", json!({"path": "shot.bin"})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.content.len(), 2, "{result:?}");
    let line = &result.content[0].as_text().expect("a text block first").text;
    assert!(line.contains("image/png image, 100029 bytes, 256x32"), "{line}");
    let image = result.content[1].as_image().expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(&image.data).unwrap(), png);
    let wire = serde_json::to_value(&result.content[1]).unwrap();
    assert_eq!((wire["type"].as_str(), wire["mimeType"].as_str()), (Some("image"), Some("image/png")));
    let structured = result.structured_content.as_ref().unwrap();
    assert_eq!(structured["metadata"]["width"], 256);
    assert!(structured["metadata"].get("toolhost/image").is_none(), "{structured}");
    assert!(structured.to_string().len() < 2_000);
    // Past 5 MiB: a clear error, no image.
    let mut big = png.clone();
    big.resize(5 * 1024 * 1024 + 1, 0);
    std::fs::write(work.path().join("big.png"), &big).unwrap();
    let result = call(&client, "read_file", json!({"path": "big.png"})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).starts_with("file_too_large: "), "{}", text(&result));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_content_alone_carries_what_the_model_reads() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let client = client(work.path(), &[]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    for tool in &tools {
        let schema =
            tool.output_schema.as_ref().unwrap_or_else(|| panic!("{} has no outputSchema", tool.name));
        assert_eq!(schema.get("required"), Some(&json!(["output"])), "{}", tool.name);
    }
    let schema = Value::Object((*tools[0].output_schema.clone().unwrap()).clone());
    let read = call(&client, "read_file", json!({"path": "notes.txt"})).await;
    let structured = read.structured_content.clone().expect("structuredContent");
    let output = structured["output"].as_str().expect("output text");
    assert!(output.contains("alpha") && output.contains("beta"), "{structured}");
    assert_eq!(output, text(&read));
    assert!(jsonschema::is_valid(&schema, &structured), "{structured}");
    let escape = call(&client, "read_file", json!({"path": "../x"})).await;
    let structured = escape.structured_content.clone().expect("structuredContent of a failure");
    assert_eq!(structured["error"], "path_escape");
    assert!(structured["output"].as_str().unwrap().starts_with("path_escape: "), "{structured}");
    assert!(jsonschema::is_valid(&schema, &structured), "{structured}");
    client.cancel().await.unwrap();
}

/// Every builtin's hints, against what it does: writes that overwrite or
/// remove are destructive, reads are idempotent, only network tools are
/// open-world; and no schema carries a non-standard `format`.
#[tokio::test(flavor = "multi_thread")]
async fn every_builtin_has_honest_hints_and_standard_schemas() {
    let work = tempfile::tempdir().unwrap();
    let client = client(work.path(), &[]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    // (read_only, destructive, idempotent, open_world)
    let expected = [
        ("disk_usage", (true, false, true, false)),
        ("edit_file", (false, true, false, false)),
        ("env_get", (true, false, true, false)),
        ("fetch_url", (true, false, true, true)),
        ("find_files", (true, false, true, false)),
        ("git", (true, false, true, false)),
        ("grep_files", (true, false, true, false)),
        ("http_request", (false, true, false, true)),
        ("list_dir", (true, false, true, false)),
        ("process_list", (true, false, true, false)),
        ("read_file", (true, false, true, false)),
        ("read_output", (true, false, true, false)),
        ("terminal", (false, true, false, false)),
        ("tree", (true, false, true, false)),
        ("web_search", (true, false, true, true)),
        ("write_file", (false, true, false, false)),
    ];
    for (name, (read_only, destructive, idempotent, open_world)) in expected {
        let tool = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} not listed"));
        let hints = tool.annotations.clone().unwrap();
        assert_eq!(
            (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
            (Some(read_only), Some(destructive), Some(idempotent), Some(open_world)),
            "{name}"
        );
    }
    fn formats(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(f)) = map.get("format") {
                    found.push(f.clone());
                }
                map.values().for_each(|v| formats(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
            _ => {}
        }
    }
    for tool in &tools {
        let mut found = Vec::new();
        formats(&Value::Object((*tool.input_schema).clone()), &mut found);
        assert!(
            found.iter().all(|f| ["uri", "date-time", "regex"].contains(&f.as_str())),
            "{}: {found:?}",
            tool.name
        );
    }
    let read = tools.iter().find(|t| t.name == "read_output").unwrap();
    let limit = &read.input_schema["properties"]["limit"];
    assert!(limit.get("maximum").is_some() && limit.get("format").is_none(), "{limit}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_tool_errors_that_start_with_the_code() {
    let work = tempfile::tempdir().unwrap();
    let client = client(work.path(), &[]).await;

    let escape = call(&client, "read_file", json!({"path": "../../etc/passwd"})).await;
    assert_eq!(escape.is_error, Some(true), "{escape:?}");
    assert!(text(&escape).starts_with("path_escape: "), "{:?}", text(&escape));

    let unknown = call(&client, "nope", json!({})).await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");
    assert_eq!(text(&unknown), "unknown_tool: nope");

    // Missing `arguments` is `{}`: a schema requiring `path` refuses it.
    let params = CallToolRequestParams::new("read_file");
    let bare = client.call_tool(params).await.expect("tools/call without arguments");
    assert_eq!(bare.is_error, Some(true), "{bare:?}");
    assert!(text(&bare).starts_with("invalid_args: "), "{:?}", text(&bare));

    // stdin is the protocol: a write is asked of the client's user, and this
    // client declared no elicitation to ask with, so it is denied, saying why
    // (tests/tests/mcp_approvals.rs asks clients that can answer).
    let write = call(&client, "write_file", json!({"path": "a.txt", "content": "x"})).await;
    assert_eq!(write.is_error, Some(true), "{write:?}");
    assert!(
        text(&write).starts_with(
            "permission_denied: write_file was not approved: it needs approval, and this MCP client cannot be asked"
        ),
        "{}",
        text(&write)
    );
    assert!(!work.path().join("a.txt").exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_on_one_connection_all_succeed() {
    let work = tempfile::tempdir().unwrap();
    let client = client(work.path(), &[]).await;
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let peer = client.peer().clone();
        calls.spawn(async move { peer.call_tool(CallToolRequestParams::new("noop")).await });
    }
    let results = tokio::time::timeout(PATIENCE, calls.join_all()).await.expect("16 noop calls in time");
    for result in results {
        let result = result.expect("tools/call noop");
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(text(&result), "ok");
    }
    client.cancel().await.unwrap();
}

/// A server driven by hand-written JSON-RPC lines. Every line it writes
/// must be a JSON-RPC 2.0 message.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Raw {
    /// Spawn `toolhost serve` and complete the `initialize` handshake.
    async fn start(work: &Path, extra: &[&str]) -> Self {
        Self::start_as(work, extra, "2025-06-18").await
    }

    /// Spawn `toolhost serve` and complete an `initialize` handshake asking
    /// for `revision` (which the server must agree to).
    async fn start_as(work: &Path, extra: &[&str], revision: &str) -> Self {
        let mut child = serve_command(work, extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning toolhost serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Self { child, stdin, stdout };
        raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        }}))
        .await;
        let (init, _) = raw.response(1).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "toolhost", "{init}");
        assert_eq!(init["result"]["protocolVersion"], revision, "{init}");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        raw
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next message, or `None` at end of output.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("the server wrote in time")
            .expect("reading stdout")?;
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
        Some(message)
    }

    /// The next line as JSON, whatever it is (a batch answer is an array).
    async fn next_value(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("the server wrote in time")
            .expect("reading stdout")
            .expect("output ended");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"))
    }

    /// Read up to the response to request `id`; also return every message
    /// read before it.
    async fn response(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.next().await.unwrap_or_else(|| panic!("output ended before response {id}"));
            if message.get("method").is_none() && message["id"] == json!(id) {
                return (message, before);
            }
            before.push(message);
        }
    }

    async fn call_tool(&mut self, id: u64, name: &str, meta: Option<Value>) {
        let mut params = json!({"name": name, "arguments": {}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})).await;
    }

    /// CPU time the server has used (user + system), from `/proc`.
    fn cpu_time(&self) -> Duration {
        let pid = self.child.id().expect("server running");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("reading /proc/PID/stat");
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        // Fields 14 and 15 of stat(5), counted from field 3 (state) here.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_millis(ticks * 10) // USER_HZ is 100 on Linux
    }

    /// Close stdin, check the rest of stdout is JSON-RPC, and that the
    /// server exits cleanly.
    async fn finish(mut self) {
        drop(self.stdin.take());
        while self.next().await.is_some() {}
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("exit in time").unwrap();
        assert!(status.success(), "toolhost serve exited with {status}");
    }
}

fn result_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {response}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_call_stops_the_guest_and_the_server_keeps_serving() {
    let work = tempfile::tempdir().unwrap();
    let mut raw = Raw::start(work.path(), &["--fuel", NO_FUEL_LIMIT, "--timeout-ms", "60000"]).await;
    raw.call_tool(2, "spin", None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "test cancels"}}))
        .await;

    let started = Instant::now();
    raw.call_tool(3, "noop", None).await;
    let (noop, before) = raw.response(3).await;
    assert!(started.elapsed() < Duration::from_secs(5), "noop took {:?}", started.elapsed());
    assert_eq!(noop["result"]["isError"], false, "{noop}");
    assert_eq!(result_text(&noop), "ok");

    // The guest is stopped: the server is idle again (a spinning guest
    // burns a whole core).
    let cpu = raw.cpu_time();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let busy = raw.cpu_time() - cpu;
    assert!(busy < Duration::from_millis(400), "the server used {busy:?} of CPU in 1 s after the cancel");

    // The cancelled request never completed: no response to id 2, before
    // or after a later request.
    raw.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})).await;
    let (list, after) = raw.response(4).await;
    assert!(list["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{list}");
    for message in before.iter().chain(&after) {
        assert_ne!(message["id"], json!(2), "the cancelled call was answered: {message}");
    }
    raw.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_call_reports_progress_until_it_ends() {
    let work = tempfile::tempdir().unwrap();
    let mut raw = Raw::start(work.path(), &["--fuel", NO_FUEL_LIMIT, "--timeout-ms", "2500"]).await;
    raw.call_tool(2, "spin", Some(json!({"progressToken": "spin-1"}))).await;
    let (response, before) = raw.response(2).await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert!(result_text(&response).starts_with("timeout"), "{response}");

    let progress: Vec<&Value> = before.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "no progress before the call ended: {before:?}");
    let mut last = 0.0;
    for (n, note) in progress.iter().enumerate() {
        let params = &note["params"];
        assert_eq!(params["progressToken"], "spin-1", "{note}");
        let value = params["progress"].as_f64().unwrap();
        assert!(value > last, "progress must increase: {progress:?}");
        last = value;
        assert_eq!(params["message"], format!("running spin ({}s)", n + 1), "{note}");
    }

    // No progress after the call ended.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})).await;
    let (_, after) = raw.response(3).await;
    assert!(after.is_empty(), "messages after the call ended: {after:?}");
    raw.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_input_gets_errors_and_the_server_keeps_serving() {
    let work = tempfile::tempdir().unwrap();
    let mut raw = Raw::start(work.path(), &[]).await;
    // Not JSON: -32700 with a null id.
    raw.send_line("{not json").await;
    let parse = raw.next().await.unwrap();
    assert_eq!((&parse["id"], &parse["error"]["code"]), (&Value::Null, &json!(-32700)), "{parse}");
    // JSON but no readable request: -32600 with a null id (the member is there).
    for line in ["[1, 2]", "{}", "[]", "42", r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}"#] {
        raw.send_line(line).await;
        let invalid = raw.next().await.unwrap();
        assert_eq!(invalid["error"]["code"], -32600, "{line}: {invalid}");
        assert!(
            invalid.as_object().unwrap().contains_key("id") && invalid["id"].is_null(),
            "{line}: {invalid}"
        );
    }
    raw.send_line(r#"{"jsonrpc":"1.0","id":6,"method":"tools/list"}"#).await;
    let old = raw.next().await.unwrap();
    assert_eq!((&old["id"], &old["error"]["code"]), (&json!(6), &json!(-32600)), "{old}");
    raw.send_line(r#"{"jsonrpc":"2.0","id":7,"method":"nope"}"#).await;
    let (error, before) = raw.response(7).await;
    assert_eq!(error["error"]["code"], -32601, "{error}");
    assert!(before.is_empty(), "{before:?}");

    raw.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})).await;
    let (list, _) = raw.response(8).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "read_file"), "{list}");

    raw.call_tool(9, "noop", None).await;
    let (noop, _) = raw.response(9).await;
    assert_eq!(result_text(&noop), "ok");
    raw.finish().await;
}

/// `tools/call` whose params don't fit is `-32602 Invalid params` with the
/// request's id, never "method not found".
#[tokio::test(flavor = "multi_thread")]
async fn unfit_tools_call_params_are_invalid_params() {
    let work = tempfile::tempdir().unwrap();
    let mut raw = Raw::start(work.path(), &[]).await;
    let cases = [
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call"}),
        json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "noop", "arguments": "x"}}),
        json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "noop", "arguments": [1]}}),
        json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "noop", "arguments": 3}}),
        json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": 5}}),
        json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": "noop"}),
    ];
    for (n, case) in cases.into_iter().enumerate() {
        raw.send(case.clone()).await;
        let (answer, _) = raw.response(10 + n as u64).await;
        assert_eq!(answer["error"]["code"], -32602, "{case}: {answer}");
    }
    raw.call_tool(20, "noop", None).await;
    let (noop, _) = raw.response(20).await;
    assert_eq!(result_text(&noop), "ok");
    raw.finish().await;
}

/// A 2025-03-26 session takes batches: one array back with every request's
/// answer (invalid members answered in it, notifications not); other
/// revisions refuse a batch with one -32600.
#[tokio::test(flavor = "multi_thread")]
async fn batches_are_answered_on_a_2025_03_26_session_only() {
    let work = tempfile::tempdir().unwrap();
    let mut raw = Raw::start_as(work.path(), &[], "2025-03-26").await;
    raw.send(json!([
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "noop"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "noop", "arguments": "x"}},
        7
    ]))
    .await;
    let batch = raw.next_value().await;
    let answers = batch.as_array().unwrap_or_else(|| panic!("a batch answer: {batch}"));
    assert_eq!(answers.len(), 4, "{batch}");
    let by_id =
        |id: Value| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no {id} in {batch}"));
    assert_eq!(result_text(by_id(json!(2))), "ok");
    assert!(by_id(json!(3))["result"]["tools"].is_array());
    assert_eq!(by_id(json!(4))["error"]["code"], -32602);
    assert_eq!(by_id(Value::Null)["error"]["code"], -32600);
    // Notifications alone: no answer; the next request is answered alone.
    raw.send(json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}])).await;
    raw.call_tool(5, "noop", None).await;
    let (noop, before) = raw.response(5).await;
    assert_eq!(result_text(&noop), "ok");
    assert!(before.is_empty(), "{before:?}");
    raw.finish().await;

    let mut later = Raw::start_as(work.path(), &[], "2025-06-18").await;
    later.send(json!([{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])).await;
    let refused = later.next().await.unwrap();
    assert_eq!((&refused["id"], &refused["error"]["code"]), (&Value::Null, &json!(-32600)), "{refused}");
    later.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_run_under_serve_and_their_answers_are_in_the_result_meta() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "alpha\n").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let policy = elsewhere.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"write_file\"\n\
         command = [\"sh\", \"-c\", \"cat >/dev/null; echo not over MCP either >&2; exit 2\"]\n\
         [[hooks]]\nevent = \"post-tool-use\"\nmatcher = \"read_file\"\n\
         command = [\"sh\", \"-c\", \"cat >/dev/null; echo '{\\\"halt\\\": true, \\\"additional_context\\\": \\\"enough\\\"}'\"]\n",
    )
    .unwrap();
    let client = client(work.path(), &["--policy", policy.to_str().unwrap(), "--mode", "yolo"]).await;
    let denied = call(&client, "write_file", json!({"path": "a.txt", "content": "x"})).await;
    assert_eq!(denied.is_error, Some(true));
    let body = denied.content[0].as_text().unwrap().text.clone();
    assert!(body.starts_with("permission_denied") && body.contains("not over MCP either"), "{body}");
    let meta = denied.meta.as_ref().expect("_meta").0.clone();
    assert_eq!(meta["toolhost/permission"]["hooks"][0]["decision"], "deny", "{meta:?}");
    assert!(!work.path().join("a.txt").exists());
    let read = call(&client, "read_file", json!({"path": "notes.txt"})).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(read.content[0].as_text().unwrap().text.ends_with("[hook] enough"), "{read:?}");
    let meta = read.meta.as_ref().expect("_meta").0.clone();
    assert_eq!(meta["toolhost/halt"], true, "{meta:?}");
    client.cancel().await.unwrap();
}
