//! Pinned outbound HTTP: the host side of `toolhost:plugin/fetch`, the only way a plugin
//! reaches the network.
//!
//! Per hop, [`FetchClient`]:
//!
//! 1. vets the URL ([`vet::vet_url`]: scheme, syntax, local names, literal addresses) and
//!    checks the host against the plugin's [`NetGrant`] ([`vet::host_allowed`]);
//! 2. resolves the name **once** with the injected [`Resolver`] and vets every address
//!    ([`vet::vet_resolved`]: one blocked address refuses the hop);
//! 3. connects with the injected [`Connector`] to a vetted address only (happy eyeballs
//!    over the vetted addresses, each attempt with its own timeout) — there is no
//!    second lookup, so a name that rebinds to a private address after the check is never
//!    reached — while the original host name is kept for TLS SNI and the `Host` header;
//! 4. speaks HTTP/1.1 (hyper's client connection) over TLS (rustls with the `ring`
//!    provider and the webpki roots) or plain TCP;
//! 5. follows redirects itself, each Location being one more hop through steps 1–4.
//!
//! Why not `reqwest`: it resolves and connects internally and gives no hook that sees the
//! exact address of every connection attempt. Pinning (and the test that proves a
//! rebinding name is never connected to its second answer) needs the connector to be
//! ours, so the client is hyper's connection API over a stream we opened ourselves.
//!
//! No credentials from the host ever reach a request: no proxy variables, no netrc, no
//! cookie jar; the only headers are the plugin's own (minus the hop-by-hop ones the host
//! manages) and a default `user-agent`.
//!
//! Modules: [`vet`] (pure checks), `net` ([`Resolver`], [`Connector`]), `types` (request,
//! response, error), `client` (the hops, redirects and limits), `connect` (happy eyeballs
//! over the vetted addresses), `exchange` (TLS, one HTTP/1.1 exchange over one stream),
//! `host` (the WIT-facing glue on the per-call state). `wasi:http` (`imports::http`) opens
//! its streams through the same [`FetchClient`].

mod client;
mod connect;
mod exchange;
mod host;
mod net;
mod types;
pub(crate) mod vet;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use client::FetchClient;
/// The TLS settings of the pinned fetch (rustls, `ring`, the webpki roots), shared with
/// the registry client (`oci::transport`).
pub(crate) use exchange::tls_config as tls_config_with_webpki_roots;
/// The same settings trusting other roots (the registry client's, with the extra CAs
/// the user names; `oci::roots`).
pub(crate) use exchange::tls_config_with as tls_config_with_roots;
pub(crate) use host::{CAPABILITY, NETWORK, link};
pub use net::{Connect, Connector, Lookup, Resolver, SystemResolver, TcpConnector};
pub(crate) use types::OpenError;
pub use types::{FetchError, FetchRequest, FetchResponse};
pub use vet::HostPattern;

/// What one plugin may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetGrant {
    /// The hosts it may fetch from (empty: none, and a plugin importing fetch is refused).
    pub hosts: Vec<HostPattern>,
    /// Whether private, loopback and link-local targets are allowed (the opt-out).
    pub allow_private: bool,
}

impl NetGrant {
    /// True when no host is granted at all.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }
}

/// Sizes and times of the pinned fetch that the host enforces on every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    /// Largest request body a plugin may send (`too-large` above).
    pub max_request_body: usize,
    /// Largest response body returned; a request's `max-bytes` is clamped to it and a
    /// longer body is cut (`truncated`).
    pub max_response_body: u64,
    /// A declared `Content-Length` above this is refused (`too-large`) without reading.
    pub hard_response_cap: u64,
    /// Longest a request may take, redirects included; a request's `timeout-ms` and the
    /// time left of the call only shorten it.
    pub timeout: Duration,
    /// Redirects followed before `too-many-redirects`.
    pub max_redirects: usize,
    /// Total bytes of request header names and values a plugin may send.
    pub max_request_headers: usize,
    /// Longest one connection attempt to one address may take (the next vetted address
    /// is tried beside it after 250 ms either way).
    pub connect_timeout: Duration,
    /// Requests one call may make over `wasi:http` (`connection-limit-reached` past it).
    pub max_requests_per_call: usize,
    /// Requests one call may have open over `wasi:http` at once.
    pub max_open_requests: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            max_request_body: 10 << 20,
            max_response_body: 10 << 20,
            hard_response_cap: 100 << 20,
            timeout: Duration::from_secs(30),
            max_redirects: 5,
            max_request_headers: 64 << 10,
            connect_timeout: Duration::from_secs(10),
            max_requests_per_call: 256,
            max_open_requests: 16,
        }
    }
}

/// The host's network settings: who may reach what, and how names are resolved and
/// addresses connected (injectable, so tests never touch the real network).
#[derive(Clone)]
pub struct NetworkSettings {
    /// Let plugins reach private, loopback and link-local addresses and local names. Off
    /// by default; the host logs a warning when it is on.
    pub allow_private: bool,
    /// Hosts the builtin plugins (names starting with `builtin:`) may reach.
    pub builtin_hosts: Vec<HostPattern>,
    /// Hosts third-party plugins may reach (`--allow-host`); empty by default, so a
    /// third-party plugin that imports fetch is refused at load.
    pub plugin_hosts: Vec<HostPattern>,
    /// Turns a host name into addresses, once per hop.
    pub resolver: Arc<dyn Resolver>,
    /// Opens the TCP connection to a vetted address.
    pub connector: Arc<dyn Connector>,
    /// Body sizes, timeout, redirects.
    pub limits: FetchLimits,
}

impl Default for NetworkSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            builtin_hosts: vec![HostPattern::any()],
            plugin_hosts: Vec::new(),
            resolver: Arc::new(SystemResolver),
            connector: Arc::new(TcpConnector),
            limits: FetchLimits::default(),
        }
    }
}

impl fmt::Debug for NetworkSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkSettings")
            .field("allow_private", &self.allow_private)
            .field("builtin_hosts", &self.builtin_hosts)
            .field("plugin_hosts", &self.plugin_hosts)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl NetworkSettings {
    /// The grant of the plugin named `plugin`: [`Self::builtin_hosts`] for `builtin:*`,
    /// [`Self::plugin_hosts`] for the others, with [`Self::allow_private`] either way.
    pub fn grant_for(&self, plugin: &str) -> NetGrant {
        let hosts = if plugin.starts_with("builtin:") { &self.builtin_hosts } else { &self.plugin_hosts };
        NetGrant { hosts: hosts.clone(), allow_private: self.allow_private }
    }

    /// The client these settings describe.
    pub fn client(&self) -> FetchClient {
        FetchClient::new(self.resolver.clone(), self.connector.clone(), self.limits.clone())
    }
}

/// The network capability handed to one call: the plugin's grant and the shared client.
/// A call without it (a plugin that does not import fetch) has no network at all.
#[derive(Clone)]
pub(crate) struct NetAccess {
    /// What the plugin may reach.
    pub grant: Arc<NetGrant>,
    /// The host's client, shared by every call.
    pub client: Arc<FetchClient>,
}

impl fmt::Debug for NetAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetAccess").field("grant", &self.grant).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
#[path = "client_tests.rs"]
mod client_tests;
