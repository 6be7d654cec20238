//! What every request passes through before rmcp, in order:
//! 1. the path: anything but `/mcp` is 404;
//! 2. the headers the checks read, each at most once (`Host`, `Origin`,
//!    `Authorization`, the MCP ones, the body framing), and an absolute-form
//!    target naming the same authority as `Host` (400 otherwise);
//! 3. the client: the connection's, or a trusted proxy's `X-Forwarded-For`
//!    (`super::client`; 400 when a trusted proxy's is not an address);
//! 4. the bearer token, when there is one (401 without it or with a wrong one);
//! 5. a slot: a client holds at most `streams_per_client` event streams (a GET
//!    or a `subscriptions/listen`, each ended after `stream_idle` with no
//!    event) and `calls_per_client` other requests in flight (429 beyond);
//! 6. the body: at most `max_body_bytes` (413), all of it within
//!    `idle_timeout` (408);
//! 7. the JSON-RPC front (`super::super::jsonrpc`): not JSON `-32700`, not a
//!    request `-32600`, unfit `tools/call` params `-32602`, a batch `-32600` (HTTP 400);
//! 8. a session for an `initialize` (`super::sessions`: 429 or 503 when there is
//!    none), and each request on a session keeps it busy until its response ends.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use rmcp::transport::StreamableHttpService;
use serde_json::Value;

use super::client::Proxies;
use super::limits::{self, BodyRefused, HoldingBody, IdleEnding, Slots};
use super::sessions::Sessions;
use super::token::BearerToken;
use crate::serve::jsonrpc::{self, INVALID_REQUEST, Incoming as Classified};
use crate::serve::mcp::ToolhostServer;

pub(crate) type HttpBody = BoxBody<Bytes, Infallible>;

/// The headers refused when repeated: those the checks here and rmcp's read.
const SINGLE: [&str; 11] = [
    "host",
    "origin",
    "authorization",
    "content-type",
    "content-length",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];

/// The state every request shares.
pub(crate) struct Front {
    pub(crate) service: StreamableHttpService<ToolhostServer, Sessions>,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) token: Option<BearerToken>,
    pub(crate) proxies: Proxies,
    pub(crate) calls: Arc<Slots>,
    pub(crate) streams: Arc<Slots>,
    pub(crate) connections: Arc<Slots>,
    pub(crate) max_body_bytes: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) stream_idle: Duration,
}

impl Front {
    pub(crate) async fn handle(&self, request: Request<Incoming>, source: IpAddr) -> Response<HttpBody> {
        if request.uri().path() != super::ENDPOINT {
            let why = format!("Not Found: the MCP endpoint is {}", super::ENDPOINT);
            return plain(StatusCode::NOT_FOUND, why);
        }
        if let Some(why) = unfit_headers(request.uri(), request.headers()) {
            return plain(StatusCode::BAD_REQUEST, format!("Bad Request: {why}"));
        }
        let client = match self.proxies.request_client(source, request.headers()) {
            Ok(client) => client,
            Err(bad) => return plain(StatusCode::BAD_REQUEST, format!("Bad Request: {bad}")),
        };
        if let Some(token) = &self.token
            && !token.admits(request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes()))
        {
            let mut response = plain(StatusCode::UNAUTHORIZED, "Unauthorized: a bearer token is required");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
            return response;
        }
        let (post, get) = (request.method() == Method::POST, request.method() == Method::GET);
        // A POST holds a call's slot while its body is read.
        let (slots, what) =
            if get { (&self.streams, "event streams") } else { (&self.calls, "calls in flight") };
        let Some(mut slot) = slots.take(client) else {
            return too_many(format!("Too Many Requests: this client has too many {what}"));
        };
        let (parts, body) = request.into_parts();
        let (body, method) = if post {
            let body = match limits::read_body(body, self.max_body_bytes, self.idle_timeout).await {
                Ok(body) => body,
                Err(refused) => return body_refused(refused),
            };
            match precheck(&body) {
                Ok(method) => (body, method),
                Err(answer) => return answer,
            }
        } else {
            (Bytes::new(), None)
        };
        let method = method.as_deref();
        let stream = get || method == Some("subscriptions/listen");
        if post && stream {
            let Some(stream_slot) = self.streams.take(client) else {
                return too_many("Too Many Requests: this client has too many event streams".into());
            };
            slot = stream_slot;
        }
        let session_id = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
        let in_use = session_id.and_then(|id| self.sessions.enter(id));
        let initialize = post && method == Some("initialize") && session_id.is_none();
        let request = Request::from_parts(parts, Full::new(body));
        let response = if initialize {
            let (admission, out) = match self.sessions.admit(client) {
                Ok(admitted) => admitted,
                Err(refused @ super::sessions::SessionRefused::ClientFull(_)) => {
                    return too_many(refused.to_string());
                }
                Err(refused) => return plain(StatusCode::SERVICE_UNAVAILABLE, refused.to_string()),
            };
            self.sessions.end(out).await;
            Sessions::with_admission(admission, self.service.handle(request)).await
        } else {
            self.service.handle(request).await
        };
        let held = (slot, in_use);
        if stream {
            response.map(|body| HoldingBody::new(IdleEnding::new(body, self.stream_idle), held).boxed())
        } else {
            response.map(|body| HoldingBody::new(body, held).boxed())
        }
    }
}

/// Why a request's headers are refused: a header the checks read given more
/// than once, or a target naming another authority than `Host`.
fn unfit_headers(uri: &http::Uri, headers: &HeaderMap) -> Option<String> {
    for name in SINGLE {
        if headers.get_all(HeaderName::from_static(name)).iter().nth(1).is_some() {
            return Some(format!("{name} is given more than once"));
        }
    }
    let target = uri.authority()?;
    let host = headers.get(header::HOST).map(|h| h.as_bytes());
    (host.map(|h| h.eq_ignore_ascii_case(target.as_str().as_bytes())) != Some(true))
        .then(|| format!("the request target names {target}, not the Host header's authority"))
}

/// The answer to a body not read.
fn body_refused(refused: BodyRefused) -> Response<HttpBody> {
    match refused {
        BodyRefused::TooLarge(max) => {
            plain(StatusCode::PAYLOAD_TOO_LARGE, format!("Payload Too Large: at most {max} bytes"))
        }
        BodyRefused::TooSlow(patience) => {
            let why = format!("Request Timeout: the body did not arrive within {} ms", patience.as_millis());
            plain(StatusCode::REQUEST_TIMEOUT, why)
        }
        BodyRefused::Broken(why) => plain(StatusCode::BAD_REQUEST, format!("Bad Request: {why}")),
    }
}

/// The method of a POST body for rmcp, or the JSON-RPC front's answer to a
/// body rmcp would answer wrongly.
fn precheck(body: &[u8]) -> Result<Option<String>, Response<HttpBody>> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => return Err(json(StatusCode::BAD_REQUEST, &jsonrpc::parse_error(&e))),
    };
    if value.is_array() {
        let why = "Invalid Request: batches are not accepted over HTTP";
        return Err(json(
            StatusCode::BAD_REQUEST,
            &jsonrpc::error_response(Value::Null, INVALID_REQUEST, why),
        ));
    }
    let method = value.get("method").and_then(Value::as_str).map(str::to_owned);
    match jsonrpc::classify(value) {
        Classified::Forward(_) => Ok(method),
        Classified::Answer(answer) => Err(json(StatusCode::BAD_REQUEST, &answer)),
        Classified::Drop(why) => Err(plain(StatusCode::BAD_REQUEST, format!("Bad Request: {why}"))),
    }
}

fn too_many(why: String) -> Response<HttpBody> {
    let mut response = plain(StatusCode::TOO_MANY_REQUESTS, why);
    response.headers_mut().insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    response
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_headers_and_foreign_targets_are_refused() {
        let uri: http::Uri = "/mcp".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, "127.0.0.1:8377".parse().unwrap());
        assert_eq!(unfit_headers(&uri, &headers), None);
        let absolute: http::Uri = "http://127.0.0.1:8377/mcp".parse().unwrap();
        assert_eq!(unfit_headers(&absolute, &headers), None);
        let foreign: http::Uri = "http://evil.example/mcp".parse().unwrap();
        assert!(unfit_headers(&foreign, &headers).unwrap().contains("evil.example"));
        headers.append(header::HOST, "evil.example".parse().unwrap());
        assert_eq!(unfit_headers(&uri, &headers).unwrap(), "host is given more than once");
        let mut headers = HeaderMap::new();
        headers.append("mcp-session-id", "a".parse().unwrap());
        headers.append("Mcp-Session-Id", "b".parse().unwrap());
        assert_eq!(unfit_headers(&uri, &headers).unwrap(), "mcp-session-id is given more than once");
    }
}
