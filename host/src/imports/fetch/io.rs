//! A safe adapter from tokio's `AsyncRead`/`AsyncWrite` to hyper's I/O traits.
//!
//! hyper-util has one (`TokioIo`), but it writes into hyper's uninitialised buffer with
//! `unsafe`, which this workspace denies; this one reads into its own buffer and copies
//! (one `memcpy` per read, small next to the syscall).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read from the stream per poll at most.
const READ_CHUNK: usize = 64 << 10;

/// A tokio stream seen as a hyper connection.
pub(super) struct HyperIo<S> {
    stream: S,
    scratch: Box<[u8]>,
}

impl<S> HyperIo<S> {
    pub(super) fn new(stream: S) -> Self {
        Self { stream, scratch: vec![0; READ_CHUNK].into_boxed_slice() }
    }
}

impl<S: AsyncRead + Unpin> hyper::rt::Read for HyperIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let want = buf.remaining().min(this.scratch.len());
        let mut read = ReadBuf::new(&mut this.scratch[..want]);
        ready!(Pin::new(&mut this.stream).poll_read(cx, &mut read))?;
        buf.put_slice(read.filled());
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }
}
