//! Writing the policy file: a plugin entry (`toolhost add`) or an allow rule (an
//! "always" answer). The file is edited in place — comments and layout kept — and
//! replaced atomically ([`crate::protect::hostfs::write_atomic`]: a planted symlink or temp
//! name is replaced, never written through), so a crash leaves the old file or the
//! new one.

use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Table, value};

use super::PolicyError;
use crate::policy::grants::{FsGrant, Sockets};

/// A `[plugins.NAME]` entry to write.
#[derive(Debug, Clone)]
pub struct PluginEntryDraft {
    /// The entry's name.
    pub name: String,
    /// The component path as it should appear (relative to the policy file's dir).
    pub source: String,
    /// Its sha256.
    pub sha256: String,
    /// Work dir access.
    pub filesystem: FsGrant,
    /// Hosts its fetch may reach.
    pub network: Vec<String>,
    /// Env names.
    pub env: Vec<String>,
    /// Socket imports.
    pub sockets: Sockets,
    /// Programs it may start (written only when it grants something).
    pub exec: crate::imports::exec::ExecGrant,
}

/// Add (or replace) the entry `draft` in the policy file at `path` (created if missing).
pub fn write_plugin_entry(path: &Path, draft: &PluginEntryDraft) -> Result<(), PolicyError> {
    let mut doc = read_doc(path)?;
    let plugins = doc.entry("plugins").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let Some(plugins) = plugins.as_table_mut() else {
        return Err(write_err(path, "`plugins` is not a table"));
    };
    let mut entry = Table::new();
    entry.insert("source", value(&draft.source));
    entry.insert("sha256", value(&draft.sha256));
    entry.insert("filesystem", value(draft.filesystem.as_str()));
    entry.insert("network", value(draft.network.iter().collect::<Array>()));
    entry.insert("env", value(draft.env.iter().collect::<Array>()));
    if draft.sockets == Sockets::Stub {
        entry.insert("sockets", value("stub"));
    }
    if !draft.exec.is_empty() {
        let mut exec = toml_edit::InlineTable::new();
        exec.insert("programs", draft.exec.programs.iter().collect::<Array>().into());
        exec.insert("shell", draft.exec.shell.into());
        entry.insert("exec", value(exec));
    }
    plugins.insert(&draft.name, Item::Table(entry));
    write_doc(path, &doc)
}

/// Add `rule` to `[permissions] allow` in the policy file at `path` (created if
/// missing); nothing changes when it is already there.
pub fn add_allow_rule(path: &Path, rule: &str) -> Result<(), PolicyError> {
    let mut doc = read_doc(path)?;
    let permissions = doc.entry("permissions").or_insert_with(|| Item::Table(Table::new()));
    let Some(permissions) = permissions.as_table_mut() else {
        return Err(write_err(path, "`permissions` is not a table"));
    };
    let allow = permissions.entry("allow").or_insert_with(|| value(Array::new()));
    let Some(allow) = allow.as_array_mut() else {
        return Err(write_err(path, "`permissions.allow` is not an array"));
    };
    if !allow.iter().any(|v| v.as_str() == Some(rule)) {
        allow.push(rule);
    }
    write_doc(path, &doc)
}

fn read_doc(path: &Path) -> Result<DocumentMut, PolicyError> {
    let text = crate::protect::hostfs::read_text(path, super::MAX_POLICY_BYTES)
        .map_err(|source| PolicyError::Read { path: path.display().to_string(), source })?
        .unwrap_or_default();
    // Refuse to rewrite a file the host could not read back.
    super::Policy::parse(&text, path)?;
    text.parse::<DocumentMut>().map_err(|e| write_err(path, &e.to_string()))
}

fn write_doc(path: &Path, doc: &DocumentMut) -> Result<(), PolicyError> {
    let text = doc.to_string();
    super::Policy::parse(&text, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        crate::protect::hostfs::create_private_dir(dir).map_err(|e| write_err(path, &e.to_string()))?;
    }
    crate::protect::hostfs::write_atomic(path, text.as_bytes(), None)
        .map_err(|e| write_err(path, &e.to_string()))
}

fn write_err(path: &Path, message: &str) -> PolicyError {
    PolicyError::Write { path: path.display().to_string(), message: message.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_entries_are_added_keeping_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "# my policy\n[permissions]\nmode = \"plan\" # careful\n").unwrap();
        add_allow_rule(&path, "write_file(path=docs/a.md)").unwrap();
        add_allow_rule(&path, "write_file(path=docs/a.md)").unwrap();
        let draft = PluginEntryDraft {
            name: "wc".into(),
            source: "wc.wasm".into(),
            sha256: "a".repeat(64),
            filesystem: FsGrant::Read,
            network: vec![],
            env: vec!["LANG".into()],
            sockets: Sockets::Stub,
            exec: crate::imports::exec::ExecGrant {
                programs: vec!["git".into()],
                shell: false,
                unconfined: false,
                commit: false,
            },
        };
        write_plugin_entry(&path, &draft).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# my policy\n"), "{text}");
        assert!(text.contains("# careful"), "{text}");
        assert_eq!(text.matches("write_file(path=docs/a.md)").count(), 1, "{text}");
        let policy = super::super::Policy::load(&path).unwrap();
        assert_eq!(policy.allow.len(), 1);
        assert_eq!(policy.plugins[0].name, "wc");
        assert_eq!(policy.plugins[0].sockets, Sockets::Stub);
        assert_eq!(policy.plugins[0].exec.programs, vec!["git".to_string()]);
    }

    #[test]
    fn a_missing_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        add_allow_rule(&path, "edit_file").unwrap();
        assert_eq!(super::super::Policy::load(&path).unwrap().allow[0].as_str(), "edit_file");
    }
}
