//! The folding core: which lines of a classed output the model's copy keeps,
//! and the counted markers that stand for the rest, each naming `read_output`
//! with the exact window of stored lines (call id, part, `offset`, `limit`).
//!
//! Kept: the first [`HEAD`] and last [`TAIL`] lines, every [`Class::Alarm`]
//! line with up to [`BEFORE`] lines before it and the lines after it up to a
//! blank line (at most [`AFTER`]), every [`Class::Summary`], and the plain
//! lines unless `deep`. A gap shorter than [`MIN_FOLD`] lines is kept (its
//! marker would cost more than it saves). Runs of at least [`MIN_REPEAT`]
//! identical kept lines show the line once and count the rest.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::Class;
use crate::output::{Part, READ_OUTPUT};

/// Lines kept at the start.
const HEAD: usize = 4;
/// Lines kept at the end (summaries and final errors come last).
const TAIL: usize = 8;
/// Context lines kept before a failure line.
const BEFORE: usize = 2;
/// Most context lines kept after a failure line (a diagnostic's source
/// excerpt, a panic's message), up to the first blank line.
const AFTER: usize = 12;
/// Fewest lines a marker stands for.
const MIN_FOLD: usize = 3;
/// Fewest identical lines in a row that are collapsed.
const MIN_REPEAT: usize = 3;
/// Most lines one `read_output` call returns (its `limit` bound).
const READ_LIMIT: usize = 2000;

/// Where the stored text is, for the markers.
pub(crate) struct Window<'a> {
    pub(crate) call_id: &'a str,
    pub(crate) part: Part,
}

/// The lines of an output as a terminal shows them, with their classes.
pub(crate) struct Lines<'a, 'b> {
    pub(crate) visible: &'a [Cow<'b, str>],
    pub(crate) classes: &'a [Class],
    /// Whether the stored text ends with a newline.
    pub(crate) end_newline: bool,
}

/// The model's copy, the stored lines its markers stand for, and for each of
/// its lines the 1-based stored line it shows.
pub(crate) struct Folded {
    pub(crate) text: String,
    pub(crate) folded: usize,
    pub(crate) map: Vec<usize>,
}

/// Which lines of `lines` to keep (`deep`: plain lines too are folded unless
/// they are context).
fn plan(lines: &Lines<'_, '_>, deep: bool) -> Vec<bool> {
    let n = lines.classes.len();
    let mut keep = vec![false; n];
    let noise = |i: usize| matches!(lines.classes[i], Class::Noise(_));
    let blank = |i: usize| lines.visible[i].trim().is_empty();
    for (i, class) in lines.classes.iter().enumerate() {
        if i < HEAD || i + TAIL >= n {
            keep[i] = true;
        }
        match class {
            Class::Alarm => {
                keep[i] = true;
                for j in (i.saturating_sub(BEFORE)..i).rev() {
                    if noise(j) {
                        break;
                    }
                    keep[j] = true;
                }
                let end = (i + 1 + AFTER).min(n);
                let stop = (i + 1..end).find(|&j| noise(j) || blank(j)).unwrap_or(end);
                keep[i + 1..stop].fill(true);
            }
            Class::Summary => keep[i] = true,
            Class::Plain if !deep => keep[i] = true,
            _ => {}
        }
    }
    let mut i = 0;
    while i < n {
        let start = i;
        while i < n && !keep[i] {
            i += 1;
        }
        if i - start < MIN_FOLD {
            keep[start..i].fill(true);
        }
        i += 1;
    }
    keep
}

/// Fold `lines` into the model's copy.
pub(crate) fn fold(lines: &Lines<'_, '_>, deep: bool, window: &Window<'_>) -> Folded {
    let keep = plan(lines, deep);
    let n = keep.len();
    let mut out = Folded { text: String::new(), folded: 0, map: Vec::new() };
    let mut i = 0;
    while i < n {
        if keep[i] {
            let line = &lines.visible[i];
            let mut same = i + 1;
            while same < n && keep[same] && lines.visible[same] == *line {
                same += 1;
            }
            out.text.push_str(line);
            out.text.push('\n');
            out.map.push(i + 1);
            if same - i >= MIN_REPEAT && !line.trim().is_empty() {
                let what = format!("the line above repeats {} more times", same - i - 1);
                marker(&mut out, &what, i + 2, same - i - 1, window);
                i = same;
            } else {
                i += 1;
            }
            continue;
        }
        let start = i;
        while i < n && !keep[i] {
            i += 1;
        }
        let what = format!("{} folded", label(i - start, &lines.classes[start..i]));
        marker(&mut out, &what, start + 1, i - start, window);
    }
    if !lines.end_newline && keep.last() == Some(&true) {
        out.text.pop();
    }
    out
}

/// What a folded run of `n` lines with these classes is: its noise's plural
/// noun when it is all one sort, else the sorts it holds.
fn label(n: usize, classes: &[Class]) -> String {
    let mut sorts: Vec<&str> = Vec::new();
    for class in classes {
        match class {
            Class::Noise(sort) if !sorts.contains(sort) => sorts.push(sort),
            Class::Noise(_) => {}
            _ => return format!("{n} lines"),
        }
    }
    match sorts.as_slice() {
        [one] => format!("{n} {one}"),
        _ => format!("{n} lines ({})", sorts.join(", ")),
    }
}

/// Append the marker for `count` stored lines from line `first`, described by `what`.
fn marker(out: &mut Folded, what: &str, first: usize, count: usize, window: &Window<'_>) {
    let part = match window.part {
        Part::Content => String::new(),
        other => format!(", \"part\": \"{}\"", other.as_str()),
    };
    let id = serde_json::to_string(window.call_id).unwrap_or_default();
    let _ = writeln!(
        out.text,
        "[... {what} (lines {first}-{last}); call {READ_OUTPUT} with {{\"call_id\": {id}{part}, \"offset\": \
         {first}, \"limit\": {limit}}} to see them ...]",
        last = first + count - 1,
        limit = count.min(READ_LIMIT),
    );
    out.folded += count;
    out.map.push(first);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(classes: &[Class], deep: bool) -> Folded {
        let visible: Vec<Cow<'_, str>> = (0..classes.len()).map(|i| Cow::Owned(format!("l{i}"))).collect();
        let lines = Lines { visible: &visible, classes, end_newline: true };
        fold(&lines, deep, &Window { call_id: "c1", part: Part::Error })
    }

    #[test]
    fn noise_is_folded_with_an_exact_window_and_failures_kept_with_context() {
        let mut classes = vec![Class::Noise("passing tests"); 40];
        classes[20] = Class::Alarm;
        classes[21] = Class::Plain;
        let out = run(&classes, false);
        assert!(
            out.text.starts_with("l0\nl1\nl2\nl3\n[... 16 passing tests folded (lines 5-20); "),
            "{}",
            out.text
        );
        assert!(out.text.contains(
            r#"call read_output with {"call_id": "c1", "part": "error", "offset": 5, "limit": 16}"#
        ));
        assert!(out.text.contains("\nl20\nl21\n[... 10 passing tests folded (lines 23-32)"), "{}", out.text);
        assert!(out.text.ends_with("l39\n"));
        assert_eq!(out.folded, 26);
        assert_eq!(out.text.lines().count(), out.map.len());
        assert_eq!(out.map[..6], [1, 2, 3, 4, 5, 21]);
    }

    #[test]
    fn plain_lines_fold_only_when_deep_and_short_gaps_stay() {
        let mut classes = vec![Class::Plain; 30];
        classes[15] = Class::Alarm;
        assert_eq!(run(&classes, false).folded, 0);
        let deep = run(&classes, true);
        // 4 head, 2 before + the alarm + 12 after, 8 tail: gaps 4..13 and 28.. are covered.
        assert_eq!(deep.folded, 9, "{}", deep.text);
        let mut two = vec![Class::Noise("x"); 14];
        two[6] = Class::Summary;
        assert_eq!(run(&two, false).folded, 0, "gaps of 2 and 0 are not worth a marker");
    }

    #[test]
    fn repeated_lines_are_counted() {
        let visible: Vec<Cow<'_, str>> =
            ["a", "dup", "dup", "dup", "dup", "b"].iter().map(|s| Cow::Borrowed(*s)).collect();
        let classes = vec![Class::Plain; 6];
        let lines = Lines { visible: &visible, classes: &classes, end_newline: false };
        let out = fold(&lines, false, &Window { call_id: "c", part: Part::Content });
        assert!(
            out.text.starts_with("a\ndup\n[... the line above repeats 3 more times (lines 3-5); "),
            "{}",
            out.text
        );
        assert!(out.text.contains(r#"{"call_id": "c", "offset": 3, "limit": 3}"#));
        assert!(out.text.ends_with("\nb"));
    }
}
