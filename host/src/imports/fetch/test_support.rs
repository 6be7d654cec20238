//! Test doubles for the pinned fetch. Nothing here sends a packet outside loopback:
//! [`ScriptedResolver`] answers from a table (never real DNS), [`RecordingConnector`]
//! records every attempt and only ever opens sockets to 127.0.0.0/8 or ::1, and
//! [`TestServer`] is a tiny HTTP/1.1 responder on 127.0.0.1.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::{Connect, Connector, Lookup, Resolver};

/// Answers each name from a script: every lookup takes the next answer, the last one
/// repeats. Unknown names fail. Records every lookup.
#[derive(Default)]
pub(super) struct ScriptedResolver {
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    pub(super) lookups: Mutex<Vec<String>>,
}

impl ScriptedResolver {
    /// `name` answers `ips` on every lookup.
    pub(super) fn with(self, name: &str, ips: &[&str]) -> Self {
        self.script(name, &[ips])
    }

    /// `name` answers `answers[0]` first, then `answers[1]`, …, then the last forever.
    pub(super) fn script(self, name: &str, answers: &[&[&str]]) -> Self {
        let parsed =
            answers.iter().map(|ips| ips.iter().map(|ip| ip.parse().expect("test IP")).collect()).collect();
        self.answers.lock().expect("lock").insert(name.to_owned(), parsed);
        self
    }
}

impl Resolver for ScriptedResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        self.lookups.lock().expect("lock").push(host.to_owned());
        let mut answers = self.answers.lock().expect("lock");
        let answer = answers
            .get_mut(host)
            .and_then(|queue| if queue.len() > 1 { queue.pop_front() } else { queue.front().cloned() });
        Box::pin(async move {
            answer.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown name (test resolver)"))
        })
    }
}

/// Records every connection attempt. A mapped address (a public-looking one the test
/// pretends to serve) is connected to its loopback stand-in; a loopback address is
/// connected as is; anything else is refused without a socket and recorded as a
/// violation, which the tests assert never happens.
#[derive(Default)]
pub(super) struct RecordingConnector {
    map: HashMap<IpAddr, SocketAddr>,
    stalled: Vec<IpAddr>,
    pub(super) attempts: Mutex<Vec<SocketAddr>>,
    pub(super) violations: Mutex<Vec<SocketAddr>>,
}

impl RecordingConnector {
    /// Connections to `public` (any port) go to the loopback `to` instead.
    pub(super) fn map(mut self, public: &str, to: SocketAddr) -> Self {
        assert!(to.ip().is_loopback(), "a stand-in must be on loopback");
        self.map.insert(public.parse().expect("test IP"), to);
        self
    }

    /// Connections to `ip` never answer (a dead address that drops SYNs).
    pub(super) fn stall(mut self, ip: &str) -> Self {
        self.stalled.push(ip.parse().expect("test IP"));
        self
    }

    pub(super) fn attempts(&self) -> Vec<SocketAddr> {
        self.attempts.lock().expect("lock").clone()
    }

    /// Panics if anything tried to leave loopback.
    pub(super) fn assert_no_violation(&self) {
        let v = self.violations.lock().expect("lock");
        assert!(v.is_empty(), "connection attempts outside loopback: {v:?}");
    }
}

impl Connector for RecordingConnector {
    fn connect(&self, addr: SocketAddr) -> Connect<'_> {
        self.attempts.lock().expect("lock").push(addr);
        if self.stalled.contains(&addr.ip()) {
            return Box::pin(std::future::pending());
        }
        let target = match self.map.get(&addr.ip()) {
            Some(to) => Some(*to),
            None if addr.ip().is_loopback() => Some(addr),
            None => {
                self.violations.lock().expect("lock").push(addr);
                None
            }
        };
        Box::pin(async move {
            match target {
                Some(to) if to.ip().is_loopback() => TcpStream::connect(to).await,
                _ => Err(io::Error::new(io::ErrorKind::PermissionDenied, "test connector: not loopback")),
            }
        })
    }
}

/// A request as the test server saw it.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Seen {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// How the server answers.
pub(super) enum Reply {
    /// A complete response with a correct `Content-Length`.
    Full { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// Raw bytes, written as given (then the connection is closed).
    Raw(Vec<u8>),
    /// A 200 declaring `len` bytes, then one byte every `every`, at most `len`.
    Drip { len: usize, every: Duration },
}

impl Reply {
    pub(super) fn ok(body: impl Into<Vec<u8>>) -> Self {
        Reply::Full { status: 200, headers: Vec::new(), body: body.into() }
    }

    pub(super) fn status(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Reply::Full { status, headers: Vec::new(), body: body.into() }
    }

    pub(super) fn redirect(status: u16, location: &str) -> Self {
        Reply::Full { status, headers: vec![("location".into(), location.into())], body: Vec::new() }
    }
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A one-request-per-connection HTTP/1.1 server on 127.0.0.1.
pub(super) struct TestServer {
    pub(super) addr: SocketAddr,
    pub(super) seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    pub(super) async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (handler, log) = (handler.clone(), log.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &*handler, &log).await;
                });
            }
        });
        Self { addr, seen, task }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(super) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

async fn serve(mut stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Seen>>) -> io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() > 1 << 20 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, target) = (first.next().unwrap_or_default(), first.next().unwrap_or_default());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let seen = Seen { method: method.to_owned(), target: target.to_owned(), headers, body };
    log.lock().expect("lock").push(seen.clone());
    match handler(&seen) {
        Reply::Full { status, headers, body } => {
            let mut out = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("connection: close\r\n\r\n");
            stream.write_all(out.as_bytes()).await?;
            stream.write_all(&body).await?;
        }
        Reply::Raw(bytes) => stream.write_all(&bytes).await?,
        Reply::Drip { len, every } => {
            stream.write_all(format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\n\r\n").as_bytes()).await?;
            for _ in 0..len {
                tokio::time::sleep(every).await;
                stream.write_all(b"x").await?;
            }
        }
    }
    stream.shutdown().await
}
