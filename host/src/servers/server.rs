//! One configured server: how it is reached, its instances, its tool list.
//!
//! **Instances.** A server is started lazily, when its tools are first needed
//! (listed, or called), or eagerly (`serve --eager`). A server whose entry may
//! write the work dir (`filesystem = "read-write"`) has a second instance for its
//! read-only tools, started the same way with the work dir read-only: its Landlock
//! rules are per process, so a `readOnlyHint` alone would not keep a read-only call
//! from writing. An instance that exits or breaks its stream is replaced on the
//! next use, after a back-off ([`backoff`]) that doubles with each failure in a row
//! (reset once an instance lived [`STABLE`]); a call waits out a short back-off and
//! fails `server_failed` during a long one.
//!
//! **Tools.** Listed from the main instance when it starts, and again on its
//! `notifications/tools/list_changed`; each change bumps the host's tool version
//! (the registry is rebuilt, `serve` tells its clients).

use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use super::adapt::{self, Listing};
use super::instance::{Instance, StartWith};
use super::{Context, Kind};
use crate::error::{CallError, codes};

/// An instance that lived this long before failing starts a fresh back-off.
pub(crate) const STABLE: Duration = Duration::from_secs(60);

/// The longest back-off a call waits out; during a longer one it fails at once.
const MAX_WAIT: Duration = Duration::from_secs(2);

/// The delay before the next start after `failures` failures in a row: 250 ms,
/// doubling, at most 30 s.
pub(crate) fn backoff(failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(7);
    Duration::from_millis(250 << exp).min(Duration::from_secs(30))
}

/// One instance slot: what runs, and how the last starts went.
#[derive(Default)]
struct SlotState {
    running: Option<Arc<Instance>>,
    failures: u32,
    retry_at: Option<Instant>,
    last_failure: Option<String>,
}

/// A configured server.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// 0: the entry's own instance; 1: the read-only twin of a writing server.
    slots: [tokio::sync::Mutex<SlotState>; 2],
    listing: RwLock<Option<Arc<Listing>>>,
    context: Arc<Context>,
    me: Weak<Server>,
}

impl Server {
    /// A server named `name`, reached as `kind`.
    pub(crate) fn new(name: String, kind: Kind, context: Arc<Context>) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            name,
            kind,
            slots: Default::default(),
            listing: RwLock::new(None),
            context,
            me: me.clone(),
        })
    }

    /// Whether its read-only tools run in an instance of their own.
    pub(crate) fn has_twin(&self) -> bool {
        matches!(&self.kind, Kind::Stdio(launch) if launch.writable())
    }

    /// Its tools, once listed.
    pub(crate) fn listing(&self) -> Option<Arc<Listing>> {
        self.listing.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The instance a call runs in (the twin for a read-only tool of a writing
    /// server), started or restarted if needed (see the module docs).
    pub(crate) async fn instance(&self, read_only: bool) -> Result<Arc<Instance>, CallError> {
        let twin = read_only && self.has_twin();
        let mut state = self.slots[usize::from(twin)].lock().await;
        if let Some(instance) = state.running.clone() {
            if instance.alive() {
                return Ok(instance);
            }
            let why = instance.why_gone().await;
            tracing::warn!(server = %self.name, "server instance ended: {why}");
            state.failures = if instance.started.elapsed() >= STABLE { 1 } else { state.failures + 1 };
            state.retry_at = Some(Instant::now() + backoff(state.failures));
            state.last_failure = Some(why);
            state.running = None;
        }
        if let Some(at) = state.retry_at {
            let wait = at.saturating_duration_since(Instant::now());
            if wait > MAX_WAIT {
                return Err(self.failed(format!(
                    "it failed {} times in a row (last: {}); it is started again in {} s",
                    state.failures,
                    state.last_failure.as_deref().unwrap_or("?"),
                    wait.as_secs().max(1)
                )));
            }
            tokio::time::sleep(wait).await;
        }
        match self.start(twin).await {
            Ok(instance) => {
                state.running = Some(instance.clone());
                state.retry_at = None;
                Ok(instance)
            }
            Err(why) => {
                state.failures += 1;
                state.retry_at = Some(Instant::now() + backoff(state.failures));
                state.last_failure = Some(why.clone());
                Err(self.failed(format!("it could not be started: {why}")))
            }
        }
    }

    /// A `server_failed` error naming this server.
    pub(crate) fn failed(&self, why: String) -> CallError {
        CallError::new(codes::SERVER_FAILED, format!("MCP server `{}`: {why}", self.name))
    }

    /// Start one instance; the main one lists its tools.
    async fn start(&self, twin: bool) -> Result<Arc<Instance>, String> {
        let me = self.me.clone();
        let on_change: super::client::OnChange = if twin {
            Arc::new(|| {})
        } else {
            Arc::new(move || {
                if let Some(server) = me.upgrade() {
                    tokio::spawn(async move { server.relist().await });
                }
            })
        };
        let context = &self.context;
        let instance = match &self.kind {
            Kind::Stdio(launch) => {
                let with = StartWith {
                    name: &self.name,
                    exec: &context.exec,
                    fetch: &context.fetch,
                    max_message: context.max_message,
                    on_change,
                };
                Instance::start_stdio(launch, !twin, with).await?
            }
            Kind::Http(remote) => Instance::start_http(remote, context, on_change).await?,
            Kind::Broken(why) => return Err(why.clone()),
        };
        let instance = Arc::new(instance);
        if !twin {
            self.store(instance.connection.list_tools().await?).map_err(|e| e.to_string())?;
        }
        Ok(instance)
    }

    /// Adapt and keep `listed`; bump the host's tool version when it changed.
    fn store(&self, listed: Vec<rmcp::model::Tool>) -> Result<(), crate::error::LoadError> {
        let listing = adapt::tools(&self.name, listed)?;
        for refused in &listing.refused {
            tracing::warn!(server = %self.name, tool = %refused.tool, "server tool left out: {}", refused.why);
        }
        let mut slot = self.listing.write().unwrap_or_else(|e| e.into_inner());
        let same = slot.as_ref().is_some_and(|old| same_tools(old, &listing));
        *slot = Some(Arc::new(listing));
        drop(slot);
        if !same {
            self.context.version.send_modify(|v| *v += 1);
        }
        Ok(())
    }

    /// List the main instance's tools again (it said they changed).
    async fn relist(&self) {
        let Some(instance) = self.slots[0].lock().await.running.clone() else { return };
        match instance.connection.list_tools().await {
            Ok(listed) => {
                if let Err(e) = self.store(listed) {
                    tracing::warn!(server = %self.name, "its new tool list was refused: {e}");
                }
            }
            Err(why) => tracing::warn!(server = %self.name, "listing its tools again failed: {why}"),
        }
    }
}

/// Whether two listings offer the same tools (names, descriptions, schemas, hints).
fn same_tools(a: &Listing, b: &Listing) -> bool {
    a.tools.len() == b.tools.len()
        && a.tools.iter().zip(&b.tools).all(|(x, y)| {
            x.remote == y.remote
                && x.spec.name == y.spec.name
                && x.spec.description == y.spec.description
                && x.spec.parameters == y.spec.parameters
                && x.spec.read_only == y.spec.read_only
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_bounded() {
        let steps: Vec<u64> = (1..=10).map(|n| backoff(n).as_millis() as u64).collect();
        assert_eq!(steps, [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
        assert_eq!(backoff(0), Duration::from_millis(250));
    }
}
