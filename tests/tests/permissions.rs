//! Permissions, decided before a call enters its plugin: modes × read-only and
//! writing tools, allow/deny rules and their precedence, protected paths (also in
//! yolo mode, also when a plugin writes the policy file through WASI),
//! and the approver: once, always (saved), deny, headless, cancelled, a call's own.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolhost::{
    Approval, ApprovalRequest, Approver, CancellationToken, Host, Mode, Policy, ToolCall, ToolResult,
};
use toolhost_tests::{HOSTILE_WASM, test_engine_settings};

async fn host_with(
    dir: &Path,
    policy: &str,
    mode: Option<Mode>,
    approver: Option<Arc<dyn Approver>>,
) -> Host {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).unwrap();
    let mut builder = Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .plugin_file(HOSTILE_WASM)
        .policy(Policy::load(&path).unwrap_or_else(|e| panic!("{e}")));
    if let Some(mode) = mode {
        builder = builder.mode(mode);
    }
    if let Some(approver) = approver {
        builder = builder.approver(approver);
    }
    builder.build().await.unwrap_or_else(|e| panic!("{e}"))
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn denied_because(r: &ToolResult) -> String {
    assert_eq!(r.code(), Some("permission_denied"), "{r:?}");
    let note = r.permission.as_ref().expect("a denial carries its decision");
    assert!(!note.allowed);
    assert_eq!(r.error.as_ref().unwrap().message, note.reason);
    note.reason.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mode_with_read_only_and_writing_tools() {
    // (mode, read_file, write_file inside the work dir, counter: writes, no path)
    let table = [
        (Mode::Default, true, false, false),
        (Mode::Plan, true, false, false),
        (Mode::AcceptEdits, true, true, false),
        (Mode::Yolo, true, true, true),
    ];
    for (mode, read, write, other) in table {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        let host = host_with(dir.path(), "", Some(mode), None).await;
        let r = call(&host, "read_file", json!({"path": "a.txt"})).await;
        assert_eq!(r.ok, read, "{mode:?} read_file: {r:?}");
        let r = call(&host, "write_file", json!({"path": "docs/b.txt", "content": "b"})).await;
        assert_eq!(r.ok, write, "{mode:?} write_file: {r:?}");
        assert_eq!(dir.path().join("docs/b.txt").exists(), write, "{mode:?}: a denied call ran");
        if !write {
            let why = denied_because(&r);
            match mode {
                Mode::Plan => assert_eq!(why, "plan mode runs read-only tools only; write_file is not"),
                _ => assert_eq!(why, "write_file needs approval and there is no one to ask (headless)"),
            }
        }
        let r = call(&host, "counter", json!({})).await;
        assert_eq!(r.ok, other, "{mode:?} counter: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_beats_allow_and_rules_beat_modes() {
    let dir = tempfile::tempdir().unwrap();
    let policy = r#"
[permissions]
allow = ["write_file", "counter"]
deny = ["write_file(path=.env)", "write_file(path=secrets/**)", "noop"]
"#;
    let host = host_with(dir.path(), policy, None, None).await;
    // allow beats the default mode's ask
    let r = call(&host, "write_file", json!({"path": "ok.txt", "content": "x"})).await;
    assert!(r.ok, "{r:?}");
    assert_eq!(r.permission.unwrap().reason, "rule allow write_file");
    assert!(call(&host, "counter", json!({})).await.ok);
    // deny beats allow, however the path is spelled
    for path in [".env", "./.env", "docs/../.env", "secrets/a/b.txt"] {
        let r = call(&host, "write_file", json!({"path": path, "content": "x"})).await;
        let why = denied_because(&r);
        assert!(why.starts_with("rule deny write_file(path="), "{path}: {why}");
    }
    assert!(!dir.path().join(".env").exists());
    // deny reaches read-only tools too
    assert_eq!(denied_because(&call(&host, "noop", json!({})).await), "rule deny noop");

    // deny beats yolo
    let host = host_with(dir.path(), policy, Some(Mode::Yolo), None).await;
    let r = call(&host, "write_file", json!({"path": ".env", "content": "x"})).await;
    assert_eq!(denied_because(&r), "rule deny write_file(path=.env)");
    // plan mode is not widened by allow rules
    let host = host_with(dir.path(), policy, Some(Mode::Plan), None).await;
    let r = call(&host, "write_file", json!({"path": "ok.txt", "content": "y"})).await;
    assert!(denied_because(&r).starts_with("plan mode"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_paths_hold_in_yolo_mode() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    std::os::unix::fs::symlink(dir.path().join(".git"), dir.path().join("g")).unwrap();
    let host =
        host_with(dir.path(), "[permissions]\nprotected = [\"keys/\"]\n", Some(Mode::Yolo), None).await;
    for (path, why) in [
        (".git/config", "\".git/config\" is a protected path"),
        ("sub/.git/HEAD", "\"sub/.git/HEAD\" is a protected path"),
        ("g/config", "\"g/config\" is a protected path"),
        ("toolhost.toml", "\"toolhost.toml\" is a protected path"),
        ("./x/../toolhost.toml", "\"toolhost.toml\" is a protected path"),
        ("keys/id_rsa", "\"keys/id_rsa\" is a protected path"),
        ("out/x.txt", "\"out/x.txt\" leads outside the work dir through a symlink"),
        ("../x.txt", "\" is outside the work dir"),
        ("/etc/x", "\"/etc/x\" is outside the work dir"),
    ] {
        for (tool, args) in [
            ("write_file", json!({"path": path, "content": "x"})),
            ("write_path_rw", json!({ "path": path })),
        ] {
            let r = call(&host, tool, args).await;
            let reason = denied_because(&r);
            assert!(reason.ends_with(why), "{tool} {path}: {reason}");
        }
    }
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "something was written outside");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap(),
        "[permissions]\nprotected = [\"keys/\"]\n"
    );
    // Reading them is fine.
    assert!(call(&host, "read_file", json!({"path": "toolhost.toml"})).await.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_rewrite_the_policy_file() {
    let dir = tempfile::tempdir().unwrap();
    let original = "[permissions]\nmode = \"accept-edits\"\n";
    let host = host_with(dir.path(), original, Some(Mode::Yolo), None).await;
    let r = call(&host, "tamper", json!({})).await;
    // The permissions let it run (yolo); the sandbox refused the write itself.
    assert!(!r.ok, "{r:?}");
    assert!(r.error.as_ref().unwrap().message.contains("toolhost.toml"), "{r:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap(), original);
    // And the host keeps serving.
    assert!(call(&host, "noop", json!({})).await.ok);
}

/// Answers from a script and counts the questions.
struct Scripted {
    answer: Approval,
    asked: AtomicUsize,
}

impl Approver for Scripted {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Approval> + Send + 'a>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        assert_eq!(request.tool, "write_file");
        assert_eq!(request.plugin, "builtin:fs");
        Box::pin(std::future::ready(self.answer.clone()))
    }
}

fn scripted(answer: Approval) -> Arc<Scripted> {
    Arc::new(Scripted { answer, asked: AtomicUsize::new(0) })
}

/// A host on `dir` with the policy discovered there (the user's private
/// policy under `config`), asking `approver` (none: headless).
async fn discovered_host(
    dir: &Path,
    config: &toolhost::policy::ConfigDir,
    approver: Option<Arc<Scripted>>,
) -> Host {
    let policy = Policy::discover_in(None, dir, Some(config)).unwrap_or_else(|e| panic!("{e}"));
    let mut builder = Host::builder().work_dir(dir).engine_settings(test_engine_settings()).policy(policy);
    if let Some(approver) = approver {
        builder = builder.approver(approver);
    }
    builder.build().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approver_allows_once_always_or_denies() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str| json!({"path": path, "content": "x"});

    let once = scripted(Approval::Once);
    let host = host_with(dir.path(), "", None, Some(once.clone())).await;
    let r = call(&host, "write_file", write("a.txt")).await;
    assert!(r.ok && r.permission.unwrap().reason == "approved once");
    assert!(call(&host, "write_file", write("a.txt")).await.ok);
    assert_eq!(once.asked.load(Ordering::SeqCst), 2, "once means once");

    let deny = scripted(Approval::Deny(Some("not now".into())));
    let host = host_with(dir.path(), "", None, Some(deny.clone())).await;
    let r = call(&host, "write_file", write("b.txt")).await;
    assert_eq!(denied_because(&r), "the user denied write_file: not now");
    assert!(!dir.path().join("b.txt").exists());

    // "Always" is saved to the user's private policy, outside the work dir; the
    // project's file is left as it is.
    let config_dir = tempfile::tempdir().unwrap();
    let config = toolhost::policy::ConfigDir::at(config_dir.path());
    std::fs::write(dir.path().join("toolhost.toml"), "# kept\n").unwrap();
    let always = scripted(Approval::Always);
    let host = discovered_host(dir.path(), &config, Some(always.clone())).await;
    let r = call(&host, "write_file", write("c.txt")).await;
    assert_eq!(r.permission.unwrap().reason, "approved always: rule allow write_file(path=c.txt)");
    let r = call(&host, "write_file", write("c.txt")).await;
    assert_eq!(r.permission.unwrap().reason, "rule allow write_file(path=c.txt)");
    assert_eq!(always.asked.load(Ordering::SeqCst), 1, "always is remembered");
    assert_eq!(std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap(), "# kept\n");
    let private = config.private_policy(&dir.path().canonicalize().unwrap());
    let saved = std::fs::read_to_string(&private).unwrap();
    assert!(saved.contains("\"write_file(path=c.txt)\""), "{saved}");
    // The saved rule applies on the next start, and is only as wide as the call.
    let host = discovered_host(dir.path(), &config, None).await;
    assert!(call(&host, "write_file", write("c.txt")).await.ok);
    assert!(denied_because(&call(&host, "write_file", write("d.txt")).await).contains("headless"));
}

/// "Always" for a file whose name holds glob or rule syntax saves a rule for that
/// file only: after a restart the file is written unasked, and a name the rule's
/// characters would match as a glob (or that a trimmed or split rule would name)
/// is asked about (headless: denied).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_for_an_odd_file_name_allows_that_file_and_no_other() {
    let write = |path: &str| json!({"path": path, "content": "x"});
    for (name, others) in [
        ("x\\*.txt", &["x[y].txt", "x\\y.txt", "x.txt"][..]),
        ("e\\?.txt", &["e[z].txt", "e\\z.txt"]),
        ("a b ", &["a b", "a  b "]),
        ("c,d.txt", &["c", "d.txt"]),
        ("f), path=**", &["f", "g.txt", "sub/h.txt"]),
        ("[ab]{c,d}.txt", &["a{c,d}.txt", "[ab]c.txt", "ac.txt"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let config_dir = tempfile::tempdir().unwrap();
        let config = toolhost::policy::ConfigDir::at(config_dir.path());
        let host = discovered_host(dir.path(), &config, Some(scripted(Approval::Always))).await;
        let r = call(&host, "write_file", write(name)).await;
        assert!(r.ok, "{name:?}: {r:?}");
        let reason = r.permission.unwrap().reason;
        assert!(reason.starts_with("approved always: rule allow write_file(path="), "{name:?}: {reason}");
        assert!(!reason.contains("not saved"), "{name:?}: {reason}");
        let host = discovered_host(dir.path(), &config, None).await;
        let r = call(&host, "write_file", write(name)).await;
        assert!(r.ok, "{name:?} runs unasked after a restart: {r:?}");
        for other in others {
            let why = denied_because(&call(&host, "write_file", write(other)).await);
            assert!(why.contains("headless"), "{name:?} allowed {other:?}: {why}");
        }
    }
}

/// Never answers.
struct Silent;

impl Approver for Silent {
    fn approve<'a>(
        &'a self,
        _: &'a ApprovalRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Approval> + Send + 'a>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_approval_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), "", None, Some(Arc::new(Silent))).await;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let r = host
        .execute(ToolCall::new("write_file", json!({"path": "a", "content": ""})).with_cancel(token))
        .await;
    assert_eq!(r.code(), Some("cancelled"), "{r:?}");
    assert!(!dir.path().join("a").exists());
}

/// A call's own approver (an MCP client's user, under `serve`) is asked instead
/// of the host's, and waits for no other call's question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_may_bring_its_own_approver() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str| json!({"path": path, "content": "x"});
    // The host's own approver never answers: a call asking it would hang.
    let host = Arc::new(host_with(dir.path(), "", None, Some(Arc::new(Silent))).await);
    let stuck = {
        let host = host.clone();
        let call = ToolCall::new("write_file", write("stuck.txt")).with_approver(Arc::new(Silent));
        tokio::spawn(async move { host.execute(call).await })
    };
    let once = scripted(Approval::Once);
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        host.execute(ToolCall::new("write_file", write("a.txt")).with_approver(once.clone())),
    )
    .await
    .expect("not held up by the other call's question");
    assert!(r.ok && r.permission.unwrap().reason == "approved once", "{:?}", r.error);
    assert_eq!(once.asked.load(Ordering::SeqCst), 1);
    let nobody = scripted(Approval::NoAnswer("nobody answered in time".into()));
    let r = host.execute(ToolCall::new("write_file", write("b.txt")).with_approver(nobody)).await;
    assert_eq!(denied_because(&r), "write_file was not approved: nobody answered in time");
    assert!(!dir.path().join("b.txt").exists() && !dir.path().join("stuck.txt").exists());
    stuck.abort();

    // A headless host asks the call's own approver too.
    let host = host_with(dir.path(), "", None, None).await;
    let r = host
        .execute(ToolCall::new("write_file", write("c.txt")).with_approver(scripted(Approval::Once)))
        .await;
    assert!(r.ok, "{:?}", r.error);
    assert!(denied_because(&call(&host, "write_file", write("d.txt")).await).contains("headless"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denials_say_what_was_refused_not_how_to_widen_it() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), "[permissions]\ndeny = [\"counter\"]\n", None, None).await;
    for (tool, args) in [
        ("write_file", json!({"path": "a", "content": ""})),
        ("counter", json!({})),
        ("write_file", json!({"path": ".git/x", "content": ""})),
    ] {
        let why = denied_because(&call(&host, tool, args).await);
        for hint in ["--mode", "yolo", "toolhost add", "allow =", "accept-edits"] {
            assert!(!why.contains(hint), "{tool}: the denial tells the model how to widen it: {why}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_rules_cover_each_command_of_a_terminal_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let policy = r#"
[permissions]
allow = ["terminal(command=git status*)"]
deny = ["terminal(command=rm*)"]
"#;
    let host = host_with(dir.path(), policy, None, None).await;
    let terminal = |command: &str| json!({ "command": command });
    // The rule lets `git status` run (whether or not this is a repository).
    let r = call(&host, "terminal", terminal("git status --short")).await;
    let note = r.permission.clone().expect("a decision");
    assert!(note.allowed, "{r:?}");
    assert_eq!(note.reason, "rule allow terminal(command=git status*)");
    // A second command the rule does not cover asks, and headless that is a denial:
    // nothing of the line runs.
    for line in [
        "git status; touch pwned",
        "git status && touch pwned",
        "git status > pwned",
        "git status $(touch pwned)",
    ] {
        let r = call(&host, "terminal", terminal(line)).await;
        assert_eq!(
            denied_because(&r),
            "terminal needs approval and there is no one to ask (headless)",
            "{line}"
        );
        assert!(!dir.path().join("pwned").exists(), "{line}: the denied line ran");
    }
    // A deny rule hits the second command of a chain, also as /bin/rm.
    for line in ["git status && rm a.txt", "git status; /bin/rm a.txt"] {
        let r = call(&host, "terminal", terminal(line)).await;
        assert_eq!(denied_because(&r), "rule deny terminal(command=rm*)", "{line}");
    }
    assert!(dir.path().join("a.txt").exists());
    // The safe list runs read-only commands without a rule.
    let r = call(&host, "terminal", terminal("cat a.txt | wc -l")).await;
    assert!(r.ok, "{r:?}");
    assert_eq!(r.permission.unwrap().reason, "a read-only command of the safe list");
    assert!(r.output.starts_with('1'), "{}", r.output);

    // ... unless the policy turns it off.
    let policy = "[permissions]\nsafe-commands = false\n";
    let host = host_with(dir.path(), policy, None, None).await;
    let r = call(&host, "terminal", terminal("cat a.txt")).await;
    assert!(denied_because(&r).contains("headless"), "{r:?}");
}
