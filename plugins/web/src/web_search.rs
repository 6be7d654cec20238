//! `web_search`: search the web through an HTML search page (DuckDuckGo's
//! by default) and list the results.
//!
//! The page is read by [`crate::search_page::parse_results`].

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::http::{self, Request, Response};
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};
use url::Url;
use url::form_urlencoded::byte_serialize;

use crate::common::{self, BodyKind};
pub use crate::search_page::{SearchResult, parse_results, unwrap_link};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Search the web and list the results: for each, its number, title, URL and a short \
snippet. Returns at most `max_results` results (default 8, at most 20); ads are left out. Use fetch_url to read a \
result. A search page that answers with a status other than 2xx fails with `http_<status>`; no results is not an \
error.";

/// The search page used when the host sets no `TOOLHOST_SEARCH_URL`.
pub const DEFAULT_ENDPOINT: &str = "https://html.duckduckgo.com/html/?q={query}";
/// Environment variable holding the search page's URL template.
pub const ENDPOINT_VAR: &str = "TOOLHOST_SEARCH_URL";
/// Placeholder in the template replaced by the form-urlencoded query.
const PLACEHOLDER: &str = "{query}";
/// Default number of results.
pub const DEFAULT_MAX_RESULTS: usize = 8;
/// Largest `max_results` allowed.
pub const MAX_MAX_RESULTS: usize = 20;
/// Longest query accepted, in characters.
const MAX_QUERY_CHARS: usize = 500;
/// Time limit for the search request.
const TIMEOUT_MS: u32 = 20_000;
/// Most bytes of the search page read.
const MAX_PAGE_BYTES: u64 = 1 << 20;
/// Characters of an error page shown in an `http_<status>` error.
const ERROR_PAGE_CHARS: usize = 2000;

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to search for, in words, as typed into a search engine.
    pub query: String,
    /// Maximum number of results to list, 1 to 20. Default 8.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = 20))]
    pub max_results: usize,
}

fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}

/// Run `web_search`: build the search URL, fetch the page, and list the
/// results with [`render`].
pub fn run(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
    let query = args.query.trim();
    if query.is_empty() {
        return Err(ToolError::invalid_args("query is empty"));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::invalid_args(format!("query is longer than {MAX_QUERY_CHARS} characters")));
    }
    if !(1..=MAX_MAX_RESULTS).contains(&args.max_results) {
        return Err(ToolError::invalid_args(format!("max_results must be between 1 and {MAX_MAX_RESULTS}")));
    }
    let template = endpoint_template(std::env::var(ENDPOINT_VAR).ok());
    let url = search_url(&template, query)?;
    let mut req = Request::get(url.as_str())
        .header("accept", "text/html")
        .header("user-agent", "Mozilla/5.0 (compatible; toolhost-web)");
    req.timeout_ms = Some(TIMEOUT_MS);
    req.max_bytes = Some(MAX_PAGE_BYTES);
    let resp = http::fetch(&req)?;
    render(&resp, query, args.max_results)
}

/// The URL template to use: the host's setting when it gave a non-empty
/// one, else [`DEFAULT_ENDPOINT`].
pub fn endpoint_template(configured: Option<String>) -> String {
    configured.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
}

/// `template` with `{query}` replaced by `query`, form-urlencoded (spaces
/// as `+`). Fails with `invalid_search_url` when the template has no
/// placeholder or does not make an http(s) URL.
pub fn search_url(template: &str, query: &str) -> Result<Url, ToolError> {
    let bad =
        |why: String| ToolError::new(codes::INVALID_SEARCH_URL, format!("{ENDPOINT_VAR} {template:?} {why}"));
    if !template.contains(PLACEHOLDER) {
        return Err(bad(format!("has no {PLACEHOLDER} placeholder")));
    }
    let encoded: String = byte_serialize(query.as_bytes()).collect();
    common::parse_http_url(&template.replace(PLACEHOLDER, &encoded))
        .map_err(|e| bad(format!("does not make an http(s) URL: {}", e.message)))
}

/// What the model gets for the search page `resp`: the numbered results,
/// or a line saying there were none.
pub fn render(resp: &Response, query: &str, max: usize) -> Result<Output, ToolError> {
    let media = common::media_type(resp);
    let kind = common::classify(media.as_deref(), &resp.body);
    if !common::is_success(resp.status) {
        let mut shown = format!("HTTP {} {}\n", resp.status, resp.final_url);
        match kind {
            BodyKind::Binary => shown.push_str(&common::binary_summary(resp)),
            _ => {
                common::push_clamped(&mut shown, &common::page_text(resp), ERROR_PAGE_CHARS);
            }
        }
        return Err(common::http_error(resp.status, shown));
    }
    if kind == BodyKind::Binary {
        return Err(ToolError::new(
            codes::UNSUPPORTED_CONTENT_TYPE,
            format!("the search page {} answered with {}", resp.final_url, common::binary_summary(resp)),
        ));
    }
    let results = parse_results(&crate::charset::decode(resp), max);
    let content =
        if results.is_empty() { format!("no results for {query:?}") } else { format_results(&results) };
    Ok(Output::text(content).with_metadata(json!({
        "query": query,
        "results": results.len(),
        "search_url": resp.final_url,
    })))
}

/// `N. Title` / `   URL` / `   snippet` for each result, a blank line
/// between results.
pub fn format_results(results: &[SearchResult]) -> String {
    let mut out = String::new();
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}. {}\n   {}\n", i + 1, r.title, r.url));
        if !r.snippet.is_empty() {
            out.push_str(&format!("   {}\n", r.snippet));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::tests::response;

    const RESULTS: &[u8] = include_bytes!("../tests/fixtures/ddg_results.html");
    const NO_RESULTS: &[u8] = include_bytes!("../tests/fixtures/ddg_no_results.html");

    #[test]
    fn the_query_fills_the_template_form_urlencoded() {
        let url = search_url(DEFAULT_ENDPOINT, "rust & wasm: \"components\"/ü?").unwrap();
        assert_eq!(
            url.as_str(),
            "https://html.duckduckgo.com/html/?q=rust+%26+wasm%3A+%22components%22%2F%C3%BC%3F"
        );
        let custom = search_url("https://search.example/find?lang=en&terms={query}", "a b").unwrap();
        assert_eq!(custom.as_str(), "https://search.example/find?lang=en&terms=a+b");
    }

    #[test]
    fn a_bad_template_is_reported() {
        for template in ["https://search.example/?q=", "file:///tmp/{query}", "{query}"] {
            let err = search_url(template, "x").unwrap_err();
            assert_eq!(err.code, codes::INVALID_SEARCH_URL, "{template}");
            assert!(err.message.contains(ENDPOINT_VAR), "{}", err.message);
        }
    }

    #[test]
    fn the_host_setting_wins_when_present() {
        assert_eq!(endpoint_template(None), DEFAULT_ENDPOINT);
        assert_eq!(endpoint_template(Some("  ".into())), DEFAULT_ENDPOINT);
        assert_eq!(
            endpoint_template(Some("https://s.example/?q={query}".into())),
            "https://s.example/?q={query}"
        );
    }

    #[test]
    fn results_are_numbered() {
        let out = render(&response(200, Some("text/html"), RESULTS), "rust wasm", 2).unwrap();
        let want = "1. The Component Model & Rust \u{2013} \"cargo component\" 'guide' <v0.2> café \u{2026}\n   \
             https://component-model.bytecodealliance.org/language-support/rust.html?a=1&b=%E2%9C%93\n   \
             Build WebAssembly components in Rust with cargo component & wit-bindgen \u{2014} 5 > 3.\n\
             \n\
             2. wasmtime::component - Rust\n   \
             https://docs.rs/wasmtime/latest/wasmtime/component/index.html\n   \
             In-progress implementation of the WebAssembly component model. Embed components.\n";
        assert_eq!(out.content, want);
        let meta = out.metadata.unwrap();
        assert_eq!((meta["query"].as_str(), meta["results"].as_u64()), (Some("rust wasm"), Some(2)));
    }

    #[test]
    fn a_snippet_less_result_has_two_lines() {
        let one =
            SearchResult { title: "T".into(), url: "https://t.example/".into(), snippet: String::new() };
        assert_eq!(format_results(&[one]), "1. T\n   https://t.example/\n");
    }

    #[test]
    fn no_results_is_ok_and_says_so() {
        let out = render(&response(200, Some("text/html"), NO_RESULTS), "qwxzyv plorkbranch", 8).unwrap();
        assert_eq!(out.content, "no results for \"qwxzyv plorkbranch\"");
        assert_eq!(out.metadata.unwrap()["results"], 0);
    }

    #[test]
    fn errors_from_the_search_page() {
        let err =
            render(&response(403, Some("text/html"), b"<p>Forbidden &amp; blocked</p>"), "q", 8).unwrap_err();
        assert_eq!(err.code, "http_403");
        assert!(err.message.starts_with("HTTP 403 https://example.com/page\n"), "{}", err.message);
        assert!(err.message.contains("Forbidden & blocked"), "{}", err.message);
        let err = render(&response(200, Some("image/png"), b"\x89PNG"), "q", 8).unwrap_err();
        assert_eq!(err.code, codes::UNSUPPORTED_CONTENT_TYPE);
    }

    #[test]
    fn arguments_are_checked_before_searching() {
        let ctx = Context::new("t", None);
        let run_with = |v: serde_json::Value| run(serde_json::from_value(v).unwrap(), &ctx);
        assert_eq!(run_with(json!({"query": "  "})).unwrap_err().code, "invalid_args");
        assert_eq!(run_with(json!({"query": "x".repeat(501)})).unwrap_err().code, "invalid_args");
        assert_eq!(run_with(json!({"query": "x", "max_results": 21})).unwrap_err().code, "invalid_args");
        assert_eq!(run_with(json!({"query": "x", "max_results": 0})).unwrap_err().code, "invalid_args");
        // Natively there is no host: the fetch error's code comes through.
        assert_eq!(run_with(json!({"query": "rust"})).unwrap_err().code, "transport");
        let args: Args = serde_json::from_value(json!({"query": "x"})).unwrap();
        assert_eq!(args.max_results, DEFAULT_MAX_RESULTS);
        assert!(serde_json::from_value::<Args>(json!({"query": "x", "page": 2})).is_err());
    }
}
