//! `[servers.NAME]`: an MCP server whose tools join the registry as
//! `mcp__NAME__TOOL` (see `crate::servers`), started over stdio through the exec
//! confinement, or reached over Streamable HTTP through the pinned client.
//!
//! ```toml
//! [servers.memory]
//! command = ["node", "/opt/mcp/node_modules/@modelcontextprotocol/server-memory/dist/index.js"]
//! sha256 = "…"                       # of the entry file: the script after the interpreter
//! package = "/opt/mcp/node_modules"  # the files it runs, pinned whole (a directory or one file)…
//! package-sha256 = "…"               # …by this digest (`crate::servers` pin), checked at each start
//! # unpinned = true                  # instead of the two above: start it whatever its files are
//! cwd = "."                          # relative to this file (default: the work dir)
//! read-dirs = ["/opt/mcp/node_modules"]   # what it may read besides the system dirs
//! filesystem = "read-write"          # the work dir: none | read (default) | read-write
//! network = ["api.example.com"]      # default none: no network at all
//! env = ["MEMORY_FILE_PATH"]         # host variables it sees (names or globs)
//! limits = { memory-mib = 1024, cpu-seconds = 3600, processes = 32, timeout-ms = 60000 }
//!
//! [servers.remote]
//! url = "https://mcp.example.com/mcp"   # Streamable HTTP, through the pinned client
//! token-env = "EXAMPLE_TOKEN"           # sent as a bearer token (a granted name)
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::env::EnvName;
use crate::imports::fetch::HostPattern;
use crate::policy::grants::FsGrant;

/// One `[servers.NAME]` entry.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    /// The entry's name: its tools are `mcp__NAME__TOOL` (`-` becomes `_`).
    pub name: String,
    /// How it is reached.
    pub transport: ServerTransport,
    /// Environment variable names (or globs) it sees (stdio), or may take its token
    /// from (`url`).
    pub env: Vec<EnvName>,
    /// Its limits.
    pub limits: ServerLimits,
}

/// How a server is reached.
#[derive(Debug, Clone)]
pub enum ServerTransport {
    /// A program started over stdio, confined.
    Stdio(StdioServer),
    /// A Streamable HTTP endpoint.
    Http(HttpServer),
}

/// A server started as a confined child speaking MCP on its stdin and stdout.
#[derive(Debug, Clone)]
pub struct StdioServer {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Its working directory (`None`: the work dir, or `/` without one).
    pub cwd: Option<PathBuf>,
    /// Directories it may read (and run programs from) besides the system dirs.
    pub read_dirs: Vec<PathBuf>,
    /// The work dir: none, read-only (the default) or read-write.
    pub filesystem: FsGrant,
    /// Hosts it may reach through its proxy (empty: no network at all).
    pub network: Vec<HostPattern>,
    /// The sha256 its entry file must have (the script after an interpreter, or the
    /// program itself).
    pub sha256: Option<String>,
    /// Its package pinned whole (`package` + `package-sha256`).
    pub package: Option<PackagePin>,
    /// Whether the entry says it runs without a package pin (`unpinned = true`).
    pub unpinned: bool,
}

/// A stdio server's files, pinned: the tree at `root` must hash to `sha256`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackagePin {
    /// The package: a directory (walked whole) or one file.
    pub root: PathBuf,
    /// Its digest (64 lower-case hex digits).
    pub sha256: String,
}

/// A server reached over Streamable HTTP.
#[derive(Debug, Clone)]
pub struct HttpServer {
    /// The endpoint (`https://…/mcp`).
    pub url: String,
    /// The granted variable whose value is sent as `Authorization: Bearer …`.
    pub token_env: Option<String>,
}

/// What one server's process and calls may use (unset: the host's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerLimits {
    /// Address space per process, in MiB.
    pub memory_mib: Option<u64>,
    /// CPU seconds per process, over its whole life.
    pub cpu_seconds: Option<u64>,
    /// Processes (and threads) at once in its tree.
    pub processes: Option<u64>,
    /// The default deadline of a call to one of its tools, in milliseconds.
    pub timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawServer {
    command: Option<Spanned<Vec<String>>>,
    url: Option<Spanned<String>>,
    token_env: Option<Spanned<String>>,
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    read_dirs: Vec<Spanned<String>>,
    filesystem: Option<Spanned<FsGrant>>,
    #[serde(default)]
    network: Vec<Spanned<String>>,
    sha256: Option<Spanned<String>>,
    package: Option<Spanned<String>>,
    package_sha256: Option<Spanned<String>>,
    unpinned: Option<Spanned<bool>>,
    #[serde(default)]
    env: Vec<Spanned<String>>,
    #[serde(default)]
    limits: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
}

/// The limit keys of a server entry.
const LIMIT_KEYS: [&str; 4] = ["memory-mib", "cpu-seconds", "processes", "timeout-ms"];

type Refusal = (Range<usize>, String);

impl RawServer {
    /// The entry `servers.NAME`, with paths relative to `base` (the policy file's dir).
    pub(super) fn parse(self, name: &Spanned<String>, base: &Path) -> Result<ServerEntry, Refusal> {
        let key = name.get_ref();
        super::PluginEntry::check_name(key)
            .map_err(|e| (name.span(), e.replacen("plugin name", "server name", 1)))?;
        let at = |span: Range<usize>, what: String| (span, format!("servers.{key}.{what}"));
        let env = self
            .env
            .iter()
            .map(|n| EnvName::parse(n.get_ref()).map_err(|e| at(n.span(), format!("env: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let limits = limits(&self.limits).map_err(|(span, e)| at(span, format!("limits: {e}")))?;
        let transport = match (self.command, self.url) {
            (Some(_), Some(url)) => {
                return Err(at(
                    url.span(),
                    "url: give either `command` (stdio) or `url` (HTTP), not both".into(),
                ));
            }
            (None, None) => {
                return Err((
                    name.span(),
                    format!("servers.{key}: needs `command = [\"prog\", …]` or `url`"),
                ));
            }
            (None, Some(url)) => {
                let stdio_only = [
                    ("cwd", self.cwd.as_ref().map(Spanned::span)),
                    ("sha256", self.sha256.as_ref().map(Spanned::span)),
                    ("package", self.package.as_ref().map(Spanned::span)),
                    ("package-sha256", self.package_sha256.as_ref().map(Spanned::span)),
                    ("unpinned", self.unpinned.as_ref().map(Spanned::span)),
                    ("filesystem", self.filesystem.as_ref().map(Spanned::span)),
                    ("read-dirs", self.read_dirs.first().map(Spanned::span)),
                    ("network", self.network.first().map(Spanned::span)),
                ];
                if let Some((what, Some(span))) = stdio_only.into_iter().find(|(_, s)| s.is_some()) {
                    return Err(at(span, format!("{what}: only a `command` server has it")));
                }
                let parsed = url::Url::parse(url.get_ref())
                    .map_err(|e| at(url.span(), format!("url: `{}`: {e}", url.get_ref())))?;
                if parsed.scheme() != "https" && parsed.scheme() != "http" {
                    return Err(at(url.span(), format!("url: `{}` is not http(s)", url.get_ref())));
                }
                if !parsed.username().is_empty() || parsed.password().is_some() {
                    return Err(at(url.span(), "url: credentials go in `token-env`, not the URL".into()));
                }
                let token_env = match self.token_env {
                    Some(token) => {
                        let granted = env.iter().any(|n| n.as_str() == token.get_ref());
                        if !granted {
                            return Err(at(
                                token.span(),
                                format!("token-env: `{}` is not among its `env` names", token.get_ref()),
                            ));
                        }
                        Some(token.into_inner())
                    }
                    None => None,
                };
                ServerTransport::Http(HttpServer { url: url.into_inner(), token_env })
            }
            (Some(command), None) => {
                if let Some(token) = &self.token_env {
                    return Err(at(token.span(), "token-env: only a `url` server has it".into()));
                }
                let span = command.span();
                let command = command.into_inner();
                if command.first().is_none_or(|p| p.is_empty()) {
                    return Err(at(span, "command: the first element is the program; it is empty".into()));
                }
                if command.iter().any(|a| a.contains('\0')) {
                    return Err(at(span, "command: an element contains a NUL byte".into()));
                }
                let hex = |sha: Option<Spanned<String>>, key: &str| match sha {
                    Some(sha) => {
                        let text = sha.get_ref();
                        if text.len() != 64 || !text.chars().all(|c| c.is_ascii_hexdigit()) {
                            return Err(at(sha.span(), format!("{key}: `{text}` is not 64 hex digits")));
                        }
                        Ok(Some(text.to_ascii_lowercase()))
                    }
                    None => Ok(None),
                };
                let sha256 = hex(self.sha256, "sha256")?;
                let unpinned = self.unpinned.as_ref().is_some_and(|u| *u.get_ref());
                let package = match (self.package, hex(self.package_sha256, "package-sha256")?) {
                    (None, None) => None,
                    (Some(root), _) if unpinned => {
                        return Err(at(
                            root.span(),
                            "package: give a pin or `unpinned = true`, not both".into(),
                        ));
                    }
                    (None, Some(_)) => {
                        return Err(at(
                            span.clone(),
                            "package-sha256: needs `package`, the files it pins".into(),
                        ));
                    }
                    (Some(root), None) => {
                        return Err(at(root.span(), "package: needs `package-sha256`, its digest".into()));
                    }
                    (Some(root), Some(sha256)) => {
                        Some(PackagePin { root: base.join(root.get_ref()), sha256 })
                    }
                };
                let network = self
                    .network
                    .iter()
                    .map(|h| {
                        HostPattern::parse(h.get_ref()).map_err(|e| at(h.span(), format!("network: {e}")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                ServerTransport::Stdio(StdioServer {
                    command,
                    cwd: self.cwd.map(|c| base.join(c.get_ref())),
                    read_dirs: self.read_dirs.iter().map(|d| base.join(d.get_ref())).collect(),
                    filesystem: self.filesystem.map(Spanned::into_inner).unwrap_or(FsGrant::Read),
                    network,
                    sha256,
                    package,
                    unpinned,
                })
            }
        };
        Ok(ServerEntry { name: key.clone(), transport, env, limits })
    }
}

/// The `limits` table of a server entry: [`LIMIT_KEYS`], each a whole number ≥ 1.
fn limits(table: &BTreeMap<Spanned<String>, Spanned<toml::Value>>) -> Result<ServerLimits, Refusal> {
    let mut out = ServerLimits::default();
    for (key, value) in table {
        let name = key.get_ref().as_str();
        if !LIMIT_KEYS.contains(&name) {
            return Err((key.span(), format!("unknown key `{name}` (known: {})", LIMIT_KEYS.join(", "))));
        }
        let number = match value.get_ref().as_integer() {
            Some(n) if n >= 1 => n.unsigned_abs(),
            Some(n) => {
                return Err((value.span(), format!("{name}: {n} is too small: it must be at least 1")));
            }
            None => {
                let kind = value.get_ref().type_str();
                return Err((value.span(), format!("{name}: expected a whole number, found {kind}")));
            }
        };
        let slot = match name {
            "memory-mib" if number > (1 << 30) => {
                return Err((value.span(), format!("{name}: {number} is too large: at most {}", 1u64 << 30)));
            }
            "memory-mib" => &mut out.memory_mib,
            "cpu-seconds" => &mut out.cpu_seconds,
            "processes" => &mut out.processes,
            _ => &mut out.timeout_ms,
        };
        *slot = Some(number);
    }
    Ok(out)
}

impl ServerEntry {
    /// The part of its tools' names that stands for it (`mcp__PART__TOOL`): its
    /// name lower-cased, `-` made `_`.
    pub(crate) fn tool_part(&self) -> String {
        self.name.to_ascii_lowercase().replace('-', "_")
    }

    /// The hosts a stdio server may reach (none for an HTTP one: its client reaches
    /// only its URL's host).
    pub fn network(&self) -> &[HostPattern] {
        match &self.transport {
            ServerTransport::Stdio(stdio) => &stdio.network,
            ServerTransport::Http(_) => &[],
        }
    }

    /// What this entry grants, in short phrases (for the trust check).
    pub(crate) fn widening(&self) -> String {
        match &self.transport {
            ServerTransport::Stdio(s) => {
                let net = if s.network.is_empty() {
                    String::new()
                } else {
                    let hosts: Vec<&str> = s.network.iter().map(HostPattern::as_str).collect();
                    format!(", network {}", hosts.join(" "))
                };
                format!(
                    "{} (runs `{}`, work dir {}{net})",
                    self.name,
                    s.command.join(" "),
                    s.filesystem.as_str()
                )
            }
            ServerTransport::Http(h) => format!("{} (calls {})", self.name, h.url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Policy;
    use super::*;

    fn parse(text: &str) -> Result<Policy, String> {
        Policy::parse(text, Path::new("/p/toolhost.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_stdio_entry_with_everything() {
        let policy = parse(
            r#"
[servers.mem-x]
command = ["node", "server.js", "--flag"]
sha256 = "ABababababababababababababababababababababababababababababababab"
cwd = "sub"
read-dirs = ["/opt/mcp"]
filesystem = "read-write"
network = ["api.example.com"]
env = ["MEMORY_FILE_PATH"]
limits = { memory-mib = 512, cpu-seconds = 60, processes = 8, timeout-ms = 1000 }
"#,
        )
        .unwrap();
        let [entry] = &policy.servers[..] else { panic!("{:?}", policy.servers) };
        assert_eq!(entry.name, "mem-x");
        let ServerTransport::Stdio(s) = &entry.transport else { panic!("{entry:?}") };
        assert_eq!(s.command, ["node", "server.js", "--flag"]);
        assert_eq!(s.sha256.as_deref(), Some(&*"ab".repeat(32)));
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/p/sub")));
        assert_eq!(s.read_dirs, [PathBuf::from("/opt/mcp")]);
        assert_eq!(s.filesystem, FsGrant::ReadWrite);
        assert_eq!(s.network[0].as_str(), "api.example.com");
        assert_eq!(entry.env[0].as_str(), "MEMORY_FILE_PATH");
        assert_eq!(
            entry.limits,
            ServerLimits {
                memory_mib: Some(512),
                cpu_seconds: Some(60),
                processes: Some(8),
                timeout_ms: Some(1000)
            }
        );
        assert!(policy.widening().iter().any(|w| w.contains("servers (mem-x (runs `node server.js --flag`")));
    }

    #[test]
    fn defaults_read_only_work_dir_and_no_network() {
        let policy = parse("[servers.a]\ncommand = [\"python3\", \"s.py\"]\n").unwrap();
        let ServerTransport::Stdio(s) = &policy.servers[0].transport else { panic!() };
        assert_eq!(s.filesystem, FsGrant::Read);
        assert!(s.network.is_empty() && s.read_dirs.is_empty() && s.sha256.is_none() && s.cwd.is_none());
        assert!(s.package.is_none() && !s.unpinned);
        let policy = parse(&format!(
            "[servers.a]\ncommand = [\"node\", \"s.js\"]\npackage = \"nm\"\npackage-sha256 = \"{}\"\n",
            "AB".repeat(32)
        ))
        .unwrap();
        let ServerTransport::Stdio(s) = &policy.servers[0].transport else { panic!() };
        let want = PackagePin { root: PathBuf::from("/p/nm"), sha256: "ab".repeat(32) };
        assert_eq!(s.package.as_ref(), Some(&want));
    }

    #[test]
    fn an_http_entry_takes_its_token_from_a_granted_name() {
        let policy = parse(
            "[servers.r]\nurl = \"https://mcp.example.com/mcp\"\nenv = [\"R_TOKEN\"]\ntoken-env = \"R_TOKEN\"\n",
        )
        .unwrap();
        let ServerTransport::Http(h) = &policy.servers[0].transport else { panic!() };
        assert_eq!(
            (h.url.as_str(), h.token_env.as_deref()),
            ("https://mcp.example.com/mcp", Some("R_TOKEN"))
        );
    }

    #[test]
    fn bad_entries_are_refused_naming_the_key_and_line() {
        let cases = [
            ("[servers.a]\n", "needs `command"),
            ("[servers.a]\ncommand = []\n", "servers.a.command: the first element"),
            ("[servers.a]\ncommand = [\"x\"]\nurl = \"https://a/mcp\"\n", "not both"),
            ("[servers.a]\nurl = \"ftp://a/mcp\"\n", "is not http(s)"),
            ("[servers.a]\nurl = \"https://u:p@a/mcp\"\n", "credentials go in `token-env`"),
            ("[servers.a]\nurl = \"https://a/mcp\"\ntoken-env = \"T\"\n", "`T` is not among its `env` names"),
            ("[servers.a]\nurl = \"https://a/mcp\"\nfilesystem = \"read\"\n", "filesystem: only a `command`"),
            ("[servers.a]\ncommand = [\"x\"]\ntoken-env = \"T\"\n", "token-env: only a `url`"),
            ("[servers.a]\ncommand = [\"x\"]\nsha256 = \"12\"\n", "sha256: `12` is not 64 hex digits"),
            (
                "[servers.a]\ncommand = [\"x\"]\npackage = \"p\"\npackage-sha256 = \"1\"\n",
                "package-sha256: `1`",
            ),
            ("[servers.a]\ncommand = [\"x\"]\npackage = \"p\"\n", "package: needs `package-sha256`"),
            ("[servers.a]\ncommand = [\"x\"]\npackage-sha256 = \"{H}\"\n", "package-sha256: needs `package`"),
            ("[servers.a]\ncommand = [\"x\"]\npackage = \"p\"\nunpinned = true\n", "not both"),
            ("[servers.a]\nurl = \"https://a/mcp\"\nunpinned = true\n", "unpinned: only a `command`"),
            ("[servers.a]\ncommand = [\"x\"]\nnetwork = [\"\"]\n", "servers.a.network"),
            ("[servers.a]\ncommand = [\"x\"]\nlimits = { fuel = 1 }\n", "unknown key `fuel`"),
            ("[servers.a]\ncommand = [\"x\"]\nlimits = { processes = 0 }\n", "at least 1"),
            ("[servers.a]\ncommand = [\"x\"]\nlimits = { processes = \"2\" }\n", "expected a whole number"),
            ("[servers.a]\ncommand = [\"x\"]\nport = 3\n", "unknown field `port`"),
            ("[servers.\"a b\"]\ncommand = [\"x\"]\n", "server name \"a b\""),
            (
                "[servers.a-b]\ncommand = [\"x\"]\n[servers.A_b]\ncommand = [\"y\"]\n",
                "as those of servers.A_b are (duplicate_tool)",
            ),
        ];
        for (text, want) in cases {
            let text = &text.replace("{H}", &"a".repeat(64));
            let err = parse(text).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.contains("line "), "{err}");
        }
    }
}
