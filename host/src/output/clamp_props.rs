//! Properties of the head + tail cut over generated texts (multi-byte characters,
//! long and empty lines, no newline at all): what the caller reads of the text never
//! exceeds the budget; the cut falls on char boundaries and, where the budget holds
//! a newline, on line boundaries; head + omitted middle + tail is the whole text,
//! and the marker's line and byte counts are the middle's.
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib output::props` runs a longer one.

use proptest::prelude::*;

use crate::test_support::proptest_config as config;

use super::{HEAD_SHARE, Part, Stored, clamp_part};

/// Lines of ASCII and multi-byte characters (no `[`: the marker's own start).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec("[a-z é€😀]{0,40}", 0..60).prop_map(|lines| lines.join("\n")),
        prop::collection::vec("[a-z é€😀]{0,40}\n", 0..60).prop_map(|lines| lines.concat()),
        "[a-zé€😀]{0,400}",
    ]
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn the_cut_adds_up_and_stays_in_budget(text in text(), budget in 0usize..600, kept in any::<bool>()) {
        let stored = if kept { Stored::Kept } else { Stored::TooLarge };
        let (out, omitted) = clamp_part(&text, budget, "call-1", Part::Content, &stored, None);
        let Some(omitted) = omitted else {
            prop_assert!(text.len() <= budget);
            prop_assert_eq!(out, text);
            return Ok(());
        };
        prop_assert!(text.len() > budget);
        // head + marker + tail, the marker where the text has no `[`.
        let at = out.find("\n[... ").expect("a marker");
        let end = out[at..].find(" ...]\n").expect("the marker's end") + at + " ...]\n".len();
        let (head, marker, tail) = (&out[..at], &out[at..end], &out[end..]);
        prop_assert!(head.len() + tail.len() <= budget, "{} + {} > {budget}", head.len(), tail.len());
        prop_assert!(text.starts_with(head) && text.ends_with(tail));
        prop_assert_eq!(head.len() + omitted.bytes + tail.len(), text.len(), "head + omitted + tail");
        let middle = &text[head.len()..text.len() - tail.len()];
        prop_assert_eq!(omitted.lines, middle.matches('\n').count());
        let counts = format!("{} lines ({} bytes) omitted", omitted.lines, omitted.bytes);
        prop_assert!(marker.contains(&counts), "{marker}");
        if kept {
            let offset = format!("\"offset\": {}}}", head.matches('\n').count() + 1);
            prop_assert!(marker.contains(&offset), "{marker}");
        }
        // Line boundaries: a head that could end on a newline does.
        let head_budget = (budget as f64 * HEAD_SHARE) as usize;
        if text[..text.floor_char_boundary(head_budget)].contains('\n') {
            prop_assert!(head.ends_with('\n'), "head {head:?}");
        }
        // A tail that could start after a newline does (unless that is the end).
        let window = text.ceil_char_boundary(text.len() - (budget - head_budget)).max(head.len());
        let newline_before_end = text[window..].char_indices().any(|(i, c)| c == '\n' && window + i + 1 < text.len());
        if newline_before_end {
            prop_assert!(text[..text.len() - tail.len()].ends_with('\n'), "tail {tail:?}");
        }
    }
}
