//! Children share a root built once (issue 21): nothing one child does reaches the
//! next through it, a `.git` the root was built without is read-only all the same,
//! a child cannot change the shared root's mounts, and the descriptors the host
//! keeps the root by never reach a child.
//!
//! Every attempt goes through `toolhost::Host` and the builtin `terminal`; what
//! changed is checked by the test itself, unconfined.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use serde_json::json;
use toolhost::{Host, Mode, ToolCall, ToolResult};
use toolhost_tests::test_engine_settings;

/// A host with the builtins over `dir`.
async fn builtin_host(dir: &Path) -> Host {
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn terminal(host: &Host, command: &str) -> ToolResult {
    host.execute(ToolCall::new("terminal", json!({"command": command, "timeout_ms": 20000}))).await
}

/// What the command printed and the error's message.
fn shown(r: &ToolResult) -> String {
    format!("{}{}", r.output, r.error.as_ref().map(|e| e.message.clone()).unwrap_or_default())
}

/// `git init` in `dir`, by the test (unconfined).
fn git_init(dir: &Path) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["init", "-q"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git init: {}", String::from_utf8_lossy(&out.stderr));
}

/// Writing into `.git` (its hooks, a new file, removing it) is refused.
async fn assert_git_read_only(host: &Host, dir: &Path, what: &str) {
    for command in ["touch .git/hooks/pre-commit", "touch .git/planted", "rm -rf .git", "mv .git moved"] {
        let r = terminal(host, command).await;
        assert_eq!(r.code(), Some("command_failed"), "{what}: {command}: {}", shown(&r));
    }
    assert!(!dir.join(".git/hooks/pre-commit").exists(), "{what}");
    assert!(!dir.join(".git/planted").exists(), "{what}");
    assert!(dir.join(".git/HEAD").exists() && !dir.join("moved").exists(), "{what}");
}

/// Nothing outside the work dir is writable, and what one child tried there is not
/// there for the next one (children of both kinds, read-only and writing, each
/// sharing a root with the others of its kind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_child_writes_outside_the_work_dir_never_reaches_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    for target in ["/tmp/leak", "/run/leak", "/var/tmp/leak", "/leak", "/usr/leak", "/dev/leak"] {
        let r = terminal(&host, &format!("echo leaked > {target}")).await;
        assert_eq!(r.code(), Some("command_failed"), "{target}: {}", shown(&r));
        let text = shown(&r);
        assert!(
            text.contains("Read-only file system") || text.contains("Permission denied"),
            "{target}: {text}"
        );
    }
    let r = terminal(&host, "mkdir /tmp/d; ln -s / /run/l").await;
    assert_eq!(r.code(), Some("command_failed"), "{}", shown(&r));
    // Landlock refuses listing these, but names still resolve: none is there.
    let absent = "for p in /tmp/leak /run/leak /var/tmp/leak /leak /usr/leak /dev/leak /tmp/d /run/l /tmp/x; \
                  do if test -e $p || test -L $p; then echo \"found $p\"; exit 1; fi; done";
    let r = terminal(&host, absent).await;
    assert!(r.error.is_none(), "{}", shown(&r));
    // Several at once share the root too, with the same result.
    let later = format!("sleep 0.1; {absent}");
    let (w1, l1, w2, l2) = tokio::join!(
        terminal(&host, "echo x > /tmp/x"),
        terminal(&host, &later),
        terminal(&host, "echo x > /tmp/x"),
        terminal(&host, &later),
    );
    for w in [w1, w2] {
        assert_eq!(w.code(), Some("command_failed"), "{}", shown(&w));
    }
    for l in [l1, l2] {
        assert!(l.error.is_none(), "{}", shown(&l));
    }
}

/// A `.git` made after children began sharing a root (by the host, not a child)
/// is read-only for the next child, and stays so once removed and made again (when
/// its bind in the old root is gone and the new `.git` may have the old inode
/// number) or swapped for another by a rename.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_made_after_the_root_was_built_is_read_only_for_the_next_child() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    let r = terminal(&host, "touch before && test -w .").await;
    assert!(r.error.is_none(), "{}", shown(&r));
    git_init(dir.path());
    assert_git_read_only(&host, dir.path(), "a new .git").await;
    for round in 0..3 {
        let old = std::fs::metadata(dir.path().join(".git")).unwrap().ino();
        std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
        git_init(dir.path());
        let new = std::fs::metadata(dir.path().join(".git")).unwrap().ino();
        assert_git_read_only(&host, dir.path(), &format!("made again ({round}; same inode: {})", old == new))
            .await;
    }
    std::fs::rename(dir.path().join(".git"), dir.path().join("old-git")).unwrap();
    git_init(dir.path());
    assert_git_read_only(&host, dir.path(), "swapped by a rename").await;
    // The renamed one is an ordinary directory now, as it would be without sharing.
    let r = terminal(&host, "touch old-git/writable").await;
    assert!(r.error.is_none(), "{}", shown(&r));
}

/// A child cannot unmount, remount or move the shared root's binds (it has no
/// capability over that mount namespace, and Landlock refuses mounting anyway):
/// the next child's `.git` is as read-only as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_change_the_shared_roots_mounts() {
    let dir = tempfile::tempdir().unwrap();
    git_init(dir.path());
    let host = builtin_host(dir.path()).await;
    for command in [
        "umount .git",
        "umount -l .git",
        "mount -o remount,rw,bind .git",
        "mount -o remount,rw /",
        "mount -t tmpfs none /tmp",
        "mount --bind /tmp .git",
        "unshare -m sh -c 'umount -l .git; touch .git/planted'",
        "unshare -rm sh -c 'umount -l .git; touch .git/planted'",
    ] {
        let r = terminal(&host, command).await;
        assert_eq!(r.code(), Some("command_failed"), "{command}: {}", shown(&r));
        assert_git_read_only(&host, dir.path(), command).await;
    }
}

/// The host keeps each shared root by a descriptor on its user and mount
/// namespaces; no child holds them, or can open them through `/proc`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_descriptors_a_shared_root_is_kept_by_never_reach_a_child() {
    let dir = tempfile::tempdir().unwrap();
    let host = builtin_host(dir.path()).await;
    let r = terminal(&host, "true").await;
    assert!(r.error.is_none(), "{}", shown(&r));
    let kept: Vec<(String, String)> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let link = std::fs::read_link(e.path()).ok()?.display().to_string();
            (link.starts_with("mnt:[") || link.starts_with("user:["))
                .then(|| (e.file_name().to_string_lossy().into_owned(), link))
        })
        .collect();
    assert!(kept.len() >= 2, "the host keeps no shared root: {kept:?}");
    let pid = std::process::id();
    for (fd, link) in &kept {
        for command in [
            format!(": <&{fd}"),
            format!("exec 9</proc/{pid}/fd/{fd}"),
            format!("nsenter --mount=/proc/{pid}/fd/{fd} true"),
            format!("nsenter --user=/proc/{pid}/fd/{fd} true"),
            format!("readlink /proc/{pid}/fd/{fd}"),
            format!("nsenter --mount=/proc/{pid}/ns/mnt true"),
        ] {
            let r = terminal(&host, &command).await;
            assert_eq!(r.code(), Some("command_failed"), "{command} ({link}): {}", shown(&r));
            assert!(!r.output.contains("mnt:[") && !r.output.contains("user:["), "{command}: {}", shown(&r));
        }
    }
}
