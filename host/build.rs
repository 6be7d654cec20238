//! Builds the builtin plugins (`plugins/*`) as wasm32-wasip2 components so
//! `src/builtins.rs` can embed them.

fn main() {
    for (package, wasm) in toolhost_build::build_guests(&[
        ("toolhost-fs", "plugins/fs"),
        ("toolhost-web", "plugins/web"),
        ("toolhost-sys", "plugins/sys"),
    ]) {
        let var = format!("TOOLHOST_WASM_{}", package.replace('-', "_").to_uppercase());
        println!("cargo:rustc-env={var}={}", wasm.display());
    }
}
