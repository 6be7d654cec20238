//! Sigstore bundles (`.sigstore.json`, media types `application/vnd.dev.sigstore.bundle*`
//! v0.1–v0.3), verified offline as the public Sigstore instance makes them, against a
//! trusted root (`trusted_root.json`):
//!
//! 1. the certificate embeds an SCT from one of the root's CT logs (`sct`) —
//!    `signature_sct_invalid`;
//! 2. it chains to one of the root's CAs, valid with the code-signing usage at the
//!    log's time — `signature_certificate_invalid`;
//! 3. the transparency-log entry: its log is one of the root's, valid at the entry's
//!    time; its signed entry timestamp verifies with that log's key; its inclusion
//!    proof (when the bundle has one) leads to a root hash the log's checkpoint signs
//!    (`tlog`) — `signature_tlog_invalid`;
//! 4. the logged entry (`dsse` or `hashedrekord` v0.0.1) is this bundle's signature,
//!    payload and certificate — `signature_tlog_invalid`;
//! 5. the signature verifies with its key, over the DSSE envelope's pre-authentication
//!    encoding or the artifact, and the artifact is what was signed (a DSSE statement's
//!    subject digest, or the message digest) — `signature_invalid`;
//! 6. its subject and OIDC issuer are a trusted identity — `signature_identity_mismatch`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::CertificateDer;
use serde::Deserialize;
use sha2::{Digest, Sha256, Sha512};

use super::OciError;
use super::keyless::{Identity, TrustedRoot, trusted_identity};
use super::keys::pem_decode_all;
use super::tlog::{EntryClaim, InclusionProof, verify_inclusion, verify_set};

/// Largest bundle read.
pub const MAX_BUNDLE_BYTES: usize = 1 << 20;

/// What a bundle must be for.
#[derive(Debug, Clone, Copy)]
pub enum Artifact<'a> {
    /// The artifact's bytes.
    Bytes(&'a [u8]),
    /// Only its digest: (`sha256` or `sha512`, lower-case hex). A message signature needs the bytes.
    Digest(&'a str, &'a str),
}

impl Artifact<'_> {
    /// Its digest with `algorithm` (`sha256`, `sha512`), hex.
    fn digest(&self, algorithm: &str) -> Option<String> {
        match (self, algorithm) {
            (Self::Bytes(b), "sha256") => Some(hex::encode(Sha256::digest(b))),
            (Self::Bytes(b), "sha512") => Some(hex::encode(Sha512::digest(b))),
            (Self::Digest(a, hex), _) if *a == algorithm => Some(hex.to_ascii_lowercase()),
            _ => None,
        }
    }
}

/// An int64 as protobuf's JSON writes it: a string (or a number).
fn int<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s.parse().map_err(serde::de::Error::custom),
        serde_json::Value::Number(n) => n.as_i64().ok_or_else(|| serde::de::Error::custom("not an int64")),
        _ => Err(serde::de::Error::custom("not an int64")),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    verification_material: Material,
    message_signature: Option<MessageSignature>,
    dsse_envelope: Option<Envelope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    certificate: Option<Raw>,
    x509_certificate_chain: Option<Chain>,
    #[serde(default)]
    tlog_entries: Vec<TlogEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct Chain {
    certificates: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlogEntry {
    #[serde(deserialize_with = "int")]
    log_index: i64,
    log_id: LogId,
    kind_version: KindVersion,
    #[serde(deserialize_with = "int")]
    integrated_time: i64,
    inclusion_promise: Option<Promise>,
    inclusion_proof: Option<Proof>,
    canonicalized_body: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogId {
    key_id: String,
}

#[derive(Deserialize)]
struct KindVersion {
    kind: String,
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Promise {
    signed_entry_timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Proof {
    #[serde(deserialize_with = "int")]
    log_index: i64,
    root_hash: String,
    #[serde(deserialize_with = "int")]
    tree_size: i64,
    hashes: Vec<String>,
    checkpoint: Checkpoint,
}

#[derive(Deserialize)]
struct Checkpoint {
    envelope: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: Option<MessageDigest>,
    signature: String,
}

#[derive(Deserialize)]
struct MessageDigest {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

/// Who signed a bundle, and where it was logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSigner {
    /// The trusted identity its certificate names.
    pub identity: Identity,
    /// When the log integrated it (seconds since the epoch).
    pub integrated_time: i64,
    /// Its index in the log.
    pub log_index: i64,
}

fn b64(what: &str, s: &str) -> Result<Vec<u8>, OciError> {
    STANDARD.decode(s).map_err(|_| OciError::SignatureInvalid(format!("the bundle's {what} is not base64")))
}

/// Verify the Sigstore bundle `json` for `artifact` against `root`, signed by one of
/// `identities` (see the module docs for each check and its code).
pub fn verify_bundle(
    json: &[u8],
    artifact: Artifact<'_>,
    root: &TrustedRoot,
    identities: &[Identity],
) -> Result<BundleSigner, OciError> {
    if json.len() > MAX_BUNDLE_BYTES {
        return Err(OciError::TooLarge(format!(
            "a bundle of {} bytes (at most {MAX_BUNDLE_BYTES})",
            json.len()
        )));
    }
    let bundle: Bundle = serde_json::from_slice(json)
        .map_err(|e| OciError::SignatureInvalid(format!("not a Sigstore bundle: {e}")))?;
    if !bundle.media_type.starts_with("application/vnd.dev.sigstore.bundle") {
        return Err(OciError::SignatureInvalid(format!("not a Sigstore bundle: {:?}", bundle.media_type)));
    }
    let material = &bundle.verification_material;
    let mut certs = match (&material.certificate, &material.x509_certificate_chain) {
        (Some(cert), _) => vec![b64("certificate", &cert.raw_bytes)?],
        (None, Some(chain)) => {
            chain.certificates.iter().map(|c| b64("certificate", &c.raw_bytes)).collect::<Result<_, _>>()?
        }
        (None, None) => return Err(OciError::SignatureInvalid("the bundle has no certificate".into())),
    };
    if certs.is_empty() {
        return Err(OciError::SignatureInvalid("the bundle has no certificate".into()));
    }
    let leaf = certs.remove(0);
    let signed = signed_content(&bundle)?;
    let entry = material
        .tlog_entries
        .first()
        .ok_or_else(|| OciError::TlogInvalid("the bundle has no transparency log entry".into()))?;
    // The certificate first (its time is the entry's, verified next before anything is
    // accepted), then the log, then what was signed and by whom.
    let issuer = root.issuer_of(&leaf).map_err(OciError::CertificateInvalid)?;
    root.check_sct(&leaf, &issuer).map_err(OciError::SctInvalid)?;
    root.chain_at(&leaf, &certs, entry.integrated_time).map_err(OciError::CertificateInvalid)?;
    check_tlog(entry, root).map_err(OciError::TlogInvalid)?;
    let body = b64("log entry", &entry.canonicalized_body)?;
    check_body(&body, &entry.kind_version, &signed, &leaf).map_err(OciError::TlogInvalid)?;
    check_signature(&leaf, &signed, artifact).map_err(OciError::SignatureInvalid)?;
    let identity = trusted_identity(&leaf, identities).map_err(OciError::IdentityMismatch)?;
    Ok(BundleSigner { identity, integrated_time: entry.integrated_time, log_index: entry.log_index })
}

/// What a bundle signs.
struct Signed {
    signature: Vec<u8>,
    /// A DSSE envelope's payload type and payload (`None`: a message signature).
    dsse: Option<(String, Vec<u8>)>,
    /// A message signature's digest (algorithm, hex), when the bundle gives it.
    message_digest: Option<(String, String)>,
}

impl Signed {
    /// The bytes the signature is over: the DSSE pre-authentication encoding, or the artifact.
    fn message(&self, artifact: Artifact<'_>) -> Result<Vec<u8>, String> {
        match (&self.dsse, artifact) {
            (Some((t, payload)), _) => {
                let mut pae = format!("DSSEv1 {} {t} {} ", t.len(), payload.len()).into_bytes();
                pae.extend(payload);
                Ok(pae)
            }
            (None, Artifact::Bytes(bytes)) => Ok(bytes.to_vec()),
            (None, Artifact::Digest(..)) => {
                Err("a message signature is checked over the artifact's bytes".into())
            }
        }
    }
}

fn signed_content(bundle: &Bundle) -> Result<Signed, OciError> {
    match (&bundle.dsse_envelope, &bundle.message_signature) {
        (Some(envelope), None) => {
            let [one] = &envelope.signatures[..] else {
                return Err(OciError::SignatureInvalid(
                    "a DSSE envelope without exactly one signature".into(),
                ));
            };
            let payload = b64("DSSE payload", &envelope.payload)?;
            Ok(Signed {
                signature: b64("DSSE signature", &one.sig)?,
                dsse: Some((envelope.payload_type.clone(), payload)),
                message_digest: None,
            })
        }
        (None, Some(message)) => Ok(Signed {
            signature: b64("message signature", &message.signature)?,
            dsse: None,
            message_digest: match &message.message_digest {
                Some(d) => Some((
                    // Protobuf's `SHA2_256` is Rekor's `sha256`.
                    d.algorithm.to_ascii_lowercase().replace("sha2_", "sha"),
                    hex::encode(b64("message digest", &d.digest)?),
                )),
                None => None,
            },
        }),
        _ => Err(OciError::SignatureInvalid("a bundle holds a DSSE envelope or a message signature".into())),
    }
}

/// The log entry's SET and inclusion proof, against the root's log keys.
fn check_tlog(entry: &TlogEntry, root: &TrustedRoot) -> Result<(), String> {
    let key_id = STANDARD.decode(&entry.log_id.key_id).map_err(|_| "the entry's log id is not base64")?;
    let log = root.log(&key_id, entry.integrated_time).ok_or_else(|| {
        format!("logged in {}, not a transparency log of the trusted root", entry.log_id.key_id)
    })?;
    let promise = entry.inclusion_promise.as_ref().ok_or("the entry has no signed entry timestamp")?;
    let set = STANDARD.decode(&promise.signed_entry_timestamp).map_err(|_| "the SET is not base64")?;
    let log_id_hex = hex::encode(&key_id);
    let claim = EntryClaim {
        body_b64: &entry.canonicalized_body,
        integrated_time: entry.integrated_time,
        log_id_hex: &log_id_hex,
        log_index: entry.log_index,
    };
    verify_set(&log.key, &claim, &set)?;
    if let Some(proof) = &entry.inclusion_proof {
        let decode = |h: &String| STANDARD.decode(h).map_err(|_| "an inclusion proof hash is not base64");
        let proof = InclusionProof {
            index: u64::try_from(proof.log_index).map_err(|_| "a negative index")?,
            tree_size: u64::try_from(proof.tree_size).map_err(|_| "a negative tree size")?,
            root_hash: decode(&proof.root_hash)?,
            hashes: proof.hashes.iter().map(decode).collect::<Result<_, _>>()?,
            checkpoint: &proof.checkpoint.envelope,
        };
        let body =
            STANDARD.decode(&entry.canonicalized_body).map_err(|_| "the entry's body is not base64")?;
        verify_inclusion(&log.key, &key_id, &body, &proof)?;
    }
    Ok(())
}

#[derive(Deserialize)]
struct Body {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: String,
    spec: serde_json::Value,
}

/// Check that the logged entry is this signature, over this content, by this certificate.
fn check_body(body: &[u8], kind: &KindVersion, signed: &Signed, leaf: &[u8]) -> Result<(), String> {
    let body: Body = serde_json::from_slice(body).map_err(|e| format!("the log entry: {e}"))?;
    if body.kind != kind.kind || body.api_version != kind.version || body.api_version != "0.0.1" {
        return Err(format!(
            "a {} {} log entry (only dsse and hashedrekord 0.0.1 are read)",
            body.kind, body.api_version
        ));
    }
    let at = |path: &str| body.spec.pointer(path).and_then(|v| v.as_str()).unwrap_or_default();
    let (signature, certificate) = match (body.kind.as_str(), &signed.dsse) {
        ("dsse", Some((_, payload))) => {
            if !at("/payloadHash/value").eq_ignore_ascii_case(&hex::encode(Sha256::digest(payload))) {
                return Err("the log entry is for another payload".into());
            }
            (at("/signatures/0/signature"), at("/signatures/0/verifier"))
        }
        ("hashedrekord", None) => {
            let logged = (at("/data/hash/algorithm"), at("/data/hash/value"));
            if let Some((algorithm, digest)) = &signed.message_digest
                && (logged.0 != algorithm || !logged.1.eq_ignore_ascii_case(digest))
            {
                return Err("the log entry is for another artifact".into());
            }
            (at("/signature/content"), at("/signature/publicKey/content"))
        }
        (kind, _) => return Err(format!("a {kind} log entry for a bundle of another kind")),
    };
    if STANDARD.decode(signature).ok().as_deref() != Some(signed.signature.as_slice()) {
        return Err("the log entry holds another signature".into());
    }
    let pem = STANDARD.decode(certificate).map_err(|_| "the logged certificate is not base64")?;
    if pem_decode_all(&String::from_utf8_lossy(&pem), "CERTIFICATE").first().map(Vec::as_slice) != Some(leaf)
    {
        return Err("the log entry holds another certificate".into());
    }
    Ok(())
}

#[derive(Deserialize)]
struct Statement {
    subject: Vec<Subject>,
}

#[derive(Deserialize)]
struct Subject {
    digest: std::collections::BTreeMap<String, String>,
}

/// The signature with the certificate's key, and the artifact being what was signed.
fn check_signature(leaf: &[u8], signed: &Signed, artifact: Artifact<'_>) -> Result<(), String> {
    let der = CertificateDer::from(leaf);
    let cert =
        webpki::EndEntityCert::try_from(&der).map_err(|e| format!("the certificate does not parse: {e}"))?;
    let message = signed.message(artifact)?;
    let ok = [webpki::ring::ECDSA_P256_SHA256, webpki::ring::ECDSA_P384_SHA384]
        .iter()
        .any(|alg| cert.verify_signature(*alg, &message, &signed.signature).is_ok());
    if !ok {
        return Err("the signature does not verify with the certificate's key".into());
    }
    let Some((payload_type, payload)) = &signed.dsse else {
        // A message signature verified over the artifact's own bytes.
        return Ok(());
    };
    if payload_type != "application/vnd.in-toto+json" {
        return Err(format!("a DSSE payload of type {payload_type:?}, not an in-toto statement"));
    }
    let statement: Statement =
        serde_json::from_slice(payload).map_err(|e| format!("the in-toto statement: {e}"))?;
    let names_it = statement.subject.iter().any(|s| {
        s.digest.iter().any(|(alg, hex)| artifact.digest(alg).is_some_and(|d| d.eq_ignore_ascii_case(hex)))
    });
    if !names_it {
        return Err("signed for another artifact: no subject of the statement has its digest".into());
    }
    Ok(())
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
