//! A guest writing through WASI directly (no path arguments the permissions could
//! see) against what the host protects: `.git` at any depth and its creation, the
//! policy file, `protected` globs, through symlinks, hard links, renames and
//! directory handles; FIFOs and devices that would hang a call; a call holding
//! thousands of handles. After each, the same host serves a normal call.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::{Host, Limits, Mode, Policy, ToolCall};
use toolhost_tests::{FSPROBE_WASM, test_engine_settings};

async fn probe_host(dir: &Path, limits: Limits) -> Host {
    let policy =
        Policy::parse("[permissions]\nprotected = [\"keys/\"]\n", &dir.join("toolhost.toml")).unwrap();
    Host::builder()
        .work_dir(dir)
        .limits(limits)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .policy(policy)
        .plugin_file(FSPROBE_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Run one operation; the guest's own report of what happened.
async fn op(host: &Host, op: &str, path: &str, to: Option<&str>) -> Value {
    let args = json!({"op": op, "at": path, "other": to, "content": "#!/bin/sh\ntouch PWNED\n"});
    let tool = if ["read", "list", "open_many", "stat"].contains(&op) { "fs_read" } else { "fs" };
    let r = host.execute(ToolCall::new(tool, args)).await;
    assert!(r.ok, "{op} {path}: {r:?}");
    serde_json::from_str(&r.output).unwrap()
}

fn refused(outcome: &Value) -> bool {
    outcome.get("error").is_some()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn init_repo(dir: &Path) {
    let status = Command::new("git").args(["init", "-q"]).arg(dir).status().unwrap();
    assert!(status.success());
}

/// Everything a guest could do to plant a hook or a config.
const ATTACKS: &[(&str, &str, Option<&str>)] = &[
    ("write", ".git/hooks/pre-commit", None),
    ("write", ".git/config", None),
    ("append", ".git/config", None),
    ("truncate", ".git/config", None),
    ("write", ".git/info/attributes", None),
    ("write", ".git/commondir", None),
    ("write", ".git/objects/planted", None),
    ("unlink", ".git/config", None),
    ("rmdir", ".git/hooks", None),
    ("rmdir", ".git", None),
    ("rename", ".git", Some("moved")),
    ("rename", ".git/hooks", Some("hooks")),
    ("mkdir", ".git/hooks/sub", None),
    ("symlink", ".git/hooks/post-checkout", Some("../../evil.sh")),
    ("hardlink", ".git/config", Some("config-link")),
    ("set_times", ".git/config", None),
    ("dir_write", ".git/hooks", Some("pre-commit")),
    ("dir_write", ".git", Some("config")),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_cannot_change_git_through_wasi() {
    let dir = tempfile::tempdir().unwrap();
    init_repo(dir.path());
    let config_before = std::fs::read(dir.path().join(".git/config")).unwrap();
    let host = probe_host(dir.path(), Limits::default()).await;
    for (name, path, to) in ATTACKS {
        let outcome = op(&host, name, path, *to).await;
        assert!(refused(&outcome), "{name} {path} was allowed: {outcome}");
    }
    assert_eq!(std::fs::read(dir.path().join(".git/config")).unwrap(), config_before);
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert!(!dir.path().join(".git/objects/planted").exists());
    assert!(!dir.path().join("moved").exists() && !dir.path().join("config-link").exists());
    assert_eq!(git(dir.path(), &["config", "--get", "core.fsmonitor"]), "");
    // Reading is fine, and so is everything beside .git.
    assert!(!refused(&op(&host, "read", ".git/config", None).await));
    assert!(!refused(&op(&host, "write", ".gitignore", None).await));
    assert!(!refused(&op(&host, "write", "my.git", None).await));
    assert!(!refused(&op(&host, "mkdir", ".github/workflows", None).await));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_and_case_variants_lead_nowhere_protected() {
    let dir = tempfile::tempdir().unwrap();
    init_repo(dir.path());
    let host = probe_host(dir.path(), Limits::default()).await;
    // A link to the hooks dir may be made, but not written through.
    assert!(!refused(&op(&host, "symlink", "h", Some(".git/hooks")).await));
    assert!(refused(&op(&host, "write", "h/pre-commit", None).await));
    assert!(refused(&op(&host, "dir_write", "h", Some("pre-commit")).await));
    // A dangling link whose target would be created inside .git.
    assert!(!refused(&op(&host, "symlink", "p", Some(".git/hooks/pre-push")).await));
    assert!(refused(&op(&host, "write", "p", None).await));
    // A chain of links.
    assert!(!refused(&op(&host, "symlink", "q", Some("h")).await));
    assert!(refused(&op(&host, "write", "q/post-merge", None).await));
    // Through a directory and `..`.
    assert!(!refused(&op(&host, "mkdir", "sub", None).await));
    assert!(refused(&op(&host, "write", "sub/../.git/hooks/pre-commit", None).await));
    // A hard link of the config under another name would be a second way in.
    assert!(refused(&op(&host, "hardlink", ".git/config", Some("cfg")).await));
    // .GIT is the same name on a folding filesystem.
    assert!(refused(&op(&host, "mkdir", ".GIT/hooks", None).await));
    for hook in ["pre-commit", "pre-push", "post-merge"] {
        assert!(!dir.path().join(".git/hooks").join(hook).exists(), "{hook}");
    }
    assert!(host.execute(ToolCall::new("fs_read", json!({"op": "stat", "at": "h"}))).await.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_cannot_create_a_repository() {
    let dir = tempfile::tempdir().unwrap();
    let host = probe_host(dir.path(), Limits::default()).await;
    for (name, path, to) in [
        ("mkdir", ".git", None),
        ("mkdir", ".git/hooks", None),
        ("mkdir", "sub/deep/.git/hooks", None),
        // A .git file pointing at a repository made elsewhere.
        ("write", ".git", None),
        ("write", "sub/.git", None),
        ("symlink", ".git", Some("elsewhere")),
    ] {
        let outcome = op(&host, name, path, to).await;
        assert!(refused(&outcome), "{name} {path} was allowed: {outcome}");
    }
    // A repository built under another name can't be renamed into place.
    assert!(!refused(&op(&host, "mkdir", "made/hooks", None).await));
    assert!(!refused(&op(&host, "write", "made/HEAD", None).await));
    assert!(refused(&op(&host, "rename", "made", Some(".git")).await));
    assert!(refused(&op(&host, "rename", "made", Some("sub/.git")).await));
    assert!(!dir.path().join(".git").exists() && !dir.path().join("sub/.git").exists());
    assert!(!dir.path().join("sub/deep/.git").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_repository_is_protected_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("vendor/lib/deep");
    std::fs::create_dir_all(&nested).unwrap();
    init_repo(&nested);
    let host = probe_host(dir.path(), Limits::default()).await;
    assert!(refused(&op(&host, "write", "vendor/lib/deep/.git/hooks/pre-commit", None).await));
    assert!(refused(&op(&host, "append", "vendor/lib/deep/.git/config", None).await));
    assert!(refused(&op(&host, "dir_write", "vendor/lib/deep/.git/hooks", Some("post-checkout")).await));
    assert!(refused(&op(&host, "rename", "vendor/lib/deep/.git", Some("vendor/x")).await));
    assert!(!refused(&op(&host, "write", "vendor/lib/deep/README", None).await));
    assert_eq!(git(&nested, &["config", "--get", "core.fsmonitor"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_file_and_protected_globs_are_read_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    std::fs::write(dir.path().join("keys/id"), "secret").unwrap();
    let host = probe_host(dir.path(), Limits::default()).await;
    for (name, path, to) in [
        ("write", "toolhost.toml", None),
        ("symlink", "toolhost.toml", Some("/etc/passwd")),
        ("symlink", "toolhost.toml", Some("elsewhere.toml")),
        ("write", "keys/id", None),
        ("unlink", "keys/id", None),
        ("rename", "keys", Some("k")),
        ("write", "keys/new", None),
    ] {
        let outcome = op(&host, name, path, to).await;
        assert!(refused(&outcome), "{name} {path} was allowed: {outcome}");
    }
    // A policy made elsewhere can't be renamed into place either.
    assert!(!refused(&op(&host, "write", "elsewhere.toml", None).await));
    assert!(refused(&op(&host, "rename", "elsewhere.toml", Some("toolhost.toml")).await));
    assert!(!dir.path().join("toolhost.toml").exists());
    assert_eq!(std::fs::read_to_string(dir.path().join("keys/id")).unwrap(), "secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_and_devices_are_refused_before_they_can_hang_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A device node (root can make one here; skipped where mknod is refused).
    let device = Command::new("mknod").arg(dir.path().join("zero")).args(["c", "1", "5"]).status();
    let has_device = device.is_ok_and(|s| s.success());
    std::os::unix::fs::symlink("pipe", dir.path().join("to-pipe")).unwrap();
    let limits = Limits { timeout: Duration::from_secs(5), ..Limits::default() };
    let host = probe_host(dir.path(), limits).await;
    let mut targets = vec!["pipe", "to-pipe"];
    if has_device {
        targets.push("zero");
    }
    for path in targets {
        let started = Instant::now();
        let outcome = op(&host, "read", path, None).await;
        assert!(refused(&outcome), "{path}: {outcome}");
        assert!(started.elapsed() < Duration::from_secs(2), "{path} took {:?}", started.elapsed());
        for write in ["write", "append"] {
            assert!(refused(&op(&host, write, path, None).await), "{write} {path}");
        }
        // The builtins too.
        let started = Instant::now();
        let r = host.execute(ToolCall::new("read_file", json!({"path": path}))).await;
        assert!(!r.ok, "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    // Listing a directory that holds them is fine.
    let listed = op(&host, "list", ".", None).await;
    assert!(listed["ok"].as_array().unwrap().iter().any(|n| n == "pipe"), "{listed}");
    assert!(host.execute(ToolCall::new("list_dir", json!({}))).await.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_cannot_exhaust_the_hosts_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "x").unwrap();
    let limits = Limits { open_handles: 64, ..Limits::default() };
    let host = probe_host(dir.path(), limits).await;
    let args = json!({"op": "open_many", "at": "f", "count": 20_000});
    let outcome: Value = {
        let r = host.execute(ToolCall::new("fs_read", args.clone())).await;
        serde_json::from_str(&r.output).unwrap()
    };
    let held = outcome["ok"].as_u64().unwrap();
    assert!(held < 64, "{outcome}");
    assert!(!outcome["stopped"].is_null(), "{outcome}");
    // Many such calls at once, and the others still get their files.
    let host = std::sync::Arc::new(host);
    let mut running = Vec::new();
    for i in 0..16 {
        let (host, args) = (host.clone(), args.clone());
        running.push(tokio::spawn(async move {
            if i % 2 == 0 {
                host.execute(ToolCall::new("fs_read", args)).await
            } else {
                host.execute(ToolCall::new("read_file", json!({"path": "f"}))).await
            }
        }));
    }
    for task in running {
        let r = task.await.unwrap();
        assert!(r.ok, "{r:?}");
        assert!(!r.output.contains("Too many open files"), "{r:?}");
    }
    // With the default cap, a guest opening 20,000 handles is stopped too.
    let host = probe_host(dir.path(), Limits::default()).await;
    let r = host.execute(ToolCall::new("fs_read", args)).await;
    let outcome: Value = serde_json::from_str(&r.output).unwrap();
    assert!(outcome["ok"].as_u64().unwrap() <= 1024, "{outcome}");
    assert!(host.execute(ToolCall::new("read_file", json!({"path": "f"}))).await.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_is_not_utf8_is_listed_lossily() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")), "x").unwrap();
    std::fs::write(dir.path().join("good.txt"), "x").unwrap();
    let host = probe_host(dir.path(), Limits::default()).await;
    let listed = op(&host, "list", ".", None).await;
    let names: Vec<&str> = listed["ok"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(names.contains(&"good.txt") && names.contains(&"bad\u{fffd}.txt"), "{listed}");
    assert_eq!(listed["errors"], 0, "{listed}");
    // The name as listed reads the file it stands for.
    assert_eq!(op(&host, "read", "bad\u{fffd}.txt", None).await["ok"], "x");
    assert!(op(&host, "stat", "bad\u{fffd}.txt", None).await["ok"].is_string());
    // Never for a write: that would create a file with another name.
    assert!(refused(&op(&host, "append", "bad\u{fffd}.txt", None).await));
}
