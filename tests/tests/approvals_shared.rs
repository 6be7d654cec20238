//! Approvals spent once, anywhere: three `toolhost serve --http` instances,
//! each with a data dir of its own (as on three machines), one
//! `--state-key-file`, one output store (a real `redis-server`, or one shared
//! directory), behind a real `haproxy` (round robin). A 2026-07-28 answer used
//! on one instance is refused on every other; the same answer sent to all
//! three at once runs one call, round after round; a store that cannot record
//! the use refuses the answer (`-32603`, `approval_store_unavailable`), runs
//! nothing, and leaves the answer good for when the store is back. Claims in
//! Redis keep their bound and expiry, and their keys are digests. Everything
//! listens on 127.0.0.1.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::process::Child;
use tokio::task::JoinSet;
use toolhost::{CLOCK_SKEW, Claim, OutputStore, StoreError};
use toolhost_tests::servers::{
    Haproxy, MODERN, Redis, START_PATIENCE, http_client, modern_body, serve_command,
};

/// How many times the same answer is raced.
const ROUNDS: usize = 20;

/// Instances sharing a store and a key, each with its own data dir, behind haproxy.
struct Fleet {
    _children: Vec<Child>,
    _data: Vec<tempfile::TempDir>,
    addrs: Vec<SocketAddr>,
    balancer: Haproxy,
    client: reqwest::Client,
}

impl Fleet {
    async fn start(work: &Path, store: &str, secrets: &Path) -> Self {
        let key = secrets.join("state.key");
        std::fs::write(&key, "c2hhcmVkIGtleSBmb3IgdGhlIGZsZWV0IG9mIHRocmVl\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let balancer_addr = Haproxy::address();
        let authority = balancer_addr.to_string();
        let (mut children, mut data, mut addrs) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let flags = [
                "--http",
                "127.0.0.1:0",
                "--store",
                store,
                "--state-key-file",
                key.to_str().unwrap(),
                "--allow-authority",
                &authority,
            ];
            let mut serve = serve_command(work, &flags);
            serve
                .env("TOOLHOST_DATA_DIR", dir.path())
                .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir());
            let (child, addr) = toolhost_tests::start_http_server(serve, START_PATIENCE).await;
            children.push(child);
            data.push(dir);
            addrs.push(addr);
        }
        let balancer = Haproxy::start(balancer_addr, &addrs).await;
        let client = http_client().timeout(Duration::from_secs(30)).build().unwrap();
        Self { _children: children, _data: data, addrs, balancer, client }
    }

    fn instance(&self, i: usize) -> String {
        format!("http://{}/mcp", self.addrs[i])
    }

    /// A `tools/call` to `url` from a client that declares elicitation.
    async fn call(&self, url: &str, id: u64, params: &Value) -> Value {
        post(&self.client, url, id, params).await
    }
}

async fn post(client: &reqwest::Client, url: &str, id: u64, params: &Value) -> Value {
    let mut body = modern_body(id, "tools/call", params.clone());
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", params["name"].as_str().unwrap())
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("no answer from {url}: {e}"));
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn write(path: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": "x"}})
}

/// `call` retried with its state and the answer "once".
fn answered(call: &Value, state: &str) -> Value {
    let mut call = call.clone();
    call["requestState"] = json!(state);
    call["inputResponses"] = json!({"approval": {"action": "accept", "content": {"decision": "once"}}});
    call
}

/// The `requestState` of a reply that asks.
fn state(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"].as_str().expect("a requestState").to_string()
}

/// Whether a reply is the call run (a complete result that is not an error).
fn ran(reply: &Value) -> bool {
    reply["result"]["resultType"] == "complete" && reply["result"]["isError"] == false
}

/// Whether a reply refuses the retry as an answer used already.
fn used_already(reply: &Value) -> bool {
    reply["error"]["code"] == -32602
        && reply["error"]["message"].as_str().is_some_and(|m| m.contains("used already"))
}

/// Ask through the balancer, answer on instance 0, replay on the others and
/// through the balancer; then race one answer on all three, `ROUNDS` times.
async fn once_anywhere(fleet: &Fleet, work: &Path) {
    let call = write("once.txt");
    let asked = fleet.call(&fleet.balancer.url(), 1, &call).await;
    let retry = answered(&call, &state(&asked));
    let reply = fleet.call(&fleet.instance(0), 2, &retry).await;
    assert!(ran(&reply), "{reply}");
    std::fs::remove_file(work.join("once.txt")).unwrap();
    for (n, url) in [
        fleet.instance(1),
        fleet.instance(2),
        fleet.balancer.url(),
        fleet.balancer.url(),
        fleet.balancer.url(),
    ]
    .iter()
    .enumerate()
    {
        let reply = fleet.call(url, 3 + n as u64, &retry).await;
        assert!(used_already(&reply), "replayed to {url}: {reply}");
    }
    assert!(!work.join("once.txt").exists(), "a replay ran the call again");

    for round in 0..ROUNDS {
        let path = format!("race-{round}.txt");
        let call = write(&path);
        let asked = fleet.call(&fleet.balancer.url(), 100, &call).await;
        let retry = answered(&call, &state(&asked));
        let mut racers = JoinSet::new();
        for i in 0..3 {
            let (client, url, retry) = (fleet.client.clone(), fleet.instance(i), retry.clone());
            racers.spawn(async move { post(&client, &url, 200 + i as u64, &retry).await });
        }
        let replies = racers.join_all().await;
        let runs = replies.iter().filter(|r| ran(r)).count();
        let refused = replies.iter().filter(|r| used_already(r)).count();
        assert_eq!((runs, refused), (1, 2), "round {round}: {replies:?}");
        assert!(work.join(&path).exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_runs_once_across_instances_sharing_redis() {
    let redis = Redis::start().await;
    let (work, secrets) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fleet = Fleet::start(work.path(), &redis.url(), secrets.path()).await;
    once_anywhere(&fleet, work.path()).await;
    // The records are claims under their own hash tag, named by digests, with an expiry.
    let keys = redis.cli(&["--scan", "--pattern", "toolhost:{toolhost-claims}:claim:*"]);
    assert_eq!(keys.lines().count(), 1 + ROUNDS, "{keys}");
    let ttl: i64 = redis.cli(&["PTTL", keys.lines().next().unwrap()]).parse().unwrap();
    let most = (toolhost::DEFAULT_APPROVAL_TIMEOUT + CLOCK_SKEW).as_millis() as i64;
    assert!(ttl > 0 && ttl <= most, "{ttl} ms");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_runs_once_across_instances_sharing_a_directory() {
    let (work, secrets, shared) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = shared.path().join("outputs");
    let fleet = Fleet::start(work.path(), store.to_str().unwrap(), secrets.path()).await;
    once_anywhere(&fleet, work.path()).await;
    let claims: Vec<_> = std::fs::read_dir(store.join("claims")).unwrap().map(|e| e.unwrap()).collect();
    assert_eq!(claims.len(), 1 + ROUNDS);
    for claim in claims {
        let meta = claim.metadata().unwrap();
        assert!(meta.is_file() && meta.permissions().mode() & 0o777 == 0o600, "{claim:?}");
        assert_eq!(claim.file_name().len(), 64, "a digest names it: {claim:?}");
    }
}

/// The `-32603` refusal of an answer whose use could not be recorded.
fn store_unavailable(reply: &Value) -> String {
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["data"]["reason"], "approval_store_unavailable", "{reply}");
    reply["error"]["message"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_redis_refuses_the_answer_and_keeps_it() {
    let mut redis = Redis::start().await;
    let (work, secrets) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fleet = Fleet::start(work.path(), &redis.url(), secrets.path()).await;
    let call = write("later.txt");
    let retry = answered(&call, &state(&fleet.call(&fleet.balancer.url(), 1, &call).await));
    redis.stop().await;
    let reply = fleet.call(&fleet.instance(1), 2, &retry).await;
    let why = store_unavailable(&reply);
    assert!(why.contains(&redis.url()) && why.contains("nothing ran"), "{why}");
    assert!(!work.path().join("later.txt").exists());
    // Redis back: the same answer is taken, once (each instance reconnects
    // at its next command; until then it still refuses).
    let _back = Redis::start_on(redis.port).await;
    let reply = once_reachable(&fleet, 1, &retry).await;
    assert!(ran(&reply), "{reply}");
    let reply = once_reachable(&fleet, 2, &retry).await;
    assert!(used_already(&reply), "{reply}");
}

/// `retry` sent to instance `i` until its store answers; that reply.
async fn once_reachable(fleet: &Fleet, i: usize, retry: &Value) -> Value {
    for attempt in 0..40 {
        let reply = fleet.call(&fleet.instance(i), 10 + attempt, retry).await;
        if reply["error"]["data"]["reason"] != "approval_store_unavailable" {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("instance {i} did not reach the store again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planted_claims_directory_refuses_the_answer() {
    let (work, secrets, shared) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = shared.path().join("outputs");
    let fleet = Fleet::start(work.path(), store.to_str().unwrap(), secrets.path()).await;
    // A symlink where the claims go: never followed, so no claim can be made.
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), store.join("claims")).unwrap();
    let call = write("planted.txt");
    let retry = answered(&call, &state(&fleet.call(&fleet.balancer.url(), 1, &call).await));
    let why = store_unavailable(&fleet.call(&fleet.instance(0), 2, &retry).await);
    assert!(why.contains("not a directory"), "{why}");
    assert!(!work.path().join("planted.txt").exists());
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing written through the link");
}

#[tokio::test(flavor = "multi_thread")]
async fn claims_in_redis_are_atomic_bounded_and_expire() {
    let redis = Redis::start().await;
    let expiry = Duration::from_secs(60);
    let url = redis.url();
    let store = || OutputStore::in_redis(&url, 100, 1000, expiry);
    let (one, two) =
        (std::sync::Arc::new(store().await.unwrap()), std::sync::Arc::new(store().await.unwrap()));
    let later = SystemTime::now() + Duration::from_secs(60);
    // Two processes racing on one name, many times: one claim each time.
    for round in 0..50 {
        let name = format!("race:{round}");
        let mut racers = JoinSet::new();
        for store in [&one, &two, &one, &two] {
            let (store, name) = (store.clone(), name.clone());
            racers.spawn(async move { store.claim(&name, later).await.unwrap().unwrap() });
        }
        let claims = racers.join_all().await;
        assert_eq!(claims.iter().filter(|c| **c == Claim::First).count(), 1, "{claims:?}");
    }
    redis.cli(&["FLUSHALL"]);
    let a = OutputStore::in_redis(&redis.url(), 100, 3, expiry).await.unwrap();
    let b = OutputStore::in_redis(&redis.url(), 100, 3, expiry).await.unwrap();
    // At most 3 outstanding; an expired one leaves room.
    let past = SystemTime::now() - CLOCK_SKEW - Duration::from_secs(1);
    assert_eq!(a.claim("old", past).await.unwrap().unwrap(), Claim::First);
    tokio::time::sleep(Duration::from_millis(20)).await;
    for name in ["x", "y", "z"] {
        assert_eq!(b.claim(name, later).await.unwrap().unwrap(), Claim::First, "{name}");
    }
    assert_eq!(a.claim("x", later).await.unwrap().unwrap(), Claim::Again);
    match a.claim("w", later).await.unwrap() {
        Err(StoreError::Full { max: 3, .. }) => {}
        other => panic!("a fourth claim: {other:?}"),
    }
    let key = format!("toolhost:{{toolhost-claims}}:claim:{}", digest("x"));
    let ttl: i64 = redis.cli(&["PTTL", &key]).parse().unwrap();
    let most = (Duration::from_secs(60) + CLOCK_SKEW).as_millis() as i64;
    assert!(ttl > most - 10_000 && ttl <= most, "{ttl}");
    assert!(!redis.cli(&["--scan"]).contains(":x"), "names never reach a key");
    // A store in memory keeps no claims.
    assert!(OutputStore::new(100).claim("x", later).await.is_none());
}

fn digest(name: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(name.as_bytes()))
}
