//! The parallel walk below a root handle: a few threads share a stack of
//! directories still to list; each lists one (see [`fsops`]), sorts it
//! (directories first, then the rest, each by name), drops what the guest walk
//! drops (the [`SKIP_DIRS`] below the root, what ignore files ignore), hands
//! every other entry to the visitor with its directory's handle, and stacks its
//! subdirectories. Each entry carries its *key*: the indices of it and its
//! ancestors in their sorted listings, so sorting by key gives the guest walk's
//! order (depth first, directories before files) whatever thread saw it.
//!
//! A thread holds at most its directory's handle and one file's at a time: the
//! stack holds paths, each opened from the root without following symlinks.
//! The walk stops early when [`Stop`] says so.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::fsops::{self, Kind};
use crate::rules::{self, IGNORE_FILES, Rules};
use crate::rules_fs;
use crate::{SKIP_DIRS, WalkCounts};

/// When a search gives up: a flag its caller sets (the call was cancelled or
/// dropped), or a deadline.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    flag: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Stop {
    /// Stop when `flag` is set or at `deadline`.
    pub fn new(flag: Arc<AtomicBool>, deadline: Option<Instant>) -> Self {
        Self { flag, deadline }
    }

    /// Whether to stop now.
    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.deadline.is_some_and(|at| Instant::now() >= at)
    }
}

/// Threads one search uses at most.
pub const MAX_THREADS: usize = 4;

/// One entry the walk found.
#[derive(Debug)]
pub struct Entry<'a> {
    /// Its name in its directory.
    pub name: &'a OsStr,
    /// Its path relative to the root.
    pub rel: PathBuf,
    /// Its place in the walk order.
    pub key: Vec<u32>,
    /// Its depth: 1 for the root's own entries.
    pub depth: usize,
    /// What it is (symlinks not followed).
    pub kind: Kind,
}

/// What to walk and how.
pub(crate) struct WalkSpec<'a> {
    /// The root's handle.
    pub root: BorrowedFd<'a>,
    /// The root's host path (what ignore rules match against).
    pub root_path: &'a Path,
    /// Deepest entries visited (1: the root's own).
    pub max_depth: usize,
    /// Whether ignore files are read and obeyed.
    pub honour_ignores: bool,
    /// The rules in force in the root before its own files.
    pub rules: Option<Arc<Rules>>,
    /// When to give up.
    pub stop: &'a Stop,
}

struct Job {
    rel: PathBuf,
    key: Vec<u32>,
    depth: usize,
    rules: Option<Arc<Rules>>,
}

struct Queue {
    jobs: Vec<Job>,
    busy: usize,
}

/// Walk `spec`, calling `visit` with each thread's own state (made by `local`)
/// for every entry kept; the threads' states and what the walk left out.
pub(crate) fn walk<L: Send>(
    spec: &WalkSpec<'_>,
    local: impl Fn() -> L + Sync,
    visit: impl Fn(&mut L, BorrowedFd<'_>, &Entry<'_>) + Sync,
) -> (Vec<L>, WalkCounts) {
    let first = Job { rel: PathBuf::new(), key: Vec::new(), depth: 1, rules: spec.rules.clone() };
    let queue = Mutex::new(Queue { jobs: vec![first], busy: 0 });
    let ready = Condvar::new();
    let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, MAX_THREADS);
    let run = || worker(spec, &queue, &ready, &local, &visit);
    let results: Vec<(L, WalkCounts)> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(run)).collect();
        let mut all = vec![run()];
        for handle in others {
            all.push(handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        all
    });
    let mut counts = WalkCounts::default();
    let states = results
        .into_iter()
        .map(|(state, c)| {
            counts.add(c);
            state
        })
        .collect();
    (states, counts)
}

fn worker<L>(
    spec: &WalkSpec<'_>,
    queue: &Mutex<Queue>,
    ready: &Condvar,
    local: &impl Fn() -> L,
    visit: &impl Fn(&mut L, BorrowedFd<'_>, &Entry<'_>),
) -> (L, WalkCounts) {
    let (mut state, mut counts) = (local(), WalkCounts::default());
    while let Some(job) = next_job(queue, ready, spec.stop) {
        let subdirs = list_one(spec, job, &mut counts, &mut |e, dir| visit(&mut state, dir, e));
        let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.jobs.extend(subdirs.into_iter().rev());
        q.busy -= 1;
        ready.notify_all();
    }
    (state, counts)
}

/// The next directory to list, or `None` when none is left (or the walk stops).
fn next_job(queue: &Mutex<Queue>, ready: &Condvar, stop: &Stop) -> Option<Job> {
    let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if stop.stopped() {
            return None;
        }
        if let Some(job) = q.jobs.pop() {
            q.busy += 1;
            return Some(job);
        }
        if q.busy == 0 {
            return None;
        }
        q = ready.wait_timeout(q, Duration::from_millis(50)).unwrap_or_else(PoisonError::into_inner).0;
    }
}

/// List the directory of `job`, visit what is kept, and return its
/// subdirectories to walk, in order.
fn list_one(
    spec: &WalkSpec<'_>,
    job: Job,
    counts: &mut WalkCounts,
    visit: &mut dyn FnMut(&Entry<'_>, BorrowedFd<'_>),
) -> Vec<Job> {
    let Ok(dir) = fsops::open_dir(spec.root, &job.rel) else {
        counts.unreadable_dirs += 1;
        return Vec::new();
    };
    let (mut entries, failed) = fsops::list(dir.as_fd());
    counts.unreadable_entries += failed as u64;
    entries.sort_by(|a, b| (a.1 != Kind::Dir, &a.0).cmp(&(b.1 != Kind::Dir, &b.0)));
    let dir_path = spec.root_path.join(&job.rel);
    let rules = if spec.honour_ignores {
        let present: Vec<&str> = IGNORE_FILES
            .into_iter()
            .filter(|n| entries.iter().any(|(name, kind)| *kind == Kind::File && name == n))
            .collect();
        rules_fs::enter(&dir_path, dir.as_fd(), job.rules, &present)
    } else {
        None
    };
    let mut subdirs = Vec::new();
    for (i, (name, kind)) in entries.iter().enumerate() {
        if spec.stop.stopped() {
            break;
        }
        let is_dir = *kind == Kind::Dir;
        if is_dir && SKIP_DIRS.iter().any(|skip| OsStr::new(skip) == name) {
            counts.skipped_dirs.push(name.to_string_lossy().into_owned());
            continue;
        }
        if rules::is_ignored(rules.as_deref(), &dir_path.join(name), is_dir) {
            counts.ignored += 1;
            continue;
        }
        let mut key = job.key.clone();
        key.push(u32::try_from(i).unwrap_or(u32::MAX));
        let entry = Entry { name, rel: job.rel.join(name), key, depth: job.depth, kind: *kind };
        visit(&entry, dir.as_fd());
        if is_dir && job.depth < spec.max_depth {
            subdirs.push(Job { rel: entry.rel, key: entry.key, depth: job.depth + 1, rules: rules.clone() });
        }
    }
    subdirs
}
