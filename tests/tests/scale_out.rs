//! Scale-out: three `toolhost serve --http` instances sharing one compile
//! cache and one output store directory, behind Debian's `haproxy` (HTTP mode,
//! round robin, no stickiness), driven by 2026-07-28 clients (stateless: any
//! request may land on any instance). Every call is answered; `read_output`
//! of a call one instance ran works through the others; killing one instance
//! mid-run fails only the calls it had in flight (an error, not a hang), and
//! the rest go on. Everything listens on 127.0.0.1.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinSet;
use toolhost_tests::servers::{Haproxy, Instance, call_text, marked_call_id, modern_request};

/// Fuel that never runs out: only the deadline stops `spin`.
const NO_FUEL_LIMIT: &str = "18446744073709551615";
/// How long any one request may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

/// The instance a call id came from: its per-process random prefix.
fn prefix(call_id: &str) -> &str {
    call_id.rsplit_once('-').map_or(call_id, |(prefix, _)| prefix)
}

#[tokio::test(flavor = "multi_thread")]
async fn three_instances_behind_haproxy_share_outputs_and_survive_a_kill() {
    let work = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let store = shared.path().join("outputs");
    let balancer_addr = Haproxy::address();
    let authority = balancer_addr.to_string();
    let flags = [
        "--allow-authority",
        &authority,
        "--store",
        store.to_str().unwrap(),
        "--clamp-bytes",
        "2048",
        "--fuel",
        NO_FUEL_LIMIT,
        "--timeout-ms",
        "4000",
    ];
    let mut instances = Vec::new();
    for name in ["a", "b", "c"] {
        instances.push(Instance::start(name, work.path(), &flags).await);
    }
    let balancer = Haproxy::start(balancer_addr, &instances.iter().map(|i| i.addr).collect::<Vec<_>>()).await;
    let url = balancer.url();
    let client = toolhost_tests::servers::http_client().timeout(HANG).build().unwrap();

    // The balancer's authority is accepted in Host; any other is not.
    for (host, status) in [(authority.as_str(), 200), ("127.0.0.1:1", 403), ("evil.example:80", 403)] {
        let body = toolhost_tests::servers::modern_body(1, "server/discover", json!({}));
        let response = client
            .post(instances[1].url())
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", toolhost_tests::servers::MODERN)
            .header("mcp-method", "server/discover")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "Host: {host}");
    }

    // Every call answered, spread over the three; each output is cut, so its
    // marker names the call id (whose prefix names the instance).
    let mut calls = JoinSet::new();
    for id in 0..60u64 {
        let (client, url) = (client.clone(), url.clone());
        calls.spawn(async move {
            let args = json!({"name": "big_output", "arguments": {"bytes": 8000}});
            let answer = modern_request(&client, &url, id, "tools/call", args).await?;
            let text = call_text(&answer)?;
            marked_call_id(text).map(str::to_string).ok_or_else(|| format!("no marker in {text}"))
        });
    }
    let mut ids = Vec::new();
    while let Some(joined) = calls.join_next().await {
        ids.push(joined.unwrap().unwrap_or_else(|e| panic!("a call was not answered: {e}")));
    }
    let mut per_instance: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &ids {
        *per_instance.entry(prefix(id)).or_default() += 1;
    }
    assert_eq!(per_instance.len(), 3, "round robin reached every instance: {per_instance:?}");
    assert!(per_instance.values().all(|&n| n >= 10), "spread: {per_instance:?}");

    // read_output on each instance directly, of one call from each instance:
    // six of the nine read what another process stored.
    let firsts: Vec<&String> =
        per_instance.keys().map(|p| ids.iter().find(|id| prefix(id) == *p).unwrap()).collect();
    let mut n = 1000;
    for instance in &instances {
        for call_id in &firsts {
            n += 1;
            let args =
                json!({"name": "read_output", "arguments": {"call_id": call_id, "offset": 1, "limit": 3}});
            let answer = modern_request(&client, &instance.url(), n, "tools/call", args).await.unwrap();
            assert_eq!(answer["result"]["isError"], false, "{answer}");
            assert!(call_text(&answer).unwrap().contains("line"), "{answer}");
        }
    }
    // And through the balancer, every call id.
    for call_id in &ids {
        n += 1;
        let args = json!({"name": "read_output", "arguments": {"call_id": call_id, "pattern": "^line 1$"}});
        let answer = modern_request(&client, &url, n, "tools/call", args).await.unwrap();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }

    // Kill one instance while calls are in flight on every instance.
    let mut spinning = JoinSet::new();
    for id in 0..9u64 {
        let (client, url) = (client.clone(), url.clone());
        spinning.spawn(async move {
            let started = Instant::now();
            let args = json!({"name": "spin", "arguments": {}});
            (modern_request(&client, &url, 2000 + id, "tools/call", args).await, started.elapsed())
        });
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    instances[0].kill().await;
    let (mut lost, mut finished) = (Vec::new(), 0);
    while let Some(joined) = spinning.join_next().await {
        let (outcome, took) = joined.unwrap();
        assert!(took < HANG, "a call hung for {took:?}");
        match outcome {
            // The others ran to their deadline and answered.
            Ok(answer) => {
                assert!(call_text(&answer).unwrap().starts_with("timeout"), "{answer}");
                finished += 1;
            }
            // Those on the killed instance end with it (before their 4 s
            // deadline): haproxy answers 502 or closes the connection.
            Err(error) => {
                assert!(took < Duration::from_millis(3800), "a lost call took {took:?}: {error}");
                lost.push(error);
            }
        }
    }
    assert!(!lost.is_empty(), "the killed instance had calls in flight");
    assert!(lost.len() <= 4, "only the killed instance's calls are lost: {lost:?}");
    assert!(lost.iter().all(|e| e.starts_with("HTTP 502") || e.starts_with("no answer")), "{lost:?}");
    assert_eq!(finished + lost.len(), 9);

    // The rest go on: every later call is answered by the two left.
    for id in 0..30u64 {
        let args = json!({"name": "noop", "arguments": {}});
        let answer = modern_request(&client, &url, 3000 + id, "tools/call", args)
            .await
            .unwrap_or_else(|e| panic!("call {id} after the kill: {e}"));
        assert_eq!(call_text(&answer).unwrap(), "ok", "{answer}");
    }
}
