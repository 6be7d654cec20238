//! Standard `wasi:http/outgoing-handler` end to end: the `http` test guest (raw `wasip2`
//! bindings, as third-party components use) run through `Host::execute`. Every request
//! must go through the same pinned client and vetting as `toolhost:plugin/fetch`.
//!
//! No packet leaves loopback: names come from a table, and every connection goes through
//! the recording connector (loopback only; each test asserts no violation).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolhost::{FetchLimits, Host, HostPattern, LoadError, NetworkSettings, ToolCall, ToolResult};
use toolhost_tests::net::{RecordingConnector, ScriptedResolver};
use toolhost_tests::{TEST_HTTP_WASM, test_engine_settings};

/// A public-looking address the connector serves from the loopback test server.
const PUBLIC: &str = "93.184.216.34";

/// A loopback HTTP/1.1 server: `/huge` streams 100 MB (declared), `/forever` a chunked body
/// that never ends, `/drip` one byte every 200 ms, `/sink` reads the request body to its
/// end first, `/redirect` points at 127.0.0.1; anything else is `hello`. Returns its
/// address and the request lines it saw.
async fn server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let _ = serve(stream, &log).await;
            });
        }
    });
    (addr, seen)
}

async fn serve(mut stream: TcpStream, log: &Mutex<Vec<String>>) -> io::Result<()> {
    let mut buf = Vec::new();
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() > 4 << 20 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let line = String::from_utf8_lossy(&buf[..end]).lines().next().unwrap_or_default().to_owned();
    log.lock().expect("lock").push(line.clone());
    let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
    let chunk = vec![b'z'; 64 << 10];
    match target.as_str() {
        "/huge" => {
            stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000000\r\n\r\n").await?;
            for _ in 0..(100_000_000 / chunk.len()) {
                stream.write_all(&chunk).await?;
            }
        }
        "/forever" => {
            stream.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").await?;
            let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
            loop {
                stream.write_all(&framed).await?;
            }
        }
        "/drip" => {
            stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n").await?;
            for _ in 0..1000 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                stream.write_all(b"x").await?;
            }
        }
        "/sink" => {
            let mut sink = [0u8; 64 << 10];
            while stream.read(&mut sink).await? > 0 {}
        }
        "/redirect" => {
            let head = "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1/admin\r\ncontent-length: 0\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
        }
        _ => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello")
                .await?
        }
    }
    stream.shutdown().await
}

struct Net {
    resolver: Arc<ScriptedResolver>,
    connector: Arc<RecordingConnector>,
}

impl Net {
    fn new(resolver: ScriptedResolver, connector: RecordingConnector) -> Self {
        Self { resolver: Arc::new(resolver), connector: Arc::new(connector) }
    }

    fn loopback() -> Self {
        Self::new(ScriptedResolver::default(), RecordingConnector::default())
    }

    fn settings(&self, allow_private: bool, hosts: &[&str], limits: FetchLimits) -> NetworkSettings {
        NetworkSettings {
            allow_private,
            plugin_hosts: hosts.iter().map(|h| HostPattern::parse(h).expect("pattern")).collect(),
            resolver: self.resolver.clone(),
            connector: self.connector.clone(),
            limits,
            ..NetworkSettings::default()
        }
    }

    async fn host_with(&self, allow_private: bool, hosts: &[&str], limits: FetchLimits) -> Host {
        Host::builder()
            .without_builtins()
            .engine_settings(test_engine_settings())
            .plugin_file(TEST_HTTP_WASM)
            .network(self.settings(allow_private, hosts, limits))
            .build()
            .await
            .expect("host with the wasi:http plugin builds")
    }

    async fn host(&self, allow_private: bool, hosts: &[&str]) -> Host {
        self.host_with(allow_private, hosts, FetchLimits::default()).await
    }
}

/// The tool's text (it reports request errors as text, so the error code shows).
async fn send(host: &Host, args: Value) -> String {
    let r: ToolResult = host.execute(ToolCall::new("http_send", args)).await;
    match &r.error {
        None => r.output.clone(),
        Some(e) => format!("failed {}: {}", e.code, e.message),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_server_is_reached_only_with_the_opt_out_and_a_granted_host() {
    let (addr, seen) = server().await;
    let net = Net::loopback();
    let url = format!("http://{addr}/hello");

    let open = net.host(true, &["127.0.0.1"]).await;
    assert_eq!(send(&open, json!({"url": url})).await, "status 200 read 5");

    let closed = net.host(false, &["127.0.0.1"]).await;
    let out = send(&closed, json!({"url": url})).await;
    assert!(out.contains("DestinationIpProhibited"), "{out}");

    let other = net.host(true, &["example.com"]).await;
    let out = send(&other, json!({"url": url})).await;
    assert!(out.contains("HttpRequestDenied"), "{out}");

    assert_eq!(seen.lock().expect("lock").len(), 1, "only the allowed request reached the server");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_and_rebinding_names_are_refused_after_resolution() {
    let (addr, seen) = server().await;
    let net = Net::new(
        ScriptedResolver::default()
            .with("loop.test", &["127.0.0.1"])
            .with("private.test", &["10.0.0.5"])
            .with("metadata.test", &["169.254.169.254"])
            .with("mixed.test", &[PUBLIC, "192.168.0.1"])
            .with("v6.test", &["::1"])
            .script("rebind.test", &[&[PUBLIC], &["127.0.0.1"]]),
        RecordingConnector::default().map(PUBLIC, addr),
    );
    let host = net.host(false, &["*"]).await;
    let port = addr.port();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        "http://[::1]/".into(),
        "http://[::ffff:127.0.0.1]/".into(),
        "http://2130706433/".into(),
        "http://169.254.169.254/latest/meta-data/".into(),
        "http://localhost/".into(),
        "http://loop.test/".into(),
        "http://private.test/".into(),
        "http://metadata.test/".into(),
        "http://mixed.test/".into(),
        "http://v6.test/".into(),
    ] {
        let out = send(&host, json!({"url": url})).await;
        assert!(out.contains("DestinationIpProhibited"), "{url}: {out}");
    }
    assert!(net.connector.attempts().is_empty(), "nothing was connected: {:?}", net.connector.attempts());

    // The first answer is public and served; the second rebinds to loopback and is refused.
    let out = send(&host, json!({"url": "http://rebind.test/", "repeat": 2})).await;
    assert!(
        out.contains("1 × status 200") && out.contains("1 × error ErrorCode::DestinationIpProhibited"),
        "{out}"
    );
    let attempts = net.connector.attempts();
    assert_eq!(attempts, [format!("{PUBLIC}:80").parse().expect("addr")], "only the vetted address");
    assert_eq!(seen.lock().expect("lock").len(), 1);

    let out = send(&host, json!({"url": "http://nowhere.test/"})).await;
    assert!(out.contains("DestinationNotFound"), "{out}");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_the_guests_to_follow_and_a_hop_to_loopback_is_refused() {
    let (addr, _seen) = server().await;
    let net = Net::new(
        ScriptedResolver::default().with("public.test", &[PUBLIC]),
        RecordingConnector::default().map(PUBLIC, addr),
    );
    let host = net.host(false, &["*"]).await;
    let out = send(&host, json!({"url": "http://public.test/redirect"})).await;
    assert_eq!(out, "status 302 read 0", "the host does not follow it");
    let out = send(&host, json!({"url": "http://127.0.0.1/admin"})).await;
    assert!(out.contains("DestinationIpProhibited"), "following it is refused: {out}");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_bodies_are_cut_at_the_limit() {
    let (addr, _seen) = server().await;
    let net = Net::loopback();
    let host = net.host(true, &["127.0.0.1"]).await;
    let limit = FetchLimits::default().max_response_body;
    for path in ["/huge", "/forever"] {
        let started = Instant::now();
        let out = send(&host, json!({"url": format!("http://{addr}{path}")})).await;
        // wasmtime-wasi-http hands a body error to the guest as a stream error with this text.
        let want =
            format!("status 200 read {limit} error HTTP response body size exceeds limit: {limit} bytes");
        assert_eq!(out, want, "{path}");
        assert!(started.elapsed() < Duration::from_secs(20), "{path} took {:?}", started.elapsed());
    }
    assert_eq!(send(&host, json!({"url": format!("http://{addr}/")})).await, "status 200 read 5");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_drip_hits_the_deadline() {
    let (addr, _seen) = server().await;
    let net = Net::loopback();
    let limits = FetchLimits { timeout: Duration::from_secs(1), ..FetchLimits::default() };
    let host = net.host_with(true, &["127.0.0.1"], limits).await;
    let started = Instant::now();
    let out = send(&host, json!({"url": format!("http://{addr}/drip")})).await;
    assert!(out.starts_with("status 200 read ") && out.ends_with("error HTTP response timeout"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_are_bounded_and_the_host_keeps_serving() {
    let (addr, _seen) = server().await;
    let net = Net::loopback();
    let host = net.host(true, &["127.0.0.1"]).await;
    let url = format!("http://{addr}/");
    let per_call = FetchLimits::default().max_requests_per_call;

    // 10,000 requests: the first ones are served, the rest refused by the per-call count.
    let out = send(&host, json!({"url": url, "repeat": 10_000})).await;
    let refused = 10_000 - per_call;
    assert!(out.contains(&format!("{refused} × error ErrorCode::ConnectionLimitReached")), "{out}");
    assert!(out.contains(&format!("{per_call} × status 200")), "{out}");

    // A 1 GiB streamed request body is cut at the request body limit.
    let started = Instant::now();
    let out = send(&host, json!({"url": format!("http://{addr}/sink"), "body_mib": 1024})).await;
    assert!(out.contains("HttpRequestBodySize"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());

    // 1 MB of headers: wasi:http/types refuses to build them (a trap, not a host panic).
    let out = send(&host, json!({"url": url, "header_bytes": 1 << 20})).await;
    assert!(out.starts_with("failed trap") || out.contains("error header"), "{out}");

    // Dropping a body half read ends the request; nothing keeps running.
    let out = send(&host, json!({"url": format!("http://{addr}/forever"), "read_at_most": 100_000})).await;
    assert!(out.starts_with("status 200 read 100000"), "{out}");

    assert_eq!(send(&host, json!({"url": url})).await, "status 200 read 5", "the host keeps serving");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn importing_wasi_http_without_granted_hosts_is_refused_at_load() {
    let net = Net::loopback();
    let err = Host::builder()
        .without_builtins()
        .engine_settings(test_engine_settings())
        .plugin_file(TEST_HTTP_WASM)
        .network(net.settings(false, &[], FetchLimits::default()))
        .build()
        .await
        .err()
        .expect("refused");
    match &err {
        LoadError::CapabilityDenied { interface, why } => {
            assert!(interface.starts_with("wasi:http/"), "{interface}");
            assert!(why.contains("network") || why.contains("--allow-host"), "{why}");
        }
        other => panic!("expected capability_denied, got {other}"),
    }
}
