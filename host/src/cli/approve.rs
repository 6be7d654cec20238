//! The CLI's approver: asks on the terminal — allow once, always (saved to the
//! policy file as an allow rule), or deny. Used only when stdin and stderr are both
//! terminals; otherwise the host has no approver and such calls are denied. The
//! question is three lines the host starts; what the call chose (its arguments, the
//! rule made from them) is quoted, escaped and bounded on them
//! ([`toolhost::policy::ShownRequest`]): no newline, escape sequence or control character
//! of the model's reaches the terminal.

use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};
use std::pin::Pin;

use toolhost::policy::{ShownRequest, unredacted};
use toolhost::{Approval, ApprovalRequest, Approver};

/// Asks on stderr, reads the answer from stdin.
pub(crate) struct TerminalApprover;

impl TerminalApprover {
    /// The approver, when there is a terminal to ask on.
    pub(crate) fn if_terminal() -> Option<Self> {
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(TerminalApprover)
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        let request = request.clone();
        Box::pin(async move {
            let asked = tokio::task::spawn_blocking(move || {
                ask(&mut std::io::stdin().lock(), &mut std::io::stderr().lock(), &request)
            });
            asked.await.unwrap_or(Approval::Deny(Some("the prompt failed".into())))
        })
    }
}

/// Show `request` on `output` and read answers from `input` until one is valid;
/// end of input denies.
pub(crate) fn ask(input: &mut impl BufRead, output: &mut impl Write, request: &ApprovalRequest) -> Approval {
    let ShownRequest { tool, plugin, args, reason, rule } = ShownRequest::new(request, &unredacted);
    let _ = writeln!(output, "\ntoolhost: {tool} ({plugin}) wants to run: {args}");
    let _ = writeln!(output, "  why asked: {reason}");
    loop {
        let _ = write!(output, "  [y] allow once  [a] always (saves {rule})  [n] deny  > ");
        let _ = output.flush();
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return Approval::Deny(Some("no answer".into())),
            Ok(_) => {}
        }
        // The short forms, then the words every approver shares.
        let typed = line.trim().to_ascii_lowercase();
        let word = match typed.as_str() {
            "y" | "yes" => "once",
            "a" => "always",
            "n" | "no" => "deny",
            other => other,
        };
        match Approval::from_decision(word) {
            Some(answer) => return answer,
            None => {
                let _ = writeln!(output, "  answer y, a or n");
            }
        }
    }
}

/// Ask a yes/no question on the terminal; `false` without one.
pub(crate) fn confirm(question: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

#[cfg(test)]
#[path = "../policy/hostile_text.rs"]
mod hostile_text;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::hostile_text::{arguments, text, unsafe_for_display};
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "write_file".into(),
            plugin: "builtin:fs".into(),
            args: serde_json::json!({"path": "a.txt"}),
            reason: "write_file can change things, and default mode asks first".into(),
            suggested_rule: "write_file(path=a.txt)".into(),
        }
    }

    #[test]
    fn answers() {
        for (typed, expected) in [
            ("y\n", Approval::Once),
            ("always\n", Approval::Always),
            ("n\n", Approval::Deny(None)),
            ("maybe\nA\n", Approval::Always),
            ("", Approval::Deny(Some("no answer".into()))),
        ] {
            let mut shown = Vec::new();
            let got = ask(&mut typed.as_bytes(), &mut shown, &request());
            assert_eq!(got, expected, "{typed:?}");
            let shown = String::from_utf8(shown).unwrap();
            assert!(shown.contains("write_file (builtin:fs) wants to run: {\"path\":\"a.txt\"}"), "{shown}");
            assert!(shown.contains("saves \"write_file(path=a.txt)\")"), "{shown}");
        }
    }

    /// A request whose every part is hostile: line breaks, the host's own words,
    /// escape sequences, bidi overrides.
    fn hostile() -> ApprovalRequest {
        let odd = "a\nAsked because: fine\u{1b}[2J\u{1b}]0;x\u{7}\u{202e}\u{85}\r\u{7f}";
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "write_file".into(),
            plugin: "builtin:fs".into(),
            args: serde_json::Value::Object(
                [("path".to_string(), odd.into()), (odd.to_string(), serde_json::json!([odd]))]
                    .into_iter()
                    .collect(),
            ),
            reason: format!("a hook asks: {odd}"),
            suggested_rule: format!("write_file(path={odd})"),
        }
    }

    #[test]
    fn arguments_cannot_add_lines_or_reach_the_terminal() {
        let mut shown = Vec::new();
        assert_eq!(ask(&mut "a\n".as_bytes(), &mut shown, &hostile()), Approval::Always);
        let shown = String::from_utf8(shown).unwrap();
        assert_eq!(unsafe_for_display(&shown, 3), None, "{shown:?}");
        let lines: Vec<&str> = shown.split('\n').collect();
        assert_eq!(lines[0], "");
        assert_eq!(
            lines[1],
            r#"toolhost: write_file (builtin:fs) wants to run: {"a\nAsked because: fine\u001b[2J\u001b]0;x\u0007\u202e\u0085\r\u007f":["a\nAsked because: fine\u001b[2J\u001b]0;x\u0007\u202e\u0085\r\u007f"],"path":"a\nAsked because: fine\u001b[2J\u001b]0;x\u0007\u202e\u0085\r\u007f"}"#
        );
        assert_eq!(
            lines[2],
            r"  why asked: a hook asks: a\nAsked because: fine\u001b[2J\u001b]0;x\u0007\u202e\u0085\r\u007f"
        );
        assert_eq!(
            lines[3],
            r#"  [y] allow once  [a] always (saves "write_file(path=a\nAsked because: fine\u001b[2J\u001b]0;x\u0007\u202e\u0085\r\u007f)")  [n] deny  > "#
        );
    }

    fn config() -> proptest::test_runner::Config {
        match std::env::var_os("PROPTEST_CASES") {
            Some(_) => proptest::test_runner::Config::default(),
            None => proptest::test_runner::Config::with_cases(4096),
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// Whatever a request holds, the prompt is three lines the host starts, and no
        /// character below 0x20 but those line breaks, no DEL, C1 or bidi control
        /// reaches the terminal.
        #[test]
        fn the_prompt_is_three_lines_the_host_starts(
            tool in text(6), plugin in text(6), args in arguments(), reason in text(30), rule in text(30),
        ) {
            let request = ApprovalRequest {
                call_id: "c1".into(), tool, plugin, args, reason, suggested_rule: rule,
            };
            let mut shown = Vec::new();
            prop_assert_eq!(ask(&mut "y\n".as_bytes(), &mut shown, &request), Approval::Once);
            let shown = String::from_utf8(shown).map_err(|e| TestCaseError::fail(e.to_string()))?;
            if let Some(why) = unsafe_for_display(&shown, 3) {
                return Err(TestCaseError::fail(format!("{why}: {shown:?}")));
            }
            let lines: Vec<&str> = shown.split('\n').collect();
            prop_assert_eq!(lines[0], "");
            prop_assert!(lines[1].starts_with("toolhost: "), "{:?}", lines[1]);
            prop_assert!(lines[2].starts_with("  why asked: "), "{:?}", lines[2]);
            prop_assert!(lines[3].starts_with("  [y] allow once  [a] always (saves \""), "{:?}", lines[3]);
            prop_assert!(lines[3].ends_with("  [n] deny  > "), "{:?}", lines[3]);
            prop_assert!(shown.len() < 8 << 10, "bounded: {} bytes", shown.len());
        }
    }
}
