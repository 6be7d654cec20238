//! The pinned fetch end to end: a plugin that imports `toolhost:plugin/fetch` (the `net`
//! test guest) run through `Host::execute`.
//!
//! No packet leaves loopback: names are answered by a table (never real DNS), and every
//! connection goes through a connector that records the address, maps the one
//! public-looking test address to a server on 127.0.0.1, connects loopback addresses as
//! they are, and refuses (and records as a violation) anything else without opening a
//! socket. Every test asserts there was no violation.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{CancellationToken, Host, HostPattern, LoadError, ToolCall, ToolResult};
use toolhost_tests::net::{Net, RecordingConnector, Reply, Request, ScriptedResolver, server};
use toolhost_tests::{HOSTILE_WASM, NET_WASM, test_engine_settings, toolhost_bin};

/// A public-looking address the connector serves from the loopback test server.
const PUBLIC: &str = "93.184.216.34";

/// `METHOD target\nbody`, a redirect for `/redirect`, `/rebind` and `/private`, a
/// drip for `/drip`, 5000 bytes for `/big`, 1 MB of response headers for `/big-head`.
fn routes(request: &Request) -> Reply {
    match request.target.as_str() {
        "/redirect" => Reply::Redirect("/landed".into()),
        "/rebind" => Reply::Redirect("http://rebind.test/again".into()),
        "/private" => Reply::Redirect("http://127.0.0.1/admin".into()),
        "/drip" => Reply::Drip,
        "/big" => Reply::Ok(vec![b'b'; 5000]),
        "/big-head" => Reply::BigHead(1 << 20),
        target => {
            let body = String::from_utf8_lossy(&request.body);
            Reply::Ok(format!("{} {target}\n{body}", request.method).into_bytes())
        }
    }
}

/// A host with the net plugin.
async fn host(net: &Net, allow_private: bool, hosts: &[&str]) -> Host {
    net.host(NET_WASM, net.settings(allow_private, hosts)).await
}

async fn fetch(host: &Host, args: Value) -> ToolResult {
    host.execute(ToolCall::new("fetch_raw", args)).await
}

fn code(r: &ToolResult) -> &str {
    r.code().unwrap_or_else(|| panic!("expected a failure, got {:?}", r.output))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssrf_targets_are_refused_before_any_connection() {
    let (addr, seen) = server(routes).await;
    let net = Net::new(
        ScriptedResolver::default()
            .with("private.test", &["10.0.0.5"])
            .with("loop.test", &["127.0.0.1"])
            .with("mixed.test", &[PUBLIC, "192.168.0.1"])
            .with("v6loop.test", &["::1"])
            .with("metadata.test", &["169.254.169.254"]),
        RecordingConnector::default(),
    );
    let host = host(&net, false, &["*"]).await;
    let port = addr.port();
    let blocked = [
        "http://127.0.0.1/".to_owned(),
        format!("http://127.0.0.1:{port}/"),
        format!("http://127.42.0.1:{port}/"),
        "http://localhost/".into(),
        format!("http://localhost:{port}/"),
        "http://LOCALHOST./".into(),
        "http://api.localhost/".into(),
        "http://printer.local/".into(),
        "http://metadata.google.internal/".into(),
        "http://10.0.0.1/".into(),
        "http://172.16.0.1/".into(),
        "http://192.168.1.1/".into(),
        "http://169.254.169.254/latest/meta-data/".into(),
        "http://100.64.0.1/".into(),
        "http://0.0.0.0/".into(),
        "http://0/".into(),
        "http://224.0.0.1/".into(),
        "http://2130706433/".into(),
        "http://0x7f.1/".into(),
        "http://017700000001/".into(),
        "http://127.1/".into(),
        "http://0x7f000001/".into(),
        "http://0177.0.0.1/".into(),
        "http://[::1]/".into(),
        format!("http://[::1]:{port}/"),
        "http://[::ffff:127.0.0.1]/".into(),
        "http://[::ffff:a9fe:a9fe]/".into(),
        "http://[64:ff9b::7f00:1]/".into(),
        "http://[fd00::1]/".into(),
        "http://[fe80::1]/".into(),
        "http://[::]/".into(),
        "http://example.com@127.0.0.1/".into(),
        format!("http://user:pass@127.0.0.1:{port}/"),
        "https://127.0.0.1/".into(),
        "http://private.test/".into(),
        "http://loop.test/".into(),
        format!("http://loop.test:{port}/"),
        "http://mixed.test/".into(),
        "http://v6loop.test/".into(),
        "http://metadata.test/".into(),
    ];
    let invalid = [
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/_GET",
        "ftp://example.com/",
        "dict://127.0.0.1:11211/",
        "data:text/plain,hi",
        "javascript:alert(1)",
        "http:/127.0.0.1/",
        "http:127.0.0.1",
        "http://127.0.0.1\\@example.com/",
        "http://exa mple.com/",
        "not a url",
    ];
    let mut wrong = Vec::new();
    let cases = blocked
        .iter()
        .map(|u| (u.as_str(), "blocked_url"))
        .chain(invalid.iter().map(|u| (*u, "invalid_url")));
    let mut count = 0;
    for (url, want) in cases {
        count += 1;
        let r = fetch(&host, json!({"url": url})).await;
        if r.code() != Some(want) {
            wrong.push(format!("{url}: expected {want}, got {:?} {:?}", r.error, r.output));
        }
        let attempts = net.connector.attempts();
        assert!(attempts.is_empty(), "{url}: the connector was asked for {attempts:?}");
    }
    assert!(count >= 30);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    net.connector.assert_no_violation();
    assert!(seen.lock().expect("lock").is_empty(), "the loopback server was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_name_is_fetched_through_the_pinned_address() {
    let (addr, seen) = server(routes).await;
    let net = Net::new(
        ScriptedResolver::default().with("public.test", &[PUBLIC]),
        RecordingConnector::default().map(PUBLIC, addr),
    );
    let host = host(&net, false, &["public.test"]).await;

    let r = fetch(&host, json!({"url": "http://public.test/redirect"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.output, "200\nhttp://public.test/landed\nfalse\nGET /landed\n");

    let r = fetch(&host, json!({"url": "http://public.test/private"})).await;
    assert_eq!(code(&r), "blocked_url", "a redirect to loopback");

    let r = fetch(&host, json!({"url": "http://other.test/"})).await;
    assert_eq!(code(&r), "host_not_allowed");

    let r = fetch(&host, json!({"url": "http://public.test/", "method": "TRACE"})).await;
    assert_eq!(code(&r), "method_not_allowed");

    let attempts: Vec<String> = net.connector.attempts().iter().map(ToString::to_string).collect();
    assert_eq!(attempts, [format!("{PUBLIC}:80"), format!("{PUBLIC}:80"), format!("{PUBLIC}:80")]);
    net.connector.assert_no_violation();
    assert_eq!(seen.lock().expect("lock").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_rebinding_through_the_plugin_is_blocked() {
    let (addr, seen) = server(routes).await;
    let net = Net::new(
        ScriptedResolver::default().script("rebind.test", &[&[PUBLIC], &["127.0.0.1"]]),
        RecordingConnector::default().map(PUBLIC, addr),
    );
    let host = host(&net, false, &["rebind.test"]).await;
    let r = fetch(&host, json!({"url": "http://rebind.test/rebind"})).await;
    assert_eq!(code(&r), "blocked_url", "{:?}", r.error);
    let attempts = net.connector.attempts();
    assert_eq!(attempts, [SocketAddr::new(PUBLIC.parse().expect("ip"), 80)], "only the vetted address");
    net.connector.assert_no_violation();
    assert_eq!(seen.lock().expect("lock").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_private_opt_out_a_loopback_server_is_reached() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let host = host(&net, true, &["127.0.0.1"]).await;

    let url = format!("http://{addr}/hello?x=1");
    let r = fetch(&host, json!({"url": url})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.output, format!("200\n{url}\nfalse\nGET /hello?x=1\n"));

    let r = fetch(&host, json!({"url": format!("http://{addr}/post"), "method": "POST", "body": "payload"}))
        .await;
    assert!(r.ok, "{:?}", r.error);
    assert!(r.output.ends_with("\nPOST /post\npayload"), "{}", r.output);

    let r = fetch(&host, json!({"url": format!("http://{addr}/big"), "max_bytes": 100})).await;
    assert!(r.ok, "{:?}", r.error);
    let mut lines = r.output.lines();
    assert_eq!(lines.nth(2), Some("true"));
    assert_eq!(lines.next().map(str::len), Some(100));

    let r = fetch(&host, json!({"url": format!("http://{addr}/big-head")})).await;
    assert_eq!(code(&r), "too_large", "1 MB of response headers: {:?}", r.error);
    assert!(
        r.error.as_ref().is_some_and(|e| e.message.contains("response head is too large")),
        "{:?}",
        r.error
    );

    let started = Instant::now();
    let r = fetch(&host, json!({"url": format!("http://{addr}/drip"), "timeout_ms": 500})).await;
    assert_eq!(code(&r), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));

    let r = fetch(&host, json!({"url": "http://localhost.test/"})).await;
    assert_eq!(code(&r), "host_not_allowed", "the grant still limits the hosts");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_call_stops_the_fetch() {
    let (addr, seen) = server(routes).await;
    let net = Net::loopback();
    let host = host(&net, true, &["*"]).await;
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let call = ToolCall::new("fetch_raw", json!({"url": format!("http://{addr}/drip")})).with_cancel(token);
    let r = host.execute(call).await;
    assert_eq!(code(&r), "cancelled");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    assert_eq!(seen.lock().expect("lock").len(), 1);
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_importing_fetch_without_granted_hosts_is_refused_at_load() {
    let net = Net::loopback();
    let err = Host::builder()
        .without_builtins()
        .engine_settings(test_engine_settings())
        .plugin_file(NET_WASM)
        .network(net.settings(false, &[]))
        .build()
        .await
        .err()
        .expect("refused");
    match &err {
        LoadError::CapabilityDenied { interface, why } => {
            assert_eq!(interface, "toolhost:plugin/fetch@0.1.0");
            assert!(why.contains("--allow-host"), "{why}");
        }
        other => panic!("expected capability_denied, got {other}"),
    }
    assert!(err.to_string().starts_with("capability_denied: toolhost:plugin/fetch@0.1.0: "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_plugin_that_imports_fetch_gets_a_network_grant() {
    let net = Net::loopback();
    let host = Host::builder()
        .without_builtins()
        .engine_settings(test_engine_settings())
        .plugin_file(NET_WASM)
        .plugin_file(HOSTILE_WASM)
        .network(net.settings(false, &["docs.rs"]))
        .build()
        .await
        .expect("host builds");
    for plugin in host.plugins() {
        let imports_fetch = plugin.imports().iter().any(|i| i.starts_with("toolhost:plugin/fetch"));
        assert_eq!(plugin.network().is_some(), imports_fetch, "{}", plugin.name());
        if let Some(grant) = plugin.network() {
            assert_eq!(grant.hosts, [HostPattern::parse("docs.rs").expect("pattern")]);
            assert!(!grant.allow_private);
        }
    }
    assert_eq!(host.plugins().iter().filter(|p| p.network().is_some()).count(), 1);
}

#[test]
fn the_cli_grants_hosts_and_shows_the_private_opt_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        std::process::Command::new(toolhost_bin())
            .current_dir(dir.path())
            .args(args)
            .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
            .env_remove("TOOLHOST_LOG")
            .output()
            .expect("run toolhost")
    };
    let out = run(&["list", "--json", "--no-builtins", "--plugin", NET_WASM]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("capability_denied: toolhost:plugin/fetch@0.1.0"), "{stderr}");

    let args = [
        "list",
        "--json",
        "--no-builtins",
        "--plugin",
        NET_WASM,
        "--allow-host",
        "*.example.test",
        "--allow-private-network",
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["network"]["allow_private"], json!(true));
    assert_eq!(doc["network"]["plugin_hosts"], json!(["*.example.test"]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("private"), "the opt-out is warned about");

    let out = run(&["list", "--json", "--no-builtins"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["network"]["allow_private"], json!(false));
    assert_eq!(doc["network"]["builtin_hosts"], json!(["*"]));

    let out = run(&["list", "--allow-host", "http://x/"]);
    assert_eq!(out.status.code(), Some(2), "a bad pattern is a usage error");
}

/// The host's fetch errors carry the shared codes, the ones the guest SDK's `FetchError::code`
/// names for the same WIT cases (the host spells them as literals in `fetch/types.rs`).
#[test]
fn fetch_errors_carry_the_shared_codes() {
    use toolhost::FetchError;
    use toolhost::codes;
    let cases = [
        (FetchError::BlockedUrl("m".into()), codes::BLOCKED_URL),
        (FetchError::InvalidUrl("m".into()), codes::INVALID_URL),
        (FetchError::HostNotAllowed("m".into()), codes::HOST_NOT_ALLOWED),
        (FetchError::MethodNotAllowed("m".into()), codes::METHOD_NOT_ALLOWED),
        (FetchError::TooManyRedirects("m".into()), codes::TOO_MANY_REDIRECTS),
        (FetchError::Timeout("m".into()), codes::TIMEOUT),
        (FetchError::TooLarge("m".into()), codes::TOO_LARGE),
        (FetchError::Transport("m".into()), codes::TRANSPORT),
    ];
    for (err, code) in cases {
        assert_eq!((err.code(), err.to_string()), (code, format!("{code}: m")));
    }
}
