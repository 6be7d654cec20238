//! A command line parsed by `brush-parser` (bash syntax, as `bash -c` reads it) into
//! a [`Line`], within bounds: lines over [`MAX_PARSED_BYTES`], nesting brackets
//! deeper than [`MAX_NESTING`] or `case` deeper than [`MAX_CASES`] are not parsed, and a long line is parsed on a stack
//! of its own (the parser recurses once a nesting level).

use super::line::{Hazard, Line};
use super::walk::{Walker, one_pipeline, program};
use super::words::{self, Found, Word};

/// The longest line parsed; a longer one is [`Hazard::Unparsed`]. This bounds how
/// deep the parser can recurse (about 5 KiB of stack a nesting level, at most one
/// level per 2 bytes), and a long line is parsed on a stack of its own.
pub(crate) const MAX_PARSED_BYTES: usize = 16 * 1024;

/// The deepest nesting of brackets (`(`, `{`, counted in the raw text, quotes or
/// not) a parsed line may have; a deeper one is [`Hazard::Unparsed`]. Each level of
/// `$((…`, `${X:-…` or `$(…` is parsed again by the level around it, so time grows
/// with depth × length: 2,560 levels of `${X:-` took the parser 10 s, 64 take
/// milliseconds. No line a person writes nests this deep.
pub(crate) const MAX_NESTING: usize = 64;

/// The deepest nesting of `case` (counted as the words `case` not yet closed by
/// `esac` in the raw text, quoted or not) a parsed line may have; a deeper one is
/// [`Hazard::Unparsed`]. The parser backtracks through an unclosed `case x in x) `
/// once per level and again for the levels inside it, and parses a `$((…` level
/// again for each around it: 16 levels of `case` took it a second, 22 of them
/// inside 22 of `$((` took it minutes.
pub(crate) const MAX_CASES: usize = 8;

/// The stack a long line is parsed on (reserved, touched only as deep as it goes).
const PARSE_STACK: usize = 128 << 20;

/// The stack parsing may need for each byte of the line, and at least: a nesting
/// level costs the parser about 5 KiB, and takes at least 2 bytes.
const STACK_PER_BYTE: usize = 4 << 10;
const STACK_MIN: usize = 256 << 10;

/// Parse `text` as `bash -c` would.
pub(crate) fn parse(text: &str) -> Line {
    let mut walker = Walker { line: Line::default(), depth: 0 };
    if too_deep(text) {
        walker.line.flag(Hazard::Unparsed);
        return walker.line;
    }
    deep(text, || match program(text) {
        Some(program) => {
            walker.line.pipeline = one_pipeline(&program);
            walker.program(&program);
        }
        None => walker.line.flag(Hazard::Unparsed),
    });
    walker.line
}

/// The first word of `text` as the tokenizer cuts it, even when the line as a whole
/// does not parse (`None`: not even that).
pub(crate) fn first_word(text: &str) -> Option<Word> {
    if too_deep(text) {
        return None;
    }
    deep(text, || {
        let tokens = brush_parser::tokenize_str(text).ok()?;
        let token = tokens.into_iter().find(|t| matches!(t, brush_parser::Token::Word(..)))?;
        Some(words::scan(token.to_str(), &mut Found::default()))
    })
}

/// Whether `text` is too long or nests too deep to parse: brackets past
/// [`MAX_NESTING`] or `case` past [`MAX_CASES`], read naively (every `(` and `{`
/// opens, every `)` and `}` closes, quoted or not: a bound, not a parse).
fn too_deep(text: &str) -> bool {
    if text.len() > MAX_PARSED_BYTES {
        return true;
    }
    let (mut depth, mut cases) = (0usize, 0usize);
    for byte in text.bytes() {
        match byte {
            b'(' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return true;
                }
            }
            b')' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        match word {
            "case" => {
                cases += 1;
                if cases > MAX_CASES {
                    return true;
                }
            }
            "esac" => cases = cases.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Run `f`, which tokenizes or parses `text`, where there is stack enough for it:
/// on this thread's when it has room left (a short line), else on a stack of
/// [`PARSE_STACK`].
pub(super) fn deep<R>(text: &str, f: impl FnOnce() -> R) -> R {
    let need = STACK_MIN + text.len().min(MAX_PARSED_BYTES) * STACK_PER_BYTE;
    stacker::maybe_grow(need, PARSE_STACK, f)
}
