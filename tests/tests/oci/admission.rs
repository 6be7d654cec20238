//! Nothing reaches the content store before it is admitted, whatever the source: a
//! component that passes its digest and signature checks but fails its pin or its
//! import checks leaves the store as it was — at `toolhost add` (file, `oci://`) and
//! at a start that has to pull a policy entry's component again (`oci://`). The
//! `https://` source's cases are in `sources.rs`, beside its TLS server.

use toolhost_tests::NET_WASM;
use toolhost_tests::registry::Registry;

use super::{Machine, publish, sha256_file, text};

/// `policy` with its `network = […]` line (the entry's hosts) emptied.
pub(super) fn without_network(policy: &str) -> String {
    policy
        .lines()
        .map(|l| if l.starts_with("network = ") { "network = []" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run `args` on `m` and expect a refusal (exit 2) mentioning `needle`, and an empty store.
pub(super) fn refused_unstored(m: &Machine, args: &[&str], needle: &str) {
    let out = m.run(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}\nstdout: {}\nstderr: {err}", text(&out.stdout));
    assert!(err.contains(needle), "{needle}: {err}");
    assert!(m.stored_files().is_empty(), "the store was written: {:?}\n{err}", m.stored_files());
}

#[test]
fn a_file_that_fails_its_import_checks_leaves_the_store_alone() {
    let m = Machine::new();
    refused_unstored(&m, &["add", NET_WASM], "not added: it imports toolhost:plugin/fetch");
    assert!(!m.policy_path().exists());
}

#[test]
fn a_registry_component_refused_at_add_or_at_load_is_never_stored() {
    let registry = Registry::start();
    let m = Machine::new();
    let alice = m.key("alice");
    let reference = registry.reference("tools/net:v1");
    publish(&m, NET_WASM, &reference, Some(&alice));
    let trust = format!("{alice}.pub");

    // Signed by the trusted key, but it asks for the network and is given none.
    refused_unstored(
        &m,
        &["add", &reference, "--trust-key", &trust, "--plain-http"],
        "not added: it imports toolhost:plugin/fetch",
    );

    // Added with its hosts: kept (manifest, component, signatures).
    m.ok(&["add", &reference, "--trust-key", &trust, "--plain-http", "--allow-host", "example.com"]);
    assert_eq!(m.stored_files().len(), 3);
    let policy = m.policy();

    // Another machine whose policy (the user's own file, outside the work dir) grants
    // it no network: the start pulls it, verifies its signature, and refuses to load
    // it — leaving nothing in that machine's store.
    let other = Machine::new();
    let outside = tempfile::tempdir().unwrap();
    let narrowed = outside.path().join("narrowed.toml");
    std::fs::write(&narrowed, without_network(&policy)).unwrap();
    refused_unstored(&other, &["list", "--policy", narrowed.to_str().unwrap()], "capability_denied");

    // A policy whose pin (the component's sha256) is not this component's.
    let pinned = sha256_file(NET_WASM);
    assert!(policy.contains(&pinned), "{policy}");
    let repinned = outside.path().join("repinned.toml");
    std::fs::write(&repinned, policy.replace(&pinned, &"0".repeat(64))).unwrap();
    refused_unstored(&other, &["list", "--policy", repinned.to_str().unwrap()], "identity_mismatch");

    // The policy as written loads, and only then is the component kept.
    let kept = outside.path().join("kept.toml");
    std::fs::write(&kept, &policy).unwrap();
    other.ok(&["list", "--policy", kept.to_str().unwrap()]);
    assert_eq!(other.stored_files().len(), 3);
}
