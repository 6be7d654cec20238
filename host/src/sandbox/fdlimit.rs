//! File descriptors: the process's soft `RLIMIT_NOFILE` is raised to its hard limit
//! once, and each call's share is sized so that every call slot at its cap still
//! leaves a reserve for the host itself (the output store, fetches, children's pipes,
//! the compile cache). One call at its cap gets a clear error and never starves the
//! others.

use std::sync::OnceLock;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors kept back for the host whatever the calls hold.
pub(crate) const RESERVE: u64 = 256;
/// The smallest per-call share, even on a host with a tiny limit.
const MIN_PER_CALL: usize = 16;

/// Raise the soft `RLIMIT_NOFILE` to the hard limit (once per process); the soft
/// limit in force after.
pub(crate) fn raise_nofile() -> u64 {
    static SOFT: OnceLock<u64> = OnceLock::new();
    *SOFT.get_or_init(|| {
        let limit = getrlimit(Resource::Nofile);
        let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else {
            // Unlimited (`RLIM_INFINITY`) is as many as the host can count.
            return limit.current.unwrap_or(u64::MAX);
        };
        if soft < hard
            && setrlimit(Resource::Nofile, Rlimit { current: Some(hard), maximum: Some(hard) }).is_ok()
        {
            return hard;
        }
        soft
    })
}

/// The descriptors one call may hold: at most `wanted`, and no more than an equal
/// share of `soft` (less the reserve) among `slots` concurrent calls.
pub(crate) fn per_call(wanted: usize, soft: u64, slots: u32) -> usize {
    let share = soft.saturating_sub(RESERVE) / u64::from(slots.max(1));
    wanted.min(usize::try_from(share).unwrap_or(usize::MAX)).max(MIN_PER_CALL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares() {
        assert_eq!(per_call(1024, 1 << 20, 64), 1024);
        assert_eq!(per_call(1024, 4096, 64), (4096 - 256) / 64);
        assert_eq!(per_call(1024, 300, 64), MIN_PER_CALL);
        assert!(raise_nofile() >= 1024);
    }
}
