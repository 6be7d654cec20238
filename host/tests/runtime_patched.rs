//! Staying patched: every `wasmtime`, `wasmtime-*`, `winch-*` and `cranelift-*` package in
//! Cargo.lock is at least the minimum the root Cargo.toml names
//! (`[workspace.metadata.toolhost] wasmtime-minimum`, raised with each
//! wasmtime security release; `wasmtime-minimum-by-crate` for crates whose
//! newer releases are not published where the workspace builds from).
//! Versions are compared as semver, never as strings (`48.0.9` < `48.0.10`).

use std::collections::BTreeMap;
use std::path::Path;

use semver::Version;

/// The minimums from the root Cargo.toml's text.
struct Minimums {
    wasmtime: Version,
    by_crate: BTreeMap<String, Version>,
}

impl Minimums {
    fn parse(manifest: &str) -> Result<Self, String> {
        let value: toml::Table = toml::from_str(manifest).map_err(|e| format!("Cargo.toml: {e}"))?;
        let ours = value
            .get("workspace")
            .and_then(|w| w.get("metadata"))
            .and_then(|m| m.get("toolhost"))
            .ok_or("Cargo.toml has no [workspace.metadata.toolhost]")?;
        let version = |v: &toml::Value, what: &str| {
            let text = v.as_str().ok_or(format!("{what} is not a string"))?;
            Version::parse(text).map_err(|e| format!("{what} = {text:?}: {e}"))
        };
        let wasmtime =
            version(ours.get("wasmtime-minimum").ok_or("no wasmtime-minimum")?, "wasmtime-minimum")?;
        if wasmtime.minor != 0 {
            return Err(format!("wasmtime-minimum {wasmtime}: wasmtime releases are N.0.P"));
        }
        let mut by_crate = BTreeMap::new();
        if let Some(table) = ours.get("wasmtime-minimum-by-crate") {
            let table = table.as_table().ok_or("wasmtime-minimum-by-crate is not a table")?;
            for (name, v) in table {
                by_crate.insert(name.clone(), version(v, name)?);
            }
        }
        Ok(Self { wasmtime, by_crate })
    }

    /// The minimum for the package `name`, if it is one of wasmtime's.
    fn for_package(&self, name: &str) -> Option<Version> {
        if let Some(own) = self.by_crate.get(name) {
            return Some(own.clone());
        }
        // Winch (the baseline compiler) is released with wasmtime, under its numbers.
        if name == "wasmtime" || name.starts_with("wasmtime-") || name.starts_with("winch-") {
            return Some(self.wasmtime.clone());
        }
        // wasmtime N.0.P ships cranelift 0.(N+87).P.
        (name == "cranelift" || name.starts_with("cranelift-"))
            .then(|| Version::new(0, self.wasmtime.major + 87, self.wasmtime.patch))
    }
}

/// The packages in the lock file's text older than their minimum: "name version < minimum".
fn too_old(lock: &str, minimums: &Minimums) -> Result<Vec<String>, String> {
    let value: toml::Table = toml::from_str(lock).map_err(|e| format!("Cargo.lock: {e}"))?;
    let packages = value.get("package").and_then(|p| p.as_array()).ok_or("Cargo.lock has no [[package]]")?;
    let mut old = Vec::new();
    for package in packages {
        let name = package.get("name").and_then(|n| n.as_str()).ok_or("a package without a name")?;
        let Some(minimum) = minimums.for_package(name) else { continue };
        let text = package.get("version").and_then(|v| v.as_str()).ok_or(format!("{name} has no version"))?;
        let version = Version::parse(text).map_err(|e| format!("{name} {text}: {e}"))?;
        if version < minimum {
            old.push(format!("{name} {version} < {minimum}"));
        }
    }
    Ok(old)
}

#[test]
fn the_lock_holds_no_wasmtime_older_than_the_minimum() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let minimums = Minimums::parse(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let old = too_old(&lock, &minimums).unwrap();
    assert!(old.is_empty(), "older than [workspace.metadata.toolhost] allows (cargo update): {old:#?}");
    // The check saw wasmtime itself.
    assert!(lock.contains("name = \"wasmtime\""));
}

const MANIFEST: &str = r#"
[workspace.metadata.toolhost]
wasmtime-minimum = "48.0.10"
wasmtime-minimum-by-crate = { "wasmtime-wasi" = "48.0.8" }
"#;

fn lock(packages: &[(&str, &str)]) -> String {
    packages
        .iter()
        .map(|(name, version)| format!("[[package]]\nname = \"{name}\"\nversion = \"{version}\"\n\n"))
        .collect()
}

#[test]
fn versions_compare_as_semver_not_as_text() {
    let minimums = Minimums::parse(MANIFEST).unwrap();
    // As text, "48.0.9" sorts after "48.0.10": the check must not.
    assert!("48.0.9" > "48.0.10");
    for (name, version, old) in [
        ("wasmtime", "48.0.9", true),
        ("wasmtime", "48.0.8", true),
        ("wasmtime", "47.0.12", true),
        ("wasmtime", "48.0.10", false),
        ("wasmtime", "48.0.11", false),
        ("wasmtime", "49.0.0", false),
        ("wasmtime-environ", "48.0.9", true),
        ("wasmtime-internal-cranelift", "48.0.1", true),
        ("cranelift-codegen", "0.135.9", true),
        ("cranelift-codegen", "0.134.20", true),
        ("cranelift-codegen", "0.135.10", false),
        ("cranelift-assembler-x64", "0.135.11", false),
        ("wasmtime-wasi", "48.0.8", false),
        ("wasmtime-wasi", "48.0.7", true),
        ("winch-codegen", "48.0.9", true),
        ("winch-codegen", "48.0.10", false),
        ("wasmparser", "0.1.0", false),
    ] {
        let found = too_old(&lock(&[(name, version)]), &minimums).unwrap();
        assert_eq!(!found.is_empty(), old, "{name} {version}: {found:?}");
    }
    // Two versions of one crate: the older is found.
    let found = too_old(&lock(&[("wasmtime", "48.0.10"), ("wasmtime", "36.0.2")]), &minimums).unwrap();
    assert_eq!(found, ["wasmtime 36.0.2 < 48.0.10"]);
}

#[test]
fn unfit_minimums_are_errors() {
    for (manifest, says) in [
        ("[workspace]\n", "no [workspace.metadata.toolhost]"),
        ("[workspace.metadata.toolhost]\n", "no wasmtime-minimum"),
        ("[workspace.metadata.toolhost]\nwasmtime-minimum = \"48.0\"\n", "wasmtime-minimum = \"48.0\""),
        ("[workspace.metadata.toolhost]\nwasmtime-minimum = \"48.1.0\"\n", "N.0.P"),
    ] {
        let error = Minimums::parse(manifest).err().unwrap();
        assert!(error.contains(says), "{manifest}: {error}");
    }
}
