//! A server's only way out: an HTTP proxy the host serves on the listener inside
//! the server's own network namespace (`HTTPS_PROXY=http://127.0.0.1:3128`).
//!
//! Every target goes through the pinned fetch's vetting, exactly as a plugin's
//! fetch does ([`FetchClient::check_url`] then [`FetchClient::open`]): the
//! server's `network` allow-list, local names and private, loopback and link-local
//! addresses refused before and after the one lookup, and only a vetted address
//! connected (no second lookup, so a name that rebinds is never followed).
//!
//! - `CONNECT host:port` (HTTPS, and anything else tunnelled): vetted, connected,
//!   answered `200`, then bytes are copied both ways; TLS is the server's own,
//!   end to end.
//! - An absolute-form request (`GET http://host/path`): vetted, connected, sent on
//!   in origin form with its `Proxy-*` and hop-by-hop headers removed, the answer
//!   streamed back. `https://` in absolute form is refused (use `CONNECT`).
//! - Anything else, and every refusal: `403` (a rule) or `502` (the target did not
//!   answer), with `code: why` as the body, logged with the server's name.
//!
//! At most [`MAX_CONNECTIONS`] connections at once per server.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::Semaphore;

use crate::imports::fetch::{FetchClient, FetchError, NetGrant};

/// Connections one server may have open through its proxy at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;

type Body = BoxBody<Bytes, hyper::Error>;

/// Serve the proxy of the server `server` on `listener` until the task is aborted.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    grant: NetGrant,
    client: Arc<FetchClient>,
    server: String,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let shared = Arc::new(Shared { grant, client, server, slots: Semaphore::new(MAX_CONNECTIONS) });
    Ok(tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            };
            let Ok((stream, _)) = accepted else { continue };
            let shared = shared.clone();
            connections.spawn(async move {
                let Ok(_slot) = shared.slots.try_acquire() else {
                    tracing::warn!(server = %shared.server, "proxy: too many connections; one refused");
                    return;
                };
                let service = hyper::service::service_fn(|req| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(shared.handle(req).await) }
                });
                let served = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
                if let Err(e) = served {
                    tracing::debug!(server = %shared.server, "proxy connection: {e}");
                }
            });
        }
    }))
}

struct Shared {
    grant: NetGrant,
    client: Arc<FetchClient>,
    server: String,
    slots: Semaphore,
}

impl Shared {
    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        if req.method() == Method::CONNECT {
            return self.tunnel(req).await;
        }
        match req.uri().scheme_str() {
            Some("http") => self.forward(req).await,
            Some(other) => refuse(
                StatusCode::BAD_REQUEST,
                &format!("{other}:// requests go through CONNECT (set HTTPS_PROXY, not only HTTP_PROXY)"),
            ),
            None => {
                refuse(StatusCode::BAD_REQUEST, "this is a proxy: send absolute-form requests or CONNECT")
            }
        }
    }

    /// Vet `url` (the grant's hosts, its addresses) and open a plain stream to a vetted address.
    async fn open(
        &self,
        url: &str,
    ) -> Result<impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + use<>, Response<Body>>
    {
        let denied = |e: FetchError| {
            tracing::warn!(server = %self.server, target = url, "proxy refused: {e}");
            refuse(StatusCode::FORBIDDEN, &format!("{}: {e}", e.code()))
        };
        let checked = self.client.check_url(&self.grant, url).map_err(denied)?;
        self.client.open(&self.grant, &checked).await.map_err(|e| match e {
            crate::imports::fetch::OpenError::Denied(e) => denied(e),
            other => {
                let e = FetchError::from(other);
                tracing::info!(server = %self.server, target = url, "proxy could not connect: {e}");
                refuse(StatusCode::BAD_GATEWAY, &format!("{}: {e}", e.code()))
            }
        })
    }

    async fn tunnel(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let Some(authority) = req.uri().authority().filter(|a| a.port_u16().is_some()) else {
            return refuse(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
        };
        // `http`: a plain stream to the vetted address; TLS stays the server's.
        let url = format!("http://{authority}/");
        let mut upstream = match self.open(&url).await {
            Ok(stream) => stream,
            Err(refused) => return refused,
        };
        let server = self.server.clone();
        tokio::spawn(async move {
            match hyper::upgrade::on(req).await {
                Ok(upgraded) => {
                    let mut upgraded = TokioIo::new(upgraded);
                    let _ = tokio::io::copy_bidirectional(&mut upgraded, &mut upstream).await;
                }
                Err(e) => tracing::debug!(%server, "proxy: CONNECT upgrade failed: {e}"),
            }
        });
        Response::new(empty())
    }

    async fn forward(self: Arc<Self>, mut req: Request<Incoming>) -> Response<Body> {
        let url = req.uri().to_string();
        let stream = match self.open(&url).await {
            Ok(stream) => stream,
            Err(refused) => return refused,
        };
        let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(e) => return refuse(StatusCode::BAD_GATEWAY, &format!("transport: {e}")),
        };
        tokio::spawn(conn);
        let uri = req.uri().clone();
        let host = uri.authority().map(|a| a.as_str().to_string()).unwrap_or_default();
        let origin = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        match origin.parse() {
            Ok(origin) => *req.uri_mut() = origin,
            Err(_) => return refuse(StatusCode::BAD_REQUEST, "unusable request target"),
        }
        let headers = req.headers_mut();
        let hop_by_hop = [
            "connection",
            "keep-alive",
            "te",
            "trailer",
            "upgrade",
            "proxy-authorization",
            "proxy-connection",
        ];
        for name in hop_by_hop {
            headers.remove(name);
        }
        if let Ok(value) = host.parse() {
            headers.insert(header::HOST, value);
        }
        match sender.send_request(req).await {
            Ok(response) => response.map(BodyExt::boxed),
            Err(e) => refuse(StatusCode::BAD_GATEWAY, &format!("transport: {e}")),
        }
    }
}

fn empty() -> Body {
    Full::new(Bytes::new()).map_err(|never| match never {}).boxed()
}

/// A refusal: `status`, and `why` as a text body.
fn refuse(status: StatusCode, why: &str) -> Response<Body> {
    let mut response =
        Response::new(Full::new(Bytes::from(format!("{why}\n"))).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain"));
    response
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::imports::fetch::{FetchLimits, HostPattern, Lookup, Resolver, TcpConnector};

    /// Every name is 127.0.0.1: a name that "rebinds" to loopback.
    struct Loopback;
    impl Resolver for Loopback {
        fn lookup<'a>(&'a self, _host: &'a str) -> Lookup<'a> {
            Box::pin(async { Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]) })
        }
    }

    async fn proxy(hosts: &[&str], allow_private: bool) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let grant =
            NetGrant { hosts: hosts.iter().map(|h| HostPattern::parse(h).unwrap()).collect(), allow_private };
        let client =
            Arc::new(FetchClient::new(Arc::new(Loopback), Arc::new(TcpConnector), FetchLimits::default()));
        spawn(listener, grant, client, "t".into()).unwrap();
        addr
    }

    async fn connect(proxy: std::net::SocketAddr, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        stream
            .write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[tokio::test]
    async fn targets_are_vetted_and_only_vetted_addresses_connected() {
        let canary = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = canary.local_addr().unwrap().port();
        let strict = proxy(&["allowed.test"], false).await;
        // The allow-list, then the address the name resolved to, then literal addresses.
        let answer = connect(strict, &format!("other.test:{port}")).await;
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("host_not_allowed"), "{answer}");
        let answer = connect(strict, &format!("allowed.test:{port}")).await;
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("blocked_url"), "{answer}");
        let answer = connect(strict, &format!("127.0.0.1:{port}")).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let answer = connect(strict, &format!("localhost:{port}")).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let refused = tokio::time::timeout(std::time::Duration::from_millis(200), canary.accept()).await;
        assert!(refused.is_err(), "the canary was connected to");
        // With the opt-out (tests, local setups) the same name goes through.
        let open = proxy(&["allowed.test"], true).await;
        let answer = connect(open, &format!("allowed.test:{port}")).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(canary.accept().await.is_ok());
    }

    /// What the proxy answers to one request `head` (sent as is), read to its end.
    async fn ask(proxy: std::net::SocketAddr, head: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_end(&mut buf)).await;
        assert!(read.is_ok(), "the proxy did not finish its answer");
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// A plain request (`HTTP_PROXY`, absolute form) is vetted like a `CONNECT`:
    /// an unlisted name, a listed one resolving to loopback and a literal address
    /// are refused without a connection; `https://` must tunnel; a vetted one is
    /// forwarded and its answer streamed back.
    #[tokio::test]
    async fn plain_requests_are_vetted_like_connect() {
        let canary = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = canary.local_addr().unwrap().port();
        let get = |target: &str| {
            format!("GET http://{target}/x HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n")
        };
        let strict = proxy(&["allowed.test"], false).await;
        let answer = ask(strict, &get(&format!("other.test:{port}"))).await;
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("host_not_allowed"), "{answer}");
        let answer = ask(strict, &get(&format!("allowed.test:{port}"))).await;
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("blocked_url"), "{answer}");
        let answer = ask(strict, &get(&format!("127.0.0.1:{port}"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let https = format!(
            "GET https://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n"
        );
        let answer = ask(strict, &https).await;
        assert!(answer.starts_with("HTTP/1.1 400") && answer.contains("CONNECT"), "{answer}");
        let answer = ask(strict, "GET /relative HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        let refused = tokio::time::timeout(std::time::Duration::from_millis(200), canary.accept()).await;
        assert!(refused.is_err(), "the canary was connected to");
        // With the opt-out the same name is forwarded, and the answer comes back.
        let open = proxy(&["allowed.test"], true).await;
        let server = tokio::spawn(async move {
            let (mut stream, _) = canary.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = stream.read(&mut buf).await.unwrap();
            let body = b"canary answered";
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(body).await.unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        let answer = ask(open, &get(&format!("allowed.test:{port}"))).await;
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("canary answered"), "{answer}");
        let seen = server.await.unwrap();
        assert!(seen.starts_with("GET /x HTTP/1.1"), "sent on in origin form: {seen}");
    }
}
