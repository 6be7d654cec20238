//! Writing a `[servers.NAME]` entry's package pin (`package`, `package-sha256`,
//! and the entry file's `sha256`): `toolhost add-server` and `update-server`. The
//! file is edited in place with `toml_edit`, checked to parse back, and replaced
//! atomically, as `edit` does for the other entries.

use std::path::Path;

use toml_edit::{DocumentMut, value};

use super::PolicyError;

/// What pins a stdio server's files.
#[derive(Debug, Clone)]
pub struct ServerPinDraft {
    /// The package, as it should appear (a directory or one file).
    pub package: String,
    /// Its digest.
    pub package_sha256: String,
    /// The entry file's sha256, when it has one.
    pub sha256: Option<String>,
}

/// Set `pin` in the entry `servers.NAME` of `doc` (`None`: `unpinned = true`);
/// `false` when there is no such entry.
fn set_in(doc: &mut DocumentMut, name: &str, pin: Option<&ServerPinDraft>) -> bool {
    let Some(entry) = doc
        .get_mut("servers")
        .and_then(|s| s.as_table_like_mut())
        .and_then(|s| s.get_mut(name))
        .and_then(|e| e.as_table_like_mut())
    else {
        return false;
    };
    let Some(pin) = pin else {
        entry.remove("package");
        entry.remove("package-sha256");
        entry.insert("unpinned", value(true));
        return true;
    };
    entry.remove("unpinned");
    if let Some(sha) = &pin.sha256 {
        entry.insert("sha256", value(sha));
    }
    entry.insert("package", value(&pin.package));
    entry.insert("package-sha256", value(&pin.package_sha256));
    true
}

/// `text` (policy file text holding `servers.NAME`) with `pin` set in that entry
/// (`None`: `unpinned = true`).
pub fn with_server_pin(text: &str, name: &str, pin: Option<&ServerPinDraft>) -> String {
    let Ok(mut doc) = text.parse::<DocumentMut>() else { return text.to_string() };
    set_in(&mut doc, name, pin);
    doc.to_string()
}

/// Set `pin` in the entry `servers.NAME` of the policy file at `path` (`None`:
/// `unpinned = true`); nothing is written when the result would not parse back.
pub fn set_server_pin(path: &Path, name: &str, pin: Option<&ServerPinDraft>) -> Result<(), PolicyError> {
    let err = |message: String| PolicyError::Write { path: path.display().to_string(), message };
    let text = confine::hostfs::read_text(path, super::MAX_POLICY_BYTES)
        .map_err(|source| PolicyError::Read { path: path.display().to_string(), source })?
        .ok_or_else(|| err("no such file".into()))?;
    super::Policy::parse(&text, path)?;
    let mut doc = text.parse::<DocumentMut>().map_err(|e| err(e.to_string()))?;
    if !set_in(&mut doc, name, pin) {
        return Err(err(format!("no entry servers.{name}")));
    }
    let text = doc.to_string();
    super::Policy::parse(&text, path)?;
    confine::hostfs::write_atomic(path, text.as_bytes(), None).map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_replaces_unpinned_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "# mine\n[servers.m]\ncommand = [\"node\", \"i.js\"]\nunpinned = true\n")
            .unwrap();
        let pin = ServerPinDraft { package: "nm".into(), package_sha256: "b".repeat(64), sha256: None };
        set_server_pin(&path, "m", Some(&pin)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n") && !text.contains("unpinned"), "{text}");
        let policy = super::super::Policy::parse(&text, &path).unwrap();
        let super::super::servers::ServerTransport::Stdio(s) = &policy.servers[0].transport else { panic!() };
        assert_eq!(s.package.as_ref().map(|p| p.sha256.as_str()), Some(&*"b".repeat(64)));
        let err = set_server_pin(&path, "other", Some(&pin)).unwrap_err().to_string();
        assert!(err.contains("no entry servers.other"), "{err}");
        let bad = ServerPinDraft { package_sha256: "x".into(), ..pin };
        assert!(set_server_pin(&path, "m", Some(&bad)).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "nothing written");
        set_server_pin(&path, "m", None).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("unpinned = true") && !text.contains("package"), "{text}");
    }
}
