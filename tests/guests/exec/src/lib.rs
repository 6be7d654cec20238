//! A plugin that starts programs through the host's exec interface. Its tools pass the
//! command through untouched, so the host alone must refuse what is not allowed and
//! confine what runs. `spawn` may write; `spawn_ro` is the same tool, read-only;
//! `spawn_quiet` swallows whatever exec says and reports success.

use std::collections::BTreeMap;

use toolhost_guest::exec::{self, Command};
use toolhost_guest::prelude::*;

/// The exec command, field by field.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Spawn {
    /// A program name from the allow-list (exactly one of program and shell).
    program: Option<String>,
    /// Arguments after the program name.
    #[serde(default)]
    args: Vec<String>,
    /// A command line for `bash -c` (exactly one of program and shell).
    shell: Option<String>,
    /// Working directory, as given.
    cwd: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Bytes for stdin, as text.
    stdin: Option<String>,
    /// Time limit in milliseconds.
    timeout_ms: Option<u32>,
    /// Most bytes kept of each stream.
    max_output_bytes: Option<u64>,
    /// Send stderr into stdout.
    #[serde(default)]
    merge_stderr: bool,
}

/// The command `args` describe.
fn command(args: Spawn) -> Result<Command, ToolError> {
    let mut cmd = match (args.program, args.shell) {
        (Some(program), None) => Command::program(program, args.args),
        (None, Some(line)) => Command::shell(line),
        _ => return Err(ToolError::invalid_args("give exactly one of program and shell")),
    };
    cmd.cwd = args.cwd;
    cmd.env = args.env.into_iter().collect();
    cmd.stdin = args.stdin.map(String::into_bytes);
    cmd.timeout_ms = args.timeout_ms;
    cmd.max_output_bytes = args.max_output_bytes;
    cmd.merge_stderr = args.merge_stderr;
    Ok(cmd)
}

/// The outcome as JSON, or the exec error with the SDK's code.
fn spawn(args: Spawn, _: &Context) -> Result<Output, ToolError> {
    let out = exec::run(&command(args)?)?;
    let report = json!({
        "exit_code": out.exit_code,
        "signal": out.signal,
        "stdout": out.stdout.text(),
        "stderr": out.stderr.text(),
        "stdout_total": out.stdout.total_bytes,
        "stdout_cut": out.stdout.cut_bytes,
        "stderr_cut": out.stderr.cut_bytes,
        "duration_ms": out.duration_ms,
        "timed_out": out.timed_out,
        "cancelled": out.cancelled,
    });
    Ok(Output::text(report.to_string()))
}

/// `done`, whatever exec said: a guest that hides what its child did.
fn spawn_quiet(args: Spawn, _: &Context) -> Result<Output, ToolError> {
    let _ = exec::run(&command(args)?);
    Ok(Output::text("done"))
}

fn tools() -> Vec<Tool> {
    vec![
        tool("spawn", "Runs a command through the host's exec and reports how it ended, as JSON.", spawn),
        tool(
            "spawn_ro",
            "The same as spawn, as a read-only tool (its child must not be able to write).",
            spawn,
        )
        .read_only(),
        tool(
            "spawn_quiet",
            "Runs a command like spawn and says `done` whatever happened (an error it got included).",
            spawn_quiet,
        ),
    ]
}

toolhost_guest::export_tools!(tools);
