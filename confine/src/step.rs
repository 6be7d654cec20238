//! The confinement steps a child takes before `exec` (`super::confine`), by name:
//! a step that fails is reported to the host as [`SetupFailed`] (which step, and
//! its `errno`), and the spawn error says what the child was doing.

/// A confinement step, to name the one that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Writing its pid to the pids cgroup's `cgroup.procs`.
    Cgroup,
    /// `PR_SET_PDEATHSIG`.
    DeathSignal,
    /// `setsid`.
    Session,
    /// The rlimits (and ignoring `SIGXFSZ`).
    Limits,
    /// `unshare` of the user, network and mount namespaces.
    Namespaces,
    /// The user namespace's `setgroups`, uid and gid maps.
    IdMaps,
    /// The loopback listener inside its network namespace.
    Loopback,
    /// Building its own root (mounts, `pivot_root`, the protected binds).
    Root,
    /// Dropping the capabilities.
    Capabilities,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// `landlock_restrict_self`.
    Landlock,
    /// Installing the seccomp filter.
    Seccomp,
    /// Marking the host's descriptors close-on-exec.
    Descriptors,
}

impl Step {
    /// What the step does, for an error message.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Step::Cgroup => "joining its pids cgroup",
            Step::DeathSignal => "setting its parent-death signal",
            Step::Session => "starting its own session",
            Step::Limits => "setting its resource limits",
            Step::Namespaces => "entering new user, network and mount namespaces",
            Step::IdMaps => "writing its user namespace's id maps",
            Step::Loopback => "listening on its own loopback",
            Step::Root => "building its own root",
            Step::Capabilities => "dropping its capabilities",
            Step::NoNewPrivs => "setting no_new_privs",
            Step::Landlock => "applying Landlock",
            Step::Seccomp => "installing its seccomp filter",
            Step::Descriptors => "closing the host's descriptors",
        }
    }
}

/// A confinement step that failed in the child, with its `errno`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetupFailed {
    /// The step.
    pub(crate) step: Step,
    /// Its `errno`.
    pub(crate) errno: i32,
}
