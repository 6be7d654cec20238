//! `serve --http` behind Debian's `haproxy`: the per-client limits count the
//! client the balancer names (its PROXY v2 header, or `X-Forwarded-For`), only
//! from the balancer (`--trusted-proxy 127.0.0.1`); a client that connects
//! directly cannot name someone else. Clients connect from their own loopback
//! addresses (127.0.0.2, 127.0.0.3); nothing leaves loopback.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use toolhost_tests::attack::{client_from, tcp_from};
use toolhost_tests::servers::{Haproxy, Instance, modern_body, modern_request};

const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3));
const NO_FUEL_LIMIT: &str = "18446744073709551615";

/// An instance allowing one call in flight per client, behind a haproxy
/// whose backend has `server` options and `backend` lines.
async fn behind_haproxy(
    work: &std::path::Path,
    flags: &[&str],
    server: &str,
    backend: &str,
) -> (Instance, Haproxy) {
    let balancer_addr = Haproxy::address();
    let authority = balancer_addr.to_string();
    let limits = ["--calls-per-client", "1", "--fuel", NO_FUEL_LIMIT, "--timeout-ms", "5000"];
    let all =
        [&["--allow-authority", authority.as_str(), "--trusted-proxy", "127.0.0.1"][..], &limits, flags]
            .concat();
    let instance = Instance::start("proxied", work, &all).await;
    let balancer = Haproxy::start_with(balancer_addr, &[instance.addr], server, backend).await;
    (instance, balancer)
}

/// A `spin` call by `client` to `url`, in flight in the background.
fn spinning(
    client: &reqwest::Client,
    url: &str,
) -> tokio::task::JoinHandle<Result<serde_json::Value, String>> {
    let (client, url) = (client.clone(), url.to_string());
    tokio::spawn(async move {
        modern_request(&client, &url, 9, "tools/call", json!({"name": "spin", "arguments": {}})).await
    })
}

/// A `noop` call: `Ok` when answered, else the refusal.
async fn noop(client: &reqwest::Client, url: &str, extra: Option<(&str, &str)>) -> Result<(), String> {
    let body = modern_body(1, "tools/call", json!({"name": "noop", "arguments": {}}));
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", toolhost_tests::servers::MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "noop");
    if let Some((name, value)) = extra {
        request = request.header(name, value);
    }
    let response = request.body(body.to_string()).send().await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    if status == 200 { Ok(()) } else { Err(format!("HTTP {status}: {text}")) }
}

/// Two clients behind the balancer each get their own budget; directly, A
/// cannot borrow another client's budget with a PROXY header or X-Forwarded-For.
async fn budgets_are_per_client(instance: &Instance, balancer: &Haproxy) {
    let (a, b) = (client_from(A), client_from(B));
    let spin = spinning(&a, &balancer.url());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let refused = noop(&a, &balancer.url(), None).await.unwrap_err();
    assert!(refused.starts_with("HTTP 429"), "A holds its one call: {refused}");
    noop(&b, &balancer.url(), None).await.unwrap_or_else(|e| panic!("B has its own budget: {e}"));
    // Directly: A is A, whatever it says.
    let direct = noop(&a, &instance.url(), Some(("x-forwarded-for", "127.0.0.3"))).await.unwrap_err();
    assert!(direct.starts_with("HTTP 429"), "X-Forwarded-For from A is ignored: {direct}");
    let mut stream = tcp_from(A, instance.addr).await.unwrap();
    let body = modern_body(1, "server/discover", json!({})).to_string();
    let spoof = format!(
        "PROXY TCP4 127.0.0.9 {0} 5000 {1}\r\nPOST /mcp HTTP/1.1\r\nHost: {2}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {3}\r\nConnection: close\r\n\r\n{body}",
        instance.addr.ip(),
        instance.addr.port(),
        instance.addr,
        body.len()
    );
    stream.write_all(spoof.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut reply)).await;
    let reply = String::from_utf8_lossy(&reply);
    assert!(
        reply.is_empty() || reply.starts_with("HTTP/1.1 400"),
        "a PROXY header from A is refused: {reply}"
    );
    spin.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_behind_haproxy_with_the_proxy_protocol_have_their_own_budgets() {
    let work = tempfile::tempdir().unwrap();
    let (instance, balancer) = behind_haproxy(work.path(), &["--proxy-protocol"], "send-proxy-v2", "").await;
    budgets_are_per_client(&instance, &balancer).await;
    // From the trusted address itself, a connection without a PROXY header is closed unanswered.
    let mut stream = tcp_from(IpAddr::from([127, 0, 0, 1]), instance.addr).await.unwrap();
    let head = format!("GET /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", instance.addr);
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut reply)).await;
    assert!(reply.is_empty(), "{}", String::from_utf8_lossy(&reply));
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_behind_haproxy_with_x_forwarded_for_have_their_own_budgets() {
    let work = tempfile::tempdir().unwrap();
    let (instance, balancer) = behind_haproxy(work.path(), &[], "", "    option forwardfor\n").await;
    budgets_are_per_client(&instance, &balancer).await;
    // Through the balancer, what A wrote in X-Forwarded-For is left of what the balancer appends.
    let a = client_from(A);
    let spin = spinning(&a, &balancer.url());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let spoofed = noop(&a, &balancer.url(), Some(("x-forwarded-for", "127.0.0.7"))).await.unwrap_err();
    assert!(spoofed.starts_with("HTTP 429"), "A is still A: {spoofed}");
    spin.abort();
}
