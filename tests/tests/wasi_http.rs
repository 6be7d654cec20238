//! Standard `wasi:http/outgoing-handler` end to end: the `http` test guest (raw `wasip2`
//! bindings, as third-party components use) run through `Host::execute`. Every request
//! must go through the same pinned client and vetting as `toolhost:plugin/fetch`.
//!
//! No packet leaves loopback: names come from a table, and every connection goes through
//! the recording connector (loopback only; each test asserts no violation).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{FetchLimits, Host, LoadError, NetworkSettings, ToolCall, ToolResult};
use toolhost_tests::net::{Net, Reply, Request, server};
use toolhost_tests::private;
use toolhost_tests::{TEST_HTTP_WASM, test_engine_settings};

/// `/huge` streams 100 MB (declared), `/forever` a chunked body that never ends, `/drip`
/// one byte every 200 ms, `/sink` reads the request body to its end first, `/redirect`
/// points at 127.0.0.1, `/big-head` answers with 1 MB of headers; anything else is `hello`.
fn routes(request: &Request) -> Reply {
    match request.target.as_str() {
        "/huge" => Reply::Stream(100_000_000),
        "/forever" => Reply::Forever,
        "/drip" => Reply::Drip,
        "/sink" => Reply::Sink,
        "/redirect" => Reply::Redirect("http://127.0.0.1/admin".into()),
        "/big-head" => Reply::BigHead(1 << 20),
        _ => Reply::Ok(b"hello".to_vec()),
    }
}

/// A host with the http plugin under `limits`.
async fn host_with(net: &Net, allow_private: bool, hosts: &[&str], limits: FetchLimits) -> Host {
    net.host(TEST_HTTP_WASM, NetworkSettings { limits, ..net.settings(allow_private, hosts) }).await
}

async fn host(net: &Net, allow_private: bool, hosts: &[&str]) -> Host {
    host_with(net, allow_private, hosts, FetchLimits::default()).await
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
    let (addr, seen) = server(routes).await;
    let net = Net::loopback();
    let url = format!("http://{addr}/hello");

    let open = host(&net, true, &["127.0.0.1"]).await;
    assert_eq!(send(&open, json!({"url": url})).await, "status 200 read 5");

    let closed = host(&net, false, &["127.0.0.1"]).await;
    let out = send(&closed, json!({"url": url})).await;
    assert!(out.contains("DestinationIpProhibited"), "{out}");

    let other = host(&net, true, &["example.com"]).await;
    let out = send(&other, json!({"url": url})).await;
    assert!(out.contains("HttpRequestDenied"), "{out}");

    assert_eq!(seen.lock().expect("lock").len(), 1, "only the allowed request reached the server");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_and_rebinding_names_are_refused_after_resolution() {
    let (addr, seen) = server(routes).await;
    let net = private::net(addr);
    let host = host(&net, false, &["*"]).await;
    for url in private::urls(addr.port()) {
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
    assert_eq!(net.connector.attempts(), [private::public_addr()], "only the vetted address");
    assert_eq!(seen.lock().expect("lock").len(), 1);

    let out = send(&host, json!({"url": "http://nowhere.test/"})).await;
    assert!(out.contains("DestinationNotFound"), "{out}");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_the_guests_to_follow_and_a_hop_to_loopback_is_refused() {
    let (addr, _seen) = server(routes).await;
    let net = private::net(addr);
    let host = host(&net, false, &["*"]).await;
    let out = send(&host, json!({"url": "http://public.test/redirect"})).await;
    assert_eq!(out, "status 302 read 0", "the host does not follow it");
    let out = send(&host, json!({"url": "http://127.0.0.1/admin"})).await;
    assert!(out.contains("DestinationIpProhibited"), "following it is refused: {out}");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_bodies_are_cut_at_the_limit() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let host = host(&net, true, &["127.0.0.1"]).await;
    let limit = FetchLimits::default().max_response_body;
    for path in ["/huge", "/forever"] {
        let started = Instant::now();
        let out = send(&host, json!({"url": format!("http://{addr}{path}")})).await;
        // The stream error carries its error-code (`http-error-code` finds it).
        let want = format!("status 200 read {limit} error ErrorCode::HttpResponseBodySize(Some({limit}))");
        assert_eq!(out, want, "{path}");
        assert!(started.elapsed() < Duration::from_secs(20), "{path} took {:?}", started.elapsed());
    }
    assert_eq!(send(&host, json!({"url": format!("http://{addr}/")})).await, "status 200 read 5");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_drip_hits_the_deadline() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let limits = FetchLimits { timeout: Duration::from_secs(1), ..FetchLimits::default() };
    let host = host_with(&net, true, &["127.0.0.1"], limits).await;
    let started = Instant::now();
    let out = send(&host, json!({"url": format!("http://{addr}/drip")})).await;
    assert!(
        out.starts_with("status 200 read ") && out.ends_with("error ErrorCode::HttpResponseTimeout"),
        "{out}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_are_bounded_and_the_host_keeps_serving() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let host = host(&net, true, &["127.0.0.1"]).await;
    let url = format!("http://{addr}/");
    let per_call = FetchLimits::default().max_requests_per_call;

    // Past the requests a call may send, each is refused with its error code …
    let out = send(&host, json!({"url": url, "repeat": per_call + 100})).await;
    assert_eq!(out, format!("100 × error ErrorCode::ConnectionLimitReached\n{per_call} × status 200"));
    // … and 10,000 requests end the call when it has created twice that many.
    let started = Instant::now();
    let out = send(&host, json!({"url": url, "repeat": 10_000})).await;
    let created = 2 * per_call;
    assert!(out.starts_with("failed trap") && out.contains(&format!("created {created} requests")), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());

    // A 1 GiB streamed request body is cut at the request body limit.
    let started = Instant::now();
    let out = send(&host, json!({"url": format!("http://{addr}/sink"), "body_mib": 1024})).await;
    assert!(out.contains("HttpRequestBodySize"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());

    // 1 MB of request headers: wasi:http 0.2 has no header-error for it, so the call
    // traps, naming the limit; 1 MB of response headers is the head's error code.
    let out = send(&host, json!({"url": url, "header_bytes": 1 << 20})).await;
    assert!(
        out.starts_with("failed trap") && out.contains("one set of headers may hold at most 65536"),
        "{out}"
    );
    let out = send(&host, json!({"url": format!("http://{addr}/big-head")})).await;
    assert_eq!(out, "error ErrorCode::HttpResponseHeaderSectionSize(None)");

    // Header sets or unsent requests kept alive cannot pile up host memory.
    let out = send(&host, json!({"url": url, "header_sets": 10_000})).await;
    assert!(out.starts_with("failed trap") && out.contains("at most 1048576 bytes of headers"), "{out}");
    let out = send(&host, json!({"url": url, "hold": 10_000})).await;
    assert!(out.starts_with("failed trap") && out.contains(&format!("created {created} requests")), "{out}");

    // Dropping a body half read ends the request; nothing keeps running.
    let out = send(&host, json!({"url": format!("http://{addr}/forever"), "read_at_most": 100_000})).await;
    assert!(out.starts_with("status 200 read 100000"), "{out}");
    // So does dropping the response future while the request body is half sent.
    let out = send(&host, json!({"url": format!("http://{addr}/sink"), "drop_after_kib": 512})).await;
    assert_eq!(out, "dropped after 512 KiB");

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
        .network(net.settings(false, &[]))
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
