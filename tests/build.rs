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
        ("toolhost-test-http-client", "tests/guests/http-client"),
        ("toolhost-test-config", "tests/guests/config"),
        ("toolhost-test-typed", "tests/guests/typed"),
    ];
    for (package, mut wasm) in toolhost_build::build_guests(&guests) {
        if package == "toolhost-test-typed" {
            wasm = with_package_docs(&wasm, "tests/guests/typed/wit/typed.wit");
        }
        let var = format!("TOOLHOST_WASM_{}", package.replace('-', "_").to_uppercase());
        println!("cargo:rustc-env={var}={}", wasm.display());
    }
}

/// A copy of the component at `wasm` (in `OUT_DIR`) with the doc comments of the WIT
/// at `wit` (relative to the workspace root) in a `package-docs` section, the way
/// `wit-docs-inject` adds them to a component after the toolchain built it (no
/// toolchain keeps them in the component it links).
fn with_package_docs(wasm: &std::path::Path, wit: &str) -> std::path::PathBuf {
    // Read when the script runs, not when it was compiled: a target dir moved
    // to another checkout keeps the compiled script.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = std::path::Path::new(&manifest_dir).join("..");
    let wit = root.join(wit);
    println!("cargo:rerun-if-changed={}", wit.display());
    let text = std::fs::read_to_string(&wit).expect("the typed guest's WIT");
    let mut resolve = wit_parser::Resolve::new();
    let package = resolve.push_str(&wit, &text).expect("the typed guest's WIT parses");
    let docs = wit_parser::PackageMetadata::extract(&resolve, package).encode().expect("docs encode");
    let mut bytes = std::fs::read(wasm).expect("the built typed guest");
    // A custom section: id 0, its size, then its name and its data.
    let name = wit_parser::PackageMetadata::SECTION_NAME.as_bytes();
    let mut body = leb128(name.len());
    body.extend_from_slice(name);
    body.extend_from_slice(&docs);
    bytes.push(0);
    bytes.extend(leb128(body.len()));
    bytes.extend(body);
    let out =
        std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("typed-with-docs.wasm");
    std::fs::write(&out, bytes).expect("write the typed guest with docs");
    out
}

fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}
