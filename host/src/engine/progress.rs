//! Progress of the host's slow steps, for a front end to show: compiling a
//! component that is not in the compile cache, pulling one from a registry. The
//! library draws nothing; the `toolhost` binary draws bars on a terminal, and
//! nothing under `serve` or when stderr is not a terminal.

use std::sync::Arc;

/// Told when a slow step starts; the step it returns is told how far it got, and
/// is finished when dropped.
pub trait Progress: Send + Sync {
    /// `what` started (`compiling NAME`, `pulling REF`), with `total` bytes when known.
    fn start(&self, what: &str, total: Option<u64>) -> Box<dyn ProgressStep>;
}

/// One step under way.
pub trait ProgressStep: Send + Sync {
    /// `bytes` more are done.
    fn advance(&self, bytes: u64);
}

/// Start `what` on `progress`, if there is one.
pub(crate) fn start(
    progress: Option<&Arc<dyn Progress>>,
    what: &str,
    total: Option<u64>,
) -> Option<Box<dyn ProgressStep>> {
    progress.map(|p| p.start(what, total))
}
