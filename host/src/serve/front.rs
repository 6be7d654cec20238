//! The stdio server's transport for rmcp: [`FrontTransport`] reads the
//! client's lines itself, inside rmcp's `receive`, routes each through the
//! front ([`framing`]), and hands rmcp the messages it reads, already its own
//! type; what rmcp sends goes out through [`Outgoing`].
//!
//! Reading in `receive`, rather than in a task of its own that feeds rmcp
//! through a channel, saves a hand-off between tasks on every message. That
//! matters beyond the hand-off itself: tokio runs a task that another task
//! woke on the same worker only for a few hand-offs in a row (its LIFO slot),
//! then queues the next and wakes a second worker to take it. With a reader
//! task, a call's answer was written by the other worker, one thread wake-up
//! a call; now a sequential call stays on one thread from its line to its
//! answer, and calls in flight together still spread over the workers.
//!
//! rmcp polls `receive` in a `select!` and drops it when another event comes
//! first, so every step here can stop at an `await` and go on at the next
//! call: bytes read stay in the line buffer, a skip of an oversized line is
//! a flag, and the front's own answers are written by tasks of their own
//! (one at a time, in order, each awaited before more is read), so that a
//! dropped `receive` never leaves half a line on stdout.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::QuitReason;
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, BufReader};
use tokio::task::JoinHandle;

use super::framing::{self, MAX_LINE_BYTES, Route};
use super::mcp::ToolhostServer;
use super::outgoing::Outgoing;

/// Bytes read from the client at once.
const READ_BUFFER: usize = 64 << 10;

/// Serve `server` to the client on `input`/`output` through the front:
/// returns when the client closes `input` and rmcp has finished, with the
/// error that ended reading, if one did.
pub(crate) async fn serve<R, W>(input: R, output: W, server: ToolhostServer) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    let transport = FrontTransport::new(input, Arc::new(Outgoing::new(output)));
    let failure = transport.failure.clone();
    let running = server.serve(transport).await?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "MCP session ended");
    let failure = failure.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (reason, failure) {
        (QuitReason::Closed, Some(error)) => Err(error.into()),
        _ => Ok(()),
    }
}

/// rmcp's transport: the client's lines in, through the front; rmcp's
/// messages out to the client through [`Outgoing`].
pub(super) struct FrontTransport<R> {
    lines: BufReader<R>,
    /// The line being read (what a dropped `receive` had read stays here).
    line: Vec<u8>,
    /// The rest of an oversized line is still to be skipped.
    skipping: bool,
    /// Messages for rmcp, read and not yet handed over.
    ready: VecDeque<ClientJsonRpcMessage>,
    /// The front's own answers, not yet written.
    answers: VecDeque<Value>,
    /// The task writing the front's answer now.
    answering: Option<JoinHandle<()>>,
    /// Reading stopped: rmcp closed the transport, or input failed.
    closed: bool,
    /// Why reading failed, for [`serve`] to return.
    failure: Arc<Mutex<Option<io::Error>>>,
    outgoing: Arc<Outgoing>,
}

impl<R: AsyncRead + Unpin> FrontTransport<R> {
    /// rmcp reads the client's messages from `input` and writes to `outgoing`.
    pub(super) fn new(input: R, outgoing: Arc<Outgoing>) -> Self {
        Self {
            lines: BufReader::with_capacity(READ_BUFFER, input),
            line: Vec::new(),
            skipping: false,
            ready: VecDeque::new(),
            answers: VecDeque::new(),
            answering: None,
            closed: false,
            failure: Arc::default(),
            outgoing,
        }
    }

    /// The next message for rmcp; `None` when the client closed its input or
    /// reading failed. The front's answers go out first, in order.
    async fn next(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(writing) = &mut self.answering {
                // A write that fails is the client's loss (it stopped reading).
                let _ = writing.await;
                self.answering = None;
            }
            if let Some(answer) = self.answers.pop_front() {
                let outgoing = self.outgoing.clone();
                self.answering = Some(tokio::spawn(async move { framing::answer(&outgoing, &answer).await }));
                continue;
            }
            if let Some(message) = self.ready.pop_front() {
                return Some(message);
            }
            if self.closed {
                return None;
            }
            match self.read_line().await {
                Ok(true) => self.route_line(),
                Ok(false) => self.closed = true,
                Err(error) => {
                    tracing::debug!(%error, "reading the client's input failed");
                    *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
                    self.closed = true;
                }
            }
        }
    }

    /// Read up to the end of a line, or of the input, into `self.line`:
    /// `false` at the end of the input with nothing read.
    async fn read_line(&mut self) -> io::Result<bool> {
        if self.skipping {
            framing::skip_rest_of_line(&mut self.lines).await?;
            self.skipping = false;
        }
        let room = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len()) as u64;
        let read = (&mut self.lines).take(room).read_until(b'\n', &mut self.line).await?;
        Ok(read > 0 || !self.line.is_empty())
    }

    /// Route the line read: rmcp's messages to `ready`, answers to `answers`.
    fn route_line(&mut self) {
        if self.line.len() > MAX_LINE_BYTES && self.line.last() != Some(&b'\n') {
            self.skipping = true;
            self.answers.push_back(framing::too_long());
        } else {
            for route in framing::handle_line(&self.line, &self.outgoing) {
                match route {
                    Route::Client(value) => self.answers.push_back(value),
                    Route::Rmcp(message) => self.ready.push_back(*message),
                }
            }
        }
        self.line.clear();
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for FrontTransport<R> {
    type Error = io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move { outgoing.send(&item).await }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.next()
    }

    async fn close(&mut self) -> io::Result<()> {
        self.closed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::model::{ClientRequest, JsonRpcMessage};
    use tokio::io::{AsyncWriteExt, DuplexStream};

    use super::*;

    const CALL: &str =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{}}}"#;

    /// A transport reading `client`'s writes; what it answers goes to `answers`.
    fn transport() -> (FrontTransport<DuplexStream>, DuplexStream, BufReader<DuplexStream>) {
        let (client, input) = tokio::io::duplex(1 << 20);
        let (output, answers) = tokio::io::duplex(1 << 20);
        (FrontTransport::new(input, Arc::new(Outgoing::new(output))), client, BufReader::new(answers))
    }

    /// `next()`, dropped unfinished after a moment (as rmcp's `select!` does
    /// when another event comes first); `None` when it was dropped.
    async fn next_or_drop(t: &mut FrontTransport<DuplexStream>) -> Option<Option<ClientJsonRpcMessage>> {
        tokio::time::timeout(Duration::from_millis(50), t.next()).await.ok()
    }

    /// `next()`, which must finish within seconds.
    async fn next(t: &mut FrontTransport<DuplexStream>) -> Option<ClientJsonRpcMessage> {
        tokio::time::timeout(Duration::from_secs(10), t.next()).await.expect("next() finishes")
    }

    fn call_id(message: Option<ClientJsonRpcMessage>) -> String {
        match message {
            Some(JsonRpcMessage::Request(r)) if matches!(r.request, ClientRequest::CallToolRequest(_)) => {
                r.id.to_string()
            }
            other => panic!("expected a tools/call, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_line_read_across_dropped_receives_is_one_message() {
        let (mut t, mut client, _answers) = transport();
        let (head, tail) = CALL.split_at(40);
        client.write_all(head.as_bytes()).await.unwrap();
        assert!(next_or_drop(&mut t).await.is_none(), "half a line is no message");
        client.write_all(tail.as_bytes()).await.unwrap();
        assert!(next_or_drop(&mut t).await.is_none(), "nor is a line without its end");
        client.write_all(b"\n").await.unwrap();
        assert_eq!(call_id(next(&mut t).await), "7");
        drop(client);
        assert!(next(&mut t).await.is_none(), "the end of input ends the session");
    }

    #[tokio::test]
    async fn an_oversized_line_is_answered_once_and_skipped_across_dropped_receives() {
        let (mut t, mut client, mut answers) = transport();
        let writer = tokio::spawn(async move {
            let chunk = vec![b'a'; 1 << 20];
            for _ in 0..(MAX_LINE_BYTES >> 20) + 1 {
                client.write_all(&chunk).await.unwrap();
            }
            client
        });
        // Read past the limit, answer, and wait for the rest of the line.
        while next_or_drop(&mut t).await.is_some() {}
        let mut client = writer.await.unwrap();
        let mut line = String::new();
        answers.read_line(&mut line).await.unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{line}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("at most"), "{line}");
        assert!(next_or_drop(&mut t).await.is_none(), "still skipping the oversized line");
        client.write_all(b"aaaa\n").await.unwrap();
        client.write_all(format!("{CALL}\n").as_bytes()).await.unwrap();
        assert_eq!(call_id(next(&mut t).await), "7", "the next line is read whole");
        drop(client);
        assert!(next(&mut t).await.is_none());
        let mut rest = String::new();
        answers.get_mut().shutdown().await.unwrap();
        drop(t);
        answers.read_line(&mut rest).await.unwrap();
        assert_eq!(rest, "", "one answer for the oversized line, no more");
    }

    #[tokio::test]
    async fn the_fronts_answers_go_out_whole_and_in_order_before_the_next_message() {
        let (mut t, mut client, mut answers) = transport();
        client.write_all(b"not json\n{}\n").await.unwrap();
        client.write_all(format!("{CALL}\n").as_bytes()).await.unwrap();
        assert_eq!(call_id(next(&mut t).await), "7");
        let mut first = String::new();
        answers.read_line(&mut first).await.unwrap();
        let mut second = String::new();
        answers.read_line(&mut second).await.unwrap();
        let first: Value = serde_json::from_str(&first).unwrap();
        let second: Value = serde_json::from_str(&second).unwrap();
        assert_eq!(first["error"]["code"], -32700);
        assert_eq!(second["error"]["code"], -32600);
    }
}
