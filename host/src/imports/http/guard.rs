//! What wasmtime-wasi-http 48 leaves to the embedder, held here by replacing seven
//! functions of `wasi:http/types` (the linker's shadowing) with ones that check first
//! and then call wasmtime-wasi-http's own:
//!
//! - **Header bytes per call.** Each `fields` is bounded ([`FIELD_SIZE_LIMIT`]), but not
//!   how many a guest builds: one keeping thousands alive would hold gigabytes of host
//!   memory. `[static]fields.from-list`, `[method]fields.set`, `append` and `clone`
//!   charge what they add to the call's [`HEADER_BYTES_PER_CALL`]; past it the call
//!   traps, naming the limit (checked after each one, which adds at most one set).
//! - **Requests made per call.** Sending is bounded by the pinned hooks
//!   (`max_requests_per_call`), but a request held unsent still holds its URL and its
//!   body's buffer: a call may create twice as many requests (and responses) as it may
//!   send, and traps past that.
//! - **Clear traps.** wasi:http 0.2 has no `header-error` for "too large", so a header
//!   set past its limit traps in wasmtime-wasi-http; the trap says which limit.
//! - **Body errors with their code.** A response body the host cuts (size, deadline)
//!   ends the guest's stream with wasmtime-wasi-http's `Error`, which its
//!   `http-error-code` does not recognise; this one returns the `error-code` it stands
//!   for (`HTTP-response-body-size`, `HTTP-response-timeout`, …).

use std::error::Error as _;

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi_http::p2::HeaderResult;
use wasmtime_wasi_http::p2::bindings::http::types::{self, ErrorCode, Host as _, HostFields};
use wasmtime_wasi_http::{Error, FieldMap, FieldMapError, WasiHttpCtxView};

use super::{FIELD_SIZE_LIMIT, HttpState};

/// The header bytes (names and values, and [`ENTRY_COST`] for each value) one call may
/// build in all, over every `fields` it makes, changes or clones.
pub(super) const HEADER_BYTES_PER_CALL: usize = 1 << 20;

/// What one header value costs beyond its bytes (its entry in the map), so that a
/// flood of empty values is bounded too.
const ENTRY_COST: usize = 64;

/// The interface as wasmtime-wasi-http links it (a guest's 0.2.x import resolves to it).
const TYPES: &str = "wasi:http/types@0.2.12";

/// What the call has built so far: header bytes, requests and responses.
#[derive(Debug)]
pub(super) struct Built {
    header_bytes: usize,
    messages: usize,
    max_messages: usize,
}

impl Built {
    /// Nothing built yet; at most `max_sent` requests may be sent.
    pub(super) fn new(max_sent: usize) -> Self {
        Self { header_bytes: 0, messages: 0, max_messages: max_sent.saturating_mul(2) }
    }

    /// Count `bytes` more, or trap when the call would pass its budget.
    fn headers(&mut self, bytes: usize) -> wasmtime::Result<()> {
        let total = self.header_bytes.saturating_add(bytes);
        if total > HEADER_BYTES_PER_CALL {
            return Err(wasmtime::format_err!(
                "wasi:http: this call's headers would reach {total} bytes; one call may build at most \
                 {HEADER_BYTES_PER_CALL} bytes of headers"
            ));
        }
        self.header_bytes = total;
        Ok(())
    }

    /// Count one more request or response, or trap past the most a call may create.
    fn message(&mut self) -> wasmtime::Result<()> {
        if self.messages >= self.max_messages {
            return Err(wasmtime::format_err!(
                "wasi:http: this call created {} requests and responses, the most one call may \
                 (twice the requests it may send)",
                self.messages
            ));
        }
        self.messages += 1;
        Ok(())
    }
}

fn cost(name: &str, values: &[&[u8]]) -> usize {
    name.len() + values.iter().map(|v| v.len() + ENTRY_COST).sum::<usize>()
}

/// Replace the five functions in the `wasi:http/types` already linked.
pub(super) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> WasiHttpCtxView<'_>,
    state: fn(&mut T) -> &mut HttpState,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = shadow(linker, get, state);
    linker.allow_shadowing(false);
    linked
}

fn shadow<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> WasiHttpCtxView<'_>,
    state: fn(&mut T) -> &mut HttpState,
) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    types.func_wrap("http-error-code", move |mut store, (err,): (Resource<wasmtime::Error>,)| {
        let view = get(store.data_mut());
        Ok((error_code(view.table.get(&err)?),))
    })?;
    types.func_wrap(
        "[static]fields.from-list",
        move |mut store, (entries,): (Vec<(String, Vec<u8>)>,)| {
            let bytes = entries.iter().map(|(k, v)| cost(k, &[v])).sum();
            let mut view = get(store.data_mut());
            let made = view.from_list(entries);
            let made = checked(&mut view, made)?;
            state(store.data_mut()).built.headers(bytes)?;
            Ok((made,))
        },
    )?;
    types.func_wrap(
        "[method]fields.set",
        move |mut store, (fields, name, values): (Resource<FieldMap>, String, Vec<Vec<u8>>)| {
            let values_ref: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            let bytes = cost(&name, &values_ref);
            let mut view = get(store.data_mut());
            let set = view.set(fields, name, values);
            let set = checked(&mut view, set)?;
            state(store.data_mut()).built.headers(bytes)?;
            Ok((set,))
        },
    )?;
    types.func_wrap(
        "[method]fields.append",
        move |mut store, (fields, name, value): (Resource<FieldMap>, String, Vec<u8>)| {
            let bytes = cost(&name, &[&value]);
            let mut view = get(store.data_mut());
            let appended = view.append(fields, name, value);
            let appended = checked(&mut view, appended)?;
            state(store.data_mut()).built.headers(bytes)?;
            Ok((appended,))
        },
    )?;
    types.func_wrap("[method]fields.clone", move |mut store, (fields,): (Resource<FieldMap>,)| {
        let map = get(store.data_mut()).table.get(&fields)?;
        let bytes = map.iter().map(|(k, v)| cost(k.as_str(), &[v.as_bytes()])).sum();
        state(store.data_mut()).built.headers(bytes)?;
        let mut view = get(store.data_mut());
        Ok((HostFields::clone(&mut view, fields)?,))
    })?;
    types.func_wrap(
        "[constructor]outgoing-request",
        move |mut store, (headers,): (Resource<FieldMap>,)| {
            state(store.data_mut()).built.message()?;
            let mut view = get(store.data_mut());
            Ok((types::HostOutgoingRequest::new(&mut view, headers)?,))
        },
    )?;
    types.func_wrap(
        "[constructor]outgoing-response",
        move |mut store, (headers,): (Resource<FieldMap>,)| {
            state(store.data_mut()).built.message()?;
            let mut view = get(store.data_mut());
            Ok((types::HostOutgoingResponse::new(&mut view, headers)?,))
        },
    )?;
    Ok(())
}

/// A `fields` result for the guest: its `header-error`, or a trap saying which limit a
/// set of headers passed.
fn checked<V>(
    view: &mut WasiHttpCtxView<'_>,
    result: HeaderResult<V>,
) -> wasmtime::Result<Result<V, types::HeaderError>> {
    let err = match result {
        Ok(value) => return Ok(Ok(value)),
        Err(err) => err,
    };
    match view.convert_header_error(err) {
        Ok(code) => Ok(Err(code)),
        Err(trap) => match trap.downcast_ref::<FieldMapError>() {
            Some(FieldMapError::TotalSizeTooBig) => Err(wasmtime::format_err!(
                "wasi:http: one set of headers may hold at most {FIELD_SIZE_LIMIT} bytes (in memory)"
            )),
            Some(FieldMapError::TooManyFields) => {
                Err(wasmtime::format_err!("wasi:http: too many header fields in one set"))
            }
            _ => Err(trap),
        },
    }
}

/// The `error-code` a stream error stands for: an `error-code` as it is, or
/// wasmtime-wasi-http's own `Error` (how a body the host cut ends) as its code.
fn error_code(err: &wasmtime::Error) -> Option<ErrorCode> {
    if let Some(code) = err.downcast_ref::<ErrorCode>() {
        return Some(code.clone());
    }
    Some(match err.downcast_ref::<Error>()? {
        Error::HttpResponseBodySize(n) => ErrorCode::HttpResponseBodySize(*n),
        Error::HttpRequestBodySize(n) => ErrorCode::HttpRequestBodySize(*n),
        Error::HttpResponseTimeout => ErrorCode::HttpResponseTimeout,
        Error::HttpResponseIncomplete => ErrorCode::HttpResponseIncomplete,
        Error::HttpProtocolError => ErrorCode::HttpProtocolError,
        Error::ConnectionTerminated => ErrorCode::ConnectionTerminated,
        Error::ConnectionReadTimeout => ErrorCode::ConnectionReadTimeout,
        Error::ConnectionWriteTimeout => ErrorCode::ConnectionWriteTimeout,
        Error::Hyper(e) => match e.source().and_then(|s| s.downcast_ref::<ErrorCode>()) {
            Some(code) => code.clone(),
            None if e.is_incomplete_message() => ErrorCode::HttpResponseIncomplete,
            None if e.is_timeout() => ErrorCode::ConnectionReadTimeout,
            None => ErrorCode::HttpProtocolError,
        },
        other => ErrorCode::InternalError(Some(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_are_counted_to_their_limit() {
        let mut built = Built::new(1);
        built.headers(HEADER_BYTES_PER_CALL - 10).expect("fits");
        let err = built.headers(11).expect_err("one byte over");
        assert!(err.to_string().contains(&format!("at most {HEADER_BYTES_PER_CALL} bytes")), "{err}");
        built.headers(10).expect("what is left still fits");
        assert_eq!(cost("x-a", &[b"", b"1"]), 3 + 2 * ENTRY_COST + 1, "an empty value costs its entry");
    }

    #[test]
    fn a_call_creates_at_most_twice_the_requests_it_may_send() {
        let mut built = Built::new(3);
        for _ in 0..6 {
            built.message().expect("within twice three");
        }
        let err = built.message().expect_err("the seventh");
        assert!(err.to_string().contains("created 6 requests"), "{err}");
    }

    #[test]
    fn a_body_error_is_the_code_it_stands_for() {
        let cut = wasmtime::Error::new(Error::HttpResponseBodySize(Some(7)));
        assert!(matches!(error_code(&cut), Some(ErrorCode::HttpResponseBodySize(Some(7)))));
        let late = wasmtime::Error::new(Error::HttpResponseTimeout);
        assert!(matches!(error_code(&late), Some(ErrorCode::HttpResponseTimeout)));
        let code = wasmtime::Error::new(ErrorCode::ConnectionTerminated);
        assert!(matches!(error_code(&code), Some(ErrorCode::ConnectionTerminated)));
        assert!(error_code(&wasmtime::format_err!("something else")).is_none());
    }
}
