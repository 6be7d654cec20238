//! The bodies of a `wasi:http` exchange, bounded: the guest's request body is cut off
//! with `HTTP-request-body-size` past the limit, the response body with
//! `HTTP-response-body-size`, and either ends with a timeout at the request's deadline
//! (a slow drip or a body that never ends cannot outlive the call).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Empty};
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::WasiBody;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;

/// Counts the bytes of `inner` and ends it at `limit` bytes or at `deadline`.
pub(super) struct Bounded<B: Body, E> {
    inner: B,
    map_err: fn(B::Error) -> E,
    seen: u64,
    limit: u64,
    deadline: Pin<Box<Sleep>>,
    over: fn(u64) -> E,
    late: fn() -> E,
    over_next: bool,
    done: bool,
}

/// The three ways a bounded body ends in error, as `E`.
struct Ends<B: Body, E> {
    map_err: fn(B::Error) -> E,
    over: fn(u64) -> E,
    late: fn() -> E,
}

impl<B: Body, E> Bounded<B, E> {
    fn new(inner: B, limit: u64, deadline: Instant, ends: Ends<B, E>) -> Self {
        let deadline = Box::pin(tokio::time::sleep_until(deadline));
        let Ends { map_err, over, late } = ends;
        Self { inner, map_err, seen: 0, limit, deadline, over, late, over_next: false, done: false }
    }
}

/// A guest's own request body error, as the error code it stands for.
fn request_error(e: wasmtime_wasi_http::Error) -> ErrorCode {
    match e {
        wasmtime_wasi_http::Error::HttpRequestBodySize(n) => ErrorCode::HttpRequestBodySize(n),
        other => ErrorCode::InternalError(Some(other.to_string())),
    }
}

/// The guest's request body, as hyper sends it: its errors are `ErrorCode`s, which
/// wasmtime-wasi-http finds in the hyper error and hands to the guest as they are.
pub(super) fn request(body: WasiBody, limit: u64, deadline: Instant) -> Bounded<WasiBody, ErrorCode> {
    let ends = Ends {
        map_err: request_error,
        over: |limit| ErrorCode::HttpRequestBodySize(Some(limit)),
        late: || ErrorCode::ConnectionWriteTimeout,
    };
    Bounded::new(body, limit, deadline, ends)
}

/// A request body as hyper gets it.
pub(super) type Outgoing = UnsyncBoxBody<Bytes, ErrorCode>;

/// What hyper is given of the guest's request `body` for a request with this `method` and
/// `headers`: the body, or nothing for a GET, HEAD or CONNECT that declares no length.
///
/// hyper frames those as bodiless, and drops the body it was given as soon as the head is
/// written. A guest may still be writing it then: `wstd` sends the head first and writes
/// its (empty) body after, and a body dropped under it closes its stream, which `wstd`
/// turns into a failed request ("connection reset") however fine the response. So the
/// host reads such a body to its end itself, discarding it (none of it would be sent),
/// in a task of its own: it must outlive a response that arrives, and a connection that
/// ends, before the guest has written. The task is bounded as any request body: it ends
/// at the body's end, at its size limit, at the request's deadline, or when the guest
/// drops the body (as everything of a call is when the call ends).
pub(super) fn outgoing(
    body: Bounded<WasiBody, ErrorCode>,
    method: &http::Method,
    headers: &http::HeaderMap,
) -> Outgoing {
    use http::{Method, header};
    let bodiless = matches!(*method, Method::GET | Method::HEAD | Method::CONNECT)
        && !headers.contains_key(header::CONTENT_LENGTH)
        && !headers.contains_key(header::TRANSFER_ENCODING);
    if !bodiless {
        return body.boxed_unsync();
    }
    drain(body);
    empty()
}

/// An empty body for hyper.
pub(super) fn empty() -> Outgoing {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// Read `body` to its end in a task of its own, discarding it (bounded as `body` is).
fn drain(mut body: Bounded<WasiBody, ErrorCode>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { while let Some(Ok(_)) = body.frame().await {} });
    }
}

/// The guest's request body until hyper is given it. A request refused before that
/// (an address, a host, a limit) drops it untaken, and it is then read to its end like
/// an unsent body ([`outgoing`]): the guest, perhaps still writing it, gets the refusal's
/// error code rather than a body stream closed under it (`wstd` reported "connection
/// reset" for a refused request that way, whichever came first).
pub(super) struct Pending(pub(super) Option<Bounded<WasiBody, ErrorCode>>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(body) = self.0.take() {
            drain(body);
        }
    }
}

/// The response body, as the guest reads it.
pub(super) fn response<B>(body: B, limit: u64, deadline: Instant) -> Bounded<B, wasmtime_wasi_http::Error>
where
    B: Body,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let ends = Ends {
        map_err: Into::into,
        over: |limit| wasmtime_wasi_http::Error::HttpResponseBodySize(Some(limit)),
        late: || wasmtime_wasi_http::Error::HttpResponseTimeout,
    };
    Bounded::new(body, limit, deadline, ends)
}

impl<B, E> Body for Bounded<B, E>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = E;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, E>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.over_next {
            this.done = true;
            return Poll::Ready(Some(Err((this.over)(this.limit))));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.done = true;
            return Poll::Ready(Some(Err((this.late)())));
        }
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        let frame = match frame {
            None => return Poll::Ready(None),
            Some(Err(e)) => {
                this.done = true;
                return Poll::Ready(Some(Err((this.map_err)(e))));
            }
            Some(Ok(frame)) => frame,
        };
        let mut data = match frame.into_data() {
            Ok(data) => data,
            // Trailers pass as they are.
            Err(frame) => return Poll::Ready(Some(Ok(frame))),
        };
        let room = this.limit - this.seen;
        if data.len() as u64 > room {
            // What fits is delivered; the next poll ends the body with the size error.
            data.truncate(room as usize);
            this.seen = this.limit;
            this.over_next = true;
        } else {
            this.seen += data.len() as u64;
        }
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http_body_util::{BodyExt, StreamBody};

    use super::*;

    fn chunks(n: usize, size: usize) -> impl Body<Data = Bytes, Error = ErrorCode> + Unpin {
        let frames = (0..n).map(move |_| Ok::<_, ErrorCode>(Frame::data(Bytes::from(vec![b'x'; size]))));
        StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_past_its_limit_ends_with_the_size_error() {
        let far = Instant::now() + Duration::from_secs(60);
        let ends = Ends {
            map_err: |e| e,
            over: |l| ErrorCode::HttpRequestBodySize(Some(l)),
            late: || ErrorCode::ConnectionWriteTimeout,
        };
        let mut body = Bounded::new(chunks(10, 100), 450, far, ends);
        let mut read = 0;
        let err = loop {
            match body.frame().await {
                Some(Ok(f)) => read += f.into_data().map(|d| d.len()).unwrap_or(0),
                Some(Err(e)) => break e,
                None => panic!("the body should have been cut"),
            }
        };
        assert_eq!(read, 450, "what fits is delivered");
        assert!(matches!(err, ErrorCode::HttpRequestBodySize(Some(450))), "{err:?}");
        assert!(body.frame().await.is_none(), "nothing after the error");
    }

    #[tokio::test]
    async fn a_body_that_never_ends_stops_at_the_deadline() {
        let never = StreamBody::new(futures_util::stream::pending::<Result<Frame<Bytes>, hyper::Error>>());
        let soon = Instant::now() + Duration::from_millis(50);
        let mut body = response(never, 1 << 20, soon);
        let err = body.frame().await.expect("a frame").expect_err("a timeout");
        assert!(matches!(err, wasmtime_wasi_http::Error::HttpResponseTimeout), "{err:?}");
    }
}
