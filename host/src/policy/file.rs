//! Reading the policy file: TOML with every key known (a typo is an error), every
//! pattern checked, and every error naming the line it is on.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::env::EnvName;
use super::exec::{RawBuiltins, RawExec, RawExecGrant, RawTest};
use super::hooks::RawHook;
use super::rules::Rule;
use super::{LimitKey, LimitOverrides, Mode, PluginEntry, Policy, PolicyError, Sections};
use crate::imports::fetch::HostPattern;
use crate::policy::grants::{FsGrant, Sockets};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPolicy {
    #[serde(default)]
    permissions: RawPermissions,
    #[serde(default)]
    plugins: BTreeMap<Spanned<String>, RawPlugin>,
    builtins: Option<RawBuiltins>,
    exec: Option<RawExec>,
    #[serde(default)]
    tests: BTreeMap<Spanned<String>, RawTest>,
    #[serde(default)]
    hooks: Vec<RawHook>,
    trust: Option<super::remote::RawTrust>,
    #[serde(default)]
    servers: BTreeMap<Spanned<String>, super::servers::RawServer>,
    network: Option<RawNetwork>,
    output: Option<RawOutput>,
}

/// `[network]`: what `--allow-private-network` says on the command line.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawNetwork {
    allow_private: Option<bool>,
}

/// `[output]`: how tool outputs reach the model.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawOutput {
    /// Shape logs by what they are (default on; `raw: true` on a call bypasses it).
    shape: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPermissions {
    mode: Option<Mode>,
    safe_commands: Option<bool>,
    require_fresh: Option<bool>,
    follow_links: Option<bool>,
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    #[serde(default)]
    protected: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPlugin {
    source: Spanned<String>,
    sha256: Spanned<String>,
    #[serde(default = "no_fs")]
    filesystem: FsGrant,
    #[serde(default)]
    read_dirs: Vec<Spanned<String>>,
    #[serde(default)]
    network: Vec<Spanned<String>>,
    #[serde(default)]
    env: Vec<Spanned<String>>,
    #[serde(default)]
    sockets: Sockets,
    #[serde(default)]
    limits: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    exec: Option<RawExecGrant>,
    #[serde(default)]
    config: BTreeMap<Spanned<String>, crate::imports::config::ConfigSource>,
    #[serde(default)]
    read_only: Vec<String>,
    #[serde(default)]
    keys: Vec<Spanned<String>>,
    #[serde(default)]
    identities: Vec<super::remote::RawIdentity>,
    plain_http: Option<Spanned<bool>>,
    registry_auth: Option<Spanned<bool>>,
}

fn no_fs() -> FsGrant {
    FsGrant::None
}

/// Parse the text of the policy file at `path` (relative sources and dirs are taken
/// relative to the file's directory).
pub(super) fn parse(text: &str, path: &Path) -> Result<Policy, PolicyError> {
    let at = |span: Range<usize>, message: String| PolicyError::Invalid {
        path: path.display().to_string(),
        line: line_of(text, span.start),
        message,
    };
    let raw: RawPolicy =
        toml::from_str(text).map_err(|e| at(e.span().unwrap_or(0..0), e.message().trim_end().to_string()))?;
    let base = path.parent().unwrap_or(Path::new("."));

    let rules = |list: &[Spanned<String>]| -> Result<Vec<Rule>, PolicyError> {
        list.iter().map(|r| Rule::parse(r.get_ref()).map_err(|e| at(r.span(), e))).collect()
    };
    let allow = rules(&raw.permissions.allow)?;
    let deny = rules(&raw.permissions.deny)?;
    let protected: Vec<String> = raw.permissions.protected.iter().map(|p| p.get_ref().clone()).collect();
    for p in &raw.permissions.protected {
        globset::Glob::new(p.get_ref())
            .map_err(|e| at(p.span(), format!("protected path `{}`: {e}", p.get_ref())))?;
    }

    let trust = raw.trust.unwrap_or_default().parse(base).map_err(|(span, e)| at(span, e))?;
    let mut plugins = Vec::new();
    for (name, plugin) in raw.plugins {
        let key = name.get_ref();
        PluginEntry::check_name(key).map_err(|e| at(name.span(), e))?;
        let sha = plugin.sha256.get_ref();
        if sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(at(
                plugin.sha256.span(),
                format!("plugins.{key}.sha256: `{sha}` is not 64 hex digits"),
            ));
        }
        let network = plugin
            .network
            .iter()
            .map(|h| {
                HostPattern::parse(h.get_ref())
                    .map_err(|e| at(h.span(), format!("plugins.{key}.network: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let env = plugin
            .env
            .iter()
            .map(|n| EnvName::parse(n.get_ref()).map_err(|e| at(n.span(), format!("plugins.{key}.env: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let exec = match &plugin.exec {
            Some(raw) => raw.parse().map_err(|(span, e)| at(span, format!("plugins.{key}.exec: {e}")))?,
            None => Default::default(),
        };
        let limits = limit_overrides(&plugin.limits, key).map_err(|(span, e)| at(span, e))?;
        let config = plugin
            .config
            .iter()
            .map(|(k, v)| {
                crate::imports::config::check_key(k.get_ref())
                    .map(|()| (k.get_ref().clone(), v.clone()))
                    .map_err(|e| at(k.span(), format!("plugins.{key}.config: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let read_dirs = plugin.read_dirs.iter().map(|d| base.join(d.get_ref())).collect::<Vec<PathBuf>>();
        let remote = super::remote::RawRemote {
            name: key,
            source: &plugin.source,
            keys: &plugin.keys,
            identities: &plugin.identities,
            plain_http: plugin.plain_http.as_ref(),
            registry_auth: plugin.registry_auth.as_ref(),
        };
        let (source, signers) = remote.parse(base, &trust).map_err(|(span, e)| at(span, e))?;
        plugins.push(PluginEntry {
            name: key.clone(),
            source,
            signers,
            plain_http: plugin.plain_http.is_some_and(|p| *p.get_ref()),
            registry_auth: plugin.registry_auth.is_some_and(|p| *p.get_ref()),
            sha256: sha.to_ascii_lowercase(),
            filesystem: plugin.filesystem,
            read_dirs,
            network,
            env,
            sockets: plugin.sockets,
            exec,
            limits,
            config,
            read_only: plugin.read_only,
        });
    }
    let sections = Sections {
        mode: raw.permissions.mode.is_some(),
        builtins: raw.builtins.is_some(),
        exec: raw.exec.is_some(),
    };
    let builtins = raw.builtins.unwrap_or_default().parse().map_err(|(span, e)| at(span, e))?;
    let exec = raw.exec.unwrap_or_default().parse(base).map_err(|(span, e)| at(span, e))?;
    let mut tests = Vec::new();
    for (name, test) in &raw.tests {
        tests.push(test.parse(name.get_ref()).map_err(|(span, e)| at(span, e))?);
    }
    let mut servers: Vec<super::servers::ServerEntry> = Vec::new();
    for (name, server) in raw.servers {
        let entry = server.parse(&name, base).map_err(|(span, e)| at(span, e))?;
        if let Some(other) = servers.iter().find(|s| s.tool_part() == entry.tool_part()) {
            let why = format!(
                "servers.{}: its tools would be named mcp__{}__… as those of servers.{} are ({})",
                entry.name,
                entry.tool_part(),
                other.name,
                crate::error::codes::DUPLICATE_TOOL
            );
            return Err(at(name.span(), why));
        }
        servers.push(entry);
    }
    let hooks =
        raw.hooks.iter().map(|h| h.parse(base).map_err(|(span, e)| at(span, e))).collect::<Result<_, _>>()?;
    Ok(Policy {
        path: Some(path.to_path_buf()),
        private_path: None,
        files: vec![path.to_path_buf()],
        config_dir: None,
        sections,
        mode: raw.permissions.mode.unwrap_or_default(),
        safe_commands: raw.permissions.safe_commands,
        require_fresh: raw.permissions.require_fresh,
        follow_links: raw.permissions.follow_links,
        allow_private_network: raw.network.and_then(|n| n.allow_private),
        allow,
        deny,
        protected,
        plugins,
        builtins,
        exec,
        tests,
        hooks,
        servers,
        shape_output: raw.output.and_then(|o| o.shape),
    })
}

/// The `limits` table of the entry `plugins.NAME`: only [`LimitKey::PLUGIN`] keys,
/// each a whole number [`LimitOverrides::set`] takes. An error names the key.
fn limit_overrides(
    table: &BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    name: &str,
) -> Result<LimitOverrides, (Range<usize>, String)> {
    let mut overrides = LimitOverrides::default();
    for (key, value) in table {
        let Some(limit) = LimitKey::PLUGIN.into_iter().find(|k| k.as_str() == key.get_ref()) else {
            let known = LimitKey::PLUGIN.map(LimitKey::as_str).join(", ");
            return Err((
                key.span(),
                format!("plugins.{name}.limits: unknown key `{}` (known: {known})", key.get_ref()),
            ));
        };
        let refused = |message: String| (value.span(), format!("plugins.{name}.limits.{message}"));
        let Some(number) = value.get_ref().as_integer() else {
            let kind = value.get_ref().type_str();
            return Err(refused(format!("{limit}: expected a whole number, found {kind}")));
        };
        overrides.set(limit, number).map_err(|e| refused(e.to_string()))?;
    }
    Ok(overrides)
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
#[path = "file_props.rs"]
mod props;
