//! The newline-delimited JSON front of the stdio server: it reads the client's
//! lines, answers what rmcp would answer wrongly or not at all ([`jsonrpc`]),
//! splits batches, and hands every other message to rmcp over an in-process
//! pipe; what rmcp writes comes back through here to the client.
//!
//! Batches (JSON-RPC arrays) are a 2025-03-26 feature: on a session that
//! negotiated that revision each member is handled as if it came alone, and the
//! answers to its requests go back as one array once all are in (a member the
//! client cancels is left out; a batch of notifications gets no answer). On
//! any other revision a batch is one `-32600` error. An empty array is always
//! `-32600`.
//!
//! Lines longer than [`MAX_LINE_BYTES`] are answered `-32600` and skipped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::jsonrpc::{self, INVALID_REQUEST, Incoming};

/// The longest line the server reads (a message with a large `write_file`).
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;
/// Lines queued for the client before the readers wait.
const QUEUE: usize = 256;
/// Bytes buffered in each direction of the pipe to rmcp.
const PIPE_BYTES: usize = 1 << 20;
/// The one revision whose sessions take batches.
const BATCH_REVISION: &str = "2025-03-26";

/// Batches waiting for their answers, and the revision rmcp negotiated.
#[derive(Default)]
struct State {
    revision: Option<String>,
    /// Request id (as JSON text) → its batch.
    waiting: HashMap<String, u64>,
    batches: HashMap<u64, Batch>,
    next_batch: u64,
}

struct Batch {
    missing: usize,
    answers: Vec<Value>,
}

impl State {
    /// File `answer` under its batch when its id is one a batch waits for; the
    /// finished batch when this was its last answer.
    fn settle(&mut self, id: &Value, answer: Option<Value>) -> Option<Option<Vec<Value>>> {
        let batch_no = self.waiting.remove(&id.to_string())?;
        let batch = self.batches.get_mut(&batch_no)?;
        batch.missing -= 1;
        batch.answers.extend(answer);
        if batch.missing > 0 {
            return Some(None);
        }
        Some(self.batches.remove(&batch_no).map(|b| b.answers))
    }
}

/// Serve rmcp's `server` to the client on `input`/`output` through the front:
/// returns when the client closes `input` and rmcp has finished.
pub(crate) async fn serve<R, W, F, Fut>(input: R, output: W, server: F) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    F: FnOnce(
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let (front, back) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(front);
    let (back_read, back_write) = tokio::io::split(back);
    let state = Arc::new(Mutex::new(State::default()));
    let (lines, queue) = mpsc::channel::<String>(QUEUE);
    let writer = tokio::spawn(write_lines(queue, output));
    let outgoing = tokio::spawn(relay_outgoing(from_rmcp, lines.clone(), state.clone()));

    let incoming = async move {
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut reader).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line).await?;
            if read == 0 {
                break;
            }
            if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
                skip_rest_of_line(&mut reader).await?;
                let why = format!("Invalid Request: a message is at most {MAX_LINE_BYTES} bytes");
                let _ =
                    lines.send(jsonrpc::error_response(Value::Null, INVALID_REQUEST, why).to_string()).await;
                continue;
            }
            for message in handle_line(&line, &state) {
                match message {
                    Route::Client(text) => {
                        let _ = lines.send(text).await;
                    }
                    Route::Rmcp(text) => {
                        to_rmcp.write_all(text.as_bytes()).await?;
                        to_rmcp.write_all(b"\n").await?;
                    }
                }
            }
            to_rmcp.flush().await?;
        }
        // The client is gone: close rmcp's input so it ends.
        to_rmcp.shutdown().await?;
        anyhow::Ok(())
    };
    let (served, read) = tokio::join!(server(back_read, back_write), incoming);
    served?;
    read?;
    outgoing.await??;
    writer.await??;
    Ok(())
}

/// Where one message goes.
enum Route {
    Client(String),
    Rmcp(String),
}

/// Route one line from the client.
fn handle_line(line: &[u8], state: &Mutex<State>) -> Vec<Route> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Vec::new();
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => return vec![Route::Client(jsonrpc::parse_error(&e).to_string())],
    };
    let Value::Array(members) = value else {
        return route_one(value, state);
    };
    let invalid = |why: &str| {
        vec![Route::Client(jsonrpc::error_response(Value::Null, INVALID_REQUEST, why).to_string())]
    };
    if members.is_empty() {
        return invalid("Invalid Request: an empty batch");
    }
    let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
    if guard.revision.as_deref() != Some(BATCH_REVISION) {
        return invalid("Invalid Request: batches are accepted only on a 2025-03-26 session");
    }
    let mut answers = Vec::new();
    let mut routes = Vec::new();
    let mut waiting = Vec::new();
    for member in members {
        match jsonrpc::classify(&member) {
            Incoming::Forward => {
                if member.get("method").is_some()
                    && let Some(id) = member.get("id")
                {
                    waiting.push(id.to_string());
                }
                routes.push(Route::Rmcp(member.to_string()));
            }
            Incoming::Answer(answer) => answers.push(answer),
            Incoming::Drop(why) => tracing::debug!(%why, "dropped a batch member"),
        }
    }
    if waiting.is_empty() {
        if !answers.is_empty() {
            routes.insert(0, Route::Client(Value::Array(answers).to_string()));
        }
        return routes;
    }
    let batch_no = guard.next_batch;
    guard.next_batch += 1;
    guard.batches.insert(batch_no, Batch { missing: waiting.len(), answers });
    for id in waiting {
        guard.waiting.insert(id, batch_no);
    }
    routes
}

/// Route one message that is not a batch; a cancelled batch member stops
/// being waited for (the cancel still reaches rmcp, which stops the call).
fn route_one(value: Value, state: &Mutex<State>) -> Vec<Route> {
    match jsonrpc::classify(&value) {
        Incoming::Forward => {
            let mut routes = Vec::new();
            if value["method"] == "notifications/cancelled" {
                let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(Some(answers)) = guard.settle(&value["params"]["requestId"], None)
                    && !answers.is_empty()
                {
                    routes.push(Route::Client(Value::Array(answers).to_string()));
                }
            }
            routes.push(Route::Rmcp(value.to_string()));
            routes
        }
        Incoming::Answer(answer) => vec![Route::Client(answer.to_string())],
        Incoming::Drop(why) => {
            tracing::debug!(%why, "dropped an incoming message");
            Vec::new()
        }
    }
}

/// Read rmcp's lines and pass them to the client: an answer a batch waits for
/// joins it (the batch goes out when complete); an `initialize` result tells
/// the revision.
async fn relay_outgoing(
    from_rmcp: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    lines: mpsc::Sender<String>,
    state: Arc<Mutex<State>>,
) -> anyhow::Result<()> {
    let mut reader = BufReader::new(from_rmcp).lines();
    while let Some(line) = reader.next_line().await? {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let _ = lines.send(line).await;
            continue;
        };
        let out = {
            let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(version) = message["result"]["protocolVersion"].as_str()
                && message["result"].get("serverInfo").is_some()
            {
                guard.revision = Some(version.to_string());
            }
            match message.get("method").is_none().then(|| message.get("id")).flatten() {
                Some(id) => match guard.settle(&id.clone(), Some(message)) {
                    None => Some(line),
                    Some(None) => None,
                    Some(Some(answers)) => Some(Value::Array(answers).to_string()),
                },
                None => Some(line),
            }
        };
        if let Some(out) = out {
            let _ = lines.send(out).await;
        }
    }
    Ok(())
}

/// Write queued lines to the client, each followed by a newline and flushed.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut queue: mpsc::Receiver<String>,
    mut output: W,
) -> anyhow::Result<()> {
    while let Some(line) = queue.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
    }
    Ok(())
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
