//! `tree`: a bounded architecture view of a directory: its subdirectories
//! (and, when asked, files) down to a depth, each directory with the counts
//! of its own subdirectories and files, skipping generated trees (the walk's
//! skip list and ignore files).

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, quote_name};

use crate::walk::{Kind, Walk};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Show the shape of a directory tree for orientation: subdirectories down to \
`depth` levels (default 3, at most 8), each with the number of subdirectories and files directly inside it \
(e.g. `src/ (4 dirs, 12 files)`); with `files: true` files are listed too. Generated and vendored trees are \
left out: directories such as .git, node_modules, target, dist, .venv and .cache, and whatever `.gitignore` / \
`.ignore` files (from the work directory down) ignore (`include_ignored: true` keeps those). At most `max_entries` lines \
(default 200, at most 2000); the output says how many more there were. Symlinks are not followed. Use list_dir \
for sizes and find_files to search by name.";

/// Default `depth`.
pub const DEFAULT_DEPTH: usize = 3;
/// Deepest `depth` allowed.
pub const MAX_DEPTH: usize = 8;
/// Default `max_entries`.
pub const DEFAULT_MAX: usize = 200;
/// Largest `max_entries` allowed.
pub const MAX_MAX: usize = 2000;

/// Arguments of `tree`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory to show, relative to the work directory. Default ".".
    #[serde(default = "crate::dot")]
    pub path: String,
    /// How many levels to show, 1 to 8. Default 3.
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = 8))]
    pub depth: usize,
    /// Also list files, not only directories. Default false.
    #[serde(default)]
    pub files: bool,
    /// Maximum number of lines to show, 1 to 2000. Default 200.
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 2000))]
    pub max_entries: usize,
    /// Also show what `.gitignore` and `.ignore` files ignore. Default false.
    #[serde(default)]
    pub include_ignored: bool,
}

fn default_depth() -> usize {
    DEFAULT_DEPTH
}

fn default_max() -> usize {
    DEFAULT_MAX
}

/// Subdirectories and other entries directly inside one directory.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    dirs: usize,
    files: usize,
}

impl Counts {
    fn show(self) -> String {
        match (self.dirs, self.files) {
            (0, 0) => "(empty)".to_string(),
            (0, f) => format!("({})", crate::count(f, "file", "files")),
            (d, 0) => format!("({})", crate::count(d, "dir", "dirs")),
            (d, f) => format!("({}, {})", crate::count(d, "dir", "dirs"), crate::count(f, "file", "files")),
        }
    }
}

/// Run `tree`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    crate::in_range("depth", args.depth, MAX_DEPTH)?;
    crate::in_range("max_entries", args.max_entries, MAX_MAX)?;
    let (root, shown_root) = crate::resolve_dir(ctx, &args.path)?;
    // One level more than shown: the deepest directories shown get counts.
    let mut walk = Walk::with_ignored(&root, args.depth + 1, args.include_ignored, ctx.work_dir()?)
        .map_err(|e| ctx.io_error(&e, &root))?;
    let mut counts: HashMap<PathBuf, Counts> = HashMap::new();
    // The entries shown, in walk order: depth, name, and the directory's
    // path when it is one (its counts are known only after the walk).
    let mut lines: Vec<(usize, String, Option<PathBuf>)> = Vec::new();
    let mut total = 0usize;
    for entry in walk.by_ref() {
        let is_dir = entry.kind == Kind::Dir;
        if let Some(parent) = entry.path.parent() {
            let c = counts.entry(parent.to_path_buf()).or_default();
            if is_dir { c.dirs += 1 } else { c.files += 1 }
        }
        if entry.depth > args.depth || !(is_dir || args.files) {
            continue;
        }
        total += 1;
        if lines.len() < args.max_entries {
            let name = quote_name(&entry.name()).into_owned();
            lines.push(match (is_dir, entry.kind) {
                (true, _) => (entry.depth, format!("{name}/"), Some(entry.path)),
                (false, Kind::Symlink) => (entry.depth, format!("{name}@"), None),
                (false, _) => (entry.depth, name, None),
            });
        }
    }
    let count_of = |path: &PathBuf| counts.get(path).copied().unwrap_or_default().show();
    let mut out = format!("{}/ {}\n", shown_root.trim_end_matches('/'), count_of(&root));
    for (depth, name, dir) in &lines {
        out.push_str(&"  ".repeat(*depth));
        out.push_str(name);
        if let Some(dir) = dir {
            out.push(' ');
            out.push_str(&count_of(dir));
        }
        out.push('\n');
    }
    let omitted = total - lines.len();
    if omitted > 0 {
        out.push_str(&format!(
            "[… {omitted} more entries not shown (max_entries={}); pass a smaller depth or a subdirectory as path]\n",
            args.max_entries
        ));
    }
    if let Some(note) = walk.note() {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(Output::text(out).with_metadata(json!({
        "path": ctx.display(&root),
        "entries": total,
        "shown": lines.len(),
        "omitted": omitted,
        "skipped_dirs": walk.skipped_names(),
        "ignored_entries": walk.ignored(),
        "unreadable_entries": walk.unreadable_entries(),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use toolhost_guest::codes;

    fn setup() -> (tempfile::TempDir, Context) {
        let (dir, ctx) = crate::test_work_dir();
        for f in [
            "Cargo.toml",
            "src/lib.rs",
            "src/a/b/c/deep.rs",
            "src/a/x.rs",
            "docs/i.md",
            "target/gen",
            "out/o",
        ] {
            let p = dir.path().join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "").unwrap();
        }
        (dir, ctx)
    }

    fn args() -> Args {
        Args {
            path: ".".into(),
            depth: DEFAULT_DEPTH,
            files: false,
            max_entries: DEFAULT_MAX,
            include_ignored: false,
        }
    }

    #[test]
    fn directories_with_counts_to_a_depth() {
        let (_d, ctx) = setup();
        let out = run(Args { depth: 2, ..args() }, &ctx).unwrap();
        assert_eq!(
            out.content.lines().take(5).collect::<Vec<_>>(),
            [
                "./ (3 dirs, 1 file)",
                "  docs/ (1 file)",
                "  out/ (1 file)",
                "  src/ (1 dir, 1 file)",
                "    a/ (1 dir, 1 file)"
            ]
        );
        assert!(out.content.contains("skipped 1 directory by name (target)"), "{}", out.content);
        let out = run(Args { files: true, depth: 1, ..args() }, &ctx).unwrap();
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines[3..5], ["  src/ (1 dir, 1 file)", "  Cargo.toml"], "files after the dirs");
    }

    #[test]
    fn gitignore_and_bounds() {
        let (d, ctx) = setup();
        fs::write(d.path().join(".gitignore"), "out/\n").unwrap();
        let out = run(Args { depth: 1, ..args() }, &ctx).unwrap();
        assert!(!out.content.contains("out/"), "{}", out.content);
        assert!(out.content.contains("1 entry ignored"), "{}", out.content);
        let out = run(Args { depth: 1, include_ignored: true, ..args() }, &ctx).unwrap();
        assert!(out.content.contains("  out/ (1 file)"), "{}", out.content);
        let out = run(Args { depth: MAX_DEPTH, max_entries: 2, ..args() }, &ctx).unwrap();
        assert_eq!(out.content.lines().filter(|l| l.starts_with("  ")).count(), 2, "{}", out.content);
        assert!(out.content.contains("[… 3 more entries not shown (max_entries=2)"), "{}", out.content);
        // Everything ignored: the root alone, with its note.
        fs::write(d.path().join(".gitignore"), "*\n").unwrap();
        let out = run(args(), &ctx).unwrap();
        assert!(out.content.starts_with("./ (empty)\n"), "{}", out.content);
    }

    #[test]
    fn errors() {
        let (_d, ctx) = setup();
        for bad in [
            Args { depth: 0, ..args() },
            Args { depth: MAX_DEPTH + 1, ..args() },
            Args { max_entries: 0, ..args() },
            Args { max_entries: usize::MAX, ..args() },
        ] {
            assert_eq!(run(bad, &ctx).unwrap_err().code, codes::INVALID_ARGS);
        }
        assert_eq!(run(Args { path: "../x".into(), ..args() }, &ctx).unwrap_err().code, codes::PATH_ESCAPE);
        assert_eq!(
            run(Args { path: "Cargo.toml".into(), ..args() }, &ctx).unwrap_err().code,
            codes::NOT_A_DIRECTORY
        );
        assert_eq!(run(Args { path: "nope".into(), ..args() }, &ctx).unwrap_err().code, codes::NOT_FOUND);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_is_not_entered() {
        let (d, ctx) = setup();
        std::os::unix::fs::symlink("..", d.path().join("src/up")).unwrap();
        let out = run(Args { depth: MAX_DEPTH, files: true, ..args() }, &ctx).unwrap();
        assert!(out.content.contains("    up@\n"), "{}", out.content);
        assert_eq!(out.metadata.unwrap()["entries"], 13);
    }
}
