//! The executor end to end, through `Host::execute` with the builtins and
//! the hostile plugin: lookup, cancellation before a call, argument
//! coercion and validation, the output clamp and store, call ids, the tool
//! list, the registry rules, refused capabilities, the compile cache and
//! concurrent calls.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{CancellationToken, EngineSettings, Host, Limits, LoadError, ToolCall, ToolResult};
use toolhost_tests::{
    FS_TOOLS, HOSTILE_TOOLS, HOSTILE_WASM, SOCKETS_WASM, hostile_host, test_engine_settings,
};

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn code(r: &ToolResult) -> &str {
    r.code().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output))
}

fn message(r: &ToolResult) -> &str {
    &r.error.as_ref().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output)).message
}

/// The error of a build that must fail (`Host` is not `Debug`, so no
/// `expect_err`).
fn build_error(built: Result<Host, LoadError>) -> LoadError {
    match built {
        Ok(host) => panic!(
            "the build succeeded with tools {:?}",
            host.definitions().into_iter().map(|d| d.name).collect::<Vec<_>>()
        ),
        Err(err) => err,
    }
}

/// What `big_output` returns for `bytes`: numbered lines until at least
/// `bytes` bytes.
fn big_output_text(bytes: usize) -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < bytes {
        text.push_str(&format!("line {n}\n"));
        n += 1;
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_is_named_in_the_error() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let r = call(&host, "nope", json!({})).await;
    assert!(!r.ok);
    assert_eq!(code(&r), "unknown_tool");
    assert_eq!(r.error.as_ref().unwrap().to_string(), "unknown_tool: nope");
    assert_eq!(r.output, "");
    assert_eq!((r.display.as_ref(), r.metadata.as_ref()), (None, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_before_it_starts_does_not_run() {
    let (host, dir) = hostile_host(Limits::default()).await;
    let token = CancellationToken::new();
    token.cancel();
    let r = host
        .execute(ToolCall::new("write_path_rw", json!({"path": "must_not_exist.txt"})).with_cancel(token))
        .await;
    assert_eq!(code(&r), "cancelled", "{:?}", r.error);
    assert_eq!(r.error.as_ref().unwrap().to_string(), "cancelled");
    assert!(!dir.path().join("must_not_exist.txt").exists(), "the cancelled call ran and wrote the file");

    // The same call with a live token does write: the check above is not vacuous.
    let r = call(&host, "write_path_rw", json!({"path": "must_not_exist.txt"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("must_not_exist.txt")).unwrap(),
        "written by a read-only tool"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quoted_scalars_are_coerced_to_the_declared_types() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let r = call(&host, "echo", json!({"count": "5", "flag": "true", "ratio": "2.5"})).await;
    assert!(r.ok, "{:?}", r.error);
    let echoed: Value = serde_json::from_str(&r.output).expect("echo returns JSON");
    assert_eq!(echoed, json!({"count": 5, "flag": true, "ratio": 2.5, "label": null}));
    assert_eq!(echoed["count"].as_u64(), Some(5), "count must arrive as a number");
    assert_eq!(echoed["flag"].as_bool(), Some(true), "flag must arrive as a boolean");
    assert_eq!(echoed["ratio"].as_f64(), Some(2.5), "ratio must arrive as a number");

    // A string-typed field keeps a numeric-looking string as a string.
    let r = call(&host, "echo", json!({"count": 1, "label": "42"})).await;
    assert!(r.ok, "{:?}", r.error);
    let echoed: Value = serde_json::from_str(&r.output).unwrap();
    assert_eq!(echoed["label"], json!("42"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_else_is_guessed_and_errors_name_the_field() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    for (args, field) in [
        (json!({"count": "five"}), "count"),
        (json!({"count": ""}), "count"),
        (json!({"count": 5, "flag": "yes"}), "flag"),
        (json!({"count": 5, "flag": "True"}), "flag"),
        (json!({"count": 5, "ratio": "1e3"}), "ratio"),
    ] {
        let r = call(&host, "echo", args.clone()).await;
        assert_eq!(code(&r), "invalid_args", "{args}: {:?}", r.error);
        assert!(message(&r).starts_with(&format!("{field}: ")), "{args}: {}", message(&r));
    }

    let r = call(&host, "echo", json!({"count": 1, "bogus": 2})).await;
    assert_eq!(code(&r), "invalid_args");
    assert!(message(&r).contains("bogus"), "{}", message(&r));

    for missing in [json!({}), Value::Null, json!({"flag": true})] {
        let r = call(&host, "echo", missing.clone()).await;
        assert_eq!(code(&r), "invalid_args", "{missing}");
        assert!(message(&r).contains("\"count\" is a required property"), "{missing}: {}", message(&r));
    }

    // Arguments that are not an object at all.
    let r = call(&host, "echo", json!([1, 2])).await;
    assert_eq!(code(&r), "invalid_args");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_output_is_clamped_and_kept_whole_by_call_id() {
    let limits = Limits { clamp_bytes: 2000, ..Limits::default() };
    let (host, _dir) = hostile_host(limits).await;
    let expected = big_output_text(200_000);
    let last_line = expected.lines().last().unwrap().to_string();

    let r = host.execute(ToolCall::new("big_output", json!({"bytes": 200_000})).with_id("clamp-1")).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.call_id, "clamp-1");
    let omitted = r.omitted.expect("a 200 kB output is clamped");
    assert!(omitted.bytes > 190_000, "{omitted:?}");
    assert!(omitted.lines > 10_000, "{omitted:?}");
    let marker = r
        .output
        .lines()
        .find(|l| l.starts_with("[... "))
        .unwrap_or_else(|| panic!("no marker in {:?}", r.output));
    assert!(
        marker.starts_with(&format!(
            "[... {} lines ({} bytes) omitted from the middle",
            omitted.lines, omitted.bytes
        )),
        "{marker}"
    );
    assert!(marker.contains("clamp-1"), "the marker names the call id: {marker}");
    assert!(r.output.starts_with("line 0\nline 1\n"), "{:?}", &r.output[..40]);
    assert!(
        r.output.ends_with(&format!("{last_line}\n")),
        "ends with {:?}",
        &r.output[r.output.len() - 40..]
    );
    assert!(r.output.len() < 2400, "clamped to {} bytes", r.output.len());
    // Kept + omitted = everything.
    let kept = r.output.lines().filter(|l| l.starts_with("line ")).count();
    assert_eq!(kept + omitted.lines, expected.lines().count());

    let full = host.outputs().get("clamp-1").await.expect("the full output is kept");
    assert!(full.len() >= 200_000, "{}", full.len());
    assert_eq!(&*full, expected.as_str());

    // A short output is not clamped, and is kept too.
    let r = host.execute(ToolCall::new("big_output", json!({"bytes": 100})).with_id("short-1")).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.omitted, None);
    assert_eq!(r.output, big_output_text(100));
    assert_eq!(host.outputs().get("short-1").await.as_deref(), Some(big_output_text(100).as_str()));
    // Nothing is stored for an id that never ran.
    assert!(host.outputs().get("never-ran").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_id_and_work_dir_reach_the_guest() {
    let (host, dir) = hostile_host(Limits::default()).await;
    let r = host.execute(ToolCall::new("echo", json!({"count": 1})).with_id("my-call-77")).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.call_id, "my-call-77");
    assert_eq!(r.display.as_deref(), Some("call my-call-77"));
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(r.metadata, Some(json!({"work_dir": canonical.display().to_string()})));
    assert_eq!(host.work_dir(), Some(canonical.as_path()));

    // Without an id, each call gets a fresh, non-empty one.
    let a = call(&host, "noop", json!({})).await;
    let b = call(&host, "noop", json!({})).await;
    assert!(!a.call_id.is_empty());
    assert_ne!(a.call_id, b.call_id);
    // A failed call keeps the id it was given, too.
    let r = host.execute(ToolCall::new("nope", json!({})).with_id("failed-1")).await;
    assert_eq!(r.call_id, "failed-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definitions_are_sorted_and_complete() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let defs = host.definitions();
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "definitions are not sorted by name");

    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names, "a name is listed twice");
    for name in FS_TOOLS.iter().chain(HOSTILE_TOOLS.iter()) {
        assert!(names.contains(name), "{name} is missing from {names:?}");
    }

    for def in &defs {
        assert_eq!(def.parameters["type"], "object", "{}: {}", def.name, def.parameters);
        assert!(!def.description.is_empty(), "{} has no description", def.name);
    }
    let echo = defs.iter().find(|d| d.name == "echo").unwrap();
    assert_eq!(echo.description, "Echoes its typed arguments.");
    assert_eq!(echo.parameters["required"], json!(["count"]));
    // The registry agrees with the definitions.
    assert_eq!(host.registry().len(), defs.len());
    assert!(host.registry().get("read_file").unwrap().spec().read_only);
    assert!(!host.registry().get("write_path_rw").unwrap().spec().read_only);
    assert_eq!(host.registry().get("slow").unwrap().spec().timeout_ms, Some(300));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_a_plugin_twice_is_a_duplicate_tool() {
    let dir = tempfile::tempdir().unwrap();
    let err = build_error(
        Host::builder()
            .work_dir(dir.path())
            .engine_settings(test_engine_settings())
            .plugin_file(HOSTILE_WASM)
            .plugin_file(HOSTILE_WASM)
            .build()
            .await,
    );
    assert!(matches!(err, LoadError::DuplicateTool(_)), "{err:?}");
    let text = err.to_string();
    let name = text.strip_prefix("duplicate_tool: ").unwrap_or_else(|| panic!("{text}"));
    assert!(HOSTILE_TOOLS.contains(&name), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allow_list_narrows_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .plugin_file(HOSTILE_WASM)
        .allow_tools(vec!["read_file".into(), "noop".into()])
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = host.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["noop", "read_file"]);

    let r = call(&host, "write_file", json!({"path": "x.txt", "content": "x"})).await;
    assert_eq!(r.error.as_ref().map(ToString::to_string).as_deref(), Some("unknown_tool: write_file"));
    assert!(!dir.path().join("x.txt").exists());
    let r = call(&host, "noop", json!({})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "ok"));

    let err = build_error(
        Host::builder()
            .work_dir(dir.path())
            .engine_settings(test_engine_settings())
            .allow_tools(vec!["read_file".into(), "no_such_tool".into()])
            .build()
            .await,
    );
    assert!(matches!(err, LoadError::UnknownAllowed(_)), "{err:?}");
    assert!(err.to_string().contains("no_such_tool"), "{err}");
    assert!(!err.to_string().contains("read_file"), "only the unknown name is reported: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_importing_sockets_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let err = build_error(
        Host::builder()
            .work_dir(dir.path())
            .engine_settings(test_engine_settings())
            .plugin_file(SOCKETS_WASM)
            .build()
            .await,
    );
    assert!(matches!(err, LoadError::CapabilityDenied { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.starts_with("capability_denied: wasi:sockets/"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_work_dir_tools_have_no_filesystem() {
    let host = Host::builder()
        .engine_settings(test_engine_settings())
        .mode(toolhost::Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.work_dir(), None);
    let r = call(&host, "read_file", json!({"path": "Cargo.toml"})).await;
    assert_eq!(code(&r), "no_filesystem", "{:?}", r.error);
    let r = call(&host, "write_path_rw", json!({"path": "x"})).await;
    assert_eq!(code(&r), "no_filesystem", "{:?}", r.error);
    // echo sees no work dir either.
    let r = call(&host, "echo", json!({"count": 1})).await;
    assert_eq!(r.metadata, Some(json!({"work_dir": null})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_work_dir_fails_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let err = build_error(
        Host::builder()
            .work_dir(dir.path().join("absent"))
            .engine_settings(test_engine_settings())
            .build()
            .await,
    );
    assert!(matches!(err, LoadError::WorkDir(_)), "{err:?}");
    std::fs::write(dir.path().join("file"), "").unwrap();
    let err = build_error(
        Host::builder()
            .work_dir(dir.path().join("file"))
            .engine_settings(test_engine_settings())
            .build()
            .await,
    );
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

async fn build_with_cache(cache: &Path, work: &Path) -> Host {
    Host::builder()
        .work_dir(work)
        .engine_settings(EngineSettings { cache_dir: Some(cache.to_path_buf()), ..EngineSettings::default() })
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn files_with_extension(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_with_extension(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            found.push(path);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compile_cache_is_used_on_the_second_build() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let build = || build_with_cache(cache.path(), work.path());
    let hostile_cached = |host: &Host| {
        let plugin = host
            .plugins()
            .iter()
            .find(|p| p.name() == HOSTILE_WASM)
            .unwrap_or_else(|| panic!("no plugin named {HOSTILE_WASM}"));
        plugin.from_cache()
    };

    let first = build().await;
    assert!(!hostile_cached(&first), "the first build found an empty cache warm");
    // The builtins' code is in the binary (precompiled by host/build.rs): even
    // a first start on an empty cache compiles none of them.
    let builtins: Vec<_> = first.plugins().iter().filter(|p| p.name().starts_with("builtin:")).collect();
    assert_eq!(builtins.len(), 3);
    assert!(builtins.iter().all(|p| p.from_cache()), "a builtin was compiled at start");
    assert_eq!(first.plugins()[0].name(), "builtin:fs");
    let last = first.plugins().last().unwrap();
    assert_eq!(last.name(), HOSTILE_WASM, "builtins load first, then --plugin ones");
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(HOSTILE_WASM).unwrap()));
    assert_eq!(last.sha256(), sha);
    // The cache holds the hostile plugin, compiled, and the builtins' code,
    // written from the binary's copy so that later starts map it.
    let mut expected: Vec<String> = builtins.iter().map(|p| format!("{}.cwasm", p.sha256())).collect();
    expected.push(format!("{sha}.cwasm"));
    expected.sort();
    drop(first);

    let artifacts = files_with_extension(cache.path(), "cwasm");
    let mut names: Vec<String> =
        artifacts.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    // The hostile plugin's code is cached by the baseline tier, and by Cranelift once
    // its background compile ends, each in its own engine's directory.
    names.sort();
    names.dedup();
    assert_eq!(names, expected, "the cache holds the builtins and the hostile plugin: {artifacts:?}");

    let second = build().await;
    assert!(hostile_cached(&second), "the second build recompiled the hostile plugin");
    assert!(second.plugins().iter().all(|p| p.from_cache()), "every plugin comes from the cache");
    // A host built from the cache runs calls.
    let r = call(&second, "noop", json!({})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "ok"), "{:?}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_calls_at_once_all_succeed() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    let host = Arc::new(host);
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let host = host.clone();
            tokio::spawn(async move {
                host.execute(ToolCall::new("noop", json!({})).with_id(format!("parallel-{i}"))).await
            })
        })
        .collect();
    let mut ids = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        let r = task.await.unwrap();
        assert!(r.ok, "call {i}: {:?}", r.error);
        assert_eq!(r.output, "ok");
        assert_eq!(r.call_id, format!("parallel-{i}"));
        ids.push(r.call_id);
    }
    assert_eq!(ids.len(), 32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_a_free_slot_can_be_cancelled() {
    // One instance slot, held by a call that spins until its deadline.
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .limits(Limits { fuel: u64::MAX, timeout: Duration::from_secs(4), ..Limits::default() })
        .engine_settings(EngineSettings { max_concurrent_calls: 1, ..test_engine_settings() })
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let host = Arc::new(host);
    let blocker = {
        let host = host.clone();
        tokio::spawn(async move { host.execute(ToolCall::new("spin", json!({}))).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!blocker.is_finished(), "spin should still hold the only slot");

    // A second call queues for the slot; its caller gives up after 100 ms.
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel();
        })
    };
    let started = Instant::now();
    let r = host.execute(ToolCall::new("noop", json!({})).with_cancel(token)).await;
    let waited = started.elapsed();
    canceller.await.unwrap();
    assert_eq!(code(&r), "cancelled", "{:?}", r.error);
    assert!(
        waited < Duration::from_millis(1500),
        "the cancelled call waited {waited:?} for a slot instead of returning when cancelled"
    );

    let r = blocker.await.unwrap();
    assert_eq!(code(&r), "timeout", "{:?}", r.error);
}
