//! Stage 3, once per call: a fresh [`Store`] and instance with only the
//! capabilities the call is granted, and the limits that bound it.
//!
//! Deny by default: no env, no args, no stdin, no sockets, no inherited
//! stdio. What a call gets is spelled out by [`FsGrant`] and [`Limits`]:
//! at most one preopen (the work dir, read-only unless granted writes), a
//! memory cap, fuel, a wall-clock deadline checked at every epoch tick, and
//! captured, capped stdout/stderr. A plugin that imports `toolhost:plugin/fetch`
//! also gets a [`NetAccess`]: its host grant, the shared pinned client and the
//! call's deadline; every other call has no network at all.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::bindings::toolhost::plugin::{log, types};
use crate::error::{CallError, codes};
use crate::exec::ExecAccess;
use crate::fetch::NetAccess;
use crate::limits::Limits;
use crate::pipe::CappedPipe;
use crate::plugin::Plugin;
use crate::wasi_fs::{FsGuard, GuardedFs};

/// Bytes of one guest log line kept, and log lines kept per call.
const LOG_LINE_BYTES: usize = 4096;
const LOG_LINES_PER_CALL: u32 = 1000;

/// The filesystem capability of one call: the work dir (or not), and extra
/// read-only dirs. The default is nothing at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FsGrant {
    /// The work dir (canonical host path; also the guest path), when granted.
    pub work_dir: Option<PathBuf>,
    /// Whether the guest may create, write and delete in the work dir.
    pub writable: bool,
    /// Directories preopened read-only under their own path.
    pub read_dirs: Arc<[PathBuf]>,
}

impl FsGrant {
    /// The guest path of the work dir, if any.
    pub fn guest_path(&self) -> Option<String> {
        self.work_dir.as_ref().map(|dir| dir.to_string_lossy().into_owned())
    }

    /// The work dir, when the call may write in it.
    pub fn writable_dir(&self) -> Option<&PathBuf> {
        self.work_dir.as_ref().filter(|_| self.writable)
    }
}

/// What one call runs and with what.
pub struct CallSpec<'a> {
    /// Tool name within the plugin.
    pub tool: &'a str,
    /// Arguments, already validated.
    pub args_json: &'a str,
    /// The call id, passed to the guest and its log lines.
    pub call_id: &'a str,
    /// The filesystem capability.
    pub fs: &'a FsGrant,
    /// Memory, fuel, stdio caps.
    pub limits: &'a Limits,
    /// Wall-clock deadline from the start of the call.
    pub deadline: Duration,
    /// Caller cancellation.
    pub cancel: &'a CancellationToken,
    /// The network capability: `Some` only for a plugin that imports fetch and is granted
    /// hosts.
    pub net: Option<NetAccess>,
    /// The exec capability: `Some` only for a plugin that imports exec and is granted
    /// programs.
    pub exec: Option<ExecAccess>,
    /// What the guest's filesystem is held to beyond its preopens.
    pub fs_guard: FsGuard,
}

/// Per-call store state: the WASI context and everything the limits track.
pub struct CallState {
    fs: FsGrant,
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
    plugin: std::sync::Arc<str>,
    call_id: String,
    log_lines: u32,
    /// The plugin's network grant and the shared fetch client; `None`: no network.
    net: Option<NetAccess>,
    /// The plugin's exec grant and the host's runtime; `None`: no processes.
    exec: Option<ExecAccess>,
    /// When the call's deadline passes (a fetch never outlives it).
    deadline: Option<Instant>,
    /// What its filesystem is held to beyond the preopens (protected paths, special
    /// files, open handles).
    fs_guard: FsGuard,
}

impl CallState {
    /// State for a call to `plugin` with the given grant and limits.
    pub(crate) fn new(
        plugin: std::sync::Arc<str>,
        call_id: &str,
        fs: &FsGrant,
        env: &[(String, String)],
        limits: &Limits,
        stdout: CappedPipe,
        stderr: CappedPipe,
    ) -> Result<Self, CallError> {
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(stdout).stderr(stderr).allow_blocking_current_thread(true);
        // Only the variables granted to this plugin; nothing is inherited.
        for (key, value) in env {
            wasi.env(key, value);
        }
        // Sockets: a component may import them only when its grants stub them; every
        // operation is refused here either way (no TCP, UDP, lookups or addresses).
        wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        wasi.socket_addr_check(|_, _| Box::pin(async { false }));
        if let Some(dir) = &fs.work_dir {
            let perms = if fs.writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
            wasi.preopened_dir(dir, dir.to_string_lossy(), perms).map_err(|e| {
                CallError::new(codes::HOST_ERROR, format!("cannot open work dir {}: {e}", dir.display()))
            })?;
        }
        for dir in fs.read_dirs.iter() {
            wasi.preopened_dir(dir, dir.to_string_lossy(), FsPerms::ReadOnly).map_err(|e| {
                CallError::new(codes::HOST_ERROR, format!("cannot open read-only dir {}: {e}", dir.display()))
            })?;
        }
        Ok(Self {
            fs: fs.clone(),
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: MemoryLimiter { cap: limits.memory_bytes, refused: false },
            plugin,
            call_id: call_id.to_string(),
            log_lines: 0,
            net: None,
            exec: None,
            deadline: None,
            fs_guard: FsGuard::new(None, crate::limits::DEFAULT_OPEN_HANDLES),
        })
    }
}

impl CallState {
    /// The filesystem capability of this call.
    pub(crate) fn fs(&self) -> &FsGrant {
        &self.fs
    }

    /// Hand the call its network capability (or none) and its deadline.
    pub(crate) fn with_net(mut self, net: Option<NetAccess>, deadline: Instant) -> Self {
        self.net = net;
        self.deadline = Some(deadline);
        self
    }

    /// Hold the call's filesystem to `guard`.
    pub(crate) fn with_fs_guard(mut self, guard: FsGuard) -> Self {
        self.fs_guard = guard;
        self
    }

    /// The filesystem view the guest gets: wasmtime-wasi's, behind the call's guard.
    pub(crate) fn guarded_fs(&mut self) -> GuardedFs<'_> {
        let view = wasmtime_wasi::filesystem::WasiFilesystemCtxView {
            ctx: self.wasi.filesystem(),
            table: &mut self.table,
        };
        GuardedFs::new(view, &mut self.fs_guard)
    }

    /// Hand the call its exec capability (or none).
    pub(crate) fn with_exec(mut self, exec: Option<ExecAccess>) -> Self {
        self.exec = exec;
        self
    }

    /// The exec capability and the call's deadline, when the call may start processes.
    pub(crate) fn exec(&self) -> Option<(&ExecAccess, Instant)> {
        Some((self.exec.as_ref()?, self.deadline?))
    }

    /// The network capability and the call's deadline, when the call has network access.
    pub(crate) fn net(&self) -> Option<(&NetAccess, Instant)> {
        Some((self.net.as_ref()?, self.deadline?))
    }

    /// The memory cap of this store, to install with [`Store::limiter`].
    pub(crate) fn memory_limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limiter
    }

    /// The plugin's display name.
    pub(crate) fn plugin_name(&self) -> &str {
        &self.plugin
    }

    /// The id of the call.
    pub(crate) fn call_id(&self) -> &str {
        &self.call_id
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl types::Host for CallState {}

impl log::Host for CallState {
    fn log(&mut self, level: log::Level, message: String) {
        self.log_lines += 1;
        if self.log_lines > LOG_LINES_PER_CALL {
            return;
        }
        let mut end = message.len().min(LOG_LINE_BYTES);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let (plugin, call, msg) = (&*self.plugin, &self.call_id, &message[..end]);
        match level {
            log::Level::Trace => tracing::trace!(plugin, call, "{msg}"),
            log::Level::Debug => tracing::debug!(plugin, call, "{msg}"),
            log::Level::Info => tracing::info!(plugin, call, "{msg}"),
            log::Level::Warn => tracing::warn!(plugin, call, "{msg}"),
            log::Level::Error => tracing::error!(plugin, call, "{msg}"),
        }
    }
}

/// Refuses memory growth past the cap and remembers that it did, so the
/// trap that follows (a Rust guest aborts when allocation fails) is reported
/// as `memory_limit` rather than as a generic trap.
struct MemoryLimiter {
    cap: usize,
    refused: bool,
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

/// Run one call in a fresh instance of `plugin`. Never panics; every way a
/// call can end is a `Result`.
pub async fn run(plugin: &Plugin, call: CallSpec<'_>) -> Result<types::ToolOutput, CallError> {
    // A deadline too far to represent is as good as none.
    let now = Instant::now();
    let deadline_at = now.checked_add(call.deadline).unwrap_or(now + Duration::from_secs(1 << 30));
    let stdout = CappedPipe::new(call.limits.stdio_bytes);
    let stderr = CappedPipe::new(call.limits.stdio_bytes);
    let state = CallState::new(
        plugin.name_arc(),
        call.call_id,
        call.fs,
        plugin.env(),
        call.limits,
        stdout,
        stderr.clone(),
    )?
    .with_net(call.net, deadline_at)
    .with_exec(call.exec)
    .with_fs_guard(call.fs_guard);
    let mut store = Store::new(plugin.engine(), state);
    store.limiter(|state| &mut state.limiter);
    let host_err = |e: wasmtime::Error| CallError::new(codes::HOST_ERROR, format!("{e:#}"));
    store.set_fuel(call.limits.fuel).map_err(host_err)?;
    // Every epoch tick the guest yields to the async executor, which is where
    // the deadline and the caller's cancellation below take effect.
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);

    let context = types::CallContext { call_id: call.call_id.to_string(), work_dir: call.fs.guest_path() };
    let outcome = {
        let run = async {
            let instance = plugin.pre().instantiate_async(&mut store).await?;
            instance.toolhost_plugin_tools().call_call(&mut store, call.tool, call.args_json, &context).await
        };
        tokio::select! {
            biased;
            _ = call.cancel.cancelled() => Err(CallError::new(codes::CANCELLED, "")),
            _ = tokio::time::sleep(call.deadline) => Err(CallError::new(
                codes::TIMEOUT,
                format!("the call ran longer than {} ms and was stopped", call.deadline.as_millis()),
            )),
            result = run => Ok(result),
        }
    };
    let result = match outcome? {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(err)) => Err(CallError::new(err.code, err.message)),
        Err(trap) => Err(classify_trap(&trap, store.data(), call.limits, &stderr)),
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

/// Turn a trap into the code that names the limit (or the fault) behind it.
pub(crate) fn classify_trap(
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
    let tail = tail_chars(stderr_text.trim_end(), 2000);
    if tail.is_empty() {
        CallError::new(codes::TRAP, reason)
    } else {
        CallError::new(codes::TRAP, format!("{reason}\nguest stderr:\n{tail}"))
    }
}

fn tail_chars(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
