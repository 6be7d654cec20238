//! What a `terminal` command changed in a git work dir.
//!
//! Before the command, [`Snapshot::take`] records `git status` (every entry
//! that is not clean, with its HEAD and index object ids) and a fingerprint
//! of each dirty file's content; after it, [`Snapshot::changes`] takes the
//! status again and fingerprints only the entries that look the same. A path
//! whose entry or content differs is the command's change; a file that was
//! dirty before and left alone is not. [`Report`] is the bounded list the
//! model reads (and `metadata.changed`).
//!
//! git runs as the `git` tool runs it ([`crate::git::HARDENING`]: no pager,
//! no hooks, no fsmonitor, no external diff, no optional locks), through the
//! same confined exec, each run with its own time and output bound, at the
//! work dir's top (only a work dir holding `.git` is looked at). Anything
//! that fails — no `.git`, no `git` granted, git failing, output over its
//! bound — means nothing is reported, never an error. Clean filters that
//! the user's git configuration defines still run when git hashes a file
//! whose stat changed, confined like the command itself.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost_guest::exec::{self, Command};
use toolhost_guest::{Context, Output, quote_name};

use crate::status::{self, Status};

/// Time limit of each git run, in milliseconds (the host clamps it to what
/// is left of the call).
pub const GIT_TIMEOUT_MS: u32 = 10_000;
/// Most bytes of `git status` output read; a larger status is not compared.
pub const MAX_STATUS_BYTES: u64 = 4 << 20;
/// Most changed files listed (the rest are counted).
pub const MAX_LISTED: usize = 50;
/// Most dirty files whose content is fingerprinted, per snapshot.
pub const MAX_HASHED_FILES: usize = 5_000;
/// Files larger than this are fingerprinted by length and modification time.
pub const MAX_HASHED_FILE_BYTES: u64 = 4 << 20;
/// Most bytes hashed per snapshot; past it, length and modification time.
pub const MAX_HASHED_BYTES: u64 = 64 << 20;

/// HEAD before and after the command (abbreviated), when it moved.
pub type HeadMove = (String, String);

/// The work tree's state before a command.
#[derive(Debug, Clone)]
pub struct Snapshot {
    status: Status,
    prints: BTreeMap<Vec<u8>, [u8; 32]>,
}

/// One file the command changed: its path and its short status code now
/// (`clean` when it was dirty before and is not any more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path, relative to the work dir.
    pub path: Vec<u8>,
    /// `git status --short`'s two letters now, or `clean`.
    pub code: String,
}

impl Snapshot {
    /// The state of the repository at the top of the work dir, or `None`
    /// when there is none or git cannot tell.
    pub fn take(ctx: &Context) -> Option<Self> {
        let top = ctx.work_dir().ok()?;
        std::fs::symlink_metadata(top.join(".git")).ok()?;
        let status = git_status()?;
        let mut budget = Budget::default();
        let prints = status
            .entries
            .iter()
            .filter(|(_, record)| status::in_work_tree(record))
            .filter_map(|(path, _)| Some((path.clone(), fingerprint(top, path, &mut budget)?)))
            .collect();
        Some(Self { status, prints })
    }

    /// Whether HEAD named a commit (not an unborn branch).
    pub fn has_head(&self) -> bool {
        self.status.head.is_some()
    }

    /// What changed since the snapshot: the files (sorted by path) and
    /// whether HEAD moved, or `None` when git cannot tell any more.
    pub fn changes(&self, ctx: &Context) -> Option<(Vec<Change>, Option<HeadMove>)> {
        let top = ctx.work_dir().ok()?;
        let now = git_status()?;
        let mut budget = Budget::default();
        let changed = compare(&self.status, &now, |path| {
            let before = self.prints.get(path)?;
            Some(fingerprint(top, path, &mut budget)? != *before)
        });
        let head = (self.status.head != now.head).then(|| {
            let show = |h: &Option<String>| h.as_deref().unwrap_or("(none)").chars().take(12).collect();
            (show(&self.status.head), show(&now.head))
        });
        Some((changed, head))
    }
}

/// The paths whose entry differs between `before` and `after`, and those
/// whose entry is the same but whose content `differs` says changed (it says
/// `None` when it cannot tell: not reported).
pub fn compare(
    before: &Status,
    after: &Status,
    mut differs: impl FnMut(&[u8]) -> Option<bool>,
) -> Vec<Change> {
    let mut paths: Vec<&Vec<u8>> = before.entries.keys().chain(after.entries.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = Vec::new();
    for path in paths {
        let (old, new) = (before.entries.get(path), after.entries.get(path));
        let changed = match (old, new) {
            (Some(a), Some(b)) if a == b => status::in_work_tree(b) && differs(path) == Some(true),
            _ => true,
        };
        if changed {
            let code = new.map(|r| status::short_code(r)).unwrap_or_else(|| "clean".into());
            out.push(Change { path: path.clone(), code });
        }
    }
    out
}

/// `git status` of the work dir, parsed; `None` when git fails or its output
/// was cut.
fn git_status() -> Option<Status> {
    let args = ["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames"];
    let bytes = git(&args, &[], MAX_STATUS_BYTES)?;
    status::parse(&bytes)
}

/// Run git with the `git` tool's hardening and `args`, then `--` and
/// `paths` (literal pathspecs); its stdout when it exited 0 within its
/// bounds, uncut.
pub(crate) fn git(args: &[&str], paths: &[&[u8]], max_output: u64) -> Option<Vec<u8>> {
    let mut argv: Vec<String> = crate::git::HARDENING.iter().map(|s| (*s).to_string()).collect();
    argv.push("--literal-pathspecs".into());
    argv.extend(args.iter().map(|s| (*s).to_string()));
    if !paths.is_empty() {
        argv.push("--".into());
        for path in paths {
            argv.push(String::from_utf8(path.to_vec()).ok()?);
        }
    }
    let cmd = Command::program("git", argv).timeout_ms(GIT_TIMEOUT_MS).max_output_bytes(max_output);
    let outcome = exec::run(&cmd).ok()?;
    (outcome.succeeded() && outcome.stdout.cut_bytes == 0).then_some(outcome.stdout.data)
}

/// How much a snapshot may still hash.
#[derive(Debug, Default)]
struct Budget {
    files: usize,
    bytes: u64,
}

/// A fingerprint of the file at `path` under `top`: the sha256 of its kind
/// and content (a symlink's target), or of its length and modification time
/// when it is large or the budget is spent. `None` when the name cannot be
/// looked up (not UTF-8, or outside the work dir).
fn fingerprint(top: &Path, path: &[u8], budget: &mut Budget) -> Option<[u8; 32]> {
    let name = std::str::from_utf8(path).ok()?;
    if name.starts_with('/') || name.split('/').any(|part| part == "..") {
        return None;
    }
    let full = top.join(name);
    let mut hasher = Sha256::new();
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        hasher.update(b"missing");
        return Some(hasher.finalize().into());
    };
    let stamp = |h: &mut Sha256| {
        let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        h.update(format!("meta {} {:?}", meta.len(), mtime).as_bytes());
    };
    if meta.file_type().is_symlink() {
        hasher.update(b"link ");
        hasher.update(std::fs::read_link(&full).map(|t| t.display().to_string()).unwrap_or_default());
    } else if !meta.is_file() {
        hasher.update(b"other ");
        stamp(&mut hasher);
    } else if meta.len() > MAX_HASHED_FILE_BYTES
        || budget.files >= MAX_HASHED_FILES
        || budget.bytes + meta.len() > MAX_HASHED_BYTES
    {
        stamp(&mut hasher);
    } else {
        budget.files += 1;
        budget.bytes += meta.len();
        hasher.update(b"file ");
        let file = std::fs::File::open(&full).ok()?;
        let mut content = Vec::new();
        file.take(MAX_HASHED_FILE_BYTES).read_to_end(&mut content).ok()?;
        hasher.update(&content);
    }
    Some(hasher.finalize().into())
}

/// The changes as the model reads them: a few lines appended to the
/// command's output, and `metadata.changed`.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The lines appended to the output.
    pub text: String,
    /// `{files: [{path, status, insertions?, deletions?}], count, insertions,
    /// deletions, truncated, head?}`.
    pub metadata: Value,
}

impl Report {
    /// `output` with the report: the text appended to its content, and
    /// `metadata.changed` (in an object, whatever the metadata was).
    pub fn attach(self, mut output: Output) -> Output {
        output.content.push_str(&self.text);
        let mut metadata = match output.metadata.take() {
            Some(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        metadata.insert("changed".into(), self.metadata);
        output.with_metadata(Value::Object(metadata))
    }

    /// A report of `changes` (and HEAD moving), with line counts from
    /// `stats`; `None` when nothing changed.
    pub fn new(
        changes: &[Change],
        head: Option<HeadMove>,
        stats: &BTreeMap<Vec<u8>, Option<(u64, u64)>>,
    ) -> Option<Self> {
        if changes.is_empty() && head.is_none() {
            return None;
        }
        let listed = &changes[..changes.len().min(MAX_LISTED)];
        let (mut insertions, mut deletions) = (0, 0);
        let mut files = Vec::new();
        let mut text = String::new();
        for change in listed {
            let name = String::from_utf8_lossy(&change.path);
            let shown = quote_name(&name);
            let mut entry = json!({ "path": name, "status": change.code });
            text.push_str(&format!("{} {shown}", change.code));
            if let Some(Some((added, removed))) = stats.get(&change.path) {
                (insertions, deletions) = (insertions + added, deletions + removed);
                entry["insertions"] = json!(added);
                entry["deletions"] = json!(removed);
                text.push_str(&format!(" (+{added} -{removed})"));
            }
            text.push('\n');
            files.push(entry);
        }
        let truncated = listed.len() < changes.len();
        if truncated {
            text.push_str(&format!("... and {} more\n", changes.len() - listed.len()));
        }
        let mut head_line = String::new();
        let mut metadata = json!({
            "files": files,
            "count": changes.len(),
            "insertions": insertions,
            "deletions": deletions,
            "truncated": truncated,
        });
        if let Some((before, after)) = head {
            head_line = format!(", HEAD {before} -> {after}");
            metadata["head"] = json!({ "before": before, "after": after });
        }
        let counted = if truncated { " in the listed ones" } else { "" };
        let header = format!(
            "\n[the command changed {} file{} (+{insertions} -{deletions} lines{counted}){head_line}]\n",
            changes.len(),
            if changes.len() == 1 { "" } else { "s" },
        );
        Some(Self { text: header + &text, metadata })
    }
}

/// Line counts of the changed tracked files against HEAD (against the index
/// on an unborn branch), and of new untracked files (their lines, when
/// small and text). Bounded like every git run; what fails is left out.
pub fn stats(ctx: &Context, changes: &[Change], head: bool) -> BTreeMap<Vec<u8>, Option<(u64, u64)>> {
    let listed = &changes[..changes.len().min(MAX_LISTED)];
    let tracked: Vec<&[u8]> =
        listed.iter().filter(|c| c.code != "??" && c.code != "clean").map(|c| c.path.as_slice()).collect();
    let mut out = BTreeMap::new();
    if !tracked.is_empty() {
        let mut args = vec!["diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"];
        if head {
            args.push("HEAD");
        }
        if let Some(bytes) = git(&args, &tracked, 1 << 20) {
            out = status::parse_numstat(&bytes);
        }
    }
    let Ok(top) = ctx.work_dir() else { return out };
    for change in listed.iter().filter(|c| c.code == "??") {
        if let Some(lines) = std::str::from_utf8(&change.path).ok().and_then(|p| count_lines(&top.join(p))) {
            out.insert(change.path.clone(), Some((lines, 0)));
        }
    }
    out
}

/// The lines of a small regular text file (`None` for anything else).
fn count_lines(path: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    if bytes.contains(&0) {
        return None;
    }
    let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    Some(newlines + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n")))
}

#[cfg(test)]
mod tests;
