//! Approvals through the MCP client, end to end: `toolhost serve` (default
//! mode: `write_file` asks first) asks the client's user, over stdio and
//! Streamable HTTP, in both protocol eras.
//!
//! - 2026-07-28: the call answers `resultType: "input_required"` with an
//!   `elicitation/create` and a sealed `requestState`; the retry carries the
//!   answer. Hostile retries: replayed, for other arguments, another tool, a
//!   changed or forged state, expired, answered on an instance with another
//!   key, garbage answers.
//! - 2025-11-25: the server sends `elicitation/create` on the session; clients
//!   that answer garbage, never answer, decline.
//! - A client with neither way to be asked is denied, saying why.
//! - "always" saves the narrowest rule, and the same call then runs unasked.
//! - The official Python SDK (PyPI `mcp`, installed by `.ci/run`) as a client
//!   the project did not write, in both eras, over both transports.
//!
//! Hand-written JSON-RPC where the bytes matter; nothing leaves 127.0.0.1.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio as Piped;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use toolhost_tests::{test_config_dir, toolhost_bin, workspace_root};

/// How long any single wait on the server may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);
const NEW: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// What the permissions say about `write_file` in default mode.
const WHY: &str = "write_file can change things, and default mode asks first";

fn serve_command(work: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(work).args(extra);
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"));
    cmd.env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env("TOOLHOST_CONFIG_DIR", test_config_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    cmd
}

/// The private policy "always" writes for `work`.
fn private_policy(work: &Path) -> String {
    let path =
        toolhost::policy::ConfigDir::at(test_config_dir()).private_policy(&work.canonicalize().unwrap());
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A 2026-07-28 request: `_meta` filled in; `elicit`: the client declares elicitation.
fn modern(id: u64, method: &str, mut params: Value, elicit: bool) -> Value {
    let caps = if elicit { json!({"elicitation": {"form": {}}}) } else { json!({}) };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": NEW,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "approvals-test", "version": "0"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn write(path: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": "x"}})
}

fn accept(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

/// `call` retried with `state` and `answer` (none: no `inputResponses`).
fn retry(call: &Value, state: &str, answer: Option<Value>) -> Value {
    let mut call = call.clone();
    call["requestState"] = json!(state);
    if let Some(answer) = answer {
        call["inputResponses"] = json!({"approval": answer});
    }
    call
}

/// Something that answers one JSON-RPC request with its response.
trait Rpc {
    async fn rpc(&mut self, body: Value) -> Value;
}

/// `toolhost serve` on stdio, driven line by line.
struct StdioServer {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl StdioServer {
    fn start(work: &Path, extra: &[&str]) -> Self {
        let mut child = serve_command(work, extra)
            .stdin(Piped::piped())
            .stdout(Piped::piped())
            .stderr(Piped::inherit())
            .spawn()
            .expect("spawning toolhost serve");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { _child: child, stdin, lines }
    }

    async fn send(&mut self, message: &Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The next message from the server (notifications skipped).
    async fn next(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
                .await
                .expect("the server answers in time")
                .unwrap()
                .expect("the server is still there");
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// A 2025-11-25 session, the client declaring `capabilities`.
    async fn initialize(&mut self, capabilities: Value) {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": capabilities,
            "clientInfo": {"name": "approvals-test", "version": "0"}}});
        let reply = self.rpc(init).await;
        assert_eq!(reply["result"]["protocolVersion"], LEGACY, "{reply}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    }
}

impl Rpc for StdioServer {
    async fn rpc(&mut self, body: Value) -> Value {
        self.send(&body).await;
        let reply = self.next().await;
        assert_eq!(reply["id"], body["id"], "an answer to {body}, not {reply}");
        reply
    }
}

/// `toolhost serve --http 127.0.0.1:0`; killed when dropped.
struct HttpServer {
    _child: Child,
    addr: SocketAddr,
    http: reqwest::Client,
}

impl HttpServer {
    async fn start(work: &Path, extra: &[&str]) -> Self {
        let serve = serve_command(work, &[&["--http", "127.0.0.1:0"], extra].concat());
        let (child, addr) = toolhost_tests::start_http_server(serve, PATIENCE).await;
        Self { _child: child, addr, http: toolhost_tests::servers::http_client().build().unwrap() }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// POST `body` with `headers`; the response, to read as it comes.
    async fn post(&self, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self
            .http
            .post(self.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        tokio::time::timeout(PATIENCE, request.send()).await.expect("answered in time").unwrap()
    }
}

impl Rpc for HttpServer {
    /// A 2026-07-28 request, with `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`.
    async fn rpc(&mut self, body: Value) -> Value {
        let method = body["method"].as_str().unwrap().to_string();
        let mut headers = vec![("mcp-protocol-version", NEW.to_string()), ("mcp-method", method.clone())];
        if method == "tools/call" {
            headers.push(("mcp-name", body["params"]["name"].as_str().unwrap().to_string()));
        }
        let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut events = Events::new(self.post(&body, &refs).await);
        loop {
            let message = events.next().await.unwrap_or_else(|| panic!("no answer to {body}"));
            if message.get("id").is_some() {
                return message;
            }
        }
    }
}

/// The JSON-RPC messages of an HTTP response as they arrive: one JSON body,
/// or the `data:` of each server-sent event.
struct Events {
    response: reqwest::Response,
    stream: bool,
    buffer: String,
    done: bool,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
        let stream = kind.starts_with("text/event-stream");
        Self { response, stream, buffer: String::new(), done: false }
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            if self.stream
                && let Some(end) = self.buffer.find("\n\n")
            {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> =
                    event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
                if data.is_empty() || data.join("").is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            if self.done {
                let rest = std::mem::take(&mut self.buffer);
                return (!self.stream && !rest.trim().is_empty())
                    .then(|| serde_json::from_str(&rest).unwrap_or_else(|e| panic!("{e}: {rest}")));
            }
            match tokio::time::timeout(PATIENCE, self.response.chunk()).await.expect("more in time").unwrap()
            {
                Some(chunk) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                None => self.done = true,
            }
        }
    }
}

/// The `result` of a reply that must be a complete tool result; its text.
fn complete(reply: &Value) -> (bool, String) {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "{reply}");
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {reply}"));
    (result["isError"] == true, text.to_string())
}

/// The question in a reply that must ask; its `requestState`.
fn asked(reply: &Value) -> (Value, String) {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let question = result["inputRequests"]["approval"].clone();
    assert_eq!(question["method"], "elicitation/create", "{reply}");
    (question["params"].clone(), result["requestState"].as_str().expect("a requestState").to_string())
}

/// The `-32602` refusal of a retry; its message.
fn refused(reply: &Value) -> String {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply.get("result").is_none(), "{reply}");
    reply["error"]["message"].as_str().unwrap().to_string()
}

/// The question is a form: one required string `decision`, once/always/deny
/// with titles; a message naming the tool, its arguments and why it asked.
fn check_question(params: &Value, path: &str) {
    let message = params["message"].as_str().unwrap();
    assert!(message.contains("`write_file` (builtin:fs)"), "{message}");
    assert!(message.contains(&format!("\"path\":\"{path}\"")), "{message}");
    assert!(message.contains(WHY), "{message}");
    assert!(message.contains(&format!("write_file(path={path})")), "{message}");
    let schema = &params["requestedSchema"];
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["required"], json!(["decision"]), "{schema}");
    let decision = &schema["properties"]["decision"];
    assert_eq!(decision["type"], "string", "{schema}");
    let options = decision["oneOf"].as_array().unwrap_or_else(|| panic!("titled options: {schema}"));
    let consts: Vec<&str> = options.iter().map(|o| o["const"].as_str().unwrap()).collect();
    assert_eq!(consts, ["once", "always", "deny"], "{schema}");
    assert!(options[1]["title"].as_str().unwrap().contains(&format!("write_file(path={path})")), "{schema}");
    assert!(options.iter().all(|o| o["title"].as_str().is_some_and(|t| t.len() > 10)), "{schema}");
}

/// Every 2026-07-28 case, on one transport.
async fn stateless_approvals(server: &mut impl Rpc, work: &Path) {
    let exists = |name: &str| work.join(name).exists();
    // Read-only calls are not asked about.
    std::fs::write(work.join("r.txt"), "read me\n").unwrap();
    let read = json!({"name": "read_file", "arguments": {"path": "r.txt"}});
    assert!(!complete(&server.rpc(modern(1, "tools/call", read, true)).await).0);

    // Asked in the result; nothing runs until the answer comes.
    let call_a = write("a.txt");
    let (question, state) = asked(&server.rpc(modern(2, "tools/call", call_a.clone(), true)).await);
    check_question(&question, "a.txt");
    assert!(!exists("a.txt"));
    let reply = server.rpc(modern(3, "tools/call", retry(&call_a, &state, Some(accept("once"))), true)).await;
    assert_eq!(complete(&reply), (false, "Created a.txt (1 bytes).".to_string()), "{reply}");
    assert!(exists("a.txt"));
    // Once means once: the same retry again is refused.
    let replay =
        server.rpc(modern(4, "tools/call", retry(&call_a, &state, Some(accept("once"))), true)).await;
    assert!(refused(&replay).contains("used already"), "{replay}");

    // An answer is about its own call: other arguments, another tool.
    let call_b = write("b.txt");
    let (_, state_b) = asked(&server.rpc(modern(5, "tools/call", call_b.clone(), true)).await);
    let other_args = retry(&write("c.txt"), &state_b, Some(accept("once")));
    let reply = server.rpc(modern(6, "tools/call", other_args, true)).await;
    assert!(refused(&reply).contains("other arguments"), "{reply}");
    let mut other_tool = retry(&call_b, &state_b, Some(accept("once")));
    other_tool["name"] = json!("edit_file");
    other_tool["arguments"] = json!({"path": "b.txt", "old_string": "a", "new_string": "b"});
    let reply = server.rpc(modern(7, "tools/call", other_tool, true)).await;
    assert!(refused(&reply).contains("about a call to `write_file`"), "{reply}");
    assert!(!exists("b.txt") && !exists("c.txt"));

    // A changed or made-up state does not verify; an answer needs its state.
    let mut changed = state_b.clone().into_bytes();
    let at = changed.len() / 2;
    changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    for state in [changed.as_str(), "rs1.AAAAAAAAAAA.AAAA", "", "{\"tool\":\"write_file\"}"] {
        let reply =
            server.rpc(modern(8, "tools/call", retry(&call_b, state, Some(accept("once"))), true)).await;
        assert!(refused(&reply).contains("does not verify"), "{state:?}: {reply}");
    }
    let mut no_state = call_b.clone();
    no_state["inputResponses"] = json!({"approval": accept("once")});
    let reply = server.rpc(modern(9, "tools/call", no_state, true)).await;
    assert!(refused(&reply).contains("without the requestState"), "{reply}");
    assert!(!exists("b.txt"));

    // A retry without the answer is asked again; a declined question denies.
    let (_, again) = asked(&server.rpc(modern(10, "tools/call", retry(&call_b, &state_b, None), true)).await);
    assert_ne!(again, state_b);
    let declined = json!({"action": "decline"});
    let reply = server.rpc(modern(11, "tools/call", retry(&call_b, &state_b, Some(declined)), true)).await;
    let denied = "permission_denied: the user denied write_file: declined the question";
    assert_eq!(complete(&reply), (true, denied.to_string()), "{reply}");
    let reply =
        server.rpc(modern(12, "tools/call", retry(&call_b, &again, Some(accept("deny"))), true)).await;
    assert_eq!(complete(&reply), (true, "permission_denied: the user denied write_file".to_string()));
    assert!(!exists("b.txt"));

    // Garbage answers run nothing, and say why.
    for (n, (answer, why)) in [
        (accept("yes please"), "the client's decision \"yes please\" is none of once, always, deny"),
        (json!({"action": "accept", "content": {"decision": ["once"]}}), "not one of the strings"),
        (json!({"action": "accept"}), "accepted without a decision"),
        (json!("once"), "not an elicitation result"),
        (json!({"action": "sure"}), "not an elicitation result"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 20 + 2 * n as u64;
        let (_, state) = asked(&server.rpc(modern(id, "tools/call", write("d.txt"), true)).await);
        let reply = server
            .rpc(modern(id + 1, "tools/call", retry(&write("d.txt"), &state, Some(answer)), true))
            .await;
        let (error, text) = complete(&reply);
        assert!(error && text.starts_with("permission_denied: write_file was not approved: "), "{reply}");
        assert!(text.contains(why), "{reply}");
    }
    assert!(!exists("d.txt"));

    // A client that declares no elicitation cannot be asked: denied, saying so.
    let reply = server.rpc(modern(40, "tools/call", write("e.txt"), false)).await;
    let (error, text) = complete(&reply);
    assert!(error && text.contains("this MCP client cannot be asked"), "{reply}");
    assert!(text.contains("`elicitation`"), "{reply}");
    assert!(!exists("e.txt"));
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_clients_are_asked_in_the_result_over_stdio() {
    let work = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(work.path(), &[]);
    stateless_approvals(&mut server, work.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_clients_are_asked_in_the_result_over_http() {
    let work = tempfile::tempdir().unwrap();
    let mut server = HttpServer::start(work.path(), &[]).await;
    stateless_approvals(&mut server, work.path()).await;
}

/// "always" saves the narrowest rule, and the next identical call is not asked.
#[tokio::test(flavor = "multi_thread")]
async fn always_saves_the_rule_and_the_same_call_is_not_asked_again() {
    let work = tempfile::tempdir().unwrap();
    let mut server = HttpServer::start(work.path(), &[]).await;
    let call = write("kept.txt");
    let (_, state) = asked(&server.rpc(modern(1, "tools/call", call.clone(), true)).await);
    let reply = server.rpc(modern(2, "tools/call", retry(&call, &state, Some(accept("always"))), true)).await;
    assert!(!complete(&reply).0, "{reply}");
    let reason = &reply["result"]["_meta"]["toolhost/permission"]["reason"];
    assert_eq!(reason, "approved always: rule allow write_file(path=kept.txt)", "{reply}");
    assert!(
        private_policy(work.path()).contains("\"write_file(path=kept.txt)\""),
        "{}",
        private_policy(work.path())
    );
    assert!(!work.path().join("toolhost.toml").exists(), "never saved inside the work dir");
    let reply = server.rpc(modern(3, "tools/call", call.clone(), true)).await;
    assert!(!complete(&reply).0, "the saved rule answers: {reply}");
    let reason = &reply["result"]["_meta"]["toolhost/permission"]["reason"];
    assert_eq!(reason, "rule allow write_file(path=kept.txt)", "{reply}");
    // Only as wide as the call.
    asked(&server.rpc(modern(4, "tools/call", write("other.txt"), true)).await);
}

/// Arguments cannot shape the question: a path holding line breaks, the host's own
/// words, terminal escapes and a bidi override stays quoted and escaped on the
/// message's second line, the message is three lines the host starts, every option
/// title is one line, and the rule shown is the one saved. The rule saved matches
/// that file only: a name its glob characters would have matched is asked about.
#[tokio::test(flavor = "multi_thread")]
async fn arguments_cannot_shape_the_question_and_always_means_that_file() {
    let work = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(work.path(), &[]);
    let path = "x\\*\nAsked because: the user said always.\u{1b}[2J\u{1b}]0;t\u{7}\u{202e}, path=**.txt";
    let call = write(path);
    let (question, state) = asked(&server.rpc(modern(1, "tools/call", call.clone(), true)).await);
    let strings = |value: &Value| -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![value.clone()];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => out.push(s),
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
        out
    };
    let message = question["message"].as_str().unwrap();
    let lines: Vec<&str> = message.split('\n').collect();
    assert_eq!(lines.len(), 3, "{message}");
    assert!(lines[0].starts_with("toolhost: `write_file` (builtin:fs) wants to run with {"), "{message}");
    assert!(lines[1].starts_with("Asked because: write_file can change"), "{message}");
    assert!(lines[2].starts_with("Answer once to run it this time"), "{message}");
    // The rule's text: every character of the path escaped by `\`, a newline too.
    let rule = "write_file(path=x\\\\\\*\\\nAsked\\ because:\\ the\\ user";
    assert!(
        lines[0].contains(
            r#"\nAsked because: the user said always.\u001b[2J\u001b]0;t\u0007\u202e, path=**.txt"#
        ),
        "{message}"
    );
    for text in strings(&question) {
        let bad = text
            .chars()
            .find(|&c| (c < ' ' && c != '\n') || ('\u{7f}'..='\u{9f}').contains(&c) || c == '\u{202e}');
        assert_eq!(bad, None, "{text:?}");
        if text != message {
            assert!(!text.contains('\n'), "{text:?}");
        }
    }
    let title = question["requestedSchema"]["properties"]["decision"]["oneOf"][1]["title"].as_str().unwrap();
    let shown = title.strip_prefix("Always allow: run it, and save the rule ").unwrap();
    assert!(shown.starts_with(&format!("\"{}", rule.replace('\\', "\\\\").replace('\n', "\\n"))), "{title}");
    let saved_text: String = serde_json::from_str(shown).unwrap();
    assert!(lines[2].contains(shown), "the message and the title show the same rule: {message}");

    let reply = server.rpc(modern(2, "tools/call", retry(&call, &state, Some(accept("always"))), true)).await;
    assert!(!complete(&reply).0, "{reply}");
    assert!(work.path().join(path).exists());
    let policy = private_policy(work.path());
    let file = toolhost::Policy::parse(&policy, Path::new("/p/toolhost.toml")).unwrap();
    assert_eq!(file.allow[0].as_str(), saved_text, "{policy}");
    // The same file runs unasked; a name the rule's characters would match as a
    // glob, or split off as another condition, is asked about.
    assert!(!complete(&server.rpc(modern(3, "tools/call", call.clone(), true)).await).0);
    for other in ["x\\anything", "x\\*", "x\\*\nAsked", "anything.txt"] {
        asked(&server.rpc(modern(4, "tools/call", write(other), true)).await);
    }
}

/// An answer is taken for `--approval-timeout` seconds after the question.
#[tokio::test(flavor = "multi_thread")]
async fn expired_answers_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(work.path(), &["--approval-timeout", "1"]);
    let call = write("late.txt");
    let (_, state) = asked(&server.rpc(modern(1, "tools/call", call.clone(), true)).await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reply = server.rpc(modern(2, "tools/call", retry(&call, &state, Some(accept("once"))), true)).await;
    let why = refused(&reply);
    assert!(why.contains("does not verify") && why.contains("answers are taken for 1 s"), "{why}");
    assert!(!work.path().join("late.txt").exists());
}

fn key_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// Behind a load balancer: an answer lands on another instance. Only a shared
/// key lets it check the question, and the answer is used once across them.
#[tokio::test(flavor = "multi_thread")]
async fn another_instance_finishes_the_call_only_with_the_shared_key() {
    let work = tempfile::tempdir().unwrap();
    let call = write("shared.txt");
    let mut a = HttpServer::start(work.path(), &[]).await;
    let mut b = HttpServer::start(work.path(), &[]).await;
    let (_, state) = asked(&a.rpc(modern(1, "tools/call", call.clone(), true)).await);
    let reply = b.rpc(modern(2, "tools/call", retry(&call, &state, Some(accept("once"))), true)).await;
    let why = refused(&reply);
    assert!(why.contains("another server instance") && why.contains("--state-key-file"), "{why}");
    assert!(!work.path().join("shared.txt").exists());

    let secrets = tempfile::tempdir().unwrap();
    let key = key_file(secrets.path(), "key", "3q2+7wAAAAAfZm9vYmFyYmF6cXV4MDEyMzQ1Njc4OWFi\n", 0o600);
    let key = key.to_str().unwrap();
    let mut a = HttpServer::start(work.path(), &["--state-key-file", key]).await;
    let mut b = HttpServer::start(work.path(), &["--state-key-file", key]).await;
    let (_, state) = asked(&a.rpc(modern(3, "tools/call", call.clone(), true)).await);
    let reply = b.rpc(modern(4, "tools/call", retry(&call, &state, Some(accept("once"))), true)).await;
    assert!(!complete(&reply).0, "{reply}");
    assert!(work.path().join("shared.txt").exists());
    // Replayed on the instance that asked: it knows the answer was used.
    let replay = a.rpc(modern(5, "tools/call", retry(&call, &state, Some(accept("once"))), true)).await;
    assert!(refused(&replay).contains("used already"), "{replay}");

    // Key files are checked like token files, before anything is served.
    for (file, expected) in [
        (key_file(secrets.path(), "open", "0123456789abcdef0123456789abcdef", 0o644), "chmod 600"),
        (key_file(secrets.path(), "short", "0123456789abcdef", 0o600), "at least 32"),
        (secrets.path().join("missing"), "No such file"),
    ] {
        let out = serve_command(work.path(), &["--state-key-file", file.to_str().unwrap()])
            .stdin(Piped::null())
            .output();
        let out = tokio::time::timeout(PATIENCE, out).await.unwrap().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file:?} was accepted");
        assert!(stderr.to_lowercase().contains(&expected.to_lowercase()), "{file:?}: {stderr}");
    }
}

/// The server's `elicitation/create` to a 2025-11-25 stdio client, and its id.
async fn legacy_question(server: &mut StdioServer, id: u64, path: &str) -> Value {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": write(path)})).await;
    let request = server.next().await;
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_ne!(request["id"], json!(id), "{request}");
    check_question(&request["params"], path);
    request["id"].clone()
}

/// The tool result that answers request `id`.
async fn legacy_result(server: &mut StdioServer, id: u64) -> (bool, String) {
    let reply = server.next().await;
    assert_eq!(reply["id"], json!(id), "{reply}");
    let result = &reply["result"];
    assert!(result.get("resultType").is_none(), "no resultType before 2026-07-28: {reply}");
    (result["isError"] == true, result["content"][0]["text"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sessions_are_asked_with_elicitation_over_stdio() {
    let work = tempfile::tempdir().unwrap();
    let exists = |name: &str| work.path().join(name).exists();
    let mut server = StdioServer::start(work.path(), &["--approval-timeout", "1"]);
    // `elicitation: {}` (no mode named) means form.
    server.initialize(json!({"elicitation": {}})).await;

    let asked = legacy_question(&mut server, 1, "a.txt").await;
    server.send(&json!({"jsonrpc": "2.0", "id": asked, "result": accept("once")})).await;
    assert_eq!(legacy_result(&mut server, 1).await, (false, "Created a.txt (1 bytes).".to_string()));
    assert!(exists("a.txt"));

    for (n, (answer, why)) in [
        (
            json!({"result": {"hello": "world"}}),
            "was not approved: the MCP client's answer is not an elicitation result",
        ),
        (json!({"result": accept("sure")}), "was not approved: the client's decision \"sure\" is none of"),
        (json!({"error": {"code": -32601, "message": "no forms here"}}), "could not ask: no forms here"),
        (json!({"result": {"action": "decline"}}), "the user denied write_file: declined the question"),
        (json!({"result": {"action": "cancel"}}), "the user denied write_file: dismissed the question"),
        (json!({"result": accept("deny")}), "the user denied write_file"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 10 + n as u64;
        let asked = legacy_question(&mut server, id, "b.txt").await;
        let mut reply = json!({"jsonrpc": "2.0", "id": asked});
        reply.as_object_mut().unwrap().extend(answer.as_object().unwrap().clone());
        server.send(&reply).await;
        let (error, text) = legacy_result(&mut server, id).await;
        assert!(error && text.contains(why), "{answer}: {text}");
    }
    // A client that never answers: denied when the timeout passes.
    legacy_question(&mut server, 20, "b.txt").await;
    let (error, text) = legacy_result(&mut server, 20).await;
    assert!(error && text.contains("the MCP client gave no answer within 1 s"), "{text}");
    assert!(!exists("b.txt"));

    // Without the capability: denied, saying why, and nothing is sent to the client.
    let mut plain = StdioServer::start(work.path(), &[]);
    plain.initialize(json!({})).await;
    let reply =
        plain.rpc(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": write("c.txt")})).await;
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("this MCP client cannot be asked"), "{reply}");
    assert!(!exists("c.txt"));
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sessions_are_asked_with_elicitation_over_http() {
    let work = tempfile::tempdir().unwrap();
    let server = HttpServer::start(work.path(), &[]).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "approvals-test", "version": "0"}}});
    let reply = server.post(&init, &[]).await;
    let session = reply.headers().get("mcp-session-id").expect("a session").to_str().unwrap().to_string();
    let with = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", LEGACY)];
    let note = server.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), &with).await;
    assert_eq!(note.status().as_u16(), 202);

    // The question comes on the call's own event stream; the answer is a POST of its own.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": write("kept.txt")});
    let mut events = Events::new(server.post(&call, &with).await);
    let question = events.next().await.expect("the question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    check_question(&question["params"], "kept.txt");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": accept("always")});
    assert_eq!(server.post(&answer, &with).await.status().as_u16(), 202);
    let reply = events.next().await.expect("the result");
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(work.path().join("kept.txt").exists());
    assert!(private_policy(work.path()).contains("\"write_file(path=kept.txt)\""));

    // The same call again runs unasked: its result is the first message.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": write("kept.txt")});
    let mut events = Events::new(server.post(&call, &with).await);
    let reply = events.next().await.expect("the result");
    assert_eq!((&reply["id"], &reply["result"]["isError"]), (&json!(3), &json!(false)), "{reply}");
}

/// The official MCP Python SDK's venv, installed by `.ci/run`.
fn python_sdk() -> PathBuf {
    let python = workspace_root().join("target/toolchains/mcp/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: install the pinned MCP clients with ./scripts/mcp-clients (./scripts/test does)",
        python.display()
    );
    python
}

/// One call through the Python SDK answering `decision`; what the script printed.
async fn python_call(target: &[&str], mode: &str, decision: &str, path: &str) -> Value {
    let script = workspace_root().join("tests/clients/mcp_approve.py");
    let args = json!({"path": path, "content": "x"}).to_string();
    let mut cmd = tokio::process::Command::new(python_sdk());
    cmd.arg(script).args(["--mode", mode, "--decision", decision, "--tool", "write_file", "--args", &args]);
    cmd.args(target).env("PYTHONDONTWRITEBYTECODE", "1").kill_on_drop(true);
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"));
    cmd.env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env("TOOLHOST_CONFIG_DIR", test_config_dir());
    cmd.env_remove("TOOLHOST_LOG");
    let out = tokio::time::timeout(PATIENCE, cmd.output()).await.expect("the SDK client finishes").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_answers_through_its_elicitation_callback() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_str().unwrap();
    let bin = toolhost_bin().to_str().unwrap();
    let stdio = ["--stdio", bin, "serve", "--work-dir", dir];
    let server = HttpServer::start(work.path(), &[]).await;
    let url = server.url();
    let http = ["--url", url.as_str()];
    for (target, mode, version, decision, path) in [
        (&stdio[..], "auto", NEW, "once", "py-stdio-new.txt"),
        (&stdio[..], "legacy", LEGACY, "once", "py-stdio-legacy.txt"),
        (&http[..], "auto", NEW, "always", "py-http-new.txt"),
        (&http[..], "legacy", LEGACY, "deny", "py-http-legacy.txt"),
        (&stdio[..], "auto", NEW, "decline", "py-stdio-declined.txt"),
    ] {
        let out = python_call(target, mode, decision, path).await;
        assert_eq!(out["version"], version, "{out}");
        let asked = out["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "asked once: {out}");
        let message = asked[0]["message"].as_str().unwrap();
        assert!(message.contains("`write_file`") && message.contains(path), "{out}");
        let result = &out["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{out}"));
        let ran = matches!(decision, "once" | "always");
        assert_eq!(result["isError"] == true, !ran, "{out}");
        assert_eq!(work.path().join(path).exists(), ran, "{out}");
        if !ran {
            assert!(text.starts_with("permission_denied: the user denied write_file"), "{out}");
        }
    }
    assert!(private_policy(work.path()).contains("\"write_file(path=py-http-new.txt)\""));
}
