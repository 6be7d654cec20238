//! Signing keys in cosign's format, and the public keys a policy trusts.
//!
//! A private key is an ECDSA P-256 key as PKCS#8, encrypted the way cosign (and
//! `skopeo`, `containers/image`) read it: a PEM block `ENCRYPTED SIGSTORE PRIVATE KEY`
//! holding JSON `{"kdf": {"name": "scrypt", "params": {"N", "r", "p"}, "salt"},
//! "cipher": {"name": "nacl/secretbox", "nonce"}, "ciphertext"}` — the key derived with
//! scrypt from the password, sealed with XSalsa20-Poly1305. An empty password is a
//! password like any other (`toolhost keygen --no-password`). A public key is a PEM
//! `PUBLIC KEY` (SubjectPublicKeyInfo); only P-256 is accepted, as cosign makes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Nonce, XSalsa20Poly1305};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde::{Deserialize, Serialize};

use super::OciError;

/// The PEM label cosign 2 writes (and `containers/image` requires).
pub(crate) const PRIVATE_KEY_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// The label older cosign versions wrote (read, never written).
const LEGACY_PRIVATE_KEY_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";
/// cosign's scrypt cost: N = 2^15, r = 8, p = 1.
const SCRYPT_LOG_N: u8 = 15;
/// The most a key file may ask scrypt for (2^20 × r 8 = 1 GiB would be a denial of service).
const MAX_SCRYPT_LOG_N: u8 = 18;

/// The DER prefix of a P-256 SubjectPublicKeyInfo before its 65-byte point
/// (id-ecPublicKey, prime256v1, a 66-byte bit string).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
    0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A public key a policy trusts: ECDSA P-256.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// The uncompressed point (65 bytes).
    point: Vec<u8>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

impl PublicKey {
    /// Read a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) holding an ECDSA P-256 key.
    pub fn from_pem(text: &str) -> Result<Self, OciError> {
        let bad = |why: &str| OciError::Key(format!("public key: {why}"));
        let (label, der) = pem_decode(text).ok_or_else(|| bad("not a PEM block"))?;
        if label != "PUBLIC KEY" {
            return Err(bad(&format!("a PEM `{label}`, expected `PUBLIC KEY`")));
        }
        Self::from_spki(&der).map_err(|why| bad(&why))
    }

    /// A key from its SubjectPublicKeyInfo DER.
    pub(crate) fn from_spki(der: &[u8]) -> Result<Self, String> {
        use x509_parser::prelude::FromDer;
        let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der)
            .map_err(|e| format!("not a SubjectPublicKeyInfo: {e}"))?;
        let algorithm = spki.algorithm.algorithm.to_id_string();
        let curve =
            spki.algorithm.parameters.as_ref().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string());
        if algorithm != "1.2.840.10045.2.1" || curve.as_deref() != Some("1.2.840.10045.3.1.7") {
            return Err(format!(
                "only ECDSA P-256 keys are accepted (this one is {algorithm}{})",
                curve.map(|c| format!(" on {c}")).unwrap_or_default()
            ));
        }
        let point = spki.subject_public_key.data.to_vec();
        if point.len() != 65 || point[0] != 4 {
            return Err("the P-256 point is not uncompressed".into());
        }
        Ok(Self { point })
    }

    /// The SubjectPublicKeyInfo DER.
    pub fn to_spki(&self) -> Vec<u8> {
        [&P256_SPKI_PREFIX[..], &self.point].concat()
    }

    /// The PEM `PUBLIC KEY`.
    pub fn to_pem(&self) -> String {
        pem_encode("PUBLIC KEY", &self.to_spki())
    }

    /// `sha256:` and the first 16 hex digits of the SubjectPublicKeyInfo's sha256: how
    /// messages name a key.
    pub fn fingerprint(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, &self.to_spki());
        format!("sha256:{}", &hex::encode(digest.as_ref())[..16])
    }

    /// Whether `signature` (ASN.1 DER, as cosign makes) is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(message, signature)
            .is_ok()
    }
}

/// A private signing key (ECDSA P-256).
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.public_key().fingerprint())
    }
}

#[derive(Serialize, Deserialize)]
struct Encrypted {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Serialize, Deserialize)]
struct Kdf {
    name: String,
    params: ScryptParams,
    salt: String,
}

#[derive(Serialize, Deserialize)]
struct ScryptParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Serialize, Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

impl SigningKey {
    /// A new random key.
    pub fn generate() -> Result<(Self, Vec<u8>), OciError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| OciError::Key("cannot generate a key".into()))?;
        let pkcs8 = pkcs8.as_ref().to_vec();
        Ok((Self::from_pkcs8(&pkcs8)?, pkcs8))
    }

    fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, OciError> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8, &SystemRandom::new())
                .map_err(|e| OciError::Key(format!("not an ECDSA P-256 PKCS#8 key: {e}")))?;
        Ok(Self { pair })
    }

    /// Read cosign's encrypted PEM with `password`.
    pub fn from_encrypted_pem(text: &str, password: &[u8]) -> Result<Self, OciError> {
        let bad = |why: &str| OciError::Key(format!("private key: {why}"));
        let (label, body) = pem_decode(text).ok_or_else(|| bad("not a PEM block"))?;
        if label != PRIVATE_KEY_LABEL && label != LEGACY_PRIVATE_KEY_LABEL {
            return Err(bad(&format!("a PEM `{label}`, expected `{PRIVATE_KEY_LABEL}` (cosign's format)")));
        }
        let sealed: Encrypted =
            serde_json::from_slice(&body).map_err(|e| bad(&format!("not cosign's JSON: {e}")))?;
        if sealed.kdf.name != "scrypt" || sealed.cipher.name != "nacl/secretbox" {
            return Err(bad(&format!(
                "unsupported kdf {:?} or cipher {:?}",
                sealed.kdf.name, sealed.cipher.name
            )));
        }
        let ScryptParams { n, r, p } = sealed.kdf.params;
        let log_n = n
            .checked_ilog2()
            .filter(|l| 1u64 << l == n)
            .ok_or_else(|| bad("scrypt N is not a power of two"))?;
        if log_n > u32::from(MAX_SCRYPT_LOG_N) || r > 32 || p > 16 {
            return Err(bad("scrypt parameters too costly"));
        }
        let decode =
            |s: &str, what: &str| STANDARD.decode(s).map_err(|_| bad(&format!("{what} is not base64")));
        let salt = decode(&sealed.kdf.salt, "salt")?;
        let nonce = decode(&sealed.cipher.nonce, "nonce")?;
        let ciphertext = decode(&sealed.ciphertext, "ciphertext")?;
        if nonce.len() != 24 {
            return Err(bad("the nonce is not 24 bytes"));
        }
        let key = derive(password, &salt, log_n as u8, r, p)?;
        let pkcs8 = XSalsa20Poly1305::new(&key.into())
            .decrypt(Nonce::from_slice(&nonce), ciphertext.as_ref())
            .map_err(|_| bad("wrong password (or a damaged file)"))?;
        Self::from_pkcs8(&pkcs8)
    }

    /// This key as cosign's encrypted PEM under `password`.
    pub fn to_encrypted_pem(pkcs8: &[u8], password: &[u8]) -> Result<String, OciError> {
        let rng = SystemRandom::new();
        let mut salt = [0u8; 32];
        let mut nonce = [0u8; 24];
        rng.fill(&mut salt)
            .and_then(|()| rng.fill(&mut nonce))
            .map_err(|_| OciError::Key("no randomness".into()))?;
        let key = derive(password, &salt, SCRYPT_LOG_N, 8, 1)?;
        let ciphertext = XSalsa20Poly1305::new(&key.into())
            .encrypt(Nonce::from_slice(&nonce), pkcs8)
            .map_err(|_| OciError::Key("cannot seal the key".into()))?;
        let sealed = Encrypted {
            kdf: Kdf {
                name: "scrypt".into(),
                params: ScryptParams { n: 1 << SCRYPT_LOG_N, r: 8, p: 1 },
                salt: STANDARD.encode(salt),
            },
            cipher: Cipher { name: "nacl/secretbox".into(), nonce: STANDARD.encode(nonce) },
            ciphertext: STANDARD.encode(ciphertext),
        };
        let json = serde_json::to_vec(&sealed).map_err(|e| OciError::Key(e.to_string()))?;
        Ok(pem_encode(PRIVATE_KEY_LABEL, &json))
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey { point: self.pair.public_key().as_ref().to_vec() }
    }

    /// Sign `message`: an ASN.1 DER ECDSA P-256 SHA-256 signature.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, OciError> {
        self.pair
            .sign(&SystemRandom::new(), message)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| OciError::Key("signing failed".into()))
    }
}

fn derive(password: &[u8], salt: &[u8], log_n: u8, r: u32, p: u32) -> Result<[u8; 32], OciError> {
    let params = scrypt::Params::new(log_n, r, p, 32).map_err(|e| OciError::Key(format!("scrypt: {e}")))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password, salt, &params, &mut key).map_err(|e| OciError::Key(format!("scrypt: {e}")))?;
    Ok(key)
}

/// The label and bytes of the first PEM block in `text`.
pub(crate) fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let (pem, _) = x509_parser::pem::Pem::read(std::io::Cursor::new(text.as_bytes())).ok()?;
    Some((pem.label, pem.contents))
}

/// Every PEM block of `text` labelled `label`, in order.
pub(crate) fn pem_decode_all(text: &str, label: &str) -> Vec<Vec<u8>> {
    x509_parser::pem::Pem::iter_from_buffer(text.as_bytes())
        .map_while(Result::ok)
        .filter(|pem| pem.label == label)
        .map(|pem| pem.contents)
        .collect()
}

/// `bytes` as a PEM block labelled `label`, 64 columns.
pub(crate) fn pem_encode(label: &str, bytes: &[u8]) -> String {
    let b64 = STANDARD.encode(bytes);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_pair_round_trips_through_cosigns_format() {
        let (key, pkcs8) = SigningKey::generate().unwrap();
        let pem = SigningKey::to_encrypted_pem(&pkcs8, b"pw").unwrap();
        assert!(pem.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), "{pem}");
        let again = SigningKey::from_encrypted_pem(&pem, b"pw").unwrap();
        assert_eq!(again.public_key(), key.public_key());
        let err = SigningKey::from_encrypted_pem(&pem, b"other").unwrap_err();
        assert_eq!(err.code(), "invalid_key");
        assert!(err.to_string().contains("wrong password"), "{err}");

        let public = PublicKey::from_pem(&key.public_key().to_pem()).unwrap();
        let signature = again.sign(b"payload").unwrap();
        assert!(public.verifies(b"payload", &signature));
        assert!(!public.verifies(b"payloaD", &signature));
        let (other, _) = SigningKey::generate().unwrap();
        assert!(!other.public_key().verifies(b"payload", &signature));
    }

    #[test]
    fn keys_that_are_not_p256_or_not_pem_are_refused() {
        assert!(PublicKey::from_pem("not pem").is_err());
        let cert = pem_encode("CERTIFICATE", b"x");
        assert!(PublicKey::from_pem(&cert).unwrap_err().to_string().contains("expected `PUBLIC KEY`"));
        // An Ed25519 SubjectPublicKeyInfo.
        let ed =
            [&[0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00][..], &[7u8; 32][..]]
                .concat();
        let err = PublicKey::from_pem(&pem_encode("PUBLIC KEY", &ed)).unwrap_err().to_string();
        assert!(err.contains("only ECDSA P-256"), "{err}");
        let weird = pem_encode(PRIVATE_KEY_LABEL, br#"{"kdf":{"name":"scrypt","params":{"N":3,"r":8,"p":1},"salt":""},"cipher":{"name":"nacl/secretbox","nonce":""},"ciphertext":""}"#);
        assert!(
            SigningKey::from_encrypted_pem(&weird, b"").unwrap_err().to_string().contains("power of two")
        );
    }
}
