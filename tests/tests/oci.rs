//! Community tools from a real OCI registry (Debian's `docker-registry`, Distribution
//! 2.8, started on 127.0.0.1 by each test): `keygen`, `publish`, `add oci://…` by tag
//! and by digest, the pinned digest surviving a re-push, `update`, `remove`; every
//! refusal (unsigned, another key, another digest, a changed payload, a truncated or
//! changed layer, a 5 GB layer) exiting 2 with its code and writing nothing; interop
//! with OpenSSL and `skopeo` (signing and verifying in cosign's format); basic auth; and, from a
//! server of our own, the faults a real registry does not make (500s, a connection
//! closed mid-layer, redirect loops, redirects to private addresses, a stall).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use toolhost_tests::registry::{FaultServer, Registry, response};
use toolhost_tests::{FSPROBE_WASM, HOSTILE_WASM, NET_WASM, test_config_dir, toolhost_bin};

mod admission;
mod keyless;
mod sources;
mod unsigned;

/// One user's machine: a work dir, a cache dir (the OCI store), a key dir.
pub(crate) struct Machine {
    pub(crate) work: tempfile::TempDir,
    pub(crate) cache: tempfile::TempDir,
    pub(crate) keys: tempfile::TempDir,
    pub(crate) env: Vec<(String, String)>,
}

impl Machine {
    pub(crate) fn new() -> Self {
        Self {
            work: tempfile::tempdir().unwrap(),
            cache: tempfile::tempdir().unwrap(),
            keys: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(toolhost_bin());
        cmd.current_dir(self.work.path())
            .args(args)
            .env_remove("TOOLHOST_LOG")
            .env_remove("TOOLHOST_KEY_PASSWORD")
            .env("TOOLHOST_CONFIG_DIR", test_config_dir())
            .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
            .env("TOOLHOST_CACHE_DIR", self.cache.path())
            .env("DOCKER_CONFIG", self.keys.path().join("docker"))
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.output().expect("running toolhost")
    }

    /// Run and expect success.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}\nstdout: {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Run and expect exit 2 with `code` first on stderr; nothing written to the policy
    /// or the store.
    fn refused(&self, args: &[&str], code: &str) -> String {
        let out = self.run(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}\nstdout: {}\nstderr: {err}", text(&out.stdout));
        assert!(err.starts_with(&format!("toolhost: {code}: ")), "expected {code}: {err}");
        assert!(!self.policy_path().exists(), "the policy was written: {err}");
        assert_eq!(self.stored_files(), Vec::<PathBuf>::new(), "the store was written: {err}");
        err
    }

    pub(crate) fn key(&self, name: &str) -> String {
        let prefix = self.keys.path().join(name);
        if !prefix.with_extension("pub").exists() {
            self.ok(&["keygen", prefix.to_str().unwrap(), "--no-password"]);
        }
        prefix.to_str().unwrap().to_string()
    }

    /// A `docker login` for `registry` (`HOST:PORT`) with `auth` (base64 `user:password`).
    fn docker_login(&self, registry: &str, auth: &str) {
        let docker = self.keys.path().join("docker");
        std::fs::create_dir_all(&docker).unwrap();
        let config = format!(r#"{{"auths": {{"{registry}": {{"auth": "{auth}"}}}}}}"#);
        std::fs::write(docker.join("config.json"), config).unwrap();
    }

    fn policy_path(&self) -> PathBuf {
        self.work.path().join("toolhost.toml")
    }

    pub(crate) fn policy(&self) -> String {
        std::fs::read_to_string(self.policy_path()).unwrap()
    }

    fn store(&self) -> PathBuf {
        self.cache.path().join("oci")
    }

    fn stored_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![self.store()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                let path = entry.unwrap().path();
                if path.is_dir() { stack.push(path) } else { files.push(path) }
            }
        }
        files.sort();
        files
    }
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `sha256:…` after `published …@` in publish's output.
fn published_digest(stdout: &str) -> String {
    let line = stdout.lines().find(|l| l.starts_with("published ")).expect("a published line");
    line.rsplit_once('@').expect("a digest").1.to_string()
}

/// Publish `wasm` to `reference`, signed by `key` (a keygen prefix) when given; the digest.
pub(crate) fn publish(m: &Machine, wasm: &str, reference: &str, key: Option<&str>) -> String {
    let key_file = key.map(|k| format!("{k}.key"));
    let mut args = vec!["publish", wasm, reference, "--plain-http"];
    if let Some(key) = &key_file {
        args.extend(["--key", key]);
    }
    published_digest(&m.ok(&args))
}

/// `der` as PEM with `label`.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der);
    let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|line| std::str::from_utf8(line).unwrap()).collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

fn sha256_file(path: &str) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(path).unwrap()))
}

#[test]
fn publish_add_and_call_by_tag_and_by_digest() {
    let registry = Registry::start();
    let m = Machine::new();
    let alice = m.key("alice");
    // The private key is the owner's alone, and keygen never overwrites one.
    use std::os::unix::fs::PermissionsExt;
    let key_mode = std::fs::metadata(format!("{alice}.key")).unwrap().permissions().mode() & 0o777;
    assert_eq!(key_mode, 0o600);
    let before = std::fs::read(format!("{alice}.key")).unwrap();
    let out = m.run(&["keygen", &alice, "--no-password"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("never overwrites"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(format!("{alice}.key")).unwrap(), before);
    let reference = registry.reference("tools/hostile:v1");
    let digest = publish(&m, HOSTILE_WASM, &reference, Some(&alice));

    let out = m.ok(&["add", &reference, "--trust-key", &format!("{alice}.pub"), "--plain-http"]);
    assert!(out.contains("signed by: key alice (sha256:"), "{out}");
    assert!(out.contains(&format!("manifest: {digest}")), "{out}");
    let policy = m.policy();
    let pinned = format!("source = \"{reference}@{digest}\"");
    assert!(policy.contains(&pinned), "{policy}");
    assert!(policy.contains(&format!("sha256 = \"{}\"", sha256_file(HOSTILE_WASM))), "{policy}");
    assert!(policy.contains("keys = [\"alice\"]") && policy.contains("plain-http = true"), "{policy}");
    assert!(policy.contains("[trust.keys]") && policy.contains("BEGIN PUBLIC KEY"), "{policy}");
    m.ok(&["call", "noop", "{}"]);

    // The store: the component under its digest, private.
    let files = m.stored_files();
    assert_eq!(files.len(), 3, "manifest, component, signatures: {files:?}");
    for file in &files {
        assert_eq!(
            std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
            0o600,
            "{}",
            file.display()
        );
        assert_eq!(std::fs::metadata(file.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    }
    assert!(files.iter().any(|f| f.ends_with(sha256_file(HOSTILE_WASM))), "{files:?}");

    // By digest, on another machine.
    let other = Machine::new();
    let by_digest = format!("{}@{digest}", registry.reference("tools/hostile"));
    let out = other.run(&[
        "add",
        &by_digest,
        "--trust-key",
        &format!("{alice}.pub"),
        "--plain-http",
        "--name",
        "h",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(other.policy().contains(&format!("source = \"{by_digest}\"")), "{}", other.policy());
    other.ok(&["call", "noop", "{}"]);

    // `remove` takes the entry and the key no entry names any more.
    let out = m.ok(&["remove", "hostile"]);
    assert!(out.contains("removed plugins.hostile"), "{out}");
    assert!(
        !m.policy().contains("[plugins.hostile]") && !m.policy().contains("BEGIN PUBLIC KEY"),
        "{}",
        m.policy()
    );
    assert_eq!(m.run(&["remove", "hostile"]).status.code(), Some(2));
}

#[test]
fn a_repush_keeps_the_pinned_digest_until_update_shows_and_takes_the_change() {
    let registry = Registry::start();
    let m = Machine::new();
    let alice = m.key("alice");
    let reference = registry.reference("tools/tool:stable");
    let v1 = publish(&m, HOSTILE_WASM, &reference, Some(&alice));
    m.ok(&["add", &reference, "--trust-key", &format!("{alice}.pub"), "--plain-http", "--name", "tool"]);

    let v2 = publish(&m, FSPROBE_WASM, &reference, Some(&alice));
    assert_ne!(v1, v2);
    // The entry still runs the old digest: from the store, and from the registry by
    // digest once the store is gone.
    let list = m.ok(&["list"]);
    assert!(list.contains("noop") && !list.contains("fs_read"), "{list}");
    std::fs::remove_dir_all(m.store()).unwrap();
    let list = m.ok(&["list"]);
    assert!(list.contains("noop") && !list.contains("fs_read"), "{list}");

    // update shows the change and, without a terminal or --yes, rewrites nothing.
    let before = m.policy();
    let out = m.run(&["update", "tool"]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}{}", text(&out.stderr));
    assert!(shown.contains(&format!("manifest: {v1} -> {v2}")), "{shown}");
    assert!(shown.contains(&format!("-> {}", sha256_file(FSPROBE_WASM))), "{shown}");
    assert!(shown.contains("tools: ") && shown.contains("fs_read"), "{shown}");
    assert!(shown.contains("not rewritten"), "{shown}");
    assert_eq!(m.policy(), before);

    let out = m.ok(&["update", "tool", "--yes"]);
    assert!(out.contains("updated plugins.tool"), "{out}");
    assert!(m.policy().contains(&format!("@{v2}\"")), "{}", m.policy());
    let list = m.ok(&["list"]);
    assert!(list.contains("fs_read") && !list.contains("noop"), "{list}");
    assert!(m.ok(&["update", "tool"]).contains("is up to date"));

    // A version that asks for more (the network) is shown and not taken.
    publish(&m, NET_WASM, &reference, Some(&alice));
    let out = m.run(&["update", "tool", "--yes"]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}{}", text(&out.stderr));
    assert!(shown.contains("+ imports toolhost:plugin/fetch"), "{shown}");
    assert!(shown.contains("would be refused"), "{shown}");
    assert!(m.policy().contains(&format!("@{v2}\"")));
}

#[test]
fn every_bad_signature_is_refused_with_its_code_and_nothing_written() {
    let registry = Registry::start();
    let publisher = Machine::new();
    let alice = publisher.key("alice");
    let mallory = publisher.key("mallory");
    let trust_alice = format!("{alice}.pub");
    let add = |m: &Machine, reference: &str, code: &str| {
        m.refused(&["add", reference, "--trust-key", &trust_alice, "--plain-http"], code)
    };

    let unsigned = registry.reference("t/unsigned:v1");
    publish(&publisher, HOSTILE_WASM, &unsigned, None);
    let err = add(&Machine::new(), &unsigned, "signature_missing");
    assert!(err.contains("no signature; expected one by key alice (sha256:"), "{err}");

    let other_key = registry.reference("t/other-key:v1");
    publish(&publisher, HOSTILE_WASM, &other_key, Some(&mallory));
    let err = add(&Machine::new(), &other_key, "signature_invalid");
    assert!(err.contains("does not verify with any trusted key"), "{err}");

    // Alice's signature of one digest, copied to another digest's signature tag.
    let signed = registry.reference("t/copied:a");
    let a = publish(&publisher, HOSTILE_WASM, &signed, Some(&alice));
    let b = publish(&publisher, FSPROBE_WASM, &registry.reference("t/copied:b"), None);
    copy_manifest(&registry, "t/copied", &sig_tag(&a), &sig_tag(&b));
    let err = add(&Machine::new(), &registry.reference("t/copied:b"), "signature_invalid");
    assert!(err.contains(&format!("for another digest {a}")), "{err}");

    // A payload changed after signing (the signature kept).
    let tampered = registry.reference("t/tampered:v1");
    let digest = publish(&publisher, HOSTILE_WASM, &tampered, Some(&alice));
    tamper_payload(&registry, "t/tampered", &digest);
    let err = add(&Machine::new(), &tampered, "signature_invalid");
    assert!(err.contains("does not verify"), "{err}");

    // The layer in the registry's storage, truncated, then replaced by other bytes of
    // the same length.
    let layer_file = registry.blob_file(&format!("sha256:{}", sha256_file(HOSTILE_WASM)));
    let original = std::fs::read(&layer_file).unwrap();
    std::fs::write(&layer_file, &original[..original.len() / 2]).unwrap();
    let err = add(&Machine::new(), &registry.reference("t/copied:a"), "digest_mismatch");
    assert!(err.contains("bytes arrived, the manifest declares"), "{err}");
    let mut changed = original.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0xff;
    std::fs::write(&layer_file, &changed).unwrap();
    let err = add(&Machine::new(), &registry.reference("t/copied:a"), "digest_mismatch");
    assert!(err.contains("the bytes hash to"), "{err}");
    std::fs::write(&layer_file, &original).unwrap();

    // A manifest that names a 5 GB layer: refused from the manifest alone.
    push_huge_layer_manifest(&registry, "t/huge", "v1");
    let err = add(&Machine::new(), &registry.reference("t/huge:v1"), "too_large");
    assert!(err.contains("5000000000 bytes; at most 209715200"), "{err}");

    // And after all that, the good one is accepted.
    Machine::new().ok(&["add", &signed, "--trust-key", &trust_alice, "--plain-http"]);
}

pub(crate) fn sig_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// A registry client for the test's own setup (the library's, anonymous, plain HTTP).
fn client(registry: &Registry, repo: &str) -> toolhost::oci::RegistryClient {
    let reference = toolhost::oci::OciRef::parse(&format!("oci://{}/{repo}:x", registry.host())).unwrap();
    let settings = toolhost::oci::RegistrySettings { plain_http: true, ..Default::default() };
    toolhost::oci::RegistryClient::new(&reference, settings, toolhost::oci::Credentials::Anonymous).unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

pub(crate) fn copy_manifest(registry: &Registry, repo: &str, from: &str, to: &str) {
    let client = client(registry, repo);
    block_on(async {
        let (bytes, _, media_type) = client.manifest(from).await.unwrap().expect("the manifest");
        client.push_manifest(to, &media_type, &bytes).await.unwrap();
    });
}

/// Replace the signature image of `digest` with one whose payload names another
/// repository, keeping the signature made over the original payload.
pub(crate) fn tamper_payload(registry: &Registry, repo: &str, digest: &str) {
    use toolhost::oci::signature_image;
    let client = client(registry, repo);
    let pinned = toolhost::oci::OciRef::parse(&format!("oci://{}/{repo}@{digest}", registry.host())).unwrap();
    block_on(async {
        let mut layers = toolhost::oci::fetch_signatures(&client, digest, &pinned).await.unwrap();
        assert_eq!(layers.len(), 1);
        let payload = String::from_utf8(layers[0].payload_bytes().unwrap()).unwrap();
        let changed = payload.replace(repo, "t/elsewhere");
        assert_ne!(changed, payload);
        layers[0].payload = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, changed);
        let (blobs, manifest) = signature_image(&layers).unwrap();
        for blob in &blobs {
            client.push_blob(blob).await.unwrap();
        }
        client
            .push_manifest(&sig_tag(digest), "application/vnd.oci.image.manifest.v1+json", &manifest)
            .await
            .unwrap();
    });
}

/// A wasm-layout manifest whose layer (an existing blob) claims 5 GB.
fn huge_layer_manifest(config_digest: &str, layer_digest: &str) -> Vec<u8> {
    format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.wasm.config.v0+json","digest":"{config_digest}","size":2}},"layers":[{{"mediaType":"application/wasm","digest":"{layer_digest}","size":5000000000}}]}}"#
    )
    .into_bytes()
}

fn push_huge_layer_manifest(registry: &Registry, repo: &str, tag: &str) {
    let client = client(registry, repo);
    block_on(async {
        let config = client.push_blob(b"{}").await.unwrap();
        let layer = client.push_blob(b"not five gigabytes").await.unwrap();
        client
            .push_manifest(
                tag,
                "application/vnd.oci.image.manifest.v1+json",
                &huge_layer_manifest(&config, &layer),
            )
            .await
            .unwrap();
    });
}

#[test]
fn the_store_is_checked_on_every_start() {
    let registry = Registry::start();
    let m = Machine::new();
    let alice = m.key("alice");
    let reference = registry.reference("tools/checked:v1");
    publish(&m, HOSTILE_WASM, &reference, Some(&alice));
    m.ok(&["add", &reference, "--trust-key", &format!("{alice}.pub"), "--plain-http"]);
    let component = m.store().join("blobs/sha256").join(sha256_file(HOSTILE_WASM));
    let signatures: Vec<PathBuf> =
        std::fs::read_dir(m.store().join("signatures/sha256")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(signatures.len(), 1);

    // A changed copy in the store is refused, not used (nor silently replaced).
    let original = std::fs::read(&component).unwrap();
    let mut changed = original.clone();
    changed[100] ^= 1;
    std::fs::write(&component, &changed).unwrap();
    let out = m.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("digest_mismatch: plugins.checked:"), "{}", text(&out.stderr));
    std::fs::write(&component, &original).unwrap();

    // A signature record that no longer verifies is not trusted: the signatures are
    // pulled and verified again.
    std::fs::write(&signatures[0], b"[]").unwrap();
    m.ok(&["list"]);
    assert_ne!(std::fs::read(&signatures[0]).unwrap(), b"[]");

    // With the registry gone and no record, the start refuses instead of running unverified.
    std::fs::write(&signatures[0], b"[]").unwrap();
    drop(registry);
    let out = m.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("transport: "), "{}", text(&out.stderr));
}

#[test]
fn basic_auth_is_used_only_when_asked_and_never_shown() {
    let registry = Registry::start_with_basic_auth("alice", "pa55-w0rd-xyz");
    let m = Machine::new();
    let key = m.key("signer");
    let reference = registry.reference("private/tool:v1");
    let wasm_and_ref = ["publish", HOSTILE_WASM, reference.as_str(), "--plain-http", "--key"];
    let key_file = format!("{key}.key");

    let out = m.run(&[&wasm_and_ref[..], &[key_file.as_str()]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("registry_error: ") && text(&out.stderr).contains("--registry-auth"),
        "{}",
        text(&out.stderr)
    );

    // A docker login for another port of the same host is not used.
    let docker = m.keys.path().join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    let auth = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "alice:pa55-w0rd-xyz");
    std::fs::write(
        docker.join("config.json"),
        format!(r#"{{"auths": {{"127.0.0.1:1": {{"auth": "{auth}"}}}}}}"#),
    )
    .unwrap();
    let out = m.run(&[&wasm_and_ref[..], &[key_file.as_str(), "--registry-auth"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("no entry for {}", registry.host())),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(
        docker.join("config.json"),
        format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, registry.host()),
    )
    .unwrap();
    let out = m.run(&[&wasm_and_ref[..], &[key_file.as_str(), "--registry-auth"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let add =
        ["add", reference.as_str(), "--trust-key", &format!("{key}.pub"), "--plain-http", "--registry-auth"];
    let out = m.run(&add);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for output in [&out.stdout, &out.stderr] {
        assert!(
            !text(output).contains("pa55-w0rd-xyz") && !text(output).contains(&auth),
            "a secret was shown"
        );
    }
    assert!(!m.policy().contains("pa55-w0rd-xyz"));
    assert!(m.policy().contains("registry-auth = true"), "{}", m.policy());

    // A later start with an empty store pulls with the same login; without it, it refuses.
    std::fs::remove_dir_all(m.store()).unwrap();
    let out = m.run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("noop"), "{}", text(&out.stdout));
    std::fs::remove_dir_all(m.store()).unwrap();
    std::fs::remove_file(docker.join("config.json")).unwrap();
    let out = m.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("--registry-auth: ") && text(&out.stderr).contains("no such file"),
        "{}",
        text(&out.stderr)
    );
    assert!(m.stored_files().is_empty());
}

/// A registry that wants a bearer token from its own token realm: the docker login's
/// basic credentials go to the realm, the token to the registry, and neither is ever
/// printed, even with TOOLHOST_LOG=trace. A realm on any other origin (another port of
/// loopback, the same address by another name) is refused before anything is sent.
#[test]
fn bearer_tokens_come_from_the_registrys_own_realm_and_are_never_shown() {
    const TOKEN: &str = "tok-S3CRET-4f9a";
    const PASSWORD: &str = "pw-S3CRET-77c1";
    let realm: Arc<std::sync::OnceLock<String>> = Arc::default();
    let basic =
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("alice:{PASSWORD}"));
    let huge =
        huge_layer_manifest(&format!("sha256:{}", "1".repeat(64)), &format!("sha256:{}", "2".repeat(64)));
    let script_realm = realm.clone();
    let script_basic = basic.clone();
    let registry = FaultServer::start_with_heads(Arc::new(move |path, head| {
        let has = |header: &str| head.lines().any(|l| l.eq_ignore_ascii_case(header));
        if path.starts_with("/token") {
            if has(&format!("authorization: Basic {script_basic}")) {
                response(
                    "200 OK",
                    &[("Content-Type", "application/json")],
                    format!(r#"{{"token":"{TOKEN}"}}"#).as_bytes(),
                )
            } else {
                response("401 Unauthorized", &[], b"")
            }
        } else if !has(&format!("authorization: Bearer {TOKEN}")) {
            let challenge = format!(r#"Bearer realm="{}",service="test""#, script_realm.get().unwrap());
            response("401 Unauthorized", &[("WWW-Authenticate", challenge.as_str())], b"")
        } else if path.contains("/manifests/") {
            response("200 OK", &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")], &huge)
        } else {
            response("404 Not Found", &[], b"")
        }
    }));
    let bystander = fault_server(|_| response("200 OK", &[], format!(r#"{{"token":"{TOKEN}"}}"#).as_bytes()));
    let add = |realm_url: String| {
        let mut m = Machine::new();
        m.docker_login(&registry.addr.to_string(), &basic);
        m.env.push(("TOOLHOST_LOG".into(), "trace".into()));
        let _ = realm.set(realm_url);
        let key = m.key("k");
        let reference = registry.reference("t/x:v1");
        let trust = format!("{key}.pub");
        let out = m.run(&["add", &reference, "--trust-key", &trust, "--plain-http", "--registry-auth"]);
        for output in [&out.stdout, &out.stderr] {
            for secret in [TOKEN, PASSWORD, basic.as_str()] {
                assert!(!text(output).contains(secret), "{secret} was shown: {}", text(output));
            }
        }
        (m, out)
    };

    // The realm is the registry itself: basic auth there, then the token; the manifest
    // (a 5 GB layer) is reached with it and refused.
    let (m, out) = add(format!("http://{}/token", registry.addr));
    refused_under_trace(&m, &out, "too_large");
    let heads = registry.heads.lock().unwrap().clone();
    let token_requests: Vec<&String> = heads.iter().filter(|h| h.starts_with("GET /token")).collect();
    assert!(!token_requests.is_empty() && token_requests.iter().all(|h| h.contains(&basic)), "{heads:?}");
    assert!(heads.iter().any(|h| h.contains("/manifests/") && h.contains(TOKEN)), "{heads:?}");
    assert!(
        !heads.iter().any(|h| !h.starts_with("GET /token") && h.contains(&basic)),
        "basic auth went past the realm"
    );

    // A realm elsewhere: refused before it is asked, so no credential leaves.
    let server = FaultServer::start_with_heads(Arc::new({
        let target = format!("http://{}/token", bystander.addr);
        move |_, _| {
            let challenge = format!(r#"Bearer realm="{target}",service="test""#);
            response("401 Unauthorized", &[("WWW-Authenticate", challenge.as_str())], b"")
        }
    }));
    let mut m = Machine::new();
    let key = m.key("k");
    m.docker_login(&server.addr.to_string(), &basic);
    m.env.push(("TOOLHOST_LOG".into(), "trace".into()));
    let trust = format!("{key}.pub");
    let out = m.run(&[
        "add",
        &server.reference("t/x:v1"),
        "--trust-key",
        &trust,
        "--plain-http",
        "--registry-auth",
    ]);
    let err = refused_under_trace(&m, &out, "blocked_url");
    assert!(err.contains("only the registry's own address"), "{err}");
    assert!(!text(&out.stderr).contains(PASSWORD) && !text(&out.stderr).contains(&basic));
    assert!(bystander.seen.lock().unwrap().is_empty(), "the other realm was asked");
    assert!(
        !server.heads.lock().unwrap().iter().any(|h| h.to_ascii_lowercase().contains("authorization")),
        "credentials were sent before a challenge"
    );
}

/// [`assert_refused`] for a run with TOOLHOST_LOG set: the refusal is stderr's last line.
fn refused_under_trace(m: &Machine, out: &Output, code: &str) -> String {
    let err = text(&out.stderr);
    let last = err.lines().last().unwrap_or("").to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(last.starts_with(&format!("toolhost: {code}: ")), "expected {code}: {last}");
    assert!(!m.policy_path().exists());
    assert!(m.stored_files().is_empty());
    last
}

/// A server that answers `/v2/` and every other path with `answer(path)`.
fn fault_server(answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> FaultServer {
    FaultServer::start(Arc::new(answer))
}

fn add_from(server: &FaultServer, extra: &[&str]) -> (Machine, String, Output) {
    let m = Machine::new();
    let key = m.key("k");
    let reference = server.reference("t/x:v1");
    let trust = format!("{key}.pub");
    let mut args = vec!["add", reference.as_str(), "--trust-key", trust.as_str(), "--plain-http"];
    args.extend(extra);
    let out = m.run(&args);
    (m, reference, out)
}

fn assert_refused(m: &Machine, out: &Output, code: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&format!("toolhost: {code}: ")), "expected {code}: {err}");
    assert!(!m.policy_path().exists());
    assert!(m.stored_files().is_empty());
    err
}

#[test]
fn registry_faults_are_refused_with_their_codes() {
    // 500s.
    let server = fault_server(|_| response("500 Internal Server Error", &[], b"oops"));
    let (m, _, out) = add_from(&server, &[]);
    let err = assert_refused(&m, &out, "registry_error");
    assert!(err.contains("HTTP 500"), "{err}");

    // A connection closed mid-layer: the layer declares 64 KiB and sends 1 KiB.
    let layer = vec![7u8; 65536];
    let layer_digest = format!("sha256:{}", hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&layer)));
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.wasm.config.v0+json","digest":"{layer_digest}","size":2}},"layers":[{{"mediaType":"application/wasm","digest":"{layer_digest}","size":65536}}]}}"#
    );
    let server = fault_server(move |path| {
        if path.contains("/manifests/") {
            response(
                "200 OK",
                &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
                manifest.as_bytes(),
            )
        } else if path.contains("/blobs/") {
            let mut cut = b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n".to_vec();
            cut.extend_from_slice(&[7u8; 1024]);
            cut
        } else {
            response("200 OK", &[], b"{}")
        }
    });
    let (m, _, out) = add_from(&server, &[]);
    assert_refused(&m, &out, "transport");

    // A redirect loop.
    let server = fault_server(|path| {
        let next = if path.ends_with("/a") { "/b" } else { "/a" };
        response("302 Found", &[("Location", next)], b"")
    });
    let (m, _, out) = add_from(&server, &[]);
    let err = assert_refused(&m, &out, "too_many_redirects");
    assert!(err.contains("after 5 redirects"), "{err}");

    // Redirects to private addresses other than the registry itself: another port on
    // loopback (a service that must not be reached) and a private range.
    let bystander = fault_server(|_| response("200 OK", &[], b"{}"));
    let target = format!("http://{}/secret", bystander.addr);
    let server =
        fault_server(move |_| response("307 Temporary Redirect", &[("Location", target.as_str())], b""));
    let (m, _, out) = add_from(&server, &[]);
    let err = assert_refused(&m, &out, "blocked_url");
    assert!(err.contains("only the registry's own address"), "{err}");
    let server = fault_server(|_| response("302 Found", &[("Location", "https://10.1.2.3/v2/")], b""));
    let (m, _, out) = add_from(&server, &[]);
    let err = assert_refused(&m, &out, "blocked_url");
    assert!(err.contains("10.1.2.3 is a blocked address (private)"), "{err}");
    assert!(bystander.seen.lock().unwrap().is_empty(), "the bystander was reached");

    // A redirect within the registry (it is private and allowed) is followed: here to a
    // manifest naming a 5 GB layer, which is refused before any blob is asked for.
    let huge =
        huge_layer_manifest(&format!("sha256:{}", "1".repeat(64)), &format!("sha256:{}", "2".repeat(64)));
    let server = fault_server(move |path| {
        if path.ends_with("/manifests/v1") {
            response("302 Found", &[("Location", "/v2/t/x/manifests/real")], b"")
        } else if path.ends_with("/manifests/real") {
            response("200 OK", &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")], &huge)
        } else {
            response("404 Not Found", &[], b"")
        }
    });
    let (m, _, out) = add_from(&server, &[]);
    assert_refused(&m, &out, "too_large");
    let seen = server.seen.lock().unwrap().clone();
    assert!(seen.iter().any(|l| l.contains("/manifests/real")), "{seen:?}");
    assert!(!seen.iter().any(|l| l.contains("/blobs/")), "a blob was asked for: {seen:?}");

    // A registry that stops answering: the read timeout.
    let server = fault_server(|_| {
        std::thread::sleep(std::time::Duration::from_secs(3));
        response("200 OK", &[], b"{}")
    });
    let (m, _, out) = add_from(&server, &["--registry-timeout-ms", "300"]);
    assert_refused(&m, &out, "timeout");
}

/// The manifest limit (4 MiB): one declared a byte longer is refused from its length
/// alone (only 1 KiB of it is ever sent, so reading it whole would end in a cut
/// connection, not `too_large`); one streamed without a length is cut off as soon as it
/// passes the limit (the stream never ends properly); one of exactly 4 MiB is read.
#[test]
fn a_manifest_over_the_limit_is_refused_before_it_is_read_whole() {
    const LIMIT: u64 = 4 << 20;
    assert_eq!(toolhost::oci::MAX_MANIFEST_BYTES, LIMIT);
    let head = |length: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n{length}Connection: close\r\n\r\n"
        )
        .into_bytes()
    };
    let serve = move |body: fn(Vec<u8>) -> Vec<u8>, length: String| {
        let head = head(&length);
        fault_server(move |path| {
            if path.contains("/manifests/") {
                body(head.clone())
            } else {
                response("404 Not Found", &[], b"")
            }
        })
    };

    let declared = serve(
        |mut head| {
            head.extend_from_slice(&[b' '; 1024]);
            head
        },
        format!("Content-Length: {}\r\n", LIMIT + 1),
    );
    let (m, _, out) = add_from(&declared, &[]);
    let err = assert_refused(&m, &out, "too_large");
    assert!(err.contains("the manifest t/x/v1 is 4194305 bytes or more; at most 4194304 are read"), "{err}");
    assert!(!declared.seen.lock().unwrap().iter().any(|l| l.contains("/blobs/")));

    let streamed = serve(
        |mut head| {
            // One chunk a byte over the limit, and no last chunk.
            head.extend_from_slice(format!("{:x}\r\n", LIMIT + 1).as_bytes());
            head.extend(std::iter::repeat_n(b' ', (LIMIT + 1) as usize));
            head
        },
        "Transfer-Encoding: chunked\r\n".into(),
    );
    let (m, _, out) = add_from(&streamed, &[]);
    let err = assert_refused(&m, &out, "too_large");
    assert!(err.contains("bytes or more; at most 4194304 are read"), "{err}");

    // Exactly the limit is read (and then refused for what it is: not JSON).
    let at_limit = serve(
        |mut head| {
            head.extend(std::iter::repeat_n(b' ', LIMIT as usize));
            head
        },
        format!("Content-Length: {LIMIT}\r\n"),
    );
    let (m, _, out) = add_from(&at_limit, &[]);
    let err = assert_refused(&m, &out, "unsupported_artifact");
    assert!(err.contains("not a JSON manifest"), "{err}");
}

#[test]
fn only_loopback_registries_speak_plain_http_and_https_sources_need_a_hash() {
    let m = Machine::new();
    let key = m.key("k");
    let trust = format!("{key}.pub");
    let err = m.refused(
        &["add", "oci://10.9.8.7:5000/t/x:v1", "--trust-key", &trust, "--plain-http"],
        "blocked_url",
    );
    assert!(err.contains("--plain-http is only for a registry on this machine"), "{err}");
    let out = m.run(&["add", "oci://127.0.0.1:5000/t/x:v1", "--plain-http"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("signature_missing: a registry component is added only signed"),
        "{}",
        text(&out.stderr)
    );
    let out = m.run(&["add", "https://127.0.0.1:1/tool.wasm"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("needs --sha256"), "{}", text(&out.stderr));
    let sha = "a".repeat(64);
    m.refused(&["add", "http://127.0.0.1:1/tool.wasm", "--sha256", &sha], "blocked_url");
    // The named https host may be loopback; this one does not speak TLS.
    let server = fault_server(|_| response("200 OK", &[], b"not tls"));
    let url = format!("https://{}/tool.wasm", server.addr);
    m.refused(&["add", &url, "--sha256", &sha], "transport");
}

/// The independent implementations: OpenSSL makes the key pair and the ECDSA signature
/// over a simple-signing payload this test writes by hand, skopeo (containers/image)
/// pushes that signature image from an OCI layout; and the other way, skopeo pulls our
/// signature image and OpenSSL verifies our signature. (Debian builds skopeo with its
/// sigstore signing and verification disabled, so skopeo cannot do the crypto here.)
#[test]
fn signatures_interoperate_with_openssl_and_skopeo() {
    let registry = Registry::start();
    let mut m = Machine::new();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let run = |cmd: &mut Command| {
        let out = cmd.stdin(Stdio::null()).output().expect("the tool runs");
        assert!(out.status.success(), "{cmd:?}: {}{}", text(&out.stdout), text(&out.stderr));
        text(&out.stdout)
    };

    // OpenSSL's key signs; we verify.
    run(Command::new("openssl")
        .args(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out"])
        .arg(path("openssl.key")));
    run(Command::new("openssl")
        .arg("ec")
        .arg("-in")
        .arg(path("openssl.key"))
        .arg("-pubout")
        .arg("-out")
        .arg(path("openssl.pub")));
    let digest = publish(&m, HOSTILE_WASM, &registry.reference("t/plain:v1"), None);
    let payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"{}/t/plain"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#,
        registry.host()
    );
    std::fs::write(path("payload.json"), &payload).unwrap();
    run(Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(path("openssl.key"))
        .arg("-out")
        .arg(path("payload.sig"))
        .arg(path("payload.json")));
    let signature = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        std::fs::read(path("payload.sig")).unwrap(),
    );
    write_signature_layout(&path("layout"), payload.as_bytes(), &signature);
    run(skopeo()
        .args(["copy", "--dest-tls-verify=false"])
        .arg(format!("oci:{}:sig", path("layout").display()))
        .arg(format!("docker://{}/t/plain:{}", registry.host(), sig_tag(&digest))));
    let openssl_pub = path("openssl.pub");
    let out = m.ok(&[
        "add",
        &registry.reference("t/plain:v1"),
        "--trust-key",
        openssl_pub.to_str().unwrap(),
        "--plain-http",
    ]);
    assert!(out.contains("signed by: key openssl"), "{out}");

    // We sign (a key with a password); skopeo pulls the signature image, OpenSSL verifies.
    let prefix = m.keys.path().join("ours");
    m.env.push(("TOOLHOST_KEY_PASSWORD".into(), "correct horse".into()));
    m.ok(&["keygen", prefix.to_str().unwrap()]);
    let key_file = format!("{}.key", prefix.display());
    let ours = publish_signed_with(&m, &registry.reference("t/ours:v1"), &key_file);
    let pulled = path("pulled");
    run(skopeo()
        .args(["copy", "--src-tls-verify=false"])
        .arg(format!("docker://{}/t/ours:{}", registry.host(), sig_tag(&ours)))
        .arg(format!("dir:{}", pulled.display())));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(pulled.join("manifest.json")).unwrap()).unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(layer["mediaType"], "application/vnd.dev.cosign.simplesigning.v1+json", "{manifest}");
    let payload_file = pulled.join(layer["digest"].as_str().unwrap().trim_start_matches("sha256:"));
    let payload: serde_json::Value = serde_json::from_slice(&std::fs::read(&payload_file).unwrap()).unwrap();
    assert_eq!(payload["critical"]["image"]["docker-manifest-digest"], ours.as_str(), "{payload}");
    assert_eq!(payload["critical"]["type"], "cosign container image signature", "{payload}");
    let signature = layer["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .expect("the signature annotation");
    std::fs::write(
        path("ours.sig"),
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, signature).unwrap(),
    )
    .unwrap();
    let verify = |public: &Path| {
        Command::new("openssl")
            .args(["dgst", "-sha256", "-verify"])
            .arg(public)
            .arg("-signature")
            .arg(path("ours.sig"))
            .arg(&payload_file)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = verify(&prefix.with_extension("pub"));
    assert!(
        out.status.success() && text(&out.stdout).contains("Verified OK"),
        "OpenSSL: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = verify(&openssl_pub);
    assert!(!out.status.success(), "OpenSSL accepted our signature under another key");
}

/// Publish `HOSTILE_WASM` to `reference` signed with `key_file`; the digest.
fn publish_signed_with(m: &Machine, reference: &str, key_file: &str) -> String {
    published_digest(&m.ok(&["publish", HOSTILE_WASM, reference, "--plain-http", "--key", key_file]))
}

/// An OCI image layout at `dir` holding, under the tag `sig`, a cosign signature image
/// with one layer: `payload` signed by `signature` (base64).
fn write_signature_layout(dir: &Path, payload: &[u8], signature: &str) {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let hex = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        std::fs::write(blobs.join(&hex), bytes).unwrap();
        (format!("sha256:{hex}"), bytes.len())
    };
    let (payload_digest, payload_len) = put(payload);
    let config = format!(
        r#"{{"architecture":"","config":{{}},"created":"0001-01-01T00:00:00Z","history":[{{"created":"0001-01-01T00:00:00Z"}}],"os":"","rootfs":{{"type":"layers","diff_ids":["{payload_digest}"]}}}}"#
    );
    let (config_digest, config_len) = put(config.as_bytes());
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{config_len}}},"layers":[{{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"{payload_digest}","size":{payload_len},"annotations":{{"dev.cosignproject.cosign/signature":"{signature}"}}}}]}}"#
    );
    let (manifest_digest, manifest_len) = put(manifest.as_bytes());
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        dir.join("index.json"),
        format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{manifest_digest}","size":{manifest_len},"annotations":{{"org.opencontainers.image.ref.name":"sig"}}}}]}}"#
        ),
    )
    .unwrap();
}

/// skopeo with no ambient configuration: no signature policy (the images are checked by
/// the test), no registries file.
fn skopeo() -> Command {
    let mut cmd = Command::new("skopeo");
    cmd.arg("--insecure-policy").env("CONTAINERS_REGISTRIES_CONF", "/dev/null");
    cmd
}
