//! `fetch_url`: GET a web page and return it as readable text.

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::http::{self, Request, Response};
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};

use crate::common::{self, BodyKind};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Fetch a web page or text document with GET and return it as text. HTML is \
converted to readable text (headings, lists and paragraphs kept; links listed as numbered references at the \
end); plain text, JSON, XML and JavaScript are returned as they are. The first line of the output is \
`HTTP <status> <content-type> <final-url>` (the URL after redirects), ending in `[truncated]` when the body was \
longer than the download limit; the text follows, at most `max_chars` characters (default 20000), with a note \
when more was cut. Only http and https URLs (`invalid_url` otherwise). Images, audio, video, PDFs, archives and \
other binary content are refused with `unsupported_content_type`. A status other than 2xx fails with code \
`http_<status>` (e.g. `http_404`); its message holds the status line and the page text. Private and local \
addresses and hosts the plugin is not granted are refused (`blocked_url`, `host_not_allowed`). For other \
methods, custom headers or a raw body, use http_request.";

/// Sent as `accept`: text first, anything else after.
const ACCEPT: &str = "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5";

/// Arguments of `fetch_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The absolute http:// or https:// URL to fetch.
    pub url: String,
    /// Most characters of text to return, 1 to 200000. Default 20000.
    #[serde(default = "default_max_chars")]
    #[schemars(range(min = 1, max = 200_000))]
    pub max_chars: usize,
    /// Time limit for the request in milliseconds, 1 to 120000. Default 30000.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 120_000))]
    pub timeout_ms: u32,
}

fn default_max_chars() -> usize {
    common::DEFAULT_MAX_CHARS
}

fn default_timeout() -> u32 {
    common::DEFAULT_TIMEOUT_MS
}

/// Run `fetch_url`: check the arguments, GET the URL through the host, and
/// render the response with [`render`].
pub fn run(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
    let req = request(&args)?;
    let resp = http::fetch(&req)?;
    render(&resp, args.max_chars)
}

/// The request `args` ask for, or why they are refused (nothing is sent).
pub fn request(args: &Args) -> Result<Request, ToolError> {
    let url = common::parse_http_url(&args.url)?;
    common::check_max_chars(args.max_chars)?;
    let timeout = common::check_timeout(args.timeout_ms)?;
    let mut req = Request::get(url.as_str()).header("accept", ACCEPT);
    req.timeout_ms = Some(timeout);
    req.max_bytes = Some(common::MAX_BODY_BYTES);
    Ok(req)
}

/// What the model gets for `resp`: the status line and the text, at most
/// `max_chars` characters of it. A binary body is refused with
/// `unsupported_content_type`, a non-2xx status is an `http_<status>` error
/// carrying the same text.
pub fn render(resp: &Response, max_chars: usize) -> Result<Output, ToolError> {
    let media = common::media_type(resp);
    let shown_type = media.as_deref().unwrap_or("unknown");
    let mut out =
        format!("HTTP {} {shown_type} {}{}\n", resp.status, resp.final_url, common::truncated_tag(resp));
    let kind = common::classify(media.as_deref(), &resp.body);

    if kind == BodyKind::Binary {
        if !common::is_success(resp.status) {
            out.push_str(&common::binary_summary(resp));
            return Err(common::http_error(resp.status, out));
        }
        return Err(ToolError::new(
            codes::UNSUPPORTED_CONTENT_TYPE,
            format!(
                "{} is {shown_type} ({} bytes), not text: fetch_url only reads HTML, plain text, JSON, XML and \
                 JavaScript",
                resp.final_url,
                resp.body.len()
            ),
        ));
    }

    let text = match kind {
        BodyKind::Html => common::page_text(resp),
        _ => crate::charset::decode(resp),
    };
    let total_chars = text.chars().count();
    let cut = if text.trim().is_empty() {
        out.push_str("(empty body)");
        0
    } else {
        common::push_clamped(&mut out, &text, max_chars)
    };

    if !common::is_success(resp.status) {
        return Err(common::http_error(resp.status, out));
    }
    Ok(Output::text(out).with_metadata(json!({
        "status": resp.status,
        "content_type": media,
        "final_url": resp.final_url,
        "truncated": resp.truncated,
        "chars": total_chars - cut,
        "total_chars": total_chars,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::tests::response;

    fn args(url: &str) -> Args {
        serde_json::from_value(json!({ "url": url })).unwrap()
    }

    #[test]
    fn defaults_and_unknown_fields() {
        let a = args("https://example.com");
        assert_eq!((a.max_chars, a.timeout_ms), (20_000, 30_000));
        let err =
            serde_json::from_value::<Args>(json!({"url": "https://x.org", "method": "POST"})).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn builds_a_get_with_limits() {
        let mut a = args("https://example.com/a b");
        a.timeout_ms = 5000;
        let req = request(&a).unwrap();
        assert_eq!((req.method.as_str(), req.url.as_str()), ("GET", "https://example.com/a%20b"));
        assert_eq!((req.timeout_ms, req.max_bytes), (Some(5000), Some(common::MAX_BODY_BYTES)));
        assert!(req.body.is_none());
    }

    #[test]
    fn refuses_before_fetching() {
        assert_eq!(request(&args("file:///etc/passwd")).unwrap_err().code, codes::INVALID_URL);
        assert_eq!(request(&args("not a url")).unwrap_err().code, codes::INVALID_URL);
        let mut a = args("https://example.com");
        a.max_chars = 0;
        assert_eq!(request(&a).unwrap_err().code, "invalid_args");
        let mut a = args("https://example.com");
        a.timeout_ms = 120_001;
        assert_eq!(request(&a).unwrap_err().code, "invalid_args");
        // Natively there is no host: the fetch error's code comes through.
        assert_eq!(run(args("https://example.com"), &Context::new("t", None)).unwrap_err().code, "transport");
    }

    #[test]
    fn html_is_rendered_as_text_under_a_status_line() {
        let resp = response(200, Some("text/html; charset=utf-8"), b"<h1>Title</h1><p>Body &amp; more</p>");
        let out = render(&resp, 1000).unwrap();
        let mut lines = out.content.lines();
        assert_eq!(lines.next(), Some("HTTP 200 text/html https://example.com/page"));
        assert!(out.content.contains("Body & more"), "{}", out.content);
        assert!(!out.content.contains("<p>"), "{}", out.content);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["status"], 200);
        assert_eq!(meta["content_type"], "text/html");
        assert_eq!(meta["final_url"], "https://example.com/page");
        assert_eq!(meta["truncated"], false);
        assert_eq!(meta["chars"], meta["total_chars"]);
    }

    #[test]
    fn json_and_text_pass_through() {
        let out = render(&response(200, Some("application/json"), br#"{"a": [1, 2]}"#), 1000).unwrap();
        assert_eq!(out.content, "HTTP 200 application/json https://example.com/page\n{\"a\": [1, 2]}");
        let out = render(&response(200, None, b"no type given"), 1000).unwrap();
        assert_eq!(out.content, "HTTP 200 unknown https://example.com/page\nno type given");
    }

    #[test]
    fn long_text_is_clamped_and_a_cut_body_is_flagged() {
        let mut resp = response(200, Some("text/plain"), "é".repeat(50).as_bytes());
        resp.truncated = true;
        let out = render(&resp, 10).unwrap();
        assert!(out.content.starts_with("HTTP 200 text/plain https://example.com/page [truncated]\n"));
        assert!(out.content.contains(&format!("{}\n[40 more characters not shown", "é".repeat(10))));
        let meta = out.metadata.unwrap();
        assert_eq!((meta["chars"].as_u64(), meta["total_chars"].as_u64()), (Some(10), Some(50)));
        assert_eq!(meta["truncated"], true);
    }

    #[test]
    fn binary_content_is_refused_naming_the_type() {
        for ct in ["image/png", "application/pdf", "application/octet-stream", "video/mp4"] {
            let err = render(&response(200, Some(ct), b"\x89PNG\0\0"), 1000).unwrap_err();
            assert_eq!(err.code, codes::UNSUPPORTED_CONTENT_TYPE, "{ct}");
            assert!(err.message.contains(ct), "{}", err.message);
        }
    }

    #[test]
    fn a_non_2xx_status_fails_but_keeps_the_page() {
        let resp = response(404, Some("text/html"), b"<p>No such page</p>");
        let err = render(&resp, 1000).unwrap_err();
        assert_eq!(err.code, "http_404");
        assert!(err.message.starts_with("HTTP 404 text/html https://example.com/page\n"), "{}", err.message);
        assert!(err.message.contains("No such page"), "{}", err.message);
        let err = render(&response(500, Some("image/png"), &[0; 4]), 1000).unwrap_err();
        assert_eq!(err.code, "http_500");
        assert!(err.message.ends_with("<4 bytes of image/png>"), "{}", err.message);
        let err = render(&response(503, Some("text/plain"), b""), 1000).unwrap_err();
        assert!(err.message.ends_with("(empty body)"), "{}", err.message);
    }
}
