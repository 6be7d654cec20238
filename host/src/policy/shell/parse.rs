//! A command line parsed by `brush-parser` (bash syntax, as `bash -c` reads it) into
//! a [`Line`], within bounds: lines over [`MAX_PARSED_BYTES`] are not parsed, and a
//! long line is parsed on a stack of its own (the parser recurses once a nesting
//! level).

use super::line::{Hazard, Line};
use super::walk::{Walker, one_pipeline, program};
use super::words::{self, Found, Word};

/// The longest line parsed; a longer one is [`Hazard::Unparsed`]. This bounds how
/// deep the parser can recurse (about 5 KiB of stack a nesting level, at most one
/// level per 2 bytes), and a long line is parsed on a stack of its own.
pub const MAX_PARSED_BYTES: usize = 16 * 1024;

/// The stack a long line is parsed on (reserved, touched only as deep as it goes).
const PARSE_STACK: usize = 128 << 20;

/// The stack parsing may need for each byte of the line, and at least: a nesting
/// level costs the parser about 5 KiB, and takes at least 2 bytes.
const STACK_PER_BYTE: usize = 4 << 10;
const STACK_MIN: usize = 256 << 10;

/// Parse `text` as `bash -c` would.
pub fn parse(text: &str) -> Line {
    let mut walker = Walker { line: Line::default(), depth: 0 };
    if text.len() > MAX_PARSED_BYTES {
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
pub fn first_word(text: &str) -> Option<Word> {
    if text.len() > MAX_PARSED_BYTES {
        return None;
    }
    deep(text, || {
        let tokens = brush_parser::tokenize_str(text).ok()?;
        let token = tokens.into_iter().find(|t| matches!(t, brush_parser::Token::Word(..)))?;
        Some(words::scan(token.to_str(), &mut Found::default()))
    })
}

/// Run `f`, which tokenizes or parses `text`, where there is stack enough for it:
/// on this thread's when it has room left (a short line), else on a stack of
/// [`PARSE_STACK`].
pub(super) fn deep<R>(text: &str, f: impl FnOnce() -> R) -> R {
    let need = STACK_MIN + text.len().min(MAX_PARSED_BYTES) * STACK_PER_BYTE;
    stacker::maybe_grow(need, PARSE_STACK, f)
}
