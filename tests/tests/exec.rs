//! Hostile tests of exec: the processes tools start through `toolhost:plugin/exec`
//! (the `exec-test` guest passes every request through untouched) and the builtin
//! `terminal` and `git`. Each asserts a clear error code or an observable effect
//! (files, processes, sockets), and that the host keeps serving afterwards.
//!
//! Network: nothing here addresses anything but loopback (127.0.0.1, ::1), and the
//! children run in their own network namespace besides.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use toolhost::{CancellationToken, Host, HostBuilder, Limits, Mode, ToolCall, ToolResult};
use toolhost::{ChildLimits, ExecGrant, ExecSettings, ProcessState, SYSTEM_PATH};
use toolhost_tests::{EXEC_WASM, test_engine_settings};

/// The name the test guest is loaded under.
const PLUGIN: &str = "exec-test";

/// Tests that count the system's processes (or start many) take turns, so that one
/// does not see another's children.
static PROCESSES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// ---------------------------------------------------------------------------
// Hosts and calls
// ---------------------------------------------------------------------------

/// A host over a fresh work dir with only the exec test guest, granted `programs`
/// (plus `echo`, which [`still_serves`] uses) and the shell profile when `shell`.
async fn exec_host(programs: &[&str], shell: bool, settings: ExecSettings) -> (Host, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let host =
        exec_builder(dir.path(), programs, shell, settings).build().await.unwrap_or_else(|e| panic!("{e}"));
    (host, dir)
}

fn exec_builder(dir: &Path, programs: &[&str], shell: bool, settings: ExecSettings) -> HostBuilder {
    let mut programs: Vec<String> = programs.iter().map(|p| p.to_string()).collect();
    programs.push("echo".into());
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .plugin_bytes(PLUGIN, std::fs::read(EXEC_WASM).unwrap())
        .plugin_exec(ExecGrant { programs, shell, unconfined: false, commit: false })
        .exec(settings)
}

/// A host with the builtins (`terminal`, `git`: the default grant) over `dir`.
async fn builtin_host(dir: &Path) -> Host {
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn limits(f: impl FnOnce(&mut ChildLimits)) -> ExecSettings {
    let mut settings = ExecSettings::default();
    f(&mut settings.limits);
    settings
}

async fn call(host: &Host, tool: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(tool, args)).await
}

/// The outcome JSON of a `spawn` that ran (whatever its exit status).
fn outcome(r: &ToolResult) -> Value {
    assert!(r.ok, "the call failed: {:?}", r.error);
    serde_json::from_str(&r.output).unwrap_or_else(|e| panic!("not the outcome JSON ({e}): {}", r.output))
}

/// Run `args` with `spawn` and return its outcome.
async fn run(host: &Host, args: Value) -> Value {
    outcome(&call(host, "spawn", args).await)
}

fn code(r: &ToolResult) -> &str {
    r.code().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output))
}

fn message(r: &ToolResult) -> &str {
    r.error.as_ref().map(|e| e.message.as_str()).unwrap_or_default()
}

fn stdout(o: &Value) -> &str {
    o["stdout"].as_str().unwrap()
}

fn stderr(o: &Value) -> &str {
    o["stderr"].as_str().unwrap()
}

/// Everything the child printed, for "never shows X" checks.
fn printed(o: &Value) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// The host still starts a program and reports it correctly.
async fn still_serves(host: &Host) {
    let r = call(host, "spawn", json!({"program": "echo", "args": ["still", "serving"]})).await;
    let o = outcome(&r);
    assert_eq!((stdout(&o), o["exit_code"].as_i64()), ("still serving\n", Some(0)), "{o}");
}

/// The canonical path of the work dir (what the host and its children see).
fn real(dir: &TempDir) -> PathBuf {
    dir.path().canonicalize().unwrap()
}

fn system_has(program: &str) -> bool {
    SYSTEM_PATH.iter().any(|d| Path::new(d).join(program).is_file())
}

/// Fails the test when `program` is missing: a test that needs a tool never
/// passes by skipping (`scripts/deps` installs it).
fn require(program: &str) {
    assert!(
        system_has(program),
        "{program} is missing from {SYSTEM_PATH:?}: run scripts/deps (or install it)"
    );
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// Whether `pid` is a live (not zombie) process whose command line contains `needle`
/// (so a reused pid does not count).
fn alive(pid: u32, needle: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    if state == Some('Z') || state == Some('X') {
        return false;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle)
}

/// Wait up to `within` for every pid in `pids` to be gone; panics naming survivors.
async fn assert_gone(pids: &[u32], needle: &str, within: Duration) {
    let until = Instant::now() + within;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p, needle)).collect();
        if left.is_empty() {
            return;
        }
        if Instant::now() > until {
            let states: Vec<String> = left
                .iter()
                .map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default())
                .collect();
            panic!("processes survived their call: {left:?}: {states:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Live processes on the system (numeric dirs in /proc, zombies left out).
fn process_count() -> usize {
    pids_where(|_| true).len()
}

/// Live processes whose command line contains `needle`.
fn pids_with(needle: &str) -> Vec<u32> {
    pids_where(|cmdline| cmdline.contains(needle))
}

fn pids_where(keep: impl Fn(&str) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        // Zombies (and kernel threads) have an empty command line.
        if !cmdline.is_empty() && keep(&String::from_utf8_lossy(&cmdline).replace('\0', " ")) {
            out.push(pid);
        }
    }
    out
}

/// The pids a shell echoed as `pid:N` lines.
fn echoed_pids(text: &str) -> Vec<u32> {
    text.lines().filter_map(|l| l.strip_prefix("pid:")).map(|p| p.trim().parse().unwrap()).collect()
}

/// Wait until the host lists a running child; its pid.
async fn running_child(host: &Host) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let running = host.exec_runtime().processes().into_iter().find(|p| p.state == ProcessState::Running);
        if let Some(p) = running {
            return p.pid;
        }
        assert!(Instant::now() < until, "no child started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------
// 1. What runs: the allow-list
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allow_listed_names_run_never_paths() {
    let (host, dir) = exec_host(&["cat"], false, ExecSettings::default()).await;
    let script = real(&dir).join("evil.sh");
    std::fs::write(&script, "#!/bin/sh\necho PWNED\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let script = script.display().to_string();
    for program in
        ["ls", "bash", "sh", "cat ", "CAT", "", "../bin/cat", "./x", "/usr/bin/cat", "bin/cat", &script]
    {
        let r = call(&host, "spawn", json!({"program": program, "args": ["/etc/hostname"]})).await;
        assert_eq!(code(&r), "program_not_allowed", "{program:?}: {:?}", r.error);
        assert!(!r.output.contains("PWNED"));
    }
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_planted_in_the_work_dir_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let work = real(&dir);
    let bin = work.join("bin");
    std::fs::create_dir(&bin).unwrap();
    for name in ["cat", "toolhost-only-here"] {
        let fake = bin.join(name);
        std::fs::write(&fake, "#!/bin/sh\necho PWNED\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // A directory outside the work dir whose entry is a symlink into it.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin.join("toolhost-only-here"), outside.path().join("toolhost-linked"))
        .unwrap();

    let settings =
        ExecSettings { path: vec![bin.clone(), outside.path().to_path_buf()], ..Default::default() };
    let host = exec_builder(&work, &["cat", "toolhost-only-here", "toolhost-linked"], false, settings)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // `cat` is the system's, not the work dir's script.
    let o = run(&host, json!({"program": "cat", "stdin": "hello from stdin"})).await;
    assert_eq!(stdout(&o), "hello from stdin", "{o}");
    assert!(!printed(&o).contains("PWNED"));
    // A name found only in the work dir (directly or through a link) does not resolve.
    for name in ["toolhost-only-here", "toolhost-linked"] {
        let r = call(&host, "spawn", json!({"program": name})).await;
        assert_eq!(code(&r), "program_not_allowed", "{name}: {:?} {}", r.error, r.output);
        assert!(!r.output.contains("PWNED"));
    }
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 2. No shell without the shell profile; arguments arrive literally
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_shell_profile_nothing_is_interpreted() {
    let (host, dir) = exec_host(&["printf"], false, ExecSettings::default()).await;
    let r = call(&host, "spawn", json!({"shell": "echo hi > pwned"})).await;
    assert_eq!(code(&r), "shell_not_allowed", "{:?}", r.error);
    assert!(!dir.path().join("pwned").exists());

    let args = ["a;b", "$(id)", "`id`", "*", "$HOME", "x && y", "> out", "'q'\"q\"", "a\nb", "-v"];
    let mut argv = vec!["%s\n".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    // Something for `*` to match, were it expanded.
    std::fs::write(dir.path().join("glob-me"), "").unwrap();
    let o = run(&host, json!({"program": "printf", "args": argv})).await;
    let expected: String = args.iter().map(|a| format!("{a}\n")).collect();
    assert_eq!(stdout(&o), expected, "{o}");
    assert_eq!(o["exit_code"], 0);
    assert!(!dir.path().join("out").exists());

    // A NUL byte in an argument cannot reach exec; the host says so and goes on.
    let r = call(&host, "spawn", json!({"program": "printf", "args": ["a\u{0}b"]})).await;
    assert_eq!(code(&r), "spawn_failed", "{:?} {}", r.error, r.output);
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 3. Filesystem
// ---------------------------------------------------------------------------

const SECRET: &str = "toolhost-secret-7f3a9c";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_outside_the_work_dir_cannot_be_read() {
    let (host, dir) = exec_host(&["cat", "ls"], true, ExecSettings::default()).await;
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("dirlink")).unwrap();
    let relative = format!("../{}/secret.txt", outside.path().file_name().unwrap().to_str().unwrap());

    let secret = secret.display().to_string();
    for path in [secret.as_str(), relative.as_str(), "link", "dirlink/secret.txt"] {
        let o = run(&host, json!({"program": "cat", "args": [path]})).await;
        assert_ne!(o["exit_code"], 0, "{path}: {o}");
        assert!(!printed(&o).contains(SECRET), "{path}: {o}");
    }
    let o =
        run(&host, json!({"shell": format!("cat {secret}; cat < link; ls {}", outside.path().display())}))
            .await;
    assert!(!printed(&o).contains(SECRET) && !printed(&o).contains("secret.txt\n"), "{o}");

    // The host's home and process information.
    let o = run(&host, json!({"program": "ls", "args": ["-a", "/root"]})).await;
    assert_ne!(o["exit_code"], 0, "{o}");
    let o = run(&host, json!({"program": "cat", "args": ["/proc/self/environ"]})).await;
    assert_ne!(o["exit_code"], 0, "{o}");
    assert!(!stdout(&o).contains("PATH="), "{o}");
    let o = run(&host, json!({"program": "cat", "args": ["/proc/1/environ"]})).await;
    assert!(stdout(&o).is_empty(), "{o}");
    still_serves(&host).await;
}

/// `/etc` is readable for children, but not the files only its owner may read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_only_system_files_stay_unreadable() {
    let (host, _dir) = exec_host(&["cat", "ls"], false, ExecSettings::default()).await;
    for path in ["/etc/shadow", "/etc/gshadow"] {
        let Ok(meta) = std::fs::metadata(path) else { continue };
        // Only meaningful for a file that is not world-readable.
        if meta.permissions().mode() & 0o004 != 0 {
            continue;
        }
        let o = run(&host, json!({"program": "cat", "args": [path]})).await;
        assert_ne!(o["exit_code"], 0, "{path} was readable: {o}");
        assert!(!stdout(&o).contains("root:"), "{path} was readable: {o}");
    }
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_outside_the_work_dir_can_be_written() {
    let (host, dir) = exec_host(&["touch", "cp", "mkdir"], true, ExecSettings::default()).await;
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("dirlink")).unwrap();
    let in_outside = outside.path().join("created");
    let in_tmp = std::env::temp_dir().join(unique("toolhost-exec-escape"));
    let targets = [in_outside.display().to_string(), in_tmp.display().to_string(), "dirlink/via-link".into()];
    for target in &targets {
        let o = run(&host, json!({"program": "touch", "args": [target]})).await;
        assert_ne!(o["exit_code"], 0, "{target}: {o}");
    }
    let line = format!(
        "echo x > {}; mkdir {}.d; cp /etc/hostname dirlink/copied",
        in_outside.display(),
        in_tmp.display()
    );
    let o = run(&host, json!({ "shell": line })).await;
    assert_ne!(o["exit_code"], 0, "{o}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "something was written outside");
    assert!(!in_tmp.exists() && !Path::new(&format!("{}.d", in_tmp.display())).exists());
    // Inside, a writable call may write.
    let o = run(&host, json!({"program": "touch", "args": ["inside"]})).await;
    assert_eq!(o["exit_code"], 0, "{o}");
    assert!(dir.path().join("inside").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_call_cannot_change_the_work_dir() {
    let (host, dir) =
        exec_host(&["touch", "rm", "mkdir", "mv", "ln", "truncate"], true, ExecSettings::default()).await;
    let file = dir.path().join("existing.txt");
    std::fs::write(&file, "original").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let attempts = [
        json!({"program": "touch", "args": ["new.txt"]}),
        json!({"program": "rm", "args": ["existing.txt"]}),
        json!({"program": "rm", "args": ["-r", "sub"]}),
        json!({"program": "mkdir", "args": ["newdir"]}),
        json!({"program": "mv", "args": ["existing.txt", "moved.txt"]}),
        json!({"program": "ln", "args": ["-s", "existing.txt", "link"]}),
        json!({"program": "ln", "args": ["existing.txt", "hard"]}),
        json!({"program": "truncate", "args": ["-s", "0", "existing.txt"]}),
        json!({"shell": "echo more >> existing.txt"}),
        json!({"shell": "echo new > existing.txt"}),
        json!({"shell": "mkfifo fifo"}),
    ];
    for args in &attempts {
        let o = outcome(&call(&host, "spawn_ro", args.clone()).await);
        assert_ne!(o["exit_code"], 0, "{args}: {o}");
    }
    let names: BTreeSet<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["existing.txt".to_string(), "sub".to_string()]));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");

    // Reading works read-only; the same writes work through the writable tool.
    let r = call(&host, "spawn_ro", json!({"shell": "cat existing.txt"})).await;
    assert_eq!(stdout(&outcome(&r)), "original");
    for args in
        [json!({"program": "touch", "args": ["new.txt"]}), json!({"shell": "echo more >> existing.txt"})]
    {
        let o = run(&host, args.clone()).await;
        assert_eq!(o["exit_code"], 0, "{args}: {o}");
    }
    assert!(dir.path().join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "originalmore\n");
}

/// Landlock (ABI 6) has no right for changing a file's mode or times; a read-only
/// call must not be able to make a file executable (or unreadable) either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_call_cannot_change_file_modes() {
    let (host, dir) = exec_host(&["chmod"], false, ExecSettings::default()).await;
    let file = dir.path().join("script.sh");
    std::fs::write(&file, "echo hi\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = call(&host, "spawn_ro", json!({"program": "chmod", "args": ["755", "script.sh"]})).await;
    let o = outcome(&r);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644, "a read-only call changed the mode to {mode:o}: {o}");
    assert_ne!(o["exit_code"], 0, "{o}");
}

/// A child must not leave a set-user-id file behind (when the host runs as root, a
/// child that keeps uid 0 would make it set-uid root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_leave_a_setuid_file() {
    let (host, dir) = exec_host(&["cp", "chmod"], false, ExecSettings::default()).await;
    let o = run(&host, json!({"program": "cp", "args": ["/usr/bin/id", "myid"]})).await;
    assert_eq!(o["exit_code"], 0, "{o}");
    let _ = run(&host, json!({"program": "chmod", "args": ["6755", "myid"]})).await;
    let meta = std::fs::metadata(dir.path().join("myid")).unwrap();
    let mode = meta.permissions().mode() & 0o7777;
    assert!(
        mode & 0o6000 == 0 || meta.uid() != 0,
        "a child made a set-uid/set-gid file owned by uid {} (mode {mode:o})",
        meta.uid()
    );
}

// ---------------------------------------------------------------------------
// 4. Network
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_have_no_network_not_even_loopback() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // ::1 too when the host has IPv6.
    let v6 = std::net::TcpListener::bind("[::1]:0").ok();
    if let Some(l) = &v6 {
        l.set_nonblocking(true).unwrap();
    }
    require("python3");
    let (host, _dir) = exec_host(&["python3"], true, ExecSettings::default()).await;

    let o = run(&host, json!({"shell": format!("echo hi > /dev/tcp/127.0.0.1/{port}"), "timeout_ms": 5000}))
        .await;
    assert_ne!(o["exit_code"], 0, "{o}");
    if let Some(l) = &v6 {
        let port6 = l.local_addr().unwrap().port();
        let o =
            run(&host, json!({"shell": format!("echo hi > /dev/tcp/::1/{port6}"), "timeout_ms": 5000})).await;
        assert_ne!(o["exit_code"], 0, "{o}");
    }
    let script = format!("import socket; socket.create_connection(('127.0.0.1', {port}), 2)");
    let o = run(&host, json!({"program": "python3", "args": ["-c", script], "timeout_ms": 5000})).await;
    assert_ne!(o["exit_code"], 0, "{o}");
    assert!(stderr(&o).contains("Error"), "{o}");
    // Not even its own namespace's loopback is up to serve on.
    let script = "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); \
                  c = socket.create_connection(s.getsockname(), 2); print('connected')";
    let o = run(&host, json!({"program": "python3", "args": ["-c", script], "timeout_ms": 5000})).await;
    assert!(!stdout(&o).contains("connected"), "{o}");

    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        match listener.accept() {
            Ok((_, peer)) => panic!("a child connected to the host's loopback from {peer}"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        }
        if let Some(l) = &v6 {
            assert!(l.accept().is_err(), "a child connected to the host's ::1");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 5. CPU and processes
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_spinner_is_killed_at_its_deadline() {
    let (host, _dir) = exec_host(&[], true, ExecSettings::default()).await;
    let started = Instant::now();
    let o = run(&host, json!({"shell": "echo spinning; while :; do :; done", "timeout_ms": 500})).await;
    let took = started.elapsed();
    assert_eq!(o["timed_out"], true, "{o}");
    assert_eq!(stdout(&o), "spinning\n", "the output before the deadline is kept: {o}");
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(5), "took {took:?}");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_contained() {
    let _turn = PROCESSES.lock().await;
    let settings = ExecSettings {
        limits: ChildLimits { processes: 64, ..ChildLimits::default() },
        ..Default::default()
    };
    let (host, _dir) = exec_host(&[], true, settings).await;
    let host = Arc::new(host);
    let marker = unique("forkbomb");
    let baseline = process_count();
    let started = Instant::now();
    // The leader stays (sleep) so the bomb rages until the deadline.
    let line = format!(":(){{ :|:& }};:; sleep 30 # {marker}");
    let task = {
        let host = host.clone();
        tokio::spawn(async move { call(&host, "spawn", json!({"shell": line, "timeout_ms": 2000})).await })
    };
    // Meanwhile, the most of its processes alive at once.
    let mut most = 0;
    while !task.is_finished() {
        most = most.max(pids_with(&marker).len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = task.await.unwrap();
    let took = started.elapsed();
    let o = outcome(&r);
    assert_eq!(o["timed_out"], true, "{o}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(most > 10, "the bomb never went off ({most} processes at most): {o}");
    assert!(most <= 64, "{most} processes at once with a cap of 64");

    // Nothing of the bomb is left, and the system is back near where it was.
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = pids_with(&marker);
        let count = process_count();
        if left.is_empty() && count <= baseline + 10 {
            break;
        }
        assert!(
            Instant::now() < until,
            "after the bomb: {} of its processes left, {count} vs {baseline}",
            left.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_cap_bounds_forks() {
    require("python3");
    let _turn = PROCESSES.lock().await;
    let settings = ExecSettings {
        limits: ChildLimits { processes: 16, ..ChildLimits::default() },
        ..Default::default()
    };
    let (host, _dir) = exec_host(&["python3"], false, settings).await;
    let marker = unique("forks");
    let script = format!(
        "import os, sys, time\n# {marker}\nn = 0\ntry:\n    for _ in range(200):\n        if os.fork() == 0:\n            \
         time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)\nsys.stdout.flush()\nos._exit(0)\n"
    );
    let o = run(&host, json!({"program": "python3", "args": ["-c", script], "timeout_ms": 10000})).await;
    let forked: u32 = stdout(&o).trim().parse().unwrap_or_else(|_| panic!("{o}"));
    assert!((1..16).contains(&forked), "forked {forked} with a cap of 16: {o}");
    let until = Instant::now() + Duration::from_secs(3);
    while !pids_with(&marker).is_empty() {
        assert!(Instant::now() < until, "forked children survived: {:?}", pids_with(&marker));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 6. No survivors
// ---------------------------------------------------------------------------

/// Background jobs of every kind, each echoing its pid, then the shell waits.
const DETACH: &str = "sleep 1000 & echo pid:$!\n\
    setsid sleep 1000 & echo pid:$!\n\
    (sleep 1000 & echo pid:$!)\n\
    nohup sleep 1000 >/dev/null 2>&1 & echo pid:$!\n\
    (setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo pid:$!)\n\
    bash -c 'echo $$ > pidfile; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n";

fn pidfile_pid(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join("pidfile")).ok().and_then(|s| s.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_a_timeout() {
    let _turn = PROCESSES.lock().await;
    let (host, dir) = exec_host(&[], true, ExecSettings::default()).await;
    let started = Instant::now();
    let o = run(
        &host,
        json!({"shell": format!("{DETACH}sleep 0.3; echo all-started; sleep 1000"), "timeout_ms": 1500}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(o["timed_out"], true, "{o}");
    assert!(took < Duration::from_secs(6), "took {took:?}");
    let mut pids = echoed_pids(stdout(&o));
    assert_eq!(pids.len(), 5, "the output before the deadline is kept: {o}");
    assert!(stdout(&o).contains("all-started"), "{o}");
    pids.extend(pidfile_pid(dir.path()));
    assert_eq!(pids.len(), 6, "{o}");
    assert_gone(&pids, "sleep", Duration::from_secs(2)).await;
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_a_normal_exit() {
    let _turn = PROCESSES.lock().await;
    let (host, dir) = exec_host(&[], true, ExecSettings::default()).await;
    let started = Instant::now();
    let o = run(&host, json!({"shell": format!("{DETACH}sleep 0.3; exit 0"), "timeout_ms": 20000})).await;
    let took = started.elapsed();
    assert_eq!((o["exit_code"].as_i64(), &o["timed_out"]), (Some(0), &json!(false)), "{o}");
    assert!(took < Duration::from_secs(5), "waited for the background jobs: {took:?}");
    let mut pids = echoed_pids(stdout(&o));
    pids.extend(pidfile_pid(dir.path()));
    assert_eq!(pids.len(), 6, "{o}");
    assert_gone(&pids, "sleep", Duration::from_secs(2)).await;
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 7. Limits
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_size_limit_holds() {
    let (host, dir) = exec_host(&[], true, limits(|l| l.file_size_bytes = 1 << 20)).await;
    let o = run(&host, json!({"shell": "head -c 5000000 /dev/zero > big"})).await;
    assert_ne!(o["exit_code"], 0, "{o}");
    let size = std::fs::metadata(dir.path().join("big")).unwrap().len();
    assert!(size <= 1 << 20, "big is {size} bytes");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_space_limit_holds() {
    require("python3");
    let (host, _dir) = exec_host(&["python3"], false, limits(|l| l.memory_bytes = 256 << 20)).await;
    let o = run(
        &host,
        json!({"program": "python3", "args": ["-c", "b = bytearray(1 << 30); print('allocated')"]}),
    )
    .await;
    assert_ne!(o["exit_code"], 0, "{o}");
    assert!(!stdout(&o).contains("allocated"), "{o}");
    assert!(stderr(&o).contains("MemoryError"), "{o}");
    // A small allocation under the same limit works.
    let o = run(&host, json!({"program": "python3", "args": ["-c", "b = bytearray(1 << 20); print('ok')"]}))
        .await;
    assert_eq!(stdout(&o), "ok\n", "{o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cpu_time_limit_holds() {
    let (host, _dir) = exec_host(&[], true, limits(|l| l.cpu_seconds = 1)).await;
    let started = Instant::now();
    let o = run(&host, json!({"shell": "while :; do :; done", "timeout_ms": 20000})).await;
    let took = started.elapsed();
    assert_eq!(o["timed_out"], false, "the deadline, not RLIMIT_CPU, ended it: {o}");
    // SIGXCPU at the soft limit (SIGKILL at the hard one).
    assert!(o["signal"] == 24 || o["signal"] == 9, "{o}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_flood_is_cut_to_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    // The model-facing clamp is not what this is about: keep the whole report.
    let host = exec_builder(dir.path(), &[], true, limits(|l| l.output_bytes = 64 << 10))
        .limits(Limits { clamp_bytes: 4 << 20, ..Limits::default() })
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let flood = "yes | head -c 50000000";
    // The request's own cap.
    let o = run(&host, json!({"shell": flood, "max_output_bytes": 4096})).await;
    assert_eq!(o["stdout_total"], 50_000_000, "{o}");
    assert!(o["stdout_cut"].as_u64().unwrap() > 0, "{o}");
    assert!(stdout(&o).len() <= 4096 + 100, "{} bytes kept", stdout(&o).len());
    assert!(stdout(&o).starts_with("y\ny\n") && stdout(&o).ends_with("y\n") && stdout(&o).contains("cut"));
    // More than the host allows is clamped to its limit.
    let o = run(&host, json!({"shell": format!("{flood}; {flood} >&2"), "max_output_bytes": 10 << 20})).await;
    assert!(stdout(&o).len() <= (64 << 10) + 100, "{} bytes kept", stdout(&o).len());
    assert!(stderr(&o).len() <= (64 << 10) + 100, "{} bytes kept", stderr(&o).len());
    assert!(o["stdout_cut"].as_u64().unwrap() > 0 && o["stderr_cut"].as_u64().unwrap() > 0, "{o}");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_is_delivered_and_streams_merge() {
    let (host, _dir) = exec_host(&["cat"], true, ExecSettings::default()).await;
    let o = run(&host, json!({"program": "cat", "stdin": "hello"})).await;
    assert_eq!((stdout(&o), o["exit_code"].as_i64()), ("hello", Some(0)), "{o}");
    // Without stdin, stdin is empty (not the host's).
    let o = run(&host, json!({"program": "cat", "timeout_ms": 5000})).await;
    assert_eq!((stdout(&o), &o["timed_out"]), ("", &json!(false)), "{o}");
    let o = run(&host, json!({"shell": "echo out; echo err >&2; echo out2", "merge_stderr": true})).await;
    assert_eq!((stdout(&o), stderr(&o)), ("out\nerr\nout2\n", ""), "{o}");
}

// ---------------------------------------------------------------------------
// 8. Environment
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_see_only_the_fixed_and_granted_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut host_env: Vec<(String, String)> = std::env::vars().collect();
    host_env.push(("AWS_SECRET_ACCESS_KEY".into(), "wJalrXUtnFEMI-aws-secret-value".into()));
    host_env.push(("GITHUB_TOKEN".into(), "ghp_0123456789abcdefghijABCDEFGHIJ012345".into()));
    let host = exec_builder(dir.path(), &["env"], true, ExecSettings::default())
        .host_env(host_env)
        .plugin_env(PLUGIN, "TOOLHOST_TEST_GRANTED", "granted-value-42")
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let fixed = ["PATH", "HOME", "TMPDIR", "LANG", "TOOLHOST_TEST_GRANTED"];
    let bash_adds = ["PWD", "SHLVL", "_"];
    for (args, extra) in [(json!({"program": "env"}), &[][..]), (json!({"shell": "env"}), &bash_adds[..])] {
        let o = run(&host, args.clone()).await;
        let names: BTreeSet<&str> =
            stdout(&o).lines().filter_map(|l| l.split_once('=')).map(|(k, _)| k).collect();
        let allowed: BTreeSet<&str> = fixed.iter().chain(extra).copied().collect();
        let unexpected: Vec<&&str> = names.difference(&allowed).collect();
        assert!(unexpected.is_empty(), "{args}: unexpected variables {unexpected:?}: {o}");
        assert!(names.contains("TOOLHOST_TEST_GRANTED") && names.contains("PATH"), "{o}");
        for secret in ["wJalrXUtnFEMI", "ghp_0123456789", "AWS_SECRET", "GITHUB_TOKEN"] {
            assert!(!o.to_string().contains(secret), "{secret}: {o}");
        }
        let home = format!("HOME={}\n", real(&dir).display());
        assert!(stdout(&o).contains(&home), "{o}");
    }

    // A granted name may be set per call; any other may not.
    let o = run(&host, json!({"program": "env", "env": {"TOOLHOST_TEST_GRANTED": "per-call-value"}})).await;
    assert!(stdout(&o).contains("TOOLHOST_TEST_GRANTED=per-call-value\n"), "{o}");
    for name in ["AWS_SECRET_ACCESS_KEY", "LD_PRELOAD", "PATH", "BASH_ENV", "HOME"] {
        let r = call(&host, "spawn", json!({"program": "env", "env": {name: "/tmp/x"}})).await;
        assert_eq!(code(&r), "env_not_allowed", "{name}: {:?} {}", r.error, r.output);
    }
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 9. Busy and cancel
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_child_too_many_is_busy() {
    let _turn = PROCESSES.lock().await;
    let (host, _dir) =
        exec_host(&["sleep"], false, ExecSettings { max_children: 1, ..Default::default() }).await;
    let host = Arc::new(host);
    let token = CancellationToken::new();
    let first = {
        let (host, token) = (host.clone(), token.clone());
        tokio::spawn(async move {
            let call = ToolCall::new("spawn", json!({"program": "sleep", "args": ["5"]})).with_cancel(token);
            host.execute(call).await
        })
    };
    let pid = running_child(&host).await;
    let r = call(&host, "spawn", json!({"program": "echo", "args": ["second"]})).await;
    assert_eq!(code(&r), "exec_busy", "{:?} {}", r.error, r.output);

    token.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(5), first).await.expect("the first call ends").unwrap();
    assert_gone(&[pid], "sleep", Duration::from_secs(2)).await;
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_kills_its_child() {
    let _turn = PROCESSES.lock().await;
    let (host, _dir) = exec_host(&["sleep"], false, ExecSettings::default()).await;
    let host = Arc::new(host);
    let token = CancellationToken::new();
    let task = {
        let (host, token) = (host.clone(), token.clone());
        tokio::spawn(async move {
            let call =
                ToolCall::new("spawn", json!({"program": "sleep", "args": ["100"]})).with_cancel(token);
            host.execute(call).await
        })
    };
    let pid = running_child(&host).await;
    assert!(alive(pid, "sleep"));
    let cancelled_at = Instant::now();
    token.cancel();
    let r = tokio::time::timeout(Duration::from_secs(10), task).await.expect("the call ends").unwrap();
    let took = cancelled_at.elapsed();
    assert!(took < Duration::from_secs(2), "the call ended {took:?} after its cancellation");
    if r.ok {
        assert_eq!(outcome(&r)["cancelled"], true, "{}", r.output);
    } else {
        assert_eq!(code(&r), "cancelled", "{:?}", r.error);
    }
    assert_gone(&[pid], "sleep", Duration::from_secs(2)).await;
    still_serves(&host).await;
}

// ---------------------------------------------------------------------------
// 10. Working directory
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_working_directory_stays_inside_the_work_dir() {
    let (host, dir) = exec_host(&["pwd"], false, ExecSettings::default()).await;
    let work = real(&dir);
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.join("sub/deeper")).unwrap();
    std::fs::write(work.join("file"), "").unwrap();
    std::os::unix::fs::symlink(outside.path(), work.join("out")).unwrap();
    std::os::unix::fs::symlink("/etc", work.join("etc")).unwrap();
    let outside_abs = outside.path().display().to_string();
    for cwd in ["..", "../..", "/etc", "/", "out", "etc", "sub/../..", "missing", "file", &outside_abs] {
        // A writable call may already be refused by the permissions (a path outside
        // the work dir), before the guest runs; a read-only one reaches exec.
        let r = call(&host, "spawn", json!({"program": "pwd", "cwd": cwd})).await;
        assert!(matches!(code(&r), "bad_cwd" | "permission_denied"), "{cwd:?}: {:?} {}", r.error, r.output);
        let r = call(&host, "spawn_ro", json!({"program": "pwd", "cwd": cwd})).await;
        assert_eq!(code(&r), "bad_cwd", "{cwd:?}: {:?} {}", r.error, r.output);
    }
    let abs = work.join("sub").display().to_string();
    for (cwd, want) in
        [("sub", "sub"), ("sub/deeper/..", "sub"), ("sub/deeper", "sub/deeper"), (&abs[..], "sub")]
    {
        let o = run(&host, json!({"program": "pwd", "cwd": cwd})).await;
        assert_eq!(stdout(&o), format!("{}\n", work.join(want).display()), "{cwd}: {o}");
    }
}

// ---------------------------------------------------------------------------
// 11. The capability
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_importing_exec_needs_a_grant() {
    let dir = tempfile::tempdir().unwrap();
    let err = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .plugin_bytes(PLUGIN, std::fs::read(EXEC_WASM).unwrap())
        .build()
        .await
        .err()
        .expect("the build fails without an exec grant");
    let text = err.to_string();
    assert!(matches!(err, toolhost::LoadError::CapabilityDenied { .. }), "{err:?}");
    assert!(text.contains("capability_denied") && text.contains("toolhost:plugin/exec"), "{text}");
}

// ---------------------------------------------------------------------------
// 12. The builtins: terminal and git
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_reports_exit_status_and_keeps_output_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    let r = call(&host, "terminal", json!({"command": "echo hi"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert!(r.output.starts_with("hi\n") && r.output.trim_end().ends_with("[exit 0]"), "{}", r.output);

    let r = call(&host, "terminal", json!({"command": "echo before-failing; exit 3"})).await;
    assert_eq!(code(&r), "command_failed", "{:?}", r.error);
    assert!(message(&r).contains("before-failing") && message(&r).contains("[exit 3]"), "{}", message(&r));

    let started = Instant::now();
    let r =
        call(&host, "terminal", json!({"command": "echo partial-output; sleep 30", "timeout_ms": 800})).await;
    assert_eq!(code(&r), "timeout", "{:?}", r.error);
    assert!(message(&r).contains("partial-output"), "{}", message(&r));
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());

    let started = Instant::now();
    let r = call(&host, "terminal", json!({"command": "while :; do :; done", "timeout_ms": 500})).await;
    assert_eq!(code(&r), "timeout", "{:?}", r.error);
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());

    for cwd in ["..", "/etc"] {
        let r = call(&host, "terminal", json!({"command": "pwd", "cwd": cwd})).await;
        assert!(!r.ok, "{cwd}: {}", r.output);
        assert!(matches!(code(&r), "path_escape" | "bad_cwd" | "permission_denied"), "{cwd}: {:?}", r.error);
    }
    // Confined like any child.
    let r = call(&host, "terminal", json!({"command": "cat /proc/self/environ; echo x > /tmp/x-$$"})).await;
    assert_eq!(code(&r), "command_failed", "{:?}", r.error);

    let r = call(&host, "terminal", json!({"command": "echo ok"})).await;
    assert!(r.ok, "{:?}", r.error);
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}: {status}");
}

/// Every file under `dir` with its length and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.push((entry.path(), meta.len(), meta.modified().unwrap()));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_inspects_read_only_and_takes_no_free_form_arguments() {
    require("git");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    std::fs::write(work.join("a.txt"), "one\n").unwrap();
    git(work, &["init", "-q"]);
    git(work, &["add", "a.txt"]);
    git(work, &["commit", "-q", "-m", "first commit"]);
    std::fs::write(work.join("a.txt"), "one\nchanged\n").unwrap();
    // Hostile repository configuration, added after the test's own git ran: none of it
    // may start a program that writes, and the external diff must not run at all.
    let marker = std::env::temp_dir().join(unique("toolhost-git-filter"));
    git(work, &["config", "diff.external", "sh -c 'echo PWNED-EXT'"]);
    git(work, &["config", "core.pager", "sh -c 'echo PWNED-PAGER'"]);
    git(work, &["config", "core.fsmonitor", "sh -c 'touch pwned-fsmonitor; echo'"]);
    git(
        work,
        &["config", "filter.evil.clean", &format!("sh -c 'touch pwned-filter {}; cat'", marker.display())],
    );
    std::fs::write(work.join(".gitattributes"), "a.txt filter=evil\n").unwrap();

    let host = builtin_host(work).await;
    let before = snapshot(&work.join(".git"));

    let mut outputs = Vec::new();
    for (args, want) in [
        (json!({"command": "status"}), " M a.txt"),
        (json!({"command": "diff"}), "+changed"),
        (json!({"command": "diff", "staged": true}), "(no differences)"),
        (json!({"command": "log", "n": 5, "paths": ["a.txt"]}), "first commit"),
    ] {
        let r = call(&host, "git", args.clone()).await;
        assert!(r.ok, "{args}: {:?}", r.error);
        assert!(r.output.contains(want), "{args}: {}", r.output);
        outputs.push(r.output);
    }
    assert!(outputs[0].contains("## main"), "{}", outputs[0]);
    for output in &outputs {
        assert!(!output.contains("PWNED"), "{output}");
    }
    assert!(!work.join(".git/index.lock").exists());
    assert_eq!(snapshot(&work.join(".git")), before, "a read-only git call changed .git");
    for name in ["pwned-filter", "pwned-fsmonitor"] {
        assert!(!work.join(name).exists(), "{name} was created");
    }
    assert!(!marker.exists(), "a filter wrote outside the work dir");

    for bad in [
        json!({"command": "push"}),
        json!({"command": "config"}),
        json!({"command": "status", "paths": ["--output=/tmp/x"]}),
        json!({"command": "log", "paths": ["-c"]}),
        json!({"command": "status", "extra": "x"}),
        json!({"command": "diff", "paths": ["../outside"]}),
        json!({"command": "log", "paths": [":(top)"]}),
    ] {
        let r = call(&host, "git", bad.clone()).await;
        assert_eq!(code(&r), "invalid_args", "{bad}: {:?}", r.error);
    }
    let r = call(&host, "git", json!({"command": "status"})).await;
    assert!(r.ok, "{:?}", r.error);
}

/// Set in the copy of this binary the next test runs as an unprivileged user.
const NON_ROOT_RUN: &str = "TOOLHOST_TEST_NON_ROOT";

/// A host that is not root has no pids cgroup: it caps processes with
/// `RLIMIT_NPROC` inside the child's own user namespace, and finds what a
/// process-group kill misses by that namespace. This runs the containment tests
/// again, as uid 65534, in a copy of this test binary.
#[test]
fn the_non_root_fallback_contains_and_cleans_up_too() {
    if std::env::var_os(NON_ROOT_RUN).is_some() || !toolhost_tests::is_root() {
        return;
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("setpriv (util-linux) is missing: it drops this test to an unprivileged user");
    let exe = std::env::current_exe().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args([
            "exec::nothing_survives",
            "exec::a_fork_bomb_is_contained",
            "exec::children_have_no_network",
            "--test-threads=2",
        ])
        .env(NON_ROOT_RUN, "1")
        .env("HOME", home.path())
        .env("TMPDIR", home.path())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "as uid 65534:\n{text}");
    assert!(text.contains("4 passed"), "the four tests ran as uid 65534:\n{text}");
}

/// A failed command's whole log is kept before the model's copy is cut: the error
/// names `read_output` with the call id and part, and every line reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commands_whole_log_is_stored_before_it_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    // About 2.3 MB of log, then a failure.
    let r = host
        .execute(
            ToolCall::new("terminal", json!({"command": "seq 1 350000; echo build-failed >&2; exit 1"}))
                .with_id("fail-log"),
        )
        .await;
    assert_eq!(code(&r), "command_failed", "{:?}", r.error);
    let shown = message(&r);
    assert!(shown.len() < 40_000, "the model's copy is cut: {} bytes", shown.len());
    assert!(shown.contains("read_output") && shown.contains("fail-log"), "the marker names where it is kept");
    assert!(shown.contains("build-failed") && shown.contains("[exit 1]"), "the tail stays in view");
    for line in [1, 175_000, 350_000] {
        let back = host
            .execute(ToolCall::new(
                "read_output",
                json!({"call_id": "fail-log", "part": "error", "pattern": format!("^{line}$"), "limit": 1}),
            ))
            .await;
        assert!(back.ok, "{:?}", back.error);
        assert!(back.output.contains(&line.to_string()), "line {line} is kept: {}", back.output);
    }
}

// ---------------------------------------------------------------------------
// 13. terminal: what a command changed in a git work dir
// ---------------------------------------------------------------------------

/// A repository in a fresh dir with `files` committed.
fn repo(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    dir
}

/// The changed paths a terminal call reported, with their status codes.
fn changed(r: &ToolResult) -> Vec<(String, String)> {
    let meta = r.metadata.as_ref().unwrap_or_else(|| panic!("no metadata: {}", r.output));
    let files = meta["changed"]["files"].as_array().unwrap_or_else(|| panic!("no changed: {meta}"));
    files.iter().map(|f| (f["path"].as_str().unwrap().into(), f["status"].as_str().unwrap().into())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_reports_what_a_command_changed_and_not_what_was_dirty() {
    require("git");
    let dir = repo(&[("a.txt", "one\n"), ("left.txt", "one\n"), ("again.txt", "one\n"), ("gone.txt", "x\n")]);
    let work = dir.path();
    // Dirty before the call: left.txt stays as it is, again.txt is changed again.
    std::fs::write(work.join("left.txt"), "one\ndirty\n").unwrap();
    std::fs::write(work.join("again.txt"), "one\ndirty\n").unwrap();
    std::fs::write(work.join("untracked-before.txt"), "u\n").unwrap();
    let host = builtin_host(work).await;

    let command = "echo two >> a.txt; printf 'n1\\nn2\\n' > fresh.txt; echo more >> again.txt; rm gone.txt; \
                   touch left.txt untracked-before.txt";
    let r = call(&host, "terminal", json!({ "command": command })).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(
        changed(&r),
        [
            ("a.txt".to_string(), " M".to_string()),
            ("again.txt".into(), " M".into()),
            ("fresh.txt".into(), "??".into()),
            ("gone.txt".into(), " D".into()),
        ],
        "{}",
        r.output
    );
    let meta = &r.metadata.as_ref().unwrap()["changed"];
    assert_eq!(meta["count"], 4);
    assert_eq!(meta["truncated"], false);
    // Against HEAD: a.txt +1, again.txt +2 (its earlier change too), fresh.txt +2, gone.txt -1.
    assert_eq!((meta["insertions"].as_u64(), meta["deletions"].as_u64()), (Some(5), Some(1)), "{meta}");
    assert_eq!(r.metadata.as_ref().unwrap()["exit_code"], 0);
    assert!(
        r.output.contains("[exit 0]\n[the command changed 4 files (+5 -1 lines)]\n M a.txt (+1 -0)\n"),
        "{}",
        r.output
    );
    assert!(!r.output.contains("left.txt") && !r.output.contains("untracked-before"), "{}", r.output);

    // Nothing changed: nothing added, in a dirty tree as in a clean one.
    let r = call(&host, "terminal", json!({"command": "true"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.output, "[exit 0]");
    assert!(r.metadata.as_ref().unwrap().get("changed").is_none());
    let clean = repo(&[("a.txt", "one\n")]);
    let clean_host = builtin_host(clean.path()).await;
    let r = call(&clean_host, "terminal", json!({"command": "true"})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "[exit 0]"));

    // A failing command's changes are in its message.
    let r = call(&host, "terminal", json!({"command": "echo x > failed.txt; exit 4"})).await;
    assert_eq!(code(&r), "command_failed", "{:?}", r.error);
    assert!(
        message(&r).contains("[exit 4]\n[the command changed 1 file (+1 -0 lines)]\n?? failed.txt"),
        "{}",
        message(&r)
    );

    // A commit (under a commit grant) moves HEAD and cleans what it committed.
    let host = Host::builder()
        .work_dir(work)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .builtin_exec(ExecGrant {
            programs: vec!["git".into()],
            shell: true,
            unconfined: false,
            commit: true,
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let r = call(
        &host,
        "terminal",
        json!({"command": "git -c user.name=t -c user.email=t@t commit -qm second a.txt"}),
    )
    .await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(changed(&r), [("a.txt".to_string(), "clean".to_string())], "{}", r.output);
    let head = &r.metadata.as_ref().unwrap()["changed"]["head"];
    assert!(
        head["before"].is_string() && head["after"].is_string() && head["before"] != head["after"],
        "{head}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_repository_or_without_git_nothing_is_added() {
    let plain = tempfile::tempdir().unwrap();
    let host = builtin_host(plain.path()).await;
    let r = call(&host, "terminal", json!({"command": "echo x > new.txt"})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "[exit 0]"), "{:?}", r.error);
    // A `.git` that is no repository: git fails, nothing is added, the call is fine.
    std::fs::create_dir(plain.path().join(".git")).unwrap();
    let r = call(&host, "terminal", json!({"command": "echo y > other.txt"})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "[exit 0]"), "{:?}", r.error);
    require("git");
    // A repository, but the builtins may not run git: the shell still works, nothing added.
    let dir = repo(&[("a.txt", "one\n")]);
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .builtin_exec(ExecGrant { programs: vec![], shell: true, unconfined: false, commit: false })
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let r = call(&host, "terminal", json!({"command": "echo two >> a.txt"})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "[exit 0]"), "{:?}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_repository_config_runs_nothing_when_changes_are_recorded() {
    require("git");
    let dir = repo(&[("a.txt", "one\n")]);
    let work = dir.path();
    let hooks = work.join("evil-hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in ["post-index-change", "pre-commit", "post-checkout", "reference-transaction"] {
        let path = hooks.join(hook);
        std::fs::write(&path, format!("#!/bin/sh\ntouch {}/pwned-{hook}\n", work.display())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    git(
        work,
        &["config", "core.fsmonitor", &format!("sh -c 'touch {}/pwned-fsmonitor; echo'", work.display())],
    );
    git(work, &["config", "core.hooksPath", &hooks.display().to_string()]);
    git(work, &["config", "core.pager", &format!("sh -c 'touch {}/pwned-pager; cat'", work.display())]);
    git(
        work,
        &["config", "pager.status", &format!("sh -c 'touch {}/pwned-pager-status; cat'", work.display())],
    );
    git(work, &["config", "pager.diff", &format!("sh -c 'touch {}/pwned-pager-diff; cat'", work.display())]);
    git(work, &["config", "diff.external", &format!("sh -c 'touch {}/pwned-external'", work.display())]);
    let host = builtin_host(work).await;
    // a.txt's stat changes (git would refresh the index) and its content too (a diff runs).
    let r = call(&host, "terminal", json!({"command": "sleep 1.1; echo two >> a.txt"})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(changed(&r), [("a.txt".to_string(), " M".to_string())], "{}", r.output);
    let r = call(&host, "terminal", json!({"command": "touch a.txt"})).await;
    assert!(r.ok, "{:?}", r.error);
    let pwned: Vec<String> = std::fs::read_dir(work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pwned"))
        .collect();
    assert!(pwned.is_empty(), "ran: {pwned:?}");
    assert!(!work.join(".git/index.lock").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_changed_files_give_a_bounded_report() {
    require("git");
    let dir = repo(&[("a.txt", "one\n")]);
    let host = builtin_host(dir.path()).await;
    let started = Instant::now();
    let r = call(
        &host,
        "terminal",
        json!({"command": "mkdir gen && for i in $(seq 1 10000); do : > gen/f$i; done"}),
    )
    .await;
    assert!(r.ok, "{:?}", r.error);
    let meta = &r.metadata.as_ref().unwrap()["changed"];
    assert_eq!((meta["count"].as_u64(), meta["truncated"].as_bool()), (Some(10_000), Some(true)), "{meta}");
    assert_eq!(meta["files"].as_array().unwrap().len(), 50);
    assert!(r.output.contains("... and 9950 more\n"), "{}", r.output);
    assert!(r.output.len() < 4_000, "{} bytes", r.output.len());
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}
