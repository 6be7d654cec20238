//! Authorizing a call, between argument validation and the sandbox: the
//! pre-tool-use hooks speak first (see [`crate::hooks`]), the permissions decide
//! with what they said, the approver answers what is left open (one question at a
//! time), and a denied call never enters its plugin.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::host::Host;
use crate::error::{CallError, codes};
use crate::hooks::HookNote;
use crate::load::registry::Tool;
use crate::policy::shown::{MAX_SHOWN, plain};
use crate::policy::{Approval, ApprovalRequest, Approver, Decision, HookSays};

/// What the permissions decided about a call, and why; part of every result that got
/// that far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionNote {
    /// Whether the call was allowed to run.
    pub allowed: bool,
    /// Why (`read-only tool`, `rule deny write_file(path=.env)`, `approved once`, …).
    pub reason: String,
    /// What each hook that saw the call said (pre- and post-tool-use, in order).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookNote>,
}

impl PermissionNote {
    fn allow(reason: impl Into<String>) -> Self {
        Self { allowed: true, reason: reason.into(), hooks: Vec::new() }
    }

    pub(crate) fn deny(reason: impl Into<String>) -> Self {
        Self { allowed: false, reason: reason.into(), hooks: Vec::new() }
    }
}

impl Host {
    /// Decide a call to `tool` with validated `args`, given what the pre-tool-use
    /// hooks said (`hook`): allowed (and why), or denied with the error the result
    /// carries. What the permissions leave open goes to the call's own `approver`
    /// when it brought one, else to the host's.
    pub(crate) async fn authorize(
        &self,
        call_id: &str,
        tool: &Tool,
        args: &Value,
        hook: &HookSays,
        approver: Option<&Arc<dyn Approver>>,
        cancel: &CancellationToken,
    ) -> Result<PermissionNote, (PermissionNote, CallError)> {
        let spec = tool.spec();
        let deny = |reason: String| {
            Err((PermissionNote::deny(reason.clone()), CallError::new(codes::PERMISSION_DENIED, reason)))
        };
        let cancelled = || Err((PermissionNote::deny("cancelled"), CallError::new(codes::CANCELLED, "")));
        let (reason, suggested_rule) = match self.decide_hooked(&spec.name, spec.read_only, args, hook) {
            Decision::Allow(reason) => return Ok(PermissionNote::allow(reason)),
            Decision::Deny(reason) => return deny(reason),
            Decision::Ask { reason, suggested_rule } => (reason, suggested_rule),
        };
        // The host's approver (one terminal) is asked one question at a time; a
        // call's own asks its own user, so its questions wait for nobody else's.
        let (approver, _turn) = match approver {
            Some(approver) => (approver, None),
            None => {
                let Some(approver) = self.approver() else {
                    return deny(format!(
                        "{} needs approval and there is no one to ask (headless)",
                        spec.name
                    ));
                };
                let turn = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return cancelled(),
                    turn = self.approval_turn() => turn,
                };
                (approver, Some(turn))
            }
        };
        // An "always" given meanwhile may already cover this call.
        if let Decision::Allow(reason) = self.decide_hooked(&spec.name, spec.read_only, args, hook) {
            return Ok(PermissionNote::allow(reason));
        }
        let request = ApprovalRequest {
            call_id: call_id.to_string(),
            tool: spec.name.clone(),
            plugin: tool.source().to_string(),
            args: args.clone(),
            reason,
            suggested_rule,
        };
        let answer = tokio::select! {
            biased;
            _ = cancel.cancelled() => return cancelled(),
            answer = approver.approve(&request) => answer,
        };
        match answer {
            Approval::Once => Ok(PermissionNote::allow("approved once")),
            Approval::Always => {
                let rule = plain(&request.suggested_rule, MAX_SHOWN);
                match self.allow_always(&request.suggested_rule) {
                    Ok(()) => Ok(PermissionNote::allow(format!("approved always: rule allow {rule}"))),
                    Err(e) => {
                        let e = plain(&e.to_string(), MAX_SHOWN);
                        tracing::warn!("the rule was added for this session only: {e}");
                        Ok(PermissionNote::allow(format!(
                            "approved always: rule allow {rule} (not saved: {e})"
                        )))
                    }
                }
            }
            Approval::Deny(feedback) => deny(match feedback {
                Some(why) => format!("the user denied {}: {why}", spec.name),
                None => format!("the user denied {}", spec.name),
            }),
            Approval::NoAnswer(why) => deny(format!("{} was not approved: {why}", spec.name)),
        }
    }
}
