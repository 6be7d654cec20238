//! [`SpawnRequest`]: what to run, built in one place for the exec import and for
//! `run_tests`, with the one check of a child's working directory ([`resolve_cwd`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::meter::WriteMeter;
use super::settings::{ChildLimits, MAX_CHILD_TIME};

/// The call a child runs for: whose it is (for `process_list` and log lines) and when
/// it must be over (a child never outlives it).
#[derive(Debug, Clone)]
pub struct CallInfo {
    /// The plugin's display name.
    pub plugin: Arc<str>,
    /// The call id.
    pub call_id: Arc<str>,
    /// When the call's deadline passes.
    pub deadline: Instant,
}

/// Time kept back from the call's deadline so a child killed at its own deadline
/// still reports its output before the call itself is stopped.
const MARGIN: Duration = Duration::from_millis(300);

/// What to run, fully resolved: the host checked the program, cwd and env already.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    /// Absolute path of the program (symlinks resolved at load).
    pub program: PathBuf,
    /// What the program sees as its name (`argv[0]`): the name on the allow-list, so
    /// a multi-call binary reached through a symlink (rustup's `cargo`, busybox)
    /// still knows what it was asked to be.
    pub arg0: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The command as one line, for `process_list`.
    pub display: String,
    /// Working directory (inside the work dir).
    pub cwd: PathBuf,
    /// The whole environment besides the fixed variables.
    pub env: Vec<(String, String)>,
    /// Bytes for stdin (then closed); `None`: empty stdin.
    pub stdin: Option<Vec<u8>>,
    /// When to kill it.
    pub timeout: Duration,
    /// Bytes kept of each stream.
    pub max_output: usize,
    /// Send stderr into stdout's pipe.
    pub merge_stderr: bool,
    /// Whether it may write the work dir.
    pub writable: bool,
    /// Run without Landlock and namespaces (the grant said so).
    pub unconfined: bool,
    /// It may write repository data beneath a `.git` (the grant's `commit`).
    pub commit: bool,
    /// Who started it (plugin or tool), for `process_list`.
    pub started_by: String,
    /// The call it belongs to.
    pub call_id: String,
    /// The call's write quota, for a writing child: its `RLIMIT_FSIZE` is what is
    /// left of it, and the work dir's growth is charged to it after.
    pub quota: Option<Arc<WriteMeter>>,
}

impl SpawnRequest {
    /// Run `program`, named `arg0`, with `args` in `cwd` (from [`resolve_cwd`]) for
    /// `call`. It is killed at `asked` (`None`: [`MAX_CHILD_TIME`]), at most that, and
    /// `MARGIN` (300 ms) before the call's deadline, so its output still comes back; it keeps
    /// `limits.output_bytes` of each stream. The rest starts at the narrowest: no
    /// granted variables, empty stdin, separate streams, read-only, confined, no `.git`
    /// data written. A caller widens only what its grant allows.
    pub fn new(
        program: PathBuf,
        arg0: String,
        args: Vec<String>,
        cwd: PathBuf,
        asked: Option<Duration>,
        call: &CallInfo,
        limits: &ChildLimits,
    ) -> Self {
        let display =
            std::iter::once(program.display().to_string()).chain(args.iter().cloned()).collect::<Vec<_>>();
        let left = call.deadline.saturating_duration_since(Instant::now()).saturating_sub(MARGIN);
        Self {
            display: display.join(" "),
            program,
            arg0,
            args,
            cwd,
            env: Vec::new(),
            stdin: None,
            timeout: asked.unwrap_or(MAX_CHILD_TIME).min(MAX_CHILD_TIME).min(left),
            max_output: usize::try_from(limits.output_bytes).unwrap_or(usize::MAX),
            merge_stderr: false,
            writable: false,
            unconfined: false,
            commit: false,
            started_by: call.plugin.to_string(),
            call_id: call.call_id.to_string(),
            quota: None,
        }
    }
}

/// A child's working directory: `cwd` (relative to the work dir `work`, or an
/// absolute path under it; empty or `.` is `work` itself) with symlinks resolved,
/// refused (the message, for a `bad_cwd` error) unless it is a directory inside
/// `work`.
pub fn resolve_cwd(work: &Path, cwd: &Path) -> Result<PathBuf, String> {
    if cwd.as_os_str().is_empty() || cwd == Path::new(".") {
        return Ok(work.to_path_buf());
    }
    let shown = cwd.display();
    let real = work.join(cwd).canonicalize().map_err(|e| format!("working directory {shown}: {e}"))?;
    if !real.starts_with(work) {
        return Err(format!("working directory {shown} is outside the work dir"));
    }
    if !real.is_dir() {
        return Err(format!("working directory {shown} is not a directory"));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_stays_inside_the_work_dir() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::create_dir(work.join("sub")).unwrap();
        std::fs::write(work.join("file"), "").unwrap();
        std::os::unix::fs::symlink("/etc", work.join("out")).unwrap();
        let resolve = |cwd: &str| resolve_cwd(&work, Path::new(cwd));
        assert_eq!(resolve("").unwrap(), work);
        assert_eq!(resolve(".").unwrap(), work);
        assert_eq!(resolve("sub").unwrap(), work.join("sub"));
        assert_eq!(resolve(&work.join("sub").display().to_string()).unwrap(), work.join("sub"));
        for bad in ["..", "../..", "/etc", "out", "sub/../..", "missing", "file"] {
            assert!(resolve(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_request_ends_before_the_call_and_starts_narrow() {
        let call = CallInfo {
            plugin: "p".into(),
            call_id: "c".into(),
            deadline: Instant::now() + Duration::from_secs(10),
        };
        let limits = ChildLimits::default();
        let args = vec!["-c".to_string(), "true".to_string()];
        let req = SpawnRequest::new("/bin/sh".into(), "sh".into(), args, "/w".into(), None, &call, &limits);
        assert!(req.timeout <= Duration::from_secs(10) - MARGIN && req.timeout > Duration::from_secs(9));
        assert_eq!((req.display.as_str(), req.max_output), ("/bin/sh -c true", 4 << 20));
        assert!(!req.writable && !req.unconfined && !req.commit && !req.merge_stderr && req.env.is_empty());
        let short = SpawnRequest::new(
            "/bin/true".into(),
            "true".into(),
            Vec::new(),
            "/w".into(),
            Some(Duration::from_millis(5)),
            &call,
            &limits,
        );
        assert_eq!(short.timeout, Duration::from_millis(5));
    }
}
