//! One child, from start to reaped: spawn it confined, feed its stdin, read its
//! output (head and tail), wait for it under its deadline and the call's
//! cancellation, then kill whatever it left behind.
//!
//! The end of a child is decided by waiting for it, never by its pipes: a
//! background job can hold them open for ever. Once the leader has ended (or been
//! killed) every process left in its cgroup and process group is killed, and the
//! readers are given a moment to drain what was written before.
//!
//! If the future is dropped midway (the call's own deadline passed), [`TreeGuard`]
//! kills the whole tree on drop, and the leader is reaped (`super::process`).
//!
//! Once a writing child's whole tree is dead, its overlay is merged into the work
//! dir (`super::overlay`), or without one its protected paths are checked
//! (`super::protect_check`): what it made there is refused or removed, and the
//! spawn fails with [`SpawnError::Protected`]. When the future is dropped first,
//! the guard still does this (off the call's path) after killing the tree.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe::{Receiver, Sender};
use tokio_util::sync::CancellationToken;

use super::capture::Captured;
use super::capture::read_capped;
use super::cgroup::ChildCgroup;
use super::confine::{self, ChildSetup, Step};
use super::overlay::{Pending, Unmerged};
use super::process::{self, Output, Spawn, Spawned};
use super::protect_check::Watch;
use super::request::SpawnRequest;
use super::table::{ProcessState, ProcessTable};

/// How long the readers may drain the pipes after the tree was killed.
const DRAIN: Duration = Duration::from_secs(2);

/// How a child ended.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Exit status, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Its stdout (and stderr when merged).
    pub stdout: Captured,
    /// Its stderr.
    pub stderr: Captured,
    /// Wall time.
    pub duration: Duration,
    /// Killed at its deadline.
    pub timed_out: bool,
    /// Killed because the call was cancelled.
    pub cancelled: bool,
}

/// Why a child was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// Too many children are running.
    #[error("exec_busy: {0}")]
    Busy(String),
    /// The host cannot confine a child here.
    #[error("sandbox_unavailable: {0}")]
    Unavailable(String),
    /// Starting it failed.
    #[error("spawn_failed: {0}")]
    Failed(String),
    /// It ran, and changed a protected path in a way bind mounts cannot stop
    /// (creating a `.git`, say); what could be undone was.
    #[error("permission_denied: {0}")]
    Protected(String),
}

impl SpawnError {
    /// The error code ([`toolhost_codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            SpawnError::Busy(_) => toolhost_codes::EXEC_BUSY,
            SpawnError::Unavailable(_) => toolhost_codes::SANDBOX_UNAVAILABLE,
            SpawnError::Failed(_) => toolhost_codes::SPAWN_FAILED,
            SpawnError::Protected(_) => toolhost_codes::PERMISSION_DENIED,
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        match self {
            SpawnError::Busy(m)
            | SpawnError::Unavailable(m)
            | SpawnError::Failed(m)
            | SpawnError::Protected(m) => m,
        }
    }
}

/// Kills the child's whole tree, and does so again when dropped: the process group,
/// and every process of the cgroup (or, without one, of the child's user namespace),
/// `setsid` or not.
struct TreeGuard<'a> {
    pgid: u32,
    /// The child's own user namespace, when there is no cgroup to find its tree by.
    userns: Option<std::ffi::OsString>,
    cgroup: Option<ChildCgroup>,
    table: &'a ProcessTable,
    entry: u64,
    recorded: bool,
    /// What to do once the tree is dead (merge, or check).
    after: Option<After>,
}

impl TreeGuard<'_> {
    fn kill(&self) {
        if self.pgid > 0 {
            confine::kill_group(self.pgid, libc::SIGKILL);
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
        if let Some(ns) = &self.userns {
            confine::kill_namespace(ns);
        }
    }
}

impl Drop for TreeGuard<'_> {
    fn drop(&mut self) {
        self.kill();
        if !self.recorded {
            self.table.ended(self.entry, ProcessState::Cancelled);
        }
        // Removing the cgroup waits for the killed processes to leave it, and the
        // merge or check walks the work dir: off the call's path when there is a
        // runtime to do them on. Nobody is left to tell (the call is ending
        // otherwise), so what they find is logged; what they refuse or undo is all
        // the same.
        let (cgroup, then) = (self.cgroup.take(), self.after.take());
        let after = move || {
            if let Some(cgroup) = cgroup {
                cgroup.remove();
            }
            if let Some(Err(why)) = then.map(After::finish) {
                tracing::warn!(%why, "a child that was stopped had changed protected paths");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(after)),
            Err(_) => after(),
        }
    }
}

enum End {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

/// What gives a setup whose shared root a child found stale a fresh one.
pub(super) type Refresh<'a> = &'a (dyn Fn(&mut ChildSetup) -> Result<(), String> + Sync);

/// Spawn `req` with `setup` (its cgroup in `cgroup`), wait for it, and reap it and
/// everything it started; then do `after` (merge its overlay, or check the
/// protected paths). Records it in `table`. A child that found its shared root stale (`super::shared_root`) is
/// started once more after `refresh`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run(
    req: SpawnRequest,
    mut setup: ChildSetup,
    cgroup: Option<ChildCgroup>,
    after: Option<After>,
    path_var: &str,
    table: &ProcessTable,
    cancel: &CancellationToken,
    refresh: Option<Refresh<'_>>,
) -> Result<Finished, SpawnError> {
    let started = Instant::now();
    let (cwd, path) = (req.cwd.as_os_str(), OsStr::new(path_var));
    let fixed = [("PATH", path), ("HOME", cwd), ("TMPDIR", cwd), ("LANG", OsStr::new("C.UTF-8"))];
    let granted = req.env.iter().map(|(k, v)| (k.as_str(), OsStr::new(v)));
    let what = Spawn {
        program: &req.program,
        arg0: &req.arg0,
        args: &req.args,
        env: fixed.into_iter().chain(granted).map(|(k, v)| (OsStr::new(k), v)).collect(),
        cwd: &req.cwd,
        stdin: req.stdin.is_some(),
        output: if req.merge_stderr { Output::Merged } else { Output::Pipes },
    };
    let mut spawned = process::spawn(&what, &setup);
    if let (Err(e), Some(refresh)) = (&spawned, refresh)
        && setup.root.is_some()
        && e.failed_at(Step::Root)
    {
        tracing::debug!(error = %e, "a shared root went stale; trying once more with a fresh one");
        refresh(&mut setup).map_err(SpawnError::Unavailable)?;
        spawned = process::spawn(&what, &setup);
    }
    let namespaces = setup.namespaces;
    // The rulesets, filter and cgroup descriptor were used by the child before
    // `exec`: the setup's part is done.
    drop(setup);
    let Spawned { mut process, stdin, stdout, stderr } =
        spawned.map_err(|e| SpawnError::Failed(e.to_string()))?;
    let pid = process.id();
    let entry = table.started(pid, &req.display, &req.started_by, &req.call_id);
    let userns = if namespaces && cgroup.is_none() { confine::user_namespace(pid) } else { None };
    let mut guard = TreeGuard { pgid: pid, userns, cgroup, table, entry, recorded: false, after };

    let pipe_error = |e: std::io::Error| SpawnError::Failed(format!("pipe: {e}"));
    if let (Some(bytes), Some(stdin)) = (req.stdin, stdin) {
        let mut stdin = Sender::from_owned_fd(stdin).map_err(pipe_error)?;
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let cap = req.max_output;
    let reader = |fd: Option<OwnedFd>| -> Result<_, SpawnError> {
        Ok(match fd {
            Some(fd) => tokio::spawn(read_capped(Receiver::from_owned_fd(fd).map_err(pipe_error)?, cap)),
            None => tokio::spawn(async { Captured::default() }),
        })
    };
    let (stdout, stderr) = (reader(stdout)?, reader(stderr)?);

    let end = tokio::select! {
        biased;
        status = process.wait() => End::Exited(status),
        _ = cancel.cancelled() => End::Cancelled,
        _ = tokio::time::sleep(req.timeout) => End::TimedOut,
    };
    // Whatever the leader did, nothing it started outlives the call.
    guard.kill();
    let (timed_out, cancelled) = (matches!(end, End::TimedOut), matches!(end, End::Cancelled));
    let status = match end {
        End::Exited(status) => status,
        End::TimedOut | End::Cancelled => process.wait().await,
    };
    let duration = started.elapsed();
    let drain = |task: tokio::task::JoinHandle<Captured>| async move {
        let abort = task.abort_handle();
        match tokio::time::timeout(DRAIN, task).await {
            Ok(Ok(captured)) => captured,
            _ => {
                abort.abort();
                Captured::default()
            }
        }
    };
    let (stdout, stderr) = tokio::join!(drain(stdout), drain(stderr));
    // The whole tree is dead (killed above): nothing it started writes now. The
    // merge or check runs to its end even if this future is dropped meanwhile.
    let tampered = match guard.after.take() {
        Some(after) => match tokio::task::spawn_blocking(move || after.finish()).await {
            Ok(verdict) => verdict.err(),
            Err(e) => Some(SpawnError::Failed(format!("merging the command's changes did not finish: {e}"))),
        },
        None => None,
    };

    let status = status.map_err(|e| SpawnError::Failed(format!("waiting for the child: {e}")))?;
    let state = match (timed_out, cancelled, status.code(), status.signal()) {
        (true, _, _, _) => ProcessState::TimedOut,
        (_, true, _, _) => ProcessState::Cancelled,
        (_, _, Some(code), _) => ProcessState::Exited(code),
        (_, _, None, signal) => ProcessState::Signaled(signal.unwrap_or(0)),
    };
    table.ended(entry, state);
    guard.recorded = true;
    drop(guard);
    if let Some(e) = tampered {
        return Err(e);
    }
    Ok(Finished {
        exit_code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        duration,
        timed_out,
        cancelled,
    })
}

/// What runs once a writing child's whole tree is dead.
#[derive(Debug)]
pub(super) enum After {
    /// It wrote to the work dir itself: compare the protected paths with the
    /// walk before, undoing what can be undone (`super::protect_check`).
    Check(Watch),
    /// It wrote through an overlay: merge its upper layer.
    Merge(Pending),
}

impl After {
    /// Do it; the error fails the call.
    pub(super) fn finish(self) -> Result<(), SpawnError> {
        match self {
            After::Check(watch) => watch.check().map_err(SpawnError::Protected),
            After::Merge(pending) => pending.finish().map_err(|e| match e {
                Unmerged::Failed(why) => SpawnError::Failed(why),
                Unmerged::Protected(why) => SpawnError::Protected(why),
            }),
        }
    }
}

#[cfg(test)]
#[path = "spawn_tests.rs"]
mod tests;
