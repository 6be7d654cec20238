//! Real servers the serving tests start on loopback and stop: `toolhost serve
//! --http` instances, `redis-server` and `haproxy` (Debian's, installed by
//! `.ci/run`), each on a free 127.0.0.1 port and killed when dropped. A
//! program that is missing fails the test with what to install; nothing is
//! skipped.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Child;

use crate::{HOSTILE_WASM, toolhost_bin, workspace_root};

/// How long a server may take to start listening.
pub const START_PATIENCE: Duration = Duration::from_secs(60);

/// The 2026-07-28 protocol revision.
pub const MODERN: &str = "2026-07-28";

/// `program` on `PATH`, or a panic saying what to install (`.ci/run` installs it).
pub fn require(program: &str, install: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{program} is not installed: {install} (.ci/run installs it)"))
}

/// A port free on 127.0.0.1 now (for servers that cannot bind port 0 and say where).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

/// Wait until something accepts connections on `addr`.
pub async fn wait_listening(addr: SocketAddr, what: &str) {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(started.elapsed() < START_PATIENCE, "{what} did not listen on {addr} in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `toolhost serve` over `work` with the hostile plugin, a shared compile
/// cache, the test data dir, and `extra` flags.
pub fn serve_command(work: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_bin());
    // Eager: the plugin's tools are listed from the start (a test may say so itself).
    let eager = if extra.contains(&"--eager") { &[][..] } else { &["--eager"][..] };
    cmd.arg("serve").arg("--work-dir").arg(work).args(["--plugin", HOSTILE_WASM]).args(eager).args(extra);
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"));
    cmd.env("TOOLHOST_DATA_DIR", crate::test_data_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    cmd
}

/// A `toolhost serve --http 127.0.0.1:0` and where it listens; killed when dropped.
pub struct Instance {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Instance {
    /// Start one over `work` with `extra` flags; its stderr is echoed with `name`.
    pub async fn start(name: &str, work: &Path, extra: &[&str]) -> Self {
        let mut child = serve_command(work, &[&["--http", "127.0.0.1:0"], extra].concat())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning toolhost serve --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let addr = tokio::time::timeout(START_PATIENCE, async {
            while let Some(line) = lines.next_line().await.expect("reading stderr") {
                if let Some(rest) = line.strip_prefix("toolhost: serving MCP on http://") {
                    return rest
                        .strip_suffix("/mcp")
                        .expect("/mcp")
                        .parse::<SocketAddr>()
                        .expect("an address");
                }
                eprintln!("{name}: {line}");
            }
            panic!("{name}: toolhost serve --http exited before listening");
        })
        .await
        .unwrap_or_else(|_| panic!("{name}: toolhost serve --http did not listen in time"));
        let name = name.to_string();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{name}: {line}");
            }
        });
        Self { child, addr }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// CPU time (user + system) the process has used.
    pub fn cpu_time(&self) -> Duration {
        let pid = self.child.id().expect("the server runs");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("reading /proc/PID/stat");
        let fields: Vec<&str> = stat[stat.rfind(')').expect("a comm field") + 2..].split(' ').collect();
        let ticks: u64 =
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        Duration::from_millis(ticks * 10)
    }

    /// Its resident memory.
    pub fn rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("the server runs");
        let status =
            std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reading /proc/PID/status");
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
        line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB")
    }

    /// Kill it (SIGKILL) and reap it.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// A `redis-server` on a free loopback port, persisting nothing; killed when dropped.
pub struct Redis {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Redis {
    /// Start one (fails the test when `redis-server` is not installed).
    pub async fn start() -> Self {
        Self::start_on(free_port()).await
    }

    /// Start one on `port` of 127.0.0.1.
    pub async fn start_on(port: u16) -> Self {
        let program = require("redis-server", "apt-get install redis-server");
        let child = tokio::process::Command::new(program)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "yes", "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning redis-server");
        wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), "redis-server").await;
        Self { child: Some(child), port }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stop it (SIGKILL): clients see it go away.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// One command through `redis-cli`, its output.
    pub fn cli(&self, args: &[&str]) -> String {
        let program = require("redis-cli", "apt-get install redis-tools");
        let out = std::process::Command::new(program)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("running redis-cli");
        assert!(out.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// `haproxy` in front of `backends` (HTTP mode, round robin, no stickiness,
/// health checks every 200 ms) on a free loopback port; killed when dropped.
pub struct Haproxy {
    _child: Child,
    _dir: tempfile::TempDir,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Haproxy {
    /// A free loopback address for it: the instances behind it must know the
    /// authority their clients reach them by (`--allow-authority`) before it starts.
    pub fn address() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], free_port()))
    }

    /// Write its config and start it on `addr` (fails the test when `haproxy`
    /// is not installed).
    pub async fn start(addr: SocketAddr, backends: &[SocketAddr]) -> Self {
        Self::start_with(addr, backends, "", "").await
    }

    /// The same with `server` options added to each backend line (such as
    /// `send-proxy-v2`) and `backend` lines added to the backend (such as
    /// `option forwardfor`).
    pub async fn start_with(addr: SocketAddr, backends: &[SocketAddr], server: &str, backend: &str) -> Self {
        let program = require("haproxy", "apt-get install haproxy");
        let dir = tempfile::tempdir().expect("temp dir");
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, b)| format!("    server s{i} {b} check inter 200ms fall 1 rise 2 {server}\n"))
            .collect();
        // A connection refused by a dead instance is retried on another; a
        // request already sent to one is not (POST is not idempotent).
        let config = format!(
            "global\n    maxconn 4096\n\
             defaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n    timeout server 120s\n\
             \x20   retries 2\n    option redispatch\n\
             frontend mcp\n    bind {addr}\n    default_backend toolhost\n\
             backend toolhost\n    balance roundrobin\n{backend}{servers}"
        );
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).expect("writing haproxy.cfg");
        let child = tokio::process::Command::new(program)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning haproxy");
        wait_listening(addr, "haproxy").await;
        Self { _child: child, _dir: dir, addr }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

/// A client for the loopback servers (no proxy). reqwest is built with
/// `rustls-no-provider` for the host, which hands it a ring-backed TLS config;
/// a client built here needs a process-wide provider first: ring's, installed once.
pub fn http_client() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Err: another provider is installed already, which does as well.
        let _ = ring_provider().install_default();
    });
    reqwest::Client::builder().no_proxy()
}

/// *ring*'s crypto provider, as the host uses it (rustls 0.23.48 deprecates it
/// for lacking post-quantum key exchange; the tests' servers follow the host).
#[allow(deprecated)]
pub fn ring_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// A 2026-07-28 request: `_meta` with the version, capabilities and client info.
pub fn modern_body(id: u64, method: &str, mut params: Value) -> Value {
    if !params.is_object() {
        params = json!({});
    }
    let meta = params.as_object_mut().expect("object").entry("_meta").or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "toolhost-tests", "version": "0"});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POST a 2026-07-28 request to `url` with the standard headers; the JSON
/// answer, or why there was none (a status other than 200, a broken connection).
pub async fn modern_request(
    client: &reqwest::Client,
    url: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let body = modern_body(id, method, params);
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if method == "tools/call" {
        request = request.header("mcp-name", body["params"]["name"].as_str().unwrap_or_default());
    }
    let response = request.body(body.to_string()).send().await.map_err(|e| format!("no answer: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("a broken answer: {e}"))?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("not JSON ({e}): {text}"))
}

/// The text of a `tools/call` answer's content, or why it has none.
pub fn call_text(answer: &Value) -> Result<&str, String> {
    answer["result"]["content"][0]["text"].as_str().ok_or_else(|| format!("no text content in {answer}"))
}

/// The call id a cut output's marker names (`call read_output with {"call_id": "…"`).
pub fn marked_call_id(text: &str) -> Option<&str> {
    let marker = "call read_output with {\"call_id\": \"";
    let start = text.find(marker)? + marker.len();
    let end = text[start..].find('"')? + start;
    Some(&text[start..end])
}
