//! A server reached over Streamable HTTP (`url = "https://…/mcp"`), only through
//! the pinned client: rmcp's client transport runs over [`Pinned`], whose every
//! request is vetted and connected exactly like a plugin's fetch
//! ([`FetchClient::check_url`], [`FetchClient::open`]: the URL's host is the only
//! one granted, private addresses are refused after the one lookup unless the
//! host's opt-out is on, only a vetted address is connected, TLS with the webpki
//! roots). A token, when the entry names one, comes from a granted variable and is
//! sent as `Authorization: Bearer …`; the redactor removes it from results.
//!
//! Each response body is bounded (the host's largest output); a server-initiated
//! event stream (`GET`) is not opened, so such a server's own notifications
//! (`tools/list_changed`) are not received: its list is read when it starts.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    StreamableHttpError, StreamableHttpPostResponse,
};

use super::launch::HostSide;
use crate::imports::fetch::{FetchClient, HostPattern, NetGrant, OpenError};
use crate::policy::servers::{HttpServer, ServerEntry};

/// The session header of Streamable HTTP.
const SESSION_HEADER: &str = "mcp-session-id";

/// An HTTP server's entry, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    url: String,
    grant: NetGrant,
    token: Option<String>,
    granted: Vec<(String, String)>,
}

impl Remote {
    /// Resolve `remote`, the transport of `entry`, on `host`.
    pub(crate) fn new(entry: &ServerEntry, remote: &HttpServer, host: &HostSide) -> Result<Self, String> {
        let url = url::Url::parse(&remote.url).map_err(|e| format!("url {}: {e}", remote.url))?;
        let name = url.host_str().ok_or_else(|| format!("url {} has no host", remote.url))?;
        let pattern = HostPattern::parse(name).map_err(|e| format!("url {}: {e}", remote.url))?;
        let granted = crate::policy::env::select(&entry.env, host.host_env.iter().cloned());
        let token = match &remote.token_env {
            Some(var) => Some(
                granted
                    .iter()
                    .find(|(k, _)| k == var)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| format!("token-env: the variable {var} is not set"))?,
            ),
            None => None,
        };
        Ok(Self {
            url: remote.url.clone(),
            grant: NetGrant { hosts: vec![pattern], allow_private: host.allow_private },
            token,
            granted,
        })
    }

    /// The endpoint.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The variables granted to it (its redactor removes their values).
    pub(crate) fn granted(&self) -> &[(String, String)] {
        &self.granted
    }

    /// rmcp's client transport to it over the pinned client, bodies bounded by `max_body`.
    pub(crate) fn transport(
        &self,
        client: Arc<FetchClient>,
        max_body: usize,
    ) -> StreamableHttpClientTransport<Pinned> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.clone());
        if let Some(token) = &self.token {
            config = config.auth_header(token.clone());
        }
        config.max_json_response_size = max_body;
        let pinned = Pinned { client, grant: Arc::new(self.grant.clone()), max_body };
        StreamableHttpClientTransport::with_client(pinned, config)
    }
}

/// rmcp's HTTP client, over the pinned client.
#[derive(Clone)]
pub(crate) struct Pinned {
    client: Arc<FetchClient>,
    grant: Arc<NetGrant>,
    max_body: usize,
}

/// Why a request to a server failed (a refusal names the fetch code).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct PinnedError(String);

type HttpResult<T> = Result<T, StreamableHttpError<PinnedError>>;

fn client_error(why: String) -> StreamableHttpError<PinnedError> {
    StreamableHttpError::Client(PinnedError(why))
}

impl Pinned {
    /// Send `request` to a vetted address of its URL's host.
    async fn send(&self, mut request: Request<Full<Bytes>>) -> HttpResult<Response<Incoming>> {
        let target = request.uri().to_string();
        let url = self
            .client
            .check_url(&self.grant, &target)
            .map_err(|e| client_error(format!("{}: {e}", e.code())))?;
        let stream = self.client.open(&self.grant, &url).await.map_err(|e| {
            let e = match e {
                OpenError::Denied(e) => e,
                other => other.into(),
            };
            client_error(format!("{}: {e}", e.code()))
        })?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| client_error(format!("transport: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let host = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let origin = &url[url::Position::BeforePath..url::Position::AfterQuery];
        *request.uri_mut() = origin.parse().map_err(|_| client_error(format!("unusable URL {url}")))?;
        let host =
            HeaderValue::from_str(&host).map_err(|_| client_error(format!("unusable host in {url}")))?;
        request.headers_mut().insert(header::HOST, host);
        sender.send_request(request).await.map_err(|e| client_error(format!("transport: {e}")))
    }

    /// A request to `uri` with the session, token and custom headers.
    fn request(
        method: Method,
        uri: &str,
        session_id: Option<&str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
        body: Bytes,
    ) -> HttpResult<Request<Full<Bytes>>> {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(token) = auth {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(id) = session_id {
            builder = builder.header(SESSION_HEADER, id);
        }
        for (name, value) in custom {
            builder = builder.header(name, value);
        }
        builder.body(Full::new(body)).map_err(|e| client_error(format!("request: {e}")))
    }

    /// The whole body of `response`, at most `max_body` bytes.
    async fn body(&self, response: Response<Incoming>) -> HttpResult<Bytes> {
        Limited::new(response.into_body(), self.max_body)
            .collect()
            .await
            .map(|c| c.to_bytes())
            .map_err(|e| client_error(format!("the response body (at most {} bytes): {e}", self.max_body)))
    }
}

impl StreamableHttpClient for Pinned {
    type Error = PinnedError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = Bytes::from(serde_json::to_vec(&message)?);
        let mut request =
            Self::request(Method::POST, &uri, session_id.as_deref(), auth_header, custom_headers, body)?;
        let headers = request.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        let response = self.send(request).await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        let session =
            response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        if !status.is_success() {
            let body = self.body(response).await.unwrap_or_default();
            if let Ok(error @ ServerJsonRpcMessage::Error(_)) = serde_json::from_slice(&body) {
                return Ok(StreamableHttpPostResponse::Json(error, session));
            }
            let text = String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned();
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}: {text}").into(),
            ));
        }
        match kind.as_deref() {
            Some("text/event-stream") => {
                let max = self.max_body;
                let body = Limited::new(response.into_body(), max)
                    .map_err(move |e| PinnedError(format!("the event stream (at most {max} bytes): {e}")));
                let events = sse_stream::SseStream::new(body);
                Ok(StreamableHttpPostResponse::Sse(events.boxed(), session))
            }
            Some("application/json") => {
                let body = self.body(response).await?;
                if body.is_empty() {
                    return Ok(StreamableHttpPostResponse::Accepted);
                }
                Ok(StreamableHttpPostResponse::Json(serde_json::from_slice(&body)?, session))
            }
            _ if status == StatusCode::OK && matches!(message, ClientJsonRpcMessage::Notification(_)) => {
                Ok(StreamableHttpPostResponse::Accepted)
            }
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_string))),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let request = Self::request(
            Method::DELETE,
            &uri,
            Some(&session_id),
            auth_header,
            custom_headers,
            Bytes::new(),
        )?;
        let response = self.send(request).await?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportDeleteSession);
        }
        Ok(())
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        _session_id: Option<Arc<str>>,
        _last_event_id: Option<String>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>>
    {
        Err(StreamableHttpError::ServerDoesNotSupportSse)
    }
}
