//! The CLI's approver: asks on the terminal — allow once, always (saved to the
//! policy file as an allow rule), or deny. Used only when stdin and stderr are both
//! terminals; otherwise the host has no approver and such calls are denied.

use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};
use std::pin::Pin;

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
    let args = serde_json::to_string(&request.args).unwrap_or_default();
    let _ = writeln!(output, "\ntoolhost: {} ({}) wants to run: {args}", request.tool, request.plugin);
    let _ = writeln!(output, "  why asked: {}", request.reason);
    loop {
        let _ =
            write!(output, "  [y] allow once  [a] always (saves `{}`)  [n] deny  > ", request.suggested_rule);
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

#[cfg(test)]
mod tests {
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
            assert!(shown.contains("saves `write_file(path=a.txt)`"), "{shown}");
        }
    }
}
