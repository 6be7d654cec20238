//! `find_files`: files whose path matches a glob, found by the host's
//! search ([`toolhost_guest::search`]).

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::search::FindRequest;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, quote_name};
use toolhost_search::Glob;

use crate::filters::Filters;

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Find files by glob pattern, e.g. `**/*.rs`, `src/**/test_*.py`, `*.{ts,tsx}`. A \
pattern without `/` matches file names at any depth (`*.rs` is the same as `**/*.rs`); a pattern with `/` matches \
the path relative to `path` (default: the work directory), where `*` stays within one directory and `**` crosses \
directories. Returns matching files and symlinks (`type`: `file`, `dir` or `symlink` for only one kind), only \
those modified at or after `modified_since` (unix seconds) when given, at most `max_depth` levels below `path` \
(default 1000); sorted, as paths relative to the work directory; at most \
`max_results` (default 200), and says how many more there were. Symlinks are not followed, and directories such as \
.git, node_modules, target, dist, .venv and .cache are not searched unless given as `path`; entries that \
`.gitignore` / `.ignore` files (from the work directory down, and .git/info/exclude) ignore are left out and counted (`include_ignored: true` \
includes them). Paths with control or \
unusual characters are shown double-quoted with backslash escapes; entries that cannot be read are counted.";

/// Default `max_results`.
pub const DEFAULT_MAX: usize = 200;
/// Largest `max_results` allowed.
pub const MAX_MAX: usize = 5000;
/// Largest `max_depth` allowed.
pub const MAX_DEPTH: usize = 1000;

/// Arguments of `find_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Glob pattern, e.g. `**/*.rs` or `*.{js,ts}`. Without a `/` it matches file names at any depth.
    pub pattern: String,
    /// Directory to search, relative to the work directory. Default ".".
    #[serde(default = "crate::dot")]
    pub path: String,
    /// Maximum number of paths to return, 1 to 5000. Default 200.
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 5000))]
    pub max_results: usize,
    /// Also show entries that `.gitignore` and `.ignore` files ignore. Default false.
    #[serde(default)]
    pub include_ignored: bool,
    /// Only entries of this type: `file`, `dir` or `symlink`. Default: files and symlinks.
    #[serde(default, rename = "type")]
    pub kind: String,
    /// Only entries modified at or after this time, in unix seconds (e.g. 1735689600 for 2025-01-01T00:00:00Z). Default 0: any time.
    #[serde(default)]
    pub modified_since: i64,
    /// How many levels below `path` to search, 1 to 1000 (1: only its own entries). Default 1000.
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_depth: usize,
}

fn default_depth() -> usize {
    MAX_DEPTH
}

fn default_max() -> usize {
    DEFAULT_MAX
}

/// Run `find_files`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    crate::in_range("max_results", args.max_results, MAX_MAX)?;
    Glob::new(&args.pattern).map_err(ToolError::invalid_args)?;
    let filters = Filters::new(&args.kind, args.modified_since)?;
    let max_depth = crate::in_range("max_depth", args.max_depth, MAX_DEPTH)?;
    let (root, shown_root) = crate::resolve_dir(ctx, &args.path)?;
    // The ranges are checked above: the casts are exact.
    let found = toolhost_guest::search::find(
        ctx,
        &FindRequest {
            path: root.to_string_lossy().into_owned(),
            pattern: args.pattern.clone(),
            kind: filters.kind(),
            modified_since: filters.since(),
            max_depth: max_depth as u32,
            include_ignored: args.include_ignored,
            max_results: args.max_results as u32,
        },
    )?;
    let total = found.total;
    let mut out = if total == 0 {
        format!("No files match `{}` in {shown_root}.\n", args.pattern)
    } else {
        found.paths.iter().fold(String::new(), |mut s, path| {
            s.push_str(&quote_name(path));
            s.push('\n');
            s
        })
    };
    if total > found.paths.len() as u64 {
        out.push_str(&format!(
            "[{} more matching files not shown (max_results={}); narrow the pattern or search a subdirectory]\n",
            total - found.paths.len() as u64,
            args.max_results
        ));
    }
    let walk = &found.walk;
    if let Some(note) =
        crate::walk::note(&walk.skipped_dirs, walk.ignored, walk.unreadable_dirs, walk.unreadable_entries)
    {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(Output::text(out).with_metadata(json!({
        "path": ctx.display(&root),
        "pattern": args.pattern,
        "total": total,
        "shown": found.paths.len(),
        "skipped_dirs": crate::walk::distinct(&walk.skipped_dirs),
        "unreadable_entries": walk.unreadable_entries,
        "ignored_entries": walk.ignored,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use toolhost_guest::codes;

    fn setup() -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for f in [
            "a.rs",
            "src/b.rs",
            "src/deep/c.rs",
            "src/deep/d.txt",
            "web/x.ts",
            "web/y.tsx",
            "target/gen.rs",
            "node_modules/m/i.rs",
        ] {
            let p = r.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "").unwrap();
        }
        let ctx = Context::new("t", Some(r.to_path_buf()));
        (dir, ctx)
    }

    fn find(ctx: &Context, pattern: &str, path: &str, max: usize) -> Result<Output, ToolError> {
        run(Args { max_results: max, ..args(pattern, path) }, ctx)
    }

    fn args(pattern: &str, path: &str) -> Args {
        Args {
            pattern: pattern.into(),
            path: path.into(),
            max_results: DEFAULT_MAX,
            include_ignored: false,
            kind: String::new(),
            modified_since: 0,
            max_depth: MAX_DEPTH,
        }
    }

    fn lines(out: &Output) -> Vec<&str> {
        out.content.lines().filter(|l| !l.starts_with('[')).collect()
    }

    #[test]
    fn name_patterns_match_at_any_depth() {
        let (_dir, ctx) = setup();
        let out = find(&ctx, "*.rs", ".", DEFAULT_MAX).unwrap();
        assert_eq!(lines(&out), ["a.rs", "src/b.rs", "src/deep/c.rs"]);
        assert!(out.content.contains("skipped 2 directories"), "{}", out.content);
        assert_eq!(
            lines(&find(&ctx, "**/*.rs", ".", DEFAULT_MAX).unwrap()),
            ["a.rs", "src/b.rs", "src/deep/c.rs"]
        );
    }

    #[test]
    fn path_patterns_and_alternatives() {
        let (_dir, ctx) = setup();
        assert_eq!(
            lines(&find(&ctx, "src/*.rs", ".", DEFAULT_MAX).unwrap()),
            ["src/b.rs"],
            "* stays in one directory"
        );
        assert_eq!(
            lines(&find(&ctx, "src/**/*.rs", ".", DEFAULT_MAX).unwrap()),
            ["src/b.rs", "src/deep/c.rs"]
        );
        assert_eq!(lines(&find(&ctx, "*.{ts,tsx}", ".", DEFAULT_MAX).unwrap()), ["web/x.ts", "web/y.tsx"]);
        assert_eq!(lines(&find(&ctx, "./web/*", ".", DEFAULT_MAX).unwrap()), ["web/x.ts", "web/y.tsx"]);
        // Relative to `path`, shown relative to the work dir.
        assert_eq!(
            lines(&find(&ctx, "deep/*", "src", DEFAULT_MAX).unwrap()),
            ["src/deep/c.rs", "src/deep/d.txt"]
        );
        // A skipped directory searched explicitly.
        assert_eq!(lines(&find(&ctx, "*.rs", "target", DEFAULT_MAX).unwrap()), ["target/gen.rs"]);
    }

    #[test]
    fn caps_results_and_counts_the_rest() {
        let (_dir, ctx) = setup();
        let out = find(&ctx, "*", ".", 2).unwrap();
        assert_eq!(lines(&out), ["a.rs", "src/b.rs"]);
        assert!(out.content.contains("[4 more matching files not shown (max_results=2)"), "{}", out.content);
        let meta = out.metadata.unwrap();
        assert_eq!((meta["total"].as_u64(), meta["shown"].as_u64()), (Some(6), Some(2)));
    }

    #[test]
    fn no_matches() {
        let (_dir, ctx) = setup();
        let out = find(&ctx, "*.py", ".", DEFAULT_MAX).unwrap();
        assert!(out.content.starts_with("No files match `*.py` in ."), "{}", out.content);
        assert_eq!(out.metadata.unwrap()["total"], 0);
    }

    #[test]
    fn errors() {
        let (_dir, ctx) = setup();
        let err = find(&ctx, "src/[a-", ".", DEFAULT_MAX).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.contains("invalid glob"), "{}", err.message);
        assert_eq!(find(&ctx, "", ".", DEFAULT_MAX).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(find(&ctx, "/etc/*", ".", DEFAULT_MAX).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(find(&ctx, "*", ".", 0).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(find(&ctx, "*", ".", MAX_MAX + 1).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(find(&ctx, "*", "nope", 10).unwrap_err().code, codes::NOT_FOUND);
        assert_eq!(find(&ctx, "*", "a.rs", 10).unwrap_err().code, codes::NOT_A_DIRECTORY);
        assert_eq!(find(&ctx, "*", "../..", 10).unwrap_err().code, codes::PATH_ESCAPE);
    }

    #[cfg(unix)]
    #[test]
    fn unusual_paths_are_quoted_one_per_line() {
        use std::os::unix::ffi::OsStrExt;
        let (dir, ctx) = setup();
        let r = dir.path();
        fs::write(r.join("src/x.rs\nforged.rs"), "").unwrap();
        fs::create_dir(r.join("e\x1b]0;t\x07")).unwrap();
        fs::write(r.join("e\x1b]0;t\x07/in.rs"), "").unwrap();
        fs::write(r.join(std::ffi::OsStr::from_bytes(b"bad\xff.rs")), "").unwrap();
        let out = find(&ctx, "*.rs", ".", DEFAULT_MAX).unwrap();
        assert_eq!(
            lines(&out),
            [
                "a.rs",
                "\"bad\\u{fffd}.rs\"",
                "\"e\\x1b]0;t\\x07/in.rs\"",
                "src/b.rs",
                "src/deep/c.rs",
                "\"src/x.rs\\nforged.rs\""
            ]
        );
        assert!(!out.content.contains('\x1b'), "{}", out.content);
    }

    #[test]
    fn gitignored_files_are_left_out_unless_asked_for() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join(".gitignore"), "deep/\n").unwrap();
        fs::write(dir.path().join("web/.ignore"), "*.tsx\n").unwrap();
        let out = find(&ctx, "*", ".", DEFAULT_MAX).unwrap();
        assert_eq!(lines(&out), [".gitignore", "a.rs", "src/b.rs", "web/.ignore", "web/x.ts"]);
        assert!(out.content.contains("2 entries ignored by .gitignore/.ignore"), "{}", out.content);
        assert_eq!(out.metadata.unwrap()["ignored_entries"], 2);
        let all = run(Args { include_ignored: true, ..args("*", ".") }, &ctx).unwrap();
        assert_eq!(lines(&all).len(), 8, "{}", all.content);
    }

    #[test]
    fn type_time_and_depth_filters() {
        let (_dir, ctx) = setup();
        let only = |a: Args| lines(&run(a, &ctx).unwrap()).into_iter().map(String::from).collect::<Vec<_>>();
        assert_eq!(only(Args { kind: "dir".into(), ..args("*", ".") }), ["src", "src/deep", "web"]);
        assert_eq!(only(Args { kind: "dir".into(), ..args("src/*", ".") }), ["src/deep"]);
        assert_eq!(only(Args { kind: "file".into(), max_depth: 1, ..args("*", ".") }), ["a.rs"]);
        assert_eq!(only(Args { max_depth: 2, ..args("*.rs", ".") }), ["a.rs", "src/b.rs"]);
        assert_eq!(only(Args { modified_since: 1, ..args("*.rs", "src") }), ["src/b.rs", "src/deep/c.rs"]);
        let out = run(Args { modified_since: 253_402_300_799, ..args("*", ".") }, &ctx).unwrap();
        assert!(out.content.starts_with("No files match"), "{}", out.content);
        for bad in [
            Args { kind: "folder".into(), ..args("*", ".") },
            Args { modified_since: -5, ..args("*", ".") },
            Args { modified_since: i64::MAX, ..args("*", ".") },
            Args { max_depth: 0, ..args("*", ".") },
            Args { max_depth: MAX_DEPTH + 1, ..args("*", ".") },
        ] {
            assert_eq!(run(bad, &ctx).unwrap_err().code, codes::INVALID_ARGS);
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlink_type_and_a_symlink_loop() {
        let (dir, ctx) = setup();
        std::os::unix::fs::symlink(".", dir.path().join("src/loop")).unwrap();
        std::os::unix::fs::symlink("a.rs", dir.path().join("alias.rs")).unwrap();
        let out = run(Args { kind: "symlink".into(), ..args("*", ".") }, &ctx).unwrap();
        assert_eq!(lines(&out), ["alias.rs", "src/loop"]);
        let out = run(Args { kind: "dir".into(), ..args("*", ".") }, &ctx).unwrap();
        assert_eq!(lines(&out), ["src", "src/deep", "web"], "the loop is not entered");
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_dirs_are_not_followed() {
        let (dir, ctx) = setup();
        std::os::unix::fs::symlink("src", dir.path().join("alias")).unwrap();
        let out = find(&ctx, "*.rs", ".", DEFAULT_MAX).unwrap();
        assert_eq!(lines(&out), ["a.rs", "src/b.rs", "src/deep/c.rs"]);
    }
}
