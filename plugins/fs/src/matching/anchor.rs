//! The matchers for an `old_string` of three or more lines that anchor on its
//! first and last lines and score the rest: block-anchor (both anchors, the
//! middle scored by Levenshtein similarity) and context-aware (one anchor, a
//! block of the same length, at least half of the lines the same).

use super::budget::{Budget, GaveUp};
use super::lines::{Lines, OldLines};

/// Several scored candidates are settled by the best only when it scores at
/// least this…
pub(crate) const MIN_BEST: f64 = 0.5;
/// …and beats the runner-up by at least this: a tie is never applied.
pub(crate) const MIN_LEAD: f64 = 0.05;

/// A block of file lines `first..=last` and how well it matches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scored {
    pub(crate) first: usize,
    pub(crate) last: usize,
    pub(crate) score: f64,
}

/// What a scored matcher settled on.
#[derive(Debug, PartialEq)]
pub(crate) enum Choice {
    None,
    One(Scored),
    /// No clear best: the candidates' first lines (0-based).
    Several(Vec<usize>),
}

/// One candidate is taken; of several, the best when it scores at least
/// [`MIN_BEST`] and leads by [`MIN_LEAD`].
pub(crate) fn choose(mut candidates: Vec<Scored>) -> Choice {
    match candidates.len() {
        0 => Choice::None,
        1 => Choice::One(candidates[0]),
        _ => {
            candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.first.cmp(&b.first)));
            let (best, second) = (candidates[0], candidates[1]);
            if best.score >= MIN_BEST && best.score - second.score >= MIN_LEAD {
                Choice::One(best)
            } else {
                let mut firsts: Vec<usize> = candidates.iter().map(|c| c.first).collect();
                firsts.sort_unstable();
                firsts.dedup();
                Choice::Several(firsts)
            }
        }
    }
}

/// The first and last lines of `old`, trimmed, when it has 3+ lines and both
/// have text.
fn anchors<'a>(old: &OldLines<'a>) -> Option<(&'a str, &'a str)> {
    let m = old.len();
    let (first, last) = (old.lines.first()?.trim(), old.lines.last()?.trim());
    (m >= 3 && !first.is_empty() && !last.is_empty()).then_some((first, last))
}

/// Blocks whose first and last lines are old's (trimmed), `m ± max(2, m/4)`
/// lines long, each scored by the normalized Levenshtein similarity of the
/// lines between (trimmed, joined).
pub(crate) fn block_anchor(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    budget: &mut Budget,
) -> Result<Vec<Scored>, GaveUp> {
    let Some((first, last)) = anchors(old) else { return Ok(Vec::new()) };
    let m = old.len();
    let slack = (m / 4).max(2);
    let middle_old = join_trimmed(old.lines[1..m - 1].iter().copied());
    let mut found = Vec::new();
    for i in 0..lines.len() {
        budget.spend(1)?;
        if lines.get(i).trim() != first {
            continue;
        }
        for len in (m.saturating_sub(slack)).max(3)..=m + slack {
            let j = i + len - 1;
            if j >= lines.len() {
                break;
            }
            budget.spend(1)?;
            if lines.get(j).trim() != last {
                continue;
            }
            let middle = join_trimmed((i + 1..j).map(|k| lines.get(k)));
            budget.spend((middle.len() as u64 + 1) * (middle_old.len() as u64 + 1))?;
            let score = strsim::normalized_levenshtein(&middle_old, &middle);
            found.push(Scored { first: i, last: j, score });
        }
    }
    Ok(found)
}

/// Blocks of old's length that start with old's first line or end with its
/// last (trimmed), where at least half of old's non-blank lines are the
/// block's (trimmed, line for line); scored by that share.
pub(crate) fn context_aware(
    lines: &Lines<'_>,
    old: &OldLines<'_>,
    budget: &mut Budget,
) -> Result<Vec<Scored>, GaveUp> {
    let m = old.len();
    if m < 3 || m > lines.len() {
        return Ok(Vec::new());
    }
    let (first, last) = (old.lines[0].trim(), old.lines[m - 1].trim());
    let text_lines = old.lines.iter().filter(|l| !l.trim().is_empty()).count();
    let mut found = Vec::new();
    for i in 0..=lines.len() - m {
        budget.spend(2)?;
        let anchored = (!first.is_empty() && lines.get(i).trim() == first)
            || (!last.is_empty() && lines.get(i + m - 1).trim() == last);
        if !anchored {
            continue;
        }
        budget.spend(m as u64)?;
        let same = (0..m)
            .filter(|&k| !old.lines[k].trim().is_empty() && old.lines[k].trim() == lines.get(i + k).trim())
            .count();
        if same >= 2 && same * 2 >= text_lines {
            found.push(Scored { first: i, last: i + m - 1, score: same as f64 / text_lines as f64 });
        }
    }
    Ok(found)
}

fn join_trimmed<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    lines.map(str::trim).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(first: usize, score: f64) -> Scored {
        Scored { first, last: first + 2, score }
    }

    #[test]
    fn choosing() {
        assert_eq!(choose(vec![]), Choice::None);
        assert_eq!(choose(vec![s(3, 0.1)]), Choice::One(s(3, 0.1)), "one is taken");
        assert_eq!(choose(vec![s(1, 0.6), s(5, 0.9)]), Choice::One(s(5, 0.9)));
        assert_eq!(choose(vec![s(1, 0.9), s(5, 0.9)]), Choice::Several(vec![1, 5]), "a tie");
        assert_eq!(choose(vec![s(1, 0.88), s(5, 0.9)]), Choice::Several(vec![1, 5]), "too close");
        assert_eq!(choose(vec![s(1, 0.1), s(5, 0.4)]), Choice::Several(vec![1, 5]), "too weak");
    }

    #[test]
    fn block_anchor_scores_the_middle() {
        let text = "fn a() {\n    // new comment\n    run();\n}\n";
        let old = OldLines::new("fn a() {\n    // old comment\n    run();\n}");
        let found = block_anchor(&Lines::new(text), &old, &mut Budget::new(10_000)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].first, found[0].last), (0, 3));
        assert!(found[0].score > 0.8 && found[0].score < 1.0, "{found:?}");
    }

    #[test]
    fn context_aware_needs_half_the_lines() {
        let text = "fn b(x: u8) {\n    one();\n    two();\n}\n";
        let lines = Lines::new(text);
        let old = OldLines::new("fn b() {\n    one();\n    two();\n}");
        let found = context_aware(&lines, &old, &mut Budget::new(1000)).unwrap();
        assert_eq!(found, [Scored { first: 0, last: 3, score: 0.75 }]);
        let old = OldLines::new("fn b() {\n    uno();\n    dos();\n}");
        assert!(context_aware(&lines, &old, &mut Budget::new(1000)).unwrap().is_empty());
    }
}
