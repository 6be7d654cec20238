//! `toolhost mcp-config CLIENT`: each printed configuration parsed with a real
//! TOML or JSON parser, held to the shape its client documents (docs/agents.md),
//! and then used as the client would: the stdio command spawned with exactly its
//! `args` and `env` and spoken to over MCP, or the HTTP URL reached with the header
//! it names.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use toolhost_tests::servers::{Instance, http_client, modern_request};
use toolhost_tests::{toolhost_bin, workspace_root};

/// How a client fills in a header value the config leaves to the environment.
type Resolve<'a> = Box<dyn Fn(&str) -> String + 'a>;

const PATIENCE: Duration = Duration::from_secs(60);
const TOKEN: &str = "agents-test-token-0123456789abcdef";
const STDIO_CLIENTS: [&str; 6] = ["claude-code", "codex", "cursor", "vscode", "claude-desktop", "zed"];

/// `toolhost mcp-config ARGS` with the test's dirs.
fn mcp_config(args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .arg("mcp-config")
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"))
        .output()
        .expect("running toolhost mcp-config")
}

fn printed(out: &Output) -> String {
    assert!(out.status.success(), "mcp-config failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

/// What a client starts: the command, its arguments, its environment.
#[derive(Debug)]
struct Launch {
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

/// What a client connects to: the URL and the Authorization header it sends.
#[derive(Debug)]
struct Remote {
    url: String,
    authorization: Option<String>,
}

fn strings(value: &Value, what: &str) -> Vec<String> {
    let items = value.as_array().unwrap_or_else(|| panic!("{what} is not an array: {value}"));
    items.iter().map(|v| v.as_str().unwrap_or_else(|| panic!("{what}: {v} is not a string")).into()).collect()
}

fn string_map(value: &Value, what: &str) -> BTreeMap<String, String> {
    let object = value.as_object().unwrap_or_else(|| panic!("{what} is not an object: {value}"));
    let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{what}: {v} is not a string")).to_string();
    object.iter().map(|(k, v)| (k.clone(), text(v))).collect()
}

/// The only server entry under `key` in a JSON document that has `keys` at its top.
fn json_entry<'a>(doc: &'a Value, keys: &[&str], key: &str) -> &'a Value {
    let top: Vec<&str> = doc.as_object().expect("an object").keys().map(String::as_str).collect();
    assert_eq!(top, keys, "top-level keys of {doc}");
    let servers = doc[key].as_object().unwrap_or_else(|| panic!("{key} is not an object"));
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["toolhost"], "{doc}");
    &servers["toolhost"]
}

/// The stdio launch of a JSON entry with exactly `keys` (`command` a string,
/// `args` strings, `env` string values).
fn json_launch(entry: &Value, keys: &[&str]) -> Launch {
    let mut found: Vec<&str> = entry.as_object().expect("an object").keys().map(String::as_str).collect();
    found.sort_unstable();
    assert_eq!(found, keys, "keys of {entry}");
    Launch {
        command: entry["command"].as_str().expect("command is a string").into(),
        args: strings(&entry["args"], "args"),
        env: string_map(&entry["env"], "env"),
    }
}

/// Run a `claude mcp add …` line with bash, a stand-in `claude` on PATH recording
/// the words it got (after the shell expanded them).
fn claude_words(line: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("argv");
    let fake = dir.path().join("claude");
    std::fs::write(&fake, format!("#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\n", record.display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
    let status = Command::new("bash").arg("-c").arg(line).env("PATH", path).status().expect("bash");
    assert!(status.success(), "{line}");
    let bytes = std::fs::read(&record).unwrap();
    bytes.split(|b| *b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into()).collect()
}

/// The launch a client makes from `toolhost mcp-config CLIENT`'s output, after
/// checking the output has that client's documented shape.
fn stdio_launch(client: &str, text: &str) -> Launch {
    match client {
        "claude-code" => {
            let words = claude_words(text.trim());
            assert_eq!(words[..4], ["mcp", "add", "--transport", "stdio"], "{words:?}");
            let split = words.iter().position(|w| w == "--").expect("-- before the command");
            let mut env = BTreeMap::new();
            let mut i = 4;
            while words[i] == "--env" {
                let (k, v) = words[i + 1].split_once('=').expect("--env KEY=VALUE");
                env.insert(k.to_string(), v.to_string());
                i += 2;
            }
            assert_eq!(i + 1, split, "the name alone between the options and --: {words:?}");
            assert_eq!(words[i], "toolhost");
            Launch { command: words[split + 1].clone(), args: words[split + 2..].to_vec(), env }
        }
        "codex" => {
            let doc: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("not TOML ({e}): {text}"));
            let servers = doc["mcp_servers"].as_table().expect("[mcp_servers]");
            let entry = servers["toolhost"].as_table().expect("[mcp_servers.toolhost]");
            let mut keys: Vec<&str> = entry.keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["args", "command", "env"]);
            let entry = serde_json::to_value(entry).unwrap();
            json_launch(&entry, &["args", "command", "env"])
        }
        _ => {
            let doc: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
            match client {
                "cursor" | "claude-desktop" => {
                    json_launch(json_entry(&doc, &["mcpServers"], "mcpServers"), &["args", "command", "env"])
                }
                "vscode" => {
                    let entry = json_entry(&doc, &["servers"], "servers");
                    assert_eq!(entry["type"], "stdio");
                    json_launch(entry, &["args", "command", "env", "type"])
                }
                "zed" => {
                    let entry = json_entry(&doc, &["context_servers"], "context_servers");
                    assert_eq!(entry["source"], "custom");
                    json_launch(entry, &["args", "command", "env", "source"])
                }
                other => panic!("no shape for {other}"),
            }
        }
    }
}

/// Start `launch` as a client does (nothing of this process's environment but
/// what the entry names), speak `initialize` and `tools/list`, and return the tool
/// names.
async fn list_over_stdio(launch: &Launch) -> Vec<String> {
    let mut child = tokio::process::Command::new(&launch.command)
        .args(&launch.args)
        .env_clear()
        .envs(&launch.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {launch:?}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "agents-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for message in messages {
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }
    stdin.flush().await.unwrap();
    let listed = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("reading stdout") {
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == 1 {
                assert_eq!(message["result"]["serverInfo"]["name"], "toolhost", "{message}");
            }
            if message["id"] == 2 {
                return message;
            }
        }
        panic!("the server ended before answering tools/list");
    })
    .await
    .expect("the server answered in time");
    drop(stdin);
    let _ = tokio::time::timeout(PATIENCE, child.wait()).await;
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stdio_config_starts_a_server_with_the_builtins() {
    let work = tempfile::tempdir().unwrap();
    let work_dir = work.path().canonicalize().unwrap();
    for client in STDIO_CLIENTS {
        let text = printed(&mcp_config(&[client, "--work-dir", work_dir.to_str().unwrap()]));
        let launch = stdio_launch(client, &text);
        // This binary, by absolute path, serving the absolute work dir.
        assert!(Path::new(&launch.command).is_absolute(), "{client}: {launch:?}");
        assert_eq!(Path::new(&launch.command), toolhost_bin().canonicalize().unwrap(), "{client}");
        assert_eq!(launch.args, ["serve", "--work-dir", work_dir.to_str().unwrap()], "{client}");
        assert_eq!(
            launch.env.get("TOOLHOST_CONFIG_DIR").map(Path::new),
            Some(toolhost_tests::test_config_dir()),
            "{client}: {launch:?}"
        );
        let tools = list_over_stdio(&launch).await;
        for builtin in ["read_file", "edit_file", "grep_files", "terminal", "git", "read_output"] {
            assert!(tools.iter().any(|t| t == builtin), "{client}: {builtin} missing from {tools:?}");
        }
    }
}

/// The endpoint and header a client reaches from `toolhost mcp-config CLIENT --http`,
/// after checking its documented shape; `token` is what the user gives where the
/// configuration points at the environment or a prompt.
fn http_remote(client: &str, text: &str, token: &str) -> Remote {
    match client {
        "claude-code" => {
            let words = claude_words(text.trim());
            assert_eq!(words[..5], ["mcp", "add", "--transport", "http", "toolhost"], "{words:?}");
            assert_eq!(words[6], "--header", "{words:?}");
            assert_eq!(words.len(), 8, "{words:?}");
            let value = words[7].strip_prefix("Authorization: ").expect("an Authorization header");
            Remote { url: words[5].clone(), authorization: Some(value.into()) }
        }
        "codex" => {
            let doc: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("not TOML ({e}): {text}"));
            let entry = doc["mcp_servers"]["toolhost"].as_table().expect("[mcp_servers.toolhost]");
            let mut keys: Vec<&str> = entry.keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["bearer_token_env_var", "url"], "no token in the file: {text}");
            assert_eq!(entry["bearer_token_env_var"].as_str(), Some("TOOLHOST_TOKEN"));
            // Codex sends the variable's value as a bearer token.
            Remote {
                url: entry["url"].as_str().unwrap().into(),
                authorization: Some(format!("Bearer {token}")),
            }
        }
        _ => {
            let doc: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
            let (entry, resolve): (&Value, Resolve<'_>) = match client {
                "cursor" => (
                    json_entry(&doc, &["mcpServers"], "mcpServers"),
                    Box::new(|h| h.replace("${env:TOOLHOST_TOKEN}", token)),
                ),
                "vscode" => {
                    let entry = json_entry(&doc, &["inputs", "servers"], "servers");
                    let input = &doc["inputs"][0];
                    assert_eq!(input["type"], "promptString", "{doc}");
                    assert_eq!(input["password"], true, "{doc}");
                    assert_eq!(entry["type"], "http", "{doc}");
                    let id = input["id"].as_str().expect("an input id").to_string();
                    (entry, Box::new(move |h| h.replace(&format!("${{input:{id}}}"), token)))
                }
                "zed" => {
                    (json_entry(&doc, &["context_servers"], "context_servers"), Box::new(str::to_string))
                }
                other => panic!("no shape for {other}"),
            };
            let headers = string_map(&entry["headers"], "headers");
            assert_eq!(headers.keys().collect::<Vec<_>>(), ["Authorization"], "{doc}");
            Remote {
                url: entry["url"].as_str().expect("url is a string").into(),
                authorization: Some(resolve(&headers["Authorization"])),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_config_reaches_the_server_with_its_token() {
    let work = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server =
        Instance::start("agents", work.path(), &["--token-file", token_file.to_str().unwrap()]).await;
    let url = server.url();

    // Without the header the server refuses: the header is what lets a client in.
    let bare = http_client().build().unwrap();
    let refused = modern_request(&bare, &url, 1, "tools/list", json!({})).await;
    assert!(refused.as_ref().is_err_and(|e| e.starts_with("HTTP 401")), "{refused:?}");

    for client in ["claude-code", "codex", "cursor", "vscode", "zed"] {
        let text =
            printed(&mcp_config(&[client, "--http", &url, "--token-file", token_file.to_str().unwrap()]));
        // Only Zed's file holds the token itself (Zed reads no variable there).
        assert_eq!(text.contains(TOKEN), client == "zed", "{client}: {text}");
        let remote = http_remote(client, &text, TOKEN);
        assert_eq!(remote.url, url, "{client}");
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(value) = &remote.authorization {
            headers.insert("authorization", value.parse().unwrap());
        }
        let client_http = http_client().default_headers(headers).build().unwrap();
        let listed = modern_request(&client_http, &remote.url, 2, "tools/list", json!({}))
            .await
            .unwrap_or_else(|e| panic!("{client}: {e}"));
        let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{client}: {listed}"));
        assert!(tools.iter().any(|t| t["name"] == "read_file"), "{client}: {listed}");
    }

    // Claude Desktop's file starts local servers only: refused, saying so.
    let out = mcp_config(&["claude-desktop", "--http", &url, "--token-file", token_file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdio"), "{out:?}");
}

#[test]
fn bad_names_urls_and_token_files_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let loose = dir.path().join("token");
    std::fs::write(&loose, TOKEN).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["codex", "--name", "a b"], "--name"),
        (&["cursor", "--http", "ftp://127.0.0.1/mcp"], "http:// or https://"),
        (&["zed", "--http", "http://127.0.0.1:1/mcp", "--token-file", loose.to_str().unwrap()], "token"),
        (&["nobody"], "claude-code"),
    ];
    for (args, expected) in cases {
        let out = mcp_config(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
