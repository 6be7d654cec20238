//! Pre- and post-tool-use hooks: the policy's `[[hooks]]`, loaded once with the
//! host ([`Hooks::load`]) and asked about every call they match.
//!
//! - **Pre-tool-use** hooks run in policy order after the arguments are validated,
//!   each seeing the arguments as the hooks before it left them. A `deny` (or exit 2,
//!   or `halt`) ends the call before the permissions decide: a hook's deny wins over
//!   everything. `updated_input` replaces the arguments — validated against the
//!   tool's schema, then decided as if the model had sent them. `ask` wins over
//!   `allow`; what is left goes to the permissions as [`HookSays`], below the deny
//!   rules and the protected paths, above the mode and the allow rules.
//! - **Post-tool-use** hooks run after the result is bounded and stored: their
//!   `additional_context` (and a `deny`'s reason, as an objection) is appended to
//!   what the model reads, and `halt` marks the result: the turn should stop.
//! - A hook that fails, times out or prints garbage **denies** in pre-tool-use and
//!   is **ignored with a warning** in post-tool-use. Every answer is noted in the
//!   result ([`HookNote`]).
//!
//! Command hooks ([`command`]) run through the exec runtime with `terminal`'s
//! confinement (no network; the work dir read-only for pre hooks); component hooks
//! ([`component`]) in a fresh sandbox with no capability at all.

mod answer;
mod command;
mod component;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::error::{CallError, LoadError};
use crate::imports::exec::ExecRuntime;
use crate::policy::rules::Subject;
use crate::policy::{HookAction, HookEntry, HookEvent, HookSays, Mode};
use crate::sandbox::CallState;
pub(crate) use answer::{Answer, Verdict};

/// Bytes of a hook's `additional_context` or reason kept (the rest is cut, marked).
pub(crate) const MAX_HOOK_TEXT: usize = 8 << 10;

/// What one hook said about a call, as the result shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookNote {
    /// Which hook (`pre-tool-use[terminal(command=git push*)]`).
    pub hook: String,
    /// `allow`, `deny`, `ask`, `none` (no objection) or `failed`.
    pub decision: String,
    /// Its reason, or why it failed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// One loaded hook.
struct Hook {
    entry: HookEntry,
    runner: Runner,
}

enum Runner {
    Command(command::CommandHook),
    Component(component::ComponentHook),
}

/// The loaded hooks, in policy order.
#[derive(Default)]
pub(crate) struct Hooks {
    hooks: Vec<Hook>,
    runtime: Option<Arc<ExecRuntime>>,
    work_dir: Option<PathBuf>,
}

/// The call a hook is asked about.
#[derive(Clone, Copy)]
pub(crate) struct HookCall<'a> {
    pub(crate) tool: &'a str,
    pub(crate) args: &'a Value,
    pub(crate) call_id: &'a str,
    pub(crate) mode: Mode,
    pub(crate) cancel: &'a CancellationToken,
}

/// How a call ended, for post-tool-use hooks.
pub(crate) struct Outcome<'a> {
    pub(crate) ok: bool,
    pub(crate) output: &'a str,
    pub(crate) error: Option<&'a CallError>,
}

/// What the pre-tool-use hooks decided.
#[derive(Debug, Default)]
pub(crate) struct Pre {
    /// A hook denied (or halted, or failed): why. Nothing else matters then.
    pub(crate) deny: Option<String>,
    /// The turn should stop.
    pub(crate) halt: bool,
    /// Allow / ask / nothing, for the permissions.
    pub(crate) says: Option<HookSays>,
    /// The arguments after every update (validated), when a hook changed them.
    pub(crate) updated: Option<Value>,
    /// Text for the model, appended to the result.
    pub(crate) context: Vec<String>,
    /// Every hook's answer.
    pub(crate) notes: Vec<HookNote>,
}

/// What the post-tool-use hooks added.
#[derive(Debug, Default)]
pub(crate) struct Post {
    pub(crate) context: Vec<String>,
    pub(crate) halt: bool,
    pub(crate) notes: Vec<HookNote>,
}

impl Hooks {
    /// Load `entries`: resolve every command's program, read, pin-check and compile
    /// every component (once, here). An error names the hook.
    pub(crate) fn load(
        entries: &[HookEntry],
        engine: &Engine,
        linker: &wasmtime::component::Linker<CallState>,
        runtime: &Arc<ExecRuntime>,
        work_dir: Option<&Path>,
    ) -> Result<Self, LoadError> {
        let mut hooks = Vec::new();
        for entry in entries {
            let failed = |why: String| LoadError::BadPlugin(format!("hook {}: {why}", entry.label()));
            let runner = match &entry.action {
                HookAction::Command(argv) => Runner::Command(
                    command::CommandHook::new(argv, &runtime.settings().search_path(), work_dir)
                        .map_err(failed)?,
                ),
                HookAction::Component { source, sha256 } => Runner::Component(
                    component::ComponentHook::load(
                        engine,
                        linker,
                        source,
                        sha256,
                        &entry.label(),
                        entry.timeout,
                    )
                    .map_err(|e| failed(e.to_string()))?,
                ),
            };
            hooks.push(Hook { entry: entry.clone(), runner });
        }
        Ok(Self { hooks, runtime: Some(runtime.clone()), work_dir: work_dir.map(Path::to_path_buf) })
    }

    /// Whether any hook is loaded.
    pub(crate) fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The files the hooks run (programs given by path, components), as given and
    /// resolved: protected paths, since what they answer decides calls.
    pub(crate) fn files(&self) -> impl Iterator<Item = &Path> {
        self.hooks.iter().flat_map(|h| {
            let given = match &h.entry.action {
                HookAction::Command(argv) => argv.first().filter(|p| p.contains('/')).map(Path::new),
                HookAction::Component { source, .. } => Some(source.as_path()),
            };
            let resolved = match &h.runner {
                Runner::Command(c) => Some(c.program()),
                Runner::Component(_) => None,
            };
            given.into_iter().chain(resolved)
        })
    }

    fn matching<'a>(
        &'a self,
        event: HookEvent,
        tool: &'a str,
        args: &Value,
    ) -> impl Iterator<Item = &'a Hook> {
        let subject = Subject::new(args, self.work_dir.as_deref());
        // A matcher sees a call the way a deny rule does: `terminal(command=git push*)`
        // also sees `cd x && git push` (any command of the line, unwrapped).
        self.hooks
            .iter()
            .filter(move |h| h.entry.event == event && h.entry.matcher.denies(tool, &subject))
            .collect::<Vec<_>>()
            .into_iter()
    }

    async fn ask(
        &self,
        hook: &Hook,
        event: HookEvent,
        call: &HookCall<'_>,
        outcome: Option<&Outcome<'_>>,
    ) -> Result<Answer, String> {
        let input = answer::input(event, call, outcome);
        match &hook.runner {
            Runner::Command(c) => {
                let Some(runtime) = &self.runtime else { return Err("no exec runtime".into()) };
                c.run(runtime, &hook.entry, &input, call, event == HookEvent::PostToolUse).await
            }
            Runner::Component(c) => c.run(&input, call).await,
        }
    }

    /// Run the pre-tool-use hooks matching `call`, in order; `validate` checks (and
    /// coerces) updated arguments against the tool's schema.
    pub(crate) async fn pre(
        &self,
        call: HookCall<'_>,
        validate: &(dyn Fn(Value) -> Result<Value, CallError> + Sync),
    ) -> Pre {
        let mut pre = Pre::default();
        let mut args = call.args.clone();
        let (mut allow, mut ask) = (None::<String>, None::<String>);
        for hook in self.matching(HookEvent::PreToolUse, call.tool, call.args) {
            let label = hook.entry.label();
            let current = HookCall { args: &args, ..call };
            let answer = match self.ask(hook, HookEvent::PreToolUse, &current, None).await {
                Ok(answer) => answer,
                Err(why) => {
                    let reason = format!("hook {label} failed, so the call is denied: {why}");
                    pre.notes.push(HookNote { hook: label, decision: "failed".into(), reason: why });
                    pre.deny = Some(reason);
                    return pre;
                }
            };
            pre.notes.push(answer.note(&label));
            pre.context.extend(answer.additional_context.clone());
            if answer.halt || answer.decision == Some(Verdict::Deny) {
                pre.halt = answer.halt;
                let why = answer.reason.clone().unwrap_or_else(|| "no reason given".into());
                pre.deny = Some(format!("blocked by hook {label}: {why}"));
                return pre;
            }
            if let Some(updated) = answer.updated_input {
                match validate(updated) {
                    Ok(valid) => {
                        args = valid;
                        pre.updated = Some(args.clone());
                    }
                    Err(err) => {
                        pre.deny = Some(format!("hook {label} gave arguments the tool refuses: {err}"));
                        return pre;
                    }
                }
            }
            let reason = answer.reason.unwrap_or_else(|| label.clone());
            match answer.decision {
                Some(Verdict::Ask) if ask.is_none() => ask = Some(reason),
                Some(Verdict::Allow) if allow.is_none() => allow = Some(reason),
                _ => {}
            }
        }
        pre.says = match (ask, allow) {
            (Some(why), _) => Some(HookSays::Ask(why)),
            (None, Some(why)) => Some(HookSays::Allow(why)),
            (None, None) => None,
        };
        pre
    }

    /// Run the post-tool-use hooks matching `call`, in order, with its `outcome`. A
    /// hook that fails is logged, noted and otherwise ignored.
    pub(crate) async fn post(&self, call: HookCall<'_>, outcome: Outcome<'_>) -> Post {
        let mut post = Post::default();
        for hook in self.matching(HookEvent::PostToolUse, call.tool, call.args) {
            let label = hook.entry.label();
            match self.ask(hook, HookEvent::PostToolUse, &call, Some(&outcome)).await {
                Ok(answer) => {
                    post.notes.push(answer.note(&label));
                    post.context.extend(answer.additional_context.clone());
                    if answer.decision == Some(Verdict::Deny) {
                        let why = answer.reason.clone().unwrap_or_else(|| "no reason given".into());
                        post.context.push(format!("hook {label} objects: {why}"));
                    }
                    post.halt |= answer.halt;
                }
                Err(why) => {
                    tracing::warn!(hook = %label, "post-tool-use hook failed and is ignored: {why}");
                    post.notes.push(HookNote { hook: label, decision: "failed".into(), reason: why });
                }
            }
        }
        post
    }
}
