//! The compiler tiers: a component missing from the compile cache runs first on
//! Winch's code while Cranelift compiles it in the background, then on
//! Cranelift's; each engine's artifacts are cached apart.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{EngineSettings, Host, Tier, ToolCall};
use toolhost_tests::HOSTILE_WASM;

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
    let build = || {
        Host::builder()
            .work_dir(dir.path())
            .without_builtins()
            .engine_settings(EngineSettings {
                cache_dir: Some(cache.path().to_path_buf()),
                ..Default::default()
            })
            .mode(toolhost::Mode::Yolo)
            .plugin_file(HOSTILE_WASM)
            .build()
    };
    let host = build().await.expect("loads");
    let plugin = host.plugins()[0].clone();
    let file = format!("{}.cwasm", plugin.sha256());
    assert!(!plugin.from_cache());
    assert_eq!(
        dirs_holding(cache.path(), &file),
        1,
        "only the baseline's artifact so far, or only one engine's"
    );
    let r = host.execute(ToolCall::new("noop", json!({}))).await;
    assert!(r.ok, "{:?}", r.error);

    let started = Instant::now();
    while plugin.tier() != Tier::Optimized {
        assert!(started.elapsed() < Duration::from_secs(120), "the optimised code never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(dirs_holding(cache.path(), &file), 2, "each engine's artifact in its own directory");
    let r = host.execute(ToolCall::new("noop", json!({}))).await;
    assert!(r.ok && r.output == "ok", "{:?}", r.error);
    let r = host.execute(ToolCall::new("spin", json!({}))).await;
    assert_eq!(r.code(), Some("fuel_exhausted"), "{:?}", r.error);
    drop(host);

    let host = build().await.expect("loads again");
    let again = &host.plugins()[0];
    assert!(again.from_cache());
    assert_eq!(again.tier(), Tier::Optimized);
}
