//! `add https://…/tool.wasm --sha256 HEX` end to end, from an HTTPS server on loopback
//! whose certificate comes from a CA made here: trusted only through
//! `TOOLHOST_REGISTRY_CA_FILE` (certificate checking is never off), the bytes checked
//! against the hash before anything is kept, and a later start fetching again through
//! the same CA.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    PKCS_ECDSA_P256_SHA256, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use toolhost_tests::HOSTILE_WASM;

use super::{Machine, pem, sha256_file, text};

/// The variable the registry client reads extra root CAs from.
const CA_ENV: &str = toolhost::oci::REGISTRY_CA_ENV;

/// An HTTPS server on 127.0.0.1 serving `body` for every GET, with a certificate for
/// the IP address 127.0.0.1 issued by its own CA; stopped when dropped.
struct TlsServer {
    addr: SocketAddr,
    /// The CA, PEM.
    ca_pem: String,
    /// Requests answered (after a completed handshake).
    served: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl TlsServer {
    fn start(body: Vec<u8>) -> Self {
        let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        ca_params.distinguished_name.push(DnType::CommonName, "toolhost test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut leaf_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf_params.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
        let leaf = leaf_params.signed_by(&leaf_key, &Issuer::from_params(&ca_params, &ca_key)).unwrap();

        let provider = Arc::new(toolhost_tests::servers::ring_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(leaf.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .unwrap();
        let config = Arc::new(config);

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (served, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let (count, flag) = (served.clone(), stop.clone());
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((tcp, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = tcp.set_nonblocking(false);
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let conn = rustls::ServerConnection::new(config.clone()).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                // The handshake happens on the first read; a client that does not trust
                // the CA aborts it, and nothing is served.
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                    match tls.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                if !head.ends_with(b"\r\n\r\n") {
                    continue;
                }
                count.fetch_add(1, Ordering::Relaxed);
                let answer = super::response("200 OK", &[("Content-Type", "application/wasm")], &body);
                let _ = tls.write_all(&answer);
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        Self { addr, ca_pem: pem("CERTIFICATE", ca.der()), served, stop }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn an_https_source_with_its_sha256_is_fetched_through_a_ca_the_user_names() {
    let server = TlsServer::start(std::fs::read(HOSTILE_WASM).unwrap());
    let url = format!("https://{}/tool.wasm", server.addr);
    let sha = sha256_file(HOSTILE_WASM);
    let files = tempfile::tempdir().unwrap();
    let ca_file = files.path().join("ca.pem");
    std::fs::write(&ca_file, &server.ca_pem).unwrap();
    let with_ca = |m: &mut Machine| m.env.push((CA_ENV.into(), ca_file.to_str().unwrap().into()));

    // Without the CA the certificate is unknown: no exchange, nothing written.
    let err = Machine::new().refused(&["add", &url, "--sha256", &sha], "transport");
    assert!(err.contains("UnknownIssuer"), "{err}");
    assert_eq!(server.served.load(Ordering::Relaxed), 0);

    // A file that holds no certificate is an error, not an empty addition.
    let mut m = Machine::new();
    let junk = files.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    m.env.push((CA_ENV.into(), junk.to_str().unwrap().into()));
    let err = m.refused(&["add", &url, "--sha256", &sha], "invalid_key");
    assert!(err.contains("no PEM CERTIFICATE"), "{err}");

    // With the CA: the wrong hash is refused and nothing kept…
    let mut m = Machine::new();
    with_ca(&mut m);
    let wrong = "0".repeat(64);
    let err = m.refused(&["add", &url, "--sha256", &wrong], "digest_mismatch");
    assert!(err.contains(&format!("expected sha256:{wrong}, the bytes hash to sha256:{sha}")), "{err}");
    assert_eq!(server.served.load(Ordering::Relaxed), 1);

    // …and the right one is fetched, pinned and callable.
    let out = m.ok(&["add", &url, "--sha256", &sha]);
    assert!(out.contains("added plugins.tool"), "{out}");
    let policy = m.policy();
    assert!(policy.contains(&format!("source = \"{url}\"")), "{policy}");
    assert!(policy.contains(&format!("sha256 = \"{sha}\"")), "{policy}");
    m.ok(&["call", "noop", "{}"]);
    assert!(m.stored_files().iter().any(|f| f.ends_with(&sha)));

    // A start with an empty store fetches again through the same CA; without it, it
    // refuses rather than trust another way.
    std::fs::remove_dir_all(m.store()).unwrap();
    let served = server.served.load(Ordering::Relaxed);
    m.ok(&["call", "noop", "{}"]);
    assert_eq!(server.served.load(Ordering::Relaxed), served + 1);
    std::fs::remove_dir_all(m.store()).unwrap();
    m.env.clear();
    let out = m.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("transport: plugins.tool: "), "{}", text(&out.stderr));
    assert!(m.stored_files().is_empty());
}

#[test]
fn an_https_component_refused_at_add_or_at_load_is_never_stored() {
    let server = TlsServer::start(std::fs::read(toolhost_tests::NET_WASM).unwrap());
    let url = format!("https://{}/net.wasm", server.addr);
    let sha = sha256_file(toolhost_tests::NET_WASM);
    let files = tempfile::tempdir().unwrap();
    let ca_file = files.path().join("ca.pem");
    std::fs::write(&ca_file, &server.ca_pem).unwrap();
    let machine = || {
        let mut m = Machine::new();
        m.env.push((CA_ENV.into(), ca_file.to_str().unwrap().into()));
        m
    };

    // The right bytes, but it asks for the network and is given none: fetched, hashed,
    // inspected, refused — and not kept.
    let m = machine();
    super::admission::refused_unstored(
        &m,
        &["add", &url, "--sha256", &sha],
        "not added: it imports toolhost:plugin/fetch",
    );
    assert_eq!(server.served.load(Ordering::Relaxed), 1);
    m.ok(&["add", &url, "--sha256", &sha, "--allow-host", "example.com"]);
    assert_eq!(m.stored_files().len(), 1);

    // A start on another machine whose policy grants it no network fetches it and
    // refuses to load it: its store stays empty.
    let other = machine();
    let narrowed = files.path().join("narrowed.toml");
    std::fs::write(&narrowed, super::admission::without_network(&m.policy())).unwrap();
    super::admission::refused_unstored(
        &other,
        &["list", "--policy", narrowed.to_str().unwrap()],
        "capability_denied",
    );
    assert_eq!(server.served.load(Ordering::Relaxed), 3);
    let kept = files.path().join("kept.toml");
    std::fs::write(&kept, m.policy()).unwrap();
    other.ok(&["list", "--policy", kept.to_str().unwrap()]);
    assert_eq!(other.stored_files().len(), 1);
}
