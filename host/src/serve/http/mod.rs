//! `serve --http`: the MCP server over Streamable HTTP, at `/mcp`, on rmcp's
//! [`StreamableHttpService`] run by hyper's HTTP/1.1 server.
//!
//! rmcp speaks both protocol eras on one endpoint: a 2025-11-25 client
//! initializes and gets an `Mcp-Session-Id` (its session lives in this
//! process); a 2026-07-28 request carries its version and capabilities in
//! `_meta` and is served statelessly (`server/discover`, `resultType`,
//! `-32022` for an unsupported version, `-32020` when `MCP-Protocol-Version`,
//! `Mcp-Method` or `Mcp-Name` disagree with the body, no GET stream). rmcp
//! also checks `Host` (loopback binds: only the server's own authorities) and
//! `Origin` (only the server's own and `allow_origins`: DNS-rebinding
//! protection), answering 403.
//!
//! In front of rmcp, each request passes, in order:
//! 1. the path: anything but `/mcp` is 404;
//! 2. the bearer token, when there is one (401 without it or with a wrong one);
//! 3. a slot: a client address holds at most `calls_per_client` POSTs in
//!    flight (429), each until its response ends;
//! 4. the body: at most `max_body_bytes` (413), all of it within
//!    `idle_timeout` (408);
//! 5. the JSON-RPC front (`super::jsonrpc`): not JSON `-32700`, not a request
//!    `-32600`, unfit `tools/call` params `-32602`, a batch `-32600` (HTTP 400).
//!
//! A connection must send its request head within `idle_timeout`, and between
//! requests it may idle no longer; at most `max_connections` are open at once
//! (further ones wait in the listen backlog).

mod limits;
mod token;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::limits::{BodyRefused, HoldingBody, Slots};
pub use self::token::BearerToken;
use super::jsonrpc::{self, INVALID_REQUEST, Incoming as Classified};
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
    /// Connections open at once.
    pub max_connections: usize,
}

impl HttpSettings {
    /// Loopback-only defaults for `bind`: no token, 16 MiB bodies (as the
    /// stdio server's lines), 16 calls per client, 30 s idle, 256 connections.
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
    /// Listening failed.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

type HttpBody = BoxBody<Bytes, Infallible>;

/// A bound server: [`HttpServer::local_addr`] says where, [`HttpServer::run`] serves.
pub struct HttpServer {
    listener: TcpListener,
    front: Arc<Front>,
    max_connections: usize,
    idle_timeout: Duration,
    shutdown: CancellationToken,
}

/// What every request passes through.
struct Front {
    service: StreamableHttpService<ToolhostServer, LocalSessionManager>,
    token: Option<BearerToken>,
    slots: Arc<Slots>,
    max_body_bytes: usize,
    idle_timeout: Duration,
}

impl HttpServer {
    /// Check `settings` and listen; nothing is served until [`HttpServer::run`].
    pub async fn bind(server: ToolhostServer, settings: HttpSettings) -> Result<Self, HttpError> {
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
        ] {
            if value == 0 {
                return Err(HttpError::ZeroLimit(name));
            }
        }
        if settings.idle_timeout.is_zero() {
            return Err(HttpError::ZeroLimit("idle_timeout"));
        }
        let listener =
            TcpListener::bind(settings.bind).await.map_err(|e| HttpError::Bind(settings.bind, e))?;
        let local = listener.local_addr().map_err(|e| HttpError::Bind(settings.bind, e))?;
        let shutdown = CancellationToken::new();
        let config = rmcp_config(local, &settings, shutdown.child_token());
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let front = Front {
            service,
            token: settings.token,
            slots: Slots::new(settings.calls_per_client),
            max_body_bytes: settings.max_body_bytes,
            idle_timeout: settings.idle_timeout,
        };
        Ok(Self {
            listener,
            front: Arc::new(front),
            max_connections: settings.max_connections,
            idle_timeout: settings.idle_timeout,
            shutdown,
        })
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
            let permit = tokio::select! {
                permit = connections.clone().acquire_owned() => permit.expect("never closed"),
                () = self.shutdown.cancelled() => break,
            };
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
            let front = self.front.clone();
            let shutdown = self.shutdown.clone();
            let idle = self.idle_timeout;
            open.spawn(async move {
                let _permit = permit;
                serve_connection(stream, peer.ip(), front, idle, shutdown).await;
            });
            while open.try_join_next().is_some() {}
        }
        open.shutdown().await;
        Ok(())
    }
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

/// Serve one connection: HTTP/1.1, the head within `idle`, until it closes or
/// the server stops.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    client: IpAddr,
    front: Arc<Front>,
    idle: Duration,
    shutdown: CancellationToken,
) {
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let front = front.clone();
        async move { Ok::<_, Infallible>(front.handle(request, client).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(idle).keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => {
            if let Err(error) = served {
                tracing::debug!(%error, %client, "HTTP connection ended");
            }
        }
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), connection).await;
        }
    }
}

impl Front {
    async fn handle(&self, request: Request<Incoming>, client: IpAddr) -> Response<HttpBody> {
        if request.uri().path() != ENDPOINT {
            return plain(StatusCode::NOT_FOUND, format!("Not Found: the MCP endpoint is {ENDPOINT}"));
        }
        if let Some(token) = &self.token
            && !token.admits(request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes()))
        {
            let mut response = plain(StatusCode::UNAUTHORIZED, "Unauthorized: a bearer token is required");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
            return response;
        }
        let post = request.method() == Method::POST;
        let slot = match post.then(|| self.slots.take(client)) {
            None => None,
            Some(Some(slot)) => Some(slot),
            Some(None) => {
                let mut response = plain(
                    StatusCode::TOO_MANY_REQUESTS,
                    "Too Many Requests: this client has too many calls in flight",
                );
                response.headers_mut().insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
                return response;
            }
        };
        let (parts, body) = request.into_parts();
        let body = if post {
            match limits::read_body(body, self.max_body_bytes, self.idle_timeout).await {
                Ok(body) => body,
                Err(BodyRefused::TooLarge(max)) => {
                    return plain(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("Payload Too Large: at most {max} bytes"),
                    );
                }
                Err(BodyRefused::TooSlow(patience)) => {
                    let why = format!(
                        "Request Timeout: the body did not arrive within {} ms",
                        patience.as_millis()
                    );
                    return plain(StatusCode::REQUEST_TIMEOUT, why);
                }
                Err(BodyRefused::Broken(why)) => {
                    return plain(StatusCode::BAD_REQUEST, format!("Bad Request: {why}"));
                }
            }
        } else {
            Bytes::new()
        };
        if post && let Some(answer) = precheck(&body) {
            return answer;
        }
        let response = self.service.handle(Request::from_parts(parts, Full::new(body))).await;
        response.map(|body| HoldingBody::new(body, slot).boxed())
    }
}

/// The JSON-RPC front's answer to a POST body rmcp would answer wrongly, or
/// `None` to hand it to rmcp.
fn precheck(body: &[u8]) -> Option<Response<HttpBody>> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => return Some(json(StatusCode::BAD_REQUEST, &jsonrpc::parse_error(&e))),
    };
    if value.is_array() {
        let why = "Invalid Request: batches are not accepted over HTTP";
        return Some(json(
            StatusCode::BAD_REQUEST,
            &jsonrpc::error_response(Value::Null, INVALID_REQUEST, why),
        ));
    }
    match jsonrpc::classify(value) {
        Classified::Forward(_) => None,
        Classified::Answer(answer) => Some(json(StatusCode::BAD_REQUEST, &answer)),
        Classified::Drop(why) => Some(plain(StatusCode::BAD_REQUEST, format!("Bad Request: {why}"))),
    }
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from(text.into())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn json(status: StatusCode, value: &Value) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}
