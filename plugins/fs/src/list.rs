//! `list_dir`: the entries of a directory, as an indented tree.

use std::fs;

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, quote_name};

use crate::walk::{Entry, Kind, Walk};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "List a directory as an indented tree: subdirectories first (with a trailing `/`), \
then files with their sizes, each group sorted by name; symlinks are shown as `name@ -> target` and never \
followed. `depth` 1 (default) lists only the directory's own entries, up to 4 goes deeper. Directories such as \
.git, node_modules, target, dist, .venv, __pycache__ and .cache are not entered (the output says which were \
skipped; list one explicitly to see inside), nor entries that `.gitignore` / `.ignore` files (from the work \
directory down) ignore (counted; `include_ignored: true` shows them). At most 500 entries are shown; the output says how many were left \
out. Names with control or unusual characters are shown double-quoted with backslash escapes (`\"a\\nb\"`); \
entries that cannot be read are counted. Use find_files to search by name and grep_files to search contents.";

/// Entries shown at most.
pub const MAX_ENTRIES: usize = 500;
/// Deepest `depth` allowed.
pub const MAX_DEPTH: usize = 4;

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory to list, relative to the work directory. Default ".", the work directory itself.
    #[serde(default = "crate::dot")]
    pub path: String,
    /// How many levels to list, 1 to 4. Default 1: only the directory's own entries.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 4))]
    pub depth: usize,
    /// Also show entries that `.gitignore` and `.ignore` files ignore. Default false.
    #[serde(default)]
    pub include_ignored: bool,
}

fn one() -> usize {
    1
}

/// Run `list_dir`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    crate::in_range("depth", args.depth, MAX_DEPTH)?;
    let (root, shown) = crate::resolve_dir_saying(ctx, &args.path, |shown, _| {
        format!("{shown} is not a directory; use read_file to read a file")
    })?;
    let mut walk = Walk::with_ignored(&root, args.depth, args.include_ignored, ctx.work_dir()?)
        .map_err(|e| ctx.io_error(&e, &root))?;

    let mut out = format!("{}/\n", shown.trim_end_matches('/'));
    let (mut total, mut unstated) = (0usize, 0usize);
    for entry in walk.by_ref() {
        total += 1;
        if total > MAX_ENTRIES {
            continue;
        }
        let (line, stated) = entry_line(&entry);
        unstated += usize::from(!stated);
        out.push_str(&line);
        out.push('\n');
    }
    if total == 0 {
        out.push_str("  (empty directory)\n");
    }
    let omitted = total.saturating_sub(MAX_ENTRIES);
    if omitted > 0 {
        out.push_str(&format!(
            "[{omitted} more entries not shown (limit {MAX_ENTRIES}); list a subdirectory or use a smaller depth]\n"
        ));
    }
    if unstated > 0 {
        out.push_str(&format!(
            "[{} could not be read: shown without a size]\n",
            crate::count(unstated, "file", "files")
        ));
    }
    if let Some(note) = walk.note() {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(Output::text(out).with_metadata(json!({
        "path": ctx.display(&root),
        "entries": total,
        "shown": total.min(MAX_ENTRIES),
        "omitted": omitted,
        "skipped_dirs": walk.skipped_names(),
        "unreadable_entries": walk.unreadable_entries(),
        "without_size": unstated,
    })))
}

/// The line for one entry, indented by its depth; false when it is a file
/// whose size could not be read (it vanished, or its name was decoded
/// lossily and does not open). A symlink whose target cannot be read is
/// shown as `name@`.
fn entry_line(entry: &Entry) -> (String, bool) {
    let indent = "  ".repeat(entry.depth);
    let name = entry.name();
    let name = quote_name(&name);
    match entry.kind {
        Kind::Dir => (format!("{indent}{name}/"), true),
        Kind::File => match fs::symlink_metadata(&entry.path) {
            Ok(m) => (format!("{indent}{name} ({})", crate::human_size(m.len())), true),
            Err(_) => (format!("{indent}{name}"), false),
        },
        Kind::Symlink => match fs::read_link(&entry.path) {
            Ok(target) => (format!("{indent}{name}@ -> {}", quote_name(&target.to_string_lossy())), true),
            // The sandbox never reads an absolute target: not worth a note.
            Err(_) => (format!("{indent}{name}@"), true),
        },
        Kind::Other => (format!("{indent}{name} (special file)"), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_guest::codes;

    fn setup() -> (tempfile::TempDir, Context) {
        crate::test_work_dir()
    }

    fn list(ctx: &Context, path: &str, depth: usize) -> Result<Output, ToolError> {
        run(Args { path: path.into(), depth, include_ignored: false }, ctx)
    }

    fn tree(dir: &std::path::Path) {
        fs::create_dir_all(dir.join("src/bin")).unwrap();
        fs::create_dir_all(dir.join("docs")).unwrap();
        fs::create_dir_all(dir.join("target/debug")).unwrap();
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::write(dir.join("Cargo.toml"), "x".repeat(10)).unwrap();
        fs::write(dir.join("README.md"), "x".repeat(2048)).unwrap();
        fs::write(dir.join("src/lib.rs"), "").unwrap();
        fs::write(dir.join("src/bin/main.rs"), "").unwrap();
    }

    #[test]
    fn depth_one_dirs_first_with_sizes() {
        let (dir, ctx) = setup();
        tree(dir.path());
        let out = list(&ctx, ".", 1).unwrap();
        assert_eq!(
            out.content,
            "./\n  docs/\n  src/\n  Cargo.toml (10 B)\n  README.md (2.0 KiB)\n\
             [skipped 2 directories by name (.git, target); pass one as `path` to look inside]\n"
        );
        let meta = out.metadata.unwrap();
        assert_eq!(meta["entries"], 4);
        assert_eq!(meta["omitted"], 0);
        assert_eq!(meta["skipped_dirs"], json!([".git", "target"]));
    }

    #[test]
    fn deeper_levels_are_indented() {
        let (dir, ctx) = setup();
        tree(dir.path());
        let out = list(&ctx, "src", 2).unwrap();
        assert_eq!(out.content, "src/\n  bin/\n    main.rs (0 B)\n  lib.rs (0 B)\n");
        let out = list(&ctx, "src", 1).unwrap();
        assert_eq!(out.content, "src/\n  bin/\n  lib.rs (0 B)\n");
        // A skipped name can be listed explicitly.
        assert_eq!(list(&ctx, "target", 1).unwrap().content, "target/\n  debug/\n");
    }

    #[test]
    fn depth_out_of_range() {
        let (_dir, ctx) = setup();
        for depth in [0, 5] {
            let err = list(&ctx, ".", depth).unwrap_err();
            assert_eq!(err.code, codes::INVALID_ARGS);
            assert!(err.message.contains("between 1 and 4"), "{}", err.message);
        }
    }

    #[test]
    fn caps_at_500_entries() {
        let (dir, ctx) = setup();
        for i in 0..520 {
            fs::write(dir.path().join(format!("f{i:04}")), "").unwrap();
        }
        let out = list(&ctx, ".", 1).unwrap();
        assert_eq!(out.content.lines().filter(|l| l.starts_with("  f")).count(), MAX_ENTRIES);
        assert!(out.content.contains("  f0499 (0 B)\n"));
        assert!(!out.content.contains("f0500"));
        assert!(out.content.contains("[20 more entries not shown"), "{}", out.content);
        assert_eq!(out.metadata.unwrap()["omitted"], 20);
    }

    #[test]
    fn errors() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("f"), "").unwrap();
        assert_eq!(list(&ctx, "f", 1).unwrap_err().code, codes::NOT_A_DIRECTORY);
        assert_eq!(list(&ctx, "nope", 1).unwrap_err().code, codes::NOT_FOUND);
        assert_eq!(list(&ctx, "..", 1).unwrap_err().code, codes::PATH_ESCAPE);
    }

    #[test]
    fn empty_directory() {
        let (_dir, ctx) = setup();
        assert_eq!(list(&ctx, ".", 3).unwrap().content, "./\n  (empty directory)\n");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_marked_not_followed() {
        let (dir, ctx) = setup();
        fs::create_dir(dir.path().join("real")).unwrap();
        fs::write(dir.path().join("real/inner.txt"), "").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        let out = list(&ctx, ".", 3).unwrap();
        assert_eq!(out.content, "./\n  real/\n    inner.txt (0 B)\n  alias@ -> real\n");
    }

    #[cfg(unix)]
    #[test]
    fn unusual_names_and_targets_are_quoted() {
        use std::os::unix::ffi::OsStrExt;
        let (dir, ctx) = setup();
        let r = dir.path();
        fs::write(r.join("a.txt\n  secret.key (1.0 KiB)"), "x").unwrap();
        fs::create_dir(r.join("d\x1b[31m")).unwrap();
        fs::write(r.join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")), "").unwrap();
        std::os::unix::fs::symlink("t\u{202e}gpj.exe", r.join("link")).unwrap();
        fs::write(r.join("plain.txt"), "").unwrap();
        let out = list(&ctx, ".", 1).unwrap();
        assert_eq!(
            out.content,
            "./\n  \"d\\x1b[31m\"/\n  \"a.txt\\n  secret.key (1.0 KiB)\" (1 B)\n  \"bad\\u{fffd}.txt\" (0 B)\n  \
             link@ -> \"t\\u{202e}gpj.exe\"\n  plain.txt (0 B)\n"
        );
        assert_eq!(out.metadata.unwrap()["unreadable_entries"], 0);
        let sub = list(&ctx, "d\x1b[31m", 1).unwrap();
        assert_eq!(sub.content, "\"d\\x1b[31m\"/\n  (empty directory)\n");
        assert_eq!(sub.metadata.unwrap()["path"], "d\x1b[31m", "metadata keeps the exact name");
        let err = list(&ctx, "gone\x07", 1).unwrap_err();
        assert_eq!(err.message, "\"gone\\x07\" does not exist");
    }

    #[test]
    fn entries_that_do_not_open_are_shown_without_size() {
        let (dir, _ctx) = setup();
        let gone = |name: &str, kind| Entry { path: dir.path().join(name), depth: 2, kind };
        assert_eq!(entry_line(&gone("bad\u{fffd}", Kind::File)), ("    \"bad\\u{fffd}\"".into(), false));
        assert_eq!(entry_line(&gone("l\n", Kind::Symlink)), ("    \"l\\n\"@".into(), true));
        assert_eq!(entry_line(&gone("d", Kind::Dir)), ("    d/".into(), true));
    }

    #[test]
    fn defaults() {
        let args: Args = serde_json::from_str("{}").unwrap();
        assert_eq!((args.path.as_str(), args.depth), (".", 1));
        assert!(serde_json::from_str::<Args>(r#"{"recursive": true}"#).is_err());
    }
}
