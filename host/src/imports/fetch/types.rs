//! The client's own request, response and error types: the WIT records' shapes without
//! the WIT types, so the client is usable and testable on its own.

use std::time::Duration;

use super::vet::{HostPattern, VetError};
use crate::error::codes;

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
    #[error("{code}: {0}", code = codes::BLOCKED_URL)]
    BlockedUrl(String),
    /// Unparsable URL, or a scheme other than http/https.
    #[error("{code}: {0}", code = codes::INVALID_URL)]
    InvalidUrl(String),
    /// The grant does not list the host.
    #[error("{code}: {0}", code = codes::HOST_NOT_ALLOWED)]
    HostNotAllowed(String),
    /// A method other than the seven allowed.
    #[error("{code}: {0}", code = codes::METHOD_NOT_ALLOWED)]
    MethodNotAllowed(String),
    /// More redirects than the limit.
    #[error("{code}: {0}", code = codes::TOO_MANY_REDIRECTS)]
    TooManyRedirects(String),
    /// The time limit passed.
    #[error("{code}: {0}", code = codes::TIMEOUT)]
    Timeout(String),
    /// The request body, its headers or the declared response size is over a limit.
    #[error("{code}: {0}", code = codes::TOO_LARGE)]
    TooLarge(String),
    /// Resolving, connecting, TLS or the HTTP exchange failed.
    #[error("{code}: {0}", code = codes::TRANSPORT)]
    Transport(String),
}

impl FetchError {
    /// The stable `snake_case` code (`blocked_url`, `timeout`, …).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BlockedUrl(_) => codes::BLOCKED_URL,
            Self::InvalidUrl(_) => codes::INVALID_URL,
            Self::HostNotAllowed(_) => codes::HOST_NOT_ALLOWED,
            Self::MethodNotAllowed(_) => codes::METHOD_NOT_ALLOWED,
            Self::TooManyRedirects(_) => codes::TOO_MANY_REDIRECTS,
            Self::Timeout(_) => codes::TIMEOUT,
            Self::TooLarge(_) => codes::TOO_LARGE,
            Self::Transport(_) => codes::TRANSPORT,
        }
    }
}

/// How to lift a refusal that the private-network opt-out would lift.
pub(crate) const PRIVATE_FIX: &str = "to let tools reach private and loopback addresses, start toolhost \
     with --allow-private-network or set `allow-private = true` under [network] in the policy file";

impl FetchError {
    /// `err` as a fetch error; `lifted`: the private-network opt-out would have let it
    /// through, so the message says how to turn that on.
    pub(crate) fn vetted(err: VetError, lifted: bool) -> Self {
        match err {
            VetError::Blocked(m) if lifted => Self::BlockedUrl(format!("{m}: {PRIVATE_FIX}")),
            other => other.into(),
        }
    }

    /// `host` is not among `granted`: the refusal names the flag and the policy key
    /// that grant it.
    pub(crate) fn host_not_granted(host: &str, granted: &[HostPattern]) -> Self {
        let granted: Vec<&str> = granted.iter().map(|p| p.as_str()).collect();
        Self::HostNotAllowed(format!(
            "`{host}` is not among the hosts granted to this plugin ({}): grant it with --allow-host {host} \
             (a --plugin component), or add \"{host}\" to `network` in its [plugins.NAME] entry of the policy file",
            if granted.is_empty() { "none".to_owned() } else { granted.join(", ") }
        ))
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

/// Why no stream to a hop's host was opened: finer than [`FetchError`], so that
/// `wasi:http` can answer with the precise `error-code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// Refused by a rule before any connection: a blocked address, a host not granted,
    /// an invalid URL.
    Denied(FetchError),
    /// The name did not resolve.
    NotFound(String),
    /// No vetted address answered; `timed_out` when every attempt ran out of time.
    Connect {
        /// Every attempt timed out.
        timed_out: bool,
        /// What happened, per address.
        message: String,
    },
    /// The TLS handshake failed.
    Tls(String),
}

impl From<OpenError> for FetchError {
    fn from(err: OpenError) -> Self {
        match err {
            OpenError::Denied(e) => e,
            OpenError::NotFound(m) | OpenError::Connect { message: m, .. } | OpenError::Tls(m) => {
                Self::Transport(m)
            }
        }
    }
}
