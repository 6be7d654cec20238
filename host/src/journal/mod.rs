//! The effect journal: what each call that may change something was, written
//! durably *before* it runs, and how it ended, written after.
//!
//! When a host dies mid-call (killed, out of power), the journal says which calls
//! were in flight: a `begin` record without its `settle` is an *indeterminate
//! effect*, a call that may have changed some of what it names, or nothing.
//! `toolhost journal --indeterminate` lists them, and `toolhost serve` warns at start
//! when the previous run left any.
//!
//! - Where: `DATA_DIR/journal/<16 hex of sha256(canonical work dir)>/journal.jsonl`,
//!   outside the work dir, the directory 0700 and the file 0600, never followed
//!   through a symlink. One file per work dir, shared by every host on it.
//! - What: JSON lines (`record`: [`Begin`], [`Settle`]). A `begin` names the tool, the call id, the
//!   arguments' sha256, a bounded redacted preview and the paths they name; a
//!   `settle`, the outcome's code, the bytes written and the duration.
//! - Durable: each record is one `write` to an `O_APPEND` file, under one lock, so
//!   concurrent calls never interleave or tear each other's lines; the file is
//!   fsynced after each `begin` before the call may run. A `settle` is not synced: if
//!   a crash loses it, the call shows as indeterminate, which is never false.
//! - Bounded: past [`MAX_FILE_BYTES`] the file is renamed `journal.1.jsonl`
//!   (replacing the older one) and a new one starts with the calls still in flight
//!   and the indeterminate effects of earlier runs (at most [`MAX_CARRIED`]) copied
//!   over, so rotation forgets only settled calls.
//! - Read-only tools are not journaled: they change nothing.
//!
//! A public module: reading a journal (`toolhost journal`) is an API of its own.

mod describe;
mod record;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde_json::Value;

use record::Record;
pub use record::{Begin, Effect, Log, Settle};

/// A journal file's size before it is rotated.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Indeterminate effects of earlier runs copied into a new file at rotation.
pub const MAX_CARRIED: usize = 256;
const FILE: &str = "journal.jsonl";
const OLDER: &str = "journal.1.jsonl";

/// The journal directory of `work_dir` (canonical, or `None` for a host without one)
/// under `data_dir`.
pub fn dir_for(data_dir: &Path, work_dir: Option<&Path>) -> PathBuf {
    let key = work_dir.map(|d| d.as_os_str().as_encoded_bytes()).unwrap_or(b"");
    let hash = describe::digest(&String::from_utf8_lossy(key));
    data_dir.join("journal").join(&hash[..16])
}

/// Read the journal of `work_dir` under `data_dir` (older generation first).
pub fn read(data_dir: &Path, work_dir: Option<&Path>) -> io::Result<Log> {
    let dir = dir_for(data_dir, work_dir);
    // A generation may hold carried-over records beyond its rotation bound.
    record::read_files(&[dir.join(OLDER), dir.join(FILE)], MAX_FILE_BYTES * 4)
}

/// One host run's journal: appends `begin` and `settle` records.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    run: String,
    max_bytes: u64,
    seq: AtomicU64,
    state: Mutex<State>,
    /// What the journal held when this run opened it.
    previous: Log,
}

#[derive(Debug)]
struct State {
    file: Arc<File>,
    len: u64,
    /// This run's start record, written again at the head of each new file.
    start: String,
    /// The begin lines of this run's calls still in flight, by number.
    open: BTreeMap<u64, String>,
    /// Earlier runs' indeterminate begin lines, copied into each new file.
    carried: Vec<String>,
}

/// A call that began: hand it back to [`Journal::settle`].
#[derive(Debug)]
pub(crate) struct Ticket {
    seq: u64,
    started: Instant,
}

impl Journal {
    /// Open (or create) the journal of `work_dir` under `data_dir` and write this
    /// run's start record.
    pub fn open(data_dir: &Path, work_dir: Option<&Path>) -> io::Result<Journal> {
        Self::open_bounded(data_dir, work_dir, MAX_FILE_BYTES)
    }

    pub(crate) fn open_bounded(
        data_dir: &Path,
        work_dir: Option<&Path>,
        max_bytes: u64,
    ) -> io::Result<Journal> {
        let dir = dir_for(data_dir, work_dir);
        confine::hostfs::create_private_dir(&dir)?;
        let previous = read(data_dir, work_dir)?;
        let carried = previous
            .indeterminate()
            .rev()
            .take(MAX_CARRIED)
            .map(|e| line(&Record::Begin(e.begin.clone())))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let run = run_id();
        let start = line(&Record::Start {
            run: run.clone(),
            pid: std::process::id(),
            time: now(),
            work_dir: work_dir.map(|d| d.display().to_string()).unwrap_or_default(),
        });
        let file = open_append(&dir.join(FILE))?;
        let len = file.metadata()?.len();
        let state = State { file: Arc::new(file), len, start: start.clone(), open: BTreeMap::new(), carried };
        let journal =
            Journal { dir, run, max_bytes, seq: AtomicU64::new(1), state: Mutex::new(state), previous };
        journal.append(&start, None)?;
        Ok(journal)
    }

    /// This run's id (in every record it writes).
    pub fn run(&self) -> &str {
        &self.run
    }

    /// What earlier runs left in the journal, as read when this one opened it.
    pub fn previous(&self) -> &Log {
        &self.previous
    }

    /// Record that call `call_id` of `tool` with `args` is about to run, durably.
    /// `preview`: the arguments' JSON, redacted (it is bounded here).
    pub(crate) fn begin(
        &self,
        call_id: &str,
        tool: &str,
        args_json: &str,
        args: &Value,
        preview: &str,
    ) -> io::Result<Ticket> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let record = Record::Begin(Begin {
            run: self.run.clone(),
            seq,
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            args_sha256: describe::digest(args_json),
            preview: describe::preview(preview),
            paths: describe::paths(args),
            time: now(),
        });
        let file = self.append(&line(&record), Some(seq))?;
        file.sync_data()?;
        Ok(Ticket { seq, started: Instant::now() })
    }

    /// Record how the call of `ticket` ended (not synced; see the module doc).
    pub(crate) fn settle(
        &self,
        ticket: Ticket,
        code: Option<&str>,
        bytes_written: Option<u64>,
    ) -> io::Result<()> {
        let record = Record::Settle(Settle {
            run: self.run.clone(),
            seq: ticket.seq,
            ok: code.is_none(),
            code: code.map(str::to_string),
            bytes_written,
            duration_ms: ticket.started.elapsed().as_millis() as u64,
        });
        let text = line(&record);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.open.remove(&ticket.seq);
        self.write_locked(&mut state, &text).map(drop)
    }

    /// Append `text` (one whole line) under the lock; `begin`: it is that call's
    /// begin line, kept until it settles. Returns the file written, to sync.
    fn append(&self, text: &str, begin: Option<u64>) -> io::Result<Arc<File>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let file = self.write_locked(&mut state, text)?;
        if let Some(seq) = begin {
            state.open.insert(seq, text.to_string());
        }
        Ok(file)
    }

    fn write_locked(&self, state: &mut State, text: &str) -> io::Result<Arc<File>> {
        if state.len > 0 && state.len + text.len() as u64 > self.max_bytes {
            self.rotate(state)?;
        }
        // One write of the whole line: O_APPEND puts it at the end in one piece.
        (&*state.file).write_all(text.as_bytes())?;
        state.len += text.len() as u64;
        Ok(state.file.clone())
    }

    /// Start a new file: the current one becomes the older generation; what is not
    /// settled is copied into the new one, then synced.
    fn rotate(&self, state: &mut State) -> io::Result<()> {
        std::fs::rename(self.dir.join(FILE), self.dir.join(OLDER))?;
        let file = open_append(&self.dir.join(FILE))?;
        let mut head = state.start.clone();
        for text in state.carried.iter().chain(state.open.values()) {
            head.push_str(text);
        }
        (&file).write_all(head.as_bytes())?;
        file.sync_data()?;
        if let Ok(dir) = File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        state.file = Arc::new(file);
        state.len = head.len() as u64;
        Ok(())
    }
}

/// Open `path` to append, 0600, never through a symlink.
fn open_append(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

fn line(record: &Record) -> String {
    // A record of strings and numbers always serializes.
    let mut text = serde_json::to_string(record).unwrap_or_default();
    text.push('\n');
    text
}

/// The current time, RFC 3339 in UTC with milliseconds.
fn now() -> String {
    let ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// A run id unlikely to repeat: the start time and the process id.
fn run_id() -> String {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{nanos:x}-{}", std::process::id())
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
