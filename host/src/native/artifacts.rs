//! The artifact store: the complete bytes of every file `remove_file` removed,
//! kept outside the work dir so that `restore_file` (or `toolhost restore ID`)
//! can bring it back.
//!
//! Content-addressed: an artifact's id is the sha256 of its bytes, its file is
//! `<data dir>/artifacts/<id>` and a small record beside it (`<id>.json`) says
//! where it was and its permission bits. The directory is 0700 and every file
//! 0600 ([`hostfs::create_private_dir`], [`hostfs::write_atomic`]); reads never
//! follow a symlink ([`hostfs::read_regular`]). Bounded by count and bytes: past
//! either, the oldest artifacts are evicted and the result says which.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use confine::hostfs;

/// The store's subdirectory of the data dir.
pub(crate) const SUBDIR: &str = "artifacts";
/// Artifacts kept at most, by default.
pub(crate) const DEFAULT_MAX_COUNT: usize = 200;
/// Bytes kept at most, by default (and so the largest file `remove_file` removes).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 256 << 20;
/// Largest record read.
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// Where a saved file came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Its path, relative to the work dir.
    pub(crate) path: String,
    /// Its permission bits.
    pub(crate) mode: u32,
    /// Its size.
    pub(crate) bytes: u64,
}

/// What [`Artifacts::save`] did.
#[derive(Debug)]
pub(crate) struct Saved {
    /// The artifact's id (the sha256 of its bytes).
    pub(crate) id: String,
    /// The ids of older artifacts evicted to make room.
    pub(crate) evicted: Vec<String>,
}

/// Why an artifact could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ArtifactError {
    /// The file is larger than the whole store may hold.
    #[error("it is {bytes} bytes, more than the {max} bytes the artifact store keeps")]
    TooLarge { bytes: u64, max: u64 },
    /// Reading or writing the store failed.
    #[error("the artifact store at {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// The store under one data dir, with its bounds.
#[derive(Debug, Clone)]
pub(crate) struct Artifacts {
    dir: PathBuf,
    max_count: usize,
    max_bytes: u64,
}

impl Artifacts {
    /// The store in `data_dir` with the default bounds.
    pub(crate) fn new(data_dir: &Path) -> Self {
        Self::with_bounds(data_dir, DEFAULT_MAX_COUNT, DEFAULT_MAX_BYTES)
    }

    /// The store in `data_dir` keeping at most `max_count` artifacts and `max_bytes`.
    pub(crate) fn with_bounds(data_dir: &Path, max_count: usize, max_bytes: u64) -> Self {
        Self { dir: data_dir.join(SUBDIR), max_count: max_count.max(1), max_bytes }
    }

    /// The most bytes one artifact may have.
    pub(crate) fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    fn io(&self, source: std::io::Error) -> ArtifactError {
        ArtifactError::Io { path: self.dir.display().to_string(), source }
    }

    /// Keep `bytes` (from `record.path`), then evict the oldest others past the bounds.
    pub(crate) fn save(&self, bytes: &[u8], record: &Record) -> Result<Saved, ArtifactError> {
        if bytes.len() as u64 > self.max_bytes {
            return Err(ArtifactError::TooLarge { bytes: bytes.len() as u64, max: self.max_bytes });
        }
        hostfs::create_private_dir(&self.dir).map_err(|e| self.io(e))?;
        let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        let json = serde_json::to_vec(record).map_err(|e| self.io(std::io::Error::other(e)))?;
        // The record first: a data file without one is never listed as restorable.
        hostfs::write_atomic(&self.dir.join(format!("{id}.json")), &json, Some(0o600))
            .map_err(|e| self.io(e))?;
        hostfs::write_atomic(&self.dir.join(&id), bytes, Some(0o600)).map_err(|e| self.io(e))?;
        let evicted = self.evict(&id).map_err(|e| self.io(e))?;
        Ok(Saved { id, evicted })
    }

    /// The bytes and record of the artifact `id` (64 hex digits, checked by the
    /// caller); `None` when there is none.
    pub(crate) fn load(&self, id: &str) -> Result<Option<(Vec<u8>, Record)>, ArtifactError> {
        let Some(json) = hostfs::read_regular(&self.dir.join(format!("{id}.json")), MAX_RECORD_BYTES)
            .map_err(|e| self.io(e))?
        else {
            return Ok(None);
        };
        let record: Record = serde_json::from_slice(&json).map_err(|e| self.io(std::io::Error::other(e)))?;
        let Some(bytes) = hostfs::read_regular(&self.dir.join(id), self.max_bytes).map_err(|e| self.io(e))?
        else {
            return Ok(None);
        };
        // Content-addressed: bytes that are not what the id says were tampered with.
        if hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)) != id {
            return Err(self.io(std::io::Error::other(format!("artifact {id} does not match its id"))));
        }
        Ok(Some((bytes, record)))
    }

    /// Remove the oldest artifacts (not `keep`) until the store is within its bounds.
    fn evict(&self, keep: &str) -> std::io::Result<Vec<String>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.len() != 64 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let meta = entry.metadata()?;
            entries.push((meta.modified()?, name, meta.len()));
        }
        entries.sort();
        let mut count = entries.len();
        let mut total: u64 = entries.iter().map(|(_, _, len)| len).sum();
        let mut evicted = Vec::new();
        for (_, name, len) in entries {
            if count <= self.max_count && total <= self.max_bytes {
                break;
            }
            if name == keep {
                continue;
            }
            std::fs::remove_file(self.dir.join(&name))?;
            let _ = std::fs::remove_file(self.dir.join(format!("{name}.json")));
            count -= 1;
            total -= len;
            evicted.push(name);
        }
        Ok(evicted)
    }
}

/// `id` when it is 64 hex digits (lowercased), else why not.
pub(crate) fn parse_id(field: &str, id: &str) -> Result<String, String> {
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{field} must be the 64 hex digits remove_file returned ({} characters given)",
            id.chars().count()
        ));
    }
    Ok(id.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn record(path: &str, bytes: u64) -> Record {
        Record { path: path.into(), mode: 0o644, bytes }
    }

    #[test]
    fn saves_private_files_and_loads_them_back() {
        let data = tempfile::tempdir().unwrap();
        let store = Artifacts::new(data.path());
        let saved = store.save(b"hello", &record("a.txt", 5)).unwrap();
        assert_eq!(saved.id, hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"hello")));
        assert!(saved.evicted.is_empty());
        let dir = data.path().join(SUBDIR);
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        for name in [saved.id.clone(), format!("{}.json", saved.id)] {
            assert_eq!(std::fs::metadata(dir.join(name)).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let (bytes, rec) = store.load(&saved.id).unwrap().unwrap();
        assert_eq!((bytes.as_slice(), rec), (&b"hello"[..], record("a.txt", 5)));
        assert!(store.load(&"0".repeat(64)).unwrap().is_none());
    }

    #[test]
    fn the_oldest_are_evicted_past_the_count_or_the_bytes() {
        let data = tempfile::tempdir().unwrap();
        let store = Artifacts::with_bounds(data.path(), 2, 10);
        let ids: Vec<String> = ["a", "b", "c"]
            .iter()
            .map(|s| {
                let saved = store.save(s.as_bytes(), &record(s, 1)).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
                (saved.id, saved.evicted)
            })
            .map(|(id, evicted)| {
                if id == hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"c")) {
                    assert_eq!(evicted.len(), 1, "the count bound");
                }
                id
            })
            .collect();
        assert!(store.load(&ids[0]).unwrap().is_none(), "the oldest went");
        assert!(store.load(&ids[2]).unwrap().is_some());
        // Ten bytes more: over the byte bound, so both older ones go.
        let saved = store.save(b"1234567890", &record("big", 10)).unwrap();
        assert_eq!(saved.evicted, vec![ids[1].clone(), ids[2].clone()]);
        let err = store.save(b"12345678901", &record("huge", 11)).unwrap_err();
        assert!(matches!(err, ArtifactError::TooLarge { bytes: 11, max: 10 }), "{err}");
    }

    #[test]
    fn tampered_or_planted_artifacts_are_refused() {
        let data = tempfile::tempdir().unwrap();
        let store = Artifacts::new(data.path());
        let saved = store.save(b"hello", &record("a.txt", 5)).unwrap();
        let dir = data.path().join(SUBDIR);
        std::fs::write(dir.join(&saved.id), b"HELLO").unwrap();
        assert!(store.load(&saved.id).unwrap_err().to_string().contains("does not match"));
        std::fs::remove_file(dir.join(&saved.id)).unwrap();
        let outside = data.path().join("elsewhere");
        std::fs::write(&outside, b"hello").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(&saved.id)).unwrap();
        assert!(store.load(&saved.id).unwrap_err().to_string().contains("symlink"));
    }

    #[test]
    fn ids_are_64_hex_digits() {
        assert_eq!(parse_id("artifact", &"AB".repeat(32)).unwrap(), "ab".repeat(32));
        let err = parse_id("artifact", "../../etc/passwd").unwrap_err();
        assert!(err.starts_with("artifact must be") && err.contains("16 characters"), "{err}");
        assert!(parse_id("artifact", &"g".repeat(64)).is_err());
    }
}
