//! A capped in-memory stdout/stderr for guests: keeps the first N bytes and
//! silently drops the rest, so a flood is cut instead of crashing the guest
//! (wasmtime's `MemoryOutputPipe` reports the stream closed when full, which
//! makes a Rust guest's `println!` panic).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// A shared, capped byte buffer: a clone writes into the same buffer.
#[derive(Clone, Debug)]
pub(crate) struct CappedPipe {
    inner: Arc<Mutex<Captured>>,
    cap: usize,
}

#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: u64,
}

impl CappedPipe {
    /// A pipe that keeps at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        Self { inner: Arc::default(), cap }
    }

    /// What was kept (lossy UTF-8) and how many bytes were dropped.
    pub(crate) fn contents(&self) -> (String, u64) {
        let captured = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        (String::from_utf8_lossy(&captured.kept).into_owned(), captured.dropped)
    }

    fn push(&self, bytes: &[u8]) {
        let mut captured = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let room = self.cap.saturating_sub(captured.kept.len());
        let take = room.min(bytes.len());
        captured.kept.extend_from_slice(&bytes[..take]);
        captured.dropped += (bytes.len() - take) as u64;
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 << 10)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_head_and_counts_the_rest() {
        let pipe = CappedPipe::new(5);
        let mut stream = pipe.clone();
        stream.write(Bytes::from_static(b"abc")).unwrap();
        stream.write(Bytes::from_static(b"defgh")).unwrap();
        assert_eq!(pipe.contents(), ("abcde".to_string(), 3));
    }
}
