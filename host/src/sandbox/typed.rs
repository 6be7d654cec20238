//! Calling one function of a typed-export component: a fresh store and instance
//! exactly as for a `toolhost:plugin` call (the same [`StoreSpec`]: limits, fuel,
//! epoch deadline, memory cap, capabilities), then a dynamic call with component
//! values.

use tokio_util::sync::CancellationToken;
use wasmtime::component::{ComponentExportIndex, InstancePre, Val};

use super::{CallState, Prepared, StoreSpec, bounded, classify_trap, store};
use crate::error::{CallError, codes};

/// Run the function exported at `export` with `params` in a fresh instance; its
/// result (`None` for a function with none). Never panics.
pub(crate) async fn run_typed(
    prepared: &Prepared<InstancePre<CallState>>,
    spec: StoreSpec<'_>,
    export: &ComponentExportIndex,
    params: &[Val],
    has_result: bool,
    cancel: &CancellationToken,
) -> Result<Option<Val>, CallError> {
    let (limits, deadline) = (spec.limits, spec.deadline);
    let (mut store, stderr) = store::new_store(prepared, spec)?;
    let mut results = vec![Val::Bool(false); usize::from(has_result)];
    let outcome = bounded(deadline, Some(cancel), async {
        let instance = prepared.pre.instantiate_async(&mut store).await?;
        let func = instance
            .get_func(&mut store, export)
            .ok_or_else(|| wasmtime::Error::msg("the exported function is missing from the instance"))?;
        func.call_async(&mut store, params, &mut results).await
    })
    .await?;
    match outcome {
        Ok(()) => Ok(results.pop()),
        // wasmtime's bound on what one call copies out of the guest (its "hostcall
        // fuel", 128 MiB of values by default): the result was too large to take.
        Err(trap)
            if trap.root_cause().to_string().contains("fuel allocated for hostcalls has been exhausted") =>
        {
            Err(CallError::new(
                codes::OUTPUT_LIMIT,
                format!(
                    "the function's result is too large to take from the guest (more than {} MiB as host values)",
                    store.hostcall_fuel() >> 20
                ),
            ))
        }
        Err(trap) => {
            let mut err = classify_trap(&trap, store.data(), limits, &stderr);
            if let Some(cap) = store.data().access().descriptors_capped() {
                err.message.push_str(&format!(
                    " (the call reached its cap of {cap} open files and directory listings at once)"
                ));
            }
            Err(err)
        }
    }
}
