//! Connecting to one of a hop's vetted addresses, happy-eyeballs style (RFC 8305, simplified):
//! the addresses are interleaved by family (IPv6 first), the next attempt starts when the
//! previous one has not answered within [`ATTEMPT_DELAY`] or has failed, each attempt has its
//! own timeout, and the first connection made wins (the others are dropped, closing their
//! sockets). A dead first address therefore costs [`ATTEMPT_DELAY`], not the whole budget.
//!
//! Only the addresses handed in are ever connected: the caller vetted every one of them.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::net::TcpStream;

use super::net::Connector;

/// How long an attempt runs alone before the next address is tried beside it.
pub(super) const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// Addresses of one name tried at most.
pub(super) const MAX_ATTEMPTS: usize = 8;

/// Why no address could be connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectFailure {
    /// Every attempt timed out (none was refused or failed otherwise).
    pub(crate) timed_out: bool,
    /// One `address: why` per attempt.
    pub(crate) attempts: Vec<String>,
}

/// `addrs` reordered: IPv6 and IPv4 alternating, starting with the family of the first.
fn interleave(addrs: &[IpAddr]) -> Vec<IpAddr> {
    let first_v6 = addrs.first().is_some_and(IpAddr::is_ipv6);
    let (mut a, mut b): (Vec<IpAddr>, Vec<IpAddr>) = addrs.iter().partition(|ip| ip.is_ipv6() == first_v6);
    a.reverse();
    b.reverse();
    let mut out = Vec::with_capacity(addrs.len());
    while !a.is_empty() || !b.is_empty() {
        out.extend(a.pop());
        out.extend(b.pop());
    }
    out.truncate(MAX_ATTEMPTS);
    out
}

/// Connect to one of `addrs` on `port`; each attempt is given `per_attempt` at most.
pub(super) async fn connect(
    connector: &dyn Connector,
    addrs: &[IpAddr],
    port: u16,
    per_attempt: Duration,
) -> Result<TcpStream, ConnectFailure> {
    let mut queue = interleave(addrs).into_iter().map(|ip| SocketAddr::new(ip, port));
    let mut running = FuturesUnordered::new();
    let mut failure = ConnectFailure { timed_out: true, attempts: Vec::new() };
    let attempt = |addr: SocketAddr| async move {
        let outcome = match tokio::time::timeout(per_attempt, connector.connect(addr)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err((false, e.to_string())),
            Err(_) => Err((true, format!("no answer within {} ms", per_attempt.as_millis()))),
        };
        (addr, outcome)
    };
    if let Some(addr) = queue.next() {
        running.push(attempt(addr));
    }
    while !running.is_empty() {
        let next = tokio::select! {
            done = running.next() => done,
            _ = tokio::time::sleep(ATTEMPT_DELAY) => None,
        };
        match next {
            Some((_, Ok(stream))) => return Ok(stream),
            Some((addr, Err((timed_out, why)))) => {
                failure.timed_out &= timed_out;
                failure.attempts.push(format!("{addr}: {why}"));
            }
            // The attempts running are slow: start the next address beside them.
            None => {}
        }
        if let Some(addr) = queue.next() {
            running.push(attempt(addr));
        }
    }
    if failure.attempts.is_empty() {
        failure.timed_out = false;
        failure.attempts.push("no address to connect to".into());
    }
    Err(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().expect("ip")).collect()
    }

    #[test]
    fn families_alternate_starting_with_the_first() {
        let got = interleave(&ips(&["::1", "::2", "10.0.0.1", "::3", "10.0.0.2"]));
        assert_eq!(got, ips(&["::1", "10.0.0.1", "::2", "10.0.0.2", "::3"]));
        let got = interleave(&ips(&["10.0.0.1", "10.0.0.2", "::1"]));
        assert_eq!(got, ips(&["10.0.0.1", "::1", "10.0.0.2"]));
        let many: Vec<String> = (0..20).map(|i| format!("10.0.0.{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(interleave(&ips(&many)).len(), MAX_ATTEMPTS);
    }
}
