//! Deciding whether an artifact is signed by someone the policy trusts.
//!
//! A signature counts when its signature verifies over the payload's exact bytes with
//! a trusted key (or, keyless, with a certificate that chains to the trusted root, was
//! logged in a trusted transparency log, and names a trusted identity), **and** the
//! payload is a container image signature naming exactly the manifest digest being
//! used. One valid signature is enough; when there is none the error says what each
//! signature there failed on and what was expected. The payload's
//! `docker-reference` is not compared: the digest is what is signed, and a copy of
//! the same manifest in another repository is the same artifact.

use std::fmt;
use std::sync::Arc;

use super::OciError;
use super::keyless::{Identity, TrustedRoot, verify_keyless};
use super::keys::PublicKey;
use super::sign::{PAYLOAD_TYPE, Payload, SignatureLayer};

/// Who may sign one source.
#[derive(Debug, Clone, Default)]
pub struct TrustSet {
    /// Trusted keys, by the name the policy gives them.
    pub keys: Vec<(String, PublicKey)>,
    /// Trusted keyless identities.
    pub identities: Vec<Identity>,
    /// The root keyless signatures are checked against (needed when `identities` is
    /// not empty).
    pub root: Option<Arc<TrustedRoot>>,
}

impl TrustSet {
    /// Whether nobody is trusted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.identities.is_empty()
    }

    /// Who is trusted, for messages.
    pub fn expected(&self) -> String {
        let mut who: Vec<String> =
            self.keys.iter().map(|(name, key)| format!("key {name} ({})", key.fingerprint())).collect();
        who.extend(self.identities.iter().map(|i| format!("identity {i}")));
        if who.is_empty() {
            "nobody is trusted".into()
        } else {
            format!("expected one by {}", who.join(" or "))
        }
    }
}

/// Who signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// A trusted key.
    Key {
        /// Its name in the policy.
        name: String,
        /// Its fingerprint.
        fingerprint: String,
    },
    /// A trusted keyless identity.
    Identity(Identity),
}

impl fmt::Display for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key { name, fingerprint } => write!(f, "key {name} ({fingerprint})"),
            Self::Identity(identity) => write!(f, "identity {identity}"),
        }
    }
}

/// Check `layers` (the signatures found for `image`) against `trust` for the manifest
/// `digest`: `signature_missing` when there are none, `signature_invalid` when none
/// is both valid and by someone trusted.
pub(crate) fn verify(
    layers: &[SignatureLayer],
    digest: &str,
    trust: &TrustSet,
    image: &str,
) -> Result<Verified, OciError> {
    if layers.is_empty() {
        return Err(OciError::SignatureMissing(format!("{image}: no signature; {}", trust.expected())));
    }
    let mut failures = Vec::new();
    for (i, layer) in layers.iter().enumerate() {
        match verify_one(layer, digest, trust) {
            Ok(verified) => return Ok(verified),
            Err(why) => failures.push(format!("#{}: {why}", i + 1)),
        }
    }
    Err(OciError::SignatureInvalid(format!(
        "{image}: {} signature(s), none valid ({}); {}",
        layers.len(),
        failures.join("; "),
        trust.expected()
    )))
}

fn verify_one(layer: &SignatureLayer, digest: &str, trust: &TrustSet) -> Result<Verified, String> {
    let payload = layer.payload_bytes().ok_or("the payload is not base64")?;
    let signature = layer.signature_bytes().ok_or("the signature is not base64")?;
    let signer = signer(layer, &payload, &signature, trust)?;
    let claims = Payload::parse(&payload)?;
    if claims.kind != PAYLOAD_TYPE {
        return Err(format!("signed by {signer}, but the payload's type is {:?}", claims.kind));
    }
    if claims.digest != digest {
        return Err(format!("signed by {signer}, but for another digest {}", claims.digest));
    }
    Ok(signer)
}

/// Who made `signature` over `payload`, among the trusted.
fn signer(
    layer: &SignatureLayer,
    payload: &[u8],
    signature: &[u8],
    trust: &TrustSet,
) -> Result<Verified, String> {
    if let Some((name, key)) = trust.keys.iter().find(|(_, key)| key.verifies(payload, signature)) {
        return Ok(Verified::Key { name: name.clone(), fingerprint: key.fingerprint() });
    }
    if layer.certificate.is_none() {
        return Err(if trust.keys.is_empty() {
            "a key-based signature, and no key is trusted".into()
        } else {
            "does not verify with any trusted key (another key, or a changed payload)".into()
        });
    }
    if trust.identities.is_empty() {
        return Err("a keyless signature, and no identity is trusted".into());
    }
    let root = trust.root.as_ref().ok_or("a keyless signature, and no trusted root is configured")?;
    verify_keyless(layer, payload, signature, root, &trust.identities).map(Verified::Identity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oci::keys::SigningKey;
    use crate::oci::sign::sign;

    fn digest(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    #[test]
    fn each_way_a_signature_can_fail_is_named() {
        let (alice, _) = SigningKey::generate().unwrap();
        let (mallory, _) = SigningKey::generate().unwrap();
        let trust = TrustSet { keys: vec![("alice".into(), alice.public_key())], ..TrustSet::default() };
        let good = sign(&alice, "r/x", &digest('a')).unwrap();
        assert!(
            matches!(verify(std::slice::from_ref(&good), &digest('a'), &trust, "img"), Ok(Verified::Key { name, .. }) if name == "alice")
        );

        let err = verify(&[], &digest('a'), &trust, "img").unwrap_err();
        assert_eq!(err.code(), "signature_missing");
        assert!(err.to_string().contains("expected one by key alice (sha256:"), "{err}");

        let other_key = sign(&mallory, "r/x", &digest('a')).unwrap();
        let err = verify(std::slice::from_ref(&other_key), &digest('a'), &trust, "img").unwrap_err();
        assert_eq!(err.code(), "signature_invalid");
        assert!(err.to_string().contains("does not verify with any trusted key"), "{err}");

        let other_digest = sign(&alice, "r/x", &digest('b')).unwrap();
        let err = verify(&[other_digest], &digest('a'), &trust, "img").unwrap_err().to_string();
        assert!(err.contains(&format!("for another digest {}", digest('b'))), "{err}");

        let mut tampered = good.clone();
        let text = String::from_utf8(tampered.payload_bytes().unwrap()).unwrap().replace("r/x", "r/y");
        tampered.payload = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text);
        assert_eq!(verify(&[tampered], &digest('a'), &trust, "img").unwrap_err().code(), "signature_invalid");

        // One good signature among bad ones is enough.
        assert!(verify(&[other_key, good], &digest('a'), &trust, "img").is_ok());
        // Trusting nobody verifies nothing.
        let none = TrustSet::default();
        let err =
            verify(&[sign(&alice, "r/x", &digest('a')).unwrap()], &digest('a'), &none, "img").unwrap_err();
        assert!(err.to_string().contains("no key is trusted"), "{err}");
    }
}
