//! A child ended by its deadline, by cancellation, or by its call being dropped is
//! reaped, and its process group is gone.

use std::sync::Arc;

use super::*;
use crate::ChildLimits;
use crate::request::CallInfo;

/// `sh` with a background `sleep` in its group, both for far longer than the test.
fn sleeper(timeout: Duration) -> SpawnRequest {
    let call = CallInfo {
        plugin: "p".into(),
        call_id: "c".into(),
        deadline: Instant::now() + Duration::from_secs(60),
    };
    let args = vec!["-c".to_string(), "sleep 300 & sleep 300".to_string()];
    let mut req = SpawnRequest::new(
        "/bin/sh".into(),
        "sh".into(),
        args,
        "/".into(),
        None,
        &call,
        &ChildLimits::default(),
    );
    req.timeout = timeout;
    req
}

/// Whether a process that is not a zombie is in process group `pgid`.
fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid pgrp ...
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// Within two seconds, `pid` is reaped (no `/proc` entry, not even a zombie) and its
/// group has no live process.
async fn assert_gone(pid: u32) {
    for _ in 0..200 {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() && !group_alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} or its group is still there");
}

fn setup() -> ChildSetup {
    ChildSetup::new(&ChildLimits::default())
}

#[tokio::test]
async fn a_child_past_its_deadline_is_killed_and_reaped() {
    let table = ProcessTable::default();
    let cancel = CancellationToken::new();
    let finished =
        run(sleeper(Duration::from_millis(200)), setup(), None, None, "/usr/bin:/bin", &table, &cancel, None)
            .await
            .unwrap();
    assert!(finished.timed_out && finished.signal == Some(libc::SIGKILL), "{finished:?}");
    let pid = table.snapshot()[0].pid;
    assert_eq!(table.snapshot()[0].state, ProcessState::TimedOut);
    assert_gone(pid).await;
}

#[tokio::test]
async fn a_cancelled_child_is_killed_and_reaped() {
    let table = ProcessTable::default();
    let cancel = CancellationToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        later.cancel();
    });
    let finished =
        run(sleeper(Duration::from_secs(60)), setup(), None, None, "/usr/bin:/bin", &table, &cancel, None)
            .await
            .unwrap();
    assert!(finished.cancelled, "{finished:?}");
    assert_gone(table.snapshot()[0].pid).await;
}

#[tokio::test]
async fn a_dropped_call_leaves_no_process() {
    let table = Arc::new(ProcessTable::default());
    let running = table.clone();
    let task = tokio::spawn(async move {
        let cancel = CancellationToken::new();
        run(sleeper(Duration::from_secs(60)), setup(), None, None, "/usr/bin:/bin", &running, &cancel, None)
            .await
    });
    let mut pid = None;
    for _ in 0..200 {
        pid = table.snapshot().first().map(|p| p.pid);
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = pid.expect("the child started");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(table.snapshot()[0].state, ProcessState::Cancelled);
    assert_gone(pid).await;
}
