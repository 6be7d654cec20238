//! The file tools' freshness, link and undo guarantees end to end (issue 19):
//! `expected_sha256` and the policy's `require-fresh`, `known_sha256`, writes that
//! never go through a symlink (also one swapped in mid-write), `move_file`, and
//! `remove_file` / `restore_file` with their artifacts outside the work dir.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost::{Host, Policy, ToolCall, ToolResult};
use toolhost_tests::{test_engine_settings, toolhost_bin};

/// A host over `work` in accept-edits mode, with `policy` (TOML text) and the data
/// dir `data`.
async fn host(work: &Path, data: &Path, policy: &str) -> Host {
    let policy = Policy::parse(policy, &work.join("elsewhere.toml")).expect("policy parses");
    Host::builder()
        .work_dir(work)
        .data_dir(data)
        .engine_settings(test_engine_settings())
        .policy(policy)
        .mode(toolhost::Mode::AcceptEdits)
        .build()
        .await
        .expect("host builds")
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

fn code(r: &ToolResult) -> String {
    r.code().unwrap_or_else(|| panic!("expected a failure, got {:?}", r.output)).to_string()
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_hash_guards_edits_and_writes_and_dedups_reads() {
    let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(work.path(), data.path(), "").await;
    fs::write(work.path().join("a.txt"), "one\ntwo\n").unwrap();
    let read = call(&host, "read_file", json!({"path": "a.txt"})).await;
    let hash = read.metadata.as_ref().unwrap()["sha256"].as_str().unwrap().to_string();
    assert!(read.output.starts_with(&format!("[sha256 {hash}, 2 lines, 8 B]\n")), "{}", read.output);

    let again = call(&host, "read_file", json!({"path": "a.txt", "known_sha256": hash})).await;
    assert!(again.output.starts_with("[unchanged: a.txt still has sha256"), "{}", again.output);
    assert_eq!(again.output.lines().count(), 1);

    // Someone else changes the file: the edit made from the old read lands nowhere.
    fs::write(work.path().join("a.txt"), "one\nTWO\n").unwrap();
    let r = call(
        &host,
        "edit_file",
        json!({"path": "a.txt", "old_string": "one", "new_string": "1", "expected_sha256": hash}),
    )
    .await;
    assert_eq!(code(&r), "stale_file");
    assert!(r.error.as_ref().unwrap().message.contains(&sha(b"one\nTWO\n")), "{r:?}");
    let r =
        call(&host, "write_file", json!({"path": "a.txt", "content": "x", "expected_sha256": hash})).await;
    assert_eq!(code(&r), "stale_file");
    assert_eq!(fs::read_to_string(work.path().join("a.txt")).unwrap(), "one\nTWO\n");
    let r = call(&host, "read_file", json!({"path": "a.txt", "known_sha256": hash})).await;
    assert!(r.output.contains("TWO"), "a changed file is shown again: {}", r.output);

    // Hostile hashes: wrong length, not hex.
    for bad in ["", "abc", &"z".repeat(64), &"a".repeat(65)] {
        if bad.is_empty() {
            continue;
        }
        let r = call(
            &host,
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "1", "expected_sha256": bad}),
        )
        .await;
        assert_eq!(code(&r), "invalid_args", "{bad}");
        assert!(r.error.as_ref().unwrap().message.contains("expected_sha256"), "{r:?}");
    }
    let r = call(&host, "edit_file", json!({"path": "a.txt", "old_string": "one", "new_string": "1", "expected_sha256": sha(b"one\nTWO\n")})).await;
    assert!(r.ok, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_fresh_makes_the_hash_mandatory_for_existing_files() {
    let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(work.path(), data.path(), "[permissions]\nrequire-fresh = true\n").await;
    let r = call(&host, "write_file", json!({"path": "new.txt", "content": "a"})).await;
    assert!(r.ok, "a new file needs no hash: {r:?}");
    for (tool, args) in [
        ("write_file", json!({"path": "new.txt", "content": "b"})),
        ("edit_file", json!({"path": "new.txt", "old_string": "a", "new_string": "b"})),
        ("move_file", json!({"source": "new.txt", "destination": "moved.txt"})),
        ("remove_file", json!({"path": "new.txt"})),
    ] {
        let r = call(&host, tool, args).await;
        assert_eq!(code(&r), "stale_file", "{tool}");
        assert!(r.error.as_ref().unwrap().message.contains("read it first"), "{tool}: {r:?}");
    }
    assert_eq!(fs::read_to_string(work.path().join("new.txt")).unwrap(), "a");
    let r =
        call(&host, "write_file", json!({"path": "new.txt", "content": "b", "expected_sha256": sha(b"a")}))
            .await;
    assert!(r.ok, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_are_refused_unless_the_policy_follows_them() {
    let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fs::write(work.path().join("real.txt"), "old").unwrap();
    std::os::unix::fs::symlink("real.txt", work.path().join("link.txt")).unwrap();
    let strict = host(work.path(), data.path(), "").await;
    let r = call(&strict, "write_file", json!({"path": "link.txt", "content": "new"})).await;
    assert_eq!(code(&r), "is_symlink");
    let r = call(&strict, "edit_file", json!({"path": "link.txt", "old_string": "old", "new_string": "new"}))
        .await;
    assert_eq!(code(&r), "is_symlink");
    assert_eq!(fs::read_to_string(work.path().join("real.txt")).unwrap(), "old");
    fs::create_dir(work.path().join("d")).unwrap();
    let r = call(&strict, "write_file", json!({"path": "d", "content": "x"})).await;
    assert_eq!(code(&r), "is_directory");

    let following = host(work.path(), data.path(), "[permissions]\nfollow-links = true\n").await;
    let r = call(&following, "write_file", json!({"path": "link.txt", "content": "new"})).await;
    assert!(r.ok, "{r:?}");
    assert_eq!(fs::read_to_string(work.path().join("real.txt")).unwrap(), "new");
}

/// A symlink to a file outside the work dir swapped in and out while writes run:
/// whichever moment the swap hits, the file outside never changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_swapped_in_mid_write_never_lets_a_write_out() {
    let (work, data, outside) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let victim = outside.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    for policy in ["", "[permissions]\nfollow-links = true\n"] {
        let host = host(work.path(), data.path(), policy).await;
        let target = work.path().join("f.txt");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, target, victim) = (stop.clone(), target.clone(), victim.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = fs::remove_file(&target);
                    let _ = fs::write(&target, "plain");
                    let _ = fs::remove_file(&target);
                    let _ = std::os::unix::fs::symlink(&victim, &target);
                }
            })
        };
        for _ in 0..40 {
            let _ = call(&host, "write_file", json!({"path": "f.txt", "content": "overwritten"})).await;
            let _ =
                call(&host, "edit_file", json!({"path": "f.txt", "old_string": "plain", "new_string": "x"}))
                    .await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious", "policy {policy:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_file_never_overwrites_and_keeps_to_the_work_dir() {
    let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(work.path(), data.path(), "").await;
    fs::write(work.path().join("a.txt"), "a").unwrap();
    fs::write(work.path().join("b.txt"), "b").unwrap();
    let r = call(&host, "move_file", json!({"source": "a.txt", "destination": "b.txt"})).await;
    assert_eq!(code(&r), "already_exists");
    let r =
        call(&host, "move_file", json!({"source": "a.txt", "destination": ".git/hooks/pre-commit"})).await;
    assert_eq!(code(&r), "permission_denied");
    let r = call(&host, "move_file", json!({"source": "a.txt", "destination": "../a.txt"})).await;
    assert_eq!(code(&r), "permission_denied");
    let r = call(
        &host,
        "move_file",
        json!({"source": "a.txt", "destination": "sub/c.txt", "expected_sha256": sha(b"a")}),
    )
    .await;
    assert!(r.ok, "{r:?}");
    assert_eq!(r.metadata.unwrap()["destination"], "sub/c.txt");
    assert_eq!(fs::read_to_string(work.path().join("sub/c.txt")).unwrap(), "a");
    assert!(!work.path().join("a.txt").exists());
    let r = call(&host, "move_file", json!({"source": "sub", "destination": "moved"})).await;
    assert_eq!(code(&r), "is_directory");
    let r =
        call(&host, "move_file", json!({"source": "sub", "destination": "moved", "recursive": true})).await;
    assert!(r.ok, "{r:?}");
    assert!(work.path().join("moved/c.txt").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_files_are_kept_outside_the_work_dir_and_restored() {
    let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = host(work.path(), data.path(), "").await;
    fs::write(work.path().join("notes.txt"), "keep me\n").unwrap();
    let r = call(&host, "remove_file", json!({"path": "notes.txt", "expected_sha256": sha(b"stale")})).await;
    assert_eq!(code(&r), "stale_file");
    let r = call(&host, "remove_file", json!({"path": "notes.txt"})).await;
    assert!(r.ok, "{r:?}");
    let id = r.metadata.as_ref().unwrap()["artifact"].as_str().unwrap().to_string();
    assert!(r.output.contains(&id), "{}", r.output);
    assert!(!work.path().join("notes.txt").exists());
    let kept = data.path().join("artifacts").join(&id);
    assert_eq!(fs::read(&kept).unwrap(), b"keep me\n");
    assert_eq!(fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(data.path().join("artifacts")).unwrap().permissions().mode() & 0o777, 0o700);
    let r = call(&host, "remove_file", json!({"path": "toolhost.toml"})).await;
    assert_eq!(code(&r), "permission_denied");

    // Without a path it goes where it was; accept-edits asks for a call with no path
    // argument, and a headless host refuses it.
    let r = call(&host, "restore_file", json!({"artifact": id})).await;
    assert_eq!(code(&r), "permission_denied");
    let r = call(&host, "restore_file", json!({"artifact": id, "path": "notes.txt"})).await;
    assert!(r.ok, "{r:?}");
    assert_eq!(fs::read_to_string(work.path().join("notes.txt")).unwrap(), "keep me\n");
    let r = call(&host, "restore_file", json!({"artifact": id, "path": "notes.txt"})).await;
    assert_eq!(code(&r), "already_exists");
    let r = call(&host, "restore_file", json!({"artifact": "../../etc/passwd", "path": "x.txt"})).await;
    assert_eq!(code(&r), "invalid_args");

    // The CLI: `toolhost restore ID --path P`, with the same data dir.
    let out = std::process::Command::new(toolhost_bin())
        .args(["restore", &id, "--path", "again.txt", "--work-dir"])
        .arg(work.path())
        .env("TOOLHOST_DATA_DIR", data.path())
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(work.path().join("again.txt")).unwrap(), "keep me\n");
    let out = std::process::Command::new(toolhost_bin())
        .args(["restore", &id, "--path", "again.txt", "--work-dir"])
        .arg(work.path())
        .env("TOOLHOST_DATA_DIR", data.path())
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("already_exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
