//! Shared helpers for toolhost's end-to-end tests: paths of the test
//! guests, and a host built over a temporary work dir.

use std::path::{Path, PathBuf};

pub use toolhost;

/// The hostile test plugin (tools that misbehave on purpose).
pub const HOSTILE_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_HOSTILE");
/// A plugin that imports `wasi:sockets` (the host must refuse it).
pub const SOCKETS_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_SOCKETS");

/// The directory of the built `toolhost` binary's workspace.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// A compile cache shared by the test binaries (so each test does not
/// recompile the hostile plugin), kept under `target/`.
pub fn test_engine_settings() -> toolhost::EngineSettings {
    toolhost::EngineSettings {
        cache_dir: Some(workspace_root().join("target").join("test-compile-cache")),
        ..toolhost::EngineSettings::default()
    }
}

/// A host over a fresh temporary work dir with the builtins and the hostile
/// plugin, under `limits`.
pub async fn hostile_host(limits: toolhost::Limits) -> (toolhost::Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let host = toolhost::Host::builder()
        .work_dir(dir.path())
        .limits(limits)
        .engine_settings(test_engine_settings())
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .expect("host with the hostile plugin builds");
    (host, dir)
}
