//! One outgoing `wasi:http` request, through the pinned client: the method, the URL
//! and its host checked as `fetch` checks them, the stream opened by
//! [`FetchClient::open`] (one lookup, every address vetted, only a vetted address
//! connected), then hyper's HTTP/1.1 client connection over it with both bodies bounded
//! ([`super::body`]) and everything ending at the request's deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::header::{self, HeaderValue};
use http::{Request, Response, Uri};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio::time::Instant;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, WasiBody};

use super::body;
use crate::imports::CallInfo;
use crate::imports::fetch::{FetchClient, FetchError, NetGrant, OpenError, vet};

/// What the io future of a sent request resolves to.
pub(super) type Io = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// How many requests one call has made and has open (shared by its requests).
#[derive(Debug, Default)]
pub(super) struct Budget {
    made: AtomicUsize,
    open: Arc<AtomicUsize>,
}

/// One open request: released when its connection ends.
pub(super) struct OpenSlot(Arc<AtomicUsize>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Budget {
    /// Take a slot for one more request, or say which limit refuses it.
    pub(super) fn take(&self, total: usize, open: usize) -> Result<OpenSlot, String> {
        if self.made.fetch_add(1, Ordering::SeqCst) >= total {
            return Err(format!("this call already made {total} requests, the most one call may make"));
        }
        if self.open.fetch_add(1, Ordering::SeqCst) >= open {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return Err(format!("{open} requests of this call are open already, the most at once"));
        }
        Ok(OpenSlot(self.open.clone()))
    }
}

/// A refusal: the code the guest gets and the rule the host logs.
pub(super) struct Refusal {
    pub(super) code: ErrorCode,
    pub(super) rule: &'static str,
    pub(super) why: String,
}

impl Refusal {
    fn new(code: ErrorCode, rule: &'static str, why: impl Into<String>) -> Self {
        Self { code, rule, why: why.into() }
    }
}

/// The `error-code` and rule for a [`FetchError`] of the URL checks.
fn denied(e: FetchError) -> Refusal {
    match e {
        FetchError::BlockedUrl(m) => Refusal::new(ErrorCode::DestinationIpProhibited, "private address", m),
        FetchError::HostNotAllowed(m) => Refusal::new(ErrorCode::HttpRequestDenied, "host not granted", m),
        FetchError::InvalidUrl(m) => Refusal::new(ErrorCode::HttpRequestUriInvalid, "invalid URL", m),
        FetchError::MethodNotAllowed(m) => Refusal::new(ErrorCode::HttpRequestMethodInvalid, "method", m),
        FetchError::TooLarge(m) => Refusal::new(ErrorCode::HttpRequestHeaderSectionSize(None), "size", m),
        other => {
            Refusal::new(ErrorCode::InternalError(Some(other.to_string())), "transport", other.to_string())
        }
    }
}

fn open_failed(e: OpenError) -> Refusal {
    match e {
        OpenError::Denied(e) => denied(e),
        OpenError::NotFound(m) => Refusal::new(ErrorCode::DestinationNotFound, "name not found", m),
        OpenError::Connect { timed_out: true, message } => {
            Refusal::new(ErrorCode::ConnectionTimeout, "connect timeout", message)
        }
        OpenError::Connect { timed_out: false, message } => {
            Refusal::new(ErrorCode::ConnectionRefused, "connect failed", message)
        }
        OpenError::Tls(m) => Refusal::new(ErrorCode::TlsProtocolError, "TLS", m),
    }
}

/// What one request needs, cloned out of the call's state so the send can run on its own.
pub(super) struct Sender {
    pub(super) client: Arc<FetchClient>,
    pub(super) grant: Arc<NetGrant>,
    pub(super) call: CallInfo,
}

impl Sender {
    /// Send `request`; every refusal is logged with the rule that made it.
    pub(super) async fn send(
        self,
        request: Request<WasiBody>,
        slot: OpenSlot,
    ) -> Result<(Response<WasiBody>, Io), Error> {
        let host = request.uri().host().unwrap_or_default().to_owned();
        let method = request.method().to_string();
        match self.exchange(request, slot).await {
            Ok(done) => {
                tracing::debug!(plugin = %self.call.plugin, call = %self.call.call_id, method, host, "wasi:http");
                Ok(done)
            }
            Err(r) => {
                tracing::info!(
                    plugin = %self.call.plugin, call = %self.call.call_id, method, host, rule = r.rule,
                    why = %r.why, "wasi:http request refused or failed"
                );
                Err(r.code.into())
            }
        }
    }

    async fn exchange(
        &self,
        request: Request<WasiBody>,
        slot: OpenSlot,
    ) -> Result<(Response<WasiBody>, Io), Refusal> {
        let limits = self.client.limits().clone();
        let deadline = Instant::from_std(self.call.deadline).min(Instant::now() + limits.timeout);
        let (mut parts, body) = request.into_parts();
        // Refused before hyper takes it, the body is still read to its end (`body::Pending`).
        let mut body = body::Pending(Some(body::request(body, limits.max_request_body as u64, deadline)));
        vet::vet_method(parts.method.as_str())
            .map_err(|m| Refusal::new(ErrorCode::HttpRequestMethodInvalid, "method", m))?;
        let url = self.client.check_url(&self.grant, &parts.uri.to_string()).map_err(denied)?;
        let size: usize = parts.headers.iter().map(|(k, v)| k.as_str().len() + v.len()).sum();
        if size > limits.max_request_headers {
            let why =
                format!("the request headers are {size} bytes; the limit is {}", limits.max_request_headers);
            let code = ErrorCode::HttpRequestHeaderSectionSize(u32::try_from(size).ok());
            return Err(Refusal::new(code, "header size", why));
        }
        for name in [header::CONNECTION, header::TE, header::TRAILER, header::UPGRADE, header::EXPECT] {
            parts.headers.remove(name);
        }
        if !parts.headers.contains_key(header::USER_AGENT) {
            let agent = HeaderValue::from_static(concat!("toolhost/", env!("CARGO_PKG_VERSION")));
            parts.headers.insert(header::USER_AGENT, agent);
        }
        // Origin-form on the wire; the host stays in the `Host` header wasmtime-wasi-http set.
        let target = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        parts.uri = Uri::try_from(target)
            .map_err(|e| Refusal::new(ErrorCode::HttpRequestUriInvalid, "invalid URL", e.to_string()))?;
        let late = || Refusal::new(ErrorCode::ConnectionTimeout, "deadline", "the call's time ran out");

        let stream = tokio::time::timeout_at(deadline, self.client.open(&self.grant, &url))
            .await
            .map_err(|_| late())?
            .map_err(open_failed)?;
        let protocol = |e: hyper::Error| {
            let code = match std::error::Error::source(&e).and_then(|s| s.downcast_ref::<ErrorCode>()) {
                Some(code) => code.clone(),
                // hyper's bound on a response head (about 400 KiB).
                None if e.is_parse_too_large() => ErrorCode::HttpResponseHeaderSectionSize(None),
                None => ErrorCode::HttpProtocolError,
            };
            Refusal::new(code, "HTTP exchange", e.to_string())
        };
        let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(protocol)?;
        let body =
            body.0.take().map_or_else(body::empty, |b| body::outgoing(b, &parts.method, &parts.headers));
        let request = Request::from_parts(parts, body);
        let mut connection = Box::pin(connection);
        let response = tokio::time::timeout_at(deadline, async {
            let sent = sender.send_request(request);
            tokio::pin!(sent);
            tokio::select! {
                r = &mut sent => r,
                // The server closed before answering: the request's own error says why.
                done = &mut connection => match done {
                    Ok(()) => sent.await,
                    Err(e) => Err(e),
                },
            }
        })
        .await
        .map_err(|_| Refusal::new(ErrorCode::HttpResponseTimeout, "deadline", "no response head in time"))?
        .map_err(protocol)?;

        let declared =
            response.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if let Some(n) = declared.filter(|n| *n > limits.hard_response_cap) {
            let why = format!(
                "the response declares {n} bytes; the host refuses more than {}",
                limits.hard_response_cap
            );
            return Err(Refusal::new(ErrorCode::HttpResponseBodySize(Some(n)), "response size", why));
        }
        let response = response.map(|b| body::response(b, limits.max_response_body, deadline).boxed_unsync());
        let io: Io = Box::new(async move {
            let _slot = slot;
            match tokio::time::timeout_at(deadline, connection).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(Error::Hyper(e)),
                Err(_) => Err(Error::HttpResponseTimeout),
            }
        });
        Ok((response, io))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_counts_made_and_open_requests() {
        let budget = Budget::default();
        let a = budget.take(3, 2).expect("first");
        let _b = budget.take(3, 2).expect("second");
        let err = budget.take(3, 2).err().expect("two open at most");
        assert!(err.contains("open already"), "{err}");
        drop(a);
        let err = budget.take(3, 2).err().expect("three made at most, the refused one counted");
        assert!(err.contains("made 3 requests"), "{err}");
    }
}
