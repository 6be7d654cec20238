//! A server's output streams, bounded.
//!
//! - **stdout** carries the protocol: [`LineGuard`] fails the stream once one line
//!   (one JSON-RPC message) passes the bound, so a server that floods its stdout
//!   without a newline is stopped with a clean error instead of growing the
//!   host's memory (the client then sees the stream end; [`Tripped`] says why).
//! - **stderr** goes to the host log ([`log_stderr`]): lines cut to
//!   [`STDERR_LINE_BYTES`], at most [`STDERR_LINES`] per [`STDERR_WINDOW`] (the
//!   rest counted and reported once the window ends), the last
//!   [`TAIL_BYTES`] kept for error messages ([`Tail`]).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

/// Longest stderr line logged, in bytes.
pub(crate) const STDERR_LINE_BYTES: usize = 1024;
/// Most stderr lines logged per window.
pub(crate) const STDERR_LINES: usize = 100;
/// The stderr window.
pub(crate) const STDERR_WINDOW: Duration = Duration::from_secs(10);
/// Bytes of stderr kept for error messages.
pub(crate) const TAIL_BYTES: usize = 2048;

/// Why a server's stdout was cut off, once it was.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tripped(Arc<Mutex<Option<String>>>);

impl Tripped {
    fn set(&self, why: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(why);
    }

    /// Why, if it was.
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Reads a server's stdout, failing once a line passes `max_line` bytes.
pub(crate) struct LineGuard<R> {
    inner: R,
    max_line: usize,
    /// Bytes since the last newline.
    run: usize,
    tripped: Tripped,
}

impl<R> LineGuard<R> {
    /// Guard `inner`; `tripped` learns why it failed.
    pub(crate) fn new(inner: R, max_line: usize, tripped: Tripped) -> Self {
        Self { inner, max_line, run: 0, tripped }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                for &byte in &buf.filled()[before..] {
                    this.run = if byte == b'\n' { 0 } else { this.run + 1 };
                    if this.run > this.max_line {
                        let why = format!(
                            "it wrote a message of more than {} bytes to its stdout without ending it",
                            this.max_line
                        );
                        this.tripped.set(why.clone());
                        return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why)));
                    }
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

/// The end of a server's stderr, for error messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tail(Arc<Mutex<Vec<u8>>>);

impl Tail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend_from_slice(bytes);
        if tail.len() > TAIL_BYTES {
            let cut = tail.len() - TAIL_BYTES;
            tail.drain(..cut);
        }
    }

    /// The last lines, as text (empty when it wrote nothing).
    pub(crate) fn text(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&tail).trim().to_string()
    }
}

/// Log `stderr` of the server `server` until it ends, bounded (see the module docs).
pub(crate) async fn log_stderr(server: String, mut stderr: impl AsyncRead + Unpin, tail: Tail) {
    let mut chunk = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut window = Instant::now();
    let (mut logged, mut dropped) = (0usize, 0usize);
    let mut emit = |line: &[u8], cut: bool| {
        if window.elapsed() >= STDERR_WINDOW {
            if dropped > 0 {
                tracing::warn!(server, dropped, "server stderr: lines not logged (too many)");
            }
            (window, logged, dropped) = (Instant::now(), 0, 0);
        }
        if logged < STDERR_LINES {
            logged += 1;
            let text = String::from_utf8_lossy(line);
            tracing::info!(server, "stderr: {text}{}", if cut { " [cut]" } else { "" });
        } else {
            dropped += 1;
        }
    };
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tail.push(&chunk[..n]);
        for &byte in &chunk[..n] {
            if byte == b'\n' {
                emit(&line, cut);
                line.clear();
                cut = false;
            } else if line.len() < STDERR_LINE_BYTES {
                line.push(byte);
            } else {
                cut = true;
            }
        }
    }
    if !line.is_empty() {
        emit(&line, cut);
    }
    if dropped > 0 {
        tracing::warn!(server, dropped, "server stderr: lines not logged (too many)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_past_the_bound_fails_the_stream() {
        let data = [b"{\"ok\":1}\n".as_slice(), &[b'x'; 100]].concat();
        let tripped = Tripped::default();
        let mut guard = LineGuard::new(&data[..], 50, tripped.clone());
        let mut out = Vec::new();
        let err = guard.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(tripped.get().unwrap().contains("more than 50 bytes"));
        let fine = b"a\nb\n".repeat(100);
        let mut guard = LineGuard::new(&fine[..], 2, Tripped::default());
        let mut out = Vec::new();
        guard.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, fine);
    }

    #[tokio::test]
    async fn stderr_keeps_a_bounded_tail() {
        let tail = Tail::default();
        let text: Vec<u8> = (0..10_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        log_stderr("s".into(), &text[..], tail.clone()).await;
        let kept = tail.text();
        assert!(kept.len() <= TAIL_BYTES && kept.ends_with("line 9999"), "{kept}");
    }
}
