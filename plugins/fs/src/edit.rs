//! `edit_file`: replace a string in a text file, found exactly or by the
//! tolerant matcher cascade of [`crate::matching`].

use serde::Deserialize;
use serde_json::json;
use similar::TextDiff;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes, quote_name};

use crate::matching::{self, Edit, Limits, Matcher};
use crate::paths::resolve_for_write;
use crate::write::write_atomic;

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Replace a string in an existing text file. Copy `old_string` from read_file \
output without the line-number prefix; it must occur exactly once unless `replace_all` is true: include enough \
surrounding lines to make it unique. When it does not match exactly, tolerant matchers are tried in order: each line \
trimmed; a block of 3+ lines by its first and last lines (the lines between may differ a little, e.g. a stale \
comment); whitespace runs as one space; another common indentation; `\\n`, `\\t`, `\\\"` written literally; \
surrounding whitespace; a block with one matching end line and most lines the same. The first that finds one place \
is applied: `metadata.matcher` names it and the result gives the lines it replaced (check them). When those lines \
are indented differently by a constant offset (more spaces, tabs for spaces), new_string is re-indented the same \
way. Two equally good places are never guessed between. `replace_all` matches exactly only, and so do files over \
4 MiB and old_strings over 64 KiB. Line endings are handled for you: in a CRLF file, write `\\n` and it matches \
`\\r\\n`; the file keeps its line endings and a UTF-8 byte order mark. Errors: `old_string_not_found`, \
`old_string_not_unique` (with the count or the lines), `no_op_edit` (old and new are equal), `binary_file`, \
`not_found` (use write_file to create a file), `forbidden_path` (.git, toolhost configuration), `is_symlink` (name the real file). Pass the \
sha256 read_file showed as `expected_sha256`: if the file changed since, nothing is written (`stale_file`, with \
the current hash). The write is atomic and keeps the permission bits. Messages show a name with control or unusual characters double-quoted with backslash \
escapes.";

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to edit: relative to the work directory, or absolute inside it.
    pub path: String,
    /// The text to replace (not empty), copied from the file. It must occur once unless `replace_all` is true; when it does not match exactly, tolerant matchers (trimmed lines, first and last lines of a block, whitespace, indentation, escapes) may find the one place it means.
    pub old_string: String,
    /// The text to put in its place (may be empty to delete).
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    #[serde(default)]
    pub replace_all: bool,
    /// The file's sha256 as read_file showed it: when the file changed since, nothing is written (`stale_file`).
    #[serde(default)]
    pub expected_sha256: String,
}

/// Run `edit_file`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError::invalid_args(
            "old_string is empty; give the exact text to replace (use write_file to create or replace a whole file)",
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::new(
            codes::NO_OP_EDIT,
            "old_string and new_string are identical; nothing would change",
        ));
    }
    let expected = crate::fresh::parse_hash("expected_sha256", &args.expected_sha256)?;
    let path = resolve_for_write(ctx, &args.path)?;
    let shown = ctx.show(&path);
    let meta = std::fs::metadata(&path).map_err(|e| ctx.io_error(&e, &path))?;
    if meta.is_dir() {
        return Err(ToolError::new(codes::IS_DIRECTORY, format!("{shown} is a directory")));
    }
    if !meta.is_file() {
        return Err(ToolError::invalid_args(format!("{shown} is not a regular file")));
    }
    let raw = std::fs::read(&path).map_err(|e| ctx.io_error(&e, &path))?;
    crate::fresh::check(&shown, expected.as_deref(), &raw, None, crate::fresh::Settings::from_env())?;
    if raw[..raw.len().min(8 * 1024)].contains(&0) {
        return Err(ToolError::new(
            codes::BINARY_FILE,
            format!("{shown} is binary (it contains NUL bytes); edit_file only edits text"),
        ));
    }
    let whole = std::str::from_utf8(&raw).map_err(|_| {
        ToolError::new(
            codes::BINARY_FILE,
            format!("{shown} is not valid UTF-8 text; edit_file only edits text"),
        )
    })?;
    let (bom, text) = match whole.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", whole),
    };

    let edit =
        matching::apply(text, &args.old_string, &args.new_string, args.replace_all, &Limits::default())
            .map_err(|refusal| ToolError::new(refusal.code(), refusal.message(&shown)))?;
    let updated = &edit.text;
    if updated == text {
        return Err(ToolError::new(codes::NO_OP_EDIT, format!("the edit would leave {shown} unchanged")));
    }
    let mut bytes = Vec::with_capacity(bom.len() + updated.len());
    bytes.extend_from_slice(bom.as_bytes());
    bytes.extend_from_slice(updated.as_bytes());
    write_atomic(ctx, &path, &bytes)?;

    let exact = ctx.display(&path);
    let diff = TextDiff::from_lines(text, updated.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&quote_name(&format!("a/{exact}")), &quote_name(&format!("b/{exact}")))
        .to_string();
    let count = edit.replacements;
    let plural = if count == 1 { "" } else { "s" };
    let mut content = format!("Made {count} replacement{plural} in {shown}.");
    let mut display = diff;
    if edit.matcher != Matcher::Exact {
        content = fuzzy_summary(&edit, &shown);
        display = format!("{}\n{display}", replaced_lines(text, &edit));
    }
    Ok(Output::text(content).with_display(display).with_metadata(json!({
        "path": exact,
        "replacements": count,
        "matcher": edit.matcher.name(),
        "lines": [edit.lines.0, edit.lines.1],
        "reindented": edit.reindented,
        "sha256": crate::sha256_hex(&bytes),
    })))
}

/// What the model reads after a tolerant match: which lines were replaced,
/// how they were found, and that new_string was re-indented.
fn fuzzy_summary(edit: &Edit, shown: &str) -> String {
    let (first, last) = edit.lines;
    let at = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
    let mut s = format!(
        "Made 1 replacement in {shown}, {at}: old_string did not match exactly; it matched {} (the \
         replaced lines are in the diff).",
        edit.matcher.name()
    );
    if let Some(shift) = &edit.reindented {
        s.push_str(&format!(" new_string was re-indented to the file's ({shift})."));
    }
    s
}

/// The original lines an inexact match replaced, numbered, for the display.
fn replaced_lines(text: &str, edit: &Edit) -> String {
    let (first, last) = edit.lines;
    let mut s = format!("Replaced lines {first}-{last} (matched {}):\n", edit.matcher.name());
    for (n, line) in text.lines().enumerate().skip(first - 1).take(last + 1 - first) {
        s.push_str(&format!("{:>6}\t{line}\n", n + 1));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup(content: &[u8]) -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), content).unwrap();
        let ctx = Context::new("e1", Some(dir.path().to_path_buf()));
        (dir, ctx)
    }

    fn edit(ctx: &Context, old: &str, new: &str, all: bool) -> Result<Output, ToolError> {
        run(
            Args {
                path: "f.txt".into(),
                old_string: old.into(),
                new_string: new.into(),
                replace_all: all,
                expected_sha256: String::new(),
            },
            ctx,
        )
    }

    fn file(dir: &tempfile::TempDir) -> Vec<u8> {
        fs::read(dir.path().join("f.txt")).unwrap()
    }

    #[test]
    fn replaces_one_and_shows_a_diff() {
        let (dir, ctx) = setup(b"one\ntwo\nthree\n");
        let out = edit(&ctx, "two", "2", false).unwrap();
        assert_eq!(out.content, "Made 1 replacement in f.txt.");
        assert_eq!(file(&dir), b"one\n2\nthree\n");
        let diff = out.display.unwrap();
        assert!(diff.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n"), "{diff}");
        assert!(diff.contains("-two\n+2\n"), "{diff}");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["replacements"], 1);
        assert_eq!(meta["path"], "f.txt");
        assert_eq!(meta["sha256"], crate::sha256_hex(b"one\n2\nthree\n"));
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["f.txt"], "no temporary file left");
    }

    #[test]
    fn a_tolerant_match_names_its_matcher_and_shows_the_lines_replaced() {
        let (dir, ctx) = setup(b"fn a() {\r\n\tif x {\r\n\t\ty();\r\n\t}\r\n}\r\n");
        let out =
            edit(&ctx, "    if x {\n        y();\n    }", "    if x {\n        z();\n    }", false).unwrap();
        assert_eq!(file(&dir), b"fn a() {\r\n\tif x {\r\n\t\tz();\r\n\t}\r\n}\r\n", "tabs and CRLF kept");
        assert_eq!(
            out.content,
            "Made 1 replacement in f.txt, lines 2-4: old_string did not match exactly; it matched line_trimmed \
             (the replaced lines are in the diff). new_string was re-indented to the file's (4 spaces as a tab)."
        );
        let display = out.display.unwrap();
        assert!(
            display.starts_with("Replaced lines 2-4 (matched line_trimmed):\n     2\t\tif x {\n     3\t\t\ty();\n     4\t\t}\n\n--- a/f.txt"),
            "{display}"
        );
        let meta = out.metadata.unwrap();
        assert_eq!((meta["matcher"].as_str(), &meta["lines"]), (Some("line_trimmed"), &json!([2, 4])));
        assert_eq!(meta["reindented"], "4 spaces as a tab");

        let out = edit(&ctx, "z();", "w();", false).unwrap();
        assert_eq!(out.metadata.unwrap()["matcher"], "exact");
        assert!(out.display.unwrap().starts_with("--- a/f.txt"), "an exact edit shows the diff alone");
    }

    #[test]
    fn refusals_say_what_the_tolerant_matching_did() {
        let (dir, ctx) = setup(b"  a()\n  b()\n\n    a()\n    b()\n");
        let err = edit(&ctx, "a()\nb()", "c()", false).unwrap_err();
        assert_eq!(err.code, codes::OLD_STRING_NOT_UNIQUE);
        assert!(
            err.message.contains("fits 2 places equally well (starting at lines 1, 4)"),
            "{}",
            err.message
        );
        let err = edit(&ctx, "a()\nb()", "c()", true).unwrap_err();
        assert_eq!(err.code, codes::OLD_STRING_NOT_FOUND);
        assert!(err.message.contains("replace_all matches exactly only"), "{}", err.message);
        assert_eq!(file(&dir), b"  a()\n  b()\n\n    a()\n    b()\n");
    }

    #[test]
    fn the_description_states_the_size_bounds() {
        let limits = Limits::default();
        assert_eq!((limits.max_text_bytes, limits.max_old_bytes), (4 << 20, 64 << 10));
        assert!(DESCRIPTION.contains("files over 4 MiB and old_strings over 64 KiB"));
    }

    #[test]
    fn not_unique_unless_replace_all() {
        let (dir, ctx) = setup(b"x = 1; x = 2; x = 3;\n");
        let err = edit(&ctx, "x =", "y =", false).unwrap_err();
        assert_eq!(err.code, codes::OLD_STRING_NOT_UNIQUE);
        assert!(err.message.contains("3 times"), "{}", err.message);
        assert_eq!(file(&dir), b"x = 1; x = 2; x = 3;\n", "unchanged");
        let out = edit(&ctx, "x =", "y =", true).unwrap();
        assert_eq!(out.metadata.unwrap()["replacements"], 3);
        assert_eq!(file(&dir), b"y = 1; y = 2; y = 3;\n");
    }

    #[test]
    fn error_codes() {
        let (dir, ctx) = setup(b"abc\n");
        assert_eq!(edit(&ctx, "", "x", false).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(edit(&ctx, "abc", "abc", false).unwrap_err().code, codes::NO_OP_EDIT);
        assert_eq!(edit(&ctx, "xyz", "q", false).unwrap_err().code, codes::OLD_STRING_NOT_FOUND);
        assert_eq!(
            edit(&ctx, "ABC", "q", false).unwrap_err().code,
            codes::OLD_STRING_NOT_FOUND,
            "case matters"
        );
        let missing = Args {
            path: "nope".into(),
            old_string: "a".into(),
            new_string: "b".into(),
            replace_all: false,
            expected_sha256: String::new(),
        };
        assert_eq!(run(missing, &ctx).unwrap_err().code, codes::NOT_FOUND);
        let git = Args {
            path: ".git/config".into(),
            old_string: "a".into(),
            new_string: "b".into(),
            replace_all: false,
            expected_sha256: String::new(),
        };
        assert_eq!(run(git, &ctx).unwrap_err().code, codes::FORBIDDEN_PATH);
        fs::create_dir(dir.path().join("d")).unwrap();
        let d = Args {
            path: "d".into(),
            old_string: "a".into(),
            new_string: "b".into(),
            replace_all: false,
            expected_sha256: String::new(),
        };
        assert_eq!(run(d, &ctx).unwrap_err().code, codes::IS_DIRECTORY);
        assert_eq!(file(&dir), b"abc\n");
    }

    #[test]
    fn a_stale_hash_edits_nothing() {
        let (dir, ctx) = setup(b"one\ntwo\n");
        let args = |hash: String| Args {
            path: "f.txt".into(),
            old_string: "two".into(),
            new_string: "2".into(),
            replace_all: false,
            expected_sha256: hash,
        };
        let err = run(args(crate::sha256_hex(b"before")), &ctx).unwrap_err();
        assert_eq!(err.code, codes::STALE_FILE);
        assert!(err.message.contains(&crate::sha256_hex(b"one\ntwo\n")), "{}", err.message);
        assert_eq!(file(&dir), b"one\ntwo\n");
        assert_eq!(run(args("zz".into()), &ctx).unwrap_err().code, codes::INVALID_ARGS);
        run(args(crate::sha256_hex(b"one\ntwo\n")), &ctx).unwrap();
        assert_eq!(file(&dir), b"one\n2\n");
    }

    #[test]
    fn binary_files_are_refused() {
        let (dir, ctx) = setup(b"a\0b");
        assert_eq!(edit(&ctx, "a", "b", false).unwrap_err().code, codes::BINARY_FILE);
        fs::write(dir.path().join("f.txt"), b"caf\xe9").unwrap();
        assert_eq!(edit(&ctx, "caf", "tea", false).unwrap_err().code, codes::BINARY_FILE);
    }

    #[test]
    fn crlf_files_match_lf_strings_and_stay_crlf() {
        let (dir, ctx) = setup(b"fn a() {\r\n    1\r\n}\r\n");
        edit(&ctx, "{\n    1\n}", "{\n    2\n    3\n}", false).unwrap();
        assert_eq!(file(&dir), b"fn a() {\r\n    2\r\n    3\r\n}\r\n");
        // Strings already in CRLF work too.
        edit(&ctx, "2\r\n", "two\r\n", false).unwrap();
        assert_eq!(file(&dir), b"fn a() {\r\n    two\r\n    3\r\n}\r\n");
    }

    #[test]
    fn lf_files_stay_lf() {
        let (dir, ctx) = setup(b"a\nb\n");
        edit(&ctx, "a\nb", "x\ny\nz", false).unwrap();
        assert_eq!(file(&dir), b"x\ny\nz\n");
    }

    #[test]
    fn bom_is_kept() {
        let (dir, ctx) = setup("\u{feff}first\nsecond\n".as_bytes());
        edit(&ctx, "first", "1st", false).unwrap();
        assert_eq!(file(&dir), "\u{feff}1st\nsecond\n".as_bytes());
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permission_bits() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ctx) = setup(b"#!/bin/sh\necho a\n");
        let p = dir.path().join("f.txt");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o700)).unwrap();
        edit(&ctx, "echo a", "echo b", false).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o700);
    }

    #[test]
    fn messages_and_the_diff_quote_unusual_names() {
        let (dir, ctx) = setup(b"");
        let name = "f.txt\n@@ -1 +1 @@";
        fs::write(dir.path().join(name), "old\n").unwrap();
        let edit = |old: &str| {
            run(
                Args {
                    path: name.into(),
                    old_string: old.into(),
                    new_string: "new".into(),
                    replace_all: false,
                    expected_sha256: String::new(),
                },
                &ctx,
            )
        };
        let err = edit("absent").unwrap_err();
        assert!(err.message.contains("not found in \"f.txt\\n@@ -1 +1 @@\";"), "{}", err.message);
        let out = edit("old").unwrap();
        assert_eq!(out.content, "Made 1 replacement in \"f.txt\\n@@ -1 +1 @@\".");
        let diff = out.display.unwrap();
        assert!(
            diff.starts_with("--- \"a/f.txt\\n@@ -1 +1 @@\"\n+++ \"b/f.txt\\n@@ -1 +1 @@\"\n@@ "),
            "{diff}"
        );
        assert_eq!(out.metadata.unwrap()["path"], name);
    }
}
