//! The policy: pinned identity, capabilities read from a component's imports,
//! env grants, per-plugin limits, and output redaction. Permissions (modes,
//! rules, protected paths, the approver) are in `permissions.rs`.

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost::{Host, LoadError, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::{HOSTILE_WASM, NET_WASM, SOCKETS_WASM, test_engine_settings};

fn sha256_of(path: &str) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// Write `policy` as toolhost.toml in `dir` and build a host over `dir` with it.
async fn build(dir: &Path, policy: &str, env: &[(&str, &str)]) -> Result<Host, LoadError> {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).unwrap();
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .host_env(env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .policy(Policy::load(&path)?)
        .build()
        .await
}

fn entry(name: &str, wasm: &str, extra: &str) -> String {
    format!("[plugins.{name}]\nsource = {wasm:?}\nsha256 = \"{}\"\n{extra}\n", sha256_of(wasm))
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_whose_bytes_changed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = entry("hostile", HOSTILE_WASM, "");
    let host = build(dir.path(), &good, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.plugins()[0].name(), "hostile");
    assert_eq!(call(&host, "noop", json!({})).await.output, "ok");

    let pinned = "0".repeat(64);
    let bad = good.replace(&sha256_of(HOSTILE_WASM), &pinned);
    let err = build(dir.path(), &bad, &[]).await.err().expect("the build fails");
    let text = err.to_string();
    assert!(matches!(err, LoadError::IdentityMismatch { .. }), "{err:?}");
    assert!(text.starts_with("identity_mismatch: hostile: "), "{text}");
    assert!(text.contains(&sha256_of(HOSTILE_WASM)) && text.contains(&pinned), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_without_its_grant_is_refused_naming_the_policy_key() {
    let dir = tempfile::tempdir().unwrap();
    // fetch without network hosts
    let err =
        build(dir.path(), &entry("net", NET_WASM, "network = []"), &[]).await.err().expect("the build fails");
    let text = err.to_string();
    assert!(text.starts_with("capability_denied: toolhost:plugin/fetch@0.1.0: "), "{text}");
    assert!(text.contains("plugins.net.network"), "{text}");
    let ok = build(dir.path(), &entry("net", NET_WASM, "network = [\"docs.rs\"]"), &[]).await;
    assert!(ok.is_ok(), "{:?}", ok.err());

    // sockets without the stub
    let err = build(dir.path(), &entry("sock", SOCKETS_WASM, ""), &[]).await.err().expect("the build fails");
    let text = err.to_string();
    assert!(text.starts_with("capability_denied: wasi:sockets/"), "{text}");
    assert!(text.contains("plugins.sock.sockets = \"stub\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stubbed_sockets_refuse_every_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let host = build(dir.path(), &entry("sock", SOCKETS_WASM, "sockets = \"stub\""), &[]).await.unwrap();
    let r = call(&host, "connect", json!({ "addr": addr.to_string() })).await;
    assert_eq!(r.code(), Some("connect_failed"), "{r:?}");
    assert!(r.error.as_ref().unwrap().message.to_lowercase().contains("denied"), "{r:?}");
    assert!(listener.accept().is_err(), "the stub let a connection through to {addr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_grants_none_read_and_extra_dirs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "in the work dir").unwrap();
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("dict.txt"), "extra").unwrap();
    let extra_path = extra.path().canonicalize().unwrap();

    // none: no preopen at all, not even the work dir's path.
    let host = build(dir.path(), &entry("h", HOSTILE_WASM, "filesystem = \"none\""), &[]).await.unwrap();
    assert_eq!(call(&host, "read_path", json!({"path": "a.txt"})).await.code(), Some("no_filesystem"));
    let echo = call(&host, "echo", json!({"count": 1})).await;
    assert_eq!(echo.metadata, Some(json!({"work_dir": null})));

    // read: reads work, writes fail even for a writing tool in yolo mode.
    let read = format!("filesystem = \"read\"\nread-dirs = [{:?}]", extra_path.display().to_string());
    let host = build(dir.path(), &entry("h", HOSTILE_WASM, &read), &[]).await.unwrap();
    assert_eq!(call(&host, "read_path", json!({"path": "a.txt"})).await.output, "in the work dir");
    let w = call(&host, "write_path_rw", json!({"path": "b.txt"})).await;
    assert!(!w.ok && !dir.path().join("b.txt").exists(), "{w:?}");
    let extra_file = extra_path.join("dict.txt").display().to_string();
    assert_eq!(call(&host, "read_path", json!({ "path": extra_file })).await.output, "extra");

    // read-write: the writing tool writes.
    let host =
        build(dir.path(), &entry("h", HOSTILE_WASM, "filesystem = \"read-write\""), &[]).await.unwrap();
    assert!(call(&host, "write_path_rw", json!({"path": "b.txt"})).await.ok);
    assert!(dir.path().join("b.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_holds_only_granted_names_and_their_values_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let host_env = [
        ("LANG", "C.UTF-8"),
        ("GITHUB_TOKEN", "ghp_notgrantedbyglob"),
        ("MY_API_KEY", "k-1234567890-secret"),
        ("HOME", "/root"),
    ];
    let host = build(
        dir.path(),
        &entry("h", HOSTILE_WASM, "env = [\"L*\", \"*_TOKEN\", \"MY_API_KEY\"]"),
        &host_env,
    )
    .await
    .unwrap();
    let out = call(&host, "env", json!({})).await.output;
    assert!(out.contains("\"LANG=C.UTF-8\""), "{out}");
    assert!(out.contains("\"MY_API_KEY=[REDACTED]\""), "the granted secret's value is redacted: {out}");
    assert!(!out.contains("GITHUB_TOKEN"), "a glob let a secret-looking name through: {out}");
    assert!(!out.contains("HOME"), "{out}");
    assert!(!out.contains("k-1234567890-secret"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_plugin_limits_come_from_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let limits = "limits = { memory-mib = 32, timeout-ms = 300, fuel = 1000000000, output-bytes = 1000 }";
    let host = build(dir.path(), &entry("h", HOSTILE_WASM, limits), &[]).await.unwrap();
    let r = call(&host, "hog", json!({})).await;
    assert_eq!(r.code(), Some("memory_limit"), "{r:?}");
    assert!(r.error.unwrap().message.contains("32 MiB"));
    let r = call(&host, "spin", json!({})).await;
    assert!(matches!(r.code(), Some("timeout" | "fuel_exhausted")), "{r:?}");
    let r = call(&host, "big_output", json!({"bytes": 5000})).await;
    assert_eq!(r.code(), Some("output_limit"), "{r:?}");
    assert!(r.error.unwrap().message.contains("1000 bytes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_shapes_are_redacted_from_output_and_the_stored_copy() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = "aws AKIAIOSFODNN7EXAMPLE\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc\n\
                   -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----\nend\n";
    std::fs::write(dir.path().join("leak.txt"), secrets).unwrap();
    let host =
        Host::builder().work_dir(dir.path()).engine_settings(test_engine_settings()).build().await.unwrap();
    let r = call(&host, "read_file", json!({"path": "leak.txt"})).await;
    assert!(r.ok, "{r:?}");
    for secret in ["AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9", "b3BlbnNzaC1rZXktdjE"] {
        assert!(!r.output.contains(secret), "{secret} leaked: {}", r.output);
    }
    assert_eq!(r.output.matches("[REDACTED]").count(), 3, "{}", r.output);
    assert!(r.output.contains("end"));
    let again = call(&host, "read_output", json!({"call_id": r.call_id})).await;
    assert!(again.ok && !again.output.contains("AKIA"), "{again:?}");
}

#[test]
fn a_typo_in_the_policy_names_its_line() {
    let path = Path::new("/p/toolhost.toml");
    for (text, line, needle) in [
        ("[permissions]\nmode = \"default\"\nalow = []\n", 3, "unknown field `alow`"),
        ("[permissions]\nmode = \"yolo!\"\n", 2, "unknown variant `yolo!`"),
        (
            "[permissions]\ndeny = [\n  \"read_file\",\n  \"write_file(path=docs/**\",\n]\n",
            4,
            "must end with `)`",
        ),
        ("[plugins.x]\nsource = \"x.wasm\"\nsha256 = \"abc\"\n", 3, "not 64 hex digits"),
        (
            &format!(
                "[plugins.x]\nsource = \"x.wasm\"\nsha256 = \"{}\"\nnetwork = [\"http://x\"]\n",
                "a".repeat(64)
            ),
            4,
            "plugins.x.network",
        ),
        (
            &format!("[plugins.x]\nsource = \"x\"\nsha256 = \"{}\"\nfilesytem = \"read\"\n", "a".repeat(64)),
            4,
            "filesytem",
        ),
        ("[permisions]\n", 1, "unknown field `permisions`"),
    ] {
        let err = Policy::parse(text, path).unwrap_err().to_string();
        let prefix = format!("policy /p/toolhost.toml, line {line}: ");
        assert!(err.starts_with(&prefix), "{text:?}: {err}");
        assert!(err.contains(needle), "{text:?}: {err}");
    }
}

#[test]
fn a_bad_plugin_limit_names_its_key_and_line() {
    let path = Path::new("/p/toolhost.toml");
    let entry = format!("[plugins.x]\nsource = \"x.wasm\"\nsha256 = \"{}\"\n", "a".repeat(64));
    let max_mib = usize::MAX >> 20;
    let past_mib = max_mib as u64 + 1;
    let huge = format!("limits = {{ memory-mib = {past_mib} }}");
    let huge_err =
        format!("plugins.x.limits.memory-mib: {past_mib} is too large: at most {max_mib} on this host");
    for (limits, line, needle) in [
        (
            "limits = { memory-mib = 0 }",
            4,
            "plugins.x.limits.memory-mib: 0 is too small: it must be at least 1",
        ),
        ("limits = { fuel = -1 }", 4, "plugins.x.limits.fuel: -1 is too small"),
        (
            "limits = { timeout-ms = \"5s\" }",
            4,
            "plugins.x.limits.timeout-ms: expected a whole number, found string",
        ),
        (
            "limits = { output-bytes = 1.5 }",
            4,
            "plugins.x.limits.output-bytes: expected a whole number, found float",
        ),
        (&huge, 4, &huge_err),
        ("limits = { memroy-mib = 64 }", 4, "plugins.x.limits: unknown key `memroy-mib`"),
        (
            "limits = { write-mib = 0 }",
            4,
            "plugins.x.limits.write-mib: 0 is too small: it must be at least 1",
        ),
        (
            "limits = { write-mib = 1048577 }",
            4,
            "plugins.x.limits.write-mib: 1048577 is too large: at most 1048576 on this host",
        ),
        ("limits = { write-mib = -3 }", 4, "plugins.x.limits.write-mib: -3 is too small"),
        // The CLI's --clamp-bytes is not a plugin limit.
        ("limits = { clamp-bytes = 1000 }", 4, "plugins.x.limits: unknown key `clamp-bytes`"),
        ("[plugins.x.limits]\nfuel = 10\ntimeout-ms = 0", 6, "plugins.x.limits.timeout-ms: 0 is too small"),
    ] {
        let text = format!("{entry}{limits}\n");
        let err = Policy::parse(&text, path).unwrap_err().to_string();
        let prefix = format!("policy /p/toolhost.toml, line {line}: ");
        assert!(err.starts_with(&prefix), "{text:?}: {err}");
        assert!(err.contains(needle), "{text:?}: {err}");
    }
    let limits =
        "limits = { memory-mib = 64, fuel = 1_000, timeout-ms = 700_000, output-bytes = 9, write-mib = 2 }";
    let policy = Policy::parse(&format!("{entry}{limits}\n"), path).unwrap();
    let limits = policy.plugins[0].limits.apply(&toolhost::Limits::default());
    assert_eq!((limits.memory_bytes, limits.fuel, limits.output_bytes), (64 << 20, 1_000, 9));
    assert_eq!(limits.write_bytes, 2 << 20);
    assert_eq!(limits.timeout, std::time::Duration::from_millis(700_000));
    assert_eq!(limits.max_timeout, limits.timeout, "a longer deadline raises the maximum");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_messages_are_redacted_too() {
    let dir = tempfile::tempdir().unwrap();
    let host = build(dir.path(), &entry("h", HOSTILE_WASM, "filesystem = \"read\""), &[]).await.unwrap();
    // The tool's own error names the (missing) path, which is shaped like an AWS key.
    let r = call(&host, "read_path", json!({"path": "AKIAIOSFODNN7EXAMPLE.txt"})).await;
    assert_eq!(r.code(), Some("not_found"), "{r:?}");
    let message = &r.error.as_ref().unwrap().message;
    assert!(!message.contains("AKIA") && message.contains("[REDACTED]"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_create_a_policy_file() {
    // No policy at all: the work dir's toolhost.toml is still protected, so a plugin
    // can't create one there (where the next start would look for it).
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .build()
        .await
        .unwrap();
    let r = call(&host, "tamper", json!({})).await;
    assert!(!r.ok, "{r:?}");
    assert!(!dir.path().join("toolhost.toml").exists(), "the plugin created a policy file");
    assert!(call(&host, "noop", json!({})).await.ok);
}
