//! A plugin that reaches the network through standard `wasi:http/outgoing-handler`, as
//! third-party components do (raw `wasip2` bindings, so every step is visible). Its one
//! tool passes the URL through untouched, so the host alone must refuse what is not
//! allowed; the optional arguments make it hostile (huge headers, a huge streamed body,
//! thousands of requests, a body dropped half read).

use std::collections::BTreeMap;

use toolhost_guest::prelude::*;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// What to send.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Send {
    /// `http://` or `https://` URL, used as given.
    url: String,
    /// Add one header `x-big` of this many bytes.
    header_bytes: Option<u32>,
    /// POST this many MiB of body, streamed in 4 KiB writes.
    body_mib: Option<u32>,
    /// Send the request this many times, one after the other.
    repeat: Option<u32>,
    /// Read at most this many body bytes, then drop the body.
    read_at_most: Option<u64>,
    /// POST, stream this many KiB of body, then drop the unfinished body and the
    /// response future without waiting.
    drop_after_kib: Option<u32>,
    /// First build this many header sets of 60 KiB each and keep them all.
    header_sets: Option<u32>,
    /// First create this many requests, fill each one's body buffer, and keep them
    /// all unsent.
    hold: Option<u32>,
}

/// `status S read N` or `error CODE`, per request; with `repeat`, a tally.
fn send(args: Send, _: &Context) -> Result<Output, ToolError> {
    let mut kept = Vec::new();
    for _ in 0..args.header_sets.unwrap_or(0) {
        let fields = Fields::new();
        if let Err(e) = fields.append("x-big", &[b'a'; 60 << 10]) {
            return Ok(Output::text(format!("error header {e:?} after {} sets", kept.len())));
        }
        kept.push(fields);
    }
    let mut held = Vec::new();
    for _ in 0..args.hold.unwrap_or(0) {
        let request = OutgoingRequest::new(Fields::new());
        let Ok(body) = request.body() else { return Ok(Output::text("error no body")) };
        let Ok(out) = body.write() else { return Ok(Output::text("error no body stream")) };
        // As much as the stream takes at once: what the host buffers for an unsent body.
        let room = out.check_write().unwrap_or(0).min(1 << 20) as usize;
        let _ = out.write(&vec![b'h'; room]);
        // Dropped child first: the stream, its body, then the request.
        held.push((out, body, request));
    }
    if !kept.is_empty() || !held.is_empty() {
        return Ok(Output::text(format!("kept {} header sets, held {} requests", kept.len(), held.len())));
    }
    let repeat = args.repeat.unwrap_or(1);
    if repeat == 1 {
        return Ok(Output::text(once(&args)));
    }
    let mut tally: BTreeMap<String, u32> = BTreeMap::new();
    for _ in 0..repeat {
        let outcome = once(&args);
        let key = outcome.split(" read").next().unwrap_or_default().to_owned();
        *tally.entry(key).or_default() += 1;
    }
    Ok(Output::text(tally.iter().map(|(k, n)| format!("{n} × {k}")).collect::<Vec<_>>().join("\n")))
}

fn code(e: &ErrorCode) -> String {
    format!("error {e:?}")
}

fn once(args: &Send) -> String {
    let (scheme, rest) = match args.url.split_once("://") {
        Some(("https", rest)) => (Scheme::Https, rest),
        Some((_, rest)) => (Scheme::Http, rest),
        None => return "error bad url".into(),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let headers = Fields::new();
    if let Some(n) = args.header_bytes {
        let value = vec![b'a'; n as usize];
        if let Err(e) = headers.append("x-big", &value) {
            return format!("error header {e:?}");
        }
    }
    let request = OutgoingRequest::new(headers);
    let posts = args.body_mib.is_some() || args.drop_after_kib.is_some();
    let method = if posts { Method::Post } else { Method::Get };
    let set = request.set_method(&method).is_ok()
        && request.set_scheme(Some(&scheme)).is_ok()
        && request.set_authority(Some(authority)).is_ok()
        && request.set_path_with_query(Some(path)).is_ok();
    if !set {
        return "error the request was refused by wasi:http/types".into();
    }
    let Ok(body) = request.body() else { return "error no body".into() };
    let future = match outgoing_handler::handle(request, None) {
        Ok(future) => future,
        Err(e) => return code(&e),
    };
    if let Some(kib) = args.drop_after_kib {
        let Ok(out) = body.write() else { return "error no body stream".into() };
        let chunk = [b'x'; 1024];
        for _ in 0..kib {
            if out.blocking_write_and_flush(&chunk).is_err() {
                return "error the body stream closed early".into();
            }
        }
        // Neither finished nor awaited: everything dropped mid-body.
        drop(out);
        drop(body);
        drop(future);
        return format!("dropped after {kib} KiB");
    }
    if let Some(mib) = args.body_mib {
        let Ok(out) = body.write() else { return "error no body stream".into() };
        let chunk = [b'x'; 4096];
        for _ in 0..u64::from(mib) * 256 {
            if out.blocking_write_and_flush(&chunk).is_err() {
                break;
            }
        }
        drop(out);
    }
    let _ = OutgoingBody::finish(body, None);
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return code(&e),
        Some(Err(())) | None => return "error the response was already taken".into(),
    };
    let status = response.status();
    let Ok(incoming) = response.consume() else { return format!("status {status} read 0 error no body") };
    let Ok(stream) = incoming.stream() else { return format!("status {status} read 0 error no stream") };
    let limit = args.read_at_most.unwrap_or(u64::MAX);
    let mut read = 0u64;
    let mut end = String::new();
    while read < limit {
        match stream.blocking_read((64u64 << 10).min(limit - read)) {
            Ok(bytes) => read += bytes.len() as u64,
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                end = match wasip2::http::types::http_error_code(&e) {
                    Some(e) => format!(" {}", code(&e)),
                    None => format!(" error {}", e.to_debug_string()),
                };
                break;
            }
        }
    }
    // Dropped here, read to the end or not.
    drop(stream);
    drop(incoming);
    format!("status {status} read {read}{end}")
}

fn tools() -> Vec<Tool> {
    vec![tool(
        "http_send",
        "Sends a request with wasi:http/outgoing-handler and reports the status and bytes read, or the error code.",
        send,
    )
    .read_only()]
}

toolhost_guest::export_tools!(tools);
