//! `serve --http` against a client that tries to starve the others: slow
//! request heads, idle event streams, sessions by the thousand, repeated
//! headers, and all of it at once while a second client's calls must still be
//! answered within a second. The attacker connects from 127.0.0.2 (its own
//! client), everyone else from 127.0.0.1; nothing leaves loopback.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use toolhost_tests::attack::{
    Attack, client_from, initialize, open_listen, open_stream, session_call, slow_head, tcp_from,
};
use toolhost_tests::servers::{Instance, call_text, modern_request};

const ATTACKER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3));
const FOURTH: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 4));
const VICTIM: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
/// How long the second client may wait for an answer.
const PROMPT: Duration = Duration::from_secs(1);
const NO_FUEL_LIMIT: &str = "18446744073709551615";

/// What comes back on `stream` within `wait` (until the server closes it).
async fn read_for(stream: &mut tokio::net::TcpStream, wait: Duration) -> String {
    let mut got = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut got)).await;
    String::from_utf8_lossy(&got).into_owned()
}

/// A stateless `noop` call by `client`, answered `ok` within [`PROMPT`].
async fn answered_promptly(client: &reqwest::Client, url: &str, id: u64) -> Duration {
    let started = Instant::now();
    let answer = modern_request(client, url, id, "tools/call", json!({"name": "noop", "arguments": {}}))
        .await
        .unwrap_or_else(|e| panic!("call {id} not answered: {e}"));
    assert_eq!(call_text(&answer).unwrap(), "ok", "{answer}");
    let took = started.elapsed();
    assert!(took < PROMPT, "call {id} took {took:?}");
    took
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_heads_from_one_client_leave_room_for_the_others() {
    const IDLE: Duration = Duration::from_secs(8);
    let work = tempfile::tempdir().unwrap();
    let idle = IDLE.as_millis().to_string();
    let flags = ["--max-connections", "24", "--connections-per-client", "4", "--idle-timeout-ms", &idle];
    let server = Instance::start("slow", work.path(), &flags).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(slow_head(ATTACKER, server.addr).await.unwrap());
    }
    // A connect completes in the kernel before the server takes the connection
    // and its client's place: give it a moment to take the four, so the next is
    // the one beyond them (on a busy machine one was taken first and held its place).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let opened = Instant::now();
    // A connection that sends nothing is closed without an answer (read below).
    let mut silent = tcp_from(OTHER, server.addr).await.unwrap();
    // Beyond its four, each is refused at once, and the server keeps accepting:
    // as many as fit well before the held heads time out and give their places back.
    let mut refused = 0;
    while refused < 30 && opened.elapsed() < IDLE / 2 {
        let mut extra = slow_head(ATTACKER, server.addr).await.unwrap();
        let reply = read_for(&mut extra, Duration::from_secs(5)).await;
        assert!(reply.starts_with("HTTP/1.1 429"), "refusal {refused}: {reply}");
        assert!(reply.contains("too many connections"), "{reply}");
        refused += 1;
    }
    assert!(refused >= 10, "only {refused} refusals in {:?}", IDLE / 2);
    let victim = client_from(VICTIM);
    answered_promptly(&victim, &server.url(), 1).await;
    // A head begun and not finished within the idle timeout: 408.
    let reply = read_for(&mut held[0], IDLE + Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(opened.elapsed() < IDLE + Duration::from_secs(2), "{:?}", opened.elapsed());
    // Its place is not given back while the attacker keeps the answered
    // connection open (the server waits a second for it to close): one more is
    // still refused, so a client reconnecting at once never holds more than its share.
    let mut extra = slow_head(ATTACKER, server.addr).await.unwrap();
    let reply = read_for(&mut extra, Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 429"), "a place given back before its connection closed: {reply}");
    // Closed, the places are given back: a request from the attacker is served again.
    drop((held, extra));
    let head = format!("GET /nowhere HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.addr);
    let deadline = Instant::now() + Duration::from_secs(5);
    let reply = loop {
        let mut again = tcp_from(ATTACKER, server.addr).await.unwrap();
        again.write_all(head.as_bytes()).await.unwrap();
        let reply = read_for(&mut again, Duration::from_secs(5)).await;
        if !reply.starts_with("HTTP/1.1 429") || Instant::now() > deadline {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(reply.starts_with("HTTP/1.1 404"), "{reply}");
    assert_eq!(read_for(&mut silent, Duration::from_secs(10)).await, "");
    assert!(opened.elapsed() < IDLE + Duration::from_secs(3), "{:?}", opened.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_total_of_connections_is_answered_503_beyond() {
    let work = tempfile::tempdir().unwrap();
    let server = Instance::start("total", work.path(), &["--max-connections", "3"]).await;
    let mut held = Vec::new();
    for ip in [ATTACKER, OTHER, VICTIM] {
        held.push(slow_head(ip, server.addr).await.unwrap());
    }
    // A connect completes in the kernel's backlog before the server accepts it:
    // give the server a moment to take the three in, so the fourth is the one
    // over the total (on a busy machine it was accepted first and served).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut extra = tcp_from(VICTIM, server.addr).await.unwrap();
    // As a client would: a request, so the answer cannot be taken for a silent close.
    let head = format!("GET /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.addr);
    let _ = extra.write_all(head.as_bytes()).await;
    let reply = read_for(&mut extra, Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
}

#[tokio::test(flavor = "multi_thread")]
async fn event_streams_are_counted_per_client_and_end_when_idle() {
    // An MCP server in the policy: its tool list may change, so `subscriptions/listen` is served.
    let (work, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let policy = outside.path().join("policy.toml");
    let script = toolhost_tests::workspace_root().join("tests/mcp_servers/hostile.py");
    let entry = format!(
        "[servers.t]\ncommand = [\"/usr/bin/python3\", {:?}]\nread-dirs = [{:?}]\n",
        script.display().to_string(),
        script.parent().unwrap().display().to_string()
    );
    std::fs::write(&policy, entry).unwrap();
    let flags =
        ["--streams-per-client", "2", "--stream-idle-ms", "1500", "--mode", "yolo", "--eager", "--policy"];
    let server =
        Instance::start("streams", work.path(), &[&flags[..], &[policy.to_str().unwrap()]].concat()).await;
    let (url, attacker) = (server.url(), client_from(ATTACKER));
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(initialize(&attacker, &url).await.unwrap());
    }
    let first = open_stream(&attacker, &url, &sessions[0]).await.unwrap();
    let listen = open_listen(&attacker, &url).await.unwrap();
    assert_eq!(listen.headers()["content-type"], "text/event-stream", "a listen is a stream");
    let opened = Instant::now();
    // A third stream, a GET or a listen, is refused; another client's is not.
    let (status, text) = open_stream(&attacker, &url, &sessions[1]).await.unwrap_err();
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("too many event streams"), "{text}");
    let (status, text) = open_listen(&attacker, &url).await.unwrap_err();
    assert_eq!(status, 429, "{text}");
    let victim = client_from(VICTIM);
    let own = initialize(&victim, &url).await.unwrap();
    let victims = open_stream(&victim, &url, &own).await.unwrap();
    // Calls are not streams: the attacker still calls.
    assert!(session_call(&attacker, &url, &sessions[2], "noop").await.unwrap().contains("ok"));
    // Silent streams end after the stream idle time (keep-alives do not count).
    for stream in [first, listen] {
        let body = tokio::time::timeout(Duration::from_secs(10), stream.bytes()).await;
        assert!(body.is_ok_and(|b| b.is_ok()), "the stream ended cleanly");
    }
    let took = opened.elapsed();
    assert!(took >= Duration::from_millis(1400) && took < Duration::from_secs(6), "{took:?}");
    drop(victims);
    // Their slots are free again.
    open_stream(&attacker, &url, &sessions[1]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_bounded_per_client_and_in_all() {
    let work = tempfile::tempdir().unwrap();
    let flags = ["--sessions-per-client", "3", "--max-sessions", "5", "--streams-per-client", "8"];
    let server = Instance::start("sessions", work.path(), &flags).await;
    let url = server.url();
    let (victim, attacker, other) = (client_from(VICTIM), client_from(ATTACKER), client_from(OTHER));
    let works = |client: &reqwest::Client, session: &str| {
        let (client, url, session) = (client.clone(), url.clone(), session.to_string());
        async move { session_call(&client, &url, &session, "noop").await }
    };
    let v1 = initialize(&victim, &url).await.unwrap();
    let mut own = Vec::new();
    for _ in 0..4 {
        own.push(initialize(&attacker, &url).await.unwrap());
    }
    // The fourth pushed out the attacker's own least recently used one.
    assert_eq!(works(&attacker, &own[0]).await.unwrap_err().0, 404);
    for session in &own[1..] {
        assert!(works(&attacker, session).await.unwrap().contains("ok"));
    }
    // Five in all: a new client's second pushes out the attacker's (it holds
    // the most), not the victim's, though the victim's is the oldest.
    let o1 = initialize(&other, &url).await.unwrap();
    let o2 = initialize(&other, &url).await.unwrap();
    assert!(works(&victim, &v1).await.unwrap().contains("ok"));
    assert!(
        works(&other, &o1).await.unwrap().contains("ok") && works(&other, &o2).await.unwrap().contains("ok")
    );
    assert_eq!(works(&attacker, &own[1]).await.unwrap_err().0, 404);
    // All of a client's sessions busy (a stream open on each): 429.
    let mut streams = Vec::new();
    for session in &own[2..] {
        streams.push(open_stream(&attacker, &url, session).await.unwrap());
    }
    let third = initialize(&attacker, &url).await.unwrap();
    streams.push(open_stream(&attacker, &url, &third).await.unwrap());
    let (status, text) = initialize(&attacker, &url).await.unwrap_err();
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("sessions, all busy"), "{text}");
    drop(streams);

    // Thousands from another address: the server does not grow with them.
    let before = server.rss_kib();
    let (fourth, mut opening) = (client_from(FOURTH), tokio::task::JoinSet::new());
    // Two at a time: never more being made than the client may hold.
    for _ in 0..2 {
        let (fourth, url) = (fourth.clone(), url.clone());
        opening.spawn(async move {
            let mut opened = 0;
            for _ in 0..1000 {
                opened += usize::from(initialize(&fourth, &url).await.is_ok());
            }
            opened
        });
    }
    let mut opened = 0;
    while let Some(count) = opening.join_next().await {
        opened += count.unwrap();
    }
    assert!(opened > 1500, "most pushed out an older one: {opened} of 2000");
    let grown = server.rss_kib().saturating_sub(before);
    assert!(grown < 24 * 1024, "2000 sessions grew the server by {grown} KiB");
    assert!(works(&victim, &v1).await.unwrap().contains("ok"));
}

#[tokio::test(flavor = "multi_thread")]
async fn headers_the_checks_read_are_refused_when_repeated() {
    let work = tempfile::tempdir().unwrap();
    let server = Instance::start("headers", work.path(), &[]).await;
    let addr = server.addr;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h", "version": "0"}}})
    .to_string();
    let send = |target: String, extra: String| {
        let body = body.clone();
        async move {
            let mut stream = tcp_from(VICTIM, addr).await.unwrap();
            let request = format!(
                "POST {target} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            read_for(&mut stream, Duration::from_secs(30)).await
        }
    };
    let fine = send("/mcp".into(), String::new()).await;
    assert!(fine.starts_with("HTTP/1.1 200"), "{fine}");
    for (extra, named) in [
        ("Host: evil.example\r\n".to_string(), "host"),
        (format!("Origin: http://{addr}\r\nOrigin: http://evil.example\r\n"), "origin"),
        ("Authorization: Bearer a\r\nAuthorization: Bearer b\r\n".into(), "authorization"),
        ("Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n".into(), "mcp-session-id"),
        (
            "MCP-Protocol-Version: 2025-11-25\r\nMCP-Protocol-Version: 2025-06-18\r\n".into(),
            "mcp-protocol-version",
        ),
    ] {
        let reply = send("/mcp".into(), extra.clone()).await;
        assert!(reply.starts_with("HTTP/1.1 400"), "{extra}: {reply}");
        assert!(reply.contains(&format!("{named} is given more than once")), "{extra}: {reply}");
    }
    let reply = send("http://evil.example/mcp".into(), String::new()).await;
    assert!(reply.starts_with("HTTP/1.1 400") && reply.contains("evil.example"), "{reply}");
}

/// The attacker does everything at once; the second client's calls are each
/// answered within a second, and its session and stream survive.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_client_is_answered_promptly_while_one_does_everything() {
    let work = tempfile::tempdir().unwrap();
    let flags = [
        "--max-connections",
        "64",
        "--connections-per-client",
        "40",
        "--idle-timeout-ms",
        "2000",
        "--fuel",
        NO_FUEL_LIMIT,
        "--timeout-ms",
        "3000",
    ];
    let server = Instance::start("attacked", work.path(), &flags).await;
    let (url, victim) = (server.url(), client_from(VICTIM));
    let session = initialize(&victim, &url).await.unwrap();
    let _stream = open_stream(&victim, &url, &session).await.unwrap();
    // Its slow heads, its streams (8) and a request in flight per session task
    // (4) fit in its 40 places: with more heads than that its own sessions are
    // starved of places (the cap holds), and the session flood does not happen.
    let attack = Attack::start(ATTACKER, server.addr, 24);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut slowest = Duration::ZERO;
    for id in 0..30u64 {
        slowest = slowest.max(answered_promptly(&victim, &url, id).await);
        let started = Instant::now();
        let text = session_call(&victim, &url, &session, "noop").await.unwrap();
        assert!(text.contains("\"ok\""), "{text}");
        assert!(started.elapsed() < PROMPT, "a session call took {:?}", started.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let opened = attack.sessions.load(std::sync::atomic::Ordering::Relaxed);
    let seen = attack.stop().await;
    eprintln!("slowest answer {slowest:?}; attacker opened {opened} sessions and saw {seen:?}");
    assert!(opened > 100, "the attacker opened sessions: {opened}");
    assert!(seen.get(&429).copied().unwrap_or(0) > 0, "the attacker was refused: {seen:?}");
}
