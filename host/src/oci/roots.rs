//! The TLS roots of registry traffic: the webpki roots, plus the CAs of one PEM file
//! the user names in `TOOLHOST_REGISTRY_CA_FILE` (a company registry, a local mirror
//! or a test server with its own CA).
//!
//! The extra roots are *added*; nothing is replaced and certificate checking is never
//! turned off. They apply only to what the user names — registries, their blob and
//! token hops, and pinned `https://` sources — never to a plugin's own fetch traffic,
//! which keeps the webpki roots alone. The file is read only when the variable is set,
//! at most [`MAX_CA_FILE_BYTES`], and a file without a usable certificate is an error,
//! not an empty addition.

use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls_pki_types::CertificateDer;

use super::OciError;
use super::keys::pem_decode_all;

/// The variable naming a PEM file of extra root CAs for registry traffic.
pub const REGISTRY_CA_ENV: &str = "TOOLHOST_REGISTRY_CA_FILE";
/// Largest CA file read.
pub(crate) const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// The TLS settings of a registry transport: the webpki roots, and those of
/// `extra_ca_file` when one is named.
pub(crate) fn tls_config(extra_ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, OciError> {
    let Some(path) = extra_ca_file else {
        return crate::imports::fetch::tls_config_with_webpki_roots().map_err(OciError::Transport);
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for der in read_ca_file(path)? {
        roots.add(CertificateDer::from(der)).map_err(|e| {
            OciError::Key(format!(
                "{REGISTRY_CA_ENV} {}: a certificate is not a usable CA: {e}",
                path.display()
            ))
        })?;
    }
    crate::imports::fetch::tls_config_with_roots(roots).map_err(OciError::Transport)
}

/// The DER certificates of the PEM file at `path` (at least one).
fn read_ca_file(path: &Path) -> Result<Vec<Vec<u8>>, OciError> {
    let bad = |why: String| OciError::Key(format!("{REGISTRY_CA_ENV} {}: {why}", path.display()));
    let bytes = confine::hostfs::read_regular_following(path, MAX_CA_FILE_BYTES)
        .map_err(|e| bad(e.to_string()))?
        .ok_or_else(|| bad("no such file".into()))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not a PEM file".into()))?;
    let certs = pem_decode_all(&text, "CERTIFICATE");
    if certs.is_empty() {
        return Err(bad("no PEM CERTIFICATE in it".into()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_adds_its_roots_and_a_useless_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        let good = dir.path().join("ca.pem");
        std::fs::write(&good, crate::oci::keys::pem_encode("CERTIFICATE", ca.der())).unwrap();
        assert!(tls_config(Some(&good)).is_ok());
        assert!(tls_config(None).is_ok());

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").unwrap();
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, crate::oci::keys::pem_encode("CERTIFICATE", b"not DER")).unwrap();
        for (path, why) in [
            (empty.as_path(), "no PEM CERTIFICATE"),
            (garbage.as_path(), "not a usable CA"),
            (&dir.path().join("missing.pem"), "no such file"),
        ] {
            let err = tls_config(Some(path)).unwrap_err();
            assert_eq!(err.code(), "invalid_key", "{err}");
            assert!(err.to_string().contains(REGISTRY_CA_ENV) && err.to_string().contains(why), "{err}");
        }
    }
}
