//! The journal's records, one JSON object a line, and reading them back into
//! [`Effect`]s.
//!
//! A run of a host starts with a `start` record; each call that may change
//! something writes `begin` before it runs and `settle` after. A `begin` whose
//! `settle` never came is an *indeterminate effect*: the call may have changed
//! files, or some of them, or nothing. A line that does not parse (the tail of a
//! write a crash cut short) is skipped and counted, never fatal.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One line of the journal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Record {
    /// A host started journaling.
    Start { run: String, pid: u32, time: String, work_dir: String },
    /// A call is about to run.
    Begin(Begin),
    /// That call ended.
    Settle(Settle),
}

/// What a call was, written before it runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Begin {
    /// The host run that made the call.
    pub run: String,
    /// The call's number within its run (call ids come from clients and may repeat).
    pub seq: u64,
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// sha256 of the arguments as JSON.
    pub args_sha256: String,
    /// The start of the arguments, redacted.
    pub preview: String,
    /// The paths the arguments name (as given).
    pub paths: Vec<String>,
    /// When it began (RFC 3339, UTC).
    pub time: String,
}

/// How a call ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settle {
    /// The run of the `begin` this settles.
    pub run: String,
    /// Its number.
    pub seq: u64,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The error code when it failed.
    pub code: Option<String>,
    /// Bytes a component's call wrote to files, as its write quota counted them
    /// (through `wasi:filesystem`, and its children's growth of the work dir;
    /// `None`: not counted, as for the host's own tools).
    pub bytes_written: Option<u64>,
    /// How long it ran.
    pub duration_ms: u64,
}

/// A journaled call: its begin, and its settle when one was written.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Effect {
    /// What the call was.
    #[serde(flatten)]
    pub begin: Begin,
    /// How it ended; `None`: indeterminate (or still running, see [`Effect::host_alive`]).
    pub settle: Option<Settle>,
    /// The process id of the host that ran it, when its start record is kept.
    pub pid: Option<u32>,
    /// Whether that process still runs (then a missing settle may just be pending).
    pub host_alive: bool,
}

impl Effect {
    /// Began and never settled.
    pub fn is_indeterminate(&self) -> bool {
        self.settle.is_none()
    }
}

/// What a journal holds, oldest first.
#[derive(Debug, Default)]
pub struct Log {
    /// Every journaled call.
    pub effects: Vec<Effect>,
    /// The runs, in the order they started.
    pub runs: Vec<String>,
    /// Lines that did not parse (a write cut short by a crash).
    pub torn_lines: usize,
}

impl Log {
    /// The calls that began and never settled.
    pub fn indeterminate(&self) -> impl DoubleEndedIterator<Item = &Effect> {
        self.effects.iter().filter(|e| e.is_indeterminate())
    }

    /// Parse the journal's text (older generations first).
    pub(crate) fn parse<'a>(texts: impl IntoIterator<Item = &'a str>) -> Log {
        let mut log = Log::default();
        let mut at: HashMap<(String, u64), usize> = HashMap::new();
        let mut pids: HashMap<String, u32> = HashMap::new();
        let mut settles = Vec::new();
        for line in texts.into_iter().flat_map(str::lines) {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(Record::Start { run, pid, .. }) => {
                    pids.insert(run.clone(), pid);
                    if !log.runs.contains(&run) {
                        log.runs.push(run);
                    }
                }
                // A begin carried over by a rotation is the same call.
                Ok(Record::Begin(begin)) => {
                    let key = (begin.run.clone(), begin.seq);
                    if let std::collections::hash_map::Entry::Vacant(slot) = at.entry(key) {
                        slot.insert(log.effects.len());
                        log.effects.push(Effect { begin, settle: None, pid: None, host_alive: false });
                    }
                }
                Ok(Record::Settle(settle)) => settles.push(settle),
                Err(_) => log.torn_lines += 1,
            }
        }
        for settle in settles {
            if let Some(&i) = at.get(&(settle.run.clone(), settle.seq)) {
                log.effects[i].settle = Some(settle);
            }
        }
        for effect in &mut log.effects {
            effect.pid = pids.get(&effect.begin.run).copied();
            effect.host_alive = effect.pid.is_some_and(process_alive);
        }
        log
    }
}

/// Whether process `pid` exists (it may be another program by now: a hint only).
fn process_alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists()
}

/// Read the journal files `paths` (older first; missing ones are empty), each
/// at most `max_bytes`.
pub(crate) fn read_files(paths: &[std::path::PathBuf], max_bytes: u64) -> io::Result<Log> {
    let mut texts = Vec::new();
    for path in paths {
        if let Some(bytes) = confine::hostfs::read_regular(path, max_bytes)? {
            texts.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    Ok(Log::parse(texts.iter().map(String::as_str)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begin(run: &str, seq: u64) -> Record {
        Record::Begin(Begin {
            run: run.into(),
            seq,
            call_id: format!("c{seq}"),
            tool: "write_file".into(),
            args_sha256: "00".into(),
            preview: "{}".into(),
            paths: vec!["a.txt".into()],
            time: "t".into(),
        })
    }

    fn settle(run: &str, seq: u64) -> Record {
        Record::Settle(Settle {
            run: run.into(),
            seq,
            ok: true,
            code: None,
            bytes_written: Some(3),
            duration_ms: 1,
        })
    }

    fn line(r: &Record) -> String {
        serde_json::to_string(r).unwrap() + "\n"
    }

    #[test]
    fn a_begin_without_settle_is_indeterminate_and_torn_lines_are_counted() {
        let start = Record::Start { run: "r1".into(), pid: 0, time: "t".into(), work_dir: "/w".into() };
        let text = [line(&start), line(&begin("r1", 1)), line(&begin("r1", 2)), line(&settle("r1", 1))]
            .concat()
            + r#"{"kind":"begin","run":"r1","se"#;
        let log = Log::parse([text.as_str()]);
        assert_eq!(log.effects.len(), 2);
        assert_eq!(log.torn_lines, 1);
        let open: Vec<u64> = log.indeterminate().map(|e| e.begin.seq).collect();
        assert_eq!(open, vec![2]);
        assert_eq!(log.runs, vec!["r1".to_string()]);
        assert_eq!(log.effects[0].pid, Some(0));
    }

    #[test]
    fn a_carried_over_begin_is_one_effect_settled_in_the_newer_file() {
        let old = line(&begin("r1", 7));
        let new = line(&begin("r1", 7)) + &line(&settle("r1", 7));
        let log = Log::parse([old.as_str(), new.as_str()]);
        assert_eq!(log.effects.len(), 1);
        assert_eq!(log.indeterminate().count(), 0);
    }
}
