//! Builds the builtin plugins (`plugins/*`) as wasm32-wasip2 components so
//! `src/load/builtins.rs` can embed them, and precompiles each one for this
//! machine with the engine's own code settings (`src/engine/config.rs`): a
//! first start then loads native code instead of compiling for seconds. The
//! code is deflated (the binary carries a third of its size; the first start
//! inflates it into the compile cache). The host checks at load that an
//! artifact fits its engine and compiles the component when it does not
//! (another CPU, a cross build).

#[path = "src/engine/config.rs"]
#[allow(dead_code, unreachable_pub)]
mod config;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    // Code for another target than the one building it would only be refused at load.
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    let engine = native.then(|| wasmtime::Engine::new(&config::code_config()).expect("a wasmtime engine"));
    for (package, wasm) in toolhost_build::build_guests(&[
        ("toolhost-fs", "plugins/fs"),
        ("toolhost-web", "plugins/web"),
        ("toolhost-sys", "plugins/sys"),
    ]) {
        let var = package.replace('-', "_").to_uppercase();
        println!("cargo:rustc-env=TOOLHOST_WASM_{var}={}", wasm.display());
        let bytes = std::fs::read(&wasm).unwrap_or_else(|e| panic!("reading {}: {e}", wasm.display()));
        println!("cargo:rustc-env=TOOLHOST_SHA256_{var}={}", hex::encode(Sha256::digest(&bytes)));
        let cwasm = out.join(format!("{package}.cwasm.deflate"));
        precompile(engine.as_ref(), &bytes, &cwasm);
        println!("cargo:rustc-env=TOOLHOST_CWASM_{var}={}", cwasm.display());
    }
}

/// Write `bytes` compiled by `engine` and deflated to `path` (an empty file
/// without an engine).
fn precompile(engine: Option<&wasmtime::Engine>, bytes: &[u8], path: &Path) {
    let code = match engine {
        Some(engine) => {
            let code = engine.precompile_component(bytes).expect("precompiling a builtin plugin");
            miniz_oxide::deflate::compress_to_vec(&code, 9)
        }
        None => Vec::new(),
    };
    std::fs::write(path, code).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
