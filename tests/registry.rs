//! A real OCI registry for the tests: Debian's `docker-registry` (Distribution 2.8),
//! started on 127.0.0.1 on a free port with a config file written here, its storage in
//! a temporary directory, stopped when dropped. And a tiny HTTP server of our own for
//! what a real registry never does (500s, a connection closed mid-layer, redirects).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The registry binary `.ci/run` installs.
pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// A running `docker-registry` on loopback.
pub struct Registry {
    child: Child,
    /// 127.0.0.1:PORT
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Registry {
    /// A registry without auth.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// A registry that asks for basic auth (htpasswd, bcrypt) as `user`/`password`.
    pub fn start_with_basic_auth(user: &str, password: &str) -> Self {
        Self::start_with(Some((user, password)))
    }

    fn start_with(auth: Option<(&str, &str)>) -> Self {
        assert!(
            Path::new(REGISTRY_BIN).exists(),
            "{REGISTRY_BIN} is missing: install Debian's docker-registry (.ci/run does)"
        );
        let dir = tempfile::tempdir().expect("registry dir");
        let auth_section = match auth {
            None => String::new(),
            Some((user, password)) => {
                let out = Command::new("htpasswd")
                    .args(["-Bbn", user, password])
                    .output()
                    .expect("htpasswd (apache2-utils) is installed");
                assert!(out.status.success(), "htpasswd: {}", String::from_utf8_lossy(&out.stderr));
                let file = dir.path().join("htpasswd");
                std::fs::write(&file, &out.stdout).unwrap();
                format!("auth:\n  htpasswd:\n    realm: toolhost-test\n    path: {}\n", file.display())
            }
        };
        // A free port can be taken between the probe and the registry's bind: retry.
        for _ in 0..5 {
            let port = free_port();
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let config = dir.path().join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
                     storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                     http:\n  addr: {addr}\n  secret: toolhost-test-secret\n{auth_section}",
                    dir.path().join("data").display()
                ),
            )
            .unwrap();
            let mut child = Command::new(REGISTRY_BIN)
                .args(["serve"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start docker-registry");
            if wait_ready(addr, &mut child) {
                return Self { child, addr, dir };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("docker-registry did not start");
    }

    /// `HOST:PORT`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `oci://HOST:PORT/REPO`.
    pub fn reference(&self, repo_and_tag: &str) -> String {
        format!("oci://{}/{repo_and_tag}", self.addr)
    }

    /// The file the registry keeps the blob `digest` (`sha256:…`) in.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir.path().join("data/docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Wait until the registry answers `GET /v2/` (200, or 401 with auth).
fn wait_ready(addr: SocketAddr, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.write_all(
                format!("GET /v2/ HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
            );
            let mut head = [0u8; 12];
            if stream.read_exact(&mut head).is_ok()
                && (head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.1 401"))
            {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// One scripted answer of the [`FaultServer`]: for a request path, the raw bytes to
/// write (then the connection is closed).
pub type Script = Arc<dyn Fn(&str) -> Vec<u8> + Send + Sync>;

/// A [`Script`] that also sees the request's whole head (request line and headers).
pub type HeadScript = Arc<dyn Fn(&str, &str) -> Vec<u8> + Send + Sync>;

/// A tiny HTTP/1.1 server on loopback answering each request with what its script
/// says, then closing the connection: for faults a real registry does not make.
pub struct FaultServer {
    /// 127.0.0.1:PORT
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Every request line seen.
    pub seen: Arc<std::sync::Mutex<Vec<String>>>,
    /// Every request head seen (request line and headers).
    pub heads: Arc<std::sync::Mutex<Vec<String>>>,
}

impl FaultServer {
    /// Serve `script` until dropped.
    pub fn start(script: Script) -> Self {
        Self::start_with_heads(Arc::new(move |path, _| script(path)))
    }

    /// Serve `script`, which sees each request's head too, until dropped.
    pub fn start_with_heads(script: HeadScript) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (flag, log, head_log) = (stop.clone(), seen.clone(), heads.clone());
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                        let mut buf = Vec::new();
                        let mut byte = [0u8; 1];
                        while !buf.ends_with(b"\r\n\r\n") && buf.len() < 65536 {
                            match stream.read(&mut byte) {
                                Ok(1) => buf.push(byte[0]),
                                _ => break,
                            }
                        }
                        let head = String::from_utf8_lossy(&buf).into_owned();
                        let line = head.lines().next().unwrap_or("").to_string();
                        log.lock().unwrap().push(line.clone());
                        head_log.lock().unwrap().push(head.clone());
                        let path = line.split(' ').nth(1).unwrap_or("/").to_string();
                        let _ = stream.write_all(&script(&path, &head));
                        let _ = stream.flush();
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self { addr, stop, seen, heads }
    }

    /// `oci://127.0.0.1:PORT/REPO:TAG`.
    pub fn reference(&self, repo_and_tag: &str) -> String {
        format!("oci://{}/{repo_and_tag}", self.addr)
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// An HTTP response with `status`, extra header lines and `body`.
pub fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}
