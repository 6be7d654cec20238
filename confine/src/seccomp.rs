//! The seccomp filter every confined child installs last: what Landlock and the
//! mount namespace do not cover, refused with `EPERM`.
//!
//! - **Every child**: setting the set-uid and set-gid bits (a child of a root host
//!   would leave a set-uid-root file behind), and `mknod`/`mknodat` — no FIFOs or
//!   device nodes in the work dir (the host reads files there and must never meet
//!   a FIFO a tool planted; Landlock's `MakeFifo` right comes with the rest of a
//!   writable work dir). Unix sockets are still made by `bind`, so that test
//!   suites can use them.
//! - **Read-only calls** also: changing modes, owners and times (Landlock has no
//!   right for them).
//!
//! Built once per host, in the parent; the child only hands the kernel a pointer
//! to it ([`super::confine::ChildSetup`]).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
    SeccompFilter, SeccompRule,
};

/// `fchmodat2` (Linux 6.6), not in every libc crate yet; the same number on every
/// architecture.
const SYS_FCHMODAT2: i64 = 452;

/// The filter for a call that may (`writable`) or may not write the work dir.
pub(super) fn program(writable: bool) -> Result<BpfProgram, String> {
    let fail = |e: seccompiler::BackendError| format!("seccomp filter: {e}");
    // (syscall, index of its mode argument)
    let mut chmods: Vec<(i64, u8)> = vec![(libc::SYS_fchmod, 1), (libc::SYS_fchmodat, 2), (SYS_FCHMODAT2, 2)];
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
    // An empty rule list matches every call of that number.
    rules.insert(libc::SYS_mknodat, vec![]);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, vec![]);
    let arch = std::env::consts::ARCH.try_into().map_err(|e| format!("seccomp: {e:?}"))?;
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_build_and_differ() {
        let rw = program(true).unwrap();
        let ro = program(false).unwrap();
        assert!(!rw.is_empty() && !ro.is_empty());
        assert_ne!(rw, ro);
    }
}
