//! Where the user's own permission state lives, outside the work dir: the private
//! policy of each work dir, and the record of which project policy files the user
//! has trusted (their sha256).
//!
//! Tools can write the work dir, so nothing that widens what tools may do is taken
//! from there on trust: a `toolhost.toml` inside the work dir takes effect only when
//! its exact bytes were recorded here by the user's own commands (`toolhost trust`,
//! `toolhost add`), or only for what narrows (see [`super::Policy::widening`]).
//!
//! Layout of the config dir (`$TOOLHOST_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolhost`,
//! else `~/.config/toolhost`), created 0700:
//!
//! ```text
//! projects/<dir-name>-<hash of the work dir>/toolhost.toml   the private policy ("always" answers)
//! trust/<hash of the policy file's path>                     "sha256 path" of a trusted policy file
//! ```

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use confine::hostfs;

/// Largest trust record read.
const RECORD_BYTES: u64 = 64 << 10;

/// The user's toolhost config dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDir {
    root: PathBuf,
}

impl ConfigDir {
    /// `$TOOLHOST_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolhost`, else
    /// `$HOME/.config/toolhost`; `None` when none is set.
    pub fn from_env() -> Option<Self> {
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        env("TOOLHOST_CONFIG_DIR")
            .or_else(|| env("XDG_CONFIG_HOME").map(|d| d.join("toolhost")))
            .or_else(|| env("HOME").map(|d| d.join(".config").join("toolhost")))
            .map(Self::at)
    }

    /// The config dir at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        // Judge protection against the path tools would reach.
        let root = root.canonicalize().unwrap_or(root);
        Self { root }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The private policy of the (canonical) work dir `work_dir`: where "always"
    /// answers are saved, never inside the work dir.
    pub fn private_policy(&self, work_dir: &Path) -> PathBuf {
        let name: String = work_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into())
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' })
            .take(40)
            .collect();
        let key = &hash_path(work_dir)[..16];
        self.root.join("projects").join(format!("{name}-{key}")).join(super::POLICY_FILE)
    }

    fn record_path(&self, policy: &Path) -> PathBuf {
        self.root.join("trust").join(&hash_path(policy)[..32])
    }

    /// The sha256 the user trusted for the policy file `policy`, if any.
    pub fn trusted(&self, policy: &Path) -> Option<String> {
        let policy = canonical(policy);
        let text = hostfs::read_text(&self.record_path(&policy), RECORD_BYTES).ok()??;
        let (sha, path) = text.trim_end_matches('\n').split_once(' ')?;
        (Path::new(path) == policy && sha.len() == 64).then(|| sha.to_string())
    }

    /// Record that the user trusts `policy` holding bytes with this sha256.
    pub fn trust(&self, policy: &Path, sha256: &str) -> io::Result<()> {
        let policy = canonical(policy);
        let record = self.record_path(&policy);
        if let Some(dir) = record.parent() {
            hostfs::create_private_dir(dir)?;
        }
        hostfs::write_atomic(&record, format!("{sha256} {}\n", policy.display()).as_bytes(), Some(0o600))
    }

    /// Record the current bytes of `policy` as trusted.
    pub fn trust_current(&self, policy: &Path) -> io::Result<String> {
        let bytes = hostfs::read_regular(policy, super::MAX_POLICY_BYTES)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))?;
        let sha = sha256_hex(&bytes);
        self.trust(policy, &sha)?;
        Ok(sha)
    }
}

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn hash_path(path: &Path) -> String {
    sha256_hex(path.as_os_str().as_encoded_bytes())
}

/// `path` with its parent canonicalized, when it exists.
fn canonical(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            parent.canonicalize().map(|p| p.join(name)).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_keyed_by_path_and_content() {
        let config = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let config = ConfigDir::at(config.path());
        let policy = work.path().join("toolhost.toml");
        std::fs::write(&policy, "[permissions]\nmode = \"yolo\"\n").unwrap();
        assert_eq!(config.trusted(&policy), None);
        let sha = config.trust_current(&policy).unwrap();
        assert_eq!(config.trusted(&policy), Some(sha.clone()));
        assert_eq!(sha, sha256_hex(&std::fs::read(&policy).unwrap()));
        // Another file is not trusted by this record.
        assert_eq!(config.trusted(&work.path().join("other.toml")), None);
        // The private policy is outside the work dir and differs per work dir.
        let private = config.private_policy(work.path());
        assert!(private.starts_with(config.root()));
        assert_ne!(private, config.private_policy(Path::new("/elsewhere")));
    }
}
