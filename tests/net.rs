//! Test doubles for the host's network edges, shared by the fetch and wasi:http tests
//! and the benchmark: no lookup is real DNS and no socket is opened outside loopback;
//! the test HTTP server listens on 127.0.0.1.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolhost::{Connect, Connector, Host, HostBuilder, HostPattern, Lookup, NetworkSettings, Resolver};

/// Answers names from a script (each lookup takes the next answer; the last repeats).
#[derive(Default)]
pub struct ScriptedResolver(Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>);

impl ScriptedResolver {
    /// `name` answers `answers[0]`, then `answers[1]`, …, the last forever.
    pub fn script(self, name: &str, answers: &[&[&str]]) -> Self {
        let answers = answers.iter().map(|a| a.iter().map(|ip| ip.parse().expect("ip")).collect()).collect();
        self.0.lock().expect("lock").insert(name.into(), answers);
        self
    }

    /// `name` answers `ips` on every lookup.
    pub fn with(self, name: &str, ips: &[&str]) -> Self {
        self.script(name, &[ips])
    }
}

impl Resolver for ScriptedResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        let mut table = self.0.lock().expect("lock");
        let answer =
            table.get_mut(host).and_then(|q| if q.len() > 1 { q.pop_front() } else { q.front().cloned() });
        Box::pin(async move {
            answer.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not in the test table"))
        })
    }
}

/// Records every attempt; only ever opens sockets on loopback.
#[derive(Default)]
pub struct RecordingConnector {
    map: HashMap<IpAddr, SocketAddr>,
    attempts: Mutex<Vec<SocketAddr>>,
    violations: Mutex<Vec<SocketAddr>>,
}

impl RecordingConnector {
    /// Connections to `public` go to the loopback `to` instead.
    pub fn map(mut self, public: &str, to: SocketAddr) -> Self {
        assert!(to.ip().is_loopback());
        self.map.insert(public.parse().expect("ip"), to);
        self
    }

    /// Every address a connection was asked for, in order.
    pub fn attempts(&self) -> Vec<SocketAddr> {
        self.attempts.lock().expect("lock").clone()
    }

    /// Panics if anything tried to leave loopback.
    pub fn assert_no_violation(&self) {
        let v = self.violations.lock().expect("lock");
        assert!(v.is_empty(), "connection attempts outside loopback: {v:?}");
    }
}

impl Connector for RecordingConnector {
    fn connect(&self, addr: SocketAddr) -> Connect<'_> {
        self.attempts.lock().expect("lock").push(addr);
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

/// The injected resolver and connector, kept to be inspected.
pub struct Net {
    /// Answers the names.
    pub resolver: Arc<ScriptedResolver>,
    /// Opens (loopback) connections and records them.
    pub connector: Arc<RecordingConnector>,
}

impl Net {
    /// Names from `resolver`, connections through `connector`.
    pub fn new(resolver: ScriptedResolver, connector: RecordingConnector) -> Self {
        Self { resolver: Arc::new(resolver), connector: Arc::new(connector) }
    }

    /// No names, loopback connections only.
    pub fn loopback() -> Self {
        Self::new(ScriptedResolver::default(), RecordingConnector::default())
    }

    /// Network settings over this resolver and connector: plugins may reach `hosts`
    /// (patterns), private addresses too if `allow_private`; default limits.
    pub fn settings(&self, allow_private: bool, hosts: &[&str]) -> NetworkSettings {
        NetworkSettings {
            allow_private,
            plugin_hosts: hosts.iter().map(|h| HostPattern::parse(h).expect("pattern")).collect(),
            resolver: self.resolver.clone(),
            connector: self.connector.clone(),
            ..NetworkSettings::default()
        }
    }

    /// A host with the plugin `wasm` alone (no builtins) under `network`.
    pub async fn host(&self, wasm: impl AsRef<std::path::Path>, network: NetworkSettings) -> Host {
        Self::builder(wasm.as_ref(), network)
            .build()
            .await
            .unwrap_or_else(|e| panic!("a host with {} builds: {e}", wasm.as_ref().display()))
    }

    /// The builder [`Net::host`] builds.
    pub fn builder(wasm: &std::path::Path, network: NetworkSettings) -> HostBuilder {
        Host::builder()
            .without_builtins()
            .engine_settings(crate::test_engine_settings())
            .plugin_file(wasm)
            .network(network)
    }
}

/// One request as the loopback [`server`] saw it.
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target (`/path?query`).
    pub target: String,
    /// The body, when it declared a `content-length` (at most 1 MiB of it).
    pub body: Vec<u8>,
}

/// How the loopback [`server`] answers a request.
pub enum Reply {
    /// 200 with this body (`content-length`, `connection: close`).
    Ok(Vec<u8>),
    /// 302 to this location.
    Redirect(String),
    /// 200 declaring 1000 bytes, then one byte every 200 ms.
    Drip,
    /// 200 declaring this many bytes and sending them all, in 64 KiB writes.
    Stream(u64),
    /// 200 with a chunked body that never ends.
    Forever,
    /// 200 with a response head of about this many bytes (one long header).
    BigHead(usize),
    /// No answer: the request body is read until the client stops sending.
    Sink,
}

/// The most of a request head (and of a declared body) the server reads.
const MAX_READ: usize = 4 << 20;

/// A one-request-per-connection HTTP/1.1 server on 127.0.0.1 answering each request as
/// `route` says. Returns its address and the request lines it saw.
pub async fn server(route: fn(&Request) -> Reply) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let _ = serve(stream, route, &log).await;
            });
        }
    });
    (addr, seen)
}

async fn serve(
    mut stream: TcpStream,
    route: fn(&Request) -> Reply,
    log: &Mutex<Vec<String>>,
) -> io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() > MAX_READ {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(1 << 20);
    while buf.len() < end + length {
        match stream.read(&mut chunk).await? {
            0 => break,
            n => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let line = head.lines().next().unwrap_or_default().to_owned();
    log.lock().expect("lock").push(line.clone());
    let mut parts = line.split(' ');
    let request = Request {
        method: parts.next().unwrap_or_default().to_owned(),
        target: parts.next().unwrap_or_default().to_owned(),
        body: buf[end..].to_vec(),
    };
    let fill = vec![b'z'; 64 << 10];
    match route(&request) {
        Reply::Ok(body) => {
            let head =
                format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await?;
        }
        Reply::Redirect(to) => {
            let head = format!("HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n");
            stream.write_all(head.as_bytes()).await?;
        }
        Reply::Drip => {
            stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n").await?;
            for _ in 0..1000 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                stream.write_all(b"x").await?;
            }
        }
        Reply::Stream(n) => {
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n");
            stream.write_all(head.as_bytes()).await?;
            let mut left = n;
            while left > 0 {
                let take = left.min(fill.len() as u64);
                stream.write_all(&fill[..take as usize]).await?;
                left -= take;
            }
        }
        Reply::Forever => {
            stream.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").await?;
            let framed = [format!("{:x}\r\n", fill.len()).into_bytes(), fill, b"\r\n".to_vec()].concat();
            loop {
                stream.write_all(&framed).await?;
            }
        }
        Reply::BigHead(n) => {
            let head = format!("HTTP/1.1 200 OK\r\nx-big: {}\r\ncontent-length: 2\r\n\r\nok", "a".repeat(n));
            stream.write_all(head.as_bytes()).await?;
        }
        Reply::Sink => while stream.read(&mut chunk).await? > 0 {},
    }
    stream.shutdown().await
}
