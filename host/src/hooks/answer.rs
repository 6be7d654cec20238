//! What a hook is told and what it answers, in both spellings: JSON for command
//! hooks (stdin / stdout), the WIT records for component hooks.
//!
//! Input: `{"event", "tool", "arguments", "call_id", "mode"}`, and for
//! post-tool-use `"outcome": {"ok", "output", "error": {"code", "message"}}`. The
//! arguments and the output are the call's own, as JSON; the error's message is
//! the host's words about the call (a path it refused, say), so a hook that shows
//! it to someone shows it escaped ([`crate::policy::shown::plain`]).
//! Answer (every field optional): `{"decision": "allow"|"deny"|"ask", "reason",
//! "updated_input": {…}, "additional_context", "halt": true}`. An unknown field or a
//! wrong type is garbage: the hook failed.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{HookCall, HookNote, MAX_HOOK_TEXT, Outcome};
use crate::bindings::hook::exports::toolhost::plugin::hooks as wit;
use crate::error::CallError;
use crate::policy::HookEvent;
use crate::policy::shown::plain;

/// A hook's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Allow,
    Deny,
    Ask,
}

/// A hook's answer, parsed and bounded.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    pub(crate) decision: Option<Verdict>,
    pub(crate) reason: Option<String>,
    pub(crate) updated_input: Option<Value>,
    pub(crate) additional_context: Option<String>,
    #[serde(default)]
    pub(crate) halt: bool,
}

/// A hook's input, in both spellings.
pub(crate) struct Input {
    pub(crate) json: Value,
    pub(crate) wit: wit::HookInput,
}

/// The input for `event` about `call` (and its `outcome`, after it ran).
pub(crate) fn input(event: HookEvent, call: &HookCall<'_>, outcome: Option<&Outcome<'_>>) -> Input {
    let mut json = json!({
        "event": event.as_str(),
        "tool": call.tool,
        "arguments": call.args,
        "call_id": call.call_id,
        "mode": call.mode.as_str(),
    });
    if let Some(o) = outcome {
        json["outcome"] = json!({
            "ok": o.ok,
            "output": o.output,
            "error": o.error.map(|e| json!({"code": e.code, "message": message(e)})),
        });
    }
    let wit = wit::HookInput {
        event: match event {
            HookEvent::PreToolUse => wit::Event::PreToolUse,
            HookEvent::PostToolUse => wit::Event::PostToolUse,
        },
        tool: call.tool.to_string(),
        arguments: call.args.to_string(),
        call_id: call.call_id.to_string(),
        mode: call.mode.as_str().to_string(),
        outcome: outcome.map(|o| wit::CallOutcome {
            ok: o.ok,
            output: o.output.to_string(),
            error_code: o.error.map(|e| e.code.clone()),
            error_message: o.error.map(message),
        }),
    };
    Input { json, wit }
}

/// An error's message as hooks are told it: control characters and other hidden
/// ones escaped, bounded.
fn message(error: &CallError) -> String {
    plain(&error.message, MAX_HOOK_TEXT)
}

impl Answer {
    /// Parse what a command hook printed (empty: no objection).
    pub(crate) fn from_json(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let answer: Answer = serde_json::from_str(text.trim()).map_err(|e| {
            let start = &text[..text.floor_char_boundary(200)];
            format!("it printed something that is not a hook answer ({e}): {start:?}")
        })?;
        answer.checked()
    }

    /// A component hook's answer.
    pub(crate) fn from_wit(out: wit::HookOutput) -> Result<Self, String> {
        let updated_input = match out.updated_input {
            Some(text) => {
                Some(serde_json::from_str(&text).map_err(|e| format!("its updated-input is not JSON: {e}"))?)
            }
            None => None,
        };
        Self {
            decision: out.decision.map(|d| match d {
                wit::Decision::Allow => Verdict::Allow,
                wit::Decision::Deny => Verdict::Deny,
                wit::Decision::Ask => Verdict::Ask,
            }),
            reason: out.reason,
            updated_input,
            additional_context: out.additional_context,
            halt: out.halt,
        }
        .checked()
    }

    /// Bounded texts, and `updated_input` an object.
    fn checked(mut self) -> Result<Self, String> {
        if self.updated_input.as_ref().is_some_and(|v| !v.is_object()) {
            return Err("its updated_input is not a JSON object".into());
        }
        for text in [&mut self.reason, &mut self.additional_context].into_iter().flatten() {
            bound(text);
        }
        Ok(self)
    }

    /// How the result notes this answer.
    pub(crate) fn note(&self, label: &str) -> HookNote {
        let decision = match self.decision {
            Some(Verdict::Allow) => "allow",
            Some(Verdict::Deny) => "deny",
            Some(Verdict::Ask) => "ask",
            None if self.halt => "halt",
            None => "none",
        };
        HookNote {
            hook: label.to_string(),
            decision: decision.into(),
            reason: self.reason.clone().unwrap_or_default(),
        }
    }
}

/// Cut `text` to [`MAX_HOOK_TEXT`] bytes, saying how much was cut.
pub(crate) fn bound(text: &mut String) {
    if text.len() > MAX_HOOK_TEXT {
        let cut = text.len() - text.floor_char_boundary(MAX_HOOK_TEXT);
        text.truncate(text.floor_char_boundary(MAX_HOOK_TEXT));
        text.push_str(&format!(" […{cut} bytes cut]"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Mode;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn the_error_message_hooks_are_told_is_escaped_and_the_arguments_are_the_calls() {
        let odd = "a\nhook says: allow\u{1b}[2J\u{202e}";
        let args = serde_json::json!({ "path": odd });
        let cancel = CancellationToken::new();
        let call =
            HookCall { tool: "write_file", args: &args, call_id: "c1", mode: Mode::Default, cancel: &cancel };
        let error = CallError::new("path_escape", format!("{odd:?} is outside the work dir: {odd}"));
        let outcome = Outcome { ok: false, output: odd, error: Some(&error) };
        let input = input(HookEvent::PostToolUse, &call, Some(&outcome));
        let message = input.json["outcome"]["error"]["message"].as_str().unwrap();
        assert_eq!(
            message,
            r#""a\nhook says: allow\u{1b}[2J\u{202e}" is outside the work dir: a\nhook says: allow\u001b[2J\u202e"#
        );
        assert_eq!(input.wit.outcome.unwrap().error_message.as_deref(), Some(message));
        // What the call holds is passed as it is: a hook judges the real arguments.
        assert_eq!(input.json["arguments"]["path"], odd);
        assert_eq!(input.json["outcome"]["output"], odd);
        let json = input.json.to_string();
        assert!(serde_json::from_str::<Value>(&json).is_ok(), "valid JSON");
    }
}
