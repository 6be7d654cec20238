//! `terminal`: one shell command line, run with `bash -c` in the host's
//! confined child process, stdout and stderr interleaved.

use crate::changes::{self, Report, Snapshot};
use serde::Deserialize;
use toolhost_guest::exec::{self, Command};
use toolhost_guest::{Context, JsonSchema, Output, ToolError};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Run a shell command line with `bash -c` in the work directory (or `cwd` inside it) \
and return what it printed, stdout and stderr interleaved in the order they were written, followed by a last line \
`[exit N]` (or `[signal N]`). It runs in a sandbox: it sees only the work directory (and read-only system \
directories), has no network access, starts with a minimal environment (HOME is the work directory), gets no stdin, \
and is killed together with everything it started after `timeout_ms` (default 120000, at most 600000). Very long \
output is cut in the middle: the head and the tail are kept with a marker saying how much was left out, so \
redirect big outputs to a file and search it. The output of a recognised build, test or install (cargo, pytest, \
npm, go, make, …) is shaped: passing tests, progress and build steps are folded into markers naming read_output, \
and every error, warning, panic and summary line is kept; `raw: true` returns it as printed. Exit status 0 is success; any other status fails with code \
`command_failed`, and a command killed at its limit fails with `timeout`; both keep the output. Do not start \
servers, watchers or interactive programs: the call waits until the command exits. In a git repository, the \
files the command changed (modified, created, deleted; not those that were already dirty and left alone) are \
listed after the output, with line counts, and in `metadata.changed`. To read, search or edit files, prefer the \
file tools.";

/// Default time limit of a command, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u32 = 120_000;
/// Longest time limit a command may ask for, in milliseconds; also the
/// tool's own call deadline, so the host lets the call run that long.
pub const MAX_TIMEOUT_MS: u32 = 600_000;
/// Longest command line accepted, in bytes.
pub const MAX_COMMAND_BYTES: usize = 100 * 1024;

/// Arguments of `terminal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line to run with bash -c, e.g. "cargo test 2>&1 | tail -n 50". At most 100 KB.
    pub command: String,
    /// Time limit in milliseconds, 1 to 600000; the command is killed when it passes. Default 120000.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: u32,
    /// Directory to run in, relative to the work directory (which is the default).
    #[serde(default)]
    pub cwd: String,
    /// Return the output as printed, not shaped: by default the host folds the passing tests, progress and build steps of a recognised build, test or install log into markers naming read_output (every error, warning and summary line is kept).
    #[serde(default)]
    pub raw: bool,
}

fn default_timeout() -> u32 {
    DEFAULT_TIMEOUT_MS
}

/// Run `terminal`: check the arguments, run the command through the host,
/// and report it with [`toolhost_guest::exec::Outcome::into_tool_result`].
///
/// In a git work dir, the files the command changed are appended (see
/// [`crate::changes`]): to the output and as `metadata.changed` when it
/// succeeded, to the error message when it failed or timed out.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    let cmd = command(&args, ctx)?;
    let before = Snapshot::take(ctx);
    let outcome = exec::run(&cmd)?;
    let cancelled = outcome.cancelled;
    let result = outcome.into_tool_result();
    let Some(before) = before.filter(|_| !cancelled) else { return result };
    let Some((changes, head)) = before.changes(ctx) else { return result };
    let stats = changes::stats(ctx, &changes, before.has_head());
    let Some(report) = Report::new(&changes, head, &stats) else { return result };
    match result {
        Ok(output) => Ok(report.attach(output)),
        Err(mut err) => {
            err.message.push_str(&report.text);
            Err(err)
        }
    }
}

/// The command `args` ask for, or why they are refused (nothing runs).
pub fn command(args: &Args, ctx: &Context) -> Result<Command, ToolError> {
    if args.command.trim().is_empty() {
        return Err(ToolError::invalid_args("command is empty"));
    }
    if args.command.len() > MAX_COMMAND_BYTES {
        return Err(ToolError::invalid_args(format!(
            "command is {} bytes; at most {MAX_COMMAND_BYTES} are accepted (put a long script in a file and run that)",
            args.command.len()
        )));
    }
    if args.command.contains('\0') {
        return Err(ToolError::invalid_args("command contains a NUL byte"));
    }
    if !(1..=MAX_TIMEOUT_MS).contains(&args.timeout_ms) {
        return Err(ToolError::invalid_args(format!(
            "timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, not {}",
            args.timeout_ms
        )));
    }
    let mut cmd = Command::shell(args.command.as_str()).timeout_ms(args.timeout_ms).merge_stderr(true);
    if let Some(dir) = crate::work_dir_relative(ctx, &args.cwd)? {
        cmd = cmd.cwd(dir);
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use toolhost_guest::codes;
    use toolhost_guest::exec::Invocation;

    fn ctx() -> Context {
        Context::new("t", Some(PathBuf::from("/work")))
    }

    fn args(command: &str) -> Args {
        serde_json::from_value(serde_json::json!({ "command": command })).unwrap()
    }

    #[test]
    fn a_shell_command_merged_with_the_default_timeout() {
        let cmd = command(&args("echo hi; ls"), &ctx()).unwrap();
        assert!(matches!(cmd.invocation, Invocation::Shell(ref l) if l == "echo hi; ls"));
        assert_eq!((cmd.timeout_ms, cmd.merge_stderr, cmd.cwd), (Some(DEFAULT_TIMEOUT_MS), true, None));
        assert!(cmd.env.is_empty() && cmd.stdin.is_none());
    }

    #[test]
    fn cwd_is_passed_relative_to_the_work_dir() {
        let mut a = args("pwd");
        for (given, sent) in
            [("src", Some("src")), ("./src/../lib/", Some("lib")), (".", None), ("/work/x", Some("x"))]
        {
            a.cwd = given.to_string();
            assert_eq!(command(&a, &ctx()).unwrap().cwd.as_deref(), sent, "{given}");
        }
        for bad in ["..", "../x", "/etc", "src/../../x"] {
            a.cwd = bad.to_string();
            assert_eq!(command(&a, &ctx()).unwrap_err().code, codes::PATH_ESCAPE, "{bad}");
        }
    }

    #[test]
    fn refuses_unusable_arguments() {
        let long = "x".repeat(MAX_COMMAND_BYTES + 1);
        for bad in ["", "  \n", "a\0b", long.as_str()] {
            assert_eq!(command(&args(bad), &ctx()).unwrap_err().code, codes::INVALID_ARGS);
        }
        assert!(command(&args(&"x".repeat(MAX_COMMAND_BYTES)), &ctx()).is_ok());
        let mut a = args("true");
        for bad in [0, MAX_TIMEOUT_MS + 1] {
            a.timeout_ms = bad;
            assert_eq!(command(&a, &ctx()).unwrap_err().code, codes::INVALID_ARGS);
        }
    }

    #[test]
    fn without_a_work_dir_only_the_default_cwd_works() {
        let none = Context::new("t", None);
        assert!(command(&args("true"), &none).is_ok());
        let mut a = args("true");
        a.cwd = "src".into();
        assert_eq!(command(&a, &none).unwrap_err().code, codes::NO_FILESYSTEM);
    }
}
