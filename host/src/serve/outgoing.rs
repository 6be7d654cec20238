//! The stdio server's side of rmcp: [`FrontTransport`], an rmcp [`Transport`]
//! fed with messages the front already read and checked (rmcp's own type: no
//! pipe between them, no second parse), and [`Outgoing`], which writes each
//! line to the client: rmcp's messages, serialized once, straight from their
//! type, and the front's own answers.
//!
//! An answer a batch waits for ([`Batches`]) is held until the batch is
//! complete, then the batch goes out as one array. Only such an answer is
//! turned into a JSON value; with no batch waiting nothing is looked at
//! beyond the message's id.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The one revision whose sessions take batches.
pub(super) const BATCH_REVISION: &str = "2025-03-26";

/// Batches waiting for their answers, and the revision rmcp negotiated.
#[derive(Default)]
pub(super) struct Batches {
    revision: Option<String>,
    /// Request id → its batch.
    waiting: HashMap<RequestId, u64>,
    batches: HashMap<u64, Batch>,
    next_batch: u64,
}

struct Batch {
    missing: usize,
    answers: Vec<Value>,
}

impl Batches {
    /// Whether the session negotiated the revision that takes batches.
    pub(super) fn accepts_batches(&self) -> bool {
        self.revision.as_deref() == Some(BATCH_REVISION)
    }

    /// Wait for the answers to `requests`, filing `answers` (the front's own,
    /// for members rmcp never sees) with them.
    pub(super) fn open(&mut self, requests: Vec<RequestId>, answers: Vec<Value>) {
        let batch_no = self.next_batch;
        self.next_batch += 1;
        self.batches.insert(batch_no, Batch { missing: requests.len(), answers });
        for id in requests {
            self.waiting.insert(id, batch_no);
        }
    }

    /// File `answer` under its batch when its id is one a batch waits for
    /// (`None` when it isn't); the finished batch when this was its last answer.
    pub(super) fn settle(&mut self, id: &RequestId, answer: Option<Value>) -> Option<Option<Vec<Value>>> {
        let batch_no = self.waiting.remove(id)?;
        let batch = self.batches.get_mut(&batch_no)?;
        batch.missing -= 1;
        batch.answers.extend(answer);
        if batch.missing > 0 {
            return Some(None);
        }
        Some(self.batches.remove(&batch_no).map(|b| b.answers))
    }
}

/// Where the client's lines go, one at a time, each flushed.
pub(super) struct Outgoing {
    writer: tokio::sync::Mutex<Pin<Box<dyn AsyncWrite + Send>>>,
    batches: Mutex<Batches>,
}

impl Outgoing {
    /// Lines to `writer`.
    pub(super) fn new(writer: impl AsyncWrite + Send + 'static) -> Self {
        Self { writer: tokio::sync::Mutex::new(Box::pin(writer)), batches: Mutex::default() }
    }

    /// The batches waiting (and the revision).
    pub(super) fn batches(&self) -> MutexGuard<'_, Batches> {
        self.batches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write `value` as one line.
    pub(super) async fn write_value(&self, value: &Value) -> io::Result<()> {
        self.write_line(serde_json::to_vec(value)?).await
    }

    /// Write `line` (JSON without a newline) and a newline, then flush.
    async fn write_line(&self, mut line: Vec<u8>) -> io::Result<()> {
        line.push(b'\n');
        let mut writer = self.writer.lock().await;
        writer.write_all(&line).await?;
        writer.flush().await
    }

    /// rmcp's `message` as the line to write now, or `None` when a batch keeps
    /// it; an `initialize` result tells the revision.
    fn line_for(&self, message: &ServerJsonRpcMessage) -> io::Result<Option<Vec<u8>>> {
        let id = match message {
            JsonRpcMessage::Response(response) => {
                if let ServerResult::InitializeResult(init) = &response.result {
                    self.batches().revision = Some(init.protocol_version.to_string());
                }
                Some(&response.id)
            }
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        if let Some(id) = id {
            let mut batches = self.batches();
            if batches.waiting.contains_key(id) {
                let answer = serde_json::to_value(message)?;
                return match batches.settle(id, Some(answer)) {
                    Some(Some(answers)) => Ok(Some(serde_json::to_vec(&Value::Array(answers))?)),
                    _ => Ok(None),
                };
            }
        }
        Ok(Some(serde_json::to_vec(message)?))
    }
}

/// rmcp's transport: messages from the front in, rmcp's messages out to the
/// client through [`Outgoing`].
pub(super) struct FrontTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: Arc<Outgoing>,
}

impl FrontTransport {
    /// rmcp reads what the front sends on `incoming` and writes to `outgoing`.
    pub(super) fn new(incoming: mpsc::Receiver<ClientJsonRpcMessage>, outgoing: Arc<Outgoing>) -> Self {
        Self { incoming, outgoing }
    }
}

impl Transport<RoleServer> for FrontTransport {
    type Error = io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            match outgoing.line_for(&item)? {
                Some(line) => outgoing.write_line(line).await,
                None => Ok(()),
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> io::Result<()> {
        self.incoming.close();
        Ok(())
    }
}
