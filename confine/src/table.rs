//! The processes this host started: the running ones and the last few that ended,
//! for `process_list`. Only the host's own children are ever listed.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How many ended processes are remembered.
const ENDED_KEPT: usize = 50;

/// Where a process is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "value")]
pub enum ProcessState {
    /// Still running.
    Running,
    /// Exited with this status.
    Exited(i32),
    /// Ended by this signal.
    Signaled(i32),
    /// Killed at its deadline.
    TimedOut,
    /// Killed because its call was cancelled.
    Cancelled,
}

/// One process the host started.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessInfo {
    /// Its pid on the host.
    pub pid: u32,
    /// The program and arguments, as one line (cut at 200 characters).
    pub command: String,
    /// The plugin or tool that started it.
    pub started_by: String,
    /// The call it belongs to.
    pub call_id: String,
    /// Its state.
    pub state: ProcessState,
    /// How long it has run (or ran).
    #[serde(serialize_with = "millis")]
    pub runtime: Duration,
    #[serde(skip)]
    started: Instant,
    #[serde(skip)]
    id: u64,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// The table.
#[derive(Debug, Default)]
pub(crate) struct ProcessTable {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    running: Vec<ProcessInfo>,
    ended: VecDeque<ProcessInfo>,
}

impl ProcessTable {
    /// Record a started process; returns its entry id.
    pub(crate) fn started(&self, pid: u32, command: &str, started_by: &str, call_id: &str) -> u64 {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.next += 1;
        let id = inner.next;
        let mut command = command.to_string();
        if command.chars().count() > 200 {
            command = command.chars().take(199).collect::<String>() + "…";
        }
        inner.running.push(ProcessInfo {
            pid,
            command,
            started_by: started_by.to_string(),
            call_id: call_id.to_string(),
            state: ProcessState::Running,
            runtime: Duration::ZERO,
            started: Instant::now(),
            id,
        });
        id
    }

    /// Record how entry `id` ended.
    pub(crate) fn ended(&self, id: u64, state: ProcessState) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = inner.running.iter().position(|p| p.id == id) {
            let mut info = inner.running.remove(i);
            info.runtime = info.started.elapsed();
            info.state = state;
            inner.ended.push_back(info);
            if inner.ended.len() > ENDED_KEPT {
                inner.ended.pop_front();
            }
        }
    }

    /// The running processes (oldest first), then the ended ones (newest first).
    pub(crate) fn snapshot(&self) -> Vec<ProcessInfo> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let running = inner.running.iter().map(|p| ProcessInfo { runtime: p.started.elapsed(), ..p.clone() });
        running.chain(inner.ended.iter().rev().cloned()).collect()
    }
}
