//! What the three tools share: URL and limit checks, content-type
//! classification, HTML to text, clamping text to a number of characters,
//! and the `http_<status>` error.

use toolhost_guest::http::Response;
use toolhost_guest::{ToolError, codes};
use url::Url;

/// Default number of characters of body text returned.
pub const DEFAULT_MAX_CHARS: usize = 20_000;
/// Largest `max_chars` a caller may ask for.
pub const MAX_MAX_CHARS: usize = 200_000;
/// Request time limit when the caller gives none, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// Largest `timeout_ms` a caller may ask for.
pub const MAX_TIMEOUT_MS: u32 = 120_000;
/// The deadline the tools declare: the longest request plus time to render.
pub const TOOL_TIMEOUT_MS: u32 = MAX_TIMEOUT_MS + 10_000;
/// Most body bytes asked of the host (it may clamp further).
pub const MAX_BODY_BYTES: u64 = 2 << 20;
/// Width HTML is laid out at; long enough that prose is rarely re-wrapped.
const TEXT_WIDTH: usize = 120;
/// A NUL byte or invalid UTF-8 in this many leading bytes marks a body of
/// unknown type as binary.
const BINARY_PROBE: usize = 8 * 1024;

/// How a response body can be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// HTML, to be turned into readable text.
    Html,
    /// Text as it is: plain text, JSON, XML, JavaScript, CSV …
    Text,
    /// Images, audio, video, archives, PDFs and other bytes.
    Binary,
}

/// Parse `raw` as an absolute `http` or `https` URL (fragment dropped), or
/// fail with `invalid_url` before anything is sent.
pub fn parse_http_url(raw: &str) -> Result<Url, ToolError> {
    let raw = raw.trim();
    let mut url = Url::parse(raw)
        .map_err(|e| ToolError::new(codes::INVALID_URL, format!("{raw:?} is not an absolute URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::new(
            codes::INVALID_URL,
            format!("{raw:?} uses the {}: scheme; only http and https URLs can be fetched", url.scheme()),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ToolError::new(codes::INVALID_URL, format!("{raw:?} has no host")));
    }
    url.set_fragment(None);
    Ok(url)
}

/// Check `max_chars` is within 1–200000.
pub fn check_max_chars(max_chars: usize) -> Result<(), ToolError> {
    if (1..=MAX_MAX_CHARS).contains(&max_chars) {
        Ok(())
    } else {
        Err(ToolError::invalid_args(format!(
            "max_chars must be between 1 and {MAX_MAX_CHARS}, not {max_chars}"
        )))
    }
}

/// Check `timeout_ms` is within 1–120000.
pub fn check_timeout(timeout_ms: u32) -> Result<u32, ToolError> {
    if (1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        Ok(timeout_ms)
    } else {
        Err(ToolError::invalid_args(format!(
            "timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, not {timeout_ms}"
        )))
    }
}

/// The media type of a response (`text/html`), lower case, without
/// parameters; `None` when the header is absent or empty.
pub fn media_type(resp: &Response) -> Option<String> {
    let value = resp.header("content-type")?;
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    (!essence.is_empty()).then_some(essence)
}

/// Decide how to show a body of media type `media` (from [`media_type`]).
/// Known text and binary types are taken at their word; a missing or
/// unknown type is decided by looking at the first bytes.
pub fn classify(media: Option<&str>, body: &[u8]) -> BodyKind {
    let Some(media) = media else { return sniff(body) };
    let (top, sub) = media.split_once('/').unwrap_or((media, ""));
    match (top, sub) {
        // SVG is XML, but an image all the same.
        ("image" | "audio" | "video" | "font" | "model", _) => BodyKind::Binary,
        ("text", "html") | ("application", "xhtml+xml") => BodyKind::Html,
        ("text", _) => BodyKind::Text,
        (_, sub) if sub.ends_with("+json") || sub.ends_with("+xml") => BodyKind::Text,
        (
            "application",
            "json"
            | "xml"
            | "javascript"
            | "x-javascript"
            | "ecmascript"
            | "yaml"
            | "x-yaml"
            | "toml"
            | "x-ndjson"
            | "graphql"
            | "sql"
            | "x-sh"
            | "x-www-form-urlencoded",
        ) => BodyKind::Text,
        (
            "application",
            "octet-stream" | "pdf" | "zip" | "gzip" | "x-gzip" | "x-tar" | "x-bzip2" | "x-xz" | "zstd"
            | "x-7z-compressed" | "vnd.rar" | "x-rar-compressed" | "wasm" | "java-archive" | "x-msdownload"
            | "msword" | "x-protobuf" | "protobuf" | "vnd.ms-excel" | "vnd.ms-powerpoint",
        ) => BodyKind::Binary,
        _ => sniff(body),
    }
}

/// Classify a body by its first bytes: HTML when it starts like an HTML
/// document, binary when it has a NUL byte or is neither UTF-8 nor declares its
/// charset in a `<meta>` tag, text otherwise.
fn sniff(body: &[u8]) -> BodyKind {
    let probe = &body[..body.len().min(BINARY_PROBE)];
    if probe.contains(&0) {
        return BodyKind::Binary;
    }
    if let Err(e) = std::str::from_utf8(probe) {
        // A character cut at the end of the probe is still text.
        if e.error_len().is_some() && crate::charset::from_meta(probe).is_none() {
            return BodyKind::Binary;
        }
    }
    let start = String::from_utf8_lossy(&probe[..probe.len().min(512)]).trim_start().to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        BodyKind::Html
    } else {
        BodyKind::Text
    }
}

/// The HTML of `resp` as readable text ([`html_to_text`]), decoded from its charset.
pub fn page_text(resp: &Response) -> String {
    html_to_text(crate::charset::decode(resp).as_bytes())
}

/// HTML (UTF-8) as readable text: block structure kept, links as numbered
/// footnotes listed at the end. Falls back to the raw source when the
/// renderer refuses the document.
pub fn html_to_text(html: &[u8]) -> String {
    match html2text::config::plain().string_from_read(html, TEXT_WIDTH) {
        Ok(text) => text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim().to_string(),
        Err(_) => String::from_utf8_lossy(html).into_owned(),
    }
}

/// `text` cut to at most `max` characters (on a character boundary) and
/// the number of characters cut.
pub fn clamp_chars(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], text[end..].chars().count()),
        None => (text, 0),
    }
}

/// Append `text` clamped to `max` characters to `out`, with a note when
/// something was cut. Returns the number of characters cut.
pub fn push_clamped(out: &mut String, text: &str, max: usize) -> usize {
    let (kept, cut) = clamp_chars(text, max);
    out.push_str(kept);
    if cut > 0 {
        if !kept.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[{cut} more characters not shown: max_chars is {max}; raise it (at most {MAX_MAX_CHARS}) to see more]"
        ));
    }
    cut
}

/// `<N bytes of TYPE>`: how a binary body is described.
pub fn binary_summary(resp: &Response) -> String {
    let media = media_type(resp);
    let n = resp.body.len();
    format!("<{n} byte{} of {}>", if n == 1 { "" } else { "s" }, media.as_deref().unwrap_or("unknown type"))
}

/// True for a 2xx status.
pub fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The failed result for a non-2xx status: code `http_<status>`, and a
/// message that keeps what the server said (`shown`).
pub fn http_error(status: u16, shown: String) -> ToolError {
    ToolError::new(format!("http_{status}"), shown)
}

/// ` [truncated]` when the host cut the body at its byte limit.
pub fn truncated_tag(resp: &Response) -> &'static str {
    if resp.truncated { " [truncated]" } else { "" }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A response as the host would return it.
    pub(crate) fn response(status: u16, content_type: Option<&str>, body: &[u8]) -> Response {
        Response {
            status,
            headers: content_type
                .map(|ct| ("content-type".to_string(), ct.to_string()))
                .into_iter()
                .collect(),
            body: body.to_vec(),
            final_url: "https://example.com/page".into(),
            truncated: false,
        }
    }

    #[test]
    fn only_absolute_http_urls_pass() {
        let url = parse_http_url(" https://Example.com/a?b=1#frag ").unwrap();
        assert_eq!(url.as_str(), "https://example.com/a?b=1");
        assert!(parse_http_url("http://example.com").is_ok());
        for bad in [
            "file:///etc/passwd",
            "ftp://example.com/x",
            "javascript:alert(1)",
            "example.com",
            "/x",
            "http://",
        ] {
            let err = parse_http_url(bad).unwrap_err();
            assert_eq!(err.code, codes::INVALID_URL, "{bad}");
        }
        assert!(parse_http_url("data:text/plain,hi").unwrap_err().message.contains("data:"));
    }

    #[test]
    fn limits_are_checked() {
        assert!(check_max_chars(1).is_ok() && check_max_chars(MAX_MAX_CHARS).is_ok());
        assert_eq!(check_max_chars(0).unwrap_err().code, "invalid_args");
        assert_eq!(check_max_chars(MAX_MAX_CHARS + 1).unwrap_err().code, "invalid_args");
        assert_eq!(check_timeout(500).unwrap(), 500);
        assert!(check_timeout(0).is_err() && check_timeout(MAX_TIMEOUT_MS + 1).is_err());
    }

    #[test]
    fn media_type_drops_parameters() {
        let resp = response(200, Some("Text/HTML; charset=UTF-8"), b"");
        assert_eq!(media_type(&resp).as_deref(), Some("text/html"));
        assert_eq!(media_type(&response(200, Some(" ; x"), b"")), None);
        assert_eq!(media_type(&response(200, None, b"")), None);
    }

    #[test]
    fn content_types_are_classified() {
        use BodyKind::*;
        let cases = [
            ("text/html", Html),
            ("application/xhtml+xml", Html),
            ("text/plain", Text),
            ("text/csv", Text),
            ("application/json", Text),
            ("application/vnd.github+json", Text),
            ("application/rss+xml", Text),
            ("application/javascript", Text),
            ("image/png", Binary),
            ("image/svg+xml", Binary),
            ("audio/mpeg", Binary),
            ("video/mp4", Binary),
            ("application/octet-stream", Binary),
            ("application/pdf", Binary),
            ("application/zip", Binary),
        ];
        for (media, kind) in cases {
            assert_eq!(classify(Some(media), b"hello"), kind, "{media}");
        }
        // Unknown or missing types are sniffed.
        assert_eq!(classify(Some("application/x-custom"), b"plain words"), Text);
        assert_eq!(classify(Some("application/x-custom"), b"\x89PNG\r\n\x1a\n\0\0"), Binary);
        assert_eq!(classify(None, b"  <!DOCTYPE html><p>hi"), Html);
        assert_eq!(classify(None, b"caf\xe9 au lait"), Binary);
        // ... unless it declares its charset.
        assert_eq!(classify(None, b"<meta charset=windows-1252><p>caf\xe9"), Text);
        // A multi-byte character cut at the probe's end is not binary.
        let mut long = "a".repeat(BINARY_PROBE - 1).into_bytes();
        long.extend_from_slice("é".as_bytes());
        assert_eq!(classify(None, &long), Text);
    }

    #[test]
    fn html_becomes_readable_text() {
        let html = b"<html><head><title>T</title><style>p{color:red}</style><script>var x = 1;</script></head>\
            <body><h1>Heading</h1><p>First &amp; <b>bold</b> paragraph.</p>\
            <ul><li>one</li><li>two</li></ul><p>See <a href=\"https://example.com/doc\">the docs</a>.</p></body></html>";
        let text = html_to_text(html);
        // Light markdown: headings, emphasis, list bullets, links as references.
        assert!(text.starts_with("# Heading\n"), "{text}");
        assert!(text.contains("First & **bold** paragraph."), "{text}");
        assert!(text.contains("* one") && text.contains("* two"), "{text}");
        assert!(
            text.contains("See [the docs][1].") && text.ends_with("[1]: https://example.com/doc"),
            "{text}"
        );
        assert!(!text.contains("color:red") && !text.contains("var x"), "{text}");
        assert!(!text.contains('<'), "{text}");
    }

    #[test]
    fn clamping_respects_char_boundaries() {
        assert_eq!(clamp_chars("héllo", 2), ("hé", 3));
        assert_eq!(clamp_chars("héllo", 5), ("héllo", 0));
        assert_eq!(clamp_chars("", 3), ("", 0));
        let mut out = String::new();
        assert_eq!(push_clamped(&mut out, "日本語のテキスト", 3), 5);
        assert!(out.starts_with("日本語\n[5 more characters not shown: max_chars is 3"), "{out}");
        let mut whole = String::new();
        assert_eq!(push_clamped(&mut whole, "short", 10), 0);
        assert_eq!(whole, "short");
    }

    #[test]
    fn errors_and_summaries() {
        let err = http_error(404, "HTTP 404 x\nnot here".into());
        assert_eq!((err.code.as_str(), err.message.as_str()), ("http_404", "HTTP 404 x\nnot here"));
        assert_eq!(binary_summary(&response(200, Some("image/png"), &[1, 2, 3])), "<3 bytes of image/png>");
        assert_eq!(binary_summary(&response(200, None, &[0])), "<1 byte of unknown type>");
        assert!(is_success(200) && is_success(204) && !is_success(301) && !is_success(404));
    }
}
