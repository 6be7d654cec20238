//! The stdio server's stdin and stdout. When they are pipes or sockets (as an
//! MCP client starts a server), they are read and written without blocking,
//! through the runtime's event loop (`tokio::net::unix::pipe`, `UnixStream`):
//! a line from the client wakes the task that reads it, and an answer is
//! written by the task that has it, with no thread in between. Anything else
//! (a file, a terminal, `/dev/null`) goes through tokio's stdin and stdout,
//! which read and write on its blocking threads.
//!
//! Non-blocking mode is a flag of the open file the client handed over, which
//! others may share: it is put back as it was when serving ends.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;

use rustix::fs::{FileType, OFlags};
use tokio::io::{AsyncRead, AsyncWrite};

use super::mcp::ToolhostServer;

/// Serve `server`'s tools over stdin/stdout until the client closes stdin,
/// through the JSON-RPC front (`serve::framing`). Nothing but the protocol
/// is written to stdout.
pub async fn serve_stdio(server: ToolhostServer) -> anyhow::Result<()> {
    let (input, _input_flags) = stdin();
    let (output, _output_flags) = stdout();
    super::framing::serve(input, output, server).await
}

/// stdin: a pipe or socket read through the event loop, else tokio's.
fn stdin() -> (Pin<Box<dyn AsyncRead + Send>>, Option<Flags>) {
    match event_driven(io::stdin().as_fd()) {
        Ok(Some((Stream::Pipe(fd), flags))) => match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
            Ok(pipe) => return (Box::pin(pipe), Some(flags)),
            Err(error) => tracing::debug!(%error, "stdin is read on tokio's blocking threads"),
        },
        Ok(Some((Stream::Socket(socket), flags))) => return (Box::pin(socket), Some(flags)),
        Ok(None) => {}
        Err(error) => tracing::debug!(%error, "stdin is read on tokio's blocking threads"),
    }
    (Box::pin(tokio::io::stdin()), None)
}

/// stdout: a pipe or socket written through the event loop, else tokio's.
fn stdout() -> (Pin<Box<dyn AsyncWrite + Send>>, Option<Flags>) {
    match event_driven(io::stdout().as_fd()) {
        Ok(Some((Stream::Pipe(fd), flags))) => match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
            Ok(pipe) => return (Box::pin(pipe), Some(flags)),
            Err(error) => tracing::debug!(%error, "stdout is written on tokio's blocking threads"),
        },
        Ok(Some((Stream::Socket(socket), flags))) => return (Box::pin(socket), Some(flags)),
        Ok(None) => {}
        Err(error) => tracing::debug!(%error, "stdout is written on tokio's blocking threads"),
    }
    (Box::pin(tokio::io::stdout()), None)
}

/// A standard stream the event loop can wait on.
enum Stream {
    /// A pipe's end (tokio sets it non-blocking).
    Pipe(OwnedFd),
    /// A socket, already non-blocking.
    Socket(tokio::net::UnixStream),
}

/// `fd` (a copy of it) when it is a pipe or a socket, with its flags to put
/// back; `None` for anything else.
fn event_driven(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<Option<(Stream, Flags)>> {
    let kind = FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode);
    if kind != FileType::Fifo && kind != FileType::Socket {
        return Ok(None);
    }
    let flags = Flags::of(fd)?;
    let fd = fd.try_clone_to_owned()?;
    if kind == FileType::Fifo {
        return Ok(Some((Stream::Pipe(fd), flags)));
    }
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    Ok(Some((Stream::Socket(tokio::net::UnixStream::from_std(socket)?), flags)))
}

/// An open file's status flags as they were, put back when dropped.
struct Flags {
    fd: OwnedFd,
    flags: OFlags,
}

impl Flags {
    fn of(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<Self> {
        Ok(Self { flags: rustix::fs::fcntl_getfl(fd)?, fd: fd.try_clone_to_owned()? })
    }
}

impl Drop for Flags {
    fn drop(&mut self) {
        if let Err(error) = rustix::fs::fcntl_setfl(&self.fd, self.flags) {
            tracing::debug!(%error, "could not put a standard stream's flags back");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_sockets_are_event_driven_and_get_their_flags_back() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        let _entered = runtime.enter();
        let (read, _write) = std::io::pipe().unwrap();
        let before = rustix::fs::fcntl_getfl(&read).unwrap();
        assert!(!before.contains(OFlags::NONBLOCK));
        let (stream, flags) = event_driven(read.as_fd()).unwrap().expect("a pipe is event-driven");
        let Stream::Pipe(fd) = stream else { panic!("a pipe is a pipe") };
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(fd).unwrap();
        assert!(rustix::fs::fcntl_getfl(&read).unwrap().contains(OFlags::NONBLOCK));
        drop((pipe, flags));
        assert_eq!(rustix::fs::fcntl_getfl(&read).unwrap(), before);

        let (socket, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let (stream, flags) = event_driven(socket.as_fd()).unwrap().expect("a socket is event-driven");
        assert!(matches!(stream, Stream::Socket(_)));
        assert!(rustix::fs::fcntl_getfl(&socket).unwrap().contains(OFlags::NONBLOCK));
        drop((stream, flags));
        assert!(!rustix::fs::fcntl_getfl(&socket).unwrap().contains(OFlags::NONBLOCK));

        let file = tempfile::tempfile().unwrap();
        assert!(event_driven(file.as_fd()).unwrap().is_none(), "a file is read on blocking threads");
    }
}
