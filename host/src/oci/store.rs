//! The content-addressed store of pulled components, under the cache dir:
//!
//! ```text
//! <cache>/oci/blobs/sha256/<hex>        manifests and components, named by their digest
//! <cache>/oci/signatures/sha256/<hex>   the signatures found for manifest <hex> (JSON)
//! ```
//!
//! Directories 0700, files 0600, written atomically
//! ([`confine::hostfs::write_atomic`]) and read without following links. A read
//! re-hashes the bytes: a blob that no longer matches its name is an error, never
//! used. The signature record is the raw material (payloads, signatures, certificates,
//! bundles), not a verdict: it is verified again against the policy each time it is
//! used, so a changed record can drop a signature but never forge one.

use std::path::{Path, PathBuf};

use super::OciError;
use super::registry::{digest_of, is_sha256_digest};
use super::sign::SignatureLayer;
use confine::hostfs;

/// Largest signature record read.
const MAX_RECORD_BYTES: u64 = 4 << 20;

/// The store rooted at one directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// `oci` in the cache dir (`$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`,
    /// else `~/.cache/toolhost`).
    pub fn default_root() -> Option<PathBuf> {
        crate::engine::default_cache_dir().map(|d| d.join("oci"))
    }

    /// The store at `root` (created on first write).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Its directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, kind: &str, digest: &str) -> Result<PathBuf, OciError> {
        if !is_sha256_digest(digest) {
            return Err(OciError::store(digest, "not a sha256 digest"));
        }
        Ok(self.root.join(kind).join("sha256").join(&digest["sha256:".len()..]))
    }

    /// The blob `digest`, if stored; its bytes re-hashed (at most `max_bytes`).
    pub fn blob(&self, digest: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, OciError> {
        let path = self.path("blobs", digest)?;
        let Some(bytes) = hostfs::read_regular(&path, max_bytes)
            .map_err(|e| OciError::store(&path.display().to_string(), e))?
        else {
            return Ok(None);
        };
        let actual = digest_of(&bytes);
        if actual != digest {
            return Err(OciError::DigestMismatch(format!(
                "the store's copy of {digest} ({}) hashes to {actual}: it was changed; delete it and pull again",
                path.display()
            )));
        }
        Ok(Some(bytes))
    }

    /// Store `bytes` as the blob they hash to; their digest.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, OciError> {
        let digest = digest_of(bytes);
        let path = self.path("blobs", &digest)?;
        self.write(&path, bytes)?;
        Ok(digest)
    }

    /// The signatures recorded for the manifest `digest` (empty when none).
    pub fn signatures(&self, digest: &str) -> Result<Vec<SignatureLayer>, OciError> {
        let path = self.path("signatures", digest)?;
        let Some(bytes) = hostfs::read_regular(&path, MAX_RECORD_BYTES)
            .map_err(|e| OciError::store(&path.display().to_string(), e))?
        else {
            return Ok(Vec::new());
        };
        serde_json::from_slice(&bytes).map_err(|e| OciError::store(&path.display().to_string(), e))
    }

    /// Record the signatures found for the manifest `digest`.
    pub fn put_signatures(&self, digest: &str, layers: &[SignatureLayer]) -> Result<(), OciError> {
        let path = self.path("signatures", digest)?;
        let bytes = serde_json::to_vec(layers).map_err(|e| OciError::store("signatures", e))?;
        self.write(&path, &bytes)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), OciError> {
        let err = |e: std::io::Error| OciError::store(&path.display().to_string(), e);
        if let Some(dir) = path.parent() {
            hostfs::create_private_dir(dir).map_err(err)?;
        }
        hostfs::write_atomic(path, bytes, Some(0o600)).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn blobs_are_named_by_digest_private_and_rechecked_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("oci"));
        let digest = store.put_blob(b"component").unwrap();
        assert_eq!(store.blob(&digest, 100).unwrap().unwrap(), b"component");
        let path = store.path("blobs", &digest).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        for dir in [path.parent().unwrap(), store.root()] {
            assert_eq!(
                std::fs::metadata(dir).unwrap().permissions().mode() & 0o777,
                0o700,
                "{}",
                dir.display()
            );
        }
        // A changed copy is refused, not used.
        std::fs::write(&path, b"c0mponent").unwrap();
        assert_eq!(store.blob(&digest, 100).unwrap_err().code(), "digest_mismatch");
        // A planted link is not followed.
        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"component").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert_eq!(store.blob(&digest, 100).unwrap_err().code(), "io_error");
        assert_eq!(store.blob(&digest_of(b"absent"), 100).unwrap(), None);
        assert!(store.blob("sha256:../../etc/passwd", 100).is_err());
        assert!(store.signatures(&digest_of(b"absent")).unwrap().is_empty());
    }
}
