//! A child process, from what to run to reaped: [`spawn`] prepares everything the
//! child needs (argv and envp as C strings, the `PATH` candidates, its stdin,
//! stdout and stderr as close-on-exec pipes or `/dev/null`) and starts it with
//! `super::clone`; [`Process`] waits for it on its pidfd and reaps it
//! (`waitid(P_PIDFD)`), and kills and reaps it when dropped unwaited, so a dropped
//! call leaves no process behind.
//!
//! This replaces `std::process::Command` with a `pre_exec` hook, which has to
//! `fork` (see `super::clone` for why that matters); the environment, argv and
//! program lookup follow `Command`'s rules (variables sorted by name, the last
//! value of a name winning; a name without a slash searched for on the child's
//! own `PATH`).

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, c_char};
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use tokio::io::unix::AsyncFd;

use super::clone::{self, ChildFailed, Image, StartFailed};
use super::confine::ChildSetup;

/// Where a child's stdout and stderr go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// A pipe each.
    Pipes,
    /// One pipe for both.
    Merged,
    /// `/dev/null`.
    Null,
}

/// What to start.
#[derive(Debug)]
pub(crate) struct Spawn<'a> {
    /// The program: a path, or a name searched for on the child's `PATH`.
    pub(crate) program: &'a Path,
    /// Its `argv[0]`.
    pub(crate) arg0: &'a str,
    /// Its arguments.
    pub(crate) args: &'a [String],
    /// Its whole environment, in order (a later value of a name wins).
    pub(crate) env: Vec<(&'a OsStr, &'a OsStr)>,
    /// Its working directory.
    pub(crate) cwd: &'a Path,
    /// Whether its stdin is a pipe (else `/dev/null`).
    pub(crate) stdin: bool,
    /// Where its stdout and stderr go.
    pub(crate) output: Output,
}

/// A started child and the host's ends of its pipes.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) process: Process,
    pub(crate) stdin: Option<OwnedFd>,
    /// Its stdout (and stderr, when merged).
    pub(crate) stdout: Option<OwnedFd>,
    pub(crate) stderr: Option<OwnedFd>,
}

/// Why a child did not start: the program, and what failed.
#[derive(Debug)]
pub(crate) struct StartError {
    program: PathBuf,
    /// What failed.
    pub(crate) failed: Failed,
}

impl StartError {
    /// Whether the child failed at confinement step `step`.
    pub(crate) fn failed_at(&self, step: super::confine::Step) -> bool {
        matches!(&self.failed, Failed::Child(ChildFailed::Setup(s)) if s.step == step)
    }
}

/// What failed in starting a child.
#[derive(Debug)]
pub(crate) enum Failed {
    /// An argument, a variable or a path holds a NUL byte.
    Nul,
    /// The host's side: a pipe, `/dev/null`, the stack, `clone`.
    Host(&'static str, io::Error),
    /// The child's side, before its program ran.
    Child(ChildFailed),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = |errno: &i32| io::Error::from_raw_os_error(*errno);
        write!(f, "{}: ", self.program.display())?;
        match &self.failed {
            Failed::Nul => write!(f, "an argument, variable or path holds a NUL byte"),
            Failed::Host(what, e) => write!(f, "{what}: {e}"),
            Failed::Child(ChildFailed::Exec(errno)) => write!(f, "{}", os(errno)),
            Failed::Child(ChildFailed::Stdio(errno)) => write!(f, "setting up its stdio: {}", os(errno)),
            Failed::Child(ChildFailed::Chdir(errno)) => {
                write!(f, "changing to its working directory: {}", os(errno))
            }
            Failed::Child(ChildFailed::Signals(errno)) => write!(f, "unblocking its signals: {}", os(errno)),
            Failed::Child(ChildFailed::Setup(s)) => write!(f, "{}: {}", s.step.describe(), os(&s.errno)),
        }
    }
}

/// Start `what`, confined by `setup`. Returns once the child runs its program.
pub(crate) fn spawn(what: &Spawn<'_>, setup: &ChildSetup) -> Result<Spawned, StartError> {
    let error = |failed| StartError { program: what.program.to_path_buf(), failed };
    let host = |step| move |e| error(Failed::Host(step, e));
    let c = |s: &OsStr| CString::new(s.as_bytes()).map_err(|_| error(Failed::Nul));

    let mut argv = vec![c(OsStr::new(what.arg0))?];
    for arg in what.args {
        argv.push(c(OsStr::new(arg))?);
    }
    let env: BTreeMap<&OsStr, &OsStr> = what.env.iter().copied().collect();
    let mut envp = Vec::with_capacity(env.len());
    for (name, value) in &env {
        let pair = [name.as_bytes(), b"=", value.as_bytes()].concat();
        envp.push(c(OsStr::from_bytes(&pair))?);
    }
    let candidates: Vec<PathBuf> = if what.program.as_os_str().as_bytes().contains(&b'/') {
        vec![what.program.to_path_buf()]
    } else {
        let path = env.get(OsStr::new("PATH")).copied().unwrap_or(OsStr::new("/bin:/usr/bin"));
        std::env::split_paths(path).map(|dir| dir.join(what.program)).collect()
    };
    let candidates = candidates.iter().map(|p| c(p.as_os_str())).collect::<Result<Vec<_>, _>>()?;
    let cwd = c(what.cwd.as_os_str())?;

    let pointers = |strings: &[CString]| -> Vec<*const c_char> {
        strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
    };
    let argv_ptrs = pointers(&argv);
    let envp_ptrs = pointers(&envp);
    let candidates: Vec<(CString, Vec<*const c_char>)> = candidates
        .into_iter()
        .map(|path| {
            let shell =
                [c"/bin/sh".as_ptr(), path.as_ptr()].into_iter().chain(argv_ptrs[1..].iter().copied());
            let shell = shell.collect();
            (path, shell)
        })
        .collect();

    // Every descriptor is close-on-exec and above 2 (`try_clone` duplicates to 3 or
    // more), so the child's `dup2`s never overwrite one another.
    let above_2 = |fd: OwnedFd| if fd.as_raw_fd() > 2 { Ok(fd) } else { fd.try_clone() };
    let null = || File::options().read(true).write(true).open("/dev/null").map(OwnedFd::from);
    let pipe = || std::io::pipe().map(|(r, w)| (OwnedFd::from(r), OwnedFd::from(w)));
    let (stdin_child, stdin_host) = match what.stdin {
        true => pipe().map(|(r, w)| (r, Some(w))).map_err(host("a pipe for stdin"))?,
        false => (null().map_err(host("opening /dev/null"))?, None),
    };
    let (stdout_child, stderr_child, stdout_host, stderr_host) = match what.output {
        Output::Pipes => {
            let (out_r, out_w) = pipe().map_err(host("a pipe for stdout"))?;
            let (err_r, err_w) = pipe().map_err(host("a pipe for stderr"))?;
            (out_w, err_w, Some(out_r), Some(err_r))
        }
        Output::Merged => {
            let (r, w) = pipe().map_err(host("a pipe for stdout"))?;
            let second = w.try_clone().map_err(host("a pipe for stdout"))?;
            (w, second, Some(r), None)
        }
        Output::Null => {
            let out = null().map_err(host("opening /dev/null"))?;
            let err = out.try_clone().map_err(host("opening /dev/null"))?;
            (out, err, None, None)
        }
    };
    let moved = host("moving a stdio descriptor above 2");
    let (stdin_child, stdout_child, stderr_child) = (
        above_2(stdin_child).map_err(moved)?,
        above_2(stdout_child).map_err(moved)?,
        above_2(stderr_child).map_err(moved)?,
    );

    let image = Image {
        candidates: &candidates,
        argv: &argv_ptrs,
        envp: &envp_ptrs,
        stdio: [stdin_child.as_raw_fd(), stdout_child.as_raw_fd(), stderr_child.as_raw_fd()],
        cwd: &cwd,
        setup,
    };
    let started = clone::start(&image).map_err(|failed| match failed {
        StartFailed::Host(e) => error(Failed::Host("starting the process", e)),
        StartFailed::Child(failed) => error(Failed::Child(failed)),
    })?;
    // The child's ends close here, so the host sees end of file when it is gone.
    drop((stdin_child, stdout_child, stderr_child));
    Ok(Spawned {
        process: Process { pid: started.pid, pidfd: PidFd::Plain(started.pidfd), status: None },
        stdin: stdin_host,
        stdout: stdout_host,
        stderr: stderr_host,
    })
}

/// A started child, until it is reaped. Dropped before that, it is killed and
/// reaped (on the runtime when there is one).
#[derive(Debug)]
pub(crate) struct Process {
    pid: u32,
    pidfd: PidFd,
    status: Option<ExitStatus>,
}

#[derive(Debug)]
enum PidFd {
    Plain(OwnedFd),
    Polled(AsyncFd<OwnedFd>),
    Taken,
}

impl Process {
    /// Its pid (also its process group's id, when its setup calls `setsid`).
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// SIGKILL it, unless it was reaped already.
    pub(crate) fn kill(&self) {
        if self.status.is_none() {
            match &self.pidfd {
                PidFd::Plain(fd) => clone::signal(fd.as_fd(), libc::SIGKILL),
                PidFd::Polled(fd) => clone::signal(fd.get_ref().as_fd(), libc::SIGKILL),
                PidFd::Taken => {}
            }
        }
    }

    /// Wait for it to exit, and reap it. Cancel-safe.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        // Registered with the reactor on first wait (not at spawn: a blocking caller
        // has no runtime). On failure the pidfd is kept, to kill it by.
        self.pidfd = match std::mem::replace(&mut self.pidfd, PidFd::Taken) {
            PidFd::Plain(fd) => match clone::register(fd) {
                Ok(fd) => PidFd::Polled(fd),
                Err((fd, error)) => {
                    self.pidfd = PidFd::Plain(fd);
                    return Err(error);
                }
            },
            other => other,
        };
        let PidFd::Polled(fd) = &self.pidfd else {
            return Err(io::Error::other("the process was already given up"));
        };
        let status = wait_on(fd).await?;
        self.status = Some(status);
        Ok(status)
    }

    /// Wait for it to exit, blocking the thread, and reap it.
    pub(crate) fn wait_blocking(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let fd = match &self.pidfd {
            PidFd::Plain(fd) => fd.as_fd(),
            PidFd::Polled(fd) => fd.get_ref().as_fd(),
            PidFd::Taken => return Err(io::Error::other("the process was already given up")),
        };
        let status = clone::reap(fd, true)?.ok_or_else(|| io::Error::other("waitid returned nothing"))?;
        self.status = Some(status);
        Ok(status)
    }
}

/// Wait for the pidfd to become readable (the process exited), then reap it.
async fn wait_on(fd: &AsyncFd<OwnedFd>) -> io::Result<ExitStatus> {
    loop {
        let mut ready = fd.readable().await?;
        if let Some(status) = clone::reap(fd.get_ref().as_fd(), false)? {
            return Ok(status);
        }
        ready.clear_ready();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        self.kill();
        let fd = match std::mem::replace(&mut self.pidfd, PidFd::Taken) {
            PidFd::Plain(fd) => fd,
            PidFd::Polled(fd) => fd.into_inner(),
            PidFd::Taken => return,
        };
        if let Ok(Some(_)) = clone::reap(fd.as_fd(), false) {
            return;
        }
        // Killed, not gone yet: reaped once it is, off the caller's path.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn(async move {
                if let Ok(fd) = clone::register(fd) {
                    let _ = wait_on(&fd).await;
                }
            })),
            Err(_) => drop(clone::reap(fd.as_fd(), true)),
        }
    }
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
