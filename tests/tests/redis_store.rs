//! The output store in Redis (`--store redis://HOST:PORT`): a real
//! `redis-server` (Debian's) started on a free 127.0.0.1 port and stopped.
//! `read_output` of a call one instance ran works through another; the
//! store keeps its bounds (bytes, entries) and expiry; keys never carry a
//! call id; a Redis that goes away is a clear error in bounded time, and the
//! store works again when it is back.

use std::time::{Duration, Instant};

use serde_json::json;
use sha2::{Digest, Sha256};
use toolhost::{OutputStore, Part, Stored};
use toolhost_tests::servers::{Instance, Redis, call_text, marked_call_id, modern_request, serve_command};

/// The key a call id's part is kept under.
fn key(call_id: &str, part: &str) -> String {
    let digest = hex::encode(Sha256::digest(call_id.as_bytes()));
    format!("toolhost:{{toolhost-outputs}}:out:{}.{part}", &digest[..40])
}

fn client() -> reqwest::Client {
    toolhost_tests::servers::http_client().timeout(Duration::from_secs(30)).build().unwrap()
}

/// A cut output through `url`: the call id its marker names.
async fn cut_call(client: &reqwest::Client, url: &str, id: u64) -> String {
    let args = json!({"name": "big_output", "arguments": {"bytes": 8000}});
    let answer = modern_request(client, url, id, "tools/call", args).await.unwrap();
    let text = call_text(&answer).unwrap();
    marked_call_id(text).unwrap_or_else(|| panic!("no read_output marker in {text}")).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn read_output_crosses_instances_over_redis() {
    let redis = Redis::start().await;
    let work = tempfile::tempdir().unwrap();
    let flags = ["--store", &redis.url(), "--clamp-bytes", "2048"];
    let a = Instance::start("a", work.path(), &flags).await;
    let b = Instance::start("b", work.path(), &flags).await;
    let client = client();
    let call_id = cut_call(&client, &a.url(), 1).await;
    let args = json!({"name": "read_output", "arguments": {"call_id": call_id, "pattern": "^line 7[0-9]$"}});
    let answer = modern_request(&client, &b.url(), 2, "tools/call", args).await.unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(call_text(&answer).unwrap().contains("line 77"), "{answer}");
    // Keys are digests: the call id (model-supplied, any bytes) is never a key.
    let keys = redis.cli(&["--scan"]);
    assert!(keys.lines().any(|k| k == key(&call_id, "content")), "{keys}");
    assert!(!keys.contains(&call_id), "{keys}");
    let ttl: i64 = redis.cli(&["PTTL", &key(&call_id, "content")]).parse().unwrap();
    assert!(ttl > 3_500_000 && ttl <= 3_600_000, "the default expiry is an hour: {ttl} ms");
    // An id that looks like a pattern or another key names nothing.
    for id in ["*", "toolhost:{toolhost-outputs}:bytes", &key(&call_id, "content")] {
        let args = json!({"name": "read_output", "arguments": {"call_id": id}});
        let answer = modern_request(&client, &b.url(), 3, "tools/call", args).await.unwrap();
        assert!(call_text(&answer).unwrap().starts_with("output_not_found"), "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_redis_store_keeps_its_bounds_and_expiry() {
    let redis = Redis::start().await;
    let expiry = Duration::from_millis(1500);
    let a = OutputStore::in_redis(&redis.url(), 100, 3, expiry).await.unwrap();
    let b = OutputStore::in_redis(&redis.url(), 100, 3, expiry).await.unwrap();
    // What is shared is what was cut (`put_part`): whole outputs stay in each
    // process's memory. Entries: at most 3, the oldest go first, whichever instance wrote them.
    for (i, store) in [&a, &b, &a, &b].iter().enumerate() {
        assert_eq!(
            store.put_part(&format!("c{i}"), Part::Content, "x".repeat(10).into()).await,
            Stored::Kept
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(b.get("c0").await, None, "the oldest of four went");
    assert_eq!(a.get("c3").await.as_deref(), Some("x".repeat(10).as_str()));
    assert_eq!(a.bytes().await.unwrap(), 30);
    // Bytes: at most 100.
    assert_eq!(a.put_part("big", Part::Error, "y".repeat(90).into()).await, Stored::Kept);
    assert!(a.bytes().await.unwrap() <= 100, "{}", a.bytes().await.unwrap());
    assert_eq!(b.get_part("big", Part::Error).await.as_deref(), Some("y".repeat(90).as_str()));
    assert_eq!(a.get("c1").await, None, "b wrote it: a asks Redis, which let it go");
    assert_eq!(a.put_part("huge", Part::Content, "z".repeat(101).into()).await, Stored::TooLarge);
    assert_eq!(redis.cli(&["EXISTS", &key("huge", "content")]), "0");
    // A replaced entry is counted once.
    a.put_part("again", Part::Content, "1234".into()).await;
    a.put_part("again", Part::Content, "12".into()).await;
    assert_eq!(b.get("again").await.as_deref(), Some("12"));
    assert!(a.bytes().await.unwrap() <= 100);
    // A value someone else planted over the budget is refused, not read.
    redis.cli(&["SET", &key("planted", "content"), &"p".repeat(200)]);
    assert_eq!(a.get("planted").await, None);
    // Expiry: gone after it passes, and the count goes with it.
    tokio::time::sleep(expiry + Duration::from_millis(300)).await;
    assert_eq!(b.get("again").await, None);
    a.put_part("fresh", Part::Content, "f".into()).await;
    assert_eq!(a.bytes().await.unwrap(), 1, "expired entries leave the count");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redis_that_goes_away_is_a_clear_error_not_a_hang() {
    let mut redis = Redis::start().await;
    let work = tempfile::tempdir().unwrap();
    let url = redis.url();
    let server = Instance::start("a", work.path(), &["--store", &url, "--clamp-bytes", "2048"]).await;
    let other = Instance::start("b", work.path(), &["--store", &url, "--clamp-bytes", "2048"]).await;
    let client = client();
    let call_id = cut_call(&client, &server.url(), 1).await;
    redis.stop().await;

    // read_output on another instance (this one still has it in memory) says the
    // store is unreachable, naming it, within seconds.
    let started = Instant::now();
    let args = json!({"name": "read_output", "arguments": {"call_id": call_id}});
    let answer = modern_request(&client, &other.url(), 2, "tools/call", args).await.unwrap();
    let text = call_text(&answer).unwrap();
    assert!(started.elapsed() < Duration::from_secs(12), "took {:?}", started.elapsed());
    assert!(text.starts_with("output_store_unavailable"), "{text}");
    assert!(text.contains(&url), "{text}");
    // A call whose output is cut still answers, saying its whole was not kept.
    let started = Instant::now();
    let args = json!({"name": "big_output", "arguments": {"bytes": 8000}});
    let answer = modern_request(&client, &server.url(), 3, "tools/call", args).await.unwrap();
    let text = call_text(&answer).unwrap();
    assert!(started.elapsed() < Duration::from_secs(12), "took {:?}", started.elapsed());
    assert!(text.contains("could not be kept: the output store at redis://"), "{text}");
    assert!(!text.contains("call read_output"), "{text}");

    // Back on the same port: the store works again, without a restart.
    let _back = Redis::start_on(redis.port).await;
    let mut again = None;
    for attempt in 0..20 {
        let call_id = cut_call(&client, &server.url(), 10 + attempt).await;
        let args = json!({"name": "read_output", "arguments": {"call_id": call_id}});
        let answer = modern_request(&client, &server.url(), 100 + attempt, "tools/call", args).await.unwrap();
        if answer["result"]["isError"] == false {
            again = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(again.is_some(), "the store did not come back with Redis");
}

#[tokio::test(flavor = "multi_thread")]
async fn unfit_store_urls_and_a_missing_redis_fail_at_start() {
    let work = tempfile::tempdir().unwrap();
    let closed = toolhost_tests::servers::free_port();
    for (store, says) in [
        (
            format!("redis://127.0.0.1:{closed}"),
            format!("output store at redis://127.0.0.1:{closed} is unreachable"),
        ),
        ("ftp://example.invalid/x".to_string(), "ftp:// is not a store this host knows".to_string()),
        ("redis://:hunter2@127.0.0.1:1".to_string(), "redis://:***@127.0.0.1:1".to_string()),
    ] {
        let started = Instant::now();
        let out = serve_command(work.path(), &["--http", "127.0.0.1:0", "--store", &store])
            .output()
            .await
            .expect("running toolhost serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{store}: {stderr}");
        assert!(stderr.contains(&says), "{store}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(started.elapsed() < Duration::from_secs(15), "{store}: took {:?}", started.elapsed());
    }
    // A store directory outside the work dir: one inside it is refused first.
    let outside = tempfile::tempdir().unwrap();
    let out =
        serve_command(work.path(), &["--store", outside.path().to_str().unwrap(), "--store-expiry", "60"])
            .output()
            .await
            .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store-expiry applies to a store in Redis"));
}
