//! [`ExecAccess`]: one call's capability to start processes through the host's
//! [`ExecRuntime`], and what its children changed that they must not have
//! ([`Tampering`]).

use std::sync::{Arc, Mutex};

use confine::{ExecRuntime, WriteMeter};
use tokio_util::sync::CancellationToken;

use super::grant::ResolvedGrant;

/// One call's capability to start processes: the plugin's resolved grant, the
/// variables it is granted, the host's runtime, and what its children changed that
/// they must not have ([`ExecAccess::tampering`]).
#[derive(Clone)]
pub(crate) struct ExecAccess {
    /// The host's runtime.
    pub runtime: Arc<ExecRuntime>,
    /// What the plugin may run.
    pub grant: Arc<ResolvedGrant>,
    /// The variables granted to the plugin (passed to every child).
    pub env: Arc<[(String, String)]>,
    /// The call's cancellation.
    pub cancel: CancellationToken,
    /// The call's write quota (what its children may still write).
    pub quota: Arc<WriteMeter>,
    tampering: Tampering,
}

impl ExecAccess {
    /// The capability of one call.
    pub(crate) fn new(
        runtime: Arc<ExecRuntime>,
        grant: Arc<ResolvedGrant>,
        env: Arc<[(String, String)]>,
        cancel: CancellationToken,
        quota: Arc<WriteMeter>,
    ) -> Self {
        Self { runtime, grant, env, cancel, quota, tampering: Tampering::default() }
    }

    /// What the call's children changed among the protected paths (undone where it
    /// could be). Whatever the guest makes of the exec error it got, the host fails
    /// the call with `permission_denied` when this holds something.
    pub(crate) fn tampering(&self) -> Tampering {
        self.tampering.clone()
    }
}

/// What one call's children changed among the protected paths, shared between the
/// call's exec capability and the host that fails the call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tampering(Arc<Mutex<Vec<String>>>);

impl Tampering {
    /// Record what a child did.
    pub(crate) fn record(&self, what: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(what);
    }

    /// Everything recorded, as one message, and clear it (`None`: nothing).
    pub(crate) fn take(&self) -> Option<String> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (!all.is_empty()).then(|| std::mem::take(&mut *all).join("; "))
    }
}
