//! The approval question as an MCP client shows it, and its answer.
//!
//! The question is a form (`elicitation/create`, mode `form`) with one required
//! string property, `decision`: `once` (run this call), `always` (run it and
//! save the narrowest allow rule, as the terminal does) or `deny`, each with a
//! title saying what it does. Its message names the tool and its plugin, the
//! arguments (redacted as output is, cut to [`MAX_ARGS_SHOWN`] bytes) and why
//! the permissions asked.
//!
//! The answer: `accept` with a `decision` is that decision; `decline` and
//! `cancel` deny; anything else (no `decision`, a word that is none of the
//! three, not an elicitation result at all) is no answer, and the call is not run.

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema,
    PrimitiveSchemaDefinition,
};
use serde_json::Value;

use crate::call::host::Host;
use crate::policy::{Approval, ApprovalRequest};

/// The most of the arguments' JSON a question shows.
pub(crate) const MAX_ARGS_SHOWN: usize = 1024;
/// The most of a client's odd answer quoted back in a denial.
const MAX_QUOTED: usize = 64;

/// The question about `request`, for an MCP client to show its user.
pub(crate) fn question(host: &Host, request: &ApprovalRequest) -> ElicitRequestParams {
    let args = redacted_args(host, request);
    let message = format!(
        "toolhost: `{}` ({}) wants to run with {args}\nAsked because: {}.\n\
         Answer once to run it this time, always to run it and save the rule `{}`, or deny.",
        request.tool, request.plugin, request.reason, request.suggested_rule
    );
    let titles = vec![
        "Allow once: run this call now, and ask again next time".to_string(),
        format!("Always allow: run it, and save the rule `{}`", request.suggested_rule),
        "Deny: do not run it".to_string(),
    ];
    let decision = EnumSchema::builder(Approval::DECISIONS.iter().map(|w| w.to_string()).collect())
        .enum_titles(titles)
        .expect("one title per decision")
        .title("Decision")
        .description(format!("Whether `{}` may run", request.tool))
        .build();
    let schema = ElicitationSchema::builder()
        .required_property("decision", PrimitiveSchemaDefinition::Enum(decision))
        .title(format!("Approve {}?", request.tool))
        .build()
        .expect("a one-property object schema");
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }
}

/// The arguments' JSON with secrets redacted (the host's and the tool's
/// plugin's granted values, and secret shapes), cut to [`MAX_ARGS_SHOWN`] bytes.
fn redacted_args(host: &Host, request: &ApprovalRequest) -> String {
    let text = request.args.to_string();
    let mut text = host.native_redactor.redact(&text).into_owned();
    if let Some(plugin) = host.registry().get(&request.tool).and_then(|tool| tool.plugin()) {
        text = plugin.redactor().redact(&text).into_owned();
    }
    cut(&text, MAX_ARGS_SHOWN)
}

/// What `answer` decides.
pub(crate) fn decision(answer: &ElicitResult) -> Approval {
    match answer.action {
        ElicitationAction::Accept => {
            let word = answer.content.as_ref().and_then(|content| content.get("decision"));
            match word {
                Some(Value::String(word)) => Approval::from_decision(word).unwrap_or_else(|| {
                    Approval::NoAnswer(format!(
                        "the client's decision `{}` is none of once, always, deny",
                        cut(word, MAX_QUOTED)
                    ))
                }),
                Some(other) => Approval::NoAnswer(format!(
                    "the client's decision is {}, not one of the strings once, always, deny",
                    cut(&other.to_string(), MAX_QUOTED)
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
            cut(&e.to_string(), MAX_QUOTED * 2)
        )),
    }
}

/// `text` cut to at most `max` bytes at a character boundary, `…` marking a cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}…", &text[..text.floor_char_boundary(max)])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
            (json!({"action": "accept", "content": {"decision": "ONCE"}}), "`ONCE` is none of"),
            (json!({"action": "accept", "content": {"decision": 1}}), "is 1, not one of"),
            (json!({"action": "accept", "content": {"decision": "x".repeat(10_000)}}), "…` is none of"),
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

    #[test]
    fn cut_keeps_characters_whole() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééé", 3), "é…");
    }
}
