//! `bench`: the figures in BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p toolhost-tests [-- noop|read|floor|servestart|load|firstcall|list|grep|fetch|policy|shell|approval|examples|exec|hooks|edit|serve|typed|http|scale|oci|servers|attacked|shape ...]
//! ```
//!
//! Each figure is the distribution of many runs on this machine; medians and
//! p99s are reported, not means, because the tails are what a model loop
//! feels.

mod attacked;
mod firstcall;
mod floor;
mod oci;
mod servers;
mod shape;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{EngineSettings, Host, HostPattern, Limits, NetworkSettings, ToolCall};
use toolhost_tests::{
    EXEC_WASM, HOSTILE_WASM, NET_WASM, TEST_HOOK_WASM, TEST_HTTP_WASM, TEST_TYPED_WASM, workspace_root,
};

mod scale;
mod servestart;

fn main() {
    // `cargo bench` passes `--bench`; the rest names what to run (all if none).
    let which: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let wants = |name: &str| which.is_empty() || which.iter().any(|w| w == name);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    if which.first().map(String::as_str) == Some("example") {
        // Ad-hoc, for profiling: bench example NAME ARGS_JSON [N] (a tool of the
        // examples, over the `examples` work dir, compile cache in target/).
        let (name, args) = (which[1].clone(), serde_json::from_str(&which[2]).expect("ARGS_JSON"));
        let n = which.get(3).map_or(1000, |n| n.parse().expect("N"));
        runtime.block_on(async {
            let dir = examples_work_dir();
            let host = examples_host(dir.path(), &bench_cache(), &["csv_summary", "markdown_outline"]).await;
            report(&name, timed_calls_after(&host, &name, args, 20, n).await);
        });
        return;
    }
    if which.first().map(String::as_str) == Some("call") {
        // Ad-hoc: bench call NAME ARGS_JSON (over a work dir with small.txt).
        let (name, args) = (which[1].clone(), serde_json::from_str(&which[2]).expect("ARGS_JSON"));
        runtime.block_on(async {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join("small.txt"), "x\n".repeat(500)).expect("write");
            let host = host_with(dir.path(), true).await;
            report(&name, timed_calls(&host, &name, args, 3000).await);
        });
        return;
    }
    runtime.block_on(async {
        if wants("noop") {
            noop().await;
        }
        if wants("floor") {
            floor::floor().await;
        }
        if wants("servestart") {
            servestart::servestart().await;
        }
        if wants("read") {
            read_small().await;
        }
        if wants("load") {
            load().await;
        }
        if wants("firstcall") {
            firstcall::firstcall().await;
        }
        if wants("grep") {
            grep().await;
        }
        if wants("fetch") {
            fetch().await;
        }
        if wants("policy") {
            policy().await;
        }
        if wants("shell") {
            shell().await;
        }
        if wants("approval") {
            approval().await;
        }
        if wants("examples") {
            examples().await;
        }
        if wants("exec") {
            exec().await;
        }
        if wants("hooks") {
            hooks().await;
        }
        if wants("edit") {
            edit().await;
        }
        if wants("serve") {
            serve().await;
        }
        if wants("scale") {
            scale::scale().await;
        }
        if wants("typed") {
            typed().await;
        }
        if wants("http") {
            http().await;
        }
        if wants("attacked") {
            attacked::attacked().await;
        }
        if wants("servers") {
            servers::servers().await;
        }
    });
    if wants("list") {
        list();
    }
    if wants("oci") {
        oci::oci();
    }
    if wants("shape") {
        shape::shape_bench();
    }
}

/// Median and p99 of `samples`.
fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{label:<44} n={:<6} median {:>9.1?}  p99 {:>9.1?}  min {:>9.1?}",
        samples.len(),
        pick(0.5),
        pick(0.99),
        samples[0]
    );
}

fn bench_cache() -> PathBuf {
    workspace_root().join("target").join("bench-compile-cache")
}

async fn host_with(dir: &Path, plugin: bool) -> Host {
    let mut builder = Host::builder()
        .work_dir(dir)
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() });
    if plugin {
        builder = builder.plugin_file(HOSTILE_WASM);
    }
    builder.build().await.expect("host builds")
}

async fn timed_calls(host: &Host, name: &str, args: serde_json::Value, n: usize) -> Vec<Duration> {
    timed_calls_after(host, name, args, 200, n).await
}

/// [`timed_calls`] after `warm` calls that are not timed.
async fn timed_calls_after(
    host: &Host,
    name: &str,
    args: serde_json::Value,
    warm: usize,
    n: usize,
) -> Vec<Duration> {
    for _ in 0..warm {
        let r = host.execute(ToolCall::new(name, args.clone())).await;
        assert!(r.ok, "{name}: {:?}", r.error);
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let call = ToolCall::new(name, args.clone());
        let started = Instant::now();
        let r = host.execute(call).await;
        samples.push(started.elapsed());
        assert!(r.ok);
    }
    samples
}

async fn noop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host_with(dir.path(), true).await;
    report("no-op tool through the executor", timed_calls(&host, "noop", json!({}), 5000).await);
}

/// A typed-export function against a `toolhost:plugin` tool doing the same (nothing,
/// no arguments): what the typed path (export lookup, dynamic call with values,
/// rendering) adds per call. Calls alternate so both see the same machine.
async fn typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .without_builtins()
        .mode(toolhost::Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .plugin_file(TEST_TYPED_WASM)
        .build()
        .await
        .expect("host builds");
    let (n, warm) = (3000, 300);
    let (mut plugin, mut typed) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..warm + n {
        for (name, samples) in [("noop", &mut plugin), ("nothing", &mut typed)] {
            let started = Instant::now();
            let r = host.execute(ToolCall::new(name, json!({}))).await;
            let took = started.elapsed();
            assert!(r.ok, "{name}: {:?}", r.error);
            if i >= warm {
                samples.push(took);
            }
        }
    }
    let median = |s: &mut Vec<Duration>| {
        s.sort();
        s[s.len() / 2]
    };
    let ratio = median(&mut typed).as_secs_f64() / median(&mut plugin).as_secs_f64();
    report("toolhost:plugin no-op tool (noop)", plugin);
    report("typed-export no-op function (nothing)", typed);
    println!("typed / toolhost:plugin, median: {ratio:.2}x");
}

async fn read_small() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String = (0..40).map(|i| format!("line {i} of a small file\n")).collect();
    std::fs::write(dir.path().join("small.txt"), text).expect("write");
    let host = host_with(dir.path(), false).await;
    let samples = timed_calls(&host, "read_file", json!({"path": "small.txt"}), 3000).await;
    report("read_file of a 1 KB file", samples);
}

async fn load() {
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..5 {
        let cache = tempfile::tempdir().expect("tempdir");
        let settings =
            EngineSettings { cache_dir: Some(cache.path().to_path_buf()), ..EngineSettings::default() };
        let started = Instant::now();
        let host = Host::builder().engine_settings(settings.clone()).build().await.expect("build");
        cold.push(started.elapsed());
        assert!(host.plugins().iter().all(|p| !p.from_cache()));
        drop(host);
        let started = Instant::now();
        let host = Host::builder().engine_settings(settings).build().await.expect("build");
        warm.push(started.elapsed());
        assert!(host.plugins().iter().all(|p| p.from_cache()));
    }
    report("load builtins: compile (no cache)", cold);
    report("load builtins: from the compile cache", warm);
}

fn list() {
    let bin = workspace_root().join("target").join("release").join("toolhost");
    assert!(bin.exists(), "build the binary first: cargo build --release");
    let run = || {
        let started = Instant::now();
        let out = Command::new(&bin).arg("list").output().expect("run toolhost list");
        assert!(out.status.success());
        started.elapsed()
    };
    for _ in 0..5 {
        run();
    }
    report("`toolhost list` wall time, cached start", (0..100).map(|_| run()).collect());
}

/// `edit_file` on a 5,000-line file: an exact `old_string`, and one whose
/// middle line is stale so that only the block-anchor matcher lands it. The
/// file is rewritten before each call (not timed).
async fn edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String =
        (0..5000).map(|i| format!("    let value_{i} = compute(input, {i}); // ordinary code\n")).collect();
    let path = dir.path().join("big.rs");
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .mode(toolhost::Mode::AcceptEdits)
        .build()
        .await
        .expect("host builds");
    let line = |i: usize| format!("let value_{i} = compute(input, {i}); // ordinary code");
    let exact = json!({"path": "big.rs", "old_string": format!("    {}", line(2500)), "new_string": "    changed();"});
    let stale = format!(
        "{}\n    let value_2501 = compute(input, 0); // stale\n{}\n{}",
        line(2500),
        line(2502),
        line(2503)
    );
    let anchored = json!({"path": "big.rs", "old_string": stale, "new_string": "changed();"});
    for (label, args, matcher) in [
        ("edit_file, 5,000 lines: exact", exact, "exact"),
        ("edit_file, 5,000 lines: block-anchor", anchored, "block_anchor"),
    ] {
        let mut samples = Vec::new();
        for i in 0..320 {
            std::fs::write(&path, &text).expect("write");
            let started = Instant::now();
            let r = host.execute(ToolCall::new("edit_file", args.clone())).await;
            let took = started.elapsed();
            assert!(r.ok, "{label}: {:?}", r.error);
            let meta = r.metadata.expect("metadata");
            assert_eq!(meta["matcher"], matcher, "{label}: {meta}");
            if i >= 20 {
                samples.push(took);
            }
        }
        report(label, samples);
    }
}

/// ~10k files, ~100 MB, a rare match in some of them.
fn generate_tree(root: &Path) {
    let marker = root.join(".complete");
    if marker.exists() {
        return;
    }
    let _ = std::fs::remove_dir_all(root);
    let filler: String =
        (0..160).map(|i| format!("    let value_{i} = compute(input, {i}); // ordinary code\n")).collect();
    for d in 0..100 {
        let dir = root.join(format!("dir{d:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..100 {
            let mut text = String::with_capacity(10_500);
            while text.len() < 10_000 {
                text.push_str(&filler[..filler.len().min(10_000 - text.len())]);
            }
            if (d * 100 + f) % 97 == 0 {
                text.push_str("\nfn needle_function_xyz() {}\n");
            }
            std::fs::write(dir.join(format!("file{f:03}.rs")), text).expect("write");
        }
    }
    std::fs::write(marker, "").expect("marker");
}

async fn grep() {
    let tree = workspace_root().join("target").join("bench-tree");
    generate_tree(&tree);
    let limits = Limits { timeout: Duration::from_secs(120), ..Limits::default() };
    let host = Host::builder()
        .work_dir(&tree)
        .limits(limits)
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .build()
        .await
        .expect("host");
    let args = json!({"pattern": "needle_function_[a-z]+", "max_results": 2000});
    let mut ours = Vec::new();
    let mut matches = 0;
    for _ in 0..7 {
        let started = Instant::now();
        let r = host.execute(ToolCall::new("grep_files", args.clone())).await;
        ours.push(started.elapsed());
        assert!(r.ok, "{:?}", r.error);
        matches = r.output.lines().filter(|l| l.contains("needle_function_xyz")).count();
    }
    let mut theirs = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        let out = Command::new("grep")
            .args(["-rn", "-E", "needle_function_[a-z]+", "."])
            .current_dir(&tree)
            .output()
            .expect("grep");
        theirs.push(started.elapsed());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).lines().count(),
            matches,
            "grep and grep_files disagree"
        );
    }
    println!("tree: 10,000 files, ~100 MB, {matches} matching lines");
    report("grep_files over the tree", ours);
    report("grep -rn over the same tree", theirs);
}

/// 5 bytes for `/tiny`, 1 MB for anything else (the route of the loopback test server).
fn one_mb(request: &toolhost_tests::net::Request) -> toolhost_tests::net::Reply {
    match request.target.as_str() {
        "/tiny" => toolhost_tests::net::Reply::Ok(b"tiny\n".to_vec()),
        _ => toolhost_tests::net::Reply::Stream(1 << 20),
    }
}

/// The loopback server of [`one_mb`], and a host (no builtins, yolo mode) whose `plugins`
/// may reach it.
async fn one_mb_host(plugins: &[&Path]) -> (std::net::SocketAddr, Host) {
    let (addr, _) = toolhost_tests::net::server(one_mb).await;
    let network = NetworkSettings {
        allow_private: true,
        plugin_hosts: vec![HostPattern::parse("127.0.0.1").expect("pattern")],
        ..NetworkSettings::default()
    };
    let mut builder = Host::builder()
        .without_builtins()
        .mode(toolhost::Mode::Yolo)
        .network(network)
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() });
    for plugin in plugins {
        builder = builder.plugin_file(*plugin);
    }
    (addr, builder.build().await.expect("host with the network plugins"))
}

/// One 1 MB fetch of `url` by `host`'s pinned client alone (no plugin, no sandbox), timed.
async fn pinned_one_mb(host: &Host, url: &str) -> Duration {
    let grant = toolhost::NetGrant { hosts: host.network().plugin_hosts.clone(), allow_private: true };
    let client = host.network().client();
    let started = Instant::now();
    let mut req = toolhost::FetchRequest::get(url.to_owned());
    req.max_bytes = Some(2 << 20);
    let r = client.fetch(&grant, req, None).await.expect("pinned fetch");
    let took = started.elapsed();
    assert_eq!(r.body.len(), 1 << 20);
    took
}

/// 1 MB from a loopback server: through the net test plugin and the pinned fetch, and
/// natively with reqwest.
async fn fetch() {
    const N: usize = 200;
    let (addr, host) = one_mb_host(&[Path::new(NET_WASM)]).await;
    let url = format!("http://{addr}/one-mb");
    let args = json!({"url": url, "max_bytes": 2 << 20});
    let mut ours = Vec::with_capacity(N);
    for i in 0..N + 20 {
        let started = Instant::now();
        let r = host.execute(ToolCall::new("fetch_raw", args.clone())).await;
        let took = started.elapsed();
        assert!(r.ok, "{:?}", r.error);
        if i >= 20 {
            ours.push(took);
        }
    }
    // The pinned client alone, without the plugin and the sandbox around it.
    let mut bare = Vec::with_capacity(N);
    for i in 0..N + 20 {
        let took = pinned_one_mb(&host, &url).await;
        if i >= 20 {
            bare.push(took);
        }
    }
    let client = toolhost_tests::servers::http_client().build().expect("reqwest client");
    let mut theirs = Vec::with_capacity(N);
    for i in 0..N + 20 {
        let started = Instant::now();
        let body = client.get(&url).send().await.expect("send").bytes().await.expect("body");
        let took = started.elapsed();
        assert_eq!(body.len(), 1 << 20);
        if i >= 20 {
            theirs.push(took);
        }
    }
    report("fetch 1 MB via the net plugin (loopback)", ours);
    report("fetch 1 MB, pinned client alone", bare);
    report("fetch 1 MB, reqwest natively", theirs);
}

/// 1 MB over loopback, four ways, alternating so each sees the same machine: a
/// JavaScript tool's `fetch()` (componentize-js, wasi:http), a Rust guest reading the
/// body with wasi:http, a Rust guest using toolhost's `fetch` import, and the pinned
/// client alone (the host's `FetchClient`, no guest). The guests report the length only.
/// The JS tool fetching 5 bytes shows what its call costs before the body does.
async fn http() {
    const N: usize = 200;
    const WARM: usize = 20;
    let fetcher = toolhost_tests::example_wasm("fetcher");
    let (addr, host) = one_mb_host(&[&fetcher, Path::new(TEST_HTTP_WASM), Path::new(NET_WASM)]).await;
    let url = format!("http://{addr}/one-mb");
    let calls = [
        ("get_page", json!({"url": url, "preview_chars": 0}), "\"bytes\":1048576"),
        ("http_send", json!({"url": url}), "status 200 read 1048576"),
        ("fetch_raw", json!({"url": url, "max_bytes": 2 << 20, "length_only": true}), "\n1048576 bytes"),
        ("get_page", json!({"url": format!("http://{addr}/tiny"), "preview_chars": 0}), "\"bytes\":5"),
    ];
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for i in 0..WARM + N {
        for (at, (name, args, want)) in calls.iter().enumerate() {
            let started = Instant::now();
            let r = host.execute(ToolCall::new(*name, args.clone())).await;
            let took = started.elapsed();
            assert!(r.ok && r.output.contains(want), "{name}: {:?} {}", r.error, r.output);
            if i >= WARM {
                samples[at].push(took);
            }
        }
        let took = pinned_one_mb(&host, &url).await;
        if i >= WARM {
            samples[4].push(took);
        }
    }
    let medians: Vec<Duration> = samples
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.sort();
            s[s.len() / 2]
        })
        .collect();
    let labels = [
        "1 MB: JS fetch() via wasi:http (fetcher)",
        "1 MB: Rust guest via wasi:http (http_send)",
        "1 MB: Rust guest via toolhost fetch (fetch_raw)",
        "5 B: JS fetch() via wasi:http (fetcher)",
        "1 MB: pinned client alone (FetchClient)",
    ];
    for (label, s) in labels.iter().zip(samples) {
        report(label, s);
    }
    let base = medians[4].as_secs_f64();
    for (label, m) in labels.iter().zip(&medians).take(3) {
        println!("{label} / pinned client alone, median: {:.2}x", m.as_secs_f64() / base);
    }
    println!(
        "JS fetch() / toolhost fetch import, median: {:.2}x",
        medians[0].as_secs_f64() / medians[2].as_secs_f64()
    );
}

/// What the permissions and the redactor add to a call: `decide` for a writing
/// call against 40 rules (its path resolved through the filesystem), and
/// redaction of a 1 KB and a 1 MB output.
async fn policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("docs")).expect("mkdir");
    let allow: Vec<String> = (0..20).map(|i| format!("write_file(path=docs/{i}/**)")).collect();
    let deny: Vec<String> = (0..20)
        .flat_map(|i| {
            [format!("write_file(path=secret{i}/**)"), format!("fetch_url(url=http://{i}.example/*)")]
        })
        .collect();
    let host = policy_host(dir.path(), &allow, &deny).await;
    let args = json!({"path": "docs/7/a.md", "content": "x"});
    report("permissions: decide a write (40 rules)", timed_decisions(&host, "write_file", false, &args));

    // A read-only call under the default policy (no deny rules): the fast path.
    let plain = Host::builder()
        .work_dir(dir.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .build()
        .await
        .expect("host builds");
    let read = json!({"path": "docs/7/a.md"});
    let samples = timed_decisions(&plain, "read_file", true, &read);
    report("permissions: decide a read (no deny rules)", samples);

    let redactor = toolhost::Redactor::new(&[("API_TOKEN".into(), "not-in-the-text-1234".into())]);
    for (label, size) in [("redact 1 KB of output", 1usize << 10), ("redact 1 MB of output", 1 << 20)] {
        let line = "an ordinary line of tool output, nothing secret here\n";
        let output = line.repeat(size / line.len() + 1);
        let n = if size > 4096 { 50 } else { 20_000 };
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            let out = redactor.redact(&output);
            samples.push(started.elapsed());
            assert!(matches!(out, std::borrow::Cow::Borrowed(_)));
        }
        report(label, samples);
    }
}

/// Shell-aware rules: `decide` for a `terminal` line of 20 simple commands (chained
/// with `&&` and `|`) against 40 allow rules and 5 deny rules, and for a line of one
/// command. Each call parses the line afresh, as a real call does.
async fn shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let allow: Vec<String> = (0..40).map(|i| format!("terminal(command=tool{i} run*)")).collect();
    let deny: Vec<String> = ["rm*", "git push*", "curl*", "dd *", "sudo*"]
        .iter()
        .map(|d| format!("terminal(command={d})"))
        .collect();
    let host = policy_host(dir.path(), &allow, &deny).await;
    let mut long = String::new();
    for i in 0..20 {
        let joint = match i {
            0 => "",
            _ if i % 2 == 0 => " && ",
            _ => " | ",
        };
        long.push_str(&format!("{joint}tool{} run --step {i} 'a b' \"$HOME\"/x 2>&1", 20 + i));
    }
    for (label, line) in [("20 commands", long.as_str()), ("1 command", "tool39 run --step 1 'a b'")] {
        let samples = timed_decisions(&host, "terminal", false, &json!({ "command": line }));
        report(&format!("shell rules: decide a line of {label} (40+5 rules)"), samples);
    }
}

/// Approval rules and questions: `decide` for a write that asks (the rule "always"
/// would save derived, every value in it literal) and for one the saved rule then
/// allows, for a plain and an odd file name, and a `terminal` line that asks; and
/// rendering a question's parts (arguments, reason, rule: quoted, escaped, bounded)
/// for a plain call and a hostile one.
async fn approval() {
    use toolhost::policy::{ShownRequest, unredacted};
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = "docs/odd name, [draft] {v2} *\\x?.md";
    let calls = [
        ("a write, plain name", "write_file", json!({"path": "docs/a.md", "content": "x"})),
        ("a write, odd name", "write_file", json!({"path": odd, "content": "x"})),
        ("a terminal line", "terminal", json!({"command": "git commit -m 'fix, again' --amend"})),
    ];
    let none = policy_host(dir.path(), &[], &[]).await;
    for (label, tool, args) in &calls {
        let toolhost::Decision::Ask { suggested_rule, .. } = none.decide(tool, false, args) else {
            panic!("{label}: not asked")
        };
        report(
            &format!("approval: decide {label} that asks"),
            timed(20_000, || none.decide(tool, false, args)),
        );
        let saved = policy_host(dir.path(), &[suggested_rule], &[]).await;
        report(
            &format!("approval: decide {label}, its saved rule allows"),
            timed_decisions(&saved, tool, false, args),
        );
    }
    let content = "an ordinary line of a file the model writes\n".repeat(24);
    let hostile = format!("x\nAsked because: fine\u{1b}[2J\u{202e}{}", "\u{1b}".repeat(200));
    for (label, path, reason) in [
        (
            "a plain write (1 KB of content)",
            "docs/a.md",
            "write_file can change things, and default mode asks first",
        ),
        ("a hostile write (escapes, bidi, 1 KB)", hostile.as_str(), hostile.as_str()),
    ] {
        let request = toolhost::ApprovalRequest {
            call_id: "c1".into(),
            tool: "write_file".into(),
            plugin: "builtin:fs".into(),
            args: json!({"path": path, "content": content}),
            reason: reason.into(),
            suggested_rule: format!("write_file(path={path})"),
        };
        report(
            &format!("approval: render the question of {label}"),
            timed(20_000, || ShownRequest::new(&request, &unredacted)),
        );
    }
}

/// `n` timed runs of `f`.
fn timed<T>(n: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        std::hint::black_box(f());
        samples.push(started.elapsed());
    }
    samples
}

/// A host over `dir` whose policy has these allow and deny rules.
async fn policy_host(dir: &Path, allow: &[String], deny: &[String]) -> Host {
    let list = |rules: &[String]| rules.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>().join(", ");
    let text = format!("[permissions]\nallow = [{}]\ndeny = [{}]\n", list(allow), list(deny));
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, text).expect("write policy");
    Host::builder()
        .work_dir(dir)
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .policy(toolhost::Policy::load(&path).expect("policy"))
        .build()
        .await
        .expect("host builds")
}

/// 20,000 timed `decide`s of one call, each an allow.
fn timed_decisions(host: &Host, tool: &str, read_only: bool, args: &serde_json::Value) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        let started = Instant::now();
        let decision = host.decide(tool, read_only, args);
        samples.push(started.elapsed());
        assert!(matches!(decision, toolhost::Decision::Allow(_)), "{decision:?}");
    }
    samples
}

/// The Python and JavaScript examples (built by `scripts/examples`): loading them
/// with and without the compile cache, and calls of each through the executor: its
/// trivial tool, then its real one.
async fn examples() {
    let dir = examples_work_dir();
    // Each component also has a trivial tool (`py_echo`, `js_echo`): its calls
    // are the fixed cost of a call to that component, apart from the work.
    for (name, tool, args, echo) in [
        ("csv_summary", "csv_summary", json!({"path": "people.csv"}), "py_echo"),
        ("markdown_outline", "markdown_outline", json!({"path": "doc.md"}), "js_echo"),
    ] {
        let cache = tempfile::tempdir().expect("tempdir");
        let build = || async {
            let started = Instant::now();
            let host = examples_host(dir.path(), cache.path(), &[name]).await;
            (host, started.elapsed())
        };
        let (_, cold) = build().await;
        let (host, warm) = build().await;
        println!("{name:<44} load: compile {cold:>9.1?}  cached {warm:>9.1?}");
        report(
            &format!("{echo} through the executor"),
            timed_calls(&host, echo, json!({"text": "hi"}), 300).await,
        );
        report(&format!("{tool} through the executor"), timed_calls(&host, tool, args, 300).await);
    }
}

/// A work dir with the examples' inputs: a 200-row CSV and a 50-section Markdown file.
fn examples_work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv: String = std::iter::once("name,age,city\n".to_string())
        .chain((0..200).map(|i| format!("person{i},{},{}\n", 20 + i % 50, ["Oslo", "Lima", "Pune"][i % 3])))
        .collect();
    std::fs::write(dir.path().join("people.csv"), csv).expect("write");
    let md: String = (0..50).map(|i| format!("# Part {i}\n\ntext\n\n## Section {i}.1\n\nmore\n")).collect();
    std::fs::write(dir.path().join("doc.md"), md).expect("write");
    dir
}

/// A host with only the `examples` named (by component), over `dir`.
async fn examples_host(dir: &Path, cache: &Path, examples: &[&str]) -> Host {
    let mut builder =
        Host::builder().work_dir(dir).without_builtins().stub_sockets(true).engine_settings(EngineSettings {
            cache_dir: Some(cache.to_path_buf()),
            ..EngineSettings::default()
        });
    for name in examples {
        builder = builder.plugin_file(toolhost_tests::example_wasm(name));
    }
    builder.build().await.expect("examples load")
}

/// A child process through the sandbox (Landlock, namespaces, rlimits, pids cgroup,
/// process group, capture, reaping) against spawning it directly from Rust.
async fn exec() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .mode(toolhost::Mode::Yolo)
        .plugin_file(EXEC_WASM)
        .plugin_exec(toolhost::ExecGrant { programs: vec!["true".into()], ..Default::default() })
        .build()
        .await
        .expect("host builds");
    let n = 500;
    report(
        "terminal `true` (bash -c, sandboxed)",
        timed_calls(&host, "terminal", json!({"command": "true"}), n).await,
    );
    report(
        "exec `true` from a plugin (no shell, sandboxed)",
        timed_calls(&host, "spawn", json!({"program": "true"}), n).await,
    );
    report(
        "the same, read-only (no walk for .git)",
        timed_calls(&host, "spawn_ro", json!({"program": "true"}), n).await,
    );
    // A writing child's work dir is searched for .git and the other protected paths
    // before it starts, and again once it is dead: 10,000 directories, ten of them
    // holding a repository (each a read-only bind in the child's root).
    let big = tempfile::tempdir().expect("tempdir");
    for i in 0..100 {
        for j in 0..100 {
            std::fs::create_dir_all(big.path().join(format!("d{i}/e{j}"))).expect("mkdir");
        }
    }
    for i in 0..10 {
        std::fs::create_dir_all(big.path().join(format!("d{i}/repo/.git/hooks"))).expect("mkdir");
    }
    let wide = Host::builder()
        .work_dir(big.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .mode(toolhost::Mode::Yolo)
        .build()
        .await
        .expect("host builds");
    report(
        "terminal `true`, work dir of 10,000 dirs",
        timed_calls_after(&wide, "terminal", json!({"command": "true"}), 10, 200).await,
    );
    // The same through the tool path, without confinement (`unconfined = true`): what
    // the Landlock, namespace, seccomp and cgroup steps cost.
    let unconfined = Host::builder()
        .work_dir(dir.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .mode(toolhost::Mode::Yolo)
        .builtin_exec(toolhost::ExecGrant { shell: true, unconfined: true, ..Default::default() })
        .build()
        .await
        .expect("host builds");
    report(
        "terminal `true` (bash -c, unconfined)",
        timed_calls(&unconfined, "terminal", json!({"command": "true"}), n).await,
    );
    let direct = |program: &str, args: &[&str]| {
        let mut samples = Vec::with_capacity(n);
        for i in 0..n + 50 {
            let started = Instant::now();
            let status = Command::new(program).args(args).status().expect("spawn");
            assert!(status.success());
            if i >= 50 {
                samples.push(started.elapsed());
            }
        }
        samples
    };
    report("std::process::Command `true`", direct("/usr/bin/true", &[]));
    let mut forked = Vec::with_capacity(n);
    for _ in 0..n {
        use std::os::unix::process::CommandExt;
        let started = Instant::now();
        let mut cmd = Command::new("/usr/bin/true");
        // SAFETY: an empty pre-exec hook; it only makes std fork+exec instead of
        // posix_spawn, which is what the sandbox's own hook costs.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
        assert!(cmd.status().expect("spawn").success());
        forked.push(started.elapsed());
    }
    report("std::process::Command `true`, fork+exec", forked);
    report("std::process::Command `bash -c true`", direct("/bin/bash", &["-c", "true"]));
    overlay_costs().await;
}

/// What writing through an overlay (merged into the work dir after the command)
/// costs a `terminal` call against writing in place, in the same run: a small and
/// a large work dir, and a command that rewrites a 200 MB file.
async fn overlay_costs() {
    let host = |dir: PathBuf, in_place: bool| async move {
        let host = Host::builder()
            .work_dir(&dir)
            .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
            .mode(toolhost::Mode::Yolo)
            .build()
            .await
            .expect("host builds");
        if in_place {
            host.exec_runtime().write_in_place_for_comparison();
        }
        host
    };
    for (tree, files, n) in [("small tree", 0usize, 300), ("20,000 files", 20_000, 60)] {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..files {
            let sub = dir.path().join(format!("d{}", i / 100));
            std::fs::create_dir_all(&sub).expect("mkdir");
            std::fs::write(sub.join(format!("f{}", i % 100)), "x\n").expect("write");
        }
        let hosts = [
            ("in place", host(dir.path().to_path_buf(), true).await),
            ("overlay", host(dir.path().to_path_buf(), false).await),
        ];
        for (command, what) in [("true", "`true`"), ("echo x > out.txt", "one file written")] {
            for (how, h) in &hosts {
                let samples = timed_calls_after(h, "terminal", json!({ "command": command }), 20, n).await;
                report(&format!("terminal {what}, {tree}, {how}"), samples);
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("big"), vec![7u8; 200_000_000]).expect("write");
    let hosts = [
        ("in place", host(dir.path().to_path_buf(), true).await),
        ("overlay", host(dir.path().to_path_buf(), false).await),
    ];
    for (command, what) in [
        (
            "dd if=/dev/zero of=big bs=1M count=190 conv=notrunc status=none",
            "200 MB file, 190 MB rewritten in place",
        ),
        ("head -c 200000000 /dev/zero > big", "200 MB file truncated and written again"),
    ] {
        for (how, h) in &hosts {
            let samples = timed_calls_after(h, "terminal", json!({ "command": command }), 1, 8).await;
            report(&format!("terminal, {what}, {how}"), samples);
        }
    }
}

/// What a pre-tool-use hook adds to a call: `read_file` of a small file with no hook,
/// with a command hook (`true`, confined like every child) and with a component
/// hook (a fresh sandbox per call), measured in the same run.
async fn hooks() {
    use sha2::Digest;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("small.txt"), "x\n".repeat(500)).expect("write");
    let wasm = std::fs::read(TEST_HOOK_WASM).expect("the test hook is built");
    let sha = hex::encode(sha2::Sha256::digest(&wasm));
    std::fs::write(dir.path().join("hook.wasm"), &wasm).expect("write");
    let build = |policy: String| {
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, policy).expect("write policy");
        Host::builder()
            .work_dir(dir.path())
            .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
            .policy(toolhost::Policy::load(&path).expect("policy"))
            .build()
    };
    let args = json!({"path": "small.txt"});
    let plain = build(String::new()).await.expect("host builds");
    let command =
        build("[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"read_file\"\ncommand = [\"true\"]\n".into())
            .await
            .expect("host builds");
    let component = build(format!(
        "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"read_file\"\ncomponent = \"hook.wasm\"\nsha256 = \"{sha}\"\n"
    ))
    .await
    .expect("host builds");
    let median = |mut s: Vec<Duration>| {
        s.sort();
        s[s.len() / 2]
    };
    // Interleaved, so the three see the same noise on a busy machine.
    for host in [&plain, &command, &component] {
        timed_calls_after(host, "read_file", args.clone(), 50, 1).await;
    }
    let (mut base, mut with_command, mut with_component) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..3000 {
        base.extend(timed_calls_after(&plain, "read_file", args.clone(), 0, 1).await);
        with_component.extend(timed_calls_after(&component, "read_file", args.clone(), 0, 1).await);
        if i % 10 == 0 {
            with_command.extend(timed_calls_after(&command, "read_file", args.clone(), 0, 1).await);
        }
    }
    // The floor of a command hook: starting `true` with nothing around it.
    let mut spawn = Vec::with_capacity(300);
    for _ in 0..300 {
        let started = Instant::now();
        let status = Command::new("true").stdin(std::process::Stdio::piped()).output().expect("true runs");
        spawn.push(started.elapsed());
        assert!(status.status.success());
    }
    let (b, c, w) = (median(base.clone()), median(with_command.clone()), median(with_component.clone()));
    let floor = median(spawn.clone());
    report("read_file, no hook", base);
    report("read_file + a command pre hook (`true`)", with_command);
    report("read_file + a component pre hook", with_component);
    report("std::process::Command `true` (the floor)", spawn);
    println!(
        "added per call (median): command hook {:.1?} ({:.1}x the bare spawn), component hook {:.1?}",
        c.saturating_sub(b),
        c.saturating_sub(b).as_secs_f64() / floor.as_secs_f64(),
        w.saturating_sub(b)
    );
}

/// `toolhost serve` spawned with the hostile plugin over a temp work dir.
fn serve_command(dir: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_tests::toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(dir).args(["--plugin", HOSTILE_WASM]).args(extra);
    // The data dir outside the work dir (the host refuses one inside it).
    cmd.env("TOOLHOST_CACHE_DIR", bench_cache()).env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    cmd
}

/// A no-op `tools/call` round trip through `toolhost serve`: over stdio (one
/// JSON line each way, after `initialize`) and over HTTP on 127.0.0.1 (a
/// 2026-07-28 stateless POST on a kept-alive connection, JSON answer); then
/// calls per second with 8 clients at once over HTTP.
async fn serve() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    const N: usize = 2000;
    let dir = tempfile::tempdir().expect("tempdir");
    let call = |id: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "noop", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}})
    };

    let mut child = serve_command(dir.path(), &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut samples = Vec::with_capacity(N);
    for id in 0..N + 200 {
        let started = Instant::now();
        stdin.write_all(format!("{}\n", call(id)).as_bytes()).await.expect("write");
        let line = stdout.next_line().await.expect("read").expect("a line");
        assert!(line.contains("\"ok\""), "{line}");
        if id >= 200 {
            samples.push(started.elapsed());
        }
    }
    report("serve: no-op tools/call over stdio", samples);
    drop(stdin);
    let _ = child.wait().await;

    let mut child = serve_command(dir.path(), &["--http", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve --http starts");
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = stderr.next_line().await.expect("read").expect("listening");
        if let Some(rest) = line.strip_prefix("toolhost: serving MCP on ") {
            break rest.to_string();
        }
    };
    let client = toolhost_tests::servers::http_client().build().expect("client");
    let mut samples = Vec::with_capacity(N);
    for id in 0..N + 200 {
        let started = Instant::now();
        let text = post_noop(&client, &url, call(id).to_string()).await;
        assert!(text.contains("\"ok\""), "{text}");
        if id >= 200 {
            samples.push(started.elapsed());
        }
    }
    report("serve: no-op tools/call over HTTP (loopback)", samples);

    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..8 {
        let (client, url) = (client.clone(), url.clone());
        clients.spawn(async move {
            for i in 0..N / 8 {
                let text = post_noop(&client, &url, call(c * N + i).to_string()).await;
                assert!(text.contains("\"ok\""), "{text}");
            }
        });
    }
    while clients.join_next().await.is_some() {}
    let rate = N as f64 / started.elapsed().as_secs_f64();
    println!("{:<44} {rate:.0} calls/s", "serve: no-op over HTTP, 8 clients at once");
    let _ = child.kill().await;
}

/// POST a 2026-07-28 `tools/call` of `noop` and return the body.
async fn post_noop(client: &reqwest::Client, url: &str, body: String) -> String {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "noop")
        .body(body)
        .send()
        .await
        .expect("answered");
    response.text().await.expect("body")
}
