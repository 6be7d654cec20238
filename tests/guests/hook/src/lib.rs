//! Test-only hook component. Its answer depends on the call's `path` argument
//! (or, after the call, on its outcome):
//! - `deny-me`: deny, with a reason; `ask-me`: ask; `allow-me`: allow;
//! - `halt-me`: halt the turn;
//! - `rewrite-me`: updated input with `path` = `rewritten.txt`;
//! - `spin`: loop forever; `hog`: allocate without end; `panic`: panic;
//! - anything else: no objection.
//!
//! After the call (post-tool-use) it adds the context `seen ok=<bool>`.

use std::hint::black_box;

use bindings::exports::toolhost::plugin::hooks::{Decision, Event, Guest, HookInput, HookOutput};

mod bindings {
    #![allow(missing_docs, unreachable_pub, unsafe_code)]
    use super::TestHook;
    wit_bindgen::generate!({ path: "../../../wit", world: "tool-hook" });
    export!(TestHook);
}

struct TestHook;

fn answer(decision: Option<Decision>, reason: &str) -> HookOutput {
    HookOutput {
        decision,
        reason: Some(reason.to_string()),
        updated_input: None,
        additional_context: None,
        halt: false,
    }
}

impl Guest for TestHook {
    fn handle(input: HookInput) -> HookOutput {
        if matches!(input.event, Event::PostToolUse) {
            let ok = input.outcome.map(|o| o.ok).unwrap_or(false);
            return HookOutput { additional_context: Some(format!("seen ok={ok}")), ..answer(None, "post") };
        }
        let args: serde_json::Value = serde_json::from_str(&input.arguments).unwrap_or_default();
        let path = args.get("path").and_then(|p| p.as_str()).unwrap_or_default();
        match path {
            "deny-me" => answer(Some(Decision::Deny), "the wasm hook says no"),
            "ask-me" => answer(Some(Decision::Ask), "the wasm hook wants a human"),
            "allow-me" => answer(Some(Decision::Allow), "the wasm hook vouches"),
            "halt-me" => HookOutput { halt: true, ..answer(None, "stop the turn") },
            "rewrite-me" => {
                let mut updated = args.clone();
                updated["path"] = "rewritten.txt".into();
                HookOutput { updated_input: Some(updated.to_string()), ..answer(None, "rewritten") }
            }
            "spin" => loop {
                black_box(0u64);
            },
            "hog" => {
                let mut all = Vec::new();
                loop {
                    all.push(black_box(vec![1u8; 1 << 20]));
                }
            }
            "panic" => panic!("the hook panicked on purpose"),
            _ => answer(None, "no objection"),
        }
    }
}
