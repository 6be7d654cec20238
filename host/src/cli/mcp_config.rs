//! `toolhost mcp-config CLIENT`: the configuration an agent needs to start this
//! binary as its MCP server (stdio), or to reach a running `serve --http` with a
//! bearer token, in the shape that client reads: a `claude mcp add` command line,
//! Codex's `config.toml` table, or the JSON of Cursor, VS Code, Claude Desktop or
//! Zed. stdout holds only the configuration; where it goes and what else to do is
//! on stderr. docs/agents.md shows each.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};

/// The environment variable a client reads the token from, where it can.
pub(crate) const TOKEN_VAR: &str = "TOOLHOST_TOKEN";
/// VS Code's input id for the token (it asks once and keeps it).
const VSCODE_INPUT: &str = "toolhost-token";

/// The agents whose configuration `mcp-config` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Client {
    /// Claude Code: a `claude mcp add` command.
    ClaudeCode,
    /// Codex CLI: a `[mcp_servers.NAME]` table for `~/.codex/config.toml`.
    Codex,
    /// Cursor: `.cursor/mcp.json` (`mcpServers`).
    Cursor,
    /// VS Code: `.vscode/mcp.json` (`servers`, with `type`).
    Vscode,
    /// Claude Desktop: `claude_desktop_config.json` (`mcpServers`; stdio only).
    ClaudeDesktop,
    /// Zed: `settings.json` (`context_servers`).
    Zed,
}

/// `toolhost mcp-config`'s flags.
#[derive(Args)]
pub(crate) struct McpConfigArgs {
    /// The agent: claude-code, codex, cursor, vscode, claude-desktop or zed.
    #[arg(value_enum)]
    client: Client,
    /// The work dir the server serves (made absolute).
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
    /// The policy file the server reads (made absolute; default: toolhost.toml in the work dir).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The server's name in the client's configuration.
    #[arg(long, default_value = "toolhost", value_parser = server_name)]
    name: String,
    /// Connect to a running `toolhost serve --http` at URL (`http://127.0.0.1:8377/mcp`)
    /// instead of starting a server on stdio.
    #[arg(long, value_name = "URL", value_parser = endpoint)]
    http: Option<String>,
    /// The file holding the server's bearer token (its `--token-file`).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
}

/// A name every client accepts as a key and a command-line word.
fn server_name(name: &str) -> Result<String, String> {
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || name.len() > 64 || !name.chars().all(fits) {
        return Err(format!("{name:?}: use 1 to 64 ASCII letters, digits, `-` and `_`"));
    }
    Ok(name.to_string())
}

/// An `http://` or `https://` URL with a host.
fn endpoint(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text).map_err(|e| format!("{text:?}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("{text:?} is not an http:// or https:// URL"));
    }
    Ok(url.to_string())
}

/// What the client starts (stdio) or reaches (HTTP).
enum Server {
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)> },
    Http { url: String, token: Option<Token> },
}

/// The bearer token: its file (for a client that reads it at set-up) and its text
/// (for one that holds it in its configuration).
struct Token {
    file: PathBuf,
    text: String,
}

/// `toolhost mcp-config CLIENT`
pub(crate) fn run(args: &McpConfigArgs) -> anyhow::Result<ExitCode> {
    let server = server(args)?;
    if args.client == Client::ClaudeDesktop && matches!(server, Server::Http { .. }) {
        bail!(
            "Claude Desktop's claude_desktop_config.json starts local servers only (stdio): run \
             `toolhost mcp-config claude-desktop` without --http, and it starts `toolhost serve` itself"
        );
    }
    let text = render(args.client, &args.name, &server)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", text.trim_end())?;
    for hint in hints(args.client, &server) {
        eprintln!("toolhost: {hint}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The server as this binary and the flags describe it.
fn server(args: &McpConfigArgs) -> anyhow::Result<Server> {
    if let Some(url) = &args.http {
        let token = match &args.token_file {
            None => None,
            Some(file) => {
                // The server's own check: what it would refuse is refused here.
                toolhost::BearerToken::from_file(file)?;
                let text = toolhost::hostfs::read_text(file, 4096)
                    .with_context(|| format!("{}", file.display()))?
                    .with_context(|| format!("{}: no such file", file.display()))?;
                let file = absolute(file)?;
                Some(Token { file, text: text.trim().to_string() })
            }
        };
        return Ok(Server::Http { url: url.clone(), token });
    }
    let exe = std::env::current_exe().context("the path of this toolhost binary")?;
    let command = exe.canonicalize().unwrap_or(exe).to_string_lossy().into_owned();
    let work = args.work_dir.canonicalize().with_context(|| format!("{}", args.work_dir.display()))?;
    let mut argv = vec!["serve".to_string(), "--work-dir".to_string(), text(&work)];
    if let Some(policy) = &args.policy {
        argv.extend(["--policy".to_string(), text(&absolute(policy)?)]);
    }
    Ok(Server::Stdio { command, args: argv, env: pinned_dirs() })
}

/// The host's dirs as they resolve now, so a client that starts the server with
/// another environment (a desktop app's) finds the same trust records, journal and
/// compile cache.
fn pinned_dirs() -> Vec<(String, String)> {
    let config = toolhost::policy::ConfigDir::from_env().map(|c| c.root().to_path_buf());
    let data = toolhost::default_data_dir();
    let cache = toolhost::EngineSettings::default().cache_dir;
    [("TOOLHOST_CONFIG_DIR", config), ("TOOLHOST_DATA_DIR", data), ("TOOLHOST_CACHE_DIR", cache)]
        .into_iter()
        .filter_map(|(key, dir)| Some((key.to_string(), text(&absolute(&dir?).ok()?))))
        .collect()
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("{}", path.display()))
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The configuration text for `client`.
fn render(client: Client, name: &str, server: &Server) -> anyhow::Result<String> {
    Ok(match client {
        Client::ClaudeCode => claude_command(name, server),
        Client::Codex => codex_table(name, server),
        Client::Cursor => json_doc("mcpServers", name, entry(server, false, "${env:TOOLHOST_TOKEN}"), None)?,
        Client::ClaudeDesktop => json_doc("mcpServers", name, entry(server, false, ""), None)?,
        Client::Vscode => {
            let inputs = matches!(server, Server::Http { token: Some(_), .. }).then(|| {
                json!([{
                    "type": "promptString",
                    "id": VSCODE_INPUT,
                    "description": "toolhost serve --http bearer token (its --token-file)",
                    "password": true,
                }])
            });
            json_doc("servers", name, entry(server, true, "${input:toolhost-token}"), inputs)?
        }
        Client::Zed => {
            let literal = match server {
                Server::Http { token: Some(token), .. } => token.text.clone(),
                _ => String::new(),
            };
            let mut value = entry(server, false, &literal);
            if matches!(server, Server::Stdio { .. }) {
                value["source"] = json!("custom");
            }
            json_doc("context_servers", name, value, None)?
        }
    })
}

/// One server's JSON entry: `command`/`args`/`env`, or `url` and the bearer header
/// with the token written as `token` (a variable reference or the text); `typed`:
/// with VS Code's `type`.
fn entry(server: &Server, typed: bool, token: &str) -> Value {
    let mut value = match server {
        Server::Stdio { command, args, env } => {
            let env: Map<String, Value> = env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            json!({"command": command, "args": args, "env": env})
        }
        Server::Http { url, token: held } => {
            let mut value = json!({"url": url});
            if held.is_some() {
                value["headers"] = json!({"Authorization": format!("Bearer {token}")});
            }
            value
        }
    };
    if typed {
        value["type"] = json!(if matches!(server, Server::Stdio { .. }) { "stdio" } else { "http" });
    }
    value
}

/// `{KEY: {name: entry}}`, with VS Code's `inputs` first when given.
fn json_doc(key: &str, name: &str, entry: Value, inputs: Option<Value>) -> anyhow::Result<String> {
    let mut doc = Map::new();
    if let Some(inputs) = inputs {
        doc.insert("inputs".into(), inputs);
    }
    doc.insert(key.into(), json!({ name: entry }));
    Ok(serde_json::to_string_pretty(&Value::Object(doc))?)
}

/// Codex's `[mcp_servers.NAME]` table (the token from [`TOKEN_VAR`]: Codex takes no
/// token in the file).
fn codex_table(name: &str, server: &Server) -> String {
    let mut table = toml_edit::Table::new();
    match server {
        Server::Stdio { command, args, env } => {
            table["command"] = toml_edit::value(command.as_str());
            table["args"] = toml_edit::value(args.iter().map(String::as_str).collect::<toml_edit::Array>());
            let mut vars = toml_edit::InlineTable::new();
            for (key, value) in env {
                vars.insert(key, value.as_str().into());
            }
            table["env"] = toml_edit::value(vars);
        }
        Server::Http { url, token } => {
            table["url"] = toml_edit::value(url.as_str());
            if token.is_some() {
                table["bearer_token_env_var"] = toml_edit::value(TOKEN_VAR);
            }
        }
    }
    let mut servers = toml_edit::Table::new();
    servers.set_implicit(true);
    servers.insert(name, toml_edit::Item::Table(table));
    let mut doc = toml_edit::DocumentMut::new();
    doc.insert("mcp_servers", toml_edit::Item::Table(servers));
    doc.to_string()
}

/// The `claude mcp add` command line (the token read from its file by the shell,
/// never printed).
fn claude_command(name: &str, server: &Server) -> String {
    let mut words = vec!["claude".to_string(), "mcp".into(), "add".into()];
    match server {
        Server::Stdio { command, args, env } => {
            words.extend(["--transport".into(), "stdio".into()]);
            for (key, value) in env {
                words.extend(["--env".into(), shell_word(&format!("{key}={value}"))]);
            }
            words.extend([shell_word(name), "--".into(), shell_word(command)]);
            words.extend(args.iter().map(|a| shell_word(a)));
        }
        Server::Http { url, token } => {
            words.extend(["--transport".into(), "http".into(), shell_word(name), shell_word(url)]);
            if let Some(token) = token {
                let file = shell_word(&text(&token.file));
                words.extend(["--header".into(), format!("\"Authorization: Bearer $(cat {file})\"")]);
            }
        }
    }
    words.join(" ")
}

/// `word` as one POSIX shell word: as it is when it holds nothing the shell reads,
/// else single-quoted.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Where the configuration goes, and what else the client needs.
fn hints(client: Client, server: &Server) -> Vec<String> {
    let place = match client {
        Client::ClaudeCode => "run this command (add --scope user or --scope project to share it)",
        Client::Codex => "add this to ~/.codex/config.toml (or .codex/config.toml in a trusted project)",
        Client::Cursor => "put this in .cursor/mcp.json (this project) or ~/.cursor/mcp.json (every project)",
        Client::Vscode => "put this in .vscode/mcp.json (or the user mcp.json: MCP: Open User Configuration)",
        Client::ClaudeDesktop => {
            "put this in claude_desktop_config.json (Settings > Developer > Edit Config) and restart Claude Desktop"
        }
        Client::Zed => "put this in Zed's settings.json (zed: open settings file)",
    };
    let mut hints = vec![place.to_string()];
    if let Server::Http { token: Some(token), .. } = server {
        let file = shell_word(&text(&token.file));
        match client {
            Client::Codex | Client::Cursor => hints.push(format!(
                "set the token in the environment the client starts in: export {TOKEN_VAR}=\"$(cat {file})\""
            )),
            Client::Vscode => {
                hints.push(format!("VS Code asks for the token once: give it the contents of {file}"))
            }
            Client::Zed => {
                hints.push("this configuration holds the token: keep settings.json private".into())
            }
            Client::ClaudeCode | Client::ClaudeDesktop => {}
        }
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_what_the_shell_reads() {
        assert_eq!(shell_word("/usr/bin/toolhost"), "/usr/bin/toolhost");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn names_and_urls_are_checked() {
        assert!(server_name("toolhost-2").is_ok());
        assert!(server_name("a b").is_err() && server_name("").is_err() && server_name("x.y").is_err());
        assert!(endpoint("http://127.0.0.1:8377/mcp").is_ok());
        assert!(endpoint("ftp://127.0.0.1/mcp").is_err() && endpoint("not a url").is_err());
    }
}
