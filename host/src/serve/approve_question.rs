//! The approval question as an MCP client shows it, and its answer.
//!
//! The question is a form (`elicitation/create`, mode `form`) with one required
//! string property, `decision`: `once` (run this call), `always` (run it and
//! save the narrowest allow rule, as the terminal does) or `deny`, each with a
//! title saying what it does. Its message names the tool and its plugin, the
//! arguments (redacted as output is) and why the permissions asked; every part a
//! call chose is quoted, escaped and bounded ([`crate::policy::shown`]), so the
//! message is three lines the host starts, whatever the arguments hold.
//!
//! The answer: `accept` with a `decision` is that decision; `decline` and
//! `cancel` deny; anything else (no `decision`, a word that is none of the
//! three, not an elicitation result at all) is no answer, and the call is not run.

use std::borrow::Cow;

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema,
    PrimitiveSchemaDefinition,
};
use serde_json::Value;

use crate::call::host::Host;
use crate::policy::shown::{ShownRequest, plain, quote};
use crate::policy::{Approval, ApprovalRequest};

/// The most of a client's odd answer quoted back in a denial.
const MAX_QUOTED: usize = 64;

/// The question about `request`, for an MCP client to show its user.
pub(crate) fn question(host: &Host, request: &ApprovalRequest) -> ElicitRequestParams {
    let registry = host.registry();
    let plugin = registry.get(&request.tool).and_then(|tool| tool.plugin());
    let shown = ShownRequest::new(request, &|text| {
        let text = host.native_redactor.redact(text);
        match plugin {
            Some(plugin) => Cow::Owned(plugin.redactor().redact(&text).into_owned()),
            None => text,
        }
    });
    question_for(&shown)
}

/// The question about a request `shown` so: a message of three lines, each
/// started by the host's words, and the three titled options.
pub(crate) fn question_for(shown: &ShownRequest) -> ElicitRequestParams {
    let ShownRequest { tool, plugin, args, reason, rule } = shown;
    let message = format!(
        "toolhost: `{tool}` ({plugin}) wants to run with {args}\nAsked because: {reason}.\n\
         Answer once to run it this time, always to run it and save the rule {rule}, or deny."
    );
    let titles = vec![
        "Allow once: run this call now, and ask again next time".to_string(),
        format!("Always allow: run it, and save the rule {rule}"),
        "Deny: do not run it".to_string(),
    ];
    let decision = EnumSchema::builder(Approval::DECISIONS.iter().map(|w| w.to_string()).collect())
        .enum_titles(titles)
        .expect("one title per decision")
        .title("Decision")
        .description(format!("Whether `{tool}` may run"))
        .build();
    let schema = ElicitationSchema::builder()
        .required_property("decision", PrimitiveSchemaDefinition::Enum(decision))
        .title(format!("Approve {tool}?"))
        .build()
        .expect("a one-property object schema");
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }
}

/// What `answer` decides.
pub(crate) fn decision(answer: &ElicitResult) -> Approval {
    match answer.action {
        ElicitationAction::Accept => {
            let word = answer.content.as_ref().and_then(|content| content.get("decision"));
            match word {
                Some(Value::String(word)) => Approval::from_decision(word).unwrap_or_else(|| {
                    Approval::NoAnswer(format!(
                        "the client's decision {} is none of once, always, deny",
                        quote(word, MAX_QUOTED)
                    ))
                }),
                Some(other) => Approval::NoAnswer(format!(
                    "the client's decision is {}, not one of the strings once, always, deny",
                    plain(&other.to_string(), MAX_QUOTED)
                )),
                None => Approval::NoAnswer(
                    "the client accepted without a decision (once, always or deny)".to_string(),
                ),
            }
        }
        ElicitationAction::Decline => Approval::Deny(Some("declined the question".to_string())),
        ElicitationAction::Cancel => Approval::Deny(Some("dismissed the question".to_string())),
        _ => Approval::NoAnswer("the client answered with an action toolhost does not know".to_string()),
    }
}

/// What a 2026-07-28 `inputResponses` entry decides: it must be an elicitation result.
pub(crate) fn decision_from_json(answer: &Value) -> Approval {
    match serde_json::from_value::<ElicitResult>(answer.clone()) {
        Ok(answer) => decision(&answer),
        Err(e) => Approval::NoAnswer(format!(
            "the client's answer is not an elicitation result (accept, decline or cancel): {}",
            plain(&e.to_string(), MAX_QUOTED * 2)
        )),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::policy::hostile_text::{arguments, text, unsafe_for_display};
    use crate::policy::shown::unredacted;
    use crate::test_support::proptest_config as config;

    /// Every string of the question, and whether it is the message.
    fn strings(params: &ElicitRequestParams) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![serde_json::to_value(params).unwrap()];
        while let Some(value) = stack.pop() {
            match value {
                Value::String(s) => out.push(s),
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
        out
    }

    /// The question's message, and the title of its "always" option.
    fn message_and_title(params: &ElicitRequestParams) -> (String, String) {
        let value = serde_json::to_value(params).unwrap();
        let title = value["requestedSchema"]["properties"]["decision"]["oneOf"][1]["title"].as_str().unwrap();
        (value["message"].as_str().unwrap().to_string(), title.to_string())
    }

    /// Whatever the request holds, the message is three lines the host starts,
    /// every other text (option titles, the form's title and description) is one
    /// line, no character below 0x20 but the message's two line breaks, no DEL, C1
    /// or bidi control is in any of them, and the rule shown is the rule saved.
    fn check(request: &ApprovalRequest) -> Result<(), TestCaseError> {
        let params = question_for(&ShownRequest::new(request, &unredacted));
        let (message, title) = message_and_title(&params);
        for text in strings(&params) {
            let newlines = if text == message { 2 } else { 0 };
            if let Some(why) = unsafe_for_display(&text, newlines) {
                return Err(TestCaseError::fail(format!("{why}: {text:?}")));
            }
        }
        let lines: Vec<&str> = message.split('\n').collect();
        prop_assert!(lines[0].starts_with("toolhost: `"), "{:?}", lines[0]);
        prop_assert!(lines[1].starts_with("Asked because: "), "{:?}", lines[1]);
        prop_assert!(lines[2].starts_with("Answer once to run it this time, "), "{:?}", lines[2]);
        let rule = title.strip_prefix("Always allow: run it, and save the rule ").unwrap_or_default();
        prop_assert!(lines[2].contains(rule), "the message shows the title's rule: {:?}", message);
        if !rule.ends_with(" more bytes)") {
            let saved: String = serde_json::from_str(rule).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&saved, &request.suggested_rule);
        }
        Ok(())
    }

    #[test]
    fn arguments_cannot_shape_the_question() {
        let odd = "a\nAsked because: fine.\nAnswer always\u{1b}[2J\u{1b}]0;x\u{7}\u{202e}\u{9b}";
        let request = ApprovalRequest {
            call_id: "c1".into(),
            tool: "write_file".into(),
            plugin: "builtin:fs".into(),
            args: json!({ "path": odd }),
            reason: format!("a hook asks: {odd}"),
            suggested_rule: format!("write_file(path={odd})"),
        };
        check(&request).unwrap();
        let (message, title) = message_and_title(&question_for(&ShownRequest::new(&request, &unredacted)));
        let quoted = r#""a\nAsked because: fine.\nAnswer always\u001b[2J\u001b]0;x\u0007\u202e\u009b""#;
        assert!(message.contains(&format!("wants to run with {{\"path\":{quoted}}}\n")), "{message}");
        let rule = r#""write_file(path=a\nAsked because: fine.\nAnswer always\u001b[2J\u001b]0;x\u0007\u202e\u009b)""#;
        assert_eq!(title, format!("Always allow: run it, and save the rule {rule}"));
    }

    proptest! {
        #![proptest_config(config(4096))]

        #[test]
        fn the_question_is_three_lines_the_host_starts(
            tool in text(6), plugin in text(6), args in arguments(), reason in text(30), rule in text(30),
        ) {
            check(&ApprovalRequest { call_id: "c1".into(), tool, plugin, args, reason, suggested_rule: rule })?;
        }
    }

    fn answer(value: Value) -> Approval {
        decision_from_json(&value)
    }

    #[test]
    fn answers_map_to_decisions_and_anything_else_is_no_answer() {
        let accept = |content: Value| answer(json!({"action": "accept", "content": content}));
        assert_eq!(accept(json!({"decision": "once"})), Approval::Once);
        assert_eq!(accept(json!({"decision": "always"})), Approval::Always);
        assert_eq!(accept(json!({"decision": "deny"})), Approval::Deny(None));
        assert_eq!(
            answer(json!({"action": "decline"})),
            Approval::Deny(Some("declined the question".into()))
        );
        assert_eq!(
            answer(json!({"action": "cancel"})),
            Approval::Deny(Some("dismissed the question".into()))
        );
        for (odd, expected) in [
            (json!({"action": "accept"}), "without a decision"),
            (json!({"action": "accept", "content": {"decision": "ONCE"}}), "\"ONCE\" is none of"),
            (json!({"action": "accept", "content": {"decision": 1}}), "is 1, not one of"),
            (
                json!({"action": "accept", "content": {"decision": "x".repeat(10_000)}}),
                "\"… (9936 more bytes) is none of",
            ),
            (json!({"action": "maybe"}), "not an elicitation result"),
            (json!("once"), "not an elicitation result"),
            (json!(null), "not an elicitation result"),
        ] {
            match answer(odd.clone()) {
                Approval::NoAnswer(why) => {
                    assert!(why.contains(expected), "{odd}: {why}");
                    assert!(why.len() < 300, "bounded: {why}");
                }
                other => panic!("{odd} decided {other:?}"),
            }
        }
    }
}
