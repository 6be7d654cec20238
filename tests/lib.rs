//! Shared helpers for toolhost's end-to-end tests: paths of the test
//! guests, and a host built over a temporary work dir.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod attack;
pub mod net;
pub mod private;
pub mod registry;
pub mod servers;

pub use toolhost;

/// The hostile test plugin (tools that misbehave on purpose).
pub const HOSTILE_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_HOSTILE");
/// A plugin that imports `wasi:sockets` (the host must refuse it).
pub const SOCKETS_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_SOCKETS");
/// A plugin that imports the pinned fetch (`fetch_raw`: fetch a URL as given).
pub const NET_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_NET");
/// A plugin that imports exec (`spawn`, and `spawn_ro` read-only: run a
/// command as given, report the outcome as JSON or the exec error's code).
pub const EXEC_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_TEST_EXEC");
/// A plugin that does one filesystem operation exactly as told (`fs`, and `fs_read`
/// read-only), reporting the error the guest got: refusals must come from the host.
pub const FSPROBE_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_FSPROBE");
/// A plugin whose tool list is chosen by the env variable `FLOOD_LISTING`
/// (granted with `HostBuilder::plugin_env`): too many tools, huge names,
/// descriptions and schemas, deep schemas, a trap or a loop while listing.
pub const FLOOD_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_FLOOD");

/// A typed-export component (no `toolhost:plugin`: its exported WIT functions are
/// the tools), with its WIT doc comments in a `package-docs` section.
pub const TEST_TYPED_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_TEST_TYPED");

/// The tools of `builtin:fs`, sorted.
pub const FS_TOOLS: [&str; 9] = [
    "disk_usage",
    "edit_file",
    "find_files",
    "grep_files",
    "list_dir",
    "move_file",
    "read_file",
    "tree",
    "write_file",
];

/// The hostile plugin's tools, in its own order.
pub const HOSTILE_TOOLS: [&str; 20] = [
    "noop",
    "spin",
    "slow",
    "hog",
    "flood",
    "big_output",
    "read_path",
    "write_path",
    "write_path_rw",
    "counter",
    "panic",
    "exit",
    "env",
    "echo",
    "tamper",
    "fill",
    "huge_error",
    "huge_display",
    "huge_metadata",
    "huge_code",
];

/// The config dir (`TOOLHOST_CONFIG_DIR`: trust records, private policies) the
/// `toolhost` binary gets in these tests, one per test process, so they never read
/// or write the user's own.
pub fn test_config_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp config dir")).path()
}

/// The data dir (`TOOLHOST_DATA_DIR`: the effect journal) the `toolhost` binary gets
/// in these tests, one per test process, so they never write the user's own.
pub fn test_data_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp data dir")).path()
}

/// The `toolhost` binary to run in `cwd` with this test process's config and data
/// dirs (never the user's), without `TOOLHOST_LOG`, stdin closed.
pub fn toolhost_in(cwd: &Path) -> Command {
    let mut cmd = Command::new(toolhost_bin());
    cmd.current_dir(cwd)
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CONFIG_DIR", test_config_dir())
        .env("TOOLHOST_DATA_DIR", test_data_dir())
        .stdin(std::process::Stdio::null());
    cmd
}

/// [`toolhost_in`] `work` running `args[0]` (the command) `--work-dir WORK`,
/// then the rest of `args` (`--work-dir` must come before a `--`), with the
/// tests' shared compile cache.
pub fn toolhost_on(work: &Path, args: &[&str]) -> Command {
    let mut cmd = toolhost_in(work);
    cmd.arg(args[0]).arg("--work-dir").arg(work).args(&args[1..]);
    cmd.env("TOOLHOST_CACHE_DIR", workspace_root().join("target/test-compile-cache"));
    cmd
}

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
        // These tests are about the sandbox, not the permissions: nothing asks.
        .mode(toolhost::Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .expect("host with the hostile plugin builds");
    (host, dir)
}

/// The cargo profile these tests were built with; the binary is taken from
/// the same one.
pub const PROFILE: &str = if cfg!(debug_assertions) { "debug" } else { "release" };

/// `cargo build ARGS` from the workspace root, for a binary the tests run; `what` names
/// it in the error.
fn cargo_build(what: &str, args: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(workspace_root()).arg("build").args(args);
    // The variables cargo set for this test crate would reach build scripts that
    // watch them (ring's does, `OUT_DIR` included) and make them rerun, rebuilding
    // half the tree.
    cmd.env_remove("OUT_DIR");
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY_",
            "CARGO_TARGET_TMPDIR",
        ]
        .iter()
        .any(|prefix| key.starts_with(prefix))
        {
            cmd.env_remove(key.as_ref());
        }
    }
    match cmd.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("building {what} failed: {status}")),
        Err(e) => Err(format!("could not run cargo to build {what}: {e}")),
    }
}

/// `path` when it is a file; else an error naming `what`.
fn built(what: &str, path: PathBuf) -> Result<PathBuf, String> {
    if path.is_file() { Ok(path) } else { Err(format!("no {what} at {}", path.display())) }
}

/// The `toolhost` binary, brought up to date by `cargo build` once per test
/// binary (a no-op when it is current: cargo does not build a dependency's
/// binary for another package's tests). A failed build is remembered, so
/// every test reports it at once.
pub fn toolhost_bin() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let what = "the toolhost binary";
        let mut args = vec!["-p", "toolhost", "--bin", "toolhost"];
        if PROFILE == "release" {
            args.push("--release");
        }
        cargo_build(what, &args)?;
        built(what, workspace_root().join("target").join(PROFILE).join("toolhost"))
    });
    bin.as_deref().unwrap_or_else(|e| panic!("{e}"))
}

/// The independent cosign peer (`tests/sigstore-peer`: a CLI over sigstore-rs), built
/// once per test binary in its own workspace and target dir (`target/sigstore-peer`), so
/// its dependencies' features never reach the main workspace's build. Panics, for every
/// test that needs it, when it does not build.
pub fn sigstore_peer_bin() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let what = "the sigstore-rs peer (tests/sigstore-peer; it links the system OpenSSL: \
            libssl-dev and pkg-config, which scripts/deps installs)";
        let manifest = "tests/sigstore-peer/Cargo.toml";
        let target_dir = "target/sigstore-peer";
        cargo_build(
            what,
            &["--release", "--locked", "--manifest-path", manifest, "--target-dir", target_dir],
        )?;
        built(what, workspace_root().join("target/sigstore-peer/release/sigstore-peer"))
    });
    bin.as_deref().unwrap_or_else(|e| panic!("{e}"))
}

/// The example tool `name` written in another language (`plugins/examples/`),
/// as built by `scripts/examples` into `target/examples/NAME.wasm`. Panics
/// when it is missing: `./scripts/test` builds the examples first, and a test
/// that cannot find them must fail rather than pass without running.
pub fn example_wasm(name: &str) -> PathBuf {
    let path = workspace_root().join("target").join("examples").join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: build the example tools with ./scripts/examples (./scripts/test does)",
        path.display()
    );
    path
}

/// A guest toolchain installed by `scripts/examples` under
/// `target/toolchains/` (`py/bin/componentize-py`,
/// `js/node_modules/.bin/componentize-js`). Panics when it is missing.
pub fn toolchain(relative: &str) -> PathBuf {
    let path = workspace_root().join("target").join("toolchains").join(relative);
    assert!(
        path.exists(),
        "{} is missing: install the pinned toolchains with ./scripts/examples (./scripts/test does)",
        path.display()
    );
    path
}

/// Whether the tests run as root (some confinement checks differ there).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// The test hook component (`tests/guests/hook`, world `tool-hook`).
pub const TEST_HOOK_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_TEST_HOOK");

/// A plugin using standard `wasi:http/outgoing-handler` (`tests/guests/http`): one tool,
/// `http_send`, with hostile options.
pub const TEST_HTTP_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_TEST_HTTP");

/// A plugin using `wstd`, a `wasi:http` client crate (`tests/guests/http-client`): one tool,
/// `http_get`, which GETs a URL and may follow redirects itself.
pub const TEST_HTTP_CLIENT_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_TEST_HTTP_CLIENT");

/// A plugin importing `wasi:config/store` in both versions (`tests/guests/config`): one
/// tool, `config_read`.
pub const TEST_CONFIG_WASM: &str = env!("TOOLHOST_WASM_TOOLHOST_TEST_CONFIG");

/// Start `serve`, a `toolhost serve --http 127.0.0.1:0 …` command, and wait at most
/// `patience` for the address it prints on stderr; the rest of its stderr is echoed
/// (`server: …`). Give `serve` `kill_on_drop(true)` to stop it with the child.
pub async fn start_http_server(
    mut serve: tokio::process::Command,
    patience: std::time::Duration,
) -> (tokio::process::Child, std::net::SocketAddr) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = serve
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawning toolhost serve --http");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let addr = tokio::time::timeout(patience, async {
        while let Some(line) = lines.next_line().await.expect("reading the server's stderr") {
            if let Some(rest) = line.strip_prefix("toolhost: serving MCP on http://") {
                return rest.strip_suffix("/mcp").expect("the endpoint is /mcp").parse().expect("an address");
            }
            eprintln!("server: {line}");
        }
        panic!("toolhost serve --http exited before listening");
    })
    .await
    .expect("the server listens in time");
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("server: {line}");
        }
    });
    (child, addr)
}
