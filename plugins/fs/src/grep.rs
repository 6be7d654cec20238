//! `grep_files`: lines matching a regular expression or a fixed string,
//! across a tree, with optional context lines. The host searches
//! ([`toolhost_guest::search`]); [`crate::search`] shows what it found.

use std::fs;

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::search::GrepRequest;
use toolhost_guest::{Context, JsonSchema, Output, ToolError};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Search file contents with a regular expression (Rust `regex` syntax: no \
look-around or backreferences; `^` and `$` match at line starts and ends), or with `literal: true` for a fixed \
string (no character special); `case_insensitive: true` ignores case. Searches `path` (a file, or a directory \
searched recursively; default the work directory), optionally only files whose name matches `glob` (e.g. `*.rs`, \
`*.{ts,tsx}`; a glob with `/` matches the path relative to `path`). Prints one line per matching line as \
`path:line_number:text`, paths relative to the work directory (a path with `:`, control or unusual characters is \
shown double-quoted with backslash escapes), long lines cut to about 300 characters. `before` / `after` (0 to 20) \
add context lines, printed as `path-line_number-text`; overlapping contexts are merged and `--` separates groups \
that are not adjacent. At most `max_results` matching lines (default 100; context lines not counted); the output \
says how many more matched. Binary files (a NUL byte in the first 1 KiB) and files over 1 MiB are skipped and \
counted; symlinks are not followed; directories such as .git, node_modules, target, dist, .venv and .cache are \
not searched unless given as `path`, nor files that `.gitignore` / `.ignore` files (from the work directory down, and .git/info/exclude) ignore \
(counted; `include_ignored: true` searches them).";

/// Default `max_results`.
pub const DEFAULT_MAX: usize = 100;
/// Largest `max_results` allowed.
pub const MAX_MAX: usize = 2000;
/// Largest `before` and `after` allowed.
pub const MAX_CONTEXT: usize = 20;

/// Arguments of `grep_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Regular expression to search for (Rust regex syntax), e.g. `fn\s+main` or `TODO|FIXME`.
    pub pattern: String,
    /// File or directory to search, relative to the work directory. Default ".".
    #[serde(default = "crate::dot")]
    pub path: String,
    /// Only search files matching this glob, e.g. `*.py` or `src/**/*.rs` (a glob without `/` matches file names). Default: all files. Ignored when `path` is a file.
    #[serde(default)]
    pub glob: String,
    /// Maximum number of matching lines to print, 1 to 2000. Default 100.
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 2000))]
    pub max_results: usize,
    /// Match letters regardless of case. Default false.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Search `pattern` as a fixed string, not a regular expression (no character is special). Default false.
    #[serde(default)]
    pub literal: bool,
    /// Lines of context to show before each matching line, 0 to 20. Default 0.
    #[serde(default)]
    #[schemars(range(min = 0, max = 20))]
    pub before: usize,
    /// Lines of context to show after each matching line, 0 to 20. Default 0.
    #[serde(default)]
    #[schemars(range(min = 0, max = 20))]
    pub after: usize,
    /// Also show entries that `.gitignore` and `.ignore` files ignore. Default false.
    #[serde(default)]
    pub include_ignored: bool,
}

fn default_max() -> usize {
    DEFAULT_MAX
}

/// Run `grep_files`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    crate::in_range("max_results", args.max_results, MAX_MAX)?;
    if args.before > MAX_CONTEXT || args.after > MAX_CONTEXT {
        return Err(ToolError::invalid_args(format!(
            "before and after must be between 0 and {MAX_CONTEXT} (got before={}, after={})",
            args.before, args.after
        )));
    }
    let root = ctx.resolve(&args.path)?;
    let shown_root = ctx.show(&root);
    let meta = fs::metadata(&root).map_err(|e| ctx.io_error(&e, &root))?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(ToolError::invalid_args(format!(
            "{shown_root} is neither a regular file nor a directory"
        )));
    }
    // The ranges are checked above: the casts are exact.
    let found = toolhost_guest::search::grep(
        ctx,
        &GrepRequest {
            path: root.to_string_lossy().into_owned(),
            pattern: args.pattern.clone(),
            literal: args.literal,
            case_insensitive: args.case_insensitive,
            glob: Some(args.glob.clone()).filter(|g| !g.trim().is_empty()),
            include_ignored: args.include_ignored,
            max_results: args.max_results as u32,
            before: args.before as u32,
            after: args.after as u32,
        },
    )?;

    let shown = found.matches.min(args.max_results as u64);
    let suppressed = found.matches - shown;
    let mut out = crate::search::format(&found);
    if found.matches == 0 {
        out.push_str(&format!(
            "No matches for `{}` in {shown_root} ({} file{} searched).\n",
            args.pattern,
            found.files_searched,
            if found.files_searched == 1 { "" } else { "s" }
        ));
    }
    if suppressed > 0 {
        out.push_str(&format!(
            "[{suppressed} more matching lines not shown (max_results={}); narrow the pattern, path or glob]\n",
            args.max_results
        ));
    }
    if found.binary + found.large + found.unreadable > 0 {
        out.push_str(&format!(
            "[skipped {} binary file(s), {} file(s) over 1 MiB, {} unreadable file(s)]\n",
            found.binary, found.large, found.unreadable
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
        "literal": args.literal,
        "matches": found.matches,
        "context_lines": found.context_lines,
        "shown": shown,
        "suppressed": suppressed,
        "files_searched": found.files_searched,
        "files_matched": found.files_matched,
        "skipped_binary": found.binary,
        "skipped_large": found.large,
        "unreadable": found.unreadable,
        "skipped_dirs": crate::walk::distinct(&walk.skipped_dirs),
        "unreadable_entries": walk.unreadable_entries,
        "ignored_entries": walk.ignored,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_guest::codes;

    fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let p = dir.path().join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        let ctx = Context::new("t", Some(dir.path().to_path_buf()));
        (dir, ctx)
    }

    fn args(pattern: &str) -> Args {
        Args {
            pattern: pattern.into(),
            path: ".".into(),
            glob: String::new(),
            max_results: DEFAULT_MAX,
            case_insensitive: false,
            literal: false,
            before: 0,
            after: 0,
            include_ignored: false,
        }
    }

    fn grep(ctx: &Context, args: Args) -> Output {
        run(args, ctx).unwrap()
    }

    fn results(out: &Output) -> Vec<&str> {
        out.content.lines().filter(|l| !l.starts_with('[') && !l.starts_with("No matches")).collect()
    }

    #[test]
    fn prints_path_line_and_text() {
        let (_d, ctx) = setup(&[
            ("src/a.rs", b"fn main() {\n    let x = 1;\n}\nfn helper() {}\n"),
            ("b.txt", b"nothing here\n"),
        ]);
        let out = grep(&ctx, args(r"^fn \w+"));
        assert_eq!(results(&out), ["src/a.rs:1:fn main() {", "src/a.rs:4:fn helper() {}"]);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["matches"], 2);
        assert_eq!(meta["files_searched"], 2);
        assert_eq!(meta["files_matched"], 1);
    }

    #[test]
    fn one_line_per_matching_line_and_exact_numbers() {
        let text: String =
            (1..=50).map(|i| if i % 10 == 0 { format!("x x x {i}\n") } else { format!("{i}\n") }).collect();
        let (_d, ctx) = setup(&[("f", text.as_bytes())]);
        let out = grep(&ctx, args("x"));
        assert_eq!(
            results(&out),
            ["f:10:x x x 10", "f:20:x x x 20", "f:30:x x x 30", "f:40:x x x 40", "f:50:x x x 50"]
        );
    }

    #[test]
    fn anchors_work_per_line_with_crlf() {
        let (_d, ctx) = setup(&[("w.txt", b"alpha end\r\nbeta\r\nend\r\n")]);
        assert_eq!(results(&grep(&ctx, args("end$"))), ["w.txt:1:alpha end", "w.txt:3:end"]);
        assert_eq!(results(&grep(&ctx, args("^beta$"))), ["w.txt:2:beta"]);
        // An empty match does not invent a line after the last newline.
        assert_eq!(grep(&ctx, args("^")).metadata.unwrap()["matches"], 3);
    }

    #[test]
    fn counts_suppressed_matches_exactly() {
        let many: String = (0..30).map(|i| format!("hit {i}\n")).collect();
        let (_d, ctx) = setup(&[("a", many.as_bytes()), ("b", b"hit\nmiss\nhit\n")]);
        let out = grep(&ctx, Args { max_results: 5, ..args("hit") });
        assert_eq!(results(&out).len(), 5);
        assert!(out.content.contains("[27 more matching lines not shown (max_results=5)"), "{}", out.content);
        let meta = out.metadata.unwrap();
        assert_eq!((meta["matches"].as_u64(), meta["suppressed"].as_u64()), (Some(32), Some(27)));
        assert_eq!(meta["files_matched"], 2);
    }

    #[test]
    fn skips_binary_and_large_files() {
        let mut large = b"needle\n".to_vec();
        large.resize(crate::search::MAX_FILE as usize + 1, b'a');
        let mut late_nul = b"needle\n".to_vec();
        late_nul.resize(2000, b'a');
        late_nul.push(0);
        let (_d, ctx) = setup(&[
            ("bin", b"needle\0\x01\x02"),
            ("big.log", &large),
            ("late", &late_nul),
            ("ok.txt", b"a needle\n"),
        ]);
        let out = grep(&ctx, args("needle"));
        assert_eq!(results(&out), ["late:1:needle", "ok.txt:1:a needle"]);
        assert!(out.content.contains("[skipped 1 binary file(s), 1 file(s) over 1 MiB"), "{}", out.content);
        let meta = out.metadata.unwrap();
        assert_eq!((meta["skipped_binary"].as_u64(), meta["skipped_large"].as_u64()), (Some(1), Some(1)));
    }

    #[test]
    fn glob_filters_and_skip_dirs() {
        let (_d, ctx) = setup(&[
            ("a.rs", b"needle"),
            ("src/b.py", b"needle"),
            ("src/c.rs", b"needle"),
            ("target/d.rs", b"needle"),
            (".git/e.rs", b"needle"),
        ]);
        let out = grep(&ctx, Args { glob: "*.rs".into(), ..args("needle") });
        assert_eq!(results(&out), ["src/c.rs:1:needle", "a.rs:1:needle"]);
        assert!(out.content.contains("skipped 2 directories"), "{}", out.content);
        let out = grep(&ctx, Args { glob: "src/*".into(), ..args("needle") });
        assert_eq!(results(&out), ["src/b.py:1:needle", "src/c.rs:1:needle"]);
        let out = grep(&ctx, Args { path: "target".into(), ..args("needle") });
        assert_eq!(results(&out), ["target/d.rs:1:needle"]);
        let out = grep(&ctx, Args { path: "src/b.py".into(), glob: "*.rs".into(), ..args("needle") });
        assert_eq!(results(&out), ["src/b.py:1:needle"], "a file path ignores the glob");
    }

    #[test]
    fn case_insensitive_and_no_matches() {
        let (_d, ctx) = setup(&[("f", b"Hello\nhello\nHELLO\n")]);
        assert_eq!(results(&grep(&ctx, args("hello"))), ["f:2:hello"]);
        assert_eq!(
            grep(&ctx, Args { case_insensitive: true, ..args("hello") }).metadata.unwrap()["matches"],
            3
        );
        let out = grep(&ctx, args("absent"));
        assert_eq!(out.content, "No matches for `absent` in . (1 file searched).\n");
    }

    #[test]
    fn gitignored_files_are_not_searched_unless_asked_for() {
        let (_d, ctx) = setup(&[
            (".gitignore", b"*.gen\n"),
            ("a.gen", b"needle\n"),
            ("sub/.gitignore", b"!b.gen\n"),
            ("sub/b.gen", b"needle\n"),
            ("c.rs", b"needle\n"),
        ]);
        let out = grep(&ctx, args("needle"));
        assert_eq!(results(&out), ["sub/b.gen:1:needle", "c.rs:1:needle"]);
        assert_eq!(out.metadata.unwrap()["ignored_entries"], 1);
        let out = grep(&ctx, Args { include_ignored: true, ..args("needle") });
        assert_eq!(results(&out), ["sub/b.gen:1:needle", "a.gen:1:needle", "c.rs:1:needle"]);
    }

    #[test]
    fn literal_searches_a_fixed_string() {
        let (_d, ctx) = setup(&[("f", b"a.b(c)\naxbc\n[x]*\n")]);
        assert_eq!(
            results(&grep(&ctx, args("a.b(c)"))),
            ["f:2:axbc"],
            "regex: `.` is any character, `(c)` a group"
        );
        assert_eq!(results(&grep(&ctx, Args { literal: true, ..args("a.b(c)") })), ["f:1:a.b(c)"]);
        // Text that is not a valid regex is fine as a literal.
        assert_eq!(results(&grep(&ctx, Args { literal: true, ..args("[x]*") })), ["f:3:[x]*"]);
        let out = grep(&ctx, Args { literal: true, case_insensitive: true, ..args("A.B(C)") });
        assert_eq!(results(&out), ["f:1:a.b(c)"]);
        assert_eq!(out.metadata.unwrap()["literal"], true);
    }

    #[test]
    fn context_through_the_tool_and_its_bounds() {
        let (_d, ctx) = setup(&[("a", b"1\n2\nhit\n4\n"), ("b", b"hit\n2\n")]);
        let out = grep(&ctx, Args { before: 1, after: 1, ..args("hit") });
        assert_eq!(out.content, "a-2-2\na:3:hit\na-4-4\n--\nb:1:hit\nb-2-2\n");
        assert_eq!(out.metadata.unwrap()["context_lines"], 3);
        for (before, after) in [(MAX_CONTEXT + 1, 0), (0, 1_000_000), (usize::MAX, usize::MAX)] {
            let err = run(Args { before, after, ..args("hit") }, &ctx).unwrap_err();
            assert_eq!(err.code, codes::INVALID_ARGS);
            assert!(err.message.contains("between 0 and 20"), "{}", err.message);
        }
        assert!(run(Args { before: MAX_CONTEXT, after: MAX_CONTEXT, ..args("hit") }, &ctx).is_ok());
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{}NEEDLE{}\n", "a".repeat(1000), "b".repeat(1000));
        let (_d, ctx) = setup(&[("min.js", line.as_bytes())]);
        let out = grep(&ctx, args("NEEDLE"));
        let hit = results(&out)[0];
        assert!(hit.starts_with("min.js:1:…a"), "{hit}");
        assert!(hit.contains("NEEDLE") && hit.ends_with("b…"), "{hit}");
        assert!(hit.len() < 330, "{}", hit.len());
    }

    #[test]
    fn path_prefixes_are_quoted_when_unusual_or_holding_a_colon() {
        let (_d, ctx) = setup(&[
            ("a.txt\nforged.rs:1:fn fake()", b"fn real()\n"),
            ("notes:9:fake", b"fn x\n"),
            ("d\x1b[31m/e.rs", b"  fn y\n"),
            ("back\\slash", b"fn z\n"),
            ("plain.rs", b"fn w\n"),
        ]);
        let out = grep(&ctx, args(r"fn \w"));
        assert_eq!(
            results(&out),
            [
                "\"d\\x1b[31m/e.rs\":1:  fn y",
                "\"a.txt\\nforged.rs:1:fn fake()\":1:fn real()",
                "\"back\\\\slash\":1:fn z",
                "\"notes:9:fake\":1:fn x",
                "plain.rs:1:fn w",
            ]
        );
        assert!(!out.content.contains('\x1b'), "{}", out.content);
        // File content is shown as it is.
        let (_d, ctx) = setup(&[("f", b"esc \x1b[2J here\n")]);
        assert_eq!(results(&grep(&ctx, args("esc"))), ["f:1:esc \x1b[2J here"]);
    }

    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_are_searched() {
        use std::os::unix::ffi::OsStrExt;
        let (d, ctx) = setup(&[("ok.txt", b"needle\n")]);
        fs::write(d.path().join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")), b"needle too\n").unwrap();
        let out = grep(&ctx, args("needle"));
        assert_eq!(results(&out), ["\"bad\\u{fffd}.txt\":1:needle too", "ok.txt:1:needle"]);
    }

    #[test]
    fn errors() {
        let (_d, ctx) = setup(&[("f", b"x")]);
        let err = run(args("(unclosed"), &ctx).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.contains("invalid regex"), "{}", err.message);
        assert_eq!(run(Args { glob: "[".into(), ..args("x") }, &ctx).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(run(Args { max_results: 0, ..args("x") }, &ctx).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(run(Args { max_results: 2001, ..args("x") }, &ctx).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(run(Args { path: "nope".into(), ..args("x") }, &ctx).unwrap_err().code, codes::NOT_FOUND);
        assert_eq!(
            run(Args { path: "/etc".into(), ..args("x") }, &ctx).unwrap_err().code,
            codes::PATH_ESCAPE
        );
    }
}
