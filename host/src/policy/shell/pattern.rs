//! A rule's `command=` pattern: shell words, each a glob over one word of a
//! simple command, the last one optionally followed by "any further words".

use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use globset::{GlobBuilder, GlobMatcher};

use super::Hazard;
use super::words::{Word, options};
use crate::policy::derive::{Lang, literal};

/// A pattern such as `git status*` or `cargo test -p *`.
#[derive(Debug, Clone)]
pub(crate) struct CommandPattern {
    words: Vec<WordMatch>,
    rest: bool,
}

#[derive(Debug, Clone)]
enum WordMatch {
    Exact(String),
    Glob(GlobMatcher),
}

impl WordMatch {
    fn is_match(&self, text: &str) -> bool {
        match self {
            WordMatch::Exact(exact) => exact == text,
            WordMatch::Glob(glob) => glob.is_match(text),
        }
    }
}

impl CommandPattern {
    /// Parse `text` as one simple command of words (see the module docs of
    /// [`crate::policy::rules`] for what they mean), saying what is wrong when it can't.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let line = super::parse(text);
        if let Some(hazard) = line.hazards().first() {
            return Err(match hazard {
                Hazard::Unparsed => {
                    "it does not parse as shell words (quote what the shell would read as syntax)".into()
                }
                _ => format!("a command pattern is plain words, but {}", hazard.describe()),
            });
        }
        let [command] = line.commands.as_slice() else {
            return Err(
                "a command pattern matches one simple command: write one rule for each command".into()
            );
        };
        if !command.redirects.is_empty() || !line.is_one_pipeline() {
            return Err(
                "a command pattern matches one simple command, without operators or redirections".into()
            );
        }
        let raw = raw_words(text);
        let mut words = Vec::new();
        let mut rest = false;
        let count = command.written().count();
        for (i, word) in command.written().enumerate() {
            if word.expands {
                return Err(format!("`{}`: quote `$` and `~` to match them as text", word.text));
            }
            let (mut glob, star) = match raw.get(i) {
                Some(raw) => glob_text(raw),
                None => (literal(&word.text, Lang::Glob), false),
            };
            if i + 1 == count && star {
                glob.pop();
                rest = true;
                // `*` alone: any further words, this one included.
                if raw.get(i).is_some_and(|r| r == "*") {
                    break;
                }
            }
            words.push(word_match(&glob)?);
        }
        Ok(Self { words, rest })
    }

    /// Whether a simple command's words, as an allow rule sees them, match: each
    /// pattern word matches the literal word in its place; then nothing is left, or
    /// the pattern ends in `*`. A word the shell expands matches no pattern word
    /// (only the trailing `*` takes it).
    pub(crate) fn matches_literally<'a>(&self, words: impl IntoIterator<Item = &'a Word>) -> bool {
        self.matches(words.into_iter().map(|w| w.is_literal().then_some(w.text.as_str())))
    }

    /// The same for a deny form: words are matched by their text, literal or not.
    pub(crate) fn matches_text<'a>(&self, words: impl IntoIterator<Item = &'a str>) -> bool {
        self.matches(words.into_iter().map(Some))
    }

    /// `None` stands for a word no pattern word matches.
    fn matches<'a>(&self, words: impl IntoIterator<Item = Option<&'a str>>) -> bool {
        let mut words = words.into_iter();
        for pattern in &self.words {
            match words.next() {
                Some(Some(text)) if pattern.is_match(text) => {}
                _ => return false,
            }
        }
        self.rest || words.next().is_none()
    }
}

/// The raw text of each word of a one-command pattern, as the tokenizer cut it
/// (quotes included; its positions count characters, not bytes, so the text is
/// the token's own).
fn raw_words(text: &str) -> Vec<String> {
    let tokens = super::parse::deep(text, || brush_parser::tokenize_str(text)).unwrap_or_default();
    tokens
        .into_iter()
        .filter_map(|token| match token {
            brush_parser::Token::Word(raw, _) => Some(raw),
            _ => None,
        })
        .collect()
}

/// A raw pattern word as a glob: unquoted text keeps its glob syntax, quoted and
/// escaped text is literal. Also whether it ends in an unquoted `*`.
fn glob_text(raw: &str) -> (String, bool) {
    let mut glob = String::new();
    let mut star = false;
    if let Ok(pieces) = word::parse(raw, &options()) {
        push_pieces(&pieces, false, &mut glob);
        star = matches!(pieces.last(), Some(p) if matches!(&p.piece, WordPiece::Text(t) if t.ends_with('*')));
    }
    (glob, star)
}

fn push_pieces(pieces: &[WordPieceWithSource], quoted: bool, glob: &mut String) {
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(text) if !quoted => glob.push_str(text),
            WordPiece::Text(text) | WordPiece::SingleQuotedText(text) => {
                glob.push_str(&literal(text, Lang::Glob))
            }
            WordPiece::EscapeSequence(escaped) => {
                // `\x` is `x`; an unquoted backslash-newline joins lines, as in a command.
                let char = escaped.get(1..).unwrap_or_default();
                if quoted || char != "\n" {
                    glob.push_str(&literal(char, Lang::Glob));
                }
            }
            WordPiece::DoubleQuotedSequence(inner) => push_pieces(inner, true, glob),
            // Expansions were refused before.
            _ => {}
        }
    }
}

fn word_match(glob: &str) -> Result<WordMatch, String> {
    if let Some(exact) = unescaped(glob) {
        return Ok(WordMatch::Exact(exact));
    }
    let matcher = GlobBuilder::new(glob)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("`{glob}`: {e}"))?
        .compile_matcher();
    Ok(WordMatch::Glob(matcher))
}

/// The text a glob matches when it is literal (no wildcard, class or alternative;
/// escapes taken as the characters they escape); `None` for a glob with syntax.
fn unescaped(glob: &str) -> Option<String> {
    let mut out = String::with_capacity(glob.len());
    let mut chars = glob.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '*' | '?' | '[' | '{' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}
