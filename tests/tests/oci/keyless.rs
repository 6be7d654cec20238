//! Keyless signatures through the real registry: a CA standing in for Fulcio and a key
//! standing in for Rekor's (both made here with rcgen), a trusted root file naming them
//! in Sigstore's `trusted_root.json` format, and a signature image written as cosign
//! writes a keyless one (the certificate, its chain and the Rekor bundle as layer
//! annotations). `add --trust-identity … --trust-issuer … --trusted-root FILE` accepts
//! it and every later start verifies it again; another subject, another issuer, or a
//! certificate from a CA the root does not name is refused, and nothing is written.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData, SanType, SigningKey, date_time_ymd,
};
use toolhost::oci::{SignatureLayer, payload, signature_image};
use toolhost_tests::HOSTILE_WASM;
use toolhost_tests::registry::Registry;

use super::{Machine, block_on, client, pem, publish, sig_tag};

const SUBJECT: &str = "alice@example.com";
const ISSUER: &str = "https://issuer.example";
/// When the entry was logged: 2026-06-01T00:00:00Z, inside the short-lived leaf's
/// validity (2026-05-31 … 2026-06-02). The certificate has expired since, as Fulcio's
/// do after ten minutes; the log's time is what counts.
const LOGGED_AT: i64 = 1_780_272_000;

/// A certificate authority (the Fulcio stand-in, or a rogue one with the same name).
struct Ca {
    key: KeyPair,
    params: CertificateParams,
    der: Vec<u8>,
}

impl Ca {
    fn new() -> Self {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(DnType::CommonName, "test fulcio");
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2040, 1, 1);
        let der = params.self_signed(&key).unwrap().der().to_vec();
        Self { key, params, der }
    }
}

/// The transparency log's key (the Rekor stand-in) and its id (sha256 of its SPKI).
struct Log {
    key: KeyPair,
    id: Vec<u8>,
}

impl Log {
    fn new() -> Self {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let id = <sha2::Sha256 as sha2::Digest>::digest(key.subject_public_key_info()).to_vec();
        Self { key, id }
    }
}

/// A trusted root naming `ca` and `log`, in Sigstore's `trusted_root.json` format.
fn trusted_root(ca: &Ca, log: &Log) -> String {
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [{
            "baseUrl": "https://log.invalid",
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": STANDARD.encode(log.key.subject_public_key_info()),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": "2021-01-01T00:00:00Z"},
            },
            "logId": {"keyId": STANDARD.encode(&log.id)},
        }],
        "certificateAuthorities": [{
            "subject": {"organization": "test", "commonName": "test fulcio"},
            "uri": "https://ca.invalid",
            "certChain": {"certificates": [{"rawBytes": STANDARD.encode(&ca.der)}]},
            "validFor": {"start": "2021-01-01T00:00:00Z"},
        }],
    })
    .to_string()
}

/// A keyless signature of `digest` (the manifest of `docker_reference`) as cosign
/// makes one: a fresh key, a short-lived code-signing certificate from `ca` naming
/// `subject` and `issuer`, the payload signed with it, and the entry logged in `log`.
fn keyless_signature(
    ca: &Ca,
    log: &Log,
    subject: &str,
    issuer: &str,
    docker_reference: &str,
    digest: &str,
) -> SignatureLayer {
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![SanType::Rfc822Name(subject.try_into().unwrap())];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    // Fulcio's issuer extension (v2): a DER UTF8String.
    let issuer_der = [&[0x0c, issuer.len() as u8][..], issuer.as_bytes()].concat();
    params.custom_extensions =
        vec![CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 8], issuer_der)];
    params.not_before = date_time_ymd(2026, 5, 31);
    params.not_after = date_time_ymd(2026, 6, 2);
    let cert = params.signed_by(&leaf_key, &Issuer::from_params(&ca.params, &ca.key)).unwrap();
    let cert_pem = pem("CERTIFICATE", cert.der());

    let payload = payload(docker_reference, digest);
    let signature = leaf_key.sign(&payload).unwrap();
    let payload_hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&payload));
    let entry = serde_json::json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": payload_hash}},
            "signature": {"content": STANDARD.encode(&signature), "publicKey": {"content": STANDARD.encode(&cert_pem)}},
        },
    });
    let body = STANDARD.encode(entry.to_string());
    let log_id = hex::encode(&log.id);
    // The signed entry timestamp: the log's signature over the canonical JSON of the
    // bundle's payload (keys sorted, no spaces).
    let canonical =
        format!(r#"{{"body":"{body}","integratedTime":{LOGGED_AT},"logID":"{log_id}","logIndex":7}}"#);
    let set = log.key.sign(canonical.as_bytes()).unwrap();
    let bundle = serde_json::json!({
        "SignedEntryTimestamp": STANDARD.encode(set),
        "Payload": {"body": body, "integratedTime": LOGGED_AT, "logIndex": 7, "logID": log_id},
    });
    SignatureLayer {
        payload: STANDARD.encode(payload),
        signature: STANDARD.encode(signature),
        certificate: Some(cert_pem),
        // cosign puts the issuing chain here; it is not trusted for being there.
        chain: Some(pem("CERTIFICATE", &ca.der)),
        bundle: Some(bundle.to_string()),
    }
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Push `layer` as the signature image of `digest` in `repo` (cosign's tag).
fn push_signature(registry: &Registry, repo: &str, digest: &str, layer: SignatureLayer) {
    let client = client(registry, repo);
    let (blobs, manifest) = signature_image(&[layer]).unwrap();
    block_on(async {
        for blob in &blobs {
            client.push_blob(blob).await.unwrap();
        }
        client
            .push_manifest(&sig_tag(digest), "application/vnd.oci.image.manifest.v1+json", &manifest)
            .await
            .unwrap();
    });
}

#[test]
fn keyless_signatures_are_checked_against_the_trusted_root_the_user_names() {
    let registry = Registry::start();
    let publisher = Machine::new();
    let (fulcio, rekor) = (Ca::new(), Log::new());
    let roots = tempfile::tempdir().unwrap();
    let root_file = roots.path().join("trusted_root.json");
    std::fs::write(&root_file, trusted_root(&fulcio, &rekor)).unwrap();
    let root = root_file.to_str().unwrap();

    // The same component in two repositories: one signed through the trusted CA, one
    // through a rogue CA of the same name (its certificate in the chain annotation).
    let signed = registry.reference("t/keyless:v1");
    let digest = publish(&publisher, HOSTILE_WASM, &signed, None);
    let reference = format!("{}/t/keyless", registry.host());
    push_signature(
        &registry,
        "t/keyless",
        &digest,
        keyless_signature(&fulcio, &rekor, SUBJECT, ISSUER, &reference, &digest),
    );
    let rogue = registry.reference("t/rogue:v1");
    // Its own manifest digest: the manifest carries the time it was made.
    let rogue_digest = publish(&publisher, HOSTILE_WASM, &rogue, None);
    let rogue_reference = format!("{}/t/rogue", registry.host());
    push_signature(
        &registry,
        "t/rogue",
        &rogue_digest,
        keyless_signature(&Ca::new(), &rekor, SUBJECT, ISSUER, &rogue_reference, &rogue_digest),
    );

    let add = |reference: &str, subject: &str, issuer: &str| -> Vec<String> {
        [
            "add",
            reference,
            "--trust-identity",
            subject,
            "--trust-issuer",
            issuer,
            "--trusted-root",
            root,
            "--plain-http",
        ]
        .map(String::from)
        .to_vec()
    };

    // Another subject, another issuer, an untrusted CA: each refused, nothing written.
    let refused = |reference: &str, subject: &str, issuer: &str| {
        Machine::new().refused(&strs(&add(reference, subject, issuer)), "signature_invalid")
    };
    let err = refused(&signed, "bob@example.com", ISSUER);
    assert!(
        err.contains("signed by alice@example.com (issuer https://issuer.example), not a trusted identity"),
        "{err}"
    );
    assert!(
        err.contains("expected one by identity bob@example.com (issuer https://issuer.example)"),
        "{err}"
    );
    let err = refused(&signed, SUBJECT, "https://elsewhere.example");
    assert!(err.contains("not a trusted identity"), "{err}");
    let err = refused(&rogue, SUBJECT, ISSUER);
    assert!(err.contains("does not chain to a trusted CA"), "{err}");

    // The trusted identity through the trusted CA: accepted, pinned, callable.
    let m = Machine::new();
    let out = m.ok(&strs(&add(&signed, SUBJECT, ISSUER)));
    assert!(out.contains("signed by: identity alice@example.com (issuer https://issuer.example)"), "{out}");
    let policy = m.policy();
    assert!(policy.contains(&format!("source = \"{signed}@{digest}\"")), "{policy}");
    assert!(policy.contains(SUBJECT) && policy.contains(ISSUER), "{policy}");
    let root_sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(&root_file).unwrap()));
    assert!(policy.contains(&format!("trusted-root-sha256 = \"{root_sha}\"")), "{policy}");
    m.ok(&["call", "noop", "{}"]);
    // A start with an empty store pulls by digest and verifies against the root again.
    std::fs::remove_dir_all(m.store()).unwrap();
    m.ok(&["call", "noop", "{}"]);

    // The root is pinned by its bytes: another root in its place stops the entry.
    let other_root = trusted_root(&Ca::new(), &rekor);
    std::fs::write(&root_file, other_root).unwrap();
    let out = m.run(&["call", "noop", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", super::text(&out.stdout));
    assert!(super::text(&out.stderr).contains("trusted-root-sha256"), "{}", super::text(&out.stderr));
}
