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
    pub(crate) config: crate::imports::ConfigValues,
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
    let context =
        types::CallContext { call_id: spec.call_id.to_string(), work_dir: spec.handed.fs.guest_path() };
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
        if let Some(cap) = store.data().access().descriptors_capped() {
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
        None => {
            let mut reason = err.root_cause().to_string();
            if let Some(why) = compiled_out(err) {
                reason.push_str(&why);
            }
            reason
        }
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

/// The resources and functions of `wasi:http` (0.2) whose names a build tool gives
/// the stubs it puts in place of the imports it leaves out.
const WASI_HTTP_RESOURCES: &[&str] = &[
    "fields",
    "incoming-request",
    "outgoing-request",
    "request-options",
    "response-outparam",
    "incoming-response",
    "incoming-body",
    "future-trailers",
    "outgoing-response",
    "outgoing-body",
    "future-incoming-response",
];

/// Whether `name` is a `wasi:http` function as the component model names it
/// (`handle`, `[constructor]fields`, `[method]outgoing-request.body`, …).
fn is_wasi_http_function(name: &str) -> bool {
    if matches!(name, "handle" | "http-error-code") {
        return true;
    }
    let Some(rest) = ["[constructor]", "[method]", "[static]", "[resource-drop]"]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
    else {
        return false;
    };
    let resource = rest.split_once('.').map_or(rest, |(resource, _)| resource);
    WASI_HTTP_RESOURCES.contains(&resource)
}

/// What a trap means when its backtrace has the shape of a capability compiled out:
/// an `unreachable` in a function named like a `wasi:http` import. componentize-js
/// (`-d http`) replaces the imports of what a build leaves out with such stubs, so a
/// `fetch()` in that build ends there, where the guest has no word of why.
fn compiled_out(err: &wasmtime::Error) -> Option<String> {
    if err.downcast_ref::<Trap>() != Some(&Trap::UnreachableCodeReached) {
        return None;
    }
    let frames = err.downcast_ref::<wasmtime::WasmBacktrace>()?.frames();
    let stub = frames.first()?.func_name()?;
    if !is_wasi_http_function(stub) {
        return None;
    }
    Some(format!(
        " in `{stub}`, a stub: the component was built without wasi:http (componentize-js `-d http`), \
         so its fetch() cannot work. Build it with wasi:http (without `-d http`; in a `toolhost new --lang js` \
         project, `./build.sh --network`) and grant the hosts it may reach (--allow-host HOST, or the \
         policy's network = [\"HOST\"])"
    ))
}

#[cfg(test)]
mod tests {
    use super::is_wasi_http_function;

    #[test]
    fn wasi_http_function_names_are_recognised() {
        for name in [
            "handle",
            "http-error-code",
            "[constructor]fields",
            "[static]fields.from-list",
            "[constructor]outgoing-request",
            "[method]outgoing-request.set-authority",
            "[method]future-incoming-response.get",
            "[static]outgoing-body.finish",
        ] {
            assert!(is_wasi_http_function(name), "{name}");
        }
        for name in
            ["", "handler", "[method]tcp-socket.subscribe", "[constructor]field", "random_get", "fields"]
        {
            assert!(!is_wasi_http_function(name), "{name}");
        }
    }
}
