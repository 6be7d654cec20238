//! Starting programs outside wasm through the host (`toolhost:plugin/exec`).
//!
//! A plugin that calls [`run`] imports the interface; the host then only
//! loads it when its policy grants `exec` (the programs it may start, and
//! whether it may use the shell). The host confines every child, not the
//! tool: it sees the work dir (read-write only when the call may write) and
//! read-only system directories, has no network, starts with an empty
//! environment (a fixed `PATH`, `HOME` = the work dir, granted variables
//! only), and is killed with everything it started at its deadline or when
//! the call is cancelled.
//!
//! ```ignore
//! use toolhost_guest::exec::{self, Command};
//!
//! let outcome = exec::run(&Command::program("git", ["status", "--short"]).timeout_ms(10_000))?;
//! outcome.into_tool_result() // `[exit N]` at the end; ok only for exit 0
//! ```

use std::borrow::Cow;

pub use crate::bindings::toolhost::plugin::exec::{
    Captured, Command, ExecError, Invocation, Outcome, Program,
};
use crate::error::{ToolError, codes};
use crate::export::Output;

impl Command {
    /// Run the allow-listed program `name` (a bare name such as `git`, never
    /// a path) with `args`, passed as a vector: no shell sees them.
    pub fn program<I, S>(name: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let program = Program { name: name.into(), args: args.into_iter().map(Into::into).collect() };
        Self::new(Invocation::Program(program))
    }

    /// Run `line` with `bash -c` (only with the grant's shell profile).
    pub fn shell(line: impl Into<String>) -> Self {
        Self::new(Invocation::Shell(line.into()))
    }

    fn new(invocation: Invocation) -> Self {
        Self {
            invocation,
            cwd: None,
            env: Vec::new(),
            stdin: None,
            timeout_ms: None,
            max_output_bytes: None,
            merge_stderr: false,
        }
    }

    /// Run in `dir`: relative to the work dir, or an absolute guest path
    /// under it. By default the child runs in the work dir itself.
    pub fn cwd(mut self, dir: impl Into<String>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Set an environment variable; the plugin must be granted `name`.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Write `bytes` to the child's stdin, then close it (by default stdin is
    /// empty).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Kill the child after `ms` milliseconds (the host clamps it to what is
    /// left of the call).
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// Keep at most `bytes` of each of stdout and stderr, head and tail (the
    /// host clamps it to its own maximum).
    pub fn max_output_bytes(mut self, bytes: u64) -> Self {
        self.max_output_bytes = Some(bytes);
        self
    }

    /// Send stderr into stdout, so both arrive in the order the child wrote
    /// them ([`Outcome::stderr`] is then empty).
    pub fn merge_stderr(mut self, merge: bool) -> Self {
        self.merge_stderr = merge;
        self
    }
}

impl Captured {
    /// The bytes kept, as text (invalid UTF-8 replaced by `U+FFFD`).
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.data)
    }
}

impl Outcome {
    /// The child exited on its own with status 0.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }

    /// How the child ended, as the last line of a transcript: `[exit N]`,
    /// or `[signal N]` when a signal ended it.
    pub fn status_line(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(code), _) => format!("[exit {code}]"),
            (None, Some(signal)) => format!("[signal {signal}]"),
            (None, None) => "[no exit status]".to_string(),
        }
    }

    /// What the model reads: the stdout text, then (when there is any) a
    /// `[stderr]` line and the stderr text, then [`Outcome::status_line`]
    /// on a line of its own.
    pub fn transcript(&self) -> String {
        let mut text = self.stdout.text().into_owned();
        if !self.stderr.data.is_empty() {
            end_line(&mut text);
            text.push_str("[stderr]\n");
            text.push_str(&self.stderr.text());
        }
        end_line(&mut text);
        text.push_str(&self.status_line());
        text
    }

    /// The usual tool result for a command: exit 0 is `Ok` with the
    /// [`Outcome::transcript`] as content and metadata `{exit_code,
    /// duration_ms, stdout_bytes, stderr_bytes, cut_bytes}`; anything else is
    /// an error whose message keeps the output:
    ///
    /// - `cancelled`: the call was cancelled and the child killed;
    /// - `timeout`: the child ran past its time limit and was killed;
    /// - `command_failed`: a non-zero exit status or a signal.
    pub fn into_tool_result(self) -> Result<Output, ToolError> {
        let transcript = self.transcript();
        if self.cancelled {
            return Err(ToolError::new(
                codes::CANCELLED,
                format!(
                    "the call was cancelled and the command was killed; output before that:\n{transcript}"
                ),
            ));
        }
        if self.timed_out {
            return Err(ToolError::new(
                codes::TIMEOUT,
                format!(
                    "the command ran longer than {} ms and was killed; output before that:\n{transcript}",
                    self.duration_ms
                ),
            ));
        }
        if !self.succeeded() {
            return Err(ToolError::new(codes::COMMAND_FAILED, transcript));
        }
        Ok(Output::text(transcript).with_metadata(serde_json::json!({
            "exit_code": self.exit_code,
            "duration_ms": self.duration_ms,
            "stdout_bytes": self.stdout.total_bytes,
            "stderr_bytes": self.stderr.total_bytes,
            "cut_bytes": self.stdout.cut_bytes + self.stderr.cut_bytes,
        })))
    }
}

/// End `text` with a newline unless it is empty or already does.
fn end_line(text: &mut String) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

impl ExecError {
    /// The stable `snake_case` code of this error (see [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::ProgramNotAllowed(_) => codes::PROGRAM_NOT_ALLOWED,
            ExecError::ShellNotAllowed(_) => codes::SHELL_NOT_ALLOWED,
            ExecError::EnvNotAllowed(_) => codes::ENV_NOT_ALLOWED,
            ExecError::BadCwd(_) => codes::BAD_CWD,
            ExecError::Busy(_) => codes::EXEC_BUSY,
            ExecError::SandboxUnavailable(_) => codes::SANDBOX_UNAVAILABLE,
            ExecError::SpawnFailed(_) => codes::SPAWN_FAILED,
        }
    }

    /// The message the host gave.
    pub fn message(&self) -> &str {
        match self {
            ExecError::ProgramNotAllowed(m)
            | ExecError::ShellNotAllowed(m)
            | ExecError::EnvNotAllowed(m)
            | ExecError::BadCwd(m)
            | ExecError::Busy(m)
            | ExecError::SandboxUnavailable(m)
            | ExecError::SpawnFailed(m) => m,
        }
    }
}

impl From<ExecError> for ToolError {
    fn from(err: ExecError) -> Self {
        ToolError::new(err.code(), err.message())
    }
}

/// Start `cmd` through the host and wait until it ends (or its deadline
/// passes). `Ok` means it ran, not that it succeeded: look at
/// [`Outcome::exit_code`], or use [`Outcome::into_tool_result`]. In a native
/// build (unit tests) there is no host: every command fails with
/// `spawn_failed`.
pub fn run(cmd: &Command) -> Result<Outcome, ExecError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::toolhost::plugin::exec::run(cmd)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = cmd;
        Err(ExecError::SpawnFailed("no host: exec only works inside toolhost".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(text: &str, cut: u64) -> Captured {
        Captured { data: text.as_bytes().to_vec(), total_bytes: text.len() as u64 + cut, cut_bytes: cut }
    }

    fn outcome(exit_code: Option<i32>, signal: Option<i32>, stdout: &str, stderr: &str) -> Outcome {
        Outcome {
            exit_code,
            signal,
            stdout: captured(stdout, 0),
            stderr: captured(stderr, 0),
            duration_ms: 12,
            timed_out: false,
            cancelled: false,
        }
    }

    #[test]
    fn builders_fill_the_command() {
        let cmd = Command::program("git", ["status", "--short"])
            .cwd("src")
            .env("LANG", "C")
            .stdin("in")
            .timeout_ms(5)
            .max_output_bytes(10)
            .merge_stderr(true);
        match &cmd.invocation {
            Invocation::Program(p) => assert_eq!(
                (p.name.as_str(), p.args.as_slice()),
                ("git", &["status".to_string(), "--short".to_string()][..])
            ),
            Invocation::Shell(_) => panic!("not a shell command"),
        }
        assert_eq!(cmd.cwd.as_deref(), Some("src"));
        assert_eq!(cmd.env, [("LANG".to_string(), "C".to_string())]);
        assert_eq!(cmd.stdin.as_deref(), Some(&b"in"[..]));
        assert_eq!((cmd.timeout_ms, cmd.max_output_bytes, cmd.merge_stderr), (Some(5), Some(10), true));
        let shell = Command::shell("echo hi");
        assert!(matches!(shell.invocation, Invocation::Shell(ref l) if l == "echo hi"));
        assert_eq!((shell.cwd, shell.stdin, shell.merge_stderr), (None, None, false));
    }

    #[test]
    fn exit_zero_is_ok_with_the_transcript() {
        let out = outcome(Some(0), None, "hello\n", "").into_tool_result().unwrap();
        assert_eq!(out.content, "hello\n[exit 0]");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["exit_code"], 0);
        assert_eq!(meta["duration_ms"], 12);
        assert_eq!(meta["stdout_bytes"], 6);
        assert_eq!(meta["cut_bytes"], 0);
        assert_eq!(outcome(Some(0), None, "", "").into_tool_result().unwrap().content, "[exit 0]");
        let both = outcome(Some(0), None, "out", "warn\n").into_tool_result().unwrap();
        assert_eq!(both.content, "out\n[stderr]\nwarn\n[exit 0]");
    }

    #[test]
    fn failures_keep_the_output() {
        let err = outcome(Some(2), None, "partial", "boom").into_tool_result().unwrap_err();
        assert_eq!(err.code, codes::COMMAND_FAILED);
        assert_eq!(err.message, "partial\n[stderr]\nboom\n[exit 2]");
        let err = outcome(None, Some(11), "", "").into_tool_result().unwrap_err();
        assert_eq!((err.code.as_str(), err.message.as_str()), (codes::COMMAND_FAILED, "[signal 11]"));

        let mut slow = outcome(None, Some(9), "tick\n", "");
        slow.timed_out = true;
        slow.duration_ms = 1000;
        let err = slow.into_tool_result().unwrap_err();
        assert_eq!(err.code, codes::TIMEOUT);
        assert_eq!(
            err.message,
            "the command ran longer than 1000 ms and was killed; output before that:\ntick\n[signal 9]"
        );

        let mut stopped = outcome(None, Some(9), "half", "");
        stopped.cancelled = true;
        let err = stopped.into_tool_result().unwrap_err();
        assert_eq!(err.code, codes::CANCELLED);
        assert!(err.message.ends_with("output before that:\nhalf\n[signal 9]"), "{}", err.message);
    }

    #[test]
    fn cut_bytes_add_up_and_text_is_lossy() {
        let mut o = outcome(Some(0), None, "", "");
        o.stdout = Captured { data: b"a\xffb".to_vec(), total_bytes: 100, cut_bytes: 97 };
        o.stderr = captured("e", 3);
        assert_eq!(o.stdout.text(), "a\u{fffd}b");
        let meta = o.into_tool_result().unwrap().metadata.unwrap();
        assert_eq!((meta["stdout_bytes"].as_u64(), meta["cut_bytes"].as_u64()), (Some(100), Some(100)));
    }

    #[test]
    fn errors_map_to_stable_codes() {
        let cases = [
            (ExecError::ProgramNotAllowed("m".into()), "program_not_allowed"),
            (ExecError::ShellNotAllowed("m".into()), "shell_not_allowed"),
            (ExecError::EnvNotAllowed("m".into()), "env_not_allowed"),
            (ExecError::BadCwd("m".into()), "bad_cwd"),
            (ExecError::Busy("m".into()), "exec_busy"),
            (ExecError::SandboxUnavailable("m".into()), "sandbox_unavailable"),
            (ExecError::SpawnFailed("m".into()), "spawn_failed"),
        ];
        for (err, code) in cases {
            assert_eq!(ToolError::from(err), ToolError::new(code, "m"));
        }
        assert_eq!(run(&Command::shell("true")).unwrap_err().code(), codes::SPAWN_FAILED);
    }
}
