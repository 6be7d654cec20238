//! The directory walk shared by `list_dir`, `find_files` and `grep_files`:
//! iterative (an explicit stack, no recursion), depth-first, directories
//! before files and each group sorted by name, never following symlinks,
//! and skipping directories that are almost never what the model wants
//! (`.git`, `node_modules`, `target`, ...) unless asked to walk everything
//! ([`Walk::everything`], for `disk_usage`). Entries ignored by `.gitignore`
//! and `.ignore` files are left out and counted ([`Walk::ignored`]; see
//! [`crate::ignores`]) unless asked for ([`Walk::including_ignored`]).
//!
//! One bad entry never fails a walk: an entry whose name or type cannot be
//! read (see [`readdir`]) is left out and counted
//! ([`Walk::unreadable_entries`]), and a subdirectory that cannot be opened
//! (a lossily decoded name does not open) is counted too.

use std::ffi::OsString;
#[cfg(test)]
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ignores::{self, IGNORE_FILES, Rules};
use crate::readdir;
pub use crate::readdir::Kind;

/// Directory names the walk never enters below its root (the host's search
/// skips the same).
pub use toolhost_search::SKIP_DIRS;

/// One entry found by the walk.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Full path (the root joined with the entry's relative path).
    pub path: PathBuf,
    /// Depth below the root: 1 for the root's own entries.
    pub depth: usize,
    /// What the entry is (symlinks not followed).
    pub kind: Kind,
}

impl Entry {
    /// The entry's file name.
    pub fn name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// An iterator over the entries below a directory. Read errors on
/// subdirectories ([`Walk::unreadable`]) and on single entries
/// ([`Walk::unreadable_entries`]) are counted and the walk goes on.
#[derive(Debug)]
pub struct Walk {
    /// Entries still to yield, the next one last, each with the ignore
    /// rules in force in its directory.
    stack: Vec<(Entry, Option<Arc<Rules>>)>,
    max_depth: usize,
    /// Directory names not entered below the root.
    skip: &'static [&'static str],
    /// Whether `.gitignore` and `.ignore` files are read and obeyed.
    honour_ignores: bool,
    /// Entries left out by ignore files.
    ignored: usize,
    /// Skipped directory names (one per directory skipped).
    skipped: Vec<String>,
    unreadable: usize,
    unreadable_entries: usize,
}

impl Walk {
    /// Walk below `root` down to `max_depth` (1 = the root's entries only),
    /// not entering the [`SKIP_DIRS`] and leaving out what `.gitignore` and
    /// `.ignore` files in `root` and below ignore. Fails only when `root`
    /// itself cannot be read.
    pub fn new(root: &Path, max_depth: usize) -> std::io::Result<Self> {
        Self::start(root, max_depth, SKIP_DIRS, true)
    }

    /// Like [`Walk::new`], but not reading ignore files (the [`SKIP_DIRS`]
    /// are still skipped).
    pub fn including_ignored(root: &Path, max_depth: usize) -> std::io::Result<Self> {
        Self::start(root, max_depth, SKIP_DIRS, false)
    }

    /// [`Walk::new`], with the ignore files of `root`'s ancestors up to
    /// `work_dir` applying too; or [`Walk::including_ignored`] when
    /// `include_ignored`.
    pub fn with_ignored(
        root: &Path,
        max_depth: usize,
        include_ignored: bool,
        work_dir: &Path,
    ) -> std::io::Result<Self> {
        if include_ignored {
            return Self::including_ignored(root, max_depth);
        }
        let mut walk = Self::empty(max_depth, SKIP_DIRS, true);
        walk.enter(root, 1, ignores::above(work_dir, root))?;
        Ok(walk)
    }

    /// Like [`Walk::new`], but entering every directory, [`SKIP_DIRS`]
    /// included, and reading no ignore files (symlinks are still not
    /// followed).
    pub fn everything(root: &Path, max_depth: usize) -> std::io::Result<Self> {
        Self::start(root, max_depth, &[], false)
    }

    fn start(
        root: &Path,
        max_depth: usize,
        skip: &'static [&'static str],
        honour_ignores: bool,
    ) -> std::io::Result<Self> {
        let mut walk = Self::empty(max_depth, skip, honour_ignores);
        walk.enter(root, 1, None)?;
        Ok(walk)
    }

    fn empty(max_depth: usize, skip: &'static [&'static str], honour_ignores: bool) -> Self {
        Self {
            stack: Vec::new(),
            max_depth,
            skip,
            honour_ignores,
            ignored: 0,
            skipped: Vec::new(),
            unreadable: 0,
            unreadable_entries: 0,
        }
    }

    /// Read `dir` (its entries at `depth`) and stack its children, with the
    /// ignore rules in force there (`parent`'s and its own).
    fn enter(&mut self, dir: &Path, depth: usize, parent: Option<Arc<Rules>>) -> std::io::Result<()> {
        let (children, unreadable) = read_sorted(dir, depth)?;
        let rules = if self.honour_ignores {
            let present: Vec<&str> = IGNORE_FILES
                .into_iter()
                .filter(|n| children.iter().any(|c| c.kind == Kind::File && c.name() == *n))
                .collect();
            ignores::enter(dir, parent, &present)
        } else {
            None
        };
        self.push_children((children, unreadable), rules);
        Ok(())
    }

    /// How many entries were left out by `.gitignore` and `.ignore` files.
    pub fn ignored(&self) -> usize {
        self.ignored
    }

    /// How many directories were skipped because of their name.
    pub fn skipped_count(&self) -> usize {
        self.skipped.len()
    }

    /// The distinct names of the skipped directories, sorted.
    pub fn skipped_names(&self) -> Vec<String> {
        distinct(&self.skipped)
    }

    /// How many subdirectories could not be read.
    pub fn unreadable(&self) -> usize {
        self.unreadable
    }

    /// How many entries were left out because their name or type could not
    /// be read.
    pub fn unreadable_entries(&self) -> usize {
        self.unreadable_entries
    }

    /// A one-line note about skipped and unreadable directories and
    /// entries, or `None`.
    pub fn note(&self) -> Option<String> {
        note(&self.skipped, self.ignored as u64, self.unreadable as u64, self.unreadable_entries as u64)
    }

    fn push_children(&mut self, (children, unreadable): (Vec<Entry>, usize), rules: Option<Arc<Rules>>) {
        self.unreadable_entries += unreadable;
        // Last pushed is yielded first: push in reverse order.
        for child in children.into_iter().rev() {
            if child.kind == Kind::Dir && self.skip.contains(&child.name().as_str()) {
                self.skipped.push(child.name());
                continue;
            }
            if ignores::is_ignored(rules.as_deref(), &child.path, child.kind == Kind::Dir) {
                self.ignored += 1;
                continue;
            }
            self.stack.push((child, rules.clone()));
        }
    }
}

impl Iterator for Walk {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        let (entry, rules) = self.stack.pop()?;
        if entry.kind == Kind::Dir
            && entry.depth < self.max_depth
            && self.enter(&entry.path, entry.depth + 1, rules).is_err()
        {
            self.unreadable += 1;
        }
        Some(entry)
    }
}

/// The distinct names among `names`, sorted.
pub fn distinct(names: &[String]) -> Vec<String> {
    let mut names = names.to_vec();
    names.sort();
    names.dedup();
    names
}

/// The one-line note of a walk that skipped the directories `skipped` (one
/// name each) by name, left out `ignored` entries by ignore files, and could
/// not read `unreadable` directories and `unreadable_entries` entries; `None`
/// when it left nothing out.
pub fn note(skipped: &[String], ignored: u64, unreadable: u64, unreadable_entries: u64) -> Option<String> {
    let mut parts = Vec::new();
    if !skipped.is_empty() {
        parts.push(format!(
            "skipped {} director{} by name ({}); pass one as `path` to look inside",
            skipped.len(),
            if skipped.len() == 1 { "y" } else { "ies" },
            distinct(skipped).join(", ")
        ));
    }
    if ignored > 0 {
        parts.push(format!(
            "{} ignored by .gitignore/.ignore; pass include_ignored: true to see them",
            crate::count(ignored as usize, "entry", "entries")
        ));
    }
    if unreadable > 0 {
        parts.push(format!(
            "{} could not be read",
            crate::count(unreadable as usize, "directory", "directories")
        ));
    }
    if unreadable_entries > 0 {
        parts.push(format!(
            "{} could not be read (name or type), left out",
            crate::count(unreadable_entries as usize, "entry", "entries")
        ));
    }
    (!parts.is_empty()).then(|| format!("[{}]", parts.join("; ")))
}

/// The entries of `dir` at `depth`: directories first, then the rest, each
/// group sorted by name (byte order); and how many entries could not be
/// read.
fn read_sorted(dir: &Path, depth: usize) -> std::io::Result<(Vec<Entry>, usize)> {
    let (names, unreadable) = readdir::read(dir)?;
    let mut entries: Vec<(bool, OsString, Entry)> = names
        .into_iter()
        .map(|(name, kind)| (kind != Kind::Dir, name.clone(), Entry { path: dir.join(&name), depth, kind }))
        .collect();
    entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok((entries.into_iter().map(|(_, _, e)| e).collect(), unreadable))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(walk: Walk, root: &Path) -> Vec<String> {
        walk.map(|e| e.path.strip_prefix(root).unwrap().display().to_string()).collect()
    }

    #[test]
    fn dirs_first_sorted_depth_first() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("b/inner")).unwrap();
        fs::create_dir_all(r.join("a")).unwrap();
        fs::write(r.join("z.txt"), "").unwrap();
        fs::write(r.join("c.txt"), "").unwrap();
        fs::write(r.join("b/x.txt"), "").unwrap();
        fs::write(r.join("b/inner/deep.txt"), "").unwrap();
        let all = names(Walk::new(r, usize::MAX).unwrap(), r);
        assert_eq!(all, ["a", "b", "b/inner", "b/inner/deep.txt", "b/x.txt", "c.txt", "z.txt"]);
        let shallow = names(Walk::new(r, 1).unwrap(), r);
        assert_eq!(shallow, ["a", "b", "c.txt", "z.txt"]);
        let two = names(Walk::new(r, 2).unwrap(), r);
        assert_eq!(two, ["a", "b", "b/inner", "b/x.txt", "c.txt", "z.txt"]);
    }

    #[test]
    fn skips_named_dirs_but_not_files_or_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join(".git/objects")).unwrap();
        fs::create_dir_all(r.join("sub/node_modules/pkg")).unwrap();
        fs::write(r.join("target"), "a file named target").unwrap();
        fs::write(r.join("sub/node_modules/pkg/i.js"), "").unwrap();
        let mut walk = Walk::new(r, usize::MAX).unwrap();
        let seen: Vec<String> =
            walk.by_ref().map(|e| e.path.strip_prefix(r).unwrap().display().to_string()).collect();
        assert_eq!(seen, ["sub", "target"]);
        assert_eq!(walk.skipped_count(), 2);
        assert_eq!(walk.skipped_names(), [".git", "node_modules"]);
        assert!(walk.note().unwrap().contains("skipped 2 directories"));
        // Walking a skipped name explicitly works.
        let inside =
            names(Walk::new(&r.join("sub/node_modules"), usize::MAX).unwrap(), &r.join("sub/node_modules"));
        assert_eq!(inside, ["pkg", "pkg/i.js"]);
        // Walking everything enters them.
        let mut all = Walk::everything(r, usize::MAX).unwrap();
        let seen: Vec<String> =
            all.by_ref().map(|e| e.path.strip_prefix(r).unwrap().display().to_string()).collect();
        assert_eq!(
            seen,
            [
                ".git",
                ".git/objects",
                "sub",
                "sub/node_modules",
                "sub/node_modules/pkg",
                "sub/node_modules/pkg/i.js",
                "target"
            ]
        );
        assert_eq!((all.skipped_count(), all.note()), (0, None));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("real")).unwrap();
        fs::write(r.join("real/f"), "").unwrap();
        std::os::unix::fs::symlink("real", r.join("link")).unwrap();
        std::os::unix::fs::symlink(".", r.join("real/loop")).unwrap();
        let entries: Vec<Entry> = Walk::new(r, usize::MAX).unwrap().collect();
        let shown: Vec<(String, Kind)> =
            entries.iter().map(|e| (e.path.strip_prefix(r).unwrap().display().to_string(), e.kind)).collect();
        assert_eq!(
            shown,
            [
                ("real".to_string(), Kind::Dir),
                ("real/f".to_string(), Kind::File),
                ("real/loop".to_string(), Kind::Symlink),
                ("link".to_string(), Kind::Symlink),
            ]
        );
    }

    #[test]
    fn the_note_counts_unreadable_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut walk = Walk::new(dir.path(), 1).unwrap();
        assert_eq!(walk.note(), None);
        walk.push_children((Vec::new(), 2), None);
        walk.unreadable = 1;
        assert_eq!(walk.unreadable_entries(), 2);
        assert_eq!(
            walk.note().unwrap(),
            "[1 directory could not be read; 2 entries could not be read (name or type), left out]"
        );
    }

    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_are_walked() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir(r.join(std::ffi::OsStr::from_bytes(b"d\xff"))).unwrap();
        fs::write(r.join(std::ffi::OsStr::from_bytes(b"d\xff/in.txt")), "").unwrap();
        fs::write(r.join("ok.txt"), "").unwrap();
        let entries: Vec<Entry> = Walk::new(r, usize::MAX).unwrap().collect();
        let names: Vec<String> = entries.iter().map(Entry::name).collect();
        assert_eq!(names, ["d\u{fffd}", "in.txt", "ok.txt"]);
    }

    #[test]
    fn ignore_files_leave_entries_out_below_their_dir() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for f in
            ["a.log", "keep.rs", "build/out.rs", "sub/x.tmp", "sub/y.rs", "sub/deep/z.tmp", "other/x.tmp"]
        {
            fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
            fs::write(r.join(f), "").unwrap();
        }
        fs::write(r.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        fs::write(r.join("sub/.ignore"), "*.tmp\n").unwrap();
        let mut walk = Walk::new(r, usize::MAX).unwrap();
        let seen: Vec<String> =
            walk.by_ref().map(|e| e.path.strip_prefix(r).unwrap().display().to_string()).collect();
        assert_eq!(
            seen,
            ["other", "other/x.tmp", "sub", "sub/deep", "sub/.ignore", "sub/y.rs", ".gitignore", "keep.rs"]
        );
        assert_eq!(walk.ignored(), 4);
        assert!(walk.note().unwrap().contains("4 entries ignored by .gitignore/.ignore"));
        let all = names(Walk::including_ignored(r, usize::MAX).unwrap(), r);
        assert_eq!(all.len(), 13, "{all:?}");
        assert_eq!(names(Walk::everything(r, usize::MAX).unwrap(), r), all);
    }

    #[test]
    fn an_ignore_file_that_ignores_everything() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("src")).unwrap();
        fs::write(r.join("src/a.rs"), "").unwrap();
        fs::write(r.join(".gitignore"), "*\n").unwrap();
        let mut walk = Walk::new(r, usize::MAX).unwrap();
        assert_eq!(walk.by_ref().count(), 0);
        assert_eq!(walk.ignored(), 2, "src and the .gitignore itself");
        // Walking inside an ignored directory by name still works: only
        // files in the walked root and below are read.
        assert_eq!(names(Walk::new(&r.join("src"), usize::MAX).unwrap(), &r.join("src")), ["a.rs"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_ignore_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::write(r.join("rules"), "*\n").unwrap();
        std::os::unix::fs::symlink("rules", r.join(".gitignore")).unwrap();
        assert_eq!(names(Walk::new(r, usize::MAX).unwrap(), r), [".gitignore", "rules"]);
    }

    #[test]
    fn missing_root_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Walk::new(&dir.path().join("nope"), 1).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }
}
