//! `toolhost serve --http` end to end: the built binary on a free loopback
//! port, driven by hand-written HTTP (reqwest with no proxy, and raw TCP where
//! the bytes on the wire matter), in both protocol eras: 2025-11-25
//! (`initialize`, `Mcp-Session-Id`) and 2026-07-28 (stateless, `_meta` on
//! every request). Nothing leaves 127.0.0.1.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use toolhost_tests::{HOSTILE_WASM, toolhost_bin, workspace_root};

/// How long any single wait on the server may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);
/// Fuel that never runs out: only the deadline or cancellation stops `spin`.
const NO_FUEL_LIMIT: &str = "18446744073709551615";
const TOKEN: &str = "test-token-0123456789abcdef";
const NEW: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

fn serve_command(work: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(work).args(["--plugin", HOSTILE_WASM, "--eager"]).args(extra);
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"));
    cmd.env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    cmd
}

/// A `toolhost serve --http 127.0.0.1:0` and where it listens; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    http: reqwest::Client,
}

impl Server {
    async fn start(work: &Path, extra: &[&str]) -> Self {
        let serve = serve_command(work, &[&["--http", "127.0.0.1:0"], extra].concat());
        let (child, addr) = toolhost_tests::start_http_server(serve, PATIENCE).await;
        assert!(addr.ip().is_loopback(), "{addr}");
        let http = toolhost_tests::servers::http_client().build().unwrap();
        Self { child, addr, http }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// POST `body` with the MCP headers and `extra` headers.
    async fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Reply {
        self.post_text(&body.to_string(), extra).await
    }

    async fn post_text(&self, body: &str, extra: &[(&str, &str)]) -> Reply {
        let mut request = self
            .http
            .post(self.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        let response =
            tokio::time::timeout(PATIENCE, request.send()).await.expect("answered in time").unwrap();
        Reply::read(response).await
    }

    /// A 2026-07-28 request: `_meta` and the standard headers filled in.
    async fn stateless(&self, id: u64, method: &str, params: Value) -> Reply {
        let body = stateless_body(id, method, params);
        let headers = standard_headers(&body);
        let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.post(&body, &refs).await
    }

    fn cpu_time(&self) -> Duration {
        let pid = self.child.id().expect("server running");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("reading /proc/PID/stat");
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_millis(ticks * 10)
    }
}

fn stateless_body(id: u64, method: &str, mut params: Value) -> Value {
    if !params.is_object() {
        params = json!({});
    }
    let meta = params.as_object_mut().unwrap().entry("_meta").or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!(NEW);
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "http-test", "version": "0"});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `MCP-Protocol-Version`, `Mcp-Method` and (for tools/call) `Mcp-Name` for `body`.
fn standard_headers(body: &Value) -> Vec<(&'static str, String)> {
    let version = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str().unwrap_or(NEW);
    let mut headers = vec![
        ("mcp-protocol-version", version.to_string()),
        ("mcp-method", body["method"].as_str().unwrap().into()),
    ];
    if body["method"] == "tools/call" {
        headers.push(("mcp-name", body["params"]["name"].as_str().unwrap().into()));
    }
    headers
}

/// An HTTP answer: status, headers, and the JSON-RPC messages in its body
/// (one JSON document, or each `data:` of an event stream).
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    text: String,
    messages: Vec<Value>,
}

impl Reply {
    async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = tokio::time::timeout(PATIENCE, response.text()).await.expect("body in time").unwrap();
        let messages = messages(&headers, &text);
        Self { status, headers, text, messages }
    }

    /// The response (not a notification) among the messages.
    fn answer(&self) -> &Value {
        self.messages
            .iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {} {}", self.status, self.text))
    }

    fn session(&self) -> Option<&str> {
        self.headers.get("mcp-session-id").and_then(|v| v.to_str().ok())
    }
}

fn messages(headers: &reqwest::header::HeaderMap, text: &str) -> Vec<Value> {
    let kind = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    if kind.starts_with("application/json") {
        return vec![serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))];
    }
    if !kind.starts_with("text/event-stream") {
        return Vec::new();
    }
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> =
                event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
            let data = data.join("\n");
            (!data.is_empty()).then(|| serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}")))
        })
        .collect()
}

/// Write `text` to a new file in `dir` with `mode`.
fn write_file(dir: &Path, name: &str, text: &str, mode: u32) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_str().unwrap().to_string()
}

fn init_body(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "http-test", "version": "0"}}})
}

/// A raw HTTP/1.1 exchange: send `head` (and nothing else), read until the
/// server closes or `wait` passes; returns what came back and how long it took.
async fn raw(addr: SocketAddr, request: &[u8], wait: Duration) -> (String, Duration) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut got)).await;
    (String::from_utf8_lossy(&got).into_owned(), started.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_is_required_when_given() {
    let work = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token_file = write_file(secrets.path(), "token", &format!("{TOKEN}\n"), 0o600);
    let server = Server::start(work.path(), &["--token-file", &token_file]).await;
    let body = stateless_body(1, "server/discover", json!({}));
    let post = |authorization: Option<String>| {
        let mut headers = standard_headers(&body);
        headers.extend(authorization.map(|a| ("authorization", a)));
        let server = &server;
        let body = &body;
        async move {
            let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            server.post(body, &refs).await
        }
    };
    let none = post(None).await;
    assert_eq!(none.status, 401, "{}", none.text);
    assert_eq!(none.headers.get("www-authenticate").unwrap(), "Bearer");
    for wrong in [
        format!("Bearer {TOKEN}x"),
        format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
        format!("Basic {TOKEN}"),
        TOKEN.to_string(),
    ] {
        let reply = post(Some(wrong.clone())).await;
        assert_eq!(reply.status, 401, "{wrong}: {}", reply.text);
    }
    let ok = post(Some(format!("Bearer {TOKEN}"))).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.answer()["result"]["resultType"], "complete", "{}", ok.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn unsafe_settings_are_refused_before_listening() {
    let work = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let readable = write_file(secrets.path(), "readable", TOKEN, 0o644);
    let short = write_file(secrets.path(), "short", "abc", 0o600);
    let good = write_file(secrets.path(), "good", TOKEN, 0o600);
    let link = secrets.path().join("link");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let link = link.to_str().unwrap().to_string();
    let cases: [(&[&str], &str); 6] = [
        (&["--http", "127.0.0.1:0", "--token-file", &readable], "chmod 600"),
        (&["--http", "127.0.0.1:0", "--token-file", &short], "at least 16 bytes"),
        (&["--http", "127.0.0.1:0", "--token-file", &link], "link"),
        // Refused before any bind: nothing listens beyond loopback.
        (&["--http", "0.0.0.0:0"], "--allow-remote"),
        (&["--http", "0.0.0.0:0", "--allow-remote"], "--token-file"),
        (&["--http", "127.0.0.1:0", "--calls-per-client", "0"], "at least 1"),
    ];
    for (args, expected) in cases {
        let out =
            tokio::time::timeout(PATIENCE, serve_command(work.path(), args).stdin(Stdio::null()).output())
                .await
                .unwrap()
                .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("serving MCP"), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn origin_and_host_must_be_the_servers_own() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--allow-origin", "https://app.example:443"]).await;
    let body = init_body(1, LEGACY);
    let own = format!("http://{}", server.addr);
    let localhost = format!("http://localhost:{}", server.addr.port());
    for origin in [own.as_str(), localhost.as_str(), "https://app.example"] {
        let reply = server.post(&body, &[("origin", origin)]).await;
        assert_eq!(reply.status, 200, "{origin}: {}", reply.text);
    }
    let other_port = format!("http://127.0.0.1:{}", server.addr.port() + 1);
    for origin in ["http://evil.example", "https://app.example:8443", "null", other_port.as_str()] {
        let reply = server.post(&body, &[("origin", origin)]).await;
        assert_eq!(reply.status, 403, "{origin}: {}", reply.text);
    }
    // DNS rebinding: a name that resolved to 127.0.0.1 arrives as the Host.
    let text = body.to_string();
    for host in ["evil.example", "evil.example:80", "127.0.0.1:1"] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        );
        let (reply, _) = raw(server.addr, request.as_bytes(), PATIENCE).await;
        assert!(reply.starts_with("HTTP/1.1 403"), "{host}: {reply}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_paths_and_versions_are_checked() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--max-body-bytes", "4096"]).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x".repeat(5000)}}});
    let reply = server.post(&big, &[]).await;
    assert_eq!(reply.status, 413, "{}", reply.text);

    let wrong_path =
        server.http.post(format!("http://{}/other", server.addr)).body("{}").send().await.unwrap();
    assert_eq!(wrong_path.status().as_u16(), 404);

    // An unknown MCP-Protocol-Version on a legacy request: 400.
    let reply = server.post(&init_body(1, LEGACY), &[("mcp-protocol-version", "1999-01-01")]).await;
    assert_eq!(reply.status, 400, "{}", reply.text);

    // The JSON-RPC front answers as over stdio.
    let reply = server.post_text("{not json", &[]).await;
    assert_eq!(reply.status, 400);
    assert_eq!((&reply.answer()["id"], &reply.answer()["error"]["code"]), (&Value::Null, &json!(-32700)));
    let reply = server.post_text("[]", &[]).await;
    assert_eq!(reply.answer()["error"]["code"], -32600, "{}", reply.text);
    let unfit = stateless_body(5, "tools/call", json!({"name": "echo", "arguments": "text=x"}));
    let reply = server.post(&unfit, &[]).await;
    assert_eq!((&reply.answer()["id"], &reply.answer()["error"]["code"]), (&json!(5), &json!(-32602)));
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_clients_initialize_and_get_a_session() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    let server = Server::start(work.path(), &[]).await;
    let init = server.post(&init_body(1, LEGACY), &[]).await;
    assert_eq!(init.status, 200, "{}", init.text);
    let session = init.session().expect("an Mcp-Session-Id").to_string();
    let result = &init.answer()["result"];
    assert_eq!(result["protocolVersion"], LEGACY, "{result}");
    assert_eq!(result["serverInfo"]["name"], "toolhost");
    assert!(result.get("resultType").is_none(), "{result}");
    let with = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", LEGACY)];
    let note = server.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), &with).await;
    assert_eq!(note.status, 202, "{}", note.text);

    let list = server.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), &with).await;
    let tools = list.answer()["result"]["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.is_sorted() && names.contains(&"read_file") && names.contains(&"spin"), "{names:?}");

    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "a.txt"}}});
    let reply = server.post(&call, &with).await;
    let result = &reply.answer()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert!(result["structuredContent"]["output"].as_str().unwrap().contains("alpha"), "{result}");
    let ping = server.post(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}), &with).await;
    assert_eq!(ping.answer()["result"], json!({}), "{}", ping.text);

    // Without the session id, a legacy request is refused; an unknown one is 404.
    let lost = server.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}), &[]).await;
    assert_eq!(lost.status, 400, "{}", lost.text);
    let unknown = server
        .post(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}), &[("mcp-session-id", "nope")])
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_clients_discover_list_and_call() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    let server = Server::start(work.path(), &[]).await;
    let discover = server.stateless(1, "server/discover", json!({})).await;
    assert_eq!(discover.status, 200, "{}", discover.text);
    assert!(discover.session().is_none(), "no session id in 2026-07-28");
    let result = &discover.answer()["result"];
    let versions: Vec<&str> =
        result["supportedVersions"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(versions.contains(&NEW) && versions.contains(&LEGACY), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "{result}");
    let info = result.get("serverInfo").or_else(|| result["_meta"].get("io.modelcontextprotocol/serverInfo"));
    assert_eq!(info.map(|i| &i["name"]), Some(&json!("toolhost")), "{result}");

    let first = server.stateless(2, "tools/list", json!({})).await;
    let again = server.stateless(3, "tools/list", json!({})).await;
    let result = &first.answer()["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "{result}");
    assert_eq!(result["tools"], again.answer()["result"]["tools"], "the same order every time");
    let names: Vec<&str> =
        result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.is_sorted(), "{names:?}");

    let call =
        server.stateless(4, "tools/call", json!({"name": "read_file", "arguments": {"path": "a.txt"}})).await;
    assert!(call.session().is_none());
    let result = &call.answer()["result"];
    assert_eq!((&result["resultType"], &result["isError"]), (&json!("complete"), &json!(false)), "{result}");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("alpha"), "{result}");

    // No ping and no GET stream in 2026-07-28.
    let ping = server.stateless(5, "ping", json!({})).await;
    assert_eq!(ping.answer()["error"]["code"], -32601, "{}", ping.text);
    let get = server
        .http
        .get(server.url())
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", NEW)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 405);
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_versions_and_mismatched_headers_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &[]).await;
    let mut body = stateless_body(1, "tools/list", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let headers = standard_headers(&body);
    let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let reply = server.post(&body, &refs).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    let error = &reply.answer()["error"];
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["requested"], "2099-01-01", "{error}");
    assert!(error["data"]["supported"].as_array().unwrap().contains(&json!(NEW)), "{error}");

    let call = stateless_body(2, "tools/call", json!({"name": "noop", "arguments": {}}));
    let version = ("mcp-protocol-version", NEW);
    for (what, headers) in [
        ("method", vec![version, ("mcp-method", "tools/list"), ("mcp-name", "noop")]),
        ("no method", vec![version, ("mcp-name", "noop")]),
        ("name", vec![version, ("mcp-method", "tools/call"), ("mcp-name", "spin")]),
        ("no name", vec![version, ("mcp-method", "tools/call")]),
        (
            "version",
            vec![("mcp-protocol-version", LEGACY), ("mcp-method", "tools/call"), ("mcp-name", "noop")],
        ),
    ] {
        let reply = server.post(&call, &headers).await;
        assert_eq!(reply.status, 400, "{what}: {}", reply.text);
        assert_eq!(reply.answer()["error"]["code"], -32020, "{what}: {}", reply.text);
    }
    let fine = server.post(&call, &[version, ("mcp-method", "tools/call"), ("mcp-name", "noop")]).await;
    assert_eq!(fine.answer()["result"]["content"][0]["text"], "ok", "{}", fine.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_and_greedy_clients_are_bounded() {
    let work = tempfile::tempdir().unwrap();
    let extra = [
        "--idle-timeout-ms",
        "500",
        "--calls-per-client",
        "2",
        "--fuel",
        NO_FUEL_LIMIT,
        "--timeout-ms",
        "60000",
    ];
    let server = Server::start(work.path(), &extra).await;
    let host = format!("Host: {}\r\n", server.addr);

    // A head that never ends: the connection is closed after the idle timeout.
    let (_, took) = raw(server.addr, format!("POST /mcp HTTP/1.1\r\n{host}").as_bytes(), PATIENCE).await;
    assert!(took < Duration::from_secs(5), "a slow head held the connection {took:?}");
    // A body that never ends: 408 after the idle timeout.
    let head = format!(
        "POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    let (reply, took) = raw(server.addr, head.as_bytes(), PATIENCE).await;
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(took < Duration::from_secs(5), "a slow body held the connection {took:?}");

    // Idle connections do not keep a real client out.
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
    }
    let reply = server.stateless(1, "tools/call", json!({"name": "noop", "arguments": {}})).await;
    assert_eq!(reply.answer()["result"]["content"][0]["text"], "ok", "{}", reply.text);
    drop(idle);

    // Two calls in flight for this client: a third is 429.
    let cpu_idle = server.cpu_time();
    let mut spinning = Vec::new();
    for id in [10, 11] {
        let body = stateless_body(id, "tools/call", json!({"name": "spin", "arguments": {}}));
        let headers = standard_headers(&body);
        let request = server
            .http
            .post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .headers(headers.iter().map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap())).collect())
            .body(body.to_string());
        spinning.push(tokio::spawn(request.send()));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let third = server.stateless(12, "tools/call", json!({"name": "noop", "arguments": {}})).await;
    assert_eq!(third.status, 429, "{}", third.text);
    assert!(server.cpu_time() - cpu_idle > Duration::from_millis(300), "the spins are running");

    // The clients go away: their calls are cancelled, the guests stop, the slots come back.
    for task in spinning {
        task.abort();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu = server.cpu_time();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let busy = server.cpu_time() - cpu;
    assert!(
        busy < Duration::from_millis(400),
        "the server used {busy:?} of CPU in 1 s after the clients left"
    );
    let after = server.stateless(13, "tools/call", json!({"name": "noop", "arguments": {}})).await;
    assert_eq!(after.answer()["result"]["content"][0]["text"], "ok", "{}", after.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_and_cancellation_work_over_http() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--fuel", NO_FUEL_LIMIT, "--timeout-ms", "2500"]).await;

    // 2026-07-28: progress on the request's own event stream, then the result.
    let mut body = stateless_body(1, "tools/call", json!({"name": "spin", "arguments": {}}));
    body["params"]["_meta"]["progressToken"] = json!("p-1");
    let headers = standard_headers(&body);
    let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let reply = server.post(&body, &refs).await;
    let progress: Vec<&Value> =
        reply.messages.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(progress.len() >= 2, "{}", reply.text);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p-1"), "{}", reply.text);
    let result = &reply.answer()["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(result["content"][0]["text"].as_str().unwrap().starts_with("timeout"), "{result}");

    // 2025-11-25: notifications/cancelled on the session stops the call.
    let server = Server::start(work.path(), &["--fuel", NO_FUEL_LIMIT, "--timeout-ms", "60000"]).await;
    let init = server.post(&init_body(1, LEGACY), &[]).await;
    let session = init.session().unwrap().to_string();
    let with = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", LEGACY)];
    server.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), &with).await;
    let spin = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "spin", "arguments": {}}});
    let request = server
        .http
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session.as_str())
        .header("mcp-protocol-version", LEGACY)
        .body(spin.to_string());
    let pending = tokio::spawn(async move { request.send().await.map(|r| r.status().as_u16()) });
    tokio::time::sleep(Duration::from_millis(800)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "test cancels"}});
    let reply = server.post(&cancel, &with).await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu = server.cpu_time();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let busy = server.cpu_time() - cpu;
    assert!(busy < Duration::from_millis(400), "the server used {busy:?} of CPU in 1 s after the cancel");
    let noop = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "noop", "arguments": {}}});
    let reply = server.post(&noop, &with).await;
    assert_eq!(reply.answer()["result"]["content"][0]["text"], "ok", "{}", reply.text);
    pending.abort();
}

/// The 2026-07-28 era over stdio: `server/discover` and per-request `_meta`, no `initialize`.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_serves_the_stateless_era_too() {
    let work = tempfile::tempdir().unwrap();
    let mut child = serve_command(work.path(), &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut unsupported = stateless_body(3, "tools/list", json!({}));
    unsupported["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    for body in [
        stateless_body(1, "server/discover", json!({})),
        stateless_body(2, "tools/call", json!({"name": "noop", "arguments": {}})),
        unsupported,
        stateless_body(4, "tools/list", json!({})),
    ] {
        stdin.write_all(format!("{body}\n").as_bytes()).await.unwrap();
    }
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 4 {
        let line =
            tokio::time::timeout(PATIENCE, stdout.next_line()).await.unwrap().unwrap().expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_u64() {
            answers.insert(id, message);
        }
    }
    let discover = &answers[&1]["result"];
    assert!(discover["supportedVersions"].as_array().unwrap().contains(&json!(NEW)), "{discover}");
    assert_eq!(discover["resultType"], "complete", "{discover}");
    let call = &answers[&2]["result"];
    assert_eq!(
        (&call["resultType"], &call["content"][0]["text"]),
        (&json!("complete"), &json!("ok")),
        "{call}"
    );
    let error = &answers[&3]["error"];
    assert_eq!(
        (&error["code"], &error["data"]["requested"]),
        (&json!(-32022), &json!("2099-01-01")),
        "{error}"
    );
    let list = &answers[&4]["result"];
    assert!(list["ttlMs"].is_u64() && list["resultType"] == "complete", "{list}");
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
}

/// Two instances sharing `--store`: a cut output of a call answered by one is
/// read back through the other (as behind a load balancer with no stickiness).
#[tokio::test(flavor = "multi_thread")]
async fn read_output_works_across_instances_sharing_a_store() {
    let work = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let store = shared.path().join("outputs");
    let store_arg = store.to_str().unwrap();
    let a = Server::start(work.path(), &["--store", store_arg, "--clamp-bytes", "2048"]).await;
    let b = Server::start(work.path(), &["--store", store_arg, "--clamp-bytes", "2048"]).await;

    let big =
        a.stateless(1, "tools/call", json!({"name": "big_output", "arguments": {"bytes": 100000}})).await;
    let text = big.answer()["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(!text.contains("line 7777\n"), "the middle was cut: {text}");
    let marker = "call read_output with {\"call_id\": \"";
    let at = text.find(marker).unwrap_or_else(|| panic!("no read_output marker in {text}")) + marker.len();
    let call_id = &text[at..at + text[at..].find('"').unwrap()];

    let read = b
        .stateless(
            2,
            "tools/call",
            json!({"name": "read_output", "arguments": {"call_id": call_id, "pattern": "^line 7777$"}}),
        )
        .await;
    let found = read.answer()["result"]["content"][0]["text"].as_str().unwrap();
    assert!(found.contains("line 7777"), "{found}");

    // The files are private, the directory too.
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(std::fs::metadata(&store).unwrap().mode() & 0o777, 0o700);
    let files: Vec<_> = std::fs::read_dir(&store).unwrap().flatten().collect();
    assert!(!files.is_empty());
    for file in files {
        assert_eq!(file.metadata().unwrap().mode() & 0o777, 0o600, "{:?}", file.path());
    }
    // A call id that is a path names nothing outside the store.
    let escape = b
        .stateless(
            3,
            "tools/call",
            json!({"name": "read_output", "arguments": {"call_id": "../../../../etc/passwd"}}),
        )
        .await;
    let miss = escape.answer()["result"]["content"][0]["text"].as_str().unwrap();
    assert!(!miss.contains("root:"), "{miss}");
}
