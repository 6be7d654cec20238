//! `bench servers`: a tool of an MCP server (issue 20) called through toolhost vs
//! the same server called directly, by the same client (rmcp's, over stdio) in
//! the same run; and the first call, including the server's start.
//!
//! The server is the tests' `tests/mcp_servers/hostile.py` (Python, stdio), its
//! `echo` tool. Directly it runs as an ordinary process; through toolhost it is a
//! `[servers.t]` entry of `toolhost serve`, started confined (own root, Landlock,
//! namespaces, seccomp, rlimits) on first use, its tool `mcp__t__echo` called
//! through the whole pipeline (validation, permissions, redaction, the output
//! bound and store).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use toolhost::{EngineSettings, Host, Mode, Policy, ToolCall};
use toolhost_tests::workspace_root;

use super::{bench_cache, report};

/// Timed calls per figure (after as many untimed ones).
const CALLS: usize = 1000;
/// Cold starts timed per figure.
const STARTS: usize = 15;

fn script() -> PathBuf {
    workspace_root().join("tests/mcp_servers/hostile.py")
}

/// The server as an ordinary process.
fn direct() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("/usr/bin/python3");
    cmd.arg(script()).kill_on_drop(true);
    cmd
}

/// The entry `[servers.t]` for the same server.
fn policy_text() -> String {
    let script = script();
    format!(
        "[servers.t]\ncommand = [\"/usr/bin/python3\", {:?}]\nread-dirs = [{:?}]\nunpinned = true\n",
        script.display().to_string(),
        script.parent().unwrap().display().to_string()
    )
}

/// `toolhost serve` over `work` with the policy file `policy`.
fn served(work: &Path, policy: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(toolhost_tests::toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(work).arg("--policy").arg(policy);
    // The data dir outside the work dir (the host refuses one inside it).
    cmd.env("TOOLHOST_CACHE_DIR", bench_cache()).env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    cmd
}

/// An rmcp client over `cmd`'s stdio, initialized.
async fn connect(cmd: tokio::process::Command) -> RunningService<RoleClient, ()> {
    let (transport, _) =
        TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().expect("the server starts");
    ().serve(transport).await.expect("initialize")
}

/// One call of `name` (an echo) that must succeed.
async fn echo(client: &RunningService<RoleClient, ()>, name: &'static str) {
    let args = json!({"text": "hi"}).as_object().cloned().expect("an object");
    let result = client.call_tool(CallToolRequestParams::new(name).with_arguments(args)).await.expect("call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

/// `CALLS` timed calls of `name` after as many untimed.
async fn timed(client: &RunningService<RoleClient, ()>, name: &'static str) -> Vec<Duration> {
    for _ in 0..CALLS {
        echo(client, name).await;
    }
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        echo(client, name).await;
        samples.push(started.elapsed());
    }
    samples
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

pub(crate) async fn servers() {
    let (work, outside) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    // Outside the work dir: the user's own policy file.
    let policy = outside.path().join("policy.toml");
    std::fs::write(&policy, policy_text()).expect("write the policy");

    // Warm calls, the same client both ways, alternating runs.
    let client = connect(direct()).await;
    let plain = timed(&client, "echo").await;
    client.cancel().await.expect("stop");
    let client = connect(served(work.path(), &policy)).await;
    let through = timed(&client, "mcp__t__echo").await;
    client.cancel().await.expect("stop");
    let ratio = median(&through).as_secs_f64() / median(&plain).as_secs_f64();
    report("server echo: direct (rmcp client, stdio)", plain);
    report("server echo: through toolhost serve", through);
    println!("{:<44} {ratio:.2}x the direct call (medians)", "server echo: ratio");

    // The library's own path: Host::execute of the same tool, no client.
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
        .mode(Mode::Yolo)
        .policy(Policy::parse(&policy_text(), &policy).expect("the policy parses"))
        .build()
        .await
        .expect("host builds");
    report(
        "server echo: Host::execute (library)",
        super::timed_calls_after(&host, "mcp__t__echo", json!({"text": "hi"}), CALLS, CALLS).await,
    );
    drop(host);

    // Cold: spawn, initialize, first call.
    let (mut plain, mut through, mut library) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let started = Instant::now();
        let client = connect(direct()).await;
        echo(&client, "echo").await;
        plain.push(started.elapsed());
        client.cancel().await.expect("stop");

        let started = Instant::now();
        let client = connect(served(work.path(), &policy)).await;
        echo(&client, "mcp__t__echo").await;
        through.push(started.elapsed());
        client.cancel().await.expect("stop");

        let host = Host::builder()
            .work_dir(work.path())
            .engine_settings(EngineSettings { cache_dir: Some(bench_cache()), ..EngineSettings::default() })
            .mode(Mode::Yolo)
            .policy(Policy::parse(&policy_text(), &policy).expect("the policy parses"))
            .build()
            .await
            .expect("host builds");
        let started = Instant::now();
        let result = host.execute(ToolCall::new("mcp__t__echo", json!({"text": "hi"}))).await;
        assert!(result.ok, "{:?}", result.error);
        library.push(started.elapsed());
    }
    report("first call: direct (spawn + initialize + call)", plain);
    report("first call: toolhost serve (its start too)", through);
    report("first call: Host::execute (server start)", library);
}
