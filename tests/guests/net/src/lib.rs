//! A plugin that reaches the network only through the host's pinned fetch. Its one tool
//! passes the URL through untouched, so the host alone must refuse what is not allowed.

use toolhost_guest::http::{self, Request};
use toolhost_guest::prelude::*;

/// What to fetch.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchRaw {
    /// The URL, used as given.
    url: String,
    /// HTTP method (default `GET`).
    method: Option<String>,
    /// Most body bytes to return.
    max_bytes: Option<u64>,
    /// Time limit in milliseconds.
    timeout_ms: Option<u32>,
    /// Request body, as text.
    body: Option<String>,
    /// Report the body's length (`N bytes`) instead of the body.
    length_only: Option<bool>,
}

/// `status\nfinal_url\ntruncated\nbody`, or the fetch error with its own code.
fn fetch_raw(args: FetchRaw, _: &Context) -> Result<Output, ToolError> {
    let mut req = Request::new(args.method.as_deref().unwrap_or("GET"), args.url);
    req.max_bytes = args.max_bytes;
    req.timeout_ms = args.timeout_ms;
    req.body = args.body.map(String::into_bytes);
    let resp = http::fetch(&req)?;
    let body = match args.length_only {
        Some(true) => format!("{} bytes", resp.body.len()).into(),
        _ => String::from_utf8_lossy(&resp.body),
    };
    Ok(Output::text(format!("{}\n{}\n{}\n{body}", resp.status, resp.final_url, resp.truncated)))
}

fn tools() -> Vec<Tool> {
    vec![
        tool(
            "fetch_raw",
            "Fetches a URL through the host and reports status, final URL, truncation and body.",
            fetch_raw,
        )
        .read_only(),
    ]
}

toolhost_guest::export_tools!(tools);
