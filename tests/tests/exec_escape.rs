//! Escapes from a confined child (issue 13): descriptors the host holds open, unix
//! sockets reached by path, and writes to `.git` and the other protected paths —
//! code that would run unconfined the next time the user types a git command.
//!
//! Every attempt goes through `toolhost::Host` (the builtin `terminal`, or the
//! `exec-test` guest) or the `toolhost` binary, and each asserts both the refusal
//! and that nothing changed, checked by the test itself, unconfined.
//!
//! Network: the listeners here are loopback TCP/UDP and unix sockets the test
//! binds; nothing is addressed outside 127.0.0.1 and ::1.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{ExecGrant, ExecSettings};
use toolhost::{Host, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::{EXEC_WASM, test_engine_settings, toolhost_bin};

const SECRET: &str = "toolhost-escape-secret-51c2";

// ---------------------------------------------------------------------------
// Hosts, calls, git
// ---------------------------------------------------------------------------

/// A host with the builtins (`terminal` and `git` with the default grant) over `dir`.
async fn builtin_host(dir: &Path) -> Host {
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A host over `dir` with `policy` written to `dir/toolhost.toml`.
async fn policy_host(dir: &Path, policy: &str) -> Host {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).unwrap();
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .policy(Policy::load(&path).unwrap_or_else(|e| panic!("{e}")))
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn terminal(host: &Host, command: &str) -> ToolResult {
    host.execute(ToolCall::new("terminal", json!({"command": command, "timeout_ms": 20000}))).await
}

fn message(r: &ToolResult) -> String {
    r.error.as_ref().map(|e| e.message.clone()).unwrap_or_default()
}

/// The command ran and failed, the kernel refusing it (`EROFS`, `EBUSY`, `EPERM`).
fn assert_refused(r: &ToolResult, what: &str) {
    assert_eq!(r.code(), Some("command_failed"), "{what}: {:?} {}", r.error, r.output);
    let text = message(r);
    assert!(
        ["Read-only file system", "Device or resource busy", "Operation not permitted"]
            .iter()
            .any(|e| text.contains(e)),
        "{what}: not refused by the kernel: {text}"
    );
}

/// The call failed `permission_denied`, naming `path`, and `path` is gone.
fn assert_creation_undone(r: &ToolResult, dir: &Path, path: &str, what: &str) {
    assert_eq!(r.code(), Some("permission_denied"), "{what}: {:?} {}", r.error, r.output);
    assert!(message(r).contains(&format!("{path} was created")), "{what}: {}", message(r));
    assert!(std::fs::symlink_metadata(dir.join(path)).is_err(), "{what}: {path} is still there");
}

/// `git ARGS` in `dir`, run by the test (unconfined), with no user or system config.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs")
}

fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir, args);
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit in `dir`, and the script `evil` beside it that
/// leaves `PWNED` when something runs it.
fn init_repo(dir: &Path) {
    git_ok(dir, &["init", "-q"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    git_ok(dir, &["add", "README"]);
    git_ok(dir, &["commit", "-q", "-m", "first"]);
    std::fs::write(dir.join("evil"), "#!/bin/sh\ntouch \"$(dirname \"$0\")/PWNED\"\n").unwrap();
    std::fs::set_permissions(dir.join("evil"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every entry under `dir` (not followed) with its bytes, or its link target, or
/// `dir/`.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let value = if meta.is_symlink() {
                std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes()
            } else if meta.is_dir() {
                stack.push(path.clone());
                b"dir/".to_vec()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), value);
        }
    }
    out
}

/// After the attempts: git, run by the test, finds no hook and no fsmonitor to
/// run, and committing runs nothing planted.
fn assert_git_untouched(dir: &Path) {
    let out = git(dir, &["config", "--get", "core.fsmonitor"]);
    assert!(out.stdout.is_empty(), "core.fsmonitor was set: {}", String::from_utf8_lossy(&out.stdout));
    git_ok(dir, &["status", "--porcelain"]);
    git_ok(dir, &["commit", "-q", "--allow-empty", "-m", "after"]);
    assert!(!dir.join("PWNED").exists(), "something planted ran unconfined in {}", dir.display());
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

// ---------------------------------------------------------------------------
// 1. Descriptors the host holds open
// ---------------------------------------------------------------------------

/// The `toolhost` binary started with fds 5, 9 and 200 open without close-on-exec
/// (as a parent process, a service manager or a library may leave them): its
/// children reach none of them.
#[test]
fn descriptors_the_binary_inherits_never_reach_its_children() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let (out5, out200, secret) =
        (outside.path().join("five"), outside.path().join("two-hundred"), outside.path().join("secret"));
    std::fs::write(&secret, SECRET).unwrap();
    let attempts = [
        "echo pwned >&5",
        "cat <&9",
        "exec 3>&200; echo pwned >&3",
        "exec 4<&9; cat <&4",
        "for fd in $(seq 3 255); do { echo pwned >&$fd; } 2>/dev/null; done; echo scanned",
    ];
    for command in attempts {
        std::fs::write(&out5, "").unwrap();
        std::fs::write(&out200, "").unwrap();
        let args = json!({ "command": command }).to_string();
        // The wrapper opens the fds, proves they work, and becomes the host.
        let out = Command::new("bash")
            .args([
                "-c",
                "exec 5>>\"$1\" 9<\"$2\" 200>>\"$3\" && echo control >&5 && echo control >&200 && \
                 exec \"$4\" call terminal \"$5\" --mode yolo --work-dir \"$6\" --json",
                "wrapper",
            ])
            .args([&out5, &secret, &out200, toolhost_bin()])
            .arg(&args)
            .arg(work.path())
            .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
            .env_remove("TOOLHOST_LOG")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let doc: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{command}: {e}: {stdout} {}", String::from_utf8_lossy(&out.stderr)));
        assert!(!stdout.contains(SECRET), "{command}: the child read an inherited fd: {doc}");
        assert_eq!(std::fs::read_to_string(&out5).unwrap(), "control\n", "{command}: {doc}");
        assert_eq!(std::fs::read_to_string(&out200).unwrap(), "control\n", "{command}: {doc}");
        if command.ends_with("scanned") {
            assert_eq!(doc["ok"], true, "{doc}");
        } else {
            assert_eq!(doc["ok"], false, "{command}: {doc}");
            assert!(doc["error"].as_str().unwrap().contains("Bad file descriptor"), "{command}: {doc}");
        }
    }
}

/// Descriptors opened without close-on-exec in the embedding process itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_the_embedding_process_leaks_never_reach_children() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let (out, secret) = (outside.path().join("out"), outside.path().join("secret"));
    std::fs::write(&out, "").unwrap();
    std::fs::write(&secret, SECRET).unwrap();
    let open = |path: &Path, flags: libc::c_int| {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: open(2) on a valid C string, without O_CLOEXEC on purpose.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        assert!(fd > 2, "open {}", path.display());
        fd
    };
    let (write_fd, read_fd) = (open(&out, libc::O_WRONLY | libc::O_APPEND), open(&secret, libc::O_RDONLY));
    // Control: a plain child of this process does inherit them.
    let status = Command::new("bash").args(["-c", &format!("echo inherited >&{write_fd}")]).status().unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "inherited\n");

    let host = builtin_host(work.path()).await;
    for command in [
        format!("echo pwned >&{write_fd}"),
        format!("cat <&{read_fd}"),
        format!("exec 3>&{write_fd}; echo pwned >&3"),
        format!("exec 7<&{read_fd}; head -c 100 <&7"),
        "for fd in $(seq 3 1023); do { echo pwned >&$fd; } 2>/dev/null; done".to_string(),
        // The host's own descriptor links, and the file by the host's root.
        format!("echo pwned > /proc/{}/fd/{write_fd}", std::process::id()),
        format!("cat /proc/{}/fd/{read_fd}", std::process::id()),
        format!("cat /proc/{}/root{}", std::process::id(), secret.display()),
    ] {
        let r = terminal(&host, &command).await;
        let shown = format!("{}{}", r.output, message(&r));
        assert!(!shown.contains(SECRET), "{command}: {shown}");
        if command.contains("/proc/") {
            assert_eq!(r.code(), Some("command_failed"), "{command}: {shown}");
            assert!(shown.contains("Permission denied"), "{command}: {shown}");
        } else if !command.starts_with("for") {
            assert_eq!(r.code(), Some("command_failed"), "{command}: {shown}");
            assert!(shown.contains("Bad file descriptor"), "{command}: {shown}");
        }
    }
    // An unconfined child (the explicit opt-out) gets none of them either.
    let unconfined = Host::builder()
        .work_dir(work.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .builtin_exec(ExecGrant { shell: true, unconfined: true, ..ExecGrant::default() })
        .build()
        .await
        .unwrap();
    let r = terminal(&unconfined, &format!("echo pwned >&{write_fd}; cat <&{read_fd}")).await;
    assert!(message(&r).contains("Bad file descriptor") && !message(&r).contains(SECRET), "{}", message(&r));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "inherited\n", "a child wrote through a leaked fd");
    // SAFETY: closing the two descriptors this test opened.
    #[allow(unsafe_code)]
    unsafe {
        libc::close(write_fd);
        libc::close(read_fd);
    }
}

/// Descriptors are marked close-on-exec, not closed: std's own pipe still reports
/// a program that cannot be started (here: resolved at load, absent from the
/// child's root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_exec_is_still_reported() {
    let work = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let real = elsewhere.path().join("real-tool");
    std::fs::write(&real, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&real, bin.path().join("tool")).unwrap();
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .exec(ExecSettings { path: vec![bin.path().to_path_buf()], ..ExecSettings::default() })
        .plugin_bytes("exec-test", std::fs::read(EXEC_WASM).unwrap())
        .plugin_exec(ExecGrant { programs: vec!["tool".into(), "true".into()], ..ExecGrant::default() })
        .build()
        .await
        .unwrap();
    let r = host.execute(ToolCall::new("spawn", json!({"program": "tool"}))).await;
    assert_eq!(r.code(), Some("spawn_failed"), "{:?} {}", r.error, r.output);
    assert!(message(&r).contains("No such file or directory"), "{}", message(&r));
    let ok = host.execute(ToolCall::new("spawn", json!({"program": "true"}))).await;
    assert!(ok.ok && ok.output.contains("\"exit_code\":0"), "{:?} {}", ok.error, ok.output);
}

// ---------------------------------------------------------------------------
// 2. Sockets
// ---------------------------------------------------------------------------

/// A socket client for the child: prints CONNECTED or REFUSED.
const CLIENT: &str = r#"
import socket, sys
kind, target = sys.argv[1], sys.argv[2]
try:
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect("\0" + target[1:] if target.startswith("@") else target)
        s.sendall(b"escaped\n")
    elif kind == "tcp":
        host, port = target.rsplit(":", 1)
        s = socket.create_connection((host.strip("[]"), int(port)), 2)
        s.sendall(b"escaped\n")
    else:
        host, port = target.rsplit(":", 1)
        family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.sendto(b"escaped\n", (host.strip("[]"), int(port)))
    print("CONNECTED", kind, target)
except OSError as e:
    print("REFUSED", kind, target, type(e).__name__, e)
"#;

enum Listener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(std::net::TcpListener),
    Udp(std::net::UdpSocket),
}

/// What a child tries to reach: kind, address, the test's listener, its file.
type Target = (String, String, Listener, Option<PathBuf>);

/// A unix listener at `path`, when the test may bind one there.
fn bind_unix(path: PathBuf, targets: &mut Vec<Target>) {
    if let Ok(l) = std::os::unix::net::UnixListener::bind(&path) {
        l.set_nonblocking(true).unwrap();
        targets.push(("unix".to_string(), path.display().to_string(), Listener::Unix(l), Some(path)));
    }
}

impl Listener {
    /// Whether anything connected (or sent a datagram) since the last look.
    fn reached(&self) -> bool {
        let mut buf = [0u8; 64];
        match self {
            Listener::Unix(l) => l.accept().is_ok(),
            Listener::Tcp(l) => l.accept().is_ok(),
            Listener::Udp(s) => s.recv(&mut buf).is_ok(),
        }
    }
}

/// Host sockets — unix ones by path (in a dir outside the work dir, under `/tmp`,
/// under `/run`, and through a symlink in the work dir), an abstract one, TCP and
/// UDP on loopback — are all unreachable from `terminal`; each is reachable from
/// the test itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_sockets_are_unreachable() {
    use std::os::linux::net::SocketAddrExt;
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("client.py"), CLIENT).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut targets: Vec<Target> = Vec::new();
    bind_unix(outside.path().join("agent.sock"), &mut targets);
    bind_unix(std::env::temp_dir().join(format!("{}.sock", unique("toolhost-escape"))), &mut targets);
    // Only where the test may create one (as root, /run).
    bind_unix(PathBuf::from("/run").join(format!("{}.sock", unique("toolhost-escape"))), &mut targets);
    assert!(targets.len() >= 2, "no unix socket could be bound");
    std::os::unix::fs::symlink(outside.path().join("agent.sock"), work.path().join("link.sock")).unwrap();
    let name = unique("toolhost-escape-abstract");
    let abs = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let l = std::os::unix::net::UnixListener::bind_addr(&abs).unwrap();
    l.set_nonblocking(true).unwrap();
    targets.push(("unix".into(), format!("@{name}"), Listener::Unix(l), None));
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    targets.push(("tcp".into(), tcp.local_addr().unwrap().to_string(), Listener::Tcp(tcp), None));
    if let Ok(tcp6) = std::net::TcpListener::bind("[::1]:0") {
        tcp6.set_nonblocking(true).unwrap();
        targets.push(("tcp".into(), tcp6.local_addr().unwrap().to_string(), Listener::Tcp(tcp6), None));
    }
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    targets.push(("udp".into(), udp.local_addr().unwrap().to_string(), Listener::Udp(udp), None));

    let host = builtin_host(work.path()).await;
    let mut attempts: Vec<(String, String)> =
        targets.iter().map(|(kind, target, _, _)| (kind.clone(), target.clone())).collect();
    attempts.push(("unix".into(), "link.sock".into()));
    // Through another process's root or cwd link in /proc (the test's own, pid 1's).
    let agent = outside.path().join("agent.sock");
    for pid in [std::process::id(), 1] {
        attempts.push(("unix".into(), format!("/proc/{pid}/root{}", agent.display())));
    }
    attempts.push((
        "unix".into(),
        format!("/proc/{}/cwd/../../../../../../..{}", std::process::id(), agent.display()),
    ));
    for (kind, target) in &attempts {
        let r = terminal(&host, &format!("python3 client.py {kind} '{target}'")).await;
        assert!(r.ok, "{kind} {target}: {:?}", r.error);
        assert!(
            r.output.contains("REFUSED") && !r.output.contains("CONNECTED"),
            "{kind} {target}: {}",
            r.output
        );
    }
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        for (kind, target, listener, _) in &targets {
            assert!(!listener.reached(), "a child reached the host's {kind} socket {target}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Control: the same client, run by the test, reaches every one of them.
    for (kind, target, listener, _) in &targets {
        let out =
            Command::new("python3").arg(work.path().join("client.py")).args([kind, target]).output().unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("CONNECTED"),
            "control {kind} {target}: {out:?}"
        );
        let until = Instant::now() + Duration::from_secs(2);
        while !listener.reached() {
            assert!(Instant::now() < until, "control {kind} {target} never arrived");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for (_, _, _, path) in &targets {
        if let Some(path) = path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A unix socket inside the work dir still works: test suites use them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_inside_the_work_dir_still_works() {
    let work = tempfile::tempdir().unwrap();
    let script = "import socket\n\
                  s = socket.socket(socket.AF_UNIX); s.bind('here.sock'); s.listen()\n\
                  c = socket.socket(socket.AF_UNIX); c.connect('here.sock')\n\
                  a, _ = s.accept(); c.sendall(b'ping'); print('got', a.recv(4).decode())\n";
    std::fs::write(work.path().join("inside.py"), script).unwrap();
    let host = builtin_host(work.path()).await;
    let r = terminal(&host, "python3 inside.py && mkdir -p sub && cd sub && python3 ../inside.py").await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.output.matches("got ping").count(), 2, "{}", r.output);
}

/// The host's `/tmp`, `/run` and home are not in a child's root at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_tmp_run_and_home_have_no_name_in_a_childs_root() {
    let work = tempfile::tempdir().unwrap();
    let marker = unique("toolhost-escape-marker");
    let in_tmp = std::env::temp_dir().join(&marker);
    std::fs::write(&in_tmp, SECRET).unwrap();
    let in_run = Path::new("/run").join(&marker);
    let run_marked = std::fs::write(&in_run, SECRET).is_ok();
    let host = builtin_host(work.path()).await;
    let r = terminal(
        &host,
        &format!(
            "ls -A / /tmp /run /var/run /var/tmp; cat /tmp/{marker} /run/{marker}; ls /root /home; ls /proc"
        ),
    )
    .await;
    let shown = format!("{}{}", r.output, message(&r));
    assert!(!shown.contains(SECRET), "{shown}");
    let listing: Vec<&str> = shown.lines().collect();
    assert!(!listing.contains(&marker.as_str()), "{shown}");
    assert!(shown.contains("No such file or directory"), "{shown}");
    // /proc has names only: Landlock refuses listing it, as before.
    assert!(shown.contains("cannot open directory '/proc': Permission denied"), "{shown}");
    for name in ["home", "root", "sys", "opt", "srv", "boot", "mnt", "work"] {
        assert!(!listing.contains(&name), "`{name}` is in the child's root: {shown}");
    }
    let _ = std::fs::remove_file(in_tmp);
    if run_marked {
        let _ = std::fs::remove_file(in_run);
    }
}

// ---------------------------------------------------------------------------
// 3. .git and the other protected paths
// ---------------------------------------------------------------------------

/// Hooks, config, info and the `.git` entry itself cannot be written, removed,
/// renamed or replaced by a link; afterwards the test's own git finds nothing
/// planted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_hooks_and_config_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    init_repo(dir.path());
    let before = tree(&dir.path().join(".git"));
    let host = builtin_host(dir.path()).await;
    for command in [
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit",
        "cp evil .git/hooks/post-checkout",
        "touch .git/hooks/pre-push",
        "chmod +x .git/hooks/pre-commit.sample",
        "ln -sf \"$PWD/evil\" .git/hooks/pre-commit",
        "git config core.fsmonitor \"$PWD/evil\"",
        "echo '[core] fsmonitor = ./evil' >> .git/config",
        "printf '[core]\\n\\thooksPath = .\\n' > .git/config",
        "mv .git/config .git/config.old",
        "echo '*' > .git/info/exclude",
        "rm -rf .git/hooks",
        "rm -rf .git",
        "mv .git moved",
        "rm -rf .git && ln -s elsewhere .git",
    ] {
        let r = terminal(&host, command).await;
        assert_refused(&r, command);
    }
    assert_eq!(tree(&dir.path().join(".git")), before, ".git changed");
    assert_git_untouched(dir.path());
}

/// A nested repository's `.git`, at any depth, is protected the same way; a copy
/// of it made by moving the directory above it is not kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_repositories_are_protected_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    let (sub, deep) = (dir.path().join("sub/deep"), dir.path().join("vendor/a/b/c/d"));
    for repo in [&sub, &deep] {
        std::fs::create_dir_all(repo).unwrap();
        init_repo(repo);
    }
    let before = (tree(&sub.join(".git")), tree(&deep.join(".git")));
    let host = builtin_host(dir.path()).await;
    for command in [
        "printf '#!/bin/sh\\ntouch PWNED\\n' > sub/deep/.git/hooks/pre-commit",
        "git -C sub/deep config core.fsmonitor \"$PWD/sub/deep/evil\"",
        "echo '[core] fsmonitor = ./evil' >> vendor/a/b/c/d/.git/config",
        "cd vendor/a/b/c/d && git config core.hooksPath .",
        "rm -rf vendor/a/b/c/d/.git",
        "mv sub/deep/.git sub/deep/git",
    ] {
        assert_refused(&terminal(&host, command).await, command);
    }
    assert_eq!((tree(&sub.join(".git")), tree(&deep.join(".git"))), before);
    assert_git_untouched(&sub);
    assert_git_untouched(&deep);

    // Renaming a directory above a repository: the child's overlay refuses to rename
    // a dir it did not make (EXDEV), so `mv` copies it, and the copy's .git is
    // refused by the merge; the repository stays where it was, whole.
    let r = terminal(&host, "mv vendor/a moved").await;
    assert_eq!(r.code(), Some("permission_denied"), "{:?}", r.error);
    assert!(message(&r).contains("moved/b/c/d/.git was created (not kept)"), "{}", message(&r));
    assert!(std::fs::symlink_metadata(dir.path().join("moved/b/c/d/.git")).is_err());
    assert!(deep.join(".git/config").is_file() && deep.join(".git/HEAD").is_file());
}

/// Where there is no repository, a command that makes one — a `.git` dir, a `.git`
/// file pointing at a repository it made elsewhere, a symlink, one deep in a tree,
/// one made by a background process — fails `permission_denied`, and what it made
/// is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_a_git_anywhere_is_undone_and_fails_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    for (command, created) in [
        ("git init -q", ".git"),
        ("git init -q && printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit", ".git"),
        ("mkdir .git && printf '[core]\\n\\tfsmonitor = ./evil\\n' > .git/config", ".git"),
        ("mkdir -p sub/x/hooks && git init -q --bare sub/x && printf 'gitdir: sub/x\\n' > .git", ".git"),
        ("mkdir -p a/b/.git/hooks", "a/b/.git"),
        ("mkdir -p target && ln -s target .git", ".git"),
        ("git init -q nested/repo", "nested/repo/.git"),
        ("mkdir -p late; (sleep 0.3; mkdir late/.git) & sleep 0.8", "late/.git"),
    ] {
        let r = terminal(&host, command).await;
        assert_creation_undone(&r, dir.path(), created, command);
    }
    // What is not a .git stays: the bare repository a `.git` file pointed to is a
    // plain directory now (bare repositories are not covered; see protect_check).
    assert!(dir.path().join("sub/x").is_dir() && dir.path().join("target").is_dir());
    let ok = terminal(&host, "mkdir -p src && echo fine > src/lib.rs").await;
    assert!(ok.ok, "{:?}", ok.error);
}

/// A call that is cancelled, or whose future is dropped by the embedder while its
/// child runs, still has its overlay merged once the tree is killed: what the
/// child wrote arrives, the `.git` it made does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_created_by_an_abandoned_call_is_undone_too() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .data_dir(data.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let host = std::sync::Arc::new(host);
    let slow =
        |name: &str| json!({"command": format!("git init -q {name} && touch {name}/.started && sleep 60")});
    // Written (to its overlay layer, under the data dir) once `.started` is there.
    let started = |name: &str| {
        let (layers, name) = (data.path().to_path_buf(), name.to_string());
        async move {
            let until = Instant::now() + Duration::from_secs(10);
            while !find_beneath(&layers, &Path::new(&name).join(".started")) {
                assert!(Instant::now() < until, "the child never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let merged = |name: &str| {
        let (marker, git) = (dir.path().join(name).join(".started"), dir.path().join(name).join(".git"));
        async move {
            let until = Instant::now() + Duration::from_secs(10);
            while !marker.exists() {
                assert!(Instant::now() < until, "{} was never merged", marker.display());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(std::fs::symlink_metadata(&git).is_err(), "{} reached the work dir", git.display());
        }
    };

    // Dropped: the embedder gives up on the call.
    let call = host.execute(ToolCall::new("terminal", slow("dropped")));
    tokio::select! {
        _ = call => panic!("the call ended on its own"),
        _ = started("dropped") => {}
    }
    merged("dropped").await;

    // Cancelled: the call ends, and fails.
    let token = toolhost::CancellationToken::new();
    let task = {
        let (host, call) =
            (host.clone(), ToolCall::new("terminal", slow("cancelled")).with_cancel(token.clone()));
        tokio::spawn(async move { host.execute(call).await })
    };
    started("cancelled").await;
    token.cancel();
    let r = tokio::time::timeout(Duration::from_secs(10), task).await.expect("the call ends").unwrap();
    assert!(!r.ok, "{}", r.output);
    merged("cancelled").await;
}

/// Whether some path beneath `dir` ends with `tail`.
fn find_beneath(dir: &Path, tail: &Path) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.ends_with(tail) {
                return true;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    false
}

/// The host fails the call, not the guest: a guest that swallows the exec error
/// and reports success still gets `permission_denied`; so does `run_tests`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_fails_the_call_whatever_the_guest_says() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .plugin_bytes("exec-test", std::fs::read(EXEC_WASM).unwrap())
        .plugin_exec(ExecGrant { programs: vec!["git".into()], shell: true, ..ExecGrant::default() })
        .build()
        .await
        .unwrap();
    for (args, created) in [
        (json!({"shell": "git init -q"}), ".git"),
        (json!({"program": "git", "args": ["init", "-q", "deep/er"]}), "deep/er/.git"),
    ] {
        let r = host.execute(ToolCall::new("spawn_quiet", args.clone())).await;
        assert_creation_undone(&r, dir.path(), created, &args.to_string());
    }
    // Nothing is carried over to the next call.
    let ok = host.execute(ToolCall::new("spawn_quiet", json!({"shell": "true"}))).await;
    assert!(ok.ok && ok.output == "done", "{:?}", ok.error);

    let tests = "[tests.init]\ncommand = \"git\"\nargs = [\"init\", \"-q\", \"made\"]\n";
    let host = policy_host(dir.path(), tests).await;
    let r = host.execute(ToolCall::new("run_tests", json!({}))).await;
    assert_creation_undone(&r, dir.path(), "made/.git", "run_tests");
}

/// With `commit = true` a child can commit, while hooks and config stay read-only
/// and a missing guarded entry it creates is undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_grant_writes_repository_data_only() {
    let dir = tempfile::tempdir().unwrap();
    init_repo(dir.path());
    std::fs::write(dir.path().join(".gitignore"), "toolhost.toml\nevil\n").unwrap();
    let host =
        policy_host(dir.path(), "[builtins]\nexec = { programs = [\"git\"], shell = true, commit = true }\n")
            .await;
    let r = terminal(
        &host,
        "echo change >> README && git add README .gitignore && \
         git -c user.name=sandbox -c user.email=s@b commit -q -m from-sandbox && git log --format=%s -1",
    )
    .await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(git_ok(dir.path(), &["log", "--format=%s", "-1"]).trim(), "from-sandbox");
    assert_eq!(git_ok(dir.path(), &["status", "--porcelain"]), "");

    let config = std::fs::read(dir.path().join(".git/config")).unwrap();
    for command in [
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit",
        "git config core.fsmonitor \"$PWD/evil\"",
        "echo '[core] fsmonitor = ./evil' >> .git/config",
        "rm -rf .git/hooks",
        "ln -s \"$PWD/evil\" .git/hooks/post-commit",
        "mv .git moved",
        "rmdir .git",
    ] {
        assert_refused(&terminal(&host, command).await, command);
    }
    assert_eq!(std::fs::read(dir.path().join(".git/config")).unwrap(), config);

    // Guarded entries that are missing can be created (bind mounts cannot stop
    // that), and are removed afterwards.
    std::fs::remove_dir_all(dir.path().join(".git/hooks")).unwrap();
    for (command, created) in [
        ("mkdir .git/hooks && cp evil .git/hooks/pre-commit", ".git/hooks"),
        ("echo ../elsewhere > .git/commondir", ".git/commondir"),
        ("mkdir -p .git/modules/x/hooks", ".git/modules"),
    ] {
        let r = terminal(&host, command).await;
        assert_creation_undone(&r, dir.path(), created, command);
    }
    assert_git_untouched(dir.path());
}

/// The policy file and `protected` globs: existing ones read-only, new matches
/// undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_file_and_protected_globs_cannot_be_changed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("secrets")).unwrap();
    std::fs::write(dir.path().join("secrets/key"), SECRET).unwrap();
    std::fs::write(dir.path().join("a.pem"), SECRET).unwrap();
    let policy = "[permissions]\nprotected = [\"secrets/\", \"*.pem\"]\n";
    let host = policy_host(dir.path(), policy).await;
    for command in [
        "echo 'mode = \"yolo\"' >> toolhost.toml",
        "printf '' > toolhost.toml",
        "rm toolhost.toml",
        "mv toolhost.toml old.toml",
        "printf x > secrets/key",
        "touch secrets/new",
        "rm -rf secrets",
        "echo more >> a.pem",
        "mv a.pem b.txt",
    ] {
        assert_refused(&terminal(&host, command).await, command);
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap(), policy);
    assert_eq!(std::fs::read_to_string(dir.path().join("secrets/key")).unwrap(), SECRET);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.pem")).unwrap(), SECRET);
    assert!(!dir.path().join("secrets/new").exists());

    let r = terminal(&host, "echo new > b.pem").await;
    assert_creation_undone(&r, dir.path(), "b.pem", "a new glob match");
    // Files that match nothing are written as usual.
    let ok = terminal(&host, "echo fine > notes.txt && mkdir -p sub && echo x > sub/c.pem").await;
    assert!(ok.ok, "{:?}", ok.error);

    // No policy file yet: creating one (where the next host would look) is undone.
    let fresh = tempfile::tempdir().unwrap();
    let host = builtin_host(fresh.path()).await;
    let r = terminal(
        &host,
        "printf '[builtins]\\nexec = { shell = true, unconfined = true }\\n' > toolhost.toml",
    )
    .await;
    assert_eq!(r.code(), Some("permission_denied"), "{:?}", r.error);
    assert!(!fresh.path().join("toolhost.toml").exists());
}

/// No FIFOs or device nodes from a child, whatever makes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_make_no_fifos_or_device_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    for command in [
        "mkfifo fifo",
        "mknod pipe p",
        "mknod null c 1 3",
        "python3 -c \"import os; os.mkfifo('pyfifo')\"",
        "python3 -c \"import os, stat; os.mknod('node', stat.S_IFIFO | 0o600)\"",
    ] {
        assert_refused(&terminal(&host, command).await, command);
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "made: {left:?}");
}

/// uid 0 inside the child's namespace is the host's uid, owning what it makes, and
/// has no capability: a file its owner may not read stays unreadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_keeps_the_hosts_uid_and_no_capability() {
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::write(&locked, SECRET).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let host = builtin_host(dir.path()).await;
    let r = terminal(&host, "id -u; touch made; cat locked").await;
    let shown = format!("{}{}", r.output, message(&r));
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("Permission denied"), "{shown}");
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let uid = unsafe { libc::geteuid() };
    assert!(shown.lines().any(|l| l == uid.to_string()), "{shown}");
    assert_eq!(std::fs::metadata(dir.path().join("made")).unwrap().uid(), uid);
}

/// A toolchain outside the system dirs, granted by `[exec] path` and `read-dirs`,
/// still runs in the child's root (the cargo running these tests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolchain_granted_by_path_and_read_dirs_still_runs() {
    let cargo = PathBuf::from(env!("CARGO")).canonicalize().unwrap();
    let bin = cargo.parent().unwrap().to_path_buf();
    let toolchain = bin.parent().unwrap().to_path_buf();
    let work = tempfile::tempdir().unwrap();
    let settings =
        ExecSettings { path: vec![bin.clone()], read_dirs: vec![toolchain], ..ExecSettings::default() };
    let host = Host::builder()
        .work_dir(work.path())
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .exec(settings)
        .plugin_bytes("exec-test", std::fs::read(EXEC_WASM).unwrap())
        .plugin_exec(ExecGrant { programs: vec!["cargo".into(), "rustc".into()], ..ExecGrant::default() })
        .build()
        .await
        .unwrap();
    for (program, starts) in [("cargo", "cargo "), ("rustc", "rustc ")] {
        let r =
            host.execute(ToolCall::new("spawn", json!({"program": program, "args": ["--version"]}))).await;
        assert!(r.ok, "{:?}", r.error);
        let o: Value = serde_json::from_str(&r.output).unwrap();
        assert_eq!(o["exit_code"], 0, "{program}: {o}");
        assert!(o["stdout"].as_str().unwrap().starts_with(starts), "{program}: {o}");
    }
    let mut f = std::fs::File::create(work.path().join("hello.rs")).unwrap();
    writeln!(f, "fn main() {{ println!(\"built in the sandbox\"); }}").unwrap();
    let r = host
        .execute(ToolCall::new("spawn", json!({"program": "rustc", "args": ["hello.rs", "-o", "hello"]})))
        .await;
    let o: Value = serde_json::from_str(&r.output).unwrap();
    assert_eq!(o["exit_code"], 0, "{o}");
    assert!(work.path().join("hello").is_file());
}
