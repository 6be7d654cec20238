//! Finding `old_string` in a file, tolerantly: the matcher cascade of
//! `edit_file`, pure functions over `&str` (tested and benched natively).
//!
//! [`apply`] tries the [`Matcher::CASCADE`] in order and applies the first
//! candidate that a matcher yields alone:
//!
//! 1. exact (`old_string` as given, the file's line endings applied to it);
//! 2. line-trimmed: every line the same once trimmed;
//! 3. block-anchor (3+ lines): first and last lines the same, the lines
//!    between scored by Levenshtein similarity (`strsim`);
//! 4. whitespace-normalized: every line the same with whitespace runs as one space;
//! 5. indentation-flexible: same lines and relative indentation, another common indentation;
//! 6. escape-normalized: `\n`, `\t`, `\"` written literally, unescaped (exact, then line-trimmed);
//! 7. trimmed-boundary: `old_string` without its surrounding whitespace;
//! 8. context-aware (3+ lines): one anchor line and at least half of the lines the same.
//!
//! Rules: `replace_all` matches exactly only. Exact matching that finds
//! several places refuses at once (`old_string_not_unique`): a looser matcher
//! must not pick one of the places the model's own text names. A fuzzy
//! matcher that finds several places is passed over; when no later one lands,
//! the edit is refused as not unique. The scored matchers settle several
//! candidates only by a clear best ([`anchor::choose`]): a tie is never
//! applied. Whichever fuzzy matcher lands on whole lines, a constant
//! indentation offset between `old_string` and those lines is applied to
//! `new_string` ([`indent`]), and the replacement takes the file's line
//! endings. The fuzzy matchers are bounded ([`budget`]).

mod anchor;
pub mod budget;
mod indent;
mod lines;
mod linewise;
mod outcome;
mod textual;

#[cfg(test)]
mod cases;
#[cfg(test)]
mod props;

use std::ops::Range;

pub use budget::{GaveUp, Limits};
pub use outcome::{Edit, Matcher, Refusal};

use anchor::{Choice, Scored};
use budget::Budget;
use lines::{Lines, OldLines, block_landing, line_of};

/// Where a candidate lands: the bytes replaced and what replaces them.
#[derive(Debug)]
pub(crate) struct Landing {
    span: Range<usize>,
    replacement: String,
    reindented: Option<String>,
}

/// What one matcher yields.
enum Found {
    None,
    One(Landing),
    /// Several places: their first lines, 0-based.
    Several(Vec<usize>),
}

/// Replace `old` by `new` in `text` (a file's content without its BOM).
pub fn apply(text: &str, old: &str, new: &str, replace_all: bool, limits: &Limits) -> Result<Edit, Refusal> {
    let crlf = lines::uses_crlf(text);
    let (at, old_exact, new_exact) = textual::exact(text, crlf, old, new);
    match at.len() {
        0 => {}
        1 => {
            let span = at[0]..at[0] + old_exact.len();
            let landing = Landing { span, replacement: new_exact.into_owned(), reindented: None };
            return Ok(finish(text, Matcher::Exact, landing));
        }
        count if replace_all => {
            let first = line_of(text, at[0]) + 1;
            let last = line_of(text, at[count - 1] + old_exact.len()) + 1;
            return Ok(Edit {
                matcher: Matcher::Exact,
                text: text.replace(&*old_exact, &new_exact),
                replacements: count,
                lines: (first, last),
                reindented: None,
            });
        }
        count => {
            let lines = lines_of(text, &at[..10.min(count)]).iter().map(|l| l + 1).collect();
            return Err(Refusal::NotUnique { matcher: Matcher::Exact, count, lines });
        }
    }
    if replace_all {
        return Err(Refusal::NotFound { gave_up: None, replace_all: true });
    }
    let gave_up = |why| Refusal::NotFound { gave_up: Some(why), replace_all: false };
    budget::check_sizes(text, old, limits).map_err(gave_up)?;
    let lines = Lines::new(text);
    let old_lines = OldLines::new(old);
    let mut budget = Budget::new(limits.work);
    let mut several: Option<(Matcher, Vec<usize>)> = None;
    for matcher in &Matcher::CASCADE[1..] {
        match find(*matcher, &lines, &old_lines, old, new, &mut budget).map_err(gave_up)? {
            Found::One(landing) => return Ok(finish(text, *matcher, landing)),
            Found::Several(firsts) => {
                several.get_or_insert((*matcher, firsts));
            }
            Found::None => {}
        }
    }
    Err(match several {
        Some((matcher, firsts)) => Refusal::NotUnique {
            matcher,
            count: firsts.len(),
            lines: firsts.iter().take(10).map(|i| i + 1).collect(),
        },
        None => Refusal::NotFound { gave_up: None, replace_all: false },
    })
}

/// Run one fuzzy matcher.
fn find(
    matcher: Matcher,
    lines: &Lines<'_>,
    old_lines: &OldLines<'_>,
    old: &str,
    new: &str,
    budget: &mut Budget,
) -> Result<Found, GaveUp> {
    Ok(match matcher {
        // Exact matching runs before the cascade; here it is the substring search.
        Matcher::Exact => substring(lines, old, new, budget)?,
        Matcher::LineTrimmed => {
            blocks(lines, old_lines, new, linewise::line_trimmed(lines, old_lines, budget)?)
        }
        Matcher::WhitespaceNormalized => {
            blocks(lines, old_lines, new, linewise::whitespace_normalized(lines, old_lines, budget)?)
        }
        Matcher::IndentationFlexible => {
            blocks(lines, old_lines, new, linewise::indentation_flexible(lines, old_lines, budget)?)
        }
        Matcher::BlockAnchor => {
            scored(lines, old_lines, new, anchor::block_anchor(lines, old_lines, budget)?)
        }
        Matcher::ContextAware => {
            scored(lines, old_lines, new, anchor::context_aware(lines, old_lines, budget)?)
        }
        Matcher::EscapeNormalized => {
            let unescaped = textual::unescape(old);
            if unescaped == old {
                return Ok(Found::None);
            }
            // A call escaped once too often escaped both strings; a new_string
            // with a real line break was not.
            let new =
                if old.contains('\n') || new.contains('\n') { new.into() } else { textual::unescape(new) };
            match substring(lines, &unescaped, &new, budget)? {
                Found::None => {
                    let old_lines = OldLines::new(&unescaped);
                    blocks(lines, &old_lines, &new, linewise::line_trimmed(lines, &old_lines, budget)?)
                }
                found => found,
            }
        }
        Matcher::TrimmedBoundary => {
            let trimmed = old.trim();
            if trimmed == old || trimmed.is_empty() {
                return Ok(Found::None);
            }
            substring(lines, trimmed, textual::strip_boundary(old, new), budget)?
        }
    })
}

/// Blocks of `old.len()` lines starting at `starts`.
fn blocks(lines: &Lines<'_>, old: &OldLines<'_>, new: &str, starts: Vec<usize>) -> Found {
    match starts.as_slice() {
        [] => Found::None,
        [first] => Found::One(block_landing(lines, old, new, *first, first + old.len() - 1)),
        _ => Found::Several(starts),
    }
}

/// Scored blocks, settled by [`anchor::choose`].
fn scored(lines: &Lines<'_>, old: &OldLines<'_>, new: &str, candidates: Vec<Scored>) -> Found {
    match anchor::choose(candidates) {
        Choice::None => Found::None,
        Choice::One(c) => Found::One(block_landing(lines, old, new, c.first, c.last)),
        Choice::Several(firsts) => Found::Several(firsts),
    }
}

/// `old` as a substring of the file (its line endings applied).
fn substring(lines: &Lines<'_>, old: &str, new: &str, budget: &mut Budget) -> Result<Found, GaveUp> {
    let text = lines.text();
    budget.spend(text.len() as u64 / 64 + 1)?;
    let (at, old, new) = textual::exact(text, lines.crlf, old, new);
    Ok(match at.as_slice() {
        [] => Found::None,
        [i] => {
            Found::One(Landing { span: *i..i + old.len(), replacement: new.into_owned(), reindented: None })
        }
        _ => Found::Several(lines_of(text, &at)),
    })
}

/// The 0-based lines of the ascending byte offsets `at`, in one pass.
fn lines_of(text: &str, at: &[usize]) -> Vec<usize> {
    let (mut line, mut from) = (0, 0);
    at.iter()
        .map(|&i| {
            line += line_of(&text[from..], i - from);
            from = i;
            line
        })
        .collect()
}

/// The new text with `landing` applied.
fn finish(text: &str, matcher: Matcher, landing: Landing) -> Edit {
    let Landing { span, replacement, reindented } = landing;
    let first = line_of(text, span.start);
    let last = if span.end > span.start { line_of(text, span.end - 1) } else { first };
    let mut updated = String::with_capacity(text.len() - span.len() + replacement.len());
    updated.push_str(&text[..span.start]);
    updated.push_str(&replacement);
    updated.push_str(&text[span.end..]);
    Edit { matcher, text: updated, replacements: 1, lines: (first + 1, last + 1), reindented }
}
