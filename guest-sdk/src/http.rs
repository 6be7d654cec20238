//! Outbound HTTP through the host's pinned fetch (`toolhost:plugin/fetch`).
//!
//! A plugin that calls [`fetch`] imports the interface; the host then only
//! loads it when the plugin is granted network hosts, and refuses private
//! addresses, other hosts and redirects that lead to either.

pub use crate::bindings::toolhost::plugin::fetch::{FetchError, Request, Response};
use crate::error::ToolError;

impl Request {
    /// A `GET` of `url` with no headers and the host's default limits.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }

    /// A request with `method` to `url`.
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
            timeout_ms: None,
            max_bytes: None,
        }
    }

    /// Add a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

impl FetchError {
    /// The stable `snake_case` code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            FetchError::BlockedUrl(_) => "blocked_url",
            FetchError::InvalidUrl(_) => "invalid_url",
            FetchError::HostNotAllowed(_) => "host_not_allowed",
            FetchError::MethodNotAllowed(_) => "method_not_allowed",
            FetchError::TooManyRedirects(_) => "too_many_redirects",
            FetchError::Timeout(_) => "timeout",
            FetchError::TooLarge(_) => "too_large",
            FetchError::Transport(_) => "transport",
        }
    }

    /// The message the host gave.
    pub fn message(&self) -> &str {
        match self {
            FetchError::BlockedUrl(m)
            | FetchError::InvalidUrl(m)
            | FetchError::HostNotAllowed(m)
            | FetchError::MethodNotAllowed(m)
            | FetchError::TooManyRedirects(m)
            | FetchError::Timeout(m)
            | FetchError::TooLarge(m)
            | FetchError::Transport(m) => m,
        }
    }
}

impl From<FetchError> for ToolError {
    fn from(err: FetchError) -> Self {
        ToolError::new(err.code(), err.message())
    }
}

/// Send `req` through the host. In a native build (unit tests) there is no
/// host: every request fails with `transport`.
pub fn fetch(req: &Request) -> Result<Response, FetchError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::toolhost::plugin::fetch::fetch(req)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = req;
        Err(FetchError::Transport("no host: fetch only works inside toolhost".into()))
    }
}
