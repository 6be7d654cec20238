//! `serve --http`: the MCP server over Streamable HTTP, at `/mcp`, on rmcp's
//! [`StreamableHttpService`] run by hyper's HTTP/1.1 server.
//!
//! rmcp speaks both protocol eras on one endpoint: a 2025-11-25 client
//! initializes and gets an `Mcp-Session-Id` (its session lives in this
//! process, `sessions`); a 2026-07-28 request carries its version and
//! capabilities in `_meta` and is served statelessly (`server/discover`,
//! `resultType`, `-32022` for an unsupported version, `-32020` when
//! `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` disagree with the body,
//! no GET stream). rmcp also checks `Host` (loopback binds: only the server's
//! own authorities) and `Origin` (only the server's own and `allow_origins`:
//! DNS-rebinding protection), answering 403.
//!
//! No client can starve another: what one client holds is bounded (`conn`:
//! connections and the time to send a head; `front`: calls, event streams and
//! how long one may stay silent, bodies; `sessions`: sessions), the client is
//! the address a trusted proxy names when there is one (`client`), and every
//! limit answers with its own status.

mod client;
mod conn;
mod front;
mod limits;
mod sessions;
mod token;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::client::Proxies;
use self::front::Front;
use self::limits::Slots;
use self::sessions::Sessions;
pub use self::token::BearerToken;
use super::mcp::ToolhostServer;

/// The one path the server answers.
pub(crate) const ENDPOINT: &str = "/mcp";

/// How `serve --http` listens and what each client may hold.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The address to listen on (port 0: any free port).
    pub bind: SocketAddr,
    /// Require `Authorization: Bearer` this token.
    pub token: Option<BearerToken>,
    /// Allow a bind address that is not loopback (it also needs a token).
    pub allow_remote: bool,
    /// Browser origins allowed besides the server's own (`https://app.example:443`).
    pub allow_origins: Vec<String>,
    /// Authorities (`HOST:PORT`) clients may reach this server by besides its
    /// own address, such as a load balancer's in front of several instances:
    /// accepted in `Host`, and `http://HOST:PORT` as an `Origin`.
    pub allow_authorities: Vec<String>,
    /// The largest request body (HTTP 413 beyond).
    pub max_body_bytes: usize,
    /// POSTs one client address may have in flight (HTTP 429 beyond).
    pub calls_per_client: usize,
    /// How long a connection may take to send a request head or body, or idle between requests.
    pub idle_timeout: Duration,
    /// Connections open at once (HTTP 503 beyond).
    pub max_connections: usize,
    /// Connections one client may have open (HTTP 429 beyond).
    pub connections_per_client: usize,
    /// Event streams (GET, `subscriptions/listen`) one client may have open (HTTP 429 beyond).
    pub streams_per_client: usize,
    /// How long an event stream may go without an event before it ends.
    pub stream_idle: Duration,
    /// 2025-11-25 sessions kept at once (the least needed pushed out beyond).
    pub max_sessions: usize,
    /// Sessions one client may hold (its least recently used idle one pushed
    /// out beyond; HTTP 429 when all are busy).
    pub sessions_per_client: usize,
    /// How long a session may go unused before it ends.
    pub session_idle: Duration,
    /// Peers whose `X-Forwarded-For` (and PROXY header, with `proxy_protocol`)
    /// names the client.
    pub trusted_proxies: Vec<IpNet>,
    /// Connections from a trusted proxy begin with a PROXY header (v1 or v2).
    pub proxy_protocol: bool,
}

impl HttpSettings {
    /// Loopback-only defaults for `bind`: no token, 16 MiB bodies (as the
    /// stdio server's lines), 30 s idle, 256 connections; per client 16 calls,
    /// 32 connections, 8 streams (each ending after 5 min without an event) and
    /// 32 sessions, of 1024 in all (each ending after 5 min unused); no trusted proxy.
    pub fn new(bind: SocketAddr) -> Self {
        Self {
            bind,
            token: None,
            allow_remote: false,
            allow_origins: Vec::new(),
            allow_authorities: Vec::new(),
            max_body_bytes: super::framing::MAX_LINE_BYTES,
            calls_per_client: 16,
            idle_timeout: Duration::from_secs(30),
            max_connections: 256,
            connections_per_client: 32,
            streams_per_client: 8,
            stream_idle: Duration::from_secs(300),
            max_sessions: 1024,
            sessions_per_client: 32,
            session_idle: Duration::from_secs(300),
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
        }
    }
}

/// Why the HTTP server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A bind address beyond loopback without the explicit permission.
    #[error(
        "{0} is not a loopback address: serving beyond this machine needs --allow-remote and --token-file"
    )]
    NotLoopback(SocketAddr),
    /// A bind address beyond loopback without a token.
    #[error("{0} is not a loopback address: it needs a bearer token (--token-file)")]
    RemoteWithoutToken(SocketAddr),
    /// The token could not be read or is unfit.
    #[error("bearer token: {0}")]
    Token(String),
    /// A limit of zero.
    #[error("{0} must be at least 1")]
    ZeroLimit(&'static str),
    /// The PROXY protocol without a peer to expect it from.
    #[error("--proxy-protocol needs --trusted-proxy: the peers whose PROXY header is read")]
    ProxyProtocolWithoutProxies,
    /// Listening failed.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

/// A bound server: [`HttpServer::local_addr`] says where, [`HttpServer::run`] serves.
pub struct HttpServer {
    listener: TcpListener,
    front: Arc<Front>,
    max_connections: usize,
    shutdown: CancellationToken,
}

impl HttpServer {
    /// Check `settings` and listen; nothing is served until [`HttpServer::run`].
    pub async fn bind(server: ToolhostServer, settings: HttpSettings) -> Result<Self, HttpError> {
        check(&settings)?;
        let listener =
            TcpListener::bind(settings.bind).await.map_err(|e| HttpError::Bind(settings.bind, e))?;
        let local = listener.local_addr().map_err(|e| HttpError::Bind(settings.bind, e))?;
        let shutdown = CancellationToken::new();
        let config = rmcp_config(local, &settings, shutdown.child_token());
        let sessions =
            Sessions::new(settings.max_sessions, settings.sessions_per_client, settings.session_idle);
        let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
        let front = Front {
            service,
            sessions,
            token: settings.token,
            proxies: Proxies::new(settings.trusted_proxies, settings.proxy_protocol),
            calls: Slots::new(settings.calls_per_client),
            streams: Slots::new(settings.streams_per_client),
            connections: Slots::new(settings.connections_per_client),
            max_body_bytes: settings.max_body_bytes,
            idle_timeout: settings.idle_timeout,
            stream_idle: settings.stream_idle,
        };
        Ok(Self { listener, front: Arc::new(front), max_connections: settings.max_connections, shutdown })
    }

    /// Where the server listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Cancel it to stop the server: it stops accepting, ends sessions and
    /// streams, and [`HttpServer::run`] returns.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Accept connections until the shutdown token is cancelled.
    pub async fn run(self) -> Result<(), HttpError> {
        let connections = Arc::new(tokio::sync::Semaphore::new(self.max_connections));
        let mut open = tokio::task::JoinSet::new();
        loop {
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of descriptors, or a connection reset before accept: wait a little.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = self.shutdown.cancelled() => break,
            };
            let _ = stream.set_nodelay(true);
            let (front, shutdown) = (self.front.clone(), self.shutdown.clone());
            open.spawn(conn::serve(stream, peer.ip(), connections.clone(), front, shutdown));
            while open.try_join_next().is_some() {}
        }
        open.shutdown().await;
        Ok(())
    }
}

/// Refuse settings that would serve unsafely or not at all.
fn check(settings: &HttpSettings) -> Result<(), HttpError> {
    let loopback = settings.bind.ip().is_loopback();
    if !loopback && !settings.allow_remote {
        return Err(HttpError::NotLoopback(settings.bind));
    }
    if !loopback && settings.token.is_none() {
        return Err(HttpError::RemoteWithoutToken(settings.bind));
    }
    for (name, value) in [
        ("max_body_bytes", settings.max_body_bytes),
        ("calls_per_client", settings.calls_per_client),
        ("max_connections", settings.max_connections),
        ("connections_per_client", settings.connections_per_client),
        ("streams_per_client", settings.streams_per_client),
        ("max_sessions", settings.max_sessions),
        ("sessions_per_client", settings.sessions_per_client),
    ] {
        if value == 0 {
            return Err(HttpError::ZeroLimit(name));
        }
    }
    for (name, value) in [
        ("idle_timeout", settings.idle_timeout),
        ("stream_idle", settings.stream_idle),
        ("session_idle", settings.session_idle),
    ] {
        if value.is_zero() {
            return Err(HttpError::ZeroLimit(name));
        }
    }
    if settings.proxy_protocol && settings.trusted_proxies.is_empty() {
        return Err(HttpError::ProxyProtocolWithoutProxies);
    }
    Ok(())
}

/// rmcp's settings: the `Host` and `Origin` checks for `local`, JSON
/// responses where a stream is not needed, the body bound.
fn rmcp_config(
    local: SocketAddr,
    settings: &HttpSettings,
    shutdown: CancellationToken,
) -> StreamableHttpServerConfig {
    let port = local.port();
    let mut own: Vec<String> = if local.ip().is_loopback() {
        vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")]
    } else if local.ip().is_unspecified() {
        Vec::new()
    } else {
        vec![SocketAddr::new(local.ip(), port).to_string()]
    };
    own.extend(settings.allow_authorities.iter().cloned());
    let origins = own
        .iter()
        .map(|authority| format!("http://{authority}"))
        .chain(settings.allow_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_json_response(true)
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_cancellation_token(shutdown);
    // Beyond loopback the token guards the server and names are the deployment's.
    if local.ip().is_loopback() { config.with_allowed_hosts(own) } else { config.disable_allowed_hosts() }
}
