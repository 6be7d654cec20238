//! What one HTTP client may hold: connections, calls in flight and event
//! streams (each a slot held until the connection closes or the response body
//! ends or is dropped), the request body it sends (bounded in bytes, and in
//! time so a client that sends slowly cannot keep a connection and a slot
//! forever), and how long an event stream may stay silent.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf as _, Bytes};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;

use super::client::Client;

/// Things held by client: at most `max` each.
pub(crate) struct Slots {
    max: usize,
    held: Mutex<HashMap<Client, usize>>,
}

/// One slot: given back when dropped.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    client: Client,
}

impl Slots {
    /// At most `max` for each client.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { max, held: Mutex::default() })
    }

    /// A slot for `client`, or `None` when it already holds all of them.
    pub(crate) fn take(self: &Arc<Self>, client: Client) -> Option<Slot> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let count = held.entry(client).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Slot { slots: self.clone(), client })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = held.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.client);
            }
        }
    }
}

/// A response body that holds `G` (its call's or stream's slot, its session's
/// use) until it ends or is dropped (an SSE stream lasts as long as its call).
pub(crate) struct HoldingBody<B, G> {
    inner: B,
    held: Option<G>,
}

impl<B, G> HoldingBody<B, G> {
    pub(crate) fn new(inner: B, held: G) -> Self {
        Self { inner, held: Some(held) }
    }
}

impl<B: Body + Unpin, G: Unpin> Body for HoldingBody<B, G> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.held = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An event stream that ends after `patience` with no event: keep-alive
/// comments (lines starting with `:`) do not count.
pub(crate) struct IdleEnding<B> {
    inner: B,
    patience: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<B> IdleEnding<B> {
    pub(crate) fn new(inner: B, patience: Duration) -> Self {
        Self { inner, patience, deadline: Box::pin(tokio::time::sleep(patience)) }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for IdleEnding<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if frame.data_ref().is_some_and(|data| data.chunk().first() != Some(&b':')) {
                    let next = tokio::time::Instant::now() + self.patience;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            other => other,
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a request body was not read.
#[derive(Debug, PartialEq)]
pub(crate) enum BodyRefused {
    /// More than the limit (HTTP 413).
    TooLarge(usize),
    /// Not all of it within the time allowed (HTTP 408).
    TooSlow(Duration),
    /// The connection failed while reading it.
    Broken(String),
}

/// Read a whole request body: at most `max` bytes, within `patience`.
pub(crate) async fn read_body<B>(body: B, max: usize, patience: Duration) -> Result<Bytes, BodyRefused>
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if body.size_hint().lower() > max as u64 {
        return Err(BodyRefused::TooLarge(max));
    }
    let limited = http_body_util::Limited::new(body, max);
    match tokio::time::timeout(patience, limited.collect()).await {
        Err(_) => Err(BodyRefused::TooSlow(patience)),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyRefused::TooLarge(max)),
        Ok(Err(e)) => Err(BodyRefused::Broken(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;
    use std::convert::Infallible;

    #[test]
    fn slots_are_per_client_and_given_back() {
        let slots = Slots::new(2);
        let a = Client::of([127, 0, 0, 1].into());
        let b = Client::of([127, 0, 0, 2].into());
        let first = slots.take(a).unwrap();
        let _second = slots.take(a).unwrap();
        assert!(slots.take(a).is_none());
        assert!(slots.take(b).is_some());
        drop(first);
        assert!(slots.take(a).is_some());
    }

    #[tokio::test]
    async fn silent_streams_end_and_keep_alives_are_silence() {
        let patience = Duration::from_millis(300);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
        let body = http_body_util::StreamBody::new(tokio_stream_from(rx));
        let mut body = IdleEnding::new(body, patience);
        tx.send(Ok(Frame::data(Bytes::from_static(b"data: {}\n\n")))).await.unwrap();
        let event = tokio::time::Instant::now();
        assert!(body.frame().await.is_some());
        tokio::time::sleep(Duration::from_millis(200)).await;
        tx.send(Ok(Frame::data(Bytes::from_static(b":\n\n")))).await.unwrap();
        assert!(body.frame().await.is_some());
        assert!(body.frame().await.is_none(), "ended");
        let took = event.elapsed();
        assert!(
            took >= patience && took < patience + Duration::from_millis(150),
            "{took:?} after the last event"
        );
    }

    fn tokio_stream_from<T>(mut rx: tokio::sync::mpsc::Receiver<T>) -> impl futures_util::Stream<Item = T> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    #[tokio::test]
    async fn bodies_are_bounded() {
        let small = read_body(Full::new(Bytes::from_static(b"abc")), 3, Duration::from_secs(1)).await;
        assert_eq!(small.unwrap(), Bytes::from_static(b"abc"));
        let big = read_body(Full::new(Bytes::from_static(b"abcd")), 3, Duration::from_secs(1)).await;
        assert_eq!(big, Err(BodyRefused::TooLarge(3)));
    }
}
