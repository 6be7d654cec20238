//! `grep_files` and `find_files` as the host runs them (`toolhost:plugin/search`),
//! end to end through `Host::execute`, against work dirs planted to escape or stall
//! the search: symlinks swapped in for a directory and a file while calls run, FIFOs
//! in the tree and swapped in for a file, and a search stopped at the call's deadline.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{Host, Limits, ToolCall, ToolResult};
use toolhost_tests::test_engine_settings;

async fn host_over(dir: &Path, limits: Limits) -> Host {
    Host::builder()
        .work_dir(dir)
        .limits(limits)
        .engine_settings(test_engine_settings())
        .build()
        .await
        .unwrap_or_else(|e| panic!("host with the builtins builds: {e}"))
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn mkfifo(path: &Path) {
    assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Runs `swap` over and over on its own thread until dropped.
struct Swapper(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Swapper {
    fn start(swap: impl Fn() + Send + 'static) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        Self(
            done,
            Some(std::thread::spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    swap();
                }
            })),
        )
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(handle) = self.1.take() {
            let _ = handle.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_swapped_in_during_searches_are_never_followed() {
    let (work, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write(outside.path(), "d/secret.rs", "TOPSECRET\n");
    write(outside.path(), "secret.rs", "TOPSECRET\n");
    write(work.path(), "d/secret.rs", "inside\n");
    write(work.path(), "secret.rs", "inside\n");
    let host = host_over(work.path(), Limits::default()).await;
    let (w, out) = (work.path().to_path_buf(), outside.path().to_path_buf());
    let swapper = Swapper::start(move || {
        std::fs::rename(w.join("d"), w.join("d.real")).unwrap();
        symlink(out.join("d"), w.join("d")).unwrap();
        std::fs::rename(w.join("secret.rs"), w.join("secret.real")).unwrap();
        symlink(out.join("secret.rs"), w.join("secret.rs")).unwrap();
        // Each state held a moment, so the searches meet both (a bare yield
        // left the real tree in place too briefly for a walk to list it).
        std::thread::sleep(Duration::from_micros(300));
        std::fs::remove_file(w.join("d")).unwrap();
        std::fs::rename(w.join("d.real"), w.join("d")).unwrap();
        std::fs::remove_file(w.join("secret.rs")).unwrap();
        std::fs::rename(w.join("secret.real"), w.join("secret.rs")).unwrap();
        std::thread::sleep(Duration::from_micros(300));
    });
    let (mut inside, mut listed) = (0, 0);
    for _ in 0..150 {
        let r = call(&host, "grep_files", json!({"pattern": "TOPSECRET|inside"})).await;
        assert!(r.ok, "{:?}", r.error);
        assert!(!r.output.contains(":TOPSECRET"), "{}", r.output);
        inside += r.metadata.as_ref().unwrap()["matches"].as_u64().unwrap();
        let r = call(&host, "find_files", json!({"pattern": "**/*.rs"})).await;
        assert!(r.ok, "{:?}", r.error);
        listed += r.output.lines().filter(|l| *l == "d/secret.rs").count();
    }
    drop(swapper);
    assert!(inside > 0 && listed > 0, "the real tree was searched at times ({inside}, {listed})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_in_the_tree_or_swapped_in_for_a_file_never_stall_a_search() {
    let work = tempfile::tempdir().unwrap();
    write(work.path(), "a.txt", "needle\n");
    write(work.path(), "swapped.txt", "needle\n");
    mkfifo(&work.path().join("pipe.txt"));
    let host = host_over(work.path(), Limits::default()).await;
    let w = work.path().to_path_buf();
    let swapper = Swapper::start(move || {
        std::fs::remove_file(w.join("swapped.txt")).unwrap();
        mkfifo(&w.join("swapped.txt"));
        std::thread::yield_now();
        std::fs::remove_file(w.join("swapped.txt")).unwrap();
        std::fs::write(w.join("swapped.txt"), "needle\n").unwrap();
    });
    let start = Instant::now();
    for _ in 0..100 {
        let r = call(&host, "grep_files", json!({"pattern": "needle"})).await;
        assert!(r.ok, "{:?}", r.error);
        assert!(r.output.starts_with("a.txt:1:needle\n"), "{}", r.output);
    }
    drop(swapper);
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    let r = call(&host, "find_files", json!({"pattern": "*.txt"})).await;
    assert!(r.ok && r.output.starts_with("a.txt\n"), "{}", r.output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_ends_at_the_calls_deadline() {
    let work = tempfile::tempdir().unwrap();
    // About 200 MB that the regex cannot skip through quickly.
    let text = "abcdefghij".repeat(100_000);
    for i in 0..200 {
        write(work.path(), &format!("d{}/f{i}", i % 10), &text);
    }
    let limits = Limits { timeout: Duration::from_millis(50), ..Limits::default() };
    let host = host_over(work.path(), limits).await;
    let start = Instant::now();
    let r = call(&host, "grep_files", json!({"pattern": r"[a-j]{3}\d|z", "case_insensitive": true})).await;
    let took = start.elapsed();
    assert_eq!(r.code(), Some("timeout"), "{:?} {}", r.error, r.output);
    assert!(took < Duration::from_secs(3), "{took:?}");
}
