//! The client's own request, response and error types: the WIT records' shapes without
//! the WIT types, so the client is usable and testable on its own.

use std::time::Duration;

use super::vet::VetError;

/// One request, as a plugin asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// HTTP method (checked with `vet_method`).
    pub method: String,
    /// Absolute `http`/`https` URL.
    pub url: String,
    /// Request headers; the ones the host manages are dropped.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Option<Vec<u8>>,
    /// Time limit for the whole exchange, redirects included.
    pub timeout: Option<Duration>,
    /// Most body bytes to return.
    pub max_bytes: Option<u64>,
}

impl FetchRequest {
    /// A `GET` of `url` with no headers and the default limits.
    pub fn get(url: impl Into<String>) -> Self {
        Self {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
            timeout: None,
            max_bytes: None,
        }
    }
}

/// The final response, after redirects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// HTTP status code.
    pub status: u16,
    /// Response headers: lower-case names, values as text (invalid UTF-8 replaced).
    pub headers: Vec<(String, String)>,
    /// The body, at most the request's (clamped) `max_bytes`.
    pub body: Vec<u8>,
    /// The URL that answered.
    pub final_url: String,
    /// True when the body was cut.
    pub truncated: bool,
}

/// Why a request was not answered; one case per WIT `fetch-error` case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// A private, loopback, link-local … target, or a local name.
    #[error("blocked_url: {0}")]
    BlockedUrl(String),
    /// Unparsable URL, or a scheme other than http/https.
    #[error("invalid_url: {0}")]
    InvalidUrl(String),
    /// The grant does not list the host.
    #[error("host_not_allowed: {0}")]
    HostNotAllowed(String),
    /// A method other than the seven allowed.
    #[error("method_not_allowed: {0}")]
    MethodNotAllowed(String),
    /// More redirects than the limit.
    #[error("too_many_redirects: {0}")]
    TooManyRedirects(String),
    /// The time limit passed.
    #[error("timeout: {0}")]
    Timeout(String),
    /// The request body, its headers or the declared response size is over a limit.
    #[error("too_large: {0}")]
    TooLarge(String),
    /// Resolving, connecting, TLS or the HTTP exchange failed.
    #[error("transport: {0}")]
    Transport(String),
}

impl FetchError {
    /// The stable `snake_case` code (`blocked_url`, `timeout`, …).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BlockedUrl(_) => "blocked_url",
            Self::InvalidUrl(_) => "invalid_url",
            Self::HostNotAllowed(_) => "host_not_allowed",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::TooManyRedirects(_) => "too_many_redirects",
            Self::Timeout(_) => "timeout",
            Self::TooLarge(_) => "too_large",
            Self::Transport(_) => "transport",
        }
    }
}

impl From<VetError> for FetchError {
    fn from(err: VetError) -> Self {
        match err {
            VetError::InvalidUrl(m) => Self::InvalidUrl(m),
            VetError::Blocked(m) => Self::BlockedUrl(m),
        }
    }
}
