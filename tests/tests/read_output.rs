//! Reading back cut output: the clamp marker names `read_output` and the call
//! id; the tool returns windows and matches of the full text; a miss says so.

use serde_json::json;
use toolhost::{EngineSettings, Host, Limits, ToolCall};
use toolhost_tests::{HOSTILE_WASM, hostile_host, test_engine_settings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_output_can_be_read_back_by_window_and_by_pattern() {
    let (host, _dir) = hostile_host(Limits { clamp_bytes: 2000, ..Limits::default() }).await;
    let big = host.execute(ToolCall::new("big_output", json!({"bytes": 100_000})).with_id("big-1")).await;
    assert!(big.ok);
    let omitted = big.omitted.expect("the output was cut");
    assert!(
        big.output.contains(r#"call read_output with {"call_id": "big-1", "offset": "#),
        "marker: {}",
        big.output
    );
    // The marker's offset is the first omitted line.
    let head_lines = big.output.lines().take_while(|l| l.starts_with("line ")).count();
    assert!(big.output.contains(&format!(r#""offset": {}"#, head_lines + 1)));

    let window = host
        .execute(ToolCall::new(
            "read_output",
            json!({"call_id": "big-1", "offset": head_lines + 1, "limit": 3}),
        ))
        .await;
    assert!(window.ok, "{:?}", window.error);
    let expected: Vec<String> =
        (head_lines..head_lines + 3).map(|i| format!("{:>6}\tline {i}", i + 1)).collect();
    assert_eq!(window.output.lines().take(3).collect::<Vec<_>>(), expected);
    assert!(window.output.contains(&format!("use offset={} to continue", head_lines + 4)));
    assert!(omitted.lines > 3);

    let found = host
        .execute(ToolCall::new("read_output", json!({"call_id": "big-1", "pattern": "^line 777[0-9]$"})))
        .await;
    assert!(found.ok);
    assert_eq!(found.output.lines().count(), 10, "{}", found.output);
    assert!(found.output.starts_with("  7771\tline 7770"));
    assert_eq!(found.metadata.as_ref().unwrap()["matches"], 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misses_and_bad_windows_say_what_is_wrong() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let miss = host.execute(ToolCall::new("read_output", json!({"call_id": "never-ran"}))).await;
    assert_eq!(miss.code(), Some("output_not_found"));
    assert!(miss.error.as_ref().unwrap().message.contains("evicted"));

    host.execute(ToolCall::new("noop", json!({})).with_id("small")).await;
    let past = host.execute(ToolCall::new("read_output", json!({"call_id": "small", "offset": 5}))).await;
    assert_eq!(past.code(), Some("invalid_args"));
    let bad = host.execute(ToolCall::new("read_output", json!({"call_id": "small", "pattern": "("}))).await;
    assert_eq!(bad.code(), Some("invalid_args"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_outputs_are_a_plain_miss() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(EngineSettings { ..test_engine_settings() })
        .plugin_file(HOSTILE_WASM)
        .output_store_bytes(150_000)
        .build()
        .await
        .unwrap();
    host.execute(ToolCall::new("big_output", json!({"bytes": 100_000})).with_id("first")).await;
    host.execute(ToolCall::new("big_output", json!({"bytes": 100_000})).with_id("second")).await;
    let first = host.execute(ToolCall::new("read_output", json!({"call_id": "first"}))).await;
    assert_eq!(first.code(), Some("output_not_found"));
    let second = host.execute(ToolCall::new("read_output", json!({"call_id": "second", "limit": 1}))).await;
    assert!(second.ok, "{:?}", second.error);
}
