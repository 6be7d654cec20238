//! The search of one file for `grep_files`: the file read whole into one
//! reused buffer, the regex run over the whole buffer, line numbers counted
//! only for matches (newlines from the previous match). Non-matching lines
//! are visited only when they are context lines of a shown match.
//!
//! Match lines print as `path:line:text`, context lines as `path-line-text`,
//! and `--` separates groups that are not contiguous; overlapping contexts
//! are merged, so no line is printed twice.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use regex::bytes::Regex;
use toolhost_guest::{Context, quote_name, quote_name_always};

/// Files larger than this are skipped.
pub const MAX_FILE: u64 = 1024 * 1024;
/// A NUL byte in this many leading bytes marks a file as binary.
const BINARY_PROBE: usize = 1024;
/// Lines longer than this (bytes) are cut around the match.
const MAX_LINE: usize = 300;

/// The state of one search across files.
pub(crate) struct Search<'a> {
    ctx: &'a Context,
    re: Regex,
    pub(crate) max: usize,
    /// Context lines before and after each shown match.
    before: usize,
    after: usize,
    buf: Vec<u8>,
    pub(crate) out: String,
    pub(crate) matches: usize,
    /// Groups printed (a match with its context; merged when they touch).
    groups: usize,
    pub(crate) context_lines: usize,
    pub(crate) files_searched: usize,
    pub(crate) files_matched: usize,
    pub(crate) binary: usize,
    pub(crate) large: usize,
    pub(crate) unreadable: usize,
}

/// Where printing stands in the current file.
struct Printed {
    /// The start of the first line not printed yet.
    next: usize,
    /// Its line number.
    next_no: usize,
    /// After-context lines still owed to the last shown match.
    after_left: usize,
    /// Whether any line of this file was printed.
    started: bool,
}

impl<'a> Search<'a> {
    pub(crate) fn new(ctx: &'a Context, re: Regex, max: usize, before: usize, after: usize) -> Self {
        Self {
            ctx,
            re,
            max,
            before,
            after,
            buf: Vec::new(),
            out: String::new(),
            matches: 0,
            groups: 0,
            context_lines: 0,
            files_searched: 0,
            files_matched: 0,
            binary: 0,
            large: 0,
            unreadable: 0,
        }
    }

    /// Search one file, counting it as skipped when it is binary, too large
    /// or unreadable.
    pub(crate) fn file(&mut self, path: &Path) {
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

    /// Find the matching lines of the file in `self.buf`, with their
    /// context while matches are still shown.
    fn scan(&mut self, path: &Path) {
        let mut shown_path: Option<String> = None;
        let mut printed = Printed { next: 0, next_no: 1, after_left: 0, started: false };
        // `pos` is always the start of a line; `counted` is the start of
        // the line numbered `line_no`.
        let (mut pos, mut counted, mut line_no) = (0usize, 0usize, 1usize);
        while pos <= self.buf.len() {
            let buf = &self.buf;
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
            if printed.after_left > 0 {
                let shown = shown_path.get_or_insert_with(|| prefix(self.ctx, path));
                self.flush_after(shown, &mut printed, line_start);
            }
            if self.matches <= self.max {
                let shown = shown_path.get_or_insert_with(|| prefix(self.ctx, path));
                self.group(shown, &mut printed, (line_start, line_end, line_no), start - line_start);
            }
            pos = line_end + 1;
        }
        if printed.after_left > 0
            && let Some(shown) = &shown_path
        {
            self.flush_after(shown, &mut printed, self.buf.len());
        }
    }

    /// Print a shown match (the line `line` = start, end, number; the match
    /// at `at` in it) with its before-context, and owe its after-context.
    fn group(&mut self, shown: &str, printed: &mut Printed, line: (usize, usize, usize), at: usize) {
        let (line_start, line_end, line_no) = line;
        let buf = &self.buf;
        // Walk back over at most `before` lines not printed yet.
        let (mut from, mut k) = (line_start, 0);
        while k < self.before && from > printed.next {
            from = buf[..from - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            k += 1;
        }
        let contiguous = printed.started && from == printed.next;
        if self.before + self.after > 0 && self.groups > 0 && !contiguous {
            self.out.push_str("--\n");
        }
        if !contiguous {
            self.groups += 1;
        }
        let mut at_line = from;
        for n in line_no - k..line_no {
            let end = buf[at_line..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| at_line + i);
            push_line(&mut self.out, shown, '-', n, &snippet(&buf[at_line..end], 0));
            self.context_lines += 1;
            at_line = end + 1;
        }
        push_line(&mut self.out, shown, ':', line_no, &snippet(&buf[line_start..line_end], at));
        *printed =
            Printed { next: line_end + 1, next_no: line_no + 1, after_left: self.after, started: true };
    }

    /// Print the after-context still owed, up to the line starting at
    /// `limit` (the next match, or the end of the file).
    fn flush_after(&mut self, shown: &str, printed: &mut Printed, limit: usize) {
        let buf = &self.buf;
        while printed.after_left > 0 && printed.next < limit.min(buf.len()) {
            let at = printed.next;
            let end = buf[at..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| at + i);
            push_line(&mut self.out, shown, '-', printed.next_no, &snippet(&buf[at..end], 0));
            self.context_lines += 1;
            printed.next = end + 1;
            printed.next_no += 1;
            printed.after_left -= 1;
        }
        printed.after_left = 0;
    }
}

/// Append `path{sep}line{sep}text` and a newline.
fn push_line(out: &mut String, shown: &str, sep: char, line_no: usize, text: &str) {
    out.push_str(shown);
    out.push(sep);
    out.push_str(&line_no.to_string());
    out.push(sep);
    out.push_str(text);
    out.push('\n');
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

    /// Search `text` (one file `f`) for `re` with `before`/`after` context.
    fn context(text: &str, re: &str, max: usize, before: usize, after: usize) -> (String, usize) {
        let (dir, ctx) = crate::test_work_dir();
        std::fs::write(dir.path().join("f"), text).unwrap();
        let re = regex::bytes::RegexBuilder::new(re).multi_line(true).crlf(true).build().unwrap();
        let mut search = Search::new(&ctx, re, max, before, after);
        search.file(&dir.path().join("f"));
        (search.out, search.matches)
    }

    #[test]
    fn context_lines_are_marked_and_groups_separated() {
        let text: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let (out, n) = context(&text, "^l(3|10)$", 100, 1, 1);
        assert_eq!(n, 2);
        assert_eq!(out, "f-2-l2\nf:3:l3\nf-4-l4\n--\nf-9-l9\nf:10:l10\nf-11-l11\n");
    }

    #[test]
    fn overlapping_contexts_are_merged() {
        let text: String = (1..=8).map(|i| format!("l{i}\n")).collect();
        let (out, _) = context(&text, "^l(3|5)$", 100, 2, 2);
        assert_eq!(out, "f-1-l1\nf-2-l2\nf:3:l3\nf-4-l4\nf:5:l5\nf-6-l6\nf-7-l7\n");
        // Adjacent matches: no line twice, no separator.
        let (out, _) = context(&text, "^l[45]$", 100, 1, 1);
        assert_eq!(out, "f-3-l3\nf:4:l4\nf:5:l5\nf-6-l6\n");
    }

    #[test]
    fn context_stops_at_the_file_edges() {
        let (out, _) = context("a\nb\nc", "^[ac]$", 100, 20, 20);
        assert_eq!(out, "f:1:a\nf-2-b\nf:3:c\n");
        let (out, _) = context("only\n", "only", 100, 5, 5);
        assert_eq!(out, "f:1:only\n");
        let (out, _) = context("x\r\nhit\r\ny\r\n", "hit", 100, 1, 1);
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

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        assert_eq!(snippet("é".repeat(400).as_bytes(), 0).chars().filter(|&c| c == '\u{fffd}').count(), 0);
    }
}
