//! The two searches over a work dir: [`grep()`] and [`find()`], each checking
//! its arguments, opening its root confined to the work dir, walking it in
//! parallel ([`crate::walk`]) and keeping only what can be shown
//! ([`crate::collect`]), until the walk ends or [`Stop`] says to stop.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::Dir;
use regex::bytes::Regex;

use crate::collect::{FirstMatches, FirstPaths, Hits};
use crate::fsops::{self, Kind, OpenError};
pub use crate::walk::Stop;
use crate::walk::{Entry, WalkSpec, walk};
use crate::{
    BINARY_PROBE, EntryKind, FileLines, FindRequest, FindResult, Glob, GrepRequest, GrepResult, Line,
    LineKind, MAX_CONTEXT, MAX_FILE, MAX_FIND_RESULTS, MAX_GREP_RESULTS, SearchError, build_regex, rules,
    rules_fs, scan,
};

/// Search the files below (or at) `req.path`, inside the work dir `work_dir`.
pub fn grep(work_dir: &Path, req: &GrepRequest, stop: &Stop) -> Result<GrepResult, SearchError> {
    in_range("max_results", req.max_results, 1, MAX_GREP_RESULTS)?;
    in_range("before", req.before, 0, MAX_CONTEXT)?;
    in_range("after", req.after, 0, MAX_CONTEXT)?;
    let re =
        build_regex(&req.pattern, req.literal, req.case_insensitive).map_err(SearchError::InvalidArgs)?;
    let glob = match req.glob.as_deref().map(str::trim) {
        Some(g) if !g.is_empty() => Some(Glob::new(g).map_err(SearchError::InvalidArgs)?),
        _ => None,
    };
    let query =
        Query { re, max: req.max_results.into(), before: req.before as usize, after: req.after as usize };
    let (work, rel) = locate(work_dir, &req.path)?;
    let meta = if rel.as_os_str().is_empty() { work.dir_metadata() } else { work.metadata(&rel) };
    let meta = meta.map_err(|e| io_error(&req.path, &e))?;
    let mut result = GrepResult::default();
    let locals = if meta.is_file() {
        let mut local = GrepLocal::new(query.max);
        let opened = open_following(&work, &rel);
        local.search(&query, opened, Vec::new(), || rel.to_string_lossy().into_owned());
        vec![local]
    } else if meta.is_dir() {
        let root = open_root(&work, &rel, &req.path)?;
        let rules = if req.include_ignored { None } else { rules_fs::above(work_dir, &work, &rel) };
        let root_path = work_dir.join(&rel);
        let spec = walk_spec(&root, &root_path, usize::MAX, !req.include_ignored, rules, stop);
        let visit = |local: &mut GrepLocal, dir: std::os::fd::BorrowedFd<'_>, e: &Entry<'_>| {
            if e.kind != Kind::File || glob.as_ref().is_some_and(|g| !g.is_match(&e.rel)) || stop.stopped() {
                return;
            }
            let opened = fsops::open_file(dir, e.name);
            local.search(&query, opened, e.key.clone(), || rel.join(&e.rel).to_string_lossy().into_owned());
        };
        let (locals, counts) = walk(&spec, || GrepLocal::new(query.max), visit);
        result.walk = counts;
        locals
    } else {
        return Err(SearchError::InvalidArgs(format!(
            "{} is neither a regular file nor a directory",
            req.path
        )));
    };
    if stop.stopped() {
        return Err(SearchError::Stopped);
    }
    let mut first = FirstMatches::new(query.max);
    for local in locals {
        result.matches += local.matches;
        result.files_searched += local.searched;
        result.files_matched += local.matched;
        result.binary += local.binary;
        result.large += local.large;
        result.unreadable += local.unreadable;
        first.merge(local.first);
    }
    (result.files, result.context_lines) = shown(first, query.max, query.before + query.after > 0);
    Ok(result)
}

/// The compiled arguments of a grep.
struct Query {
    re: Regex,
    max: u64,
    before: usize,
    after: usize,
}

/// One thread's part of a grep: its read buffer, its counts, its first matches.
struct GrepLocal {
    buf: Vec<u8>,
    first: FirstMatches,
    matches: u64,
    searched: u64,
    matched: u64,
    binary: u64,
    large: u64,
    unreadable: u64,
}

impl GrepLocal {
    fn new(max: u64) -> Self {
        Self {
            buf: Vec::new(),
            first: FirstMatches::new(max),
            matches: 0,
            searched: 0,
            matched: 0,
            binary: 0,
            large: 0,
            unreadable: 0,
        }
    }

    /// Search the file `opened`, at walk position `key`, shown as `path()`.
    fn search(
        &mut self,
        q: &Query,
        opened: Result<(OwnedFd, u64), OpenError>,
        key: Vec<u32>,
        path: impl FnOnce() -> String,
    ) {
        let Ok((fd, size)) = opened else {
            self.unreadable += 1;
            return;
        };
        if size > MAX_FILE {
            self.large += 1;
            return;
        }
        // Read exactly the size `fstat` gave (a file growing meanwhile is
        // searched up to that size).
        if fsops::read_up_to(fd.as_fd(), &mut self.buf, size as usize).is_err() {
            self.unreadable += 1;
            return;
        }
        if self.buf[..self.buf.len().min(BINARY_PROBE)].contains(&0) {
            self.binary += 1;
            return;
        }
        self.searched += 1;
        let found = scan::scan(&self.buf, &q.re, q.max, q.before, q.after);
        if found.matches > 0 {
            self.matched += 1;
            self.matches += found.matches;
            self.first.offer(key, Hits { path: path(), scan: found });
        }
    }
}

/// The lines shown: the first `max` matches in walk order with their
/// context, `--` between files when there is context; and the count of
/// context lines among them.
fn shown(first: FirstMatches, max: u64, context: bool) -> (Vec<FileLines>, u64) {
    let (mut files, mut remaining, mut context_lines) = (Vec::new(), max, 0);
    for hits in first.into_files() {
        if remaining == 0 {
            break;
        }
        let shown = hits.scan.matches.min(remaining);
        remaining -= shown;
        let mut lines: Vec<Line> =
            hits.scan.lines.into_iter().filter(|(tag, _)| *tag <= shown).map(|(_, line)| line).collect();
        if context && !files.is_empty() {
            lines.insert(0, Line { number: 0, kind: LineKind::Break, text: "--".into() });
        }
        context_lines += lines.iter().filter(|l| l.kind == LineKind::Context).count() as u64;
        files.push(FileLines { path: hits.path, lines });
    }
    (files, context_lines)
}

/// List the entries below `req.path` that match its glob and filters.
pub fn find(work_dir: &Path, req: &FindRequest, stop: &Stop) -> Result<FindResult, SearchError> {
    in_range("max_results", req.max_results, 1, MAX_FIND_RESULTS)?;
    in_range("max_depth", req.max_depth, 1, u32::MAX)?;
    let glob = Glob::new(&req.pattern).map_err(SearchError::InvalidArgs)?;
    let (work, rel) = locate(work_dir, &req.path)?;
    let root = open_root(&work, &rel, &req.path)?;
    let rules = if req.include_ignored { None } else { rules_fs::above(work_dir, &work, &rel) };
    let root_path = work_dir.join(&rel);
    let spec = walk_spec(&root, &root_path, req.max_depth as usize, !req.include_ignored, rules, stop);
    let since = req.modified_since.map(|s| i64::try_from(s).unwrap_or(i64::MAX));
    let visit = |found: &mut FirstPaths, dir: std::os::fd::BorrowedFd<'_>, e: &Entry<'_>| {
        let kind_ok = match req.kind {
            None => matches!(e.kind, Kind::File | Kind::Symlink),
            Some(EntryKind::File) => e.kind == Kind::File,
            Some(EntryKind::Dir) => e.kind == Kind::Dir,
            Some(EntryKind::Symlink) => e.kind == Kind::Symlink,
        };
        if !kind_ok || !glob.is_match(&e.rel) {
            return;
        }
        if let Some(since) = since
            && fsops::mtime(dir, e.name).is_none_or(|t| t < since)
        {
            return;
        }
        found.offer(rel.join(&e.rel).to_string_lossy().into_owned());
    };
    let max = req.max_results as usize;
    let (locals, walk_counts) = walk(&spec, || FirstPaths::new(max), visit);
    if stop.stopped() {
        return Err(SearchError::Stopped);
    }
    let mut all = FirstPaths::new(max);
    for local in locals {
        all.merge(local);
    }
    Ok(FindResult { total: all.total, paths: all.into_sorted(), walk: walk_counts })
}

fn walk_spec<'a>(
    root: &'a Dir,
    root_path: &'a Path,
    max_depth: usize,
    honour_ignores: bool,
    rules: Option<Arc<rules::Rules>>,
    stop: &'a Stop,
) -> WalkSpec<'a> {
    WalkSpec { root: root.as_fd(), root_path, max_depth, honour_ignores, rules, stop }
}

fn in_range(name: &str, value: u32, min: u32, max: u32) -> Result<(), SearchError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(SearchError::InvalidArgs(format!("{name} must be between {min} and {max}, not {value}")))
    }
}

/// The work dir's handle and `path` relative to it: `denied` when `path` is not
/// below the work dir or holds `..`.
fn locate(work_dir: &Path, path: &str) -> Result<(Dir, PathBuf), SearchError> {
    let outside = || SearchError::Denied(format!("{path} is outside the work directory"));
    let rel = Path::new(path).strip_prefix(work_dir).map_err(|_| outside())?;
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(outside());
    }
    let work = Dir::open_ambient_dir(work_dir, cap_std::ambient_authority())
        .map_err(|e| io_error(&work_dir.to_string_lossy(), &e))?;
    Ok((work, rel.to_path_buf()))
}

/// The root directory `rel` of the walk, opened from the work dir as WASI
/// would (a symlink on the way is followed only inside the work dir).
fn open_root(work: &Dir, rel: &Path, shown: &str) -> Result<Dir, SearchError> {
    let opened = if rel.as_os_str().is_empty() { work.try_clone() } else { work.open_dir(rel) };
    opened.map_err(|e| io_error(shown, &e))
}

/// The file `rel`, opened from the work dir as WASI would (a symlink on the
/// way followed only inside it), without blocking, a regular file only.
fn open_following(work: &Dir, rel: &Path) -> Result<(OwnedFd, u64), OpenError> {
    use cap_std::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(flags.bits() as i32);
    let file = work
        .open_with(rel, &options)
        .map_err(|e| OpenError::Io(rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::IO)))?;
    fsops::checked(OwnedFd::from(file.into_std()))
}

fn io_error(path: &str, e: &std::io::Error) -> SearchError {
    let message = format!("{path}: {e}");
    match e.kind() {
        std::io::ErrorKind::NotFound => SearchError::NotFound(message),
        std::io::ErrorKind::PermissionDenied => SearchError::Denied(message),
        _ => SearchError::Io(message),
    }
}

#[cfg(test)]
mod tests;
