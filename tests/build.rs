//! Builds the test guests (`tests/guests/*`) and tells the tests where they are.

fn main() {
    let guests = [
        ("toolhost-hostile", "tests/guests/hostile"),
        ("toolhost-sockets", "tests/guests/sockets"),
        ("toolhost-net", "tests/guests/net"),
        ("toolhost-test-exec", "tests/guests/exec"),
        ("toolhost-fsprobe", "tests/guests/fsprobe"),
        ("toolhost-flood", "tests/guests/flood"),
        ("toolhost-test-hook", "tests/guests/hook"),
        ("toolhost-test-http", "tests/guests/http"),
        ("toolhost-test-config", "tests/guests/config"),
    ];
    for (package, wasm) in toolhost_build::build_guests(&guests) {
        let var = format!("TOOLHOST_WASM_{}", package.replace('-', "_").to_uppercase());
        println!("cargo:rustc-env={var}={}", wasm.display());
    }
}
