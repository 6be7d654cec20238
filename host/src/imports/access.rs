//! What one call holds, capability by capability, as values: [`Handed`] is
//! what the executor hands a call (its filesystem, network and processes, and
//! the guard its filesystem is held to); [`CallAccess`] is that plus the state
//! each capability keeps while the call runs (its log count, its `wasi:http`
//! context, the plugin's config values). A store's state gives every
//! capability's `link` its parts through [`CallStore`], so the sandbox links
//! the list ([`super::link`]) without naming any capability.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiView};

use super::config::ConfigValues;
use super::exec::ExecAccess;
use super::fetch::NetAccess;
use super::http::HttpState;
use super::log::LogState;
use super::wasi_fs::FsGuard;
use super::{CallInfo, FsAccess};
use crate::error::CallError;

/// What the executor hands one call.
pub(crate) struct Handed {
    /// The filesystem it holds.
    pub(crate) fs: FsAccess,
    /// Its network access: `Some` only for a plugin that imports fetch or `wasi:http`.
    pub(crate) net: Option<NetAccess>,
    /// Its exec access: `Some` only for a plugin that imports exec.
    pub(crate) exec: Option<ExecAccess>,
    /// What its filesystem is held to beyond the preopens.
    pub(crate) fs_guard: FsGuard,
}

impl Handed {
    /// Nothing at all (a tool listing, a hook): no filesystem, network or
    /// processes; writes (there are none to make) charged to a meter of `write_bytes`.
    pub(crate) fn nothing(write_bytes: u64) -> Self {
        let meter = std::sync::Arc::new(crate::limits::WriteMeter::new(write_bytes));
        Self {
            fs: FsAccess::default(),
            net: None,
            exec: None,
            fs_guard: FsGuard::new(None, crate::limits::DEFAULT_OPEN_HANDLES, meter),
        }
    }

    /// Give a call's WASI context what it holds: its filesystem's preopens, and
    /// every socket operation refused.
    pub(crate) fn prepare(&self, wasi: &mut WasiCtxBuilder) -> Result<(), CallError> {
        super::sockets::deny_all(wasi);
        super::wasi_fs::preopen(wasi, &self.fs)
    }
}

/// Every capability's state for one call.
pub(crate) struct CallAccess {
    /// The call every import serves.
    pub(crate) call: CallInfo,
    /// The filesystem it holds.
    pub(crate) fs: FsAccess,
    /// What its filesystem is held to beyond the preopens.
    pub(crate) fs_guard: FsGuard,
    /// Its network access (fetch, and `wasi:http` through [`Self::http`]).
    pub(crate) net: Option<NetAccess>,
    /// Its exec access.
    pub(crate) exec: Option<ExecAccess>,
    /// `wasi:http`'s context, over the same network access.
    pub(crate) http: HttpState,
    /// Its log lines so far.
    pub(crate) log: LogState,
    /// What `wasi:config/store` answers.
    pub(crate) config: ConfigValues,
}

impl CallAccess {
    /// The state of `call`, holding what it was `handed` and the plugin's `config`.
    pub(crate) fn new(call: CallInfo, handed: Handed, config: ConfigValues) -> Self {
        Self {
            http: HttpState::new(handed.net.clone(), call.clone()),
            call,
            fs: handed.fs,
            fs_guard: handed.fs_guard,
            net: handed.net,
            exec: handed.exec,
            log: LogState::default(),
            config,
        }
    }

    /// When the call's descriptor cap refused an open: the cap, for its error message.
    pub(crate) fn descriptors_capped(&self) -> Option<usize> {
        self.fs_guard.cap_tripped()
    }
}

/// A store's state as the capabilities reach it: its WASI context and
/// resource table (which capabilities share with WASI) and [`CallAccess`],
/// borrowed apart.
pub(crate) struct StoreParts<'a> {
    /// The store's WASI context.
    pub(crate) wasi: &'a mut WasiCtx,
    /// The store's resource table.
    pub(crate) table: &'a mut ResourceTable,
    /// Every capability's state.
    pub(crate) access: &'a mut CallAccess,
}

/// The state of a store every capability links against.
pub(crate) trait CallStore: WasiView + Send + 'static {
    /// Its parts, borrowed apart.
    fn parts(&mut self) -> StoreParts<'_>;
}
