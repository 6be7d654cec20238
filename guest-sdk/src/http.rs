//! Outbound HTTP through the host's pinned fetch (`toolhost:plugin/fetch`).
//!
//! A plugin that calls [`fetch`] imports the interface; the host then only
//! loads it when the plugin is granted network hosts, and refuses private
//! addresses, other hosts and redirects that lead to either.

pub use crate::bindings::toolhost::plugin::fetch::{FetchError, Request, Response};
use crate::error::{ToolError, codes};

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
            FetchError::BlockedUrl(_) => codes::BLOCKED_URL,
            FetchError::InvalidUrl(_) => codes::INVALID_URL,
            FetchError::HostNotAllowed(_) => codes::HOST_NOT_ALLOWED,
            FetchError::MethodNotAllowed(_) => codes::METHOD_NOT_ALLOWED,
            FetchError::TooManyRedirects(_) => codes::TOO_MANY_REDIRECTS,
            FetchError::Timeout(_) => codes::TIMEOUT,
            FetchError::TooLarge(_) => codes::TOO_LARGE,
            FetchError::Transport(_) => codes::TRANSPORT,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes are the host's (`toolhost::fetch::FetchError::code`): callers match on them.
    #[test]
    fn errors_map_to_stable_codes() {
        let cases = [
            (FetchError::BlockedUrl("m".into()), "blocked_url"),
            (FetchError::InvalidUrl("m".into()), "invalid_url"),
            (FetchError::HostNotAllowed("m".into()), "host_not_allowed"),
            (FetchError::MethodNotAllowed("m".into()), "method_not_allowed"),
            (FetchError::TooManyRedirects("m".into()), "too_many_redirects"),
            (FetchError::Timeout("m".into()), "timeout"),
            (FetchError::TooLarge("m".into()), "too_large"),
            (FetchError::Transport("m".into()), "transport"),
        ];
        for (err, code) in cases {
            assert_eq!(ToolError::from(err), ToolError::new(code, "m"));
        }
        assert_eq!(fetch(&Request::get("https://example.com/")).unwrap_err().code(), codes::TRANSPORT);
    }
}
