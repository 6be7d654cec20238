//! Entries whose component comes from elsewhere: `source = "oci://…@sha256:…"` (a
//! registry, pinned to the manifest digest, with who must have signed it) or
//! `source = "https://…"` (pinned by the entry's `sha256` alone), and the `[trust]`
//! section that names the signers.
//!
//! ```toml
//! [trust]
//! require-signature = true                 # default: an oci:// source must be signed
//! trusted-root = "sigstore/trusted_root.json"   # for keyless signatures, relative to this file
//! trusted-root-sha256 = "…"                # the root file's bytes, pinned
//!
//! [trust.keys]
//! alice = """-----BEGIN PUBLIC KEY-----
//! …
//! -----END PUBLIC KEY-----"""
//!
//! [plugins.wordcount]
//! source = "oci://ghcr.io/alice/wordcount:1.0@sha256:…"   # the tag is kept for `toolhost update`
//! sha256 = "…"                                             # the component inside
//! keys = ["alice"]                                         # who may have signed it, or:
//! identities = [{ subject = "alice@example.com", issuer = "https://accounts.google.com" }]
//! plain-http = true                                        # only for a loopback registry
//! registry-auth = true                                     # log in with your docker config
//! ```
//!
//! Keys and the trusted root are resolved within the file that names them, so an entry
//! can be trusted only by what the same (trusted) file says.
//!
//! `require-signature = false` only lets an entry name no signer (then nothing is
//! verified: there is nobody to verify against). An entry that names `keys` or
//! `identities` is verified as always, so a missing or invalid signature is refused
//! whatever the setting says.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use crate::oci::keyless::{MAX_TRUSTED_ROOT_BYTES, TrustedRoot};
use crate::oci::keys::PublicKey;
use crate::oci::{Identity, OciRef, TrustSet};

/// Where an entry's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntrySource {
    /// A file (a relative source is taken relative to the policy file's dir).
    File(std::path::PathBuf),
    /// A registry artifact, pinned to its manifest digest.
    Oci(OciRef),
    /// An `https://` URL, pinned by the entry's `sha256`.
    Https(url::Url),
}

impl std::fmt::Display for EntrySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Oci(reference) => write!(f, "{reference}"),
            Self::Https(url) => write!(f, "{url}"),
        }
    }
}

type Refusal = (Range<usize>, String);

/// The `[trust]` section as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawTrust {
    require_signature: Option<bool>,
    #[serde(default)]
    keys: BTreeMap<Spanned<String>, Spanned<String>>,
    trusted_root: Option<Spanned<String>>,
    trusted_root_sha256: Option<Spanned<String>>,
}

/// One `identities` item of an entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIdentity {
    subject: String,
    issuer: String,
}

/// The `[trust]` of one file, parsed.
pub(super) struct FileTrust {
    require: bool,
    keys: BTreeMap<String, PublicKey>,
    root: Option<Arc<TrustedRoot>>,
}

impl RawTrust {
    /// Parse the section: every key a P-256 public key, the trusted root read (relative
    /// to `base`) and its bytes matching their pinned sha256.
    pub(super) fn parse(&self, base: &Path) -> Result<FileTrust, Refusal> {
        let mut keys = BTreeMap::new();
        for (name, pem) in &self.keys {
            super::PluginEntry::check_name(name.get_ref())
                .map_err(|e| (name.span(), format!("trust.keys: {e}")))?;
            let key = PublicKey::from_pem(pem.get_ref())
                .map_err(|e| (pem.span(), format!("trust.keys.{}: {}", name.get_ref(), e.message())))?;
            keys.insert(name.get_ref().clone(), key);
        }
        let root = match (&self.trusted_root, &self.trusted_root_sha256) {
            (None, None) => None,
            (Some(path), Some(sha)) => Some(Arc::new(read_root(base, path, sha)?)),
            (Some(path), None) => {
                return Err((
                    path.span(),
                    "trust.trusted-root needs trusted-root-sha256 (its bytes, pinned)".into(),
                ));
            }
            (None, Some(sha)) => {
                return Err((sha.span(), "trust.trusted-root-sha256 without trusted-root".into()));
            }
        };
        Ok(FileTrust { require: self.require_signature.unwrap_or(true), keys, root })
    }
}

fn read_root(base: &Path, path: &Spanned<String>, sha: &Spanned<String>) -> Result<TrustedRoot, Refusal> {
    let file = base.join(path.get_ref());
    let at = |why: String| (path.span(), format!("trust.trusted-root {}: {why}", file.display()));
    let bytes = confine::hostfs::read_regular_following(&file, MAX_TRUSTED_ROOT_BYTES)
        .map_err(|e| at(e.to_string()))?
        .ok_or_else(|| at("no such file".into()))?;
    let actual = super::trust::sha256_hex(&bytes);
    if !actual.eq_ignore_ascii_case(sha.get_ref()) {
        return Err((sha.span(), format!("trust.trusted-root-sha256: the file's sha256 is {actual}")));
    }
    TrustedRoot::from_json(&bytes).map_err(|e| at(e.message().to_string()))
}

/// An entry's `source` and who must have signed it, from its keys as written.
pub(super) struct RawRemote<'a> {
    pub(super) name: &'a str,
    pub(super) source: &'a Spanned<String>,
    pub(super) keys: &'a [Spanned<String>],
    pub(super) identities: &'a [RawIdentity],
    pub(super) plain_http: Option<&'a Spanned<bool>>,
    pub(super) registry_auth: Option<&'a Spanned<bool>>,
}

impl RawRemote<'_> {
    /// The source, and for an `oci://` one the signers it needs (`None`: the file's
    /// `[trust] require-signature = false` and none named).
    pub(super) fn parse(
        &self,
        base: &Path,
        trust: &FileTrust,
    ) -> Result<(EntrySource, Option<TrustSet>), Refusal> {
        let name = self.name;
        let text = self.source.get_ref();
        let at = |why: String| (self.source.span(), format!("plugins.{name}.source: {why}"));
        let remote_only = |what: &str, span: Range<usize>| {
            (span, format!("plugins.{name}.{what}: only for an oci:// source"))
        };
        if !text.starts_with("oci://") {
            if let Some(key) = self.keys.first() {
                return Err(remote_only("keys", key.span()));
            }
            if !self.identities.is_empty() {
                return Err(remote_only("identities", self.source.span()));
            }
            if let Some(flag) = self.plain_http {
                return Err(remote_only("plain-http", flag.span()));
            }
            if let Some(flag) = self.registry_auth {
                return Err(remote_only("registry-auth", flag.span()));
            }
            if text.starts_with("https://") {
                let url = url::Url::parse(text).map_err(|e| at(e.to_string()))?;
                return Ok((EntrySource::Https(url), None));
            }
            if text.contains("://") {
                return Err(at("only oci://, https:// or a file path".into()));
            }
            return Ok((EntrySource::File(base.join(text)), None));
        }
        let reference = OciRef::parse(text).map_err(|e| at(e.message().to_string()))?;
        if reference.digest().is_none() {
            return Err(at("pin the manifest digest (…:TAG@sha256:…; `toolhost add` writes it)".into()));
        }
        if let Some(flag) = self.plain_http.filter(|f| *f.get_ref())
            && !reference.is_loopback()
        {
            return Err((
                flag.span(),
                format!("plugins.{name}.plain-http: only for a registry on this machine"),
            ));
        }
        let mut signers = TrustSet { root: trust.root.clone(), ..TrustSet::default() };
        for key in self.keys {
            let pem = trust.keys.get(key.get_ref()).ok_or_else(|| {
                (
                    key.span(),
                    format!("plugins.{name}.keys: no key `{}` in this file's [trust.keys]", key.get_ref()),
                )
            })?;
            signers.keys.push((key.get_ref().clone(), pem.clone()));
        }
        signers.identities = self
            .identities
            .iter()
            .map(|i| Identity { subject: i.subject.clone(), issuer: i.issuer.clone() })
            .collect();
        if !signers.identities.is_empty() && signers.root.is_none() {
            return Err(at("keyless identities need [trust] trusted-root (and trusted-root-sha256)".into()));
        }
        if signers.is_empty() {
            if trust.require {
                return Err(at(
                    "an oci:// source must name who signed it: `keys` or `identities` (or set [trust] require-signature = false)"
                        .into(),
                ));
            }
            return Ok((EntrySource::Oci(reference), None));
        }
        Ok((EntrySource::Oci(reference), Some(signers)))
    }
}
