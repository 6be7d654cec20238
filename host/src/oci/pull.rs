//! Pulling a component: reference → manifest (digest checked) → the one wasm layer
//! (size bounded before it is asked for, then size and digest checked) → the
//! signatures under `sha256-<digest>.sig` → verified against the trust set. Nothing is
//! written: every check (digest, pin, signature, and the caller's import checks) runs
//! on the bytes in memory, and the caller keeps them in the store ([`Pulled::keep`],
//! [`Unstored::keep`]) only once it has admitted them, so nothing reaches the store
//! from a refused pull or fetch, whatever its source.
//!
//! A reference pinned to a digest is first looked up in the store; a hit is hashed
//! again and its recorded signatures verified again against the trust set (a hit whose
//! signatures no longer satisfy the policy is pulled afresh, never used as it is).

use super::OciError;
use super::artifact::{component_layer, parse_manifest};
use super::reference::{OciRef, signature_tag};
use super::registry::{RegistryClient, digest_of};
use super::sign::{MAX_PAYLOAD_BYTES, SIMPLE_SIGNING_MEDIA_TYPE, SignatureLayer};
use super::store::Store;
use super::transport::{RegistrySettings, Request, Transport, read_bounded};
use super::verify::{TrustSet, Verified, verify};

/// Most signature layers looked at for one manifest.
const MAX_SIGNATURES: usize = 32;

/// A pulled and verified component.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference pinned to the manifest digest (the tag kept, for `update`).
    pub reference: OciRef,
    /// The manifest digest.
    pub digest: String,
    /// The component's bytes.
    pub component: Vec<u8>,
    /// Hex sha256 of the component.
    pub sha256: String,
    /// Who signed it (`None` when the policy requires no signature).
    pub signer: Option<Verified>,
    /// Whether it came from the store, without asking the registry.
    pub from_store: bool,
    /// The manifest's bytes.
    manifest: Vec<u8>,
    /// The signatures found (kept with it, verified again at each use).
    signatures: Vec<SignatureLayer>,
}

impl Pulled {
    /// Keep it in `store`: the manifest, the component and the signatures found.
    pub fn keep(&self, store: &Store) -> Result<(), OciError> {
        if self.from_store {
            return Ok(());
        }
        store.put_blob(&self.manifest)?;
        store.put_blob(&self.component)?;
        store.put_signatures(&self.digest, &self.signatures)
    }

    /// The component, and what to keep with it once it is admitted.
    pub fn into_parts(self, store: &Store) -> (Vec<u8>, Unstored) {
        let rest = (!self.from_store).then_some((self.digest, self.manifest, self.signatures));
        (self.component, Unstored { store: store.clone(), pulled: rest, fetched: false })
    }
}

/// A checked component not in the store yet: [`Unstored::keep`] writes it (and, for a
/// registry pull, its manifest and signatures) once the caller has admitted it.
#[derive(Debug)]
pub struct Unstored {
    store: Store,
    /// A registry pull's manifest digest, manifest and signatures.
    pulled: Option<(String, Vec<u8>, Vec<SignatureLayer>)>,
    /// Whether the component was fetched from a URL (and is not in the store).
    fetched: bool,
}

impl Unstored {
    /// Keep `component` (the bytes this came with) and the rest in the store.
    pub fn keep(&self, component: &[u8]) -> Result<(), OciError> {
        if let Some((digest, manifest, signatures)) = &self.pulled {
            self.store.put_blob(manifest)?;
            self.store.put_blob(component)?;
            self.store.put_signatures(digest, signatures)?;
        } else if self.fetched {
            self.store.put_blob(component)?;
        }
        Ok(())
    }

    /// [`Unstored::keep`] once the plugin `plugin` loaded from `component` (pin and
    /// imports checked): a refusal is the plugin's load error.
    pub(crate) fn keep_loaded(&self, plugin: &str, component: &[u8]) -> Result<(), crate::error::LoadError> {
        self.keep(component).map_err(|e| crate::error::LoadError::Remote {
            plugin: plugin.to_string(),
            code: e.code(),
            message: e.message().to_string(),
        })
    }
}

/// Pull `reference` with `client` and check it: the signature against `trust` (`None`:
/// none required), then keep it in `store`.
pub async fn pull(
    reference: &OciRef,
    client: &RegistryClient,
    trust: Option<&TrustSet>,
    store: &Store,
) -> Result<Pulled, OciError> {
    let max_layer = client.settings().max_layer_bytes;
    if reference.digest().is_some()
        && let Some(stored) = from_store(reference, trust, store, max_layer)?
    {
        return Ok(stored);
    }
    let what = reference.to_string();
    let (manifest_bytes, digest, media_type) = client
        .manifest(reference.manifest_reference())
        .await?
        .ok_or_else(|| OciError::NotFound(format!("{what}: the registry has no such manifest")))?;
    let manifest = parse_manifest(&manifest_bytes, &media_type, &what)?;
    let layer = component_layer(&manifest, max_layer, &what)?;
    let layer_digest = layer.digest().to_string();
    let component = match store.blob(&layer_digest, max_layer)? {
        Some(bytes) if bytes.len() as u64 == layer.size() => bytes,
        _ => {
            client
                .blob(&layer_digest, layer.size(), max_layer, &format!("{what}: the component layer"))
                .await?
        }
    };
    let pinned = reference.with_digest(&digest);
    let (signer, signatures) = match trust {
        None => (None, Vec::new()),
        Some(trust) => {
            let signatures = fetch_signatures(client, &digest, &pinned).await?;
            (Some(verify(&signatures, &digest, trust, &pinned.to_string())?), signatures)
        }
    };
    Ok(Pulled {
        reference: pinned,
        sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, &component)),
        digest,
        component,
        signer,
        from_store: false,
        manifest: manifest_bytes,
        signatures,
    })
}

/// The pinned `reference` from the store, hashed and verified again; `None` when it is
/// not all there, or its recorded signatures do not satisfy `trust`.
pub fn from_store(
    reference: &OciRef,
    trust: Option<&TrustSet>,
    store: &Store,
    max_layer: u64,
) -> Result<Option<Pulled>, OciError> {
    let Some(digest) = reference.digest() else { return Ok(None) };
    let what = reference.to_string();
    let Some(manifest_bytes) = store.blob(digest, super::transport::MAX_MANIFEST_BYTES)? else {
        return Ok(None);
    };
    let manifest = parse_manifest(&manifest_bytes, "", &what)?;
    let layer = component_layer(&manifest, max_layer, &what)?;
    let Some(component) = store.blob(layer.digest().as_ref(), max_layer)? else { return Ok(None) };
    let signatures = store.signatures(digest)?;
    let signer = match trust {
        None => None,
        Some(trust) => match verify(&signatures, digest, trust, &what) {
            Ok(signer) => Some(signer),
            Err(_) => return Ok(None),
        },
    };
    Ok(Some(Pulled {
        reference: reference.clone(),
        digest: digest.to_string(),
        sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, &component)),
        component,
        signer,
        from_store: true,
        manifest: manifest_bytes,
        signatures,
    }))
}

/// The signatures stored for manifest `digest` under cosign's tag (none: empty).
pub async fn fetch_signatures(
    client: &RegistryClient,
    digest: &str,
    image: &OciRef,
) -> Result<Vec<SignatureLayer>, OciError> {
    let tag = signature_tag(digest);
    let what = format!("the signatures of {image}");
    let Some((bytes, _, media_type)) = client.manifest(&tag).await? else { return Ok(Vec::new()) };
    let manifest = parse_manifest(&bytes, &media_type, &what)?;
    let mut layers = Vec::new();
    for layer in manifest
        .layers()
        .iter()
        .filter(|l| l.media_type().as_ref() == SIMPLE_SIGNING_MEDIA_TYPE)
        .take(MAX_SIGNATURES)
    {
        let Some(annotations) = layer.annotations() else { continue };
        let digest = layer.digest().to_string();
        let payload =
            client.blob(&digest, layer.size(), MAX_PAYLOAD_BYTES, &format!("{what}: a payload")).await?;
        if let Some(signature) = SignatureLayer::from_annotations(&payload, annotations) {
            layers.push(signature);
        }
    }
    Ok(layers)
}

/// The component at a pinned `https://` URL: from the store when there, else fetched
/// (vetted like registry traffic; the URL's own host is the exempt one) and checked
/// against `sha256` (hex); kept by `Unstored::keep` once the caller admits it.
pub async fn fetch_pinned_url(
    url: &url::Url,
    sha256: &str,
    settings: &RegistrySettings,
    store: &Store,
) -> Result<(Vec<u8>, Unstored), OciError> {
    let digest = format!("sha256:{}", sha256.to_ascii_lowercase());
    let unstored = |fetched| Unstored { store: store.clone(), pulled: None, fetched };
    if let Some(bytes) = store.blob(&digest, settings.max_layer_bytes)? {
        return Ok((bytes, unstored(false)));
    }
    if url.scheme() != "https" {
        return Err(OciError::Blocked(format!("{url}: a component is fetched over https only")));
    }
    let settings = RegistrySettings { plain_http: false, ..settings.clone() };
    let transport = Transport::for_origin(url, &settings)?;
    let response = transport.send(Request::new(reqwest::Method::GET, url.clone())).await?;
    if !response.status().is_success() {
        return Err(OciError::Registry(format!("{url}: HTTP {}", response.status().as_u16())));
    }
    let bytes = read_bounded(response, settings.max_layer_bytes, url.as_str()).await?;
    let actual = digest_of(&bytes);
    if actual != digest {
        return Err(OciError::DigestMismatch(format!(
            "{url}: expected {digest}, the bytes hash to {actual}"
        )));
    }
    Ok((bytes, unstored(true)))
}

/// The component of a policy entry pinned to a manifest digest: from the store
/// (verified again), else pulled by that digest with the `credentials` (asked for only
/// then) and verified; kept by [`Unstored::keep`] once the caller admits it.
pub(crate) async fn load_pinned(
    reference: &OciRef,
    signers: Option<&TrustSet>,
    settings: RegistrySettings,
    credentials: impl FnOnce() -> Result<super::Credentials, OciError>,
    store: &Store,
) -> Result<(Vec<u8>, Unstored), OciError> {
    if reference.digest().is_none() {
        return Err(OciError::InvalidReference(format!("{reference}: not pinned to a digest")));
    }
    if let Some(stored) = from_store(reference, signers, store, settings.max_layer_bytes)? {
        return Ok(stored.into_parts(store));
    }
    let client = RegistryClient::new(reference, settings, credentials()?)?;
    let pulled = pull(reference, &client, signers, store).await?;
    Ok(pulled.into_parts(store))
}
