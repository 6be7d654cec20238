//! Batches: consecutive read-only calls run in parallel, everything else
//! alone and in order, results in the original order.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{Limits, ToolCall};
use toolhost_tests::hostile_host;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_runs_are_parallel_and_results_keep_their_order() {
    let limits = Limits { fuel: u64::MAX, timeout: Duration::from_millis(400), ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    // spin (read-only) runs to its deadline; noop (read-only) finishes at
    // once, so it completes first, but its result must stay second.
    let calls = vec![
        ToolCall::new("spin", json!({})).with_id("a"),
        ToolCall::new("noop", json!({})).with_id("b"),
        ToolCall::new("spin", json!({})).with_id("c"),
    ];
    let started = Instant::now();
    let results = host.execute_batch(calls).await;
    let took = started.elapsed();
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(
        results.iter().map(|r| r.code()).collect::<Vec<_>>(),
        [Some("timeout"), None, Some("timeout")]
    );
    // Two 400 ms spins in parallel: well under the 800 ms they take in a row.
    assert!(took < Duration::from_millis(750), "not parallel: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_run_alone_and_in_order() {
    let (host, dir) = hostile_host(Limits::default()).await;
    let calls = vec![
        ToolCall::new("read_path", json!({"path": "x.txt"})),
        ToolCall::new("write_path_rw", json!({"path": "x.txt"})),
        ToolCall::new("read_path", json!({"path": "x.txt"})),
        ToolCall::new("read_file", json!({"path": "x.txt"})),
    ];
    let results = host.execute_batch(calls).await;
    assert_eq!(results[0].code(), Some("not_found"), "the read before the write must not see it");
    assert!(results[1].ok);
    assert_eq!(results[2].output, "written by a read-only tool");
    assert!(results[3].output.contains("written by a read-only tool"));
    assert!(dir.path().join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tools_fail_in_place() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let calls = vec![
        ToolCall::new("noop", json!({})),
        ToolCall::new("nope", json!({})),
        ToolCall::new("noop", json!({})),
    ];
    assert!(!host.is_concurrency_safe(&calls[1]));
    let results = host.execute_batch(calls).await;
    assert_eq!(results.iter().map(|r| r.code()).collect::<Vec<_>>(), [None, Some("unknown_tool"), None]);
    assert!(host.execute_batch(Vec::new()).await.is_empty());
}
