//! What the cascade returns: the edit that landed, or why none did.

use std::fmt;

use toolhost_guest::codes;

use super::budget::GaveUp;

/// The matchers, in the order the cascade tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Matcher {
    /// `old_string` as given (with the file's line endings).
    Exact,
    /// Every line the same once trimmed.
    LineTrimmed,
    /// 3+ lines: first and last lines the same, the middle similar.
    BlockAnchor,
    /// Every line the same with whitespace runs as one space.
    WhitespaceNormalized,
    /// The same lines and relative indentation under another common indentation.
    IndentationFlexible,
    /// `\n`, `\t`, `\"` written literally, unescaped.
    EscapeNormalized,
    /// `old_string` without its leading and trailing whitespace.
    TrimmedBoundary,
    /// 3+ lines: one anchor and at least half of the lines the same.
    ContextAware,
}

impl Matcher {
    /// Every matcher, in cascade order.
    pub const CASCADE: [Self; 8] = [
        Self::Exact,
        Self::LineTrimmed,
        Self::BlockAnchor,
        Self::WhitespaceNormalized,
        Self::IndentationFlexible,
        Self::EscapeNormalized,
        Self::TrimmedBoundary,
        Self::ContextAware,
    ];

    /// The name in `metadata.matcher`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::LineTrimmed => "line_trimmed",
            Self::BlockAnchor => "block_anchor",
            Self::WhitespaceNormalized => "whitespace_normalized",
            Self::IndentationFlexible => "indentation_flexible",
            Self::EscapeNormalized => "escape_normalized",
            Self::TrimmedBoundary => "trimmed_boundary",
            Self::ContextAware => "context_aware",
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An edit that landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The matcher that found the text replaced.
    pub matcher: Matcher,
    /// The whole new text.
    pub text: String,
    /// How many places were replaced (more than one only with `replace_all`).
    pub replacements: usize,
    /// The lines of the old text replaced, 1-based, inclusive (from the first
    /// replacement's to the last's).
    pub lines: (usize, usize),
    /// How `new_string` was re-indented to the file's, if it was (`+2 spaces`).
    pub reindented: Option<String>,
}

/// Why no edit landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No matcher found `old_string`.
    NotFound {
        /// The tolerant matchers were skipped or stopped, and why.
        gave_up: Option<GaveUp>,
        /// `replace_all` was asked, which only matches exactly.
        replace_all: bool,
    },
    /// A matcher found several places and none settled it.
    NotUnique {
        /// The first matcher that found several.
        matcher: Matcher,
        /// How many places.
        count: usize,
        /// The first line of some of them, 1-based.
        lines: Vec<usize>,
    },
}

impl Refusal {
    /// The error code for the model.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => codes::OLD_STRING_NOT_FOUND,
            Self::NotUnique { .. } => codes::OLD_STRING_NOT_UNIQUE,
        }
    }

    /// The message for the model, naming the file as `shown`.
    pub fn message(&self, shown: &str) -> String {
        match self {
            Self::NotFound { gave_up: Some(why), .. } => format!(
                "old_string was not found exactly in {shown}, and the tolerant matching was skipped: {why}. \
                 Copy old_string exactly from read_file output, or give a shorter one"
            ),
            Self::NotFound { replace_all: true, .. } => format!(
                "old_string was not found in {shown}; replace_all matches exactly only, whitespace and \
                 indentation included (read the file again to copy the current text)"
            ),
            Self::NotFound { .. } => format!(
                "old_string was not found in {shown}; not even ignoring indentation, whitespace or escapes \
                 (read the file again to copy the current text)"
            ),
            Self::NotUnique { matcher: Matcher::Exact, count, .. } => format!(
                "old_string occurs {count} times in {shown}; include more surrounding lines to make it \
                 unique, or set replace_all=true to replace all {count}"
            ),
            Self::NotUnique { matcher, count, lines } => {
                let at: Vec<String> = lines.iter().map(usize::to_string).collect();
                format!(
                    "old_string was not found exactly in {shown}, and matching it {} fits {count} places \
                     equally well (starting at lines {}); nothing was changed: include more surrounding \
                     lines, copied exactly, to make it unique",
                    how(*matcher),
                    at.join(", ")
                )
            }
        }
    }
}

/// How a fuzzy matcher matched, for a message.
fn how(matcher: Matcher) -> &'static str {
    match matcher {
        Matcher::Exact => "exactly",
        Matcher::LineTrimmed => "line by line ignoring indentation",
        Matcher::BlockAnchor => "by its first and last lines",
        Matcher::WhitespaceNormalized => "ignoring whitespace",
        Matcher::IndentationFlexible => "under another indentation",
        Matcher::EscapeNormalized => "with its escapes unescaped",
        Matcher::TrimmedBoundary => "without its surrounding whitespace",
        Matcher::ContextAware => "by its surrounding lines",
    }
}
