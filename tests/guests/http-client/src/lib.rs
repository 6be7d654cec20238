//! A plugin that GETs a URL with [`wstd`], the Bytecode Alliance's async `wasi:http`
//! client, the way Rust components written for other hosts (Wassette, Spin) reach the
//! network. Unlike the raw `http` guest it makes no choice of its own about the wire:
//! `wstd` sends the request head before the body is finished, so the host's client
//! frames even a GET's empty body as `transfer-encoding: chunked`, and the test server
//! must read that terminating chunk.
//!
//! The URL is passed through untouched, so the host alone must refuse what is not
//! allowed; errors are reported as `wstd` surfaces them: the `wasi:http` `error-code`
//! of a refused request, or the message of a body stream the host cut.

use toolhost_guest::prelude::*;
use wstd::http::{BodyExt as _, Client, ErrorCode, Request, StatusCode, Uri};

/// What to get.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Get {
    /// `http://` or `https://` URL, used as given.
    url: String,
    /// Follow at most this many redirects (each one a new request, which the host vets
    /// again); 0 by default.
    follow: Option<u32>,
    /// Return at most this many bytes of the body as text (64 by default).
    preview_bytes: Option<u32>,
}

/// `status S bytes N url U` and a line of the body's start; a refused or cut request is a
/// `http_error` naming the URL and what `wstd` returned.
fn get(args: Get, _: &Context) -> Result<Output, ToolError> {
    wstd::runtime::block_on(fetch(args))
}

async fn fetch(args: Get) -> Result<Output, ToolError> {
    let client = Client::new();
    let mut url: Uri = args.url.parse().map_err(|e| ToolError::invalid_args(format!("url: {e}")))?;
    let mut redirects = args.follow.unwrap_or(0);
    let preview = args.preview_bytes.unwrap_or(64) as usize;
    loop {
        let request = Request::get(url.clone())
            .body(())
            .map_err(|e| ToolError::invalid_args(format!("url {url}: {e}")))?;
        let response = client.send(request).await.map_err(|e| failed(&url, &e))?;
        let status = response.status();
        if status.is_redirection()
            && redirects > 0
            && let Some(next) = location(&url, &response)
        {
            redirects -= 1;
            url = next;
            continue;
        }
        // Counted as it streams: a body the host cuts is never held whole.
        let mut body = response.into_body().into_boxed_body();
        let (mut bytes, mut start) = (0u64, Vec::new());
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| read_failed(&url, status, bytes, &e))?;
            if let Some(data) = frame.data_ref() {
                bytes += data.len() as u64;
                let room = preview.saturating_sub(start.len());
                start.extend_from_slice(&data[..room.min(data.len())]);
            }
        }
        let text = String::from_utf8_lossy(&start);
        return Ok(Output::text(format!("status {} bytes {bytes} url {url}\n{text}", status.as_u16())));
    }
}

/// Where a redirect points: an absolute URL, or a path on the same origin.
fn location<B>(from: &Uri, response: &wstd::http::Response<B>) -> Option<Uri> {
    let to: Uri = response.headers().get("location")?.to_str().ok()?.parse().ok()?;
    if to.scheme().is_some() {
        return Some(to);
    }
    let mut parts = from.clone().into_parts();
    parts.path_and_query = to.into_parts().path_and_query;
    Uri::from_parts(parts).ok()
}

/// A request `wstd` could not complete: its `wasi:http` error code when the host gave one.
fn failed(url: &Uri, error: &wstd::http::Error) -> ToolError {
    match error.downcast_ref::<ErrorCode>() {
        Some(code) => ToolError::new("http_error", format!("GET {url}: {code:?}")),
        None => ToolError::new("http_error", format!("GET {url}: {error:#}")),
    }
}

/// A body that stopped with an error after `bytes` bytes.
fn read_failed(url: &Uri, status: StatusCode, bytes: u64, error: &wstd::http::Error) -> ToolError {
    let status = status.as_u16();
    ToolError::new(
        "http_error",
        format!("GET {url}: status {status}, body failed after {bytes} bytes: {error:#}"),
    )
}

fn tools() -> Vec<Tool> {
    vec![
        tool(
            "http_get",
            "GETs a URL with the wstd wasi:http client and reports the status, the body's length and its start.",
            get,
        )
        .read_only(),
    ]
}

toolhost_guest::export_tools!(tools);
