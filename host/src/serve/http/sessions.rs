//! 2025-11-25 sessions, bounded: rmcp's [`LocalSessionManager`] keeps them,
//! and [`Sessions`] (rmcp's [`SessionManager`] over it) decides which may exist.
//!
//! - A client holds at most `per_client` sessions: a new one pushes out that
//!   client's own least recently used idle session; when all of its sessions
//!   are busy the `initialize` is refused (HTTP 429).
//! - At most `max` exist in all: a new one pushes out an idle session before a
//!   busy one, of the client holding the most, least recently used first.
//! - A session is busy while a request or stream on it is open; one unused for
//!   `idle` ends (rmcp's keep-alive), and a pushed-out one ends at once (its
//!   next request is 404, which tells a client to initialize again).
//! - Each session's memory is bounded: rmcp's channels hold 16 messages, and a
//!   finished request's replay cache is dropped when it finishes (no resuming
//!   a stream whose answer was sent), so a session holds what its requests in
//!   flight hold, which the calls-per-client limit bounds.
//!
//! Which client an `initialize` comes from is decided in front of rmcp
//! ([`Sessions::admit`]); rmcp then calls [`SessionManager::create_session`]
//! inside the same task, which finds the admission in a task-local.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};

use super::client::Client;

tokio::task_local! {
    static ADMITTED: RefCell<Option<Admission>>;
}

/// The bounded session store.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    max: usize,
    per_client: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    live: HashMap<SessionId, Entry>,
    /// Sessions (live or admitted, not yet created) by client.
    held: HashMap<Client, usize>,
    admitted: usize,
}

struct Entry {
    client: Client,
    last_used: Instant,
    busy: usize,
}

/// Why an `initialize` got no session.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum SessionRefused {
    /// The client's sessions are all busy (HTTP 429).
    #[error("Too Many Requests: this client has {0} sessions, all busy")]
    ClientFull(usize),
    /// Every session is being created (HTTP 503).
    #[error("Service Unavailable: {0} sessions are being created")]
    Full(usize),
}

/// An error of the session store.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error("a session was created without an admission")]
    NotAdmitted,
}

/// Room for one session for a client, given back when dropped unused.
pub(crate) struct Admission {
    sessions: Arc<Sessions>,
    client: Client,
    used: bool,
}

/// A request or stream open on a session: busy until dropped.
pub(crate) struct InUse {
    sessions: Arc<Sessions>,
    id: SessionId,
}

impl Sessions {
    /// At most `max` sessions, `per_client` for one client, each ending after `idle` unused.
    pub(crate) fn new(max: usize, per_client: usize, idle: Duration) -> Arc<Self> {
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        config.completed_cache_ttl = Duration::ZERO;
        let mut inner = LocalSessionManager::default();
        inner.session_config = config;
        Arc::new(Self { inner, max, per_client, table: Mutex::default() })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Room for a new session of `client`, and the sessions pushed out for it
    /// (give them to [`Sessions::end`]).
    pub(crate) fn admit(
        self: &Arc<Self>,
        client: Client,
    ) -> Result<(Admission, Vec<SessionId>), SessionRefused> {
        let mut table = self.table();
        if table.admitted >= self.max {
            return Err(SessionRefused::Full(self.max));
        }
        let mut out = Vec::new();
        if table.held.get(&client).copied().unwrap_or(0) >= self.per_client {
            let own_idle = table.victim(|entry| entry.client == client && entry.busy == 0);
            out.push(own_idle.ok_or(SessionRefused::ClientFull(self.per_client))?);
            table.forget(&out[0]);
        }
        while table.live.len() + table.admitted >= self.max {
            // Fewer than `max` are being created, so one is live.
            let Some(id) = table.victim(|_| true) else { break };
            table.forget(&id);
            out.push(id);
        }
        *table.held.entry(client).or_default() += 1;
        table.admitted += 1;
        Ok((Admission { sessions: self.clone(), client, used: false }, out))
    }

    /// End sessions pushed out by [`Sessions::admit`].
    pub(crate) async fn end(&self, ids: Vec<SessionId>) {
        for id in ids {
            if let Err(error) = self.inner.close_session(&id).await {
                tracing::debug!(%error, %id, "a pushed-out session did not close cleanly");
            }
        }
    }

    /// Run `serve` (rmcp handling an `initialize`) with `admission` for the session it creates.
    pub(crate) async fn with_admission<F: Future>(admission: Admission, serve: F) -> F::Output {
        ADMITTED.scope(RefCell::new(Some(admission)), serve).await
    }

    /// Mark session `id` busy (and used now) until the guard is dropped; `None` if it is not live.
    pub(crate) fn enter(self: &Arc<Self>, id: &str) -> Option<InUse> {
        let id: SessionId = id.into();
        let mut table = self.table();
        let entry = table.live.get_mut(&id)?;
        entry.busy += 1;
        entry.last_used = Instant::now();
        Some(InUse { sessions: self.clone(), id })
    }

    /// A live session `id` of `client`, as [`SessionManager::create_session`] makes it.
    #[cfg(test)]
    fn insert(self: &Arc<Self>, id: &str, client: Client) {
        let (mut admission, _) = self.admit(client).unwrap();
        let mut table = self.table();
        table.admitted -= 1;
        admission.used = true;
        table.live.insert(id.into(), Entry { client, last_used: Instant::now(), busy: 0 });
    }
}

impl Table {
    /// The session to push out among those `eligible`: idle before busy, of the
    /// client holding the most, least recently used.
    fn victim(&self, eligible: impl Fn(&Entry) -> bool) -> Option<SessionId> {
        let held = |client: &Client| self.held.get(client).copied().unwrap_or(0);
        self.live
            .iter()
            .filter(|(_, entry)| eligible(entry))
            .min_by_key(|(_, entry)| (entry.busy > 0, Reverse(held(&entry.client)), entry.last_used))
            .map(|(id, _)| id.clone())
    }

    /// Drop `id` from the table (its client holds one fewer).
    fn forget(&mut self, id: &SessionId) {
        if let Some(entry) = self.live.remove(id) {
            self.release(entry.client);
        }
    }

    fn release(&mut self, client: Client) {
        if let Some(count) = self.held.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                self.held.remove(&client);
            }
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if !self.used {
            let mut table = self.sessions.table();
            table.admitted -= 1;
            table.release(self.client);
        }
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut table = self.sessions.table();
        if let Some(entry) = table.live.get_mut(&self.id) {
            entry.busy -= 1;
            entry.last_used = Instant::now();
        }
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let admission = ADMITTED.try_with(|cell| cell.borrow_mut().take()).ok().flatten();
        let Some(mut admission) = admission else { return Err(SessionsError::NotAdmitted) };
        let (id, transport) = self.inner.create_session().await?;
        let mut table = self.table();
        table.admitted -= 1;
        admission.used = true;
        let entry = Entry { client: admission.client, last_used: Instant::now(), busy: 0 };
        table.live.insert(id.clone(), entry);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.table().forget(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(last: u8) -> Client {
        Client::of([127, 0, 0, last].into())
    }

    fn ids(out: &[SessionId]) -> Vec<&str> {
        out.iter().map(|id| id.as_ref()).collect()
    }

    #[test]
    fn a_client_beyond_its_share_pushes_out_its_own_idle_session_or_is_refused() {
        let (a, b) = (client(2), client(3));
        let sessions = Sessions::new(10, 2, Duration::from_secs(60));
        sessions.insert("a1", a);
        sessions.insert("a2", a);
        sessions.insert("b1", b);
        let _busy = sessions.enter("a1").unwrap();
        let (admission, out) = sessions.admit(a).unwrap();
        assert_eq!(ids(&out), ["a2"], "the idle one, though a1 is older");
        drop(admission);
        assert_eq!(sessions.table().held[&a], 1, "an unused admission is given back");
        sessions.insert("a3", a);
        let _busy3 = sessions.enter("a3").unwrap();
        assert_eq!(sessions.admit(a).err(), Some(SessionRefused::ClientFull(2)));
        assert!(sessions.admit(b).is_ok(), "another client is not refused");
    }

    #[test]
    fn beyond_the_total_the_client_holding_the_most_loses_an_idle_session() {
        let (victim, attacker, other) = (client(1), client(2), client(3));
        let sessions = Sessions::new(3, 3, Duration::from_secs(60));
        sessions.insert("v", victim);
        sessions.insert("x1", attacker);
        sessions.insert("x2", attacker);
        let (_admission, out) = sessions.admit(other).unwrap();
        assert_eq!(ids(&out), ["x1"], "not the victim's, though it is the oldest");
        // Only busy sessions left to push out: the least recently used busy one goes.
        let (_v, _x2) = (sessions.enter("v").unwrap(), sessions.enter("x2").unwrap());
        let (_admission, out) = sessions.admit(other).unwrap();
        assert_eq!(out.len(), 1);
        assert!(sessions.enter("y").is_none(), "an unknown session is not entered");
    }

    #[test]
    fn sessions_all_being_created_refuse_another() {
        let sessions = Sessions::new(1, 1, Duration::from_secs(60));
        let _first = sessions.admit(client(2)).unwrap();
        assert_eq!(sessions.admit(client(3)).err(), Some(SessionRefused::Full(1)));
    }
}
