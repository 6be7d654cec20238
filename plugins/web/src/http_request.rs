//! `http_request`: one HTTP request with any allowed method, headers and
//! body, for talking to APIs.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::http::{self, Request, Response};
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};

use crate::common::{self, BodyKind};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Send one HTTP request (for APIs) and return the response. `method` is one of \
GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (default GET); `headers` is an object of header names to string \
values; `body` is sent as given (set a content-type header for it). The output starts with \
`HTTP <status> <final-url>`, then the response headers content-type, content-length, location, retry-after and \
rate-limit ones when present, a blank line, and the body as text (at most `max_chars` characters, default \
20000; binary bodies are summarised as `<N bytes of TYPE>`). A status other than 2xx fails with code \
`http_<status>` (e.g. `http_404`, `http_429`) and the message keeps the status line, headers and body. Only \
http and https URLs; private and local addresses and hosts the plugin is not granted are refused. Redirects are \
followed. Requests are not retried: a POST may have taken effect even when it fails. To read a web page, \
fetch_url gives cleaner text.";

/// The methods the host allows.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Response headers shown to the model, in this order.
pub const SHOWN_HEADERS: [&str; 8] = [
    "content-type",
    "content-length",
    "location",
    "retry-after",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
];

/// Arguments of `http_request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The absolute http:// or https:// URL to request.
    pub url: String,
    /// HTTP method: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS. Default GET.
    #[serde(default = "get")]
    pub method: String,
    /// Request headers as an object of name to value, e.g. {"accept": "application/json"}. Default none.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Request body, sent as UTF-8 text. Default none.
    #[serde(default)]
    pub body: String,
    /// Most characters of the response body to return, 1 to 200000. Default 20000.
    #[serde(default = "default_max_chars")]
    #[schemars(range(min = 1, max = 200_000))]
    pub max_chars: usize,
    /// Time limit for the request in milliseconds, 1 to 120000. Default 30000.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 120_000))]
    pub timeout_ms: u32,
}

fn get() -> String {
    "GET".to_string()
}

fn default_max_chars() -> usize {
    common::DEFAULT_MAX_CHARS
}

fn default_timeout() -> u32 {
    common::DEFAULT_TIMEOUT_MS
}

/// Run `http_request`: check the arguments, send the request through the
/// host, and render the response with [`render`].
pub fn run(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
    let req = request(&args)?;
    let resp = http::fetch(&req)?;
    render(&resp, args.max_chars)
}

/// The request `args` ask for, or why they are refused (nothing is sent).
pub fn request(args: &Args) -> Result<Request, ToolError> {
    let url = common::parse_http_url(&args.url)?;
    let method = args.method.trim().to_ascii_uppercase();
    if !METHODS.contains(&method.as_str()) {
        return Err(ToolError::new(
            codes::METHOD_NOT_ALLOWED,
            format!("method {:?} is not allowed; use one of {}", args.method, METHODS.join(", ")),
        ));
    }
    common::check_max_chars(args.max_chars)?;
    let timeout = common::check_timeout(args.timeout_ms)?;
    let mut req = Request::new(method, url.as_str());
    for (name, value) in &args.headers {
        check_header(name, value)?;
        req = req.header(name.trim(), value.trim());
    }
    if !args.body.is_empty() {
        req.body = Some(args.body.clone().into_bytes());
    }
    req.timeout_ms = Some(timeout);
    req.max_bytes = Some(common::MAX_BODY_BYTES);
    Ok(req)
}

/// Refuse a header name that is not an HTTP token or a value with a line
/// break or another control character.
fn check_header(name: &str, value: &str) -> Result<(), ToolError> {
    let name = name.trim();
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(ToolError::invalid_args(format!("header name {name:?} is not a valid HTTP header name")));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(ToolError::invalid_args(format!(
            "the value of header {name:?} contains a control character"
        )));
    }
    Ok(())
}

/// What the model gets for `resp`: status line, the [`SHOWN_HEADERS`]
/// present, a blank line and the body (clamped to `max_chars` characters).
/// A non-2xx status is an `http_<status>` error with the same text.
pub fn render(resp: &Response, max_chars: usize) -> Result<Output, ToolError> {
    let mut out = format!("HTTP {} {}{}\n", resp.status, resp.final_url, common::truncated_tag(resp));
    for name in SHOWN_HEADERS {
        if let Some(value) = resp.header(name) {
            out.push_str(&format!("{name}: {value}\n"));
        }
    }
    out.push('\n');

    let media = common::media_type(resp);
    let mut cut = 0;
    if resp.body.is_empty() {
        out.push_str("(empty body)");
    } else if common::classify(media.as_deref(), &resp.body) == BodyKind::Binary {
        out.push_str(&common::binary_summary(resp));
    } else {
        cut = common::push_clamped(&mut out, &crate::charset::decode(resp), max_chars);
    }

    if !common::is_success(resp.status) {
        return Err(common::http_error(resp.status, out));
    }
    Ok(Output::text(out).with_metadata(json!({
        "status": resp.status,
        "content_type": media,
        "final_url": resp.final_url,
        "bytes": resp.body.len(),
        "truncated": resp.truncated,
        "chars_cut": cut,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::tests::response;

    fn args(value: serde_json::Value) -> Args {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn builds_the_request_asked_for() {
        let a = args(json!({
            "url": "https://api.example.com/items",
            "method": "post",
            "headers": {"Content-Type": "application/json", "x-trace": " 1 "},
            "body": "{\"name\": \"a\"}",
            "timeout_ms": 1500,
        }));
        let req = request(&a).unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.url, "https://api.example.com/items");
        assert_eq!(
            req.headers,
            vec![
                ("Content-Type".to_string(), "application/json".to_string()),
                ("x-trace".into(), "1".into())
            ]
        );
        assert_eq!(req.body.as_deref(), Some(&b"{\"name\": \"a\"}"[..]));
        assert_eq!(req.timeout_ms, Some(1500));

        let plain = request(&args(json!({"url": "http://example.com"}))).unwrap();
        assert_eq!((plain.method.as_str(), plain.body.is_none()), ("GET", true));
    }

    #[test]
    fn bad_arguments_are_refused_before_sending() {
        let err = request(&args(json!({"url": "https://x.org", "method": "TRACE"}))).unwrap_err();
        assert_eq!(err.code, codes::METHOD_NOT_ALLOWED);
        assert!(err.message.contains("TRACE") && err.message.contains("PATCH"), "{}", err.message);
        let err = request(&args(json!({"url": "gopher://x.org"}))).unwrap_err();
        assert_eq!(err.code, codes::INVALID_URL);
        let err = request(&args(json!({"url": "https://x.org", "headers": {"bad name": "v"}}))).unwrap_err();
        assert_eq!(err.code, "invalid_args");
        let err =
            request(&args(json!({"url": "https://x.org", "headers": {"x": "a\r\nevil: 1"}}))).unwrap_err();
        assert_eq!(err.code, "invalid_args");
        let err = request(&args(json!({"url": "https://x.org", "max_chars": 0}))).unwrap_err();
        assert_eq!(err.code, "invalid_args");
        assert!(serde_json::from_value::<Args>(json!({"url": "https://x.org", "data": "x"})).is_err());
        let headers = serde_json::from_value::<Args>(json!({"url": "https://x.org", "headers": {"n": 1}}));
        assert!(headers.is_err(), "header values are strings");
    }

    #[test]
    fn shows_status_selected_headers_and_body() {
        let mut resp = response(200, Some("application/json"), br#"{"ok":true}"#);
        resp.headers.extend([
            ("x-ratelimit-remaining".to_string(), "59".to_string()),
            ("set-cookie".into(), "secret=1".into()),
            ("content-length".into(), "11".into()),
        ]);
        let out = render(&resp, 1000).unwrap();
        assert_eq!(
            out.content,
            "HTTP 200 https://example.com/page\ncontent-type: application/json\ncontent-length: 11\n\
             x-ratelimit-remaining: 59\n\n{\"ok\":true}"
        );
        let meta = out.metadata.unwrap();
        assert_eq!((meta["status"].as_u64(), meta["bytes"].as_u64()), (Some(200), Some(11)));
    }

    #[test]
    fn empty_binary_and_long_bodies() {
        let out = render(&response(204, None, b""), 100).unwrap();
        assert_eq!(out.content, "HTTP 204 https://example.com/page\n\n(empty body)");
        let out = render(&response(200, Some("image/gif"), b"GIF89a\0\0"), 100).unwrap();
        assert!(out.content.ends_with("\n\n<8 bytes of image/gif>"), "{}", out.content);
        let mut resp = response(200, Some("text/plain"), "x".repeat(30).as_bytes());
        resp.truncated = true;
        let out = render(&resp, 20).unwrap();
        assert!(
            out.content.starts_with("HTTP 200 https://example.com/page [truncated]\n"),
            "{}",
            out.content
        );
        assert!(out.content.contains(&format!("{}\n[10 more characters not shown", "x".repeat(20))));
        assert_eq!(out.metadata.unwrap()["chars_cut"], 10);
    }

    #[test]
    fn non_2xx_fails_with_status_and_body_kept() {
        let mut resp = response(429, Some("application/json"), br#"{"error":"slow down"}"#);
        resp.headers.push(("retry-after".into(), "30".into()));
        let err = render(&resp, 1000).unwrap_err();
        assert_eq!(err.code, "http_429");
        assert!(err.message.starts_with("HTTP 429 https://example.com/page\n"), "{}", err.message);
        assert!(err.message.contains("retry-after: 30\n"), "{}", err.message);
        assert!(err.message.ends_with(r#"{"error":"slow down"}"#), "{}", err.message);
        assert_eq!(render(&response(404, None, b"nope"), 10).unwrap_err().code, "http_404");
    }

    #[test]
    fn without_a_host_the_fetch_error_code_comes_through() {
        let err = run(args(json!({"url": "https://example.com"})), &Context::new("t", None)).unwrap_err();
        assert_eq!(err.code, "transport");
    }
}
