//! `firstcall`: what a user waits for when a tool was just added. For the Python
//! and JavaScript examples, each run from an emptied compile cache: building the
//! host plus the first call of the component's trivial tool, with both compiler
//! tiers (Winch first, Cranelift in the background) against Cranelift alone (the
//! anchor: every start before the tiers); how long until the optimised code
//! replaced the baseline's; then the calls that follow on it, against calls of a
//! host loaded from the cache, in the same run. Last, the refusal of the Python
//! component for an import its grants lack, from an empty cache.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{CompilerTiers, EngineSettings, Host, Tier, ToolCall};

use crate::{examples_work_dir, report, timed_calls};

const RUNS: usize = 3;

/// A host over `dir` with only the example `name`, compiled as `tiers` says, its
/// cache in `cache`; `stub_sockets` is the grant the Python example needs.
async fn build(
    dir: &Path,
    cache: &Path,
    name: &str,
    tiers: CompilerTiers,
    stub_sockets: bool,
) -> Result<Host, String> {
    Host::builder()
        .work_dir(dir)
        .without_builtins()
        .stub_sockets(stub_sockets)
        .engine_settings(EngineSettings {
            cache_dir: Some(cache.to_path_buf()),
            tiers,
            ..EngineSettings::default()
        })
        .plugin_file(toolhost_tests::example_wasm(name))
        .build()
        .await
        .map_err(|e| e.to_string())
}

/// Build + the first call of `tool` from an empty cache; the host, and the time.
async fn first_call(
    dir: &Path,
    cache: &Path,
    name: &str,
    tool: &str,
    tiers: CompilerTiers,
) -> (Host, Duration) {
    let started = Instant::now();
    let host = build(dir, cache, name, tiers, true).await.expect("the example loads");
    let r = host.execute(ToolCall::new(tool, json!({"text": "hi"}))).await;
    let took = started.elapsed();
    assert!(r.ok, "{tool}: {:?}", r.error);
    (host, took)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub(crate) async fn firstcall() {
    let dir = examples_work_dir();
    for (name, tool) in [("csv_summary", "py_echo"), ("markdown_outline", "js_echo")] {
        let (mut tiered, mut anchor, mut upgrade, mut baseline_calls) = (vec![], vec![], vec![], vec![]);
        let mut optimised_calls = Vec::new();
        for _ in 0..RUNS {
            let cache = tempfile::tempdir().expect("tempdir");
            let (host, took) = first_call(dir.path(), cache.path(), name, tool, CompilerTiers::Both).await;
            tiered.push(took);
            let plugin = host.plugins()[0].clone();
            let started = Instant::now();
            while plugin.tier() == Tier::Baseline {
                baseline_calls.extend(timed_calls_quiet(&host, tool, 1).await);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            upgrade.push(started.elapsed() + took);
            optimised_calls.extend(timed_calls(&host, tool, json!({"text": "hi"}), 100).await);

            let cache = tempfile::tempdir().expect("tempdir");
            let (_, took) = first_call(dir.path(), cache.path(), name, tool, CompilerTiers::Optimized).await;
            anchor.push(took);
        }
        // The anchor's cache now holds Cranelift's code: a host loaded from it.
        let cache = tempfile::tempdir().expect("tempdir");
        let _ = first_call(dir.path(), cache.path(), name, tool, CompilerTiers::Optimized).await;
        let (cached_host, cached_first) =
            first_call(dir.path(), cache.path(), name, tool, CompilerTiers::Both).await;
        assert_eq!(cached_host.plugins()[0].tier(), Tier::Optimized);
        let cached = timed_calls(&cached_host, tool, json!({"text": "hi"}), 100).await;

        let (t, a) = (median(tiered.clone()), median(anchor.clone()));
        println!(
            "{name:<20} first call, empty cache: tiered {t:>9.1?} (runs {tiered:.1?})  Cranelift only {a:>9.1?} (runs {anchor:.1?})  {:.1}x faster",
            a.as_secs_f64() / t.as_secs_f64()
        );
        println!(
            "{name:<20} optimised code in use after {:>9.1?} (runs {upgrade:.1?}); first call from the cache {cached_first:.1?}",
            median(upgrade.clone())
        );
        report(&format!("{tool} on the baseline (Winch), meanwhile"), baseline_calls);
        report(&format!("{tool} after the upgrade (same host)"), optimised_calls.clone());
        report(&format!("{tool} on a host loaded from the cache"), cached.clone());
        println!(
            "{tool}: after the upgrade / loaded from the cache, median: {:.2}x",
            median(optimised_calls).as_secs_f64() / median(cached).as_secs_f64()
        );
    }
    // Where the tiered first call goes: the baseline tier alone, compiling into an
    // empty cache, then loading from its own cache.
    for (name, tool) in [("csv_summary", "py_echo"), ("markdown_outline", "js_echo")] {
        let cache = tempfile::tempdir().expect("tempdir");
        let (_, compiled) = first_call(dir.path(), cache.path(), name, tool, CompilerTiers::Baseline).await;
        let (_, loaded) = first_call(dir.path(), cache.path(), name, tool, CompilerTiers::Baseline).await;
        println!(
            "{name:<20} Winch only: first call compiling {compiled:>9.1?}, from Winch's cache {loaded:>9.1?}"
        );
    }
    let mut refused = Vec::new();
    for _ in 0..5 {
        let cache = tempfile::tempdir().expect("tempdir");
        let started = Instant::now();
        let Err(err) = build(dir.path(), cache.path(), "csv_summary", CompilerTiers::Both, false).await
        else {
            panic!("csv_summary loaded without stub_sockets")
        };
        refused.push(started.elapsed());
        assert!(err.starts_with("capability_denied: wasi:sockets/"), "{err}");
    }
    report("csv_summary refused for wasi:sockets, empty cache", refused);
}

/// `n` calls of `tool`, timed, without the warm-up [`timed_calls`] makes.
async fn timed_calls_quiet(host: &Host, tool: &str, n: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let r = host.execute(ToolCall::new(tool, json!({"text": "hi"}))).await;
        samples.push(started.elapsed());
        assert!(r.ok, "{tool}: {:?}", r.error);
    }
    samples
}
