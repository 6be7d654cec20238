//! Approvals through the MCP client: a call the permissions answer with *ask*
//! is asked of the client's user, as the terminal asks under `toolhost call`.
//! Each `tools/call` brings its own approver
//! ([`ToolCall::with_approver`](crate::ToolCall::with_approver)),
//! chosen by the request's protocol era and the client's capabilities:
//!
//! - **2026-07-28**, the client declared `elicitation` (form): the call stops
//!   at the question and the answer is an [`InputRequiredResult`] holding the
//!   question as an `elicitation/create` under `inputRequests.approval`, and a
//!   sealed `requestState` ([`super::approve_state`]: the tool, a digest of the
//!   exact arguments, a digest of the question, a nonce, an expiry). The client
//!   retries with `inputResponses.approval` and the state under a new id; the
//!   call then runs from the start on whichever instance gets it, and when it
//!   reaches the same question the answer is taken, once
//!   ([`super::approve_spent`]: recorded in the shared output store, so once
//!   across the instances sharing it). Nothing waits in any process's memory.
//! - **2025-11-25** (a session), the client declared `elicitation`: an
//!   `elicitation/create` request to the client, answered within the timeout.
//! - Neither: the call is denied, saying the client cannot be asked.
//!
//! A retry whose state does not open (forged, changed, expired, or sealed by an
//! instance with another key) or does not fit the call it came back with
//! (another tool, other arguments, another question, an answer used already)
//! is refused with `-32602` before anything runs; one whose use cannot be
//! recorded (the store is unreachable) is refused with `-32603`
//! (`approval_store_unavailable`), nothing run, the answer still unused; the question
//! ([`super::approve_question`]) and its answers: once, always, deny.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, InputRequest, InputRequests,
    InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use rmcp::{ErrorData, RoleServer};
use serde_json::json;

use super::approve_question::{decision, decision_from_json, question};
use super::approve_spent::Spent;
use super::approve_state::{Mismatch, Sealed, StateKey};
use crate::call::host::Host;
use crate::output::Claim;
use crate::policy::{Approval, ApprovalRequest, Approver};

/// How long a question waits for its answer unless told otherwise: a
/// 2025-11-25 client's `elicitation/create`, and a 2026-07-28 `requestState`.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);
/// The question's key in `inputRequests` and `inputResponses`.
pub(crate) const INPUT_KEY: &str = "approval";
/// `data.reason` of a retry refused because its use could not be recorded.
pub(crate) const STORE_UNAVAILABLE: &str = "approval_store_unavailable";

/// How `serve` asks a client's user: the key questions are sealed with, how
/// long an answer is awaited (and a sealed question stays answerable), and
/// where used answers are recorded.
#[derive(Clone)]
pub struct Approvals {
    key: StateKey,
    timeout: Duration,
    spent: Arc<Spent>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").field("key", &self.key).field("timeout", &self.timeout).finish()
    }
}

impl Approvals {
    /// Questions sealed with `key`, answered within `timeout`; used answers
    /// recorded in `spent_dir` (a directory the processes of one machine may
    /// share), or in this process's memory when `None`. [`Approvals::for_host`]
    /// records them in the host's output store when that is shared.
    pub fn new(key: StateKey, timeout: Duration, spent_dir: Option<PathBuf>) -> Self {
        Self { key, timeout, spent: Arc::new(Spent::new(spent_dir)) }
    }

    /// The defaults for `host`: a random key of this process's own, the
    /// default timeout, used answers in its output store when that is shared
    /// (on disk or in Redis), else in the data dir's `approvals/`.
    pub fn for_host(host: &Host) -> Self {
        let dir = host.data_dir().map(|dir| dir.join("approvals"));
        let spent = Spent::for_store(&host.outputs, dir);
        Self { key: StateKey::random(), timeout: DEFAULT_APPROVAL_TIMEOUT, spent: Arc::new(spent) }
    }

    /// Seal questions with `key` (`serve --state-key-file`: the same file for
    /// every instance behind one endpoint).
    pub fn with_key(mut self, key: StateKey) -> Self {
        self.key = key;
        self
    }

    /// Await an answer for `timeout` (`serve --approval-timeout`).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long an answer is awaited.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How the call `params` asks, for a request with `context`; a retry
    /// whose state is refused is an error.
    pub(crate) fn asking(
        &self,
        host: &Arc<Host>,
        params: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Asking, ErrorData> {
        let modern =
            context.protocol_version().is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let can_elicit = context.client_capabilities().and_then(|caps| caps.elicitation).is_some_and(|e| {
            // A capability that names no mode means form (2025-06-18).
            e.form.is_some() || e.url.is_none()
        });
        if !modern {
            if !can_elicit {
                return Ok(Asking::direct(CannotAsk));
            }
            let peer = context.peer.clone();
            return Ok(Asking::direct(Eliciting { peer, host: host.clone(), timeout: self.timeout }));
        }
        let answer = params.input_responses.as_ref().and_then(|answers| answers.get(INPUT_KEY));
        let sealed = match (&params.request_state, answer) {
            (Some(state), _) => Some(self.open(state, &params.name)?),
            (None, Some(_)) => {
                return Err(refused("inputResponses came without the requestState they answer"));
            }
            (None, None) => None,
        };
        match (sealed, answer) {
            (Some(sealed), Some(answer)) => {
                let answered = Arc::new(Answered {
                    sealed,
                    answer: decision_from_json(answer),
                    spent: self.spent.clone(),
                    refused: Mutex::new(None),
                });
                Ok(Asking { approver: answered.clone(), kind: Kind::Answered(answered) })
            }
            // No answer (yet): ask, in the result.
            _ if can_elicit => {
                let deferred = Arc::new(Deferred::default());
                Ok(Asking { approver: deferred.clone(), kind: Kind::Deferred(deferred) })
            }
            _ => Ok(Asking::direct(CannotAsk)),
        }
    }

    /// Open a retry's `state` for a call to `tool`, or refuse it.
    fn open(&self, state: &str, tool: &str) -> Result<Sealed, ErrorData> {
        let sealed = self.key.open(state).map_err(|e| {
            // One answer for every way a state fails to open; the detail is logged.
            tracing::info!(error = %e, "refused a requestState");
            let hint = if self.key.is_shared() {
                ""
            } else {
                " This instance has no --state-key-file, so it checks only the questions it asked \
                 itself: instances behind one endpoint need the same --state-key-file."
            };
            refused(&format!(
                "the requestState does not verify: it was forged or changed, it expired (answers are \
                 taken for {} s), or another server instance sealed it.{hint} Call the tool again to \
                 be asked again.",
                self.timeout.as_secs()
            ))
        })?;
        sealed.check_tool(tool).map_err(|m| refused(&mismatch(&m)))?;
        Ok(sealed)
    }

    /// What the client gets for a call that was asked as `asking` and ended with `result`.
    pub(crate) fn finish(
        &self,
        host: &Host,
        asking: Asking,
        result: CallToolResult,
    ) -> Result<CallToolResponse, ErrorData> {
        match asking.kind {
            Kind::Direct => Ok(result.into()),
            Kind::Answered(answered) => {
                match answered.refused.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    Some(error) => Err(error),
                    None => Ok(result.into()),
                }
            }
            Kind::Deferred(deferred) => {
                let Some(request) = deferred.asked.lock().unwrap_or_else(|e| e.into_inner()).take() else {
                    return Ok(result.into());
                };
                let expires = SystemTime::now() + self.timeout;
                let state = self.key.seal(&Sealed::asking(&request, expires), self.timeout);
                let elicit = InputRequest::Elicitation(ElicitRequest::new(question(host, &request)));
                let requests = InputRequests::from([(INPUT_KEY.to_string(), elicit)]);
                Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
            }
        }
    }
}

/// How one call asks: its approver, and what to do with the outcome.
pub(crate) struct Asking {
    approver: Arc<dyn Approver>,
    kind: Kind,
}

enum Kind {
    /// The approver's answer is the outcome.
    Direct,
    /// The question goes back in the result (2026-07-28, first pass).
    Deferred(Arc<Deferred>),
    /// The answer came with the retry (2026-07-28).
    Answered(Arc<Answered>),
}

impl Asking {
    fn direct(approver: impl Approver + 'static) -> Self {
        Self { approver: Arc::new(approver), kind: Kind::Direct }
    }

    /// The approver the call brings.
    pub(crate) fn approver(&self) -> Arc<dyn Approver> {
        self.approver.clone()
    }
}

type Answer<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Approval> + Send + 'a>>;

/// A client with no way to be asked.
struct CannotAsk;

impl Approver for CannotAsk {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> Answer<'a> {
        Box::pin(async {
            Approval::NoAnswer(
                "it needs approval, and this MCP client cannot be asked: it declared no `elicitation` \
                 capability (form mode) to show the question to its user"
                    .to_string(),
            )
        })
    }
}

/// A 2025-11-25 session's client, asked with `elicitation/create`.
struct Eliciting {
    peer: Peer<RoleServer>,
    host: Arc<Host>,
    timeout: Duration,
}

impl Approver for Eliciting {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> Answer<'a> {
        Box::pin(async move {
            let params = question(&self.host, request);
            match self.peer.create_elicitation_with_timeout(params, Some(self.timeout)).await {
                Ok(answer) => decision(&answer),
                Err(ServiceError::Timeout { .. }) => Approval::NoAnswer(format!(
                    "the MCP client gave no answer within {} s",
                    self.timeout.as_secs()
                )),
                Err(ServiceError::UnexpectedResponse) => Approval::NoAnswer(
                    "the MCP client's answer is not an elicitation result (accept, decline or cancel)"
                        .to_string(),
                ),
                Err(ServiceError::McpError(e)) => {
                    Approval::NoAnswer(format!("the MCP client could not ask: {}", e.message))
                }
                Err(e) => Approval::NoAnswer(format!("the MCP client could not be asked: {e}")),
            }
        })
    }
}

/// A 2026-07-28 first pass: keeps the question for the result, runs nothing.
#[derive(Default)]
struct Deferred {
    asked: Mutex<Option<ApprovalRequest>>,
}

impl Approver for Deferred {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> Answer<'a> {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.clone());
        Box::pin(async { Approval::NoAnswer("the question went back to the MCP client".to_string()) })
    }
}

/// A 2026-07-28 retry: the answer to a sealed question, good once, for that question only.
struct Answered {
    sealed: Sealed,
    answer: Approval,
    spent: Arc<Spent>,
    /// Why the retry is refused (the answer does not fit the call, or its use
    /// could not be recorded).
    refused: Mutex<Option<ErrorData>>,
}

impl Answered {
    fn refuse(&self, error: ErrorData) -> Approval {
        let why = error.message.to_string();
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
        Approval::NoAnswer(why)
    }
}

impl Approver for Answered {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> Answer<'a> {
        Box::pin(async move {
            if let Err(m) = self.sealed.check(request) {
                return self.refuse(refused(&mismatch(&m)));
            }
            match self.spent.spend(&self.sealed.nonce, self.sealed.expires()).await {
                Ok(Claim::First) => self.answer.clone(),
                Ok(Claim::Again) => self.refuse(refused(
                    "this answer was used already: an answer approves one call. Call the tool again \
                     to be asked again.",
                )),
                Err(e) => {
                    tracing::warn!(error = %e, "could not record an approval as used");
                    self.refuse(ErrorData::internal_error(
                        format!(
                            "the answer could not be recorded as used, so it was not taken and nothing \
                             ran: {e}. Send the same retry again when the store is back."
                        ),
                        Some(json!({"reason": STORE_UNAVAILABLE})),
                    ))
                }
            }
        })
    }
}

/// What a mismatch says.
fn mismatch(m: &Mismatch) -> String {
    match m {
        Mismatch::Tool(asked) => format!("this answer was given about a call to `{asked}`, not this tool"),
        Mismatch::Args => "this answer was given about other arguments: an answer approves the exact \
                           arguments it was asked about"
            .to_string(),
        Mismatch::Question => "this answer was given to another question (the reason to ask, or the rule \
                               `always` saves, has changed since)"
            .to_string(),
    }
}

/// A refused retry: `-32602`, the reason in the message.
fn refused(why: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("Invalid params: {why}"),
        Some(json!({"reason": "invalid_request_state"})),
    )
}
