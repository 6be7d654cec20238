//! Interop with an implementation of cosign we did not write: sigstore-rs (the
//! `sigstore` crate's cosign client and keys, driven as the CLI `tests/sigstore-peer`,
//! a separate cargo project so its dependencies' features stay out of this build),
//! against Debian's docker-registry on 127.0.0.1. Both ways: sigstore-rs verifies what
//! `toolhost publish --key` pushed (the `sha256-<digest>.sig` tag, the simple signing
//! payload, the signature annotation), with the public key `toolhost keygen` wrote;
//! `toolhost inspect` and `add --trust-key` verify, and `add` installs, what sigstore-rs
//! signed and pushed with a key it made.
//! The private key files cross too (cosign's encrypted PEM, read by the other side), and
//! one signature image holds the signatures of both, each found by its key.
//! Each refuses the other's signature under a foreign key, and a signature made for
//! another digest: toolhost with a `signature_*` code and nothing written, sigstore-rs
//! with its public-key constraint unsatisfied.
//!
//! The peer speaks plain HTTP to the test's registry only (`HttpsExcept`), and every
//! other destination goes through a proxy on a closed loopback port: nothing it does
//! can leave the machine, whatever the environment's proxy variables say.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use toolhost_tests::registry::Registry;
use toolhost_tests::{FSPROBE_WASM, HOSTILE_WASM, sigstore_peer_bin};

use crate::oci::{Machine, copy_manifest, publish, sig_tag, tamper_payload, text};

/// Run the sigstore-rs peer with `args`.
fn peer_run(args: &[&str]) -> Output {
    Command::new(sigstore_peer_bin()).args(args).output().expect("the sigstore-rs peer runs")
}

/// The peer's JSON result: `Ok` when it exits 0, `Err` when it refuses (exit 1). Any
/// other exit fails the test.
fn peer(args: &[&str]) -> Result<Value, Value> {
    let out = peer_run(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let refused = match out.status.code() {
        Some(0) => false,
        Some(1) => true,
        _ => panic!("sigstore-peer {args:?}: {}\nstdout: {stdout}\nstderr: {stderr}", out.status),
    };
    let line: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("sigstore-peer {args:?}: {e}: {stdout}"));
    if refused { Err(line) } else { Ok(line) }
}

/// The field `name` of the peer's result, a string.
fn field(line: &Value, name: &str) -> String {
    line[name].as_str().unwrap_or_else(|| panic!("no {name} in {line}")).to_string()
}

/// The signature payloads sigstore-rs trusts on the manifest `reference` names, when
/// one of them is signed by the public key in the file `public`; else why not.
fn sigstore_verifies(registry: &Registry, reference: &str, public: &str) -> Result<Vec<Value>, String> {
    match peer(&["verify", "--registry", &registry.host(), "--key", public, reference]) {
        Ok(line) => Ok(line["layers"].as_array().unwrap_or_else(|| panic!("no layers: {line}")).clone()),
        Err(line) => Err(field(&line, "reason")),
    }
}

/// A private key file, its password, and its public key file.
struct KeyFiles {
    key: String,
    password: String,
    public: String,
}

/// A new ECDSA P-256 key, made by sigstore-rs and written (encrypted with `password`)
/// as `NAME.key` and `NAME.pub` in the machine's key dir.
fn sigstore_key(m: &Machine, name: &str, password: &str) -> KeyFiles {
    let prefix = m.keys.path().join(name);
    let line = peer(&["keygen", "--password", password, prefix.to_str().unwrap()]).expect("keygen");
    KeyFiles { key: field(&line, "key"), password: password.into(), public: field(&line, "public_key") }
}

/// sigstore-rs signs the payload naming the manifest `signed` resolves to, with `key`,
/// and pushes it to the signature tag of the manifest `target` resolves to (the same
/// one, unless the test means a signature for another digest). The digest signed.
fn sigstore_sign(registry: &Registry, key: &KeyFiles, signed: &str, target: &str) -> String {
    let host = registry.host();
    let args = ["sign-push", "--registry", &host, "--key", &key.key, "--password", &key.password];
    let line = peer(&[&args[..], &["--payload-of", signed, target]].concat()).expect("sign-push");
    field(&line, "signed")
}

/// The public key of the private key file `key`, as sigstore-rs reads it with `password`.
fn sigstore_public_key(key: &str, password: &str) -> String {
    field(&peer(&["public-key", "--key", key, "--password", password]).expect("public-key"), "public_key")
}

/// A PEM public key as toolhost reads it (PEM line endings and wrapping aside).
fn same_key(pem: &str) -> toolhost::oci::PublicKey {
    toolhost::oci::PublicKey::from_pem(pem).unwrap_or_else(|e| panic!("{e}: {pem}"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every file under `dirs`, with its bytes.
fn files_under(dirs: &[&Path]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// A machine whose config dir (trust records, the private policy) and data dir are
/// its own, not the test process's shared ones, and the dir holding both.
fn isolated_machine() -> (Machine, tempfile::TempDir) {
    let mut m = Machine::new();
    let home = tempfile::tempdir().unwrap();
    for (var, sub) in [("TOOLHOST_CONFIG_DIR", "config"), ("TOOLHOST_DATA_DIR", "data")] {
        m.env.push((var.into(), home.path().join(sub).to_str().unwrap().into()));
    }
    (m, home)
}

/// Run `args` on `m` (an [`isolated_machine`] with its `home`), expecting exit 2 with
/// `code` first on stderr and not one byte changed in the work dir (the policy), the
/// cache dir (the store), or the config and data dirs; the stderr.
fn refused_unchanged(m: &Machine, home: &Path, args: &[&str], code: &str) -> String {
    let dirs = [m.work.path(), m.cache.path(), home];
    let before = files_under(&dirs);
    let out = m.run(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}\nstdout: {}\nstderr: {err}", text(&out.stdout));
    assert!(err.starts_with(&format!("toolhost: {code}: ")), "expected {code}: {err}");
    assert!(files_under(&dirs) == before, "{args:?} wrote to the policy, the store or the config: {err}");
    err
}

#[test]
fn sigstore_rs_verifies_what_toolhost_publish_signed() {
    let registry = Registry::start();
    let m = Machine::new();
    let alice = m.key("alice");
    let alice_pub = format!("{alice}.pub");
    let reference = registry.reference("tools/hostile:v1");
    let digest = publish(&m, HOSTILE_WASM, &reference, Some(&alice));

    for by in [reference.clone(), format!("{}@{digest}", registry.reference("tools/hostile"))] {
        let layers = sigstore_verifies(&registry, &by, &alice_pub).unwrap_or_else(|e| panic!("{by}: {e}"));
        assert_eq!(layers.len(), 1, "{layers:?}");
        let critical = &layers[0]["critical"];
        assert_eq!(critical["image"]["docker-manifest-digest"], digest.as_str(), "{critical}");
        assert_eq!(critical["type"], "cosign container image signature", "{critical}");
        let repository = format!("{}/tools/hostile", registry.host());
        assert_eq!(critical["identity"]["docker-reference"], repository.as_str(), "{critical}");
    }

    // The private key keygen wrote, read by sigstore-rs: the same public key.
    let public = sigstore_public_key(&format!("{alice}.key"), "");
    assert_eq!(same_key(&public), same_key(&read(&alice_pub)));

    // A payload changed after signing (the signature kept) verifies no more.
    tamper_payload(&registry, "tools/hostile", &digest);
    let err = sigstore_verifies(&registry, &reference, &alice_pub).expect_err("a changed payload");
    assert!(err.contains("1 layer(s), none by the key"), "{err}");
}

#[test]
fn toolhost_inspects_and_adds_what_sigstore_rs_signed() {
    let registry = Registry::start();
    let m = Machine::new();
    let reference = registry.reference("tools/hostile:v1");
    let digest = publish(&m, HOSTILE_WASM, &reference, None);
    let key = sigstore_key(&m, "sigrs", "");
    let trust = &key.public;
    assert_eq!(sigstore_sign(&registry, &key, &reference, &reference), digest);

    let out = m.ok(&["inspect", &reference, "--trust-key", trust, "--plain-http"]);
    assert!(out.contains(&format!("manifest: {digest}")), "{out}");
    let signer =
        out.lines().find(|l| l.starts_with("signed by: key sigrs (sha256:")).expect(&out).to_string();
    assert!(!m.work.path().join("toolhost.toml").exists(), "inspect wrote the policy");

    let out = m.ok(&["add", &reference, "--trust-key", trust, "--plain-http"]);
    assert!(out.contains(&signer), "{out}");
    let policy = m.policy();
    assert!(policy.contains(&format!("source = \"{reference}@{digest}\"")), "{policy}");
    assert!(policy.contains("keys = [\"sigrs\"]"), "{policy}");
    m.ok(&["call", "noop", "{}"]);
}

#[test]
fn the_private_key_files_cross_both_ways() {
    let registry = Registry::start();
    let password = "correct horse battery staple";

    // sigstore-rs's encrypted key file, signing with `toolhost publish --key`.
    let mut m = Machine::new();
    let key = sigstore_key(&m, "sigrs", password);
    let trust = &key.public;
    let reference = registry.reference("tools/from-sigstore-key:v1");
    let key_arg = key.key.as_str();
    m.env.push(("TOOLHOST_KEY_PASSWORD".into(), "not the password".into()));
    let out = m.run(&["publish", HOSTILE_WASM, &reference, "--plain-http", "--key", key_arg]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("wrong password"), "{}", text(&out.stderr));
    m.env = vec![("TOOLHOST_KEY_PASSWORD".into(), password.into())];
    publish(&m, HOSTILE_WASM, &reference, Some(key_arg.strip_suffix(".key").unwrap()));
    sigstore_verifies(&registry, &reference, trust).expect("signed with sigstore-rs's key file");
    Machine::new().ok(&["add", &reference, "--trust-key", trust, "--plain-http"]);

    // toolhost's key file, with a password, signing in sigstore-rs.
    let alice = m.keys.path().join("alice").to_str().unwrap().to_string();
    m.ok(&["keygen", &alice]);
    let pair =
        KeyFiles { key: format!("{alice}.key"), password: password.into(), public: format!("{alice}.pub") };
    assert_eq!(same_key(&sigstore_public_key(&pair.key, password)), same_key(&read(&pair.public)));
    let out = peer_run(&["public-key", "--key", &pair.key, "--password", ""]);
    assert_eq!(out.status.code(), Some(2), "sigstore-rs read an encrypted key without its password");
    assert!(text(&out.stderr).contains("does not decrypt"), "{}", text(&out.stderr));
    let reference = registry.reference("tools/from-toolhost-key:v1");
    let digest = publish(&m, HOSTILE_WASM, &reference, None);
    assert_eq!(sigstore_sign(&registry, &pair, &reference, &reference), digest);
    let out = Machine::new().ok(&["add", &reference, "--trust-key", &format!("{alice}.pub"), "--plain-http"]);
    assert!(out.contains("signed by: key alice (sha256:"), "{out}");
}

/// A machine that already has a tool signed by alice's key installed from
/// `registry` (and so a policy and a trust record): a refusal must leave it as it is.
struct Installed {
    registry: Registry,
    m: Machine,
    home: tempfile::TempDir,
    /// alice's key files' path without `.key`/`.pub`.
    alice: String,
    alice_pub: String,
    installed: String,
}

fn installed() -> Installed {
    let registry = Registry::start();
    let (m, home) = isolated_machine();
    let alice = m.key("alice");
    let alice_pub = format!("{alice}.pub");
    let installed = registry.reference("tools/installed:v1");
    publish(&m, FSPROBE_WASM, &installed, Some(&alice));
    m.ok(&["add", &installed, "--trust-key", &alice_pub, "--plain-http"]);
    assert!(!files_under(&[home.path()]).is_empty(), "add's trust record is in the machine's own config dir");
    Installed { registry, m, home, alice, alice_pub, installed }
}

#[test]
fn each_refuses_the_others_signature_under_a_foreign_key() {
    let Installed { registry, m, home, alice_pub, installed, .. } = installed();

    // sigstore-rs signs with its key; toolhost trusts only alice's.
    let foreign = registry.reference("tools/foreign:v1");
    publish(&m, HOSTILE_WASM, &foreign, None);
    let key = sigstore_key(&m, "sigrs", "");
    let sigrs_pub = &key.public;
    sigstore_sign(&registry, &key, &foreign, &foreign);
    for command in ["add", "inspect"] {
        let err = refused_unchanged(
            &m,
            home.path(),
            &[command, &foreign, "--trust-key", &alice_pub, "--plain-http"],
            "signature_invalid",
        );
        assert!(err.contains("does not verify with any trusted key"), "{err}");
        assert!(err.contains("expected one by key alice (sha256:"), "{err}");
    }
    // (The same signature under the right key is good: the refusal was the key's.)
    assert!(m.ok(&["inspect", &foreign, "--trust-key", sigrs_pub, "--plain-http"]).contains("key sigrs"));

    // toolhost signs with alice's key; sigstore-rs trusts only its own.
    let err = sigstore_verifies(&registry, &installed, sigrs_pub).expect_err("a foreign key");
    assert!(err.contains("1 layer(s), none by the key"), "{err}");
    sigstore_verifies(&registry, &installed, &alice_pub).expect("alice's key");
}

#[test]
fn a_signature_for_another_digest_is_refused_by_both() {
    let Installed { registry, m, home, alice, alice_pub, .. } = installed();

    // sigstore-rs signs A's payload and attaches it to B.
    let a = registry.reference("t/moved:a");
    let b = registry.reference("t/moved:b");
    let digest_a = publish(&m, HOSTILE_WASM, &a, None);
    publish(&m, FSPROBE_WASM, &b, None);
    let key = sigstore_key(&m, "sigrs", "");
    let sigrs_pub = &key.public;
    assert_eq!(sigstore_sign(&registry, &key, &a, &b), digest_a);
    for command in ["add", "inspect"] {
        let err = refused_unchanged(
            &m,
            home.path(),
            &[command, &b, "--trust-key", sigrs_pub, "--plain-http"],
            "signature_invalid",
        );
        assert!(err.contains("signed by key sigrs"), "{err}");
        assert!(err.contains(&format!("for another digest {digest_a}")), "{err}");
    }
    let err = sigstore_verifies(&registry, &b, sigrs_pub).expect_err("another digest");
    assert!(err.contains("0 layer(s)"), "{err}");

    // toolhost's signature of C, copied to D's signature tag.
    let c = registry.reference("t/copied:c");
    let d = registry.reference("t/copied:d");
    let digest_c = publish(&m, HOSTILE_WASM, &c, Some(&alice));
    let digest_d = publish(&m, FSPROBE_WASM, &d, None);
    copy_manifest(&registry, "t/copied", &sig_tag(&digest_c), &sig_tag(&digest_d));
    let err = sigstore_verifies(&registry, &d, &alice_pub).expect_err("another digest");
    assert!(err.contains("0 layer(s)"), "{err}");
    // The same signature on C, where it belongs, verifies.
    sigstore_verifies(&registry, &c, &alice_pub).expect("C's own signature");
}

#[test]
fn one_signature_image_holds_both_and_each_finds_its_own() {
    let registry = Registry::start();
    let mut m = Machine::new();
    // The same artifact, to the byte, however many seconds lie between the two publishes.
    m.env.push(("SOURCE_DATE_EPOCH".into(), "1700000000".into()));
    let alice = m.key("alice");
    let alice_pub = format!("{alice}.pub");
    let reference = registry.reference("tools/both:v1");
    let digest = publish(&m, HOSTILE_WASM, &reference, None);
    let key = sigstore_key(&m, "sigrs", "");
    let sigrs_pub = &key.public;
    sigstore_sign(&registry, &key, &reference, &reference);
    // publish adds its signature to the image sigstore-rs pushed, keeping that layer's
    // payload and annotation as they were.
    assert_eq!(publish(&m, HOSTILE_WASM, &reference, Some(&alice)), digest);

    for public in [&alice_pub, sigrs_pub] {
        let layers = sigstore_verifies(&registry, &reference, public).expect("each key's layer");
        assert_eq!(layers.len(), 2, "{layers:?}");
    }
    let out = m.ok(&["inspect", &reference, "--trust-key", sigrs_pub, "--plain-http"]);
    assert!(out.contains("signed by: key sigrs (sha256:"), "{out}");
    let out = m.ok(&["inspect", &reference, "--trust-key", &alice_pub, "--plain-http"]);
    assert!(out.contains("signed by: key alice (sha256:"), "{out}");
}
