//! Properties of shown text over generated hostile text ([`super::super::hostile_text`]):
//! a quoted value, the arguments and every part of a shown request hold no line
//! break and no character a terminal or a client could act on or hide; a quoted
//! value is the JSON string of the value (or of its start, with the rest counted
//! exactly); everything is bounded.
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib shown::props` runs a longer one.

use proptest::prelude::*;

use super::super::hostile_text::{arguments, text, unsafe_for_display};
use super::*;
use crate::test_support::proptest_config as config;

/// The longest cut note: `… (N more bytes)`.
const NOTE: usize = 40;

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn a_quoted_value_is_one_printable_json_string(value in text(40), max in 0usize..300) {
        let shown = quote(&value, max);
        if let Some(why) = unsafe_for_display(&shown, 0) {
            return Err(TestCaseError::fail(format!("{why}: {shown:?}")));
        }
        let (string, note) = match shown.rfind("\"… (").filter(|_| shown.ends_with(" more bytes)")) {
            Some(end) => shown.split_at(end + 1),
            None => (shown.as_str(), ""),
        };
        prop_assert!(string.len() <= max + 2, "{} bytes shown for at most {}", string.len(), max);
        let head: String = serde_json::from_str(string).map_err(|e| TestCaseError::fail(format!("{e}: {string}")))?;
        prop_assert!(value.starts_with(&head), "{:?} is not the start of {:?}", head, value);
        if note.is_empty() {
            prop_assert_eq!(&head, &value);
        } else {
            prop_assert_eq!(note.to_string(), format!("… ({} more bytes)", value.len() - head.len()));
        }
        // Unquoted, the same characters are hidden and nothing else is changed.
        let plain = plain(&value, usize::MAX);
        prop_assert!(unsafe_for_display(&plain, 0).is_none(), "{:?}", plain);
        if !value.chars().any(|c| hidden(c) || matches!(c, '\n' | '\t' | '\r')) {
            prop_assert_eq!(plain, value);
        }
    }

    #[test]
    fn shown_arguments_are_one_bounded_printable_line(args in arguments(), max in 16usize..2048) {
        let shown = super::args(&args, max, &unredacted);
        if let Some(why) = unsafe_for_display(&shown, 0) {
            return Err(TestCaseError::fail(format!("{why}: {shown:?}")));
        }
        prop_assert!(shown.len() <= max + NOTE, "{} bytes", shown.len());
        if !shown.contains("… (") {
            // Nothing cut: it is the arguments' JSON.
            let back: serde_json::Value = serde_json::from_str(&shown).map_err(|e| TestCaseError::fail(format!("{e}: {shown}")))?;
            prop_assert_eq!(back, args);
        }
    }

    #[test]
    fn every_part_of_a_shown_request_is_one_printable_line(
        tool in text(6), plugin in text(6), args in arguments(), reason in text(30), rule in text(30),
    ) {
        let request = ApprovalRequest {
            call_id: "c1".into(), tool, plugin, args, reason, suggested_rule: rule.clone(),
        };
        let shown = ShownRequest::new(&request, &unredacted);
        for part in [&shown.tool, &shown.plugin, &shown.args, &shown.reason, &shown.rule] {
            if let Some(why) = unsafe_for_display(part, 0) {
                return Err(TestCaseError::fail(format!("{why}: {part:?}")));
            }
            prop_assert!(part.len() <= MAX_SHOWN.max(MAX_ARGS_SHOWN) + NOTE + 2, "{} bytes", part.len());
        }
        // The rule shown is the rule saved, exactly (when it is not cut).
        if !shown.rule.ends_with(" more bytes)") {
            let back: String = serde_json::from_str(&shown.rule).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back, rule);
        }
    }
}
