//! Publishing: the component and its config as blobs, the manifest under the tag,
//! and, with a key, a cosign signature of the manifest digest under
//! `sha256-<digest>.sig` (added to the signatures already there).

use super::OciError;
use super::artifact::{Artifact, OCI_MANIFEST_MEDIA_TYPE, parse_manifest};
use super::keys::SigningKey;
use super::pull::fetch_signatures;
use super::reference::{OciRef, signature_tag};
use super::registry::RegistryClient;
use super::sign::{sign, signature_image};

/// What a publish did.
#[derive(Debug, Clone)]
pub struct Published {
    /// The reference pinned to the pushed manifest.
    pub reference: OciRef,
    /// The manifest digest.
    pub digest: String,
    /// Whether a signature was pushed.
    pub signed: bool,
}

/// Push `artifact` (built by [`super::artifact::build`] from `component`) to
/// `reference`'s tag, and sign it with `key` when given.
pub async fn publish(
    client: &RegistryClient,
    reference: &OciRef,
    component: &[u8],
    artifact: &Artifact,
    key: Option<&SigningKey>,
) -> Result<Published, OciError> {
    let tag = reference.tag().filter(|_| reference.digest().is_none()).ok_or_else(|| {
        OciError::InvalidReference(format!("{reference}: publish to a tag (…:TAG), not a digest"))
    })?;
    client.push_blob(component).await?;
    client.push_blob(&artifact.config).await?;
    let digest = client.push_manifest(tag, OCI_MANIFEST_MEDIA_TYPE, &artifact.manifest).await?;
    let pinned = reference.with_digest(&digest);
    if let Some(key) = key {
        push_signature(client, &pinned, key).await?;
    }
    Ok(Published { reference: pinned, digest, signed: key.is_some() })
}

/// Sign the manifest `pinned` names with `key` and push the signature, keeping the
/// signatures already there.
pub(crate) async fn push_signature(
    client: &RegistryClient,
    pinned: &OciRef,
    key: &SigningKey,
) -> Result<(), OciError> {
    let digest = pinned.digest().ok_or_else(|| OciError::InvalidReference(format!("{pinned}: no digest")))?;
    let mut layers = fetch_signatures(client, digest, pinned).await?;
    layers.push(sign(key, &pinned.docker_reference(), digest)?);
    let (blobs, manifest) = signature_image(&layers)?;
    for blob in &blobs {
        client.push_blob(blob).await?;
    }
    // Check what was built parses back as a signature image before replacing the tag.
    parse_manifest(&manifest, OCI_MANIFEST_MEDIA_TYPE, "the signature image")?;
    client.push_manifest(&signature_tag(digest), OCI_MANIFEST_MEDIA_TYPE, &manifest).await?;
    Ok(())
}
