//! One store's state, [`CallState`]: the WASI context, the memory cap, and every
//! capability's per-call state ([`CallAccess`]), which each capability's views
//! reach through [`CallStore`]. One constructor serves calls and tool listings alike.

use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::Prepared;
use super::pipe::CappedPipe;
use crate::error::{CallError, LoadError, codes};
use crate::imports::{CallAccess, CallInfo, CallStore, Handed, StoreParts};
use crate::limits::{Deadline, Limits};

/// What one store is made with: the call, what it is handed, its limits.
pub(crate) struct StoreSpec<'a> {
    /// The call id (`load` for a tool listing).
    pub(crate) call_id: &'a str,
    /// What the call holds, capability by capability.
    pub(crate) handed: Handed,
    /// Memory, fuel, stdio caps.
    pub(crate) limits: &'a Limits,
    /// When it must be over.
    pub(crate) deadline: Deadline,
}

impl<'a> StoreSpec<'a> {
    /// A store with no capability at all (a tool listing, a hook): no filesystem,
    /// network or processes.
    pub(crate) fn bare(call_id: &'a str, limits: &'a Limits, deadline: Deadline) -> Self {
        Self { call_id, handed: Handed::nothing(limits.write_bytes), limits, deadline }
    }
}

/// Per-store state: the WASI context, the memory cap, and every capability's state.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    access: CallAccess,
}

/// A fresh store for `prepared` as `spec` says, its guest's stderr (for trap
/// messages), with fuel set and the guest yielding at every epoch tick (where the
/// deadline and cancellation take effect).
pub(crate) fn new_store<P>(
    prepared: &Prepared<P>,
    spec: StoreSpec<'_>,
) -> Result<(Store<CallState>, CappedPipe), CallError> {
    let limits = spec.limits;
    let stderr = CappedPipe::new(limits.stdio_bytes);
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdout(CappedPipe::new(limits.stdio_bytes))
        .stderr(stderr.clone())
        .allow_blocking_current_thread(true);
    // Only the variables granted to this plugin; nothing is inherited.
    for (key, value) in prepared.env.iter() {
        wasi.env(key, value);
    }
    spec.handed.prepare(&mut wasi)?;
    let call =
        CallInfo { plugin: prepared.name.clone(), call_id: spec.call_id.into(), deadline: spec.deadline.at };
    let state = CallState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter { cap: limits.memory_bytes, refused: false },
        access: CallAccess::new(call, spec.handed, prepared.config.clone()),
    };
    let mut store = Store::new(&prepared.engine, state);
    store.limiter(|state| &mut state.limiter);
    store.set_fuel(limits.fuel).map_err(|e| CallError::new(codes::HOST_ERROR, format!("{e:#}")))?;
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    Ok((store, stderr))
}

impl CallState {
    /// Every capability's state for the call.
    pub(super) fn access(&self) -> &CallAccess {
        &self.access
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl CallStore for CallState {
    fn parts(&mut self) -> StoreParts<'_> {
        StoreParts { wasi: &mut self.wasi, table: &mut self.table, access: &mut self.access }
    }
}

/// The linker every plugin is resolved against, once per host: every capability
/// in [`crate::imports::CAPABILITIES`], each over its state in the store. What a
/// plugin may actually use is narrowed by the import check at load and by what
/// each call's state holds.
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<CallState>, LoadError> {
    let mut linker = Linker::new(engine);
    crate::imports::link(&mut linker).map_err(LoadError::engine)?;
    Ok(linker)
}

/// Refuses memory growth past the cap and remembers that it did, so the
/// trap that follows (a Rust guest aborts when allocation fails) is reported
/// as `memory_limit` rather than as a generic trap.
pub(super) struct MemoryLimiter {
    cap: usize,
    pub(super) refused: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.refused = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}
