//! The WIT-facing glue: `toolhost:plugin/exec` on the per-call state. It checks the
//! request against the call's capability (program or shell, cwd inside the work dir,
//! granted env names), turns it into a [`SpawnRequest`] and the outcome back into
//! WIT records.

use std::path::Path;
use std::time::Duration;

use super::grant::Refusal;
use confine::{Captured, Finished, SpawnError, SpawnRequest, resolve_cwd};
use wasmtime::component::{HasData, Linker};

use super::ExecAccess;
use crate::bindings::toolhost::plugin::exec as wit;
use crate::imports::capability::{Capability, Need};
use crate::imports::{CallInfo, CallStore, FsAccess, StoreParts};

/// Confined child processes: granted only to a plugin whose grant lists programs or the shell.
pub(crate) const CAPABILITY: Capability = Capability {
    name: "exec",
    interfaces: &["toolhost:plugin/exec"],
    needs: Some(Need {
        key: "exec",
        example: "{ programs = [\"NAME\", …] }",
        flag: "--allow-program NAME",
        refusal: "no programs are granted to this plugin (grant some with {how})",
    }),
};

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

/// Link `toolhost:plugin/exec` over each store's exec access and filesystem.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, HasExec>(linker, |store| {
        let StoreParts { access, .. } = store.parts();
        ExecView { exec: access.exec.as_ref(), fs: &access.fs, call: &access.call }
    })
}

impl wit::Host for ExecView<'_> {
    async fn run(&mut self, cmd: wit::Command) -> Result<wit::Outcome, wit::ExecError> {
        let Some(access) = self.exec else {
            return Err(wit::ExecError::ProgramNotAllowed("this plugin is granted no programs".into()));
        };
        let access = access.clone();
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
        let cwd = resolve_cwd(&work, Path::new(cmd.cwd.as_deref().unwrap_or("")))
            .map_err(wit::ExecError::BadCwd)?;
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
        let asked = cmd.timeout_ms.map(|ms| Duration::from_millis(ms.into()));
        let limits = &access.runtime.settings().limits;
        let base = SpawnRequest::new(program, arg0, args, cwd, asked, self.call, limits);
        let req = SpawnRequest {
            env,
            stdin: cmd.stdin,
            max_output: cmd.max_output_bytes.map_or(base.max_output, |m| base.max_output.min(m as usize)),
            merge_stderr: cmd.merge_stderr,
            writable: fs.writable,
            unconfined: access.grant.unconfined,
            commit: access.grant.commit,
            quota: fs.writable.then(|| access.quota.clone()),
            ..base
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
