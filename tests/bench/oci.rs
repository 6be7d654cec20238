//! `bench oci`: a 2 MB component (the builtin `toolhost_fs.wasm`, 1.9 MB) from a real
//! registry on loopback (Debian's `docker-registry`), through the `toolhost` binary as
//! a user runs it. With the entry already in `toolhost.toml` (as on a new machine):
//!
//! - **first start**: empty OCI store and compile cache, so `toolhost list` pulls the
//!   manifest, the layer and the signatures, verifies them, stores them and compiles;
//! - **cached start**: the same again with the store and the compile cache full (the
//!   layer's sha256 and the signature record are still checked).
//!
//! The floor beside each: the same component as a local file (`--plugin FILE`), with
//! the same compile cache state.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolhost_tests::registry::Registry;
use toolhost_tests::workspace_root;

use super::report;

/// Cold starts timed (each compiles 1.9 MB: seconds).
const COLD_RUNS: usize = 5;
/// Cached starts timed.
const CACHED_RUNS: usize = 30;

pub(crate) fn oci() {
    let bin = workspace_root().join("target/release/toolhost");
    let wasm = workspace_root().join("target/wasm/wasm32-wasip2/guest/toolhost_fs.wasm");
    assert!(bin.exists() && wasm.exists(), "build first: cargo build --release");
    let registry = Registry::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let [work, plain, keys, data] = ["work", "plain", "keys", "data"].map(|d| dir.path().join(d));
    for d in [&work, &plain, &keys, &data] {
        std::fs::create_dir(d).expect("mkdir");
    }
    // `toolhost ARGS` in the work dir `cwd` with the cache dir `cache`.
    let run_in = |cwd: &Path, cache: &Path, args: &[&str]| {
        let started = Instant::now();
        let out = Command::new(&bin)
            .args(args)
            .current_dir(cwd)
            .env("TOOLHOST_CACHE_DIR", cache)
            .env("TOOLHOST_DATA_DIR", &data)
            .env("TOOLHOST_CONFIG_DIR", dir.path())
            .env_remove("TOOLHOST_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("run toolhost");
        let took = started.elapsed();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        took
    };
    let run = |cache: &Path, args: &[&str]| run_in(&work, cache, args);
    // The floor: the same component as a local file, in a work dir with no policy.
    let file = wasm.to_str().unwrap();
    let run_file = |cache: &Path| run_in(&plain, cache, &["list", "--no-builtins", "--plugin", file]);
    let setup = tempfile::tempdir().expect("tempdir");
    let prefix = keys.join("bench");
    run(setup.path(), &["keygen", prefix.to_str().unwrap(), "--no-password"]);
    let reference = registry.reference("tools/fs:v1");
    let key = format!("{}.key", prefix.display());
    run(setup.path(), &["publish", wasm.to_str().unwrap(), &reference, "--plain-http", "--key", &key]);
    let trust = format!("{}.pub", prefix.display());
    run(setup.path(), &["add", &reference, "--trust-key", &trust, "--plain-http", "--name", "fs2"]);

    let from_registry = ["list", "--no-builtins"];
    let mut first = Vec::new();
    let mut floor_cold = Vec::new();
    let mut cached = Vec::new();
    let mut floor_cached = Vec::new();
    for _ in 0..COLD_RUNS {
        let cache = tempfile::tempdir().expect("tempdir");
        first.push(run(cache.path(), &from_registry));
        let cache = tempfile::tempdir().expect("tempdir");
        floor_cold.push(run_file(cache.path()));
    }
    let cache = tempfile::tempdir().expect("tempdir");
    run(cache.path(), &from_registry);
    run_file(cache.path());
    for _ in 0..CACHED_RUNS {
        cached.push(run(cache.path(), &from_registry));
        floor_cached.push(run_file(cache.path()));
    }
    let median = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let ratio = |a: &[Duration], b: &[Duration]| median(a).as_secs_f64() / median(b).as_secs_f64();
    report("oci 1.9 MB: first start (pull+verify+compile)", first.clone());
    report("  floor: same file, --plugin, no compile cache", floor_cold.clone());
    report("oci 1.9 MB: cached start (store+compile cache)", cached.clone());
    report("  floor: same file, --plugin, compile cache", floor_cached.clone());
    println!(
        "ratio first/floor {:.2}, cached/floor {:.2}",
        ratio(&first, &floor_cold),
        ratio(&cached, &floor_cached)
    );
}
