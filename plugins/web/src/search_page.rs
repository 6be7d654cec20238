//! The parser of search result pages: DuckDuckGo's HTML markup, read with
//! html5ever's tokenizer (the HTML5 tokenizer html2text is built on), so
//! entities are decoded and script contents are skipped as a browser would.
//!
//! A result is an element of class `result`; ads (class `result--ad…`, or
//! a `badge--ad` inside) are skipped. In a result, the first link of class
//! `result__a` gives the title and URL, `result__snippet` the snippet, and
//! `result__url` a fallback URL. Redirect links are unwrapped.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, CharacterTokens, EndTag, StartTag, TagToken, Token, TokenSink, TokenSinkResult, Tokenizer,
};
use url::Url;

use crate::common;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult {
    /// The result's title, entities decoded and whitespace collapsed.
    pub title: String,
    /// Where the result leads (search-engine redirects unwrapped).
    pub url: String,
    /// The snippet the search page shows; may be empty.
    pub snippet: String,
}

/// The first `max` distinct (by URL) organic results of a search page.
pub fn parse_results(html: &str, max: usize) -> Vec<SearchResult> {
    let tokenizer = Tokenizer::new(Sink(RefCell::new(Parser::default())), Default::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    // Without scripts to run, one feed consumes the whole queue.
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    let mut parser = tokenizer.sink.0.take();
    parser.close_result();

    let mut out: Vec<SearchResult> = Vec::new();
    for result in parser.results {
        if out.len() == max {
            break;
        }
        if !out.iter().any(|r| r.url == result.url) {
            out.push(result);
        }
    }
    out
}

/// The target of a result link: DuckDuckGo's `/l/?uddg=<target>` redirect
/// is unwrapped, absolute http(s) links pass through, ad links
/// (`/y.js`) and anything else give `None`.
pub fn unwrap_link(href: &str) -> Option<String> {
    let href = href.trim();
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else if href.starts_with('/') {
        format!("https://duckduckgo.com{href}")
    } else {
        href.to_string()
    };
    let url = Url::parse(&absolute).ok()?;
    let host = url.host_str().unwrap_or("");
    if host == "duckduckgo.com" || host.ends_with(".duckduckgo.com") {
        match url.path() {
            "/l/" | "/l" => {
                let (_, target) = url.query_pairs().find(|(k, _)| k == "uddg")?;
                return common::parse_http_url(&target).ok().map(String::from);
            }
            "/y.js" => return None,
            _ => {}
        }
    }
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

/// Feeds the tokenizer's tokens to a [`Parser`].
struct Sink(RefCell<Parser>);

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut parser = self.0.borrow_mut();
        match token {
            TagToken(tag) if tag.kind == StartTag => {
                let attr = |name: &str| {
                    tag.attrs.iter().find(|a| &*a.name.local == name).map(|a| a.value.to_string())
                };
                let name: &str = &tag.name;
                parser.start(name, &attr("class").unwrap_or_default(), attr("href"), tag.self_closing);
                // Script and style contents are text, not markup.
                match name {
                    "script" => return TokenSinkResult::RawData(RawKind::ScriptData),
                    "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                        return TokenSinkResult::RawData(RawKind::Rawtext);
                    }
                    "title" | "textarea" => return TokenSinkResult::RawData(RawKind::Rcdata),
                    _ => {}
                }
            }
            TagToken(tag) if tag.kind == EndTag => parser.end(&tag.name),
            CharacterTokens(text) => parser.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// What an open element collects text into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Nothing of its own (its text goes to the nearest enclosing role).
    Other,
    /// `result__a`: the title.
    Title,
    /// `result__snippet`: the snippet.
    Snippet,
    /// `result__url`: the displayed URL, whose text is not kept.
    DisplayUrl,
}

/// The result being read and the depth of its element in the open stack.
#[derive(Debug, Default)]
struct Partial {
    /// Index of the result's element in [`Parser::open`].
    depth: usize,
    /// Marked as an ad: dropped when closed.
    ad: bool,
    /// Text of the `result__a` link.
    title: String,
    /// Target of the `result__a` link.
    href: Option<String>,
    /// Target of the `result__url` link, used when `href` is unusable.
    url_href: Option<String>,
    /// Text of the `result__snippet` element.
    snippet: String,
}

/// A stack of open elements (enough of the HTML tree for result markup)
/// and the results read so far.
#[derive(Debug, Default)]
struct Parser {
    /// Open elements, outermost first: tag name and role.
    open: Vec<(String, Role)>,
    /// The result being read.
    current: Option<Partial>,
    /// Results read so far, in page order, duplicates included.
    results: Vec<SearchResult>,
}

/// Elements that never have an end tag.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr",
];

impl Parser {
    /// A start tag `name` with its `class` and `href` attributes.
    fn start(&mut self, name: &str, class: &str, href: Option<String>, self_closing: bool) {
        let has = |c: &str| class.split_ascii_whitespace().any(|k| k == c);
        if has("result") {
            self.close_result();
            let ad = class.split_ascii_whitespace().any(|k| k.starts_with("result--ad"));
            self.current = Some(Partial { depth: self.open.len(), ad, ..Partial::default() });
        }
        let mut role = Role::Other;
        if let Some(p) = self.current.as_mut() {
            if has("badge--ad") {
                p.ad = true;
            } else if has("result__a") && p.href.is_none() {
                p.href = href;
                role = Role::Title;
            } else if has("result__snippet") {
                role = Role::Snippet;
            } else if has("result__url") {
                p.url_href = p.url_href.take().or(href);
                role = Role::DisplayUrl;
            }
        }
        if name == "br" {
            self.text(" ");
        }
        if !self_closing && !VOID.contains(&name) {
            self.open.push((name.to_string(), role));
        }
    }

    /// An end tag `name`.
    fn end(&mut self, name: &str) {
        // An end tag with no open element of its name is ignored, as a
        // browser would; otherwise it closes everything opened inside it.
        let Some(at) = self.open.iter().rposition(|(n, _)| n == name) else { return };
        self.open.truncate(at);
        if self.current.as_ref().is_some_and(|p| p.depth >= self.open.len()) {
            self.close_result();
        }
    }

    /// Text (entities already decoded): kept when inside a title or snippet.
    fn text(&mut self, text: &str) {
        let role = self.open.iter().rev().map(|(_, r)| *r).find(|r| *r != Role::Other);
        let Some(p) = self.current.as_mut() else { return };
        match role {
            Some(Role::Title) => p.title.push_str(text),
            Some(Role::Snippet) => p.snippet.push_str(text),
            _ => {}
        }
    }

    /// Turn the result being read, if any, into a [`SearchResult`]; ads and
    /// results without a usable link are dropped.
    fn close_result(&mut self) {
        let Some(p) = self.current.take() else { return };
        if p.ad {
            return;
        }
        let link = |href: &Option<String>| href.as_deref().and_then(unwrap_link);
        let Some(url) = link(&p.href).or_else(|| link(&p.url_href)) else { return };
        let title = collapse(&p.title);
        self.results.push(SearchResult {
            title: if title.is_empty() { url.clone() } else { title },
            url,
            snippet: collapse(&p.snippet),
        });
    }
}

/// Runs of whitespace as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESULTS: &str = include_str!("../tests/fixtures/ddg_results.html");
    const NO_RESULTS: &str = include_str!("../tests/fixtures/ddg_no_results.html");
    const PLAIN: &str = include_str!("../tests/fixtures/plain_links.html");

    const COMPONENT_MODEL: &str =
        "https://component-model.bytecodealliance.org/language-support/rust.html?a=1&b=%E2%9C%93";

    #[test]
    fn reads_organic_results_in_order() {
        let results = parse_results(RESULTS, 20);
        let urls: Vec<&str> = results.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                COMPONENT_MODEL,
                "https://docs.rs/wasmtime/latest/wasmtime/component/index.html",
                "https://github.com/bytecodealliance/wit-bindgen",
            ],
            "{results:#?}"
        );
    }

    #[test]
    fn skips_ads_scripts_styles_and_useless_links() {
        let results = parse_results(RESULTS, 20);
        for r in &results {
            for unwanted in
                ["books.example", "hosting.example", "script.invalid", "css.invalid", "javascript:"]
            {
                assert!(!r.url.contains(unwanted) && !r.title.contains("Broken"), "{r:?}");
            }
        }
    }

    #[test]
    fn decodes_entities_and_collapses_whitespace() {
        let first = &parse_results(RESULTS, 1)[0];
        // `&nbsp;` is decoded, then collapsed like any other whitespace.
        assert_eq!(
            first.title,
            "The Component Model & Rust \u{2013} \"cargo component\" 'guide' <v0.2> café \u{2026}"
        );
        assert_eq!(
            first.snippet,
            "Build WebAssembly components in Rust with cargo component & wit-bindgen \u{2014} 5 > 3."
        );
    }

    #[test]
    fn line_breaks_unclosed_tags_and_missing_titles() {
        let results = parse_results(RESULTS, 20);
        assert_eq!(results[1].title, "wasmtime::component - Rust");
        assert_eq!(
            results[1].snippet,
            "In-progress implementation of the WebAssembly component model. Embed components."
        );
        // No result__a: the result__url link gives the URL, which is also the title.
        assert_eq!(results[2].title, "https://github.com/bytecodealliance/wit-bindgen");
        assert_eq!(results[2].snippet, "Language bindings generator for WIT and the Component Model");
    }

    #[test]
    fn duplicates_are_dropped_and_max_is_kept() {
        let results = parse_results(RESULTS, 20);
        assert_eq!(results.iter().filter(|r| r.url == COMPONENT_MODEL).count(), 1);
        assert_eq!(parse_results(RESULTS, 2).len(), 2);
        assert!(parse_results(RESULTS, 0).is_empty());
    }

    #[test]
    fn a_page_without_results_gives_none() {
        assert!(parse_results(NO_RESULTS, 10).is_empty());
        assert!(parse_results("", 10).is_empty());
        assert!(
            parse_results("<div class=\"result\"><a class=\"result__a\" href=\"https://x.org/", 10)
                .is_empty()
        );
    }

    #[test]
    fn other_pages_with_the_same_classes() {
        let results = parse_results(PLAIN, 10);
        let got: Vec<(&str, &str, &str)> =
            results.iter().map(|r| (r.title.as_str(), r.url.as_str(), r.snippet.as_str())).collect();
        assert_eq!(
            got,
            [
                ("First &amp; escaped twice", "https://example.org/one", "One"),
                ("Second", "http://example.net/two?x=1&y=2", "Two"),
                ("https://example.com/three", "https://example.com/three", ""),
                ("Four", "https://example.com/four", ""),
                ("Five, linked by its display URL", "https://example.com/five", ""),
            ]
        );
    }

    #[test]
    fn redirect_links_are_unwrapped() {
        let cases = [
            (
                "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1&rut=abc",
                Some("https://example.com/a?b=1"),
            ),
            (
                "https://duckduckgo.com/l/?rut=abc&uddg=http%3A%2F%2Fexample.org%2F",
                Some("http://example.org/"),
            ),
            ("/l/?uddg=https%3A%2F%2Fexample.com%2Fx%20y", Some("https://example.com/x%20y")),
            ("https://example.com/plain?q=a+b", Some("https://example.com/plain?q=a+b")),
            ("  https://Example.COM  ", Some("https://example.com/")),
            ("//duckduckgo.com/l/?rut=abc", None),
            ("//duckduckgo.com/l/?uddg=javascript%3Aalert(1)", None),
            ("https://duckduckgo.com/y.js?ad_domain=x.com&u3=https%3A%2F%2Fx.com", None),
            ("javascript:void(0)", None),
            ("mailto:a@example.com", None),
            ("not a url", None),
            ("", None),
        ];
        for (href, want) in cases {
            assert_eq!(unwrap_link(href).as_deref(), want, "{href}");
        }
    }
}
