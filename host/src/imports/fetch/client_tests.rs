//! Tests of the pinned client against a local HTTP/1.1 server on 127.0.0.1. Names are
//! answered by a scripted resolver and every connection goes through a recording
//! connector that never opens a socket outside loopback.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::test_support::{RecordingConnector, Reply, ScriptedResolver, TestServer};
use super::*;

/// A public-looking address the recording connector maps to the local server.
const PUBLIC: &str = "93.184.216.34";
const PUBLIC2: &str = "93.184.216.35";

struct Rig {
    client: FetchClient,
    resolver: Arc<ScriptedResolver>,
    connector: Arc<RecordingConnector>,
}

impl Rig {
    fn new(resolver: ScriptedResolver, connector: RecordingConnector) -> Self {
        let (resolver, connector) = (Arc::new(resolver), Arc::new(connector));
        let client = FetchClient::new(resolver.clone(), connector.clone(), FetchLimits::default());
        Self { client, resolver, connector }
    }

    /// A rig with no names and a connector that only reaches loopback.
    fn loopback() -> Self {
        Self::new(ScriptedResolver::default(), RecordingConnector::default())
    }

    async fn fetch(&self, grant: &NetGrant, req: FetchRequest) -> Result<FetchResponse, FetchError> {
        let out = self.client.fetch(grant, req, None).await;
        self.connector.assert_no_violation();
        out
    }
}

fn grant(patterns: &[&str], allow_private: bool) -> NetGrant {
    NetGrant {
        hosts: patterns.iter().map(|p| HostPattern::parse(p).expect("pattern")).collect(),
        allow_private,
    }
}

fn private_ok() -> NetGrant {
    grant(&["*"], true)
}

fn public_only() -> NetGrant {
    grant(&["*"], false)
}

fn code<T: std::fmt::Debug>(r: &Result<T, FetchError>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code(),
    }
}

fn echo(seen: &test_support::Seen) -> Reply {
    let mut text = format!("{} {}\n", seen.method, seen.target);
    text.push_str(&String::from_utf8_lossy(&seen.body));
    Reply::Full { status: 200, headers: vec![("X-Echo".into(), "Yes".into())], body: text.into_bytes() }
}

#[tokio::test]
async fn get_and_post_round_trip_with_headers_and_body() {
    let server = TestServer::start(echo).await;
    let rig = Rig::loopback();

    let mut req = FetchRequest::get(server.url("/path?q=1"));
    req.headers = vec![
        ("X-Test".into(), "one".into()),
        ("Host".into(), "evil.example".into()),
        ("Connection".into(), "upgrade".into()),
        ("Proxy-Authorization".into(), "Basic c2VjcmV0".into()),
        ("Transfer-Encoding".into(), "chunked".into()),
    ];
    let r = rig.fetch(&private_ok(), req).await.expect("GET");
    assert_eq!(r.status, 200);
    assert_eq!(String::from_utf8_lossy(&r.body), "GET /path?q=1\n");
    assert!(!r.truncated);
    assert_eq!(r.final_url, server.url("/path?q=1"));
    assert!(r.headers.iter().any(|(k, v)| k == "x-echo" && v == "Yes"), "{:?}", r.headers);

    let seen = &server.seen()[0];
    assert_eq!(seen.header("x-test"), Some("one"));
    assert_eq!(seen.header("host"), Some(server.addr.to_string().as_str()));
    assert!(seen.header("user-agent").is_some_and(|ua| ua.starts_with("toolhost/")));
    assert_eq!(seen.header("proxy-authorization"), None);
    assert_eq!(seen.header("transfer-encoding"), None);
    assert_ne!(seen.header("connection"), Some("upgrade"));

    let mut req = FetchRequest::get(server.url("/submit"));
    req.method = "post".into();
    req.body = Some(b"{\"a\":1}".to_vec());
    req.headers =
        vec![("user-agent".into(), "mine/1".into()), ("content-type".into(), "application/json".into())];
    let r = rig.fetch(&private_ok(), req).await.expect("POST");
    assert_eq!(String::from_utf8_lossy(&r.body), "POST /submit\n{\"a\":1}");
    let seen = &server.seen()[1];
    assert_eq!(seen.header("content-length"), Some("7"));
    assert_eq!(seen.header("user-agent"), Some("mine/1"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn a_404_is_a_normal_response() {
    let server = TestServer::start(|_| Reply::status(404, "no such page")).await;
    let r = Rig::loopback().fetch(&private_ok(), FetchRequest::get(server.url("/missing"))).await;
    let r = r.expect("a 404 is a response, not an error");
    assert_eq!((r.status, r.body.as_slice()), (404, &b"no such page"[..]));
}

#[tokio::test]
async fn a_redirect_chain_of_two_is_followed() {
    let server = TestServer::start(|seen| match seen.target.as_str() {
        "/a" => Reply::redirect(302, "/b"),
        "/b" => Reply::redirect(301, "c?x=1"),
        _ => echo(seen),
    })
    .await;
    let r = Rig::loopback().fetch(&private_ok(), FetchRequest::get(server.url("/a"))).await.expect("chain");
    assert_eq!(r.status, 200);
    assert_eq!(r.final_url, server.url("/c?x=1"));
    assert_eq!(String::from_utf8_lossy(&r.body), "GET /c?x=1\n");
    assert_eq!(server.seen().len(), 3);
}

/// `/r/N` redirects to `/r/N+1` while N < `upto`.
fn chain(upto: usize) -> impl Fn(&test_support::Seen) -> Reply {
    move |seen| {
        let n: usize = seen.target.trim_start_matches("/r/").parse().unwrap_or(0);
        if n < upto { Reply::redirect(307, &format!("/r/{}", n + 1)) } else { Reply::ok("end") }
    }
}

#[tokio::test]
async fn five_redirects_are_followed_and_the_sixth_is_refused() {
    let server = TestServer::start(chain(5)).await;
    let r = Rig::loopback().fetch(&private_ok(), FetchRequest::get(server.url("/r/0"))).await;
    assert_eq!(r.expect("5 redirects").final_url, server.url("/r/5"));

    let server = TestServer::start(chain(6)).await;
    let r = Rig::loopback().fetch(&private_ok(), FetchRequest::get(server.url("/r/0"))).await;
    assert_eq!(code(&r), "too_many_redirects");
    assert_eq!(server.seen().len(), 6, "the 6th redirect's target must not be requested");
}

#[tokio::test]
async fn a_redirect_to_a_private_target_is_blocked() {
    let server = TestServer::start(|seen| match seen.target.as_str() {
        "/to-loopback" => Reply::redirect(302, "http://127.0.0.1/secret"),
        "/to-internal" => Reply::redirect(302, "http://internal.test/secret"),
        "/to-mapped" => Reply::redirect(302, "http://[::ffff:10.0.0.1]/"),
        "/to-gopher" => Reply::redirect(302, "gopher://public.test/"),
        _ => Reply::ok("should not be reached"),
    })
    .await;
    let cases = [
        ("/to-loopback", "blocked_url"),
        ("/to-internal", "blocked_url"),
        ("/to-mapped", "blocked_url"),
        ("/to-gopher", "invalid_url"),
    ];
    for (path, want) in cases {
        let rig = Rig::new(
            ScriptedResolver::default().with("public.test", &[PUBLIC]).with("internal.test", &["10.0.0.5"]),
            RecordingConnector::default().map(PUBLIC, server.addr),
        );
        let r = rig.fetch(&public_only(), FetchRequest::get(format!("http://public.test{path}"))).await;
        assert_eq!(code(&r), want, "{path}: {r:?}");
        let attempts: Vec<String> = rig.connector.attempts().iter().map(|a| a.to_string()).collect();
        assert_eq!(attempts, [format!("{PUBLIC}:80")], "{path}: only the vetted public address");
    }
    assert!(server.seen().iter().all(|s| s.target.starts_with("/to-")));
}

#[tokio::test]
async fn a_rebinding_name_is_never_connected_to_its_second_answer() {
    let server = TestServer::start(|seen| match seen.target.as_str() {
        "/start" => Reply::redirect(302, "http://rebind.test/again"),
        _ => Reply::ok("rebound: should never be served"),
    })
    .await;
    let rig = Rig::new(
        ScriptedResolver::default().script("rebind.test", &[&[PUBLIC], &["127.0.0.1"]]),
        RecordingConnector::default().map(PUBLIC, server.addr),
    );
    let r = rig.fetch(&public_only(), FetchRequest::get("http://rebind.test/start")).await;
    assert_eq!(code(&r), "blocked_url", "{r:?}");
    assert!(matches!(&r, Err(FetchError::BlockedUrl(m)) if m.contains("127.0.0.1")), "{r:?}");
    let attempts = rig.connector.attempts();
    assert_eq!(attempts, [format!("{PUBLIC}:80").parse().expect("addr")], "only the vetted address");
    assert_eq!(
        *rig.resolver.lookups.lock().expect("lock"),
        ["rebind.test", "rebind.test"],
        "one lookup per hop"
    );
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_dead_first_address_does_not_eat_the_budget() {
    let server = TestServer::start(|_| Reply::ok("second address")).await;
    let rig = Rig::new(
        ScriptedResolver::default().with("dual.test", &[PUBLIC, PUBLIC2]),
        RecordingConnector::default().stall(PUBLIC).map(PUBLIC2, server.addr),
    );
    let mut req = FetchRequest::get("http://dual.test/");
    req.timeout = Some(Duration::from_secs(5));
    let started = Instant::now();
    let r = rig.fetch(&public_only(), req).await.expect("the second address answers");
    assert_eq!(r.body, b"second address");
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    let attempts = rig.connector.attempts();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0].ip().to_string(), PUBLIC, "the first address is tried first");
}

#[tokio::test]
async fn each_address_attempt_has_its_own_timeout() {
    let (resolver, connector) = (
        Arc::new(ScriptedResolver::default().with("dead.test", &[PUBLIC, PUBLIC2])),
        Arc::new(RecordingConnector::default().stall(PUBLIC).stall(PUBLIC2)),
    );
    let limits = FetchLimits { connect_timeout: Duration::from_millis(400), ..FetchLimits::default() };
    let client = FetchClient::new(resolver, connector.clone(), limits);
    let started = Instant::now();
    let r = client.fetch(&public_only(), FetchRequest::get("http://dead.test/"), None).await;
    assert_eq!(code(&r), "transport", "{r:?}");
    assert!(matches!(&r, Err(FetchError::Transport(m)) if m.contains("no answer within 400 ms")), "{r:?}");
    // The second attempt starts 250 ms in and runs its own 400 ms: well before the 30 s budget.
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!(connector.attempts().len(), 2);
    connector.assert_no_violation();
}

#[tokio::test]
async fn a_name_with_any_blocked_address_is_refused_before_connecting() {
    let rig = Rig::new(
        ScriptedResolver::default().with("mixed.test", &[PUBLIC, "10.1.2.3"]).with("empty.test", &[]),
        RecordingConnector::default(),
    );
    for url in ["http://mixed.test/", "http://empty.test/"] {
        let r = rig.fetch(&public_only(), FetchRequest::get(url)).await;
        assert_eq!(code(&r), "blocked_url", "{url}");
    }
    let r = rig.fetch(&public_only(), FetchRequest::get("http://unknown.test/")).await;
    assert_eq!(code(&r), "transport");
    assert!(rig.connector.attempts().is_empty());
}

#[tokio::test]
async fn the_host_allow_list_is_checked_on_every_hop() {
    let server = TestServer::start(|seen| match seen.target.as_str() {
        "/away" => Reply::redirect(302, "http://other.test/"),
        _ => Reply::ok("fine"),
    })
    .await;
    let rig = Rig::new(
        ScriptedResolver::default().with("a.example.test", &[PUBLIC]).with("other.test", &[PUBLIC]),
        RecordingConnector::default().map(PUBLIC, server.addr),
    );
    let g = grant(&["*.example.test"], false);
    let r = rig.fetch(&g, FetchRequest::get("http://other.test/")).await;
    assert_eq!(code(&r), "host_not_allowed");
    assert!(rig.connector.attempts().is_empty());
    let r = rig.fetch(&g, FetchRequest::get("http://a.example.test/")).await.expect("allowed host");
    assert_eq!(r.body, b"fine");
    let r = rig.fetch(&g, FetchRequest::get("http://a.example.test/away")).await;
    assert_eq!(code(&r), "host_not_allowed");
    assert_eq!(rig.connector.attempts().len(), 2);
}

#[tokio::test]
async fn credentials_are_dropped_on_a_host_change_and_303_switches_to_get() {
    let server = TestServer::start(|seen| match seen.target.as_str() {
        "/post" => Reply::redirect(303, "/landing"),
        "/same" => Reply::redirect(307, "/kept"),
        "/cross" => Reply::redirect(308, "http://other.test/moved"),
        _ => echo(seen),
    })
    .await;
    let rig = Rig::new(
        ScriptedResolver::default().with("public.test", &[PUBLIC]).with("other.test", &[PUBLIC2]),
        RecordingConnector::default().map(PUBLIC, server.addr).map(PUBLIC2, server.addr),
    );
    let with_creds = |path: &str| {
        let mut req = FetchRequest::get(format!("http://public.test{path}"));
        req.method = "POST".into();
        req.body = Some(b"payload".to_vec());
        req.headers = vec![("Authorization".into(), "Bearer t".into()), ("Cookie".into(), "s=1".into())];
        req
    };
    let r = rig.fetch(&public_only(), with_creds("/post")).await.expect("303");
    assert_eq!(String::from_utf8_lossy(&r.body), "GET /landing\n");
    let r = rig.fetch(&public_only(), with_creds("/same")).await.expect("307");
    assert_eq!(String::from_utf8_lossy(&r.body), "POST /kept\npayload");
    let r = rig.fetch(&public_only(), with_creds("/cross")).await.expect("308");
    assert_eq!(String::from_utf8_lossy(&r.body), "POST /moved\npayload");
    assert_eq!(r.final_url, "http://other.test/moved");

    let seen = server.seen();
    let by_target = |t: &str| seen.iter().find(|s| s.target == t).expect(t).clone();
    assert_eq!(by_target("/landing").header("authorization"), Some("Bearer t"), "same host keeps them");
    assert_eq!(by_target("/kept").header("cookie"), Some("s=1"));
    let moved = by_target("/moved");
    assert_eq!((moved.header("authorization"), moved.header("cookie")), (None, None));
    assert_eq!(moved.header("host"), Some("other.test"), "the original name goes in Host");
}

#[tokio::test]
async fn the_body_is_cut_at_max_bytes_without_reading_the_rest() {
    let server = TestServer::start(|seen| match seen.target.as_str() {
        "/exact" => Reply::ok(vec![b'e'; 1000]),
        // Declares a megabyte, sends 5000 bytes and closes: reading on would fail.
        _ => {
            let mut raw = b"HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n".to_vec();
            raw.extend(std::iter::repeat_n(b'x', 5000));
            Reply::Raw(raw)
        }
    })
    .await;
    let rig = Rig::loopback();
    let mut req = FetchRequest::get(server.url("/big"));
    req.max_bytes = Some(1000);
    let r = rig.fetch(&private_ok(), req).await.expect("cut");
    assert_eq!((r.body.len(), r.truncated), (1000, true));

    let mut req = FetchRequest::get(server.url("/exact"));
    req.max_bytes = Some(1000);
    let r = rig.fetch(&private_ok(), req).await.expect("exact");
    assert_eq!((r.body.len(), r.truncated), (1000, false));

    let mut req = FetchRequest::get(server.url("/exact"));
    req.max_bytes = Some(u64::MAX);
    let r = rig.fetch(&private_ok(), req).await.expect("clamped to the host maximum");
    assert_eq!(r.body.len(), 1000);
}

#[tokio::test]
async fn a_declared_length_over_the_hard_cap_is_too_large() {
    let server = TestServer::start(|_| {
        Reply::Raw(b"HTTP/1.1 200 OK\r\ncontent-length: 200000000\r\n\r\nabc".to_vec())
    })
    .await;
    let r = Rig::loopback().fetch(&private_ok(), FetchRequest::get(server.url("/huge"))).await;
    assert_eq!(code(&r), "too_large");
}

#[tokio::test]
async fn a_request_body_over_the_limit_is_too_large() {
    let rig = Rig::loopback();
    let mut req = FetchRequest::get("http://127.0.0.1:9/");
    req.method = "PUT".into();
    req.body = Some(vec![0; (10 << 20) + 1]);
    assert_eq!(code(&rig.fetch(&private_ok(), req).await), "too_large");
    assert!(rig.connector.attempts().is_empty());
}

#[tokio::test]
async fn a_slow_drip_hits_the_timeout() {
    let server = TestServer::start(|_| Reply::Drip { len: 100, every: Duration::from_millis(200) }).await;
    let mut req = FetchRequest::get(server.url("/drip"));
    req.timeout = Some(Duration::from_millis(500));
    let started = Instant::now();
    let r = Rig::loopback().fetch(&private_ok(), req).await;
    assert_eq!(code(&r), "timeout");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(3), "took {took:?}");
}

#[tokio::test]
async fn the_call_deadline_bounds_the_fetch() {
    let server = TestServer::start(|_| Reply::Drip { len: 100, every: Duration::from_millis(200) }).await;
    let rig = Rig::loopback();
    let deadline = Instant::now() + Duration::from_millis(300);
    let started = Instant::now();
    let r = rig.client.fetch(&private_ok(), FetchRequest::get(server.url("/")), Some(deadline)).await;
    assert_eq!(code(&r), "timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    let past =
        rig.client.fetch(&private_ok(), FetchRequest::get(server.url("/")), Some(Instant::now())).await;
    assert_eq!(code(&past), "timeout");
    assert_eq!(rig.connector.attempts().len(), 1, "a spent deadline connects nowhere");
}

#[tokio::test]
async fn dropping_the_fetch_closes_its_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                return;
            }
            head.push(byte[0]);
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n").await;
        for _ in 0..1000 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if stream.write_all(&[b'x'; 64]).await.is_err() {
                let _ = closed_tx.send(());
                return;
            }
            count.fetch_add(1, Ordering::Relaxed);
        }
    });
    let rig = Rig::loopback();
    let open = private_ok();
    let fetch = rig.client.fetch(&open, FetchRequest::get(format!("http://{addr}/")), None);
    tokio::select! {
        r = fetch => panic!("the drip should not finish: {r:?}"),
        _ = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    let closed = tokio::time::timeout(Duration::from_secs(5), closed_rx).await;
    assert!(matches!(closed, Ok(Ok(()))), "the server kept writing to a dropped fetch");
    assert!(written.load(Ordering::Relaxed) > 0);
}

#[tokio::test]
async fn trace_and_other_methods_are_refused() {
    let rig = Rig::loopback();
    for method in ["TRACE", "CONNECT", "FOO", ""] {
        let mut req = FetchRequest::get("http://127.0.0.1:9/");
        req.method = method.into();
        assert_eq!(code(&rig.fetch(&private_ok(), req).await), "method_not_allowed", "{method}");
    }
    assert!(rig.connector.attempts().is_empty());
}

#[tokio::test]
async fn private_targets_are_refused_without_the_opt_out() {
    let server = TestServer::start(echo).await;
    let rig = Rig::loopback();
    for url in [server.url("/"), "http://localhost/".into(), "http://[::1]/".into()] {
        assert_eq!(
            code(&rig.fetch(&public_only(), FetchRequest::get(url.clone())).await),
            "blocked_url",
            "{url}"
        );
    }
    assert!(rig.connector.attempts().is_empty());
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn tls_is_spoken_for_https() {
    // A "server" that answers the TLS hello with plain HTTP: the handshake must fail.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        if let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").await;
        }
    });
    let r = Rig::loopback().fetch(&private_ok(), FetchRequest::get(format!("https://{addr}/"))).await;
    assert!(matches!(&r, Err(FetchError::Transport(m)) if m.contains("TLS")), "{r:?}");
}

#[test]
fn grants_follow_the_plugin_kind() {
    let settings = NetworkSettings::default();
    assert_eq!(settings.grant_for("builtin:web").hosts, [HostPattern::any()]);
    assert!(settings.grant_for("my.wasm").is_empty());
    assert!(!settings.grant_for("builtin:web").allow_private);
}

/// A TLS server on loopback with a self-signed certificate for `secure.test`; it records
/// the SNI each handshake asked for and answers one HTTP request per connection.
async fn tls_server() -> (SocketAddr, rustls::RootCertStore, Arc<std::sync::Mutex<Vec<Option<String>>>>) {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    let generated = rcgen::generate_simple_self_signed(vec!["secure.test".to_owned()]).expect("certificate");
    let cert = generated.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(super::exchange::ring_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .expect("server config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let names = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = names.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                seen.lock().expect("lock").push(tls.get_ref().1.server_name().map(str::to_owned));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecure").await;
                let _ = tls.shutdown().await;
            });
        }
    });
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).expect("root");
    (addr, roots, names)
}

#[tokio::test]
async fn https_keeps_the_original_name_for_sni_and_the_certificate() {
    let (addr, roots, names) = tls_server().await;
    let resolver =
        Arc::new(ScriptedResolver::default().with("secure.test", &[PUBLIC]).with("wrong.test", &[PUBLIC]));
    let connector = Arc::new(RecordingConnector::default().map(PUBLIC, addr));
    let client = FetchClient::new(resolver, connector.clone(), FetchLimits::default()).with_tls_roots(roots);

    let r = client.fetch(&public_only(), FetchRequest::get("https://secure.test/"), None).await;
    let r = r.expect("https through the pinned address");
    assert_eq!(
        (r.status, r.body.as_slice(), r.final_url.as_str()),
        (200, &b"secure"[..], "https://secure.test/")
    );

    let r = client.fetch(&public_only(), FetchRequest::get("https://wrong.test/"), None).await;
    // The certificate is checked against the URL's name, not the connected address.
    assert!(
        matches!(&r, Err(FetchError::Transport(m)) if m.contains("TLS") && m.contains("wrong.test")),
        "{r:?}"
    );

    let names = names.lock().expect("lock").clone();
    assert_eq!(names, [Some("secure.test".to_owned())], "SNI is the URL's name");
    let attempts: Vec<String> = connector.attempts().iter().map(ToString::to_string).collect();
    assert_eq!(attempts, [format!("{PUBLIC}:443"), format!("{PUBLIC}:443")]);
    connector.assert_no_violation();
}
