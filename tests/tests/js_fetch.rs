//! A JavaScript tool calling `fetch()` (componentize-js, `plugins/examples/js-fetch`,
//! built by `scripts/examples`): StarlingMonkey's `fetch()` is a `wasi:http` client, so
//! every request it makes, and every redirect it follows, goes through the host's pinned
//! client and vetting. The tool reports what `fetch()` rejected with, so these tests
//! also pin what a JavaScript author sees.
//!
//! No packet leaves loopback: names come from a table, connections go through the
//! recording connector (loopback only; each library test asserts no violation), and the
//! CLI tests only name 127.0.0.1.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{FetchLimits, Host, Mode, NetworkSettings, ToolCall};
use toolhost_tests::net::{Net, Reply, Request, server};
use toolhost_tests::private;
use toolhost_tests::{example_wasm, toolhost_bin, workspace_root};

/// [`private::hostile_reply`]'s paths; anything else is a short HTML page.
fn routes(request: &Request) -> Reply {
    private::hostile_reply(request).unwrap_or_else(|| Reply::Ok(b"<h1>hello from loopback</h1>".to_vec()))
}

/// What StarlingMonkey's `fetch()` rejects with when the host refuses a request, whatever
/// the rule (the host logs which one): the generic network error a browser gives too.
const REFUSED: &str = "rejected: TypeError: NetworkError when attempting to fetch resource";

/// What reading a body the host cut (its size, the deadline) rejects with.
const BODY_CUT: &str = "failed: TypeError: IO error reading from incoming response body";

fn fetcher() -> PathBuf {
    example_wasm("fetcher")
}

/// A host with the fetcher alone; its tool is not read-only (a typed export cannot say
/// so), so the mode lets it run without asking.
async fn host_with(net: &Net, allow_private: bool, hosts: &[&str], limits: FetchLimits) -> Host {
    let network = NetworkSettings { limits, ..net.settings(allow_private, hosts) };
    Net::builder(&fetcher(), network).mode(Mode::Yolo).build().await.expect("the fetcher loads")
}

async fn host(net: &Net, allow_private: bool, hosts: &[&str]) -> Host {
    host_with(net, allow_private, hosts, FetchLimits::default()).await
}

/// `get_page` on `url`: the page as JSON, or `Err` with the failure's code and message.
async fn get(host: &Host, url: &str) -> Result<Value, String> {
    let call = ToolCall::new("get_page", json!({"url": url, "preview_chars": 40}));
    let r = host.execute(call).await;
    match &r.error {
        None => Ok(serde_json::from_str(&r.output).unwrap_or_else(|e| panic!("{e}: {}", r.output))),
        Some(e) => Err(format!("{}: {}", e.code, e.message)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_reaches_a_granted_loopback_server_only_with_the_opt_out() {
    let (addr, seen) = server(routes).await;
    let net = Net::loopback();
    let url = format!("http://{addr}/page");

    let open = host(&net, true, &["127.0.0.1"]).await;
    let page = get(&open, &url).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page["status"], 200, "{page}");
    assert_eq!(page["bytes"], 28, "{page}");
    assert_eq!(page["preview"], "<h1>hello from loopback</h1>", "{page}");
    assert_eq!(page["url"], url, "{page}");

    // A redirect fetch() follows is a new request, vetted again.
    let page = get(&open, &format!("http://{addr}/moved")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page["url"], url, "{page}");

    let closed = host(&net, false, &["127.0.0.1"]).await;
    let err = get(&closed, &url).await.expect_err("loopback without the opt-out");
    assert_eq!(err, format!("tool_error: fetch({url:?}) {REFUSED}"));

    let other = host(&net, true, &["example.com"]).await;
    let err = get(&other, &url).await.expect_err("a host not granted");
    assert_eq!(err, format!("tool_error: fetch({url:?}) {REFUSED}"));

    assert_eq!(seen.lock().expect("lock").len(), 3, "only the allowed requests reached the server");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_private_address_and_a_rebinding_name_are_refused() {
    let (addr, seen) = server(routes).await;
    let net = private::net(addr);
    let host = host(&net, false, &["*"]).await;
    for url in private::urls(addr.port()) {
        let err = get(&host, &url).await.expect_err(&url);
        assert!(err.starts_with("tool_error: fetch(") && err.ends_with(REFUSED), "{url}: {err}");
    }
    assert!(net.connector.attempts().is_empty(), "nothing was connected: {:?}", net.connector.attempts());

    // A public page redirecting to loopback: fetch() follows it, the host refuses the hop.
    let err = get(&host, "http://public.test/private").await.expect_err("redirect to loopback");
    assert_eq!(err, format!("tool_error: fetch(\"http://127.0.0.1/admin\") {REFUSED}"));
    // DNS rebinding: the first lookup is public and served, the redirect's second lookup
    // of the same name answers loopback and is refused.
    let err = get(&host, "http://rebind.test/rebind").await.expect_err("rebinding");
    assert_eq!(err, format!("tool_error: fetch(\"http://rebind.test/again\") {REFUSED}"));
    let public = private::public_addr();
    assert_eq!(net.connector.attempts(), [public, public], "only vetted addresses were connected");
    assert_eq!(*seen.lock().expect("lock"), ["GET /private HTTP/1.1", "GET /rebind HTTP/1.1"]);

    let page = get(&host, "http://public.test/moved").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page["url"], "http://public.test/page", "{page}");
    net.connector.assert_no_violation();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_or_endless_body_is_cut_and_a_drip_hits_the_deadline() {
    let (addr, _seen) = server(routes).await;
    let net = Net::loopback();
    let host = host(&net, true, &["127.0.0.1"]).await;
    for path in ["/huge", "/forever"] {
        let started = Instant::now();
        let err = get(&host, &format!("http://{addr}{path}")).await.expect_err(path);
        let want = format!("tool_error: reading the body of http://{addr}{path} (status 200) {BODY_CUT}");
        assert_eq!(err, want, "{path}");
        assert!(started.elapsed() < Duration::from_secs(30), "{path} took {:?}", started.elapsed());
    }

    let limits = FetchLimits { timeout: Duration::from_secs(1), ..FetchLimits::default() };
    let slow = host_with(&net, true, &["127.0.0.1"], limits).await;
    let started = Instant::now();
    let err = get(&slow, &format!("http://{addr}/drip")).await.expect_err("drip");
    assert!(err.ends_with(BODY_CUT), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());

    let page = get(&host, &format!("http://{addr}/")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page["status"], 200, "the host keeps serving: {page}");
    net.connector.assert_no_violation();
}

/// `text` without its terminal colour sequences (`ESC [ … m`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// `toolhost ARGS` with the tests' compile cache and data dir, logging at `log`.
fn toolhost_logging(args: &[&str], log: Option<&str>) -> std::process::Output {
    let mut command = Command::new(toolhost_bin());
    command
        .args(args)
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"))
        .env_remove("TOOLHOST_LOG")
        .stdin(std::process::Stdio::null());
    if let Some(log) = log {
        command.env("TOOLHOST_LOG", log);
    }
    command.output().expect("running toolhost")
}

/// `toolhost ARGS` with the tests' compile cache and data dir.
fn toolhost(args: &[&str]) -> std::process::Output {
    toolhost_logging(args, None)
}

/// Compile the 12 MB component into the cache once, before the tests that run the binary.
fn warm() {
    static WARM: OnceLock<()> = OnceLock::new();
    WARM.get_or_init(|| {
        let out = toolhost(&["inspect", fetcher().to_str().expect("utf-8"), "--allow-host", "127.0.0.1"]);
        assert!(out.status.success(), "inspect failed: {}", String::from_utf8_lossy(&out.stderr));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_flags_grant_the_host_and_open_the_private_network() {
    warm();
    let (addr, seen) = server(routes).await;
    let url = format!("http://{addr}/page");
    let wasm = fetcher();
    let wasm = wasm.to_str().expect("utf-8");
    let args = json!({"url": url}).to_string();
    let call_logging = |extra: &[&str], log: Option<&str>| {
        let mut argv = vec!["call", "--json", "--no-builtins", "--mode", "yolo", "--plugin", wasm];
        argv.extend_from_slice(extra);
        argv.extend_from_slice(&["get_page", &args]);
        let out = toolhost_logging(&argv, log);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), stdout, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let call = |extra: &[&str]| call_logging(extra, None);

    // No host: refused at load, naming the grant it needs.
    let (code, _, stderr) = call(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("capability_denied: wasi:http/") && stderr.contains("--allow-host"), "{stderr}");

    // A host but no opt-out: loopback is refused after resolution.
    let (code, stdout, stderr) = call(&["--allow-host", "127.0.0.1"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(doc["error"], format!("tool_error: fetch({url:?}) {REFUSED}"), "{doc}");
    // The guest sees a generic network error; the host's log names the rule that refused.
    let (code, _, stderr) = call_logging(&["--allow-host", "127.0.0.1"], Some("toolhost=info"));
    assert_eq!(code, Some(1), "{stderr}");
    let log = plain(&stderr);
    assert!(
        log.contains("wasi:http request refused or failed")
            && log.contains("rule=\"private address\"")
            && log.contains("fetcher.wasm"),
        "{log}"
    );

    // Both: the page.
    let (code, stdout, stderr) = call(&["--allow-host", "127.0.0.1", "--allow-private-network"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    let page: Value = serde_json::from_str(doc["output"].as_str().expect("output")).expect("page JSON");
    assert_eq!((page["status"].clone(), page["bytes"].clone()), (json!(200), json!(28)), "{page}");
    assert_eq!(seen.lock().expect("lock").len(), 1, "only the granted call reached the server");
}

/// `toolhost inspect` shows what the typed component imports (wasi:http: it needs hosts)
/// and `toolhost add` writes the hosts into its entry.
#[test]
fn inspect_shows_the_wasi_http_import_and_add_writes_the_hosts() {
    warm();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(fetcher(), dir.path().join("fetcher.wasm")).expect("copy");
    let wasm = dir.path().join("fetcher.wasm");
    let wasm = wasm.to_str().expect("utf-8");
    let out = toolhost(&["inspect", wasm]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wasi:http/outgoing-handler@"), "{stdout}");
    assert!(
        stdout.contains("wasi:http:  yes (outgoing requests, through the pinned client: needs hosts)"),
        "{stdout}"
    );
    assert!(stdout.contains("tools: (its exported functions)\n  get_page: "), "{stdout}");

    let work = dir.path().to_str().expect("utf-8");
    let add = |extra: &[&str]| {
        let mut argv = vec!["add", wasm, "--work-dir", work, "--name", "pages"];
        argv.extend_from_slice(extra);
        toolhost(&argv)
    };
    let out = add(&[]);
    assert_eq!(out.status.code(), Some(2), "no hosts: not added");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-host"), "{out:?}");
    assert!(!dir.path().join("toolhost.toml").exists());
    let out = add(&["--allow-host", "docs.rs", "--read-only", "get_page"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).expect("policy");
    assert!(policy.contains("[plugins.pages]"), "{policy}");
    assert!(policy.contains("network = [\"docs.rs\"]"), "{policy}");
    assert!(policy.contains("read-only = [\"get_page\"]"), "{policy}");
}
