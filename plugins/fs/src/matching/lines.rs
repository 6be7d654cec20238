//! The file as lines, `old_string` as lines, and a block of file lines turned
//! into the bytes it replaces and what replaces them.

use std::ops::Range;

use super::Landing;
use super::indent;

/// The lines of the file: each one's bytes, without its `\n` or `\r\n`.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    text: &'a str,
    spans: Vec<Range<usize>>,
    /// Whether the file's line endings are mostly `\r\n`.
    pub(crate) crlf: bool,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut spans = Vec::with_capacity(text.len() / 32 + 1);
        let mut start = 0;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                let end = if i > start && text.as_bytes()[i - 1] == b'\r' { i - 1 } else { i };
                spans.push(start..end);
                start = i + 1;
            }
        }
        if start < text.len() {
            spans.push(start..text.len());
        }
        Self { text, spans, crlf: uses_crlf(text) }
    }

    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The whole text.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// Line `i` (0-based), without its line ending.
    pub(crate) fn get(&self, i: usize) -> &'a str {
        &self.text[self.spans[i].clone()]
    }

    /// Where line `i` starts.
    pub(crate) fn start(&self, i: usize) -> usize {
        self.spans[i].start
    }

    /// Where line `i` ends: before its line ending, or after it.
    pub(crate) fn end(&self, i: usize, with_ending: bool) -> usize {
        let end = self.spans[i].end;
        if !with_ending {
            return end;
        }
        match self.text.as_bytes().get(end) {
            Some(b'\r') => end + 2,
            Some(b'\n') => end + 1,
            _ => end,
        }
    }
}

/// `old_string` split in lines (`\r` dropped), without the empty last piece a
/// trailing line ending leaves.
#[derive(Debug)]
pub(crate) struct OldLines<'a> {
    pub(crate) lines: Vec<&'a str>,
    /// `old_string` ended with a line ending: the block takes the file's too.
    pub(crate) trailing_newline: bool,
}

impl<'a> OldLines<'a> {
    pub(crate) fn new(old: &'a str) -> Self {
        let mut lines: Vec<&str> = old.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        let trailing_newline = old.ends_with('\n') && lines.len() > 1;
        if trailing_newline {
            lines.pop();
        }
        Self { lines, trailing_newline }
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when some line has something besides whitespace.
    pub(crate) fn has_text(&self) -> bool {
        self.lines.iter().any(|l| !l.trim().is_empty())
    }
}

/// File lines `first..=last` replaced by `new`: `new` shifted by the constant
/// indentation offset between `old`'s lines and the block's (when there is
/// one), and written with the file's line endings.
pub(crate) fn block_landing(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    new: &str,
    first: usize,
    last: usize,
) -> Landing {
    let block_len = last - first + 1;
    // Corresponding lines: all of them when the block has old's length, else
    // the first and the last (the anchors).
    let pairs: Vec<(&str, &str)> = if block_len == old.len() {
        (0..block_len).map(|k| (old.lines[k], lines.get(first + k))).collect()
    } else {
        vec![(old.lines[0], lines.get(first)), (old.lines[old.len() - 1], lines.get(last))]
    };
    let shift = indent::detect(pairs.iter().copied());
    let start = lines.start(first);
    let end = lines.end(last, old.trailing_newline);
    let mut replacement = new.replace("\r\n", "\n");
    if old.trailing_newline && end == lines.end(last, false) {
        // The block is the file's last line and has no line ending to take.
        if replacement.ends_with('\n') {
            replacement.pop();
        }
    }
    if let Some(shift) = &shift {
        replacement = shift.apply(&replacement);
    }
    if lines.crlf {
        replacement = replacement.replace('\n', "\r\n");
    }
    Landing { span: start..end, replacement, reindented: shift.map(|s| s.describe()) }
}

/// The 0-based line that byte `offset` of `text` is on.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count()
}

/// True when most line endings of `text` are `\r\n`.
pub(crate) fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    let lf = text.bytes().filter(|&b| b == b'\n').count();
    crlf > 0 && crlf * 2 >= lf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_offsets() {
        let l = Lines::new("a\r\nbb\n\nc");
        assert_eq!((l.len(), l.get(0), l.get(1), l.get(2), l.get(3)), (4, "a", "bb", "", "c"));
        assert_eq!((l.end(0, true), l.end(1, true), l.end(3, true)), (3, 6, 8));
        assert_eq!((line_of("a\r\nbb\n", 0), line_of("a\r\nbb\n", 4), line_of("a\r\nbb\n", 2)), (0, 1, 0));
        let o = OldLines::new("x\r\ny\n");
        assert_eq!((o.lines.as_slice(), o.trailing_newline), (&["x", "y"][..], true));
        assert!(!OldLines::new("  \n\t").has_text());
    }

    #[test]
    fn line_ending_detection() {
        assert!(uses_crlf("a\r\nb\r\n"));
        assert!(!uses_crlf("a\nb\n"));
        assert!(!uses_crlf("a\r\nb\nc\nd\n"));
    }
}
