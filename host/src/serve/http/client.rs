//! Who a connection or request comes from, for the per-client limits.
//!
//! A client is its address; an IPv6 client is its /64 (one host is given a
//! whole /64, so counting single addresses would give it 2^64 budgets). Behind a
//! load balancer every connection comes from the balancer, so the address it
//! forwards counts instead, but only from peers configured as trusted proxies
//! (`--trusted-proxy`):
//! - with `--proxy-protocol`, a connection from a trusted proxy must begin with
//!   a PROXY header (haproxy's, v1 or v2), whose source is the connection's
//!   client (a `LOCAL` header, such as a health check's, is the proxy itself);
//! - `X-Forwarded-For` is read from the right while the hop it names is a
//!   trusted proxy: the first untrusted hop is the client (entries a client
//!   wrote itself are further left, so they are never reached).
//!
//! From any other peer both are ignored: `X-Forwarded-For` is not read, and a
//! PROXY header is not HTTP (hyper answers 400 and closes).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use http::HeaderMap;
use ipnet::IpNet;
use proxy_header::{ParseConfig, ProxyHeader};
use tokio::net::TcpStream;

/// The longest PROXY header read (a v2 header with haproxy's TLVs is far shorter).
const MAX_PROXY_HEADER: usize = 4096;

/// Whose budget something counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Client(IpAddr);

impl Client {
    /// The client at `ip`: IPv4 (also when mapped into IPv6) as it is, IPv6 by its /64.
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => Self(IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX)))),
            },
            v4 => Self(v4),
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The peers whose word on the client's address is taken.
#[derive(Debug, Clone, Default)]
pub(crate) struct Proxies {
    trusted: Vec<IpNet>,
    proxy_protocol: bool,
}

/// Why a trusted proxy's connection was closed before any HTTP.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ProxyHeaderError {
    #[error("no PROXY header within {0:?}")]
    Timeout(Duration),
    #[error("the connection closed before its PROXY header ended")]
    Closed,
    #[error("not a PROXY header ({0})")]
    Invalid(String),
}

/// A header that names a client wrongly.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("X-Forwarded-For from a trusted proxy holds {0:?}, not an IP address")]
pub(crate) struct BadForward(pub(crate) String);

impl Proxies {
    pub(crate) fn new(trusted: Vec<IpNet>, proxy_protocol: bool) -> Self {
        Self { trusted, proxy_protocol }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = Client::canonical(ip);
        self.trusted.iter().any(|net| net.contains(&ip))
    }

    /// Whether a connection from `peer` must begin with a PROXY header.
    pub(crate) fn expects_header(&self, peer: IpAddr) -> bool {
        self.proxy_protocol && self.trusts(peer)
    }

    /// Whether a connection from `source` has no client of its own to count
    /// (a trusted proxy speaking for many, through `X-Forwarded-For`).
    pub(crate) fn is_proxy(&self, source: IpAddr) -> bool {
        self.trusts(source)
    }

    /// The client a request on a connection from `source` counts against.
    pub(crate) fn request_client(&self, source: IpAddr, headers: &HeaderMap) -> Result<Client, BadForward> {
        let mut hop = source;
        let forwarded = headers.get_all("x-forwarded-for").iter().collect::<Vec<_>>();
        let entries = forwarded.iter().rev().flat_map(|value| value.as_bytes().rsplit(|&b| b == b','));
        for entry in entries {
            if !self.trusts(hop) {
                break;
            }
            let text = String::from_utf8_lossy(entry.trim_ascii());
            hop = parse_hop(&text).ok_or_else(|| BadForward(text.into_owned()))?;
        }
        Ok(Client::of(hop))
    }
}

impl Client {
    fn canonical(ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        }
    }
}

/// One `X-Forwarded-For` entry: an address, bracketed or with a port as some proxies write it.
fn parse_hop(text: &str) -> Option<IpAddr> {
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| text.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
}

/// Read a PROXY header (v1 or v2) from `stream` within `patience`: the
/// client's address (`None` for a `LOCAL` header) and the bytes read after it.
pub(crate) async fn read_proxy_header(
    stream: &TcpStream,
    patience: Duration,
) -> Result<(Option<IpAddr>, Vec<u8>), ProxyHeaderError> {
    let read = async {
        let mut buf = Vec::with_capacity(256);
        loop {
            stream.readable().await.map_err(|_| ProxyHeaderError::Closed)?;
            let mut chunk = [0u8; 512];
            let n = match stream.try_read(&mut chunk) {
                Ok(0) => return Err(ProxyHeaderError::Closed),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => return Err(ProxyHeaderError::Closed),
            };
            buf.extend_from_slice(&chunk[..n]);
            match ProxyHeader::parse(&buf, ParseConfig { include_tlvs: false, ..ParseConfig::default() }) {
                Ok((header, used)) => {
                    let source = header.proxied_address().map(|a| a.source.ip());
                    return Ok((source, buf[used..].to_vec()));
                }
                Err(proxy_header::Error::BufferTooShort) if buf.len() < MAX_PROXY_HEADER => {}
                Err(e) => return Err(ProxyHeaderError::Invalid(e.to_string())),
            }
        }
    };
    tokio::time::timeout(patience, read).await.map_err(|_| ProxyHeaderError::Timeout(patience))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in xff {
            map.append("x-forwarded-for", value.parse().unwrap());
        }
        map
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        assert_eq!(Client::of(ip("2001:db8::1")), Client::of(ip("2001:db8::ffff:2")));
        assert_ne!(Client::of(ip("2001:db8::1")), Client::of(ip("2001:db8:0:1::1")));
        assert_eq!(Client::of(ip("::ffff:10.0.0.1")), Client::of(ip("10.0.0.1")));
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_hops() {
        let proxies = Proxies::new(vec!["10.0.0.0/8".parse().unwrap()], false);
        let untrusted = ip("192.0.2.7");
        // A client naming someone else is itself.
        assert_eq!(proxies.request_client(untrusted, &headers(&["198.51.100.1"])), Ok(Client::of(untrusted)));
        // Through a trusted proxy: the rightmost untrusted hop, whatever the client wrote before it.
        let through = headers(&["203.0.113.9, 198.51.100.1", "10.0.0.3"]);
        assert_eq!(proxies.request_client(ip("10.0.0.2"), &through), Ok(Client::of(ip("198.51.100.1"))));
        assert_eq!(
            proxies.request_client(ip("10.0.0.2"), &headers(&["[2001:db8::5]", "192.0.2.1:4000"])),
            Ok(Client::of(ip("192.0.2.1")))
        );
        // A trusted proxy's own request (no header) counts as the proxy.
        assert_eq!(proxies.request_client(ip("10.0.0.2"), &headers(&[])), Ok(Client::of(ip("10.0.0.2"))));
        assert_eq!(
            proxies.request_client(ip("10.0.0.2"), &headers(&["unknown"])),
            Err(BadForward("unknown".into()))
        );
    }

    #[tokio::test]
    async fn proxy_headers_are_read_with_what_follows() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        for (sent, expected) in [
            (
                &b"PROXY TCP4 192.0.2.1 127.0.0.1 5000 80\r\nGET /"[..],
                Ok((Some(ip("192.0.2.1")), b"GET /".to_vec())),
            ),
            (&b"GET / HTTP/1.1\r\n\r\n"[..], Err("invalid")),
        ] {
            let mut client = TcpStream::connect(addr).await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            tokio::io::AsyncWriteExt::write_all(&mut client, sent).await.unwrap();
            let got = read_proxy_header(&server, Duration::from_secs(5)).await;
            match expected {
                Ok(want) => assert_eq!(got.unwrap(), want),
                Err(_) => assert!(matches!(got, Err(ProxyHeaderError::Invalid(_))), "{got:?}"),
            }
        }
        let _silent = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let got = read_proxy_header(&server, Duration::from_millis(50)).await;
        assert_eq!(got, Err(ProxyHeaderError::Timeout(Duration::from_millis(50))));
    }
}
