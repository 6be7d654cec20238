//! What a hostile HTTP client does to a `toolhost serve --http`, from a
//! loopback address of its own (127.0.0.2, …: Linux routes all of 127/8 to
//! the loopback interface), for the serving tests and the "serving under
//! attack" bench: request heads sent slowly, event streams held idle,
//! sessions opened by the thousand; each alone or all at once ([`Attack`]),
//! counting the statuses the server answers.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::servers::{http_client, modern_body};

/// The 2025-11-25 protocol revision (sessions, GET streams).
pub const LEGACY: &str = "2025-11-25";

/// An HTTP client whose connections come from `ip`.
pub fn client_from(ip: IpAddr) -> reqwest::Client {
    // Idle connections are let go before a server's idle timeout closes them.
    let builder = http_client().local_address(ip).pool_idle_timeout(Duration::from_millis(500));
    builder.timeout(Duration::from_secs(60)).build().expect("an HTTP client")
}

/// A TCP connection to `addr` from `ip`.
pub async fn tcp_from(ip: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = if ip.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(addr).await
}

/// A connection from `ip` that sent half a request head and nothing more.
pub async fn slow_head(ip: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let mut stream = tcp_from(ip, addr).await?;
    stream.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: appl").as_bytes()).await?;
    Ok(stream)
}

/// A 2025-11-25 `initialize` and `notifications/initialized`: the session id,
/// or the status and text of a refusal.
pub async fn initialize(client: &reqwest::Client, url: &str) -> Result<String, (u16, String)> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "attack", "version": "0"}}});
    let response = post(client, url, &body, &[]).await?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| (response.status().as_u16(), "no Mcp-Session-Id".to_string()))?
        .to_string();
    let _ = response.bytes().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let with = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", LEGACY)];
    post(client, url, &note, &with).await?;
    Ok(session)
}

/// A `tools/call` of `tool` on `session`: the answer's text, or the status and text of a refusal.
pub async fn session_call(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    tool: &str,
) -> Result<String, (u16, String)> {
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
    let with = [("mcp-session-id", session), ("mcp-protocol-version", LEGACY)];
    let text = post(client, url, &body, &with).await?.text().await.map_err(|e| (0, e.to_string()))?;
    Ok(text)
}

/// POST `body` with the MCP headers and `extra`: the response when it is a success.
async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> Result<reqwest::Response, (u16, String)> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let response = request.send().await.map_err(|e| (0, e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err((status.as_u16(), response.text().await.unwrap_or_default()));
    }
    Ok(response)
}

/// A session's GET event stream, open (its status read, its body not).
pub async fn open_stream(
    client: &reqwest::Client,
    url: &str,
    session: &str,
) -> Result<reqwest::Response, (u16, String)> {
    let response = client
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", LEGACY)
        .send()
        .await
        .map_err(|e| (0, e.to_string()))?;
    match response.status().as_u16() {
        200 => Ok(response),
        status => Err((status, response.text().await.unwrap_or_default())),
    }
}

/// A 2026-07-28 `subscriptions/listen` stream, open.
pub async fn open_listen(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, (u16, String)> {
    let body = modern_body(1, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let extra = [("mcp-protocol-version", crate::servers::MODERN), ("mcp-method", "subscriptions/listen")];
    post(client, url, &body, &extra).await
}

/// Statuses seen, by code (0: no answer at all).
pub type Seen = Arc<Mutex<BTreeMap<u16, usize>>>;

fn count(seen: &Seen, status: u16) {
    *seen.lock().unwrap().entry(status).or_default() += 1;
}

/// Everything at once from `ip`, until dropped or [`Attack::stop`]: `slow`
/// slow heads kept open (reopened as the server closes or refuses them, after
/// a pause so the test measures starvation rather than a connect flood), and
/// sessions opened without end with a GET stream tried on each and kept.
pub struct Attack {
    stop: CancellationToken,
    tasks: JoinSet<()>,
    /// The statuses the server answered.
    pub seen: Seen,
    /// Sessions opened.
    pub sessions: Arc<std::sync::atomic::AtomicUsize>,
}

impl Attack {
    /// Start it from `ip` against the server at `addr`, with `slow` slow heads.
    pub fn start(ip: IpAddr, addr: SocketAddr, slow: usize) -> Self {
        let stop = CancellationToken::new();
        let seen: Seen = Arc::default();
        let sessions = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = JoinSet::new();
        let url = format!("http://{addr}/mcp");
        for _ in 0..slow {
            let stop = stop.clone();
            tasks.spawn(async move {
                while !stop.is_cancelled() {
                    let Ok(mut stream) = slow_head(ip, addr).await else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    let mut sink = Vec::new();
                    tokio::select! {
                        _ = tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut sink) => {}
                        () = stop.cancelled() => return,
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
        }
        for _ in 0..4 {
            let (stop, seen, sessions, url) = (stop.clone(), seen.clone(), sessions.clone(), url.clone());
            tasks.spawn(async move {
                let client = client_from(ip);
                let mut streams = Vec::new();
                while !stop.is_cancelled() {
                    match initialize(&client, &url).await {
                        Ok(session) => {
                            count(&seen, 200);
                            sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            match open_stream(&client, &url, &session).await {
                                Ok(stream) => streams.push(stream),
                                Err((status, _)) => count(&seen, status),
                            }
                        }
                        Err((status, _)) => {
                            count(&seen, status);
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                }
            });
        }
        Self { stop, tasks, seen, sessions }
    }

    /// Stop everything and close every connection.
    pub async fn stop(mut self) -> BTreeMap<u16, usize> {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
        self.seen.lock().unwrap().clone()
    }
}
