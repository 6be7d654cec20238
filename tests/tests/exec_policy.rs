//! The exec parts of the policy and the host-implemented tools that use them:
//! `[plugins.NAME] exec`, `[builtins]` (env, reveal, exec), `[exec]` limits and the
//! fail-closed sandbox, `[tests.NAME]` profiles run by `run_tests`, `env_get` and
//! `process_list`. The hostile side of exec (what a child can and cannot reach) is
//! in `exec.rs`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost::{ExecGrant, ExecSettings};
use toolhost::{Host, LoadError, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::{EXEC_WASM, test_engine_settings};

fn sha256_of(path: &str) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

fn builder(dir: &Path, policy: &str, env: &[(&str, &str)]) -> Result<toolhost::HostBuilder, LoadError> {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).unwrap();
    Ok(Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .host_env(env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .policy(Policy::load(&path)?))
}

async fn build(dir: &Path, policy: &str, env: &[(&str, &str)]) -> Result<Host, LoadError> {
    builder(dir, policy, env)?.build().await
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn error_text(result: &ToolResult) -> String {
    result.error.as_ref().map(|e| e.message.clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_entry_grants_exec_by_program_name() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |exec: &str| {
        format!(
            "[plugins.runner]\nsource = {EXEC_WASM:?}\nsha256 = \"{}\"\nfilesystem = \"read-write\"\n{exec}\n",
            sha256_of(EXEC_WASM)
        )
    };
    // Without an exec grant the component is refused, naming the key.
    let err = build(dir.path(), &entry(""), &[]).await.err().expect("refused");
    let text = err.to_string();
    assert!(text.starts_with("capability_denied: toolhost:plugin/exec"), "{text}");
    assert!(text.contains("plugins.runner.exec"), "{text}");

    let host = build(dir.path(), &entry("exec = { programs = [\"echo\"] }"), &[]).await.unwrap();
    let ok = call(&host, "spawn", json!({"program": "echo", "args": ["granted"]})).await;
    assert!(ok.ok, "{:?}", ok.error);
    assert!(ok.output.contains("granted"), "{}", ok.output);
    let refused = call(&host, "spawn", json!({"program": "cat", "args": ["/etc/hostname"]})).await;
    assert_eq!(refused.code(), Some("program_not_allowed"));
    let shell = call(&host, "spawn", json!({"shell": "echo hi"})).await;
    assert_eq!(shell.code(), Some("shell_not_allowed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_exec_policies_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolhost.toml");
    let cases = [
        ("[builtins]\nexec = { programs = [\"../bin/sh\"] }\n", 2, "not a program name"),
        ("[builtins]\nexec = { programs = [\"git\"], sudo = true }\n", 2, "unknown field"),
        ("\n[exec]\nmax-children = \"four\"\n", 3, "invalid type"),
        ("[exec]\nlimits = { cpu = 5 }\n", 2, "unknown field"),
        ("[tests.unit]\ncommand = \"/usr/bin/make\"\n", 2, "not a program name"),
        ("[tests.unit]\ncommand = \"make\"\ncwd = \"../elsewhere\"\n", 3, "inside the work dir"),
        ("[tests.unit]\nargs = [\"test\"]\n", 1, "missing field `command`"),
    ];
    for (text, line, needle) in cases {
        let err = Policy::parse(text, &path).expect_err(text).to_string();
        assert!(err.contains(&format!("line {line}:")) && err.contains(needle), "{text:?} → {err}");
    }
}

const TESTS_POLICY: &str = r#"
[tests.unit]
command = "sh"
args = ["-c", "echo running \"$0\"; test \"$0\" != fail"]
filter = true

[tests.slow]
command = "sleep"
args = ["2"]

[tests.fast]
command = "true"
timeout-ms = 20000
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_runs_only_declared_profiles_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let host = std::sync::Arc::new(build(dir.path(), TESTS_POLICY, &[]).await.unwrap());
    let spec = host.registry().get("run_tests").expect("registered when profiles exist").spec().clone();
    assert_eq!(spec.parameters["properties"]["profile"]["enum"], json!(["fast", "slow", "unit"]));

    let passed = call(&host, "run_tests", json!({"profile": "unit", "filter": "smoke"})).await;
    assert!(passed.ok, "{:?}", passed.error);
    assert!(passed.output.starts_with("PASSED (exit 0"), "{}", passed.output);
    assert!(passed.output.contains("running smoke"), "{}", passed.output);
    assert_eq!(passed.metadata.as_ref().unwrap()["passed"], true);

    let failed = call(&host, "run_tests", json!({"profile": "unit", "filter": "fail"})).await;
    assert_eq!(failed.code(), Some("tests_failed"));
    assert!(
        error_text(&failed).starts_with("FAILED (exit 1") && error_text(&failed).contains("running fail")
    );

    // The filter is one argument, never an option, and only where the profile allows.
    let option = call(&host, "run_tests", json!({"profile": "unit", "filter": "--nocapture"})).await;
    assert_eq!(option.code(), Some("invalid_args"), "{:?}", option.error);
    let no_filter = call(&host, "run_tests", json!({"profile": "fast", "filter": "x"})).await;
    assert_eq!(no_filter.code(), Some("invalid_args"));
    let unknown = call(&host, "run_tests", json!({"profile": "rm -rf"})).await;
    assert_eq!(unknown.code(), Some("invalid_args"));
    let unnamed = call(&host, "run_tests", json!({})).await;
    assert_eq!(unnamed.code(), Some("invalid_args"), "three profiles: one must be named");

    // A second run while one is in progress is refused, and the first still finishes.
    let first = tokio::spawn({
        let host = host.clone();
        async move { call(&host, "run_tests", json!({"profile": "slow"})).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = call(&host, "run_tests", json!({"profile": "fast"})).await;
    assert_eq!(second.code(), Some("run_tests_busy"), "{:?}", second.error);
    assert!(first.await.unwrap().ok);
    assert!(call(&host, "run_tests", json!({"profile": "fast"})).await.ok);

    // The runs are in process_list, with how they ended.
    let procs = call(&host, "process_list", json!({"filter": "sleep"})).await;
    assert!(procs.ok);
    assert!(procs.output.contains("exited 0") && procs.output.contains("sleep 2"), "{}", procs.output);
    let running = call(&host, "process_list", json!({"running_only": true})).await;
    assert!(running.output.contains("no processes"), "{}", running.output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_is_absent_without_profiles_and_times_out_with_the_log_tail() {
    let dir = tempfile::tempdir().unwrap();
    let host = build(dir.path(), "", &[]).await.unwrap();
    assert!(host.registry().get("run_tests").is_none());

    let policy =
        "[tests.hang]\ncommand = \"sh\"\nargs = [\"-c\", \"echo started; sleep 30\"]\ntimeout-ms = 500\n";
    let host = build(dir.path(), policy, &[]).await.unwrap();
    let started = std::time::Instant::now();
    let result = call(&host, "run_tests", json!({})).await;
    assert_eq!(result.code(), Some("timeout"));
    assert!(error_text(&result).contains("started"), "{}", error_text(&result));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_whose_program_or_cwd_is_missing_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = "[tests.gone]\ncommand = \"no-such-test-runner-xyz\"\n\n[tests.nowhere]\ncommand = \"true\"\ncwd = \"missing\"\n";
    let host = build(dir.path(), policy, &[]).await.unwrap();
    let gone = call(&host, "run_tests", json!({"profile": "gone"})).await;
    assert_eq!(gone.code(), Some("program_not_allowed"), "{:?}", gone.error);
    assert!(error_text(&gone).contains("not installed"), "{}", error_text(&gone));
    let nowhere = call(&host, "run_tests", json!({"profile": "nowhere"})).await;
    assert_eq!(nowhere.code(), Some("bad_cwd"), "{:?}", nowhere.error);
    assert!(error_text(&nowhere).contains("missing"), "{}", error_text(&nowhere));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_get_shows_granted_names_and_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let policy =
        "[builtins]\nenv = [\"LANG\", \"APP_*\", \"DEPLOY_KEY\", \"API_TOKEN\"]\nreveal = [\"DEPLOY_KEY\"]\n";
    let env = [
        ("LANG", "en_GB.UTF-8"),
        ("APP_MODE", "debug"),
        ("APP_SECRET", "globs-never-pass-this"),
        ("API_TOKEN", "tok-123456"),
        ("DEPLOY_KEY", "shown-by-policy"),
        ("AWS_SECRET_ACCESS_KEY", "never-granted"),
    ];
    let host = build(dir.path(), policy, &env).await.unwrap();
    let all = call(&host, "env_get", json!({})).await;
    assert!(all.ok, "{:?}", all.error);
    let out = &all.output;
    assert!(out.contains("LANG=en_GB.UTF-8") && out.contains("APP_MODE=debug"), "{out}");
    assert!(out.contains("API_TOKEN=<redacted: 10 chars>"), "{out}");
    assert!(out.contains("DEPLOY_KEY=shown-by-policy"), "{out}");
    for hidden in ["globs-never-pass-this", "tok-123456", "never-granted", "APP_SECRET", "AWS_SECRET"] {
        assert!(!out.contains(hidden), "{hidden} leaked: {out}");
    }
    let asked = call(&host, "env_get", json!({"names": ["AWS_SECRET_ACCESS_KEY", "LANG"]})).await;
    assert!(asked.output.contains("AWS_SECRET_ACCESS_KEY: not set or not granted"), "{}", asked.output);
    assert!(!asked.output.contains("never-granted"));
    let prefixed = call(&host, "env_get", json!({"prefix": "APP_"})).await;
    assert_eq!(prefixed.output.trim(), "APP_MODE=debug");

    // The builtins' children see the same granted variables, and nothing else.
    let shown =
        call(&host, "terminal", json!({"command": "echo mode=$APP_MODE aws=$AWS_SECRET_ACCESS_KEY"})).await;
    assert!(shown.ok, "{:?}", shown.error);
    assert!(shown.output.contains("mode=debug aws=\n"), "{}", shown.output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_fails_closed_when_children_cannot_be_confined_unless_unconfined_is_explicit() {
    if !toolhost_tests::is_root() {
        eprintln!("skipped: the cgroup requirement applies to a host running as root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // No pids cgroup can be made: root is not bound by RLIMIT_NPROC, so the host
    // cannot cap a child's processes and refuses to start one.
    let settings =
        ExecSettings { cgroup_parent: Some(dir.path().join("no-such-cgroup")), ..ExecSettings::default() };
    let host = builder(dir.path(), "", &[]).unwrap().exec(settings.clone()).build().await.unwrap();
    let refused = call(&host, "terminal", json!({"command": "echo should-not-run"})).await;
    assert_eq!(refused.code(), Some("sandbox_unavailable"), "{:?}", refused.error);
    assert!(error_text(&refused).contains("pids cgroup"), "{}", error_text(&refused));
    assert!(host.exec_runtime().availability().is_err());

    // `unconfined = true` is the explicit opt-out: the child runs (outside Landlock).
    let grant = ExecGrant { programs: vec![], shell: true, unconfined: true, commit: false };
    let host =
        builder(dir.path(), "", &[]).unwrap().exec(settings).builtin_exec(grant).build().await.unwrap();
    let ran = call(&host, "terminal", json!({"command": "echo ran-unconfined"})).await;
    assert!(ran.ok, "{:?}", ran.error);
    assert!(ran.output.contains("ran-unconfined"));

    // The policy spells it the same way.
    let policy =
        Policy::parse("[builtins]\nexec = { shell = true, unconfined = true }\n", &dir.path().join("p.toml"));
    assert!(policy.unwrap().builtins.exec.unconfined);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtins_run_only_what_their_grant_lists() {
    let dir = tempfile::tempdir().unwrap();
    // No shell profile: terminal is refused; git still works.
    let host = build(dir.path(), "[builtins]\nexec = { programs = [\"git\"] }\n", &[]).await.unwrap();
    let refused = call(&host, "terminal", json!({"command": "echo hi"})).await;
    assert_eq!(refused.code(), Some("shell_not_allowed"), "{:?}", refused.error);
    let status = call(&host, "git", json!({"command": "status"})).await;
    // It ran (the work dir is no repository, so git itself says so).
    assert_eq!(status.code(), Some("command_failed"), "{:?}", status.error);
    assert!(error_text(&status).contains("not a git repository"), "{}", error_text(&status));
    // Nothing at all: the tools that start programs are left out.
    let host = build(dir.path(), "[builtins]\nexec = { programs = [] }\n", &[]).await.unwrap();
    assert_eq!(call(&host, "git", json!({"command": "status"})).await.code(), Some("unknown_tool"));
    assert_eq!(call(&host, "terminal", json!({"command": "true"})).await.code(), Some("unknown_tool"));
    assert!(call(&host, "read_file", json!({"path": "toolhost.toml"})).await.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_child_cgroup_is_left_behind_even_when_a_spawn_fails() {
    if !toolhost_tests::is_root() {
        eprintln!("skipped: pids cgroups are made by a host running as root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let entry = format!(
        "[plugins.runner]\nsource = {EXEC_WASM:?}\nsha256 = \"{}\"\nfilesystem = \"read-write\"\nexec = {{ programs = [\"echo\"] }}\n",
        sha256_of(EXEC_WASM)
    );
    let host = build(dir.path(), &entry, &[]).await.unwrap();
    assert!(call(&host, "spawn", json!({"program": "echo", "args": ["ok"]})).await.ok);
    let failed = call(&host, "spawn", json!({"program": "echo", "args": ["nul\u{0}inside"]})).await;
    assert_eq!(failed.code(), Some("spawn_failed"), "{:?}", failed.error);
    let timed_out = call(&host, "spawn", json!({"program": "echo", "args": ["x"], "timeout_ms": 0})).await;
    assert!(timed_out.ok, "{:?}", timed_out.error);
    let cgroup = host.exec_runtime().cgroup_dir().expect("the host made its cgroup").to_path_buf();
    // Removal runs off the call's path: give it a moment.
    let mut left = Vec::new();
    for _ in 0..100 {
        left = std::fs::read_dir(&cgroup)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("call-"))
            .map(|e| e.file_name())
            .collect();
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(left.is_empty(), "left behind in {}: {left:?}", cgroup.display());
    drop(host);
    assert!(!cgroup.exists(), "the host's cgroup outlived it: {}", cgroup.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_reached_through_a_symlink_keeps_its_listed_name() {
    // rustup's `cargo` is a symlink to `rustup`, which decides what to be from
    // argv[0]: the host resolves the link at load but passes the listed name.
    let work = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let bash = ["/usr/bin/bash", "/bin/bash"].into_iter().find(|p| Path::new(p).exists()).unwrap();
    std::os::unix::fs::symlink(bash, bin.path().join("mysh")).unwrap();
    let settings = ExecSettings { path: vec![bin.path().to_path_buf()], ..ExecSettings::default() };
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .exec(settings)
        .plugin_file(EXEC_WASM)
        .plugin_exec(ExecGrant {
            programs: vec!["mysh".into()],
            shell: false,
            unconfined: false,
            commit: false,
        })
        .build()
        .await
        .unwrap();
    let r = call(&host, "spawn", json!({"program": "mysh", "args": ["-c", "echo I am $0"]})).await;
    assert!(r.ok, "{:?}", r.error);
    let out: Value = serde_json::from_str(&r.output).unwrap();
    assert_eq!(out["stdout"], "I am mysh\n", "{out}");
}
