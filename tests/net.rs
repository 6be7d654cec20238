//! Test doubles for the host's network edges, shared by the fetch and wasi:http tests:
//! no lookup is real DNS and no socket is opened outside loopback.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use tokio::net::TcpStream;
use toolhost::{Connect, Connector, Lookup, Resolver};

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
