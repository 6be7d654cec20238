//! Every request to a registry (and to the blob storage and token servers it sends
//! us to) goes through one [`Transport`]: reqwest, configured by hand.
//!
//! - **Addresses**: each hop's URL is vetted with the pinned fetch's checks
//!   ([`vet_url`]: scheme, syntax, local names, literal addresses), and names resolve
//!   through a vetting [`reqwest::dns::Resolve`] that passes every answer through
//!   [`vet_resolved`] before reqwest connects to it (no second lookup, so a name that
//!   rebinds to a private address is never reached). The one exemption is the registry
//!   the user named (on the command line or in the policy): exactly its host and port may
//!   be private, as a local registry is. A hop to any other host, or to the registry's
//!   host on another port, must be public.
//! - **Redirects**: reqwest follows none (`Policy::none()`); [`Transport::send`] follows
//!   at most [`RegistrySettings::max_redirects`], vetting each hop as above, never
//!   replaying a body, and dropping credentials on any hop that leaves the registry.
//! - **Scheme**: HTTPS everywhere, except the loopback registry named with
//!   `--plain-http` (and only that origin).
//! - **No ambient state**: no proxy from the environment (`no_proxy()`), no `Referer`,
//!   no cookies; TLS is rustls with the `ring` provider and the webpki roots (plus the
//!   CAs of `TOOLHOST_REGISTRY_CA_FILE` when the user sets it: [`super::roots`]).
//! - **Bounds**: connect, read and whole-request timeouts; every body read is bounded
//!   ([`read_bounded`]): a declared length over the bound is refused before reading.

use std::error::Error as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, LOCATION};
use reqwest::{Method, Response, StatusCode};
use url::Url;

use super::OciError;
use super::reference::OciRef;
use crate::imports::fetch::vet::{VetError, vet_resolved, vet_url};
use crate::imports::fetch::{Resolver, SystemResolver};

/// How registry traffic is bounded and which registry it is for.
#[derive(Clone)]
pub struct RegistrySettings {
    /// Speak plain HTTP to the registry: only for a loopback registry (a test or a
    /// local one); every other registry, and every other host, is HTTPS.
    pub plain_http: bool,
    /// Longest a connection may take to open.
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a response.
    pub read_timeout: Duration,
    /// Longest one request may take, body included.
    pub request_timeout: Duration,
    /// Largest manifest (and token answer, signature payload) read.
    pub max_manifest_bytes: u64,
    /// Largest layer (the component) read; a manifest naming a larger one is refused
    /// before the layer is asked for.
    pub max_layer_bytes: u64,
    /// Redirects followed before `too_many_redirects`.
    pub max_redirects: usize,
    /// Resolves host names (the system's by default; tests inject their own).
    pub resolver: Arc<dyn Resolver>,
    /// A PEM file of root CAs trusted in addition to the webpki roots (`None` by
    /// default; [`RegistrySettings::from_env`] takes `TOOLHOST_REGISTRY_CA_FILE`).
    pub extra_ca_file: Option<PathBuf>,
    /// Told how a component layer's download goes (none by default).
    pub progress: Option<Arc<dyn crate::engine::progress::Progress>>,
}

/// The default largest layer: 200 MiB.
pub const DEFAULT_MAX_LAYER_BYTES: u64 = 200 << 20;
/// The largest manifest (and token answer) read: 4 MiB; a longer one is `too_large`,
/// refused from its declared length before it is read, or as soon as it grows past.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            plain_http: false,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(600),
            max_manifest_bytes: MAX_MANIFEST_BYTES,
            max_layer_bytes: DEFAULT_MAX_LAYER_BYTES,
            max_redirects: 5,
            resolver: Arc::new(SystemResolver),
            extra_ca_file: None,
            progress: None,
        }
    }
}

impl RegistrySettings {
    /// The defaults, with the extra root CAs of `TOOLHOST_REGISTRY_CA_FILE` when it is
    /// set (and not empty): what the CLI and a start use, so a registry with its own
    /// CA is trusted by both or neither.
    pub fn from_env() -> Self {
        let extra_ca_file =
            std::env::var_os(super::roots::REGISTRY_CA_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
        Self { extra_ca_file, ..Self::default() }
    }
}

impl std::fmt::Debug for RegistrySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrySettings")
            .field("plain_http", &self.plain_http)
            .field("read_timeout", &self.read_timeout)
            .field("max_layer_bytes", &self.max_layer_bytes)
            .field("extra_ca_file", &self.extra_ca_file)
            .finish_non_exhaustive()
    }
}

/// One request: what [`Transport::send`] sends on each hop.
pub(crate) struct Request {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
    /// Sent to the registry only: dropped on a hop to any other origin.
    pub(crate) authorization: Option<HeaderValue>,
    pub(crate) body: Option<bytes::Bytes>,
}

impl Request {
    pub(crate) fn new(method: Method, url: Url) -> Self {
        Self { method, url, headers: HeaderMap::new(), authorization: None, body: None }
    }
}

/// The HTTP client of one registry.
pub(crate) struct Transport {
    client: reqwest::Client,
    registry: Origin,
    plain_http: bool,
    max_redirects: usize,
}

/// A URL's scheme-independent origin: host (lower-case) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    host: String,
    port: u16,
}

impl Origin {
    fn of(url: &Url) -> Option<Self> {
        Some(Self { host: url.host_str()?.to_ascii_lowercase(), port: url.port_or_known_default()? })
    }
}

impl Transport {
    /// A client for the registry of `reference`.
    pub(crate) fn new(reference: &OciRef, settings: &RegistrySettings) -> Result<Self, OciError> {
        if settings.plain_http && !reference.is_loopback() {
            return Err(OciError::Blocked(format!(
                "--plain-http is only for a registry on this machine (localhost, 127.0.0.0/8, ::1), not {}",
                reference.registry()
            )));
        }
        Self::for_origin(&reference.base_url(settings.plain_http)?, settings)
    }

    /// A client whose exempt origin is that of `url` (a pinned `https://` source).
    pub(crate) fn for_origin(url: &Url, settings: &RegistrySettings) -> Result<Self, OciError> {
        let registry =
            Origin::of(url).ok_or_else(|| OciError::InvalidReference(format!("{url}: no host")))?;
        let tls = super::roots::tls_config(settings.extra_ca_file.as_deref())?;
        let resolver = VettingResolver {
            inner: settings.resolver.clone(),
            registry_host: registry.host.trim_end_matches('.').to_string(),
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            .referer(false)
            .redirect(reqwest::redirect::Policy::none())
            .tls_backend_preconfigured((*tls).clone())
            .dns_resolver(Arc::new(resolver))
            .connect_timeout(settings.connect_timeout)
            .read_timeout(settings.read_timeout)
            .timeout(settings.request_timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OciError::Transport(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Self { client, registry, plain_http: settings.plain_http, max_redirects: settings.max_redirects })
    }

    /// Whether `url` is the registry itself (host and port).
    pub(crate) fn is_registry(&self, url: &Url) -> bool {
        Origin::of(url).as_ref() == Some(&self.registry)
    }

    /// Check one hop before it is made.
    fn vet_hop(&self, url: &Url) -> Result<(), OciError> {
        let origin = Origin::of(url).ok_or_else(|| OciError::InvalidReference(format!("{url}: no host")))?;
        let is_registry = origin == self.registry;
        if !is_registry && origin.host == self.registry.host {
            return Err(OciError::Blocked(format!(
                "{url}: only the registry's own address {}:{} is exempt from the address checks",
                self.registry.host, self.registry.port
            )));
        }
        vet_url(url.as_str(), is_registry).map_err(|e| match e {
            VetError::Blocked(m) => OciError::Blocked(format!("{url}: {m}")),
            VetError::InvalidUrl(m) => OciError::InvalidReference(format!("{url}: {m}")),
        })?;
        if url.scheme() == "http" && !(is_registry && self.plain_http) {
            return Err(OciError::Blocked(format!(
                "{url}: plain http is only used for the loopback registry named with --plain-http"
            )));
        }
        Ok(())
    }

    /// Send `request`, following redirects by hand (each hop vetted, a body never
    /// replayed, the authorization kept for the registry only).
    pub(crate) async fn send(&self, request: Request) -> Result<Response, OciError> {
        let Request { mut method, mut url, headers, authorization, mut body } = request;
        for hop in 0..=self.max_redirects {
            self.vet_hop(&url)?;
            let mut builder = self.client.request(method.clone(), url.clone()).headers(headers.clone());
            if let Some(auth) = authorization.as_ref().filter(|_| self.is_registry(&url)) {
                builder = builder.header(reqwest::header::AUTHORIZATION, auth.clone());
            }
            if let Some(body) = &body {
                builder = builder.body(body.clone());
            }
            let response = builder.send().await.map_err(|e| classify(&e, &url))?;
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(response);
            }
            let next = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| {
                    OciError::Registry(format!("{url}: HTTP {status} without a usable Location"))
                })?;
            if hop == self.max_redirects {
                return Err(OciError::TooManyRedirects(format!(
                    "{url}: still redirected after {} redirects (last to {next})",
                    self.max_redirects
                )));
            }
            if body.is_some() {
                if matches!(status, StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT) {
                    return Err(OciError::Registry(format!(
                        "{url}: HTTP {status} would resend the upload to {next}; not followed"
                    )));
                }
                // 301/302/303 turn the request into a GET without its body.
                method = Method::GET;
                body = None;
            }
            url = next;
        }
        unreachable!("the loop returns on its last hop")
    }
}

/// Read at most `limit` bytes of `response`'s body: a declared length over it is
/// refused before anything is read, a body that grows past it as soon as it does.
pub(crate) async fn read_bounded(response: Response, limit: u64, what: &str) -> Result<Vec<u8>, OciError> {
    read_bounded_told(response, limit, what, None).await
}

/// [`read_bounded`], telling `step` of each chunk read.
pub(crate) async fn read_bounded_told(
    mut response: Response,
    limit: u64,
    what: &str,
    step: Option<&dyn crate::engine::progress::ProgressStep>,
) -> Result<Vec<u8>, OciError> {
    let too_large =
        |n: u64| OciError::TooLarge(format!("{what} is {n} bytes or more; at most {limit} are read"));
    if let Some(len) = response.content_length()
        && len > limit
    {
        return Err(too_large(len));
    }
    let url = response.url().clone();
    let mut body = Vec::with_capacity(response.content_length().unwrap_or(0).min(limit) as usize);
    while let Some(chunk) = response.chunk().await.map_err(|e| classify(&e, &url))? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(too_large((body.len() + chunk.len()) as u64));
        }
        body.extend_from_slice(&chunk);
        if let Some(step) = step {
            step.advance(chunk.len() as u64);
        }
    }
    Ok(body)
}

/// A reqwest error as an [`OciError`]: the resolver's refusal is `blocked_url`.
pub(crate) fn classify(err: &reqwest::Error, url: &Url) -> OciError {
    let mut source = err.source();
    while let Some(inner) = source {
        if let Some(refused) = inner.downcast_ref::<Refused>() {
            return OciError::Blocked(format!("{url}: {}", refused.0));
        }
        source = inner.source();
    }
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    if err.is_timeout() { OciError::Timeout(text) } else { OciError::Transport(text) }
}

/// The vetting resolver's refusal, found again in reqwest's error chain.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Resolves with the injected [`Resolver`] and returns only vetted addresses: private
/// ones only for the registry's own name.
struct VettingResolver {
    inner: Arc<dyn Resolver>,
    registry_host: String,
}

impl reqwest::dns::Resolve for VettingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let inner = self.inner.clone();
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        let allow_private = host == self.registry_host;
        Box::pin(async move {
            let addrs =
                inner.lookup(&host).await.map_err(|e| Box::new(Refused(format!("resolving {host}: {e}"))))?;
            vet_resolved(&host, &addrs, allow_private).map_err(|e| Box::new(Refused(e.to_string())))?;
            let addrs: Vec<std::net::SocketAddr> =
                addrs.into_iter().map(|ip| std::net::SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport(reference: &str, plain_http: bool) -> Result<Transport, OciError> {
        let settings = RegistrySettings { plain_http, ..RegistrySettings::default() };
        Transport::new(&OciRef::parse(reference).unwrap(), &settings)
    }

    #[test]
    fn plain_http_is_for_loopback_registries_only() {
        assert!(transport("oci://127.0.0.1:5000/a:1", true).is_ok());
        assert!(transport("oci://localhost:5000/a:1", true).is_ok());
        let err = transport("oci://10.0.0.5:5000/a:1", true).err().unwrap().to_string();
        assert!(err.starts_with("blocked_url: --plain-http"), "{err}");
        assert!(transport("oci://registry.example.com/a:1", true).is_err());
    }

    #[test]
    fn hops_other_than_the_registry_must_be_public_and_https() {
        let t = transport("oci://127.0.0.1:5000/a:1", true).unwrap();
        let ok = |u: &str| t.vet_hop(&Url::parse(u).unwrap());
        assert!(ok("http://127.0.0.1:5000/v2/").is_ok());
        assert!(ok("https://blobs.example.com/x").is_ok());
        for (url, why) in [
            ("http://127.0.0.1:5001/v2/", "only the registry's own address"),
            ("https://127.0.0.2/x", "blocked address"),
            ("https://10.0.0.1/x", "blocked address"),
            ("https://169.254.169.254/latest/meta-data", "blocked address"),
            ("https://localhost/x", "local name"),
            ("http://blobs.example.com/x", "plain http"),
        ] {
            let err = ok(url).unwrap_err().to_string();
            assert!(err.starts_with("blocked_url: ") && err.contains(why), "{url}: {err}");
        }
        // A private registry named by the user is allowed over HTTPS too, but nothing
        // else on a private address.
        let t = transport("oci://10.1.2.3:443/a:1", false).unwrap();
        assert!(t.vet_hop(&Url::parse("https://10.1.2.3/v2/").unwrap()).is_ok());
        assert!(t.vet_hop(&Url::parse("https://10.1.2.4/v2/").unwrap()).is_err());
        assert!(t.vet_hop(&Url::parse("http://10.1.2.3/v2/").unwrap()).is_err());
    }
}
