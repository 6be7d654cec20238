//! The subcommands. Each returns the exit status for a normal outcome, or an
//! error for a usage or load problem (exit 2).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use toolhost::ToolCall;

use super::HostArgs;

/// `toolhost list`
pub(crate) async fn list(args: &HostArgs, as_json: bool, long: bool) -> anyhow::Result<ExitCode> {
    let host = args.build(false, false).await?;
    // The MCP servers' tools are known once they run.
    for (server, error) in host.start_servers().await {
        eprintln!("toolhost: MCP server {server} not started: {error}");
    }
    let mut out = std::io::stdout().lock();
    if as_json {
        let tools: Vec<Value> = host
            .registry()
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(t.spec()).unwrap_or(Value::Null);
                v["plugin"] = json!(t.source());
                v
            })
            .collect();
        let plugins: Vec<Value> = host
            .plugins()
            .iter()
            .map(|p| {
                let grants = p.grants();
                json!({
                    "name": p.name(),
                    "sha256": p.sha256(),
                    "imports": p.imports(),
                    "cached": p.from_cache(),
                    "grants": {
                        "filesystem": grants.fs.as_str(),
                        "read_dirs": grants.read_dirs,
                        "network": p.network().map(|n| n.hosts.iter().map(|h| h.as_str().to_owned()).collect::<Vec<_>>()),
                        "env": grants.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
                        "sockets": grants.sockets,
                        "exec": p.exec().map(|_| &grants.exec),
                        "memory_bytes": grants.limits.memory_bytes,
                        "timeout_ms": grants.limits.timeout.as_millis() as u64,
                    },
                })
            })
            .collect();
        let limits = host.limits();
        let doc = json!({
            "tools": tools,
            "plugins": plugins,
            "work_dir": host.work_dir(),
            "limits": {
                "memory_bytes": limits.memory_bytes,
                "fuel": limits.fuel,
                "timeout_ms": limits.timeout.as_millis() as u64,
                "max_timeout_ms": limits.max_timeout.as_millis() as u64,
                "output_bytes": limits.output_bytes,
                "clamp_bytes": limits.clamp_bytes,
            },
            "network": network_json(host.network()),
            "permissions": {
                "mode": host.permissions().mode.as_str(),
                "allow": host.permissions().allow.iter().map(|r| r.as_str().to_owned()).collect::<Vec<_>>(),
                "deny": host.permissions().deny.iter().map(|r| r.as_str().to_owned()).collect::<Vec<_>>(),
            },
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        let registry = host.registry();
        let tools: Vec<&toolhost::Tool> = registry.iter().map(|t| &**t).collect();
        if long { super::list::long(&mut out, &tools)? } else { super::list::short(&mut out, &tools)? }
    }
    Ok(ExitCode::SUCCESS)
}

/// Who may fetch what: the private-target opt-out and the host patterns.
fn network_json(net: &toolhost::NetworkSettings) -> Value {
    let patterns = |p: &[toolhost::HostPattern]| p.iter().map(|p| p.as_str().to_owned()).collect::<Vec<_>>();
    json!({
        "allow_private": net.allow_private,
        "builtin_hosts": patterns(&net.builtin_hosts),
        "plugin_hosts": patterns(&net.plugin_hosts),
    })
}

/// `toolhost call NAME ARGS_JSON`
pub(crate) async fn call(
    args: &HostArgs,
    name: &str,
    json_args: Option<&str>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let parsed: Value = match json_args {
        None => json!({}),
        Some(text) => {
            serde_json::from_str(text).with_context(|| format!("ARGS_JSON is not valid JSON: {text}"))?
        }
    };
    if !parsed.is_object() {
        bail!("ARGS_JSON must be a JSON object, got: {parsed}");
    }
    let host = args.build(true, true).await?;
    let result = host.execute(ToolCall::new(name, parsed)).await;
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
    } else if result.ok {
        write!(out, "{}", result.output)?;
        if !result.output.ends_with('\n') && !result.output.is_empty() {
            writeln!(out)?;
        }
        if let Some(image) = &result.image {
            writeln!(
                out,
                "[image: {}, {} bytes (not shown here; MCP clients get it as image content)]",
                image.mime_type, image.bytes
            )?;
        }
    } else if let Some(err) = &result.error {
        eprintln!("{err}");
    }
    Ok(if result.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `toolhost serve`: an MCP server on stdio until the client closes stdin
/// (stdout carries only the protocol), or with `--http` on Streamable HTTP until
/// the process is stopped (calls in flight end with it; the journal has their begins).
pub(crate) async fn serve(args: &HostArgs, serve: &super::ServeArgs) -> anyhow::Result<ExitCode> {
    // Settings first: a bad flag, token or key file fails before plugins load;
    // one inside the work dir is not read at all.
    serve.refuse_inside(&args.work_dir)?;
    let http = serve.settings()?;
    let key = serve.state_key()?;
    // stdin is the protocol (or not a person's): nobody can be asked on it; the
    // client's user is asked instead, through the client.
    let builder = serve.store(args.builder(false, true)?)?.compile_in_background(!serve.eager);
    let host = std::sync::Arc::new(builder.build().await?);
    super::journal::warn_indeterminate(&host);
    if serve.eager {
        for (server, error) in host.start_servers().await {
            eprintln!("toolhost: MCP server {server} not started: {error}");
        }
    }
    let server = toolhost::ToolhostServer::new(host.clone()).with_approvals(serve.approvals(&host, key));
    let Some(settings) = http else {
        toolhost::serve_stdio(server).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let server = toolhost::HttpServer::bind(server, settings).await?;
    eprintln!("toolhost: serving MCP on http://{}/mcp", server.local_addr());
    server.run().await?;
    Ok(ExitCode::SUCCESS)
}

/// `toolhost restore ARTIFACT [--path P]`: exit 0 restored, 1 refused (the code and
/// why on stderr).
pub(crate) async fn restore(args: &HostArgs, artifact: &str, path: Option<&str>) -> anyhow::Result<ExitCode> {
    let host = args.build(false, false).await?;
    match host.restore_artifact(artifact, path) {
        Ok(message) => {
            println!("{message}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("{}: {}", err.code, err.message);
            Ok(ExitCode::from(1))
        }
    }
}
