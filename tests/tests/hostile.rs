//! Hostile guests against every boundary: CPU (fuel and deadline), memory,
//! stdout, filesystem escapes, read-only grants, process exit, panics,
//! state between calls. After each, the same host must serve a normal call.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{Host, Limits, ToolCall, ToolResult};
use toolhost_tests::hostile_host;

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

/// The host still answers a normal call correctly.
async fn still_serves(host: &Host) {
    let r = call(host, "noop", json!({})).await;
    assert!(r.ok, "noop after a hostile call failed: {:?}", r.error);
    assert_eq!(r.output, "ok");
}

fn code(r: &ToolResult) -> &str {
    r.code().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_is_stopped_by_fuel() {
    let limits = Limits { fuel: 200_000_000, timeout: Duration::from_secs(60), ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let started = Instant::now();
    let r = call(&host, "spin", json!({})).await;
    assert_eq!(code(&r), "fuel_exhausted", "{:?}", r.error);
    assert!(started.elapsed() < Duration::from_secs(20), "fuel took {:?}", started.elapsed());
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_is_stopped_by_the_deadline() {
    let limits = Limits { fuel: u64::MAX, timeout: Duration::from_millis(200), ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let started = Instant::now();
    let r = call(&host, "spin", json!({})).await;
    let took = started.elapsed();
    assert_eq!(code(&r), "timeout", "{:?}", r.error);
    assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(5), "took {took:?}");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_declared_timeout_is_honoured() {
    let limits = Limits { fuel: u64::MAX, ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let started = Instant::now();
    let r = call(&host, "slow", json!({})).await;
    assert_eq!(code(&r), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5), "declared 300 ms, took {:?}", started.elapsed());
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbounded_allocation_is_stopped_by_the_memory_cap() {
    let limits = Limits { memory_bytes: 32 << 20, ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let r = call(&host, "hog", json!({})).await;
    assert_eq!(code(&r), "memory_limit", "{:?}", r.error);
    assert!(r.error.as_ref().unwrap().message.contains("32 MiB"));
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdout_flood_is_capped_not_fatal() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let r = call(&host, "flood", json!({"bytes": 20 << 20})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.output, "flooded");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_work_dir_are_refused() {
    let (host, dir) = hostile_host(Limits::default()).await;
    std::fs::write(dir.path().join("inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("etc_link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd_link")).unwrap();
    std::os::unix::fs::symlink("../../../../../../etc/passwd", dir.path().join("relative_link")).unwrap();

    for path in ["../../etc/passwd", "/etc/passwd", "etc_link/passwd", "passwd_link", "relative_link"] {
        let r = call(&host, "read_path", json!({"path": path})).await;
        assert!(!r.ok, "{path} was readable: {}", r.output);
        assert!(matches!(code(&r), "access_denied" | "not_found"), "{path}: unexpected {:?}", r.error);
        still_serves(&host).await;
    }
    let r = call(&host, "read_path", json!({"path": "inside.txt"})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "inside"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tool_cannot_write() {
    let (host, dir) = hostile_host(Limits::default()).await;
    let r = call(&host, "write_path", json!({"path": "new.txt"})).await;
    assert_eq!(code(&r), "access_denied", "{:?}", r.error);
    assert!(!dir.path().join("new.txt").exists());
    // The same write from a tool that may write succeeds.
    let r = call(&host, "write_path_rw", json!({"path": "new.txt"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert!(dir.path().join("new.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_between_calls() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    for _ in 0..3 {
        let r = call(&host, "counter", json!({})).await;
        assert_eq!(r.output, "1", "a global leaked from an earlier call");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panics_and_exits_are_traps_with_their_reason() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let r = call(&host, "panic", json!({})).await;
    assert_eq!(code(&r), "trap");
    assert!(r.error.as_ref().unwrap().message.contains("panicked on purpose"), "{:?}", r.error);
    still_serves(&host).await;
    // WASI 0.2 only knows success or failure: exit(3) arrives as status 1.
    let r = call(&host, "exit", json!({})).await;
    assert_eq!(code(&r), "trap");
    assert!(r.error.as_ref().unwrap().message.contains("exited with status 1"), "{:?}", r.error);
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_see_no_env_and_no_args() {
    // The test process has PATH, HOME, CARGO_* …: none of it may reach a guest.
    let (host, _dir) = hostile_host(Limits::default()).await;
    let r = call(&host, "env", json!({})).await;
    assert_eq!(r.output, "env=[] args=[]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_output_is_refused() {
    let limits = Limits { output_bytes: 1 << 20, ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let r = call(&host, "big_output", json!({"bytes": 2 << 20})).await;
    assert_eq!(code(&r), "output_limit", "{:?}", r.error);
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_during_a_call_stops_the_guest() {
    let limits = Limits { fuel: u64::MAX, ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let token = toolhost::CancellationToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel();
        })
    };
    let started = Instant::now();
    let r = host.execute(ToolCall::new("spin", json!({})).with_cancel(token)).await;
    assert_eq!(code(&r), "cancelled");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    canceller.await.unwrap();
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_hostile_calls_at_once_leave_the_host_serving() {
    let limits = Limits {
        fuel: 50_000_000,
        memory_bytes: 16 << 20,
        timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let (host, _dir) = hostile_host(limits).await;
    let host = std::sync::Arc::new(host);
    let mut tasks = Vec::new();
    for i in 0..24 {
        let host = host.clone();
        let name = ["spin", "hog", "panic", "noop"][i % 4];
        tasks.push(tokio::spawn(async move { (name, host.execute(ToolCall::new(name, json!({}))).await) }));
    }
    for task in tasks {
        let (name, r) = task.await.unwrap();
        let expected = match name {
            "spin" => Some("fuel_exhausted"),
            "hog" => Some("memory_limit"),
            "panic" => Some("trap"),
            _ => None,
        };
        assert_eq!(r.code(), expected, "{name}: {:?}", r.error);
    }
    still_serves(&host).await;
}
