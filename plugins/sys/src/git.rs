//! `git`: read-only inspection of the repository in the work dir
//! (`status`, `diff`, `log`).
//!
//! There is no free-form argument: the argument vector is built here from a
//! closed set of choices ([`argv`]), always behind options that keep git
//! from starting other programs or writing (no pager, no external diff or
//! textconv, no hooks, no fsmonitor, no optional locks), and pathspecs come
//! after `--`. So no other subcommand, option or `-c` setting is reachable.

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::exec::{self, Command, Outcome};
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Inspect the git repository in the work directory, read-only. `command` is one of: \
`status` (short status with the branch line), `diff` (unstaged changes as a unified diff; `staged: true` for what is \
staged), `log` (the last `n` commits, default 20, one line each: hash, date, author, subject). `paths` limits any of \
them to some files or directories (relative to the work directory). Nothing else can be run through this tool: it \
never changes the repository. Long output is cut in the middle (head and tail kept).";

/// Options given to git before every subcommand: no pager, no optional
/// locks (so `status` does not write the index), and configuration that
/// would start other programs switched off whatever the repository says
/// (`log.showSignature` would run `gpg.program`). The clean filters a
/// repository's attributes may name cannot all be switched off; what they
/// run is confined like git itself, with a read-only work dir (the tool is
/// read-only).
pub const HARDENING: [&str; 12] = [
    "--no-pager",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.pager=cat",
    "-c",
    "log.showSignature=false",
];

/// Default `n` for `log`.
pub const DEFAULT_LOG_COUNT: u32 = 20;
/// Largest `n` for `log`.
pub const MAX_LOG_COUNT: u32 = 200;
/// Most `paths` accepted.
pub const MAX_PATHS: usize = 100;

/// The inspections this tool can run: `status` (`git status --short
/// --branch`), `diff` (`git diff`, or `--staged`, no external tools) and
/// `log` (`git log -n N`, one line per commit).
///
/// The variants have no doc comments on purpose: with them, schemars writes
/// a `oneOf` of constants instead of one `{"type": "string", "enum": [...]}`,
/// and the host coerces and validates by a property's plain `type`.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars", inline)]
#[serde(rename_all = "lowercase")]
pub enum GitCommand {
    Status,
    Diff,
    Log,
}

/// Arguments of `git`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to run: "status", "diff" or "log".
    pub command: GitCommand,
    /// Only with diff: show the staged changes (the index against HEAD) instead of the unstaged ones.
    #[serde(default)]
    #[schemars(with = "bool", extend("default" = false))]
    pub staged: Option<bool>,
    /// Only with log: how many commits to show, 1 to 200. Default 20.
    #[serde(default)]
    #[schemars(with = "u32", range(min = 1, max = 200), extend("default" = 20))]
    pub n: Option<u32>,
    /// Limit the output to these files or directories, relative to the work directory. Default: everything.
    #[serde(default)]
    pub paths: Vec<String>,
}

/// Run `git`: build the argument vector with [`argv`], run git through the
/// host, and return its output (`command_failed` with git's stderr when it
/// exits non-zero).
pub fn run(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
    let argv = argv(&args)?;
    let outcome = exec::run(&Command::program("git", argv))?;
    render(args.command, outcome)
}

/// The arguments given to `git` for `args`: [`HARDENING`], the subcommand
/// with fixed options, then `--` and the checked paths. Refuses
/// (`invalid_args`) `staged: true` outside `diff`, `n` outside `log`, and a
/// path that is empty, absolute, starts with `-` or `:`, or has a `..`
/// component.
pub fn argv(args: &Args) -> Result<Vec<String>, ToolError> {
    if args.staged == Some(true) && args.command != GitCommand::Diff {
        return Err(ToolError::invalid_args("staged only applies to command \"diff\""));
    }
    if args.n.is_some() && args.command != GitCommand::Log {
        return Err(ToolError::invalid_args("n only applies to command \"log\""));
    }
    let mut argv: Vec<String> = HARDENING.iter().map(|s| (*s).to_string()).collect();
    let words: &[&str] = match args.command {
        GitCommand::Status => &["status", "--short", "--branch"],
        GitCommand::Diff => &["diff", "--no-ext-diff", "--no-textconv", "--no-color"],
        GitCommand::Log => &["log"],
    };
    argv.extend(words.iter().map(|s| (*s).to_string()));
    match args.command {
        GitCommand::Status => {}
        GitCommand::Diff => {
            if args.staged == Some(true) {
                argv.push("--staged".into());
            }
        }
        GitCommand::Log => {
            let n = args.n.unwrap_or(DEFAULT_LOG_COUNT);
            if !(1..=MAX_LOG_COUNT).contains(&n) {
                return Err(ToolError::invalid_args(format!(
                    "n must be between 1 and {MAX_LOG_COUNT}, not {n}"
                )));
            }
            argv.extend(
                [
                    "-n",
                    &n.to_string(),
                    "--no-color",
                    "--no-ext-diff",
                    "--format=%h %ad %an %s",
                    "--date=short",
                ]
                .map(String::from),
            );
        }
    }
    if !args.paths.is_empty() {
        if args.paths.len() > MAX_PATHS {
            return Err(ToolError::invalid_args(format!(
                "at most {MAX_PATHS} paths, not {}",
                args.paths.len()
            )));
        }
        argv.push("--".into());
        for path in &args.paths {
            check_path(path)?;
            argv.push(path.clone());
        }
    }
    Ok(argv)
}

/// Refuse a pathspec that is not a plain relative path inside the work dir.
fn check_path(path: &str) -> Result<(), ToolError> {
    let why = if path.is_empty() {
        "is empty"
    } else if path.contains('\0') {
        "contains a NUL byte"
    } else if path.starts_with('-') {
        "starts with '-'"
    } else if path.starts_with(':') {
        "starts with ':' (pathspec magic is not accepted)"
    } else if path.starts_with('/') || path.starts_with('\\') {
        "is absolute; give it relative to the work directory"
    } else if path.split(['/', '\\']).any(|part| part == "..") {
        "has a '..' component"
    } else {
        return Ok(());
    };
    Err(ToolError::invalid_args(format!("path {path:?} {why}")))
}

/// The tool result for git's `outcome`.
pub fn render(command: GitCommand, outcome: Outcome) -> Result<Output, ToolError> {
    if outcome.cancelled || outcome.timed_out {
        return outcome.into_tool_result();
    }
    let stderr = outcome.stderr.text();
    if !outcome.succeeded() {
        let mut message = stderr.trim_end().to_string();
        if message.is_empty() {
            message = outcome.stdout.text().trim_end().to_string();
        }
        message.push('\n');
        message.push_str(&outcome.status_line());
        return Err(ToolError::new(codes::COMMAND_FAILED, format!("git failed:\n{message}")));
    }
    let mut content = outcome.stdout.text().into_owned();
    if content.trim().is_empty() {
        content = match command {
            GitCommand::Status => "(clean)\n",
            GitCommand::Diff => "(no differences)\n",
            GitCommand::Log => "(no commits)\n",
        }
        .to_string();
    }
    if !stderr.trim().is_empty() {
        if !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str("[stderr]\n");
        content.push_str(&stderr);
    }
    let metadata = json!({
        "exit_code": outcome.exit_code,
        "duration_ms": outcome.duration_ms,
        "stdout_bytes": outcome.stdout.total_bytes,
        "cut_bytes": outcome.stdout.cut_bytes + outcome.stderr.cut_bytes,
    });
    Ok(Output::text(content).with_metadata(metadata))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_guest::exec::Captured;

    fn parse(value: serde_json::Value) -> Args {
        serde_json::from_value(value).unwrap()
    }

    fn tail(argv: &[String]) -> Vec<&str> {
        assert_eq!(argv[..HARDENING.len()], HARDENING, "{argv:?}");
        argv[HARDENING.len()..].iter().map(String::as_str).collect()
    }

    #[test]
    fn every_command_starts_with_the_hardening_options() {
        let status = argv(&parse(json!({"command": "status"}))).unwrap();
        assert_eq!(tail(&status), ["status", "--short", "--branch"]);
        let diff = argv(&parse(json!({"command": "diff"}))).unwrap();
        assert_eq!(tail(&diff), ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]);
        let staged =
            argv(&parse(json!({"command": "diff", "staged": true, "paths": ["src", "a b.rs"]}))).unwrap();
        assert_eq!(
            tail(&staged),
            ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--staged", "--", "src", "a b.rs"]
        );
        let log = argv(&parse(json!({"command": "log"}))).unwrap();
        assert_eq!(
            tail(&log),
            ["log", "-n", "20", "--no-color", "--no-ext-diff", "--format=%h %ad %an %s", "--date=short"]
        );
        let log5 = argv(&parse(json!({"command": "log", "n": 5, "paths": ["README.md"]}))).unwrap();
        assert_eq!(tail(&log5)[..3], ["log", "-n", "5"]);
        assert_eq!(tail(&log5)[7..], ["--", "README.md"]);
        let status_paths = argv(&parse(json!({"command": "status", "paths": ["docs/"]}))).unwrap();
        assert_eq!(tail(&status_paths)[3..], ["--", "docs/"]);
    }

    #[test]
    fn paths_that_are_options_or_leave_the_work_dir_are_refused() {
        for bad in [
            "--output=x",
            "-c",
            "-",
            "../x",
            "a/../../x",
            "..",
            "/etc",
            "/etc/passwd",
            ":(top)x",
            ":/",
            "",
            "a\0b",
        ] {
            let err = argv(&parse(json!({"command": "diff", "paths": ["ok", bad]}))).unwrap_err();
            assert_eq!(err.code, codes::INVALID_ARGS, "{bad:?}");
        }
        for good in ["src", "a/b.rs", "x-y", "dir/-starts-later", "..hidden", "a..b", "./src"] {
            assert!(argv(&parse(json!({"command": "log", "paths": [good]}))).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn nothing_but_the_three_commands_parses() {
        for bad in [
            json!({"command": "push"}),
            json!({"command": "config"}),
            json!({"command": "-c x"}),
            json!({"command": "Status"}),
            json!({"command": "status", "args": ["--help"]}),
            json!({"command": "diff", "extra": "-c core.pager=sh"}),
            json!({}),
        ] {
            assert!(serde_json::from_value::<Args>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn options_only_with_their_command() {
        let err = argv(&parse(json!({"command": "status", "staged": true}))).unwrap_err();
        assert!(err.message.contains("staged"), "{}", err.message);
        assert!(argv(&parse(json!({"command": "log", "staged": false}))).is_ok());
        let err = argv(&parse(json!({"command": "diff", "n": 3}))).unwrap_err();
        assert!(err.message.contains("n only"), "{}", err.message);
        for n in [0, 201] {
            assert_eq!(
                argv(&parse(json!({"command": "log", "n": n}))).unwrap_err().code,
                codes::INVALID_ARGS
            );
        }
        let many: Vec<String> = (0..=MAX_PATHS).map(|i| format!("f{i}")).collect();
        assert_eq!(
            argv(&parse(json!({"command": "status", "paths": many}))).unwrap_err().code,
            codes::INVALID_ARGS
        );
    }

    #[test]
    fn the_schema_has_an_enum_of_the_three_commands() {
        let schema = toolhost_guest::schemars::schema_for!(Args).to_value();
        assert_eq!(schema["properties"]["command"]["type"], "string");
        assert_eq!(schema["properties"]["command"]["enum"], json!(["status", "diff", "log"]));
        assert_eq!(schema["properties"]["n"]["type"], "integer");
        assert_eq!(schema["properties"]["n"]["default"], DEFAULT_LOG_COUNT);
        assert_eq!(schema["properties"]["staged"]["type"], "boolean");
        assert_eq!(schema["properties"]["staged"]["default"], false);
        assert_eq!(schema["required"], json!(["command"]));
    }

    fn outcome(exit: i32, stdout: &str, stderr: &str) -> Outcome {
        let cap =
            |s: &str| Captured { data: s.as_bytes().to_vec(), total_bytes: s.len() as u64, cut_bytes: 0 };
        Outcome {
            exit_code: Some(exit),
            signal: None,
            stdout: cap(stdout),
            stderr: cap(stderr),
            duration_ms: 3,
            timed_out: false,
            cancelled: false,
        }
    }

    #[test]
    fn renders_output_and_failures() {
        let out = render(GitCommand::Status, outcome(0, "## main\n M a.rs\n", "")).unwrap();
        assert_eq!(out.content, "## main\n M a.rs\n");
        assert_eq!(out.metadata.unwrap()["exit_code"], 0);
        assert_eq!(render(GitCommand::Diff, outcome(0, "", "")).unwrap().content, "(no differences)\n");
        let warned = render(GitCommand::Diff, outcome(0, "d", "warning: x\n")).unwrap();
        assert_eq!(warned.content, "d\n[stderr]\nwarning: x\n");
        let err = render(GitCommand::Log, outcome(128, "", "fatal: not a git repository\n")).unwrap_err();
        assert_eq!(err.code, codes::COMMAND_FAILED);
        assert_eq!(err.message, "git failed:\nfatal: not a git repository\n[exit 128]");
        let mut slow = outcome(0, "partial", "");
        (slow.exit_code, slow.signal, slow.timed_out) = (None, Some(9), true);
        assert_eq!(render(GitCommand::Log, slow).unwrap_err().code, codes::TIMEOUT);
    }
}
