//! MCP servers as tool sources (issue 20): a hostile server written for these tests
//! (`tests/mcp_servers/hostile.py`) runs confined, and everything it tries is
//! contained — reads and writes outside the work dir, the host's loopback, the
//! host's environment, a process left behind, a flood, a call never answered, a
//! crash mid-call — while the host keeps serving. Its tools go through the one
//! pipeline: names, hints, whole schemas validated before the call leaves, rules on
//! its arguments, results bounded and stored. Loopback only: every name is
//! resolved by a test table, every connection recorded.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{CancellationToken, Host, Limits, Mode, NetworkSettings, Policy, ToolCall};
use toolhost_tests::net::{RecordingConnector, ScriptedResolver};
use toolhost_tests::{test_engine_settings, workspace_root};

const SECRET: &str = "s3cr3t-host-value-7f3a";
const TOKEN: &str = "granted-token-value-91c2";

fn script() -> PathBuf {
    workspace_root().join("tests/mcp_servers/hostile.py")
}

/// The entry `[servers.t]` for the hostile server, with `extra` lines.
fn entry(extra: &str) -> String {
    let script = script();
    format!(
        "[servers.t]\ncommand = [\"/usr/bin/python3\", {:?}]\nread-dirs = [{:?}]\nunpinned = true\n{extra}\n",
        script.display().to_string(),
        script.parent().unwrap().display().to_string()
    )
}

struct Setup {
    host: Host,
    work: tempfile::TempDir,
}

/// A host over a fresh work dir with the policy `policy`, the network `network`,
/// limits `limits`, a host environment holding a secret it must never show and a
/// token the entry may grant.
async fn build(policy: &str, network: NetworkSettings, limits: Limits, mode: Mode) -> Setup {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("toolhost.toml");
    let policy = Policy::parse(policy, &path).unwrap_or_else(|e| panic!("{e}"));
    let host = Host::builder()
        .work_dir(work.path())
        .limits(limits)
        .engine_settings(test_engine_settings())
        .mode(mode)
        .network(network)
        .policy(policy)
        .host_env(vec![
            ("CANARY_SECRET".into(), SECRET.into()),
            ("GRANTED_TOKEN".into(), TOKEN.into()),
            ("LANG".into(), "C.UTF-8".into()),
        ])
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Setup { host, work }
}

async fn setup(extra: &str) -> Setup {
    build(&entry(extra), NetworkSettings::default(), Limits::default(), Mode::Yolo).await
}

async fn call(host: &Host, tool: &str, args: Value) -> toolhost::ToolResult {
    host.execute(ToolCall::new(format!("mcp__t__{tool}"), args)).await
}

/// The output of a call that must succeed.
async fn ok(host: &Host, tool: &str, args: Value) -> String {
    let result = call(host, tool, args).await;
    assert!(result.ok, "{tool}: {:?}", result.error);
    result.output
}

/// The code and message of a call that must fail.
async fn fails(host: &Host, tool: &str, args: Value) -> (String, String) {
    let result = call(host, tool, args).await;
    let error = result.error.unwrap_or_else(|| panic!("{tool} succeeded: {}", result.output));
    (error.code, error.message)
}

/// Whether the process `pid` is gone (or a zombie, dead but not reaped yet).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

#[tokio::test]
async fn tools_join_the_registry_lazily_with_names_hints_and_whole_schemas() {
    let s = setup("").await;
    assert!(s.host.registry().get("mcp__t__echo").is_none(), "nothing starts at build");
    // A call naming one of its tools starts it.
    assert_eq!(ok(&s.host, "echo", json!({"text": "hi"})).await, "hi");
    let registry = s.host.registry();
    let echo = registry.get("mcp__t__echo").expect("listed");
    assert_eq!(echo.source(), "server:t");
    assert!(echo.spec().read_only && !echo.spec().destructive);
    let write = registry.get("mcp__t__write_path").unwrap();
    assert!(!write.spec().read_only && write.spec().destructive, "not read-only: destructive");
    let refs = registry.get("mcp__t__schema_ref").unwrap().spec().parameters.clone();
    assert_eq!(refs["properties"]["item"], json!({"$ref": "#/$defs/Item"}), "kept whole: {refs}");
    assert_eq!(refs["$defs"]["Item"]["oneOf"].as_array().map(Vec::len), Some(2));
    assert!(registry.get("mcp__t__far_ref").is_none(), "a remote $ref is refused at load");
    let report = s.host.server_report("t").await.unwrap();
    assert!(
        report.refused.iter().any(|r| r.tool == "far_ref" && r.why.contains("https://example.com/s.json"))
    );
    assert!(report.error.is_none(), "{:?}", report.error);
    // The builtins are still there.
    assert!(registry.get("read_file").is_some());
}

#[tokio::test]
async fn reads_and_writes_outside_the_work_dir_are_refused() {
    let s = setup("filesystem = \"read-write\"").await;
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("canary.txt");
    std::fs::write(&canary, SECRET).unwrap();
    for path in
        [canary.display().to_string(), "/etc/shadow".into(), "/root/.bashrc".into(), "/proc/1/environ".into()]
    {
        let out = ok(&s.host, "read_path", json!({"where": path})).await;
        assert!(out.starts_with("refused:"), "{path}: {out}");
        assert!(!out.contains(SECRET), "{out}");
    }
    let target = outside.path().join("planted.txt");
    let out = ok(&s.host, "write_path", json!({"where": target.display().to_string(), "text": "x"})).await;
    assert!(out.starts_with("refused:"), "{out}");
    assert!(!target.exists(), "written outside the work dir");
    // A path-named argument outside the work dir is refused before it runs, as for
    // every tool that is not read-only.
    let (code, message) = fails(&s.host, "write_work", json!({"name": "x", "path": "/etc/x"})).await;
    assert_eq!(code, "permission_denied", "{message}");
    std::fs::write(&canary, "changed?").unwrap();
    let out = ok(&s.host, "write_path", json!({"where": canary.display().to_string(), "text": "x"})).await;
    assert!(out.starts_with("refused:"), "{out}");
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "changed?");
    // Inside the work dir it may write (its grant says read-write).
    assert_eq!(ok(&s.host, "write_work", json!({"name": "made.txt", "text": "ok"})).await, "written");
    assert_eq!(std::fs::read_to_string(s.work.path().join("made.txt")).unwrap(), "ok");
}

#[tokio::test]
async fn a_read_only_tool_of_a_writing_server_cannot_write() {
    let s = setup("filesystem = \"read-write\"").await;
    let out = ok(&s.host, "write_work_ro", json!({"name": "sneaky.txt", "text": "x"})).await;
    assert!(out.starts_with("refused:"), "{out}");
    assert!(!s.work.path().join("sneaky.txt").exists());
    // It ran in an instance of its own: the read-only one.
    let main = ok(&s.host, "pid", json!({})).await;
    let write = ok(&s.host, "write_work", json!({"name": "w.txt"})).await;
    assert_eq!(write, "written");
    let report = s.host.server_report("t").await.unwrap();
    let pid_tool = report.tools.iter().find(|t| t.remote == "pid").unwrap();
    assert_eq!(pid_tool.instance, "read-only");
    assert!(report.sandbox.iter().any(|l| l.contains("second instance")), "{:?}", report.sandbox);
    assert!(main.parse::<u32>().is_ok());
    // A read-only server has one instance, read-only.
    let s = setup("").await;
    let out = ok(&s.host, "write_work", json!({"name": "w.txt"})).await;
    assert!(out.starts_with("refused:"), "{out}");
}

#[tokio::test]
async fn without_a_network_grant_there_is_no_network_at_all() {
    let s = setup("").await;
    let canary = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    canary.set_nonblocking(true).unwrap();
    let port = canary.local_addr().unwrap().port().to_string();
    for host in ["127.0.0.1", "localhost", "::1"] {
        let out = ok(&s.host, "connect", json!({"host": host, "port": port})).await;
        assert!(out.starts_with("refused:"), "{host}: {out}");
    }
    let out = ok(&s.host, "proxy_connect", json!({"host": "127.0.0.1", "port": port})).await;
    assert_eq!(out, "no proxy");
    assert!(canary.accept().is_err(), "the canary was reached");
}

#[tokio::test]
async fn the_proxy_vets_every_target_and_connects_only_to_vetted_addresses() {
    let canary = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let canary_addr: SocketAddr = canary.local_addr().unwrap();
    let port = canary_addr.port().to_string();
    let resolver = ScriptedResolver::default()
        .with("allowed.test", &["93.184.216.34"])
        .with("rebind.test", &["127.0.0.1"])
        .with("other.test", &["93.184.216.35"]);
    let connector = Arc::new(RecordingConnector::default().map("93.184.216.34", canary_addr));
    let network = NetworkSettings {
        resolver: Arc::new(resolver),
        connector: connector.clone(),
        ..NetworkSettings::default()
    };
    let policy = entry("network = [\"allowed.test\", \"rebind.test\"]");
    let s = build(&policy, network, Limits::default(), Mode::Yolo).await;
    let answer = |host: &str| json!({"host": host, "port": port, "send": "ping"});
    let out = ok(&s.host, "proxy_connect", answer("other.test")).await;
    assert!(out.starts_with("HTTP/1.1 403") && out.contains("host_not_allowed"), "{out}");
    let out = ok(&s.host, "proxy_connect", answer("rebind.test")).await;
    assert!(out.starts_with("HTTP/1.1 403") && out.contains("blocked_url"), "{out}");
    let out = ok(&s.host, "proxy_connect", answer("127.0.0.1")).await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    let out = ok(&s.host, "proxy_connect", answer("localhost")).await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    // Direct, even with a grant: its own namespace, nothing on that port.
    let out = ok(&s.host, "connect", json!({"host": "127.0.0.1", "port": port})).await;
    assert!(out.starts_with("refused:"), "{out}");
    assert_eq!(connector.attempts(), Vec::<SocketAddr>::new(), "nothing was connected for a refused target");
    // The granted name goes through, to its vetted address only.
    let accepted = std::thread::spawn(move || {
        let (mut stream, _) = canary.accept().unwrap();
        use std::io::{Read, Write};
        let mut buf = [0u8; 4];
        stream.read_exact(&mut buf).unwrap();
        stream.write_all(b"pong").unwrap();
        buf
    });
    let out = ok(&s.host, "proxy_connect", answer("allowed.test")).await;
    assert!(out.starts_with("HTTP/1.1 200") && out.ends_with("pong"), "{out}");
    assert_eq!(&accepted.join().unwrap(), b"ping");
    let vetted: SocketAddr = format!("93.184.216.34:{port}").parse().unwrap();
    assert_eq!(connector.attempts(), vec![vetted]);
    connector.assert_no_violation();
}

#[tokio::test]
async fn the_host_environment_does_not_reach_it_and_granted_values_are_redacted() {
    let s = setup("env = [\"GRANTED_TOKEN\"]").await;
    let out = ok(&s.host, "env", json!({})).await;
    let env: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let names: Vec<&str> = env.as_object().unwrap().keys().map(String::as_str).collect();
    assert!(!out.contains(SECRET) && !names.contains(&"CANARY_SECRET"), "{out}");
    assert!(names.contains(&"GRANTED_TOKEN"), "{names:?}");
    assert!(!out.contains(TOKEN), "a granted value is redacted: {out}");
    for name in names {
        assert!(
            ["PATH", "HOME", "TMPDIR", "LANG", "GRANTED_TOKEN", "LC_CTYPE"].contains(&name),
            "{name} reached the server"
        );
    }
}

#[tokio::test]
async fn a_process_it_leaves_behind_dies_with_the_host() {
    let s = setup("").await;
    let pid: u32 = ok(&s.host, "fork_survivor", json!({})).await.trim().parse().unwrap();
    assert!(!dead(pid), "the survivor should live while its server does");
    drop(s);
    let end = Instant::now() + Duration::from_secs(5);
    while !dead(pid) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dead(pid), "process {pid} survived the host");
}

#[tokio::test]
async fn a_flood_is_cut_with_a_clean_error_and_the_server_restarts() {
    let limits = Limits { output_bytes: 64 << 10, ..Limits::default() };
    let s = build(&entry(""), NetworkSettings::default(), limits, Mode::Yolo).await;
    let before = ok(&s.host, "pid", json!({})).await;
    let (code, message) = fails(&s.host, "flood", json!({"bytes": 1 << 24})).await;
    assert_eq!(code, "server_failed", "{message}");
    assert!(message.contains("more than") && message.contains("without ending it"), "{message}");
    let after = ok(&s.host, "pid", json!({})).await;
    assert_ne!(before, after, "a new instance");
    // A big answer within the message bound is bounded by the pipeline instead.
    let (code, _) = fails(&s.host, "big", json!({"bytes": "200000"})).await;
    assert_eq!(code, "output_limit");
    // stderr goes to the log, bounded; the host keeps serving.
    assert_eq!(ok(&s.host, "flood_stderr", json!({"lines": "20000"})).await, "flooded stderr");
    let read = s.host.execute(ToolCall::new("list_dir", json!({"path": "."}))).await;
    assert!(read.ok, "{:?}", read.error);
}

#[tokio::test]
async fn a_call_never_answered_times_out_or_is_cancelled_and_upstream_is_told() {
    let limits = Limits { timeout: Duration::from_millis(1500), ..Limits::default() };
    let s = build(&entry(""), NetworkSettings::default(), limits, Mode::Yolo).await;
    let started = Instant::now();
    let (code, _) = fails(&s.host, "hang", json!({})).await;
    assert_eq!(code, "timeout");
    assert!(started.elapsed() < Duration::from_secs(10));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let result = s.host.execute(ToolCall::new("mcp__t__hang", json!({})).with_cancel(cancel)).await;
    assert_eq!(result.code(), Some("cancelled"));
    // Both requests were cancelled upstream (notifications/cancelled).
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let seen: Vec<Value> = serde_json::from_str(&ok(&s.host, "cancelled", json!({})).await).unwrap();
        if seen.len() >= 2 {
            break;
        }
        assert!(Instant::now() < end, "the server was told of {} cancellations", seen.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_crash_mid_call_is_a_clean_error_then_a_restart() {
    let s = setup("").await;
    let first = ok(&s.host, "pid", json!({})).await;
    let (code, message) = fails(&s.host, "crash", json!({})).await;
    assert_eq!(code, "server_failed");
    assert!(message.contains("exited with status 3") && message.contains("started again"), "{message}");
    let second = ok(&s.host, "pid", json!({})).await;
    assert_ne!(first, second);
    assert!(dead(first.parse().unwrap()));
    assert_eq!(ok(&s.host, "echo", json!({"text": "still here"})).await, "still here");
}

#[tokio::test]
async fn its_limits_hold_memory_processes_and_its_own_deadline() {
    let s = setup("limits = { memory-mib = 512, processes = 8, timeout-ms = 800 }").await;
    let out = ok(&s.host, "alloc", json!({"mib": "2048"})).await;
    assert!(out.starts_with("refused: MemoryError"), "{out}");
    assert_eq!(ok(&s.host, "alloc", json!({"mib": "16"})).await, "allocated 16 MiB");
    let out = ok(&s.host, "spawn_many", json!({"count": "64"})).await;
    let got = out.strip_prefix("refused: OSError: after ").unwrap_or_else(|| panic!("{out}"));
    let got: usize = got.split(':').next().unwrap().parse().unwrap();
    assert!(got < 8, "{got} processes besides the server's own");
    // Its entry's deadline, not the host's 30 s.
    let started = Instant::now();
    let (code, _) = fails(&s.host, "hang", json!({})).await;
    assert_eq!(code, "timeout");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(s.host.registry().get("mcp__t__hang").unwrap().spec().timeout_ms, Some(800));
    assert_eq!(ok(&s.host, "echo", json!({"text": "alive"})).await, "alive");
}

#[tokio::test]
async fn its_cpu_seconds_run_out_then_it_restarts() {
    let s = setup("limits = { cpu-seconds = 1 }").await;
    let first = ok(&s.host, "pid", json!({})).await;
    let (code, message) = fails(&s.host, "spin", json!({})).await;
    assert_eq!(code, "server_failed", "{message}");
    assert!(message.contains("SIGXCPU") || message.contains("SIGKILL"), "{message}");
    let second = ok(&s.host, "pid", json!({})).await;
    assert_ne!(first, second, "a new instance");
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_server() {
    let s = setup("").await;
    let bad = [
        json!({}),
        json!({"item": {"kind": "n", "n": 0}}),
        json!({"item": {"kind": "s", "s": "toolong"}}),
        json!({"item": {"kind": "n", "n": 1, "extra": true}}),
        json!({"item": {"kind": "x"}}),
        json!({"item": 3, "other": 1}),
    ];
    for args in bad {
        let (code, message) = fails(&s.host, "schema_ref", args.clone()).await;
        assert_eq!(code, "invalid_args", "{args}: {message}");
    }
    let out = ok(&s.host, "schema_ref", json!({"item": {"kind": "n", "n": "2"}})).await;
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({"item": {"kind": "n", "n": 2}}));
    let seen: Value = serde_json::from_str(&ok(&s.host, "seen", json!({})).await).unwrap();
    assert_eq!(seen["schema_ref"], 1, "only the valid call reached it: {seen}");
}

#[tokio::test]
async fn results_are_flattened_bounded_stored_and_errors_are_tool_errors() {
    let s = setup("").await;
    let result = call(&s.host, "big", json!({"bytes": "200000"})).await;
    assert!(result.ok && result.omitted.is_some(), "cut: {:?}", result.error);
    assert!(result.output.contains("read_output"));
    let stored = s
        .host
        .execute(ToolCall::new("read_output", json!({"call_id": result.call_id, "pattern": "line 0015000"})))
        .await;
    assert!(stored.ok && stored.output.contains("line 0015000"), "{:?} {}", stored.error, stored.output);
    let result = call(&s.host, "image", json!({})).await;
    assert!(result.ok, "{:?}", result.error);
    assert_eq!(result.output, "a dot");
    assert_eq!(result.image.as_ref().map(|i| i.mime_type.as_str()), Some("image/png"));
    assert_eq!(result.metadata.as_ref().unwrap()["structured_content"], json!({"width": 1, "height": 1}));
    let (code, message) = fails(&s.host, "fail", json!({})).await;
    assert_eq!((code.as_str(), message.as_str()), ("tool_error", "no such thing"));
}

#[tokio::test]
async fn list_changed_updates_the_registry() {
    let s = setup("").await;
    s.host.start_servers().await;
    let mut changes = s.host.tools_changed().unwrap();
    changes.borrow_and_update();
    assert!(s.host.registry().get("mcp__t__extra").is_none());
    assert_eq!(ok(&s.host, "change_tools", json!({})).await, "changed");
    tokio::time::timeout(Duration::from_secs(5), changes.changed()).await.unwrap().unwrap();
    assert!(s.host.registry().get("mcp__t__extra").is_some_and(|t| t.spec().read_only));
    assert_eq!(ok(&s.host, "extra", json!({})).await, "extra ran");
}

#[tokio::test]
async fn rules_and_modes_decide_from_the_policy_not_the_hints() {
    let policy = format!("{}\n[permissions]\ndeny = [\"mcp__t__*(where=/etc/*)\"]\n", entry(""));
    let s = build(&policy, NetworkSettings::default(), Limits::default(), Mode::Default).await;
    let (code, message) = fails(&s.host, "read_path", json!({"where": "/etc/hostname"})).await;
    assert_eq!(code, "permission_denied", "{message}");
    // Read-only by its hint: runs unasked in default mode.
    assert_eq!(ok(&s.host, "echo", json!({"text": "a"})).await, "a");
    // Not read-only: needs an approval, and headless nobody answers.
    let (code, _) = fails(&s.host, "write_work", json!({"name": "x"})).await;
    assert_eq!(code, "permission_denied");
    let s = build(&entry(""), NetworkSettings::default(), Limits::default(), Mode::Plan).await;
    let (code, _) = fails(&s.host, "write_work", json!({"name": "x"})).await;
    assert_eq!(code, "permission_denied");
}

#[tokio::test]
async fn a_changed_entry_file_or_a_broken_entry_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("server.py");
    std::fs::copy(script(), &copy).unwrap();
    let pin = toolhost::server_command::sha256_file(&copy).unwrap();
    let policy = format!(
        "[servers.t]\ncommand = [\"/usr/bin/python3\", {:?}]\nread-dirs = [{:?}]\nsha256 = \"{pin}\"\nunpinned = true\n",
        copy.display().to_string(),
        dir.path().display().to_string()
    );
    let s = build(&policy, NetworkSettings::default(), Limits::default(), Mode::Yolo).await;
    assert_eq!(ok(&s.host, "echo", json!({"text": "pinned"})).await, "pinned");
    drop(s);
    std::fs::write(&copy, std::fs::read_to_string(script()).unwrap() + "\n# changed\n").unwrap();
    let s = build(&policy, NetworkSettings::default(), Limits::default(), Mode::Yolo).await;
    let (code, message) = fails(&s.host, "echo", json!({"text": "x"})).await;
    assert_eq!(code, "server_failed");
    assert!(message.contains("identity_mismatch") && message.contains(&pin), "{message}");

    let broken = "[servers.t]\ncommand = [\"no-such-program-7\"]\n";
    let s = build(broken, NetworkSettings::default(), Limits::default(), Mode::Yolo).await;
    let (code, message) = fails(&s.host, "anything", json!({})).await;
    assert_eq!(code, "server_failed");
    assert!(message.contains("no program `no-such-program-7`"), "{message}");
    let quits = "[servers.t]\ncommand = [\"/bin/sh\", \"-c\", \"echo bye >&2; exit 1\"]\nunpinned = true\n";
    let s = build(quits, NetworkSettings::default(), Limits::default(), Mode::Yolo).await;
    let (code, message) = fails(&s.host, "anything", json!({})).await;
    assert_eq!(code, "server_failed");
    assert!(message.contains("exited with status 1") && message.contains("bye"), "{message}");
    // The host keeps serving its other tools.
    assert!(s.host.execute(ToolCall::new("list_dir", json!({"path": "."}))).await.ok);
    assert!(s.host.start_servers().await.len() == 1);
}

#[tokio::test]
async fn a_published_server_runs_confined_and_answers() {
    let dir = workspace_root().join("target/toolchains/mcp-servers/node_modules");
    let index = dir.join("@modelcontextprotocol/server-memory/dist/index.js");
    assert!(
        index.is_file(),
        "{} is missing: install it with ./scripts/mcp-servers (./scripts/test and .ci/run do)",
        index.display()
    );
    let pin = toolhost::server_command::sha256_file(&index).unwrap();
    let package = toolhost::server_command::Manifest::walk(&dir, &Default::default()).unwrap().digest();
    let policy = format!(
        "[servers.memory]\ncommand = [\"node\", {:?}]\nsha256 = \"{pin}\"\nread-dirs = [{:?}]\n\
         filesystem = \"read-write\"\nenv = [\"MEMORY_FILE_PATH\"]\npackage = {:?}\npackage-sha256 = \"{package}\"\n",
        index.display().to_string(),
        dir.display().to_string(),
        dir.display().to_string()
    );
    let work = tempfile::tempdir().unwrap();
    let memory = work.path().canonicalize().unwrap().join("memory.jsonl");
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .policy(Policy::parse(&policy, &work.path().join("toolhost.toml")).unwrap())
        .host_env(vec![("MEMORY_FILE_PATH".into(), memory.display().to_string())])
        .build()
        .await
        .unwrap();
    let failed = host.start_servers().await;
    assert!(failed.is_empty(), "{failed:?}");
    let create = host.registry().get("mcp__memory__create_entities").expect("listed").clone();
    assert!(!create.spec().read_only);
    let args =
        json!({"entities": [{"name": "toolhost", "entityType": "project", "observations": ["runs tools"]}]});
    let result = host.execute(ToolCall::new("mcp__memory__create_entities", args)).await;
    assert!(result.ok, "{:?}", result.error);
    assert!(memory.is_file(), "it wrote its file in the work dir");
    let result = host.execute(ToolCall::new("mcp__memory__read_graph", json!({}))).await;
    assert!(result.ok && result.output.contains("runs tools"), "{:?} {}", result.error, result.output);
    // Its schema is validated here: a call it would refuse never leaves the host.
    let bad = host.execute(ToolCall::new("mcp__memory__create_entities", json!({"entities": "x"}))).await;
    assert_eq!(bad.code(), Some("invalid_args"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_is_reached_through_the_pinned_client_only() {
    // Another toolhost serves its builtins over Streamable HTTP on loopback.
    let far = tempfile::tempdir().unwrap();
    std::fs::write(far.path().join("note.txt"), "far away").unwrap();
    let remote = Host::builder()
        .work_dir(far.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .build()
        .await
        .unwrap();
    let mut settings = toolhost::HttpSettings::new("127.0.0.1:0".parse().unwrap());
    settings.token = Some(toolhost::BearerToken::new(TOKEN).unwrap());
    let server =
        toolhost::HttpServer::bind(toolhost::ToolhostServer::new(Arc::new(remote)), settings).await.unwrap();
    let url = format!("http://{}/mcp", server.local_addr());
    let serving = tokio::spawn(server.run());
    let policy =
        format!("[servers.far]\nurl = \"{url}\"\nenv = [\"GRANTED_TOKEN\"]\ntoken-env = \"GRANTED_TOKEN\"\n");
    // Loopback is a private target: refused unless the host's opt-out is on.
    let s = build(&policy, NetworkSettings::default(), Limits::default(), Mode::Yolo).await;
    let result = s.host.execute(ToolCall::new("mcp__far__read_file", json!({"path": "note.txt"}))).await;
    let message = result.error.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.starts_with("server_failed") && message.contains("blocked_url"), "{message}");
    let network = NetworkSettings { allow_private: true, ..NetworkSettings::default() };
    let s = build(&policy, network.clone(), Limits::default(), Mode::Yolo).await;
    let result = s.host.execute(ToolCall::new("mcp__far__read_file", json!({"path": "note.txt"}))).await;
    assert!(result.ok && result.output.contains("far away"), "{:?} {}", result.error, result.output);
    assert_eq!(s.host.registry().get("mcp__far__read_file").unwrap().source(), "server:far");
    // Without the token (a policy that grants none) the endpoint refuses it.
    let s = build(&format!("[servers.far]\nurl = \"{url}\"\n"), network, Limits::default(), Mode::Yolo).await;
    let result = s.host.execute(ToolCall::new("mcp__far__read_file", json!({"path": "note.txt"}))).await;
    let message = result.error.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.starts_with("server_failed") && message.contains("401"), "{message}");
    serving.abort();
}

/// The `toolhost` binary with the tests' config and data dirs on `work`
/// ([`toolhost_tests::toolhost_on`]), the tokens the servers' policies name set.
fn toolhost(work: &std::path::Path, args: &[&str]) -> std::process::Output {
    toolhost_tests::toolhost_on(work, args)
        .env("GRANTED_TOKEN", TOKEN)
        .env("CANARY_SECRET", SECRET)
        .output()
        .expect("running toolhost")
}

#[tokio::test(flavor = "multi_thread")]
async fn add_server_pins_the_entry_file_and_inspect_shows_the_sandbox() {
    let work = tempfile::tempdir().unwrap();
    let script = script();
    let out = toolhost(
        work.path(),
        &[
            "add-server",
            "t",
            "--filesystem",
            "read-write",
            "--env",
            "GRANTED_TOKEN",
            "--",
            "/usr/bin/python3",
            &script.display().to_string(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("mcp__t__echo (read-only, in the read-only instance"), "{stdout}");
    let text = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    let pin = toolhost::server_command::sha256_file(&script).unwrap();
    assert!(text.contains(&format!("sha256 = \"{pin}\"")), "{text}");
    assert!(text.contains(&format!("read-dirs = [\"{}\"]", script.parent().unwrap().display())), "{text}");

    let out = toolhost(work.path(), &["inspect", "--server", "t"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "transport: stdio: /usr/bin/python3",
        "network: none",
        "env: GRANTED_TOKEN",
        "second instance",
        "far_ref:",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    // The entry works from the policy it wrote.
    let out =
        toolhost(work.path(), &["call", "mcp__t__echo", r#"{"text": "from the cli"}"#, "--mode", "yolo"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "from the cli\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = toolhost(work.path(), &["inspect", "--server", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no [servers.nope] entry"));
    let out = toolhost(work.path(), &["add-server", "bad", "--", "no-such-program-7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no program `no-such-program-7`"));
}

/// Tells the test when the server's tool list changed.
#[derive(Clone)]
struct Watcher(Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.notify_one();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_starts_servers_lazily_or_eagerly_and_forwards_list_changed() {
    use rmcp::ServiceExt;
    for eager in [false, true] {
        let (work, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let policy = entry("filesystem = \"read-write\"\nenv = [\"HOSTILE_MARK\"]");
        // Outside the work dir: the user's own file, believed as it is.
        let policy_file = outside.path().join("policy.toml");
        std::fs::write(&policy_file, &policy).unwrap();
        let mut cmd = tokio::process::Command::new(toolhost_tests::toolhost_bin());
        cmd.arg("serve").arg("--work-dir").arg(work.path()).arg("--policy").arg(&policy_file);
        cmd.args(["--mode", "yolo"]).args(if eager { &["--eager"][..] } else { &[] });
        cmd.env("HOSTILE_MARK", "started.txt")
            .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
            .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
            .env("TOOLHOST_CACHE_DIR", workspace_root().join("target/test-compile-cache"))
            .env_remove("TOOLHOST_LOG")
            .kill_on_drop(true);
        let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let changed = Arc::new(tokio::sync::Notify::new());
        let client = Watcher(changed.clone()).serve(transport).await.expect("initialize");
        let mark = work.path().join("started.txt");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(mark.exists(), eager, "eager {eager}: started before any tools/list");
        let tools = client.list_all_tools().await.unwrap();
        assert!(mark.exists(), "tools/list starts it");
        assert!(tools.iter().any(|t| t.name == "mcp__t__echo"), "{tools:?}");
        let echo = tools.iter().find(|t| t.name == "mcp__t__echo").unwrap();
        assert_eq!(echo.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
        let params = rmcp::model::CallToolRequestParams::new("mcp__t__change_tools");
        let result = client.call_tool(params).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        // A notification may still be on its way from the lazy start's own change:
        // wait for the one after which the list holds the new tool.
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            tokio::time::timeout(left, changed.notified()).await.expect("list_changed forwarded");
            let tools = client.list_all_tools().await.unwrap();
            if tools.iter().any(|t| t.name == "mcp__t__extra") {
                break;
            }
        }
        client.cancel().await.unwrap();
    }
}

/// Reads SSE `data:` frames from a streaming answer, as JSON.
struct Frames {
    response: reqwest::Response,
    buffer: String,
}

impl Frames {
    /// The next frame, or `None` when the stream ends or `patience` runs out.
    async fn next(&mut self, patience: Duration) -> Option<Value> {
        let end = Instant::now() + patience;
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..at + 2).collect();
                let data: String = event.lines().filter_map(|l| l.strip_prefix("data:")).collect();
                match serde_json::from_str(data.trim()) {
                    Ok(frame) => return Some(frame),
                    Err(_) => continue, // a priming event without JSON
                }
            }
            let left = end.saturating_duration_since(Instant::now());
            let chunk = tokio::time::timeout(left, self.response.chunk()).await.ok()?.ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_listen_stream_gets_the_servers_list_changes_and_only_those_asked_for() {
    use toolhost_tests::servers::{Instance, MODERN, modern_body, modern_request};
    let (work, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let policy_file = outside.path().join("policy.toml");
    std::fs::write(&policy_file, entry("")).unwrap();
    let policy = policy_file.to_str().unwrap();
    let server =
        Instance::start("listen", work.path(), &["--policy", policy, "--mode", "yolo", "--eager"]).await;
    let client = toolhost_tests::servers::http_client().build().unwrap();
    let discover = modern_request(&client, &server.url(), 1, "server/discover", json!({})).await.unwrap();
    assert_eq!(discover["result"]["capabilities"]["tools"]["listChanged"], true, "{discover}");
    let listen = |id: u64, filter: Value| {
        let body = modern_body(id, "subscriptions/listen", json!({ "notifications": filter }));
        client
            .post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "subscriptions/listen")
            .body(body.to_string())
            .send()
    };
    let mut tools = Frames {
        response: listen(2, json!({"toolsListChanged": true})).await.unwrap(),
        buffer: String::new(),
    };
    let mut prompts = Frames {
        response: listen(3, json!({"promptsListChanged": true})).await.unwrap(),
        buffer: String::new(),
    };
    for (stream, id) in [(&mut tools, 2), (&mut prompts, 3)] {
        let ack = stream.next(Duration::from_secs(10)).await.expect("an acknowledgment");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id, "{ack}");
    }
    let args = json!({"name": "mcp__t__change_tools", "arguments": {}});
    let answer = modern_request(&client, &server.url(), 4, "tools/call", args).await.unwrap();
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let change = tools.next(Duration::from_secs(10)).await.expect("tools/list_changed on the stream");
    assert_eq!(change["method"], "notifications/tools/list_changed", "{change}");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2, "{change}");
    assert_eq!(prompts.next(Duration::from_millis(500)).await, None, "only what was asked for");
    let listed = modern_request(&client, &server.url(), 5, "tools/list", json!({})).await.unwrap();
    assert!(listed.to_string().contains("mcp__t__extra"), "{listed}");
}
