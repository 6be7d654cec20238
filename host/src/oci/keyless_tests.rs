//! Keyless verification against a trusted root made here: a CA (the Fulcio stand-in)
//! issues a short-lived code-signing certificate to an email identity with the Fulcio
//! issuer extension, a log key (the Rekor stand-in) signs the entry timestamp, and each
//! check of `verify_keyless` is tripped on its own.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData, SanType, SigningKey, date_time_ymd,
};

use super::*;
use crate::oci::sign::payload;

const SUBJECT: &str = "alice@example.com";
const ISSUER: &str = "https://issuer.example";
/// 2026-06-01T00:00:00Z, inside the leaf's validity (2026-05-31 … 2026-06-02).
const LOGGED_AT: i64 = 1_780_272_000;

/// DER UTF8String of `s` (short).
fn utf8_der(s: &str) -> Vec<u8> {
    [&[0x0c, s.len() as u8][..], s.as_bytes()].concat()
}

struct Fixture {
    root_json: Vec<u8>,
    ca_key: KeyPair,
    ca_params: CertificateParams,
    log_key: KeyPair,
    log_id: Vec<u8>,
}

fn fixture() -> Fixture {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "test fulcio");
    ca_params.not_before = date_time_ymd(2020, 1, 1);
    ca_params.not_after = date_time_ymd(2040, 1, 1);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let log_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let log_spki = log_key.subject_public_key_info();
    let log_id = ring::digest::digest(&ring::digest::SHA256, &log_spki).as_ref().to_vec();
    let root_json = serde_json::to_vec(&serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [{
            "baseUrl": "https://log.invalid",
            "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": STANDARD.encode(&log_spki), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                          "validFor": {"start": "2021-01-01T00:00:00Z"}},
            "logId": {"keyId": STANDARD.encode(&log_id)},
        }],
        "certificateAuthorities": [{
            "uri": "https://ca.invalid",
            "certChain": {"certificates": [{"rawBytes": STANDARD.encode(ca.der())}]},
            "validFor": {"start": "2021-01-01T00:00:00Z"},
        }],
    }))
    .unwrap();
    Fixture { root_json, ca_key, ca_params, log_key, log_id }
}

/// A keyless signature over the payload for `digest`, by a certificate for `subject`
/// (issued by the fixture's CA, or by `other_ca`), logged at `logged_at`.
struct Signed {
    layer: SignatureLayer,
    payload: Vec<u8>,
    signature: Vec<u8>,
}

fn sign_keyless(f: &Fixture, subject: &str, digest: &str, logged_at: i64, other_ca: bool) -> Signed {
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![SanType::Rfc822Name(subject.try_into().unwrap())];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.custom_extensions =
        vec![CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 8], utf8_der(ISSUER))];
    params.not_before = date_time_ymd(2026, 5, 31);
    params.not_after = date_time_ymd(2026, 6, 2);
    let cert = if other_ca {
        let rogue_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        params.signed_by(&leaf_key, &Issuer::from_params(&f.ca_params, &rogue_key)).unwrap()
    } else {
        params.signed_by(&leaf_key, &Issuer::from_params(&f.ca_params, &f.ca_key)).unwrap()
    };
    let cert_pem = crate::oci::keys::pem_encode("CERTIFICATE", cert.der());
    let payload = payload("reg.example/tools/x", digest);
    let signature = leaf_key.sign(&payload).unwrap();
    let entry = serde_json::json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hex::encode(ring::digest::digest(&ring::digest::SHA256, &payload))}},
            "signature": {"content": STANDARD.encode(&signature), "publicKey": {"content": STANDARD.encode(&cert_pem)}},
        },
    });
    let body = STANDARD.encode(serde_json::to_vec(&entry).unwrap());
    let log_id = hex::encode(&f.log_id);
    let canonical =
        format!(r#"{{"body":"{body}","integratedTime":{logged_at},"logID":"{log_id}","logIndex":7}}"#);
    let set = f.log_key.sign(canonical.as_bytes()).unwrap();
    let bundle = serde_json::json!({
        "SignedEntryTimestamp": STANDARD.encode(set),
        "Payload": {"body": body, "integratedTime": logged_at, "logIndex": 7, "logID": log_id},
    });
    let layer = SignatureLayer {
        payload: STANDARD.encode(&payload),
        signature: STANDARD.encode(&signature),
        certificate: Some(cert_pem),
        chain: None,
        bundle: Some(bundle.to_string()),
    };
    Signed { layer, payload, signature }
}

fn identity() -> Identity {
    Identity { subject: SUBJECT.into(), issuer: ISSUER.into() }
}

fn check(f: &Fixture, s: &Signed, identities: &[Identity]) -> Result<Identity, String> {
    let root = TrustedRoot::from_json(&f.root_json).unwrap();
    verify_keyless(&s.layer, &s.payload, &s.signature, &root, identities)
}

#[test]
fn a_logged_certificate_from_the_trusted_ca_for_a_trusted_identity_verifies() {
    let f = fixture();
    let s = sign_keyless(&f, SUBJECT, &format!("sha256:{}", "a".repeat(64)), LOGGED_AT, false);
    assert_eq!(check(&f, &s, &[identity()]).unwrap(), identity());
    // Through the whole verification too, with the digest checked.
    let trust = crate::oci::TrustSet {
        identities: vec![identity()],
        root: Some(std::sync::Arc::new(TrustedRoot::from_json(&f.root_json).unwrap())),
        ..Default::default()
    };
    let digest = format!("sha256:{}", "a".repeat(64));
    let verified =
        crate::oci::verify::verify(std::slice::from_ref(&s.layer), &digest, &trust, "img").unwrap();
    assert_eq!(verified, crate::oci::Verified::Identity(identity()));
    let err = crate::oci::verify::verify(&[s.layer], &format!("sha256:{}", "b".repeat(64)), &trust, "img");
    assert!(err.unwrap_err().to_string().contains("for another digest"));
}

#[test]
fn each_keyless_check_refuses_on_its_own() {
    let f = fixture();
    let digest = format!("sha256:{}", "a".repeat(64));
    let good = sign_keyless(&f, SUBJECT, &digest, LOGGED_AT, false);

    let other_subject = Identity { subject: "bob@example.com".into(), ..identity() };
    let err = check(&f, &good, &[other_subject]).unwrap_err();
    assert!(
        err.contains("signed by alice@example.com (issuer https://issuer.example), not a trusted identity"),
        "{err}"
    );
    let other_issuer = Identity { issuer: "https://elsewhere.example".into(), ..identity() };
    assert!(check(&f, &good, &[other_issuer]).is_err());

    let rogue = sign_keyless(&f, SUBJECT, &digest, LOGGED_AT, true);
    let err = check(&f, &rogue, &[identity()]).unwrap_err();
    assert!(err.contains("does not chain to a trusted CA"), "{err}");

    // Logged after the short-lived certificate expired.
    let late = sign_keyless(&f, SUBJECT, &digest, LOGGED_AT + 3 * 86_400, false);
    let err = check(&f, &late, &[identity()]).unwrap_err();
    assert!(err.contains("does not chain"), "{err}");

    // A changed integration time breaks the SET.
    let mut moved = good.layer.clone();
    moved.bundle = Some(moved.bundle.unwrap().replace(&LOGGED_AT.to_string(), &(LOGGED_AT + 1).to_string()));
    let err = verify_keyless(
        &moved,
        &good.payload,
        &good.signature,
        &TrustedRoot::from_json(&f.root_json).unwrap(),
        &[identity()],
    )
    .unwrap_err();
    assert!(err.contains("signed entry timestamp does not verify"), "{err}");

    // Another payload under the logged signature.
    let other_payload = payload("reg.example/tools/x", &format!("sha256:{}", "c".repeat(64)));
    let root = TrustedRoot::from_json(&f.root_json).unwrap();
    let err = verify_keyless(&good.layer, &other_payload, &good.signature, &root, &[identity()]).unwrap_err();
    assert!(err.contains("the log entry is for another payload"), "{err}");

    // A log the root does not list.
    let mut unlisted = good.layer.clone();
    let log_id = hex::encode(&f.log_id);
    unlisted.bundle = Some(unlisted.bundle.unwrap().replace(&log_id, &"0".repeat(64)));
    let err = verify_keyless(&unlisted, &good.payload, &good.signature, &root, &[identity()]).unwrap_err();
    assert!(err.contains("not a transparency log of the trusted root"), "{err}");

    // No bundle at all.
    let mut bare = good.layer.clone();
    bare.bundle = None;
    let err = verify_keyless(&bare, &good.payload, &good.signature, &root, &[identity()]).unwrap_err();
    assert!(err.contains("without a transparency log bundle"), "{err}");
}

#[test]
fn trusted_roots_without_a_ca_or_log_or_in_another_shape_are_refused() {
    for bad in [&b"{}"[..], b"[]", br#"{"tlogs": [], "certificateAuthorities": []}"#] {
        assert_eq!(TrustedRoot::from_json(bad).unwrap_err().code(), "invalid_key");
    }
}

#[test]
fn a_root_listing_ct_logs_requires_an_embedded_sct() {
    let mut f = fixture();
    let s = sign_keyless(&f, SUBJECT, &format!("sha256:{}", "a".repeat(64)), LOGGED_AT, false);
    assert!(check(&f, &s, &[identity()]).is_ok());
    // The same root, now naming a CT log (as the public instance's does): a
    // certificate without an SCT is refused.
    let ct_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let ct_spki = ct_key.subject_public_key_info();
    let mut root: serde_json::Value = serde_json::from_slice(&f.root_json).unwrap();
    root["ctlogs"] = serde_json::json!([{
        "baseUrl": "https://ct.invalid",
        "hashAlgorithm": "SHA2_256",
        "publicKey": {"rawBytes": STANDARD.encode(&ct_spki), "keyDetails": "PKIX_ECDSA_P256_SHA_256"},
        "logId": {"keyId": STANDARD.encode(ring::digest::digest(&ring::digest::SHA256, &ct_spki).as_ref())},
    }]);
    f.root_json = serde_json::to_vec(&root).unwrap();
    let err = check(&f, &s, &[identity()]).unwrap_err();
    assert!(err.contains("embeds no SCT"), "{err}");
}
