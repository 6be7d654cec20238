//! The per-call write quota (`limits.write-mib`): a guest that writes without end
//! through `wasi:filesystem` (chunks, `set_len`, a hole past the end, many files)
//! and a program that does (`yes > f`, many files each under `RLIMIT_FSIZE`) stop
//! at the quota with `write_quota`, well before their deadline, even when the guest
//! ignores the error; writes within it succeed; the effect journal's `settle`
//! records the bytes written; the host keeps serving.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{Host, Limits, Mode, ToolCall, ToolResult};
use toolhost_tests::{HOSTILE_WASM, test_engine_settings};

const MIB: u64 = 1 << 20;

/// A one-MiB quota and a deadline far past what writing it takes.
fn small_quota() -> Limits {
    Limits { write_bytes: MIB, timeout: Duration::from_secs(60), ..Limits::default() }
}

/// A host over `dir` with the builtins and the hostile plugin, journaling into `data`.
async fn host(dir: &Path, data: &Path, limits: Limits) -> Host {
    Host::builder()
        .work_dir(dir)
        .data_dir(data)
        .journal(true)
        .limits(limits)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn code(r: &ToolResult) -> &str {
    r.code().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output))
}

async fn still_serves(host: &Host) {
    let r = call(host, "noop", json!({})).await;
    assert!(r.ok, "noop after a call past its quota failed: {:?}", r.error);
}

/// The `bytes_written` of every settle record in `data`'s journals.
fn settled_bytes(data: &Path) -> Vec<Option<u64>> {
    let mut found = Vec::new();
    let mut dirs = vec![data.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                for line in std::fs::read_to_string(&path).unwrap().lines() {
                    let record: Value = serde_json::from_str(line).unwrap();
                    if record["kind"] == "settle" {
                        found.push(record["bytes_written"].as_u64());
                    }
                }
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_writing_without_end_stops_at_the_quota() {
    let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(dir.path(), data.path(), small_quota()).await;
    for how in ["write", "grow", "hole", "files"] {
        let started = Instant::now();
        let r = call(&host, "fill", json!({"path": format!("{how}.out"), "how": how})).await;
        let took = started.elapsed();
        assert_eq!(code(&r), "write_quota", "{how}: {:?}", r.error);
        assert!(took < Duration::from_secs(20), "{how}: stopped only after {took:?}");
        let message = r.error.as_ref().map(|e| e.message.as_str()).unwrap_or_default();
        assert!(message.contains("quota of 1 MiB"), "{how}: {message}");
        let size = std::fs::metadata(dir.path().join(format!("{how}.out"))).unwrap().len();
        assert!(size <= MIB, "{how}: the file grew to {size} bytes");
        still_serves(&host).await;
    }
    // The chunked writes went right up to the quota before one failed.
    assert_eq!(std::fs::metadata(dir.path().join("write.out")).unwrap().len(), MIB);
    let files: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("files."))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(files <= MIB, "many small files passed the quota: {files} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_ignores_the_error_still_fails_write_quota() {
    let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(dir.path(), data.path(), small_quota()).await;
    let r = call(&host, "fill", json!({"path": "f", "how": "write", "ignore_errors": true})).await;
    assert_eq!(code(&r), "write_quota", "{:?}", r.error);
    assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), MIB);
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_within_the_quota_succeed_and_the_journal_has_their_bytes() {
    let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(dir.path(), data.path(), small_quota()).await;
    let r = call(&host, "fill", json!({"path": "half", "how": "write", "bytes": 512 << 10})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(std::fs::metadata(dir.path().join("half")).unwrap().len(), 512 << 10);
    // Exactly the quota is within it.
    let r = call(&host, "fill", json!({"path": "whole", "how": "write", "bytes": MIB})).await;
    assert!(r.ok, "{:?}", r.error);
    // The quota is per call: the next call has all of it again.
    let r = call(&host, "write_file", json!({"path": "small.txt", "content": "hello\n"})).await;
    assert!(r.ok, "{:?}", r.error);
    let bytes = settled_bytes(data.path());
    assert!(bytes.contains(&Some(512 << 10)), "{bytes:?}");
    assert!(bytes.contains(&Some(MIB)), "{bytes:?}");
    assert!(bytes.contains(&Some(6)), "write_file's 6 bytes: {bytes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_past_the_quota_is_write_quota_and_leaves_the_old_file() {
    let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(dir.path(), data.path(), small_quota()).await;
    std::fs::write(dir.path().join("keep.txt"), "old\n").unwrap();
    let content = "y".repeat(2 << 20);
    let r = call(&host, "write_file", json!({"path": "keep.txt", "content": content})).await;
    assert_eq!(code(&r), "write_quota", "{:?}", r.error);
    assert_eq!(std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(), "old\n");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "a temp file was left: {left:?}");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_writing_without_end_stops_at_the_quota() {
    let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(dir.path(), data.path(), small_quota()).await;
    let started = Instant::now();
    let r = call(&host, "terminal", json!({"command": "yes > f"})).await;
    assert_eq!(code(&r), "write_quota", "{:?}", r.error);
    assert!(started.elapsed() < Duration::from_secs(20), "stopped only after {:?}", started.elapsed());
    assert!(std::fs::metadata(dir.path().join("f")).unwrap().len() <= MIB);
    // Many files, each under the per-file limit: caught by the work dir's growth.
    let r = call(
        &host,
        "terminal",
        json!({"command": "for i in 1 2 3 4; do head -c 400000 /dev/zero > g$i; done"}),
    )
    .await;
    assert_eq!(code(&r), "write_quota", "{:?}", r.error);
    // Within the quota a program writes as it likes.
    let r = call(&host, "terminal", json!({"command": "rm -f f g*; head -c 100000 /dev/zero > ok"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(std::fs::metadata(dir.path().join("ok")).unwrap().len(), 100_000);
    let r = call(&host, "terminal", json!({"command": "dd if=/dev/zero of=dd.out bs=64k count=1000"})).await;
    assert_eq!(code(&r), "write_quota", "{:?}", r.error);
    still_serves(&host).await;
}
