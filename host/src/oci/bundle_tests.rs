//! Real bundles made by the public Sigstore instance (and its staging twin), from
//! independent projects (`tests/fixtures/sigstore/README.md` says which), verified
//! offline against the trusted roots they were made under; and each tampered so one
//! check fails, refused with the code naming that check.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::*;

const PROD_ROOT: &[u8] = include_bytes!("../../../tests/fixtures/sigstore/trusted_root.json");
const STAGING_ROOT: &[u8] = include_bytes!("../../../tests/fixtures/sigstore/trusted_root_staging.json");
const ACTIONS: &str = "https://token.actions.githubusercontent.com";

/// One published bundle: its JSON, what it signs, the root and the identity.
struct Case {
    name: &'static str,
    bundle: &'static [u8],
    artifact: Artifact<'static>,
    root: &'static [u8],
    subject: &'static str,
    issuer: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "pypi-attestation-models",
            bundle: include_bytes!(
                "../../../tests/fixtures/sigstore/pypi_attestation_models-0.0.4a2.tar.gz.sigstore"
            ),
            artifact: Artifact::Bytes(include_bytes!(
                "../../../tests/fixtures/sigstore/pypi_attestation_models-0.0.4a2.tar.gz"
            )),
            root: PROD_ROOT,
            subject: "https://github.com/trailofbits/pypi-attestation-models/.github/workflows/release.yml@refs/tags/v0.0.4a2",
            issuer: ACTIONS,
        },
        Case {
            name: "rfc8785 (staging)",
            bundle: include_bytes!(
                "../../../tests/fixtures/sigstore/rfc8785-0.1.2-py3-none-any.whl.sigstore"
            ),
            artifact: Artifact::Bytes(include_bytes!(
                "../../../tests/fixtures/sigstore/rfc8785-0.1.2-py3-none-any.whl"
            )),
            root: STAGING_ROOT,
            subject: "william@yossarian.net",
            issuer: "https://github.com/login/oauth",
        },
        Case {
            name: "kubewarden-controller",
            bundle: include_bytes!("../../../tests/fixtures/sigstore/kubewarden-controller.sigstore.json"),
            artifact: Artifact::Digest(
                "sha256",
                "c811d58de79c92f03214e63aa339484e488d694ae8a6283b5f3f17a9faf50172",
            ),
            root: PROD_ROOT,
            subject: "https://github.com/kubewarden/kubewarden-controller/.github/workflows/release.yml@refs/tags/v1.34.0",
            issuer: ACTIONS,
        },
        Case {
            name: "npm sigstore@5.0.0 provenance",
            bundle: include_bytes!("../../../tests/fixtures/sigstore/npm-provenance.sigstore.json"),
            artifact: Artifact::Digest(
                "sha512",
                "849a897e81bf7b8a8541a6ae40bd3473a27a16b1cb0462ad905bd6dc96d34881053a12eb4a375233f81677fc9439f628fe0b0445e8535c60b5559597fbd5f80e",
            ),
            root: PROD_ROOT,
            subject: "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main",
            issuer: ACTIONS,
        },
    ]
}

impl Case {
    fn root(&self) -> TrustedRoot {
        TrustedRoot::from_json(self.root).unwrap()
    }

    fn identity(&self) -> Identity {
        Identity { subject: self.subject.into(), issuer: self.issuer.into() }
    }

    fn verify(
        &self,
        bundle: &[u8],
        root: &TrustedRoot,
        identity: Identity,
    ) -> Result<BundleSigner, OciError> {
        verify_bundle(bundle, self.artifact, root, &[identity])
    }

    /// The bundle with `change` made to its JSON.
    fn changed(&self, change: impl FnOnce(&mut Value)) -> Vec<u8> {
        let mut json: Value = serde_json::from_slice(self.bundle).unwrap();
        change(&mut json);
        serde_json::to_vec(&json).unwrap()
    }

    /// Expect `bundle` refused with `code` and a message holding `needle`.
    fn refused(&self, bundle: &[u8], root: &TrustedRoot, identity: Identity, code: &str, needle: &str) {
        let err = self.verify(bundle, root, identity).expect_err(self.name);
        assert_eq!(err.code(), code, "{}: {err}", self.name);
        assert!(err.message().contains(needle), "{}: {needle}: {err}", self.name);
    }
}

fn entry(json: &mut Value) -> &mut Value {
    &mut json["verificationMaterial"]["tlogEntries"][0]
}

#[test]
fn published_bundles_verify_offline_against_their_trusted_root() {
    for case in cases() {
        let signer = case
            .verify(case.bundle, &case.root(), case.identity())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(signer.identity, case.identity(), "{}", case.name);
        assert!(signer.integrated_time > 1_700_000_000, "{}", case.name);
    }
}

#[test]
fn another_identity_or_issuer_is_refused_naming_who_signed() {
    for case in cases() {
        let root = case.root();
        let other = Identity { subject: "someone@example.com".into(), issuer: case.issuer.into() };
        case.refused(case.bundle, &root, other, "signature_identity_mismatch", case.subject);
        let other = Identity { subject: case.subject.into(), issuer: "https://accounts.example.com".into() };
        case.refused(case.bundle, &root, other, "signature_identity_mismatch", case.issuer);
    }
}

#[test]
fn a_certificate_without_its_sct_or_from_an_unknown_ct_log_is_refused() {
    for case in cases() {
        let root = case.root();
        let stripped = case.changed(|json| {
            let cert = &mut json["verificationMaterial"]["certificate"]["rawBytes"];
            let der = STANDARD.decode(cert.as_str().unwrap()).unwrap();
            *cert = Value::from(STANDARD.encode(crate::oci::sct::certificate_without_sct(&der)));
        });
        case.refused(&stripped, &root, case.identity(), "signature_sct_invalid", "embeds no SCT");
        // The same root without its CT logs' keys in their place: the SCT's log is unknown.
        let mut json: Value = serde_json::from_slice(case.root).unwrap();
        for log in json["ctlogs"].as_array_mut().unwrap() {
            log["logId"]["keyId"] = Value::from(STANDARD.encode([7u8; 32]));
        }
        let unknown = TrustedRoot::from_json(&serde_json::to_vec(&json).unwrap()).unwrap();
        case.refused(
            case.bundle,
            &unknown,
            case.identity(),
            "signature_sct_invalid",
            "not a CT log of the trusted root",
        );
    }
}

#[test]
fn an_entry_from_another_log_or_a_broken_proof_is_refused() {
    let staging_log = "0y8wo8MtY5wrdiIFohx7sHeI5oKDpK5vQhGHI6G+pJY=";
    let prod_log = "wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=";
    // A root trusting both logs: an entry that claims the other one fails its SET.
    let mut both: Value = serde_json::from_slice(PROD_ROOT).unwrap();
    let staging: Value = serde_json::from_slice(STAGING_ROOT).unwrap();
    both["tlogs"].as_array_mut().unwrap().extend(staging["tlogs"].as_array().unwrap().iter().cloned());
    let both = TrustedRoot::from_json(&serde_json::to_vec(&both).unwrap()).unwrap();
    for case in cases() {
        let root = case.root();
        let own = entry(&mut serde_json::from_slice(case.bundle).unwrap())["logId"]["keyId"].clone();
        let other = if own == staging_log { prod_log } else { staging_log };
        let moved = case.changed(|json| entry(json)["logId"]["keyId"] = Value::from(other));
        case.refused(
            &moved,
            &root,
            case.identity(),
            "signature_tlog_invalid",
            "not a transparency log of the trusted root",
        );
        if case.root == PROD_ROOT {
            case.refused(
                &moved,
                &both,
                case.identity(),
                "signature_tlog_invalid",
                "signed entry timestamp does not verify",
            );
        }
        let index = case.changed(|json| {
            let i: i64 = entry(json)["logIndex"].as_str().unwrap().parse().unwrap();
            entry(json)["logIndex"] = Value::from((i + 1).to_string());
        });
        case.refused(
            &index,
            &root,
            case.identity(),
            "signature_tlog_invalid",
            "signed entry timestamp does not verify",
        );
        let path = case.changed(|json| {
            let hashes = &mut entry(json)["inclusionProof"]["hashes"];
            hashes[0] = hashes[1].clone();
        });
        case.refused(
            &path,
            &root,
            case.identity(),
            "signature_tlog_invalid",
            "does not lead to its root hash",
        );
        let checkpoint = case.changed(|json| {
            let note = &mut entry(json)["inclusionProof"]["checkpoint"]["envelope"];
            let text = note.as_str().unwrap().replacen('\n', "\nextra\n", 1);
            *note = Value::from(text);
        });
        case.refused(&checkpoint, &root, case.identity(), "signature_tlog_invalid", "checkpoint");
        let unlogged = case.changed(|json| {
            entry(json).as_object_mut().unwrap().remove("inclusionPromise");
        });
        case.refused(
            &unlogged,
            &root,
            case.identity(),
            "signature_tlog_invalid",
            "no signed entry timestamp",
        );
    }
}

#[test]
fn a_certificate_expired_at_signing_time_or_another_artifact_is_refused() {
    for case in cases() {
        // The CAs' validity ends before the log saw the signature.
        let mut json: Value = serde_json::from_slice(case.root).unwrap();
        for ca in json["certificateAuthorities"].as_array_mut().unwrap() {
            ca["validFor"] =
                serde_json::json!({"start": "2021-01-01T00:00:00Z", "end": "2022-01-01T00:00:00Z"});
        }
        let expired = TrustedRoot::from_json(&serde_json::to_vec(&json).unwrap()).unwrap();
        case.refused(
            case.bundle,
            &expired,
            case.identity(),
            "signature_certificate_invalid",
            "valid at the log's time",
        );
        // Another artifact.
        let other = Artifact::Bytes(b"another artifact");
        let err = verify_bundle(case.bundle, other, &case.root(), &[case.identity()]).unwrap_err();
        assert_eq!(err.code(), "signature_invalid", "{}: {err}", case.name);
        assert!(err.message().contains("signed for another artifact"), "{err}");
        // A payload changed after signing.
        let changed = case.changed(|json| {
            let payload = STANDARD.decode(json["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
            let text = String::from_utf8(payload).unwrap().replacen("sha", "SHA", 1);
            json["dsseEnvelope"]["payload"] = Value::from(STANDARD.encode(text));
        });
        case.refused(&changed, &case.root(), case.identity(), "signature_tlog_invalid", "another payload");
    }
}
