//! The builtin web tools end to end: through the host's pinned fetch to a
//! server on 127.0.0.1 (the private-target opt-out is on for these tests, and
//! every URL is loopback), with the search endpoint granted to `builtin:web`
//! as an environment variable.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolhost::{Host, NetworkSettings, ToolCall};
use toolhost_tests::{test_engine_settings, workspace_root};

/// Serves a few fixed pages on 127.0.0.1 and records each request line.
async fn server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let results =
        std::fs::read_to_string(workspace_root().join("plugins/web/tests/fixtures/ddg_results.html"))
            .unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (log, results) = (log.clone(), results.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let line = head.lines().next().unwrap_or("").to_string();
                log.lock().unwrap().push(line.clone());
                let target = line.split(' ').nth(1).unwrap_or("/");
                let (status, ctype, body): (&str, &str, Vec<u8>) = if target.starts_with("/search?q=") {
                    ("200 OK", "text/html; charset=utf-8", results.into_bytes())
                } else if target == "/page" {
                    let html = "<html><head><title>T</title><script>var hidden = 1;</script></head>\
                                <body><h1>Release notes</h1><p>Version <b>2.0</b> is out.</p></body></html>";
                    ("200 OK", "text/html", html.as_bytes().to_vec())
                } else if target == "/logo.png" {
                    ("200 OK", "image/png", vec![0x89, b'P', b'N', b'G', 0, 0, 0])
                } else {
                    ("404 Not Found", "text/plain", b"no such page here".to_vec())
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    (addr, seen)
}

async fn host(addr: SocketAddr) -> Host {
    Host::builder()
        .engine_settings(test_engine_settings())
        .network(NetworkSettings { allow_private: true, ..NetworkSettings::default() })
        .mode(toolhost::Mode::Yolo)
        .plugin_env("builtin:web", "TOOLHOST_SEARCH_URL", format!("http://{addr}/search?q={{query}}"))
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_queries_the_granted_endpoint_and_parses_results() {
    let (addr, seen) = server().await;
    let host = host(addr).await;
    let r = host.execute(ToolCall::new("web_search", json!({"query": "rust wasm", "max_results": 3}))).await;
    assert!(r.ok, "{:?}", r.error);
    assert!(r.output.starts_with("1. "), "{}", r.output);
    assert_eq!(r.output.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).count(), 3);
    // Redirect links are unwrapped: no DuckDuckGo redirector in the output.
    assert!(!r.output.contains("uddg="), "{}", r.output);
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests, ["GET /search?q=rust+wasm HTTP/1.1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_url_turns_html_into_text_and_refuses_images() {
    let (addr, _) = server().await;
    let host = host(addr).await;
    let r = host.execute(ToolCall::new("fetch_url", json!({"url": format!("http://{addr}/page")}))).await;
    assert!(r.ok, "{:?}", r.error);
    let first = r.output.lines().next().unwrap();
    assert_eq!(first, format!("HTTP 200 text/html http://{addr}/page"));
    assert!(r.output.contains("Release notes") && r.output.contains("2.0"), "{}", r.output);
    assert!(!r.output.contains("var hidden"), "scripts are not text: {}", r.output);
    assert!(!r.output.contains("<p>"), "{}", r.output);

    let img =
        host.execute(ToolCall::new("fetch_url", json!({"url": format!("http://{addr}/logo.png")}))).await;
    assert_eq!(img.code(), Some("unsupported_content_type"), "{:?}", img.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_2xx_status_is_a_failure_that_keeps_status_and_body() {
    let (addr, _) = server().await;
    let host = host(addr).await;
    let r =
        host.execute(ToolCall::new("http_request", json!({"url": format!("http://{addr}/missing")}))).await;
    assert_eq!(r.code(), Some("http_404"), "{:?}", r.error);
    let message = &r.error.as_ref().unwrap().message;
    assert!(message.contains("HTTP 404") && message.contains("no such page here"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_out_loopback_is_blocked_for_the_web_tools() {
    let (addr, seen) = server().await;
    let host = Host::builder().engine_settings(test_engine_settings()).build().await.unwrap();
    let r = host.execute(ToolCall::new("fetch_url", json!({"url": format!("http://{addr}/page")}))).await;
    assert_eq!(r.code(), Some("blocked_url"), "{:?}", r.error);
    assert!(seen.lock().unwrap().is_empty(), "a refused URL must never be connected to");
}
