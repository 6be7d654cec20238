//! `grep_files`: lines matching a regular expression, across a tree.
//!
//! Speed matters here: each file is read whole into one reused buffer and
//! the regex runs over the whole buffer; line numbers are computed only for
//! matches, by counting newlines from the previous match. Non-matching lines
//! are never visited one by one.

use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::json;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, quote_name, quote_name_always};

use crate::find::Glob;
use crate::walk::{Kind, Walk};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Search file contents with a regular expression (Rust `regex` syntax: no \
look-around or backreferences; `^` and `$` match at line starts and ends). Searches `path` (a file, or a \
directory searched recursively; default the work directory), optionally only files whose name matches `glob` \
(e.g. `*.rs`, `*.{ts,tsx}`; a glob with `/` matches the path relative to `path`). Prints one line per matching \
line as `path:line_number:text`, paths relative to the work directory (a path with `:`, control or unusual \
characters is shown double-quoted with backslash escapes), long lines cut to about 300 characters. At most `max_results` lines (default 100); the output says how many more matched. Binary files (a NUL byte in the \
first 1 KiB) and files over 1 MiB are skipped and counted; symlinks are not followed; directories such as .git, \
node_modules, target, dist, .venv and .cache are not searched unless given as `path`.";

/// Default `max_results`.
pub const DEFAULT_MAX: usize = 100;
/// Largest `max_results` allowed.
pub const MAX_MAX: usize = 2000;
/// Files larger than this are skipped.
pub const MAX_FILE: u64 = 1024 * 1024;
/// A NUL byte in this many leading bytes marks a file as binary.
const BINARY_PROBE: usize = 1024;
/// Matching lines longer than this (bytes) are cut around the match.
const MAX_LINE: usize = 300;

/// Arguments of `grep_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Regular expression to search for (Rust regex syntax), e.g. `fn\s+main` or `TODO|FIXME`.
    pub pattern: String,
    /// File or directory to search, relative to the work directory. Default ".".
    #[serde(default = "dot")]
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
}

fn dot() -> String {
    ".".to_string()
}

fn default_max() -> usize {
    DEFAULT_MAX
}

/// The state of one search.
struct Search<'a> {
    ctx: &'a Context,
    re: Regex,
    max: usize,
    buf: Vec<u8>,
    out: String,
    matches: usize,
    files_searched: usize,
    files_matched: usize,
    binary: usize,
    large: usize,
    unreadable: usize,
}

/// Run `grep_files`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    if !(1..=MAX_MAX).contains(&args.max_results) {
        return Err(ToolError::invalid_args(format!("max_results must be between 1 and {MAX_MAX}")));
    }
    let re = RegexBuilder::new(&args.pattern)
        .multi_line(true)
        .crlf(true)
        .case_insensitive(args.case_insensitive)
        .build()
        .map_err(|e| ToolError::invalid_args(format!("invalid regex: {e}")))?;
    let glob = if args.glob.trim().is_empty() { None } else { Some(Glob::new(&args.glob)?) };
    let root = ctx.resolve(&args.path)?;
    let shown_root = ctx.show(&root);
    let meta = fs::metadata(&root).map_err(|e| ctx.io_error(&e, &root))?;

    let mut search = Search::new(ctx, re, args.max_results);
    let mut walk_note = None;
    let mut skipped_dirs = Vec::new();
    let mut unreadable_entries = 0;
    if meta.is_dir() {
        let mut walk = Walk::new(&root, usize::MAX).map_err(|e| ctx.io_error(&e, &root))?;
        for entry in walk.by_ref() {
            if entry.kind != Kind::File {
                continue;
            }
            if let Some(glob) = &glob
                && !entry.path.strip_prefix(&root).is_ok_and(|rel| glob.is_match(rel))
            {
                continue;
            }
            search.file(&entry.path);
        }
        walk_note = walk.note();
        skipped_dirs = walk.skipped_names();
        unreadable_entries = walk.unreadable_entries();
    } else if meta.is_file() {
        search.file(&root);
    } else {
        return Err(ToolError::invalid_args(format!(
            "{shown_root} is neither a regular file nor a directory"
        )));
    }

    let shown = search.matches.min(search.max);
    let suppressed = search.matches - shown;
    let mut out = std::mem::take(&mut search.out);
    if search.matches == 0 {
        out.push_str(&format!(
            "No matches for `{}` in {shown_root} ({} file{} searched).\n",
            args.pattern,
            search.files_searched,
            if search.files_searched == 1 { "" } else { "s" }
        ));
    }
    if suppressed > 0 {
        out.push_str(&format!(
            "[{suppressed} more matching lines not shown (max_results={}); narrow the pattern, path or glob]\n",
            search.max
        ));
    }
    if search.binary + search.large + search.unreadable > 0 {
        out.push_str(&format!(
            "[skipped {} binary file(s), {} file(s) over 1 MiB, {} unreadable file(s)]\n",
            search.binary, search.large, search.unreadable
        ));
    }
    if let Some(note) = walk_note {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(Output::text(out).with_metadata(json!({
        "path": ctx.display(&root),
        "pattern": args.pattern,
        "matches": search.matches,
        "shown": shown,
        "suppressed": suppressed,
        "files_searched": search.files_searched,
        "files_matched": search.files_matched,
        "skipped_binary": search.binary,
        "skipped_large": search.large,
        "unreadable": search.unreadable,
        "skipped_dirs": skipped_dirs,
        "unreadable_entries": unreadable_entries,
    })))
}

impl<'a> Search<'a> {
    fn new(ctx: &'a Context, re: Regex, max: usize) -> Self {
        Self {
            ctx,
            re,
            max,
            buf: Vec::new(),
            out: String::new(),
            matches: 0,
            files_searched: 0,
            files_matched: 0,
            binary: 0,
            large: 0,
            unreadable: 0,
        }
    }

    /// Search one file, counting it as skipped when it is binary, too large
    /// or unreadable.
    fn file(&mut self, path: &Path) {
        let Ok(mut file) = File::open(path) else {
            self.unreadable += 1;
            return;
        };
        let Ok(meta) = file.metadata() else {
            self.unreadable += 1;
            return;
        };
        if meta.len() > MAX_FILE {
            self.large += 1;
            return;
        }
        // Read exactly the size seen by `stat`: no extra read to find the
        // end, which counts when every call crosses the sandbox. (A file
        // growing meanwhile is searched up to that size.)
        let len = usize::try_from(meta.len()).unwrap_or(0);
        self.buf.clear();
        self.buf.resize(len, 0);
        let mut filled = 0;
        while filled < len {
            match file.read(&mut self.buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.unreadable += 1;
                    return;
                }
            }
        }
        self.buf.truncate(filled);
        if self.buf[..self.buf.len().min(BINARY_PROBE)].contains(&0) {
            self.binary += 1;
            return;
        }
        self.files_searched += 1;
        let before = self.matches;
        self.scan(path);
        if self.matches > before {
            self.files_matched += 1;
        }
    }

    /// Find the matching lines of the file in `self.buf`.
    fn scan(&mut self, path: &Path) {
        let buf = &self.buf;
        let mut shown_path: Option<String> = None;
        // `pos` is always the start of a line; `counted` is the start of
        // the line numbered `line_no`.
        let (mut pos, mut counted, mut line_no) = (0usize, 0usize, 1usize);
        while pos <= buf.len() {
            let Some(m) = self.re.find_at(buf, pos) else { break };
            let start = m.start();
            if start == buf.len() && (buf.is_empty() || buf.ends_with(b"\n")) {
                // An empty match after the final newline is not a line.
                break;
            }
            let line_start = buf[pos..start].iter().rposition(|&b| b == b'\n').map_or(pos, |i| pos + i + 1);
            let line_end = buf[start..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| start + i);
            line_no += buf[counted..line_start].iter().filter(|&&b| b == b'\n').count();
            counted = line_start;
            self.matches += 1;
            if self.matches <= self.max {
                let shown = shown_path.get_or_insert_with(|| prefix(self.ctx, path));
                let text = snippet(&buf[line_start..line_end], start - line_start);
                self.out.push_str(shown);
                self.out.push(':');
                self.out.push_str(&line_no.to_string());
                self.out.push(':');
                self.out.push_str(&text);
                self.out.push('\n');
            }
            pos = line_end + 1;
        }
    }
}

/// `path` as the `path:line:` prefix shows it: by the shared quoting rule,
/// and quoted also when it holds a `:`, so that the prefix always ends at
/// the first `:` after the path (a file named `a:9:x` cannot pass for line
/// 9 of `a`).
fn prefix(ctx: &Context, path: &Path) -> String {
    let shown = ctx.display(path);
    if shown.contains(':') { quote_name_always(&shown) } else { quote_name(&shown).into_owned() }
}

/// The line as text for the model: without its `\r`, cut to about
/// [`MAX_LINE`] bytes around the match (at `at`), `…` marking the cuts.
fn snippet(line: &[u8], at: usize) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() <= MAX_LINE {
        return String::from_utf8_lossy(line).into_owned();
    }
    let is_continuation = |b: u8| b & 0xC0 == 0x80;
    let mut start = if at + 50 > MAX_LINE { at.saturating_sub(100).min(line.len()) } else { 0 };
    while start < line.len() && is_continuation(line[start]) {
        start += 1;
    }
    let mut end = (start + MAX_LINE).min(line.len());
    while end < line.len() && end > start && is_continuation(line[end]) {
        end -= 1;
    }
    let mut text = String::with_capacity(end - start + 8);
    if start > 0 {
        text.push('…');
    }
    text.push_str(&String::from_utf8_lossy(&line[start..end]));
    if end < line.len() {
        text.push('…');
    }
    text
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
        large.resize(MAX_FILE as usize + 1, b'a');
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
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{}NEEDLE{}\n", "a".repeat(1000), "b".repeat(1000));
        let (_d, ctx) = setup(&[("min.js", line.as_bytes())]);
        let out = grep(&ctx, args("NEEDLE"));
        let hit = results(&out)[0];
        assert!(hit.starts_with("min.js:1:…a"), "{hit}");
        assert!(hit.contains("NEEDLE") && hit.ends_with("b…"), "{hit}");
        assert!(hit.len() < 330, "{}", hit.len());
        assert_eq!(snippet("é".repeat(400).as_bytes(), 0).chars().filter(|&c| c == '\u{fffd}').count(), 0);
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
        // In the sandbox such a name arrives decoded lossily and does not
        // open: the file is counted, the search goes on.
        let mut search = Search::new(&ctx, Regex::new("needle").unwrap(), DEFAULT_MAX);
        search.file(&d.path().join("bad\u{fffd}.txt"));
        search.file(&d.path().join("ok.txt"));
        assert_eq!((search.unreadable, search.matches), (1, 1));
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
