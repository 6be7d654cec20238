//! "Ask": the [`Approver`] an embedder supplies to answer calls the permissions
//! don't decide on their own. The host's approver is asked one call at a time; a
//! call may bring its own (an MCP client asking its user). Without an approver
//! (headless) every such call is denied, and the denial says so.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// A call waiting for approval.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The plugin that provides it.
    pub plugin: String,
    /// Its arguments (already validated).
    pub args: Value,
    /// Why it needs approval.
    pub reason: String,
    /// The allow rule an [`Approval::Always`] answer adds (and saves to the policy file).
    pub suggested_rule: String,
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    Once,
    /// Run it, and add the suggested rule to the allow rules (saved to the policy file).
    Always,
    /// Don't run it; an optional word for the model.
    Deny(Option<String>),
    /// Nobody answered, or not in a form that names one of the answers above (a
    /// timeout, a malformed answer, a client that cannot be asked): the call is
    /// not run, and this says why.
    NoAnswer(String),
}

impl Approval {
    /// The words that name the answers, as the terminal accepts them in full and
    /// an MCP client's form offers them.
    pub const DECISIONS: [&'static str; 3] = ["once", "always", "deny"];

    /// The answer `word` names (`once`, `always` or `deny`), if any.
    pub fn from_decision(word: &str) -> Option<Self> {
        match word {
            "once" => Some(Self::Once),
            "always" => Some(Self::Always),
            "deny" => Some(Self::Deny(None)),
            _ => None,
        }
    }
}

/// Answers approval requests: a terminal prompt, a UI, a chat message.
pub trait Approver: Send + Sync {
    /// Answer `request`. The call waits (and can be cancelled) meanwhile.
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>>;
}
