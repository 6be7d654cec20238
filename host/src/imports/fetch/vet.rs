//! Pure vetting of what a plugin asks the pinned fetch to reach: URL syntax and scheme, host
//! names, IP addresses (literal or resolved), the host allow-list and the HTTP method.
//!
//! Nothing here touches the network. The caller must fetch the [`Url`] that [`vet_url`]
//! returns (never re-parse the raw string), resolve its host itself, pass every resolved
//! address through [`vet_resolved`], and connect only to those addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::error::codes;

/// Why a URL or address is refused. Codes map 1:1 to WIT fetch-error cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VetError {
    /// Not an absolute `http`/`https` URL with a well-formed host.
    #[error("{code}: {0}", code = codes::INVALID_URL)]
    InvalidUrl(String),
    /// The host is a local name or a private, loopback, link-local, … address.
    #[error("{code}: {0}", code = codes::BLOCKED_URL)]
    Blocked(String),
}

impl VetError {
    /// The stable error code: [`codes::INVALID_URL`] or [`codes::BLOCKED_URL`].
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidUrl(_) => codes::INVALID_URL,
            Self::Blocked(_) => codes::BLOCKED_URL,
        }
    }
}

/// How far an address is from being a fetchable public unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Public,
    /// Refused unless the private opt-out is on; the reason names the range.
    Private(&'static str),
    /// Refused always: unspecified, multicast, broadcast, reserved.
    Never(&'static str),
}
use Verdict::{Never, Private, Public};

impl Verdict {
    /// Forms that are never public themselves but are judged harsher if what they embed is.
    fn at_least_private(self, reason: &'static str) -> Self {
        if self == Public { Private(reason) } else { self }
    }
}

fn verdict_v4(ip: Ipv4Addr) -> Verdict {
    match ip.octets() {
        [0, ..] => Never("unspecified / \"this network\""),
        [224..=239, ..] => Never("multicast"),
        [255, 255, 255, 255] => Never("broadcast"),
        [240..=255, ..] => Never("reserved"),
        [127, ..] => Private("loopback"),
        [10, ..] | [172, 16..=31, ..] | [192, 168, ..] => Private("private"),
        [100, 64..=127, ..] => Private("shared / CGNAT"),
        [169, 254, ..] => Private("link-local"),
        [192, 0, 0, _] => Private("IETF protocol assignment"),
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => Private("documentation"),
        [198, 18..=19, ..] => Private("benchmarking"),
        _ => Public,
    }
}

fn verdict_v6(ip: Ipv6Addr) -> Verdict {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        _ if ip.is_unspecified() => Never("unspecified"),
        [0xff00..=0xffff, ..] => Never("multicast"),
        _ if ip.is_loopback() => Private("loopback"),
        // ::ffff:a.b.c.d reaches a.b.c.d through a dual-stack socket: judge the IPv4 alone.
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => verdict_v4(v4(hi, lo)),
        // ::a.b.c.d (IPv4-compatible, deprecated) and ::ffff:0:a.b.c.d (IPv4-translated).
        [0, 0, 0, 0, 0, 0, hi, lo] => verdict_v4(v4(hi, lo)).at_least_private("IPv4-compatible"),
        [0, 0, 0, 0, 0xffff, 0, hi, lo] => verdict_v4(v4(hi, lo)).at_least_private("IPv4-translated"),
        // NAT64: the well-known prefix is judged by the IPv4 it translates to; the local-use
        // prefix (RFC 8215) is a site's own translator, so never public.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => verdict_v4(v4(hi, lo)),
        [0x64, 0xff9b, 1, _, _, _, hi, lo] => verdict_v4(v4(hi, lo)).at_least_private("local-use NAT64"),
        [0xfe80..=0xfebf, ..] => Private("link-local"),
        [0xfec0..=0xfeff, ..] => Private("site-local"),
        [0xfc00..=0xfdff, ..] => Private("unique-local"),
        [0x100, 0, 0, 0, ..] => Private("discard-only"),
        // Only 2000::/3 is allocated for global unicast; everything else left is reserved.
        [0..=0x1fff | 0x4000..=0xffff, ..] => Private("reserved (not global unicast)"),
        // Teredo hides the client's IPv4; the rest of 2001::/23 is protocol infrastructure.
        [0x2001, 0, ..] => Private("Teredo"),
        [0x2001, 0..=0x1ff, ..] => Private("IETF protocol assignment"),
        [0x2001, 0xdb8, ..] | [0x3fff, 0..=0x0fff, ..] => Private("documentation"),
        // 6to4 reaches the IPv4 in bits 16..48 through a relay.
        [0x2002, hi, lo, ..] => verdict_v4(v4(hi, lo)),
        _ => Public,
    }
}

fn verdict(ip: IpAddr) -> Verdict {
    match ip {
        IpAddr::V4(ip) => verdict_v4(ip),
        IpAddr::V6(ip) => verdict_v6(ip),
    }
}

/// Why `ip` may not be fetched, or `None` if it may.
fn refusal(ip: IpAddr, allow_private: bool) -> Option<&'static str> {
    match verdict(ip) {
        Public => None,
        Private(_) if allow_private => None,
        Private(reason) | Never(reason) => Some(reason),
    }
}

/// True for every address a fetch must never reach (unless the private opt-out is on).
///
/// IPv4: 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.0.0/24, 192.0.2/24,
/// 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24, 224/4 and 240/4 (with broadcast).
/// IPv6: everything outside 2000::/3 (`::`, `::1`, link-local, site-local, unique-local,
/// multicast, discard, IPv4-compatible, IPv4-translated), Teredo and the rest of 2001::/23,
/// 2001:db8::/32, 3fff::/20, local-use NAT64 64:ff9b:1::/48; IPv4-mapped `::ffff:0:0/96`,
/// NAT64 64:ff9b::/96 and 6to4 2002::/16 are judged by the IPv4 address they embed.
#[cfg(test)]
pub(crate) fn is_blocked_ip(ip: IpAddr) -> bool {
    verdict(ip) != Public
}

/// Names that only ever mean this machine or the local network.
const LOCAL_SUFFIXES: [&str; 5] = ["localhost", "local", "localdomain", "internal", "home.arpa"];

/// Non-empty labels of letters, digits, `-` and `_` (what the IDNA step leaves of a real name).
fn is_domain_name(name: &str) -> bool {
    let label_ok =
        |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    name.split('.').all(label_ok)
}

fn vet_domain(name: &str, allow_private: bool) -> Result<(), VetError> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if !is_domain_name(name) {
        return Err(VetError::InvalidUrl(format!("host `{name}` is not a valid domain name")));
    }
    let local = LOCAL_SUFFIXES
        .iter()
        .any(|s| name == *s || name.strip_suffix(s).is_some_and(|rest| rest.ends_with('.')));
    if local && !allow_private {
        return Err(VetError::Blocked(format!("host `{name}` is a local name")));
    }
    Ok(())
}

/// Parse and check a URL before any lookup.
///
/// The scheme must be `http` or `https` and the input must spell out `scheme://host`: the
/// lenient WHATWG spellings (`http:host`, `http:///host`, backslashes, embedded whitespace or
/// control characters) are refused as [`VetError::InvalidUrl`]. User info is allowed and never
/// confuses the host: `http://example.com@127.0.0.1/` is judged by `127.0.0.1`. Numeric IPv4
/// spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, …) are canonicalised by the
/// parser before the check. Local names (`localhost`, `*.localhost`, `*.local`,
/// `*.localdomain`, `*.internal`, `*.home.arpa`, with or without a trailing dot) and blocked
/// literal addresses ([`is_blocked_ip`]) are refused as [`VetError::Blocked`] unless
/// `allow_private` is true; unspecified, multicast, broadcast and reserved addresses are
/// refused even then. Error messages never echo the user info.
pub(crate) fn vet_url(raw: &str, allow_private: bool) -> Result<Url, VetError> {
    if let Some(c) = raw.chars().find(|c| c.is_whitespace() || c.is_control() || *c == '\\') {
        return Err(VetError::InvalidUrl(format!("URL contains the forbidden character {c:?}")));
    }
    let url = Url::parse(raw).map_err(|e| VetError::InvalidUrl(format!("cannot parse URL: {e}")))?;
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(VetError::InvalidUrl(format!("scheme `{scheme}` is not allowed (only http and https)")));
    }
    let after_scheme = raw
        .get(..scheme.len())
        .filter(|s| s.eq_ignore_ascii_case(scheme))
        .and_then(|_| raw[scheme.len()..].strip_prefix("://"));
    if after_scheme.is_none_or(|rest| rest.starts_with('/')) {
        return Err(VetError::InvalidUrl(format!("URL must start with `{scheme}://` and a host")));
    }
    let ip = match url.host() {
        None => return Err(VetError::InvalidUrl("URL has no host".into())),
        Some(Host::Domain(name)) => return vet_domain(name, allow_private).map(|()| url),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
    };
    match refusal(ip, allow_private) {
        Some(reason) => Err(VetError::Blocked(format!("host {ip} is a blocked address ({reason})"))),
        None => Ok(url),
    }
}

/// Check every address `host` resolved to.
///
/// `Err(Blocked)` naming the first refused address if any of them is refused (one bad
/// address among good ones is enough), and for an empty list. With `allow_private` only the
/// unspecified, multicast, broadcast and reserved addresses are still refused.
pub(crate) fn vet_resolved(host: &str, addrs: &[IpAddr], allow_private: bool) -> Result<(), VetError> {
    if addrs.is_empty() {
        return Err(VetError::Blocked(format!("`{host}` resolved to no address")));
    }
    for &ip in addrs {
        if let Some(reason) = refusal(ip, allow_private) {
            return Err(VetError::Blocked(format!(
                "`{host}` resolved to {ip}, a blocked address ({reason})"
            )));
        }
    }
    Ok(())
}

/// One entry of a host allow-list: an exact host (`docs.rs`, `93.184.216.34`, `[2001:db8::1]`),
/// `*.example.com` (any name strictly below `example.com`), or `*` (every host).
///
/// Matching is case-insensitive and ignores one trailing dot on either side; international
/// names are compared in their punycode (`xn--`) form, as [`Url::host_str`] spells them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// Canonical text: `*`, `*.suffix` or an exact host, lower-case, without trailing dot.
    pattern: String,
}

impl HostPattern {
    /// Parse a pattern. Errors (as a message) for an empty pattern, whitespace, a scheme, a
    /// port or a path, and a `*` anywhere but alone or as a leading `*.` label.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("invalid host pattern {s:?}: {why}");
        if s == "*" {
            return Ok(Self { pattern: s.to_owned() });
        }
        if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("empty or contains whitespace"));
        }
        if s.contains(['/', '\\', '?', '#', '@']) || (s.contains(':') && !s.starts_with('[')) {
            return Err(bad("expected a bare host, without scheme, user, port or path"));
        }
        let (wild, rest) = s.strip_prefix("*.").map_or((false, s), |rest| (true, rest));
        if rest.contains('*') {
            return Err(bad("`*` is only allowed alone or as a leading `*.` label"));
        }
        let host = Host::parse(rest).map_err(|e| bad(&e.to_string()))?;
        let exact = match host {
            Host::Domain(d) => {
                let d = d.strip_suffix('.').unwrap_or(&d);
                if !is_domain_name(d) {
                    return Err(bad("not a domain name (empty label or forbidden character)"));
                }
                d.to_owned()
            }
            Host::Ipv4(ip) if !wild => ip.to_string(),
            Host::Ipv6(ip) if !wild => format!("[{ip}]"),
            _ => return Err(bad("`*.` must be followed by a domain name")),
        };
        Ok(Self { pattern: if wild { format!("*.{exact}") } else { exact } })
    }

    /// `*`: every host.
    pub fn any() -> Self {
        Self { pattern: "*".to_owned() }
    }

    /// Whether `host` (as [`Url::host_str`] gives it) is covered by this pattern.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        match self.pattern.strip_prefix('*') {
            Some("") => true,
            // `suffix` is ".example.com": what precedes it must be a non-empty label run.
            Some(suffix) => host
                .len()
                .checked_sub(suffix.len())
                .and_then(|cut| Some((host.get(..cut)?, host.get(cut..)?)))
                .is_some_and(|(head, tail)| {
                    tail.eq_ignore_ascii_case(suffix) && !head.is_empty() && !head.ends_with('.')
                }),
            None => host.eq_ignore_ascii_case(&self.pattern),
        }
    }

    /// The canonical pattern text (lower-case, no trailing dot).
    pub fn as_str(&self) -> &str {
        &self.pattern
    }
}

/// Whether any pattern in the allow-list covers `host`.
pub(crate) fn host_allowed(patterns: &[HostPattern], host: &str) -> bool {
    patterns.iter().any(|p| p.matches(host))
}

/// The methods a fetch may use, in canonical form.
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Accept GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS in any case, returning the canonical
/// upper-case form; refuse everything else (CONNECT, TRACE, custom methods) with a message.
pub(crate) fn vet_method(method: &str) -> Result<&'static str, String> {
    METHODS
        .into_iter()
        .find(|m| m.eq_ignore_ascii_case(method))
        .ok_or_else(|| format!("method {method:?} is not allowed (allowed: {})", METHODS.join(", ")))
}

#[cfg(test)]
#[path = "vet_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "vet_props.rs"]
mod props;
