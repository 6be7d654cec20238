//! `grep_files` and `find_files` over a work dir: what the builtin fs tool asks
//! (`GrepRequest`, `FindRequest`), what it gets back (`GrepResult`,
//! `FindResult`), the rules both sides apply to the arguments ([`Glob`],
//! [`build_regex`]), and, outside wasm, the search itself ([`grep()`],
//! [`find()`]): the host runs it for the guest through
//! `toolhost:plugin/search`, natively the fs tools' unit tests run the same code.
//!
//! The search is confined like the guest's WASI view: the root is opened from
//! the work dir with cap-std (a symlink on the way stays inside it), and below
//! the root nothing is followed: each directory is opened from the root with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, each file from its
//! directory with `O_NOFOLLOW | O_NONBLOCK` and read only when it is a regular
//! file ([`fsops`]). The walk ([`walk`]) runs on a few threads and reports in
//! the guest walk's order (directories first, then files, each by name).

#[cfg(any(feature = "rules", not(target_arch = "wasm32")))]
mod glob;
#[cfg(any(feature = "rules", not(target_arch = "wasm32")))]
pub use glob::Glob;
#[cfg(any(feature = "rules", not(target_arch = "wasm32")))]
pub mod rules;

#[cfg(not(target_arch = "wasm32"))]
mod collect;
#[cfg(not(target_arch = "wasm32"))]
mod engine;
#[cfg(not(target_arch = "wasm32"))]
pub mod fsops;
#[cfg(not(target_arch = "wasm32"))]
mod rules_fs;
#[cfg(not(target_arch = "wasm32"))]
mod scan;
#[cfg(not(target_arch = "wasm32"))]
pub mod walk;

#[cfg(not(target_arch = "wasm32"))]
pub use engine::{Stop, find, grep};

/// What a listed entry is (symlinks not followed): by the host's walk and the guest's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// Directory names the walk never enters below its root. The root itself is
/// walked even when it has one of these names: the model asked for it.
pub const SKIP_DIRS: &[&str] =
    &[".git", "node_modules", "target", ".hg", ".svn", "__pycache__", ".venv", "dist", ".idea", ".cache"];
/// Files larger than this are not searched (counted as large).
pub const MAX_FILE: u64 = 1024 * 1024;
/// A NUL byte in this many leading bytes marks a file as binary.
pub const BINARY_PROBE: usize = 1024;
/// Lines longer than this (bytes) are cut around the match.
pub const MAX_LINE: usize = 300;
/// Largest `max_results` of a grep.
pub const MAX_GREP_RESULTS: u32 = 2000;
/// Largest `before` / `after`.
pub const MAX_CONTEXT: u32 = 20;
/// Largest `max_results` of a find.
pub const MAX_FIND_RESULTS: u32 = 5000;
/// Longest regex or glob (bytes) a search compiles. Compiling costs about a
/// hundred bytes of the host's memory per pattern byte, outside the call's
/// memory cap: 64 KiB is ~14 MB at most, a 1 MiB pattern would be ~100 MB.
pub const MAX_PATTERN: usize = 64 * 1024;

/// Refuse a pattern longer than [`MAX_PATTERN`], naming what it is (`what`) and
/// both lengths, without echoing it.
#[cfg(any(feature = "rules", not(target_arch = "wasm32")))]
pub(crate) fn check_pattern_len(what: &str, pattern: &str) -> Result<(), String> {
    if pattern.len() > MAX_PATTERN {
        return Err(format!(
            "the {what} is {} bytes; at most {MAX_PATTERN} are compiled (search for a shorter part of it)",
            pattern.len()
        ));
    }
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
/// The regex `grep_files` searches with: `^`/`$` at line starts and ends (CRLF
/// aware), `pattern` escaped when `literal`. The error is the parser's message,
/// or names [`MAX_PATTERN`] when the pattern is longer.
pub fn build_regex(
    pattern: &str,
    literal: bool,
    case_insensitive: bool,
) -> Result<regex::bytes::Regex, String> {
    check_pattern_len("pattern", pattern)?;
    let pattern = if literal { regex::escape(pattern) } else { pattern.to_string() };
    regex::bytes::RegexBuilder::new(&pattern)
        .multi_line(true)
        .crlf(true)
        .case_insensitive(case_insensitive)
        .build()
        .map_err(|e| format!("invalid regex: {e}"))
}

/// One `grep_files` search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepRequest {
    /// The directory or file searched: a path inside the work dir (absolute, as
    /// the guest resolved it).
    pub path: String,
    /// The regular expression (or fixed string when `literal`).
    pub pattern: String,
    /// `pattern` is a fixed string.
    pub literal: bool,
    /// Letters match regardless of case.
    pub case_insensitive: bool,
    /// Only files this glob matches ([`Glob`]'s rule), when searching a directory.
    pub glob: Option<String>,
    /// Also search what ignore files leave out.
    pub include_ignored: bool,
    /// Matching lines shown at most (1 to [`MAX_GREP_RESULTS`]).
    pub max_results: u32,
    /// Context lines before each shown match (at most [`MAX_CONTEXT`]).
    pub before: u32,
    /// Context lines after each shown match (at most [`MAX_CONTEXT`]).
    pub after: u32,
}

/// What a shown line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A matching line (`path:n:text`).
    Match,
    /// A context line (`path-n-text`).
    Context,
    /// `--` between groups that are not adjacent.
    Break,
}

/// One shown line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its line number (0 for a break).
    pub number: u64,
    /// Match, context or break.
    pub kind: LineKind,
    /// The text: without its `\r`, cut to about [`MAX_LINE`] bytes around the
    /// match (`…` marks a cut), lossily decoded.
    pub text: String,
}

/// The shown lines of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLines {
    /// The file, relative to the work dir (lossily decoded).
    pub path: String,
    /// Its shown lines, in order.
    pub lines: Vec<Line>,
}

/// What a walk left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkCounts {
    /// The name of each directory skipped by name ([`SKIP_DIRS`]).
    pub skipped_dirs: Vec<String>,
    /// Entries left out by ignore files.
    pub ignored: u64,
    /// Directories that could not be opened or listed.
    pub unreadable_dirs: u64,
    /// Entries whose name or type could not be read.
    pub unreadable_entries: u64,
}

#[cfg(not(target_arch = "wasm32"))]
impl WalkCounts {
    pub(crate) fn add(&mut self, other: WalkCounts) {
        self.skipped_dirs.extend(other.skipped_dirs);
        self.ignored += other.ignored;
        self.unreadable_dirs += other.unreadable_dirs;
        self.unreadable_entries += other.unreadable_entries;
    }
}

/// The outcome of a grep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepResult {
    /// The files with shown lines, in walk order.
    pub files: Vec<FileLines>,
    /// Matching lines in all (shown or not).
    pub matches: u64,
    /// Context lines shown.
    pub context_lines: u64,
    /// Files searched.
    pub files_searched: u64,
    /// Files with at least one match.
    pub files_matched: u64,
    /// Files skipped as binary.
    pub binary: u64,
    /// Files skipped as over [`MAX_FILE`].
    pub large: u64,
    /// Files that could not be opened or read (or were not regular files when opened).
    pub unreadable: u64,
    /// What the walk left out.
    pub walk: WalkCounts,
}

/// The kinds `find_files` filters on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Regular files.
    File,
    /// Directories.
    Dir,
    /// Symbolic links (not followed).
    Symlink,
}

/// One `find_files` search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindRequest {
    /// The directory searched: a path inside the work dir (absolute, as the
    /// guest resolved it).
    pub path: String,
    /// The glob ([`Glob`]'s rule).
    pub pattern: String,
    /// Only this kind; `None`: files and symlinks.
    pub kind: Option<EntryKind>,
    /// Only entries modified at or after this many seconds after the epoch.
    pub modified_since: Option<u64>,
    /// Levels below `path` walked (1: its own entries).
    pub max_depth: u32,
    /// Also list what ignore files leave out.
    pub include_ignored: bool,
    /// Paths returned at most (1 to [`MAX_FIND_RESULTS`]).
    pub max_results: u32,
}

/// The outcome of a find.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindResult {
    /// The first `max_results` matching paths, relative to the work dir, sorted.
    pub paths: Vec<String>,
    /// How many matched in all.
    pub total: u64,
    /// What the walk left out.
    pub walk: WalkCounts,
}

/// Why a search was not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchError {
    /// A bad argument (regex, glob, range), named.
    InvalidArgs(String),
    /// The path does not exist.
    NotFound(String),
    /// The path is outside the work dir, or the call has no work dir.
    Denied(String),
    /// Another I/O failure on the path.
    Io(String),
    /// Stopped: the call's deadline passed or it was cancelled.
    Stopped,
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidArgs(m) | Self::NotFound(m) | Self::Denied(m) | Self::Io(m) => f.write_str(m),
            Self::Stopped => f.write_str("the search was stopped at the call's deadline"),
        }
    }
}

impl std::error::Error for SearchError {}
