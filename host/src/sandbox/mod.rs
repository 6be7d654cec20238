//! Stage 3, once per call: a fresh [`Store`](wasmtime::Store) and instance with
//! only the capabilities the call holds, and the limits that bound it.
//!
//! Deny by default: no env but the plugin's grant, no args, no stdin, no sockets,
//! no inherited stdio. What a call gets is spelled out by its [`StoreSpec`]: at most
//! the work dir and the read-only dirs ([`FsAccess`](crate::imports::FsAccess),
//! read-only unless the tool may write), network access only for a plugin that
//! imports fetch, exec access only for one that imports exec, a memory cap, fuel,
//! one [`Deadline`] checked at every epoch tick, and captured, capped stdout/stderr.
//! The plugin is reached only through what instantiating it needs ([`Prepared`]).

pub(crate) mod fdlimit;
mod hook;
pub(crate) mod pipe;
mod store;
mod typed;

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wasmtime::Trap;
use wasmtime_wasi::I32Exit;

pub(crate) use hook::run_hook;
pub(crate) use store::{CallState, StoreSpec, linker};
pub(crate) use typed::run_typed;

use crate::bindings::HostPluginPre;
use crate::bindings::toolhost::plugin::types;
use crate::error::{CallError, codes};
use crate::limits::{Deadline, Limits};
use pipe::CappedPipe;

/// What instantiating a component takes, prepared once at load: the engine, the
/// pre-linked component (a plugin's by default, or a hook's), its display name and
/// the env every call of it sees.
pub(crate) struct Prepared<P = HostPluginPre<CallState>> {
    /// The engine it was compiled for.
    pub(crate) engine: wasmtime::Engine,
    /// The component, linked and type-checked against the host's imports.
    pub(crate) pre: P,
    /// The plugin's display name.
    pub(crate) name: Arc<str>,
    /// The environment granted to it.
    pub(crate) env: Arc<[(String, String)]>,
    /// What `wasi:config/store` answers it (empty unless it imports the interface).
    pub(crate) config: crate::imports::config::ConfigValues,
}

/// Run `tool` with `args_json` in a fresh instance. Never panics; every way a call
/// can end is a `Result`.
pub(crate) async fn run(
    prepared: &Prepared,
    spec: StoreSpec<'_>,
    tool: &str,
    args_json: &str,
    cancel: &CancellationToken,
) -> Result<types::ToolOutput, CallError> {
    let (limits, deadline) = (spec.limits, spec.deadline);
    let context = types::CallContext { call_id: spec.call_id.to_string(), work_dir: spec.fs.guest_path() };
    let (mut store, stderr) = store::new_store(prepared, spec)?;
    let outcome = bounded(deadline, Some(cancel), async {
        let instance = prepared.pre.instantiate_async(&mut store).await?;
        instance.toolhost_plugin_tools().call_call(&mut store, tool, args_json, &context).await
    })
    .await;
    let result = match outcome? {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(err)) => Err(CallError::new(err.code, err.message)),
        Err(trap) => Err(classify_trap(&trap, store.data(), limits, &stderr)),
    };
    // A guest that hit the open-handle cap may report it any way it likes: say what
    // happened.
    result.map_err(|mut err| {
        if let Some(cap) = store.data().fs_guard.cap_tripped() {
            err.message.push_str(&format!(
                " (the call reached its cap of {cap} open files and directory listings at once)"
            ));
        }
        err
    })
}

/// Ask a fresh instance for its tools, under `limits` (memory cap, fuel, deadline)
/// with the plugin's env and nothing else: no filesystem, network or processes. The
/// error says which limit or fault ended it.
pub(crate) async fn list_tools(
    prepared: &Prepared,
    limits: &Limits,
) -> Result<Vec<types::ToolSpec>, CallError> {
    let deadline = Deadline::after(limits.timeout.min(limits.max_timeout));
    let (mut store, stderr) = store::new_store(prepared, StoreSpec::bare("load", limits, deadline))?;
    let listing = bounded(deadline, None, async {
        let instance = prepared.pre.instantiate_async(&mut store).await?;
        instance.toolhost_plugin_tools().call_list_tools(&mut store).await
    })
    .await
    .map_err(|_| {
        let ms = deadline.budget.as_millis();
        CallError::new(codes::TIMEOUT, format!("it took longer than {ms} ms"))
    })?;
    listing.map_err(|trap| classify_trap(&trap, store.data(), limits, &stderr))
}

/// `run` until it ends, the deadline passes (`timeout`) or `cancel` fires
/// (`cancelled`); dropping `run` drops the guest's instance with it.
pub(super) async fn bounded<T>(
    deadline: Deadline,
    cancel: Option<&CancellationToken>,
    run: impl Future<Output = T>,
) -> Result<T, CallError> {
    let cancelled = async {
        match cancel {
            Some(cancel) => cancel.cancelled().await,
            None => std::future::pending().await,
        }
    };
    // `run` is polled before the timer: a call that ends in its first poll (most
    // do: the guest runs on its fiber until it returns or reaches an epoch
    // yield) never registers the timer, which would take the time driver's lock
    // and may wake the thread parked on it, twice per call.
    tokio::select! {
        biased;
        _ = cancelled => Err(CallError::new(codes::CANCELLED, "")),
        result = run => Ok(result),
        _ = tokio::time::sleep_until(deadline.at.into()) => Err(deadline.exceeded()),
    }
}

/// Turn a trap into the code that names the limit (or the fault) behind it.
pub(super) fn classify_trap(
    err: &wasmtime::Error,
    state: &CallState,
    limits: &Limits,
    stderr: &CappedPipe,
) -> CallError {
    if state.limiter.refused {
        return CallError::new(
            codes::MEMORY_LIMIT,
            format!(
                "the tool tried to use more than {} MiB of memory and was stopped",
                limits.memory_bytes >> 20
            ),
        );
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => {
            return CallError::new(
                codes::FUEL_EXHAUSTED,
                format!("the tool used its whole CPU budget ({} fuel) and was stopped", limits.fuel),
            );
        }
        Some(Trap::Interrupt) => {
            return CallError::new(codes::TIMEOUT, "the call was interrupted at its deadline");
        }
        _ => {}
    }
    let reason = match err.downcast_ref::<I32Exit>() {
        Some(exit) => format!("the tool exited with status {}", exit.0),
        None => err.root_cause().to_string(),
    };
    let (stderr_text, _) = stderr.contents();
    let stderr_text = stderr_text.trim_end();
    let tail = &stderr_text[stderr_text.ceil_char_boundary(stderr_text.len().saturating_sub(2000))..];
    if tail.is_empty() {
        CallError::new(codes::TRAP, reason)
    } else {
        CallError::new(codes::TRAP, format!("{reason}\nguest stderr:\n{tail}"))
    }
}
