//! cosign's signature format, as stored in a registry: under the tag
//! `sha256-<digest>.sig` an OCI manifest whose layers are each one signature — a
//! "simple signing" JSON payload naming the signed manifest digest, with the base64
//! signature over the payload's exact bytes in the layer annotation
//! `dev.cosignproject.cosign/signature` (and, for keyless signatures, the signing
//! certificate, its chain and the transparency log's bundle in three more).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use super::OciError;
use super::artifact::manifest_json;
use super::keys::SigningKey;
use super::registry::digest_of;

/// The media type of a signature layer (the payload).
pub(crate) const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding the base64 signature.
pub(crate) const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The annotation holding a keyless signature's PEM certificate.
pub(crate) const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The annotation holding the certificate's PEM chain.
pub(crate) const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// The annotation holding the transparency log's bundle (JSON).
pub(crate) const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";
/// The `critical.type` of a container image signature.
pub(crate) const PAYLOAD_TYPE: &str = "cosign container image signature";
/// Largest signature payload read.
pub(crate) const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// One signature as pulled (and kept in the store): the payload's exact bytes and the
/// layer's annotations that matter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureLayer {
    /// The simple signing payload, base64 (the exact bytes that were signed).
    pub payload: String,
    /// The base64 signature.
    pub signature: String,
    /// A keyless signature's PEM certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    /// Its PEM chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
    /// The transparency log bundle (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

impl SignatureLayer {
    /// The layer made from a payload blob and its descriptor's annotations; `None`
    /// when it carries no signature annotation.
    pub(crate) fn from_annotations(payload: &[u8], annotations: &HashMap<String, String>) -> Option<Self> {
        Some(Self {
            payload: STANDARD.encode(payload),
            signature: annotations.get(SIGNATURE_ANNOTATION)?.clone(),
            certificate: annotations.get(CERTIFICATE_ANNOTATION).cloned(),
            chain: annotations.get(CHAIN_ANNOTATION).cloned(),
            bundle: annotations.get(BUNDLE_ANNOTATION).cloned(),
        })
    }

    /// The payload bytes.
    pub fn payload_bytes(&self) -> Option<Vec<u8>> {
        STANDARD.decode(&self.payload).ok()
    }

    /// The signature bytes.
    pub fn signature_bytes(&self) -> Option<Vec<u8>> {
        STANDARD.decode(self.signature.trim()).ok()
    }

    fn annotations(&self) -> HashMap<String, String> {
        let mut map = HashMap::from([(SIGNATURE_ANNOTATION.to_string(), self.signature.clone())]);
        for (key, value) in [
            (CERTIFICATE_ANNOTATION, &self.certificate),
            (CHAIN_ANNOTATION, &self.chain),
            (BUNDLE_ANNOTATION, &self.bundle),
        ] {
            if let Some(value) = value {
                map.insert(key.to_string(), value.clone());
            }
        }
        map
    }
}

/// What a payload says it signs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Payload {
    /// `critical.identity.docker-reference`.
    pub docker_reference: String,
    /// `critical.image.docker-manifest-digest`.
    pub digest: String,
    /// `critical.type`.
    pub kind: String,
}

#[derive(Serialize, Deserialize)]
struct Simple {
    critical: Critical,
    #[serde(default)]
    optional: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: IdentityPart,
    image: ImagePart,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct IdentityPart {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct ImagePart {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

/// The payload signing `digest` of `docker_reference` (`HOST[:PORT]/REPO`).
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    let simple = Simple {
        critical: Critical {
            identity: IdentityPart { docker_reference: docker_reference.to_string() },
            image: ImagePart { digest: digest.to_string() },
            kind: PAYLOAD_TYPE.to_string(),
        },
        optional: None,
    };
    serde_json::to_vec(&simple).unwrap_or_default()
}

impl Payload {
    /// Parse a simple signing payload.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, String> {
        let simple: Simple =
            serde_json::from_slice(bytes).map_err(|e| format!("not a simple signing payload: {e}"))?;
        Ok(Self {
            docker_reference: simple.critical.identity.docker_reference,
            digest: simple.critical.image.digest,
            kind: simple.critical.kind,
        })
    }
}

/// A key-based signature of `digest` (the manifest of `docker_reference`) by `key`.
pub(crate) fn sign(
    key: &SigningKey,
    docker_reference: &str,
    digest: &str,
) -> Result<SignatureLayer, OciError> {
    let payload = payload(docker_reference, digest);
    let signature = key.sign(&payload)?;
    Ok(SignatureLayer {
        payload: STANDARD.encode(&payload),
        signature: STANDARD.encode(signature),
        certificate: None,
        chain: None,
        bundle: None,
    })
}

/// The blobs and manifest of a signature image holding `layers`: the config (as cosign
/// writes it) and each payload, then the manifest.
pub fn signature_image(layers: &[SignatureLayer]) -> Result<(Vec<Vec<u8>>, Vec<u8>), OciError> {
    let payloads: Vec<Vec<u8>> = layers
        .iter()
        .map(|l| {
            l.payload_bytes().ok_or_else(|| OciError::SignatureInvalid("a payload is not base64".into()))
        })
        .collect::<Result<_, _>>()?;
    let diff_ids: Vec<String> = payloads.iter().map(|p| digest_of(p)).collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }))
    .map_err(|e| OciError::Unsupported(e.to_string()))?;
    let described: Vec<(&str, &[u8], HashMap<String, String>)> = layers
        .iter()
        .zip(&payloads)
        .map(|(layer, payload)| (SIMPLE_SIGNING_MEDIA_TYPE, payload.as_slice(), layer.annotations()))
        .collect();
    let manifest = manifest_json("application/vnd.oci.image.config.v1+json", &config, &described, None)?;
    let mut blobs = vec![config];
    blobs.extend(payloads);
    Ok((blobs, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_names_the_digest_and_verifies_over_the_exact_payload() {
        let (key, _) = SigningKey::generate().unwrap();
        let digest = format!("sha256:{}", "cd".repeat(32));
        let layer = sign(&key, "127.0.0.1:5000/tools/wc", &digest).unwrap();
        let payload = Payload::parse(&layer.payload_bytes().unwrap()).unwrap();
        assert_eq!(payload.digest, digest);
        assert_eq!(payload.kind, PAYLOAD_TYPE);
        assert_eq!(payload.docker_reference, "127.0.0.1:5000/tools/wc");
        assert!(
            key.public_key().verifies(&layer.payload_bytes().unwrap(), &layer.signature_bytes().unwrap())
        );
        let (blobs, manifest) = signature_image(std::slice::from_ref(&layer)).unwrap();
        assert_eq!(blobs.len(), 2);
        let text = String::from_utf8(manifest).unwrap();
        assert!(text.contains(SIGNATURE_ANNOTATION) && text.contains(SIMPLE_SIGNING_MEDIA_TYPE), "{text}");
        let again = SignatureLayer::from_annotations(
            &blobs[1],
            &HashMap::from([(SIGNATURE_ANNOTATION.into(), layer.signature.clone())]),
        )
        .unwrap();
        assert_eq!(again, layer);
        assert!(Payload::parse(b"{}").is_err());
    }
}
