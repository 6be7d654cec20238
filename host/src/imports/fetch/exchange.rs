//! One HTTP/1.1 exchange over one stream the client connected itself: optional TLS
//! ([`tls`]), then hyper's client connection (over [`TokioIo`]), then the response head and
//! (capped) body.
//!
//! Nothing is spawned: the connection is driven inside the same future as the request, so
//! dropping that future (timeout, the call's deadline or cancellation) closes the socket
//! and leaves nothing running.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::response::Parts;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use url::Host;

use super::types::{FetchError, OpenError};

/// A connected stream, plain or TLS, ready for HTTP.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A boxed [`Io`].
pub(crate) type Stream = Box<dyn Io>;

/// What came back from one exchange.
pub(super) struct Received {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: Vec<u8>,
    pub(super) truncated: bool,
}

/// What to do with a response body, decided from its head.
pub(super) enum BodyPlan {
    /// Do not read it (a redirect about to be followed).
    Skip,
    /// Read at most this many bytes; cut and mark `truncated` past it.
    Read(u64),
}

/// `transport` with the whole error chain.
pub(super) fn transport(what: &str, err: &(dyn StdError + 'static)) -> FetchError {
    FetchError::Transport(chain(what, err))
}

/// `what: err: its source: …`.
pub(crate) fn chain(what: &str, err: &(dyn StdError + 'static)) -> String {
    let mut text = format!("{what}: {err}");
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// The TLS settings of every https hop: the webpki roots, the `ring` provider, HTTP/1.1
/// over ALPN, no client certificate.
pub(crate) fn tls_config() -> Result<Arc<ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    tls_config_with(roots)
}

/// The crypto provider every TLS connection of the host uses: *ring*'s.
/// rustls 0.23.48 deprecates it for lacking post-quantum key exchange; its
/// replacement (aws-lc-rs) needs cmake and a C toolchain at build time, which
/// the two-command Quick start does not assume.
#[allow(deprecated)]
pub(crate) fn ring_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// [`tls_config`] trusting `roots` instead of the webpki roots.
pub(crate) fn tls_config_with(roots: rustls::RootCertStore) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(ring_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The name the certificate must match and that goes in SNI: the URL's own host, never
/// the address that was connected.
fn server_name(host: &Host<&str>) -> Result<ServerName<'static>, FetchError> {
    match host {
        Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(name);
            ServerName::try_from(name.to_owned())
                .map_err(|e| FetchError::InvalidUrl(format!("`{name}` is not a valid TLS server name: {e}")))
        }
        Host::Ipv4(ip) => Ok(ServerName::from(std::net::IpAddr::V4(*ip))),
        Host::Ipv6(ip) => Ok(ServerName::from(std::net::IpAddr::V6(*ip))),
    }
}

/// `tcp` as is, or through TLS for `host` when `tls` is given.
pub(super) async fn tls(
    tcp: TcpStream,
    tls: Option<(Arc<ClientConfig>, &Host<&str>)>,
) -> Result<Stream, OpenError> {
    let Some((config, host)) = tls else { return Ok(Box::new(tcp)) };
    let name = server_name(host).map_err(OpenError::Denied)?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| OpenError::Tls(chain("TLS handshake failed", &e)))?;
    Ok(Box::new(stream))
}

/// Run one exchange over `stream`.
pub(super) async fn run<F>(
    stream: Stream,
    request: Request<Full<Bytes>>,
    plan: F,
) -> Result<Received, FetchError>
where
    F: FnOnce(&Parts) -> Result<BodyPlan, FetchError>,
{
    over(stream, request, plan).await
}

/// HTTP/1.1 over a connected stream.
async fn over<S, F>(stream: S, request: Request<Full<Bytes>>, plan: F) -> Result<Received, FetchError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    F: FnOnce(&Parts) -> Result<BodyPlan, FetchError>,
{
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Full<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(|e| transport("HTTP handshake failed", &e))?;
    let work = async move {
        let response = sender.send_request(request).await.map_err(|e| {
            if e.is_parse_too_large() {
                FetchError::TooLarge(format!("the response head is too large: {e}"))
            } else {
                transport("HTTP request failed", &e)
            }
        })?;
        let (parts, body) = response.into_parts();
        let (body, truncated) = match plan(&parts)? {
            BodyPlan::Skip => (Vec::new(), false),
            BodyPlan::Read(cap) => read_capped(body, cap, declared_length(&parts.headers)).await?,
        };
        Ok(Received { status: parts.status, headers: parts.headers, body, truncated })
    };
    drive(work, connection).await
}

/// Poll the request and its connection together until the request is done; the
/// connection may finish first (the server closed after sending everything).
async fn drive<W, C, E>(work: W, connection: C) -> W::Output
where
    W: Future,
    C: Future<Output = Result<(), E>>,
{
    let mut work = std::pin::pin!(work);
    let mut connection = std::pin::pin!(connection);
    let mut connection_done = false;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = &mut connection, if !connection_done => connection_done = true,
        }
    }
}

/// The `Content-Length` the server declared, if it is a number.
pub(super) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(http::header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// Read at most `cap` bytes of `body`; stop reading (and report `truncated`) as soon as
/// there is more.
async fn read_capped(
    mut body: Incoming,
    cap: u64,
    declared: Option<u64>,
) -> Result<(Vec<u8>, bool), FetchError> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let reserve = declared.and_then(|n| usize::try_from(n).ok()).unwrap_or(0).min(cap).min(16 << 20);
    let mut out = Vec::with_capacity(reserve);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| transport("reading the response body failed", &e))?;
        let Ok(data) = frame.into_data() else { continue };
        let room = cap - out.len();
        if data.len() > room {
            out.extend_from_slice(&data[..room]);
            return Ok((out, true));
        }
        out.extend_from_slice(&data);
    }
    Ok((out, false))
}
