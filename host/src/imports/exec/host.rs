//! The WIT-facing glue: `toolhost:plugin/exec` on the per-call state. It checks the
//! request against the call's capability (program or shell, cwd inside the work dir,
//! granted env names), turns it into a [`SpawnRequest`] and the outcome back into
//! WIT records.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::MAX_CHILD_TIME;
use super::grant::Refusal;
use super::spawn::{Captured, Finished, SpawnError, SpawnRequest};
use wasmtime::component::{HasData, Linker};

use super::ExecAccess;
use crate::bindings::toolhost::plugin::exec as wit;
use crate::imports::{CallInfo, FsAccess};

/// Time kept back from the call's deadline so a child killed at its own deadline
/// still reports its output before the call itself is stopped.
const MARGIN: Duration = Duration::from_millis(300);

/// What the exec import works on: the call's exec access (`None`: it may start
/// nothing), its filesystem (where a child runs and whether it may write) and the
/// call.
pub(crate) struct ExecView<'a> {
    /// The call's exec access.
    pub exec: Option<&'a ExecAccess>,
    /// The call's filesystem.
    pub fs: &'a FsAccess,
    /// The call.
    pub call: &'a CallInfo,
}

struct HasExec;

impl HasData for HasExec {
    type Data<'a> = ExecView<'a>;
}

/// Link `toolhost:plugin/exec`, reaching each store's exec access through `get`.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> ExecView<'_>,
) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, HasExec>(linker, get)
}

impl wit::Host for ExecView<'_> {
    async fn run(&mut self, cmd: wit::Command) -> Result<wit::Outcome, wit::ExecError> {
        let Some(access) = self.exec else {
            return Err(wit::ExecError::ProgramNotAllowed("this plugin is granted no programs".into()));
        };
        let (access, deadline) = (access.clone(), self.call.deadline);
        let (program, arg0, args) = match cmd.invocation {
            wit::Invocation::Program(p) => {
                (access.grant.program(&p.name).map_err(refusal)?.to_path_buf(), p.name, p.args)
            }
            wit::Invocation::Shell(line) => {
                let bash = access.grant.shell().map_err(refusal)?.to_path_buf();
                (bash, "bash".to_string(), vec!["-c".to_string(), line])
            }
        };
        let fs = self.fs;
        let Some(work) = fs.work_dir.clone() else {
            return Err(wit::ExecError::BadCwd("this call has no work dir to run a program in".into()));
        };
        let cwd = resolve_cwd(&work, cmd.cwd.as_deref())?;
        let mut env: Vec<(String, String)> = access.env.to_vec();
        for (name, value) in cmd.env {
            if !access.env.iter().any(|(granted, _)| *granted == name) {
                return Err(wit::ExecError::EnvNotAllowed(format!(
                    "`{name}` is not an environment variable this plugin is granted"
                )));
            }
            env.retain(|(k, _)| *k != name);
            env.push((name, value));
        }
        let left = deadline.saturating_duration_since(Instant::now()).saturating_sub(MARGIN);
        let asked = cmd.timeout_ms.map_or(MAX_CHILD_TIME, |ms| Duration::from_millis(ms.into()));
        let limit = access.runtime.settings().limits.output_bytes;
        let display = std::iter::once(program.display().to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let req = SpawnRequest {
            program,
            arg0,
            args,
            display,
            cwd,
            env,
            stdin: cmd.stdin,
            timeout: asked.min(left).min(MAX_CHILD_TIME),
            max_output: cmd.max_output_bytes.unwrap_or(limit).min(limit) as usize,
            merge_stderr: cmd.merge_stderr,
            writable: fs.writable,
            unconfined: access.grant.unconfined,
            commit: access.grant.commit,
            started_by: self.call.plugin.to_string(),
            call_id: self.call.call_id.to_string(),
        };
        let finished = access.runtime.run(req, &access.cancel).await.map_err(|e| {
            // The guest may make of the error what it likes: the host fails the call.
            if let SpawnError::Protected(why) = &e {
                access.tampering().record(why.clone());
            }
            spawn_error(e)
        })?;
        Ok(outcome(finished))
    }
}

/// The child's working directory: `cwd` (relative to the work dir, or an absolute
/// guest path, which is the host path) resolved with symlinks and inside `work`.
pub(crate) fn resolve_cwd(work: &Path, cwd: Option<&str>) -> Result<PathBuf, wit::ExecError> {
    let Some(cwd) = cwd.filter(|c| !c.is_empty() && *c != ".") else { return Ok(work.to_path_buf()) };
    let joined = work.join(cwd);
    let real =
        joined.canonicalize().map_err(|e| wit::ExecError::BadCwd(format!("working directory {cwd}: {e}")))?;
    if !real.starts_with(work) {
        return Err(wit::ExecError::BadCwd(format!("working directory {cwd} is outside the work dir")));
    }
    if !real.is_dir() {
        return Err(wit::ExecError::BadCwd(format!("working directory {cwd} is not a directory")));
    }
    Ok(real)
}

fn refusal(r: Refusal) -> wit::ExecError {
    match r {
        Refusal::Program(m) => wit::ExecError::ProgramNotAllowed(m),
        Refusal::Shell(m) => wit::ExecError::ShellNotAllowed(m),
    }
}

fn spawn_error(e: SpawnError) -> wit::ExecError {
    match e {
        SpawnError::Busy(m) => wit::ExecError::Busy(m),
        SpawnError::Unavailable(m) => wit::ExecError::SandboxUnavailable(m),
        SpawnError::Failed(m) => wit::ExecError::SpawnFailed(m),
        SpawnError::Protected(m) => wit::ExecError::SpawnFailed(format!(
            "permission_denied: {m}; the call fails with permission_denied"
        )),
    }
}

fn captured(c: Captured) -> wit::Captured {
    wit::Captured { data: c.data, total_bytes: c.total_bytes, cut_bytes: c.cut_bytes }
}

fn outcome(f: Finished) -> wit::Outcome {
    wit::Outcome {
        exit_code: f.exit_code,
        signal: f.signal,
        stdout: captured(f.stdout),
        stderr: captured(f.stderr),
        duration_ms: f.duration.as_millis() as u64,
        timed_out: f.timed_out,
        cancelled: f.cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_stays_inside_the_work_dir() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::create_dir(work.join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc", work.join("out")).unwrap();
        assert_eq!(resolve_cwd(&work, None).unwrap(), work);
        assert_eq!(resolve_cwd(&work, Some("sub")).unwrap(), work.join("sub"));
        let abs = work.join("sub").display().to_string();
        assert_eq!(resolve_cwd(&work, Some(&abs)).unwrap(), work.join("sub"));
        for bad in ["..", "../..", "/etc", "out", "sub/../..", "missing"] {
            assert!(matches!(resolve_cwd(&work, Some(bad)), Err(wit::ExecError::BadCwd(_))), "{bad}");
        }
    }
}
