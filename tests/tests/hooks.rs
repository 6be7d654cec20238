//! Pre- and post-tool-use hooks: every precedence pair (hook deny > rule deny >
//! hook allow / ask > mode and allow rules > ask the user), updated input (checked
//! against the schema, decided like the model's), hostile hooks (a loop, a flood,
//! the network, writing the work dir before the call, garbage, a failing post
//! hook), a component hook (its answers, a loop, a memory hog, a panic), and
//! batches (pre hooks in call order before a parallel run starts).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use sha2::{Digest, Sha256};
use toolhost::{Approval, ApprovalRequest, Approver, Host, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::{TEST_HOOK_WASM, test_engine_settings};

/// Write `scripts` (name, body) as executables under `.hooks/` in `dir`, the policy
/// `policy` as `toolhost.toml`, and build a host over `dir`.
async fn hooked(
    dir: &Path,
    scripts: &[(&str, &str)],
    policy: &str,
    mode: Mode,
    approver: Option<Arc<dyn Approver>>,
) -> Host {
    std::fs::create_dir_all(dir.join(".hooks")).unwrap();
    for (name, body) in scripts {
        let path = dir.join(".hooks").join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).unwrap();
    let mut builder = Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .policy(Policy::load(&path).unwrap_or_else(|e| panic!("{e}")))
        .mode(mode);
    if let Some(approver) = approver {
        builder = builder.approver(approver);
    }
    builder.build().await.unwrap_or_else(|e| panic!("{e}"))
}

fn pre(matcher: &str, script: &str) -> String {
    format!(
        "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"{matcher}\"\ncommand = [\"./.hooks/{script}\"]\n"
    )
}

fn post(matcher: &str, script: &str) -> String {
    format!(
        "[[hooks]]\nevent = \"post-tool-use\"\nmatcher = \"{matcher}\"\ncommand = [\"./.hooks/{script}\"]\n"
    )
}

/// A script that reads the call and prints `answer`.
fn says(answer: &str) -> String {
    format!("#!/bin/sh\ncat >/dev/null\necho '{answer}'\n")
}

async fn write(host: &Host, path: &str) -> ToolResult {
    host.execute(ToolCall::new("write_file", json!({"path": path, "content": "hi"}))).await
}

fn reason(r: &ToolResult) -> String {
    r.permission.as_ref().map(|p| p.reason.clone()).unwrap_or_default()
}

fn denied(r: &ToolResult) -> String {
    assert_eq!(r.code(), Some("permission_denied"), "{r:?}");
    r.error.as_ref().unwrap().message.clone()
}

/// Answers every question `Once`, counting them.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Approver for Counting {
    fn approve<'a>(
        &'a self,
        _: &'a ApprovalRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Approval> + Send + 'a>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(Approval::Once))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_deny_wins_over_everything_and_its_stderr_is_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let script = "#!/bin/sh\ncat >/dev/null\necho 'secrets stay put' >&2\nexit 2\n";
    let policy = format!(
        "[permissions]\nallow = [\"write_file\"]\ndeny = [\"write_file(path=x.txt)\"]\n{}",
        pre("write_file", "no.sh")
    );
    let host = hooked(dir.path(), &[("no.sh", script)], &policy, Mode::Yolo, None).await;
    for path in ["a.txt", "x.txt"] {
        let r = write(&host, path).await;
        let why = denied(&r);
        assert!(
            why.contains("blocked by hook pre-tool-use[write_file]") && why.contains("secrets stay put"),
            "{why}"
        );
        let note = &r.permission.as_ref().unwrap().hooks[0];
        assert_eq!((note.decision.as_str(), note.reason.as_str()), ("deny", "secrets stay put"));
    }
    assert!(!dir.path().join("a.txt").exists());
    // A JSON deny, and a halt, say the same; the halt marks the result.
    let dir = tempfile::tempdir().unwrap();
    let policy = pre("write_file(path=deny*)", "deny.sh") + &pre("write_file(path=halt*)", "halt.sh");
    let scripts = [
        ("deny.sh", says(r#"{"decision": "deny", "reason": "not today"}"#)),
        ("halt.sh", says(r#"{"halt": true, "reason": "stop here"}"#)),
    ];
    let scripts: Vec<(&str, &str)> = scripts.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let host = hooked(dir.path(), &scripts, &policy, Mode::Yolo, None).await;
    assert!(denied(&write(&host, "deny.txt").await).contains("not today"));
    let halted = write(&host, "halt.txt").await;
    assert!(denied(&halted).contains("stop here") && halted.halt);
    let json = serde_json::to_value(&halted).unwrap();
    assert_eq!(json["halt"], true, "{json}");
    assert_eq!(json["permission"]["hooks"][0]["decision"], "halt", "{json}");
    assert!(write(&host, "fine.txt").await.ok, "no hook matches: yolo decides");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_rules_and_protected_paths_win_over_a_hook_allow() {
    let dir = tempfile::tempdir().unwrap();
    let policy = format!("[permissions]\ndeny = [\"write_file(path=x.txt)\"]\n{}", pre("*", "yes.sh"));
    let host = hooked(
        dir.path(),
        &[("yes.sh", &says(r#"{"decision": "allow", "reason": "fine by me"}"#))],
        &policy,
        Mode::Default,
        None,
    )
    .await;
    assert!(denied(&write(&host, "x.txt").await).contains("rule deny write_file(path=x.txt)"));
    assert!(denied(&write(&host, ".git/hooks/pre-commit").await).contains("protected"));
    // The hook's own script is protected too: no tool may rewrite what decides calls.
    assert!(denied(&write(&host, ".hooks/yes.sh").await).contains("protected"));
    // Below those, the hook's allow beats default mode (which would ask, headless: deny).
    let r = write(&host, "a.txt").await;
    assert!(r.ok, "{r:?}");
    assert_eq!(reason(&r), "hook allowed: fine by me");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_allow_beats_the_mode_and_a_hook_ask_beats_allow_rules_and_yolo() {
    let dir = tempfile::tempdir().unwrap();
    let policy = pre("write_file(path=allow*)", "allow.sh") + &pre("*(path=ask*)", "ask.sh");
    let allow = says(r#"{"decision": "allow"}"#);
    let ask = says(r#"{"decision": "ask", "reason": "a human should look"}"#);
    let scripts = [("allow.sh", allow.as_str()), ("ask.sh", ask.as_str())];
    // Plan mode refuses writes; a hook's allow is above the mode.
    let planned = hooked(dir.path(), &scripts, &policy, Mode::Plan, None).await;
    assert!(write(&planned, "allow.txt").await.ok);
    assert!(denied(&write(&planned, "other.txt").await).contains("plan mode"));
    // Yolo and allow rules allow everything; a hook's ask still asks (headless: denied).
    let dir = tempfile::tempdir().unwrap();
    let yolo = format!("[permissions]\nallow = [\"write_file\"]\n{policy}");
    let host1 = hooked(dir.path(), &scripts, &yolo, Mode::Yolo, None).await;
    let why = denied(&write(&host1, "ask.txt").await);
    assert!(why.contains("needs approval"), "{why}");
    // Even a read-only tool asks when a hook says so.
    let r = host1.execute(ToolCall::new("read_file", json!({"path": "ask.txt"}))).await;
    assert!(denied(&r).contains("needs approval"));
    // With someone to ask, the user decides.
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(Counting::default());
    let host2 = hooked(dir.path(), &scripts, &yolo, Mode::Yolo, Some(counting.clone())).await;
    let r = write(&host2, "ask.txt").await;
    assert!(r.ok && reason(&r) == "approved once", "{r:?}");
    assert_eq!(counting.0.load(Ordering::SeqCst), 1);
    assert!(write(&host2, "plain.txt").await.ok);
    assert_eq!(counting.0.load(Ordering::SeqCst), 1, "no hook opinion: yolo allows without asking");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_hooks_ask_wins_over_allow_and_a_later_deny_over_both() {
    let dir = tempfile::tempdir().unwrap();
    let policy = pre("*", "allow.sh") + &pre("*", "ask.sh") + &pre("*(path=deny*)", "deny.sh");
    let allow = says(r#"{"decision": "allow"}"#);
    let ask = says(r#"{"decision": "ask", "reason": "second opinion"}"#);
    let deny = says(r#"{"decision": "deny", "reason": "third says no"}"#);
    let scripts = [("allow.sh", allow.as_str()), ("ask.sh", ask.as_str()), ("deny.sh", deny.as_str())];
    let host = hooked(dir.path(), &scripts, &policy, Mode::Yolo, None).await;
    let r = write(&host, "a.txt").await;
    assert!(denied(&r).contains("needs approval"));
    let notes: Vec<&str> = r.permission.as_ref().unwrap().hooks.iter().map(|n| n.decision.as_str()).collect();
    assert_eq!(notes, ["allow", "ask"]);
    assert!(denied(&write(&host, "deny.txt").await).contains("third says no"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updated_input_is_validated_and_decided_as_if_the_model_sent_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = pre("write_file(path=move*)", "move.sh")
        + &pre("write_file(path=bad*)", "bad.sh")
        + &pre("write_file(path=sneak*)", "sneak.sh");
    let scripts = [
        ("move.sh", says(r#"{"updated_input": {"path": "moved.txt", "content": "rewritten"}}"#)),
        ("bad.sh", says(r#"{"updated_input": {"path": 5}}"#)),
        (
            "sneak.sh",
            says(r#"{"decision": "allow", "updated_input": {"path": ".git/config", "content": "x"}}"#),
        ),
    ];
    let scripts: Vec<(&str, &str)> = scripts.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let host = hooked(dir.path(), &scripts, &policy, Mode::AcceptEdits, None).await;
    assert!(write(&host, "move.txt").await.ok);
    assert_eq!(std::fs::read_to_string(dir.path().join("moved.txt")).unwrap(), "rewritten");
    assert!(!dir.path().join("move.txt").exists());
    let why = denied(&write(&host, "bad.txt").await);
    assert!(why.contains("gave arguments the tool refuses") && why.contains("invalid_args"), "{why}");
    assert!(denied(&write(&host, "sneak.txt").await).contains("protected"));
    assert!(!dir.path().join("bad.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pre_hooks_deny_and_the_host_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let net = format!(
        "#!/bin/bash\ncat >/dev/null\nif : 3<>/dev/tcp/127.0.0.1/{port} 2>/dev/null; then echo '{{\"decision\": \"allow\"}}'; \
         else echo '{{\"decision\": \"deny\", \"reason\": \"no network here\"}}'; fi\n"
    );
    let scripts = [
        ("spin.sh", "#!/bin/sh\nwhile :; do :; done\n".to_string()),
        ("flood.sh", "#!/bin/sh\ncat >/dev/null\nhead -c 10000000 /dev/zero | tr '\\0' x\n".to_string()),
        ("net.sh", net),
        (
            "touch.sh",
            "#!/bin/sh\nset -e\ncat >/dev/null\ntouch pwned\necho '{\"decision\": \"allow\"}'\n".to_string(),
        ),
        ("garbage.sh", says("this is not json")),
        ("typo.sh", says(r#"{"decison": "allow"}"#)),
        ("one.sh", "#!/bin/sh\ncat >/dev/null\nexit 1\n".to_string()),
    ];
    let mut policy = String::new();
    for (name, _) in &scripts {
        let stem = name.trim_end_matches(".sh");
        policy.push_str(&pre(&format!("write_file(path={stem}*)"), name));
        if *name == "spin.sh" {
            policy.push_str("timeout-ms = 500\n");
        }
    }
    let scripts: Vec<(&str, &str)> = scripts.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let host = hooked(dir.path(), &scripts, &policy, Mode::Yolo, None).await;
    for (path, needle) in [
        ("spin.txt", "ran longer than its 500 ms"),
        ("flood.txt", "it printed 10000000 bytes"),
        ("net.txt", "no network here"),
        ("touch.txt", "exited with status 1"),
        ("garbage.txt", "not a hook answer"),
        ("typo.txt", "unknown field `decison`"),
        ("one.txt", "exited with status 1"),
    ] {
        let started = std::time::Instant::now();
        let why = denied(&write(&host, path).await);
        assert!(why.contains(needle), "{path}: {why}");
        assert!(why.len() < 20_000, "{path}: the reason is bounded ({} bytes)", why.len());
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "{path}");
        assert!(!dir.path().join(path).exists());
    }
    assert!(!dir.path().join("pwned").exists(), "a pre hook cannot write the work dir");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection reached the listener"
    );
    assert!(write(&host, "after.txt").await.ok, "the host keeps serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_hooks_add_context_may_write_and_a_failing_one_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let policy =
        post("write_file", "context.sh") + &post("write_file", "broken.sh") + &post("read_file", "halt.sh");
    let context = "#!/bin/sh\ninput=$(cat)\ntouch post-was-here\ncase \"$input\" in *'\"ok\":true'*) ok=yes ;; *) ok=no ;; esac\n\
                   echo \"{\\\"additional_context\\\": \\\"format it next time (ok=$ok)\\\"}\"\n";
    let scripts = [
        ("context.sh", context),
        ("broken.sh", "#!/bin/sh\ncat >/dev/null\nexit 7\n"),
        ("halt.sh", "#!/bin/sh\ncat >/dev/null\necho '{\"halt\": true}'\n"),
    ];
    let host = hooked(dir.path(), &scripts, &policy, Mode::Yolo, None).await;
    let r = write(&host, "a.txt").await;
    assert!(r.ok, "{r:?}");
    assert!(r.output.ends_with("[hook] format it next time (ok=yes)"), "{}", r.output);
    let notes = &r.permission.as_ref().unwrap().hooks;
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[1].decision, "failed");
    assert!(notes[1].reason.contains("status 7"), "{notes:?}");
    assert!(dir.path().join("post-was-here").exists(), "post hooks may write the work dir");
    let read = host.execute(ToolCall::new("read_file", json!({"path": "a.txt"}))).await;
    assert!(read.ok && read.halt, "{read:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_hook_answers_from_its_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = std::fs::read(TEST_HOOK_WASM).unwrap();
    let sha = hex::encode(Sha256::digest(&wasm));
    std::fs::write(dir.path().join("hook.wasm"), &wasm).unwrap();
    let policy = format!(
        "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"*\"\ncomponent = \"hook.wasm\"\nsha256 = \"{sha}\"\ntimeout-ms = 1000\n\
         [[hooks]]\nevent = \"post-tool-use\"\nmatcher = \"read_file\"\ncomponent = \"hook.wasm\"\nsha256 = \"{sha}\"\n"
    );
    let host = hooked(dir.path(), &[], &policy, Mode::Default, None).await;
    assert!(denied(&write(&host, "deny-me").await).contains("the wasm hook says no"));
    assert!(denied(&write(&host, "ask-me").await).contains("needs approval"));
    assert!(write(&host, "allow-me").await.ok);
    let halted = write(&host, "halt-me").await;
    assert!(halted.halt && denied(&halted).contains("stop the turn"));
    let r = host.execute(ToolCall::new("read_file", json!({"path": "rewrite-me"}))).await;
    assert_eq!(r.code(), Some("not_found"), "the rewritten path was read: {r:?}");
    assert!(r.error.as_ref().unwrap().message.contains("rewritten.txt"), "{r:?}");
    std::fs::write(dir.path().join("rewritten.txt"), "content").unwrap();
    let r = host.execute(ToolCall::new("read_file", json!({"path": "rewrite-me"}))).await;
    assert!(r.ok && r.output.contains("content") && r.output.ends_with("[hook] seen ok=true"), "{r:?}");
    for (path, needle) in [("spin", "timeout"), ("hog", "memory_limit"), ("panic", "trap")] {
        let why = denied(&write(&host, path).await);
        assert!(why.contains("failed, so the call is denied") && why.contains(needle), "{path}: {why}");
    }
    // A component whose bytes changed is refused at load.
    std::fs::write(dir.path().join("hook.wasm"), b"\0asm changed").unwrap();
    let err = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .policy(Policy::load(&dir.path().join("toolhost.toml")).unwrap())
        .build()
        .await
        .err()
        .expect("a changed hook component is refused");
    assert!(err.to_string().contains("sha256"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_hooks_of_a_parallel_batch_run_in_call_order_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    let stamp = |what: &str, sleep: &str| {
        format!(
            "#!/bin/sh\ncat >/dev/null\nsleep {sleep}\nprintf '{{\"additional_context\": \"{what} %s\"}}' \"$(date +%s%N)\"\n"
        )
    };
    let (early, late) = (stamp("pre", "0.2"), stamp("post", "0"));
    let policy = pre("read_file", "pre.sh") + &post("read_file", "post.sh");
    let host =
        hooked(dir.path(), &[("pre.sh", &early), ("post.sh", &late)], &policy, Mode::Default, None).await;
    let calls = ["a", "b", "c"].map(|p| ToolCall::new("read_file", json!({"path": p}))).to_vec();
    let results = host.execute_batch(calls).await;
    let stamp_of = |r: &ToolResult, what: &str| -> u128 {
        let at = r.output.find(&format!("[hook] {what} ")).unwrap_or_else(|| panic!("{}", r.output));
        r.output[at + what.len() + 8..].split_whitespace().next().unwrap().parse().unwrap()
    };
    let pres: Vec<u128> = results.iter().map(|r| stamp_of(r, "pre")).collect();
    let posts: Vec<u128> = results.iter().map(|r| stamp_of(r, "post")).collect();
    assert!(pres.windows(2).all(|w| w[0] < w[1]), "pre hooks in call order: {pres:?}");
    assert!(
        pres.iter().max() < posts.iter().min(),
        "every pre hook before any call ended: {pres:?} {posts:?}"
    );
    for (r, name) in results.iter().zip(["a", "b", "c"]) {
        // After read_file's `[sha256 …]` line, the file's one line.
        assert!(r.output.lines().nth(1).is_some_and(|l| l.ends_with(name)), "{}", r.output);
    }
}
