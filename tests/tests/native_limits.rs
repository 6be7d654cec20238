//! The host's own tools (`run_tests`, `process_list`, `read_output`) go through the
//! same stages as a component's: the call's deadline and cancellation end them, and
//! what they return is redacted before it is stored and shown.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{CancellationToken, Host, Limits, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::test_engine_settings;

const DB_URL: &str = "postgres://app:hunter2-hunter2@db.internal/prod";
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";

async fn host(dir: &Path, policy: &str, limits: Limits) -> Host {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).unwrap();
    Host::builder()
        .work_dir(dir)
        .limits(limits)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .host_env(vec![("APP_DB_URL".into(), DB_URL.into()), ("LANG".into(), "C.UTF-8".into())])
        .policy(Policy::load(&path).unwrap_or_else(|e| panic!("{e}")))
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn slow_profile() -> String {
    "[tests.slow]\ncommand = \"bash\"\nargs = [\"-c\", \"echo started; sleep 60\"]\ntimeout-ms = 600000\n"
        .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_ends_at_the_calls_deadline_not_only_its_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        timeout: Duration::from_millis(1500),
        max_timeout: Duration::from_millis(1500),
        ..Limits::default()
    };
    let host = host(dir.path(), &slow_profile(), limits).await;
    let started = Instant::now();
    let r = call(&host, "run_tests", json!({})).await;
    let took = started.elapsed();
    assert_eq!(r.code(), Some("timeout"), "{r:?}");
    assert!(took < Duration::from_secs(10), "the 600 s profile ran {took:?} past a 1.5 s call deadline");
    // It ended itself just before the deadline, so the log tail came back.
    assert!(r.error.as_ref().unwrap().message.contains("started"), "{r:?}");
    // Nothing it started is left running.
    let listed = call(&host, "process_list", json!({})).await;
    assert!(!listed.output.contains("running"), "{}", listed.output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_is_cancelled_with_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let host = std::sync::Arc::new(host(dir.path(), &slow_profile(), Limits::default()).await);
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let r = host.execute(ToolCall::new("run_tests", json!({})).with_cancel(token)).await;
    assert_eq!(r.code(), Some("cancelled"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_native_tools_return_is_redacted_before_it_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let policy = format!(
        "[builtins]\nenv = [\"APP_*\", \"LANG\"]\n\n[tests.leaky]\ncommand = \"bash\"\n\
         args = [\"-c\", \"echo db=$APP_DB_URL; echo key={AWS_KEY}; exit 1\"]\n\n\
         [tests.passing]\ncommand = \"bash\"\nargs = [\"-c\", \"echo db=$APP_DB_URL key={AWS_KEY}\"]\n"
    );
    let host = host(dir.path(), &policy, Limits::default()).await;
    // A failing run: the secrets are in the error's log tail.
    let r = call(&host, "run_tests", json!({"profile": "leaky"})).await;
    assert_eq!(r.code(), Some("tests_failed"), "{r:?}");
    let text = format!("{r:?}");
    assert!(!text.contains("hunter2") && !text.contains(AWS_KEY), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    // A passing one: in the output, and in what the store keeps.
    let r = call(&host, "run_tests", json!({"profile": "passing"})).await;
    assert!(r.ok, "{r:?}");
    assert!(!r.output.contains("hunter2") && !r.output.contains(AWS_KEY), "{}", r.output);
    let stored = call(&host, "read_output", json!({"call_id": r.call_id})).await;
    assert!(stored.ok, "{stored:?}");
    assert!(!stored.output.contains("hunter2") && !stored.output.contains(AWS_KEY), "{}", stored.output);
    // The process table shows command lines: redacted as well.
    let listed = call(&host, "process_list", json!({})).await;
    assert!(listed.ok && listed.output.contains("bash"), "{listed:?}");
    assert!(!listed.output.contains(AWS_KEY), "{}", listed.output);
}
