//! One store's state, [`CallState`]: the WASI context, the memory cap, and each
//! import's per-call state, reached by the linker through that import's view. One
//! constructor serves calls and tool listings alike.

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::Prepared;
use super::pipe::CappedPipe;
use crate::bindings::toolhost::plugin::types;
use crate::error::{CallError, LoadError, codes};
use crate::imports::config::{ConfigValues, ConfigView};
use crate::imports::exec::{ExecAccess, host::ExecView};
use crate::imports::fetch::{NetAccess, host::FetchView};
use crate::imports::files::FilesView;
use crate::imports::http::HttpState;
use crate::imports::log::{LogState, LogView};
use crate::imports::search::SearchView;
use crate::imports::wasi_fs::{FsGuard, GuardedFs};
use crate::imports::{CallInfo, FsAccess};
use crate::limits::{Deadline, Limits};

/// What one store is made with: the call, its capabilities, its limits.
pub(crate) struct StoreSpec<'a> {
    /// The call id (`load` for a tool listing).
    pub(crate) call_id: &'a str,
    /// The filesystem it holds.
    pub(crate) fs: FsAccess,
    /// Its network access: `Some` only for a plugin that imports fetch or `wasi:http`.
    pub(crate) net: Option<NetAccess>,
    /// Its exec access: `Some` only for a plugin that imports exec.
    pub(crate) exec: Option<ExecAccess>,
    /// What its filesystem is held to beyond the preopens.
    pub(crate) fs_guard: FsGuard,
    /// Memory, fuel, stdio caps.
    pub(crate) limits: &'a Limits,
    /// When it must be over.
    pub(crate) deadline: Deadline,
}

impl<'a> StoreSpec<'a> {
    /// A store with no capability at all (a tool listing, a hook): no filesystem,
    /// network or processes.
    pub(crate) fn bare(call_id: &'a str, limits: &'a Limits, deadline: Deadline) -> Self {
        Self {
            call_id,
            fs: FsAccess::default(),
            net: None,
            exec: None,
            fs_guard: FsGuard::new(
                None,
                crate::limits::DEFAULT_OPEN_HANDLES,
                std::sync::Arc::new(crate::limits::WriteMeter::new(limits.write_bytes)),
            ),
            limits,
            deadline,
        }
    }
}

/// Per-store state: the WASI context, the memory cap, and every import's state.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    call: CallInfo,
    fs: FsAccess,
    log: LogState,
    net: Option<NetAccess>,
    http: HttpState,
    config: ConfigValues,
    exec: Option<ExecAccess>,
    pub(super) fs_guard: FsGuard,
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
    // Sockets: a component may import them only when its grants stub them; every
    // operation is refused here either way (no TCP, UDP, lookups or addresses).
    wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    wasi.socket_addr_check(|_, _| Box::pin(async { false }));
    let host_err = |what: &str, dir: &std::path::Path, e: wasmtime::Error| {
        CallError::new(codes::HOST_ERROR, format!("cannot open {what} {}: {e}", dir.display()))
    };
    if let Some(dir) = &spec.fs.work_dir {
        let perms = if spec.fs.writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
        wasi.preopened_dir(dir, dir.to_string_lossy(), perms).map_err(|e| host_err("work dir", dir, e))?;
    }
    for dir in spec.fs.read_dirs.iter() {
        wasi.preopened_dir(dir, dir.to_string_lossy(), FsPerms::ReadOnly)
            .map_err(|e| host_err("read-only dir", dir, e))?;
    }
    let call =
        CallInfo { plugin: prepared.name.clone(), call_id: spec.call_id.into(), deadline: spec.deadline.at };
    let state = CallState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter { cap: limits.memory_bytes, refused: false },
        http: HttpState::new(spec.net.clone(), call.clone()),
        config: prepared.config.clone(),
        call,
        fs: spec.fs,
        log: LogState::default(),
        net: spec.net,
        exec: spec.exec,
        fs_guard: spec.fs_guard,
    };
    let mut store = Store::new(&prepared.engine, state);
    store.limiter(|state| &mut state.limiter);
    store.set_fuel(limits.fuel).map_err(|e| CallError::new(codes::HOST_ERROR, format!("{e:#}")))?;
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    Ok((store, stderr))
}

impl CallState {
    fn guarded_fs(&mut self) -> GuardedFs<'_> {
        let view = wasmtime_wasi::filesystem::WasiFilesystemCtxView {
            ctx: self.wasi.filesystem(),
            table: &mut self.table,
        };
        GuardedFs::new(view, &mut self.fs_guard)
    }

    fn log(&mut self) -> LogView<'_> {
        LogView { state: &mut self.log, call: &self.call }
    }

    fn files(&mut self) -> FilesView<'_> {
        FilesView { fs: &self.fs }
    }

    fn search(&mut self) -> SearchView<'_> {
        SearchView { fs: &self.fs, call: &self.call }
    }

    fn fetch(&mut self) -> FetchView<'_> {
        FetchView { net: self.net.as_ref(), call: &self.call }
    }

    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        self.http.view(&mut self.table)
    }

    fn config(&mut self) -> ConfigView<'_> {
        ConfigView { values: Some(&self.config) }
    }

    fn exec(&mut self) -> ExecView<'_> {
        ExecView { exec: self.exec.as_ref(), fs: &self.fs, call: &self.call }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl types::Host for CallState {}

/// The linker every plugin is resolved against, once per host: WASI p2, with
/// `wasi:filesystem` behind the host's guard, and each toolhost import through its
/// own view. What a plugin may actually use is narrowed by the import check at load
/// and by what each call's state holds.
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<CallState>, LoadError> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(LoadError::engine)?;
    crate::imports::wasi_fs::add_to_linker(&mut linker, CallState::guarded_fs).map_err(LoadError::engine)?;
    types::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s).map_err(LoadError::engine)?;
    crate::imports::log::add_to_linker(&mut linker, CallState::log).map_err(LoadError::engine)?;
    crate::imports::files::add_to_linker(&mut linker, CallState::files).map_err(LoadError::engine)?;
    crate::imports::search::add_to_linker(&mut linker, CallState::search).map_err(LoadError::engine)?;
    crate::imports::fetch::host::add_to_linker(&mut linker, CallState::fetch).map_err(LoadError::engine)?;
    crate::imports::exec::host::add_to_linker(&mut linker, CallState::exec).map_err(LoadError::engine)?;
    crate::imports::http::add_to_linker(&mut linker, CallState::http, |s| &mut s.http)
        .map_err(LoadError::engine)?;
    crate::imports::config::add_to_linker(&mut linker, CallState::config).map_err(LoadError::engine)?;
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
