//! Keyless (Fulcio + Rekor) signatures, verified offline against a trusted root file.
//!
//! A keyless cosign signature carries a short-lived certificate for the signing key
//! (issued by a Fulcio CA to an OIDC identity) and a Rekor bundle: the log entry's
//! body, its integration time and index, and the log's signed entry timestamp (SET).
//! Nothing is fetched while verifying; the trusted root (Sigstore's
//! `trusted_root.json` format: `certificateAuthorities` with their chains, `tlogs`
//! with their keys) says which CAs and logs count. A signature is accepted when:
//!
//! 1. the SET verifies with the key of the log the bundle names (by log id), over the
//!    canonical JSON of the bundle's payload;
//! 2. the logged entry is a `hashedrekord` for this payload's sha256, this signature
//!    and this certificate;
//! 3. the certificate chains (rustls-webpki) to a trusted CA with the code-signing
//!    usage, valid at the integration time (Fulcio certificates live ten minutes: the
//!    log's time, not now, is what counts), within the CA's `validFor`;
//! 4. the signature verifies over the payload with the certificate's key;
//! 5. the certificate's subject (SAN email or URI) and issuer (the Fulcio issuer
//!    extension, v2 `1.3.6.1.4.1.57264.1.8` or v1 `.1.1`) equal a trusted identity;
//! 6. when the trusted root lists CT logs (`ctlogs`, as the public instance's does),
//!    the certificate embeds an SCT one of them signed (`sct`).
//!
//! Not checked: RFC 3161 timestamps. Sigstore bundles (`.sigstore.json`), with their
//! inclusion proofs and checkpoints, are verified by [`super::bundle`] with the same
//! root and the same certificate checks.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::{CertificateDer, UnixTime};
use serde::Deserialize;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use super::OciError;
use super::keys::{PublicKey, pem_decode_all};
use super::sct::CtLog;
use super::sign::SignatureLayer;
use super::tlog::{EntryClaim, verify_set};

/// The code-signing extended key usage (1.3.6.1.5.5.7.3.3), DER content bytes.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// The Fulcio issuer extension, v2 (a DER UTF8String).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// The Fulcio issuer extension, v1 (raw bytes).
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// Largest trusted root file read.
pub(crate) const MAX_TRUSTED_ROOT_BYTES: u64 = 1 << 20;

/// A keyless signer: the certificate's subject (an email address or a URI) and the
/// OIDC issuer that vouched for it; both must match exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The certificate's SAN (email or URI).
    pub subject: String,
    /// The Fulcio issuer extension (`https://accounts.google.com`, …).
    pub issuer: String,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer)
    }
}

/// The CAs and transparency logs keyless signatures are checked against.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    cas: Vec<Authority>,
    logs: Vec<Log>,
    ct_logs: Vec<CtLog>,
}

#[derive(Debug, Clone)]
struct Authority {
    /// The chain as listed: intermediates first, the root last.
    chain: Vec<Vec<u8>>,
    valid: Validity,
}

#[derive(Debug, Clone)]
pub(crate) struct Log {
    pub(crate) key_id: Vec<u8>,
    pub(crate) key: PublicKey,
    valid: Validity,
}

#[derive(Debug, Clone, Copy, Default)]
struct Validity {
    start: Option<i64>,
    end: Option<i64>,
}

impl Validity {
    fn contains(&self, t: i64) -> bool {
        self.start.is_none_or(|s| s <= t) && self.end.is_none_or(|e| t < e)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRoot {
    #[serde(default)]
    tlogs: Vec<RawLog>,
    #[serde(default)]
    ctlogs: Vec<RawLog>,
    #[serde(default)]
    certificate_authorities: Vec<RawAuthority>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLog {
    public_key: RawKey,
    log_id: RawLogId,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawKey {
    raw_bytes: String,
    valid_for: Option<RawValidity>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLogId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAuthority {
    cert_chain: RawChain,
    valid_for: Option<RawValidity>,
}

#[derive(Deserialize)]
struct RawChain {
    certificates: Vec<RawCert>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCert {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct RawValidity {
    start: Option<String>,
    end: Option<String>,
}

fn validity(raw: Option<&RawValidity>) -> Result<Validity, String> {
    let time = |t: &Option<String>| -> Result<Option<i64>, String> {
        t.as_deref()
            .map(|t| {
                chrono::DateTime::parse_from_rfc3339(t)
                    .map(|d| d.timestamp())
                    .map_err(|e| format!("time {t:?}: {e}"))
            })
            .transpose()
    };
    Ok(match raw {
        None => Validity::default(),
        Some(raw) => Validity { start: time(&raw.start)?, end: time(&raw.end)? },
    })
}

impl TrustedRoot {
    /// Parse a trusted root (`trusted_root.json`, as Sigstore publishes it). Only P-256
    /// transparency log keys are used; a root with no CA or no log is refused.
    pub fn from_json(bytes: &[u8]) -> Result<Self, OciError> {
        let bad = |why: String| OciError::Key(format!("trusted root: {why}"));
        let raw: RawRoot =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a trusted root: {e}")))?;
        let b64 = |s: &str| STANDARD.decode(s).map_err(|_| bad("a value is not base64".into()));
        let mut logs = Vec::new();
        for log in &raw.tlogs {
            let spki = b64(&log.public_key.raw_bytes)?;
            // A log whose key is not P-256 cannot be used; others in the file still can.
            let Ok(key) = PublicKey::from_spki(&spki) else { continue };
            let valid = validity(log.public_key.valid_for.as_ref()).map_err(bad)?;
            logs.push(Log { key_id: b64(&log.log_id.key_id)?, key, valid });
        }
        let mut ct_logs = Vec::new();
        for log in &raw.ctlogs {
            let spki = b64(&log.public_key.raw_bytes)?;
            let Ok(key) = PublicKey::from_spki(&spki) else { continue };
            let valid = validity(log.public_key.valid_for.as_ref()).map_err(bad)?;
            let ms = |t: Option<i64>| t.map(|t| t.saturating_mul(1000));
            ct_logs.push(CtLog {
                id: b64(&log.log_id.key_id)?,
                key,
                start_ms: ms(valid.start),
                end_ms: ms(valid.end),
            });
        }
        let mut cas = Vec::new();
        for ca in &raw.certificate_authorities {
            let chain = ca
                .cert_chain
                .certificates
                .iter()
                .map(|c| b64(&c.raw_bytes))
                .collect::<Result<Vec<_>, _>>()?;
            if chain.is_empty() {
                return Err(bad("a certificate authority without certificates".into()));
            }
            cas.push(Authority { chain, valid: validity(ca.valid_for.as_ref()).map_err(bad)? });
        }
        if cas.is_empty() || logs.is_empty() {
            return Err(bad(
                "needs at least one certificate authority and one P-256 transparency log key".into()
            ));
        }
        Ok(Self { cas, logs, ct_logs })
    }

    /// The transparency log with id `key_id` whose key was valid at `time`.
    pub(crate) fn log(&self, key_id: &[u8], time: i64) -> Option<&Log> {
        self.logs.iter().find(|l| l.key_id == key_id && l.valid.contains(time))
    }

    /// Check that `leaf` (with `extra` intermediates) chains to a CA of this root that
    /// was valid at `time`, with the code-signing usage, at `time`; the issuer's
    /// SubjectPublicKeyInfo (DER).
    pub(crate) fn chain_at(&self, leaf: &[u8], extra: &[Vec<u8>], time: i64) -> Result<Vec<u8>, String> {
        let leaf_der = CertificateDer::from(leaf);
        let end_entity = webpki::EndEntityCert::try_from(&leaf_der)
            .map_err(|e| format!("the certificate does not parse: {e}"))?;
        let at = UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(time).unwrap_or(0)));
        let algorithms = [
            webpki::ring::ECDSA_P256_SHA256,
            webpki::ring::ECDSA_P256_SHA384,
            webpki::ring::ECDSA_P384_SHA384,
            webpki::ring::ECDSA_P384_SHA256,
        ];
        let mut why = String::from("no certificate authority of the trusted root is valid at the log's time");
        for ca in self.cas.iter().filter(|ca| ca.valid.contains(time)) {
            // Lists put the root first or last: every certificate listed may anchor.
            let anchors = ca
                .chain
                .iter()
                .map(|c| {
                    webpki::anchor_from_trusted_cert(&CertificateDer::from(c.as_slice()))
                        .map(|a| a.to_owned())
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("a trusted CA: {e}"))?;
            let intermediates: Vec<CertificateDer<'_>> =
                ca.chain.iter().chain(extra).map(|c| CertificateDer::from(c.as_slice())).collect();
            match end_entity.verify_for_usage(
                &algorithms,
                &anchors,
                &intermediates,
                at,
                webpki::KeyUsage::required(CODE_SIGNING),
                None,
                None,
            ) {
                Ok(_) => return issuer_spki(leaf, ca.chain.iter().chain(extra)),
                Err(e) => {
                    why = format!("the certificate does not chain to a trusted CA at the log's time: {e}")
                }
            }
        }
        Err(why)
    }

    /// Check the SCTs `leaf` embeds when this root lists CT logs (see [`super::sct`]).
    pub(crate) fn check_sct(&self, leaf: &[u8], issuer_spki: &[u8]) -> Result<(), String> {
        if self.ct_logs.is_empty() {
            return Ok(());
        }
        super::sct::verify_embedded(leaf, issuer_spki, &self.ct_logs)
    }

    /// The issuing CA's SubjectPublicKeyInfo for `leaf`, if one of the CAs is its issuer.
    pub(crate) fn issuer_of(&self, leaf: &[u8]) -> Result<Vec<u8>, String> {
        issuer_spki(leaf, self.cas.iter().flat_map(|ca| ca.chain.iter()))
    }
}

/// The SubjectPublicKeyInfo of the certificate among `candidates` whose subject is
/// `leaf`'s issuer.
fn issuer_spki<'c>(leaf: &[u8], candidates: impl Iterator<Item = &'c Vec<u8>>) -> Result<Vec<u8>, String> {
    let (_, cert) = X509Certificate::from_der(leaf).map_err(|e| format!("the certificate: {e}"))?;
    let issuer = cert.issuer().as_raw();
    candidates
        .filter_map(|c| X509Certificate::from_der(c).ok().map(|(_, c)| c))
        .find(|c| c.subject().as_raw() == issuer)
        .map(|c| c.public_key().raw.to_vec())
        .ok_or_else(|| "the certificate's issuer is not among the trusted CAs".into())
}

/// cosign's Rekor bundle.
#[derive(Deserialize)]
struct Bundle {
    #[serde(rename = "SignedEntryTimestamp")]
    set: String,
    #[serde(rename = "Payload")]
    payload: BundlePayload,
}

#[derive(Deserialize)]
struct BundlePayload {
    body: String,
    #[serde(rename = "integratedTime")]
    integrated_time: i64,
    #[serde(rename = "logIndex")]
    log_index: i64,
    #[serde(rename = "logID")]
    log_id: String,
}

/// A `hashedrekord` entry, as much as is checked.
#[derive(Deserialize)]
struct Entry {
    kind: String,
    spec: EntrySpec,
}

#[derive(Deserialize)]
struct EntrySpec {
    data: EntryData,
    signature: EntrySignature,
}

#[derive(Deserialize)]
struct EntryData {
    hash: EntryHash,
}

#[derive(Deserialize)]
struct EntryHash {
    algorithm: String,
    value: String,
}

#[derive(Deserialize)]
struct EntrySignature {
    content: String,
    #[serde(rename = "publicKey")]
    public_key: EntryKey,
}

#[derive(Deserialize)]
struct EntryKey {
    content: String,
}

/// Verify a keyless signature (see the module docs); the trusted identity it names.
pub(crate) fn verify_keyless(
    layer: &SignatureLayer,
    payload: &[u8],
    signature: &[u8],
    root: &TrustedRoot,
    identities: &[Identity],
) -> Result<Identity, String> {
    let cert_pem = layer.certificate.as_deref().ok_or("no certificate")?;
    let leaf =
        pem_decode_all(cert_pem, "CERTIFICATE").into_iter().next().ok_or("the certificate is not PEM")?;
    let bundle = layer.bundle.as_deref().ok_or("a certificate without a transparency log bundle")?;
    let bundle: Bundle = serde_json::from_str(bundle).map_err(|e| format!("the bundle: {e}"))?;
    let time = check_log_entry(&bundle, root)?;
    check_entry(&bundle.payload.body, payload, signature, &leaf)?;

    let extra: Vec<Vec<u8>> =
        layer.chain.as_deref().map(|c| pem_decode_all(c, "CERTIFICATE")).unwrap_or_default();
    let issuer = root.chain_at(&leaf, &extra, time)?;
    root.check_sct(&leaf, &issuer)?;
    let leaf_der = CertificateDer::from(leaf.as_slice());
    let end_entity = webpki::EndEntityCert::try_from(&leaf_der)
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    let signed = [webpki::ring::ECDSA_P256_SHA256, webpki::ring::ECDSA_P384_SHA384]
        .iter()
        .any(|alg| end_entity.verify_signature(*alg, payload, signature).is_ok());
    if !signed {
        return Err("the signature does not verify with the certificate's key".into());
    }
    trusted_identity(&leaf, identities)
}

/// The identity among `identities` that the certificate `leaf` names.
pub(crate) fn trusted_identity(leaf: &[u8], identities: &[Identity]) -> Result<Identity, String> {
    let (subjects, issuer) = identity_of(leaf)?;
    identities
        .iter()
        .find(|id| Some(&id.issuer) == issuer.as_ref() && subjects.contains(&id.subject))
        .cloned()
        .ok_or_else(|| {
            format!(
                "signed by {} (issuer {}), not a trusted identity",
                subjects.join(", "),
                issuer.as_deref().unwrap_or("none")
            )
        })
}

/// Check the bundle's SET against the log it names; the integration time.
fn check_log_entry(bundle: &Bundle, root: &TrustedRoot) -> Result<i64, String> {
    let p = &bundle.payload;
    let log_id = hex::decode(&p.log_id).map_err(|_| "the bundle's logID is not hex")?;
    let log = root
        .log(&log_id, p.integrated_time)
        .ok_or_else(|| format!("logged in {}, not a transparency log of the trusted root", p.log_id))?;
    let set = STANDARD.decode(&bundle.set).map_err(|_| "the SET is not base64")?;
    let claim = EntryClaim {
        body_b64: &p.body,
        integrated_time: p.integrated_time,
        log_id_hex: &p.log_id,
        log_index: p.log_index,
    };
    verify_set(&log.key, &claim, &set)?;
    Ok(p.integrated_time)
}

/// Check that the logged entry is this payload, signature and certificate.
fn check_entry(body: &str, payload: &[u8], signature: &[u8], leaf: &[u8]) -> Result<(), String> {
    let body = STANDARD.decode(body).map_err(|_| "the log entry is not base64")?;
    let entry: Entry = serde_json::from_slice(&body).map_err(|e| format!("the log entry: {e}"))?;
    if entry.kind != "hashedrekord" {
        return Err(format!("the log entry is a {:?}, not a hashedrekord", entry.kind));
    }
    let hash = &entry.spec.data.hash;
    let payload_hash = hex::encode(ring::digest::digest(&ring::digest::SHA256, payload));
    if hash.algorithm != "sha256" || !hash.value.eq_ignore_ascii_case(&payload_hash) {
        return Err("the log entry is for another payload".into());
    }
    if STANDARD.decode(&entry.spec.signature.content).ok().as_deref() != Some(signature) {
        return Err("the log entry holds another signature".into());
    }
    let logged = STANDARD
        .decode(&entry.spec.signature.public_key.content)
        .map_err(|_| "the logged key is not base64")?;
    let logged = pem_decode_all(&String::from_utf8_lossy(&logged), "CERTIFICATE");
    if logged.first().map(Vec::as_slice) != Some(leaf) {
        return Err("the log entry holds another certificate".into());
    }
    Ok(())
}

/// The certificate's subjects (SAN emails and URIs) and its Fulcio issuer.
fn identity_of(der: &[u8]) -> Result<(Vec<String>, Option<String>), String> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| format!("the certificate: {e}"))?;
    let mut subjects = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::RFC822Name(s) | GeneralName::URI(s) => subjects.push((*s).to_string()),
                _ => {}
            }
        }
    }
    let mut issuer = None;
    for ext in cert.extensions() {
        let oid = ext.oid.to_id_string();
        if oid == ISSUER_V2 {
            issuer = <&str>::from_der(ext.value).ok().map(|(_, s)| s.to_string());
            break;
        }
        if oid == ISSUER_V1 {
            issuer = std::str::from_utf8(ext.value).ok().map(str::to_string);
        }
    }
    Ok((subjects, issuer))
}

#[cfg(test)]
#[path = "keyless_tests.rs"]
mod tests;
