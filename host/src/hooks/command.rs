//! Command hooks: the user's program, started through the exec runtime with the
//! confinement every `terminal` child gets (own network namespace: no network; the
//! work dir read-only for pre-tool-use hooks; protected paths bound read-only). The
//! call goes in as JSON on stdin; exit 0 with nothing or an answer on stdout, exit 2
//! denies with stderr as the reason, anything else is a failure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::HookCall;
use super::answer::{Answer, Input, Verdict, bound};
use crate::imports::CallInfo;
use crate::imports::exec::{ChildLimits, ExecRuntime, SpawnRequest};
use crate::policy::HookEntry;

/// Bytes of each stream kept; an answer longer than this is garbage.
const MAX_HOOK_OUTPUT: usize = 64 << 10;

/// The request keeps a margin before its call's deadline; the hook's own timeout is
/// what should end it.
const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

/// A hook's program, resolved at load.
pub(super) struct CommandHook {
    program: PathBuf,
    arg0: String,
    args: Vec<String>,
}

impl CommandHook {
    /// Resolve `argv[0]`: a path must name an executable file; a bare name is looked
    /// up on `search` (never inside the work dir).
    pub(super) fn new(argv: &[String], search: &[PathBuf], work_dir: Option<&Path>) -> Result<Self, String> {
        let (arg0, args) = argv.split_first().ok_or("the command is empty")?;
        let program = if arg0.contains('/') {
            let path = Path::new(arg0).canonicalize().map_err(|e| format!("program {arg0}: {e}"))?;
            if !is_executable(&path) {
                return Err(format!("program {arg0} is not an executable file"));
            }
            path
        } else {
            let grant =
                crate::imports::exec::ExecGrant { programs: vec![arg0.clone()], ..Default::default() };
            let resolved = grant.resolve(search, work_dir);
            match resolved.program(arg0) {
                Ok(path) => path.to_path_buf(),
                Err(_) => return Err(format!("program `{arg0}` is not installed on the exec search path")),
            }
        };
        Ok(Self { program, arg0: arg0.clone(), args: args.to_vec() })
    }

    /// The program's resolved path.
    pub(super) fn program(&self) -> &Path {
        &self.program
    }

    /// Run it for `call` with `input` on stdin; `writable` lets it write the work dir.
    pub(super) async fn run(
        &self,
        runtime: &ExecRuntime,
        entry: &HookEntry,
        input: &Input,
        call: &HookCall<'_>,
        writable: bool,
    ) -> Result<Answer, String> {
        let cwd = runtime.work_dir().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
        let info = CallInfo {
            plugin: format!("hook {}", entry.label()).into(),
            call_id: call.call_id.into(),
            deadline: Instant::now() + entry.timeout + DEADLINE_MARGIN,
        };
        let limits =
            ChildLimits { output_bytes: MAX_HOOK_OUTPUT as u64, ..runtime.settings().limits.clone() };
        let mut req = SpawnRequest::new(
            self.program.clone(),
            self.arg0.clone(),
            self.args.clone(),
            cwd,
            Some(entry.timeout),
            &info,
            &limits,
        );
        req.env = vec![("TOOLHOST_HOOK_EVENT".into(), entry.event.as_str().into())];
        req.stdin = Some(input.json.to_string().into_bytes());
        req.writable = writable;
        let done = runtime.run(req, call.cancel).await.map_err(|e| e.message().to_string())?;
        let ms = entry.timeout.as_millis();
        if done.cancelled {
            return Err("the call was cancelled while the hook ran".into());
        }
        if done.timed_out {
            return Err(format!("it ran longer than its {ms} ms and was killed"));
        }
        let mut stderr = done.stderr.text().trim().to_string();
        bound(&mut stderr);
        match (done.exit_code, done.signal) {
            (Some(0), _) => {
                if done.stdout.cut_bytes > 0 {
                    return Err(format!(
                        "it printed {} bytes; an answer is at most {MAX_HOOK_OUTPUT}",
                        done.stdout.total_bytes
                    ));
                }
                Answer::from_json(&done.stdout.text())
            }
            (Some(2), _) => Ok(Answer {
                decision: Some(Verdict::Deny),
                reason: Some(if stderr.is_empty() { "it exited with status 2".into() } else { stderr }),
                ..Answer::default()
            }),
            (Some(code), _) => Err(with_stderr(format!("it exited with status {code}"), &stderr)),
            (None, Some(signal)) => Err(with_stderr(format!("it was killed by signal {signal}"), &stderr)),
            (None, None) => Err("it ended without a status".into()),
        }
    }
}

fn with_stderr(what: String, stderr: &str) -> String {
    if stderr.is_empty() { what } else { format!("{what}: {stderr}") }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
