//! `servestart`: `toolhost serve` with a newly added plugin (the Python example,
//! 18.9 MB) and an emptied compile cache, as an agent starts it: from spawning the
//! process to the `initialize` answer, to the plugin's tools in `tools/list`
//! (after `notifications/tools/list_changed`), and to its first call answered.
//! The anchor, in the same run: `serve --eager`, which compiles every plugin
//! before it answers (what every start did before); and a start with the cache
//! warm.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::report;

const RUNS: usize = 5;

/// One `serve` process and its pipes.
struct Serve {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Serve {
    fn start(work: &Path, cache: &Path, eager: bool) -> Self {
        let mut cmd = Command::new(toolhost_tests::toolhost_bin());
        cmd.arg("serve").arg("--work-dir").arg(work).args(["--mode", "yolo", "--stub-sockets"]);
        cmd.arg("--plugin").arg(toolhost_tests::example_wasm("csv_summary"));
        if eager {
            cmd.arg("--eager");
        }
        cmd.env("TOOLHOST_CACHE_DIR", cache).env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self { child, stdin, stdout }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The next message from the server.
    fn next(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).expect("read") > 0, "serve ended");
        serde_json::from_str(&line).expect("a JSON-RPC message")
    }

    /// The answer to request `id` (notifications before it are counted).
    fn answer(&mut self, id: u64, notified: &mut usize) -> Value {
        loop {
            let message = self.next();
            if message["id"] == id {
                return message;
            }
            if message["method"] == "notifications/tools/list_changed" {
                *notified += 1;
            }
        }
    }

    fn lists(&mut self, id: u64, tool: &str, notified: &mut usize) -> bool {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let answer = self.answer(id, notified);
        answer["result"]["tools"].as_array().expect("tools").iter().any(|t| t["name"] == tool)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawn → `initialize` answered; → the plugin's tool listed; → its first call
/// answered.
fn one_start(work: &Path, cache: &Path, eager: bool) -> (Duration, Duration, Duration) {
    let started = Instant::now();
    let mut serve = Serve::start(work, cache, eager);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}});
    serve.send(init);
    let mut notified = 0;
    let answer = serve.answer(1, &mut notified);
    let initialized = started.elapsed();
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    serve.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut id = 2;
    // Listed at once (eager, or a warm cache), else after the list changed.
    while !serve.lists(id, "py_echo", &mut notified) {
        id += 1;
        while notified == 0 {
            if serve.next()["method"] == "notifications/tools/list_changed" {
                notified += 1;
            }
        }
        notified = 0;
    }
    let listed = started.elapsed();
    let call = json!({"jsonrpc": "2.0", "id": 1000, "method": "tools/call",
        "params": {"name": "py_echo", "arguments": {"text": "hi"}}});
    serve.send(call);
    let answer = serve.answer(1000, &mut notified);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    (initialized, listed, started.elapsed())
}

pub(crate) async fn servestart() {
    let work = crate::examples_work_dir();
    // The warm cache holds the optimised code, as after a run that finished it.
    let warm = tempfile::tempdir().expect("tempdir");
    toolhost::Host::builder()
        .without_builtins()
        .stub_sockets(true)
        .engine_settings(toolhost::EngineSettings {
            cache_dir: Some(warm.path().to_path_buf()),
            tiers: toolhost::CompilerTiers::Optimized,
            ..toolhost::EngineSettings::default()
        })
        .plugin_file(toolhost_tests::example_wasm("csv_summary"))
        .build()
        .await
        .expect("the example compiles");
    type Row<'a> = (&'a str, Vec<Duration>, Vec<Duration>, Vec<Duration>);
    let mut rows: Vec<Row> = Vec::new();
    for (label, eager, empty) in [
        ("serve, empty cache", false, true),
        ("serve --eager, empty cache (anchor)", true, true),
        ("serve, cache warm", false, false),
    ] {
        let (mut init, mut listed, mut called) = (vec![], vec![], vec![]);
        for _ in 0..RUNS {
            let cache = tempfile::tempdir().expect("tempdir");
            let dir = if empty { cache.path() } else { warm.path() };
            let (i, l, c) = one_start(work.path(), dir, eager);
            init.push(i);
            listed.push(l);
            called.push(c);
        }
        rows.push((label, init, listed, called));
    }
    for (label, init, listed, called) in rows {
        report(&format!("{label}: initialize answered"), init);
        report(&format!("{label}: py_echo listed"), listed);
        report(&format!("{label}: py_echo first call answered"), called);
    }
}
