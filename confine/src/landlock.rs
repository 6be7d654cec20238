//! The Landlock rulesets of one host ([`Confiner`], with the seccomp programs of
//! `super::seccomp`) and the paths a child may reach at all: the system dirs, a
//! short list of `/etc` entries and devices, the exec `path` and `read-dirs`. The
//! same lists decide what the child's root holds ([`child_root`]); Landlock rules
//! are on inodes, so they hold inside the child's root, whose binds keep them.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use super::mounts::Layout;
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

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
/// Empty, private dirs in a child's root (what the host keeps there, its unix
/// sockets above all, has no name for the child).
const PRIVATE_DIRS: &[&str] = &["/tmp", "/run", "/var/run", "/var/tmp"];

/// Bound into a child's root although the rulesets allow nothing in it: `/proc`,
/// for what only needs names there (`ld.so` finds `$ORIGIN` by reading the link
/// `/proc/self/exe`; toolchains' `RUNPATH`s depend on it). Opening anything in it
/// is refused by Landlock, and Landlock's ptrace scoping refuses the `root`, `cwd`
/// and `fd` links of every process outside the child's own domain.
const NAMES_ONLY: &[&str] = &["/proc"];

/// What a child's root holds: the same paths the rulesets allow, around `work_dir`.
pub(super) fn child_root(
    work_dir: Option<&Path>,
    exec_dirs: &[PathBuf],
    read_dirs: &[PathBuf],
    staging: Option<&Path>,
) -> Layout {
    let read_only: Vec<PathBuf> = SYSTEM_DIRS
        .iter()
        .chain(READ_ONLY_DIRS)
        .chain(NAMES_ONLY)
        .map(PathBuf::from)
        .chain(exec_dirs.iter().cloned())
        .chain(read_dirs.iter().cloned())
        .collect();
    let devices: Vec<PathBuf> = RW_DEVICES.iter().chain(READ_DEVICES).map(PathBuf::from).collect();
    let private: Vec<PathBuf> = PRIVATE_DIRS.iter().map(PathBuf::from).collect();
    Layout::new(&read_only, &devices, &private, work_dir).with_staging(staging)
}

/// The Landlock rulesets of one host, built once: the work dir read-write or
/// read-only, system dirs read-only. A ruleset is a file descriptor each child
/// applies to itself.
#[derive(Debug)]
pub(super) struct Confiner {
    read_write: OwnedFd,
    read_only: OwnedFd,
    seccomp_read_write: seccompiler::BpfProgram,
    seccomp_read_only: seccompiler::BpfProgram,
    exec_dirs: Vec<PathBuf>,
    read_dirs: Vec<PathBuf>,
}

impl Confiner {
    /// Build the rulesets for `work_dir` (none: no work dir at all), with the extra
    /// readable-and-executable dirs `exec_dirs` and readable dirs `read_dirs`. Fails
    /// when the kernel lacks Landlock ABI 6.
    pub(super) fn new(
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
            seccomp_read_write: super::seccomp::program(true)?,
            seccomp_read_only: super::seccomp::program(false)?,
            exec_dirs: exec_dirs.to_vec(),
            read_dirs: read_dirs.to_vec(),
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
    pub(super) fn ruleset(&self, writable: bool) -> RawFd {
        if writable { self.read_write.as_raw_fd() } else { self.read_only.as_raw_fd() }
    }

    /// A ruleset for one writing child whose work dir is an overlay: the read-write
    /// one without the work dir, whose rule the child adds itself, on the overlay's
    /// root, with [`Self::work_access`] (a rule is on an inode; the overlay's are
    /// not the work dir's).
    pub(super) fn overlay_ruleset(&self) -> Result<OwnedFd, String> {
        Self::build(None, &self.exec_dirs, &self.read_dirs, true)
            .map_err(|e| format!("a child's Landlock ruleset: {e}"))?
            .ok_or_else(|| "Landlock is not supported by this kernel".to_string())
    }

    /// What a writing child may do beneath its work dir (`LANDLOCK_ACCESS_FS_*`).
    pub(super) fn work_access() -> u64 {
        AccessFs::from_all(LANDLOCK_ABI).bits()
    }

    /// The seccomp program for such a call, as (address, length) for the child.
    pub(super) fn seccomp(&self, writable: bool) -> (usize, u16) {
        let program = if writable { &self.seccomp_read_write } else { &self.seccomp_read_only };
        (program.as_ptr() as usize, program.len() as u16)
    }
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
