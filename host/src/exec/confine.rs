//! What a child does to itself between `fork` and `exec`: the confinement steps,
//! prepared in the parent ([`Confiner`], [`ChildSetup`]) so that the child only
//! makes raw system calls (after `fork` in a threaded process nothing may allocate
//! or take a lock).
//!
//! Order, in the child: join the call's pids cgroup → die with the host
//! (`PR_SET_PDEATHSIG`) → `setsid` (own session and process group) → rlimits → new
//! user and network namespaces (before Landlock: the kernel refuses some namespace
//! set-up under it) → `no_new_privs` → Landlock → seccomp (what Landlock does not
//! cover: set-uid bits, and mode/owner/time changes in read-only calls).
//!
//! This is the only module with `unsafe` code: `pre_exec` and the libc calls. Each
//! block says why it is sound.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::ChildLimits;

/// Landlock ABI the host requires: filesystem rights with `ioctl` on devices, and
/// signal and abstract-socket scoping (ABI 6, Linux 6.12).
const LANDLOCK_ABI: ABI = ABI::V6;

/// System directories a child may read and execute from.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/// What a child may read of `/etc`: what programs need to start, resolve names and
/// users, and verify TLS — never all of it (`/etc/shadow`, `/etc/ssl/private` and
/// host keys are readable by root, and a child of a root host still has uid 0).
const READ_ONLY_DIRS: &[&str] = &[
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/hostname",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/bash.bashrc",
    "/etc/inputrc",
    "/etc/profile",
    "/etc/terminfo",
    "/etc/gitconfig",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/environment",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/perl",
];
/// Devices a child may read and write.
const RW_DEVICES: &[&str] = &["/dev/null", "/dev/tty"];
/// Devices a child may only read.
const READ_DEVICES: &[&str] = &["/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"];

/// The Landlock rulesets of one host, built once: the work dir read-write or
/// read-only, system dirs read-only. A ruleset is a file descriptor each child
/// applies to itself.
#[derive(Debug)]
pub struct Confiner {
    read_write: OwnedFd,
    read_only: OwnedFd,
    seccomp_read_write: seccompiler::BpfProgram,
    seccomp_read_only: seccompiler::BpfProgram,
}

impl Confiner {
    /// Build the rulesets for `work_dir` (none: no work dir at all), with the extra
    /// readable-and-executable dirs `exec_dirs` and readable dirs `read_dirs`. Fails
    /// when the kernel lacks Landlock ABI 6.
    pub fn new(
        work_dir: Option<&Path>,
        exec_dirs: &[PathBuf],
        read_dirs: &[PathBuf],
    ) -> Result<Self, String> {
        let build = |writable: bool| -> Result<OwnedFd, String> {
            Self::build(work_dir, exec_dirs, read_dirs, writable)
                .map_err(|e| format!("Landlock (ABI 6, Linux 6.12+) is not available: {e}"))?
                .ok_or_else(|| "Landlock is not supported by this kernel".to_string())
        };
        Ok(Self {
            read_write: build(true)?,
            read_only: build(false)?,
            seccomp_read_write: seccomp_program(true)?,
            seccomp_read_only: seccomp_program(false)?,
        })
    }

    fn build(
        work_dir: Option<&Path>,
        exec_dirs: &[PathBuf],
        read_dirs: &[PathBuf],
        writable: bool,
    ) -> Result<Option<OwnedFd>, landlock::RulesetError> {
        {
            let all = AccessFs::from_all(LANDLOCK_ABI);
            let read_exec = AccessFs::from_read(LANDLOCK_ABI);
            let read = AccessFs::ReadFile | AccessFs::ReadDir;
            let mut ruleset = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(all)?
                .scope(Scope::from_all(LANDLOCK_ABI))?
                .create()?;
            // Execute only gates execve (a loader can still map a file it may read),
            // so the extra read-only dirs may run programs too: a toolchain's proxy
            // execs the real compiler from its own tree.
            let system = SYSTEM_DIRS.iter().map(PathBuf::from).chain(exec_dirs.iter().cloned());
            for dir in system.chain(read_dirs.iter().cloned()) {
                ruleset = add(ruleset, &dir, read_exec)?;
            }
            for dir in READ_ONLY_DIRS.iter().map(PathBuf::from) {
                ruleset = add(ruleset, &dir, read)?;
            }
            for dev in RW_DEVICES {
                ruleset = add(
                    ruleset,
                    Path::new(dev),
                    AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
                )?;
            }
            for dev in READ_DEVICES {
                ruleset = add(ruleset, Path::new(dev), AccessFs::ReadFile.into())?;
            }
            if let Some(dir) = work_dir {
                ruleset = add(ruleset, dir, if writable { all } else { read_exec })?;
            }
            Ok(ruleset.into())
        }
    }

    /// The ruleset for a call that may (or may not) write the work dir.
    pub fn ruleset(&self, writable: bool) -> RawFd {
        if writable { self.read_write.as_raw_fd() } else { self.read_only.as_raw_fd() }
    }

    /// The seccomp program for such a call, as (address, length) for the child.
    pub fn seccomp(&self, writable: bool) -> (usize, u16) {
        let program = if writable { &self.seccomp_read_write } else { &self.seccomp_read_only };
        (program.as_ptr() as usize, program.len() as u16)
    }
}

/// The seccomp filter: what Landlock does not cover. Every child is refused setting
/// the set-uid and set-gid bits (a child of a root host would leave a set-uid-root
/// file behind); a read-only child is also refused changing modes, owners and times.
fn seccomp_program(writable: bool) -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond, SeccompFilter,
        SeccompRule,
    };
    use std::collections::BTreeMap;
    const FCHMODAT2: i64 = 452;
    let fail = |e: seccompiler::BackendError| format!("seccomp filter: {e}");
    // (syscall, index of its mode argument)
    let mut chmods: Vec<(i64, u8)> = vec![(libc::SYS_fchmod, 1), (libc::SYS_fchmodat, 2), (FCHMODAT2, 2)];
    #[cfg(target_arch = "x86_64")]
    chmods.push((libc::SYS_chmod, 1));
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if writable {
        for (nr, arg) in chmods {
            let bit = |mask: u64| -> Result<SeccompRule, String> {
                SeccompRule::new(vec![Cond::new(arg, Len::Dword, Op::MaskedEq(mask), mask).map_err(fail)?])
                    .map_err(fail)
            };
            rules.insert(nr, vec![bit(libc::S_ISUID.into())?, bit(libc::S_ISGID.into())?]);
        }
    } else {
        let mut all: Vec<i64> = chmods.into_iter().map(|(nr, _)| nr).collect();
        all.extend([libc::SYS_fchown, libc::SYS_fchownat, libc::SYS_utimensat]);
        #[cfg(target_arch = "x86_64")]
        all.extend([
            libc::SYS_chown,
            libc::SYS_lchown,
            libc::SYS_utime,
            libc::SYS_utimes,
            libc::SYS_futimesat,
        ]);
        for nr in all {
            rules.insert(nr, vec![]);
        }
    }
    let arch = std::env::consts::ARCH.try_into().map_err(|e| format!("seccomp: {e:?}"))?;
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(fail)?;
    seccompiler::BpfProgram::try_from(filter).map_err(fail)
}

/// Allow `access` beneath `path`, skipping paths that do not exist on this system.
fn add(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    let Ok(fd) = PathFd::new(path) else { return Ok(ruleset) };
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let access = if is_dir { access } else { access & AccessFs::from_file(LANDLOCK_ABI) };
    ruleset.add_rule(PathBeneath::new(fd, access))
}

/// Everything one child applies to itself, as plain values (copied into the
/// `pre_exec` closure).
#[derive(Debug, Clone, Copy)]
pub struct ChildSetup {
    /// The Landlock ruleset to apply (`None`: unconfined).
    pub ruleset: Option<RawFd>,
    /// A new user and network namespace (no network).
    pub namespaces: bool,
    /// An open `cgroup.procs` of the child's pids cgroup, to join.
    pub cgroup_procs: Option<RawFd>,
    /// `RLIMIT_CPU` (soft; the hard limit is one more).
    pub cpu_seconds: u64,
    /// `RLIMIT_AS`.
    pub memory_bytes: u64,
    /// `RLIMIT_FSIZE`.
    pub file_size_bytes: u64,
    /// `RLIMIT_NPROC`, when it is the process cap (no cgroup, not root, in its own
    /// user namespace).
    pub nproc: Option<u64>,
    /// The seccomp program (address and length of a program the parent keeps alive).
    pub seccomp: Option<(usize, u16)>,
}

impl ChildSetup {
    /// A setup with `limits`, nothing else yet.
    pub fn new(limits: &ChildLimits) -> Self {
        Self {
            ruleset: None,
            namespaces: false,
            cgroup_procs: None,
            cpu_seconds: limits.cpu_seconds,
            memory_bytes: limits.memory_bytes,
            file_size_bytes: limits.file_size_bytes,
            nproc: None,
            seccomp: None,
        }
    }

    /// Install the steps on `cmd`, to run in the child before `exec`.
    pub fn install(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the forked child before exec. It only makes
        // system calls on values copied in (integers and a static byte string), takes
        // no lock and allocates nothing, so it is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || self.apply());
        }
    }

    /// The steps, in order. Runs in the forked child: system calls only.
    fn apply(self) -> io::Result<()> {
        fn check(ret: libc::c_long) -> io::Result<()> {
            if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
        }
        // SAFETY (every call below): plain system calls with valid integer arguments
        // and pointers to live stack values or static data.
        unsafe {
            if let Some(fd) = self.cgroup_procs {
                let zero = b"0\n";
                check(libc::write(fd, zero.as_ptr().cast(), zero.len()) as libc::c_long)?;
            }
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0).into())?;
            check(libc::setsid().into())?;
            let limit = |resource, soft: u64, hard: u64| {
                let rl = libc::rlimit { rlim_cur: soft, rlim_max: hard };
                check(libc::setrlimit(resource, &rl).into())
            };
            limit(libc::RLIMIT_CPU, self.cpu_seconds, self.cpu_seconds + 1)?;
            limit(libc::RLIMIT_AS, self.memory_bytes, self.memory_bytes)?;
            limit(libc::RLIMIT_FSIZE, self.file_size_bytes, self.file_size_bytes)?;
            limit(libc::RLIMIT_CORE, 0, 0)?;
            if self.namespaces {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET).into())?;
            }
            // After the new user namespace: there the limit counts only the child's
            // own tree, not every process of the same user on the machine.
            if let Some(n) = self.nproc {
                limit(libc::RLIMIT_NPROC, n, n)?;
            }
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0).into())?;
            if let Some(fd) = self.ruleset {
                check(libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32))?;
            }
            if let Some((addr, len)) = self.seccomp {
                let prog = libc::sock_fprog { len, filter: addr as *mut libc::sock_filter };
                check(
                    libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER as libc::c_ulong, &prog)
                        .into(),
                )?;
            }
        }
        Ok(())
    }
}

/// Send `signal` to every process in the process group `pgid`.
pub fn kill_group(pgid: u32, signal: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return };
    // SAFETY: a plain system call; a stale or empty group gives ESRCH, ignored.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Send `signal` to the process `pid`.
pub fn kill_pid(pid: u32, signal: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    if pid <= 0 {
        return;
    }
    // SAFETY: a plain system call on a positive pid; ESRCH is ignored.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Whether the host runs as root (then `RLIMIT_NPROC` caps nothing).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Reap `pid` if it is a zombie child of this process. Never blocks.
pub fn reap(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    let mut status = 0;
    // SAFETY: waitpid on a specific pid with WNOHANG; ECHILD when it is not ours.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

/// The user namespace of `pid`, as the kernel names it (`user:[INODE]`).
pub fn user_namespace(pid: u32) -> Option<std::ffi::OsString> {
    std::fs::read_link(format!("/proc/{pid}/ns/user")).ok().map(PathBuf::into_os_string)
}

/// SIGKILL every process in the user namespace `ns` until none is left. A confined
/// child has its own, and everything it starts stays in it (`setsid` or not), so this
/// finds what a process-group kill misses when the host has no cgroup. Never the
/// host's own namespace.
pub fn kill_namespace(ns: &std::ffi::OsStr) {
    if user_namespace(std::process::id()).as_deref() == Some(ns) {
        return;
    }
    for _ in 0..200 {
        let mut found = false;
        let Ok(entries) = std::fs::read_dir("/proc") else { return };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if user_namespace(pid).as_deref() == Some(ns) {
                kill_pid(pid, libc::SIGKILL);
                found = true;
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}
