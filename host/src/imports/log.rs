//! Host side of `toolhost:plugin/log`: a guest's log lines, bounded, into the
//! host's `tracing` log under the plugin's name and the call id.

use wasmtime::component::{HasData, Linker};

use super::capability::Capability;
use super::{CallInfo, CallStore, StoreParts};
use crate::bindings::toolhost::plugin::log;

/// Every plugin (and hook) may log.
pub(crate) const CAPABILITY: Capability =
    Capability { name: "log", interfaces: &["toolhost:plugin/log"], needs: None };

/// Bytes of one guest log line kept, and log lines kept per call.
const LOG_LINE_BYTES: usize = 4096;
const LOG_LINES_PER_CALL: u32 = 1000;

/// One call's log: how many lines it has written so far.
#[derive(Debug, Default)]
pub(crate) struct LogState {
    lines: u32,
}

/// What the log import works on: the call's line count and whose call it is.
pub(crate) struct LogView<'a> {
    /// The call's log state.
    pub state: &'a mut LogState,
    /// The call.
    pub call: &'a CallInfo,
}

struct HasLog;

impl HasData for HasLog {
    type Data<'a> = LogView<'a>;
}

/// Link `toolhost:plugin/log` over each store's log count.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    log::add_to_linker::<T, HasLog>(linker, |store| {
        let StoreParts { access, .. } = store.parts();
        LogView { state: &mut access.log, call: &access.call }
    })
}

impl log::Host for LogView<'_> {
    async fn log(&mut self, level: log::Level, message: String) {
        self.state.lines += 1;
        if self.state.lines > LOG_LINES_PER_CALL {
            return;
        }
        let msg = &message[..message.floor_char_boundary(LOG_LINE_BYTES)];
        let (plugin, call) = (&*self.call.plugin, &*self.call.call_id);
        match level {
            log::Level::Trace => tracing::trace!(plugin, call, "{msg}"),
            log::Level::Debug => tracing::debug!(plugin, call, "{msg}"),
            log::Level::Info => tracing::info!(plugin, call, "{msg}"),
            log::Level::Warn => tracing::warn!(plugin, call, "{msg}"),
            log::Level::Error => tracing::error!(plugin, call, "{msg}"),
        }
    }
}
