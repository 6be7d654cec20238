//! The matchers that compare `old_string` with the file line by line, over
//! blocks of as many lines: line-trimmed, whitespace-normalized and
//! indentation-flexible.

use super::budget::{Budget, GaveUp};
use super::lines::{Lines, OldLines};

/// The first lines of the blocks of `old.len()` file lines where every line
/// pair is `same`. One unit of work per pair compared.
fn blocks(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    budget: &mut Budget,
    mut same: impl FnMut(&str, &str, usize) -> bool,
) -> Result<Vec<usize>, GaveUp> {
    let m = old.len();
    let mut starts = Vec::new();
    if m == 0 || m > lines.len() || !old.has_text() {
        return Ok(starts);
    }
    for i in 0..=lines.len() - m {
        let mut all = true;
        for k in 0..m {
            budget.spend(1)?;
            if !same(old.lines[k], lines.get(i + k), i) {
                all = false;
                break;
            }
        }
        if all {
            starts.push(i);
        }
    }
    Ok(starts)
}

/// Each line compared with its leading and trailing whitespace trimmed.
pub(crate) fn line_trimmed(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    budget: &mut Budget,
) -> Result<Vec<usize>, GaveUp> {
    blocks(lines, old, budget, |o, f, _| o.trim() == f.trim())
}

/// Each line compared with every run of whitespace as one space (inside the
/// line too: `let  x =  1;` is `let x = 1;`).
pub(crate) fn whitespace_normalized(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    budget: &mut Budget,
) -> Result<Vec<usize>, GaveUp> {
    blocks(lines, old, budget, |o, f, _| o.split_whitespace().eq(f.split_whitespace()))
}

/// The smallest indentation of the non-blank lines, in bytes of leading
/// spaces and tabs.
fn min_indent<'a>(lines: impl Iterator<Item = &'a str>) -> usize {
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0)
}

/// The same lines with the same relative indentation, under a different
/// common indentation (each side's smallest indentation taken off; trailing
/// whitespace ignored).
pub(crate) fn indentation_flexible(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    budget: &mut Budget,
) -> Result<Vec<usize>, GaveUp> {
    let old_min = min_indent(old.lines.iter().copied());
    let m = old.len();
    // The block's smallest indentation, computed once per first line.
    let mut block_min = (usize::MAX, 0);
    blocks(lines, old, budget, |o, f, i| {
        if block_min.0 != i {
            block_min = (i, min_indent((i..i + m).map(|k| lines.get(k))));
        }
        let (o, f) = (o.trim_end(), f.trim_end());
        if o.is_empty() || f.is_empty() {
            return o.is_empty() && f.is_empty();
        }
        match (o.get(old_min..), f.get(block_min.1..)) {
            (Some(o), Some(f)) => o == f,
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        matcher: fn(&Lines<'_>, &OldLines<'_>, &mut Budget) -> Result<Vec<usize>, GaveUp>,
        text: &str,
        old: &str,
    ) -> Vec<usize> {
        matcher(&Lines::new(text), &OldLines::new(old), &mut Budget::new(1000)).unwrap()
    }

    #[test]
    fn each_matcher_finds_its_blocks() {
        let text = "fn a() {\n    let  x = 1;\n}\nfn b() {\n  let x = 1;\n}\n";
        assert_eq!(run(line_trimmed, text, "let x = 1;"), [4]);
        assert_eq!(run(whitespace_normalized, text, "let x = 1;"), [1, 4]);
        assert_eq!(run(indentation_flexible, text, "fn b() {\n    let x = 1;\n  }"), Vec::<usize>::new());
        assert_eq!(run(indentation_flexible, text, "  fn b() {\n    let x = 1;\n  }"), [3]);
        assert_eq!(run(line_trimmed, text, "\n\n"), Vec::<usize>::new(), "blank old_string");
    }

    #[test]
    fn comparisons_are_counted() {
        let text = "a\n".repeat(100);
        let old = format!("{}b", "a\n".repeat(10));
        let err = line_trimmed(&Lines::new(&text), &OldLines::new(&old), &mut Budget::new(50));
        assert_eq!(err, Err(GaveUp::WorkExhausted { budget: 50 }));
    }
}
