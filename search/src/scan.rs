//! The search of one file held whole in a buffer: the regex run over the
//! buffer, line numbers counted only for matches (newlines from the previous
//! match), non-matching lines visited only as context lines of a shown match.
//!
//! Each line found is tagged with the match it belongs to (a before-context
//! line, `--`, the match itself and its after-context carry that match's
//! number), so that the file's output when only its first `k` matches are
//! shown is exactly its lines tagged `k` or less: a hidden match still ends
//! the after-context of the one before it, and gets no context itself.
//! Overlapping contexts are merged, so no line is listed twice.

use regex::bytes::Regex;

use crate::{Line, LineKind, MAX_LINE};

/// The lines found in one file.
#[derive(Debug, Default)]
pub(crate) struct FileScan {
    /// Matching lines in all.
    pub matches: u64,
    /// The lines of its first `max` matches with their context, each with the
    /// number of the match it belongs to.
    pub lines: Vec<(u64, Line)>,
}

/// Where listing stands in the file.
struct Listed {
    /// The start of the first line not listed yet.
    next: usize,
    /// Its line number.
    next_no: u64,
    /// After-context lines still owed to the last shown match.
    after_left: usize,
    /// Whether any line was listed.
    started: bool,
}

/// Scan `buf` for `re`: its lines, for its first `max` matches with `before`
/// and `after` lines of context.
pub(crate) fn scan(buf: &[u8], re: &Regex, max: u64, before: usize, after: usize) -> FileScan {
    let mut out = FileScan::default();
    let mut listed = Listed { next: 0, next_no: 1, after_left: 0, started: false };
    // `pos` is always the start of a line; `counted` the start of line `line_no`.
    let (mut pos, mut counted, mut line_no) = (0usize, 0usize, 1u64);
    while pos <= buf.len() {
        let Some(m) = re.find_at(buf, pos) else { break };
        let start = m.start();
        if start == buf.len() && (buf.is_empty() || buf.ends_with(b"\n")) {
            // An empty match after the final newline is not a line.
            break;
        }
        let line_start = buf[pos..start].iter().rposition(|&b| b == b'\n').map_or(pos, |i| pos + i + 1);
        let line_end = buf[start..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| start + i);
        line_no += memchr_count(&buf[counted..line_start]);
        counted = line_start;
        if listed.after_left > 0 {
            flush_after(buf, &mut out, &mut listed, line_start);
        }
        out.matches += 1;
        if out.matches <= max {
            group(
                buf,
                &mut out,
                &mut listed,
                (line_start, line_end, line_no),
                (start - line_start, before, after),
            );
        }
        pos = line_end + 1;
    }
    if listed.after_left > 0 {
        flush_after(buf, &mut out, &mut listed, buf.len());
    }
    out
}

fn memchr_count(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// List a shown match (`line`: start, end, number; `at`: the match's offset in
/// it) with its before-context, and owe its after-context.
fn group(
    buf: &[u8],
    out: &mut FileScan,
    listed: &mut Listed,
    line: (usize, usize, u64),
    (at, before, after): (usize, usize, usize),
) {
    let (line_start, line_end, line_no) = line;
    let tag = out.matches;
    // Walk back over at most `before` lines not listed yet.
    let (mut from, mut k) = (line_start, 0u64);
    while k < before as u64 && from > listed.next {
        from = buf[..from - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        k += 1;
    }
    let contiguous = listed.started && from == listed.next;
    if before + after > 0 && listed.started && !contiguous {
        out.lines.push((tag, Line { number: 0, kind: LineKind::Break, text: "--".into() }));
    }
    let mut at_line = from;
    for n in line_no - k..line_no {
        let end = buf[at_line..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| at_line + i);
        out.lines.push((tag, line_of(n, LineKind::Context, &buf[at_line..end], 0)));
        at_line = end + 1;
    }
    out.lines.push((tag, line_of(line_no, LineKind::Match, &buf[line_start..line_end], at)));
    *listed = Listed { next: line_end + 1, next_no: line_no + 1, after_left: after, started: true };
}

/// List the after-context still owed, up to the line starting at `limit`
/// (the next match, or the end of the file).
fn flush_after(buf: &[u8], out: &mut FileScan, listed: &mut Listed, limit: usize) {
    let tag = out.matches;
    while listed.after_left > 0 && listed.next < limit.min(buf.len()) {
        let at = listed.next;
        let end = buf[at..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| at + i);
        out.lines.push((tag, line_of(listed.next_no, LineKind::Context, &buf[at..end], 0)));
        listed.next = end + 1;
        listed.next_no += 1;
        listed.after_left -= 1;
    }
    listed.after_left = 0;
}

fn line_of(number: u64, kind: LineKind, text: &[u8], at: usize) -> Line {
    Line { number, kind, text: snippet(text, at) }
}

/// The line as text for the model: without its `\r`, cut to about
/// [`MAX_LINE`] bytes around the match (at `at`), `…` marking the cuts.
pub(crate) fn snippet(line: &[u8], at: usize) -> String {
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

    fn lines(text: &str, re: &str, max: u64, before: usize, after: usize) -> Vec<(u64, String)> {
        let re = crate::build_regex(re, false, false).unwrap();
        let scan = scan(text.as_bytes(), &re, max, before, after);
        scan.lines.into_iter().map(|(tag, l)| (tag, format!("{}{:?}", l.number, l.kind))).collect()
    }

    #[test]
    fn lines_carry_the_match_they_belong_to() {
        let text: String = (1..=8).map(|i| format!("l{i}\n")).collect();
        let got = lines(&text, "^l(2|6)$", 10, 1, 1);
        let want = [
            (1, "1Context"),
            (1, "2Match"),
            (1, "3Context"),
            (2, "0Break"),
            (2, "5Context"),
            (2, "6Match"),
            (2, "7Context"),
        ];
        assert_eq!(got, want.map(|(t, s)| (t, s.to_string())));
        // A hidden match ends the after-context before it and gets none itself.
        let got = lines(&text, "^l[24]$", 1, 0, 5);
        assert_eq!(got, [(1, "2Match".to_string()), (1, "3Context".to_string())]);
    }

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        assert_eq!(snippet("é".repeat(400).as_bytes(), 0).chars().filter(|&c| c == '\u{fffd}').count(), 0);
        let long = format!("{}needle{}", "a".repeat(1000), "b".repeat(1000));
        let cut = snippet(long.as_bytes(), 1000);
        assert!(cut.starts_with('…') && cut.ends_with('…') && cut.contains("needle"), "{cut}");
    }
}
