//! The newline-delimited JSON front of the stdio server: it reads the client's
//! lines, answers what rmcp would answer wrongly or not at all ([`jsonrpc`]),
//! splits batches, and hands every other message to rmcp already parsed, as
//! rmcp's own type, through [`FrontTransport`]; what rmcp sends goes out
//! through [`Outgoing`].
//!
//! Batches (JSON-RPC arrays) are a 2025-03-26 feature: on a session that
//! negotiated that revision each member is handled as if it came alone, and the
//! answers to its requests go back as one array once all are in (a member the
//! client cancels is left out; a batch of notifications gets no answer). On
//! any other revision a batch is one `-32600` error. An empty array is always
//! `-32600`.
//!
//! Lines longer than [`MAX_LINE_BYTES`] are answered `-32600` and skipped.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::QuitReason;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, BufReader};
use tokio::sync::mpsc;

use super::jsonrpc::{self, INVALID_REQUEST, Incoming};
use super::mcp::ToolhostServer;
use super::outgoing::{Batches, FrontTransport, Outgoing};

/// The longest line the server reads (a message with a large `write_file`).
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;
/// Messages read ahead of rmcp before the reader waits.
const QUEUE: usize = 256;
/// Bytes read from the client at once.
const READ_BUFFER: usize = 64 << 10;

/// Serve `server` to the client on `input`/`output` through the front:
/// returns when the client closes `input` and rmcp has finished.
pub(crate) async fn serve<R, W>(input: R, output: W, server: ToolhostServer) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    let outgoing = Arc::new(Outgoing::new(output));
    let (to_rmcp, incoming) = mpsc::channel(QUEUE);
    // The reader runs on a worker of its own task (not on the caller's, which
    // may be the thread that blocks on the runtime).
    let reader = tokio::spawn(read_lines(input, to_rmcp, outgoing.clone()));
    let running = server.serve(FrontTransport::new(incoming, outgoing)).await?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "MCP session ended");
    if !matches!(reason, QuitReason::Closed) {
        // rmcp stopped on its own: nothing reads what the client sends any more.
        reader.abort();
        return Ok(());
    }
    reader.await??;
    Ok(())
}

/// Read the client's lines until it closes `input`: answer what the front
/// answers, send the rest to rmcp.
async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
    outgoing: Arc<Outgoing>,
) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(READ_BUFFER, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            skip_rest_of_line(&mut reader).await?;
            let why = format!("Invalid Request: a message is at most {MAX_LINE_BYTES} bytes");
            answer(&outgoing, &jsonrpc::error_response(Value::Null, INVALID_REQUEST, why)).await;
            continue;
        }
        for route in handle_line(&line, &outgoing) {
            match route {
                Route::Client(value) => answer(&outgoing, &value).await,
                Route::Rmcp(message) => {
                    if to_rmcp.send(*message).await.is_err() {
                        // rmcp has stopped.
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Send the front's own answer (a client that stopped reading misses it).
async fn answer(outgoing: &Outgoing, value: &Value) {
    if let Err(error) = outgoing.write_value(value).await {
        tracing::debug!(%error, "could not answer the client");
    }
}

/// Where one message goes.
enum Route {
    Client(Value),
    Rmcp(Box<ClientJsonRpcMessage>),
}

/// Route one line from the client (the batches are locked only for a batch
/// or a cancellation).
fn handle_line(line: &[u8], outgoing: &Outgoing) -> Vec<Route> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Vec::new();
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => return vec![Route::Client(jsonrpc::parse_error(&e))],
    };
    let Value::Array(members) = value else {
        return route_one(value, outgoing);
    };
    let invalid = |why: &str| vec![Route::Client(jsonrpc::error_response(Value::Null, INVALID_REQUEST, why))];
    if members.is_empty() {
        return invalid("Invalid Request: an empty batch");
    }
    let mut batches = outgoing.batches();
    if !batches.accepts_batches() {
        return invalid("Invalid Request: batches are accepted only on a 2025-03-26 session");
    }
    route_batch(members, &mut batches)
}

/// Route a batch's members; its requests' answers are waited for together.
fn route_batch(members: Vec<Value>, batches: &mut Batches) -> Vec<Route> {
    let mut answers = Vec::new();
    let mut routes = Vec::new();
    let mut waiting: Vec<RequestId> = Vec::new();
    for member in members {
        match jsonrpc::classify(member) {
            Incoming::Forward(message) => {
                if let JsonRpcMessage::Request(request) = message.as_ref() {
                    waiting.push(request.id.clone());
                }
                routes.push(Route::Rmcp(message));
            }
            Incoming::Answer(answer) => answers.push(answer),
            Incoming::Drop(why) => tracing::debug!(%why, "dropped a batch member"),
        }
    }
    if waiting.is_empty() {
        if !answers.is_empty() {
            routes.insert(0, Route::Client(Value::Array(answers)));
        }
        return routes;
    }
    batches.open(waiting, answers);
    routes
}

/// Route one message that is not a batch; a cancelled batch member stops
/// being waited for (the cancel still reaches rmcp, which stops the call).
fn route_one(value: Value, outgoing: &Outgoing) -> Vec<Route> {
    match jsonrpc::classify(value) {
        Incoming::Forward(message) => {
            let mut routes = Vec::new();
            if let JsonRpcMessage::Notification(note) = message.as_ref()
                && let ClientNotification::CancelledNotification(cancel) = &note.notification
                && let Some(id) = &cancel.params.request_id
                && let Some(Some(answers)) = outgoing.batches().settle(id, None)
                && !answers.is_empty()
            {
                routes.push(Route::Client(Value::Array(answers)));
            }
            routes.push(Route::Rmcp(message));
            routes
        }
        Incoming::Answer(answer) => vec![Route::Client(answer)],
        Incoming::Drop(why) => {
            tracing::debug!(%why, "dropped an incoming message");
            Vec::new()
        }
    }
}

/// Discard input up to and including the next newline (the tail of an
/// oversized line).
async fn skip_rest_of_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> std::io::Result<()> {
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|b| *b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let all = buf.len();
                reader.consume(all);
            }
        }
    }
}
