//! The compiler tiers: a component missing from the compile cache runs first on
//! Winch's code while Cranelift compiles it in the background, then on
//! Cranelift's; each engine's artifacts are cached apart. Every limit holds in
//! both tiers with the same code: fuel, the deadline (epoch interruption) and the
//! memory cap stop a hostile guest under Winch exactly as under Cranelift.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{CompilerTiers, EngineSettings, Host, Limits, Tier, ToolCall, ToolResult};
use toolhost_tests::{HOSTILE_WASM, test_engine_settings};

/// A host with only the hostile plugin, compiled as `tiers` says: Cranelift's
/// code from the tests' cache, or Winch's from an empty cache (`cache`).
async fn host(tiers: CompilerTiers, limits: Limits, cache: &Path) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = match tiers {
        CompilerTiers::Baseline => {
            EngineSettings { cache_dir: Some(cache.to_path_buf()), tiers, ..Default::default() }
        }
        _ => EngineSettings { tiers, ..test_engine_settings() },
    };
    let host = Host::builder()
        .work_dir(dir.path())
        .without_builtins()
        .limits(limits)
        .engine_settings(settings)
        .mode(toolhost::Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .expect("the hostile plugin loads");
    let expected = if tiers == CompilerTiers::Baseline { Tier::Baseline } else { Tier::Optimized };
    assert_eq!(host.plugins()[0].tier(), expected);
    (host, dir)
}

/// `tool`'s failure code in each tier, after which the host still serves a call.
async fn codes_in_both_tiers(limits: Limits, tool: &str) -> Vec<(String, String, Duration)> {
    let mut codes = Vec::new();
    for tiers in [CompilerTiers::Optimized, CompilerTiers::Baseline] {
        let cache = tempfile::tempdir().unwrap();
        let (host, _dir) = host(tiers, limits.clone(), cache.path()).await;
        let started = Instant::now();
        let r = host.execute(ToolCall::new(tool, json!({}))).await;
        let took = started.elapsed();
        let err = r.error.clone().unwrap_or_else(|| panic!("{tool} under {tiers:?} ended ok: {}", r.output));
        codes.push((err.code.clone(), err.message.clone(), took));
        let noop: ToolResult = host.execute(ToolCall::new("noop", json!({}))).await;
        assert!(noop.ok && noop.output == "ok", "{tiers:?}: {:?}", noop.error);
    }
    codes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuel_stops_a_loop_in_both_tiers() {
    let limits = Limits { fuel: 200_000_000, timeout: Duration::from_secs(60), ..Limits::default() };
    let codes = codes_in_both_tiers(limits, "spin").await;
    for (code, message, took) in &codes {
        assert_eq!(code, "fuel_exhausted", "{message}");
        assert!(*took < Duration::from_secs(20), "fuel took {took:?}");
    }
    assert_eq!(codes[0].1, codes[1].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_stops_a_loop_in_both_tiers() {
    let limits = Limits { fuel: u64::MAX, timeout: Duration::from_millis(200), ..Limits::default() };
    for (code, message, took) in codes_in_both_tiers(limits, "spin").await {
        assert_eq!(code, "timeout", "{message}");
        assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(5), "took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_cap_stops_a_hog_in_both_tiers() {
    let limits = Limits { memory_bytes: 32 << 20, ..Limits::default() };
    for (code, message, _) in codes_in_both_tiers(limits, "hog").await {
        assert_eq!(code, "memory_limit", "{message}");
        assert!(message.contains("32 MiB"), "{message}");
    }
}

/// A host over `dir` with only the component `wasm`, both tiers, its compile cache
/// in `cache`.
async fn tiered_host(dir: &Path, cache: &Path, wasm: &str) -> Host {
    Host::builder()
        .work_dir(dir)
        .without_builtins()
        .engine_settings(EngineSettings { cache_dir: Some(cache.to_path_buf()), ..Default::default() })
        .mode(toolhost::Mode::Yolo)
        .plugin_file(wasm)
        .build()
        .await
        .expect("the component loads")
}

/// Until the background compile has replaced `plugin`'s baseline code.
async fn wait_optimized(plugin: &toolhost::Plugin) {
    let started = Instant::now();
    while plugin.tier() != Tier::Optimized {
        assert!(started.elapsed() < Duration::from_secs(120), "the optimised code never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The cache directories (one per engine) holding an artifact named `file`.
fn dirs_holding(cache: &Path, file: &str) -> usize {
    std::fs::read_dir(cache).unwrap().flatten().filter(|d| d.path().join(file).is_file()).count()
}

/// With both tiers, a component missing from the cache is compiled by Winch (its
/// artifact cached under the baseline engine's salt), serves calls at once, and
/// is replaced by Cranelift's code when the background compile ends, cached under
/// the host engine's salt; the next host loads that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_component_runs_on_the_baseline_then_on_optimised_code() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let host = tiered_host(dir.path(), cache.path(), HOSTILE_WASM).await;
    let plugin = host.plugins()[0].clone();
    let file = format!("{}.cwasm", plugin.sha256());
    assert!(!plugin.from_cache());
    assert!(dirs_holding(cache.path(), &file) >= 1, "the baseline's artifact is cached");
    let r = host.execute(ToolCall::new("noop", json!({}))).await;
    assert!(r.ok, "{:?}", r.error);

    wait_optimized(&plugin).await;
    assert_eq!(dirs_holding(cache.path(), &file), 2, "each engine's artifact in its own directory");
    let r = host.execute(ToolCall::new("noop", json!({}))).await;
    assert!(r.ok && r.output == "ok", "{:?}", r.error);
    let r = host.execute(ToolCall::new("spin", json!({}))).await;
    assert_eq!(r.code(), Some("fuel_exhausted"), "{:?}", r.error);
    drop(host);

    let host = tiered_host(dir.path(), cache.path(), HOSTILE_WASM).await;
    let again = &host.plugins()[0];
    assert!(again.from_cache());
    assert_eq!(again.tier(), Tier::Optimized);
}

/// A typed-export component on the baseline tier: its functions are found again
/// in the optimised component (their indices belong to one compiled component),
/// so a call on either side of the upgrade reaches the same function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_export_component_keeps_its_functions_across_the_upgrade() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let host = tiered_host(dir.path(), cache.path(), toolhost_tests::TEST_TYPED_WASM).await;
    let plugin = host.plugins()[0].clone();
    assert!(!plugin.from_cache());
    let calls = [("echo", json!({"text": "hi"}), "hi"), ("weather_echo", json!({"text": "x"}), "weather: x")];
    let check = |r: ToolResult, want: &str| {
        assert!(r.ok, "{:?}", r.error);
        assert_eq!(r.output, want);
    };
    for (tool, args, want) in &calls {
        check(host.execute(ToolCall::new(*tool, args.clone())).await, want);
    }
    wait_optimized(&plugin).await;
    for (tool, args, want) in &calls {
        check(host.execute(ToolCall::new(*tool, args.clone())).await, want);
    }
}
