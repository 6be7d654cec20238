//! `[trust] require-signature`: by default an `oci://` component must be signed (`add`
//! refuses without a signer or a signature, and an entry naming no signer is refused
//! when the policy is read); `require-signature = false` lets an entry name no signer,
//! but an entry that names one is verified as always, so a missing or invalid
//! signature is still refused (fail closed), with nothing written to the store.

use std::process::Output;

use toolhost_tests::HOSTILE_WASM;
use toolhost_tests::registry::Registry;

use super::{Machine, publish, sha256_file, text};

/// The policy of one `oci://` entry pinned to `digest`, naming `keys` (and `alice`'s
/// public key in `[trust.keys]` when it names any).
fn policy(require_signature: Option<bool>, reference: &str, digest: &str, keys: &[(&str, String)]) -> String {
    let mut text = String::from("[trust]\n");
    if let Some(require) = require_signature {
        text.push_str(&format!("require-signature = {require}\n"));
    }
    if !keys.is_empty() {
        text.push_str("\n[trust.keys]\n");
        for (name, pem) in keys {
            text.push_str(&format!("{name} = \"\"\"\n{pem}\"\"\"\n"));
        }
    }
    let names: Vec<String> = keys.iter().map(|(name, _)| format!("\"{name}\"")).collect();
    text.push_str(&format!(
        "\n[plugins.tool]\nsource = \"{reference}@{digest}\"\nsha256 = \"{}\"\nplain-http = true\n",
        sha256_file(HOSTILE_WASM)
    ));
    if !names.is_empty() {
        text.push_str(&format!("keys = [{}]\n", names.join(", ")));
    }
    text
}

/// Write `policy` into `m`'s work dir and trust it as the user would (`toolhost trust`).
fn write_and_trust(m: &Machine, policy: &str) -> Output {
    std::fs::write(m.policy_path(), policy).unwrap();
    m.run(&["trust"])
}

/// A start (`list`) that must be refused with `code` for `plugins.tool`, storing nothing.
fn start_refused(m: &Machine, code: &str) -> String {
    let out = m.run(&["list"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}{err}", text(&out.stdout));
    assert!(err.contains(&format!("{code}: plugins.tool: ")), "expected {code}: {err}");
    assert_eq!(m.stored_files(), Vec::<std::path::PathBuf>::new(), "the store was written: {err}");
    err
}

#[test]
fn require_signature_false_admits_unsigned_entries_but_never_a_bad_signature() {
    let registry = Registry::start();
    let publisher = Machine::new();
    let alice = publisher.key("alice");
    let mallory = publisher.key("mallory");
    let alice_pem = std::fs::read_to_string(format!("{alice}.pub")).unwrap();
    let unsigned = registry.reference("t/unsigned:v1");
    let unsigned_digest = publish(&publisher, HOSTILE_WASM, &unsigned, None);
    let by_mallory = registry.reference("t/mallory:v1");
    let mallory_digest = publish(&publisher, HOSTILE_WASM, &by_mallory, Some(&mallory));

    // By default: `add` wants a signer, and with one it wants a signature.
    let m = Machine::new();
    let err = m.refused(&["add", &unsigned, "--plain-http"], "signature_missing");
    assert!(err.contains("a registry component is added only signed"), "{err}");
    let trust_alice = format!("{alice}.pub");
    let err =
        m.refused(&["add", &unsigned, "--trust-key", &trust_alice, "--plain-http"], "signature_missing");
    assert!(err.contains("no signature; expected one by key alice"), "{err}");

    // An entry naming no signer is refused when the policy is read (here, when it is
    // to be trusted), whether require-signature is unset or true.
    for require in [None, Some(true)] {
        let out = write_and_trust(&m, &policy(require, &unsigned, &unsigned_digest, &[]));
        assert_eq!(out.status.code(), Some(2), "{require:?}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains("an oci:// source must name who signed it"),
            "{}",
            text(&out.stderr)
        );
    }
    assert!(m.stored_files().is_empty());

    // require-signature = false: the unsigned entry loads and runs.
    let out = write_and_trust(&m, &policy(Some(false), &unsigned, &unsigned_digest, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    m.ok(&["call", "noop", "{}"]);
    assert!(!m.stored_files().is_empty());

    // But an entry that names a signer is verified whatever require-signature says: the
    // unsigned component is signature_missing, mallory's signature signature_invalid.
    let keys = [("alice", alice_pem)];
    for (reference, digest, code, why) in [
        (&unsigned, &unsigned_digest, "signature_missing", "no signature; expected one by key alice"),
        (&by_mallory, &mallory_digest, "signature_invalid", "does not verify with any trusted key"),
    ] {
        let m = Machine::new();
        let out = write_and_trust(&m, &policy(Some(false), reference, digest, &keys));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let err = start_refused(&m, code);
        assert!(err.contains(why), "{err}");
    }
}
