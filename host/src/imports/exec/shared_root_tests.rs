//! Children entering a shared root: they do, each sees only its own changes to the
//! work dir, and a root gone stale (a bind missing, or detached by the host
//! removing what it was made of) stops a child before its program runs; the
//! runtime then starts it in a fresh root.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::super::ExecSettings;
use super::super::clone::ChildFailed;
use super::super::confine::{SetupFailed, Step};
use super::super::mounts::ProtectBind;
use super::super::process::{Failed, Output, Spawn, StartError};
use super::super::request::SpawnRequest;
use super::super::runtime::ExecRuntime;
use crate::imports::CallInfo;

/// `sh -c command` in `work`, with `setup`.
fn sh(work: &Path, command: &str, setup: &super::super::confine::ChildSetup) -> Result<bool, StartError> {
    let args = vec!["-c".to_string(), command.to_string()];
    let what = Spawn {
        program: Path::new("/bin/sh"),
        arg0: "sh",
        args: &args,
        env: vec![],
        cwd: work,
        stdin: false,
        output: Output::Null,
    };
    let mut spawned = super::super::process::spawn(&what, setup)?;
    Ok(spawned.process.wait_blocking().expect("wait").success())
}

fn stale(result: Result<bool, StartError>) {
    let err = result.expect_err("the child started in a stale root");
    let expected = SetupFailed { step: Step::Root, errno: libc::ESTALE };
    assert!(matches!(err.failed, Failed::Child(ChildFailed::Setup(f)) if f == expected), "{err}");
}

fn bind(path: &Path) -> ProtectBind {
    let meta = std::fs::symlink_metadata(path).unwrap();
    ProtectBind { path: path.to_path_buf(), read_only: true, dev: meta.dev(), ino: meta.ino() }
}

#[test]
fn children_share_one_root_and_a_bind_it_lacks_stops_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let runtime = ExecRuntime::new(ExecSettings::default(), Some(work.clone()));
    let (confinement, limits) = runtime.confinement_for_tests();
    assert!(confinement.reuse, "children do not share roots here");
    // The probe built the read-only root; read-only children enter it.
    assert_eq!(confinement.roots.len(), 1);
    for _ in 0..3 {
        let (setup, _cgroup) = confinement.setup(limits, false, &work, &[]).unwrap();
        assert!(setup.root.is_some());
        assert!(sh(&work, "test -d /usr && ! touch x", &setup).unwrap());
    }
    assert_eq!(confinement.roots.len(), 1);
    // A `.git` the root has no bind for: right inode, but no mount there.
    std::fs::create_dir(work.join(".git")).unwrap();
    let (mut setup, _cgroup) = confinement.setup(limits, true, &work, &[]).unwrap();
    setup.mounts = confinement.layout.checks(&[bind(&work.join(".git"))], &work).unwrap();
    stale(sh(&work, "true", &setup));
}

#[test]
fn a_bind_the_host_removed_stops_the_child_and_the_runtime_builds_a_fresh_root() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    std::fs::create_dir(work.join(".git")).unwrap();
    let runtime = ExecRuntime::new(ExecSettings::default(), Some(work.clone()));
    let (confinement, limits) = runtime.confinement_for_tests();
    let old = [bind(&work.join(".git"))];
    let (setup, _cgroup) = confinement.setup(limits, true, &work, &old).unwrap();
    assert!(sh(&work, "touch ok && ! touch .git/x", &setup).unwrap());
    // Removing it detaches its bind in the shared root; a new one may even get the
    // same inode number. The root still kept for the old binds is stale.
    std::fs::remove_dir(work.join(".git")).unwrap();
    std::fs::create_dir(work.join(".git")).unwrap();
    let (setup, _cgroup) = confinement.setup(limits, true, &work, &old).unwrap();
    stale(sh(&work, "touch .git/x", &setup));
    assert!(!work.join(".git/x").exists());
    // Through the runtime (its own walk, and one more try in a fresh root when
    // the kept one is stale), the new `.git` is read-only all the same.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let call = CallInfo {
        plugin: "p".into(),
        call_id: "c".into(),
        deadline: Instant::now() + Duration::from_secs(60),
    };
    let args = vec!["-c".to_string(), "touch .git/x".to_string()];
    let mut req = SpawnRequest::new("/bin/sh".into(), "sh".into(), args, work.clone(), None, &call, limits);
    req.writable = true;
    let finished = rt.block_on(runtime.run(req, &CancellationToken::new())).unwrap();
    assert_ne!(finished.exit_code, Some(0), "{finished:?}");
    assert!(!work.join(".git/x").exists());
}
