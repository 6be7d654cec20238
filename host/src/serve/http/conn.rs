//! One accepted connection, from the socket to hyper:
//! - from a trusted proxy speaking the PROXY protocol, its header comes first
//!   (closed without it, `super::client`);
//! - beyond `connections_per_client` for its client it is answered 429 and
//!   closed (a trusted proxy's own connections count only in the total);
//! - beyond `max_connections` open at once it is answered 503 and closed;
//! - a request head must arrive within `idle_timeout` of the connection's
//!   start or of the previous response's end; a head begun and not finished
//!   then is answered 408, a connection that sent nothing is closed;
//! - a connection's places (its client's and the total's) are given back only
//!   when it is closed, its last answer written.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::client::{Client, read_proxy_header};
use super::front::Front;

/// How long a refusal may take to write before the connection is dropped.
const REFUSAL_PATIENCE: Duration = Duration::from_secs(1);

/// Serve one accepted connection from `peer`; `all` holds the places of all connections.
pub(crate) async fn serve(
    stream: TcpStream,
    peer: IpAddr,
    all: Arc<Semaphore>,
    front: Arc<Front>,
    shutdown: CancellationToken,
) {
    let idle = front.idle_timeout;
    let (source, prefix) = if front.proxies.expects_header(peer) {
        match read_proxy_header(&stream, idle).await {
            Ok((source, rest)) => (source.unwrap_or(peer), rest),
            Err(error) => {
                tracing::debug!(%error, %peer, "a trusted proxy's connection closed");
                return;
            }
        }
    } else {
        (peer, Vec::new())
    };
    let slot = if front.proxies.is_proxy(source) {
        None
    } else {
        match front.connections.take(Client::of(source)) {
            Some(slot) => Some(slot),
            None => {
                refuse(stream, "429 Too Many Requests", "this client has too many connections open").await;
                return;
            }
        }
    };
    // Counted in the total only once its client may have it.
    let Ok(_permit) = all.try_acquire_owned() else {
        refuse(stream, "503 Service Unavailable", "the server has all the connections it takes").await;
        return;
    };
    let stream = Arc::new(stream);
    let io = Watched { stream: stream.clone(), prefix, offset: 0, unanswered: Arc::default() };
    let unanswered = io.unanswered.clone();
    let timed_out = serve_http(io, source, front, idle, shutdown).await;
    if timed_out && unanswered.load(Ordering::Relaxed) {
        // hyper has let go of the socket: its connection ended.
        if let Ok(stream) = Arc::try_unwrap(stream) {
            let why = format!("no whole request head within {} ms", idle.as_millis());
            refuse(stream, "408 Request Timeout", &why).await;
        }
    }
    // The client's place is given back with the total's, once the socket is
    // closed: given back before a 408 is written, a client reconnecting at once
    // held more than its share of the total while its refusals were written.
    drop(slot);
}

/// hyper's HTTP/1.1 on `io` until it closes or the server stops; whether it
/// ended because a head did not arrive in time.
async fn serve_http(
    io: Watched,
    source: IpAddr,
    front: Arc<Front>,
    idle: Duration,
    shutdown: CancellationToken,
) -> bool {
    let service = hyper::service::service_fn(move |request| {
        let front = front.clone();
        async move { Ok::<_, std::convert::Infallible>(front.handle(request, source).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(idle).keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => match served {
            Err(error) if error.is_timeout() => true,
            Err(error) => {
                tracing::debug!(%error, %source, "HTTP connection ended");
                false
            }
            Ok(()) => false,
        },
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), connection).await;
            false
        }
    }
}

/// Answer `status` with `why` and close: written at once, then what the
/// client sent is drained a moment so the close does not reset the answer away.
async fn refuse(mut stream: TcpStream, status: &str, why: &str) {
    let text = format!("{}: {why}", &status[4..]);
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         retry-after: 1\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        loop {
            stream.readable().await?;
            match stream.try_read(&mut sink) {
                Ok(0) => return Ok::<_, std::io::Error>(()),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    };
    let _ = tokio::time::timeout(REFUSAL_PATIENCE, write).await;
}

/// The socket as hyper reads and writes it, shared so a 408 can still be
/// written after hyper gives up, with the bytes read before hyper ran (after a
/// PROXY header) served first, and whether the client has sent anything since
/// the last answer.
struct Watched {
    stream: Arc<TcpStream>,
    prefix: Vec<u8>,
    offset: usize,
    unanswered: Arc<AtomicBool>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.offset < self.prefix.len() {
            let n = (self.prefix.len() - self.offset).min(buf.remaining());
            buf.put_slice(&self.prefix[self.offset..self.offset + n]);
            self.offset += n;
            self.unanswered.store(true, Ordering::Relaxed);
            return Poll::Ready(Ok(()));
        }
        loop {
            ready!(self.stream.poll_read_ready(cx))?;
            match self.stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    if n > 0 {
                        self.unanswered.store(true, Ordering::Relaxed);
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write(buf) {
                Ok(n) => {
                    self.unanswered.store(false, Ordering::Relaxed);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The socket closes when its last holder lets go of it.
        Poll::Ready(Ok(()))
    }
}
