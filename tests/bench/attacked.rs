//! `bench attacked`: a client's calls to one `toolhost serve --http` (default
//! limits) answered while nobody else is there, then, in the same run, while
//! another client (from 127.0.0.2) holds slow request heads, opens sessions by
//! the thousand and tries a GET event stream on each (`toolhost_tests::attack`).
//! Loopback only; bounded: `CALLS` calls each way, the attack at most `ATTACK_FOR`.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_tests::attack::{Attack, client_from, initialize, open_stream};
use toolhost_tests::servers::{Instance, call_text, modern_request};

use super::report;

/// Timed calls per figure (after `WARM` untimed ones).
const CALLS: usize = 1000;
const WARM: usize = 100;
/// Slow heads the attacker keeps open (with its sessions' and streams'
/// connections, more than the 32 a client may have: the rest are refused).
const SLOW_HEADS: usize = 24;
/// Sessions the attacker opens before the calls are timed.
const SESSIONS_FIRST: usize = 2000;
/// The longest the attack runs.
const ATTACK_FOR: Duration = Duration::from_secs(120);

/// `CALLS` sequential `noop` calls by `client`: each one's time.
async fn calls(client: &reqwest::Client, url: &str) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(CALLS);
    for id in 0..WARM + CALLS {
        let started = Instant::now();
        let answer =
            modern_request(client, url, id as u64, "tools/call", json!({"name": "noop", "arguments": {}}))
                .await
                .expect("answered");
        let took = started.elapsed();
        assert_eq!(call_text(&answer).expect("text"), "ok", "{answer}");
        if id >= WARM {
            samples.push(took);
        }
    }
    samples
}

pub(crate) async fn attacked() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = Instance::start("attacked", work.path(), &["--idle-timeout-ms", "2000"]).await;
    let url = server.url();
    let victim = client_from(IpAddr::V4(Ipv4Addr::LOCALHOST));
    // The victim's own session and stream, to show they survive.
    let session = initialize(&victim, &url).await.expect("a session");
    let _stream = open_stream(&victim, &url, &session).await.expect("a stream");
    let rss_before = server.rss_kib();
    report("noop over HTTP, alone", calls(&victim, &url).await);

    let attack = Attack::start(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), server.addr, SLOW_HEADS);
    let started = Instant::now();
    while attack.sessions.load(Ordering::Relaxed) < SESSIONS_FIRST && started.elapsed() < ATTACK_FOR {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ramp = started.elapsed();
    report("noop over HTTP, under attack", calls(&victim, &url).await);
    let sessions = attack.sessions.load(Ordering::Relaxed);
    let rss_after = server.rss_kib();
    let seen = attack.stop().await;
    let still = victim
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", toolhost_tests::attack::LEGACY)
        .body(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string())
        .send()
        .await
        .expect("answered")
        .status();
    println!(
        "attacker: {sessions} sessions opened ({SESSIONS_FIRST} in {ramp:.1?} before timing), \
         statuses {seen:?}; server RSS {rss_before} KiB before, {rss_after} KiB under attack; \
         the victim's session after: HTTP {still}"
    );
}
