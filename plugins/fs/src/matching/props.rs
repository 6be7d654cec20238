//! Properties of the cascade over generated files: 4,096 cases per property by
//! default; `PROPTEST_CASES=100000 cargo test --release -p toolhost-fs matching::props`
//! runs a longer one.

use proptest::prelude::*;

use super::{Limits, Matcher, Refusal, apply};

/// Lines of code-like words, no backslashes (so no escapes), no blank line.
fn code_lines(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z]{1,6}( [a-z(){};=]{1,6}){0,3}", n)
}

fn indent(lines: &[String], by: &str) -> String {
    lines.iter().map(|l| format!("{by}{l}\n")).collect()
}

/// `text`'s lines, trimmed, contain `new`'s lines, trimmed, one after another.
fn contains_lines(text: &str, new: &str) -> bool {
    let text: Vec<&str> = text.lines().map(str::trim).collect();
    let new: Vec<&str> = new.lines().map(str::trim).collect();
    new.is_empty() || text.windows(new.len()).any(|w| w == new.as_slice())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(4096)
    ))]

    /// The same block twice, old_string under another indentation: whatever
    /// matcher sees it sees both, and nothing is applied.
    #[test]
    fn a_tie_is_never_applied(
        block in code_lines(1..6),
        before in code_lines(0..4),
        between in code_lines(0..4),
        after in code_lines(0..4),
        new in code_lines(1..4),
    ) {
        let text = format!(
            "{}{}{}{}{}",
            indent(&before, ""),
            indent(&block, "    "),
            indent(&between, ""),
            indent(&block, "    "),
            indent(&after, "")
        );
        let old = indent(&block, "  ");
        let old = old.trim_end();
        let result = apply(&text, old, &new.join("\n"), false, &Limits::default());
        prop_assert!(
            matches!(result, Err(Refusal::NotUnique { .. })),
            "applied: {result:?}"
        );
    }

    /// A unique exact occurrence is what is replaced, by the exact matcher.
    #[test]
    fn an_exact_unique_match_always_wins(
        lines in code_lines(1..30),
        pick in any::<prop::sample::Index>(),
        len in 1usize..4,
        new in "[a-z =;]{0,20}",
    ) {
        let text = indent(&lines, "  ");
        let first = pick.index(lines.len());
        let last = (first + len).min(lines.len());
        let old = indent(&lines[first..last], "  ");
        let old = old.trim_end();
        prop_assume!(text.matches(old).count() == 1 && old != new);
        let edit = apply(&text, old, &new, false, &Limits::default()).unwrap();
        prop_assert_eq!(edit.matcher, Matcher::Exact);
        prop_assert_eq!(edit.text, text.replacen(old, &new, 1));
    }

    /// Whatever lands, the new text holds new_string's lines (re-indented
    /// perhaps, never changed otherwise).
    #[test]
    fn the_result_contains_new_string(
        lines in code_lines(3..30),
        pick in any::<prop::sample::Index>(),
        len in 1usize..6,
        old_indent in "[ \t]{0,4}",
        stale in any::<bool>(),
        new in code_lines(0..5),
    ) {
        let text = indent(&lines, "    ");
        let first = pick.index(lines.len());
        let last = (first + len).min(lines.len());
        let mut old_lines = lines[first..last].to_vec();
        if stale && old_lines.len() >= 3 {
            old_lines[1] = format!("{} stale", old_lines[1]);
        }
        let old = indent(&old_lines, &old_indent);
        let new = new.join("\n");
        if let Ok(edit) = apply(&text, old.trim_end(), &new, false, &Limits::default()) {
            prop_assert!(contains_lines(&edit.text, &new), "{edit:?}");
        }
    }
}
