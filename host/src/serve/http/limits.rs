//! What one HTTP client may hold: calls in flight (a slot per POST, held
//! until its response body ends or the client goes away) and the request body
//! it sends (bounded in bytes, and in time so a client that sends slowly cannot
//! keep a connection and a slot forever).

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;

/// Calls in flight by client address.
pub(crate) struct Slots {
    max: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One call's slot: given back when dropped.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    client: IpAddr,
}

impl Slots {
    /// At most `max` calls in flight for each client address.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { max, held: Mutex::default() })
    }

    /// A slot for `client`, or `None` when it already holds all of them.
    pub(crate) fn take(self: &Arc<Self>, client: IpAddr) -> Option<Slot> {
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

/// A response body that holds its call's slot until it ends or is dropped
/// (an SSE stream lasts as long as its call).
pub(crate) struct HoldingBody<B> {
    inner: B,
    slot: Option<Slot>,
}

impl<B> HoldingBody<B> {
    pub(crate) fn new(inner: B, slot: Option<Slot>) -> Self {
        Self { inner, slot }
    }
}

impl<B: Body + Unpin> Body for HoldingBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.slot = None;
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

    #[test]
    fn slots_are_per_client_and_given_back() {
        let slots = Slots::new(2);
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let first = slots.take(a).unwrap();
        let _second = slots.take(a).unwrap();
        assert!(slots.take(a).is_none());
        assert!(slots.take(b).is_some());
        drop(first);
        assert!(slots.take(a).is_some());
    }

    #[tokio::test]
    async fn bodies_are_bounded() {
        let small = read_body(Full::new(Bytes::from_static(b"abc")), 3, Duration::from_secs(1)).await;
        assert_eq!(small.unwrap(), Bytes::from_static(b"abc"));
        let big = read_body(Full::new(Bytes::from_static(b"abcd")), 3, Duration::from_secs(1)).await;
        assert_eq!(big, Err(BodyRefused::TooLarge(3)));
    }
}
