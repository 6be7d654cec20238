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
use super::super::confine::{ChildSetup, SetupFailed, Step};
use super::super::mounts::ProtectBind;
use super::super::process::{Failed, Output, Spawn, Spawned, StartError};
use super::super::request::SpawnRequest;
use super::super::runtime::ExecRuntime;
use crate::request::CallInfo;

/// Start `sh -c command` in `work`, with `setup`.
fn start_sh(work: &Path, command: &str, setup: &ChildSetup) -> Result<Spawned, StartError> {
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
    super::super::process::spawn(&what, setup)
}

/// `sh -c command` in `work`, with `setup`, to its end.
fn sh(work: &Path, command: &str, setup: &ChildSetup) -> Result<bool, StartError> {
    Ok(start_sh(work, command, setup)?.process.wait_blocking().expect("wait").success())
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
        let (setup, _cgroup) = confinement.setup(limits, false, &work, &[], None).unwrap();
        assert!(setup.root.is_some());
        assert!(sh(&work, "test -d /usr && ! touch x", &setup).unwrap());
    }
    assert_eq!(confinement.roots.len(), 1);
    // A `.git` the root has no bind for: right inode, but no mount there.
    std::fs::create_dir(work.join(".git")).unwrap();
    let (mut setup, _cgroup) = confinement.setup(limits, true, &work, &[], None).unwrap();
    setup.mounts = confinement.layout.checks(&[bind(&work.join(".git"))], &work, Vec::new()).unwrap();
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
    let (setup, _cgroup) = confinement.setup(limits, true, &work, &old, None).unwrap();
    assert!(sh(&work, "touch ok && ! touch .git/x", &setup).unwrap());
    // Removing it detaches its bind in the shared root; a new one may even get the
    // same inode number. The root still kept for the old binds is stale.
    std::fs::remove_dir(work.join(".git")).unwrap();
    std::fs::create_dir(work.join(".git")).unwrap();
    let (setup, _cgroup) = confinement.setup(limits, true, &work, &old, None).unwrap();
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

/// The network namespace `pid` is in.
fn net_of(pid: u32) -> std::path::PathBuf {
    std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap()
}

#[test]
fn each_child_enters_a_network_namespace_made_for_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let runtime = ExecRuntime::new(ExecSettings::default(), Some(work.clone()));
    let (confinement, limits) = runtime.confinement_for_tests();
    // The first child finds none made yet and makes its own; with no runtime, the
    // helper makes more before `setup` returns, and the next children get them.
    // (A child's cgroup, where there is one, kills it when dropped: kept.)
    let (mut children, mut cgroups) = (Vec::new(), Vec::new());
    let mut pooled = 0;
    for _ in 0..6 {
        let (setup, cgroup) = confinement.setup(limits, false, &work, &[], None).unwrap();
        pooled += usize::from(setup.net.is_some());
        children.push(start_sh(&work, "sleep 5", &setup).unwrap());
        cgroups.push(cgroup);
    }
    assert!(pooled >= 4, "only {pooled} of 6 children got a namespace made ahead of time");
    let mut nets: Vec<_> = children.iter().map(|c| net_of(c.process.id())).collect();
    nets.push(std::fs::read_link("/proc/self/ns/net").unwrap());
    let distinct: std::collections::BTreeSet<_> = nets.iter().collect();
    assert_eq!(distinct.len(), nets.len(), "two children (or a child and the host) share one: {nets:?}");
    for mut child in children {
        child.process.kill();
        let _ = child.process.wait_blocking();
    }
}

#[test]
fn a_child_in_a_namespace_made_ahead_reaches_nothing_and_cannot_bring_up_its_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let runtime = ExecRuntime::new(ExecSettings::default(), Some(work.clone()));
    let (confinement, limits) = runtime.confinement_for_tests();
    // Prime the pool (no runtime: made before `setup` returns).
    drop(confinement.setup(limits, true, &work, &[], None).unwrap());
    let (setup, _cgroup) = confinement.setup(limits, true, &work, &[], None).unwrap();
    assert!(setup.net.is_some());
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    // Connect to the host's listener, then bring `lo` up (SIOCSIFFLAGS) and try
    // again: each outcome written to a file.
    let script = format!(
        r#"
import socket, fcntl, struct
def connect(name):
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        out = "connected"
    except OSError as e:
        out = "refused %d" % e.errno
    open(name, "w").write(out)
connect("before")
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", 0x1 | 0x8))
    up = "up"
except OSError as e:
    up = "refused %d" % e.errno
open("up", "w").write(up)
connect("after")
"#
    );
    std::fs::write(work.join("probe.py"), script).unwrap();
    assert!(sh(&work, "python3 probe.py", &setup).unwrap(), "the probe failed to run");
    let read = |name: &str| std::fs::read_to_string(work.join(name)).unwrap();
    assert!(read("before").starts_with("refused"), "{}", read("before"));
    assert!(read("up").starts_with("refused"), "{}", read("up"));
    assert!(read("after").starts_with("refused"), "{}", read("after"));
    assert!(host.accept().is_err(), "the host's listener was reached");
}
