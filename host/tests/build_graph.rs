//! The release build stays lean: cargo's own unit graph (`cargo build
//! --unit-graph`, read with `RUSTC_BOOTSTRAP=1`: it builds nothing) shows
//!
//! - each library built once: a build-time dependency whose features drift
//!   from the host's makes cargo build wasmtime and cranelift a second time for
//!   `build.rs` (four minutes on two cores);
//! - the packages the root Cargo.toml builds without optimisation
//!   (`opt-level = 0` under `[profile.release.package]`) are exactly those
//!   that only run while building: none of them is in the binary, and no new
//!   proc macro is left optimised (three times its build time) by omission.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Packages built both ways on purpose: tiny, and what differs is a
/// dependency's choice of features.
const BUILT_TWICE: &[&str] = &["peg-runtime"];

/// Build-time packages kept optimised: they generate cranelift's code and run
/// for seconds at every build of it.
const OPTIMISED_AT_BUILD: &[&str] =
    &["cranelift-isle", "cranelift-codegen-meta", "cranelift-assembler-x64-meta", "cranelift-srcgen"];

/// The unit graph of `cargo build --release` with `args`.
fn unit_graph(args: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--release", "--locked", "--unit-graph", "-Z", "unstable-options"])
        .args(args)
        .env("RUSTC_BOOTSTRAP", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo --unit-graph: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn package(unit: &Value) -> String {
    let id = unit["pkg_id"].as_str().unwrap();
    let tail = id.rsplit('#').next().unwrap();
    let name = tail.split('@').next().unwrap();
    // A path package's id ends in `#version` only: its name is the path's last part.
    if tail.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        id.split('#').next().unwrap().rsplit('/').next().unwrap().to_string()
    } else {
        name.to_string()
    }
}

fn kind(unit: &Value) -> &str {
    unit["target"]["kind"][0].as_str().unwrap()
}

/// The packages whose code the built programs run, and those only the build runs.
fn runtime_and_build_only(graph: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let units = graph["units"].as_array().unwrap();
    let mut runtime = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<usize> =
        graph["roots"].as_array().unwrap().iter().map(|r| r.as_u64().unwrap() as usize).collect();
    while let Some(i) = stack.pop() {
        let unit = &units[i];
        if matches!(kind(unit), "proc-macro" | "custom-build") || !seen.insert(i) {
            continue;
        }
        runtime.insert(package(unit));
        stack.extend(
            unit["dependencies"].as_array().unwrap().iter().map(|d| d["index"].as_u64().unwrap() as usize),
        );
    }
    let all: BTreeSet<String> =
        units.iter().filter(|u| u["mode"] == "build" && kind(u) != "custom-build").map(package).collect();
    let build_only = all.difference(&runtime).cloned().collect();
    (runtime, build_only)
}

/// `[profile.release.package]` of the root Cargo.toml: package → opt-level.
fn release_overrides() -> BTreeMap<String, i64> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    manifest["profile"]["release"]["package"]
        .as_table()
        .unwrap()
        .iter()
        .filter_map(|(name, table)| Some((name.clone(), table.get("opt-level")?.as_integer()?)))
        .collect()
}

#[test]
fn the_binary_builds_each_library_once() {
    let graph = unit_graph(&["-p", "toolhost", "--bin", "toolhost"]);
    let mut count: BTreeMap<(String, String), usize> = BTreeMap::new();
    for unit in graph["units"].as_array().unwrap() {
        if unit["mode"] == "build" && kind(unit) == "lib" {
            *count.entry((package(unit), unit["pkg_id"].as_str().unwrap().to_string())).or_default() += 1;
        }
    }
    let twice: Vec<&String> = count
        .iter()
        .filter(|((name, _), n)| **n > 1 && !BUILT_TWICE.contains(&name.as_str()))
        .map(|((name, _), _)| name)
        .collect();
    assert!(
        twice.is_empty(),
        "built twice (a build dependency's features differ from the host's: align them in \
         host/Cargo.toml's [build-dependencies]): {twice:?}"
    );
}

#[test]
fn only_what_runs_at_build_time_is_built_unoptimised() {
    let overrides = release_overrides();
    let unoptimised: BTreeSet<&str> =
        overrides.iter().filter(|(_, level)| **level == 0).map(|(name, _)| name.as_str()).collect();
    let mut runtime = BTreeSet::new();
    let mut build_only = BTreeSet::new();
    for args in [&["-p", "toolhost", "--bin", "toolhost"][..], &["--workspace"][..]] {
        let (r, b) = runtime_and_build_only(&unit_graph(args));
        runtime.extend(r);
        build_only.extend(b);
    }
    let build_only: BTreeSet<String> = build_only.difference(&runtime).cloned().collect();
    let run_unoptimised: Vec<&&str> = unoptimised.iter().filter(|name| runtime.contains(**name)).collect();
    assert!(run_unoptimised.is_empty(), "opt-level = 0 but the built programs run them: {run_unoptimised:?}");
    let workspace: BTreeSet<&str> = ["toolhost-build"].into();
    let missing: Vec<&String> = build_only
        .iter()
        .filter(|name| {
            !unoptimised.contains(name.as_str())
                && !OPTIMISED_AT_BUILD.contains(&name.as_str())
                && !workspace.contains(name.as_str())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "only run while building, yet optimised (add to [profile.release.package]): {missing:?}"
    );
    let gone: Vec<&&str> = unoptimised.iter().filter(|name| !build_only.contains(**name)).collect();
    assert!(gone.is_empty(), "listed with opt-level = 0 but no longer a dependency: {gone:?}");
}
