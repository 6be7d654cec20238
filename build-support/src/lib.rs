//! Used by build scripts (`host/build.rs`, `tests/build.rs`) to build guest
//! crates of this workspace as `wasm32-wasip2` components.
//!
//! The guests get their own target directory (`target/wasm`): a nested cargo
//! on the outer build's target directory would wait forever on its lock.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target every guest is built for.
pub const GUEST_TARGET: &str = "wasm32-wasip2";
/// The cargo profile guests are built with (see the root `Cargo.toml`).
pub const GUEST_PROFILE: &str = "guest";

/// Build the workspace packages `packages` (package names) as components and
/// return `(package, path to .wasm)` for each. Tells cargo to rerun the build
/// script when the guest sources, the SDK or the WIT change.
///
/// Panics with an explanation when the build fails: that is how a build
/// script reports an error.
pub fn build_guests(packages: &[(&str, &str)]) -> Vec<(String, PathBuf)> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("run from a build script"));
    let root = workspace_root(&manifest_dir);
    let target_dir = root.join("target").join("wasm");

    for watched in [
        "wit",
        "codes/src",
        "codes/Cargo.toml",
        "guest-sdk/src",
        "guest-sdk/Cargo.toml",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    for (_, dir) in packages {
        println!("cargo:rerun-if-changed={}", root.join(dir).join("src").display());
        println!("cargo:rerun-if-changed={}", root.join(dir).join("Cargo.toml").display());
    }

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--locked", "--target", GUEST_TARGET, "--profile", GUEST_PROFILE])
        .arg("--target-dir")
        .arg(&target_dir);
    for (package, _) in packages {
        cmd.args(["-p", package]);
    }
    // The outer build's settings are for the host, not for the guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_LLVM_COV",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("could not run cargo to build the guest components");
    if !status.success() {
        panic!(
            "building the guest components failed (see above). If the error mentions \
             `wasm32-wasip2`, install the target with: rustup target add {GUEST_TARGET}"
        );
    }

    packages
        .iter()
        .map(|(package, _)| {
            let file = target_dir
                .join(GUEST_TARGET)
                .join(GUEST_PROFILE)
                .join(format!("{}.wasm", package.replace('-', "_")));
            assert!(file.exists(), "guest build produced no {}", file.display());
            (package.to_string(), file)
        })
        .collect()
}

fn workspace_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists() || dir.join("wit").is_dir())
        .unwrap_or(start)
        .to_path_buf()
}
