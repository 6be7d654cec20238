//! [`FetchClient`]: the hops of one request (vet, resolve once, vet the addresses, connect
//! to a vetted one), redirects by hand, and every limit. Free of WIT types, so it is
//! tested on its own.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use rustls::ClientConfig;
use url::{Host, Position, Url};

use super::connect;
use super::exchange::{self, BodyPlan, Received, Stream};
use super::net::{Connector, Resolver};
use super::types::{FetchError, FetchRequest, FetchResponse, OpenError};
use super::vet;
use super::{FetchLimits, NetGrant};

/// Request headers the host manages itself: a plugin's values for them are dropped.
fn host_managed(name: &str) -> bool {
    const MANAGED: [&str; 9] = [
        "host",
        "connection",
        "content-length",
        "transfer-encoding",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "expect",
    ];
    MANAGED.contains(&name) || name.starts_with("proxy-")
}

/// The pinned HTTP client shared by every call of a host.
pub struct FetchClient {
    resolver: Arc<dyn Resolver>,
    connector: Arc<dyn Connector>,
    limits: FetchLimits,
    tls: Result<Arc<ClientConfig>, String>,
    user_agent: HeaderValue,
}

impl std::fmt::Debug for FetchClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchClient").field("limits", &self.limits).finish_non_exhaustive()
    }
}

/// One hop's request, before it is sent.
struct Hop {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Bytes,
}

impl FetchClient {
    /// A client resolving with `resolver`, connecting with `connector`, under `limits`.
    pub fn new(resolver: Arc<dyn Resolver>, connector: Arc<dyn Connector>, limits: FetchLimits) -> Self {
        let user_agent = HeaderValue::from_static(concat!("toolhost/", env!("CARGO_PKG_VERSION")));
        Self { resolver, connector, limits, tls: exchange::tls_config(), user_agent }
    }

    /// Trust `roots` (and only them) for https: tests serve TLS with their own certificate.
    #[cfg(test)]
    pub(super) fn with_tls_roots(mut self, roots: rustls::RootCertStore) -> Self {
        self.tls = exchange::tls_config_with(roots);
        self
    }

    /// The limits this client enforces.
    pub fn limits(&self) -> &FetchLimits {
        &self.limits
    }

    /// Send `req` for a plugin holding `grant`, finishing before `deadline` (the call's),
    /// following redirects. Every refusal happens before any connection it concerns.
    pub async fn fetch(
        &self,
        grant: &NetGrant,
        req: FetchRequest,
        deadline: Option<Instant>,
    ) -> Result<FetchResponse, FetchError> {
        let method = vet::vet_method(&req.method).map_err(FetchError::MethodNotAllowed)?;
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| FetchError::MethodNotAllowed(format!("{method}: {e}")))?;
        let body = req.body.unwrap_or_default();
        if body.len() > self.limits.max_request_body {
            return Err(FetchError::TooLarge(format!(
                "the request body is {} bytes; the limit is {} bytes",
                body.len(),
                self.limits.max_request_body
            )));
        }
        let headers = self.request_headers(&req.headers)?;
        let url = self.check_url(grant, &req.url)?;
        let cap = req.max_bytes.unwrap_or(u64::MAX).min(self.limits.max_response_body);

        let mut budget = self.limits.timeout;
        if let Some(t) = req.timeout {
            budget = budget.min(t);
        }
        if let Some(deadline) = deadline {
            budget = budget.min(deadline.saturating_duration_since(Instant::now()));
        }
        let timed_out =
            || FetchError::Timeout(format!("no complete response within {} ms", budget.as_millis()));
        if budget.is_zero() {
            return Err(timed_out());
        }
        let hop = Hop { method, url, headers, body: Bytes::from(body) };
        tokio::time::timeout(budget, self.follow(grant, hop, cap)).await.map_err(|_| timed_out())?
    }

    /// Vet `raw` and check its host against the grant.
    pub(crate) fn check_url(&self, grant: &NetGrant, raw: &str) -> Result<Url, FetchError> {
        let url = vet::vet_url(raw, grant.allow_private)
            .map_err(|e| FetchError::vetted(e, !grant.allow_private && vet::vet_url(raw, true).is_ok()))?;
        let host = url.host_str().unwrap_or_default();
        if !vet::host_allowed(&grant.hosts, host) {
            return Err(FetchError::host_not_granted(host, &grant.hosts));
        }
        Ok(url)
    }

    /// The plugin's headers minus the host-managed ones, plus a default `user-agent`.
    fn request_headers(&self, raw: &[(String, String)]) -> Result<HeaderMap, FetchError> {
        let size: usize = raw.iter().map(|(k, v)| k.len() + v.len()).sum();
        if size > self.limits.max_request_headers {
            return Err(FetchError::TooLarge(format!(
                "the request headers are {size} bytes; the limit is {} bytes",
                self.limits.max_request_headers
            )));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in raw {
            let lower = name.to_ascii_lowercase();
            if host_managed(&lower) {
                continue;
            }
            let bad = || FetchError::Transport(format!("request header {name:?} is not a valid HTTP header"));
            let name = HeaderName::from_bytes(lower.as_bytes()).map_err(|_| bad())?;
            let value = HeaderValue::from_str(value).map_err(|_| bad())?;
            headers.append(name, value);
        }
        if !headers.contains_key(header::USER_AGENT) {
            headers.insert(header::USER_AGENT, self.user_agent.clone());
        }
        Ok(headers)
    }

    /// Make hops until one answers with something other than a redirect to follow.
    async fn follow(&self, grant: &NetGrant, mut hop: Hop, cap: u64) -> Result<FetchResponse, FetchError> {
        let mut redirects = 0;
        loop {
            let received = self.hop(grant, &hop, cap).await?;
            let Some(location) = redirect_target(&received) else {
                return Ok(FetchResponse {
                    status: received.status.as_u16(),
                    headers: received
                        .headers
                        .iter()
                        .map(|(k, v)| {
                            (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned())
                        })
                        .collect(),
                    body: received.body,
                    final_url: hop.url.into(),
                    truncated: received.truncated,
                });
            };
            if redirects == self.limits.max_redirects {
                return Err(FetchError::TooManyRedirects(format!(
                    "more than {} redirects; the last one, from {}, pointed to {location}",
                    self.limits.max_redirects, hop.url
                )));
            }
            redirects += 1;
            let next = hop.url.join(&location).map_err(|e| {
                FetchError::InvalidUrl(format!("redirect from {} to {location:?}: {e}", hop.url))
            })?;
            let next = self.check_url(grant, next.as_str())?;
            let status = received.status;
            let to_get = (status == StatusCode::SEE_OTHER && hop.method != Method::HEAD)
                || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                    && hop.method == Method::POST);
            if to_get {
                hop.method = Method::GET;
                hop.body = Bytes::new();
                hop.headers.remove(header::CONTENT_TYPE);
                hop.headers.remove(header::CONTENT_ENCODING);
            }
            if next.origin() != hop.url.origin() {
                hop.headers.remove(header::AUTHORIZATION);
                hop.headers.remove(header::COOKIE);
            }
            tracing::debug!(from = %hop.url, to = %next, status = status.as_u16(), "fetch: following a redirect");
            hop.url = next;
        }
    }

    /// One hop: open a stream to a vetted address, exchange.
    async fn hop(&self, grant: &NetGrant, hop: &Hop, cap: u64) -> Result<Received, FetchError> {
        let stream = self.open(grant, &hop.url).await?;
        let request = build_request(hop)?;
        let hard_cap = self.limits.hard_response_cap;
        let is_head = hop.method == Method::HEAD;
        exchange::run(stream, request, |parts| {
            if is_redirect(parts.status) && parts.headers.contains_key(header::LOCATION) {
                return Ok(BodyPlan::Skip);
            }
            let bodiless =
                is_head || matches!(parts.status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED);
            match exchange::declared_length(&parts.headers) {
                Some(n) if n > hard_cap && !bodiless => Err(FetchError::TooLarge(format!(
                    "the response declares {n} bytes; the host refuses more than {hard_cap}"
                ))),
                _ => Ok(BodyPlan::Read(cap)),
            }
        })
        .await
    }

    /// A stream to the host of `url` (already checked with [`Self::check_url`]): its name
    /// resolved once, every address vetted, one of them connected (happy eyeballs, each
    /// attempt with its own timeout), TLS for https with the original name. There is no
    /// second lookup, so a name that rebinds after the check is never reached.
    pub(crate) async fn open(&self, grant: &NetGrant, url: &Url) -> Result<Stream, OpenError> {
        let invalid = |m: String| OpenError::Denied(FetchError::InvalidUrl(m));
        let host = url.host().ok_or_else(|| invalid("URL has no host".into()))?;
        let port = url.port_or_known_default().ok_or_else(|| invalid(format!("no port for {url}")))?;
        let (name, addrs): (String, Vec<IpAddr>) = match &host {
            Host::Domain(name) => {
                let addrs = self
                    .resolver
                    .lookup(name)
                    .await
                    .map_err(|e| OpenError::NotFound(format!("cannot resolve `{name}`: {e}")))?;
                ((*name).to_owned(), addrs)
            }
            Host::Ipv4(ip) => (ip.to_string(), vec![IpAddr::V4(*ip)]),
            Host::Ipv6(ip) => (ip.to_string(), vec![IpAddr::V6(*ip)]),
        };
        vet::vet_resolved(&name, &addrs, grant.allow_private).map_err(|e| {
            let lifted = !grant.allow_private && vet::vet_resolved(&name, &addrs, true).is_ok();
            OpenError::Denied(FetchError::vetted(e, lifted))
        })?;
        let tcp = connect::connect(&*self.connector, &addrs, port, self.limits.connect_timeout)
            .await
            .map_err(|f| OpenError::Connect {
                timed_out: f.timed_out,
                message: format!("cannot connect to `{name}` ({})", f.attempts.join("; ")),
            })?;
        let tls = match url.scheme() {
            "https" => Some((self.tls.clone().map_err(OpenError::Tls)?, &host)),
            _ => None,
        };
        exchange::tls(tcp, tls).await
    }
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// The Location of a redirect to follow, if `received` is one.
fn redirect_target(received: &Received) -> Option<String> {
    if !is_redirect(received.status) {
        return None;
    }
    let value = received.headers.get(header::LOCATION)?;
    Some(String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// The HTTP/1.1 request of one hop: origin-form target, the original host in `Host`.
fn build_request(hop: &Hop) -> Result<Request<Full<Bytes>>, FetchError> {
    let url = &hop.url;
    let target = &url[Position::BeforePath..Position::AfterQuery];
    let target = if target.is_empty() { "/" } else { target };
    let mut host = url.host_str().unwrap_or_default().to_owned();
    if let Some(port) = url.port() {
        host.push_str(&format!(":{port}"));
    }
    let invalid = |what: &str| FetchError::InvalidUrl(format!("{url}: {what} cannot be sent in a request"));
    let mut request = Request::builder()
        .method(hop.method.clone())
        .uri(target)
        .body(Full::new(hop.body.clone()))
        .map_err(|_| invalid("the path"))?;
    *request.headers_mut() = hop.headers.clone();
    let host = HeaderValue::from_str(&host).map_err(|_| invalid("the host"))?;
    request.headers_mut().insert(header::HOST, host);
    Ok(request)
}
