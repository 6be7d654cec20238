//! `oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]`: which registry, repository and
//! manifest. The registry host is always written out (no implied Docker Hub): the
//! user names the registry, and that name is the one host whose private address is
//! allowed (see the `transport` module).

use std::fmt;
use std::net::IpAddr;

use oci_spec::distribution::Reference;

use super::OciError;

/// The scheme every reference starts with.
pub(crate) const OCI_SCHEME: &str = "oci://";

/// A parsed `oci://` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    host: String,
    port: Option<u16>,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl OciRef {
    /// Parse `oci://HOST[:PORT]/REPO[:TAG][@sha256:HEX]` (the repository and tag as
    /// the distribution spec spells them; `latest` when neither tag nor digest is given;
    /// only sha256 digests).
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = |why: &str| OciError::InvalidReference(format!("{text:?}: {why}"));
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("contains whitespace or a control character"));
        }
        let rest = text.strip_prefix(OCI_SCHEME).ok_or_else(|| bad("expected oci://HOST[:PORT]/REPO:TAG"))?;
        let reference = Reference::try_from(rest).map_err(|e| bad(&e.to_string()))?;
        let registry = reference.registry();
        // The crate fills in docker.io when the first part is not a host: refuse that.
        if !rest.starts_with(&format!("{registry}/")) {
            return Err(bad("name the registry host: oci://HOST[:PORT]/REPO:TAG"));
        }
        let (host, port) = match registry.rsplit_once(':') {
            Some((host, port)) => {
                let port = port.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad("bad port"))?;
                (host.to_ascii_lowercase(), Some(port))
            }
            None => (registry.to_ascii_lowercase(), None),
        };
        if let Some(digest) = reference.digest()
            && !digest.starts_with("sha256:")
        {
            return Err(bad("only sha256 digests are supported"));
        }
        Ok(Self {
            host,
            port,
            repository: reference.repository().to_string(),
            tag: reference.tag().map(str::to_string),
            digest: reference.digest().map(|d| d.to_ascii_lowercase()),
        })
    }

    /// The registry host as written (lower-case).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, when written.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// `HOST[:PORT]`.
    pub fn registry(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }

    /// The repository (`tools/wordcount`).
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, when given.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The manifest digest (`sha256:…`), when given.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// This reference pinned to `digest`, keeping the tag (for `toolhost update`).
    pub fn with_digest(&self, digest: &str) -> Self {
        Self { digest: Some(digest.to_string()), ..self.clone() }
    }

    /// This reference without its digest: what `toolhost update` re-resolves.
    pub fn without_digest(&self) -> Self {
        Self { digest: None, ..self.clone() }
    }

    /// `HOST[:PORT]/REPO`: the identity a signature names (cosign's docker-reference).
    pub fn docker_reference(&self) -> String {
        format!("{}/{}", self.registry(), self.repository)
    }

    /// What a manifest is asked for by: the digest when pinned, else the tag.
    pub fn manifest_reference(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or("latest")
    }

    /// Whether the registry is this machine: `localhost`, 127.0.0.0/8 or `::1`, the
    /// only registries `--plain-http` may talk to.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// `http(s)://HOST[:PORT]`.
    pub fn base_url(&self, plain_http: bool) -> Result<url::Url, OciError> {
        let scheme = if plain_http { "http" } else { "https" };
        url::Url::parse(&format!("{scheme}://{}/", self.registry()))
            .map_err(|e| OciError::InvalidReference(format!("{}: {e}", self.registry())))
    }
}

/// The tag cosign stores the signatures of `digest` under: `sha256-<hex>.sig`.
pub(crate) fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OCI_SCHEME}{}/{}", self.registry(), self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_print_back() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        for text in [
            "oci://127.0.0.1:5000/tools/wc:v1".to_string(),
            "oci://registry.example.com/wc:1.0".to_string(),
            format!("oci://localhost:5000/a/b/c@{digest}"),
            format!("oci://ghcr.io/org/tool:v2@{digest}"),
        ] {
            let r = OciRef::parse(&text).unwrap();
            assert_eq!(r.to_string(), text);
        }
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/wc").unwrap();
        assert_eq!(
            (r.host(), r.port(), r.repository(), r.tag()),
            ("127.0.0.1", Some(5000), "tools/wc", Some("latest"))
        );
        assert!(r.is_loopback());
        assert_eq!(r.docker_reference(), "127.0.0.1:5000/tools/wc");
        assert_eq!(signature_tag(&digest), format!("sha256-{}.sig", "ab".repeat(32)));
        let pinned = r.with_digest(&digest);
        assert_eq!(pinned.manifest_reference(), digest);
        assert!(!OciRef::parse("oci://ghcr.io/x:1").unwrap().is_loopback());
        assert!(OciRef::parse("oci://localhost/x:1").unwrap().is_loopback());
    }

    #[test]
    fn bad_references_are_refused_with_a_reason() {
        for (text, why) in [
            ("127.0.0.1:5000/wc:1", "expected oci://"),
            ("oci://wc:1", "name the registry host"),
            ("oci://library/wc:1", "name the registry host"),
            ("oci://host.example/Upper:1", "invalid reference"),
            ("oci://host.example/wc:1 x", "whitespace"),
            ("oci://host.example:0/wc:1", "bad port"),
            ("oci://host.example:99999/wc:1", "bad port"),
            ("oci://host.example/wc@sha256:abcdefabcdefabcdefabcdefabcdefabcdefabcd", "digest length"),
            ("oci://host.example/wc@sha1:abcdefabcdefabcdefabcdefabcdefabcdefabcd", "unsupported digest"),
            ("oci://host.example/wc@sha256:xyz", "invalid reference"),
            ("oci://host.example/wc:bad%tag", "invalid reference"),
            ("oci://", "component"),
        ] {
            let err = OciRef::parse(text).unwrap_err().to_string();
            assert!(err.starts_with("invalid_url: ") && err.contains(why), "{text}: {err}");
        }
    }
}
