//! Output shaping: the model's copy of a build, test or install log made by
//! what it is, after the full text is in the store.
//!
//! [`detect`] recognises the format (from the command line when the tool has
//! one, else from the content). Every line is then classed (see `Class`): a
//! line that looks like a failure, error, warning, panic or stack frame is
//! always kept with the lines around it, and so is each test summary; the
//! head and the tail are kept; passing tests, progress and build steps are
//! folded into a counted marker naming `read_output` and the exact window of
//! stored lines (`fold`). When that copy is still over the budget, the
//! other lines outside a failure's context are folded too. Diffs, file
//! contents and `git log`/`status` pass through untouched; search results
//! only have repeated lines collapsed, so a match is never dropped. Unknown
//! formats are not touched.
//!
//! Pure functions over `&str`: the executor calls [`shape`] once per part,
//! after the store put and before the clamp.

mod cc;
mod detect;
mod docker;
mod fold;
mod generic;
mod go;
mod js;
mod line;
#[cfg(test)]
mod props;
mod python;
mod rust;
mod tokens;

use std::borrow::Cow;
use std::sync::LazyLock;

pub use detect::{Kind, detect};
pub use tokens::count_tokens;

use super::Part;

/// Fewest lines an output must have to be shaped: below it there is nothing
/// worth folding.
pub const MIN_LINES: usize = 12;

/// What to shape and where its full text is kept.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The command line that made the output, when the tool has one (a hint).
    pub command: Option<&'a str>,
    /// The call id the full text is kept under (the markers name it).
    pub call_id: &'a str,
    /// The part of the result it is.
    pub part: Part,
    /// Bytes the model's copy should fit in: past it, lines outside a
    /// failure's context are folded too.
    pub budget: usize,
}

/// What shaping made of an output.
#[derive(Debug)]
pub enum Shape {
    /// Not a recognised format: the text is used as it is.
    Unknown,
    /// Recognised, and left as it is (a diff, a file, nothing to fold).
    Untouched(Kind),
    /// The model's copy.
    Shaped(Shaped),
}

/// The model's copy of a recognised output.
#[derive(Debug)]
pub struct Shaped {
    /// The copy: kept lines as a terminal shows them, and fold markers.
    pub text: String,
    /// The format.
    pub kind: Kind,
    /// Stored lines the markers stand for.
    pub folded_lines: usize,
    /// For each line of `text`, the 1-based stored line it shows (a marker:
    /// the first line it stands for).
    pub lines: Vec<usize>,
}

/// How a line is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// A failure, error, warning, panic or stack frame: kept, with context.
    Alarm,
    /// A summary (test counts, totals): kept.
    Summary,
    /// Noise of one sort (the marker names it in the plural: "passing tests").
    Noise(&'static str),
    /// Anything else: kept unless the copy is over its budget.
    Plain,
}

/// Shape `text`, the output of `request.command` when known.
pub fn shape(text: &str, request: &Request<'_>) -> Shape {
    if text.lines().nth(MIN_LINES - 1).is_none() {
        return Shape::Unknown;
    }
    let Some(kind) = detect(request.command, text) else { return Shape::Unknown };
    if kind.is_exact() {
        return Shape::Untouched(kind);
    }
    let raw: Vec<&str> = text.lines().collect();
    let visible: Vec<Cow<'_, str>> = raw.iter().map(|l| line::visible(l)).collect();
    let classes: Vec<Class> = match kind {
        Kind::Search => vec![Class::Alarm; raw.len()],
        _ => visible.iter().map(|l| classify(kind, l)).collect(),
    };
    let window = fold::Window { call_id: request.call_id, part: request.part };
    let lines = fold::Lines { visible: &visible, classes: &classes, end_newline: text.ends_with('\n') };
    let mut folded = fold::fold(&lines, false, &window);
    if folded.text.len() > request.budget && kind != Kind::Search {
        folded = fold::fold(&lines, true, &window);
    }
    if folded.folded == 0 && folded.text == text {
        return Shape::Untouched(kind);
    }
    Shape::Shaped(Shaped { text: folded.text, kind, folded_lines: folded.folded, lines: folded.map })
}

/// The class of the visible line `line` of an output of format `kind`.
pub(crate) fn classify(kind: Kind, line: &str) -> Class {
    if line.trim().is_empty() {
        return Class::Plain;
    }
    if alarm(line) {
        return Class::Alarm;
    }
    let family = match kind {
        Kind::Cargo => rust::classify(line),
        Kind::Pytest | Kind::Unittest | Kind::Pip => python::classify(line),
        Kind::Npm | Kind::Jest | Kind::Vitest | Kind::Tsc => js::classify(line),
        Kind::Go => go::classify(line),
        Kind::Make => cc::classify(line),
        Kind::Docker => docker::classify(line),
        _ => None,
    };
    family.or_else(|| generic::classify(line)).unwrap_or(Class::Plain)
}

/// Words that mark a failure in any format, matched anywhere in a line and in
/// any case: a line holding one is always kept.
static ALARM: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        "(?i)error|fail|panic|fatal|exception|traceback|warn|abort|assert|segmentation fault|core dumped\
         |denied|timed out|undefined reference|unresolved|✕|✗|✘|×",
    )
    .expect("the alarm pattern compiles")
});

/// Whether `line` holds a word that marks a failure.
pub(crate) fn alarm(line: &str) -> bool {
    ALARM.is_match(line)
}
