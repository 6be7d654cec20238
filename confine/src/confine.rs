//! What a child does to itself between `clone` and `exec`: the confinement steps,
//! prepared in the parent ([`super::landlock::Confiner`], [`ChildSetup`],
//! [`MountOp`]s) so that the child only makes raw system calls (it shares the
//! host's memory while the host's other threads run: nothing may allocate or take
//! a lock; see `super::clone`).
//!
//! Order, in the child: join the call's pids cgroup → die with the host
//! (`PR_SET_PDEATHSIG`) → `setsid` (own session and process group) → rlimits → new
//! user, network and mount namespaces, the user namespace mapping the host's own
//! uid and gid (before Landlock: the kernel refuses the map writes under it) → for
//! a resident child with a network grant, its loopback brought up and a listener on
//! it handed to the host ([`Loopback`]: the host serves a proxy *inside* the
//! child's namespace) → the child's root (`super::mounts`; or, entered before the
//! new namespaces, a shared one, `super::shared_root`, checked instead of built;
//! then, for a writing child, its overlay over the work dir, `super::overlay`, in a
//! mount namespace of its own) → every capability dropped (the bounding
//! set, ambient and inheritable ones, and `SECBIT_NOROOT`, so that uid 0 in the
//! namespace gains none at `exec`) → `no_new_privs` → Landlock (a writing child
//! first adds its work dir rule, on the overlay's root, to a ruleset of its own) → seccomp (what
//! Landlock does not cover: set-uid bits, `mknod`, and mode/owner/time changes in
//! read-only calls) → every descriptor above 2 marked close-on-exec
//! (`close_range`), last, so that nothing the host holds open (from its parent, a
//! library, a test harness) reaches the program. A failed step is reported to the
//! host by name ([`Step`]) with its `errno`.
//!
//! Landlock keeps a confined child from mounting, unmounting or pivoting again, so
//! the read-only binds hold for everything it starts.
//!
//! With `super::clone`, the only modules with `unsafe` code: the libc calls. Each
//! block says why it is sound.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

pub(crate) use super::mounts::MountOp;
use super::settings::ChildLimits;
pub(crate) use super::step::{SetupFailed, Step};

/// `mount_setattr(2)` (Linux 5.12), the same number on every architecture.
const SYS_MOUNT_SETATTR: libc::c_long = 442;
/// `MOUNT_ATTR_RDONLY`.
const MOUNT_ATTR_RDONLY: u64 = 1;
/// `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct mount_attr`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// A root built once and shared (`super::shared_root` keeps them): its user and
/// mount namespaces, by descriptor only, and network namespaces made ahead of
/// time in its user namespace, each given to one child only.
#[derive(Debug)]
pub(crate) struct SharedRoot {
    userns: OwnedFd,
    mntns: OwnedFd,
    nets: Mutex<Vec<OwnedFd>>,
    /// A helper is making more network namespaces.
    pub(super) refilling: AtomicBool,
}

impl SharedRoot {
    pub(super) fn new(userns: OwnedFd, mntns: OwnedFd) -> Self {
        SharedRoot { userns, mntns, nets: Mutex::new(Vec::new()), refilling: AtomicBool::new(false) }
    }

    /// The user namespace's and the mount namespace's descriptors.
    pub(super) fn fds(&self) -> (RawFd, RawFd) {
        (self.userns.as_raw_fd(), self.mntns.as_raw_fd())
    }

    /// The user namespace, which owns the network namespaces made for the root.
    pub(super) fn userns(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.userns.as_fd()
    }

    /// A network namespace made ahead of time, no longer kept here (none left: the
    /// child makes its own), and how many are left.
    pub(super) fn take_net(&self) -> (Option<OwnedFd>, usize) {
        let mut nets = self.nets.lock().unwrap_or_else(|e| e.into_inner());
        let net = nets.pop();
        (net, nets.len())
    }

    /// Keep `made` for the children to come.
    pub(super) fn add_nets(&self, made: Vec<OwnedFd>) {
        self.nets.lock().unwrap_or_else(|e| e.into_inner()).extend(made);
    }
}

/// The user namespace's maps: the host's own uid and gid, to themselves, so files
/// keep their owner and the child may mount in its own namespace.
#[derive(Debug, Clone)]
pub(crate) struct IdMaps {
    uid_map: CString,
    gid_map: CString,
}

impl IdMaps {
    /// Maps for the host's effective uid and gid.
    pub(crate) fn own() -> Self {
        // SAFETY: geteuid and getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let line = |id: u32| CString::new(format!("{id} {id} 1\n")).expect("digits and spaces");
        Self { uid_map: line(uid), gid_map: line(gid) }
    }
}

/// Everything one child applies to itself, as plain values (the child only reads
/// them).
#[derive(Debug)]
pub(crate) struct ChildSetup {
    /// The Landlock ruleset to apply (`None`: unconfined).
    pub ruleset: Option<RawFd>,
    /// A ruleset made for this child alone (`ruleset` is its descriptor): one the
    /// child adds `work_rule` to.
    pub own_ruleset: Option<OwnedFd>,
    /// A rule the child adds to its own ruleset once its mounts are made: the
    /// work dir as the child sees it (an overlay's root, `super::overlay`).
    pub work_rule: Option<WorkRule>,
    /// After entering a shared `root`, make a mount namespace of its own, for
    /// the mounts in `mounts` (a writing child's overlay).
    pub private_mounts: bool,
    /// New user and network namespaces (no network), and a mount namespace when
    /// there are `mounts`.
    pub namespaces: bool,
    /// The user namespace's uid and gid maps (none: the host's ids stay unmapped).
    pub ids: Option<IdMaps>,
    /// The steps that build the child's root, in its own mount namespace; or, with
    /// `root`, the checks it makes in the shared one.
    pub mounts: Vec<MountOp>,
    /// A root built once and shared (`super::shared_root`): the child enters its
    /// mount namespace (through its user namespace) instead of building its own.
    pub root: Option<Arc<SharedRoot>>,
    /// A network namespace of `root`'s, made ahead of time, for this child alone
    /// (none: the child makes its own).
    pub net: Option<OwnedFd>,
    /// Drop every capability before `exec` (the highest capability number).
    pub drop_caps: Option<u32>,
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
    /// In the new network namespace: bring `lo` up and hand the host a listener on it.
    pub loopback: Option<Loopback>,
}

/// A Landlock rule a child adds to its own ruleset: `access` beneath `path`.
#[derive(Debug, Clone)]
pub(crate) struct WorkRule {
    /// The dir (opened by the child, after its mounts).
    pub path: CString,
    /// `LANDLOCK_ACCESS_FS_*` bits.
    pub access: u64,
}

/// `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// A listening TCP socket on `127.0.0.1:port` inside a child's own network
/// namespace, made by the child before `exec` and sent to the host over `channel`
/// (its end of a unix socket pair, `SCM_RIGHTS`). The host accepts on it from its
/// own namespace: the only way out of the child's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Loopback {
    /// The port, inside the child's namespace.
    pub port: u16,
    /// The child's end of the socket pair.
    pub channel: RawFd,
}

impl ChildSetup {
    /// A setup with `limits`, nothing else yet (descriptors above 2 are still
    /// closed at `exec`).
    pub(crate) fn new(limits: &ChildLimits) -> Self {
        Self {
            ruleset: None,
            own_ruleset: None,
            work_rule: None,
            private_mounts: false,
            namespaces: false,
            ids: None,
            mounts: Vec::new(),
            root: None,
            net: None,
            drop_caps: None,
            cgroup_procs: None,
            cpu_seconds: limits.cpu_seconds,
            memory_bytes: limits.memory_bytes,
            file_size_bytes: limits.file_size_bytes,
            nproc: None,
            seccomp: None,
            loopback: None,
        }
    }

    /// The steps, in order. Runs in the child between `clone` and `exec`
    /// (`super::clone`), sharing the host's memory: system calls only, nothing that
    /// allocates or takes a lock. The error names the step that failed.
    pub(super) fn apply(&self) -> Result<(), SetupFailed> {
        let at = |step: Step| move |e: io::Error| SetupFailed { step, errno: e.raw_os_error().unwrap_or(0) };
        // SAFETY (every call below): plain system calls with valid integer arguments
        // and pointers to live stack values, static data or C strings owned by
        // `self`.
        unsafe {
            if let Some(fd) = self.cgroup_procs {
                let zero = b"0\n";
                check(libc::write(fd, zero.as_ptr().cast(), zero.len()) as libc::c_long)
                    .map_err(at(Step::Cgroup))?;
            }
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0).into())
                .map_err(at(Step::DeathSignal))?;
            check(libc::setsid().into()).map_err(at(Step::Session))?;
            let limit = |resource, soft: u64, hard: u64| {
                let rl = libc::rlimit { rlim_cur: soft, rlim_max: hard };
                check(libc::setrlimit(resource, &rl).into()).map_err(at(Step::Limits))
            };
            limit(libc::RLIMIT_CPU, self.cpu_seconds, self.cpu_seconds + 1)?;
            limit(libc::RLIMIT_AS, self.memory_bytes, self.memory_bytes)?;
            limit(libc::RLIMIT_FSIZE, self.file_size_bytes, self.file_size_bytes)?;
            // A write past RLIMIT_FSIZE then fails with EFBIG, which the program
            // reports, instead of SIGXFSZ killing it without a word (an ignored signal
            // stays ignored across exec).
            if libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR {
                return Err(at(Step::Limits)(io::Error::last_os_error()));
            }
            limit(libc::RLIMIT_CORE, 0, 0)?;
            if self.namespaces {
                // The id maps are written through the host's `/proc` (the shared root
                // has it read-only), opened now, while this is still the host's mount
                // namespace; each map file is opened after the new user namespace,
                // whose maps it then writes.
                let mut proc = libc::AT_FDCWD;
                let mut maps_at: &CStr = c"/proc/self";
                if self.root.is_some() {
                    proc = libc::open(
                        c"/proc/self".as_ptr(),
                        libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    );
                    check(proc.into()).map_err(at(Step::IdMaps))?;
                    maps_at = c".";
                }
                let mount = match &self.root {
                    // The shared root's user namespace first (its owner's uid, the
                    // host's, has every capability there), then its mount namespace;
                    // the child's own user namespace is then made inside the shared
                    // root's, which it has no capability in.
                    Some(root) => {
                        let (userns, mntns) = root.fds();
                        check(libc::setns(userns, libc::CLONE_NEWUSER).into())
                            .map_err(at(Step::Namespaces))?;
                        check(libc::setns(mntns, libc::CLONE_NEWNS).into()).map_err(at(Step::Namespaces))?;
                        if self.private_mounts { libc::CLONE_NEWNS } else { 0 }
                    }
                    None if self.mounts.is_empty() => 0,
                    None => libc::CLONE_NEWNS,
                };
                // A network namespace made ahead of time in the shared root's user
                // namespace (entered just now), used by no other process: entered
                // here, and the child's own user namespace made below it has no
                // capability over it. Else the child makes its own.
                let net = match (&self.root, &self.net) {
                    (Some(_), Some(net)) => {
                        check(libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET).into())
                            .map_err(at(Step::Namespaces))?;
                        0
                    }
                    _ => libc::CLONE_NEWNET,
                };
                check(libc::unshare(libc::CLONE_NEWUSER | net | mount).into())
                    .map_err(at(Step::Namespaces))?;
                let mut written = Ok(());
                if let Some(ids) = &self.ids {
                    written = write_maps(proc, maps_at, ids);
                }
                if proc != libc::AT_FDCWD {
                    libc::close(proc);
                }
                written.map_err(at(Step::IdMaps))?;
            }
            // After the new user namespace: there the limit counts only the child's
            // own tree, not every process of the same user on the machine.
            if let Some(n) = self.nproc {
                limit(libc::RLIMIT_NPROC, n, n)?;
            }
            // Needs CAP_NET_ADMIN in the new namespaces: before the capabilities go.
            // Only ever in a namespace of the child's own: never the host's `lo`.
            if self.namespaces
                && let Some(loopback) = &self.loopback
            {
                listen_inside(loopback).map_err(at(Step::Loopback))?;
            }
            for op in &self.mounts {
                run(op).map_err(at(Step::Root))?;
            }
            if let Some(last) = self.drop_caps {
                drop_capabilities(last).map_err(at(Step::Capabilities))?;
            }
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0).into())
                .map_err(at(Step::NoNewPrivs))?;
            if let Some(fd) = self.ruleset {
                if let Some(rule) = &self.work_rule {
                    add_rule(fd, rule).map_err(at(Step::Landlock))?;
                }
                check(libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32))
                    .map_err(at(Step::Landlock))?;
            }
            if let Some((addr, len)) = self.seccomp {
                let prog = libc::sock_fprog { len, filter: addr as *mut libc::sock_filter };
                check(
                    libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER as libc::c_ulong, &prog)
                        .into(),
                )
                .map_err(at(Step::Seccomp))?;
            }
            check(libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC))
                .map_err(at(Step::Descriptors))?;
        }
        Ok(())
    }
}

/// The shared root's side of building it, run by a helper started with
/// `super::clone::build_shared_root`, which shares the host's descriptor table:
/// new user and mount namespaces (the user namespace mapping the host's own uid
/// and gid), a descriptor on each put in `out`, then `ops`. Nothing that allocates.
/// On failure the descriptors it opened are closed again.
pub(super) fn build_shared(
    ids: &IdMaps,
    ops: &[MountOp],
    out: &std::cell::Cell<[RawFd; 2]>,
) -> Result<(), SetupFailed> {
    let at = |step: Step| move |e: io::Error| SetupFailed { step, errno: e.raw_os_error().unwrap_or(0) };
    // SAFETY: plain system calls on C strings owned by `ids`, `ops` and static data.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS).into()).map_err(at(Step::Namespaces))?;
        write_maps(libc::AT_FDCWD, c"/proc/self", ids).map_err(at(Step::IdMaps))?;
        let open = |path: &CStr| libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        let userns = open(c"/proc/self/ns/user");
        check(userns.into()).map_err(at(Step::Namespaces))?;
        let mntns = open(c"/proc/self/ns/mnt");
        if mntns < 0 {
            let error = io::Error::last_os_error();
            libc::close(userns);
            return Err(at(Step::Namespaces)(error));
        }
        for op in ops {
            if let Err(e) = run(op) {
                libc::close(userns);
                libc::close(mntns);
                return Err(at(Step::Root)(e));
            }
        }
        out.set([userns, mntns]);
    }
    Ok(())
}

/// The helper's side of making network namespaces ahead of time for a shared root
/// (`super::clone::make_nets`, sharing the host's descriptor table): enters the
/// root's user namespace `userns`, then makes one network namespace after another,
/// a descriptor on each put in `out` (-1 where it stopped). Nothing that allocates.
pub(super) fn make_nets(userns: RawFd, out: &[std::cell::Cell<RawFd>]) -> Result<(), SetupFailed> {
    let at = |step: Step| move |e: io::Error| SetupFailed { step, errno: e.raw_os_error().unwrap_or(0) };
    // SAFETY: plain system calls on a descriptor the host keeps open and static data.
    unsafe {
        check(libc::setns(userns, libc::CLONE_NEWUSER).into()).map_err(at(Step::Namespaces))?;
        for slot in out {
            check(libc::unshare(libc::CLONE_NEWNET).into()).map_err(at(Step::Namespaces))?;
            let net = libc::open(c"/proc/self/ns/net".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            check(net.into()).map_err(at(Step::Namespaces))?;
            slot.set(net);
        }
    }
    Ok(())
}

/// A control buffer for one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct FdControl([u8; 64]);

/// Bring the namespace's `lo` up, listen on `127.0.0.1:port` and send the socket
/// over `channel`. Child only: system calls on stack values.
fn listen_inside(loopback: &Loopback) -> io::Result<()> {
    // SAFETY: socket, ioctl, bind, listen, sendmsg and close on descriptors this
    // function opened (or the channel the parent handed in) and on stack values
    // that outlive each call; CMSG_* compute offsets inside the stack buffer.
    unsafe {
        let ctl = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(ctl.into())?;
        let mut ifr: libc::ifreq = std::mem::zeroed();
        ifr.ifr_name[0] = b'l' as libc::c_char;
        ifr.ifr_name[1] = b'o' as libc::c_char;
        let mut up = check(libc::ioctl(ctl, libc::SIOCGIFFLAGS, &mut ifr).into());
        if up.is_ok() {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            up = check(libc::ioctl(ctl, libc::SIOCSIFFLAGS, &ifr).into());
        }
        libc::close(ctl);
        up?;
        let sock = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        check(sock.into())?;
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: loopback.port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be() },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let mut made = check(libc::bind(sock, (&raw const addr).cast(), len).into());
        if made.is_ok() {
            made = check(libc::listen(sock, 128).into());
        }
        if made.is_ok() {
            let mut byte = [0u8; 1];
            let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
            let mut control = FdControl([0; 64]);
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.0.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), sock);
            made = check(libc::sendmsg(loopback.channel, &msg, libc::MSG_NOSIGNAL) as libc::c_long);
        }
        libc::close(sock);
        made
    }
}

/// The descriptor a child sent over `channel` ([`Loopback`]), without waiting: the
/// child sent it before `exec`, so by the time the spawn returned it is there.
pub(crate) fn receive_fd(channel: &std::os::unix::net::UnixStream) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: recvmsg into stack buffers that outlive the call; the descriptor read
    // out of the control message is a new one the kernel installed for this process,
    // owned from here on.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = FdControl([0; 64]);
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len();
        let got = libc::recvmsg(channel.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC);
        check(got as libc::c_long)?;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the child sent no descriptor"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Add `rule` to the ruleset `fd`, opening its dir (not followed) now. Child only.
fn add_rule(fd: RawFd, rule: &WorkRule) -> io::Result<()> {
    // SAFETY: open, landlock_add_rule and close on a C string owned by `rule` and a
    // stack value that outlives the call.
    unsafe {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let dir = libc::open(rule.path.as_ptr(), flags);
        check(dir.into())?;
        let attr = PathBeneathAttr { allowed_access: rule.access, parent_fd: dir };
        let added = check(libc::syscall(
            libc::SYS_landlock_add_rule,
            fd,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        ));
        libc::close(dir);
        added
    }
}

fn check(ret: libc::c_long) -> io::Result<()> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// `check`, with `EEXIST` as success.
fn made(ret: libc::c_long) -> io::Result<()> {
    match check(ret) {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}

/// Write the user namespace's maps (and deny `setgroups`, which an unprivileged
/// gid map needs) to the files in `dir` (`/proc/self`, or `.` of the descriptor
/// `at` on it). Child only.
fn write_maps(at: RawFd, dir: &CStr, ids: &IdMaps) -> io::Result<()> {
    let mut path = [0u8; 32];
    for (name, text) in [(&b"setgroups"[..], c"deny"), (b"uid_map", &ids.uid_map), (b"gid_map", &ids.gid_map)]
    {
        let dir = dir.to_bytes();
        let len = dir.len() + 1 + name.len();
        if len >= path.len() {
            return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        path[..dir.len()].copy_from_slice(dir);
        path[dir.len()] = b'/';
        path[dir.len() + 1..len].copy_from_slice(name);
        path[len] = 0;
        let path =
            CStr::from_bytes_until_nul(&path).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        write_file(at, path, text)?;
    }
    Ok(())
}

/// Write `text` to the file `path` (relative to the descriptor `at`). Child only.
fn write_file(at: RawFd, path: &CStr, text: &CStr) -> io::Result<()> {
    // SAFETY: openat, write and close on a C string path and a buffer we own.
    unsafe {
        let fd = libc::openat(at, path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd.into())?;
        let bytes = text.to_bytes();
        let wrote = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if wrote < 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// Run one step of building the child's root. Child only.
fn run(op: &MountOp) -> io::Result<()> {
    let opt = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: system calls on C strings owned by `op` (or null where the call takes
    // none) and on stack values that outlive the call.
    unsafe {
        match op {
            MountOp::Mount { source, target, fstype, flags, data } => {
                check(libc::mount(opt(source), target.as_ptr(), opt(fstype), *flags, opt(data).cast()).into())
            }
            MountOp::ReadOnly { target, recursive } => {
                let attr =
                    MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
                let flags = if *recursive { libc::AT_RECURSIVE } else { 0 };
                check(libc::syscall(
                    SYS_MOUNT_SETATTR,
                    libc::AT_FDCWD,
                    target.as_ptr(),
                    flags as libc::c_uint,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                ))
            }
            MountOp::Mkdir(path) => made(libc::mkdir(path.as_ptr(), 0o755).into()),
            MountOp::Touch(path) => {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW;
                let fd = libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint);
                check(fd.into())?;
                libc::close(fd);
                Ok(())
            }
            MountOp::Symlink { target, at } => made(libc::symlink(target.as_ptr(), at.as_ptr()).into()),
            MountOp::PivotRoot { new_root, put_old } => {
                check(libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()))
            }
            MountOp::Detach(path) => check(libc::umount2(path.as_ptr(), libc::MNT_DETACH).into()),
            MountOp::Chdir(path) => check(libc::chdir(path.as_ptr()).into()),
            MountOp::Expect { path, dev, ino, mount_root } => {
                let mut st: libc::statx = std::mem::zeroed();
                let mask = libc::STATX_INO | libc::STATX_TYPE;
                check(libc::syscall(
                    libc::SYS_statx,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                    mask,
                    &mut st as *mut libc::statx,
                ))?;
                let found = libc::makedev(st.stx_dev_major, st.stx_dev_minor) == *dev && st.stx_ino == *ino;
                let root = libc::STATX_ATTR_MOUNT_ROOT as u64;
                let mounted =
                    !*mount_root || (st.stx_attributes_mask & root != 0 && st.stx_attributes & root != 0);
                if found && mounted {
                    Ok(())
                } else {
                    // Not what the walk found: something was swapped in meanwhile.
                    Err(io::Error::from_raw_os_error(libc::ESTALE))
                }
            }
        }
    }
}

/// Give up every capability, for good: none in the bounding set, none ambient,
/// none inheritable, effective or permitted, and `exec` as uid 0 grants none
/// (`SECBIT_NOROOT`, locked). Child only.
fn drop_capabilities(last: u32) -> io::Result<()> {
    let bits = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl and capset with integer arguments and pointers to stack values.
    unsafe {
        check(libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0).into())?;
        for cap in 0..=last {
            check(libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0).into())?;
        }
        check(
            libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0)
                .into(),
        )?;
        let header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
        let none = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
        check(libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()))
    }
}

/// The highest capability number this kernel knows.
pub(crate) fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        // CAP_CHECKPOINT_RESTORE, the last one since Linux 5.9.
        .unwrap_or(40)
}

/// Send `signal` to every process in the process group `pgid`.
pub(crate) fn kill_group(pgid: u32, signal: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return };
    // SAFETY: a plain system call; a stale or empty group gives ESRCH, ignored.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Send `signal` to the process `pid`.
pub(crate) fn kill_pid(pid: u32, signal: i32) {
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
pub(crate) fn is_root() -> bool {
    euid() == 0
}

/// The host's effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Reap `pid` if it is a zombie child of this process. Never blocks.
pub(crate) fn reap(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    let mut status = 0;
    // SAFETY: waitpid on a specific pid with WNOHANG; ECHILD when it is not ours.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

/// The user namespace of `pid`, as the kernel names it (`user:[INODE]`).
pub(crate) fn user_namespace(pid: u32) -> Option<std::ffi::OsString> {
    std::fs::read_link(format!("/proc/{pid}/ns/user")).ok().map(PathBuf::into_os_string)
}

/// SIGKILL every process in the user namespace `ns` until none is left. A confined
/// child has its own, and everything it starts stays in it (`setsid` or not), so this
/// finds what a process-group kill misses when the host has no cgroup. Never the
/// host's own namespace.
pub(crate) fn kill_namespace(ns: &std::ffi::OsStr) {
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
