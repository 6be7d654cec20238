//! One shell word as the program receives it: the parser's pieces with quoting
//! removed, and whether the shell would still change it (a parameter, a tilde, a
//! substitution, a glob). Code hidden inside a word — `$(…)`, backticks, also within
//! double quotes, `${X:-…}` defaults, array indexes and arithmetic — is collected
//! as text for the caller to parse as a command line of its own.

use brush_parser::ParserOptions;
use brush_parser::word::{self, Parameter, ParameterExpr, WordPiece, WordPieceWithSource};

/// A word of a simple command, quoting removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The text the program gets when [`Word::is_literal`]; otherwise the quoting is
    /// removed and each expansion kept as written (`git$IFS` stays `git$IFS`).
    pub text: String,
    /// The shell expands it: a parameter, a tilde, a substitution, arithmetic, or
    /// quoting whose result depends on more than the text (`$'…'`, `$"…"`).
    pub expands: bool,
    /// Unquoted glob or brace characters (`*`, `?`, `[`, `{`): the shell may replace
    /// it by file names, or by several words.
    pub glob: bool,
}

impl Word {
    /// Whether the text is exactly one argument, unchanged by the shell.
    pub fn is_literal(&self) -> bool {
        !self.expands && !self.glob
    }
}

/// What scanning words found beyond the words themselves.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Command lines inside substitutions, to be parsed in turn.
    pub(super) scripts: Vec<String>,
    /// A `$(…)` or backtick substitution.
    pub(super) substitution: bool,
    /// A `<(…)` or `>(…)` process substitution.
    pub(super) process_substitution: bool,
    /// Something that did not parse.
    pub(super) unparsed: bool,
}

/// The options the line is parsed with: bash as `bash -c` runs it (no extglob).
pub(super) fn options() -> ParserOptions {
    ParserOptions { enable_extended_globbing: false, ..ParserOptions::default() }
}

/// The word `raw` (as the tokenizer cut it, quotes included).
pub(super) fn scan(raw: &str, found: &mut Found) -> Word {
    let mut out = Word::default();
    match word::parse(raw, &options()) {
        Ok(pieces) => walk(&pieces, raw, false, &mut out, found),
        Err(_) => {
            found.unparsed = true;
            out.text = raw.to_string();
            out.expands = true;
        }
    }
    out
}

/// A here-document body that the shell expands (its delimiter unquoted): only the
/// code in it matters, the text is data.
pub(super) fn scan_heredoc(body: &str, found: &mut Found) {
    match word::parse_heredoc(body, &options()) {
        Ok(pieces) => walk(&pieces, body, true, &mut Word::default(), found),
        Err(_) => found.unparsed = true,
    }
}

/// Text the shell expands like a word (a default value, an index, arithmetic).
fn scan_text(text: &str, found: &mut Found) {
    if !text.is_empty() {
        scan(text, found);
    }
}

fn walk(pieces: &[WordPieceWithSource], raw: &str, quoted: bool, out: &mut Word, found: &mut Found) {
    for piece in pieces {
        let source = raw.get(piece.start_index..piece.end_index).unwrap_or_default();
        match &piece.piece {
            WordPiece::Text(text) => {
                if !quoted && text.contains(['*', '?', '[', '{']) {
                    out.glob = true;
                }
                out.text.push_str(text);
            }
            WordPiece::SingleQuotedText(text) => out.text.push_str(text),
            WordPiece::AnsiCQuotedText(text) => {
                // Escapes are not decoded here: the text is not what runs.
                out.expands = true;
                out.text.push_str(text);
            }
            WordPiece::DoubleQuotedSequence(inner) => walk(inner, raw, true, out, found),
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                out.expands = true;
                walk(inner, raw, true, out, found);
            }
            WordPiece::EscapeSequence(escaped) => {
                // `\x` is `x`; an unquoted backslash-newline joins lines.
                let char = escaped.get(1..).unwrap_or_default();
                if quoted || char != "\n" {
                    out.text.push_str(char);
                }
            }
            WordPiece::TildeExpansion(_) => {
                out.expands = true;
                out.text.push_str(source);
            }
            WordPiece::ParameterExpansion(expr) => {
                out.expands = true;
                out.text.push_str(source);
                for text in inner_texts(expr) {
                    scan_text(text, found);
                }
            }
            WordPiece::CommandSubstitution(script) | WordPiece::BackquotedCommandSubstitution(script) => {
                out.expands = true;
                out.text.push_str(source);
                found.substitution = true;
                found.scripts.push(script.clone());
            }
            WordPiece::ArithmeticExpression(expr) => {
                out.expands = true;
                out.text.push_str(source);
                scan_text(&expr.value, found);
            }
        }
    }
}

/// The texts inside a parameter expansion that the shell expands in turn (defaults,
/// patterns, replacements, indexes, offsets): where a substitution can hide.
fn inner_texts(expr: &ParameterExpr) -> Vec<&str> {
    let mut texts = Vec::new();
    let (parameter, extra): (Option<&Parameter>, Vec<Option<&String>>) = match expr {
        ParameterExpr::Parameter { parameter, .. } | ParameterExpr::ParameterLength { parameter, .. } => {
            (Some(parameter), vec![])
        }
        ParameterExpr::Transform { parameter, .. } => (Some(parameter), vec![]),
        ParameterExpr::UseDefaultValues { parameter, default_value: v, .. }
        | ParameterExpr::AssignDefaultValues { parameter, default_value: v, .. }
        | ParameterExpr::IndicateErrorIfNullOrUnset { parameter, error_message: v, .. }
        | ParameterExpr::UseAlternativeValue { parameter, alternative_value: v, .. }
        | ParameterExpr::RemoveSmallestSuffixPattern { parameter, pattern: v, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { parameter, pattern: v, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { parameter, pattern: v, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { parameter, pattern: v, .. }
        | ParameterExpr::UppercaseFirstChar { parameter, pattern: v, .. }
        | ParameterExpr::UppercasePattern { parameter, pattern: v, .. }
        | ParameterExpr::LowercaseFirstChar { parameter, pattern: v, .. }
        | ParameterExpr::LowercasePattern { parameter, pattern: v, .. } => {
            (Some(parameter), vec![v.as_ref()])
        }
        ParameterExpr::ReplaceSubstring { parameter, pattern, replacement, .. } => {
            (Some(parameter), vec![Some(pattern), replacement.as_ref()])
        }
        ParameterExpr::Substring { parameter, offset, length, .. } => {
            texts.push(offset.value.as_str());
            texts.extend(length.iter().map(|l| l.value.as_str()));
            (Some(parameter), vec![])
        }
        ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => (None, vec![]),
    };
    if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
        texts.push(index.as_str());
    }
    texts.extend(extra.into_iter().flatten().map(String::as_str));
    texts
}
