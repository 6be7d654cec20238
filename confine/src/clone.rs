//! Starting a child without `fork`: `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)`
//! on a stack of its own, the way glibc's `posix_spawn` starts one, so that no page
//! table of the host is copied (a `fork` of the host costs milliseconds, growing
//! with its resident memory; see BENCHMARKS.md).
//!
//! The child runs in the host's memory until it `exec`s, while the host's other
//! threads keep running, and the calling thread waits (`CLONE_VFORK`). So:
//! - everything it needs ([`Image`]: C strings, pointer arrays, descriptors, the
//!   [`ChildSetup`]) is prepared by the parent; the child makes system calls on it
//!   and nothing else — no allocation, no lock, no Rust std state, no panic;
//! - every signal is blocked in the calling thread around the `clone`, so no handler
//!   of the host's runs in the child; the child sets every handler that is not
//!   `SIG_IGN` back to `SIG_DFL` (and `SIGPIPE`, which Rust's runtime ignores, as
//!   std's `Command` does), runs its steps, then unblocks every signal (an empty
//!   mask, again as std's `Command` leaves it) just before `execve`;
//! - what failed, and where, is written to a shared [`Cell`] the parent reads once
//!   `clone` returns (the child has then `exec`ed or exited), never through a pipe.
//!
//! No `fork` fallback is kept: every confinement step works in such a child (none
//! needs its own copy of the host's memory; `unshare` of a user namespace only
//! asks that the child be alone in its thread group, which it is).

#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::{CString, c_char, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use super::confine::{ChildSetup, IdMaps, MountOp, SetupFailed};

/// The child's stack: its frames are those of [`ChildSetup::apply`] and a few
/// system calls, a few KiB; the rest is never touched (`MAP_NORESERVE`).
const STACK_BYTES: usize = 256 << 10;

/// What the child does, all of it prepared by the parent.
pub(super) struct Image<'a> {
    /// The paths to `execve`, in order: the program, or for a name without a slash
    /// the candidates of a `PATH` search. Each comes with its argv for `/bin/sh`,
    /// should the file have no `#!` line (`ENOEXEC`), as `execvp` does.
    pub(super) candidates: &'a [(CString, Vec<*const c_char>)],
    /// `argv`, null-terminated.
    pub(super) argv: &'a [*const c_char],
    /// `envp`, null-terminated.
    pub(super) envp: &'a [*const c_char],
    /// The descriptors that become 0, 1 and 2 (each above 2, close-on-exec).
    pub(super) stdio: [RawFd; 3],
    /// The working directory to change to before the steps.
    pub(super) cwd: &'a CString,
    /// The confinement steps.
    pub(super) setup: &'a ChildSetup,
}

/// Where a child failed before running its program, with the `errno`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildFailed {
    /// `dup2` of its stdin, stdout or stderr.
    Stdio(i32),
    /// `chdir` to its working directory.
    Chdir(i32),
    /// Resetting its signal mask.
    Signals(i32),
    /// A confinement step.
    Setup(SetupFailed),
    /// `execve` itself.
    Exec(i32),
}

/// Why [`start`] gave no child.
#[derive(Debug)]
pub(super) enum StartFailed {
    /// The parent's side: the stack or `clone`.
    Host(io::Error),
    /// The child's side (it was reaped).
    Child(ChildFailed),
}

/// A started child: its pid and a pidfd (close-on-exec) to wait for it by.
#[derive(Debug)]
pub(super) struct Started {
    pub(super) pid: u32,
    pub(super) pidfd: OwnedFd,
}

/// What parent and child share: the image, and the child's verdict.
struct Shared<'a> {
    image: &'a Image<'a>,
    failed: Cell<Option<ChildFailed>>,
}

/// Start `image` in a new process. Returns once it has `exec`ed (or failed).
pub(super) fn start(image: &Image<'_>) -> Result<Started, StartFailed> {
    let stack = Stack::new().map_err(StartFailed::Host)?;
    let shared = Shared { image, failed: Cell::new(None) };
    let mut pidfd: c_int = -1;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD;
    // SAFETY: the signal sets are stack values; `clone` gets a function that only
    // makes system calls on `shared` (alive: this thread is suspended until the
    // child has `exec`ed or exited, CLONE_VFORK), the top of a mapped stack of its
    // own, and a place for the pidfd (CLONE_PIDFD writes it to `parent_tid`).
    let (pid, clone_error) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid =
            libc::clone(child, stack.top(), flags, (&raw const shared).cast_mut().cast(), &raw mut pidfd);
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        (pid, clone_error)
    };
    if pid < 0 {
        return Err(StartFailed::Host(clone_error));
    }
    // SAFETY: CLONE_PIDFD succeeded: `pidfd` is a new descriptor owned from here on.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    if let Some(failed) = shared.failed.get() {
        let _ = reap(pidfd_ref(&pidfd), true);
        return Err(StartFailed::Child(failed));
    }
    Ok(Started { pid: pid as u32, pidfd })
}

/// What a helper building a shared root shares with the host.
struct RootHelper<'a> {
    ids: &'a IdMaps,
    ops: &'a [MountOp],
    fds: Cell<[RawFd; 2]>,
    failed: Cell<Option<SetupFailed>>,
}

/// Build a root to share (`super::shared_root`) in a helper process ([`helper`]),
/// so that the descriptors it opens on its new user and mount namespaces are the
/// host's once it has exited. Returns them (user namespace, mount namespace).
pub(super) fn build_shared_root(ids: &IdMaps, ops: &[MountOp]) -> Result<(OwnedFd, OwnedFd), StartFailed> {
    let root = RootHelper { ids, ops, fds: Cell::new([-1, -1]), failed: Cell::new(None) };
    extern "C" fn main(arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the parent's `RootHelper`, alive while it is suspended.
        let root = unsafe { &*arg.cast_const().cast::<RootHelper<'_>>() };
        let outcome = super::confine::build_shared(root.ids, root.ops, &root.fds);
        root.failed.set(outcome.err());
        0
    }
    helper(main, (&raw const root).cast_mut().cast())?;
    if let Some(failed) = root.failed.get() {
        return Err(StartFailed::Child(ChildFailed::Setup(failed)));
    }
    match root.fds.get() {
        // SAFETY: the helper opened both in the table it shared with the host, and
        // handed them over (it has exited): owned from here on.
        [userns, mntns] if userns >= 0 && mntns >= 0 => unsafe {
            Ok((OwnedFd::from_raw_fd(userns), OwnedFd::from_raw_fd(mntns)))
        },
        _ => Err(StartFailed::Host(io::Error::other("the helper building a shared root exited early"))),
    }
}

/// The most network namespaces one helper makes.
const MAX_NETS: usize = 8;

/// What a helper making network namespaces shares with the host.
struct NetHelper {
    userns: RawFd,
    fds: [Cell<RawFd>; MAX_NETS],
    count: usize,
    failed: Cell<Option<SetupFailed>>,
}

/// Make up to `count` (at most [`MAX_NETS`]) network namespaces owned by the user
/// namespace `userns` (a shared root's), in a helper process ([`helper`]). Returns
/// those made, even when the helper stopped early.
pub(super) fn make_nets(userns: BorrowedFd<'_>, count: usize) -> Result<Vec<OwnedFd>, StartFailed> {
    let nets = NetHelper {
        userns: userns.as_raw_fd(),
        fds: std::array::from_fn(|_| Cell::new(-1)),
        count: count.min(MAX_NETS),
        failed: Cell::new(None),
    };
    extern "C" fn main(arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the parent's `NetHelper`, alive while it is suspended.
        let nets = unsafe { &*arg.cast_const().cast::<NetHelper>() };
        let outcome = super::confine::make_nets(nets.userns, &nets.fds[..nets.count]);
        nets.failed.set(outcome.err());
        0
    }
    helper(main, (&raw const nets).cast_mut().cast())?;
    // SAFETY: each descriptor was opened by the helper in the table it shared with
    // the host, and handed over (it has exited): owned from here on.
    let made: Vec<OwnedFd> = nets
        .fds
        .iter()
        .map(Cell::get)
        .filter(|&fd| fd >= 0)
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    match nets.failed.get() {
        Some(failed) if made.is_empty() => Err(StartFailed::Child(ChildFailed::Setup(failed))),
        _ => Ok(made),
    }
}

/// Run `main(arg)` in a helper process: started like a child, but sharing the
/// host's descriptor table (`CLONE_FILES`), so that what it opens is the host's
/// once it has exited. It never runs a program; it returns once the helper has
/// exited. `main` only makes system calls on `arg`, which outlives the call.
fn helper(main: extern "C" fn(*mut c_void) -> c_int, arg: *mut c_void) -> Result<(), StartFailed> {
    extern "C" fn entry(arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the parent's `(main, arg)`, alive while it is suspended.
        let (main, arg) =
            unsafe { *arg.cast_const().cast::<(extern "C" fn(*mut c_void) -> c_int, *mut c_void)>() };
        let code = main(arg);
        // SAFETY: ends this process only, without running anything of the host's.
        unsafe { libc::_exit(code) }
    }
    let stack = Stack::new().map_err(StartFailed::Host)?;
    let call = (main, arg);
    let mut pidfd: c_int = -1;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::CLONE_PIDFD | libc::SIGCHLD;
    // SAFETY: as in `start`: every signal blocked around the `clone` (the helper
    // keeps them blocked: it runs no handler and exits), a function that only makes
    // system calls on `call`, alive while this thread is suspended (CLONE_VFORK).
    let (pid, clone_error) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(entry, stack.top(), flags, (&raw const call).cast_mut().cast(), &raw mut pidfd);
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        (pid, clone_error)
    };
    if pid < 0 {
        return Err(StartFailed::Host(clone_error));
    }
    // SAFETY: CLONE_PIDFD succeeded: `pidfd` is a new descriptor owned from here on.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let _ = reap(pidfd_ref(&pidfd), true);
    Ok(())
}

fn pidfd_ref(fd: &OwnedFd) -> BorrowedFd<'_> {
    use std::os::fd::AsFd;
    fd.as_fd()
}

/// The child: runs `shared.image`, and on failure records where and exits 127.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's `Shared`, alive while the parent is suspended.
    let shared = unsafe { &*arg.cast_const().cast::<Shared<'_>>() };
    shared.failed.set(Some(run(shared.image)));
    // SAFETY: ends this process only (its own thread group) without running
    // anything of the host's.
    unsafe { libc::_exit(127) }
}

fn errno() -> i32 {
    // SAFETY: the calling thread's errno location (in the child, the parent
    // thread's, which is suspended and reads it only when `clone` itself failed).
    unsafe { *libc::__errno_location() }
}

/// The child's side, up to `execve`; returns only when something failed.
fn run(image: &Image<'_>) -> ChildFailed {
    // SAFETY (every call below): system calls on descriptors, C strings and
    // null-terminated pointer arrays the parent keeps alive, and on stack values.
    unsafe {
        for (target, fd) in (0..).zip(image.stdio) {
            if libc::dup2(fd, target) < 0 {
                return ChildFailed::Stdio(errno());
            }
        }
        if libc::chdir(image.cwd.as_ptr()) < 0 {
            return ChildFailed::Chdir(errno());
        }
        for signal in 1..=64 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            // Fails for the few that glibc keeps for itself: they have no handler here.
            if libc::sigaction(signal, std::ptr::null(), &mut action) != 0 {
                continue;
            }
            let ignored = action.sa_sigaction == libc::SIG_IGN && signal != libc::SIGPIPE;
            if action.sa_sigaction != libc::SIG_DFL && !ignored {
                let default: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        if let Err(failed) = image.setup.apply() {
            return ChildFailed::Setup(failed);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        let unblocked = libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        if unblocked != 0 {
            return ChildFailed::Signals(unblocked);
        }
        // As `execvp`: the first candidate that runs; past a missing one (or a
        // denied one, reported if nothing else runs) to the next.
        let mut failed = libc::ENOENT;
        for (path, shell_argv) in image.candidates {
            libc::execve(path.as_ptr(), image.argv.as_ptr(), image.envp.as_ptr());
            match errno() {
                libc::ENOEXEC => {
                    libc::execve(c"/bin/sh".as_ptr(), shell_argv.as_ptr(), image.envp.as_ptr());
                    return ChildFailed::Exec(errno());
                }
                libc::EACCES => failed = libc::EACCES,
                libc::ENOENT | libc::ENOTDIR => {}
                other => return ChildFailed::Exec(other),
            }
        }
        ChildFailed::Exec(failed)
    }
}

/// Reap the exited child behind `pidfd` (`block`: wait for it to exit). `None`
/// when it has not exited yet.
pub(super) fn reap(pidfd: BorrowedFd<'_>, block: bool) -> io::Result<Option<ExitStatus>> {
    let flags = libc::WEXITED | if block { 0 } else { libc::WNOHANG };
    // SAFETY: waitid on a pidfd into a zeroed stack `siginfo_t`; the accessors read
    // the fields waitid filled (`si_pid` stays 0 when nothing had exited).
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        while libc::waitid(libc::P_PIDFD, pidfd.as_raw_fd() as libc::id_t, &mut info, flags) < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
        if info.si_pid() == 0 {
            return Ok(None);
        }
        let status = info.si_status();
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => (status & 0x7f) | 0x80,
            _ => status & 0x7f,
        };
        Ok(Some(ExitStatus::from_raw(raw)))
    }
}

/// Send `signal` to the child behind `pidfd` (nothing if it has exited).
pub(super) fn signal(pidfd: BorrowedFd<'_>, signal: c_int) {
    // SAFETY: pidfd_send_signal on a pidfd we hold, with no siginfo; ESRCH (it
    // has exited) is ignored.
    unsafe {
        libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), signal, std::ptr::null::<u8>(), 0u32);
    }
}

/// Register a pidfd with the runtime's reactor, to wait for it to become readable
/// (the process exited). Must run on the runtime. On failure the pidfd comes back.
pub(super) fn register(pidfd: OwnedFd) -> Result<AsyncFd<OwnedFd>, (OwnedFd, io::Error)> {
    // SAFETY: an `OwnedFd` is open, and names the same descriptor, for as long as
    // it is owned, here by the `AsyncFd`.
    let registered = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) };
    registered.map_err(|e| e.into_parts())
}

/// A mapped stack for one child, with a guard page below it; unmapped on drop.
struct Stack {
    base: *mut c_void,
}

impl Stack {
    fn new() -> io::Result<Self> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh anonymous mapping, nothing aliased; its lowest page made
        // inaccessible so an overflow faults instead of writing below it.
        unsafe {
            let base = libc::mmap(std::ptr::null_mut(), STACK_BYTES, prot, flags, -1, 0);
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Self { base };
            if libc::mprotect(base, page_size(), libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// The top of the stack (it grows down).
    fn top(&self) -> *mut c_void {
        // SAFETY: one past the end of the mapping, as `clone` wants it.
        unsafe { self.base.cast::<u8>().add(STACK_BYTES).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the child no longer runs on it (it has
        // `exec`ed or exited before `clone` returned).
        unsafe {
            libc::munmap(self.base, STACK_BYTES);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}
