//! A hook component's call: a fresh store with no capability ([`StoreSpec::bare`]),
//! the hook's limits and deadline, and its one export, `handle`.

use tokio_util::sync::CancellationToken;

use crate::bindings::hook::ToolHookPre;
use crate::bindings::hook::exports::toolhost::plugin::hooks::{HookInput, HookOutput};
use crate::error::CallError;
use crate::limits::{Deadline, Limits};

use super::{CallState, Prepared, StoreSpec, bounded, classify_trap, store};

/// Ask the hook in `prepared` about `input`, under `limits` and `deadline`. A trap,
/// the deadline or a limit is an error naming it.
pub(crate) async fn run_hook(
    prepared: &Prepared<ToolHookPre<CallState>>,
    limits: &Limits,
    deadline: Deadline,
    input: &HookInput,
    cancel: &CancellationToken,
) -> Result<HookOutput, CallError> {
    let (mut store, stderr) = store::new_store(prepared, StoreSpec::bare(&input.call_id, limits, deadline))?;
    let outcome = bounded(deadline, Some(cancel), async {
        let instance = prepared.pre.instantiate_async(&mut store).await?;
        instance.toolhost_plugin_hooks().call_handle(&mut store, input).await
    })
    .await?;
    outcome.map_err(|trap| classify_trap(&trap, store.data(), limits, &stderr))
}
