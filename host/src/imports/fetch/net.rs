//! The two injectable edges of the pinned fetch: turning a name into addresses
//! ([`Resolver`]) and opening a TCP connection to one address ([`Connector`]).
//!
//! The client calls the resolver once per hop and the connector only with addresses it
//! vetted. Tests inject their own of both, so no test ever does a real DNS lookup or
//! connects anywhere but loopback.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

use tokio::net::TcpStream;

/// The future a [`Resolver`] returns.
pub type Lookup<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// The future a [`Connector`] returns.
pub type Connect<'a> = Pin<Box<dyn Future<Output = io::Result<TcpStream>> + Send + 'a>>;

/// Resolves a host name to its addresses.
pub trait Resolver: Send + Sync {
    /// Every address `host` (a domain name, never an IP literal) resolves to. An error or
    /// an empty list refuses the hop.
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a>;
}

/// Opens a TCP connection to one already vetted address.
pub trait Connector: Send + Sync {
    /// Connect to `addr`. The client calls this only with addresses that passed
    /// `vet_resolved` for the hop being made.
    fn connect(&self, addr: SocketAddr) -> Connect<'_>;
}

/// The system resolver (`getaddrinfo` through [`tokio::net::lookup_host`]).
///
/// The lookup runs on a blocking thread: dropping the fetch stops waiting for it, but the
/// thread finishes its (bounded) lookup on its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            let mut ips: Vec<IpAddr> = Vec::new();
            for addr in addrs {
                if !ips.contains(&addr.ip()) {
                    ips.push(addr.ip());
                }
            }
            Ok(ips)
        })
    }
}

/// Plain `TcpStream::connect` with `TCP_NODELAY`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnector;

impl Connector for TcpConnector {
    fn connect(&self, addr: SocketAddr) -> Connect<'_> {
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    }
}
