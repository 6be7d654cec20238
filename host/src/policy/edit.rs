//! Writing the policy file: a plugin entry (`toolhost add`) or an allow rule (an
//! "always" answer). The file is edited in place — comments and layout kept — and
//! replaced atomically ([`confine::hostfs::write_atomic`]: a planted symlink or temp
//! name is replaced, never written through), so a crash leaves the old file or the
//! new one. An entry is built as a `toml_edit` table by one function, both for
//! writing it and for showing it first ([`plugin_entry_toml`]), so every string is
//! quoted and escaped as TOML.

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
    /// What `wasi:config/store` answers it (written only when there is some).
    pub config: Vec<(String, crate::imports::config::ConfigSource)>,
    /// The typed-export tools that are read-only (written only when there are some).
    pub read_only: Vec<String>,
    /// For an `oci://` source: who signed it, and what to trust for it.
    pub remote: Option<RemoteDraft>,
}

/// What an `oci://` entry adds to the policy file.
#[derive(Debug, Clone, Default)]
pub struct RemoteDraft {
    /// Keys to trust (name, PEM `PUBLIC KEY`): written to `[trust.keys]` and named in
    /// the entry's `keys`.
    pub keys: Vec<(String, String)>,
    /// Keyless identities (subject, issuer) for the entry's `identities`.
    pub identities: Vec<(String, String)>,
    /// The trusted root for keyless signatures (path as written, sha256), for `[trust]`.
    pub trusted_root: Option<(String, String)>,
    /// Speak plain HTTP to its (loopback) registry.
    pub plain_http: bool,
    /// Log in to its registry with the user's docker config on later pulls.
    pub registry_auth: bool,
}

/// The entry `draft` as policy file text: a `[plugins.NAME]` table, every key and
/// string quoted and escaped as TOML. This is what [`write_plugin_entry`] writes, for
/// showing it first (`toolhost inspect`, `toolhost add`).
pub fn plugin_entry_toml(draft: &PluginEntryDraft) -> String {
    let mut doc = DocumentMut::new();
    // A new document's `plugins` and `trust` are tables, and hold no other key.
    let _ = insert_trust(&mut doc, draft);
    if let Some(plugins) = plugins_table(&mut doc) {
        insert_entry(plugins, draft);
    }
    doc.to_string()
}

/// Add (or replace) the entry `draft` in the policy file at `path` (created if missing).
/// Nothing is written when the result would not parse back (a name other than letters,
/// digits, `-` and `_`, say): the error says why.
pub fn write_plugin_entry(path: &Path, draft: &PluginEntryDraft) -> Result<(), PolicyError> {
    let mut doc = read_doc(path)?;
    insert_trust(&mut doc, draft).map_err(|e| write_err(path, &e))?;
    let Some(plugins) = plugins_table(&mut doc) else {
        return Err(write_err(path, "`plugins` is not a table"));
    };
    insert_entry(plugins, draft);
    write_doc(path, &doc)
}

/// The `[plugins]` table of `doc` (added, implicit, when missing); `None` when
/// `plugins` is something else.
fn plugins_table(doc: &mut DocumentMut) -> Option<&mut Table> {
    named_table(doc, "plugins")
}

/// Put `draft` into `plugins` as the table `plugins.NAME`, replacing any entry of
/// that name.
fn insert_entry(plugins: &mut Table, draft: &PluginEntryDraft) {
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
    if !draft.config.is_empty() {
        let mut config = toml_edit::InlineTable::new();
        for (key, source) in &draft.config {
            let item: toml_edit::Value = match source {
                crate::imports::config::ConfigSource::Literal(text) => text.into(),
                crate::imports::config::ConfigSource::Env { env } => {
                    let mut from = toml_edit::InlineTable::new();
                    from.insert("env", env.into());
                    from.into()
                }
            };
            config.insert(key, item);
        }
        entry.insert("config", value(config));
    }
    if !draft.read_only.is_empty() {
        entry.insert("read-only", value(draft.read_only.iter().collect::<Array>()));
    }
    if let Some(remote) = &draft.remote {
        if !remote.keys.is_empty() {
            entry.insert("keys", value(remote.keys.iter().map(|(name, _)| name).collect::<Array>()));
        }
        if !remote.identities.is_empty() {
            let mut identities = Array::new();
            for (subject, issuer) in &remote.identities {
                let mut item = toml_edit::InlineTable::new();
                item.insert("subject", subject.into());
                item.insert("issuer", issuer.into());
                identities.push(item);
            }
            entry.insert("identities", value(identities));
        }
        if remote.plain_http {
            entry.insert("plain-http", value(true));
        }
        if remote.registry_auth {
            entry.insert("registry-auth", value(true));
        }
    }
    plugins.insert(&draft.name, Item::Table(entry));
}

/// Put the keys and trusted root `draft` trusts into `[trust]`; a different key
/// already trusted under the same name, or another trusted root, is an error.
fn insert_trust(doc: &mut DocumentMut, draft: &PluginEntryDraft) -> Result<(), String> {
    let Some(remote) = &draft.remote else { return Ok(()) };
    if remote.keys.is_empty() && remote.trusted_root.is_none() {
        return Ok(());
    }
    let trust = doc.entry("trust").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let trust = trust.as_table_mut().ok_or("`trust` is not a table")?;
    if let Some((path, sha)) = &remote.trusted_root {
        let same = |key: &str, want: &str| trust.get(key).and_then(|v| v.as_str()).is_none_or(|v| v == want);
        if !same("trusted-root", path) || !same("trusted-root-sha256", sha) {
            return Err("[trust] already names another trusted-root; edit it by hand".into());
        }
        trust.insert("trusted-root", value(path));
        trust.insert("trusted-root-sha256", value(sha));
    }
    if remote.keys.is_empty() {
        return Ok(());
    }
    let keys = trust.entry("keys").or_insert_with(|| Item::Table(Table::new()));
    let keys = keys.as_table_mut().ok_or("`trust.keys` is not a table")?;
    for (name, pem) in &remote.keys {
        match keys.get(name).and_then(|v| v.as_str()) {
            Some(existing) if existing.trim() == pem.trim() => {}
            Some(_) => {
                return Err(format!(
                    "[trust.keys] already holds another key named `{name}`: pick another name"
                ));
            }
            None => {
                keys.insert(name, value(pem));
            }
        }
    }
    Ok(())
}

/// Point the entry `plugins.NAME` at a new `source` and `sha256` (`toolhost update`),
/// keeping everything else in it.
pub fn set_plugin_source(path: &Path, name: &str, source: &str, sha256: &str) -> Result<(), PolicyError> {
    let mut doc = read_doc(path)?;
    let entry = doc
        .get_mut("plugins")
        .and_then(|p| p.as_table_mut())
        .and_then(|p| p.get_mut(name))
        .and_then(|e| e.as_table_mut())
        .ok_or_else(|| write_err(path, &format!("no entry plugins.{name}")))?;
    entry.insert("source", value(source));
    entry.insert("sha256", value(sha256));
    write_doc(path, &doc)
}

/// Remove the entry `plugins.NAME`, and the `[trust.keys]` no other entry of the file
/// names any more. `Ok(false)` when there is no such entry.
pub fn remove_plugin_entry(path: &Path, name: &str) -> Result<bool, PolicyError> {
    let mut doc = read_doc(path)?;
    let Some(plugins) = doc.get_mut("plugins").and_then(|p| p.as_table_mut()) else { return Ok(false) };
    if plugins.remove(name).is_none() {
        return Ok(false);
    }
    let named: Vec<String> = plugins
        .iter()
        .filter_map(|(_, e)| {
            e.as_table()?
                .get("keys")?
                .as_array()
                .map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_string)).collect::<Vec<_>>())
        })
        .flatten()
        .collect();
    if let Some(keys) = doc
        .get_mut("trust")
        .and_then(|t| t.as_table_mut())
        .and_then(|t| t.get_mut("keys"))
        .and_then(|k| k.as_table_mut())
    {
        keys.retain(|key, _| named.iter().any(|n| n == key));
    }
    write_doc(path, &doc)?;
    Ok(true)
}

/// A `[servers.NAME]` entry to write (`toolhost add-server`).
#[derive(Debug, Clone, Default)]
pub struct ServerEntryDraft {
    /// The entry's name.
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The sha256 of its entry file, when it has one to pin.
    pub sha256: Option<String>,
    /// Its working directory, as it should appear (written only when set).
    pub cwd: Option<String>,
    /// What it may read besides the system dirs.
    pub read_dirs: Vec<String>,
    /// The work dir: none, read or read-write.
    pub filesystem: FsGrant,
    /// Hosts it may reach through its proxy.
    pub network: Vec<String>,
    /// Env names.
    pub env: Vec<String>,
    /// Its limits, as (key, value) (written only when there are some).
    pub limits: Vec<(String, i64)>,
}

/// The entry `draft` as policy file text: a `[servers.NAME]` table, as
/// [`write_server_entry`] writes it.
pub fn server_entry_toml(draft: &ServerEntryDraft) -> String {
    let mut doc = DocumentMut::new();
    if let Some(servers) = named_table(&mut doc, "servers") {
        insert_server(servers, draft);
    }
    doc.to_string()
}

/// Add (or replace) the entry `draft` in the policy file at `path` (created if
/// missing); nothing is written when the result would not parse back.
pub fn write_server_entry(path: &Path, draft: &ServerEntryDraft) -> Result<(), PolicyError> {
    let mut doc = read_doc(path)?;
    let Some(servers) = named_table(&mut doc, "servers") else {
        return Err(write_err(path, "`servers` is not a table"));
    };
    insert_server(servers, draft);
    write_doc(path, &doc)
}

/// The table `name` of `doc` (added, implicit, when missing); `None` when it is
/// something else.
fn named_table<'d>(doc: &'d mut DocumentMut, name: &str) -> Option<&'d mut Table> {
    let table = doc.entry(name).or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    table.as_table_mut()
}

fn insert_server(servers: &mut Table, draft: &ServerEntryDraft) {
    let mut entry = Table::new();
    entry.insert("command", value(draft.command.iter().collect::<Array>()));
    if let Some(sha) = &draft.sha256 {
        entry.insert("sha256", value(sha));
    }
    if let Some(cwd) = &draft.cwd {
        entry.insert("cwd", value(cwd));
    }
    entry.insert("read-dirs", value(draft.read_dirs.iter().collect::<Array>()));
    entry.insert("filesystem", value(draft.filesystem.as_str()));
    entry.insert("network", value(draft.network.iter().collect::<Array>()));
    entry.insert("env", value(draft.env.iter().collect::<Array>()));
    if !draft.limits.is_empty() {
        let mut limits = toml_edit::InlineTable::new();
        for (key, n) in &draft.limits {
            limits.insert(key, (*n).into());
        }
        entry.insert("limits", value(limits));
    }
    servers.insert(&draft.name, Item::Table(entry));
}

/// Add `rule` to `[permissions] allow` in the policy file at `path` (created if
/// missing); nothing changes when it is already there.
pub fn add_allow_rule(path: &Path, rule: &str) -> Result<(), PolicyError> {
    let mut doc = read_doc(path)?;
    push_allow_rule(&mut doc, rule).map_err(|e| write_err(path, e))?;
    write_doc(path, &doc)
}

/// Add `rule` to `[permissions] allow` in `doc`, as a TOML string (quoted and
/// escaped by `toml_edit`: the file holds exactly the rule's text).
pub(super) fn push_allow_rule(doc: &mut DocumentMut, rule: &str) -> Result<(), &'static str> {
    let permissions = doc.entry("permissions").or_insert_with(|| Item::Table(Table::new()));
    let permissions = permissions.as_table_mut().ok_or("`permissions` is not a table")?;
    let allow = permissions.entry("allow").or_insert_with(|| value(Array::new()));
    let allow = allow.as_array_mut().ok_or("`permissions.allow` is not an array")?;
    if !allow.iter().any(|v| v.as_str() == Some(rule)) {
        allow.push(rule);
    }
    Ok(())
}

fn read_doc(path: &Path) -> Result<DocumentMut, PolicyError> {
    let text = confine::hostfs::read_text(path, super::MAX_POLICY_BYTES)
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
        confine::hostfs::create_private_dir(dir).map_err(|e| write_err(path, &e.to_string()))?;
    }
    confine::hostfs::write_atomic(path, text.as_bytes(), None).map_err(|e| write_err(path, &e.to_string()))
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
            config: vec![
                ("API_KEY".into(), crate::imports::config::ConfigSource::Env { env: "WEATHER_KEY".into() }),
                ("units".into(), crate::imports::config::ConfigSource::Literal("metric".into())),
            ],
            read_only: vec!["get_weather".into()],
            remote: None,
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
        assert_eq!(policy.plugins[0].config, draft.config);
        assert_eq!(policy.plugins[0].read_only, draft.read_only);
    }

    /// Quotes, backslashes, ESC, a newline, non-ASCII, and what ends a TOML literal or
    /// multi-line string.
    const ODD: &str = "q\"uote b\\ack e\u{1b}sc n\nl é ✓ ''' \"\"\"";

    fn odd_draft(name: &str) -> PluginEntryDraft {
        PluginEntryDraft {
            name: name.into(),
            source: format!("tools/{ODD}.wasm"),
            sha256: "ab".repeat(32),
            filesystem: FsGrant::Read,
            network: vec!["docs.rs".into()],
            env: vec![ODD.into(), "LC_*".into()],
            sockets: Sockets::Refuse,
            exec: crate::imports::exec::ExecGrant {
                programs: vec!["git".into()],
                shell: true,
                unconfined: false,
                commit: false,
            },
            config: vec![("key".into(), crate::imports::config::ConfigSource::Literal(ODD.into()))],
            read_only: vec![ODD.into()],
            remote: None,
        }
    }

    #[test]
    fn odd_strings_parse_back_from_the_entry_shown_and_the_one_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        let draft = odd_draft("odd");
        let shown = plugin_entry_toml(&draft);
        assert!(shown.starts_with("[plugins.odd]\n"), "{shown}");
        assert!(!shown.contains('\u{1b}'), "escaped: {shown:?}");
        write_plugin_entry(&path, &draft).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(written, shown, "a new file holds exactly the entry shown");

        let from_shown = super::super::Policy::parse(&shown, &path).unwrap();
        let from_file = super::super::Policy::load(&path).unwrap();
        for policy in [from_shown, from_file] {
            let [entry] = &policy.plugins[..] else { panic!("{:?}", policy.plugins) };
            assert_eq!(entry.name, "odd");
            assert_eq!(entry.source, super::super::EntrySource::File(dir.path().join(&draft.source)));
            assert_eq!(entry.sha256, draft.sha256);
            assert_eq!(entry.filesystem, FsGrant::Read);
            let env: Vec<&str> = entry.env.iter().map(|e| e.as_str()).collect();
            assert_eq!(env, [ODD, "LC_*"]);
            let network: Vec<&str> = entry.network.iter().map(|h| h.as_str()).collect();
            assert_eq!(network, ["docs.rs"]);
            assert_eq!(entry.exec, draft.exec);
            assert_eq!(entry.sockets, Sockets::Refuse);
        }
    }

    #[test]
    fn a_name_the_policy_refuses_is_shown_as_toml_and_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "# mine\n").unwrap();
        for name in ["a\"b", "a\\b", "a\u{1b}b", "a\nb", "wörd", "a.b", ""] {
            let shown = plugin_entry_toml(&odd_draft(name));
            let parsed: toml::Table = toml::from_str(&shown).unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert!(parsed["plugins"].get(name).is_some(), "{name:?}: {shown}");
            let err = write_plugin_entry(&path, &odd_draft(name)).unwrap_err().to_string();
            assert!(err.contains(&format!("plugin name {name:?}: use letters")), "{err}");
            assert!(!err.contains('\u{1b}'), "{err:?}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");
        }
    }

    #[test]
    fn a_server_entry_is_written_and_parses_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "# mine\n").unwrap();
        let draft = ServerEntryDraft {
            name: "mem".into(),
            command: vec!["node".into(), format!("/opt/{ODD}/index.js")],
            sha256: Some("cd".repeat(32)),
            cwd: None,
            read_dirs: vec!["/opt".into()],
            filesystem: FsGrant::ReadWrite,
            network: vec!["api.example.com".into()],
            env: vec!["MEMORY_FILE_PATH".into()],
            limits: vec![("processes".into(), 8)],
        };
        let shown = server_entry_toml(&draft);
        assert!(shown.starts_with("[servers.mem]\n"), "{shown}");
        write_server_entry(&path, &draft).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# mine\n"), "{text}");
        let policy = super::super::Policy::load(&path).unwrap();
        let [entry] = &policy.servers[..] else { panic!("{:?}", policy.servers) };
        let super::super::servers::ServerTransport::Stdio(stdio) = &entry.transport else { panic!() };
        assert_eq!(stdio.command, draft.command);
        assert_eq!(stdio.sha256, draft.sha256);
        assert_eq!(stdio.filesystem, FsGrant::ReadWrite);
        assert_eq!(entry.limits.processes, Some(8));
        let bad = ServerEntryDraft { name: "a b".into(), command: vec!["x".into()], ..draft };
        assert!(write_server_entry(&path, &bad).unwrap_err().to_string().contains("server name \"a b\""));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn a_missing_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        add_allow_rule(&path, "edit_file").unwrap();
        assert_eq!(super::super::Policy::load(&path).unwrap().allow[0].as_str(), "edit_file");
    }
}
