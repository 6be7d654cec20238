//! A Rust guest written with a `wasi:http` client crate, `wstd` (the Bytecode Alliance's
//! async client, `tests/guests/http-client`), end to end: as Rust components written for
//! other hosts reach the network. Every request it makes, and every redirect it follows,
//! goes through the host's pinned client and vetting; the guest reports what `wstd`
//! returned, so these tests also pin what a Rust author sees: a refused request is the
//! `wasi:http` `error-code` (`wstd::http::ErrorCode`), a body the host cut is `wstd`'s
//! "reading incoming body stream" error.
//!
//! `wstd` hands the request to the host before it has finished the (empty) body, so the
//! host's client frames even a GET's body as `transfer-encoding: chunked`; the test
//! server reads that body to its last chunk before answering.
//!
//! No packet leaves loopback: names come from a table, and every connection goes through
//! the recording connector (loopback only; each test asserts no violation).

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{FetchLimits, Host, NetworkSettings, ToolCall};
use toolhost_tests::TEST_HTTP_CLIENT_WASM;
use toolhost_tests::net::{Net, Reply, Request, server};
use toolhost_tests::private;

/// [`private::hostile_reply`]'s paths; anything else is `hello`.
fn routes(request: &Request) -> Reply {
    private::hostile_reply(request).unwrap_or_else(|| Reply::Ok(b"hello".to_vec()))
}

async fn host_with(net: &Net, allow_private: bool, hosts: &[&str], limits: FetchLimits) -> Host {
    net.host(TEST_HTTP_CLIENT_WASM, NetworkSettings { limits, ..net.settings(allow_private, hosts) }).await
}

async fn host(net: &Net, allow_private: bool, hosts: &[&str]) -> Host {
    host_with(net, allow_private, hosts, FetchLimits::default()).await
}

/// `http_get` on `url`, following up to `follow` redirects: the tool's text, or `Err` with
/// the failure's code and message.
async fn get(host: &Host, url: &str, follow: u32) -> Result<String, String> {
    let r = host.execute(ToolCall::new("http_get", json!({"url": url, "follow": follow}))).await;
    match &r.error {
        None => Ok(r.output.clone()),
        Some(e) => Err(format!("{}: {}", e.code, e.message)),
    }
}

/// The failure `wstd` reports for a request the host refused with `code`.
fn refused(url: &str, code: &str) -> String {
    format!("http_error: GET {url}: ErrorCode::{code}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_server_is_reached_only_with_the_opt_out_and_a_granted_host() {
    let (addr, seen) = server(routes).await;
    let net = Net::loopback();
    let url = format!("http://{addr}/hello");

    let open = host(&net, true, &["127.0.0.1"]).await;
    assert_eq!(get(&open, &url, 0).await, Ok(format!("status 200 bytes 5 url {url}\nhello")));
    // A redirect the guest follows is a new request, vetted again.
    let page = format!("http://{addr}/page");
    let moved = format!("http://{addr}/moved");
    assert_eq!(get(&open, &moved, 0).await, Ok(format!("status 302 bytes 0 url {moved}\n")));
    assert_eq!(get(&open, &moved, 1).await, Ok(format!("status 200 bytes 5 url {page}\nhello")));

    let closed = host(&net, false, &["127.0.0.1"]).await;
    assert_eq!(get(&closed, &url, 0).await, Err(refused(&url, "DestinationIpProhibited")));

    let other = host(&net, true, &["example.com"]).await;
    assert_eq!(get(&other, &url, 0).await, Err(refused(&url, "HttpRequestDenied")));

    let seen = seen.lock().expect("lock").clone();
    assert_eq!(
        seen,
        ["GET /hello HTTP/1.1", "GET /moved HTTP/1.1", "GET /moved HTTP/1.1", "GET /page HTTP/1.1"]
    );
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_private_address_a_rebinding_name_and_a_redirect_to_loopback_are_refused() {
    let (addr, seen) = server(routes).await;
    let net = private::net(addr);
    let host = host(&net, false, &["*"]).await;
    for url in private::urls(addr.port()) {
        let err = get(&host, &url, 0).await.expect_err(&url);
        assert!(
            err.starts_with("http_error: GET ") && err.ends_with("ErrorCode::DestinationIpProhibited"),
            "{url}: {err}"
        );
    }
    assert!(net.connector.attempts().is_empty(), "nothing was connected: {:?}", net.connector.attempts());

    // A public page redirecting to loopback: the guest follows it, the host refuses the hop.
    let err = get(&host, "http://public.test/private", 5).await;
    assert_eq!(err, Err(refused("http://127.0.0.1/admin", "DestinationIpProhibited")));
    // DNS rebinding: the first lookup is public and served, the redirect's second lookup
    // of the same name answers loopback and is refused.
    let err = get(&host, "http://rebind.test/rebind", 5).await;
    assert_eq!(err, Err(refused("http://rebind.test/again", "DestinationIpProhibited")));
    let public = private::public_addr();
    assert_eq!(net.connector.attempts(), [public, public], "only vetted addresses were connected");
    assert_eq!(*seen.lock().expect("lock"), ["GET /private HTTP/1.1", "GET /rebind HTTP/1.1"]);

    let out = get(&host, "http://public.test/moved", 5).await;
    assert_eq!(out, Ok("status 200 bytes 5 url http://public.test/page\nhello".into()));
    let err = get(&host, "http://nowhere.test/", 0).await;
    assert_eq!(err, Err(refused("http://nowhere.test/", "DestinationNotFound")));
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_or_endless_body_is_cut_at_the_limit() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let host = host(&net, true, &["127.0.0.1"]).await;
    let limit = FetchLimits::default().max_response_body;
    for path in ["/huge", "/forever"] {
        let url = format!("http://{addr}{path}");
        let started = Instant::now();
        let err = get(&host, &url, 0).await.expect_err(path);
        let want = format!(
            "http_error: GET {url}: status 200, body failed after {limit} bytes: reading incoming body stream: "
        );
        assert!(err.starts_with(&want), "{path}: {err}");
        assert!(started.elapsed() < Duration::from_secs(20), "{path} took {:?}", started.elapsed());
    }
    let url = format!("http://{addr}/");
    assert_eq!(get(&host, &url, 0).await, Ok(format!("status 200 bytes 5 url {url}\nhello")));
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_drip_hits_the_deadline() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let limits = FetchLimits { timeout: Duration::from_secs(1), ..FetchLimits::default() };
    let host = host_with(&net, true, &["127.0.0.1"], limits).await;
    let url = format!("http://{addr}/drip");
    let started = Instant::now();
    let err = get(&host, &url, 0).await.expect_err("drip");
    let want = format!("http_error: GET {url}: status 200, body failed after ");
    assert!(err.starts_with(&want) && err.contains("reading incoming body stream: "), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    net.connector.assert_no_violation();
}
