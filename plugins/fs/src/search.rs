//! How `grep_files` shows what the host's search found
//! ([`toolhost_guest::search`]): match lines as `path:line:text`, context
//! lines as `path-line-text`, and `--` between groups that are not adjacent.
//! What the lines are (context merged, long lines cut, the first matches in
//! walk order) is the search's.

use toolhost_guest::search::{GrepResult, LineKind};
use toolhost_guest::{quote_name, quote_name_always};

/// Files larger than this are skipped.
pub use toolhost_search::MAX_FILE;

/// The shown lines of `found`, one per line.
pub(crate) fn format(found: &GrepResult) -> String {
    let mut out = String::new();
    for file in &found.files {
        let shown = prefix(&file.path);
        for line in &file.lines {
            match line.kind {
                LineKind::Break => out.push_str("--\n"),
                LineKind::Match => push_line(&mut out, &shown, ':', line.number, &line.text),
                LineKind::Context => push_line(&mut out, &shown, '-', line.number, &line.text),
            }
        }
    }
    out
}

/// Append `path{sep}line{sep}text` and a newline.
fn push_line(out: &mut String, shown: &str, sep: char, line_no: u64, text: &str) {
    out.push_str(shown);
    out.push(sep);
    out.push_str(&line_no.to_string());
    out.push(sep);
    out.push_str(text);
    out.push('\n');
}

/// The path (relative to the work dir) as the `path:line:` prefix shows it: by
/// the shared quoting rule, and quoted also when it holds a `:`, so that the
/// prefix always ends at the first `:` after the path (a file named `a:9:x`
/// cannot pass for line 9 of `a`).
fn prefix(path: &str) -> String {
    if path.contains(':') { quote_name_always(path) } else { quote_name(path).into_owned() }
}

#[cfg(test)]
mod tests {
    use crate::grep::{Args, DEFAULT_MAX, run};

    /// Search `text` (one file `f`) for `re` with `before`/`after` context.
    fn context(text: &str, re: &str, max: usize, before: usize, after: usize) -> (String, u64) {
        let (dir, ctx) = crate::test_work_dir();
        std::fs::write(dir.path().join("f"), text).unwrap();
        let args = Args {
            pattern: re.into(),
            path: "f".into(),
            glob: String::new(),
            max_results: max,
            case_insensitive: false,
            literal: false,
            before,
            after,
            include_ignored: false,
        };
        let out = run(args, &ctx).unwrap();
        let shown: String =
            out.content.lines().filter(|l| !l.starts_with('[')).map(|l| format!("{l}\n")).collect();
        (shown, out.metadata.unwrap()["matches"].as_u64().unwrap())
    }

    #[test]
    fn context_lines_are_marked_and_groups_separated() {
        let text: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let (out, n) = context(&text, "^l(3|10)$", DEFAULT_MAX, 1, 1);
        assert_eq!(n, 2);
        assert_eq!(out, "f-2-l2\nf:3:l3\nf-4-l4\n--\nf-9-l9\nf:10:l10\nf-11-l11\n");
    }

    #[test]
    fn overlapping_contexts_are_merged() {
        let text: String = (1..=8).map(|i| format!("l{i}\n")).collect();
        let (out, _) = context(&text, "^l(3|5)$", DEFAULT_MAX, 2, 2);
        assert_eq!(out, "f-1-l1\nf-2-l2\nf:3:l3\nf-4-l4\nf:5:l5\nf-6-l6\nf-7-l7\n");
        // Adjacent matches: no line twice, no separator.
        let (out, _) = context(&text, "^l[45]$", DEFAULT_MAX, 1, 1);
        assert_eq!(out, "f-3-l3\nf:4:l4\nf:5:l5\nf-6-l6\n");
    }

    #[test]
    fn context_stops_at_the_file_edges() {
        let (out, _) = context("a\nb\nc", "^[ac]$", DEFAULT_MAX, 20, 20);
        assert_eq!(out, "f:1:a\nf-2-b\nf:3:c\n");
        let (out, _) = context("only\n", "only", DEFAULT_MAX, 5, 5);
        assert_eq!(out, "f:1:only\n");
        let (out, _) = context("x\r\nhit\r\ny\r\n", "hit", DEFAULT_MAX, 1, 1);
        assert_eq!(out, "f-1-x\nf:2:hit\nf-3-y\n");
    }

    #[test]
    fn hidden_matches_get_no_context_but_end_the_last_one() {
        let text: String = (1..=6).map(|i| format!("l{i}\n")).collect();
        // Only the first match is shown; its after-context stops before the
        // hidden second match.
        let (out, n) = context(&text, "^l[24]$", 1, 0, 5);
        assert_eq!((out.as_str(), n), ("f:2:l2\nf-3-l3\n", 2));
    }
}
