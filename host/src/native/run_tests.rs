//! `run_tests`: runs a test profile the policy declares (`[tests.NAME]`), never a
//! command from the model. The only model input is which profile, and one `filter`
//! argument where the profile allows it. One run at a time per host
//! (`run_tests_busy`); the child runs in the same sandbox as every exec child.
//!
//! The result holds the whole log when the host shapes outputs (the executor
//! folds passing tests and keeps every failure line, [`crate::output::shape`]);
//! with `raw: true`, or when the policy turns shaping off, only its end.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NativeCall, NativeOutput, NativeTool};
use crate::error::{CallError, codes};
use crate::imports::CallInfo;
use crate::imports::exec::{ExecGrant, ExecRuntime, SpawnRequest, resolve_cwd};
use crate::load::spec::ToolSpec;
use crate::policy::TestProfile;

/// Bytes of the end of the log kept in the result.
const TAIL_BYTES: usize = 8_000;

/// The tool: the profiles with their programs resolved, the runtime, the builtins'
/// variables, and the one-at-a-time lock.
pub(crate) struct RunTests {
    profiles: Vec<(TestProfile, Option<PathBuf>)>,
    runtime: Arc<ExecRuntime>,
    env: Vec<(String, String)>,
    busy: tokio::sync::Mutex<()>,
    /// Whether the host shapes outputs (the policy's `[output] shape`).
    shape: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Which profile (optional when there is one).
    profile: Option<String>,
    /// Passed as one extra argument to profiles that take a filter (a test name or pattern; it may not start with `-`).
    filter: Option<String>,
    /// Return only the end of the log, not shaped (default false: the whole log, with passing tests folded and every failure line kept).
    #[serde(default)]
    raw: bool,
}

impl RunTests {
    /// The tool for `profiles` (resolved now, through the runtime's search path);
    /// `shape`: whether the host shapes outputs.
    pub(crate) fn new(
        profiles: Vec<TestProfile>,
        runtime: Arc<ExecRuntime>,
        env: Vec<(String, String)>,
        shape: bool,
    ) -> Self {
        let search = runtime.settings().search_path();
        let profiles = profiles
            .into_iter()
            .map(|p| {
                let grant = ExecGrant {
                    programs: vec![p.command.clone()],
                    shell: false,
                    unconfined: false,
                    commit: false,
                };
                let path =
                    grant.resolve(&search, runtime.work_dir()).program(&p.command).ok().map(PathBuf::from);
                (p, path)
            })
            .collect();
        Self { profiles, runtime, env, busy: tokio::sync::Mutex::new(()), shape }
    }

    fn profile(&self, name: Option<&str>) -> Result<&(TestProfile, Option<PathBuf>), CallError> {
        let names = || self.profiles.iter().map(|(p, _)| p.name.as_str()).collect::<Vec<_>>().join(", ");
        match name {
            Some(name) => self.profiles.iter().find(|(p, _)| p.name == name).ok_or_else(|| {
                CallError::new(
                    codes::INVALID_ARGS,
                    format!("no test profile `{name}`; the profiles are: {}", names()),
                )
            }),
            None if self.profiles.len() == 1 => Ok(&self.profiles[0]),
            None => Err(CallError::new(codes::INVALID_ARGS, format!("name a `profile`: {}", names()))),
        }
    }
}

impl NativeTool for RunTests {
    fn spec(&self) -> ToolSpec {
        let mut schema = super::args_schema::<Args>();
        schema["properties"]["profile"]["enum"] =
            self.profiles.iter().map(|(p, _)| p.name.as_str()).collect();
        let listing: Vec<String> = self
            .profiles
            .iter()
            .map(|(p, _)| {
                let filter = if p.filter { ", takes a filter" } else { "" };
                format!("`{}` ({} {}{filter})", p.name, p.command, p.args.join(" "))
            })
            .collect();
        ToolSpec {
            name: "run_tests".into(),
            description: format!(
                "Run the project's tests with a profile the user declared: {}. Says PASSED or FAILED with \
                 the exit status and the log: passing tests and progress are folded into markers naming \
                 read_output, every failure line and summary is kept (`raw: true`: only the end of the log, \
                 unshaped). Only one run at a time (run_tests_busy). Use it rather than terminal to run tests.",
                listing.join("; ")
            ),
            parameters: schema,
            read_only: false,
            destructive: false,
            timeout_ms: self.profiles.iter().map(|(p, _)| p.timeout.as_millis() as u32 + 5_000).max(),
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(async move {
            let args: Args = super::parse_args(args)?;
            let (profile, program) = self.profile(args.profile.as_deref())?;
            let mut argv = profile.args.clone();
            if let Some(filter) = args.filter {
                if !profile.filter {
                    return Err(CallError::new(
                        codes::INVALID_ARGS,
                        format!("the profile `{}` takes no filter", profile.name),
                    ));
                }
                if filter.starts_with('-') || filter.is_empty() {
                    return Err(CallError::new(
                        codes::INVALID_ARGS,
                        format!(
                            "filter `{filter}`: it may not be empty or start with `-` (it is not an option)"
                        ),
                    ));
                }
                argv.push(filter);
            }
            let Some(program) = program else {
                return Err(CallError::new(
                    codes::PROGRAM_NOT_ALLOWED,
                    format!("the profile's program `{}` is not installed on the host", profile.command),
                ));
            };
            let Some(work) = self.runtime.work_dir() else {
                return Err(CallError::new(codes::BAD_CWD, "the host has no work dir to run tests in"));
            };
            let cwd = resolve_cwd(work, &profile.cwd).map_err(|e| {
                CallError::new(codes::BAD_CWD, format!("the profile `{}`: {e}", profile.name))
            })?;
            let Ok(_turn) = self.busy.try_lock() else {
                return Err(CallError::new(
                    codes::RUN_TESTS_BUSY,
                    "a test run is already in progress; wait for it to end",
                ));
            };
            let info = CallInfo {
                plugin: "run_tests".into(),
                call_id: call.call_id.into(),
                deadline: call.deadline,
            };
            let limits = &self.runtime.settings().limits;
            let (program, arg0) = (program.clone(), profile.command.clone());
            let req = SpawnRequest {
                env: self.env.clone(),
                merge_stderr: true,
                writable: true,
                ..SpawnRequest::new(program, arg0, argv, cwd, Some(profile.timeout), &info, limits)
            };
            let done = self
                .runtime
                .run(req, call.cancel)
                .await
                .map_err(|e| CallError::new(e.code(), e.message()))?;
            let log = done.stdout.text();
            let (tail, end) = if self.shape && !args.raw {
                (log.as_str(), "log")
            } else {
                (tail(&log, TAIL_BYTES), "end of the log")
            };
            let passed = done.exit_code == Some(0) && !done.timed_out && !done.cancelled;
            let status = match (done.exit_code, done.signal) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(sig)) => format!("signal {sig}"),
                _ => "unknown status".into(),
            };
            let secs = done.duration.as_secs_f64();
            let metadata = json!({
                "profile": profile.name, "passed": passed, "exit_code": done.exit_code,
                "duration_ms": done.duration.as_millis() as u64, "log_bytes": done.stdout.total_bytes,
            });
            if done.cancelled {
                return Err(CallError::new(
                    codes::CANCELLED,
                    format!("the test run was cancelled; {end} so far:\n{tail}"),
                ));
            }
            if done.timed_out {
                return Err(CallError::new(
                    codes::TIMEOUT,
                    format!(
                        "the tests ran longer than {} ms and were killed; {end}:\n{tail}",
                        profile.timeout.as_millis()
                    ),
                ));
            }
            if !passed {
                return Err(CallError::new(
                    codes::TESTS_FAILED,
                    format!("FAILED ({status}, {secs:.1} s), profile `{}`; {end}:\n{tail}", profile.name),
                ));
            }
            let content =
                format!("PASSED ({status}, {secs:.1} s), profile `{}`; {end}:\n{tail}", profile.name);
            Ok(NativeOutput { content, metadata: Some(metadata) })
        })
    }
}

/// The last `max` bytes of `text`, starting at a line boundary when one is near.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let rest = &text[text.ceil_char_boundary(text.len() - max)..];
    match rest.find('\n') {
        Some(i) if i < 200 => &rest[i + 1..],
        _ => rest,
    }
}
