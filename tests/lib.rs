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
