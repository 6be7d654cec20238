//! Writing children through a real overlay (the kernel's whiteouts, opaque dirs
//! and copy-ups), merged by the runtime, with and without a shared root.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::super::request::SpawnRequest;
use super::super::runtime::ExecRuntime;
use super::super::spawn::SpawnError;
use super::super::{ChildLimits, ExecSettings};
use crate::WriteMeter;
use crate::request::CallInfo;

/// A writing `sh -c command` in `work`, with `quota`.
fn writing(work: &Path, command: &str, quota: &Arc<WriteMeter>) -> SpawnRequest {
    let call = CallInfo {
        plugin: "p".into(),
        call_id: "c".into(),
        deadline: Instant::now() + Duration::from_secs(60),
    };
    let args = vec!["-c".to_string(), command.to_string()];
    let mut req = SpawnRequest::new(
        "/bin/sh".into(),
        "sh".into(),
        args,
        work.into(),
        None,
        &call,
        &ChildLimits::default(),
    );
    req.writable = true;
    req.quota = Some(quota.clone());
    req
}

/// A runtime over a fresh work dir whose layers go under a fresh data dir.
fn runtime() -> (ExecRuntime, tempfile::TempDir, tempfile::TempDir, std::path::PathBuf) {
    let (dir, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let work = dir.path().canonicalize().unwrap();
    let runtime = ExecRuntime::new(ExecSettings::default(), Some(work.clone()));
    runtime.set_data_dir(Some(data.path()));
    (runtime, dir, data, work)
}

async fn run(runtime: &ExecRuntime, work: &Path, command: &str) -> (Result<i32, SpawnError>, u64) {
    let quota = Arc::new(WriteMeter::new(1 << 30));
    let done = runtime.run(writing(work, command, &quota), &CancellationToken::new()).await;
    (done.map(|f| f.exit_code.unwrap_or(-1)), quota.used())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_child_changes_through_its_overlay_reaches_the_work_dir_after_it() {
    for shared in [true, false] {
        let (mut runtime, _dir, data, work) = runtime();
        if !shared {
            runtime.own_roots_for_tests();
        }
        std::fs::write(work.join("old"), "12345").unwrap();
        std::fs::create_dir_all(work.join("gone/deep")).unwrap();
        std::fs::write(work.join("gone/deep/f"), "x").unwrap();
        std::fs::create_dir_all(work.join("remade")).unwrap();
        std::fs::write(work.join("remade/stale"), "s").unwrap();
        std::fs::create_dir_all(work.join("keep")).unwrap();
        std::fs::write(work.join("keep/stay"), "").unwrap();
        std::fs::write(work.join("script"), "#!/bin/sh\n").unwrap();
        let command = "set -e; echo new > new; echo more >> old; rm -rf gone remade; mkdir remade; \
                       echo f > remade/fresh; chmod 700 script; ln -s /etc/passwd link; mkdir -p a/b; \
                       echo deep > a/b/c; test ! -e gone; \
                       python3 -c \"import os; os.setxattr('keep', 'user.overlay.opaque', b'y')\"";
        let (exit, used) = run(&runtime, &work, command).await;
        assert_eq!(exit.unwrap(), 0, "shared root: {shared}");
        assert_eq!(std::fs::read_to_string(work.join("new")).unwrap(), "new\n");
        assert_eq!(std::fs::read_to_string(work.join("old")).unwrap(), "12345more\n");
        assert!(!work.join("gone").exists());
        let remade: Vec<_> =
            std::fs::read_dir(work.join("remade")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(remade, ["fresh"]);
        assert_eq!(std::fs::metadata(work.join("script")).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::read_link(work.join("link")).unwrap(), Path::new("/etc/passwd"));
        assert_eq!(std::fs::read_to_string(work.join("a/b/c")).unwrap(), "deep\n");
        // An attribute named like overlayfs's own, set by the child, is not taken for one.
        assert!(work.join("keep/stay").exists());
        // Growth: new (4) + old (5 more) + a/b/c (5) + remade/fresh (2) - gone (1) - stale (1).
        assert_eq!(used, 4 + 5 + 5 + 2 - 2, "shared root: {shared}");
        // Nothing is left of the layer.
        let layers = data.path().join("exec-staging");
        let left: Vec<_> =
            walk(&layers).into_iter().filter(|p| p.extension().is_none_or(|e| e != "lock")).collect();
        assert!(left.iter().all(|p| p.metadata().is_ok_and(|m| m.is_dir())), "{left:?}");
        assert!(left.len() <= 1, "{left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_reaches_neither_the_work_dir_itself_nor_the_layers() {
    let (runtime, _dir, data, work) = runtime();
    std::fs::write(work.join("f"), "f").unwrap();
    let staging = data.path().canonicalize().unwrap().join("exec-staging");
    // The layers are in the child's root (its overlay needs them), and Landlock
    // gives it no right there; the work dir under the overlay is out of reach.
    let command = format!(
        "ls {0} && exit 10; touch {0}/x && exit 11; cat /proc/self/mountinfo >/dev/null && exit 12; \
         echo changed > f; exit 0",
        staging.display()
    );
    let (exit, _) = run(&runtime, &work, &command).await;
    assert_eq!(exit.unwrap(), 0);
    assert_eq!(std::fs::read_to_string(work.join("f")).unwrap(), "changed\n");
    // The child's own uid owns what it made.
    assert_eq!(std::fs::metadata(work.join("f")).unwrap().uid(), super::super::confine::euid());
}

/// Every path beneath `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
            out.push(entry.path());
        }
    }
    out
}
